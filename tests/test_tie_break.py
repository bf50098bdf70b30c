"""The tie rule of training: the default (the greatest pair of bytes) and rustbpe's
(`tie_break="rustbpe"`: the smallest pair of ids), on every entry point and both backends,
against rustbpe itself (skipped where it is not installed) and the naive trainer."""

import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

import naive
from helpers import NANOCHAT, read_data

CORPORA = ["corpus.en", "tinystories_sample.txt", "german.txt"]
# rustbpe's default pattern (GPT-4's, as minbpe writes it), spelled out here
RUSTBPE_DEFAULT = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}"""
                   r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")


def documents(name):
    return read_data(name).split("\n")


def rustbpe_tokens(rustbpe, docs, vocab_size, pattern=NANOCHAT):
    """The tokens rustbpe learns, in order (its merges as the bytes they make)."""
    r = rustbpe.Tokenizer()
    r.train_from_iterator(iter(docs), vocab_size, pattern=pattern)
    ranks = sorted(r.get_mergeable_ranks(), key=lambda kv: kv[1])
    assert [i for _, i in ranks] == list(range(len(ranks)))
    return [bytes(t) for t, _ in ranks[256:]]


def made(tok):
    return [a + b for a, b in tok.merges]


@pytest.mark.parametrize("name", CORPORA)
def test_merges_are_rustbpes(mod, name):
    rustbpe = pytest.importorskip("rustbpe")
    docs = documents(name)
    want = rustbpe_tokens(rustbpe, docs, 1000)
    tok = mod.Tokenizer.train(docs, 1000, pattern=NANOCHAT, min_frequency=1, tie_break="rustbpe")
    assert made(tok) == want
    assert tok.vocab_size == 256 + len(want)


def test_the_default_rule_is_another(mod):
    """The two rules differ on these corpora (so the test above tests the option), and the
    default stays the greatest pair of bytes: the naive trainer's."""
    rustbpe = pytest.importorskip("rustbpe")
    docs = documents("tinystories_sample.txt")
    default = mod.Tokenizer.train(docs, 400, pattern=NANOCHAT, min_frequency=1)
    assert made(default) != rustbpe_tokens(rustbpe, docs, 400)
    assert default.merges == naive.train(docs, 400, pattern=NANOCHAT, min_frequency=1)


@pytest.mark.slow
@pytest.mark.parametrize("vocab_size", [300, 2000, 4000])
def test_merges_are_rustbpes_at_other_sizes(mod, vocab_size):
    rustbpe = pytest.importorskip("rustbpe")
    docs = documents("corpus.en")
    want = rustbpe_tokens(rustbpe, docs, vocab_size)
    tok = mod.Tokenizer.train(docs, vocab_size, pattern=NANOCHAT, min_frequency=1,
                              tie_break="rustbpe")
    assert made(tok) == want


@pytest.mark.parametrize("name", CORPORA)
def test_naive_trainer_with_rustbpes_rule(mod, name):
    text = read_data(name, limit=6_000)
    for min_frequency, max_token_bytes in [(2, None), (1, 3)]:
        want = naive.train(text, 330, pattern=NANOCHAT, min_frequency=min_frequency,
                           max_token_bytes=max_token_bytes, tie_break="rustbpe")
        tok = mod.Tokenizer.train(text, 330, pattern=NANOCHAT, min_frequency=min_frequency,
                                  max_token_bytes=max_token_bytes, tie_break="rustbpe")
        assert tok.merges == want


@given(st.lists(st.text(alphabet="ab c\u00e9", max_size=30), max_size=8),
       st.integers(256, 290), st.integers(0, 3))
def test_naive_trainer_with_rustbpes_rule_on_any_text(mod, texts, vocab_size, min_frequency):
    want = naive.train(texts, vocab_size, pattern="words", min_frequency=min_frequency,
                       tie_break="rustbpe")
    tok = mod.Tokenizer.train(texts, vocab_size, pattern="words", min_frequency=min_frequency,
                              tie_break="rustbpe")
    assert tok.merges == want


def test_two_merges_making_the_same_bytes(mod):
    """Ids, not bytes, are the symbols: "ab"+"c" and "a"+"bc" may both be learned."""
    counts = {b"abc": 5, b"ab": 4, b"bc": 4, b"xabc": 2, b"abcy": 2}
    want = naive.train_from_counts(counts, 262, min_frequency=1, tie_break="rustbpe")
    got = mod.Tokenizer.train_from_counts(counts, 262, min_frequency=1, tie_break="rustbpe")
    assert got.merges == want


