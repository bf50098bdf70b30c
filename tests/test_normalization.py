"""Unicode normalization (a tokenizer.json's NFC, NFD, NFKC, NFKD) exactly as `tokenizers`
gives it, checked against tokenizers' own normalizers.

tokenizers normalizes with the data of its Rust crate (an older Unicode version than any
Python's unicodedata): characters assigned since then are left alone (U+32FF is not "令和"
under NFKC there), marks assigned since then are not reordered.  Pipeline.normalize
applies that data; both backends normalize with it, whatever Python is installed."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpe_fallback

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import normalizers  # noqa: E402

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
REFERENCE = {form: getattr(normalizers, form)().normalize_str for form in FORMS}

# Characters that Python's unicodedata (13.0 and later) normalizes otherwise than tokenizers:
# compatibility decompositions of recent characters (U+32FF SQUARE ERA NAME REIWA, modifier
# letters, segmented digits), a recent canonical decomposition (U+11938), recent marks
# (classes that tokenizers does not know: U+07FD, U+0898, U+1AB0, U+16FF0).
RECENT = ("\u32ff\ua7f2\ua7f3\ua7f4\uab69\U00010781\U000107ba\U0001f16c\U0001fbf0\U0001fbf9"
          "\U00011938\u07fd\u0898\u1ab0\u1ac0\U00016ff0\U0001e2ec")
# Sequences that exercise the algorithm: reordering by combining class, compositions across
# marks, blocked compositions, exclusions, singletons, Hangul (L+V, LV+T, LVT), composing
# starters (Tamil, Oriya), compatibility forms.
SEQUENCES = [
    "e\u0301", "e\u0327\u0301", "e\u0301\u0327", "a\u0334\u0301\u0316", "o\u031b\u0323\u0300",
    "s\u0323\u0307", "s\u0307\u0323", "\u1e63\u0307", "\u0344", "\u0f73\u0f71\u0f72",
    "\u212b", "\u2126", "a\u0305\u0301", "A\u030a\u0301", "\u00c5\u0327",
    "\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8", "\uac01\u11a8", "\u1100\u1100\u1161",
    "\u1161\u11a8", "\uac00\u0301\u11a8", "\u0bc6\u0bbe", "\u0b47\u0b3e\u0b56",
    "\u0b47\u0301\u0b3e",
    "\ufb01", "\u00a0x", "\u2460\u0301", "\u1e9b\u0323", "\uffa0\uffc2", "\u1100\uffc2",
    "\u3131\u314f", "\u00bd", "\u0958\u093c", "\u05d9\u05b4\u05bc", "x\u0345\u0313\u0300",
    "\u03b1\u0345\u0313", "\u0626\u0654", "\u30ab\u3099", "\uff76\uff9e", "\u0301a", "\u0301",
    "\u07fd\u0301", "\u0301\u07fd", "e\u07fd\u0301", "e\u0898\u0301", "\u32ff\u0301",
    "\U00011935\U00011930", "\U0001d15e\U0001d165", "\u0e38\u0e48", "\u0e48\u0e38",
] + [c + tail for c in RECENT for tail in ("", "\u0301", "a")]


def ours(form, text):
    return bpe_fallback.Pipeline([form], ["bytes"]).normalize(text)


@pytest.mark.parametrize("form", FORMS)
def test_recent_characters_and_sequences_as_tokenizers(form):
    for text in SEQUENCES:
        for context in ("{}", "a{}", "{}b", "x {} y\u0301"):
            s = context.format(text)
            assert ours(form, s) == REFERENCE[form](s), (form, ascii(s))


def test_recent_characters_are_left_alone_under_compatibility_forms():
    """U+32FF and the segmented digits: tokenizers' NFKC keeps them (Python 3.11's gives
    "令和" and digits); this library gives what tokenizers gives."""
    for c in "\u32ff\U0001fbf0\ua7f2":
        assert REFERENCE["NFKC"](c) == c
        assert ours("NFKC", c) == c == ours("NFKD", c)
    assert ours("NFKC", "\ufb01 \u2460") == REFERENCE["NFKC"]("\ufb01 \u2460") == "fi 1"


def test_plain_text_is_returned_as_is():
    text = "plain ASCII text, and more: 123"
    assert ours("NFC", text) is text
    latin = "Käse, Straße, café, 東京, \U0001f642"
    assert ours("NFC", latin) == latin == REFERENCE["NFC"](latin)


def test_unknown_form_is_refused_before_use(mod):
    with pytest.raises(ValueError, match="normalizer"):
        mod.resolve_pattern(mod.Pipeline(["NFKX"], ["gpt2"]))


MARKS = "\u0300\u0301\u0302\u0303\u0307\u0308\u030a\u030c\u0313\u0316\u031b\u0323\u0327\u0328" \
        "\u0334\u0345\u05b4\u05bc\u0654\u093c\u0e38\u0e48\u0f71\u0f72\u0f74\u3099\u07fd\u0898"
LETTERS = "aeiouAEOSsnNcCyYzZ\u03b1\u03c9\u0399\u0430\u0415\u0418\u05d9\u0627\u0915\u0b47\u0bc6" \
          "\u0bbe\u0b3e\u30ab\u30cf\u1e63\u00e9\u00c5\u212b\u0344\u0f73\u1f00"
HANGUL = "\u1100\u1101\u1112\u1161\u1175\u11a8\u11c2\uac00\uac01\ud7a3\uffc2\u3131"
OTHERS = "\ufb01\u00a0\u2460\u32ff\U0001fbf0\u00bd\uff76\uff9e \n"
ALPHABET = MARKS + LETTERS + HANGUL + OTHERS


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(ALPHABET), max_size=24), st.sampled_from(FORMS))
def test_random_mark_sequences_as_tokenizers(text, form):
    assert ours(form, text) == REFERENCE[form](text)


EDGE_SEQUENCES = ["e\u0301", "\u0301", "a\u0334\u0301\u0316", "\u1100\u1161\u11a8", "\ufb01",
                  "\u212b", "\u32ff", "\uac00\u11a8", "\U0001d15e\U0001d165"]


@pytest.mark.parametrize("form", FORMS)
def test_marks_at_the_edges_of_ascii_blocks_as_tokenizers(form):
    """Mostly-ASCII text is normalized a block at a time (its ASCII blocks skipped): a
    sequence that changes, placed across every edge of the first blocks, with the ASCII
    letter it may compose with on the other side."""
    filler = "ab cd\n" * 3000
    for edge in (4096, 8192):
        for at in range(edge - 4, edge + 4):
            for seq in EDGE_SEQUENCES:
                text = filler[:at] + seq + filler[at:]
                assert ours(form, text) == REFERENCE[form](text), (at, seq)


# ---------------------------------------------------------------------------------------
# tokenizer.json normalizers, both backends

CORPUS = ("The caf\u00e9 on the corner, \ufb01ne \u2460 items, \uac00\ub098\ub2e4 "
          "\u4ee4\u548c \u32ff \u30ab\u3099 e\u0301 2024 \U0001fbf0\U0001fbf1 \u00bd ") * 40


def hf_pair(mod, tmp_path, forms):
    tok = mod.Tokenizer.train(CORPUS, 256 + 120, pattern=mod.Pipeline(forms, ["gpt2"]))
    path = tmp_path / "tokenizer.json"
    tok.save_huggingface(path)
    return mod.Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))


def hf_ids(hf, text):
    return hf.encode(text, add_special_tokens=False).ids


NORMALIZER_SETS = [["NFKC"], ["NFC"], ["NFKD"], ["NFD", "NFKC"]]


@pytest.mark.parametrize("forms", NORMALIZER_SETS, ids="+".join)
def test_tokenizer_json_normalizer_gives_tokenizers_ids(mod, tmp_path, forms):
    ours_tok, hf = hf_pair(mod, tmp_path, forms)
    assert ours_tok.pattern.normalizers == tuple(forms)
    for text in SEQUENCES + [CORPUS[:400], RECENT, " ".join(RECENT)]:
        assert ours_tok.encode(text) == hf_ids(hf, text), ascii(text)
    # U+32FF is kept (not "令和", which the vocabulary merges): the ids say so
    if "NFKC" in forms:
        assert ours_tok.encode("\u32ff") != ours_tok.encode("\u4ee4\u548c")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(ALPHABET), max_size=24))
def test_random_texts_tokenizer_json_ids(mod, tmp_path_factory, text):
    key = mod.__name__
    if key not in _PAIRS:
        _PAIRS[key] = hf_pair(mod, tmp_path_factory.mktemp("nfkc"), ["NFKC"])
    ours_tok, hf = _PAIRS[key]
    assert ours_tok.encode(text) == hf_ids(hf, text)


_PAIRS = {}


def test_both_backends_normalize_with_the_one_function(mod, monkeypatch):
    """The compiled core has no normalization of its own: it calls Pipeline.normalize."""
    tok = mod.Tokenizer.train(CORPUS, 256 + 40, pattern=mod.Pipeline(["NFKC"], ["gpt2"]))
    calls = []
    real = mod.Pipeline.normalize
    monkeypatch.setattr(mod.Pipeline, "normalize",
                        lambda self, text: calls.append(self.normalizers) or real(self, text))
    text = "\ufb01ne \u32ff"
    assert tok.encode(text) == tok.encode(real(tok.pattern, text))
    assert calls and set(calls) == {("NFKC",)}


def test_normalize_refuses_what_is_not_text_or_a_form(mod):
    with pytest.raises(TypeError, match="str"):
        mod.Pipeline(["NFC"], ["gpt2"]).normalize(b"bytes")
    with pytest.raises(ValueError, match="NFKX"):
        mod.Pipeline(["NFKX"], ["gpt2"]).normalize("\u00e9")

# ---------------------------------------------------------------------------------------
# every code point (slow)

def every_code_point():
    return [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def differing(form, context, chars, normalize):
    """The characters whose text in `context` normalizes otherwise than tokenizers, tried
    in chunks joined by line feeds (which no form changes or moves across)."""
    bad = []
    for k in range(0, len(chars), 4096):
        chunk = chars[k:k + 4096]
        joined = "\n".join(context.format(c) for c in chunk)
        if normalize(form, joined) != REFERENCE[form](joined):
            bad += [c for c in chunk
                    if normalize(form, context.format(c)) != REFERENCE[form](context.format(c))]
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_every_code_point_as_tokenizers(form):
    """Every code point outside the surrogates, alone, after "a" and before a combining mark,
    after a mark and before a Hangul vowel: 0 differ from tokenizers."""
    chars = every_code_point()
    for context in ("{}", "a{}\u0301", "\u0334{}\u1161"):
        bad = differing(form, context, chars, ours)
        assert not bad, (form, context, [f"U+{ord(c):04X}" for c in bad[:20]], len(bad))


@pytest.mark.slow
def test_every_code_point_tokenizer_json_ids(mod, tmp_path):
    """Every code point, after "a" and before U+0301, through an NFKC tokenizer.json: the
    ids of tokenizers on both backends."""
    ours_tok, hf = hf_pair(mod, tmp_path, ["NFKC"])
    chars = every_code_point()
    for k in range(0, len(chars), 8192):
        text = "\n".join(f"a{c}\u0301" for c in chars[k:k + 8192])
        assert ours_tok.encode(text) == hf_ids(hf, text), f"U+{ord(chars[k]):04X}.."



def test_a_pipeline_tokenizer_pickles_into_a_fresh_process(mod, tmp_path):
    """A tokenizer whose pattern is a Pipeline crosses processes (worker processes, Dask,
    multiprocessing): its compact state carries the Pipeline, not two bare lists."""
    import pickle

    from fresh import run_fresh

    tok = mod.Tokenizer.train(CORPUS, 256 + 40, pattern=mod.Pipeline(["NFKC"], ["gpt2"]))
    path = tmp_path / "tok.pickle"
    path.write_bytes(pickle.dumps(tok))
    run = run_fresh(mod, """
        import pickle
        tok = pickle.loads(open(sys.argv[1], "rb").read())
        print(type(tok.pattern).__name__, tok.pattern.normalizers, tok.encode(sys.argv[2]))
    """, path, CORPUS[:80])
    assert run.returncode == 0, run.stderr
    assert run.stdout.split(" ", 2)[:2] == ["Pipeline", "('NFKC',)"]
    assert run.stdout.split(" ", 2)[2].strip() == str(tok.encode(CORPUS[:80]))


@pytest.mark.parametrize("forms", [["NFC", 3], [None], [b"NFC"]])
def test_a_pipeline_normalizer_that_is_no_str_is_a_type_error(mod, forms):
    with pytest.raises(TypeError, match="normalizers are str"):
        mod.Tokenizer.from_merges([], pattern=mod.Pipeline(forms, ["gpt2"]))
