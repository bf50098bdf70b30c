"""The compiled core pre-tokenizes the named patterns with its own scanner; `regex` is the
reference: on any text both must give exactly the same pre-tokens."""

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe
import bpe_fallback
from naive import reference_regex

pytestmark = pytest.mark.skipif(bpe.BACKEND != "cython", reason="no compiled core installed")

NAMED = ["gpt2", "cl100k", "o200k", "words"]

# Characters from every corner the patterns distinguish: contractions and their case
# variants (U+017F folds to s), letters of every case class, marks, digits of several
# scripts, every kind of white space, punctuation, CR/LF and '/', astral characters.
CORNERS = list("aZ'sStTdDmMlLvVeErRkK ſ\t\n\r\x0b\x0c\x85\xa0\u2028\u2029\u3000\u1680\x1c\x1f\x00"
               "0123456789٣⅕Ⅻ.,!?/-_()'\"<|>") + [
    "\u0301", "\u0300", "\u0903", "ǅ", "ʰ", "中", "Ω", "ω", "\U0001F600", "é", "ß", "İ", "\ufffd",
    "\u212a", "\U00010400", "\U0001D7CE", "\u00b2",
]
corner_text = st.lists(st.sampled_from(CORNERS), max_size=40).map("".join)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(text=st.one_of(corner_text, st.text(max_size=40)))
@pytest.mark.parametrize("name", NAMED)
def test_native_scanner_equals_regex(name, text):
    pattern = bpe_fallback.PATTERNS[name]
    # (regex with the reference's classes: the installed regex's tables may be newer)
    assert bpe.Core.pretokenize(pattern, text) == regex.findall(reference_regex(pattern), text)


@pytest.mark.parametrize("name", NAMED)
@pytest.mark.parametrize(
    "data", ["corpus.en", "german.txt", "address.txt", "tinystories_sample.txt"]
)
def test_native_scanner_on_corpora(name, data):
    from helpers import DATA

    text = (DATA / data).read_text(encoding="utf-8")
    pattern = bpe_fallback.PATTERNS[name]
    assert bpe.Core.pretokenize(pattern, text) == regex.findall(pattern, text)
