"""Files and exports: every format round-trips, and the target library encodes every test
text to the ids this library gives."""

import json
import os

import pytest

from helpers import (
    EOT,
    GPT2_MERGES,
    GPT2_VOCAB,
    PLAIN_TEXTS,
    SPECIALS,
    bytes_to_unicode,
    gpt2_ranks,
    gpt2_tiktoken,
    texts_with,
)

PATTERNS = ["gpt2", "cl100k", "o200k", "words"]
ALL_TEXTS = {**PLAIN_TEXTS, **{"special_" + k: v for k, v in texts_with(SPECIALS).items()}}
GPT2_TEXTS = {**PLAIN_TEXTS, **{"special_" + k: v for k, v in texts_with([EOT]).items()}}


@pytest.fixture(autouse=True)
def no_tiktoken_cache(monkeypatch):
    # tiktoken caches files it reads by path; "" turns the cache off.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")


def ours(tok, text):
    return tok.encode(text, allowed_special="all")


def assert_same_ids(tok, encode_other, texts=ALL_TEXTS):
    for name, text in texts.items():
        assert encode_other(text) == ours(tok, text), name


def hf_encoder(hf):
    return lambda text: hf.encode(text, add_special_tokens=False).ids


# ---------------------------------------------------------------------------------------
# native format


@pytest.mark.parametrize("pattern", PATTERNS + ["bytes", r"\w+|\W"])
def test_native_round_trip(mod, trained, tmp_path, pattern):
    tok = trained(pattern) if pattern in PATTERNS else mod.Tokenizer.train(
        PLAIN_TEXTS["address"], 300, pattern=pattern, special_tokens=SPECIALS
    )
    path = tmp_path / "model.bpe"
    tok.save(path)
    assert os.listdir(tmp_path) == ["model.bpe"]  # no temporary file left behind
    path.read_bytes().decode("utf-8")  # UTF-8 text
    back = mod.Tokenizer.load(path)
    assert back == tok
    assert back.merges == tok.merges
    assert back.vocab == tok.vocab
    assert back.special_tokens == tok.special_tokens
    assert back.pattern == tok.pattern
    assert back.vocab_size == tok.vocab_size
    assert_same_ids(tok, lambda t: ours(back, t))
    # str paths, and overwriting an existing file
    tok.save(str(path))
    assert mod.Tokenizer.load(str(path)) == tok


def test_native_round_trip_gpt2(gpt2, mod, tmp_path):
    path = tmp_path / "gpt2.bpe"
    gpt2.save(path)
    back = mod.Tokenizer.load(path)
    assert back == gpt2
    assert back.vocab == gpt2.vocab
    assert_same_ids(gpt2, lambda t: ours(back, t), GPT2_TEXTS)


def test_native_cross_backend(both, tmp_path):
    a, b = both
    tok = a.Tokenizer.train(PLAIN_TEXTS["tinystories"], 300, special_tokens=SPECIALS)
    tok.save(tmp_path / "a.bpe")
    other = b.Tokenizer.load(tmp_path / "a.bpe")
    assert other.merges == tok.merges and other.vocab == tok.vocab
    assert other.special_tokens == tok.special_tokens and other.pattern == tok.pattern
    other.save(tmp_path / "b.bpe")
    assert a.Tokenizer.load(tmp_path / "b.bpe") == tok


# ---------------------------------------------------------------------------------------
# tiktoken


@pytest.mark.parametrize("pattern", PATTERNS)
def test_to_tiktoken(trained, pattern):
    tok = trained(pattern)
    enc = tok.to_tiktoken()
    assert enc.n_vocab == tok.vocab_size
    assert enc.special_tokens_set == set(tok.special_tokens)
    assert_same_ids(tok, lambda t: enc.encode(t, allowed_special="all"))
    for name, text in ALL_TEXTS.items():
        assert enc.decode(ours(tok, text)) == text, name


@pytest.mark.parametrize("pattern", PATTERNS)
def test_save_tiktoken(mod, trained, tmp_path, pattern):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    tok = trained(pattern)
    path = tmp_path / "model.tiktoken"
    tok.save_tiktoken(path)
    ranks = load_tiktoken_bpe(str(path))
    special_ids = set(tok.special_tokens.values())
    assert ranks == {b: i for i, b in tok.vocab.items() if i not in special_ids}
    enc = tiktoken.Encoding(
        name="saved", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=tok.special_tokens
    )
    assert_same_ids(tok, lambda t: enc.encode(t, allowed_special="all"))
    # and back into bpe, from the file and from the ranks
    for source in (path, str(path), ranks):
        back = mod.Tokenizer.from_tiktoken(
            source, pattern=tok.pattern, special_tokens=tok.special_tokens
        )
        assert back.vocab == tok.vocab
        assert back.special_tokens == tok.special_tokens
        assert back.merges == tok.merges
        assert back == tok
        assert_same_ids(tok, lambda t: ours(back, t))


