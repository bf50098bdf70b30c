"""Pattern names: a closed, documented set, resolved by the API only.

The names (gpt2, cl100k, o200k, words, bytes, and the open models' llama3, qwen2, nanochat,
deepseek_v3) give the pre-tokens of their reference: tiktoken built with the model's published
pattern string, or tokenizers running the model's Split regexes.  A bare identifier that is no
name is a ValueError listing them; any other string is a regex.  No file reader (tokenizer.json,
the native format, the .tiktoken sidecar, tiktoken's pat_str) reads a pattern string as a name:
a Split whose regex is "gpt2" or "words" gives tokenizers' ids.  The named special-token sets
equal the models' (quicktok's copies of Meta's and Qwen's tables, where installed)."""

import json
import os
import struct
from pathlib import Path

import pytest
from test_huggingface import hf_ids, hf_model, trained

from helpers import GPT2_MERGES, GPT2_VOCAB, LLAMA3, NANOCHAT, PLAIN_TEXTS, QWEN, gpt2_ranks

NAMES = ["gpt2", "cl100k", "o200k", "words", "bytes", "llama3", "qwen2", "nanochat",
         "deepseek_v3"]

# DeepSeek V3's pre_tokenizer, as its tokenizer.json spells the Splits (literal CR and LF
# inside the third one's classes)
DEEPSEEK_V3 = [
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]

TEXTS = dict(
    PLAIN_TEXTS,
    digits="in 2250 or 6819, 1234567 and 99999999; x٣٤٥٦ ①②③ 12\n3456\n\n7890",
    cjk="東京は日本の首都です。ひらがなとカタカナ、漢字123と한국어 mixed",
    code="#include <stdio.h>\nint main() { return x->y[0] + 'a'; }  // done\r\n\r\n  \t",
    contractions="I'M he'S they'RE we'Ve you'LL she'd IT'S don't",
    marks="café naïve ñ e\u0301 \u0915\u093f \U0001f389\U0001f3fd!!",
)


def hf_split_pieces(regexes, text):
    """tokenizers' pre-tokens of `text` by a Sequence of Isolated Splits."""
    from tokenizers import Regex, pre_tokenizers

    seq = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r), behavior="isolated",
                                                        invert=False) for r in regexes])
    return [piece for piece, _ in seq.pre_tokenize_str(text)]


def test_the_names_are_a_closed_documented_set(mod):
    assert list(mod.PATTERNS) == NAMES
    docs = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text()
    for name in NAMES:
        assert f'`"{name}"`' in docs, name
    assert isinstance(mod.resolve_pattern("deepseek_v3"), mod.Pipeline)
    for name in NAMES[:-1]:
        assert isinstance(mod.resolve_pattern(name), str), name


@pytest.mark.parametrize("name,published", [("llama3", LLAMA3), ("nanochat", NANOCHAT)])
def test_tiktoken_models_split_as_tiktoken(mod, name, published):
    """llama3 and nanochat: tiktoken with the model's published pattern string (GPT-2's
    ranks, so that every split shows in the ids) gives our ids under the name."""
    import tiktoken

    ranks = gpt2_ranks()
    ref = tiktoken.Encoding(name, pat_str=published, mergeable_ranks=ranks, special_tokens={})
    tok = mod.Tokenizer.from_tiktoken(ranks, pattern=name)
    for key, text in TEXTS.items():
        assert tok.encode_ordinary(text) == ref.encode_ordinary(text), (name, key)


@pytest.mark.parametrize("name,regexes", [("qwen2", [QWEN]), ("llama3", [LLAMA3]),
                                          ("deepseek_v3", DEEPSEEK_V3)])
def test_hub_models_split_as_tokenizers(mod, name, regexes):
    """qwen2, llama3 and deepseek_v3: tokenizers running the model's Split regexes (a
    Sequence of three for DeepSeek V3) gives our pre-tokens under the name."""
    split = mod.pretokenizer(mod.resolve_pattern(name))
    for key, text in TEXTS.items():
        assert split(text) == hf_split_pieces(regexes, text), (name, key)


def test_deepseek_v3_ids_equal_tokenizers(mod):
    """GPT-2's model behind DeepSeek V3's pre-tokenizer, in tokenizers and here by name."""
    import tokenizers
    from tokenizers import Regex, models, pre_tokenizers

    vocab = json.loads(GPT2_VOCAB.read_text(encoding="utf-8"))
    merges = [tuple(line.split(" ")) for line in GPT2_MERGES.read_text(encoding="utf-8")
              .splitlines() if line and not line.startswith("#version")]
    hf = tokenizers.Tokenizer(models.BPE(vocab, merges))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False) for r in DEEPSEEK_V3]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES, pattern="deepseek_v3")
    for key, text in TEXTS.items():
        assert tok.encode_ordinary(text) == hf_ids(hf, text), key


