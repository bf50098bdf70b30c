"""Character classes follow the reference of each route, on both backends, whatever `regex`
is installed: tiktoken's tables for the named patterns, get_encoding, Encoding(...) and every
pattern given to the library; Oniguruma's (what tokenizers runs) for a tokenizer.json's Split
regexes.  The oracles are tiktoken and tokenizers themselves."""

import base64
import functools
import gzip
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


@functools.cache
def pair_ranks():
    """Every byte and every pair of bytes: ids show where a pre-token ends."""
    ranks = {bytes([b]): b for b in range(256)}
    for a in range(256):
        for b in range(256):
            ranks[bytes([a, b])] = len(ranks)
    return ranks


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_recent_code_points_split_as_tiktoken(mod, name):
    """Encoding(...) with a pattern of tiktoken's and a rank table of every byte pair: the
    characters of recent Unicode versions split as tiktoken splits them."""
    pat = pat_str(name)
    ranks = pair_ranks()
    ours = mod.Encoding(f"pairs-{name}", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
    ref = tiktoken.Encoding(f"pairs-{name}", pat_str=pat, mergeable_ranks=ranks,
                            special_tokens={})
    texts = texts_of(DIVERGENT + [ord(c) for c in "aZ9 \u00e9\u0301\u4e00\U0001F642"])
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
    ranks = pair_ranks()
    ours = mod.Encoding("icase", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    ref = tiktoken.Encoding("icase", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    texts = ["\ufb01", "x\ufb01", "X\u0149n", "\u01f0J", "\u0390\u0399", "'\u017f \u00df",
             "\u212aK k", "'S'T'\ufb05", "FI fi \ufb01x\ufb01"]
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
    codes = all_code_points()
    differ = []
    contexts = ("{}", "{}123", "a{}", " {}x")
    for i in range(0, len(codes), 1 << 15):
        chunk = codes[i:i + (1 << 15)]
        texts = texts_of(chunk, contexts)
        got = ours.encode_ordinary_batch(texts)
        want = ref.encode_ordinary_batch(texts)
        if got != want:
            differ += sorted({chunk[k // len(contexts)] for k, (a, b) in enumerate(zip(got, want))
                              if a != b})
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


def bytes_to_unicode_chars():
    from helpers import bytes_to_unicode

    return bytes_to_unicode().values()
