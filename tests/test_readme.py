"""A newcomer's first ten minutes with the README: what its commands write in a clone is
ignored by git, every example that needs a package beyond `regex` says which, and the
vendoring commands run as typed into one shell."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from test_docs import README, doc_blocks, run_doc

from test_cli import BPE, REPO

DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
# what an example may import that `pip install .` does not bring
EXTRA_MODULES = ("numpy", "transformers")


def git_ignores(paths):
    """The paths (relative to the clone) that the clone's .gitignore does not ignore."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git clone")
    result = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "--stdin",
                             "-z"], input="\0".join(paths) + "\0", capture_output=True,
                            text=True)
    assert result.returncode in (0, 1), result.stderr
    return sorted(set(paths) - set(filter(None, result.stdout.split("\0"))))


def test_the_quickstarts_outputs_are_ignored():
    named = ["sample.bpe", "train.bin", "train.bin.json", "my-model/tokenizer.json",
             "my-model/tokenizer_config.json", "myproject/german.bpe",
             "myproject/bpe_fallback.py"]
    assert git_ignores(named) == []
    assert git_ignores(["bpe_fallback.py", "README.md", "tests/test_readme.py"]) == [
        "README.md", "bpe_fallback.py", "tests/test_readme.py"]  # (the check can fail)


@pytest.mark.slow  # the README's blocks take seconds (test_docs runs them in the quick loop)
def test_every_file_the_readme_writes_is_ignored(mod, tmp_path, monkeypatch):
    """The README's blocks run (as tests/test_docs.py runs them) in a fresh directory; every
    file they leave there, but the clone's own, is one .gitignore ignores."""
    if BPE is None:
        pytest.skip(f"the bpe command is not installed beside {sys.executable} (pip install .)")
    pytest.importorskip("numpy")
    for name in ("tests", "tools", "bpe_fallback.py"):
        (tmp_path / name).symlink_to(REPO / name)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (bin_dir / "bpe").symlink_to(BPE)
    run_doc(README, mod, tmp_path, monkeypatch)
    own = {"tests", "tools", "bpe_fallback.py", ".bin"}
    written = []
    for root, dirs, files in os.walk(tmp_path):
        rel = os.path.relpath(root, tmp_path)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in own]
            files = [f for f in files if f not in own]
        written += [os.path.normpath(os.path.join(rel, f)) for f in files]
    assert "sample.bpe" in written and "train.bin.json" in written, written
    assert git_ignores(written) == []


def prose_before(text, at, reach=600):
    """The prose just before the block whose body starts at `at`, back to the previous block
    (at most `reach` characters)."""
    fence = text.rfind("```", 0, at)
    start = text.rfind("```", 0, fence)
    return text[max(start, fence - reach, 0):fence]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_examples_say_which_extra_they_need(path):
    text = path.read_text(encoding="utf-8")
    for kind, body, line in doc_blocks(path):
        if kind != "python":
            continue
        for module in EXTRA_MODULES:
            if not re.search(rf"^>>> (import|from) .*\b{module}\b", body, re.M):
                continue
            at = text.index(body)
            said = prose_before(text, at) + body
            assert re.search(rf"pip install [^\n]*({module}|'\.\[test\]')", said), (
                f"{path.name}:{line}: the example imports {module}: say `pip install {module}` "
                f"(or '.[test]') before it")


def vendoring_block():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Vendoring"):]
    section = section[:section.index("\n## ", 1)]
    blocks = [(kind, body) for kind, body, _ in doc_blocks(README) if body in section]
    assert [kind for kind, _ in blocks] == ["console"]
    return blocks[0][1]


def test_the_vendoring_commands_run_in_one_shell(tmp_path):
    """Typed into one shell, one after another (a `cd` holds): the commands succeed and show
    what the README shows, with only bpe_fallback.py copied and regex installed."""
    body = vendoring_block()
    commands = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
    shown = "".join(line + "\n" for line in body.splitlines() if not line.startswith("$ "))
    assert len(commands) >= 3 and any(c.startswith("cd ") or "&& cd " in c for c in commands)
    shutil.copy(REPO / "bpe_fallback.py", tmp_path / "bpe_fallback.py")
    (tmp_path / "tests").symlink_to(REPO / "tests")
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    # only the copied file: not a `bpe` installed in this environment (BPE_BACKEND=python)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["BPE_BACKEND"] = "python"
    script = "set -e\n" + "\n".join(commands) + "\n"
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, (script, result.stdout, result.stderr)
    assert result.stdout == shown, (result.stdout, shown)
    assert (tmp_path / "myproject" / "german.bpe").is_file()