def test_from_tiktoken_named_pattern(mod, trained, tmp_path):
    tok = trained("cl100k")
    path = tmp_path / "m.tiktoken"
    tok.save_tiktoken(path)
    back = mod.Tokenizer.from_tiktoken(path, pattern="cl100k", special_tokens=tok.special_tokens)
    assert back.pattern == mod.PATTERNS["cl100k"]
    assert back == tok
    plain = mod.Tokenizer.from_tiktoken(path, pattern="cl100k")
    assert plain.special_tokens == {}
    assert plain.merges == tok.merges


# ---------------------------------------------------------------------------------------
# Hugging Face tokenizer.json


@pytest.mark.parametrize("pattern", PATTERNS)
def test_save_huggingface(mod, trained, tmp_path, pattern):
    import tokenizers

    tok = trained(pattern)
    path = tmp_path / "tokenizer.json"
    tok.save_huggingface(path)
    json.loads(path.read_text(encoding="utf-8"))
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.get_vocab_size() == tok.vocab_size
    assert_same_ids(tok, hf_encoder(hf))
    back = mod.Tokenizer.from_huggingface(path)
    assert back == tok
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert back.special_tokens == tok.special_tokens
    assert mod.Tokenizer.from_huggingface(str(path)) == tok


@pytest.mark.parametrize("pattern", PATTERNS)
def test_save_huggingface_decodes(trained, tmp_path, pattern):
    import tokenizers

    tok = trained(pattern)
    tok.save_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for name, text in ALL_TEXTS.items():
        assert hf.decode(ours(tok, text), skip_special_tokens=False) == text, name


# ---------------------------------------------------------------------------------------
# GPT-2's vocab.json + merges.txt


def hf_from_gpt2_files(directory, specials):
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    hf = tokenizers.Tokenizer(
        models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
    )
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(list(specials))
    return hf


@pytest.mark.parametrize("pattern", PATTERNS)
def test_save_gpt2(mod, trained, tmp_path, pattern):
    tok = trained(pattern)
    out = tmp_path / "gpt2dir"
    out.mkdir()
    tok.save_gpt2(out)
    assert sorted(os.listdir(out)) == ["merges.txt", "vocab.json"]
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    assert len(vocab) == tok.vocab_size
    back = mod.Tokenizer.from_gpt2(out / "vocab.json", out / "merges.txt")
    assert back.merges == tok.merges
    assert back.vocab == tok.vocab
    assert back.special_tokens == tok.special_tokens
    back2 = mod.Tokenizer.from_gpt2(str(out / "vocab.json"), str(out / "merges.txt"))
    assert back2 == back
    if pattern == "gpt2":
        assert back == tok
        assert_same_ids(tok, lambda t: ours(back, t))
        hf = hf_from_gpt2_files(out, tok.special_tokens)
        assert_same_ids(tok, hf_encoder(hf))
        for name, text in ALL_TEXTS.items():
            assert hf.decode(ours(tok, text), skip_special_tokens=False) == text, name


def test_gpt2_save_gpt2_reproduces_files(gpt2, tmp_path):
    gpt2.save_gpt2(tmp_path)
    original = json.loads(GPT2_VOCAB.read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == original

    def merge_lines(path):
        lines = path.read_text(encoding="utf-8").splitlines()
        return [line for line in lines if line and not line.startswith("#version")]

    assert merge_lines(tmp_path / "merges.txt") == merge_lines(GPT2_MERGES)


# ---------------------------------------------------------------------------------------
# GPT-2 through bpe to the other libraries, checked against tiktoken's GPT-2


def test_gpt2_to_tiktoken(gpt2):
    enc = gpt2.to_tiktoken()
    ref = gpt2_tiktoken()
    for name, text in GPT2_TEXTS.items():
        assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all"), (
            name
        )
    assert enc.n_vocab == 50257


def test_gpt2_save_tiktoken(gpt2, tmp_path, mod):
    from tiktoken.load import load_tiktoken_bpe

    gpt2.save_tiktoken(tmp_path / "gpt2.tiktoken")
    assert load_tiktoken_bpe(str(tmp_path / "gpt2.tiktoken")) == gpt2_ranks()
    back = mod.Tokenizer.from_tiktoken(
        tmp_path / "gpt2.tiktoken", pattern="gpt2", special_tokens={EOT: 50256}
    )
    ref = gpt2_tiktoken()
    assert back.vocab == gpt2.vocab
    for name, text in GPT2_TEXTS.items():
        assert ours(back, text) == ref.encode(text, allowed_special="all"), name


