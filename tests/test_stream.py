"""Long inputs: encode_iterable and train_files cut the text into blocks; the cuts must never
change a pre-token or a special token. The texts here are long (tens of KB) and full of the
places where a careless cut changes the result."""

import os
import random
import subprocess
import sys
import textwrap

import pytest

import naive
from helpers import EOT, PEAK_MB_SOURCE, SPECIALS

CUSTOM = r"\w+|\W"
STREAM_PATTERNS = ["gpt2", "cl100k", "o200k", "words", "bytes", CUSTOM]

FRAGMENTS = [
    " ",
    "  ",
    "   ",
    "\n",
    "\r\n",
    "\r",
    "\n\n\n",
    "\t",
    " \n ",
    "'s",
    "'S",
    "'ll",
    "'",
    "123456",
    "7",
    "abc",
    "ABC",
    "DeF",
    "hello",
    " world",
    "Éé",
    "😀",
    "ǅ",
    "e\u0301",
    ".",
    "!!",
    "...\n",
    "\u00a0",
    "\u3000",
    "日本語",
    "x",
    "<|",
    "|>",
    "<|endo",
    "ftext|>",
    EOT,
    "<|pad|>",
    "\ud800",
    "\udc00",
]
LONG_RUNS = [" " * 300, "a" * 700, "\n" * 150, "7" * 200, "ÄÖÜ" * 100, " \n" * 80, ". " * 120]


def tricky_text(seed, size):
    rng = random.Random(seed)
    parts = []
    n = 0
    while n < size:
        if rng.random() < 0.01:
            frag = rng.choice(LONG_RUNS)
        else:
            frag = rng.choice(FRAGMENTS)
        parts.append(frag)
        n += len(frag)
    return "".join(parts)


def random_chunks(text, seed):
    rng = random.Random(seed)
    sizes = [0, 1, 2, 7, 100, 999, 5000, 20000]
    out, i = [], 0
    while i < len(text):
        k = rng.choice(sizes)
        out.append(text[i : i + k])
        i += k
    return out


_TOKS = {}


def stream_tok(mod, pattern):
    key = (mod.__name__, pattern)
    if key not in _TOKS:
        corpus = tricky_text(99, 20000).replace("\ud800", "").replace("\udc00", "")
        _TOKS[key] = mod.Tokenizer.train(
            corpus, 256 + 2 + 150, pattern=pattern, special_tokens=SPECIALS
        )
    return _TOKS[key]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "pattern", STREAM_PATTERNS, ids=["gpt2", "cl100k", "o200k", "words", "bytes", "custom"]
)
def test_encode_iterable_long_tricky(mod, pattern, seed):
    tok = stream_tok(mod, pattern)
    text = tricky_text(seed, 60000)
    chunks = random_chunks(text, seed)
    assert "".join(chunks) == text
    assert list(tok.encode_iterable(chunks, allowed_special="all")) == tok.encode(
        text, allowed_special="all"
    )
    assert list(tok.encode_iterable(iter(chunks), disallowed_special=())) == tok.encode_ordinary(
        text
    )
    with pytest.raises(ValueError):
        list(tok.encode_iterable(chunks))


@pytest.mark.parametrize(
    "pattern", STREAM_PATTERNS, ids=["gpt2", "cl100k", "o200k", "words", "bytes", "custom"]
)
def test_encode_iterable_char_by_char(mod, pattern):
    tok = stream_tok(mod, pattern)
    text = tricky_text(5, 40000)
    assert list(tok.encode_iterable(iter(text), allowed_special="all")) == tok.encode(
        text, allowed_special="all"
    )


def test_encode_iterable_long_runs(gpt2):
    # single pre-tokens far longer than any block
    for text in [
        "x" + " " * 50000 + "y",
        "a" * 40000,
        "\n" * 30001 + "z",
        "1" * 33333,
        "😀" * 20000,
        " " * 40000,
        EOT.join(["ab"] * 5000),
    ]:
        for size in (1000, 16384, 70000):
            chunks = [text[i : i + size] for i in range(0, len(text), size)]
            assert list(gpt2.encode_iterable(chunks, allowed_special="all")) == gpt2.encode(
                text, allowed_special="all"
            )


