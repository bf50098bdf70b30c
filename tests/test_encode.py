"""Encoding and decoding: GPT-2's files against tiktoken, the special-token policy, streams,
batches, and decoding."""

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import (
    EOT,
    PLAIN_TEXTS,
    SPECIALS,
    fix_surrogates,
    gpt2_ranks,
    gpt2_tiktoken,
    texts_with,
    tiktoken_of,
)
from naive import GPT2_PATTERN

PLAIN = list(PLAIN_TEXTS)
SPECIAL_TEXTS = texts_with([EOT])


def test_gpt2_model(gpt2):
    assert gpt2.vocab_size == 50257
    assert len(gpt2.merges) == 50000
    assert gpt2.merges[0] == (b" ", b"t")
    assert gpt2.special_tokens == {EOT: 50256}
    assert gpt2.vocab[50256] == EOT.encode()
    ranks = gpt2_ranks()
    assert {b: i for i, b in gpt2.vocab.items() if i != 50256} == ranks
    assert gpt2.pattern == GPT2_PATTERN


def test_gpt2_special_tokens_explicit(mod):
    from helpers import GPT2_MERGES, GPT2_VOCAB

    tok = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES, special_tokens={EOT: 50256})
    assert tok.special_tokens == {EOT: 50256}
    assert tok.encode(EOT, allowed_special="all") == [50256]


@pytest.mark.parametrize("name", PLAIN)
def test_gpt2_plain_texts_match_tiktoken(gpt2, name):
    text = PLAIN_TEXTS[name]
    enc = gpt2_tiktoken()
    expected = enc.encode(text)
    assert gpt2.encode(text) == expected
    assert gpt2.encode_ordinary(text) == expected
    assert gpt2.decode(expected) == text
    assert gpt2.decode_bytes(expected) == text.encode("utf-8")
    assert b"".join(gpt2.token_bytes(i) for i in expected) == text.encode("utf-8")


def test_gpt2_long_text_matches_tiktoken(gpt2):
    from helpers import read_data

    text = read_data("corpus.en", 30000)
    assert gpt2.encode_ordinary(text) == gpt2_tiktoken().encode_ordinary(text)


@pytest.mark.parametrize("name", list(SPECIAL_TEXTS))
def test_gpt2_special_policy(gpt2, name):
    text = SPECIAL_TEXTS[name]
    enc = gpt2_tiktoken()
    # allowed
    expected = enc.encode(text, allowed_special="all")
    assert gpt2.encode(text, allowed_special="all") == expected
    assert gpt2.encode(text, allowed_special={EOT}) == expected
    assert 50256 in expected
    assert gpt2.decode(expected) == text
    # disallowed (the default): both raise, ours names the token
    with pytest.raises(ValueError):
        enc.encode(text)
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        gpt2.encode(text)
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        gpt2.encode(text, disallowed_special={EOT})
    # ordinary
    ordinary = enc.encode(text, disallowed_special=())
    assert 50256 not in ordinary
    assert gpt2.encode(text, disallowed_special=()) == ordinary
    assert gpt2.encode_ordinary(text) == enc.encode_ordinary(text) == ordinary
    assert gpt2.decode(ordinary) == text


def test_special_policy_partial(trained):
    """Two specials: one allowed, the other disallowed or ordinary, as tiktoken does."""
    tok = trained("gpt2")
    enc = tiktoken_of(tok)
    a, b = SPECIALS
    text = f"x{a}y{b}z {a}"
    with pytest.raises(ValueError, match=r"<\|pad\|>"):
        tok.encode(text, allowed_special={a})
    with pytest.raises(ValueError):
        enc.encode(text, allowed_special={a})
    expected = enc.encode(text, allowed_special={a}, disallowed_special=())
    assert tok.encode(text, allowed_special={a}, disallowed_special=()) == expected
    assert tok.special_tokens[a] in expected and tok.special_tokens[b] not in expected
    # disallowed only b: a is ordinary text, b raises
    with pytest.raises(ValueError, match=r"<\|pad\|>"):
        tok.encode(text, disallowed_special={b})
    assert tok.encode(f"x{a}y", disallowed_special={b}) == enc.encode(
        f"x{a}y", disallowed_special={b}
    )
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    # text without any special is fine under the default policy
    assert tok.encode("plain <| text |>") == enc.encode("plain <| text |>")


