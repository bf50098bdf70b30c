"""tokenizer.json, checked against Hugging Face `tokenizers` itself.

Export: tokenizers, given the file, gives the ids of this library -- for every named pattern,
on the shipped texts and on digit runs (cl100k's `\\p{N}{1,3}+` is possessive in `regex` but a
repeated group in tokenizers' Oniguruma), and pre-tokenizes every code point as `regex` does.
Import: a file this library cannot reproduce exactly is refused with ValueError saying what;
one it accepts encodes as tokenizers does. Wrong JSON shapes are ValueErrors naming the field."""

import json
import unicodedata

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import EOT, PLAIN_TEXTS, SPECIALS, bytes_to_unicode, corpus_with_specials
from naive import reference_regex

NAMED = ["gpt2", "cl100k", "o200k", "words", "bytes"]
DIGITS = {
    "runs": "in 2250 or 6819, 1234567 and 99999999; 12 345 6789 0",
    "mixed": "a1b22c333d4444e55555 x٣٤٥٦ ١٢٣٤٥ ①②③④ 12\n3456\n\n7890",
    "dates": "2024-01-01T12:30:45Z 3.14159265 1,000,000 0x1F2E3D",
}
TEXTS = {**PLAIN_TEXTS, **DIGITS, "special": f"Hello{EOT}world <|pad|> 2024"}
CORPUS = corpus_with_specials(12000) + " ".join(DIGITS.values()) * 20 + " 2250 6819 12345 " * 40

_TRAINED = {}


def trained(mod, pattern):
    """A tokenizer with digit merges (so digit runs split differently would change ids)."""
    key = (mod.__name__, pattern)
    if key not in _TRAINED:
        tok = mod.Tokenizer.train(CORPUS, 256 + 300 + 2, pattern=pattern, special_tokens=SPECIALS)
        assert any(t.isdigit() and len(t) >= 2 for t in tok.vocab.values()), "needs digit merges"
        _TRAINED[key] = tok
    return _TRAINED[key]


def hf_ids(hf, text):
    return hf.encode(text, add_special_tokens=False).ids


def ours(tok, text):
    return tok.encode(text, allowed_special="all")


def exported(tok, tmp_path):
    import tokenizers

    path = tmp_path / "tokenizer.json"
    tok.save_huggingface(path)
    return path, tokenizers.Tokenizer.from_file(str(path))


def split_regex(path):
    """The Split regex of a tokenizer.json (the text tokenizers compiles)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]


def hf_pieces(onig_regex, text):
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(onig_regex), behavior="isolated", invert=False)
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def regex_pieces(pattern, text):
    """Matches and the text between them (the Isolated split), with `regex`."""
    out, pos = [], 0
    for m in regex.finditer(pattern, text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
        if m.end() > m.start():
            out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


_ALL = []


def every_code_point():
    if not _ALL:
        _ALL.append("".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000))
    return _ALL[0]


# ---------------------------------------------------------------------------------------
# export


@pytest.mark.parametrize("pattern", NAMED)
def test_export_gives_our_ids(mod, tmp_path, pattern):
    tok = trained(mod, pattern)
    path, hf = exported(tok, tmp_path)
    for name, text in TEXTS.items():
        assert hf_ids(hf, text) == ours(tok, text), name
        assert hf.decode(ours(tok, text), skip_special_tokens=False) == text, name
    back = mod.Tokenizer.from_huggingface(path)
    assert back == tok and back.pattern == tok.pattern


@pytest.mark.parametrize("pattern", ["cl100k", "o200k"])
def test_export_digit_runs_the_old_way_differ(mod, tmp_path, pattern):
    """The check above can fail: the pattern string written as it is (what this library
    wrote before) makes tokenizers split 4+ digit runs otherwise for cl100k."""
    import tokenizers

    tok = trained(mod, pattern)
    path, _ = exported(tok, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = tok.pattern
    path.write_text(json.dumps(doc), encoding="utf-8")
    naive = tokenizers.Tokenizer.from_file(str(path))
    differs = [name for name, text in DIGITS.items() if hf_ids(naive, text) != ours(tok, text)]
    assert bool(differs) == (pattern == "cl100k"), differs


@pytest.mark.parametrize("pattern", NAMED)
def test_export_pre_tokenizes_every_code_point_alike(mod, tmp_path, pattern):
    """tokenizers' Oniguruma, given the exported regex, splits a text of every code point
    (and each code point of a sample in contexts: after an apostrophe, between digits and
    letters, before spaces and line breaks) exactly as `regex` splits it with the pattern's
    classes spelled from the reference tables, whatever the two engines' Unicode versions."""
    tok = trained(mod, pattern)
    path, _ = exported(tok, tmp_path)
    onig = split_regex(path)
    text = every_code_point()
    spelled = reference_regex(tok.pattern)  # regex with the reference's classes
    for start in range(0, len(text), 200_000):
        chunk = text[start:start + 200_000]
        assert hf_pieces(onig, chunk) == regex_pieces(spelled, chunk), (pattern, start)
    sample = text[:0x3000] + text[0x3000::97]
    context = "".join(f"'{c}s {c}1{c}A{c}a  {c}\n{c}" for c in sample)
    for start in range(0, len(context), 300_000):
        chunk = context[start:start + 300_000]
        assert hf_pieces(onig, chunk) == regex_pieces(spelled, chunk), (pattern, start)


