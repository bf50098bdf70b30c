"""tiktoken's whole Encoding API, differentially: every method and property against
tiktoken itself on gpt2, cl100k_base and o200k_base, on both backends.

The oracle is tiktoken's own registry (`tiktoken.get_encoding`), reading OpenAI's files from a
cache directory that this module fills from tests/data (never the network): tiktoken checks
the files' sha256 itself. Ours come from `get_encoding(name, path=tests/data/...)`.
"""

import base64
import gzip
import hashlib
import inspect
import itertools
import os
import pickle
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import DATA, EOT, GPT2_VOCAB, environ, gpt2_ranks, read_data, texts_with, tiktoken_of

tiktoken = pytest.importorskip("tiktoken")

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
# tiktoken's "gpt2" reads GPT-2's encoder.json + vocab.bpe; its r50k_base has the same
# ranks, pattern and special token from one .tiktoken file, which we can write offline.
ORACLE_NAME = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}
OUR_FILE = {"gpt2": GPT2_VOCAB, "cl100k_base": DATA / "cl100k_base.tiktoken.gz",
            "o200k_base": DATA / "o200k_base.tiktoken.gz"}
BLOB = "https://openaipublic.blob.core.windows.net/encodings/"

FEW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------------------
# the encodings: tiktoken's and ours
# ---------------------------------------------------------------------------

def cache_name(filename):
    """tiktoken's cache file name for one of OpenAI's files: sha1 of its URL."""
    return hashlib.sha1((BLOB + filename).encode()).hexdigest()


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory):
    """A tiktoken cache directory holding r50k_base, cl100k_base and o200k_base."""
    d = tmp_path_factory.mktemp("tiktoken-cache")
    r50k = b"".join(base64.b64encode(t) + b" %d\n" % i
                    for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    (d / cache_name("r50k_base.tiktoken")).write_bytes(r50k)
    for name in ("cl100k_base", "o200k_base"):
        data = gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes())
        (d / cache_name(f"{name}.tiktoken")).write_bytes(data)
    return d


_ORACLES = {}


@pytest.fixture(scope="session")
def oracle(tiktoken_cache):
    def get(name):
        if name not in _ORACLES:
            with environ(TIKTOKEN_CACHE_DIR=str(tiktoken_cache)):
                _ORACLES[name] = tiktoken.get_encoding(ORACLE_NAME[name])
        return _ORACLES[name]
    return get


_OURS = {}


@pytest.fixture(scope="session")
def ours(mod):
    def get(name):
        key = (mod.__name__, name)
        if key not in _OURS:
            _OURS[key] = mod.get_encoding(name, path=OUR_FILE[name])
        return _OURS[key]
    return get


@pytest.fixture(params=NAMES)
def pair(request, ours, oracle):
    """(our tokenizer, tiktoken's Encoding) for one encoding."""
    return ours(request.param), oracle(request.param)


class Raised:
    """An exception as a result: equal to another when one's type is a subclass of the
    other's (ours may be more specific: an unknown id raises a KeyError that is also our
    ValueError)."""

    def __init__(self, exc):
        self.type = type(exc)

    def __eq__(self, other):
        return isinstance(other, Raised) and (issubclass(self.type, other.type)
                                              or issubclass(other.type, self.type))

    def __repr__(self):
        return f"Raised({self.type.__name__})"


def outcome(f, *args, **kwargs):
    """A call's result, or Raised(the exception)."""
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is the result
        return Raised(e)


# Text: characters assigned in this Python's Unicode (regex may know newer ones than
# tiktoken's tables), no surrogates (tiktoken raises on them; see the surrogate tests),
# rich in what the patterns and the unstable-token logic care about.
CHARS = list("ab cé\n\t\r'sS1 .!😀日  \u00a0\u3000") + ["'ll", "  ", "\n\n", "123456"]
plain = st.lists(st.one_of(st.sampled_from(CHARS), st.characters(exclude_categories=["Cs", "Cn"])),
                 max_size=20).map("".join)


def with_specials(specials):
    return st.lists(st.one_of(plain, st.sampled_from(sorted(specials))), max_size=5).map("".join)


text_with_eot = with_specials([EOT, "<|endofprompt|>", "<|fim_prefix|>"])


# ---------------------------------------------------------------------------
# properties and single tokens
# ---------------------------------------------------------------------------

def test_properties(pair):
    tok, enc = pair
    assert tok.n_vocab == enc.n_vocab == tok.vocab_size
    assert tok.max_token_value == enc.max_token_value
    assert tok.eot_token == enc.eot_token
    assert tok.special_tokens_set == enc.special_tokens_set
    assert isinstance(tok.special_tokens_set, set)
    assert tok.token_byte_values() == enc.token_byte_values()
    assert tok.pattern == enc._pat_str or ORACLE_NAME[tok.name] == "r50k_base"


@pytest.mark.slow
def test_names(ours, oracle):
    for name in NAMES:
        assert ours(name).name == name
    assert ours("cl100k_base").name == oracle("cl100k_base").name


def test_every_id_decodes_as_tiktoken(pair):
    tok, enc = pair
    for i in range(enc.n_vocab + 3):
        assert outcome(tok.decode_single_token_bytes, i) == outcome(
            enc.decode_single_token_bytes, i
        )
        assert tok.is_special_token(i) == enc.is_special_token(i)


def test_every_token_encodes_as_tiktoken(pair):
    tok, enc = pair
    for t in enc.token_byte_values():
        assert tok.encode_single_token(t) == enc.encode_single_token(t)
    for s in enc.special_tokens_set:
        assert tok.encode_single_token(s) == enc.encode_single_token(s)
        assert tok.encode_single_token(s.encode()) == enc.encode_single_token(s.encode())


