"""The shapes of the byte-level vocabularies open models ship, built from the shipped tables
and checked against tiktoken and tokenizers, on both backends:

- a rank table with tokens that no merge of two lower-ranked tokens makes (Llama 3's shape:
  cl100k plus appended tokens), some of which tiktoken rejoins from higher-ranked pieces;
- its tokenizer.json as transformers' converter writes it (every split of every token as a
  merge, `ignore_merges`);
- tokenizer.json pre-tokenizers and normalizers of Qwen (NFC), DeepSeek V3 (a Sequence of
  Splits), StarCoder2 (Digits, then a ByteLevel with its regex).

The real tables (Llama 3, Qwen 3) are read from quicktok's package data where it is installed.
"""

import base64
import gzip
import json
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import DATA, LLAMA3, QWEN, bytes_to_unicode, read_data

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")

DEEPSEEK_V3 = [r"\p{N}{1,3}", "[一-龥\u3040-ゟ゠-ヿ]+",
               r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
               r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]

# Words whose cl100k pieces are three or more (as Llama 3's Vietnamese and punctuation runs)
APPENDED = [" nghiệp", " thời", " việc", " hợp", " nhiều", " điều", ".:.:", ".:.:.:.:", "=-=-=",
            " ĉiuj", "ẞẞẞ", " ǅǆǅ", "!?!?!?"]

TEXTS = [
    "Cafe\u0301 vs Café, 한국어 \u1100\u1161\u11a8, ﬁne ① ² 12345 ab12cd 1234567",
    "東京タワー 2024年 ＡＢＣ！ 〜 “quotes” ‘x’ — em dash\r\n\r\n  tabs\t\tend  ",
    "def f(x):\n    return x**2  # 99 bottles\n\n\n",
    "it's THEY'RE we've I'M you'll he'd .:.:.:.: =-=-=- ẞẞẞẞ",
]


def naive_split(t, ranks, limit, whole=None):
    """tiktoken's merging of t's bytes, one pair at a time, lowest rank first (leftmost of
    equals), with the tokens ranked below `limit`, never into `whole`; down to two pieces."""
    parts = [t[i:i + 1] for i in range(len(t))]
    while len(parts) > 2:
        best = None
        for i in range(len(parts) - 1):
            join = parts[i] + parts[i + 1]
            r = ranks.get(join)
            if r is not None and r < limit and join != whole and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def kind(t, ranks):
    """'merge', 'late' (rejoined from a higher-ranked piece) or 'whole' (no merge makes it)."""
    if len(naive_split(t, ranks, ranks[t])) <= 2:
        return "merge"
    return "late" if len(naive_split(t, ranks, 2**31, whole=t)) == 2 else "whole"


def cl100k_ranks():
    ranks = {}
    for line in gzip.decompress((DATA / "cl100k_base.tiktoken.gz").read_bytes()).splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def appended_ranks():
    """cl100k, then APPENDED, each followed by the join of its first two lower-ranked pieces
    (a higher-ranked token through which tiktoken may rejoin it)."""
    ranks = cl100k_ranks()
    for word in APPENDED:
        t = word.encode()
        if t in ranks:
            continue
        ranks[t] = len(ranks)
        pieces = naive_split(t, ranks, ranks[t])
        if len(pieces) > 2 and pieces[0] + pieces[1] not in ranks:
            ranks[pieces[0] + pieces[1]] = len(ranks)
    return ranks


_CACHE = {}
bytes_to_char = bytes_to_unicode()


def cached(key, make):
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


