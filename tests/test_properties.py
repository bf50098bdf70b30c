"""Property-based tests (hypothesis)."""

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import naive
from helpers import EOT, SPECIALS, fix_surrogates, has_surrogate_pair

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Arbitrary text, lone surrogates included (st.text() alone never yields them).
any_text = st.text(
    st.one_of(st.characters(), st.characters(codec=None, categories=["Cs"])), max_size=60
).filter(lambda s: not has_surrogate_pair(s))
# Text without surrogates, rich in what matters for pre-tokenization; no code points this
# Python's Unicode leaves unassigned (Cn), which tiktoken's and tokenizers' older tables may
# class differently from `regex` (see assigned_text below).
piece = st.text(
    st.one_of(
        st.sampled_from(list("ab cé\n\t'sS1 .😀")), st.characters(exclude_categories=["Cs", "Cn"])
    ),
    max_size=20,
)


def with_specials_strategy(specials):
    return st.lists(st.one_of(piece, st.sampled_from(specials)), max_size=8).map("".join)


@st.composite
def chunked(draw, text_strategy):
    """A text and a split of it into chunks (empty chunks included)."""
    text = draw(text_strategy)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0] + cuts + [len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("which", ["gpt2", "trained", "words", "bytes"])
@settings(max_examples=300, **SETTINGS)
@given(s=any_text)
def test_round_trip(mod, gpt2, trained, which, s):
    tok = {"gpt2": gpt2, "trained": trained("gpt2"), "words": trained("words")}.get(which)
    if tok is None:
        tok = _bytes_tok(mod)
    ids = tok.encode_ordinary(s)
    assert tok.decode(ids) == fix_surrogates(s)
    assert tok.decode_bytes(ids) == fix_surrogates(s).encode("utf-8")
    assert ids == tok.encode_ordinary(fix_surrogates(s))


_BYTES = {}


def _bytes_tok(mod):
    if mod.__name__ not in _BYTES:
        from helpers import read_data

        _BYTES[mod.__name__] = mod.Tokenizer.train(
            read_data("tinystories_sample.txt"),
            256 + 150 + 1,
            pattern="bytes",
            special_tokens=[EOT],
        )
    return _BYTES[mod.__name__]


@settings(max_examples=200, **SETTINGS)
@given(s=st.text(st.characters(exclude_categories=["Cs"]), max_size=80))
def test_trained_encode_matches_naive(trained, s):
    tok = trained("gpt2")
    assert tok.encode_ordinary(s) == naive.encode_ordinary(s, tok.merges, "gpt2")


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "words"])
@settings(max_examples=250, **SETTINGS)
@given(data=chunked(with_specials_strategy(SPECIALS)))
def test_encode_iterable_any_split(trained, pattern, data):
    text, chunks = data
    tok = trained(pattern)
    assert list(tok.encode_iterable(chunks, allowed_special="all")) == tok.encode(
        text, allowed_special="all"
    )
    assert list(tok.encode_iterable(iter(chunks), disallowed_special=())) == tok.encode_ordinary(
        text
    )
    assert list(
        tok.encode_iterable(chunks, allowed_special={EOT}, disallowed_special=())
    ) == tok.encode(text, allowed_special={EOT}, disallowed_special=())
    if any(sp in text for sp in SPECIALS):
        with pytest.raises(ValueError):
            list(tok.encode_iterable(chunks))
    else:
        assert list(tok.encode_iterable(chunks)) == tok.encode(text)


@settings(max_examples=200, **SETTINGS)
@given(data=chunked(st.text(max_size=80)))
def test_encode_iterable_arbitrary_text(gpt2, data):
    text, chunks = data
    assume(EOT not in text)
    assert list(gpt2.encode_iterable(chunks)) == gpt2.encode(text)


@settings(max_examples=100, **SETTINGS)
@given(texts=st.lists(any_text, max_size=6), num_threads=st.sampled_from([None, 1, 2]))
def test_encode_batch(gpt2, texts, num_threads):
    assume(not any(EOT in t for t in texts))
    assert gpt2.encode_batch(texts, num_threads=num_threads) == [gpt2.encode(t) for t in texts]


@settings(max_examples=40, **SETTINGS)
@given(texts=st.lists(with_specials_strategy(SPECIALS), max_size=5))
def test_encode_batch_allowed(trained, texts):
    # tiktoken's encode_batch takes the special-token policy too
    tok = trained("gpt2")
    expected = [tok.encode(t, allowed_special="all") for t in texts]
    assert tok.encode_batch(texts, num_threads=2, allowed_special="all") == expected


# ---------------------------------------------------------------------------------------
# Backend parity and the naive trainer, on random small corpora with random options.

SPECIAL_POOL = ["<s>", "</s>", "<s><s>", "<|x|>"]
PARITY_PATTERNS = ["gpt2", "cl100k", "o200k", "words", "bytes", None, r"\w+|\W"]