def _multibyte_alphabet(enc):
    """The characters of the vocabulary's multi-byte tokens, and those that its fragment
    tokens (a token ending in a character's first bytes or starting with its last ones)
    cut into: the characters whose bytes may or may not merge alone, by their neighbours."""
    whole, cut = set(), set()
    for t in enc.token_byte_values():
        if max(t) < 0x80:
            continue
        whole.update(c for c in t.decode("utf-8", "ignore") if ord(c) >= 0x80)
        if t.decode("utf-8", "replace") != t.decode("utf-8", "ignore"):  # a fragment
            for k in range(len(t)):
                for size in (2, 3, 4):
                    try:
                        c = t[k:k + size].decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                    if len(c) == 1 and ord(c) >= 0x80:
                        cut.add(c)
    return sorted(whole), sorted(cut)


def test_multibyte_runs_match_tiktoken(pair):
    """Runs of multi-byte characters (CJK clauses, words of accented letters, the characters
    fragment tokens cut into, side by side), short and long, encode as tiktoken's."""
    import random

    tok, enc = pair
    whole, cut = _multibyte_alphabet(enc)
    assert whole and cut
    other = list(" ,.!?'\n0123abXY") + list("（）。、：「」 ")
    rng = random.Random(len(whole))
    for k in range(1500):
        weights = [(6, 3, 1), (1, 6, 1), (3, 3, 3), (8, 1, 0)][k % 4]
        text = "".join(rng.choice(rng.choices([whole, cut, other], weights)[0])
                       for _ in range(rng.choice([1, 2, 3, 5, 8, 13, 21, 40])))
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text


def test_a_long_token_merging_can_not_reach_is_still_whole(mod):
    """A pre-token that is a token encodes as that token (tiktoken's rule) even where
    merging its characters by rank ends elsewhere: 日 x 6 is the merge of 日日日 and
    日日日, which merging 日 x 6 never makes (日日 three times, and no merge of 日日 and
    日日)."""
    c = "日".encode()
    merges = [(c[:1], c[1:2]), (c[:2], c[2:]), (c, c), (c * 2, c), (c * 3, c * 3)]
    tok = mod.Tokenizer.from_merges(merges, pattern="o200k")
    enc = tiktoken.Encoding("t", pat_str=tok.pattern, special_tokens={},
                            mergeable_ranks={t: i for i, t in tok.vocab.items()})
    for text in ["日" * 6, "日" * 7, " " + "日" * 6, "日" * 12, "x日" * 6]:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text
    assert tok.encode_ordinary("日" * 6) == [tok.vocab_size - 1]


@pytest.mark.parametrize("k", [7, 23, 24, 31, 32, 40, 130])
def test_a_long_ascii_token_merging_can_not_reach_is_still_whole(mod, k):
    """The same for ASCII pre-tokens of every length: x^k b + c y^k is a merge, but (b, c)
    ranks first, so merging its bytes never makes it."""
    merges = [(b"b", b"c")]
    for ch in (b"x", b"y"):
        merges += [(ch * i, ch) for i in range(1, k)]
    merges += [(b"x" * k, b"b"), (b"c", b"y" * k), (b"x" * k + b"b", b"c" + b"y" * k)]
    tok = mod.Tokenizer.from_merges(merges, pattern="gpt2")
    enc = tiktoken.Encoding("t", pat_str=tok.pattern, special_tokens={},
                            mergeable_ranks={t: i for i, t in tok.vocab.items()})
    text = "x" * k + "bc" + "y" * k
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text) == [tok.vocab_size - 1]


@FEW
@given(data=st.one_of(st.binary(max_size=6), plain.map(str.encode)))
def test_encode_single_token_random(pair, data):
    tok, enc = pair
    expected = outcome(enc.encode_single_token, data)
    assert outcome(tok.encode_single_token, data) == expected
    text = data.decode("utf-8", "replace")
    assert outcome(tok.encode_single_token, text) == outcome(enc.encode_single_token, text)


# ---------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------

POLICIES = [
    dict(),
    dict(allowed_special="all"),
    dict(disallowed_special=()),
    dict(allowed_special={EOT}),
    dict(allowed_special={EOT}, disallowed_special=()),
    dict(allowed_special="all", disallowed_special={EOT}),
    dict(disallowed_special={EOT}),
]


