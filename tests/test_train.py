"""Training: both backends against the naive reference trainer, and all entry points agree."""

import functools
from collections import Counter

import pytest
import regex

import naive
from helpers import EOT, SPECIALS, corpus_with_specials, read_data

CUSTOM = r"\w+|\W"
PATTERNS = ["gpt2", "cl100k", "o200k", "words", "bytes", CUSTOM]

SMALL_CORPORA = {
    "corpus_en": read_data("corpus.en", 2000),
    "tinystories": read_data("tinystories_sample.txt", 2000),
    "german": read_data("german.txt"),
    "address": read_data("address.txt"),
    "aaaa": "aaaa aaa aa",
    "abab": "abababab",
    "runs": "aaaaaaaaaa bbbbbbb ab ab ab ba ba aab aab\n\n\n   x",
    "longruns": "a" * 257
    + " "
    + "ab" * 100
    + " "
    + "aaab" * 30
    + "b" * 64
    + " aaaa" * 9
    + "\n" * 40,
}


def with_specials(text):
    """The corpus with the two special tokens sprinkled in (also adjacent to each other)."""
    words = text.split(" ")
    out = []
    for i, w in enumerate(words):
        out.append(w)
        if i % 7 == 3:
            out.append(EOT)
        if i % 11 == 5:
            out.append("<|pad|>" + EOT)
    return " ".join(out) + "<|pad|>"


@functools.cache
def naive_merges(text, vocab_size, pattern, specials, min_frequency, max_token_bytes):
    return naive.train(
        [text],
        vocab_size,
        pattern=pattern,
        special_tokens=specials,
        min_frequency=min_frequency,
        max_token_bytes=max_token_bytes,
    )


def check_against_naive(mod, text, pattern, specials, min_frequency=2, max_token_bytes=None, n=60):
    vocab_size = 256 + len(specials) + n
    tok = mod.Tokenizer.train(
        text,
        vocab_size,
        pattern=pattern,
        special_tokens=list(specials),
        min_frequency=min_frequency,
        max_token_bytes=max_token_bytes,
    )
    expected = naive_merges(
        text, vocab_size, pattern, tuple(specials), min_frequency, max_token_bytes
    )
    assert tok.merges == expected
    assert tok.vocab == naive.vocab_of(expected, specials)
    assert tok.special_tokens == {s: 256 + len(expected) + j for j, s in enumerate(specials)}
    assert tok.vocab_size == 256 + len(expected) + len(specials)
    # The naive encoder (replaying merges in order) agrees with encode_ordinary.
    for sample in (text, SMALL_CORPORA["german"], "lowest cats aaaaa ababab\n\n  x"):
        assert tok.encode_ordinary(sample) == naive.encode_ordinary(sample, expected, pattern)
    return tok


@pytest.mark.parametrize("use_specials", [False, True], ids=["plain", "specials"])
@pytest.mark.parametrize(
    "pattern", PATTERNS, ids=["gpt2", "cl100k", "o200k", "words", "bytes", "custom"]
)
@pytest.mark.parametrize("corpus", list(SMALL_CORPORA))
def test_matches_naive_patterns(mod, corpus, pattern, use_specials):
    text = SMALL_CORPORA[corpus]
    specials = tuple(SPECIALS) if use_specials else ()
    if use_specials:
        text = with_specials(text)
    check_against_naive(mod, text, pattern, specials)


@pytest.mark.parametrize("max_token_bytes", [None, 1, 2, 3])
@pytest.mark.parametrize("min_frequency", [1, 2, 3])
@pytest.mark.parametrize("use_specials", [False, True], ids=["plain", "specials"])
@pytest.mark.parametrize("pattern", ["gpt2", "words", "bytes"])
@pytest.mark.parametrize("corpus", ["corpus_en", "aaaa", "abab", "runs", "longruns"])
def test_matches_naive_options(mod, corpus, pattern, use_specials, min_frequency, max_token_bytes):
    text = SMALL_CORPORA[corpus]
    specials = tuple(SPECIALS) if use_specials else ()
    if use_specials:
        text = with_specials(text)
    tok = check_against_naive(mod, text, pattern, specials, min_frequency, max_token_bytes, n=40)
    if max_token_bytes is not None:
        assert all(len(a + b) <= max_token_bytes for a, b in tok.merges)
    if max_token_bytes == 1:
        assert tok.merges == []