CUSTOM_OK = [
    r"\w+|\W",
    r"\d{1,3}+|\D",
    r"[A-Z]?[a-z]++|[^a-zA-Z]",
    r"(?i:the|a)\b?|\s|.",
    r"\s+$|\S+|\s",
    r"^\S+|\s+|\S+",
    r"(?>a+)b|[\s\S]",
    r"\p{Lu}\p{Ll}*|\P{L}|\p{L}",
    r"(?:\x41|\u00e9|\U0001F600)+|[^A\u00e9\U0001F600]",
    r"(?<=a)b|[\s\S]",
    r"\.\.\.|[.!?]|[^.!?]+",
    r"(?P<word>\w+)|(?P<other>\W)",
    "\n|\t|[^\n\t]+",
]


@pytest.mark.parametrize("pattern", CUSTOM_OK)
def test_export_custom_patterns(mod, tmp_path, pattern):
    """Custom patterns with constructs both engines read otherwise (possessive {m,n}+, ^,
    $, \\w, (?i), \\x escapes) are written so that tokenizers splits as `regex` does, or
    refused."""
    tok = mod.Tokenizer.train(CORPUS[:20000], 256 + 60, pattern=pattern, min_frequency=1)
    try:
        path, hf = exported(tok, tmp_path)
    except ValueError as e:
        assert "tokenizers" in str(e)
        return
    onig = split_regex(path)
    texts = dict(
        TEXTS, edge="aab\nab\n", line="x  \ny\n", greek="ÉCOLE straße ὈΔΥΣΣΕΎΣ Kelvin \u212a ſ"
    )
    for name, text in texts.items():
        assert hf_pieces(onig, text) == regex_pieces(pattern, text), name
    back = mod.Tokenizer.from_huggingface(path)
    assert back == tok


@pytest.mark.parametrize("pattern, what", [
    (r"\b\w+\b|\W", "\\b"),
    (r"(a)\1|.", "\\1"),
    (r"a*", "empty string"),
    (r"x|(?=y)", "empty string"),
    (r"[[:alpha:]]+|.", "'['"),
    (r"(?s:.)", "group"),
    (r"\X", "\\X"),
    (r"\N{LATIN SMALL LETTER A}|.", "\\N"),
    (r"(?|(a)|(b))|.", "group"),
    (r"(?<=a+)b|.", "look-behind"),
])
def test_export_refuses_what_it_cannot_write(mod, tmp_path, pattern, what):
    tok = mod.Tokenizer.from_merges([], pattern=pattern)
    with pytest.raises(ValueError) as err:
        tok.save_huggingface(tmp_path / "tokenizer.json")
    assert "tokenizers" in str(err.value) and what in str(err.value), str(err.value)
    assert not (tmp_path / "tokenizer.json").exists()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(
        st.sampled_from(
            [
                r"\p{L}+",
                r"\p{N}{1,3}+",
                r"\p{N}{2}",
                r" ?[^\s\p{L}\p{N}]++",
                r"\s+(?!\S)",
                r"\s+$",
                r"'(?i:s|t|ll)",
                r"[a-f]+?",
                r"\S",
                r"\w+",
                r"[^\w\s]",
                r"(?:ab|a)c",
                r"(?>\s+)",
                r"\d+\.\d+",
                r"[\u00c0-\u00ff]+",
                r"^\s+",
                r"x{2,}+",
                r"[\r\n]+",
                r"\P{Lu}{2}",
                r"(?i:[a-h])+",
            ]
        ),
        min_size=1,
        max_size=5,
    ),
    text=st.text(
        alphabet=st.sampled_from(
            list("aAbBcxX09 \n\r\t'sStTlL.,!?-_éÉß")
            + ["\u00a0", "\u3000", "日", "😀", "٣", "\u212a", "ſ"]
        ),
        max_size=60,
    ),
)
def test_export_random_patterns_split_alike(mod, parts, text):
    """Random alternations of pattern pieces: whenever the export succeeds, tokenizers'
    Oniguruma splits random text exactly as `regex` does."""
    pattern = "|".join(parts) + r"|[\s\S]"
    tok = mod.Tokenizer.from_merges([], pattern=pattern)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        try:
            tok.save_huggingface(Path(d) / "tokenizer.json")
        except ValueError:
            return
        onig = split_regex(Path(d) / "tokenizer.json")
    assert hf_pieces(onig, text) == regex_pieces(pattern, text)


