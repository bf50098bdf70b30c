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


def counting(mod):
    """(a Tokenizer class whose core lists the length of each piece it scans apart, that
    list): where a long text was cut, and into how many pieces."""
    scanned = []

    class Core(mod.Core):
        def scan_ids(self, text):
            scanned.append(len(text))
            return super().scan_ids(text)

    class Tokenizer(mod.Tokenizer):
        core_class = Core

    return Tokenizer, scanned


def long_text():
    """Lines of English (every third one ending in a word, where GPT-4's pattern may be
    cut), code-like lines and a few non-ASCII ones, with blank lines."""
    lines = [line if k % 3 else line.rstrip("\n") + " and so on\n"
             for k, line in enumerate(read_data("corpus.en", 12000).splitlines(keepends=True))]
    lines[3:3] = ["naïve café 東京 😀 123456789\n", "\tdef f(x):  return x  \r\n", "\n\n"]
    return "".join(lines)


def encodings(cls, name):
    """(ours, tiktoken's) of gpt2 or cl100k_base, from tests/data."""
    if name == "gpt2":
        return cls.from_gpt2(str(GPT2_VOCAB), str(GPT2_MERGES)), gpt2_tiktoken()
    tok = cls.get_encoding(name, path=DATA / f"{name}.tiktoken.gz")
    specials = tok.special_tokens
    ranks = {t: i for i, t in tok.vocab.items() if i not in specials.values()}
    return tok, tiktoken.Encoding(name, pat_str=tok.pattern, special_tokens=specials,
                                  mergeable_ranks=ranks)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_long_text_pieces_give_tiktokens_ids(threads, name):
    cls, scanned = counting(threads)
    tok, enc = encodings(cls, name)
    text = long_text()
    want = enc.encode_ordinary(text)
    assert tok.encode_ordinary(text) == want
    if threads.BACKEND == "cython":   # the text was cut: about four pieces a thread
        assert len(scanned) > 4 and sum(scanned) == len(text)
    assert tok.encode(text) == want
    assert tok.encode_batch([text]) == [want]
    assert tok.encode_to_numpy(text).tolist() == want


def test_long_text_special_tokens_as_encode(threads):
    tok, enc = encodings(threads.Tokenizer, "gpt2")
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
    cls, scanned = counting(mod)
    pattern = r"""'s|'t| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    tok = cls.train(read_data("corpus.en", 20000), 300, pattern=pattern)
    text = long_text()
    mod.set_num_threads(1)
    want = tok.encode_ordinary(text)
    assert scanned == []   # one thread: not cut
    mod.set_num_threads(2)
    assert tok.encode_ordinary(text) == want
    assert tok.decode(want) == text
    if mod.BACKEND == "cython":
        assert len(scanned) > 4 and sum(scanned) == len(text)


def test_set_num_threads_checks_its_argument(mod):
    for bad in (0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            mod.set_num_threads(bad)
    for bad in (True, 1.5, "2"):
        with pytest.raises(TypeError):
            mod.set_num_threads(bad)
    with pytest.raises(ValueError, match="at most 4096"):
        mod.set_num_threads(10**30)
    mod.set_num_threads(None)


PROBE = textwrap.dedent("""
    import json, multiprocessing, os, sys
    import {mod} as m

    scanned = []

    class Core(m.Core):
        def scan_ids(self, text):
            scanned.append(len(text))
            return super().scan_ids(text)

    class Tokenizer(m.Tokenizer):
        core_class = Core
        _LONG_TEXT, _LONG_PIECE = 3000, 100

    tok = Tokenizer.train("hello world and so on\\n" * 50, 260)
    TEXT = "hello world and so on\\n" * 500

    def pieces():
        \"\"\"Into how many pieces encode_ordinary cuts a long text (0: not cut, one thread).\"\"\"
        scanned.clear()
        assert tok.decode(tok.encode_ordinary(TEXT)) == TEXT
        return len(scanned)

    if __name__ == "__main__":
        out = {{"main": pieces()}}
        m.set_num_threads(3)
        out["set"] = pieces()
        m.set_num_threads(None)
        pid = os.fork()
        if pid == 0:
            os.write(1, json.dumps({{"forked": pieces()}}).encode() + b"\\n")
            os._exit(0)
        os.waitpid(pid, 0)
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            import probe
            out["pool"] = pool.apply(probe.pieces)
        print(json.dumps(out))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_default_threads_never_oversubscribe(mod, tmp_path):
    """A long text is cut into four pieces a thread: as many threads as CPUs by default; one
    (no cut) in a fork() child and in a worker process; the environment variable, then
    set_num_threads, override it; a bad value is a ValueError naming it."""
    import json

    (tmp_path / "probe.py").write_text(PROBE.format(mod=mod.__name__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    env.pop("BPE_NUM_THREADS", None)

    def run(**extra):
        return subprocess.run([sys.executable, str(tmp_path / "probe.py")], capture_output=True,
                              text=True, cwd=ROOT, timeout=120, env=dict(env, **extra))

    got = run()
    assert got.returncode == 0, got.stderr
    seen = {k: v for line in got.stdout.splitlines() for k, v in json.loads(line).items()}
    cpus = len(os.sched_getaffinity(0))
    if mod.BACKEND == "python":   # one thread always: never cut
        assert seen == {"main": 0, "set": 0, "forked": 0, "pool": 0}
        return
    assert seen == {"main": 4 * cpus if cpus > 1 else 0, "set": 12, "forked": 0, "pool": 0}
    got = run(BPE_NUM_THREADS="3")
    assert json.loads(got.stdout.splitlines()[-1])["main"] == 12
    for bad in ("0", "two", "99999"):
        got = run(BPE_NUM_THREADS=bad)
        assert got.returncode != 0 and "ValueError" in got.stderr
        assert "BPE_NUM_THREADS" in got.stderr.strip().splitlines()[-1]


def test_pieces_of_many_ids_give_tiktokens_ids(threads, monkeypatch):
    """Pieces of more than 2**17 ids each (written into the list around the caches) on two
    threads, and the whole text on one: tiktoken's ids."""
    tok, enc = encodings(threads.Tokenizer, "gpt2")
    text = long_text()
    text *= 1_600_000 // len(text) + 1
    monkeypatch.setattr(threads.Tokenizer, "_LONG_PIECE", len(text) // 2)   # two pieces
    want = enc.encode_ordinary(text)
    assert len(want) > 5 * (1 << 16)   # (each half over 2**17)
    assert tok.encode_ordinary(text) == want
    threads.set_num_threads(1)
    assert tok.encode_ordinary(text) == want
