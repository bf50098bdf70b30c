"""The o200k and cl100k pre-tokenizers of both backends on long, mostly ASCII text: the
compiled core classifies 64 bytes at a time into bitmaps (SIMD where the CPU has it) and
leaves rare cases and non-ASCII blocks to its scalar scanner, so texts must cross many
blocks, mix both ways and reach the end of the text in every state.  The same scanners serve
GPT-4's pattern as Llama 3, Qwen and nanochat spell it (other digit runs, no `\\s++$`), and
every spelling `gpt4_variant` accepts.  `regex` is the oracle.
"""

import os
import platform
import random
import subprocess
import sys

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fallback
from helpers import LLAMA3, NANOCHAT, QWEN

PATTERNS = {
    "o200k": bpe_fallback.PATTERNS["o200k"],
    "cl100k": bpe_fallback.PATTERNS["cl100k"],
    "llama3": LLAMA3,
    "qwen": QWEN,
    "nanochat": NANOCHAT,
    # cl100k's `\\s++$` with shorter runs of digits
    "cl100k-2": bpe_fallback.PATTERNS["cl100k"].replace(r"\p{N}{1,3}+", r"\p{N}{1,2}"),
    "cl100k-1": bpe_fallback.PATTERNS["cl100k"].replace(r"\p{N}{1,3}+", r"\p{N}"),
}
# the quick loop keeps the named patterns and one variant; the full suite runs them all
NAMES = ["o200k", "cl100k", "llama3"] + [pytest.param(name, marks=pytest.mark.slow)
                                         for name in PATTERNS if name not in ("o200k", "cl100k",
                                                                              "llama3")]

# Pieces the rules tell apart, and runs longer than a block of 64 bytes.
PIECES = [
    "a", "Z", "word", " word", "Word", "camelCase", "ABC", "x'", "'s", "'S", "'re", "'ll",
    "'ve", "'d", "'m", "'t", "'x", "''", " '", "0", "12", "2024", "1234567", " ", "  ", "\t",
    "\x0b", "\x0c", "\n", "\r\n", "\n\n", " \n", "\n  ", ".", ",", "!?", "/", "//", ".\n",
    ";\n/", "-", "_", "(", "\x00", "\x1f", "\x7f", "é", "中", "\u00a0", "\u2028", "\x85",
    "ſ", "\U0001F600", "a" * 70, "A" * 65, "7" * 100, " " * 80, "\n" * 70, "." * 90,
    " \n" * 40, "\t" * 66, "x" * 64 + "'s",
]

long_text = st.lists(st.sampled_from(PIECES), min_size=20, max_size=300).map("".join)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=300, deadline=None)
@given(text=long_text)
def test_long_text_equals_regex(mod, name, text):
    pattern = PATTERNS[name]
    assert mod.Core.pretokenize(pattern, text) == regex.findall(pattern, text)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(text=long_text, cut=st.integers(0, 200))
def test_every_suffix_and_prefix(mod, name, text, cut):
    """The scan starts and ends anywhere relative to the blocks."""
    pattern = PATTERNS[name]
    for part in (text[cut:], text[:len(text) - cut]):
        assert mod.Core.pretokenize(pattern, part) == regex.findall(pattern, part)


_ENCODINGS = {}


def encodings(mod, name):
    """(ours, tiktoken's) for a name of PATTERNS, loaded once per backend: o200k_base, or
    cl100k_base's ranks with the pattern."""
    tiktoken = pytest.importorskip("tiktoken")
    from helpers import DATA

    if (mod.__name__, name) not in _ENCODINGS:
        enc_name = "o200k_base" if name == "o200k" else "cl100k_base"
        base = mod.get_encoding(enc_name, path=str(DATA / f"{enc_name}.tiktoken.gz"))
        ours = mod.Encoding(name, pat_str=PATTERNS[name], mergeable_ranks=base._mergeable_ranks,
                            special_tokens=base._special_tokens)
        ref = tiktoken.Encoding(name, pat_str=PATTERNS[name],
                                mergeable_ranks=base._mergeable_ranks,
                                special_tokens=base._special_tokens)
        _ENCODINGS[mod.__name__, name] = ours, ref
    return _ENCODINGS[mod.__name__, name]


@pytest.mark.parametrize("name", NAMES)
def test_encode_long_text_matches_tiktoken(mod, name):
    from helpers import DATA

    ours, ref = encodings(mod, name)
    text = "".join(PIECES) * 7 + (DATA / "corpus.en").read_text(encoding="utf-8")
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


@pytest.mark.parametrize("name", NAMES)
def test_line_break_then_a_whole_block_of_blanks(mod, name):
    """A line break ends one block and the next is all blanks: whether a line break follows
    the run is read past the block (the count of trailing zeros of a zero word there; a
    build where that is not 64 splits the run after its line break, or loops)."""
    pattern = PATTERNS[name]
    for head in ("x" * 63, "x" * 62 + "!", "x" * 127, "x" * 60 + "\n\n\n"):
        for blank in (" ", "\t", "\x0b", "\x0c", " \t"):
            for run in (64, 65, 127, 128, 200):
                for tail in ("\n", "\n\n", "\r\n", "a", " a", "!", "7", "é", "\xa0", ""):
                    text = head + "\n" + (blank * run)[:run] + tail + "y" * 130
                    assert mod.Core.pretokenize(pattern, text) == regex.findall(pattern, text)
                text = head + "\n" + blank * run  # the run ends the text (cl100k: one piece)
                assert mod.Core.pretokenize(pattern, text) == regex.findall(pattern, text)


