"""Character classes follow the reference of each route, on both backends, whatever `regex`
is installed: tiktoken's tables for the named patterns, get_encoding, Encoding(...) and every
pattern given to the library; Oniguruma's (what tokenizers runs) for a tokenizer.json's Split
regexes.  The oracles are tiktoken and tokenizers themselves."""

import base64
import functools
import gzip
import json
import os
import subprocess
import sys

import pytest

from helpers import GPT2_VOCAB

tiktoken = pytest.importorskip("tiktoken")
import tiktoken_ext.openai_public as openai_public  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
PATTERN_OF = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}

# Code points where an installed `regex` of a later Unicode version than the references'
# gave other pre-tokens: letters, digits and marks assigned since.
DIVERGENT = [0x11DE0, 0x11DE9, 0x1AD5, 0x1ADD, 0x10EC2, 0x16EA0, 0x1E5D0, 0x1CCF0, 0x0897]
CONTEXTS = ("{}", "{}123", "a{}", " {}x", "'{}", "x{}{}")


def texts_of(code_points, contexts=CONTEXTS):
    return [ctx.format(chr(c), chr(c)) for c in code_points for ctx in contexts]


def differing_code_points(code_points, ours, reference, contexts=("{}", "{}123", "a{}", " {}x"),
                          block=4096):
    """The code points whose texts (each in every context) `ours` and `reference` (text ->
    ids) encode otherwise.  The texts of a block of code points are joined by line feeds and
    encoded in one call each (a line feed after each text is one context more); only a block
    that differs is looked at text by text."""
    differ = []
    for i in range(0, len(code_points), block):
        chunk = code_points[i:i + block]
        texts = texts_of(chunk, contexts)
        joined = "\n".join(texts)
        if ours(joined) == reference(joined):
            continue
        bad = {chunk[k // len(contexts)] for k, text in enumerate(texts)
               if ours(text) != reference(text)}
        differ += sorted(bad) or chunk[:1]  # (only together: name the block)
    return differ


def all_code_points():
    return [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


@functools.cache
def pat_str(name):
    """tiktoken's pattern for `name` (its constructor run without its rank file)."""
    saved = openai_public.load_tiktoken_bpe, openai_public.data_gym_to_mergeable_bpe_ranks
    openai_public.load_tiktoken_bpe = openai_public.data_gym_to_mergeable_bpe_ranks = (
        lambda *args, **kwargs: {})
    try:
        return getattr(openai_public, PATTERN_OF[name])()["pat_str"]
    finally:
        openai_public.load_tiktoken_bpe, openai_public.data_gym_to_mergeable_bpe_ranks = saved


@functools.cache
def official_ranks(name):
    if name == "gpt2":
        from helpers import gpt2_ranks
        return gpt2_ranks()
    text = gzip.decompress(open(os.path.join(DATA, f"{name}.tiktoken.gz"), "rb").read())
    return {base64.b64decode(t): int(r) for t, r in (line.split() for line in text.splitlines())}


@functools.cache
def reference(name):
    """tiktoken's Encoding for `name`, built offline from tests/data."""
    return tiktoken.Encoding(name, pat_str=pat_str(name), mergeable_ranks=official_ranks(name),
                             special_tokens={})


def pair_ranks(texts):
    """Every byte, and every pair of the bytes of `texts`: ids show where a pre-token ends."""
    ranks = {bytes([b]): b for b in range(256)}
    used = sorted(set("".join(texts).encode("utf-8")))
    for a in used:
        for b in used:
            ranks[bytes([a, b])] = len(ranks)
    return ranks


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_recent_code_points_split_as_tiktoken(mod, name):
    """Encoding(...) with a pattern of tiktoken's and a rank table of every byte pair: the
    characters of recent Unicode versions split as tiktoken splits them."""
    pat = pat_str(name if name == "gpt2" else name + "_base")
    texts = texts_of(DIVERGENT + [ord(c) for c in "aZ9 \u00e9\u0301\u4e00\U0001F642"])
    ranks = pair_ranks(texts)
    ours = mod.Encoding(f"pairs-{name}", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    ref = tiktoken.Encoding(f"pairs-{name}", pat_str=pat, mergeable_ranks=ranks,
                            special_tokens={})
    assert ours.encode_ordinary_batch(texts) == ref.encode_ordinary_batch(texts)
    text = "".join(texts)
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


@pytest.mark.parametrize("pattern", [r"(?i:x?\p{Lu})", r"(?i:'s|\p{Lu}+)", r"(?i:\p{Ll}+|k)",
                                     r"(?i:[a-z]+|\s)", r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"])
def test_case_insensitive_classes_match_as_tiktoken(mod, pattern):
    """Case-insensitive classes and letters next to characters whose case folding is several
    characters (ﬁ, ŉ, ǰ, ΐ, ß): both backends give tiktoken's ids (every character matched:
    tiktoken drops the text between matches)."""
    pattern += r"|[\s\S]"
    texts = ["\ufb01", "x\ufb01", "X\u0149n", "\u01f0J", "\u0390\u0399", "'\u017f \u00df",
             "\u212aK k", "'S'T'\ufb05", "FI fi \ufb01x\ufb01"]
    ranks = pair_ranks(texts)
    ours = mod.Encoding("icase", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    ref = tiktoken.Encoding("icase", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    for text in texts:
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text), text
        assert mod.Core.pretokenize(pattern, text) == bpe_pieces(mod, pattern, text), text


def bpe_pieces(mod, pattern, text):
    """The other backend's pre-tokens of `text` (the backends agree)."""
    import bpe_fallback

    other = bpe_fallback if mod.__name__ == "bpe" else __import__("bpe")
    return other.Core.pretokenize(pattern, text)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_every_code_point_ids_equal_tiktoken(mod, name):
    """Every code point outside the surrogates, in a few short contexts: get_encoding's ids
    equal tiktoken's."""
    path = GPT2_VOCAB if name == "gpt2" else os.path.join(DATA, f"{name}.tiktoken.gz")
    ours = mod.get_encoding(name, path=str(path))
    ref = reference(name)
    differ = differing_code_points(
        all_code_points(), lambda text: ours.encode_ordinary(text),
        lambda text: ref.encode_ordinary(text))
    assert not differ, f"{len(differ)} code points differ: " + " ".join(
        f"U+{c:04X}" for c in differ[:20])


@pytest.mark.slow
def test_shipped_tables_equal_the_references():
    """Probe tiktoken and tokenizers again over every code point: the tables shipped in
    bpe_fallback are theirs (fails when a reference's tables move)."""
    run = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "unicode_tables.py"),
                          "--check"], capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]


ONIG_CLASSES = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}",
                r"\p{Mn}", r"\p{N}", r"\p{Nd}", r"\p{No}", r"\p{P}", r"\p{S}", r"\p{Z}", r"\s",
                r"\d", r"\p{Han}", r"\p{Latin}", r"\p{Greek}", r"\p{Cf}",
                r"[^\s\p{L}\p{N}]", r"\P{L}", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"]


@pytest.mark.slow
@pytest.mark.parametrize("cls", ONIG_CLASSES)
def test_tokenizer_json_classes_split_as_tokenizers(mod, tmp_path, cls):
    """A tokenizer.json Split over a class: every code point splits as tokenizers splits it."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(bytes_to_unicode_chars()))}
    hf = tokenizers.Tokenizer(models.BPE(vocab, []))
    split = pre_tokenizers.Split(Regex(cls + "+"), "isolated")
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    text = "".join(map(chr, all_code_points()))
    want = [piece for piece, _ in split.pre_tokenize_str(text)]
    got = mod.Core.pretokenize(tok.pattern, text)
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("individual", [False, True])
def test_tokenizer_json_digits_split_as_tokenizers(mod, tmp_path, individual):
    """A tokenizer.json Digits pre-tokenizer (Rust's is_numeric, not Oniguruma's \\p{N}):
    every code point splits as tokenizers splits it."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(bytes_to_unicode_chars()))}
    hf = tokenizers.Tokenizer(models.BPE(vocab, []))
    digits = pre_tokenizers.Digits(individual_digits=individual)
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [digits, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    text = "".join("a" + chr(c) for c in all_code_points())
    want = [piece for piece, _ in digits.pre_tokenize_str(text)]
    assert mod.Core.pretokenize(tok.pattern, text) == want


def test_tokenizer_json_digits_of_recent_unicode(mod, tmp_path):
    """U+11DE0 is numeric to Rust (tokenizers' Digits) though not to Oniguruma: a merge across
    it shows the split (a case the differential fuzzer found)."""
    pytest.importorskip("tokenizers")
    from helpers import bytes_to_unicode

    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)} | {b2u[97] + b2u[0xF0]: 256}
    doc = {"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Digits", "individual_digits": False},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                "use_regex": False}]},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                       "use_regex": False},
           "model": {"type": "BPE", "vocab": vocab, "merges": [[b2u[97], b2u[0xF0]]],
                     "ignore_merges": False}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))
    from tokenizers import Tokenizer as HF

    text = "a\U00011de0 a\u00f0"
    want = HF.from_file(str(path)).encode(text).ids
    assert mod.Tokenizer.from_huggingface(path).encode(text) == want
    assert want[:2] == [97, 240]