def test_gpt2_save_huggingface(gpt2, tmp_path, mod):
    import tokenizers

    path = tmp_path / "tokenizer.json"
    gpt2.save_huggingface(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    ref = gpt2_tiktoken()
    for name, text in GPT2_TEXTS.items():
        assert hf_encoder(hf)(text) == ref.encode(text, allowed_special="all"), name
    assert mod.Tokenizer.from_huggingface(path) == gpt2


def test_from_huggingface_gpt2_style_json(mod, tmp_path):
    """A tokenizer.json as `tokenizers` writes it for GPT-2 (ByteLevel pre-tokenizer)."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    hf = tokenizers.Tokenizer(models.BPE.from_file(str(GPT2_VOCAB), str(GPT2_MERGES)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOT])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    assert tok.vocab_size == 50257
    assert tok.special_tokens == {EOT: 50256}
    ref = gpt2_tiktoken()
    for name, text in GPT2_TEXTS.items():
        assert ours(tok, text) == ref.encode(text, allowed_special="all"), name


def test_gpt2_byte_mapping_helper():
    # sanity check of the test helper itself
    m = bytes_to_unicode()
    assert len(set(m.values())) == 256
    assert m[ord(" ")] == "Ġ" and m[ord("\n")] == "Ċ" and m[ord("a")] == "a"


# ---------------------------------------------------------------------------------------
# awkward content: every format either round-trips exactly or refuses with ValueError

AWKWARD_SPECIALS = ["<|x|>", "a\nb", "\"quoted\" \\back\\", "\t<tab>", "日本<|>"]
AWKWARD_PATTERN = "\n|\t|[^\n\t]+"


def awkward(mod):
    text = "😀😀😀 é é é\n\n\tab ab\r\n" * 5 + "".join(AWKWARD_SPECIALS) + " \\\" \"\\ " * 4
    return mod.Tokenizer.train(
        text,
        256 + 5 + 40,
        pattern=AWKWARD_PATTERN,
        special_tokens=AWKWARD_SPECIALS,
        min_frequency=1,
        max_token_bytes=3,
    )


def test_awkward_model_has_partial_utf8_tokens(mod):
    tok = awkward(mod)
    partial = [a + b for a, b in tok.merges if not _utf8(a + b)]
    assert partial, "the test needs tokens that are not valid UTF-8"


def _utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_awkward_native(mod, tmp_path):
    tok = awkward(mod)
    tok.save(tmp_path / "m.bpe")
    back = mod.Tokenizer.load(tmp_path / "m.bpe")
    assert back == tok and back.pattern == AWKWARD_PATTERN and back.vocab == tok.vocab


def test_awkward_huggingface(mod, tmp_path):
    tok = awkward(mod)
    try:
        tok.save_huggingface(tmp_path / "tokenizer.json")
    except ValueError:
        return
    assert mod.Tokenizer.from_huggingface(tmp_path / "tokenizer.json") == tok


def test_awkward_tiktoken(mod, tmp_path):
    tok = awkward(mod)
    try:
        tok.save_tiktoken(tmp_path / "m.tiktoken")
    except ValueError:
        return
    back = mod.Tokenizer.from_tiktoken(tmp_path / "m.tiktoken", pattern=AWKWARD_PATTERN,
                                       special_tokens=tok.special_tokens)
    assert back == tok


def test_awkward_gpt2(mod, tmp_path):
    tok = awkward(mod)
    try:
        tok.save_gpt2(tmp_path)
    except ValueError:
        return
    back = mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert back.merges == tok.merges and back.vocab == tok.vocab
    assert back.special_tokens == tok.special_tokens


@pytest.mark.parametrize("special", ["é", "a", " ", "Ġ", "!"])
def test_special_colliding_with_byte_token_gpt2(mod, tmp_path, special):
    """A special token whose text equals a byte token's GPT-2 spelling (e.g. "a" or "é")
    cannot share vocab.json's key: save_gpt2 must refuse or round-trip exactly."""
    tok = mod.Tokenizer.train("ab ab ab é é", 256 + 1 + 3, special_tokens=[special])
    try:
        tok.save_gpt2(tmp_path)
    except ValueError:
        return
    back = mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert back.vocab == tok.vocab
    assert back.special_tokens == tok.special_tokens


@pytest.mark.parametrize("special", ["é", "a", " "])
def test_special_colliding_with_byte_token_hf(mod, tmp_path, special):
    import tokenizers

    tok = mod.Tokenizer.train("ab ab ab é é", 256 + 1 + 3, special_tokens=[special])
    try:
        tok.save_huggingface(tmp_path / "tokenizer.json")
    except ValueError:
        return
    assert mod.Tokenizer.from_huggingface(tmp_path / "tokenizer.json") == tok
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ["ab é", f"x{special}y", "é a  b"]:
        assert hf.encode(text, add_special_tokens=False).ids == ours(tok, text), text


@pytest.mark.parametrize("pattern", ["bytes", r"\w+|\W"], ids=["bytes", "custom"])
def test_exports_other_patterns(mod, trained, tmp_path, pattern):
    """bytes and custom patterns: each export reproduces our ids, or refuses with ValueError."""
    import tiktoken
    import tokenizers

    tok = mod.Tokenizer.train(
        PLAIN_TEXTS["tinystories"], 256 + 2 + 100, pattern=pattern, special_tokens=SPECIALS
    )
    enc = tok.to_tiktoken()
    assert_same_ids(tok, lambda t: enc.encode(t, allowed_special="all"))
    try:
        tok.save_huggingface(tmp_path / "tokenizer.json")
    except ValueError:
        pass
    else:
        hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
        assert_same_ids(tok, hf_encoder(hf))
        assert mod.Tokenizer.from_huggingface(tmp_path / "tokenizer.json") == tok
    assert isinstance(enc, tiktoken.Encoding)


# ---------------------------------------------------------------------------------------
# tokenizer.json written by `tokenizers` itself: reproduce exactly or refuse with ValueError


def _hf_variant(tok, variant):
    import tokenizers
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers

    special_ids = set(tok.special_tokens.values())
    b2u = bytes_to_unicode()

    def s(b):
        return "".join(b2u[x] for x in b)

    vocab = {s(b): i for i, b in tok.vocab.items() if i not in special_ids}
    merges = [(s(a), s(b)) for a, b in tok.merges]
    kwargs = {}
    if variant == "ignore_merges":
        kwargs["ignore_merges"] = True
    if variant == "byte_fallback":
        kwargs["byte_fallback"] = True
    if variant == "suffix":
        kwargs["end_of_word_suffix"] = "</w>"
    hf = tokenizers.Tokenizer(models.BPE(vocab, merges, **kwargs))
    split = pre_tokenizers.Split(Regex(tok.pattern), behavior="isolated", invert=False)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if variant == "prefix_space":
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)
    if variant == "removed":
        split = pre_tokenizers.Split(Regex(tok.pattern), behavior="removed", invert=False)
    hf.pre_tokenizer = pre_tokenizers.Sequence([split, byte_level])
    if variant == "nfc":
        hf.normalizer = normalizers.NFC()
    if variant == "lowercase":
        hf.normalizer = normalizers.Lowercase()
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(list(tok.special_tokens))
    return hf