def test_encode_iterable_surrogate_pair_across_chunks(gpt2):
    text = ("ab \ud83d\ude00 cd " * 3000) + "\ud83d"
    for size in (1, 7, 16384, 16385):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(gpt2.encode_iterable(chunks)) == gpt2.encode(text)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "words", "bytes", CUSTOM],
                         ids=["gpt2", "cl100k", "o200k", "words", "bytes", "custom"])
def test_train_files_long_tricky(mod, tmp_path, pattern):
    text = tricky_text(11, 60000).replace("\ud800", "").replace("\udc00", "")
    other = tricky_text(12, 30000).replace("\ud800", "").replace("\udc00", "")
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_bytes(text.encode("utf-8"))
    b.write_bytes(other.encode("utf-8"))
    ref = mod.Tokenizer.train(
        [text, other], 256 + 2 + 120, pattern=pattern, special_tokens=SPECIALS
    )
    counts = naive.count_pretokens([text, other], pattern, SPECIALS)
    assert mod.count_pretokens([text, other], pattern=pattern, special_tokens=SPECIALS) == counts
    assert ref.merges == naive.train_from_counts(counts, 256 + 2 + 120, special_tokens=SPECIALS)
    for workers, chunk_size in ((1, 1000), (2, 1000), (2, 4096), (1, 64)):
        tok = mod.Tokenizer.train_files(
            [a, b],
            256 + 2 + 120,
            workers=workers,
            chunk_size=chunk_size,
            pattern=pattern,
            special_tokens=SPECIALS,
        )
        assert tok == ref, (workers, chunk_size)


def test_train_files_crlf_and_specials_with_newlines(mod, tmp_path):
    text = "".join(f"line {i}\r\nword<|x\n|> more\r\n\r\nend\n" for i in range(2000))
    path = tmp_path / "crlf.txt"
    path.write_bytes(text.encode())
    for specials in ([], ["<|x\n|>"]):
        ref = mod.Tokenizer.train(
            [text], 256 + len(specials) + 60, special_tokens=specials, pattern="cl100k"
        )
        tok = mod.Tokenizer.train_files([path], 256 + len(specials) + 60, chunk_size=500, workers=2,
                                        special_tokens=specials, pattern="cl100k")
        assert tok == ref


STREAM_MEMORY_SCRIPT = PEAK_MB_SOURCE + textwrap.dedent(
    """
    import importlib, resource, sys
    mod = importlib.import_module(sys.argv[1])
    base = open(sys.argv[2], encoding="utf-8").read()
    tok = mod.Tokenizer.train(base[:20000], 400)
    block = (base * 2)[:65536]
    def chunks(total):
        sent = 0
        while sent < total:
            yield block
            sent += len(block)
    list(tok.encode_iterable(chunks(65536 * 4)))  # warm up caches
    before = peak_mb()
    n = 0
    for _ in tok.encode_iterable(chunks(5 * 1024 * 1024)):
        n += 1
    after = peak_mb()
    print(n, after - before)
    """
)


