"""tools/analyze.py (compress, curve, show, compare), run as a subprocess."""

import importlib
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import types
from pathlib import Path

import pytest

from helpers import DATA, EOT, SPECIALS, corpus_with_specials, read_data
from test_cli import REPO, assert_ok, assert_one_line_error, run_tool, tool_env

TOOL = REPO / "tools" / "analyze.py"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def analyze(args, **kw):
    return run_tool([sys.executable, TOOL], args, **kw)


def run_in_process(args, monkeypatch, capsys):
    """tools/analyze.py's entry point (`run`) in this process: (returncode, stdout, stderr)."""
    monkeypatch.syspath_prepend(str(REPO / "tools"))
    module = importlib.import_module("analyze")
    monkeypatch.delenv("BPE_DEBUG", raising=False)
    monkeypatch.delenv("BPE_BACKEND", raising=False)
    capsys.readouterr()
    code = module.run([str(a) for a in args])
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


@pytest.fixture(scope="session")
def small(tmp_path_factory):
    """One small trained tokenizer (installed bpe) written in every format."""
    import bpe

    where = tmp_path_factory.mktemp("tokenizers")
    tok = bpe.Tokenizer.train(corpus_with_specials(30000), 400, special_tokens=SPECIALS)
    tok.save(str(where / "small.bpe"))
    tok.save_huggingface(str(where / "tokenizer.json"))
    tok.save_gpt2(str(where / "gpt2-dir"))
    tok.save_tiktoken(str(where / "small.tiktoken"))
    (where / "small.tiktoken.json").write_text(
        json.dumps({"pattern": tok.pattern, "special_tokens": tok.special_tokens}),
        encoding="utf-8")
    return tok, where


def table_rows(stdout):
    """Every output line, split into its columns."""
    lines = stdout.splitlines()
    return [line.split() for line in lines]


# ---- compress ---------------------------------------------------------------


def test_compress_counts_the_tokens_of_each_file(small):
    tok, where = small
    files = [DATA / "corpus.en", DATA / "german.txt", DATA / "tinystories_sample.txt"]
    outputs = {}
    for spec in ("small.bpe", "tokenizer.json", "gpt2-dir", "small.tiktoken"):
        result = analyze(["compress", where / spec, *files])
        assert_ok(result)
        outputs[spec] = result.stdout
        rows = {r[0].rsplit("/", 1)[-1]: r for r in table_rows(result.stdout)
                if r and r[0].endswith((".en", ".txt"))}
        assert list(rows) == ["corpus.en", "german.txt", "tinystories_sample.txt"]
        for path in files:
            text = read_data(path.name)
            n = len(tok.encode(text, allowed_special="all"))
            row = rows[path.name]
            assert row[1] == f"{len(text.encode()):,}" and row[2] == f"{len(text):,}"
            assert row[3] == f"{n:,}"
            assert row[4] == f"{len(text.encode()) / n:.2f}"
        assert rows["corpus.en"][6] == "1.00"  # the tax is relative to the first file
        assert float(rows["german.txt"][6]) > 1.2  # trained on English: German costs more
    # the same tokenizer in four formats: the same table
    tables = {spec: out.split("\n", 1)[1] for spec, out in outputs.items()}
    assert len(set(tables.values())) == 1, tables


def test_compress_gpt2_from_tests_data():
    pytest.importorskip("tiktoken")
    from helpers import gpt2_tiktoken

    result = analyze(["compress", "gpt2", DATA / "german.txt"])
    assert_ok(result)
    assert result.stdout.startswith("tokenizer gpt2 (50,257 tokens)")
    text = read_data("german.txt")
    assert f" {len(gpt2_tiktoken().encode(text)):,} " in result.stdout


def test_tiktoken_name_needs_the_offline_cache(tmp_path):
    # an empty cache: the encoding is not available offline, and nothing is downloaded
    env = tool_env(TIKTOKEN_CACHE_DIR=str(tmp_path))
    result = analyze(["compress", "tiktoken:cl100k_base", DATA / "german.txt"], env=env)
    assert_one_line_error(result, "analyze", "not available offline")
    assert list(tmp_path.iterdir()) == []
    result = analyze(["compress", "tiktoken:no_such_encoding", DATA / "german.txt"], env=env)
    assert_one_line_error(result, "analyze", "no_such_encoding")


# ---- curve ------------------------------------------------------------------


