"""Every command and example of the README runs and shows what the README says, on both backends.

The fenced blocks of README.md, in order, in one directory where tests/ and tools/ are the
repository's:
- `console`: each `$` command runs in bash; its output (stdout and stderr together) must
  match the lines under it, `...` standing for any text (a time, the backend). A command
  whose output shows `error:` must fail, any other must succeed.
- `sh`: each line is a command that must succeed. `pip install ...` and `python -m pytest -q`
  are what CI itself runs around this test, so they are the only lines not run here.
- `python`: doctest examples (`from bpe import ...` gets the backend under test).
Blocks without a language are synopses and output excerpts, not commands.
"""

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import BPE, REPO, tool_env

README = REPO / "README.md"
RUN_BY_CI = ("pip install", "python -m pytest")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
CHECKER = doctest.OutputChecker()


def readme_blocks(lines=False):
    text = README.read_text(encoding="utf-8")
    found = [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]
    return found if lines else [(kind, body) for kind, body, _ in found]


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


def test_the_readme_has_what_this_test_runs():
    kinds = [kind for kind, _ in readme_blocks()]
    assert kinds.count("console") >= 5 and kinds.count("python") >= 2 and kinds.count("sh") >= 2
    assert set(kinds) <= {"console", "sh", "python", ""}, kinds
    text = README.read_text(encoding="utf-8")
    assert "python -m pytest -q" in text  # the command CI runs
    assert "../shared" not in text and "/work/" not in text


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "tests").symlink_to(REPO / "tests")
    (tmp_path / "tools").symlink_to(REPO / "tools")
    bin_dir = tmp_path / ".bin"  # `bpe` and `python` as the README's commands name them
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


def test_every_command_and_example(mod, workdir, monkeypatch):
    if BPE is None:
        pytest.skip(f"the bpe command is not installed beside {sys.executable} (pip install .)")
    pytest.importorskip("numpy")
    have_dask = all(__import__("importlib").util.find_spec(m) for m in ("distributed", "fsspec"))
    env = tool_env(mod)
    env["PATH"] = os.pathsep.join([str(workdir / ".bin"), env.get("PATH", "")])
    globs = {}
    monkeypatch.chdir(workdir)
    monkeypatch.setitem(sys.modules, "bpe", mod)  # `from bpe import Tokenizer` in the examples
    ran = 0
    for kind, body, line_number in readme_blocks(lines=True):
        if kind == "sh":
            for line in body.splitlines():
                line = line.split("  #")[0].strip()
                if not line or line.startswith(RUN_BY_CI):
                    continue
                result = run_command(line, workdir, env)
                assert result.returncode == 0, (line, result.stdout)
                ran += 1
        elif kind == "console":
            for command, want in console_commands(body):
                if "train_dask.py" in command and not have_dask:
                    continue
                result = run_command(command, workdir, env)
                fails = re.search(r"^\S+: error: ", want, re.M) is not None
                assert (result.returncode != 0) == fails, (command, result.stdout)
                assert CHECKER.check_output(want, result.stdout, doctest.ELLIPSIS), (
                    f"$ {command}\n--- the README shows:\n{want}--- it printed:\n{result.stdout}")
                ran += 1
        elif kind == "python":
            test = doctest.DocTestParser().get_doctest(body, globs, "README", str(README), line_number)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, clear_globs=False)
            globs.update(test.globs)  # a DocTest works on a copy: the next block continues this one
            assert runner.failures == 0, f"a README example failed (see the output above)"
            ran += len(test.examples)
    assert ran >= 30