@FEW
@given(text=text_with_eot, policy=st.sampled_from(POLICIES))
def test_encode_family(pair, text, policy):
    tok, enc = pair
    expected = outcome(enc.encode, text, **policy)
    assert outcome(tok.encode, text, **policy) == expected
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    array = outcome(tok.encode_to_numpy, text, **policy)
    reference = outcome(enc.encode_to_numpy, text, **policy)
    if isinstance(reference, Raised):
        assert array == reference
    else:
        assert array.dtype == reference.dtype and array.tolist() == reference.tolist()
        assert array.flags.writeable == reference.flags.writeable
    batch = [text, text[: len(text) // 2], ""]
    assert outcome(tok.encode_batch, batch, num_threads=2, **policy) == \
        outcome(enc.encode_batch, batch, num_threads=2, **policy)
    assert tok.encode_ordinary_batch(batch, num_threads=2) == enc.encode_ordinary_batch(
        batch, num_threads=2
    )
    assert tok.encode_ordinary_batch(batch) == enc.encode_ordinary_batch(batch)


def completions(result):
    """encode_with_unstable's result with the completions as a set (tiktoken's come in
    hash-set order)."""
    if isinstance(result, Raised):
        return result
    stable, comps = result
    assert len(set(map(tuple, comps))) == len(comps)
    return stable, set(map(tuple, comps))


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=text_with_eot, policy=st.sampled_from(POLICIES[:4]))
def test_encode_with_unstable(pair, text, policy):
    tok, enc = pair
    ours_ = outcome(tok.encode_with_unstable, text, **policy)
    assert completions(ours_) == completions(outcome(enc.encode_with_unstable, text, **policy))
    if not isinstance(ours_, Raised):
        assert ours_[1] == sorted(ours_[1])


UNSTABLE_TEXTS = ["hello fanta", "hello world ", "a\n\n", "x \n", "é👍", "  !", "it's", "日本",
                  "12345", "hello<|endoftext|>", "hello<|endoftext|> wor", "", "\t", "a\u3000"]


@pytest.mark.parametrize("text", UNSTABLE_TEXTS)
def test_encode_with_unstable_cases(pair, text):
    tok, enc = pair
    assert completions(tok.encode_with_unstable(text, allowed_special="all")) == \
        completions(enc.encode_with_unstable(text, allowed_special="all"))


def test_long_texts_unstable_tail(pair):
    """On a long text only the end is scanned for the last pre-token; it must be the one a
    scan of the whole text gives (ends at many places of a 130 KB corpus, some just after a
    line break)."""
    tok, enc = pair
    corpus = read_data("corpus.en")
    ends = [5000, 5001, 70000, len(corpus)] + [
        corpus.index("\n", k) + d for k in (9000, 80000) for d in (0, 1, 2)
    ]
    for end in ends:
        text = corpus[:end]
        assert completions(tok.encode_with_unstable(text)) == completions(
            enc.encode_with_unstable(text)
        )
        data = text.encode() + b"\xff"
        assert tok.encode_bytes(data) == enc._encode_bytes(data)


@pytest.mark.parametrize("pattern", ["words", "gpt2", "bytes"])
def test_trained_tokenizers(trained, pattern):
    """The same methods on a tokenizer trained here (its own pattern), against tiktoken
    built from its vocabulary."""
    tok = trained(pattern)
    enc = tiktoken_of(tok)
    corpus = read_data("corpus.en", 20000)
    for text in [corpus, corpus[:5001], corpus[:777], "the cat sat\n", "x"]:
        assert completions(tok.encode_with_unstable(text)) == completions(
            enc.encode_with_unstable(text)
        )
        assert tok.encode_bytes(text.encode() + b"\xe2\x82") == enc._encode_bytes(
            text.encode() + b"\xe2\x82"
        )
    ids = tok.encode(corpus, allowed_special="all")
    assert tok.decode_with_offsets(ids) == enc.decode_with_offsets(ids)
    assert tok.token_byte_values() == enc.token_byte_values()


@FEW
@given(parts=st.lists(st.one_of(plain.map(str.encode), st.binary(max_size=4)), max_size=5))
def test_encode_bytes(pair, parts):
    tok, enc = pair
    data = b"".join(parts)
    assert tok.encode_bytes(data) == enc._encode_bytes(data)
    assert tok.decode_bytes(tok.encode_bytes(data)) == data


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

def id_lists(enc):
    specials = sorted(enc.encode_single_token(s) for s in enc.special_tokens_set)
    mergeable = len(enc.token_byte_values())  # ranks 0 .. mergeable - 1 in these encodings
    valid = st.one_of(st.integers(0, mergeable - 1), st.sampled_from(specials))
    return st.lists(valid, max_size=12)


@FEW
@given(data=st.data())
def test_decode_family(pair, data):
    tok, enc = pair
    ids = data.draw(
        st.one_of(id_lists(enc), text_with_eot.map(lambda t: enc.encode(t, allowed_special="all")))
    )
    assert tok.decode_bytes(ids) == enc.decode_bytes(ids)
    assert tok.decode(ids) == enc.decode(ids)
    assert outcome(tok.decode, ids, errors="strict") == outcome(enc.decode, ids, errors="strict")
    assert tok.decode(ids, errors="ignore") == enc.decode(ids, errors="ignore")
    assert tok.decode_tokens_bytes(ids) == enc.decode_tokens_bytes(ids)
    assert outcome(tok.decode_with_offsets, ids) == outcome(enc.decode_with_offsets, ids)
    batch = [ids, ids[:3], []]
    assert tok.decode_batch(batch) == enc.decode_batch(batch)
    assert tok.decode_batch(batch, errors="ignore", num_threads=2) == \
        enc.decode_batch(batch, errors="ignore", num_threads=2)
    assert tok.decode_bytes_batch(batch, num_threads=1) == enc.decode_bytes_batch(
        batch, num_threads=1
    )


def test_unknown_ids_raise_keyerror_as_tiktoken(pair):
    tok, enc = pair
    gap = next(
        i
        for i in range(enc.n_vocab + 1)
        if outcome(enc.decode_single_token_bytes, i) == Raised(KeyError())
    )
    for bad in ([gap], [0, gap], [enc.n_vocab], [10 ** 9]):
        for name in ("decode", "decode_bytes", "decode_tokens_bytes", "decode_with_offsets"):
            with pytest.raises(KeyError):
                getattr(enc, name)(bad)
            with pytest.raises(KeyError, match=str(bad[-1])):
                getattr(tok, name)(bad)
            with pytest.raises(ValueError):  # and our own promise: ValueError naming it
                getattr(tok, name)(bad)
        for name in ("decode_batch", "decode_bytes_batch"):
            with pytest.raises(KeyError):
                getattr(enc, name)([[1], bad])
            with pytest.raises(KeyError):
                getattr(tok, name)([[1], bad])
    with pytest.raises(KeyError):
        tok.decode_single_token_bytes(gap)
    with pytest.raises(KeyError):
        tok.decode_single_token_bytes(-1)  # tiktoken: OverflowError


# ---------------------------------------------------------------------------
# our own edge cases (each still checked against tiktoken where it has an answer)
# ---------------------------------------------------------------------------

ALLOWED = [set(), "all", {EOT}, {"<|endofprompt|>"}, {EOT, "<|endofprompt|>"}, frozenset({EOT})]
DISALLOWED = ["all", (), {EOT}, ["<|endofprompt|>"], frozenset({EOT, "<|endofprompt|>"})]


def policy_id(value):
    """A set's id in sorted order: the same in every process (the tests run in several,
    which must collect the same ids; a set's repr follows the process's string hashes)."""
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}({sorted(value)!r})"
    return repr(value)


