"""Limits: sparse ids up to 2**31 - 1 set up every table the scanner reads; counts
that overflow 64 bits are refused; a huge vocab_size only caps training, an impossible
one is a ValueError."""


import pytest
from fresh import run_fresh
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import read_data

# ---- sparse ids: every table the scanner reads is set up --------------------------------

@pytest.mark.parametrize("layout", [
    "m.Tokenizer.from_merges([], special_tokens={'<s>': 2**31 - 1})",
    "m.Tokenizer.from_merges([], special_tokens={'<s>': 2_000_000})",
    "m.Tokenizer.from_merges([(b'h', b'e')], vocab={**{i: bytes([i]) for i in range(256)}, "
    "10**9: b'he'}, pattern='cl100k')",
    "m.Tokenizer.from_tiktoken({**{bytes([i]): i for i in range(256)}, b'he': 70000, "
    "b'll': 9_000_000}, pattern='o200k')",
])
def test_sparse_ids_encode_in_a_fresh_process(mod, layout):
    r = run_fresh(mod, f"""
        tok = {layout}
        text = "hello world, hello ünïcode 12345 \\n\\n  "
        ids = tok.encode(text)
        assert tok.decode(ids) == text, ids
        assert tok.encode_batch([text, text], num_threads=2) == [ids, ids]
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(ids=st.lists(st.integers(256, 2**31 - 1), min_size=1, max_size=4, unique=True),
       pattern=st.sampled_from(["gpt2", "cl100k", "o200k", "words", None]))
def test_random_sparse_layouts(mod, ids, pattern):
    """Random sparse ids for a few merges and a special token, encoded in a fresh process."""
    merges = [(b"h", b"e"), (b"l", b"l"), (b"o", b" "), (b"w", b"o")][:len(ids)]
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (a, b) in zip(ids, merges):
        vocab[i] = a + b
    special_id = max(ids) + 1 if max(ids) + 1 < 2**31 else 300
    r = run_fresh(
        mod,
        f"""
        tok = m.Tokenizer.from_merges({merges!r}, vocab={vocab!r}, pattern={pattern!r},
                                      special_tokens={{"<|x|>": {special_id}}})
        text = "hello world <|x|> ok\\n"
        ids = tok.encode(text, allowed_special="all")
        assert tok.decode(ids) == text
        print("ok")
    """,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# ---- numbers ---------------------------------------------------------------------------

def test_counts_that_overflow_are_refused(mod):
    with pytest.raises(ValueError, match="2\\*\\*63"):
        mod.Tokenizer.train_from_counts({b"ab": 2**62, b"abx": 2**62, b"cd": 2**62 + 1}, 259)
    with pytest.raises(ValueError, match="2\\*\\*63"):
        mod.Tokenizer.train_from_counts({b"ab": 2**64}, 259)
    # the largest sum that fits trains
    tok = mod.Tokenizer.train_from_counts({b"ab": 2**62, b"cd": 2**62 - 1}, 258)
    assert tok.merges == [(b"a", b"b"), (b"c", b"d")]


def test_count_boundaries_agree(both):
    counts = {b"abab": 2**60, b"ba": 2**61 - 7, b"abc": 12345}
    merges = [m.Tokenizer.train_from_counts(dict(counts), 262).merges for m in both]
    assert merges[0] == merges[1]


@pytest.mark.parametrize("vocab_size", [2**31 - 1, 2**31])
def test_huge_vocab_size_trains_until_pairs_run_out(mod, vocab_size):
    r = run_fresh(mod, f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        tok = m.Tokenizer.train("the cat sat on the mat. " * 4, {vocab_size})
        assert 0 < len(tok.merges) < 100
        print(len(tok.merges))
    """)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("vocab_size", [2**31 + 1, 2**64, 10**30])
def test_impossible_vocab_size_is_a_value_error(mod, vocab_size):
    with pytest.raises(ValueError, match="int32"):
        mod.Tokenizer.train("the cat sat on the mat", vocab_size)


def test_huge_limits_are_no_limits(both):
    text = read_data("corpus.en", 3000)
    results = [(m.Tokenizer.train(text, 400, max_token_bytes=2**70).merges,
                m.Tokenizer.train(text, 400, min_frequency=2**70).merges) for m in both]
    assert results[0] == results[1]
    assert results[0][0] == both[0].Tokenizer.train(text, 400).merges
    assert results[0][1] == []