def test_curve_table(mod, tmp_path):
    src = DATA / "corpus.en"
    result = analyze(["curve", src, "--sizes", "600,300,450", "--eval", DATA / "german.txt",
                      "--special", EOT, "--workers", "1"], mod=mod)
    assert_ok(result)
    rows = [r for r in table_rows(result.stdout) if r and r[0].isdigit()]
    assert [r[0] for r in rows] == ["300", "450", "600"]
    text, held = read_data("corpus.en"), read_data("german.txt")
    bpt = []
    for row in rows:
        size = int(row[0])
        tok = mod.Tokenizer.train_files([str(src)], size, special_tokens=[EOT])
        assert row[1] == f"{len(tok.merges):,}"
        n = len(tok.encode(text, allowed_special="all"))
        assert row[2] == f"{n:,}"
        assert row[3] == f"{len(text.encode()) / n:.3f}"
        assert row[4] == f"{len(held.encode()) / len(tok.encode(held)):.3f}"
        bpt.append(float(row[3]))
    assert bpt == sorted(bpt)  # more merges, longer tokens


def test_smaller_vocabularies_are_prefixes_of_a_longer_training(mod):
    # what `curve` relies on to train only once
    text = corpus_with_specials(20000)
    full = mod.Tokenizer.train(text, 700, special_tokens=SPECIALS, pattern="words")
    for size in (258, 300, 451, 699):
        k = size - 256 - len(SPECIALS)
        short = mod.Tokenizer.train(text, size, special_tokens=SPECIALS, pattern="words")
        assert mod.Tokenizer.from_merges(full.merges[:k], pattern=full.pattern,
                                         special_tokens=SPECIALS) == short


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_curve_plot(tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed")
    out = tmp_path / "curve.png"
    result = analyze(["curve", DATA / "corpus.en", "--sizes", "300,400,600",
                      "--eval", DATA / "german.txt", "--plot", out])
    assert_ok(result)
    assert f"wrote {out}" in result.stdout
    width, height = png_size(out)
    assert width >= 400 and height >= 300


def test_curve_plot_without_matplotlib(tmp_path):
    # a matplotlib that cannot be imported, first on the path
    fake = tmp_path / "fake" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = tool_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), env["PYTHONPATH"]])
    out = tmp_path / "curve.png"
    result = analyze(["curve", DATA / "german.txt", "--sizes", "300", "--plot", out], env=env)
    assert_one_line_error(result, "analyze", "matplotlib")
    assert "pip install matplotlib" in result.stderr
    assert not out.exists()
    # without --plot the table needs no matplotlib
    assert_ok(analyze(["curve", DATA / "german.txt", "--sizes", "300"], env=env))


# ---- show -------------------------------------------------------------------


def test_show_brackets(small, mod):
    tok, where = small
    text = f"Hello world, it's a test.{EOT}\n\tnext line \u00fc\u65e5"
    result = analyze(["show", where / "small.bpe", text], mod=mod)
    assert_ok(result)
    body, footer = result.stdout.rsplit("\n", 2)[0], result.stdout.splitlines()[-1]
    ids = tok.encode(text, allowed_special="all")
    pieces = re.findall(r"\[(.*?)\]", body.replace("\n", ""))
    assert len(pieces) == len(ids)
    expect = [tok.token_bytes(i).decode("utf-8", "backslashreplace")
              .replace("\n", "\\n").replace("\t", "\\t") for i in ids]
    assert pieces == expect
    assert "[<|endoftext|>]" in body  # a special token is one token
    assert footer.startswith(f"{len(ids)} tokens, {len(text)} characters")
    # a line break in the output after each token that holds one
    assert body.splitlines()[0].endswith("[\\n]")


def test_show_gpt2_ids_and_file(tmp_path):
    result = analyze(["show", "gpt2", "--ids", "Hello world"])
    assert_ok(result)
    assert result.stdout.splitlines()[0] == "[Hello|15496][ world|995]"
    result = analyze(["show", "gpt2"], stdin="the cat")
    assert_ok(result)
    assert result.stdout.splitlines()[0] == "[the][ cat]"


def test_show_file(small, tmp_path):
    tok, where = small
    src = tmp_path / "t.txt"
    src.write_text("the cat sat", encoding="utf-8")
    result = analyze(["show", where / "small.bpe", "--file", src])
    assert_ok(result)
    shown = "".join(f"[{tok.decode([i])}]" for i in tok.encode("the cat sat"))
    assert result.stdout.splitlines()[0] == shown


def test_show_color(small):
    tok, where = small
    text = "the cat sat on the mat"
    result = analyze(["show", where / "tokenizer.json", "--color", "always", text])
    assert_ok(result)
    first = result.stdout.splitlines()[0]
    backgrounds = re.findall(r"\x1b\[38;5;16;48;5;(\d+)m", first)
    ids = tok.encode(text)
    assert len(backgrounds) == len(ids)
    assert all(a != b for a, b in zip(backgrounds, backgrounds[1:]))  # alternating
    assert ANSI.sub("", first) == text
    plain = analyze(["show", where / "tokenizer.json", "--no-color", text])
    assert "\x1b" not in plain.stdout