def bytes_to_unicode_chars():
    from helpers import bytes_to_unicode

    return bytes_to_unicode().values()


QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def quicktok_ranks(name):
    """A rank table of quicktok's data (u32 count, then u16 length, bytes, u32 rank)."""
    quicktok = pytest.importorskip("quicktok")
    import struct

    with open(os.path.join(os.path.dirname(quicktok.__file__), "data", f"{name}.vocab"),
              "rb") as f:
        data = f.read()
    (count,), pos, ranks = struct.unpack_from("<I", data), 4, {}
    for _ in range(count):
        (size,) = struct.unpack_from("<H", data, pos)
        (rank,) = struct.unpack_from("<I", data, pos + 2 + size)
        ranks[data[pos + 2:pos + 2 + size]] = rank
        pos += 6 + size
    return ranks


def merges_of(ranks):
    """The merges that make each token of a rank table, in rank order (each token is the
    byte-pair encoding of its bytes with the tokens ranked below it)."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            best = min(range(len(parts) - 1),
                       key=lambda i: min(ranks.get(parts[i] + parts[i + 1], rank), rank))
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        merges.append((parts[0], parts[1]))
    return merges


@functools.cache
def qwen3_tokenizer_json(tmpdir, normalizer="NFC"):
    """Qwen 3's hub tokenizer.json (its rank table, Split regex, NFC and ByteLevel), or that
    file with another normalizer."""
    from helpers import bytes_to_unicode

    ranks = quicktok_ranks("qwen3")
    chars = bytes_to_unicode()

    def word(b):
        return "".join(chars[x] for x in b)

    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": normalizer},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
             "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False,
                  "vocab": {word(t): r for t, r in ranks.items()},
                  "merges": [[word(a), word(b)] for a, b in merges_of(ranks)]},
    }
    path = os.path.join(tmpdir, f"qwen3-{normalizer}-tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    return path


def qwen3_differ(mod, tmpdir, code_points, contexts=("{}", "{}123", "a{}", " {}x"),
                 normalizer="NFC"):
    tokenizers = pytest.importorskip("tokenizers")
    path = qwen3_tokenizer_json(tmpdir, normalizer)
    ours = mod.Tokenizer.from_huggingface(path)
    ref = tokenizers.Tokenizer.from_file(path)
    differ = differing_code_points(
        code_points, ours.encode, lambda text: ref.encode(text, add_special_tokens=False).ids,
        contexts)
    return differ


@pytest.mark.slow
def test_qwen3_tokenizer_json_recent_code_points(mod, tmp_path_factory):
    """Qwen 3's tokenizer.json on the code points where regex's tables and the references'
    differ: tokenizers' ids."""
    tmpdir = str(tmp_path_factory.getbasetemp())
    assert qwen3_differ(mod, tmpdir, DIVERGENT + [0xE9, 0x4E00, 0x1F642]) == []


