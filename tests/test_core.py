"""The seam between policy and core: the Tokenizer exists once (bpe_fallback) and holds a core
with a small interface, which both backends provide with the same results."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fallback
import naive
from helpers import read_data

REPO = Path(__file__).resolve().parent.parent


def _model(tok):
    """The plain model a Core is built from, through public API only."""
    specials = tok.special_tokens
    ranks = {t: i for i, t in tok.vocab.items() if i not in specials.values()}
    merges = [(ranks[a], ranks[b], ranks[a + b]) for a, b in tok.merges]
    return tok.pattern, ranks, merges, specials


_TOK = {}


def trained(pattern="gpt2"):
    if pattern not in _TOK:
        _TOK[pattern] = bpe_fallback.Tokenizer.train(
            read_data("corpus.en", 20000), 500, pattern=pattern, special_tokens=["<|s|>"]
        )
    return _TOK[pattern]


def test_the_tokenizer_exists_once(mod):
    """bpe.Tokenizer is bpe_fallback.Tokenizer with its core class, and nothing else."""
    assert issubclass(mod.Tokenizer, bpe_fallback.Tokenizer)
    assert mod.Tokenizer.core_class is mod.Core
    if mod.Tokenizer is not bpe_fallback.Tokenizer:
        own = set(vars(mod.Tokenizer)) - {"__module__", "__doc__", "__qualname__", "core_class"}
        assert not own, own
    tok = mod.Tokenizer.from_merges([(b"a", b"b")])
    assert type(tok.core) is mod.Core


def test_shim_is_the_fallback():
    """`import bpe` without the compiled core (no compiler at install): every public name is
    bpe_fallback's own object, which is why conftest runs the `mod` tests once then."""
    import bpe

    if bpe.BACKEND != "python":
        pytest.skip("the compiled core is installed")
    assert list(bpe.__all__) == list(bpe_fallback.__all__)
    for name in bpe_fallback.__all__:
        assert getattr(bpe, name) is getattr(bpe_fallback, name), name


def test_star_import_gives_every_public_name(mod):
    """`from bpe import *` works: every name of __all__ exists in the module."""
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing
    namespace = {}
    exec(f"from {mod.__name__} import *", namespace)
    assert set(mod.__all__) <= set(namespace)


def test_no_private_names_cross_modules():
    """No module reads another's underscore names (the library and its tools)."""
    pyx = (REPO / "bpe.pyx").read_text(encoding="utf-8")
    assert not re.findall(r"\b_py\._[a-z]\w*", pyx)
    for path in sorted((REPO / "tools").glob("*.py")) + [REPO / "bpe_fallback.py"]:
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"\b(?:bpe|bpe_fallback|mod|_py)\.(_[a-z]\w*)", text)
        assert not found, (path.name, found)
    # the tests too: through the public API (tok.core, Core.pretokenize), not a
    # tokenizer's or a module's underscore names
    for path in sorted((REPO / "tests").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"\b(?:bpe|bpe_fallback|mod|_py|tok|core)\.(_[a-z]\w*)"
                           r"|getattr\((?:bpe|bpe_fallback|mod|tok|core), [\"'](_[a-z]\w*)", text)
        assert not found, (path.name, found)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "words", "bytes", r"\w+"])
def test_core_interface(mod, pattern):
    """A Core built from a plain model gives the Tokenizer's ids, through every method."""
    tok = trained(pattern)
    core = mod.Core(*_model(tok))
    text = read_data("corpus.en", 3000)[1000:] + " é中😀 \ud800 x"
    clean = core.repair(text)
    assert clean == bpe_fallback.Core.repair(text) and "\ud800" not in clean
    ids = tok.encode_ordinary(text)
    assert core.encode_text(clean) == ids
    pieces = bpe_fallback.pretokenizer(tok.pattern)(clean)
    assert core.encode_pieces(pieces) == ids
    for size in (2, 4):
        assert core.packer(size)(clean) == core.pack_ids(ids, size)
    assert core.decode_bytes(ids) == clean.encode("utf-8")
    assert core.decode_bytes(ids + [10**6]) is None
    assert core.decode_bytes([tok.special_tokens["<|s|>"]]) == b"<|s|>"
    # the oracle: the merges replayed in order over the whole text (no pre-tokens)
    assert core.merge_bytes(b"hello world") == naive.encode_ordinary(
        "hello world", tok.merges, pattern=None
    )
    if pattern in ("gpt2", "cl100k", "o200k", "words"):
        for limit in (0, 7, 100, len(clean), len(clean) + 5):
            cut, got = core.encode_prefix(clean, limit)
            got = list(got)
            assert cut <= max(limit, 0) and got == ids[:len(got)]
            assert tok.decode(got) == clean[:cut]
    else:
        with pytest.raises(ValueError):
            core.encode_prefix(clean, 5)