@pytest.mark.parametrize("name", NAMES)
def test_every_short_snippet_at_block_edges(mod, name):
    """Every string of up to 3 characters of a small alphabet, in filler, across the edge of
    two blocks of the bitmaps and across the edge where the scalar scanner takes the end."""
    pattern = PATTERNS[name]
    alphabet = "aB1 \t\n.'s/é"
    snippets = [""]
    for _ in range(3):
        snippets = sorted({w + c for w in snippets for c in alphabet} | set(snippets))
    for fill in ("x" * 200, " \n" * 100, "7" * 200):
        for at in (62, 63, 127):
            for w in snippets:
                text = fill[:at] + w + fill[at:]
                assert mod.Core.pretokenize(pattern, text) == regex.findall(pattern, text), text


@pytest.mark.parametrize("name", NAMES)
def test_every_short_snippet_at_the_end(mod, name):
    """The last blocks are classified from a copy padded with zero bytes, and to the rules
    the end of the text is white space ahead: every string of up to 3 characters of a small
    alphabet ends texts of every length that puts it in the first or the last two blocks."""
    pattern = PATTERNS[name]
    alphabet = "aB1 \t\n\r.'s/é"
    snippets = [""]
    for _ in range(3):
        snippets = sorted({w + c for w in snippets for c in alphabet} | set(snippets))
    for fill in ("x" * 200, " \n" * 100, "7" * 200, "a " * 100):
        for at in (0, 1, 61, 62, 63, 64, 125, 126, 127, 128, 190):
            for w in snippets:
                text = fill[:at] + w
                assert mod.Core.pretokenize(pattern, text) == regex.findall(pattern, text), text


def test_encode_reads_a_str_utf8_again(mod):
    """encode reads a non-ASCII str's UTF-8 where CPython keeps it: the same str again, a
    str grown in place by +=, a str subclass whose __str__ lies, the same str on many
    threads, and surrogate pairs (one code point) and lone ones (U+FFFD) at block edges
    all give tiktoken's ids."""
    ours, ref = encodings(mod, "o200k")

    def expect(text):
        return ref.encode(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"),
                          allowed_special="all")

    text = "".join(PIECES) * 3
    assert ours.encode(text) == ours.encode(text) == expect(text)
    grown = "é" + "x" * 100
    for k in range(40):
        assert ours.encode(grown) == expect(grown), k
        grown += "中 ab" if k % 3 else "ſ's\u2028"   # resized in place when nothing else holds it

    class Lying(str):
        def __str__(self):
            return "something else"

    lying = Lying(text)
    assert ours.encode(lying) == ours.encode_ordinary(lying) == expect(text)
    assert ours.encode_batch([text] * 16, num_threads=4) == [expect(text)] * 16
    for at in (61, 62, 63, 64, 65, 126, 127, 128):
        for odd in ("\ud83d\ude00", "\ud800", "\udfff", "\udc00\ud800", "é\ud83d"):
            t = "ab " * 60
            t = t[:at] + odd + t[at:] + "<|endoftext|>" + t
            assert ours.encode(t, allowed_special="all") == expect(t), (at, odd)
            assert ours.encode_to_numpy(t, allowed_special="all").tolist() == expect(t)
            assert list(ours.encode_iterable([t[:at], t[at:]], allowed_special="all")) \
                == expect(t)


CLASSIFIER = r"""
import random, regex, bpe, bpe_fallback
assert bpe.BITSCAN_KIND == {kind!r}, bpe.BITSCAN_KIND
pieces = {pieces!r}
rng = random.Random(7)
for pattern in {patterns!r}:
    for _ in range(400):
        text = "".join(rng.choices(pieces, k=rng.randint(20, 200)))
        assert bpe.Core.pretokenize(pattern, text) == regex.findall(pattern, text), text
print("ok")
"""


@pytest.mark.parametrize("kind", ["swar", "sse2"])
def test_each_classifier_equals_regex(mod, kind):
    """BPE_SIMD caps the classifier: the portable one (8 bytes at a time) and SSE2 run
    here too, not only the best one this CPU has."""
    if getattr(mod, "BACKEND", "") != "cython":
        pytest.skip("the classifier is the compiled core's")
    if kind == "sse2" and platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("SSE2 is x86-64's")
    env = dict(os.environ, BPE_SIMD=kind)
    code = CLASSIFIER.format(kind=kind, pieces=PIECES, patterns=list(PATTERNS.values()))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_every_spelling_of_gpt4s_pattern(mod):
    """Every spelling `gpt4_variant` routes to cl100k's scanners splits text as regex does,
    and as the spelling of its variant in PATTERNS: the table's claim that its parts are
    interchangeable, checked by regex itself."""
    rng = random.Random(11)
    text = "".join(rng.choices(PIECES, k=400)) + "x 1234567 \n  \n "
    canonical = {bpe_fallback.gpt4_variant(p): regex.findall(p, text)
                 for p in PATTERNS.values() if bpe_fallback.gpt4_variant(p)}
    assert len(canonical) == 6
    spellings = bpe_fallback.gpt4_variant.__globals__["_gpt4_spellings"]
    assert len(spellings) >= 500
    for spelling, variant in spellings.items():
        want = canonical[variant]
        assert regex.findall(spelling, text) == want, spelling
        assert mod.Core.pretokenize(spelling, text) == want, spelling