@pytest.fixture(scope="module")
def table():
    """(ranks, tiktoken's Encoding, texts): the appended table and texts holding each irregular
    token alone, at the start, in the middle and repeated, in pre-tokens of several sizes."""
    ranks = cached("ranks", appended_ranks)
    enc = tiktoken.Encoding("appended", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    irregular = [t.decode() for t in ranks if t.decode(errors="ignore").encode() == t
                 and ranks[t] >= 100256 and kind(t, ranks) != "merge"]
    texts = [v for s in irregular for v in (s, s + "s", "a" + s, " " + s + "ing", s * 3, s * 40)]
    return ranks, enc, texts + TEXTS + [read_data("corpus.en", 30000)]


def test_the_appended_table_has_both_kinds(table):
    ranks = table[0]
    kinds = {kind(w.encode(), ranks) for w in APPENDED}
    assert {"late", "whole"} <= kinds  # else the table would test nothing new


def test_rank_table_with_irregular_tokens_equals_tiktoken(mod, table):
    ranks, enc, texts = table
    tok = mod.Encoding("appended", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text[:40]
    assert tok.encode_batch(texts[:50]) == enc.encode_ordinary_batch(texts[:50])
    for t, i in ranks.items():
        if i >= 100256:
            assert tok.decode_single_token_bytes(i) == t


@pytest.mark.parametrize("repeat", [1, 5, 20])
def test_a_character_a_cheaper_token_joins_is_merged_from_its_bytes(mod, repeat):
    # "éa" ranks below "é": tiktoken makes "ab" before "é" is whole, so "éa" never forms.
    # Starting the merge from "é" as one symbol would make "éa" first.
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({"éa".encode(): 256, b"ab": 257, "é".encode(): 258})
    enc = tiktoken.Encoding("t", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    tok = mod.Encoding("t", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    text = "éab" * repeat   # one pre-token of 4, 20 and 80 bytes
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text) == [258, 257] * repeat


@st.composite
def any_rank_table(draw):
    """A rank table tiktoken accepts: the 256 bytes, then é, 中, 😀, some of their bytes
    (a token may hold part of a character) and joins of tokens over these, a, b and space,
    ranked in any order (a token may rank below its parts)."""
    chars = [c.encode() for c in "é中😀"]
    parts = draw(st.lists(st.sampled_from([c[:k] for c in chars for k in range(2, len(c))]
                                          + [c[k:] for c in chars for k in range(1, len(c) - 1)]),
                          max_size=3, unique=True))
    tokens = [b"a", b"b", b" ", *chars, *parts]
    for _ in range(draw(st.integers(1, 30))):
        a, b = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
        if a + b not in tokens and len(a + b) <= 8:
            tokens.append(a + b)
    order = draw(st.permutations(tokens[3:]))
    return {bytes([b]): b for b in range(256)} | {t: 256 + k for k, t in enumerate(order)}


@settings(max_examples=200, deadline=None)
@given(ranks=any_rank_table(), texts=st.lists(st.text("abé中😀 ", max_size=120), min_size=1,
                                               max_size=4))
def test_any_rank_table_equals_tiktoken(mod, ranks, texts, tmp_path_factory):
    enc = tiktoken.Encoding("t", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    tok = mod.Encoding("t", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text
    # and every format that holds such a table gives the same ids
    where = tmp_path_factory.mktemp("ranks")
    tok.save(where / "t.bpe")
    tok.save_tiktoken(where / "t.tiktoken")
    tok.save_huggingface(where / "t.json")
    hf = tokenizers.Tokenizer.from_file(str(where / "t.json"))
    again = [mod.Tokenizer.load(where / "t.bpe"), mod.Tokenizer.from_huggingface(where / "t.json"),
             mod.Tokenizer.from_tiktoken(where / "t.tiktoken", pattern=LLAMA3)]
    for text in texts:
        want = enc.encode_ordinary(text)
        assert hf.encode(text, add_special_tokens=False).ids == want, text
        assert [t.encode_ordinary(text) for t in again] == [want] * 3, text


def test_irregular_table_round_trips_through_every_format_that_holds_it(mod, table, tmp_path):
    ranks, enc, texts = table
    tok = mod.Encoding("appended", pat_str=LLAMA3, mergeable_ranks=ranks,
                       special_tokens={"<|eot|>": len(ranks)})
    tok.save(tmp_path / "t.bpe")
    assert mod.Tokenizer.load(tmp_path / "t.bpe") == tok
    tok.save_tiktoken(tmp_path / "t.tiktoken")
    back = mod.Tokenizer.from_file(tmp_path / "t.tiktoken")  # with its sidecar
    assert back == tok
    from tiktoken.load import load_tiktoken_bpe

    theirs = tiktoken.Encoding("x", pat_str=LLAMA3, special_tokens={},
                               mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "t.tiktoken")))
    tok.save_huggingface(tmp_path / "t.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    assert mod.Tokenizer.from_huggingface(tmp_path / "t.json") == tok
    for text in texts[::7]:
        want = enc.encode_ordinary(text)
        assert theirs.encode_ordinary(text) == want
        assert hf.encode(text, add_special_tokens=False).ids == want
    with pytest.raises(ValueError, match="merge"):
        tok.save_gpt2(tmp_path / "gpt2")  # merges.txt cannot say "only as a whole pre-token"


def test_irregular_native_file_is_read_by_the_c_reader(table, tmp_path):
    """The native file of a table with appended tokens (plain tokens with ids above the
    merges'; merges joining a token a later merge makes) is the compiled reader's plain
    case (Llama 3 reloads at tiktoken's speed), and gives the reference reader's model."""
    bpe = pytest.importorskip("bpe")
    if bpe.BACKEND != "cython":
        pytest.skip("the C reader is the compiled core's")
    ranks, enc, texts = table
    tok = bpe.Encoding("appended", pat_str=LLAMA3, mergeable_ranks=ranks, special_tokens={})
    tok.save(tmp_path / "t.bpe")
    text = (tmp_path / "t.bpe").read_text()
    start = text.find("\n", text.find("\n") + 1) + 1
    assert bpe.Core.native_model(text, start) is not None

    class NoReader(bpe.Core):
        native_model = staticmethod(lambda *source: None)

    class Reference(bpe.Tokenizer):
        core_class = NoReader

    fast, slow = bpe.Tokenizer.load(tmp_path / "t.bpe"), Reference.load(tmp_path / "t.bpe")
    assert fast == slow == tok
    assert fast.merges == slow.merges
    for text in texts[::5]:
        assert fast.encode_ordinary(text) == enc.encode_ordinary(text), text[:40]


@pytest.fixture(scope="module")
def converted(table, tmp_path_factory):
    """The appended table as transformers' TikTokenConverter writes its tokenizer.json."""
    convert = pytest.importorskip("transformers.convert_slow_tokenizer")
    ranks = table[0]
    path = tmp_path_factory.mktemp("hub") / "appended.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()))
    out = path.with_suffix(".json")
    convert.TikTokenConverter(vocab_file=str(path), pattern=LLAMA3).converted().save(str(out))
    return out


def test_hub_json_with_every_split_as_a_merge(mod, table, converted):
    ranks, enc, texts = table
    doc = json.loads(converted.read_text())
    assert doc["model"]["ignore_merges"] and len(doc["model"]["merges"]) > len(ranks)
    hf = tokenizers.Tokenizer.from_file(str(converted))
    tok = mod.Tokenizer.from_huggingface(converted)
    for text in texts:
        want = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode_ordinary(text) == want == enc.encode_ordinary(text), text[:40]
    tok.save(converted.with_suffix(".bpe"))
    again = mod.Tokenizer.load(converted.with_suffix(".bpe"))
    assert again == tok and again.encode_ordinary(texts[-1]) == tok.encode_ordinary(texts[-1])
    with pytest.raises(ValueError):
        tok.save_tiktoken(converted.with_suffix(".tiktoken"))  # ranks cannot order several merges


@st.composite
def irregular_json(draw):
    """A tokenizer.json whose merges are pairs of tokens in any order: several may make one
    token, and a merge may join a token that only a later merge makes.  Its bytes: a, b, c,
    space and the two of é (so that tokens may hold part of a character)."""
    tokens = ["a", "b", "c", "Ġ", "Ã", "©"]
    merges = []
    for _ in range(draw(st.integers(1, 40))):
        a, b = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
        if [a, b] not in merges and len(a + b) <= 8:
            merges.append([a, b])
            if a + b not in tokens:
                tokens.append(a + b)
    merges = draw(st.permutations(merges))
    order = draw(st.permutations(tokens[6:]))
    vocab = {bytes_to_char[i]: i for i in range(256)} | {t: 256 + k for k, t in enumerate(order)}
    return {"version": "1.0", "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                split(r"\S+\s?|\s+"), byte_level(False)]},
            "decoder": byte_level(False),
            "model": {"type": "BPE", "ignore_merges": True, "vocab": vocab,
                      "merges": [list(m) for m in merges]}}


@pytest.mark.slow
@settings(max_examples=150)
@given(doc=irregular_json(),
       texts=st.lists(st.text("abcé ", max_size=300), min_size=1, max_size=4))
def test_random_irregular_merges_equal_tokenizers(mod, doc, texts, tmp_path_factory):
    path = tmp_path_factory.mktemp("irregular") / "t.json"
    path.write_text(json.dumps(doc, ensure_ascii=False))
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    for text in texts:
        assert tok.encode_ordinary(text) == hf.encode(text).ids, text


# ---------------------------------------------------------------------------------------
# tokenizer.json pre-tokenizers and normalizers


def split(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
            "invert": False}


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
            "use_regex": use_regex}


NFC = {"type": "NFC"}
SHAPES = {
    "qwen-nfc": (NFC, {"type": "Sequence", "pretokenizers": [split(QWEN), byte_level(False)]}),
    "deepseek-v3": (None, {"type": "Sequence",
                           "pretokenizers": [split(p) for p in DEEPSEEK_V3] + [byte_level(False)]}),
    "starcoder2": (None, {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, byte_level(True)]}),
    "digits-grouped-nfkc": ({"type": "Sequence",
                             "normalizers": [{"type": "NFD"}, {"type": "NFKC"}]},
                            {"type": "Sequence", "pretokenizers": [
                                {"type": "Digits", "individual_digits": False},
                                {"type": "Sequence", "pretokenizers": [split(LLAMA3)]},
                                byte_level(False)]}),
}


@pytest.fixture(scope="module")
def base_json(tmp_path_factory):
    """A tokenizer.json of a small trained tokenizer (bpe_fallback), to rewrite."""
    import bpe_fallback

    tok = bpe_fallback.Tokenizer.train(read_data("corpus.en") + read_data("german.txt"), 1200,
                                       special_tokens=["<|endoftext|>"])
    path = tmp_path_factory.mktemp("shapes") / "base.json"
    tok.save_huggingface(path)
    return json.loads(path.read_text())


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hub_pre_tokenizers_and_normalizers_equal_tokenizers(mod, base_json, shape, tmp_path):
    doc = dict(base_json)
    doc["normalizer"], doc["pre_tokenizer"] = SHAPES[shape]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, ensure_ascii=False))
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    texts = TEXTS + [read_data("german.txt", 20000), "x<|endoftext|>Cafe\u0301<|endoftext|>"]
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf.encode(text).ids, text[:40]
    tok.save_huggingface(tmp_path / "again.json")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    assert all(again.encode(t).ids == hf.encode(t).ids for t in texts)
    tok.save(tmp_path / "t.bpe")
    assert mod.Tokenizer.load(tmp_path / "t.bpe") == tok
    with pytest.raises(ValueError, match="tiktoken"):
        tok.save_tiktoken(tmp_path / "t.tiktoken")


