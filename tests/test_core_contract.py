"""Both cores keep one contract, `bpe_fallback.CoreProtocol`: each core's public members are
exactly the Protocol's, each of the same kind (method, static method, class method, or a
value), with the same parameters (names, kinds, defaults).  A member a core has
that the contract does not name (or the reverse) fails here, on both backends."""

import inspect

import pytest

import bpe_fallback

CONTRACT = bpe_fallback.CoreProtocol


def public(cls):
    return {name for name in dir(cls) if not name.startswith("_")}


def contract_members():
    """The names the Protocol defines itself (typing's machinery is all underscored)."""
    return {name for name in vars(CONTRACT) if not name.startswith("_")}


def kind_of(cls, name):
    """(kind, the function to read a signature from, or None)."""
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod):
        return "static", raw.__func__
    if isinstance(raw, classmethod):
        return "class", raw.__func__
    if isinstance(raw, property) or inspect.isdatadescriptor(raw) or not callable(raw):
        return "value", None
    return "method", raw


def parameters(function, bound):
    """The parameters as (name, kind, default), without self / cls (the compiled core's
    functions carry their signatures: Cython's binding)."""
    params = list(inspect.signature(function).parameters.values())
    return [(p.name, p.kind, p.default) for p in params[1 if bound else 0:]]


def test_the_contract_names_its_members():
    names = contract_members()
    assert {"encode_text", "decode_bytes", "learn_merges", "from_model", "releases_gil"} <= names
    for name in names:
        doc = inspect.getdoc(getattr(CONTRACT, name))
        assert doc and doc != inspect.getdoc(property), f"CoreProtocol.{name} says nothing"


def test_a_core_has_exactly_the_contracts_members(mod):
    extra = public(mod.Core) - contract_members()
    missing = contract_members() - public(mod.Core)
    assert not extra, f"{mod.__name__}.Core has public members the contract lacks: {extra}"
    assert not missing, f"{mod.__name__}.Core lacks members of the contract: {missing}"


def test_each_member_has_the_contracts_kind_and_signature(mod):
    for name in sorted(contract_members()):
        want_kind, want_fn = kind_of(CONTRACT, name)
        got_kind, got_fn = kind_of(mod.Core, name)
        assert got_kind == want_kind, f"{mod.__name__}.Core.{name}: {got_kind}, not {want_kind}"
        if want_kind == "value":
            continue
        bound = want_kind in ("method", "class")
        got = parameters(got_fn, bound)
        assert got == parameters(want_fn, bound), f"{mod.__name__}.Core.{name}{got}"


def test_a_core_is_built_from_the_contracts_arguments(mod):
    ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256}
    core = mod.Core(pattern=mod.PATTERNS["gpt2"], ranks=ranks, merges=[(104, 105, 256)],
                    specials={"<s>": 257})
    assert isinstance(core, CONTRACT) and isinstance(core, mod.CoreProtocol)
    assert core.encode_text("hi hi") == [256, 32, 256]
    assert isinstance(core.releases_gil, bool) and core.pretokenizer in ("native", "regex")
    with pytest.raises(TypeError):
        mod.Core.from_model(mod.PATTERNS["gpt2"], None, {})


BYTES = [b"a", b"b", b"\xc3", b"\xa9", b"\xed", b"\xa0", b"\x80", b"\xf0", b"\x9f", b"\xf4",
         b"\x90", b"\xe0", b"\xc0", b"\xff", b" "]


def test_unrebuilt_reads_utf8_as_python_does():
    """Core.unrebuilt names the first token (by id) that is valid UTF-8 and that the merges
    by rank do not give back: tokens only a whole pre-token gives (made by no merge), of
    every kind of byte sequence, strict UTF-8 (overlong forms, surrogates, past U+10FFFF
    are not) as Python's decoder reads it; the compiled core's C against bpe_fallback's."""
    import itertools

    bpe = pytest.importorskip("bpe")
    words = [b"".join(p) for n in (2, 3, 4) for p in itertools.product(BYTES, repeat=n)]
    words = words[::7]   # some of each length and kind, a few thousand
    expected = None
    for start in range(0, len(words), 97):
        ranks = {bytes([b]): b for b in range(256)}
        ranks.update({w: 256 + k for k, w in enumerate(words[start:start + 97])
                      if w not in ranks})
        got = [m.Tokenizer.from_tiktoken(dict(ranks), pattern="gpt2").core.unrebuilt()
               for m in (bpe, bpe_fallback)]
        assert got[0] == got[1]
        expected = expected or got[1]
    assert expected is not None   # some token was valid UTF-8 and made by no merge
