"""Every export reloads as the same tokenizer or is refused: save_tiktoken / to_tiktoken,
save_huggingface / save_pretrained and save_gpt2 either give files on which the target
library (tiktoken, tokenizers) encodes to this library's ids, or raise ValueError naming
the first token (or special token) they cannot express, writing nothing.

tiktoken keeps ranks only and rebuilds merges from them; GPT-2's readers apply merges only
(no whole-token rule); tokenizers numbers added tokens after its vocabulary itself."""

import json
import os
import random

import pytest
from fresh import TRICKY

BASE = {i: bytes([i]) for i in range(256)}


def test_merges_tiktoken_cannot_rebuild_are_refused(mod, tmp_path):
    tok = mod.Tokenizer.from_merges([(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")])
    for export in (lambda: tok.save_tiktoken(str(tmp_path / "t.tiktoken")), tok.to_tiktoken):
        with pytest.raises(ValueError, match=r"b'abc' \(id 258\)"):
            export()
    assert not os.listdir(tmp_path)


def test_ids_out_of_merge_order_are_refused_for_tiktoken(mod):
    tok = mod.Tokenizer.from_merges([(b"a", b"b"), (b"c", b"d")],
                                    vocab={**BASE, 300: b"ab", 299: b"cd"})
    with pytest.raises(ValueError, match=r"b'cd' \(id 299\)"):
        tok.to_tiktoken()


def test_a_token_made_by_no_merge_is_refused_for_gpt2_files(mod, tmp_path):
    tok = mod.Tokenizer.from_merges([(b"a", b"b")], vocab={**BASE, 256: b"ab", 257: b"xyz"})
    with pytest.raises(ValueError, match=r"b'xyz' \(id 257\)"):
        tok.save_gpt2(str(tmp_path / "g"))
    assert not os.path.exists(tmp_path / "g" / "vocab.json")
    tok = mod.Tokenizer.from_merges([(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")])
    with pytest.raises(ValueError, match=r"b'abc' \(id 258\)"):
        tok.save_gpt2(str(tmp_path / "g"))


def test_special_ids_tokenizers_would_renumber_are_refused(mod, tmp_path):
    pytest.importorskip("tokenizers")
    for specials, vocab in (({"<s>": 1000}, None), (["<s>"], {**BASE, 300: b"ab"})):
        tok = mod.Tokenizer.from_merges([(b"a", b"b")], vocab=vocab, special_tokens=specials)
        with pytest.raises(ValueError, match="<s>"):
            tok.save_huggingface(str(tmp_path / "tokenizer.json"))
        with pytest.raises(ValueError, match="<s>"):
            tok.save_pretrained(str(tmp_path / "hf"))
    assert not os.path.exists(tmp_path / "tokenizer.json")
    assert not os.path.exists(tmp_path / "hf" / "tokenizer.json")


def random_model(mod, rng):
    """A small model over a few letters: merges in any order, ids maybe shuffled (some
    tokens made by no merge), special tokens maybe sharing a token's text."""
    letters = [b"a", b"b", b"c", b" ", b"\xc3", b"\xa9"]
    toks, merges = list(letters), []
    for _ in range(rng.randrange(1, 10)):
        a, b = rng.choice(toks), rng.choice(toks)
        if a + b not in toks:
            toks.append(a + b)
            merges.append((a, b))
    vocab = None
    if rng.random() < 0.4:
        ids = list(range(256, 256 + len(merges) + 2))
        rng.shuffle(ids)
        vocab = dict(BASE)
        for (a, b), i in zip(merges, ids):
            vocab[i] = a + b
        if rng.random() < 0.5 and b"cab" not in vocab.values():
            vocab[ids[len(merges)]] = b"cab"
    specials = rng.choice([[], ["<s>"], ["ab"], ["<s>", "<s><t>"]])
    pattern = rng.choice(["gpt2", "words", r"\w+|\W"])
    return mod.Tokenizer.from_merges(merges, vocab=vocab, pattern=pattern,
                                     special_tokens=specials)


def onig(mod, pattern, tmp_path):
    """The pattern as save_huggingface writes it for tokenizers' regex engine."""
    mod.Tokenizer.from_merges([], pattern=pattern).save_huggingface(str(tmp_path / "p.json"))
    doc = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    return doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]


def texts(rng):
    pieces = ["a", "b", "c", " ", "\u00e9", "ab", "<s>", "cab"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 15)))
            for _ in range(15)] + TRICKY


@pytest.mark.parametrize("seed", [1, 2])
def test_random_models_export_exactly_or_not_at_all(mod, tmp_path, seed):
    tokenizers = pytest.importorskip("tokenizers")
    pytest.importorskip("tiktoken")
    from tokenizers import Regex, pre_tokenizers
    from tokenizers.models import BPE

    rng = random.Random(seed)
    written = {"tiktoken": 0, "tokenizer.json": 0, "gpt2": 0}
    for _ in range(100):
        try:
            tok = random_model(mod, rng)
        except ValueError:
            continue
        sample = texts(rng)
        want = [tok.encode(t, allowed_special="all") for t in sample]
        try:
            enc = tok.to_tiktoken()
        except ValueError:
            pass
        else:
            written["tiktoken"] += 1
            assert [enc.encode(t, allowed_special="all") for t in sample] == want
        try:
            tok.save_huggingface(str(tmp_path / "tokenizer.json"))
        except ValueError:
            pass
        else:
            written["tokenizer.json"] += 1
            hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
            assert [hf.encode(t).ids for t in sample] == want
        try:
            tok.save_gpt2(str(tmp_path / "gpt2"))
        except ValueError:
            pass
        else:
            written["gpt2"] += 1
            model = BPE.from_file(str(tmp_path / "gpt2" / "vocab.json"),
                                  str(tmp_path / "gpt2" / "merges.txt"))
            gpt2 = tokenizers.Tokenizer(model)  # merges only, as GPT-2's readers
            gpt2.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(onig(mod, tok.pattern, tmp_path)), "isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
            gpt2.add_special_tokens(list(tok.special_tokens))
            assert [gpt2.encode(t).ids for t in sample] == want
    assert min(written.values()) > 10, written


GAPPY = [r"[A-Z]?[a-z]++|[^a-zA-Z]", r"[A-Za-z]+|.", r"\w+|\W", r"\d{1,3}+|\D",
         r"(?P<word>\w+)|(?P<other>\W)", r"(?i)straße|[\s\S]"]


@pytest.mark.parametrize("pattern", GAPPY)
def test_to_tiktoken_keeps_the_text_between_matches(mod, pattern):
    """tiktoken drops the text no match covers ("P" in "P.O." for the first pattern, a line
    feed for the second); here it is a pre-token of its own.  to_tiktoken writes the
    pattern so that tiktoken splits as this library does."""
    pytest.importorskip("tiktoken")
    from helpers import read_data

    text = read_data("corpus.en")[:6000] + "\nP.O. Box 12345, STRASSE straße \u00e9t\u00e9\n"
    tok = mod.Tokenizer.train(text, 300, pattern=pattern, min_frequency=1)
    enc = tok.to_tiktoken()
    assert enc.encode_ordinary(text) == tok.encode_ordinary(text)
    assert enc.decode(enc.encode_ordinary(text)) == text


@pytest.mark.parametrize("pattern", [r"a*|b|[\s\S]", r"x(\w)\1|[\s\S]",
                                     r"[[:alpha:]]+|.", r"[\p{L}--\p{Lu}]+|."])
def test_to_tiktoken_refuses_patterns_it_cannot_write(mod, pattern):
    pytest.importorskip("tiktoken")
    tok = mod.Tokenizer.from_merges([(b"a", b"b")], pattern=pattern)
    with pytest.raises(ValueError, match="tiktoken"):
        tok.to_tiktoken()