def test_hand_checked_merges(mod):
    # b"aaaa" has 3 overlapping (a,a) pairs; merging is non-overlapping, left to right.
    tok = mod.Tokenizer.train("aaaa", 256 + 10, pattern="bytes", min_frequency=1)
    assert tok.merges == [(b"a", b"a"), (b"aa", b"aa")]
    tok = mod.Tokenizer.train("aaa", 256 + 10, pattern="bytes", min_frequency=1)
    assert tok.merges == [(b"a", b"a"), (b"aa", b"a")]
    # Ties go to the lexicographically greatest (left, right).
    tok = mod.Tokenizer.train("ab cd", 256 + 1, pattern="bytes", min_frequency=1)
    assert tok.merges == [(b"c", b"d")]
    tok = mod.Tokenizer.train(["ab", "ba"], 256 + 1, pattern="bytes", min_frequency=1)
    assert tok.merges == [(b"b", b"a")]
    # Counts are weighted and min_frequency stops training.
    tok = mod.Tokenizer.train("xy xy xy zw", 256 + 50, pattern="words", min_frequency=2)
    assert tok.merges == [(b"y", b" "), (b"x", b"y ")]
    tok = mod.Tokenizer.train("xy xy xy zw", 256 + 50, pattern="words", min_frequency=4)
    assert tok.merges == []
    # vocab_size counts the specials.
    tok = mod.Tokenizer.train(
        "abababab", 256 + 2 + 1, pattern="bytes", special_tokens=["<a>", "<b>"]
    )
    assert tok.merges == [(b"a", b"b")]
    assert tok.merges == naive.train(
        ["abababab"], 259, pattern="bytes", special_tokens=("<a>", "<b>")
    )
    assert tok.special_tokens == {"<a>": 257, "<b>": 258}
    assert tok.vocab_size == 259


def test_special_text_never_merges(mod):
    text = "xx<|s|>xx<|s|>xx<|s|><|s|>"
    tok = mod.Tokenizer.train(
        text, 256 + 1 + 20, pattern="bytes", special_tokens=["<|s|>"], min_frequency=1
    )
    for a, b in tok.merges:
        assert b"<" not in a + b and b"|" not in a + b
    assert tok.merges == [(b"x", b"x")]
    assert tok.encode("xx<|s|>", allowed_special="all") == [256, 257]


def test_specials_split_longest_first(mod):
    specials = ["<s>", "<s><s>", "</s>"]
    text = "ab<s><s>ab<s>ab</s>"
    tok = mod.Tokenizer.train(
        text, 256 + 3 + 10, pattern="bytes", special_tokens=specials, min_frequency=1
    )
    assert tok.merges == naive.train(
        [text], 256 + 3 + 10, pattern="bytes", special_tokens=tuple(specials), min_frequency=1
    )
    ids = tok.encode("<s><s><s>", allowed_special="all")
    assert ids == [tok.special_tokens["<s><s>"], tok.special_tokens["<s>"]]


def test_bytes_pattern_and_none(mod):
    text = SMALL_CORPORA["address"]
    a = mod.Tokenizer.train(text, 300, pattern="bytes")
    b = mod.Tokenizer.train(text, 300, pattern=None)
    assert a.merges == b.merges
    assert a.pattern == r"[\s\S]+"
    assert b.pattern == r"[\s\S]+"
    # with no pre-tokenization merges may cross spaces
    assert any(b" " in x + y and (x + y).strip() for x, y in a.merges)


def test_pattern_property(mod):
    text = SMALL_CORPORA["aaaa"]
    for name in ("gpt2", "cl100k", "o200k", "words"):
        tok = mod.Tokenizer.train(text, 260, pattern=name)
        assert tok.pattern == mod.PATTERNS[name]
    assert mod.Tokenizer.train(text, 260).pattern == mod.PATTERNS["gpt2"]
    assert mod.Tokenizer.train(text, 260, pattern=CUSTOM).pattern == CUSTOM