def test_core_counter_and_merges(both):
    """Counters of both cores count alike, pack and add up; learn_merges agrees."""
    text = read_data("corpus.en", 8000)
    results = []
    for m in both:
        a = m.Core.counter(m.PATTERNS["gpt2"])
        b = m.Core.counter(m.PATTERNS["gpt2"])
        a.add(text[:4000])
        b.add(text[4000:])
        a.add_packed(b.pack())
        counts = a.to_dict()
        merges = m.Core.learn_merges(dict(counts), 50, 2, None, None, True)
        kept = dict(counts)
        assert m.Core.learn_merges(kept, 50, 2, None, None, False) == merges
        assert kept == counts  # consume=False leaves the caller's dict alone
        results.append((counts, merges))
    assert results[0] == results[1]
    assert results[0][0] == bpe_fallback.count_pretokens([text[:4000], text[4000:]])


@settings(max_examples=40, deadline=None)
@given(ids=st.lists(st.integers(0, 600), max_size=30), itemsize=st.sampled_from([2, 4]))
def test_pack_ids(both, ids, itemsize):
    packed = [m.Core.pack_ids(ids, itemsize) for m in both]
    assert packed[0] == packed[1]
    assert packed[0] == b"".join(i.to_bytes(itemsize, "little") for i in ids)


def test_subclass_with_another_core(mod):
    """A Tokenizer subclass may bring its own core class (what the tests of worker
    processes do): the policy uses only the interface."""
    calls = []

    class Watching(mod.Core):
        def encode_text(self, text):
            calls.append(text)
            return super().encode_text(text)

    class Tok(mod.Tokenizer):
        core_class = Watching

    tok = Tok.from_merges([(b"h", b"i")], special_tokens=["<s>"])
    assert tok.encode("hi<s>hi", allowed_special="all") == [256, 257, 256]
    assert calls == ["hi", "hi"]


def test_stream_references_exact(mod, gpt2):
    """encode_iterable hands out each id with its own reference, also when the
    iterator is dropped halfway or a later window raises."""
    import gc
    import sys

    text = read_data("corpus.en", 200000)
    ids = gpt2.encode_ordinary(text)
    probe = max(set(ids[:5000]), key=ids[:5000].count)
    probe = next(i for i in ids if i == probe)  # the shared int object
    gc.collect()
    before = sys.getrefcount(probe)
    got = list(gpt2.encode_iterable(text.splitlines(keepends=True)))
    assert got == ids
    assert sys.getrefcount(probe) == before + got.count(probe)
    del got
    it = gpt2.encode_iterable([text])
    head = [next(it) for _ in range(1000)]
    del it
    gc.collect()
    assert sys.getrefcount(probe) == before + head.count(probe)
    del head
    bad = [text, "<|endoftext|>"]
    it = gpt2.encode_iterable(bad)
    with pytest.raises(ValueError, match="disallowed special"):
        list(it)
    del it
    gc.collect()
    assert sys.getrefcount(probe) == before