# ---------------------------------------------------------------------------------------
# import: reproduce tokenizers exactly, or refuse


def hf_model(tok, variant="plain", split=None):
    """A tokenizers Tokenizer with tok's vocabulary and merges and one option changed."""
    import tokenizers
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, processors

    b2u = bytes_to_unicode()

    def s(b):
        return "".join(b2u[x] for x in b)

    special_ids = set(tok.special_tokens.values())
    vocab = {s(b): i for i, b in tok.vocab.items() if i not in special_ids}
    vocab.update(tok.special_tokens)  # as in GPT-2's files: add_special_tokens keeps these ids
    merges = [(s(a), s(b)) for a, b in tok.merges]
    kwargs = {"ignore_merges": variant in ("ignore_merges", "unreachable_ignore_merges")}
    if variant == "unk":
        kwargs.update(unk_token=s(b"\x00"), fuse_unk=True)
    if variant == "byte_fallback":
        kwargs["byte_fallback"] = True
    if variant == "dropout":
        kwargs["dropout"] = 0.5
    if variant.startswith("unreachable"):
        vocab[s(b"zqzq")] = max(tok.vocab) + 1  # a token no merge makes
    hf = tokenizers.Tokenizer(models.BPE(vocab, merges, **kwargs))
    pattern = (
        split
        if split is not None
        else r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    )
    steps = [pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
             pre_tokenizers.ByteLevel(add_prefix_space=variant == "prefix_space", use_regex=False)]
    if variant == "bytelevel_only":
        steps = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    hf.pre_tokenizer = pre_tokenizers.Sequence(steps)
    hf.decoder = decoders.ByteLevel() if variant != "decoder" else decoders.Metaspace()
    if variant == "nfc":
        hf.normalizer = normalizers.NFC()
    if variant == "template":
        hf.post_processor = processors.TemplateProcessing(
            single=f"{EOT} $A", special_tokens=[(EOT, tok.special_tokens[EOT])]
        )
    if variant == "bytelevel_post":
        hf.post_processor = processors.ByteLevel()
    if variant == "truncation":
        hf.enable_truncation(8)
    if variant == "padding":
        hf.enable_padding(length=300)
    hf.add_special_tokens(list(tok.special_tokens))
    return hf


IMPORT_TEXTS = dict(TEXTS, zq="zqzq zqzq, zqzqzq", nul="a\x00b")
ACCEPT = ["plain", "ignore_merges", "unk", "byte_fallback", "bytelevel_post", "bytelevel_only",
          "unreachable_ignore_merges", "nfc"]
REFUSE = {
    "dropout": "dropout",
    "template": "post_processor",
    "decoder": "decoder",
    "prefix_space": "add_prefix_space",
    "truncation": "truncation",
    "padding": "padding",
    "unreachable": "ignore_merges",
}


@pytest.mark.parametrize("variant", ACCEPT + sorted(REFUSE))
def test_import_reproduces_tokenizers_or_refuses(mod, tmp_path, variant):
    tok = trained(mod, "cl100k")
    hf = hf_model(tok, variant)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    if variant in REFUSE:
        with pytest.raises(ValueError, match=REFUSE[variant]):
            mod.Tokenizer.from_huggingface(path)
        return
    back = mod.Tokenizer.from_huggingface(path)
    for name, text in IMPORT_TEXTS.items():
        assert ours(back, text) == hf_ids(hf, text), (variant, name)
        # the text as the normalizer leaves it
        assert back.decode(ours(back, text)) == (
            unicodedata.normalize("NFC", text) if variant == "nfc" else text)


