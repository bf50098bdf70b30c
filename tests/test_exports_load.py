"""Every export loads in its target with this library's ids, or is refused before anything
is written.

tokenizer.json: tokenizers' Oniguruma refuses to repeat a group with an alternative that is
an anchor or a look-around alone ("target of repeat operator is invalid") and an end-of-text
anchor inside a look-behind ("invalid pattern in look-behind").  tiktoken: its regex engine
refuses some patterns, fails (a Rust panic) on those that match the empty string and reads a
repeated anchor otherwise.  The oracles are tokenizers and tiktoken themselves."""

import random

import pytest

ALPHABET = "abx \n1AB"
MERGES = [(a.encode(), b.encode()) for a in ALPHABET for b in ALPHABET]  # pieces show in ids
TEXTS = ["", "a", "ab\nx a\n", "aab bxa\n\nb 12 x", "xx\n", "\n a", "AbaB xab\n", "a\n\n",
         "x ab\r\nB1 \u00e9\u3000a\U0001F600\n"]


def tokenizer(mod, pattern):
    return mod.Tokenizer.from_merges(MERGES, pattern=pattern)


def ours(tok, text):
    return tok.encode(text, allowed_special="all")


HF_REFUSED = {
    # pattern (regex syntax): what tokenizers is given if written naively
    r"(?:x|$)+y|[\s\S]": r"(?:x|\Z)+y|[\s\S]",
    r"(?:x|\Z)*y|[\s\S]": r"(?:x|\z)*y|[\s\S]",
    r"(?:x|(?=a))+y|[\s\S]": r"(?:x|(?=a))+y|[\s\S]",
    r"(?:(?<!a)|x){2}y|[\s\S]": r"(?:(?<!a)|x){2}y|[\s\S]",
    r"(?:x|^)?y|[\s\S]": r"(?:x|\A)?y|[\s\S]",
    r"(?:x|(?:$|a))+y|[\s\S]": r"(?:x|(?:\Z|a))+y|[\s\S]",
    r"(?:(?:$)|x)+?y|[\s\S]": r"(?:(?:\Z)|x)+?y|[\s\S]",
    r"(?<=b|\Z)a|[\s\S]": r"(?<=b|\z)a|[\s\S]",
    r"a(?<!\Z)|[\s\S]": r"a(?<!\z)|[\s\S]",
    r"(?<=b$)a|[\s\S]": r"(?<=b\Z)a|[\s\S]",
}
HF_WRITTEN = [
    r"(?:x|$y)+|[\s\S]",       # the anchor is not alone in its alternative
    r"(?:x|$$)+y|[\s\S]",
    r"(?>x|$)+y|[\s\S]",        # an atomic group is a node of its own
    r"(x|$)+y|[\s\S]",          # so is a capture group... written as (?:...): refused or exact
    r"(?:x(?=a)|y)+|[\s\S]",
    r"(?<=b|^)a|[\s\S]",        # \A in a look-behind is fine
    r"(?<!^b)a|[\s\S]",
    r"(?:a|b)+$|[\s\S]",
    r"\s+$|\s+(?!\S)|\S+",
]


@pytest.mark.parametrize("pattern", sorted(HF_REFUSED))
def test_huggingface_refuses_what_tokenizers_cannot_load(mod, tmp_path, pattern):
    from tokenizers import Regex

    with pytest.raises(Exception, match="repeat operator is invalid|invalid pattern in look"):
        Regex(HF_REFUSED[pattern])  # why: tokenizers refuses the pattern written naively
    tok = tokenizer(mod, pattern)
    path = tmp_path / "tokenizer.json"
    with pytest.raises(ValueError, match="Oniguruma"):
        tok.save_huggingface(path)
    assert not path.exists()
    path.write_text("old", encoding="utf-8")
    with pytest.raises(ValueError, match="Oniguruma"):
        tok.save_pretrained(tmp_path)
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer.json"]