def test_normalizers_then_one_split_scan_natively(mod, base_json, tmp_path):
    """Qwen's shape (NFC, then one Split that a native scanner runs): the text is
    normalized, then scanned natively, with tokenizers' ids from encode, encode_batch and
    encode_to_numpy; a disallowed special is looked for in the text as given (NFC would
    turn its ">" and a combining U+0338 into one character)."""
    import unicodedata

    doc = dict(base_json)
    doc["normalizer"], doc["pre_tokenizer"] = SHAPES["qwen-nfc"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, ensure_ascii=False))
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    assert tok.pretokenizer == ("native" if mod.BACKEND == "cython" else "regex")
    german = read_data("german.txt", 20000)
    texts = [unicodedata.normalize("NFD", german), "Cafe\u0301 \U0001F600 e\u0301\u0301 12"]
    for text in texts:
        want = hf.encode(text).ids
        assert tok.encode(text) == want
        assert tok.encode_to_numpy(text).tolist() == want
    assert tok.encode_batch(texts) == [hf.encode(t).ids for t in texts]
    for call in (tok.encode, tok.encode_to_numpy, lambda t: tok.encode_batch(["ok", t])):
        with pytest.raises(ValueError, match="endoftext"):
            call("<|endoftext|>\u0338")


@pytest.mark.parametrize("field,value,says", [
    ("normalizer", {"type": "Lowercase"}, "normalizer"),
    ("normalizer", {"type": "Sequence", "normalizers": [NFC, {"type": "Strip"}]},
     r"normalizer\.normalizers\[1\]"),
    ("pre_tokenizer", {"type": "Sequence", "pretokenizers": [byte_level(False), split("a")]},
     "end with a ByteLevel"),
    ("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
                                                              byte_level(False)]},
     r"pretokenizers\[0\]"),
])
def test_hub_fields_this_library_cannot_reproduce_are_named(mod, base_json, tmp_path, field,
                                                            value, says):
    doc = dict(base_json)
    doc[field] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=says):
        mod.Tokenizer.from_huggingface(path)