def test_import_unreachable_token_would_differ(mod, tmp_path):
    """Why a token its own merges cannot build is refused with ignore_merges false: read
    anyway (ignore_merges switched on by hand), its text gives other ids than tokenizers."""
    tok = trained(mod, "cl100k")
    hf = hf_model(tok, "unreachable")
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["model"]["ignore_merges"] = True
    path.write_text(json.dumps(doc), encoding="utf-8")
    back = mod.Tokenizer.from_huggingface(path)
    assert ours(back, "zqzq") != hf_ids(hf, "zqzq")


ONIG_OK = {
    "gpt2_bytelevel": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "nested_repeat": r"\p{N}{1,3}+|[^\p{N}]+",
    "line_anchors": r"^\S+|\s+$|\s|\S+",
    "end_anchors": r"\s+\Z|\s+\z|\s|\S+",
    "hex_escapes": r"[\x{41}-\x{5A}\x{E9}]+|\x{1F600}|[^\x{41}-\x{5A}\x{E9}\x{1F600}]",
    "optional_exact": r"(?:ab){2}?c|[\s\S]",
    "possessive": r"\p{L}++|\p{N}?+\s++|[\s\S]",
    "atomic_lazy": r"(?>\s+)|\S+?",
    "comment": r"(?#a comment)\S+|\s+",
    "cjk": r"[一-龥\u3040-ゟ゠-ヿ]+|[^一-龥\u3040-ゟ゠-ヿ]+",
}
ONIG_REFUSE = {
    "nullable": (r"a{2}?", "empty string"),
    "folds_ss": (r"(?i:ss)|[\s\S]", "(?i)"),
    "folds_i": (r"(?i:in)|[\s\S]", "(?i)"),
    "word": (r"\w+|\W", "\\w"),
    "posix": (r"[[:alpha:]]+|[\s\S]", "'['"),
    "hex_digit": (r"\h+|[\s\S]", "\\h"),
    "byte_escape": (r"\xe9|[\s\S]", "\\x"),
    "unscoped_flag": (r"(?i)a|b|[\s\S]", "group"),
    "intersection": (r"[a-z&&[^x]]+|[\s\S]", "set operation"),
    "unknown_property": (r"\p{Alpha}+|[\s\S]", "property"),
}


def assigned_text():
    """Code points assigned in this Python's Unicode version (older than both engines')."""
    return "".join(c for c in every_code_point()[::3] if unicodedata.category(c) != "Cn")


@pytest.mark.parametrize("name", sorted(ONIG_OK))
def test_import_oniguruma_syntax(mod, tmp_path, name):
    """Split regexes in Oniguruma's syntax (as tokenizer.json files hold them) are read with
    the meaning tokenizers gives them: the same pre-tokens and ids."""
    onig = ONIG_OK[name]
    tok = trained(mod, "cl100k")
    hf = hf_model(tok, "plain", split=onig)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    back = mod.Tokenizer.from_huggingface(path)
    texts = dict(
        IMPORT_TEXTS, lines="a b\n  c\nd  \n\n e \n", mixed="AÉé😀x 日本語カタカナ abab ababc"
    )
    for key, text in texts.items():
        assert regex_pieces(back.pattern, text) == hf_pieces(onig, text), (name, key)
        assert ours(back, text) == hf_ids(hf, text), (name, key)
    text = assigned_text()
    assert regex_pieces(back.pattern, text) == hf_pieces(onig, text), name


@pytest.mark.parametrize("name", sorted(ONIG_REFUSE))
def test_import_refuses_oniguruma_it_cannot_map(mod, tmp_path, name):
    onig, what = ONIG_REFUSE[name]
    tok = trained(mod, "gpt2")
    path, _ = exported(tok, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = onig
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="Split regex") as err:
        mod.Tokenizer.from_huggingface(path)
    assert what in str(err.value), str(err.value)