def test_encode_iterable_memory_is_bounded(mod, tmp_path):
    """A 5 MB stream encodes in a few MB of memory (ru_maxrss of a fresh process)."""
    pytest.importorskip("resource")
    from helpers import DATA

    script = tmp_path / "stream_memory.py"
    script.write_text(STREAM_MEMORY_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run(
        [sys.executable, str(script), mod.__name__, str(DATA / "corpus.en")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    n, growth_mb = map(int, out.stdout.split())
    assert n > 500000
    assert growth_mb < 20, f"peak memory grew by {growth_mb} MB while streaming 5 MB"


# With a tiny block, encode_iterable cuts its window after every few dozen characters, so
# every cut rule (special tokens, pre-token margins, surrogate pairs) is exercised constantly.
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10**6), cuts=st.lists(st.integers(1, 40), min_size=1, max_size=30),
       block=st.integers(1, 120))
@pytest.mark.parametrize("pattern", STREAM_PATTERNS)
@pytest.mark.parametrize("policy", ["ordinary", "allowed", "disallowed-absent"])
def test_encode_iterable_small_blocks(
    mod, trained, monkeypatch, pattern, policy, seed, cuts, block
):
    tok = trained(pattern)
    text = tricky_text(seed, 600)
    if policy == "ordinary":
        kwargs = {"disallowed_special": ()}
    elif policy == "allowed":
        kwargs = {"allowed_special": "all"}
    else:
        text = text.replace("<|", "<")  # no special token can occur; the default policy holds
        kwargs = {}
    chunks, pos, k = [], 0, 0
    while pos < len(text):
        step = cuts[k % len(cuts)]
        chunks.append(text[pos:pos + step])
        pos += step
        k += 1
    expected = tok.encode(text, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(mod.Tokenizer, "_STREAM_BLOCK", block)
        assert list(tok.encode_iterable(iter(chunks), **kwargs)) == expected


class _Chunks:
    """An iterator of chunks whose length hint is what the test says (or raises)."""

    def __init__(self, chunks, hint):
        self._it, self._hint = iter(chunks), hint

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def __length_hint__(self):
        if isinstance(self._hint, Exception):
            raise self._hint
        return self._hint


@pytest.mark.parametrize("pattern", ["gpt2", "o200k", CUSTOM], ids=["gpt2", "o200k", "custom"])
def test_encode_iterable_length_hint(mod, pattern):
    """list() asks the stream for its length first: asking never changes the ids, before
    the first item or mid-way; the compiled core's estimate (from the ids of the first
    window and the input's own hint) is within a factor of two for even chunks, is never
    more than the ids known where the input has no hint, and a broken or huge input hint
    is no error."""
    import operator

    tok = stream_tok(mod, pattern)
    text = tricky_text(3, 120000)
    chunks = text.splitlines(keepends=True)
    expected = tok.encode(text, allowed_special="all")

    stream = tok.encode_iterable(chunks, allowed_special="all")
    hint = operator.length_hint(stream)
    assert list(stream) == expected
    if mod.BACKEND == "cython":
        assert len(expected) / 2 <= hint <= 2 * len(expected)

    stream = tok.encode_iterable(iter(chunks), allowed_special="all")
    first = [next(stream) for _ in range(5)]
    operator.length_hint(stream)
    assert first + list(stream) == expected

    stream = tok.encode_iterable((c for c in chunks), allowed_special="all")  # no hint
    assert operator.length_hint(stream) <= len(expected)
    assert list(stream) == expected

    for bad in (ValueError("broken"), -5, 10**15, 2**80):
        stream = tok.encode_iterable(_Chunks(chunks, bad), allowed_special="all")
        assert list(stream) == expected


REENTRANT_SCRIPT = textwrap.dedent('''
    import sys
    mod = __import__(sys.argv[1])
    tok = mod.Tokenizer.from_merges([(b"h", b"i")])

    class Chunks:  # an input that reads its own stream half-way
        n = 0
        def __iter__(self):
            return self
        def __next__(self):
            self.n += 1
            if self.n == 2:
                next(stream)
            if self.n > 1000:
                raise StopIteration
            return "hi " * 50

    stream = tok.encode_iterable(Chunks())
    try:
        list(stream)
    except ValueError as e:
        print("ValueError", e)
''')


def test_encode_iterable_input_reads_its_own_stream(mod, tmp_path):
    """An input that calls next() on the stream it feeds gets ValueError (generator already
    executing), on both backends; never a crash (CPython 3.11's itertools.chain freed the
    running generator: the fallback's flatten holds its source)."""
    script = tmp_path / "reentrant.py"
    script.write_text(REENTRANT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               PYTHONMALLOC="debug")
    out = subprocess.run([sys.executable, str(script), mod.__name__],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ValueError generator already executing")