@pytest.mark.slow
@pytest.mark.parametrize("allowed", ALLOWED, ids=policy_id)
@pytest.mark.parametrize("disallowed", DISALLOWED, ids=policy_id)
def test_every_special_policy(ours, oracle, allowed, disallowed):
    tok, enc = ours("cl100k_base"), oracle("cl100k_base")
    texts = list(texts_with([EOT, "<|endofprompt|>"]).values()) + [
        "plain",
        "",
        "<|endoftext",
        "<|fim_prefix|>",
    ]
    for text in texts:
        policy = dict(allowed_special=allowed, disallowed_special=disallowed)
        expected = outcome(enc.encode, text, **policy)
        assert outcome(tok.encode, text, **policy) == expected
        arr = outcome(tok.encode_to_numpy, text, **policy)
        assert (arr if isinstance(arr, Raised) else arr.tolist()) == expected
        assert outcome(tok.encode_batch, [text, text], **policy) == outcome(
            enc.encode_batch, [text, text], **policy
        )
        if len(text) < 40:
            assert completions(outcome(tok.encode_with_unstable, text, **policy)) == \
                completions(outcome(enc.encode_with_unstable, text, **policy))


@pytest.mark.slow
def test_disallowed_error_names_the_token(ours):
    tok = ours("o200k_base")
    for call in (tok.encode, tok.encode_to_numpy, tok.encode_with_unstable,
                 lambda t: tok.encode_batch([t])):
        with pytest.raises(ValueError, match="endofprompt"):
            call("a <|endofprompt|> b")


@pytest.mark.parametrize("many", [False, True], ids=["few", "many"])
def test_specials_of_any_first_character(mod, many):
    """Special tokens that start with different characters (one of one character, some
    sharing a first byte or two), few or more than the core looks for itself: encode,
    encode_to_numpy and encode_batch raise, split or pass them through as tiktoken does,
    wherever they sit in the text."""
    from naive import GPT2_PATTERN

    names = ["<s>", "<|x|>", "[INST]", "é日", "\n\nQ:", "Z"]
    if many:
        names += [f"<|n{k}|>" for k in range(6)] + ["<s2>"]
    specials = {name: 50257 + i for i, name in enumerate(names)}
    enc = tiktoken.Encoding("any-first", pat_str=GPT2_PATTERN, mergeable_ranks=gpt2_ranks(),
                            special_tokens=specials)
    tok = mod.Encoding("any-first", pat_str=GPT2_PATTERN, mergeable_ranks=gpt2_ranks(),
                       special_tokens=specials)
    texts = ["", "plain text", "<s", "a <s> b", "<|x|", "[INST] hi", "[INS]", "é", "aé日",
             "x\n\nQ:", "\n\nQ", "zZ", "y" * 3000 + "<s>", "<s>" + "y" * 3000, "< s|>[é\n",
             "<|n3|>", "<s2>", "a\u00e9\u65e5"]
    policies = [dict(), dict(allowed_special="all"), dict(disallowed_special=()),
                dict(allowed_special={"<s>", "Z"}), dict(disallowed_special={"[INST]"}),
                dict(allowed_special={"<|x|>"}, disallowed_special={"é日", "Z"})]
    for text in texts:
        for policy in policies:
            want = outcome(enc.encode, text, **policy)
            assert outcome(tok.encode, text, **policy) == want, (text, policy)
            arr = outcome(tok.encode_to_numpy, text, **policy)
            assert (arr if isinstance(arr, Raised) else arr.tolist()) == want, (text, policy)
            assert outcome(tok.encode_batch, ["ok", text], **policy) == outcome(
                enc.encode_batch, ["ok", text], **policy), (text, policy)


def test_unknown_allowed_names_are_ignored(ours, oracle):
    # as tiktoken: a name that is no special token allows nothing (langchain's splitters pass
    # some); the real special tokens stay disallowed unless named
    tok, enc = ours("gpt2"), oracle("gpt2")
    for text, allowed in [("x<|nope|>", {"nope", "<|nope|>"}),
                          ("x" + EOT, {"nope", EOT}), ("x" + EOT, frozenset({"<|endoftxt|>"}))]:
        for call in ("encode", "encode_with_unstable", "encode_to_numpy"):
            want, got = (outcome(getattr(e, call), text, allowed_special=allowed)
                         for e in (enc, tok))
            if call == "encode_with_unstable":
                want, got = completions(want), completions(got)
            elif call == "encode_to_numpy" and not isinstance(want, Raised):
                want, got = want.tolist(), got.tolist()
            assert got == want, (call, text, allowed)