def test_named_pipeline_among_splits(mod):
    """A named pipeline inside a Pipeline's splits gives its splits."""
    p = mod.resolve_pattern(mod.Pipeline(["NFC"], ["deepseek_v3"]))
    assert p == mod.Pipeline(("NFC",), mod.PATTERNS["deepseek_v3"].splits)


@pytest.mark.parametrize("word", ["llama4", "gtp2", "Qwen2", "cl100k_base", "deepseek", "_x"])
def test_unknown_identifier_is_a_value_error_listing_the_names(mod, word, tmp_path):
    calls = [
        lambda: mod.resolve_pattern(word),
        lambda: mod.Tokenizer.train("some text", 260, pattern=word),
        lambda: mod.Tokenizer.from_merges([], pattern=word),
        lambda: mod.Tokenizer.from_tiktoken({bytes([b]): b for b in range(256)}, pattern=word),
        lambda: mod.count_pretokens(["x"], pattern=word),
        lambda: mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES, pattern=word),
        lambda: mod.resolve_pattern(mod.Pipeline([], [r"\d", word])),
    ]
    for call in calls:
        with pytest.raises(ValueError) as err:
            call()
        assert word in str(err.value) and all(n in str(err.value) for n in NAMES), err.value


@pytest.mark.parametrize("pattern", ["qwen2.5", "(?:llama3)", "gpt2|x", "é", "42"])
def test_other_strings_are_regexes(mod, pattern):
    """What is not a bare identifier is a regex, as regex runs it (the text between matches
    kept as pieces)."""
    import regex

    text = "qwen2.5 llama3 gpt2 x é 42 qwen2_5"
    assert mod.resolve_pattern(pattern) == pattern
    pieces = mod.Tokenizer.from_merges([], pattern=pattern)._findall(text)
    assert "".join(pieces) == text
    assert [m for m in regex.findall(pattern, text) if m] == [
        p for p in pieces if regex.fullmatch(pattern, p)]


# ---- readers never resolve names -------------------------------------------------------

def literal_json(mod, tmp_path, split, normalize=False):
    """A tokenizers Tokenizer whose Split regex is `split` (over a small trained model),
    its file, and what this library reads from it."""
    from tokenizers import normalizers

    hf = hf_model(trained(mod, "gpt2"), split=split)
    if normalize:
        hf.normalizer = normalizers.NFC()
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    return hf, path, mod.Tokenizer.from_huggingface(path)


NAMED_TEXT = ("gpt2 words: my gpt2words, wordsgpt2 and the words of gpt2!\n"
              "Cafe\u0301 gpt2 2024 it's words")


@pytest.mark.parametrize("word", ["gpt2", "words", "llama3", "deepseek_v3", "bytes"])
def test_tokenizer_json_split_is_the_literal_regex(mod, tmp_path, word):
    hf, _, tok = literal_json(mod, tmp_path, word)
    assert tok.pattern == word
    for text in [NAMED_TEXT, *TEXTS.values()]:
        assert tok.encode_ordinary(text) == hf_ids(hf, text)


@pytest.mark.parametrize("word", ["gpt2", "words"])
def test_native_format_keeps_the_literal_regex(mod, tmp_path, word):
    """A literal regex (and one inside a pipeline) round-trips through the native file as
    that regex, with tokenizers' ids."""
    for normalize in (False, True):
        hf, _, tok = literal_json(mod, tmp_path, word, normalize)
        native = tmp_path / "tok.bpe"
        tok.save(native)
        back = mod.Tokenizer.load(native)
        assert back == tok and back.pattern == tok.pattern
        assert back.pattern == (mod.Pipeline(("NFC",), (word,)) if normalize else word)
        assert back.encode_ordinary(NAMED_TEXT) == hf_ids(hf, NAMED_TEXT)


@pytest.mark.parametrize("word", ["gpt2", "words"])
def test_tiktoken_sidecar_keeps_the_literal_regex(mod, tmp_path, word):
    hf, _, tok = literal_json(mod, tmp_path, word)
    path = tmp_path / "tok.tiktoken"
    tok.save_tiktoken(path)
    assert json.loads(Path(str(path) + ".json").read_text())["pattern"] == word
    back = mod.Tokenizer.from_file(path)
    assert back.pattern == word
    assert back.encode_ordinary(NAMED_TEXT) == hf_ids(hf, NAMED_TEXT)


