"""`Encoding(pat_str=...)` reads the pattern as tiktoken's regex engine (Rust's syntax) reads
it, where `regex` would read it otherwise ($, \\z, \\Z, \\h, \\x{...}, POSIX classes), and
refuses, naming it, what it cannot write with that meaning; the pattern it keeps reads alike
in both engines.  The oracle: tiktoken itself, on the same ranks.  Both backends."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import gpt2_ranks

tiktoken = pytest.importorskip("tiktoken")

# patterns whose constructs the two engines read otherwise, and texts that tell them apart
DIALECT = [
    (r"[a-z]+$|[a-z]|\n", ["ab\n", "ab", "ab\nab", "a\n\n"]),
    (r" +$|\s", ["  \n", "  ", " \n \n"]),
    (r"[a-z]+\Z|[a-z]|\n|\r", ["ab\n", "ab", "ab\n\n", "ab\nab", "ab\r\n", "ab\n\r"]),
    (r"[a-z]+\z|[a-z]|\n", ["ab\n", "ab\nab", "ab"]),
    (r"[[:alpha:]]+|[^[:alpha:]]+", ["café au lait", "naïve ÉTÉ 42"]),
    (r"[[:space:]]+|.", ["\u3000\u3000 a\t\n", "\xa0 b"]),
    (r"[^[:digit:][:upper:]]+|.", ["aB3c٣d", "xyz 12"]),
    (r"\h+|.", ["ff 0A gz", "éF"]),
    (r"[\h_]+|.", ["f_f gz"]),
    (r"\x{e9}+|[\x{1F600}a]+|.", ["ééaa😀a e"]),
    (r"(?i)AB|.", ["ab AB aB"]),
    (r"[]a]+|[^]a]+", ["]a]b]", "xx]"]),
    (r"\$+|[$a]+|.", ["$$a$ b"]),
]
REFUSED = [
    (r"[\p{L}--\p{Lu}]+|.", "set operation --"),
    (r"[a-z&&[^aeiou]]+|.", "set operation &&"),
    (r"[a-z~~b]+|.", "set operation ~~"),
    (r"[a[bc]]+|.", "class inside a class"),
    (r"[[:^alpha:]]|.", "negated POSIX"),
    (r"[[:nope:]]|.", "unknown POSIX"),
    (r"(?U)a+|.", "inline flags (?U)"),
    (r"(?m)a$|.|\n", "inline flags (?m)"),
    (r"(?s:a.)|.", "inline flags (?s:"),
    (r"[\z]|.", "\\z in a class"),
]


def pair(mod, pat):
    ranks = gpt2_ranks()
    return (mod.Encoding("d", pat_str=pat, mergeable_ranks=ranks, special_tokens={}),
            tiktoken.Encoding("d", pat_str=pat, mergeable_ranks=ranks, special_tokens={}))


@pytest.mark.parametrize("pat, texts", DIALECT, ids=lambda x: str(x)[:30])
def test_pat_str_means_what_tiktoken_reads(mod, pat, texts):
    ours, theirs = pair(mod, pat)
    for text in texts:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text
    # the pattern kept reads alike in both engines: given back to either, the same ids
    again = mod.Encoding("d2", pat_str=ours._pat_str, mergeable_ranks=gpt2_ranks(),
                         special_tokens={})
    real = tiktoken.Encoding("d3", pat_str=ours._pat_str, mergeable_ranks=gpt2_ranks(),
                             special_tokens={})
    for text in texts:
        assert again.encode_ordinary(text) == real.encode_ordinary(text) \
            == theirs.encode_ordinary(text), text


@pytest.mark.parametrize("pat, what", REFUSED, ids=lambda x: str(x)[:30])
def test_what_cannot_be_read_alike_is_refused_by_name(mod, pat, what):
    with pytest.raises(ValueError, match="tiktoken's regex engine") as e:
        pair(mod, pat)
    assert what in str(e.value)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(pat=st.sampled_from([p for p, _ in DIALECT]),
       text=st.text("ab$Fé\n \u3000]_9😀A\t", max_size=24))
def test_random_texts_match_tiktoken(mod, pat, text):
    ours, theirs = pair(mod, pat)
    want, got = theirs.encode_ordinary(text), ours.encode_ordinary(text)
    assert ours.decode(got) == text
    if theirs.decode(want) == text:   # (tiktoken drops the text between two matches)
        assert got == want


def test_tiktoken_patterns_are_kept_as_they_are(mod):
    for name in ("gpt2", "cl100k", "o200k", "llama3", "qwen2"):   # tiktoken's, and the open models'
        pat = mod.PATTERNS[name]
        enc = mod.Encoding("r", pat_str=pat, mergeable_ranks=gpt2_ranks(), special_tokens={})
        assert enc._pat_str == pat


def test_an_export_of_a_pattern_tiktoken_reads_otherwise_is_refused(mod):
    trained = mod.Tokenizer.train(["éa éa ab"] * 3, 262, pattern=r"[[:alpha:]]+|[^[:alpha:]]+",
                                  min_frequency=1)
    with pytest.raises(ValueError, match="POSIX"):
        trained.to_tiktoken()
    ends = mod.Tokenizer.train(["ab\nab\n"] * 3, 262, pattern=r"[a-z]+$|[a-z]|\n",
                               min_frequency=1)
    enc = ends.to_tiktoken()
    for text in ("ab\n", "ab\nab", "ab"):
        assert enc.encode_ordinary(text) == ends.encode_ordinary(text), text