@pytest.mark.parametrize("count", [2, 8, 9, 30])
def test_default_policy_names_the_first_special(mod, count):
    """encode()'s defaults disallow every special token: a text holding some raises
    ValueError naming the leftmost (the longest there), whether the tokenizer has a few
    specials (searched with str's own search first) or many (one regex); text without
    any encodes as encode_ordinary, as tiktoken does."""
    names = [f"<|s{k}|>" for k in range(count - 1)] + ["<|s1|>x"]
    tok = mod.Tokenizer.train("ab ab ab", 256 + 3 + count, special_tokens=names)
    enc = tiktoken_of(tok)
    for text, first in [("a <|s1|>x b <|s0|>", "<|s1|>x"), ("<|s0|><|s1|>", "<|s0|>"),
                        ("ab <|s1|", None), ("", None)]:
        if first is None:
            assert tok.encode(text) == tok.encode_ordinary(text) == enc.encode(text)
        else:
            with pytest.raises(ValueError, match=regex_escape(first)):
                tok.encode(text)
            with pytest.raises(ValueError):
                enc.encode(text)


def test_default_policy_sees_repaired_text(mod):
    """A special token written as a surrogate pair is still that special token."""
    tok = mod.Tokenizer.train("ab ab ab", 256 + 3 + 1, special_tokens=["<|\U0001F600|>"])
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode("x <|\ud83d\ude00|>")
    assert tok.encode("x <|\ud83d\ude00|>", allowed_special="all")[-1] == \
        tok.special_tokens["<|\U0001F600|>"]


@pytest.mark.parametrize("bad", [{1}, [b"<s>"], ("<s>", None)])
@pytest.mark.parametrize("arg", ["allowed_special", "disallowed_special"])
def test_special_policy_holds_str(mod, bad, arg):
    """An allowed_special or disallowed_special that holds anything but str is a
    TypeError naming it (tiktoken: a TypeError of set arithmetic, or none)."""
    tok = mod.Tokenizer.train("ab ab ab", 256 + 3 + 1, special_tokens=["<s>"])
    with pytest.raises(TypeError, match=f"{arg} must hold str"):
        tok.encode("x <s>", **{arg: bad})
    if arg == "allowed_special":   # (a falsy disallowed_special disallows nothing, as in tiktoken)
        with pytest.raises(TypeError, match=f"{arg} must be \"all\" or a .* of str, not NoneType"):
            tok.encode_to_numpy("x", **{arg: None})