@st.composite
def training_case(draw):
    specials = draw(st.lists(st.sampled_from(SPECIAL_POOL), unique=True, max_size=3))
    doc = st.lists(
        st.one_of(
            st.text(st.sampled_from(list("aab c\né")), max_size=12), st.sampled_from(SPECIAL_POOL)
        ),
        max_size=8,
    ).map("".join)
    docs = draw(st.lists(doc, min_size=1, max_size=4))
    return dict(
        docs=docs,
        vocab_size=256 + len(specials) + draw(st.integers(0, 40)),
        pattern=draw(st.sampled_from(PARITY_PATTERNS)),
        special_tokens=specials,
        min_frequency=draw(st.sampled_from([1, 2, 3])),
        max_token_bytes=draw(st.sampled_from([None, 1, 2, 3, 5])),
    )


@pytest.mark.slow
@settings(max_examples=500, **SETTINGS)
@given(case=training_case())
def test_backend_parity(both, case):
    docs = case.pop("docs")
    expected = naive.train(docs, **case)
    results = []
    for m in both:
        tok = m.Tokenizer.train(docs, **case)
        assert tok.merges == expected, m.__name__
        assert tok.vocab == naive.vocab_of(expected, case["special_tokens"]), m.__name__
        counts = m.count_pretokens(
            docs, pattern=case["pattern"], special_tokens=case["special_tokens"]
        )
        assert counts == naive.count_pretokens(docs, case["pattern"], case["special_tokens"])
        assert m.Tokenizer.train_from_counts(counts, **case) == tok
        results.append(tok)
    a, b = results
    assert a.merges == b.merges and a.vocab == b.vocab and a.special_tokens == b.special_tokens
    assert a.pattern == b.pattern
    text = "".join(docs)
    assert a.encode(text, allowed_special="all") == b.encode(text, allowed_special="all")
    assert (
        a.encode_ordinary(text)
        == b.encode_ordinary(text)
        == naive.encode_ordinary(text, expected, case["pattern"])
    )


@settings(max_examples=100, **SETTINGS)
@given(case=training_case())
def test_train_files_matches_train(mod, tmp_path_factory, case):
    docs = case.pop("docs")
    directory = tmp_path_factory.mktemp("docs")
    paths = []
    for i, d in enumerate(docs):
        p = directory / f"{i}.txt"
        p.write_bytes(d.encode("utf-8"))
        paths.append(p)
    expected = mod.Tokenizer.train(docs, **case)
    got = mod.Tokenizer.train_files(paths, workers=1, chunk_size=5, **case)
    assert got == expected


EXPORT_PATTERNS = ["gpt2", "cl100k", "o200k", "words"]


@st.composite
def export_case(draw):
    case = draw(training_case())
    case["pattern"] = draw(st.sampled_from(EXPORT_PATTERNS))
    case["special_tokens"] = [s for s in case["special_tokens"]]
    return case


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(case=export_case(), probe=with_specials_strategy(SPECIAL_POOL))
def test_exports_random_models(mod, tmp_path_factory, case, probe):
    """Random small models: native, tiktoken and Hugging Face exports encode like we do."""
    import tokenizers

    docs = case.pop("docs")
    tok = mod.Tokenizer.train(docs, **case)
    texts = docs + ["".join(docs), probe]
    d = tmp_path_factory.mktemp("export")
    tok.save(d / "m.bpe")
    assert mod.Tokenizer.load(d / "m.bpe") == tok
    specials = list(tok.special_tokens)
    if any(a != b and b.startswith(a) for a in specials for b in specials):
        # tiktoken tries special tokens in no set order, so it cannot match the longest first
        with pytest.raises(ValueError, match="longest first"):
            tok.to_tiktoken()
        enc = None
    else:
        enc = tok.to_tiktoken()
    tok.save_huggingface(d / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
    assert mod.Tokenizer.from_huggingface(d / "tokenizer.json") == tok
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        if enc is not None:
            assert enc.encode(text, allowed_special="all") == ids
        assert hf.encode(text, add_special_tokens=False).ids == ids
        assert tok.decode(ids) == text


# Code points a newer Unicode assigns (category Cn in this Python's tables) may be letters to
# `regex`, our reference, and unassigned to tiktoken's older tables: tiktoken is an oracle only
# for the characters both know.
assigned_text = st.text(st.characters(exclude_categories=["Cn", "Cs"]), max_size=60)


@settings(max_examples=300, **SETTINGS)
@given(s=assigned_text)
def test_gpt2_matches_tiktoken(gpt2, s):
    from helpers import gpt2_tiktoken

    assert gpt2.encode_ordinary(s) == gpt2_tiktoken().encode_ordinary(s)


@settings(max_examples=100, **SETTINGS)
@given(s=st.text(st.sampled_from(list("abcde ")), min_size=30, max_size=3000))
def test_gpt2_long_pretokens_match_tiktoken(gpt2, s):
    from helpers import gpt2_tiktoken

    assert gpt2.encode_ordinary(s) == gpt2_tiktoken().encode_ordinary(s)
    assert gpt2.encode_ordinary(s.replace(" ", "")) == gpt2_tiktoken().encode_ordinary(
        s.replace(" ", "")
    )
