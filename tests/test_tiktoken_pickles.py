"""tiktoken's pickles, both ways, on both backends.

- A pickle tiktoken 0.14 writes (a registered encoding, by its name; an `Encoding(...)` of a
  program's, by its constructor's arguments) loads under `patch_tiktoken()` into this
  library's Encoding, with tiktoken's ids.
- A pickle written under the patch loads in a process with tiktoken alone (this library not
  imported there), with the same ids.
- Each way between two fresh processes: one with tiktoken only, one under the patch. The
  oracle is tiktoken itself: the ids of the process that runs it.
"""

import copy
import hashlib
import json
import os
import pickle
import subprocess
import sys

import pytest
from fresh import where

from helpers import gpt2_ranks

tiktoken = pytest.importorskip("tiktoken")
import tiktoken.core  # noqa: E402, F811 - the real module, imported before any patch

BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
MODULES = ("tiktoken", "tiktoken.core", "tiktoken.model", "tiktoken.registry", "tiktoken.load",
           "tiktoken_ext", "tiktoken_ext.openai_public")
TEXT = "hello world, it's 12:30 <|endoftext|> héllo <s>  ok\n\n"

# One process: `side` is "tiktoken" (tiktoken alone) or a backend module (patched first). It
# unpickles the encodings of `source` (if given), then makes its own (a registered encoding
# and a program's Encoding(...)), pickles them to `target` (protocols 0 and the highest);
# prints what it has.
PROCESS = """
import json, pickle, sys
side, source, target = sys.argv[1:4]
if side != "tiktoken":
    __import__(side).patch_tiktoken()
import tiktoken
out = {"ours": [m for m in ("bpe", "bpe_fallback") if m in sys.modules],
       "tiktoken": getattr(tiktoken.__spec__, "origin", None)}

def report(enc):
    return {"ids": enc.encode(TEXT, allowed_special="all"), "name": enc.name,
            "class": type(enc).__module__ + "." + type(enc).__qualname__}

if source != "-":
    with open(source, "rb") as f:
        for kind, data in pickle.load(f).items():
            out["loaded", kind] = [report(pickle.loads(d)) for d in data]
ranks = tiktoken.get_encoding("r50k_base")._mergeable_ranks
made = {"registered": tiktoken.get_encoding("r50k_base"),
        "custom": tiktoken.Encoding("mine", pat_str=r"\\s+|\\S+",
                                    mergeable_ranks={t: i for t, i in ranks.items() if i < 2000},
                                    special_tokens={"<s>": 2000, "<|endoftext|>": 2001})}
with open(target, "wb") as f:
    pickle.dump({k: [pickle.dumps(e, 0), pickle.dumps(e, pickle.HIGHEST_PROTOCOL)]
                 for k, e in made.items()}, f)
out["ours"] = out["ours"] + ["after"] + [m for m in ("bpe", "bpe_fallback") if m in sys.modules]
out.update({("made", k): [report(e)] for k, e in made.items()})
print(json.dumps({" ".join(k) if isinstance(k, tuple) else k: v for k, v in out.items()}))
""".replace("TEXT", repr(TEXT))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A tiktoken cache directory holding r50k_base (GPT-2's ranks)."""
    import base64

    d = tmp_path_factory.mktemp("pickle-cache")
    data = b"".join(base64.b64encode(t) + b" %d\n" % i
                    for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    (d / hashlib.sha1(f"{BLOB}r50k_base.tiktoken".encode()).hexdigest()).write_bytes(data)
    return d


def run(mod, side, source, target, cache):
    env = dict(os.environ, PYTHONPATH=where(mod), BPE_OFFLINE="1", TIKTOKEN_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", PROCESS, side, str(source), str(target)],
                          capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pickles_go_both_ways_between_tiktoken_and_the_patch(mod, cache, tmp_path):
    """tiktoken alone pickles; the patched process reads those and pickles its own; tiktoken
    alone reads those. Every encoding gives the ids tiktoken gives."""
    first = run(mod, "tiktoken", "-", tmp_path / "tiktoken.pickle", cache)
    patched = run(mod, mod.__name__, tmp_path / "tiktoken.pickle", tmp_path / "ours.pickle", cache)
    last = run(mod, "tiktoken", tmp_path / "ours.pickle", tmp_path / "again.pickle", cache)
    assert first["ours"] == last["ours"] == ["after"]  # this library never imported there
    assert first["tiktoken"].endswith(os.path.join("tiktoken", "__init__.py"))
    assert patched["tiktoken"] == f"{mod.__name__}.patch_tiktoken()"
    for kind in ("registered", "custom"):
        want = first[f"made {kind}"]
        assert want == last[f"made {kind}"] and want[0]["class"] == "tiktoken.core.Encoding"
        assert patched[f"made {kind}"] == want  # the same ids, name and class name
        assert patched[f"loaded {kind}"] == want * 2  # tiktoken's pickles, read under the patch
        assert last[f"loaded {kind}"] == want * 2  # the patch's pickles, read by tiktoken alone


# ---- in one process: the state tiktoken writes, read and written ---------------------------

@pytest.fixture
def patched(mod, cache, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    before = {name: sys.modules.get(name) for name in MODULES}
    mod.patch_tiktoken()
    yield sys.modules["tiktoken"]
    mod.unpatch_tiktoken()
    assert {name: sys.modules.get(name) for name in MODULES} == before


def small_ranks():
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"he": 256, b"ll": 257, b"hell": 258, b"hello": 259})
    return ranks


def test_tiktoken_state_shapes(mod, cache, monkeypatch):
    """The patched Encoding writes what tiktoken's __getstate__ gives, and reads it."""
    real = tiktoken.core.Encoding("mine", pat_str=r"\s+|\S+", mergeable_ranks=small_ranks(),
                                  special_tokens={"<s>": 260})
    text = "hello hell <s> he"
    want = real.encode(text, allowed_special="all")
    pickles = [pickle.dumps(real, protocol) for protocol in range(pickle.HIGHEST_PROTOCOL + 1)]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    mod.patch_tiktoken()
    try:
        import tiktoken as patched

        ours = patched.Encoding("mine", pat_str=r"\s+|\S+", mergeable_ranks=small_ranks(),
                                special_tokens={"<s>": 260})
        assert ours.__reduce__()[2] == real.__getstate__()
        for protocol, data in enumerate(pickles):  # tiktoken.core.Encoding: ours while patched
            again = pickle.loads(data)
            assert isinstance(again, mod.Tokenizer) and again.name == "mine"
            assert again.encode(text, allowed_special="all") == want
            assert pickle.loads(pickle.dumps(again, protocol)).encode(
                text, allowed_special="all") == want
        enc = patched.get_encoding("r50k_base")
        assert enc.__reduce__()[2] == "r50k_base"  # by name, as tiktoken's registry encodings
        assert patched.registry.ENCODINGS["r50k_base"] is enc
        again = pickle.loads(pickle.dumps(enc))
        assert again.core is enc.core and again.encode(TEXT, allowed_special="all") == \
            tiktoken.get_encoding("r50k_base").encode(TEXT, allowed_special="all")
        with pytest.raises(TypeError, match="state"):
            patched.Encoding.__new__(patched.Encoding).__setstate__(3)
    finally:
        mod.unpatch_tiktoken()


def test_copies_share_the_model(mod, patched):
    enc = patched.Encoding("mine", pat_str=r"\s+|\S+", mergeable_ranks=small_ranks(),
                           special_tokens={})
    for again in (copy.copy(enc), copy.deepcopy(enc)):
        assert type(again) is type(enc) and again.core is enc.core and again.name == "mine"


def test_what_tiktoken_cannot_rebuild_pickles_as_this_library(mod, patched):
    """A model not made from ranks (from_merges on the patched class) keeps this library's
    own pickle: tiktoken would rebuild other merges from its ids."""
    tok = patched.Encoding.from_merges([(b"l", b"l"), (b"h", b"e"), (b"he", b"ll")])
    assert tok.__reduce__()[0].__module__ == mod.Tokenizer.__reduce__(tok)[0].__module__
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok and type(again) is type(tok)


def test_after_unpatch_the_patched_class_pickles_as_this_library(mod, cache, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    mod.patch_tiktoken()
    try:
        import tiktoken as tk

        enc = tk.Encoding("mine", pat_str=r"\s+|\S+", mergeable_ranks=small_ranks(),
                          special_tokens={})
    finally:
        mod.unpatch_tiktoken()
    again = pickle.loads(pickle.dumps(enc))  # tiktoken.core.Encoding is tiktoken's again
    assert isinstance(again, mod.Tokenizer) and again.encode("hello") == [259]