def test_empty_inputs(pair):
    tok, enc = pair
    assert tok.encode("") == enc.encode("") == []
    assert tok.encode_batch([]) == enc.encode_batch([]) == []
    assert tok.encode_ordinary_batch([]) == enc.encode_ordinary_batch([]) == []
    assert tok.encode_ordinary_batch([""]) == enc.encode_ordinary_batch([""]) == [[]]
    assert tok.encode_with_unstable("") == ([], []) and completions(
        enc.encode_with_unstable("")
    ) == ([], set())
    assert tok.encode_bytes(b"") == enc._encode_bytes(b"") == []
    arr = tok.encode_to_numpy("")
    assert arr.dtype == enc.encode_to_numpy("").dtype and arr.shape == (0,)
    assert tok.decode([]) == enc.decode([]) == ""
    assert tok.decode_bytes([]) == b""
    assert tok.decode_tokens_bytes([]) == enc.decode_tokens_bytes([]) == []
    assert tok.decode_with_offsets([]) == enc.decode_with_offsets([]) == ("", [])
    assert tok.decode_batch([]) == enc.decode_batch([]) == []
    assert tok.decode_bytes_batch([[]]) == enc.decode_bytes_batch([[]]) == [b""]
    with pytest.raises(KeyError):
        enc.encode_single_token("")
    with pytest.raises(KeyError):
        tok.encode_single_token("")
    with pytest.raises(KeyError):
        tok.encode_single_token(b"")


OFFSET_TEXTS = [
    "é👍x",
    "日本語のテキスト",
    "a👨\u200d👩\u200d👧b",
    "naïve café",
    "ÿ\U0010fffd\U0001f3fd",
    f"é{EOT}👍{EOT}",
    f"{EOT}日",
    "x\u0301\u0302 e\u0308",
    "\x00\x7f\x80",
]


@pytest.mark.parametrize("text", OFFSET_TEXTS)
def test_offsets_across_characters_and_specials(pair, text):
    tok, enc = pair
    ids = enc.encode(text, allowed_special="all")
    assert tok.encode(text, allowed_special="all") == ids
    got = tok.decode_with_offsets(ids)
    assert got == enc.decode_with_offsets(ids)
    assert got[0] == text
    # each offset is the index of the character that holds the token's first byte
    char_of_byte = [i for i, ch in enumerate(text) for _ in ch.encode("utf-8")]
    firsts = itertools.accumulate(map(len, tok.decode_tokens_bytes(ids)), initial=0)
    assert got[1] == [char_of_byte[b] for b, _ in zip(firsts, ids)]
    # a cut inside a character is not UTF-8: both raise
    for k in range(1, len(ids)):
        assert outcome(tok.decode_with_offsets, ids[:k]) == outcome(
            enc.decode_with_offsets, ids[:k]
        )


SURROGATE_PAIR = "ok \ud83d\udc4d \ud83c\udf89!"
PAIRED = "ok \U0001f44d \U0001f389!"


def test_surrogate_pairs_are_code_points(pair):
    tok, enc = pair
    expected = enc.encode(PAIRED)
    assert enc.encode(SURROGATE_PAIR) == expected  # tiktoken's encode repairs them too
    assert tok.encode(SURROGATE_PAIR) == expected
    assert tok.encode_ordinary(SURROGATE_PAIR) == expected
    assert tok.encode_batch([SURROGATE_PAIR]) == [expected]
    assert tok.encode_ordinary_batch([SURROGATE_PAIR]) == [expected]
    # tiktoken's encode_to_numpy and encode_with_unstable raise here; ours repair
    assert tok.encode_to_numpy(SURROGATE_PAIR).tolist() == expected
    assert tok.encode_with_unstable(SURROGATE_PAIR) == tok.encode_with_unstable(PAIRED)
    assert completions(tok.encode_with_unstable(PAIRED)) == completions(
        enc.encode_with_unstable(PAIRED)
    )
    thumbs = "\ud83d\udc4d"
    assert outcome(tok.encode_single_token, thumbs) == outcome(
        enc.encode_single_token, "\U0001f44d"
    )


def test_lone_surrogates_become_replacement(pair):
    tok, enc = pair
    for text in ("a\ud800b", "\udfff", "x \ud83d", "\udc4d\ud83d"):
        fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert "\ufffd" in fixed
        expected = enc.encode(fixed)
        assert enc.encode(text) == expected
        assert tok.encode(text) == expected
        assert tok.encode_to_numpy(text).tolist() == expected
        assert tok.encode_ordinary_batch([text]) == [expected]
        assert completions(tok.encode_with_unstable(text)) == completions(
            enc.encode_with_unstable(fixed)
        )
    assert outcome(tok.encode_single_token, "\ud800") == outcome(enc.encode_single_token, "\ufffd")


def test_bad_arguments(ours):
    tok = ours("gpt2")
    for call, exc in [
        (lambda: tok.encode_single_token(5), TypeError),
        (lambda: tok.encode_single_token(bytearray(b"a")), TypeError),  # as tiktoken
        (lambda: tok.encode_bytes("text"), TypeError),
        (lambda: tok.encode_bytes(bytearray(b"a")), TypeError),
        (lambda: tok.decode_single_token_bytes("a"), TypeError),
        (lambda: tok.decode_single_token_bytes(1.0), TypeError),
        (lambda: tok.decode_tokens_bytes([1, "a"]), TypeError),
        (lambda: tok.is_special_token("a"), TypeError),  # tiktoken: AssertionError
        (lambda: tok.encode_ordinary_batch(["a"], num_threads=0), ValueError),
        (lambda: tok.decode_batch([[1]], num_threads=0), ValueError),
        (lambda: tok.decode_bytes_batch([[1]], num_threads=-1), ValueError),
        (lambda: tok.encode_ordinary_batch("abc"), TypeError),  # tiktoken encodes "a", "b", "c"
        (lambda: tok.decode_batch("abc"), TypeError),
        (lambda: tok.decode_bytes_batch(b"abc"), TypeError),
        (lambda: tok.encode_to_numpy(b"abc"), TypeError),
        (lambda: tok.encode_with_unstable(None), TypeError),
        (lambda: setattr(tok, "name", 5), TypeError),
    ]:
        with pytest.raises(exc):
            call()


