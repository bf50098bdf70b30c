"""A rank table read as a model (Core.tiktoken_model, then Core.from_model): the compiled core
reads it in C, the pure-Python core in Python and merges by tiktoken's rule on the ranks, the
merges derived only when asked for.  Either way the result is the reference reader's
(_tiktoken_parse, _tiktoken_model): a file it would read otherwise or refuse is left to it."""

import base64
import gzip
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fallback
from helpers import DATA, reference

tiktoken = pytest.importorskip("tiktoken")

PINNED = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


def pinned_text(name):
    return gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes()).decode()


def small_text():
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines += [f"{base64.b64encode(t).decode()} {256 + k}"
              for k, t in enumerate([b"ab", b"abc", b" a", b"th", b"the", b" the"])]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_a_pinned_file_reads_as_the_checked_reader_reads_it(mod, name, tmp_path):
    """OpenAI's own files (known by their sha256, read without the checks) give the ranks,
    special tokens and ids of the same text read by the reference reader, and tiktoken's."""
    path = tmp_path / f"{name}.tiktoken"
    path.write_text(pinned_text(name))
    enc = mod.get_encoding(name, path=path)
    ref = reference(mod).from_tiktoken(path, pattern=PINNED[name],
                                       special_tokens=enc._special_tokens)
    assert enc._mergeable_ranks == ref._mergeable_ranks
    oracle = tiktoken.Encoding(name, pat_str=enc._pat_str, mergeable_ranks=ref._mergeable_ranks,
                               special_tokens=enc._special_tokens)
    text = (DATA / "corpus.en").read_text()[:20000] + " 日本語 𝔘𝔫𝔦 ١٢٣ 👩‍💻 " + "x" * 300
    assert enc.encode(text) == ref.encode(text) == oracle.encode(text)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_a_pinned_file_is_read_by_the_cores_own_reader(mod, name):
    """get_encoding hands the core OpenAI's file as a pinned text (a str subclass): the
    core's reader takes it (the compiled one in C), rather than leaving it to the
    Tokenizer's reader, which derives every merge in Python (seconds for o200k)."""
    text = pinned_text(name)
    model = mod.Core.tiktoken_model(bpe_fallback._PinnedRanks(text))
    assert model is not None
    assert mod.Core.tiktoken_model(text) is not None


NOT_PLAIN = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "blank line": lambda t: t.replace("\n", "\n\n", 1),
    "no last line feed": lambda t: t[:-1],
    "leading zeros": lambda t: t.replace(" 256\n", " 0256\n"),
    "a tab": lambda t: t.replace(" 257\n", "\t257\n"),
    "three fields": lambda t: t.replace(" 258\n", " 258 9\n"),
    "non-canonical base64": lambda t: t.replace("QQ== 65\n", "QR== 65\n"),
    "a byte missing": lambda t: t.replace("QQ== 65\n", ""),
    "a repeated rank": lambda t: t.replace(" 258\n", " 257\n"),
    "a repeated token": lambda t: t + "YWI= 999\n",
    "a rank too large": lambda t: t.replace(" 259\n", " 2147483648\n"),
    "an Arabic digit": lambda t: t.replace(" 259\n", " ٢٥٩\n"),
}


@pytest.mark.parametrize("case", sorted(NOT_PLAIN))
def test_a_rank_text_off_the_plain_case_loads_as_the_reference_reader_loads_it(mod, case,
                                                                                tmp_path):
    path = tmp_path / "in.tiktoken"
    path.write_bytes(NOT_PLAIN[case](small_text()).encode())

    def outcome(cls):
        try:
            loaded = cls.from_tiktoken(path, pattern="gpt2", special_tokens=["<s>"])
        except ValueError as e:
            return "error", str(e)
        return (loaded.vocab, loaded.merges,
                loaded.encode("the abc <s> xyz", allowed_special="all"))

    assert outcome(mod.Tokenizer) == outcome(reference(mod))
    if mod is bpe_fallback and case != "leading zeros":   # (read alike: 0256 is 256)
        assert mod.Core.tiktoken_model(path.read_bytes().decode()) is None


def test_a_rank_model_derives_the_reference_merges_when_asked(mod):
    """GPT-2's ranks as a rank table: merges, vocabulary and ids as the reference reader's."""
    ref = reference(mod).get_encoding("gpt2", path=DATA / "gpt2_vocab.json")
    enc = mod.Tokenizer.from_tiktoken(ref._mergeable_ranks, pattern="gpt2",
                                      special_tokens=ref.special_tokens)
    assert enc.merges == ref.merges
    assert enc.vocab == ref.vocab
    text = (DATA / "corpus.en").read_text()[:5000]
    assert enc.encode(text) == ref.encode(text)


@st.composite
def long_piece_tables(draw):
    """A rank table learned from a random text over few letters, and texts of long runs."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    alphabet = draw(st.sampled_from(["ab", "abc", "ab ", "aé"]))
    corpus = "".join(rng.choice(alphabet) for _ in range(2000))
    trained = bpe_fallback.Tokenizer.train(corpus, 256 + draw(st.integers(1, 60)), pattern=None,
                                           min_frequency=1)
    ranks = {t: i for i, t in trained.vocab.items()}
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.choice([5, 30, 80, 400])))
             for _ in range(5)]
    return ranks, texts


@settings(max_examples=25, deadline=None)
@given(case=long_piece_tables())
def test_long_pre_tokens_merge_as_tiktoken(both, case):
    """Pre-tokens of hundreds of bytes (the fallback's heap merge) give tiktoken's ids."""
    ranks, texts = case
    enc = tiktoken.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    for mod in both:
        ours = mod.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
        for text in texts:
            assert ours.encode_ordinary(text) == enc.encode_ordinary(text), text


def test_loading_encoding_hashing_and_comparing_ask_for_no_merges(mod, tmp_path):
    """A rank table's merges are derived only when asked for (Tokenizer.merges, the native
    format, tokenizer.json): a load, encode, decode, repr, hash and a comparison with another
    vocabulary never ask the core for them."""
    class NoMerges(mod.Core):
        def merges(self):
            raise AssertionError("merges asked for")

    class Lazy(mod.Tokenizer):
        core_class = NoMerges

    path = tmp_path / "small.tiktoken"
    path.write_text(small_text())
    lazy = Lazy.from_tiktoken(path, pattern="gpt2", special_tokens=["<s>"])
    ids = lazy.encode("the abc <s>", allowed_special="all")
    assert lazy.decode(ids) == "the abc <s>"
    assert hash(lazy) == hash(Lazy.from_tiktoken(path, pattern="gpt2", special_tokens=["<s>"]))
    assert lazy != mod.Tokenizer.from_merges([(b"a", b"b")], special_tokens=["<s>"])
    assert lazy.vocab[256] == b"ab" and lazy.n_vocab == 263
    assert "tokens=262" in repr(lazy)
    with pytest.raises(AssertionError, match="merges asked for"):
        len(lazy.merges)
