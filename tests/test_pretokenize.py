"""Pre-tokenization of the named patterns equals `regex.findall` with the pattern, on every
kind of code point (a backend may scan the named patterns natively instead of with regex)."""

import functools

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import naive
from helpers import fix_surrogates

NAMED = ["gpt2", "cl100k", "o200k", "words"]


@functools.cache
def representatives():
    """One code point from each end of every run of code points that the patterns'
    classes (\\p{L}, \\p{N}, \\s, the o200k case classes, case-insensitive s) cannot tell
    apart, plus all of ASCII and Latin-1."""
    classes = [
        r"\p{L}",
        r"\p{N}",
        r"\s",
        r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
        r"(?i:s)",
        r"(?i:[tdmlvre])",
        r"[\r\n]",
    ]
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    flags = [0] * len(everything)
    for bit, cls in enumerate(classes):
        for m in regex.finditer(cls + "+", everything):
            for i in range(m.start(), m.end()):
                flags[i] |= 1 << bit
    reps = set(range(256))
    prev = None
    for i, f in enumerate(flags):
        if f != prev:
            reps.add(ord(everything[i]))
            if i:
                reps.add(ord(everything[i - 1]))
            prev = f
    reps.add(ord(everything[-1]))
    return sorted(reps)


CONTEXTS = [
    "a{c}b",
    " {c}{c}",
    "  {c}\n",
    "{c}'s",
    "'{c}",
    "{c}1",
    "{c}A",
    "ǅ{c}",
    "{c}\u0301",
    "\r\n{c} ",
    "{c}'LL",
    "1{c}",
    "x{c}ſ",
    " {c}/\n",
    "{c}\n\n",
    " {c}  ",
]


@functools.cache
def exhaustive_text():
    parts = []
    for c in map(chr, representatives()):
        for ctx in CONTEXTS:
            parts.append(ctx.format(c=c))
    return "".join(parts)


def test_representatives_cover_classes():
    reps = representatives()
    assert len(reps) > 1000
    assert 0x10FFFF in reps and 0x017F in reps and 0x212A in reps


@pytest.mark.parametrize("pattern", NAMED)
def test_count_pretokens_every_class(mod, pattern):
    text = exhaustive_text()
    assert mod.count_pretokens([text], pattern=pattern) == naive.count_pretokens([text], pattern)


@pytest.mark.parametrize("pattern", NAMED)
def test_native_scanner_every_class(mod, pattern):
    text = exhaustive_text()
    assert mod.Core.pretokenize(mod.PATTERNS[pattern], text) == regex.findall(
        naive.reference_regex(mod.PATTERNS[pattern]), text
    )


@pytest.mark.parametrize("pattern", NAMED)
def test_encode_parity_every_class(both, pattern):
    text = exhaustive_text()
    a, b = both
    corpus = text[: len(text) // 3]
    ta = a.Tokenizer.train(corpus, 256 + 200, pattern=pattern)
    tb = b.Tokenizer.train(corpus, 256 + 200, pattern=pattern)
    assert ta.merges == tb.merges
    assert ta.encode_ordinary(text) == tb.encode_ordinary(text)
    assert ta.encode_batch([text[:5000], text[5000:20000]], num_threads=2) == tb.encode_batch(
        [text[:5000], text[5000:20000]]
    )


TRICKY_CHARS = list(
    "'sStTdDmMlLvVeErR \t\r\n\u00a0\u2028\u3000\u0085\x0b\x0c1٣Ⅻ½Aaǅʰ\u0301\u20dd/.,!😀日ſK"
) + ["\U0001d400", "\U0002ebf0", "\U000e0001", "\U0010ffff", "\x00"]

tricky_text = st.text(
    st.one_of(st.sampled_from(TRICKY_CHARS), st.characters(exclude_categories=["Cs"])), max_size=40
)


@pytest.mark.parametrize("pattern", NAMED)
@settings(max_examples=300, deadline=None)
@given(text=tricky_text)
def test_pretokens_random(mod, pattern, text):
    rx = mod.PATTERNS[pattern]
    expected = regex.findall(naive.reference_regex(rx), text)
    assert mod.Core.pretokenize(rx, text) == expected
    assert mod.count_pretokens([text], pattern=pattern) == naive.count_pretokens([text], pattern)


# The open models' patterns (and "bytes"): the pure-Python core runs every named pattern in
# the standard library's re over class codes (ASCII text: over the text itself).
OPEN = ["llama3", "qwen2", "nanochat", "bytes"]


@pytest.mark.parametrize("pattern", OPEN)
def test_open_model_patterns_every_class(mod, pattern):
    text = exhaustive_text()
    rx = mod.PATTERNS[pattern]
    assert mod.Core.pretokenize(rx, text) == regex.findall(naive.reference_regex(rx), text)


@pytest.mark.parametrize("pattern", NAMED + OPEN)
@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from([chr(c) for c in range(128)] + list("'sStT \n\r1a")),
                    max_size=60))
def test_ascii_pretokens_random(mod, pattern, text):
    rx = mod.PATTERNS[pattern]
    assert mod.Core.pretokenize(rx, text) == regex.findall(naive.reference_regex(rx), text)


_PARITY = {}


def parity_pair(both, pattern):
    if pattern not in _PARITY:
        _PARITY[pattern] = [
            m.Tokenizer.train(exhaustive_text()[:30000], 256 + 100, pattern=pattern) for m in both
        ]
    return _PARITY[pattern]


@pytest.mark.parametrize("pattern", NAMED)
@settings(max_examples=100, deadline=None)
@given(text=st.text(st.one_of(st.sampled_from(TRICKY_CHARS), st.characters()), max_size=60))
def test_encode_parity_random(both, pattern, text):
    a, b = parity_pair(both, pattern)
    ids = a.encode_ordinary(text)
    assert ids == b.encode_ordinary(text)
    assert a.decode(ids) == fix_surrogates(text)


@pytest.mark.parametrize("bad, error, words", [
    ((["NFC"], []), ValueError, "at least one split"),
    (([], []), ValueError, "at least one split"),
    ((["nfc"], ["gpt2"]), ValueError, "unknown normalizer 'nfc'"),
    ((None, ["gpt2"]), TypeError, "normalizers"),
    (("NFC", ["gpt2"]), TypeError, "normalizers and splits are sequences of str"),
    ((["NFC"], [None]), TypeError, "splits are str"),
])
def test_pretokenizer_of_a_malformed_pipeline_names_it(mod, bad, error, words):
    """pretokenizer checks a Pipeline as every other entry point does (as Tokenizer.train,
    from_merges and count_pretokens refuse it): the error names what is wrong, before any
    text is split -- not an IndexError, nor a normalizer that silently does nothing."""
    with pytest.raises(error, match=words):
        mod.Tokenizer.from_merges([], pattern=mod.Pipeline(*bad))
    with pytest.raises(error, match=words):
        mod.pretokenizer(mod.Pipeline(*bad))
    # a well-formed one splits as its resolved self does
    good = mod.Pipeline(["NFC"], [r"\p{N}", r"[^\s\p{N}]+|\s+"])
    assert mod.pretokenizer(good)("Cafe\u0301 2024") == ["Café", " ", "2", "0", "2", "4"]