@pytest.mark.slow
@pytest.mark.parametrize("normalizer", ["NFC", "NFKC"])
def test_qwen3_tokenizer_json_every_code_point(mod, tmp_path_factory, normalizer):
    """Every code point outside the surrogates, in a few short contexts: Qwen 3's hub
    tokenizer.json (NFC), and that file with NFKC, give tokenizers' ids."""
    tmpdir = str(tmp_path_factory.getbasetemp())
    differ = qwen3_differ(mod, tmpdir, all_code_points(), normalizer=normalizer)
    assert not differ, f"{len(differ)} code points differ: " + " ".join(
        f"U+{c:04X}" for c in differ[:20])


def test_tokenizer_json_class_spelled_where_oniguruma_differs(mod, tmp_path, monkeypatch):
    """A Split regex's class whose code points by Oniguruma's tables differ from tiktoken's is
    read as Oniguruma's code points (here a table that says only A-Z are \\p{Lu})."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, models, pre_tokenizers

    import bpe_fallback

    cache = {k: v for k, v in bpe_fallback._UNICODE_CACHE.items() if k[0] != "atom"}
    cache[("onig", "Lu")] = [(0x41, 0x5A)]
    monkeypatch.setattr(bpe_fallback, "_UNICODE_CACHE", cache)
    vocab = {c: i for i, c in enumerate(sorted(bytes_to_unicode_chars()))}
    hf = tokenizers.Tokenizer(models.BPE(vocab, []))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r"\p{Lu}+"), "isolated"),
         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    assert tok.pattern == r"[\U00000041-\U0000005a]+"
    assert mod.Core.pretokenize(tok.pattern, "ABÀÉ") == ["AB", "ÀÉ"]