def test_import_names_are_not_patterns(mod, tmp_path):
    """A Split regex that reads like a pattern name is that regex, never the named pattern."""
    tok = trained(mod, "gpt2")
    path, _ = exported(tok, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "gpt2|[\\s\\S]"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert mod.Tokenizer.from_huggingface(path).pattern == "gpt2|[\\s\\S]"


def test_import_edited_export_is_read_as_edited(mod, tmp_path):
    """save_huggingface keeps the pattern it was written from in a comment; a regex edited
    since is read as it now is."""
    tok = trained(mod, "words")
    path, _ = exported(tok, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    split = doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]
    assert split["Regex"].startswith("(?#bpe:")
    split["Regex"] = split["Regex"] + "|x"
    path.write_text(json.dumps(doc), encoding="utf-8")
    back = mod.Tokenizer.from_huggingface(path)
    assert back.pattern != tok.pattern and back.pattern.endswith("|x")
    for text in TEXTS.values():
        assert ours(back, text) == ours(tok, text)


# ---------------------------------------------------------------------------------------
# wrong shapes: ValueError naming the field, never AttributeError/TypeError/KeyError

SHAPES = [
    (["normalizer"], 1, "normalizer"),
    (["model", "merges"], 5, "model.merges"),
    (["model", "merges"], [5], "model.merges[0]"),
    (["model", "merges"], [["a"]], "model.merges[0]"),
    (["model", "vocab"], [], "model.vocab"),
    (["model", "vocab"], {"a": "1"}, "model.vocab"),
    (["model", "vocab"], {"a": 2 ** 40}, "model.vocab"),
    (["model"], 7, "model"),
    (["model", "type"], ["BPE"], "model.type"),
    (["model", "dropout"], "x", "model.dropout"),
    (["model", "ignore_merges"], 1, "model.ignore_merges"),
    (["model", "unk_token"], 3, "model.unk_token"),
    (["model", "surprise"], 1, "model.surprise"),
    (["added_tokens"], 5, "added_tokens"),
    (["added_tokens"], [5], "added_tokens[0]"),
    (["added_tokens"], [{"id": "1", "content": "x"}], "added_tokens[0].id"),
    (["added_tokens"], [{"id": 1, "content": None}], "added_tokens[0].content"),
    (["added_tokens"], [{"id": 1, "content": "<\ud800>"}], "added_tokens[0]"),
    (["added_tokens"], [{"id": 1, "content": "x", "lstrip": "yes"}], "added_tokens[0].lstrip"),
    (["pre_tokenizer"], 3, "pre_tokenizer"),
    (["pre_tokenizer"], None, "pre_tokenizer"),
    (["pre_tokenizer", "pretokenizers"], 3, "pre_tokenizer.pretokenizers"),
    (["pre_tokenizer", "pretokenizers"], [3, 4], "pre_tokenizer.pretokenizers"),
    (["pre_tokenizer", "pretokenizers", 0, "pattern"], {"Regex": 5}, "pattern"),
    (["pre_tokenizer", "pretokenizers", 0, "pattern"], "x", "pattern"),
    (["pre_tokenizer", "pretokenizers", 0, "pattern"], {"String": ""}, "pattern"),
    (["pre_tokenizer", "pretokenizers", 0, "behavior"], 1, "Isolated"),
    (["pre_tokenizer", "pretokenizers", 1, "use_regex"], "no", "use_regex"),
    (["post_processor"], [], "post_processor"),
    (["decoder"], 7, "decoder"),
    (["truncation"], {"max_length": 5}, "truncation"),
    (["padding"], 0, "padding"),
    (["surprise"], 1, "surprise"),
]


@pytest.mark.parametrize("where, value, field", SHAPES, ids=[f"{'.'.join(map(str, w))}={v!r}"[:40]
                                                           for w, v, _ in SHAPES])
def test_wrong_json_shapes(mod, tmp_path, where, value, field):
    tok = trained(mod, "gpt2")
    path, _ = exported(tok, tmp_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        mod.Tokenizer.from_huggingface(path)
    assert field in str(err.value), str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "onig", [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[\s\S]", r"'(?i:[sdmt]|ll|ve|re)|[\s\S]"]
)
def test_import_case_insensitive_contractions(mod, onig):
    """The case-insensitive groups tokenizer.json files hold (Llama 3's, cl100k's) split
    every code point after an apostrophe, and every letter that folds to an ASCII letter in
    pairs, as tokenizers splits them."""
    tok = trained(mod, "gpt2")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path, _ = exported(tok, Path(d))
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = onig
        path.write_text(json.dumps(doc), encoding="utf-8")
        back = mod.Tokenizer.from_huggingface(path)
    text = every_code_point()
    folding = [
        c
        for c in text
        if any(x.isascii() and x.isalpha() for x in c.casefold() + c.upper() + c.lower())
    ]
    singles = "".join("'" + c for c in text)
    pairs = "".join(f"'{a}{b} " for a in folding for b in folding)
    for big in (singles, pairs):
        for start in range(0, len(big), 300_000):
            chunk = big[start:start + 300_000]
            assert regex_pieces(back.pattern, chunk) == hf_pieces(onig, chunk), start
