"""save_pretrained -> transformers.AutoTokenizer: a fast tokenizer with our ids, the special-token
roles, padding and truncation; and our loader reads the directory back."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import EOT, PLAIN_TEXTS, corpus_with_specials, texts_with

transformers = pytest.importorskip("transformers")

SPECIALS = [EOT, "<|pad|>", "<s>", "<unk>"]
ROLES = dict(bos_token="<s>", eos_token=EOT, pad_token="<|pad|>", unk_token="<unk>")

_TOKS = {}


@pytest.fixture(scope="session")
def tok(mod):
    if mod.__name__ not in _TOKS:
        _TOKS[mod.__name__] = mod.Tokenizer.train(
            corpus_with_specials(20000), 256 + 300 + len(SPECIALS), special_tokens=SPECIALS
        )
    return _TOKS[mod.__name__]


_HF = {}


@pytest.fixture(scope="session")
def saved(mod, tok, tmp_path_factory):
    """(directory, the AutoTokenizer loaded from it) for `tok` saved with every role."""
    if mod.__name__ not in _HF:
        directory = tmp_path_factory.mktemp(f"pretrained-{mod.__name__}")
        assert tok.save_pretrained(directory, model_max_length=64, **ROLES) is None
        _HF[mod.__name__] = directory, transformers.AutoTokenizer.from_pretrained(str(directory))
    return _HF[mod.__name__]


def test_a_fast_tokenizer_with_the_roles(tok, saved):
    directory, hf = saved
    assert hf.is_fast
    for role, name in ROLES.items():
        assert getattr(hf, role) == name
        assert getattr(hf, role + "_id") == tok.special_tokens[name]
    assert hf.model_max_length == 64
    assert sorted(hf.all_special_tokens) == sorted(SPECIALS)
    assert {hf.convert_tokens_to_ids(s) for s in SPECIALS} == set(tok.special_tokens.values())
    assert len(hf) == tok.vocab_size
    files = {p.name for p in directory.iterdir()}
    assert {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"} <= files
    assert json.loads((directory / "special_tokens_map.json").read_text(encoding="utf-8")) == ROLES


def test_our_ids(tok, saved):
    _, hf = saved
    texts = list(PLAIN_TEXTS.values()) + list(texts_with([EOT, "<s>"]).values())
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        assert hf(text)["input_ids"] == ids
        assert hf.encode(text) == ids  # no BOS or EOS added
        assert hf.decode(ids) == tok.decode(ids)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    parts=st.lists(
        st.one_of(
            st.text(st.characters(exclude_categories=["Cs", "Cn"]), max_size=20),
            st.sampled_from(SPECIALS),
        ),
        max_size=5,
    )
)
def test_our_ids_random(tok, saved, parts):
    _, hf = saved
    text = "".join(parts)
    ids = tok.encode(text, allowed_special="all")
    assert hf(text)["input_ids"] == ids
    assert hf.decode(ids) == tok.decode(ids)


def test_padding_and_truncation(tok, saved):
    _, hf = saved
    pad = tok.special_tokens["<|pad|>"]
    batch = ["the cat sat on the mat<|endoftext|>", "hello", "", "a longer sentence. " * 20]
    ours = [tok.encode(t, allowed_special="all") for t in batch]
    out = hf(batch, padding=True, truncation=True)
    width = min(max(map(len, ours)), 64)
    for ids, got, mask in zip(ours, out["input_ids"], out["attention_mask"]):
        kept = ids[:64]
        assert len(got) == width
        assert got == kept + [pad] * (width - len(kept))
        assert mask == [1] * len(kept) + [0] * (width - len(kept))
    longest = hf(batch[-1], truncation=True)["input_ids"]
    assert longest == ours[-1][:64] and len(ours[-1]) > 64
    assert hf(batch[1], padding="max_length", max_length=8)["input_ids"] == ours[1] + [pad] * (
        8 - len(ours[1])
    )


def test_the_loader_reads_the_directory(mod, tok, saved):
    directory, _ = saved
    assert mod.Tokenizer.from_huggingface(directory) == tok
    assert mod.Tokenizer.from_huggingface(str(directory)) == tok
    assert mod.Tokenizer.from_huggingface(directory / "tokenizer.json") == tok


def test_gpt2_as_a_model_repository(gpt2, tmp_path):
    gpt2.save_pretrained(
        tmp_path, bos_token=EOT, eos_token=EOT, unk_token=EOT, model_max_length=1024
    )
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert hf.eos_token_id == hf.bos_token_id == 50256 and hf.model_max_length == 1024
    assert hf.pad_token is None
    for text in PLAIN_TEXTS.values():
        assert hf(text)["input_ids"] == gpt2.encode(text)


def test_without_roles(mod, tmp_path):
    tok = mod.Tokenizer.from_merges([(b"h", b"i")])
    tok.save_pretrained(tmp_path)
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert hf("hi hi")["input_ids"] == tok.encode("hi hi")
    assert hf.pad_token is None and hf.eos_token is None
    assert mod.Tokenizer.from_huggingface(tmp_path) == tok


def test_bad_arguments(tok, tmp_path):
    with pytest.raises(ValueError, match="<nope>"):
        tok.save_pretrained(tmp_path / "a", pad_token="<nope>")
    with pytest.raises(TypeError, match="eos_token"):
        tok.save_pretrained(tmp_path / "b", eos_token=5)
    with pytest.raises(ValueError, match="model_max_length"):
        tok.save_pretrained(tmp_path / "c", model_max_length=0)
    with pytest.raises(TypeError, match="model_max_length"):
        tok.save_pretrained(tmp_path / "d", model_max_length="64")
    assert not any((tmp_path / n).exists() for n in "abcd")  # nothing written on bad input
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="tokenizer.json"):
        type(tok).from_huggingface(tmp_path / "empty")