def test_normalized_added_tokens_under_a_normalizer_are_refused(mod, base_json, tmp_path):
    doc = dict(base_json)
    doc["normalizer"] = NFC
    doc["added_tokens"] = [dict(doc["added_tokens"][0], normalized=True)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"added_tokens\[0\]"):
        mod.Tokenizer.from_huggingface(path)


# ---------------------------------------------------------------------------------------
# The real tables, where quicktok (a bench extra) carries them


def quicktok_ranks(name):
    quicktok = pytest.importorskip("quicktok")
    data = (os.path.join(os.path.dirname(quicktok.__file__), "data", name + ".vocab"))
    if not os.path.exists(data):
        pytest.skip(f"quicktok has no {name} table")
    blob = open(data, "rb").read()
    (n,), at, ranks = struct.unpack_from("<I", blob), 4, {}
    for _ in range(n):
        (size,) = struct.unpack_from("<H", blob, at)
        token = blob[at + 2:at + 2 + size]
        (ranks[token],) = struct.unpack_from("<I", blob, at + 2 + size)
        at += 6 + size
    return ranks


@pytest.mark.slow
@pytest.mark.parametrize("name,pattern", [("llama3", LLAMA3), ("qwen3", QWEN)])
def test_real_tables_equal_tiktoken(mod, name, pattern):
    ranks = cached(name, lambda: quicktok_ranks(name))
    enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    tok = mod.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    irregular = [t for t in ranks if len(t) > 1 and kind(t, ranks) != "merge"]
    if name == "llama3":
        assert len(irregular) == 678
    texts = [v for t in irregular for s in [t.decode(errors="replace")]
             for v in (s, s + "s", " " + s + "ing", s * 3)]
    texts += TEXTS + [read_data(f) for f in ("corpus.en", "german.txt", "address.txt")]
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text[:40]