@pytest.mark.parametrize("word", ["gpt2", "words", "llama3"])
def test_encoding_pat_str_is_a_regex(mod, word):
    """tiktoken's pat_str is a regex: Encoding(pat_str="gpt2") is tiktoken's encoding of
    the literal regex, on text its matches cover."""
    import tiktoken

    ranks = gpt2_ranks()
    enc = mod.Encoding("lit", pat_str=word, mergeable_ranks=ranks, special_tokens={})
    ref = tiktoken.Encoding("lit", pat_str=word, mergeable_ranks=ranks, special_tokens={})
    assert enc.pattern == word and enc._pat_str == word
    text = word * 5
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
    # tiktoken drops the text between matches; here it is a piece of its own
    assert ref.encode_ordinary(" " + text) == ref.encode_ordinary(text)
    assert enc.encode_ordinary(" " + text) == [ranks[b" "], *ref.encode_ordinary(text)]


def test_pattern_program_reads_a_regex(mod):
    """pattern_program (what the compiled matcher is built from) never resolves a name."""
    program = mod.pattern_program("words")
    assert program is not None and len(program["alternatives"]) == 1
    assert program["classes"] == mod.pattern_program("(?:words)")["classes"]


# ---- named special-token sets -----------------------------------------------------------

def quicktok_specials(name):
    quicktok = pytest.importorskip("quicktok")
    path = os.path.join(os.path.dirname(quicktok.__file__), "data", name + ".special")
    if not os.path.exists(path):
        pytest.skip(f"quicktok has no {name} specials")
    blob = open(path, "rb").read()
    (n,), at, out = struct.unpack_from("<I", blob), 4, {}
    for _ in range(n):
        i, size = struct.unpack_from("<IH", blob, at)
        out[blob[at + 6:at + 6 + size].decode("utf-8")] = i
        at += 6 + size
    return out


@pytest.mark.parametrize("name,table", [("llama3", "llama3"), ("qwen2", "qwen3")])
def test_special_sets_are_the_models(mod, name, table):
    assert mod.SPECIAL_TOKENS[name] == quicktok_specials(table)


def test_special_set_by_name(mod):
    ranks = {bytes([b]): b for b in range(256)}
    tok = mod.Tokenizer.from_tiktoken(ranks, pattern="llama3", special_tokens="llama3")
    assert tok.special_tokens == mod.SPECIAL_TOKENS["llama3"]
    assert tok.encode("<|eot_id|>x", allowed_special="all") == [128009, ord("x")]
    trained_tok = mod.Tokenizer.train("a b c a b", 256 + 9 + 1, pattern="nanochat",
                                      special_tokens="nanochat")
    assert list(trained_tok.special_tokens) == mod.SPECIAL_TOKENS["nanochat"]
    assert sorted(trained_tok.special_tokens.values()) == list(range(257, 266))
    mod.SPECIAL_TOKENS["nanochat"]  # the set is not changed by its use
    assert len(mod.SPECIAL_TOKENS["nanochat"]) == 9
    with pytest.raises(ValueError, match="llama3, qwen2, nanochat"):
        mod.Tokenizer.from_tiktoken(ranks, pattern="llama3", special_tokens="llama4")
    with pytest.raises(ValueError, match="llama3, qwen2, nanochat"):
        mod.Tokenizer.train("a b", 300, special_tokens="qwen3")
    with pytest.raises(TypeError):   # one token's text is not a set's name
        mod.Tokenizer.train("a b", 300, special_tokens="<|endoftext|>")


@pytest.mark.slow
def test_llama3_table_with_named_pattern_and_specials_equals_tiktoken(mod):
    """Meta's Llama 3 ranks by name: pattern and special tokens as tiktoken gives them
    with Meta's pattern string and quicktok's copy of the special tokens."""
    import tiktoken
    from test_vocabularies import quicktok_ranks

    ranks = quicktok_ranks("llama3")
    specials = quicktok_specials("llama3")
    ref = tiktoken.Encoding("llama3", pat_str=LLAMA3, mergeable_ranks=ranks,
                            special_tokens=specials)
    tok = mod.Tokenizer.from_tiktoken(ranks, pattern="llama3", special_tokens="llama3")
    for key, text in TEXTS.items():
        text = "<|begin_of_text|>" + text + "<|eot_id|>"
        assert tok.encode(text, allowed_special="all") == ref.encode(
            text, allowed_special="all"), key