class LyingName(str):
    """A name whose == says yes to anything and whose hash is one for all."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 1


def test_special_names_of_a_str_subclass_are_their_text(mod):
    tok = mod.Tokenizer.train("ab ab <s> <t>", 260, special_tokens=["<s>", "<t>"])
    for names in (["<s>"], ["<s>", "<x>"], ["<t>", "<s>"]):
        lying = [LyingName(n) for n in names]
        for text in ("a <t> b", "a <s> b", "plain", "<s><t>"):
            for arg in ("allowed_special", "disallowed_special"):
                want = outcome(lambda: tok.encode(text, **{arg: set(names)}))
                assert outcome(lambda: tok.encode(text, **{arg: lying})) == want, (arg, text)


def outcome(call):
    try:
        return call()
    except ValueError as e:
        return str(e)


def regex_escape(text):
    import re

    return re.escape(repr(text))


def test_special_longest_first(mod):
    tok = mod.Tokenizer.train("ab ab ab", 256 + 3 + 1, special_tokens=["<s>", "<s><s>", "</s>"])
    s = tok.special_tokens
    assert tok.encode("<s><s>", allowed_special="all") == [s["<s><s>"]]
    assert tok.encode("<s><s><s>", allowed_special="all") == [s["<s><s>"], s["<s>"]]
    assert tok.encode("<s><s>", allowed_special={"<s>"}, disallowed_special=()) == [
        s["<s>"],
        s["<s>"],
    ]


SMALL = {}


@settings(max_examples=100, deadline=None)
@given(words=st.sets(st.text("ab<|>é", min_size=1, max_size=6), min_size=1, max_size=12),
       text=st.text("ab<|>éx", max_size=40))
def test_specials_match_longest_first_at_the_leftmost_place(mod, words, text):
    """Special tokens (matched through a trie of them) are found where their alternation,
    longest first, finds them, for any set sharing prefixes; the text between is ordinary."""
    if mod not in SMALL:
        SMALL[mod] = mod.Tokenizer.train("ab é x <|> " * 3, 270, min_frequency=1)
    base = SMALL[mod]
    ids = {w: 1000 + k for k, w in enumerate(sorted(words))}
    tok = mod.Tokenizer.from_merges(base.merges, pattern=base.pattern, special_tokens=ids)
    flat = re.compile("|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w))))
    want, at = [], 0
    for m in flat.finditer(text):
        want += tok.encode_ordinary(text[at:m.start()]) + [tok.special_tokens[m.group()]]
        at = m.end()
    want += tok.encode_ordinary(text[at:])
    assert tok.encode(text, allowed_special="all") == want


def test_lone_surrogates(gpt2, mod):
    enc = gpt2_tiktoken()
    for text in ["a\ud800b", "\udfff", "x \udc80\udc80 y", "\ud83d"]:
        ids = gpt2.encode(text)
        assert ids == gpt2.encode(fix_surrogates(text))
        assert ids == enc.encode(text)
        assert gpt2.decode(ids) == fix_surrogates(text)
        assert gpt2.encode_ordinary(text) == ids
        assert list(gpt2.encode_iterable([text[:1], text[1:]])) == ids
        assert gpt2.encode_batch([text]) == [ids]


def test_surrogate_pair_does_not_crash(gpt2):
    # A high+low surrogate pair in a Python str: tiktoken joins it into one character;
    # replacing each half by U+FFFD is also acceptable.
    ids = gpt2.encode("smile \ud83d\ude00!")
    assert gpt2.decode(ids) in ("smile \U0001f600!", "smile \ufffd\ufffd!")


@pytest.mark.parametrize("num_threads", [None, 1, 2])
def test_encode_batch(gpt2, num_threads):
    texts = [PLAIN_TEXTS[n] for n in PLAIN] * 3
    assert gpt2.encode_batch(texts, num_threads=num_threads) == [gpt2.encode(t) for t in texts]
    assert gpt2.encode_batch([], num_threads=num_threads) == []
    assert gpt2.encode_batch(iter(texts[:3]), num_threads=num_threads) == [
        gpt2.encode(t) for t in texts[:3]
    ]


def test_encode_batch_policy(gpt2):
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        gpt2.encode_batch(["fine", "bad " + EOT])


@pytest.mark.parametrize("num_threads", [1, 2, 4])
def test_encode_batch_raises_the_first_error_in_order(gpt2, num_threads):
    """Threads take texts as they go, but the error is the one of the first bad text, as
    [encode(t) for t in texts] would raise it."""
    fine = ["some ordinary text, " * (i % 7 + 1) for i in range(300)]
    value_first = fine[:150] + ["bad " + EOT] + fine[150:200] + [123] + fine[200:]
    type_first = fine[:40] + [b"bytes"] + fine[40:250] + ["bad " + EOT] + fine[250:]
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        gpt2.encode_batch(value_first, num_threads=num_threads)
    with pytest.raises(TypeError):
        gpt2.encode_batch(type_first, num_threads=num_threads)
    assert gpt2.encode_batch(fine, num_threads=num_threads) == [gpt2.encode(t) for t in fine]


def test_encode_iterable_every_split(gpt2):
    text = "Hello  world!\n\n  It's 12345 <|endoftext|> 日本 🎉 end   "
    expected = gpt2.encode(text, allowed_special="all")
    assert list(gpt2.encode_iterable([text], allowed_special="all")) == expected
    assert list(gpt2.encode_iterable(list(text), allowed_special="all")) == expected
    for i in range(len(text) + 1):
        chunks = [text[:i], text[i:]]
        assert list(gpt2.encode_iterable(chunks, allowed_special="all")) == expected, i
        assert list(
            gpt2.encode_iterable(iter(chunks), disallowed_special=())
        ) == gpt2.encode_ordinary(text), i
    assert list(gpt2.encode_iterable([])) == []
    assert list(gpt2.encode_iterable(["", "", ""])) == []


def test_encode_iterable_special_split_across_chunks(gpt2):
    chunks = ["Hello<|endo", "ftext|>World", "<", "|endoftext|", ">"]
    text = "".join(chunks)
    assert list(gpt2.encode_iterable(chunks, allowed_special="all")) == gpt2.encode(
        text, allowed_special="all"
    )
    assert list(gpt2.encode_iterable(chunks, allowed_special="all")).count(50256) == 2
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        list(gpt2.encode_iterable(chunks))


def test_encode_iterable_file(gpt2, tmp_path):
    from helpers import read_data

    text = read_data("corpus.en", 20000)
    path = tmp_path / "f.txt"
    path.write_bytes(text.encode())
    with open(path, encoding="utf-8", newline="") as f:
        assert list(gpt2.encode_iterable(f)) == gpt2.encode(text)


def test_decode(gpt2):
    ids = gpt2.encode("héllo 🎉")
    assert gpt2.decode(ids) == "héllo 🎉"
    assert gpt2.decode([]) == ""
    assert gpt2.decode_bytes([]) == b""
    # a token that is half of a multi-byte character
    emoji_ids = gpt2.encode("🎉")
    assert len(emoji_ids) > 1
    partial = emoji_ids[:1]
    assert gpt2.decode(partial) == gpt2.decode_bytes(partial).decode("utf-8", "replace")
    assert "\ufffd" in gpt2.decode(partial)
    assert gpt2.decode(partial, errors="ignore") == ""
    with pytest.raises(UnicodeDecodeError):
        gpt2.decode(partial, errors="strict")
    assert gpt2.token_bytes(50256) == EOT.encode()
    assert gpt2.token_bytes(0) == b"!"
    assert gpt2.decode([50256]) == EOT
    assert gpt2.decode(tuple(ids)) == "héllo 🎉"


@pytest.mark.parametrize("bad", [50257, 10**9, -1, 2**64])
def test_decode_unknown_id(gpt2, bad):
    with pytest.raises(ValueError, match=str(bad)):
        gpt2.decode([1, bad])
    with pytest.raises(ValueError, match=str(bad)):
        gpt2.decode_bytes([bad])
    with pytest.raises(ValueError, match=str(bad)):
        gpt2.token_bytes(bad)


@pytest.mark.parametrize("bad", [None, b"bytes", 123, ["a"]])
def test_encode_wrong_type(trained, bad):
    tok = trained("gpt2")
    with pytest.raises(TypeError):
        tok.encode(bad)
    with pytest.raises(TypeError):
        tok.encode_ordinary(bad)
    with pytest.raises(TypeError):
        tok.encode_batch(["ok", bad])
    with pytest.raises(TypeError):
        list(tok.encode_iterable(["ok", bad]))


def test_decode_wrong_type(trained):
    tok = trained("gpt2")
    with pytest.raises(TypeError):
        tok.decode(["a"])
    with pytest.raises(TypeError):
        tok.decode(None)
    with pytest.raises(TypeError):
        tok.token_bytes("a")


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "words"])
def test_trained_matches_tiktoken_from_vocab(trained, pattern):
    """A trained tokenizer's ids equal tiktoken's, built independently from its vocab."""
    tok = trained(pattern)
    enc = tiktoken_of(tok)
    for name, text in list(PLAIN_TEXTS.items()) + list(texts_with(SPECIALS).items()):
        assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all"), (
            name
        )
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), name
        assert tok.decode(tok.encode(text, allowed_special="all")) == text


def test_encode_batch_large(gpt2):
    from helpers import read_data

    lines = read_data("corpus.en").splitlines(keepends=True)
    lines += [read_data("german.txt"), PLAIN_TEXTS["cjk"] * 50, "a" * 5000, " " * 3000]
    expected = [gpt2.encode(t) for t in lines]
    assert gpt2.encode_batch(lines, num_threads=2) == expected
    assert gpt2.encode_batch(lines, num_threads=1) == expected
    assert gpt2.encode_batch(lines) == expected


def test_non_ascii_specials(both):
    specials = ["<|é|>", "日本<|>", "<|😀|>"]
    corpus = "Grüße aus 日本<|>, <|é|> und 😀 <|😀|>! " * 20
    toks = [m.Tokenizer.train(corpus, 256 + 3 + 40, special_tokens=specials) for m in both]
    a, b = toks
    assert a == b
    enc = tiktoken_of(a)
    for text in [corpus, "x<|é|>y日本<|>z<|😀|>", "<|é|<|é|>>", "日本<|>日本<|>"]:
        ids = a.encode(text, allowed_special="all")
        assert (
            ids == b.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
        )
        assert a.decode(ids) == text
        assert (
            a.encode(text, disallowed_special=())
            == b.encode(text, disallowed_special=())
            == enc.encode_ordinary(text)
        )
        with pytest.raises(ValueError, match=r"<\|é\|>|日本<\|>|<\|😀\|>"):
            b.encode(text)
        assert list(b.encode_iterable(list(text), allowed_special="all")) == ids
        assert b.encode_batch([text, text], allowed_special="all", num_threads=2) == [ids, ids]


def test_imported_ids_with_gaps(mod, trained):
    """Imported ids are kept exactly, gaps included (here: no ids 256..265)."""
    import tiktoken

    src = trained("gpt2")
    special_ids = set(src.special_tokens.values())
    ranks = {b: (i if i < 256 else i + 10) for i, b in src.vocab.items() if i not in special_ids}
    top = max(ranks.values())
    specials = {name: top + 5 + k for k, name in enumerate(src.special_tokens)}
    tok = mod.Tokenizer.from_tiktoken(ranks, pattern="gpt2", special_tokens=specials)
    enc = tiktoken.Encoding(
        name="gaps", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=specials
    )
    assert len(tok.vocab) == len(ranks) + len(specials)
    assert max(tok.vocab) < tok.vocab_size  # len(vocab) or, as tiktoken's n_vocab, max id + 1
    assert tok.merges == src.merges
    for text in list(PLAIN_TEXTS.values()) + list(texts_with(SPECIALS).values()):
        ids = tok.encode(text, allowed_special="all")
        assert ids == enc.encode(text, allowed_special="all")
        assert tok.decode(ids) == text
    assert tok.encode_batch(list(PLAIN_TEXTS.values()), num_threads=2) == [
        enc.encode(t) for t in PLAIN_TEXTS.values()
    ]
    for missing in (256, 265, top + 1, top + 4, top + 5 + len(specials)):
        with pytest.raises(ValueError, match=str(missing)):
            tok.decode([missing])
    assert tok.token_bytes(266) == src.token_bytes(256)


def _refcounts(objs):
    import sys

    return [sys.getrefcount(o) for o in objs]


def _result_ints(results):
    """One of each int object in lists of ids, but the small ints (shared by all)."""
    values = sorted({i for ids in results for i in ids if i > 1000})
    return [next(i for ids in results for i in ids if i == v) for v in values]


@pytest.mark.parametrize("num_threads", [1, 2])
def test_encode_batch_references_exact(gpt2, num_threads):
    """encode_batch takes one reference per item of its results, no more, no fewer: the
    shared int objects' counts are back where they were once the results are gone, also
    after a batch that failed half-way."""
    import gc

    from helpers import read_data

    texts = read_data("corpus.en").splitlines(keepends=True)[:400]
    texts += [PLAIN_TEXTS["cjk"] * 20, "", "é" * 300]
    expected = [gpt2.encode(t) for t in texts]
    objs = _result_ints(expected)
    gc.collect()  # garbage of earlier tests may hold these ints; not collected mid-test
    before = _refcounts(objs)
    got = gpt2.encode_batch(texts, num_threads=num_threads)
    assert got == expected
    del got
    assert _refcounts(objs) == before
    bad = texts[:300] + ["bad " + EOT] + texts[300:]
    with pytest.raises(ValueError, match=r"<\|endoftext\|>"):
        gpt2.encode_batch(bad, num_threads=num_threads)
    gc.collect()  # the exception's traceback held the partial results
    assert _refcounts(objs) == before
    assert gpt2.encode(texts[0]) == expected[0]
    assert _refcounts(objs) == before


def test_encode_batch_policy_checked_once(gpt2):
    """The policy is that of encode, for every text; an empty batch encodes nothing (as
    [encode(t) for t in []] checks nothing)."""
    assert gpt2.encode_batch([], allowed_special={"<|nope|>"}) == []
    for n in (1, 2):
        with pytest.raises(ValueError, match="endoftext"):
            gpt2.encode_batch(["a", "b" + EOT], num_threads=n)
        # a name that is no special token allows nothing (tiktoken ignores it)
        assert gpt2.encode_batch(["a<|nope|>", EOT], allowed_special={"<|nope|>", EOT},
                                 num_threads=n) == [gpt2.encode("a<|nope|>"), [50256]]
        with pytest.raises(TypeError):
            gpt2.encode_batch(["a", "b"], disallowed_special="nope", num_threads=n)
        texts = ["x " + EOT + " y", "plain", EOT]
        assert gpt2.encode_batch(texts, allowed_special="all", num_threads=n) == [
            gpt2.encode(t, allowed_special="all") for t in texts
        ]
        assert gpt2.encode_batch(texts, disallowed_special=(), num_threads=n) == [
            gpt2.encode(t, disallowed_special=()) for t in texts
        ]


def test_core_encode_texts(gpt2, mod):
    """Core.encode_texts is encode_text over a list, on both cores (also a custom pattern)."""
    texts = [PLAIN_TEXTS[n] for n in PLAIN] + ["", "a\ufffdb", "x" * 3000]
    core = gpt2._core
    assert core.encode_texts(texts) == [core.encode_text(t) for t in texts]
    assert core.encode_texts([]) == []
    from helpers import GPT2_MERGES, GPT2_VOCAB

    custom = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES, pattern=r"\w+|\W")
    assert custom.encode_batch(texts, num_threads=2) == [custom.encode(t) for t in texts]


def _until(texts, stop):
    """The oracle of encode_texts' stop: the texts before the first holding a name."""
    done = []
    for t in texts:
        if any(name in t for name in stop):
            break
        done.append(t)
    return done


