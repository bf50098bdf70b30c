"""The o200k and cl100k pre-tokenizers of both backends on long, mostly ASCII text: the
compiled core classifies 64 bytes at a time into bitmaps (SIMD where the CPU has it) and
leaves rare cases and non-ASCII blocks to its scalar scanner, so texts must cross many
blocks, mix both ways and reach the end of the text in every state.  `regex` is the oracle.
"""

import os
import platform
import subprocess
import sys

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fallback

NAMES = ["o200k", "cl100k"]

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
    pattern = bpe_fallback.PATTERNS[name]
    assert mod.Core.pretokenize(pattern, text) == regex.findall(pattern, text)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(text=long_text, cut=st.integers(0, 200))
def test_every_suffix_and_prefix(mod, name, text, cut):
    """The scan starts and ends anywhere relative to the blocks."""
    pattern = bpe_fallback.PATTERNS[name]
    for part in (text[cut:], text[:len(text) - cut]):
        assert mod.Core.pretokenize(pattern, part) == regex.findall(pattern, part)


@pytest.mark.parametrize("name", NAMES)
def test_encode_long_text_matches_tiktoken(mod, name):
    tiktoken = pytest.importorskip("tiktoken")
    from helpers import DATA

    enc_name = {"o200k": "o200k_base", "cl100k": "cl100k_base"}[name]
    path = DATA / f"{enc_name}.tiktoken.gz"
    ours = mod.get_encoding(enc_name, path=str(path))
    ref = tiktoken.Encoding(enc_name, pat_str=ours._pat_str,
                            mergeable_ranks=ours._mergeable_ranks, special_tokens={})
    text = "".join(PIECES) * 7 + (DATA / "corpus.en").read_text(encoding="utf-8")
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


CLASSIFIER = r"""
import random, regex, bpe, bpe_fallback
assert bpe.BITSCAN_KIND == {kind!r}, bpe.BITSCAN_KIND
pieces = {pieces!r}
rng = random.Random(7)
for name in ("o200k", "cl100k"):
    pattern = bpe_fallback.PATTERNS[name]
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
    code = CLASSIFIER.format(kind=kind, pieces=PIECES)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