def test_thread_counts_of_integer_types_as_tiktoken(ours, oracle):
    np = pytest.importorskip("numpy")
    tok, enc = ours("gpt2"), oracle("gpt2")
    texts = ["hello world", " again"]
    for n in (np.int64(2), np.uint8(1)):  # what len(...) or a config file may give as numpy
        assert tok.encode_batch(texts, num_threads=n) == enc.encode_batch(texts, num_threads=n)
        assert (tok.encode_ordinary_batch(texts, num_threads=n)
                == enc.encode_ordinary_batch(texts, num_threads=n))
        assert tok.decode_batch([[31373]], num_threads=n) == ["hello"]
    for bad, exc in ((np.bool_(True), TypeError), (np.int64(0), ValueError), (2.0, TypeError)):
        with pytest.raises(exc, match="num_threads"):
            tok.encode_batch(texts, num_threads=bad)


@pytest.mark.parametrize("call, name", [
    (lambda tok: tok.decode(None), "ids"),
    (lambda tok: tok.decode(5), "ids"),
    (lambda tok: tok.decode_bytes(31373), "ids"),
    (lambda tok: tok.decode_tokens_bytes(None), "tokens"),
    (lambda tok: tok.decode_with_offsets(7), "tokens"),
    (lambda tok: tok.decode_batch(None), "batch"),
    (lambda tok: tok.decode_batch([[31373], None]), "ids"),
    (lambda tok: tok.decode_bytes_batch([1, 2]), "ids"),
    (lambda tok: tok.encode_batch(b"hello"), "list of str"),
    (lambda tok: tok.encode_batch(None), "encode_batch expects a list of str"),
    (lambda tok: tok.encode_ordinary_batch(None), "encode_ordinary_batch expects a list"),
    (lambda tok: tok.encode_ordinary_batch(7), "encode_ordinary_batch expects a list"),
])
def test_a_wrong_container_is_named(ours, call, name):
    """Ids or texts that are not a sequence: a TypeError naming the argument, not
    Python's "'NoneType' object is not iterable" (or the ids of a bytes' ints)."""
    with pytest.raises(TypeError, match=name):
        call(ours("gpt2"))


def test_an_iterables_own_error_is_not_renamed(ours):
    def ids():
        yield 31373
        raise TypeError("from the generator")
    with pytest.raises(TypeError, match="from the generator"):
        ours("gpt2").decode(ids())


def subclass_of(base):
    """A subclass of an Encoding class that builds itself in its own __init__, as programs
    subclass tiktoken's (a constructor of other arguments, super().__init__ inside)."""
    class Mine(base):
        def __init__(self, extra):
            ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
            super().__init__("mine", pat_str=r"\S+|\s+", mergeable_ranks=ranks,
                             special_tokens={"<e>": 257})
            self.extra = extra

        def shout(self, text):
            return self.encode(text.upper())
    return Mine


def test_a_subclass_builds_itself_as_tiktokens_does(mod):
    ours, theirs = subclass_of(mod.Encoding)(7), subclass_of(tiktoken.Encoding)(7)
    for enc in (ours, theirs):
        assert enc.extra == 7 and enc.name == "mine" and enc.n_vocab == 258
    assert isinstance(ours, mod.Tokenizer)
    for text in ["abab <e>", "ab\n ba", ""]:
        want = theirs.encode(text, allowed_special="all")
        assert ours.encode(text, allowed_special="all") == want
    assert ours.shout("xab") == theirs.shout("xab")
    with pytest.raises(TypeError, match="make a Tokenizer with"):
        mod.Encoding()
    with pytest.raises(TypeError, match="pat_str"):
        mod.Encoding("x")


def test_calling_init_again_replaces_the_whole_model(mod):
    # nothing read or cached from the first model (sizes, specials, tables, the pickled
    # state, a registry name) may outlive it: the instance is then as a new one of the
    # second (tiktoken's own keeps its special_tokens_set, so the oracle is a new one)
    first = {bytes([b]): b for b in range(256)} | {b"hi": 256, b"ab": 257}
    second = dict(pat_str=r"\S+|\s+", special_tokens={"<t>": 257},
                  mergeable_ranks={bytes([b]): b for b in range(256)} | {b"xy": 256})

    def again(enc):
        enc.encode("hi <s>", allowed_special="all"), enc.decode([256, 300])
        enc.n_vocab, enc.max_token_value, enc._mergeable_ranks, pickle.dumps(enc)
        enc.is_special_token(300), enc.token_byte_values()
        enc.extra = 1   # a subclass's own attribute stays
        enc.__init__("b", **second)
        return enc

    def seen(enc):
        return (enc.name, enc.extra, enc.n_vocab, enc.max_token_value, enc.special_tokens_set,
                enc._mergeable_ranks, enc.decode_bytes([256, 257]),
                enc.encode("hi xy <t>", allowed_special="all"), enc.token_byte_values(),
                pickle.loads(pickle.dumps(enc)).encode("hi xy <t>", allowed_special="all"))

    want = tiktoken.Encoding("b", **second)
    want.extra = 1
    ours = again(mod.Encoding("a", pat_str=r"\w+|\s+|.", mergeable_ranks=first,
                              special_tokens={"<s>": 300}))
    assert seen(ours) == seen(want)
    assert not ours.is_special_token(300) and ours.is_special_token(257)
    assert seen(again(mod.get_encoding("gpt2", path=GPT2_VOCAB))) == seen(want)


