"""bpe_fallback.py is one file a project can copy: alone in an empty directory, on an
interpreter that sees only the standard library and `regex`, it trains, saves, loads,
encodes, decodes and runs its command line.  And `import bpe_fallback` stays light."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import regex

REPO = Path(__file__).resolve().parent.parent
TEXT = "low lower lowest newer wider\nthe cat sat on the mat. " * 40

# modules an extra needs, which `import bpe_fallback` must not load
HEAVY = ["multiprocessing", "concurrent.futures", "subprocess", "socket", "logging", "gzip",
         "tempfile", "json", "hashlib", "pickle", "shutil", "base64", "bisect", "signal"]


@pytest.fixture
def vendored(tmp_path):
    """(directory holding a copy of bpe_fallback.py alone, the environment to run it in):
    python -S (no site-packages, so neither this package nor its editable install) with
    PYTHONPATH = that directory and a directory holding only `regex`."""
    home = tmp_path / "project"
    home.mkdir()
    (home / "bpe_fallback.py").write_bytes((REPO / "bpe_fallback.py").read_bytes())
    deps = tmp_path / "deps"
    deps.mkdir()
    os.symlink(os.path.dirname(regex.__file__), deps / "regex")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BPE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(home), str(deps)])
    return home, env


def _python(home, env, *args, stdin=None):
    return subprocess.run([sys.executable, "-S", *args], cwd=home, env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)


def test_the_copied_file_alone_does_everything(vendored):
    home, env = vendored
    (home / "corpus.txt").write_text(TEXT, encoding="utf-8")
    script = textwrap.dedent("""
        import sys
        import bpe_fallback as bpe

        assert bpe.__file__.startswith(sys.argv[1]), bpe.__file__
        text = open("corpus.txt", encoding="utf-8").read()
        tok = bpe.Tokenizer.train(text, 300, special_tokens=["<|end|>"])
        tok.save("tok.bpe")
        again = bpe.Tokenizer.load("tok.bpe")
        assert again == tok and again.merges == tok.merges
        ids = again.encode("the lowest cat<|end|>", allowed_special="all")
        assert ids[-1] == tok.special_tokens["<|end|>"] and len(ids) < 15
        assert again.decode(ids) == "the lowest cat<|end|>"
        # the extras, each imported where used: workers, the formats, encode_files
        files = bpe.Tokenizer.train_files(["corpus.txt"], 300, workers=2, chunk_size=256,
                                          special_tokens=["<|end|>"])
        assert files.merges == tok.merges
        tok.save_huggingface("tokenizer.json")
        assert bpe.Tokenizer.from_file("tokenizer.json") == tok
        tok.save_tiktoken("tok.tiktoken")
        assert bpe.Tokenizer.from_file("tok.tiktoken") == tok
        meta = tok.encode_files(["corpus.txt"], "ids.bin", workers=2, chunk_size=256)
        assert meta["count"] == len(tok.encode(text))
        site = [name for name, m in sys.modules.items()
                if "site-packages" in (getattr(m, "__file__", None) or "")
                and name.split(".")[0] != "regex"]
        assert not site, site
        print("ok")
    """)
    run = _python(home, env, "-c", script, str(home))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"


def test_the_copied_file_runs_its_command_line(vendored):
    home, env = vendored
    (home / "corpus.txt").write_text(TEXT, encoding="utf-8")
    run = _python(home, env, "-m", "bpe_fallback", "--help")
    assert run.returncode == 0, run.stderr
    assert "train" in run.stdout and "encode" in run.stdout
    run = _python(home, env, "-m", "bpe_fallback", "train", "corpus.txt", "--vocab-size", "300",
                  "-o", "cli.bpe")
    assert run.returncode == 0, run.stderr
    assert re.search(r"^backend +python$", run.stdout, re.M), run.stdout
    check = _python(home, env, "-c", "import bpe_fallback as b; t = b.Tokenizer.load('cli.bpe'); "
                    "o = b.Tokenizer.train(open('corpus.txt').read(), 300); "
                    "print(t == o, t.decode(t.encode('the lowest')))")
    assert check.returncode == 0, check.stderr
    assert check.stdout.split("\n")[0] == "True the lowest"
    run = _python(home, env, "-m", "bpe_fallback", "encode", "corpus.txt", "-t", "cli.bpe",
                  "-o", "ids.bin", "--quiet")
    assert run.returncode == 0, run.stderr
    assert (home / "ids.bin").stat().st_size > 0 and (home / "ids.bin.json").is_file()


def test_import_is_light():
    """`import bpe_fallback` loads no worker-process, logging, compression or JSON machinery:
    the extras import what they need when they are used."""
    code = textwrap.dedent(f"""
        import sys
        import regex  # the one dependency: what it imports is not ours to count
        before = set(sys.modules)
        import bpe_fallback
        new = set(sys.modules) - before
        print("multiprocessing" in sys.modules)
        print(sorted(new & set({HEAVY!r})))
        print(len(new))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    multiprocessing, heavy, count = run.stdout.split("\n")[:3]
    assert multiprocessing == "False"
    assert heavy == "[]"
    # beyond regex (and the standard modules it loads: re, enum, functools, threading, ...,
    # which a site's start-up may or may not have loaded already): array, heapq, a few more
    assert int(count) <= 12, count


def test_public_names_are_the_api():
    """The module's public names are its API (__all__) and its documented constants: the
    stdlib modules it uses are private aliases or imported where used."""
    import bpe_fallback

    public = {n for n in dir(bpe_fallback) if not n.startswith("_")}
    constants = {"MAX_COUNT", "COUNT_OVERFLOW", "PATTERN_TIME_BASE", "PATTERN_TIME_PER_CHAR"}
    assert public == {n for n in bpe_fallback.__all__ if not n.startswith("_")} | constants
