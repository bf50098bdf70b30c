"""A fuzz harness (hypothesis) for every loader and for encode/decode, on both backends.

Each loader gets valid files mutated at random (truncated, bytes replaced, lines dropped,
doubled or swapped, random bytes): it must raise ValueError, or return a tokenizer that is
whole (saves and reloads to itself, and round-trips text). Nothing else may escape.

CI runs a short campaign; a longer one:

    BPE_FUZZ_EXAMPLES=20000 python -m pytest -q tests/test_fuzz.py
"""

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from helpers import EOT

EXAMPLES = int(os.environ.get("BPE_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SAMPLE = "the cat sat on the mat; the dog ate the hat. " * 8 + "naïve café 😀 123 456\n\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory, request):
    """Valid files of every format from one small trained tokenizer (per backend)."""
    cache = {}

    def make(mod):
        if mod.__name__ not in cache:
            d = tmp_path_factory.mktemp(f"valid-{mod.__name__}")
            tok = mod.Tokenizer.train(SAMPLE, 300, special_tokens=[EOT])
            tok.save(d / "tok.bpe")
            tok.save_gpt2(d / "gpt2")
            tok.save_tiktoken(d / "tok.tiktoken")
            tok.save_huggingface(d / "tokenizer.json")
            cache[mod.__name__] = {
                "native": (d / "tok.bpe").read_bytes(),
                "vocab.json": (d / "gpt2" / "vocab.json").read_bytes(),
                "merges.txt": (d / "gpt2" / "merges.txt").read_bytes(),
                "tiktoken": (d / "tok.tiktoken").read_bytes(),
                "huggingface": (d / "tokenizer.json").read_bytes(),
            }
        return cache[mod.__name__]

    return make


@st.composite
def mutated(draw, data):
    kind = draw(
        st.sampled_from(
            [
                "truncate",
                "bytes",
                "drop",
                "double",
                "swap",
                "random",
                "json",
                "shape",
                "shape",
                "crlf",
            ]
        )
    )
    if kind == "crlf":
        return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + data.replace(b"\n", b"\r\n")
    if kind == "shape":
        try:
            doc = json.loads(data)
        except ValueError:
            kind = "bytes"
        else:
            return json.dumps(draw(reshaped(doc)), ensure_ascii=draw(st.booleans())).encode()
    if kind == "truncate":
        return data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    if kind == "bytes":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    if kind == "random":
        return draw(st.binary(max_size=300))
    if kind == "json":
        return draw(
            st.sampled_from(
                [
                    b"{}",
                    b"[]",
                    b"null",
                    b'{"model": 3}',
                    b'{"model": {"vocab": []}}',
                    b'{"a": 1}',
                    b'"x"',
                    b"1e999",
                    b'{"model": {"type": "BPE", "vocab": {"a": -1}}}',
                ]
            )
        )
    lines = data.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    if kind == "drop":
        del lines[i]
    elif kind == "double":
        lines.insert(i, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.just([]),
    st.just({}),
    st.just([1, "a"]),
    st.just({"a": 1}),
    st.just({"type": "BPE"}),
    st.just({"Regex": 5}),
    st.just([["a", "b"]]),
)


@st.composite
def reshaped(draw, doc):
    """`doc` with one node, found by a random walk from the root, replaced by a JSON value
    of another shape (the wrong-type fields a hand-edited or foreign file has)."""
    if not isinstance(doc, (dict, list)) or not doc:
        return draw(JSON_VALUES)
    keys = list(doc) if isinstance(doc, dict) else list(range(len(doc)))
    key = draw(st.sampled_from(keys[:50] + keys[-5:]))
    out = dict(doc) if isinstance(doc, dict) else list(doc)
    if draw(st.integers(0, 3)) == 0:
        out[key] = draw(JSON_VALUES)
    else:
        out[key] = draw(reshaped(doc[key]))
    return out


def check_whole(mod, tok):
    """A loaded tokenizer must be whole: it saves and reloads to itself and round-trips."""
    assert isinstance(tok, mod.Tokenizer)
    with tempfile.TemporaryDirectory() as d:
        tok.save(Path(d) / "again.bpe")
        assert mod.Tokenizer.load(Path(d) / "again.bpe") == tok
    if tok.pattern in mod.PATTERNS.values():  # a mutated custom regex may skip text, by design
        text = SAMPLE + EOT
        assert tok.decode(tok.encode_ordinary(text)) == text


def load_or_reject(mod, load):
    try:
        tok = load()
    except ValueError:
        return
    check_whole(mod, tok)


@FUZZ
@given(data=st.data())
def test_fuzz_native(mod, files, tmp_path, data):
    blob = data.draw(mutated(files(mod)["native"]))
    path = tmp_path / "f.bpe"
    path.write_bytes(blob)
    load_or_reject(mod, lambda: mod.Tokenizer.load(path))


@FUZZ
@given(data=st.data(), which=st.sampled_from(["vocab.json", "merges.txt"]))
def test_fuzz_gpt2(mod, files, tmp_path, data, which):
    valid = files(mod)
    blobs = {"vocab.json": valid["vocab.json"], "merges.txt": valid["merges.txt"]}
    blobs[which] = data.draw(mutated(blobs[which]))
    for name, blob in blobs.items():
        (tmp_path / name).write_bytes(blob)
    load_or_reject(
        mod, lambda: mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")
    )


@FUZZ
@given(data=st.data())
def test_fuzz_tiktoken(mod, files, tmp_path, data):
    blob = data.draw(mutated(files(mod)["tiktoken"]))
    path = tmp_path / "f.tiktoken"
    path.write_bytes(blob)
    load_or_reject(mod, lambda: mod.Tokenizer.from_tiktoken(path, pattern="gpt2",
                                                            special_tokens={EOT: 100000}))


@FUZZ
@given(data=st.data())
def test_fuzz_huggingface(mod, files, tmp_path, data):
    blob = data.draw(mutated(files(mod)["huggingface"]))
    path = tmp_path / "tokenizer.json"
    path.write_bytes(blob)
    load_or_reject(mod, lambda: mod.Tokenizer.from_huggingface(path))


@settings(max_examples=EXAMPLES * 5, deadline=None)
@given(text=st.text(max_size=200))
def test_fuzz_encode_decode(gpt2, text):
    ids = gpt2.encode(text, disallowed_special=())
    expected = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert gpt2.decode(ids) == expected
    assert list(gpt2.encode_iterable([text[: len(text) // 2], text[len(text) // 2:]],
                                    disallowed_special=())) == ids


@settings(max_examples=EXAMPLES * 5, deadline=None)
@given(
    ids=st.lists(
        st.one_of(
            st.integers(-5, 50300),
            st.integers(),
            st.floats(),
            st.text(max_size=2),
            st.none(),
            st.booleans(),
        ),
        max_size=20,
    )
)
def test_fuzz_decode_ids(gpt2, ids):
    try:
        out = gpt2.decode_bytes(ids)
    except (ValueError, TypeError):   # (a bool is its int, as tiktoken reads it)
        assert any(not (isinstance(i, int) and 0 <= i < 50257) for i in ids)
        return
    assert all(isinstance(i, int) and 0 <= i < 50257 for i in ids)
    assert out == b"".join(gpt2.token_bytes(int(i)) for i in ids)


def test_hostile_ids_and_nesting(mod, files, tmp_path):
    """Ids past int32 and JSON nested past the recursion limit are ValueErrors, and a
    sparse but legal id gets no id-sized tables (it loads at once)."""
    valid = files(mod)["native"].decode()
    huge = valid.replace('"<|endoftext|>"', '"<|endoftext|>"').rsplit("\nspecials 1\n", 1)
    for special_id in (2**31, 10**12):
        (tmp_path / "big.bpe").write_text(f"{huge[0]}\nspecials 1\n{special_id} \"<|x|>\"\nend\n")
        with pytest.raises(ValueError):
            mod.Tokenizer.load(tmp_path / "big.bpe")
    (tmp_path / "sparse.bpe").write_text(f"{huge[0]}\nspecials 1\n{2**31 - 1} \"<|x|>\"\nend\n")
    tok = mod.Tokenizer.load(tmp_path / "sparse.bpe")
    ids = tok.encode("the cat<|x|>", allowed_special="all")
    assert ids[-1] == 2**31 - 1 and tok.decode(ids) == "the cat<|x|>"
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "tokenizer.json").write_text(deep)
    with pytest.raises(ValueError):
        mod.Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    (tmp_path / "vocab.json").write_text(deep)
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    with pytest.raises(ValueError):
        mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")
    lines = valid.split("\n")
    lines[1] = "pattern " + deep
    (tmp_path / "deep.bpe").write_text("\n".join(lines))
    with pytest.raises(ValueError):
        mod.Tokenizer.load(tmp_path / "deep.bpe")


# ---------------------------------------------------------------------------------------
# sparse ids through every loader, then encode in a fresh process

SPARSE_TEXTS = [
    SAMPLE,
    f"the cat{EOT}sat<|pad|>on 😀 the mat",
    "",
    "naïve café 123 456\n\n" * 3,
    EOT,
]
SPARSE_SCRIPT = """
import importlib, json, sys
mod = importlib.import_module(sys.argv[1])
d, specials, texts = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
T = mod.Tokenizer
loads = {"native": lambda: T.load(d + "/tok.bpe"),
         "gpt2": lambda: T.from_gpt2(d + "/vocab.json", d + "/merges.txt"),
         "huggingface": lambda: T.from_huggingface(d + "/tokenizer.json"),
         "tiktoken": lambda: T.from_tiktoken(d + "/tok.tiktoken", pattern="gpt2",
                                             special_tokens=specials)}
out = {}
for name in sys.argv[5].split(","):
    tok = loads[name]()
    ids = [tok.encode(t, allowed_special="all") for t in texts]
    out[name] = [ids, [tok.decode(i) for i in ids], tok.encode_batch(texts, allowed_special="all")]
print(json.dumps(out))
"""

_SPARSE_BASE = []


def sparse_base():
    """A small trained tokenizer (pure Python) and tiktoken's encoder of its dense ids."""
    if not _SPARSE_BASE:
        import tiktoken

        import bpe_fallback

        base = bpe_fallback.Tokenizer.train(
            SAMPLE * 3, 256 + 40 + 2, special_tokens=[EOT, "<|pad|>"]
        )
        special_ids = set(base.special_tokens.values())
        enc = tiktoken.Encoding(
            "dense",
            pat_str=base.pattern,
            special_tokens=base.special_tokens,
            mergeable_ranks={b: i for i, b in base.vocab.items() if i not in special_ids},
        )
        _SPARSE_BASE.extend([bpe_fallback, base, enc])
    return _SPARSE_BASE


@pytest.mark.slow
@settings(
    max_examples=max(EXAMPLES // 4, 4),
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), monotone=st.booleans())
def test_fuzz_sparse_ids_every_loader(mod, tmp_path_factory, data, monotone):
    """Ids anywhere in [0, 2**31) -- gaps, the largest id, bytes after merges -- survive every
    format, and a fresh process that loads the file encodes and decodes as tiktoken does on
    the same model with dense ids (a crash there fails the test, it cannot take pytest down)."""
    import subprocess
    import sys

    fallback, base, enc = sparse_base()
    n = len(base.vocab)
    ids = data.draw(
        st.lists(
            st.one_of(st.integers(0, 2**31 - 1), st.integers(0, 3 * n), st.just(2**31 - 1)),
            min_size=n,
            max_size=n,
            unique=True,
        )
    )
    if monotone:
        ids.sort()
    new = dict(zip(sorted(base.vocab), ids))
    special_ids = set(base.special_tokens.values())
    vocab = {new[i]: b for i, b in base.vocab.items() if i not in special_ids}
    specials = {s: new[i] for s, i in base.special_tokens.items()}
    tok = fallback.Tokenizer.from_merges(base.merges, vocab=vocab, special_tokens=specials)
    d = tmp_path_factory.mktemp("sparse")
    tok.save(d / "tok.bpe")
    tok.save_gpt2(d)
    formats = ["native", "gpt2"]
    try:
        tok.save_huggingface(d / "tokenizer.json")
        formats.append("huggingface")
    except ValueError as e:  # tokenizers numbers added tokens on from its vocabulary's size
        assert "numbers added tokens" in str(e)
    if monotone:
        tok.save_tiktoken(d / "tok.tiktoken")
        formats.append("tiktoken")
    where = os.path.dirname(os.path.abspath(mod.__file__))
    result = subprocess.run(
        [sys.executable, "-c", SPARSE_SCRIPT, mod.__name__, str(d), json.dumps(specials),
         json.dumps(SPARSE_TEXTS), ",".join(formats)],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")])))
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    want = [[new[i] for i in enc.encode(t, allowed_special="all")] for t in SPARSE_TEXTS]
    for name, (got, decoded, batch) in json.loads(result.stdout).items():
        assert got == want, name
        assert batch == want, name
        assert decoded == SPARSE_TEXTS, name