def test_unpickling_shares_a_model_not_another_instance(mod, monkeypatch):
    # unpickling hands out the model this process already has, from the first instance of
    # it pickled here: none of that instance's own attributes or name, and not its model
    # once __init__ has replaced it
    ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256}
    other = {bytes([b]): b for b in range(256)} | {b"xy": 256}

    class Mine(mod.Encoding):
        pass

    Mine.__qualname__ = "PicklableMine"   # pickled by reference, as a class of a module is
    monkeypatch.setattr(sys.modules[__name__], "PicklableMine", Mine, raising=False)
    first = Mine("first", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    first.extra, first.encode_ordinary = 1, len   # a program's own attributes
    pickle.dumps(first)
    plain = mod.Encoding("bpe", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    again = pickle.loads(pickle.dumps(plain))
    assert (type(again), again.name, hasattr(again, "extra")) == (mod.Encoding, "bpe", False)
    assert again.encode_ordinary("hi") == [256]
    first.__init__("first", pat_str=r"\S+|\s+", mergeable_ranks=other, special_tokens={})
    assert pickle.loads(pickle.dumps(plain)).encode("hi xy") == plain.encode("hi xy")
    assert pickle.loads(pickle.dumps(first)).encode("hi xy") == first.encode("hi xy")


def test_what_an_instance_sets_on_itself_is_declared_on_its_class(mod, tmp_path):
    # how __init__ tells the model's state from a subclass's own attributes (enc: the
    # tiktoken names, _mergeable_ranks among them, are read as programs read them)
    enc = mod.Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
    made = set(vars(enc))
    enc.encode("hi <s>", allowed_special="all"), enc.decode([256, 257]), enc.encode_bytes(b"hi")
    enc.encode_with_unstable("h"), enc.token_byte_values(), enc.is_special_token(257)
    enc.n_vocab, enc.vocab, enc.merges, enc._mergeable_ranks, hash(enc), enc == enc
    enc.encode_files([], tmp_path / "out"), pickle.loads(pickle.dumps(enc)), enc.name
    enc.save(tmp_path / "t.bpe"), enc.save_tiktoken(tmp_path / "t.tiktoken")
    assert [k for k in vars(enc) if k not in made and not hasattr(mod.Tokenizer, k)] == []


def test_every_tiktoken_argument_is_taken_by_its_name(pair):
    # code written for tiktoken passes arguments by tiktoken's names: decode(tokens=...)
    ours, theirs = pair
    for name in dir(tiktoken.Encoding):
        method = getattr(tiktoken.Encoding, name)
        if name.startswith("__") or not inspect.isfunction(method) or (
                name.startswith("_") and not hasattr(ours, name)):   # its own internals
            continue
        for param in list(inspect.signature(method).parameters.values())[1:]:
            if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                taken = inspect.signature(getattr(ours, name)).parameters
                assert param.name in taken, (name, param.name)
    ids = theirs.encode("hello world")
    assert ours.decode(tokens=ids) == theirs.decode(tokens=ids) == "hello world"
    assert ours.decode(tokens=ids, errors="strict") == "hello world"
    assert ours.decode_bytes(tokens=ids) == theirs.decode_bytes(tokens=ids)
    assert ours.encode_batch(text=["a b", "c"]) == theirs.encode_batch(text=["a b", "c"])
    for call in (lambda: ours.decode(), lambda: ours.decode(ids, tokens=ids),
                 lambda: ours.encode_batch(["a"], text=["a"]), lambda: ours.decode_bytes()):
        with pytest.raises(TypeError):
            call()


def test_eot_token_missing_is_keyerror(mod):
    tok = mod.Tokenizer.from_merges([], special_tokens=["<s>"])
    with pytest.raises(KeyError):
        tok.eot_token  # noqa: B018 (the property raises)
    assert tok.name == "bpe" and tok.n_vocab == 257 and tok.max_token_value == 256


@pytest.mark.slow
def test_numpy_ids_are_ids(ours):
    np = pytest.importorskip("numpy")
    tok = ours("cl100k_base")
    ids = tok.encode_to_numpy("hello world")
    assert tok.decode_tokens_bytes(ids) == [b"hello", b" world"]
    assert tok.decode_single_token_bytes(ids[0]) == b"hello"
    assert tok.is_special_token(np.int64(tok.eot_token))
    assert tok.decode_with_offsets(ids) == ("hello world", [0, 5])


def test_an_int_subclass_id_is_its_value(pair):
    """An id of an int subclass (an IntEnum, a wrapper with its own __index__) decodes
    as the int it is, as in tiktoken."""
    tok, enc = pair

    class Odd(int):
        def __index__(self):
            return 64

        __int__ = __index__

    ids = [Odd(enc.encode_single_token("hello")), Odd(enc.eot_token)]
    assert tok.decode(ids) == enc.decode(ids)
    assert tok.decode_tokens_bytes(ids) == enc.decode_tokens_bytes(ids)
    assert tok.decode_with_offsets(ids) == enc.decode_with_offsets(ids)
    assert tok.decode_single_token_bytes(ids[0]) == enc.decode_single_token_bytes(ids[0])


@pytest.mark.slow
def test_threads_give_the_same_ids(ours, oracle):
    tok, enc = ours("o200k_base"), oracle("o200k_base")
    texts = [read_data("corpus.en", 4000)[i:i + 400] for i in range(0, 4000, 400)]
    expected = enc.encode_ordinary_batch(texts)
    assert tok.encode_ordinary_batch(texts, num_threads=2) == expected
    assert tok.encode_ordinary_batch(texts, num_threads=1) == expected
    results = []
    workers = [threading.Thread(target=lambda: results.append(tok.encode_ordinary_batch(texts)))
               for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert results == [expected] * 3


def test_name_survives_pickling(ours, mod):
    tok = ours("gpt2")
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok and again.name == "gpt2" and type(again) is type(tok)
    plain = mod.Tokenizer.from_merges([])
    assert pickle.loads(pickle.dumps(plain)).name == "bpe"


def test_encode_to_numpy_without_numpy(mod):
    """Without numpy, only encode_to_numpy fails: an ImportError that says what to install
    (after the text's own ValueError, as tiktoken checks the text first)."""
    code = f"""
import sys
sys.modules["numpy"] = None  # import numpy -> ImportError
import {mod.__name__} as m
tok = m.Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
assert tok.encode("hi") == [256]
try:
    tok.encode_to_numpy("hi<s>")
except ValueError as e:
    assert "<s>" in str(e), e
try:
    tok.encode_to_numpy("hi")
except ImportError as e:
    assert "numpy" in str(e), e
    print("ok")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.abspath(mod.__file__)))
    assert run.stdout.strip() == "ok", run.stderr


@pytest.mark.slow
def test_a_megabyte_of_spaces(mod):
    """tiktoken's regex overflows its stack on a megabyte of spaces before a letter (it raises
    a PanicException); ours encodes it, in a subprocess with a time limit. The expected ids
    come from tiktoken on the two pre-tokens the pattern makes of it, which it can encode."""
    code = f"""
import sys
sys.path.insert(0, {str(DATA.parent)!r})
import {mod.__name__} as m
from helpers import tiktoken_of
tok = m.get_encoding("cl100k_base", path={str(OUR_FILE["cl100k_base"])!r})
enc = tiktoken_of(tok)
text = " " * 1_000_000 + "x"
ids = tok.encode(text)
assert ids == enc.encode(" " * 999_999) + enc.encode(" x")
assert tok.decode(ids) == text
print("ok", len(ids))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.abspath(mod.__file__)))
    assert run.stdout.startswith("ok"), run.stderr[-2000:]