@pytest.mark.parametrize("pattern", HF_WRITTEN)
def test_huggingface_export_loads_with_our_ids(mod, tmp_path, pattern):
    import tokenizers

    tok = tokenizer(mod, pattern)
    path = tmp_path / "tokenizer.json"
    try:
        tok.save_huggingface(path)
    except ValueError:
        assert not path.exists()
        return
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in TEXTS:
        assert hf.encode(text, add_special_tokens=False).ids == ours(tok, text), text


ATOMS = ["a", "b", "x", r"\s", r"\S", r"\d", "[ab]", "[^a]", ".", "$", "^", r"\Z", r"\A",
         r"(?i:ab)", r"\n"]
QUANTIFIERS = [""] * 5 + ["?", "*", "+", "{2}", "{1,3}", "*?", "+?", "??", "*+", "++", "?+",
                          "{1,2}+", "{2,}?"]
GROUPS = ["(?:", "(?:", "(?>", "(?=", "(?!", "(?<=", "(?<!", "(", "(?<=", "(?<!"]


def random_pattern(rng, depth=0):
    alternatives = []
    for _ in range(rng.randint(1, 3)):
        seq = ""
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.25 and depth < 2:
                atom = rng.choice(GROUPS) + random_pattern(rng, depth + 1) + ")"
            else:
                atom = rng.choice(ATOMS)
            seq += atom + rng.choice(QUANTIFIERS)
        alternatives.append(seq)
    return "|".join(alternatives)


def random_tokenizers(mod, seed, count):
    rng = random.Random(seed)
    made = 0
    while made < count:
        try:
            tok = tokenizer(mod, random_pattern(rng))
        except ValueError:
            continue
        made += 1
        yield tok


SEEDS = [0] + [pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, 4)]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_patterns_export_to_huggingface_exactly_or_not_at_all(mod, tmp_path, seed):
    import tokenizers

    written = 0
    for k, tok in enumerate(random_tokenizers(mod, seed, 100)):
        path = tmp_path / f"{k}.json"
        try:
            tok.save_huggingface(path)
        except ValueError:
            assert not path.exists()
            continue
        written += 1
        hf = tokenizers.Tokenizer.from_file(str(path))  # loads
        for text in TEXTS:
            assert hf.encode(text, add_special_tokens=False).ids == ours(tok, text), (
                tok.pattern, text)
    assert written >= 5


TIKTOKEN_REFUSED = {
    # Oniguruma cannot repeat the group; fancy-regex reads $ and \Z otherwise than regex
    r"(?:x|\Z)+y|[\s\S]": "tiktoken",
    r"(?<=b|\Z)a|[\s\S]": "tiktoken",
    # tiktoken panics on an empty match
    r"[[:alpha:]]*|x": "empty",
    # a repeated anchor, which fancy-regex reads otherwise than regex
    r"\S{2,}?\Z*?\Z{2}|b\d??|[\s\S]": "anchor",
    r"\Z{1,2}+|[ab]": "anchor",
}


@pytest.mark.parametrize("pattern", sorted(TIKTOKEN_REFUSED))
def test_tiktoken_refuses_what_tiktoken_cannot_run(mod, tmp_path, pattern):
    tok = tokenizer(mod, pattern)
    with pytest.raises(ValueError, match=TIKTOKEN_REFUSED[pattern]):
        tok.to_tiktoken()
    path = tmp_path / "tok.tiktoken"
    try:
        tok.save_tiktoken(path)
    except ValueError:
        assert list(tmp_path.iterdir()) == []
    else:  # the pattern the sidecar holds is this library's; to_tiktoken's check is tiktoken's
        assert "tiktoken" in TIKTOKEN_REFUSED[pattern]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_patterns_export_to_tiktoken_exactly_or_not_at_all(mod, seed):
    written = 0
    for tok in random_tokenizers(mod, 100 + seed, 100):
        try:
            enc = tok.to_tiktoken()
        except ValueError:
            continue
        written += 1
        for text in TEXTS:
            assert enc.encode(text, allowed_special="all") == ours(tok, text), (tok.pattern, text)
    assert written >= 5
