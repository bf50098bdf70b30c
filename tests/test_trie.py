"""Encoding a pre-token gives exactly what merge-by-rank gives.

The compiled core encodes with a trie over the token bytes (longest match, a compatibility
check of each token with the one before it, backtracking); the pure-Python core merges by
rank.  The oracles here are independent of both: a replay of the merges in order (tests/
naive.py's merge_word) with the rule that a pre-token which is itself a token is that one
id, and tiktoken on random rank files.  The vocabularies are random, and many hold tokens
that their own merges cannot build (a merge whose parts a lower-ranked merge breaks up,
tokens no merge makes), which the trie must leave out; the texts include pre-tokens of
thousands of bytes.
"""

import base64
import gzip

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive
from helpers import DATA, read_data

SETTINGS = dict(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def replay(data, merges, ids_of):
    """The ids of one pre-token (bytes): the token itself, else the merges replayed in order."""
    if data in ids_of:
        return [ids_of[data]]
    word = tuple(bytes([b]) for b in data)
    for a, b in merges:
        if len(word) < 2:
            break
        word = naive.merge_word(word, (a, b), a + b)
    return [ids_of[t] for t in word]


def core_checks(tok, data):
    """The trie alone against the core's own rank merge (on the compiled backend, a trie
    that found no encoding would otherwise be hidden by that fallback)."""
    core = tok.core
    if data:
        assert core.trie_ids(data) == core.merge_bytes(data)


@st.composite
def random_merges(draw, alphabet=b"abc", max_merges=40):
    """Merges that join two existing tokens into a new one, in a random order: later merges
    often join parts that an earlier merge breaks up, so their tokens cannot be built."""
    tokens = [bytes([c]) for c in alphabet]
    merges, seen = [], set(tokens)
    for _ in range(draw(st.integers(1, max_merges))):
        a = draw(st.sampled_from(tokens))
        b = draw(st.sampled_from(tokens))
        if a + b in seen or len(a + b) > 12:
            continue
        merges.append((a, b))
        tokens.append(a + b)
        seen.add(a + b)
    return merges


def text_of(alphabet, max_size):
    return st.one_of(
        st.text(st.sampled_from(alphabet), max_size=max_size),
        # long runs and repeats: many equal pairs overlapping, long backtracking
        st.builds(lambda u, k: (u * k)[:max_size],
                  st.text(st.sampled_from(alphabet), min_size=1, max_size=5), st.integers(1, 800)),
    )


@pytest.mark.slow
@settings(max_examples=400, **SETTINGS)
@given(
    merges=random_merges(),
    extra=st.lists(st.binary(min_size=2, max_size=6), max_size=4),
    shuffle=st.randoms(use_true_random=False),
    texts=st.lists(text_of("abc", 3000), min_size=1, max_size=4),
)
def test_random_merges_equal_rank_merge(mod, merges, extra, shuffle, texts):
    """Random merges, ids in a random order, extra tokens that no merge makes; the whole
    text is one pre-token (pattern "bytes")."""
    tokens = [bytes([i]) for i in range(256)] + [a + b for a, b in merges]
    tokens += [t for t in dict.fromkeys(extra) if t not in tokens]
    ids = list(range(len(tokens)))
    shuffle.shuffle(ids)
    vocab = dict(zip(ids, tokens))
    tok = mod.Tokenizer.from_merges(merges, vocab=vocab, pattern="bytes")
    ids_of = {t: i for i, t in vocab.items()}
    for text in texts:
        data = text.encode()
        expected = replay(data, merges, ids_of) if data else []
        assert tok.encode_ordinary(text) == expected
        core_checks(tok, data)
    # twice: the second time through the pre-token cache
    assert [tok.encode_ordinary(t) for t in texts] == [
        replay(t.encode(), merges, ids_of) if t else [] for t in texts]


@settings(max_examples=150, **SETTINGS)
@given(merges=random_merges(alphabet=b"ab ", max_merges=30), text=text_of("ab ", 1500),
       pattern=st.sampled_from(["gpt2", "words", "bytes"]))
def test_random_merges_every_pretoken(mod, merges, text, pattern):
    """Every pre-token of a text under a named pattern, each by the rule above."""
    tok = mod.Tokenizer.from_merges(merges, pattern=pattern)
    ids_of = {t: i for i, t in tok.vocab.items()}
    expected = []
    for pre in naive.pretokenize(text, naive.resolve_pattern(pattern)):
        expected += replay(pre.encode(), merges, ids_of)
    assert tok.encode_ordinary(text) == expected


@st.composite
def tiktoken_ranks(draw):
    """A random tiktoken rank file: the 256 bytes in a random order, then tokens that
    concatenate two earlier ones, each with the next rank."""
    order = draw(st.permutations(range(256)))
    ranks = {bytes([b]): r for r, b in enumerate(order)}
    tokens = [b"a", b"b", b"c", b" "]
    for _ in range(draw(st.integers(1, 60))):
        t = draw(st.sampled_from(tokens)) + draw(st.sampled_from(tokens))
        if t not in ranks and len(t) <= 16:
            ranks[t] = len(ranks)
            tokens.append(t)
    return ranks


@pytest.mark.slow
@settings(max_examples=200, **SETTINGS)
@given(ranks=tiktoken_ranks(), texts=st.lists(text_of("abc ", 2500), min_size=1, max_size=3))
def test_random_tiktoken_files_equal_tiktoken(mod, ranks, texts, tmp_path_factory):
    tiktoken = pytest.importorskip("tiktoken")
    path = tmp_path_factory.mktemp("ranks") / "random.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()))
    # every table loads: a token no two lower-ranked ones make is kept (see test_vocabularies)
    tok = mod.Tokenizer.from_tiktoken(str(path), pattern="bytes")
    enc = tiktoken.Encoding("random", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens={})
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
        core_checks(tok, text.encode())


@settings(max_examples=60, **SETTINGS)
@given(
    corpus=st.lists(text_of("abcd \n", 400), min_size=1, max_size=5),
    vocab=st.integers(256, 400),
    texts=st.lists(text_of("abcde \n", 2500), min_size=1, max_size=3),
    pattern=st.sampled_from(["gpt2", "words", "bytes"]),
)
def test_trained_equal_rank_merge(mod, corpus, vocab, texts, pattern):
    tok = mod.Tokenizer.train(corpus, vocab, pattern=pattern, min_frequency=1)
    for text in texts:
        assert tok.encode_ordinary(text) == naive.encode_ordinary(text, tok.merges, pattern)


# ---------------------------------------------------------------------------------------
# The real vocabularies, against tiktoken

SHIPPED = ["corpus.en", "german.txt", "address.txt", "tinystories_sample.txt"]
PATTERNS = {"gpt2": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}
_REAL = {}


def real_vocab(mod, name, tmp_path_factory):
    """(our tokenizer, tiktoken's Encoding) of one real vocabulary, from tests/data."""
    tiktoken = pytest.importorskip("tiktoken")
    if (mod.__name__, name) not in _REAL:
        if name == "gpt2":
            from helpers import GPT2_MERGES, GPT2_VOCAB, gpt2_tiktoken

            tok = mod.Tokenizer.from_gpt2(str(GPT2_VOCAB), str(GPT2_MERGES))
            enc = gpt2_tiktoken()
        else:
            path = tmp_path_factory.mktemp("vocab") / f"{name}.tiktoken"
            path.write_bytes(gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes()))
            tok = mod.Tokenizer.from_tiktoken(str(path), pattern=PATTERNS[name])
            from tiktoken.load import load_tiktoken_bpe

            ranks = load_tiktoken_bpe(str(path))
            enc = tiktoken.Encoding(
                name, pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens={}
            )
        _REAL[mod.__name__, name] = tok, enc
    return _REAL[mod.__name__, name]


