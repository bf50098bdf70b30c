"""Every command and example of README.md and docs/*.md runs and shows what it says, on both
backends.

The fenced blocks of each file run in order, in a fresh directory of their own where tests/,
tools/ and bpe_fallback.py are the repository's (so no example reaches outside the clone):
- `console`: each `$` command runs in bash; its output (stdout and stderr together) must
  match the lines under it, `...` standing for any text (a time, the backend). A command
  whose output shows `error:` must fail, any other must succeed. The commands of a block run
  as if typed into one shell: a `cd` holds for the commands after it in the block.
- `sh`: each line is a command that must succeed. `pip install ...` and `python -m pytest`
  are what CI itself runs around this test, so they are the only lines not run here.
- `python`: doctest examples (`from bpe import ...` gets the backend under test); the blocks
  of one file share their names, as one session, except the README's: each of those runs on
  its own (with the files the commands before it wrote), as a reader who copies one.
Blocks without a language are synopses and recorded output, not commands: they may hold no
`$ ` or `>>> ` line.  Examples that need an optional package (dask, matplotlib,
transformers) are skipped where it is not installed; CI's first run installs them all.
"""

import doctest
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from test_cli import BPE, REPO, tool_env

README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
RUN_BY_CI = ("pip install", "python -m pytest")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
CHECKER = doctest.OutputChecker()
# what an example needs beyond the test extra: (a marker in its text, the modules it needs)
EXTRAS = [("train_dask", ("distributed", "fsspec")), ("--dask", ("distributed", "fsspec")),
          ("--plot", ("matplotlib",)),
          ("distributed", ("distributed",)), ("transformers", ("transformers",))]


def doc_blocks(path):
    """[(language, body, line number)] of the fenced blocks of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


def console_commands(body):
    """[(command, expected output)] of a console block; a trailing backslash continues a line."""
    steps, command, want = [], None, []
    lines = iter(body.splitlines())
    for line in lines:
        if line.startswith("$ "):
            if command is not None:
                steps.append((command, want))
            command, want = line[2:], []
            while command.endswith("\\"):
                command = command[:-1] + " " + next(lines).strip()
        else:
            want.append(line)
    if command is not None:
        steps.append((command, want))
    return [(c, "".join(line + "\n" for line in output)) for c, output in steps]


def missing_extra(text):
    """The first optional module `text` needs that is not installed, or None."""
    for marker, modules in EXTRAS:
        if marker in text:
            for name in modules:
                if importlib.util.find_spec(name) is None:
                    return name
    return None


def test_the_readme_names_what_ci_runs():
    text = README.read_text(encoding="utf-8")
    assert "python -m pytest -q\n" in text  # the command CI runs
    assert 'python -m pytest -q -m "not slow"' in text  # the quick loop
    assert "python -m pytest -q\n" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 12_800, "the README is for a newcomer: a few screens"
    kinds = [kind for kind, _, _ in doc_blocks(README)]
    assert kinds.count("console") >= 3 and kinds.count("python") >= 4 and kinds.count("sh") >= 2


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_block_is_run_or_is_not_a_command(path):
    text = path.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text
    for kind, body, line in doc_blocks(path):
        assert kind in {"console", "sh", "python", ""}, (path.name, line, kind)
        if kind == "":
            commands = [x for x in body.splitlines() if x.startswith(("$ ", ">>> "))]
            assert not commands, f"{path.name}:{line}: give this block a language to run it"
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (path.parent / target).exists(), f"{path.name}: broken link {target}"


@pytest.fixture
def workdir(tmp_path):
    for name in ("tests", "tools", "bpe_fallback.py"):
        (tmp_path / name).symlink_to(REPO / name)
    bin_dir = tmp_path / ".bin"  # `bpe` and `python` as the examples name them
    bin_dir.mkdir()
    python = bin_dir / "python"  # not a link: a venv's python finds its venv by its own path
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    if BPE is not None:
        (bin_dir / "bpe").symlink_to(BPE)
    return tmp_path


def run_command(command, workdir, env):
    return subprocess.run(["bash", "-c", command], cwd=workdir, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, encoding="utf-8", timeout=600)


def run_in_shell(command, cwd, env):
    """run_command in `cwd`; also the directory the command left the shell in (a `cd`)."""
    import tempfile

    with tempfile.NamedTemporaryFile("r", encoding="utf-8", suffix=".pwd") as f:
        result = run_command(f'{command}\nstatus=$?; pwd > "{f.name}"; exit $status', cwd, env)
        return result, f.read().strip() or cwd


def run_doc(path, mod, workdir, monkeypatch):
    """Runs every block of `path`; returns how many commands and examples ran, and the
    optional modules whose examples were left out."""
    env = tool_env(mod)
    env["PATH"] = os.pathsep.join([str(workdir / ".bin"), env.get("PATH", "")])
    globs = {}
    monkeypatch.chdir(workdir)
    monkeypatch.setitem(sys.modules, "bpe", mod)  # `from bpe import Tokenizer` in the examples
    ran, missing = 0, set()
    for kind, body, line_number in doc_blocks(path):
        if kind == "sh":
            for line in body.splitlines():
                line = line.split("  #")[0].strip()
                if not line or line.startswith(RUN_BY_CI):
                    continue
                result = run_command(line, workdir, env)
                assert result.returncode == 0, (line, result.stdout)
                ran += 1
        elif kind == "console":
            cwd = workdir  # one shell per block
            for command, want in console_commands(body):
                if missing_extra(command):
                    missing.add(missing_extra(command))
                    continue
                result, cwd = run_in_shell(command, cwd, env)
                fails = re.search(r"^\S+: error: ", want, re.M) is not None
                assert (result.returncode != 0) == fails, (command, result.stdout)
                assert CHECKER.check_output(want, result.stdout, doctest.ELLIPSIS), (
                    f"$ {command}\n--- {path.name} shows:\n{want}--- it printed:\n{result.stdout}")
                ran += 1
        elif kind == "python" and missing_extra(body):
            missing.add(missing_extra(body))
        elif kind == "python":
            if path == README:  # a reader copies one block: each names what it needs or builds it
                globs = {}
            test = doctest.DocTestParser().get_doctest(body, globs, path.name, str(path),
                                                        line_number)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, clear_globs=False)
            globs.update(test.globs)  # a DocTest works on a copy: the next block continues this one
            assert runner.failures == 0, f"an example of {path.name} failed (see the output above)"
            ran += len(test.examples)
    return ran, missing


# the quick loop runs the README and the short docs; the tools' docs and tiktoken's real
# vocabularies take tens of seconds (their behaviour has fast tests of its own)
SLOW_DOCS = {"analyze.md", "cli.md", "dask.md", "tiktoken.md"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_DOCS
                                  else p for p in DOCS], ids=lambda p: p.name)
def test_every_command_and_example(path, mod, workdir, monkeypatch):
    if BPE is None:
        pytest.skip(f"the bpe command is not installed beside {sys.executable} (pip install .)")
    pytest.importorskip("numpy")
    ran, missing = run_doc(path, mod, workdir, monkeypatch)
    if ran == 0 and missing:
        pytest.skip(f"{path.name}: its examples need {', '.join(sorted(missing))}")
    runnable = [kind for kind, _, _ in doc_blocks(path) if kind]
    # the README runs some 25 blocks; one or two need extras (transformers) CI may lack
    assert ran >= (20 if path == README else 1 if runnable else 0)