STOP_TEXTS = ["plain text", "a<|x|", "a < b <|x|> 日 日本", "é日本 x" * 50, "", "<b",
              "x" * 5000 + "<|x|>", "tail", "日本", "<|x|>", "end"]
STOPS = [("<|x|>",), ("日本",), ("<b", "<|x|>"), ("é",), ("\ud800",), ("",),
         ("tail", "end", "<", "z", "y", "q", "w", "v"), ("|x|" + "<" * 20,)]


@pytest.mark.parametrize("pattern", ["gpt2", r"\w+|\W"])
def test_core_encode_texts_stops_at_a_name(mod, pattern):
    """encode_texts(texts, stop) encodes the texts before the first that holds one of the
    names, wherever it sits in the text (UTF-8 of any width); a name with a lone surrogate
    never matches a repaired text; an empty name is in every text."""
    from helpers import GPT2_MERGES, GPT2_VOCAB

    core = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES, pattern=pattern).core
    texts, stops = STOP_TEXTS, STOPS
    for bad in ([5], ["a", b"abc"], ["a", None]):
        with pytest.raises(TypeError):
            core.encode_texts(bad)
    with pytest.raises(TypeError):
        core.encode_texts(["a"], (5,))
    for threads in ("2", 2.0, None):
        with pytest.raises(TypeError):
            core.reserve(threads)
    for threads in (-1, 0, 3, 2**80):
        core.reserve(threads)
    nine = tuple(f"<|{k}|>" for k in range(9))
    assert core.encode_texts(("a", "b <|8|>", "c"), nine) == [core.encode_text("a")]
    for stop in stops:
        expected = [core.encode_text(t) for t in _until(texts, stop)]
        assert core.encode_texts(texts, stop) == expected, stop
        assert core.encode_texts(texts[::-1], stop) == [
            core.encode_text(t) for t in _until(texts[::-1], stop)
        ], stop