@pytest.mark.parametrize("pattern", ["cl100k", "o200k", "gpt2"])
def test_from_huggingface_split_bytelevel(mod, trained, tmp_path, pattern):
    """Split(regex) + ByteLevel(use_regex=False), as Llama-3-style tokenizer.json files have."""
    tok = trained(pattern)
    hf = _hf_variant(tok, "plain")
    hf.save(str(tmp_path / "tokenizer.json"))
    assert_same_ids(tok, hf_encoder(hf))  # the test's HF model is right
    back = mod.Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert back.special_tokens == tok.special_tokens
    assert_same_ids(tok, lambda t: ours(back, t))


@pytest.mark.parametrize(
    "variant",
    ["prefix_space", "removed", "nfc", "lowercase", "suffix", "ignore_merges", "byte_fallback"],
)
def test_from_huggingface_reproduce_or_refuse(mod, trained, tmp_path, variant):
    tok = trained("cl100k")
    hf = _hf_variant(tok, variant)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    try:
        back = mod.Tokenizer.from_huggingface(path)
    except ValueError:
        return
    texts = dict(ALL_TEXTS, upper="ÉCOLE Straße ὈΔΥΣΣΕΎΣ", nfd="e\u0301 a\u0308")
    assert_same_ids(back, hf_encoder(hf), texts)


def test_from_gpt2_version_header_and_blank_lines(mod, gpt2, tmp_path):
    """GPT-2's own merges.txt starts with "#version: 0.2"; files may end with a blank line."""
    merges = tmp_path / "merges.txt"
    merges.write_bytes(b"#version: 0.2\n" + GPT2_MERGES.read_bytes() + b"\n")
    assert mod.Tokenizer.from_gpt2(GPT2_VOCAB, merges) == gpt2


def test_from_huggingface_old_merges_format(mod, trained, tmp_path):
    """tokenizer.json files written by older `tokenizers` spell each merge "a b"."""
    tok = trained("gpt2")
    path = tmp_path / "tokenizer.json"
    tok.save_huggingface(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"]["merges"] = [
        " ".join(m) if isinstance(m, list) else m for m in data["model"]["merges"]
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert mod.Tokenizer.from_huggingface(path) == tok
