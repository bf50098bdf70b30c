"""from_huggingface(directory) reads the directory as transformers does: tokenizer.json and
the tokenizer_config.json / special_tokens_map.json beside it.  A token the configs name
that tokenizer.json lacks (added_tokens_decoder, bos_token, ..., additional_special_tokens)
is a special token at the id transformers gives it; what would change ids otherwise
(split_special_tokens, stripping flags, a vocabulary token made an added one) is a
ValueError naming the field.  transformers itself is the oracle, offline, on local
directories."""

import json
import shutil

import pytest

transformers = pytest.importorskip("transformers")

TEXT = "hello world, <s> abc </s> <x> hello<y>world <z>\n"
ENTRY = {"lstrip": False, "rstrip": False, "normalized": False, "single_word": False}


@pytest.fixture
def saved(mod, tmp_path):
    tok = mod.Tokenizer.train("hello world <s> abc " * 50, 300, special_tokens=["<s>", "</s>"])
    tok.save_pretrained(str(tmp_path / "base"), eos_token="</s>")
    return tmp_path / "base"


def edited(base, name, edit, file="tokenizer_config.json"):
    out = base.parent / name
    shutil.copytree(base, out)
    path = out / file
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    edit(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return out


def oracle(directory):
    from transformers import AutoTokenizer

    transformers.logging.set_verbosity_error()
    return AutoTokenizer.from_pretrained(str(directory), local_files_only=True)


def entry(content, special=True):
    return dict(ENTRY, content=content, special=special)


GIVES = {
    "as saved": lambda d: None,
    "a decoder entry missing from tokenizer.json": lambda d: d["added_tokens_decoder"].update(
        {"271": entry("<x>")}),
    "a missing entry at another id": lambda d: d["added_tokens_decoder"].update(
        {"290": entry("<x>"), "280": entry("<y>")}),
    "a missing entry, not special": lambda d: d["added_tokens_decoder"].update(
        {"271": entry("<x>", special=False)}),
    "a role naming a new token": lambda d: d.update(bos_token="<y>"),
    "additional special tokens": lambda d: d.update(additional_special_tokens=["<z>", "<x>"]),
    "extra special tokens": lambda d: d.update(extra_special_tokens=["<z>"]),
    "extra special tokens by name": lambda d: d.update(extra_special_tokens={"image": "<z>"}),
    "split_special_tokens false": lambda d: d.update(split_special_tokens=False),
}


@pytest.mark.parametrize("case", list(GIVES))
def test_the_ids_transformers_gives(mod, saved, case):
    directory = edited(saved, "case", GIVES[case])
    tok = mod.Tokenizer.from_huggingface(str(directory))
    hf = oracle(directory)
    assert tok.encode(TEXT, allowed_special="all") == hf.encode(TEXT, add_special_tokens=False)
    for s, i in tok.special_tokens.items():
        assert hf.convert_tokens_to_ids(s) == i
    assert len(tok.special_tokens) == len(hf.get_added_vocab())


def test_special_tokens_map_adding_a_token_is_refused(mod, saved):
    """transformers 5 ignores special_tokens_map.json, earlier versions add its tokens."""
    directory = edited(saved, "map", lambda d: d.update(eos_token="</s>"),
                       file="special_tokens_map.json")
    assert mod.Tokenizer.from_huggingface(str(directory)) == mod.Tokenizer.from_huggingface(
        str(saved))
    directory = edited(saved, "map2", lambda d: d.update(pad_token=entry("<z>")),
                       file="special_tokens_map.json")
    with pytest.raises(ValueError, match="pad_token"):
        mod.Tokenizer.from_huggingface(str(directory))


REFUSED = {
    "split_special_tokens": lambda d: d.update(split_special_tokens=True),
    "lstrip": lambda d: d["added_tokens_decoder"]["269"].update(lstrip=True),
    "rstrip": lambda d: d.update(additional_special_tokens=[dict(entry("<x>"), rstrip=True)]),
    "do_lower_case": lambda d: d.update(do_lower_case=True),
    "hello": lambda d: d.update(additional_special_tokens=["hello"]),
    "added_tokens_decoder": lambda d: d.update(added_tokens_decoder=[1, 2]),
    "extra_special_tokens": lambda d: d.update(extra_special_tokens=["<z>"],
                                               additional_special_tokens=["<x>"]),
}


@pytest.mark.parametrize("field", list(REFUSED))
def test_what_would_change_the_ids_is_refused(mod, saved, field):
    directory = edited(saved, "refused", REFUSED[field])
    with pytest.raises(ValueError, match=field):
        mod.Tokenizer.from_huggingface(str(directory))


def test_the_tokenizer_json_alone_ignores_the_configs(mod, saved):
    directory = edited(saved, "alone", GIVES["a role naming a new token"])
    tok = mod.Tokenizer.from_huggingface(str(directory / "tokenizer.json"))
    assert "<y>" not in tok.special_tokens


def test_from_file_and_the_command_line_read_the_directory_so(mod, saved):
    from test_dataprep import cli

    from test_cli import assert_one_line_error

    directory = edited(saved, "via", GIVES["a role naming a new token"])
    assert mod.Tokenizer.from_file(str(directory)) == mod.Tokenizer.from_huggingface(
        str(directory))
    assert "<y>" in mod.Tokenizer.from_file(str(directory)).special_tokens
    refused = edited(saved, "via2", REFUSED["split_special_tokens"])
    assert_one_line_error(cli(mod, ["info", refused]), "bpe", "split_special_tokens")