def test_patterns_dict(mod):
    assert mod.PATTERNS["gpt2"] == naive.GPT2_PATTERN
    assert mod.PATTERNS["words"] == naive.WORDS_PATTERN
    # cl100k / o200k behave like tiktoken's (the strings may differ in spelling).
    samples = [read_data("address.txt"), read_data("german.txt"), read_data("corpus.en", 3000),
               "it's  I'M  x\n\n\n  y 12345678 héllo\r\n\r\nWORLD's  \t tabs\t", "aBC DeF ghI'S"]
    for name, ref in (("cl100k", naive.CL100K_PATTERN), ("o200k", naive.O200K_PATTERN)):
        for s in samples:
            assert regex.findall(mod.PATTERNS[name], s) == regex.findall(ref, s), name


def test_progress_flag_accepted(mod, capsys):
    text = SMALL_CORPORA["corpus_en"]
    a = mod.Tokenizer.train(text, 300, progress=True)
    b = mod.Tokenizer.train(text, 300, progress=False)
    assert a.merges == b.merges


# ---------------------------------------------------------------------------------------
# All entry points give identical merges.

ENTRY_CORPUS = {  # pattern -> size of the corpus.en prefix used
    "gpt2": None,
    "cl100k": 40000,
    "words": 40000,
}
ENTRY_VOCAB = 500

_REFERENCE = {}


def reference(mod, pattern):
    key = (mod.__name__, pattern)
    if key not in _REFERENCE:
        text = corpus_with_specials(ENTRY_CORPUS[pattern])
        _REFERENCE[key] = (
            text,
            mod.Tokenizer.train(text, ENTRY_VOCAB, pattern=pattern, special_tokens=[EOT]),
        )
    return _REFERENCE[key]


def same_model(tok, ref):
    assert tok.merges == ref.merges
    assert tok.vocab == ref.vocab
    assert tok.special_tokens == ref.special_tokens
    assert tok.pattern == ref.pattern
    assert tok == ref