# ---- compare ----------------------------------------------------------------


def test_compare_with_tiktoken_and_tokenizers(small):
    pytest.importorskip("tiktoken")
    pytest.importorskip("tokenizers")
    tok, where = small
    text = "Hello world, the students of the University.<|endoftext|> Bye"
    result = analyze(["compare", where / "small.bpe", text, "--hf", where / "tokenizer.json",
                      "--tiktoken", where / "small.tiktoken"])
    assert_ok(result)
    n = len(tok.encode(text, allowed_special="all"))
    out = result.stdout
    assert out.count(f": {n} tokens") == 3  # ours, tiktoken's and tokenizers' views
    summary = out.split("\n\n")[-1].splitlines()
    assert summary[0].split() == ["tokenizer", "tokens", "bytes/token", "vs", "ours"]
    assert summary[1].startswith("ours: ") and summary[1].split()[2] == str(n)
    assert summary[2].startswith("tiktoken: ") and summary[2].endswith("same ids")
    assert summary[3].startswith("tokenizers: ") and summary[3].endswith("same ids")


@pytest.mark.slow
def test_compare_default_is_gpt2_from_tests_data(small):
    pytest.importorskip("tiktoken")
    tok, where = small
    text = "Hello world"
    result = analyze(["compare", where / "small.bpe", text])
    assert_ok(result)
    assert "== tiktoken: gpt2 (tests/data): 2 tokens\n[Hello][ world]" in result.stdout
    assert f"== ours: {where / 'small.bpe'}: {len(tok.encode(text))} tokens" in result.stdout
    # GPT-2 itself against tiktoken's GPT-2: the same ids
    result = analyze(["compare", "gpt2", "--ids", "It's 2024, hello world!"])
    assert_ok(result)
    assert result.stdout.rstrip().endswith("same ids")


# ---- errors -----------------------------------------------------------------


def bad(tmp_path, setup=True):
    junk = tmp_path / "junk.bpe"
    if setup:
        junk.write_text("#bpe-tokenizer 1\npattern oops\n", encoding="utf-8")
    text = DATA / "german.txt"
    return {
        "no command": ([], "required"),
        "unknown command": (["explain"], "invalid choice"),
        "missing tokenizer": (["compress", tmp_path / "nope.bpe", text], "no such tokenizer"),
        "corrupt tokenizer": (["show", junk, "x"], "junk.bpe"),
        "missing file": (["compress", "gpt2", tmp_path / "nope.txt"], "no such file"),
        "text and file": (["show", "gpt2", "x", "--file", text], "not both"),
        "no text": (["show", "gpt2"], "give a TEXT"),
        "bad sizes": (["curve", text, "--sizes", "300,lots"], "--sizes"),
        "sizes too small": (["curve", text, "--sizes", "100,300"], "below 256"),
        "bad pattern": (["curve", text, "--sizes", "300", "--pattern", "(x"], "invalid pattern"),
        "plot dir missing": (["curve", text, "--sizes", "300", "--plot",
                              tmp_path / "no" / "c.png"], "does not exist"),
        "missing hf": (["compare", "gpt2", "x", "--hf", tmp_path / "nope.json"],
                       "no such tokenizer.json"),
        "missing tiktoken file": (["compare", "gpt2", "x", "--tiktoken", tmp_path / "n.tiktoken"],
                                  "no such tiktoken file"),
    }


AS_PROCESS = {"unknown command", "missing tokenizer", "no text"}


@pytest.mark.parametrize("name", list(bad(Path("/nonexistent"), setup=False)))
def test_bad_invocation_is_one_line(name, tmp_path, monkeypatch, capsys):
    args, needle = bad(tmp_path)[name]
    if name == "no text":
        result = run_on_a_terminal(args)
    elif name in AS_PROCESS:
        result = analyze(args, stdin="")
    else:  # through the script's entry point, in this process (faster)
        result = run_in_process(args, monkeypatch, capsys)
    assert_one_line_error(result, "analyze", needle)
    assert result.stdout == ""


def run_on_a_terminal(args):
    """Run analyze with a terminal as its standard input (where no text is waiting)."""
    pty = pytest.importorskip("pty")
    controller, terminal = pty.openpty()
    try:
        return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True,
                              text=True, stdin=terminal, env=tool_env(), timeout=300)
    finally:
        os.close(controller)
        os.close(terminal)