@pytest.mark.parametrize("name", list(PATTERNS))
def test_real_vocabularies_equal_tiktoken(mod, name, tmp_path_factory):
    tok, enc = real_vocab(mod, name, tmp_path_factory)
    for text_name in SHIPPED:
        text = read_data(text_name)
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text_name
    # long pre-tokens: runs that the pattern keeps whole
    for text in ["a" * 3000, "ab" * 2000, " " * 3000, "\n" * 2000 + "x", "9" * 3000, "!?" * 1500,
                 "é" * 2000, "中文" * 1000, "the" * 1000]:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text[:10]


@pytest.mark.slow
def test_many_distinct_pretokens_equal_tiktoken(mod, tmp_path_factory):
    """More distinct pre-tokens than the compiled core's per-thread tables hold, each seen
    again later and in a second call: what those tables keep, move to the cache of longer
    results or forget must not change an id."""
    import random

    tok, enc = real_vocab(mod, "o200k_base", tmp_path_factory)
    rng = random.Random(11)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = list({"".join(rng.choices(letters, k=rng.randint(3, 15))) for _ in range(60000)})
    first = " ".join(words)
    rng.shuffle(words)
    text = first + " " + " ".join(words) + " " + first[:50000]
    want = enc.encode_ordinary(text)
    assert tok.encode_ordinary(text) == want
    assert tok.encode_ordinary(text) == want


# ---------------------------------------------------------------------------------------
# Streaming: the compiled core encodes the pre-tokens up to a limit (for encode_iterable)

PREFIX_CHARS = list("ab cd'sS\n\r\t.,!/1 ") + ["é", "中", "\u00a0", "\u0301", "😀"]


@settings(max_examples=300, **SETTINGS)
@given(text=st.lists(st.sampled_from(PREFIX_CHARS), max_size=60).map("".join), data=st.data(),
       pattern=st.sampled_from(["gpt2", "cl100k", "o200k", "words"]))
def test_encode_prefix(mod, text, data, pattern):
    """(cut, ids) = the pre-tokens that end by `limit`: cut where regex's last such
    pre-token ends, ids the start of the whole text's ids."""
    import regex

    tok = _prefix_tok(mod, pattern)
    limit = data.draw(st.integers(0, len(text) + 2))
    got = tok.core.encode_prefix(text, limit)
    got = (got[0], list(got[1]))
    cut = 0
    for m in regex.finditer(tok.pattern, text):
        if m.end() > limit:
            break
        cut = m.end()
    full = tok.encode_ordinary(text)
    assert got[0] == cut
    assert got[1] == full[:len(got[1])]
    assert tok.decode(got[1]) == text[:cut]


_PREFIX = {}


def _prefix_tok(mod, pattern):
    key = (mod.__name__, pattern)
    if key not in _PREFIX:
        _PREFIX[key] = mod.Tokenizer.train(
            read_data("corpus.en", 20000) + " é中 ", 300, pattern=pattern
        )
    return _PREFIX[key]


def test_result_references_exact(mod):
    """Each id in a result holds one reference to its int object: counting them
    in bulk (the compiled core) gives the same counts as one at a time."""
    import sys

    tok = mod.Tokenizer.train(read_data("corpus.en", 20000), 600)
    text = read_data("corpus.en", 30000)
    first = tok.encode_ordinary(text)
    probe = next(i for i in first if i > 300)
    before = sys.getrefcount(probe)
    again = [tok.encode_ordinary(text) for _ in range(3)]
    assert sys.getrefcount(probe) == before + 3 * first.count(probe)
    del again
    assert sys.getrefcount(probe) == before