def line_docs(text, pattern, n=None):
    """text split at line ends into documents (n of them, or one per line); asserts that
    the split does not change the pre-tokens, which is this test's precondition."""
    lines = text.splitlines(keepends=True)
    if n is None:
        docs = lines
    else:
        step = -(-len(lines) // n)
        docs = ["".join(lines[i : i + step]) for i in range(0, len(lines), step)]
    assert "".join(docs) == text
    assert Counter(naive.count_pretokens(docs, pattern, [EOT])) == Counter(
        naive.count_pretokens([text], pattern, [EOT])
    )
    return docs


@pytest.mark.parametrize("pattern", list(ENTRY_CORPUS))
def test_train_str_vs_list_vs_iterator(mod, pattern):
    text, ref = reference(mod, pattern)
    assert len(ref.merges) == ENTRY_VOCAB - 256 - 1
    docs = line_docs(text, pattern)
    same_model(mod.Tokenizer.train(docs, ENTRY_VOCAB, pattern=pattern, special_tokens=[EOT]), ref)
    same_model(
        mod.Tokenizer.train(iter(docs), ENTRY_VOCAB, pattern=pattern, special_tokens=(EOT,)), ref
    )
    same_model(
        mod.Tokenizer.train(
            (d for d in [text]), ENTRY_VOCAB, pattern=pattern, special_tokens=[EOT]
        ),
        ref,
    )


@pytest.mark.parametrize("pattern", list(ENTRY_CORPUS))
def test_train_from_counts(mod, pattern):
    text, ref = reference(mod, pattern)
    counts = mod.count_pretokens([text], pattern=pattern, special_tokens=[EOT])
    assert all(isinstance(k, bytes) and isinstance(v, int) for k, v in counts.items())
    assert counts == naive.count_pretokens([text], pattern, [EOT])
    same_model(
        mod.Tokenizer.train_from_counts(counts, ENTRY_VOCAB, pattern=pattern, special_tokens=[EOT]),
        ref,
    )
    # str keys work too
    str_counts = {k.decode("utf-8"): v for k, v in counts.items()}
    same_model(
        mod.Tokenizer.train_from_counts(
            str_counts, ENTRY_VOCAB, pattern=pattern, special_tokens=[EOT]
        ),
        ref,
    )


def test_counts_keyed_by_a_bytes_subclass(mod):
    """numpy's bytes_ (what a column of pre-tokens gives), or any bytes subclass, counts
    by its bytes: the same merges as plain bytes keys, on both backends."""
    np = pytest.importorskip("numpy")

    class Lying(bytes):
        def __bytes__(self):
            return b"zz"

    plain = {b"ab": 3, b"abc": 2, b"bc": 1, b"xyz": 2}
    odd = {np.bytes_(b"ab"): 3, Lying(b"abc"): 2, b"bc": 1, np.bytes_(b"xyz"): 2}
    assert (mod.Tokenizer.train_from_counts(odd, 262, min_frequency=1).merges
            == mod.Tokenizer.train_from_counts(plain, 262, min_frequency=1).merges)


@pytest.mark.parametrize("pattern", list(ENTRY_CORPUS))
def test_counts_add(mod, pattern):
    text, _ = reference(mod, pattern)
    first, second = line_docs(text, pattern, 2)
    a = mod.count_pretokens([first], pattern=pattern, special_tokens=[EOT])
    b = mod.count_pretokens([second], pattern=pattern, special_tokens=[EOT])
    whole = mod.count_pretokens([text], pattern=pattern, special_tokens=[EOT])
    assert dict(Counter(a) + Counter(b)) == whole
    assert mod.count_pretokens([first, second], pattern=pattern, special_tokens=[EOT]) == whole


def test_count_pretokens_small(mod):
    assert mod.count_pretokens(["hello hello world"]) == {b"hello": 1, b" hello": 1, b" world": 1}
    assert mod.count_pretokens(["aa<|x|>aa"], pattern="bytes", special_tokens=["<|x|>"]) == {
        b"aa": 2
    }
    assert mod.count_pretokens(["a b", "a b"], pattern="words") == {b"a ": 2, b"b": 2}
    assert mod.count_pretokens(["é"]) == {"é".encode(): 1}
    assert mod.count_pretokens([]) == {}


def write(path, text):
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize(
    "workers,chunk_size",
    [(1, None), (2, None), (1, 500), (2, 500), (1, 4096), (2, 4096)],
)
def test_train_files_one_file(mod, tmp_path, workers, chunk_size):
    text, ref = reference(mod, "gpt2")
    path = write(tmp_path / "corpus.txt", text)
    tok = mod.Tokenizer.train_files(
        [str(path)], ENTRY_VOCAB, workers=workers, chunk_size=chunk_size, special_tokens=[EOT]
    )
    same_model(tok, ref)


@pytest.mark.parametrize("workers,chunk_size", [(1, 1000), (2, 1000), (2, None)])
def test_train_files_several_files(mod, tmp_path, workers, chunk_size):
    text, ref = reference(mod, "gpt2")
    docs = line_docs(text, "gpt2", 3)
    paths = [write(tmp_path / f"part{i}.txt", d) for i, d in enumerate(docs)]
    tok = mod.Tokenizer.train_files(
        paths, ENTRY_VOCAB, workers=workers, chunk_size=chunk_size, special_tokens=[EOT]
    )
    same_model(tok, ref)
    # each file is one document: the same as train() of the file texts
    texts = [p.read_bytes().decode("utf-8") for p in paths]
    same_model(mod.Tokenizer.train(texts, ENTRY_VOCAB, special_tokens=[EOT]), ref)


@pytest.mark.parametrize("pattern", ["cl100k", "words"])
def test_train_files_other_patterns(mod, tmp_path, pattern):
    text, ref = reference(mod, pattern)
    docs = line_docs(text, pattern, 2)
    paths = [write(tmp_path / f"part{i}.txt", d) for i, d in enumerate(docs)]
    for workers, chunk_size in ((1, 700), (2, 3000)):
        tok = mod.Tokenizer.train_files(
            paths,
            ENTRY_VOCAB,
            workers=workers,
            chunk_size=chunk_size,
            pattern=pattern,
            special_tokens=[EOT],
        )
        same_model(tok, ref)


def test_train_files_is_per_file_not_joined(mod, tmp_path):
    # Two files whose boundary would join pre-tokens if the texts were concatenated.
    a = write(tmp_path / "a.txt", "abc abc ab")
    b = write(tmp_path / "b.txt", "c abc")
    for chunk_size in (None, 1000, 3):
        tok = mod.Tokenizer.train_files(
            [a, b], 256 + 20, chunk_size=chunk_size, min_frequency=1, workers=1
        )
        assert tok.merges == naive.train(["abc abc ab", "c abc"], 256 + 20, min_frequency=1)
        assert (
            tok.merges
            == mod.Tokenizer.train(["abc abc ab", "c abc"], 256 + 20, min_frequency=1).merges
        )


def test_train_files_multibyte_chunk_boundaries(mod, tmp_path):
    # Multi-byte characters and whitespace runs straddling many small chunk boundaries.
    text = ("größe 日本語  \n\n   \t😀😀 naïve    x\n" * 60) + "   "
    path = write(tmp_path / "u.txt", text)
    expected = naive.train([text], 256 + 40, min_frequency=2)
    for chunk_size in (7, 64, 1000):
        for workers in (1, 2):
            tok = mod.Tokenizer.train_files(
                [path], 256 + 40, chunk_size=chunk_size, workers=workers
            )
            assert tok.merges == expected, (chunk_size, workers)


def test_train_files_job_read_in_pieces(mod, tmp_path):
    # One job of more than a megabyte: a worker reads its byte range in pieces cut
    # where no pre-token changes (multi-byte characters and whitespace runs near
    # every cut); the counts are those of the whole text.
    text = "".join(f"größe {i} 日本語  \n\n   \t😀 naïve{i % 97}    x\n" for i in range(60000))
    path = write(tmp_path / "big.txt", text)
    assert path.stat().st_size > 2 << 20
    tok = mod.Tokenizer.train_files([path], 256 + 60, chunk_size=1 << 24, workers=1)
    assert tok.merges == mod.Tokenizer.train([text], 256 + 60).merges


@pytest.mark.parametrize("pattern", ["words", "bytes", "gpt2"])
def test_train_to_exhaustion_matches_naive(mod, pattern):
    """min_frequency=1 and a vocab too large to fill: the late merges are all ties."""
    text = read_data("tinystories_sample.txt", 1500)
    expected = naive.train([text], 256 + 5000, pattern=pattern, min_frequency=1)
    tok = mod.Tokenizer.train(text, 256 + 5000, pattern=pattern, min_frequency=1)
    assert tok.merges == expected
    assert tok.vocab_size == 256 + len(expected)
    # every pre-token has become one token
    for pre in naive.pretokenize(text, pattern):
        assert len(tok.encode_ordinary(pre)) == 1


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "words", "bytes"])
def test_backend_parity_large(both, pattern):
    """Both backends, a bigger corpus, a bigger vocabulary, and ties at count 1 late on."""
    text = (
        read_data("corpus.en", 30000)
        + read_data("german.txt")
        + read_data("tinystories_sample.txt")
    )
    a, b = (m.Tokenizer.train(text, 256 + 1500, pattern=pattern, min_frequency=1) for m in both)
    assert a.merges == b.merges
    assert a == b
    sample = read_data("address.txt") + read_data("corpus.en")[50000:60000]
    assert a.encode_ordinary(sample) == b.encode_ordinary(sample)


def test_train_from_huge_counts(both):
    """Counts of web-scale corpora (trillions) are exact on every backend."""
    big = 3 * 2**40
    counts = {b"ab": big, b"cd": big + 1, b"abcd": 2**41, "éé": 7 * 2**42, b"xyz" * 3: 2**45}
    expected = naive.train_from_counts(counts, 256 + 12, min_frequency=2)
    for m in both:
        tok = m.Tokenizer.train_from_counts(counts, 256 + 12)
        assert tok.merges == expected, m.__name__