@pytest.mark.parametrize("pattern", ["gpt2", r"\w+|\W"])
def test_core_pack_text_stops_at_a_name(mod, pattern):
    """pack_text(text, itemsize, stop): None if the repaired text holds one of the names
    (one byte or many, sharing first bytes or not, wherever it sits), else the packed ids
    of encode_text."""
    from helpers import GPT2_MERGES, GPT2_VOCAB

    core = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES, pattern=pattern).core
    stops = STOPS + [(), ("<a", "<|x|", "b <|"), ("日", "é日"), ("<|y|>", "x" * 5001)]
    for text in STOP_TEXTS + ["a\ud800<|x|>", "x\ud800", "<", "|x|>"]:
        packed = core.pack_ids(core.encode_text(text), 4)
        repaired = fix_surrogates(text)
        for stop in stops + [("\ufffd",), ("<|x", "\ufffd")]:
            got = core.pack_text(text, 4, stop)
            if any(name in repaired for name in stop):
                assert got is None, (text, stop)
            else:
                assert bytes(got) == packed, (text, stop)
        assert bytes(core.pack_text(text, 2, ["nope"])) == core.pack_ids(core.encode_text(text), 2)
    # more ids than a cache keeps space for: the compiled core hands over its own buffer
    long = "a b\u00e9 " * 30000 + "\ud800"
    for itemsize in (2, 4):
        got = core.pack_text(long, itemsize, ("<|x|>",))
        assert memoryview(got).readonly and len(got) == memoryview(got).nbytes
        assert bytes(got) == core.pack_ids(core.encode_text(long), itemsize)
    assert core.pack_text(long + "<|x|>", 4, ("<|x|>",)) is None
    with pytest.raises(TypeError):
        core.pack_text("a", 4, (5,))
    with pytest.raises(TypeError):
        core.pack_text("a", 4, [b"a"])
    # the same names call after call, then others that claim to equal them; any iterable
    class Liar(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    for _ in range(2):
        assert bytes(core.pack_text("abc", 4, ("zz",))) == core.pack_ids(core.encode_text("abc"), 4)
        assert core.encode_texts(["abc"], ("zz",)) == [core.encode_text("abc")]
    assert core.pack_text("abc", 4, (Liar("b"),)) is None
    assert core.encode_texts(["abc"], (Liar("b"),)) == []
    assert core.pack_text("abc", 4, iter(["b"])) is None
    assert core.encode_texts(["a", "b<x>"], (n for n in ["<x>"])) == [core.encode_text("a")]
    # names and texts from a few characters: many near misses, shared first and second bytes
    rng = random.Random(7)
    alphabet = "<<|ab日é"
    for _ in range(300):
        text = "".join(rng.choices(alphabet, k=rng.randrange(12)))
        stop = ["".join(rng.choices(alphabet, k=rng.randrange(1, 4)))
                for _ in range(rng.randrange(1, 4))]
        assert (core.pack_text(text, 4, stop) is None) == any(n in text for n in stop), (text, stop)


@pytest.mark.parametrize("num_threads", [1, 2])
def test_encode_batch_disallowed_names(gpt2, num_threads):
    """disallowed_special of any strs, few or many, ASCII or not: the first text holding
    one raises encode's error, whichever thread meets it; none: the ids of encode."""
    texts = ["ordinary text " * (i % 5 + 1) + "日本語" * (i % 3) for i in range(200)]
    few = {"日本語日本語", "<|zz|>"}
    many = {f"<|n{k}|>" for k in range(12)} | {"語日"}
    for names in (few, many):
        bad = texts[:90] + ["x " + sorted(names)[0] + " y"] + texts[90:]
        with pytest.raises(ValueError, match="disallowed special token"):
            gpt2.encode_batch(bad, disallowed_special=names, num_threads=num_threads)
        clean = [t for t in texts if not any(n in t for n in names)]
        assert gpt2.encode_batch(clean, disallowed_special=names, num_threads=num_threads) \
            == [gpt2.encode(t, disallowed_special=names) for t in clean]


def test_threads_start_from_what_one_thread_learned(mod):
    """encode_batch's threads get caches copied from the warmest one (Core.reserve): the
    copies give the same ids, also for the short pre-tokens of more than three ids (kept
    outside the table's slots)."""
    from helpers import GPT2_MERGES, GPT2_VOCAB

    rng = random.Random(7)
    rare = "🎉🦀ꙮ𝔅ᚠ⅋ǂ"
    texts = [" ".join("".join(rng.choice(rare) for _ in range(rng.randint(1, 3)))
                      for _ in range(300)) for _ in range(40)]
    fresh = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES)
    expected = [fresh.encode(t) for t in texts]
    tok = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES)
    for t in texts[:20]:
        tok.encode(t)            # one cache learns them
    tok.core.reserve(2)
    assert tok.encode_batch(texts, num_threads=2) == expected
    tok.core.reserve(8)
    assert tok.encode_batch(texts[::-1], num_threads=8) == expected[::-1]


def test_encode_sizes_in_turn(gpt2):
    """Calls of every size in turn on one instance (lists short and long, scratch space kept
    or given back between calls) give tiktoken's ids, and take exactly one reference per
    item of each result."""
    import gc

    from helpers import read_data

    corpus = read_data("corpus.en")
    sizes = [40, 3000, 60_000, 3 * len(corpus), 200, 20_000, 3 * len(corpus) + 7, 10]
    texts = [(corpus * 4)[k:k + n] for k, n in enumerate(sizes)]
    expected = [gpt2_tiktoken().encode_ordinary(t) for t in texts]
    assert max(map(len, expected)) > 1 << 16  # beyond what a call's buffer keeps
    objs = _result_ints(expected)
    gc.collect()
    before = _refcounts(objs)
    for text, ids in zip(texts * 2, expected * 2):
        got = gpt2.encode_ordinary(text)
        assert got == ids
        del got
    assert _refcounts(objs) == before
