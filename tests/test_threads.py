"""How many threads a call uses, and long texts cut into pieces that threads encode: the ids
are tiktoken's whatever the threads and the cuts (both backends; only the compiled core uses
threads, the pure-Python one encodes the same pieces in one thread)."""

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import DATA, EOT, GPT2_MERGES, GPT2_VOCAB, gpt2_tiktoken, read_data

tiktoken = pytest.importorskip("tiktoken")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def threads(mod, monkeypatch):
    """Two threads by default, and texts over 3,000 characters cut into pieces of 500 or
    more (the real limits are 1 M and 256 K characters)."""
    monkeypatch.setattr(mod.Tokenizer, "_LONG_TEXT", 3000)
    monkeypatch.setattr(mod.Tokenizer, "_LONG_PIECE", 500)
    mod.set_num_threads(2)
    yield mod
    mod.set_num_threads(None)


def long_text():
    """Lines of English (every third one ending in a word, where GPT-4's pattern may be
    cut), code-like lines and a few non-ASCII ones, with blank lines."""
    lines = [line if k % 3 else line.rstrip("\n") + " and so on\n"
             for k, line in enumerate(read_data("corpus.en", 12000).splitlines(keepends=True))]
    lines[3:3] = ["naïve café 東京 😀 123456789\n", "\tdef f(x):  return x  \r\n", "\n\n"]
    return "".join(lines)


def encodings(mod, name):
    """(ours, tiktoken's) of gpt2 or cl100k_base, from tests/data."""
    if name == "gpt2":
        return mod.Tokenizer.from_gpt2(str(GPT2_VOCAB), str(GPT2_MERGES)), gpt2_tiktoken()
    tok = mod.get_encoding(name, path=DATA / f"{name}.tiktoken.gz")
    return tok, tiktoken.Encoding(name, pat_str=tok._pat_str, special_tokens=tok._special_tokens,
                                  mergeable_ranks=tok._mergeable_ranks)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_long_text_pieces_give_tiktokens_ids(threads, name):
    mod = threads
    tok, enc = encodings(mod, name)
    text = long_text()
    want = enc.encode_ordinary(text)
    assert tok.encode_ordinary(text) == want
    assert tok.encode(text) == want
    assert tok.encode_batch([text]) == [want]
    assert tok.encode_to_numpy(text).tolist() == want
    if mod.BACKEND == "cython":   # the text was cut: several pieces, joined
        pieces, used = tok._long_pieces(text)
        assert len(pieces) > 2 and used == 2 and "".join(pieces) == text


def test_long_text_special_tokens_as_encode(threads):
    tok, enc = encodings(threads, "gpt2")
    text = long_text()
    text = text[:5000] + EOT + text[5000:] + EOT
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode(text, disallowed_special=()) == enc.encode(text, disallowed_special=())
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode(text)
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode_to_numpy(text)


def test_a_custom_pattern_cut_at_line_feeds(threads):
    mod = threads
    pattern = r"""'s|'t| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    tok = mod.Tokenizer.train(read_data("corpus.en", 20000), 300, pattern=pattern)
    text = long_text()
    mod.set_num_threads(1)
    want = tok.encode_ordinary(text)
    assert tok._long_pieces(text) is None
    mod.set_num_threads(2)
    assert tok.encode_ordinary(text) == want
    assert tok.decode(want) == text
    if mod.BACKEND == "cython":
        assert len(tok._long_pieces(text)[0]) > 2


def test_set_num_threads_checks_its_argument(mod):
    for bad in (0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            mod.set_num_threads(bad)
    for bad in (True, 1.5, "2"):
        with pytest.raises(TypeError):
            mod.set_num_threads(bad)
    mod.set_num_threads(None)


CHILD = textwrap.dedent("""
    import json, multiprocessing, os, sys
    import bpe_fallback as m   # (where the threads' rule lives; {mod} uses it)
    import {mod}
    {mod}.set_num_threads(None)
    out = {{"main": m._default_threads()}}
    {mod}.set_num_threads(3)
    out["set"] = m._default_threads()
    {mod}.set_num_threads(None)
    pid = os.fork()
    if pid == 0:
        os.write(1, json.dumps({{"forked": m._default_threads()}}).encode() + b"\\n")
        os._exit(0)
    os.waitpid(pid, 0)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out["pool"] = pool.apply(m._default_threads)
    print(json.dumps(out))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_default_threads_never_oversubscribe(mod):
    """The CPUs by default; one in a fork() child and in a worker process; the environment
    variable, then set_num_threads, override it; a bad value is a ValueError naming it."""
    import json

    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("BPE_NUM_THREADS", None)
    run = subprocess.run([sys.executable, "-c", CHILD.format(mod=mod.__name__)], env=env,
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    got = {k: v for d in lines for k, v in d.items()}
    assert got == {"main": len(os.sched_getaffinity(0)), "set": 3, "forked": 1, "pool": 1}
    for value, want in (("3", 3), ("0", None), ("two", None)):
        run = subprocess.run([sys.executable, "-c", f"import {mod.__name__}, bpe_fallback; "
                              "print(bpe_fallback._default_threads())"],
                             env=dict(env, BPE_NUM_THREADS=value), capture_output=True,
                             text=True, cwd=ROOT, timeout=120)
        if want is None:
            assert "BPE_NUM_THREADS" in run.stderr and "ValueError" in run.stderr
        else:
            assert run.stdout.strip() == str(want)
