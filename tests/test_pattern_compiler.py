"""Custom patterns of the GPT family are compiled to a native matcher: its pre-tokens equal
`regex`'s (with the rule that text between two matches is a pre-token of its own) on the
named patterns (spelled so that they are not routed to their own scanners), the patterns of
open models, and generated patterns of the family; a pattern outside the family keeps the
regex path; the tokenizer says which path it takes."""

import io

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bpe
import bpe_fallback
from helpers import DATA, LLAMA3, NANOCHAT, QWEN, gpt2_ranks

compiled = pytest.mark.skipif(bpe.BACKEND != "cython", reason="no compiled core installed")

# DeepSeek V3's tokenizer.json: a Sequence of three Splits (digits, CJK, then this one)
DEEPSEEK_V3 = (r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?"""
               r"""[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
# DeepSeek LLM's (the first models) main Split
DEEPSEEK = (r"[\r\n]|\s?[!-/:-~！-／：-～‘-‟　-。]+|\s?[^\s!-/:-~！-／：-～‘-‟　-。]+"
            r"|\s?\p{L}+|\s+$|[\r\n]+")
OPEN_MODELS = {
    "llama3": LLAMA3,
    "qwen": QWEN,
    "nanochat": NANOCHAT,
    "deepseek": DEEPSEEK,
    "deepseek-v3": DEEPSEEK_V3,
    "deepseek-digits": r"\p{N}{1,3}",
    "deepseek-cjk": r"[一-龥\u3040-ゟ゠-ヿ]+",
    "deepseek-llm-cjk": r"[一-龥ࠀ-一가-퟿]+",
    "marks": r"[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|\p{N}| ?[\p{P}\p{S}]+|\s+",
    # the named patterns and GPT-4's spellings, in a group: the same regex, but not the
    # text that routes them to the hand-written scanners
    **{name: f"(?:{bpe_fallback.PATTERNS[name]})" for name in ("gpt2", "cl100k", "o200k", "words")},
    "llama3-grouped": f"(?:{LLAMA3})",
    "qwen-grouped": f"(?:{QWEN})",
}

# Characters from every corner the patterns distinguish (see test_native_scanner), and CJK,
# kana, combining marks, emoji, CR/LF mixes, U+0085, U+2028, NBSP, fullwidth punctuation,
# lone surrogates (repaired to U+FFFD).
CORNERS = list("aZ'sStTdDmMlLvVeErRkK ſ\t\n\r\x0b\x0c\x85\xa0\u2028\u2029\u3000\x1c\x00"
               "0123456789٣⅕Ⅻ.,!?/-_()'\"<|>~") + [
    "\r\n", "\n\n", "\u0301", "\u0903", "ǅ", "ʰ", "中", "龥", "あ", "ア", "ー", "！", "。", "‘",
    "Ω", "ω", "\U0001F600", "é", "ß", "İ", "\ufffd", "\u212a", "\U0001D7CE", "\u00b2", "\ud800",
    "\udc00", "\u2003",
]
corner_text = st.lists(st.sampled_from(CORNERS), max_size=30).map("".join)
any_text = st.one_of(corner_text, st.text(max_size=30))


def native(pattern, text):
    return bpe.Core.pretokenize(pattern, text)


def reference(pattern, text):
    return bpe_fallback.Core.pretokenize(pattern, text)


@compiled
@pytest.mark.parametrize("name", sorted(OPEN_MODELS))
def test_open_patterns_compile_and_match_regex(name):
    pattern = OPEN_MODELS[name]
    assert bpe_fallback.pattern_program(pattern) is not None
    for data in ("corpus.en", "german.txt", "address.txt"):
        text = (DATA / data).read_text(encoding="utf-8")[:20000]
        assert native(pattern, text) == reference(pattern, text)
    text = "".join(CORNERS) * 3
    assert native(pattern, text) == reference(pattern, text)


@compiled
@settings(max_examples=150)
@given(text=any_text)
@pytest.mark.parametrize("name", sorted(OPEN_MODELS))
def test_open_patterns_on_fuzz(name, text):
    assert native(OPEN_MODELS[name], text) == reference(OPEN_MODELS[name], text)


# ---- generated patterns of the family --------------------------------------------------

ATOMS = [r"\p{L}", r"\p{N}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}",
         r"\p{P}", r"\p{S}", r"\P{L}", r"\P{N}", r"\s", r"\S", r"\d", r"[\r\n]", r"[^\r\n]",
         r"[^\r\n\p{L}\p{N}]", r"[^\s\p{L}\p{N}]", r"[\p{L}\p{M}]", r"[一-龥]", r"[a-z]",
         r"[^\s\p{L}]", "'", " ", "a", "s", r"\n", "."]
QUANTIFIERS = ["", "?", "*", "+", "{1,3}", "{2}", "{1,}", "{0,2}"]
MODES = ["", "?", "+"]


@st.composite
def items(draw, depth=0):
    kind = draw(st.sampled_from(["atom"] * 6 + ["icase", "group", "ahead", "end"]
                                if depth == 0 else ["atom"]))
    if kind == "icase":
        words = draw(st.lists(st.sampled_from(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "k"]),
                              min_size=1, max_size=4, unique=True))
        return "(?i:" + "|".join(words) + ")" + draw(st.sampled_from(["", "?"]))
    if kind == "group":
        alts = draw(st.lists(sequences(depth + 1), min_size=1, max_size=3))
        return (draw(st.sampled_from(["(?:", "(?>"])) + "|".join(alts) + ")"
                + draw(st.sampled_from(["", "?", "??", "?+"])))
    if kind == "ahead":
        return r"(?!" + draw(st.sampled_from([r"\S", r"\s", r"\p{L}", "a"])) + ")"
    if kind == "end":
        return "$"
    q = draw(st.sampled_from(QUANTIFIERS))
    return draw(st.sampled_from(ATOMS)) + q + (draw(st.sampled_from(MODES)) if q else "")


def sequences(depth=0):
    return st.lists(items(depth), min_size=1, max_size=4).map("".join)


family_patterns = st.lists(sequences(), min_size=1, max_size=5).map("|".join)


def _usable(pattern):
    try:
        bpe_fallback.resolve_pattern(pattern)
    except ValueError:
        return False   # matches only the empty string (refused on both backends alike)
    return True


@compiled
@settings(max_examples=250)
@given(pattern=family_patterns, text=any_text)
def test_generated_patterns_equal_regex(pattern, text):
    assume(_usable(pattern))
    assert bpe_fallback.pattern_program(pattern) is not None, pattern
    assert native(pattern, text) == reference(pattern, text)


@compiled
@settings(max_examples=60)
@given(pattern=family_patterns)
def test_generated_patterns_on_a_corpus(pattern):
    assume(_usable(pattern))
    text = (DATA / "german.txt").read_text(encoding="utf-8")[:3000] + "".join(CORNERS)
    assert native(pattern, text) == reference(pattern, text)


CUT_TEXT = st.lists(st.one_of(st.sampled_from(CORNERS),   # line feeds after letters, often
                              st.sampled_from(["a\n", "9\n", "Z\n\n", "x\r\n", " \n", "b"])),
                    max_size=40).map("".join)


def _cuts_hold(pattern, text):
    """Where a file of this pattern is cut (file_cuts, at every place it may be), the
    pre-tokens of the pieces are those of the whole; the number of pieces."""
    data = bpe_fallback.Core.repair(text).encode("utf-8")
    split = bpe_fallback.pretokenizer(pattern)
    ranges = bpe_fallback.file_cuts(io.BytesIO(data), 1, pattern=pattern)
    pieces = [token for a, b in ranges for token in split(data[a:b].decode("utf-8"))]
    assert pieces == split(data.decode("utf-8")), (pattern, ranges)
    return len(ranges)


@settings(max_examples=200)
@given(pattern=family_patterns.map(lambda p: p + r"|\s+"), text=CUT_TEXT)   # (a match at \n)
def test_file_cuts_of_generated_patterns_are_safe(pattern, text):
    assume(_usable(pattern))
    _cuts_hold(pattern, text)


@pytest.mark.parametrize("name", ["llama3", "qwen", "nanochat"])
def test_open_patterns_are_cut_at_line_feeds(name):
    """Files of Llama 3's, Qwen's and nanochat's patterns are cut (training reads them in
    pieces, in several workers): after a letter or digit that a line feed follows."""
    lines = (DATA / "corpus.en").read_text(encoding="utf-8")[:5000].splitlines()
    text = "".join(f"{line} 42\n" for line in lines) + "".join(CORNERS)   # lines end in digits
    assert _cuts_hold(OPEN_MODELS[name], text) > len(lines) // 2


def test_streams_of_custom_patterns_are_cut_at_line_feeds(mod):
    """encode_iterable gives encode's ids, and holds a window, not the stream, where a
    custom pattern of the family allows cuts."""
    tok = mod.Tokenizer.from_merges([(b"h", b"e"), (b"l", b"l")], pattern=LLAMA3,
                                    special_tokens=["<|x|>"])
    lines = ["hello world 42\n", "  ünïcode  \r\n", "<|x|> more\n\n", "x" * 50 + "\n"] * 3000
    taken = []

    def source():
        for line in lines:
            taken.append(line)
            yield line

    want = tok.encode("".join(lines), allowed_special="all")
    got = tok.encode_iterable(source(), allowed_special="all")
    first = next(got)
    assert len(taken) < len(lines) // 2   # the first ids come before the stream's end
    assert [first, *got] == want


def test_dollar_is_regex_dollar():
    """`$` matches at the end and before a final line feed only (not before a final CR)."""
    for text in ("a  \n", "a \n\n", "a  \r", "ab\r\n", "a b\n"):
        for pattern in (r"\s+$|\S+|\s", r"\S+$|\s+$|.", r"b$|."):
            assert native(pattern, text) == reference(pattern, text)


# ---- the family's edges, and the path a tokenizer takes ----------------------------------

OUTSIDE = [r"(?<=a)b|.", r"(a)\1|.", r"^a|.", r"a(?=b)|.", r"\ba\b|.", r"(?i)ab|.",
           r"\Aa|.", r"(?:a*)+b|.", r"(?x) a | b",
           # a brace that is no property name: regex reads it otherwise, so regex runs it
           r" ?\p{L}+| ?\p{+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+|."]


@pytest.mark.parametrize("pattern", OUTSIDE)
def test_outside_the_family(pattern, mod):
    assert bpe_fallback.pattern_program(pattern) is None
    tok = mod.Tokenizer.from_merges([(b"a", b"b")], pattern=pattern)
    assert tok.pretokenizer == "regex"
    text = "ab aab\n b a"
    assert tok.decode(tok.encode(text)) == text
    assert mod.Core.pretokenize(pattern, text) == bpe_fallback.pretokenizer(pattern)(text)


def test_pretokenizer_says_which_path(mod):
    expect = "native" if mod.BACKEND == "cython" else "regex"
    for pattern in ("gpt2", "o200k", "words", None, LLAMA3, DEEPSEEK, r"\p{N}+|\D+"):
        assert mod.Tokenizer.from_merges([(b"a", b"b")], pattern=pattern).pretokenizer == expect
    assert mod.Tokenizer.from_merges([], pattern=r"(?<=a)b|.").pretokenizer == "regex"


def test_catastrophic_pattern_falls_back(mod, monkeypatch):
    """A pattern whose matching blows up spends the native budget, then the regex's time
    limit applies: a ValueError naming the pattern, never a hang."""
    pattern = r"(?:a|aa)+b|\s+|a"
    tok = mod.Tokenizer.from_merges([], pattern=pattern)
    assert tok.pretokenizer == ("native" if mod.BACKEND == "cython" else "regex")
    assert tok.encode("aaaa ab") == list(b"aaaa ab")
    monkeypatch.setattr(bpe_fallback, "PATTERN_TIME_BASE", 0.05)
    for text in ("a" * 60, "x" + "a" * 60):
        with pytest.raises(ValueError, match="took too long"):
            tok.encode(text)
        with pytest.raises(ValueError, match="took too long"):
            mod.Tokenizer.count_pretokens([text], pattern=pattern)


def test_budget_overrun_is_exact(mod):
    """A text the native matcher gives up on is split by the regex: the same ids."""
    pattern = r"\p{L}+\d|\p{L}|\s"   # quadratic on a long run of letters
    tok = mod.Tokenizer.from_merges([(b"a", b"b")], pattern=pattern)
    text = "ab1 " + "ab" * 1000 + " x"
    assert tok.encode(text) == [256] + list(("1 " + "ab" * 1000 + " x").encode())
    assert tok.encode_batch([text] * 3) == [tok.encode(text)] * 3
    counts = mod.Tokenizer.count_pretokens([text], pattern=pattern)
    assert counts == bpe_fallback.Tokenizer.count_pretokens([text], pattern=pattern)
    assert mod.Core.pretokenize(pattern, text) == bpe_fallback.pretokenizer(pattern)(text)


# ---- ids: both backends and tiktoken, the same ------------------------------------------

TEXTS = [(DATA / "corpus.en").read_text(encoding="utf-8")[:20000],
         (DATA / "german.txt").read_text(encoding="utf-8")[:5000],
         "".join(CORNERS).replace("\ud800", "").replace("\udc00", "") * 2]


def with_tiktoken(module, ranks, pattern):
    """(ours, tiktoken's) Encoding of `ranks` and `pattern`, their ids equal on TEXTS."""
    import tiktoken

    ours = module.Encoding("custom", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    theirs = tiktoken.Encoding("custom", pat_str=pattern, mergeable_ranks=ranks,
                               special_tokens={})
    for text in TEXTS:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    return ours, theirs


@pytest.mark.parametrize("name", ["llama3", "qwen", "nanochat"])
def test_custom_pattern_ids_equal_tiktoken(mod, name):
    ours, theirs = with_tiktoken(mod, gpt2_ranks(), OPEN_MODELS[name])
    assert ours.encode_batch(TEXTS, num_threads=2) == theirs.encode_batch(TEXTS)


def test_custom_pattern_ids_alike_on_both_backends(both):
    """DeepSeek's pattern leaves text between its matches (kept here, dropped by tiktoken)
    and its `$` is regex's (also before a final line feed): the backends agree."""
    ranks = gpt2_ranks()
    for name in ("deepseek", "deepseek-v3", "deepseek-cjk", "marks", "gpt2"):
        fast, slow = (m.Encoding("custom", pat_str=OPEN_MODELS[name], mergeable_ranks=ranks,
                                 special_tokens={}) for m in both)
        for text in TEXTS + [" a  b \n", "x\n\n", "  "]:
            assert fast.encode_ordinary(text) == slow.encode_ordinary(text)
            assert fast.decode(fast.encode_ordinary(text)) == text


@pytest.mark.slow
@compiled
@pytest.mark.parametrize("name", ["llama3", "qwen", "nanochat"])
def test_custom_pattern_on_cl100k_ranks(name):
    ranks = bpe.get_encoding("cl100k_base", path=DATA / "cl100k_base.tiktoken.gz")._mergeable_ranks
    with_tiktoken(bpe, ranks, OPEN_MODELS[name])


def test_training_counts_alike(both):
    text = (DATA / "german.txt").read_text(encoding="utf-8")[:20000] + "".join(CORNERS)
    for pattern in (LLAMA3, NANOCHAT, DEEPSEEK):
        fast, slow = (m.Tokenizer.count_pretokens([text], pattern=pattern) for m in both)
        assert fast == slow
        fast, slow = (m.Tokenizer.train(text, 300, pattern=pattern) for m in both)
        assert fast.merges == slow.merges


def test_bpe_info_says_which_path(mod, tmp_path, capsys, monkeypatch):
    path = tmp_path / "tok.bpe"
    monkeypatch.setenv("BPE_BACKEND", "python" if mod.BACKEND == "python" else "cython")
    for pattern, named in ((LLAMA3, False), ("gpt2", True), (r"(?<=a)b|.", False)):
        mod.Tokenizer.from_merges([(b"a", b"b")], pattern=pattern).save(path)
        capsys.readouterr()
        assert mod.main(["info", str(path)]) == 0
        line = next(s for s in capsys.readouterr().out.splitlines()
                    if s.startswith("pretokenizer"))
        path_taken = mod.Tokenizer.load(path).pretokenizer
        assert line.split()[1] == path_taken
        assert ("compiled from the pattern" in line) == (path_taken == "native" and not named)