# ---------------------------------------------------------------------------
# get_encoding: offline, from a path or tiktoken's cache, checked
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_get_encoding_sources_agree(mod, ours, tiktoken_cache, tmp_path):
    ref = ours("gpt2")
    with environ(TIKTOKEN_CACHE_DIR=str(tiktoken_cache)):
        assert mod.get_encoding("gpt2") == ref
        assert mod.get_encoding("r50k_base") == ref
        assert mod.get_encoding("r50k_base").name == "r50k_base"
    plain = tmp_path / "r50k_base.tiktoken"
    plain.write_bytes((tiktoken_cache / cache_name("r50k_base.tiktoken")).read_bytes())
    assert mod.get_encoding("gpt2", path=str(plain)) == ref
    gz = tmp_path / "gz"
    gz.mkdir()
    (gz / "r50k_base.tiktoken.gz").write_bytes(gzip.compress(plain.read_bytes()))
    assert mod.get_encoding("gpt2", path=gz) == ref  # a directory holding it
    assert type(ref) is mod.Tokenizer


@pytest.mark.slow
def test_get_encoding_from_the_cache_matches_tiktoken(mod, oracle, tiktoken_cache):
    with environ(TIKTOKEN_CACHE_DIR=str(tiktoken_cache)):
        tok = mod.get_encoding("cl100k_base")
    enc = oracle("cl100k_base")
    assert tok.special_tokens == {s: enc.encode_single_token(s) for s in enc.special_tokens_set}
    assert tok.pattern == enc._pat_str
    text = read_data("corpus.en", 20000) + f"{EOT} <|fim_suffix|>"
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")


def test_get_encoding_path_errors(mod, tmp_path):
    """A path that holds no file (get_encoding without a path, offline and online: see
    test_dropin, which runs each case in a fresh process)."""
    with pytest.raises(FileNotFoundError, match="no such file"):
        mod.get_encoding("cl100k_base", path=tmp_path / "missing.tiktoken")
    with pytest.raises(FileNotFoundError, match="cl100k_base.tiktoken"):
        mod.get_encoding("cl100k_base", path=tmp_path)  # a directory without it


@pytest.mark.slow
def test_get_encoding_checks_the_file(mod, tiktoken_cache, tmp_path):
    # the wrong ranks for the name: refused, also via the cache
    with pytest.raises(ValueError, match="sha256"):
        mod.get_encoding("cl100k_base", path=OUR_FILE["o200k_base"])
    with pytest.raises(ValueError, match="sha256"):
        mod.get_encoding("p50k_base", path=GPT2_VOCAB)
    lines = gzip.decompress(OUR_FILE["cl100k_base"].read_bytes()).splitlines(keepends=True)
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(b"".join(lines[:-1]))  # one token short
    with pytest.raises(ValueError, match="not the ranks"):
        mod.get_encoding("cl100k_base", path=bad)
    # the same ranks written differently (here: no final newline) are still OpenAI's
    other = tmp_path / "other.tiktoken"
    other.write_bytes(b"".join(lines).rstrip())
    assert mod.get_encoding("cl100k_base", path=other).encode("hello") == [15339]
    (tmp_path / "corrupt.gz").write_bytes(b"\x1f\x8b" + b"nonsense")
    with pytest.raises(ValueError, match="gzip"):
        mod.get_encoding("cl100k_base", path=tmp_path / "corrupt.gz")


def test_get_encoding_names(mod):
    with pytest.raises(ValueError, match="cl100k_base"):
        mod.get_encoding("cl100k")  # unknown: the message lists the known names
    with pytest.raises(TypeError):
        mod.get_encoding(None)
    assert "get_encoding" in mod.__all__
    with pytest.raises(ValueError, match="o200k_harmony"):  # listed among the known names
        mod.Tokenizer.get_encoding("o200k")