def test_every_entry_point(mod, tmp_path):
    text = read_data("tinystories_sample.txt")
    want = naive.train(text, 320, pattern=NANOCHAT, tie_break="rustbpe")
    options = dict(pattern=NANOCHAT, tie_break="rustbpe")
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    counts = mod.Tokenizer.count_pretokens(text, pattern=NANOCHAT)
    assert mod.Tokenizer.train(text, 320, **options).merges == want
    assert mod.Tokenizer.train_files([str(path)], 320, chunk_size=500, workers=2,
                                     **options).merges == want
    assert mod.Tokenizer.train_from_counts(counts, 320, **options).merges == want
    assert mod.Tokenizer.train_from_counts({k.decode(): v for k, v in counts.items()}, 320,
                                           **options).merges == want
    # the core's own loop takes it too
    ids = mod.Tokenizer.core_class.learn_merges(dict(counts), 64, 2, None, None, True, "rustbpe")
    tokens = [bytes([i]) for i in range(256)]
    for a, b in ids:
        tokens.append(tokens[a] + tokens[b])
    assert tokens[256:] == [a + b for a, b in want]


def test_cli_tie_break(mod, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BPE_BACKEND", "python" if mod.BACKEND == "python" else "cython")
    text = read_data("tinystories_sample.txt")
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    for rule in ("rustbpe", "bytes"):
        out = tmp_path / f"{rule}.bpe"
        assert mod.main(["train", str(path), "--vocab-size", "320", "--pattern", NANOCHAT,
                         "--tie-break", rule, "-o", str(out), "--quiet"]) == 0
        want = naive.train(text, 320, pattern=NANOCHAT, tie_break=rule)
        assert mod.Tokenizer.load(str(out)).merges == want
    assert mod.main(["train", str(path), "--vocab-size", "300", "--tie-break", "smallest",
                     "-o", str(tmp_path / "x.bpe")]) == 2
    err = capsys.readouterr().err
    assert "--tie-break" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("bad, kind", [("greatest", ValueError), (None, TypeError),
                                       (1, TypeError)])
def test_bad_tie_break(mod, bad, kind):
    for call in (lambda: mod.Tokenizer.train("ab ab", 257, tie_break=bad),
                 lambda: mod.Tokenizer.train_from_counts({b"ab": 2}, 257, tie_break=bad),
                 lambda: mod.Tokenizer.core_class.learn_merges({b"ab": 2}, 1, 2, None, None,
                                                               True, bad)):
        with pytest.raises(kind, match="tie_break"):
            call()


# nanochat trains its tokenizer with rustbpe (nanochat/tokenizer.py, RustBPETokenizer):
# below, that path as nanochat writes it, run with rustbpe and with a stand-in for the
# rustbpe module made of this library.
NANOCHAT_SPECIALS = ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>",
                     "<|assistant_end|>", "<|python_start|>", "<|python_end|>",
                     "<|output_start|>", "<|output_end|>"]


def nanochat_train(rustbpe, tiktoken, text_iterator, vocab_size):
    """RustBPETokenizer.train_from_iterator's steps: rustbpe trains, tiktoken encodes."""
    tokenizer = rustbpe.Tokenizer()
    vocab_size_no_special = vocab_size - len(NANOCHAT_SPECIALS)
    tokenizer.train_from_iterator(text_iterator, vocab_size_no_special, pattern=NANOCHAT)
    pattern = tokenizer.get_pattern()
    mergeable_ranks = {bytes(k): v for k, v in tokenizer.get_mergeable_ranks()}
    offset = len(mergeable_ranks)
    specials = {name: offset + i for i, name in enumerate(NANOCHAT_SPECIALS)}
    return tiktoken.Encoding(name="rustbpe", pat_str=pattern, mergeable_ranks=mergeable_ranks,
                             special_tokens=specials)


def stand_in(mod):
    """A `rustbpe` module over this library: rustbpe's rule, and its min_frequency of 1."""

    class Tokenizer:
        def __init__(self):
            self._tok = None

        def train_from_iterator(self, iterator, vocab_size, buffer_size=8192, pattern=None):
            self._tok = mod.Tokenizer.train(iterator, vocab_size,
                                            pattern=pattern or RUSTBPE_DEFAULT,
                                            min_frequency=1, tie_break="rustbpe")

        def get_pattern(self):
            return self._tok.pattern

        def get_mergeable_ranks(self):
            return [(list(t), i) for i, t in sorted(self._tok.vocab.items())]

    return types.SimpleNamespace(Tokenizer=Tokenizer)


def test_nanochat_training_through_this_library(mod):
    rustbpe = pytest.importorskip("rustbpe")
    tiktoken = pytest.importorskip("tiktoken")
    docs = documents("corpus.en")
    real = nanochat_train(rustbpe, tiktoken, iter(docs), 1200)
    ours = nanochat_train(stand_in(mod), tiktoken, iter(docs), 1200)
    assert ours._mergeable_ranks == real._mergeable_ranks
    assert ours._special_tokens == real._special_tokens
    sample = read_data("tinystories_sample.txt") + "<|bos|>"
    assert ours.encode(sample, allowed_special="all") == real.encode(sample, allowed_special="all")
    # and the library's own tokenizer, trained so, encodes as nanochat's does
    tok = mod.Tokenizer.train(docs, 1200 - len(NANOCHAT_SPECIALS), pattern=NANOCHAT,
                              min_frequency=1, tie_break="rustbpe")
    assert tok.encode_ordinary(sample) == real.encode_ordinary(sample)
