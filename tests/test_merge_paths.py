"""How one pre-token is merged: the pure-Python core scans the pairs of a short pre-token
and keeps a heap for a long one, through a bounded cache of pre-tokens; the ids equal
tiktoken's at every length around the switch, for pre-tokens the cache keeps, leaves out or
loses when it fills, on both backends."""

import random

import pytest

import bpe_fallback
from helpers import gpt2_tiktoken

SHORT = bpe_fallback._SHORT            # the longest pre-token (in bytes) merged by the scan
CACHE_MAX_LEN = bpe_fallback._CACHE_MAX_LEN


def words(alphabet, lengths, seed):
    """One pre-token of GPT-2's pattern (a space, then letters) per length, in bytes."""
    rnd = random.Random(seed)
    out = []
    for n in lengths:
        word = ""
        while len((" " + word).encode("utf-8")) < n:
            word += rnd.choice(alphabet)
        out.append(" " + word)
    return out


@pytest.mark.parametrize("alphabet", ["etaoinshrdlu", "ab", "a", "日本語文字"],
                         ids=["letters", "two", "one", "cjk"])
def test_every_length_around_the_heap_switch(gpt2, alphabet):
    """Pre-tokens of every length from one byte to well past the switch: the same ids as
    tiktoken (repeated pairs, as "aaaa", check the leftmost-first order of equal ranks)."""
    pieces = words(alphabet, range(2, SHORT + 12), seed=len(alphabet))
    ref = gpt2_tiktoken()
    for piece in pieces:
        assert gpt2.encode_ordinary(piece) == ref.encode_ordinary(piece), piece
    text = "".join(pieces)
    assert gpt2.encode_ordinary(text) == ref.encode_ordinary(text)


def test_pretokens_past_the_cache_length_repeat_exactly(gpt2):
    """Pre-tokens longer than the cache keeps, each seen several times, among short ones."""
    ref = gpt2_tiktoken()
    long_ones = words("日本語文字漢", [3 * CACHE_MAX_LEN + k for k in (3, 30, 300)], seed=3)
    text = " x".join(long_ones * 3 + ["short", " words", " again"] * 5)
    assert gpt2.encode_ordinary(text) == ref.encode_ordinary(text)
    assert gpt2.encode_ordinary(text) == ref.encode_ordinary(text)


def test_a_full_cache_is_emptied_and_stays_exact(monkeypatch):
    """The pure-Python cache, made tiny, empties itself when it holds too many pre-tokens or
    too many characters: thousands of distinct pre-tokens leave it small, and every encode
    still gives tiktoken's ids."""
    import tracemalloc

    from helpers import GPT2_MERGES, GPT2_VOCAB

    monkeypatch.setattr(bpe_fallback, "_CACHE_SIZE", 8)
    monkeypatch.setattr(bpe_fallback, "_CACHE_CHARS", 60)
    tok = bpe_fallback.Tokenizer.from_gpt2(str(GPT2_VOCAB), str(GPT2_MERGES))
    ref = gpt2_tiktoken()
    pieces = words("etaoinshrdlucmfwyp", [n % 40 + 2 for n in range(200)], seed=5)
    for piece in pieces + pieces[::-1]:
        assert tok.encode_ordinary(piece) == ref.encode_ordinary(piece)
    text = "".join(pieces)
    assert tok.encode_ordinary(text) == ref.encode_ordinary(text)
    many = words("etaoinshrdlucmfwyp", [12] * 20000, seed=6)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(0, len(many), 1000):
            tok.encode_ordinary("".join(many[k:k + 1000]))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 200_000   # 20,000 cached pre-tokens would hold megabytes