def test_flatten(mod):
    """Core.flatten: the items of lists and of encode_prefix's sequences, in order."""
    tok = trained("gpt2")
    text = read_data("corpus.en", 5000)
    cut, first = tok.core.encode_prefix(text, 2000)
    rest = tok.encode_ordinary(text[cut:])
    windows = [first, [], rest, tok.core.encode_prefix("", 0)[1], [1, 2]]
    assert list(mod.Core.flatten(windows)) == tok.encode_ordinary(text) + [1, 2]
    assert list(mod.Core.flatten([])) == []
    with pytest.raises(TypeError):
        list(mod.Core.flatten([5]))
    w = [1, 2, 3, 4]
    it = mod.Core.flatten([w, (5,)])
    assert next(it) == 1
    w.clear()  # a list changed under the iterator: what is left of it, never freed memory
    assert list(it) == [5]
    # an estimate (for the length hint) that fails or does not fit changes nothing
    for estimate in (lambda n: 2**70, lambda n: 2**62, lambda n: 1 / 0, lambda n: -5,
                     lambda n: "many", None):
        assert list(mod.Core.flatten([[1, 2], [], (3,)], estimate)) == [1, 2, 3]


@pytest.mark.parametrize("bad", [None, 5, b"text", ["a"]])
def test_core_takes_str_only(mod, bad):
    """The core's entry points that take text refuse anything but a str with TypeError and
    read a str subclass as the str it holds, on both backends."""
    core = mod.Core(*_model(trained("o200k")))
    counter = mod.Core.counter(mod.PATTERNS["o200k"])

    class Text(str):
        pass

    for call in (core.encode_text, lambda t: core.encode_prefix(t, 5), core.packer(4),
                 counter.add):
        with pytest.raises(TypeError):
            call(bad)
    text = "hello world, it's 2024"
    assert core.encode_text(Text(text)) == core.encode_text(text)
    assert core.encode_prefix(Text(text), 8)[0] == core.encode_prefix(text, 8)[0]
    assert list(core.encode_prefix(Text(text), 8)[1]) == list(core.encode_prefix(text, 8)[1])
    assert core.packer(4)(Text(text)) == core.packer(4)(text)
    counter.add(Text(text))
    assert counter.to_dict() == mod.count_pretokens([text], pattern="o200k")


def test_core_packer_repairs(mod):
    """packer(itemsize)(text) packs the ids of encode_text(text): lone surrogates repaired."""
    core = mod.Core(*_model(trained("o200k")))
    text = "a\ud800b \udfff c"
    assert core.packer(4)(text) == core.pack_ids(core.encode_text(text), 4)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "words", r"\w+"])
def test_pretokenize_repairs_and_checks(mod, pattern):
    """Core.pretokenize: the pre-tokens of the repaired text (a lone surrogate is U+FFFD),
    a str subclass read as the str it holds, anything else a TypeError; the same on both
    backends, named pattern or not."""
    import regex

    rx = mod.PATTERNS.get(pattern, pattern)

    class Sub(str):
        pass

    text = "it's \ud800 12345 héllo\n\n  wörld \udfff!"
    repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    expected = regex.findall(rx, repaired) if pattern in mod.PATTERNS else \
        bpe_fallback.pretokenizer(rx)(repaired)
    assert "\ufffd" in "".join(expected)
    assert mod.Core.pretokenize(rx, text) == expected
    got = mod.Core.pretokenize(rx, Sub(repaired))
    assert got == expected and all(type(p) is str for p in got)
    for bad in (b"bytes", None, 12):
        with pytest.raises(TypeError):
            mod.Core.pretokenize(rx, bad)


@pytest.mark.parametrize("text", ["a\ud800b", "\u00e9\udfff", "x" * 200 + "\udc00"])
def test_core_unrepaired_text(mod, text):
    """The core's encode_text repairs what it is given (a lone surrogate is U+FFFD, as
    Core.repair makes it); encode_prefix takes repaired text and, given a lone surrogate,
    both backends raise the same UnicodeEncodeError; the Tokenizer encodes it as U+FFFD."""
    core = mod.Core(*_model(trained("o200k")))
    fixed = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    assert core.encode_text(text) == core.encode_text(fixed) == core.encode_text(core.repair(text))
    with pytest.raises(UnicodeEncodeError):
        core.encode_prefix(text, len(text))
    tok = trained("o200k")
    assert mod.Tokenizer.from_merges(tok.merges, pattern="o200k").encode(text) == \
        mod.Tokenizer.from_merges(tok.merges, pattern="o200k").encode(fixed)
