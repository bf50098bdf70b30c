"""A drop-in for tiktoken in real programs, on both backends.

- Pickling: a registered encoding pickles by name (< 1 KB) with its file's sha256, any other
  tokenizer compactly; unpickling a model this process has already built shares its core;
  `multiprocessing.Pool(2).map(enc.encode_ordinary, docs, chunksize=64)` gives the serial ids.
- `import bpe as tiktoken` runs tiktoken's README: `Encoding(...)`, `encoding_for_model`,
  `encoding_name_for_model`, `list_encoding_names`, "Extending tiktoken" (`_pat_str`,
  `_mergeable_ranks`, `_special_tokens`), hashable encodings. The oracle is tiktoken 0.14.
- get_encoding on a fresh machine: tiktoken's cache (shared both ways), else a download from
  tiktoken's URL (here a local HTTP server: BPE_ENCODINGS_URL), the pinned sha256 checked,
  the cache written atomically; BPE_OFFLINE=1 never downloads. Each case runs in a fresh
  process (a process keeps the encodings it has loaded, as tiktoken does).
- transformers round trips: AutoTokenizer / GPT2TokenizerFast save_pretrained directories load
  back; a post-processor is accepted exactly when it provably adds and changes nothing
  (`tokenizers` itself is the oracle).
- An unknown id's error has a public type; warnings point at the caller's line.
"""

import base64
import copy
import functools
import gzip
import hashlib
import http.server
import inspect
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings

import pytest

from helpers import (
    DATA,
    EOT,
    GPT2_MERGES,
    GPT2_VOCAB,
    PLAIN_TEXTS,
    corpus_with_specials,
    environ,
    gpt2_ranks,
    gpt2_tiktoken,
    read_data,
    texts_with,
)

tiktoken = pytest.importorskip("tiktoken")

TESTS = os.path.dirname(os.path.abspath(__file__))
BLOB = "https://openaipublic.blob.core.windows.net/"
FILES = {name: f"encodings/{name}.tiktoken" for name in ("r50k_base", "cl100k_base", "o200k_base")}
TEXT = "hello world, it's 12:30! naïve café 日本語 😀" + EOT


@functools.cache
def ranks_file(name):
    """The bytes of OpenAI's .tiktoken file for `name`, made from tests/data."""
    if name == "r50k_base":
        return b"".join(base64.b64encode(t) + b" %d\n" % i
                        for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    return gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes())


@functools.cache
def pinned(name):
    """The sha256 tiktoken pins for the file (checked against tiktoken_ext's source)."""
    import tiktoken_ext.openai_public

    digest = hashlib.sha256(ranks_file(name)).hexdigest()
    assert digest in inspect.getsource(tiktoken_ext.openai_public), name
    return digest


def cache_key(name):
    """tiktoken's cache file name for `name`'s file: the sha1 of its URL."""
    return hashlib.sha1((BLOB + FILES[name]).encode()).hexdigest()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """A tiktoken cache directory holding r50k_base, cl100k_base and o200k_base."""
    d = tmp_path_factory.mktemp("dropin-cache")
    for name in FILES:
        (d / cache_key(name)).write_bytes(ranks_file(name))
    return d


@pytest.fixture(scope="session")
def paths(tmp_path_factory):
    """name -> a local ranks file for get_encoding(name, path=...)."""
    d = tmp_path_factory.mktemp("dropin-ranks")
    (d / "r50k_base.tiktoken").write_bytes(ranks_file("r50k_base"))
    return {"gpt2": GPT2_VOCAB, "r50k_base": d / "r50k_base.tiktoken",
            "cl100k_base": DATA / "cl100k_base.tiktoken.gz",
            "o200k_base": DATA / "o200k_base.tiktoken.gz"}


_OURS = {}


@pytest.fixture(scope="session")
def ours(mod, paths):
    """ours(name) -> mod.get_encoding(name, path=a local file), once per backend."""
    def get(name):
        key = (mod.__name__, name)
        if key not in _OURS:
            _OURS[key] = mod.get_encoding(name, path=paths[name])
        return _OURS[key]
    return get


STEERING = ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "BPE_OFFLINE", "BPE_ENCODINGS_URL",
            "BPE_DOWNLOAD_TIMEOUT")


def fresh_env(**values):
    """os.environ without the variables that steer get_encoding, plus `values`."""
    env = {k: v for k, v in os.environ.items() if k not in STEERING}
    env["PYTHONPATH"] = os.pathsep.join([TESTS] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1,localhost"  # the test server is local
    env.update({k: v for k, v in values.items() if v is not None})
    return env


def run_fresh(mod, code, env, timeout=300):
    """Run `code` in a fresh interpreter (the backend's directory as cwd, tests/ importable);
    the JSON object it prints last."""
    cwd = os.path.dirname(os.path.abspath(mod.__file__))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=timeout, cwd=cwd, env=env)
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 0 and lines, run.stderr[-3000:]
    return json.loads(lines[-1])


GET_ENCODING = """
import json, time
import {mod} as m
t = time.monotonic()
try:
    tok = m.get_encoding({name!r})
    out = {{"ok": True, "name": tok.name, "ids": tok.encode({text!r}, allowed_special="all")}}
except Exception as e:
    out = {{"ok": False, "type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
           "message": str(e)}}
out["seconds"] = time.monotonic() - t
print(json.dumps(out))
"""


def fresh_get_encoding(mod, name, timeout=300, **env):
    """get_encoding(name) in a fresh process with the environment variables `env`."""
    code = GET_ENCODING.format(mod=mod.__name__, name=name, text=TEXT)
    return run_fresh(mod, code, fresh_env(**env), timeout=timeout)


def gpt2_ids(text=TEXT):
    """GPT-2's ids (r50k_base's) by tiktoken, built offline from tests/data."""
    return gpt2_tiktoken().encode(text, allowed_special="all")


# ---------------------------------------------------------------------------
# pickling
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])  # o200k_base: slow (conftest)
def test_registered_encoding_pickles_by_name(mod, ours, name):
    enc = ours(name)
    text = "hello world<|endoftext|> 😀"
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(enc, protocol)
        assert len(data) < 1024, (protocol, len(data))
        again = pickle.loads(data)
        assert type(again) is type(enc) and again == enc and again.name == name
        assert again.core is enc.core  # the model this process built, not a rebuild
        assert again.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert len(pickle.dumps(enc.encode_ordinary)) < 1024  # what Pool.map sends with every task


def test_a_registered_pickle_names_its_file(mod, ours):
    """The pickle carries the sha256 of the ranks file: one that is not the file of that
    name is refused, not silently read as another file."""
    enc = ours("r50k_base")
    data = pickle.dumps(enc)
    pin = pinned("r50k_base").encode()
    assert pin in data
    forged = data.replace(pin, hashlib.sha256(b"another file").hexdigest().encode())
    with pytest.raises(ValueError, match="sha256"):
        pickle.loads(forged)


def test_a_renamed_encoding_keeps_its_name(mod, paths):
    tok = mod.get_encoding("r50k_base", path=paths["r50k_base"])
    tok.name = "mine"
    again = pickle.loads(pickle.dumps(tok))
    assert again.name == "mine" and again == tok


COMPACT = 16  # bytes per merge at most, plus a little for the pattern and the specials


def test_other_tokenizers_pickle_compactly(mod, gpt2):
    trained = mod.Tokenizer.train(corpus_with_specials(60000), 256 + 1500 + 2,
                                  special_tokens=[EOT, "<s>"])
    assert len(trained.merges) > 1000
    for tok in (gpt2, trained):  # GPT-2's own ids (not 256 + k), and a trained tokenizer
        data = pickle.dumps(tok)
        assert len(data) <= COMPACT * len(tok.merges) + 2048, (len(data), len(tok.merges))
        again = pickle.loads(data)
        assert again == tok and type(again) is type(tok)
        assert again.encode(TEXT, allowed_special="all") == tok.encode(TEXT, allowed_special="all")
    plain = mod.Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
    plain.name = "tiny"
    again = pickle.loads(pickle.dumps(plain))
    assert again == plain and again.name == "tiny"


def test_unpickling_a_built_model_reuses_its_core(mod, gpt2):
    again = pickle.loads(pickle.dumps(gpt2))
    assert again == gpt2 and again.core is gpt2.core
    assert pickle.loads(pickle.dumps(again)).core is gpt2.core
    assert copy.deepcopy(gpt2) == gpt2


def test_the_core_cache_tells_models_apart(mod):
    """Models that differ in one thing only (pattern, specials, ids, one merge) each get
    their own core back."""
    merges = [(b"h", b"i"), (b"hi", b"!")]
    swapped = {i: bytes([i ^ 1]) for i in range(256)}
    swapped.update({256: b"hi", 257: b"hi!"})
    toks = [
        mod.Tokenizer.from_merges(merges),
        mod.Tokenizer.from_merges(merges, special_tokens=["<s>"]),
        mod.Tokenizer.from_merges(merges, special_tokens=["<t>"]),
        mod.Tokenizer.from_merges(merges, special_tokens={"<s>": 300}),
        mod.Tokenizer.from_merges(merges, pattern="words"),
        mod.Tokenizer.from_merges(merges[:1]),
        mod.Tokenizer.from_merges(merges, vocab=swapped),
    ]
    assert len({id(t.core) for t in toks}) == len(toks)
    for tok in toks:
        again = pickle.loads(pickle.dumps(tok))
        assert again == tok and again.core is tok.core
        text = "hi! <s>"
        assert again.encode(text, disallowed_special=()) == tok.encode(text, disallowed_special=())


LOAD_PICKLE = """
import json, pickle
with open({path!r}, "rb") as f:
    tok = pickle.load(f)
print(json.dumps({{"type": type(tok).__module__ + "." + type(tok).__name__, "name": tok.name,
                  "ids": tok.encode({text!r}, allowed_special="all")}}))
"""


@pytest.mark.parametrize("source", ["path", pytest.param("cache", marks=pytest.mark.slow),
                                    pytest.param("from_gpt2", marks=pytest.mark.slow)])
def test_pickles_load_in_a_fresh_process(mod, paths, cache_dir, tmp_path, source):
    """A process that has built nothing reads the pickle: a registered encoding from the
    file it was loaded from or from tiktoken's cache, any other from the pickle itself."""
    if source == "path":
        tok = mod.get_encoding("gpt2", path=paths["gpt2"])
        env = fresh_env(TIKTOKEN_CACHE_DIR=str(tmp_path / "empty"), BPE_OFFLINE="1")
    elif source == "cache":
        with environ(TIKTOKEN_CACHE_DIR=str(cache_dir)):
            tok = mod.get_encoding("r50k_base")
        env = fresh_env(TIKTOKEN_CACHE_DIR=str(cache_dir), BPE_OFFLINE="1")
    else:
        tok = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES)
        env = fresh_env(TIKTOKEN_CACHE_DIR=str(tmp_path / "empty"), BPE_OFFLINE="1")
    (tmp_path / "tok.pickle").write_bytes(pickle.dumps(tok))
    out = run_fresh(mod, LOAD_PICKLE.format(path=str(tmp_path / "tok.pickle"), text=TEXT), env)
    assert out["type"] == f"{mod.__name__}.Tokenizer"
    assert out["name"] == tok.name
    assert out["ids"] == gpt2_ids()


POOL = """
import json, multiprocessing, os, sys
import {mod} as m

_first = {{}}


def same_core(item):
    tok, doc = item
    first = _first.setdefault(id(type(tok)), tok)  # kept: the core it holds stays alive
    return os.getpid(), tok.core is first.core, tok.encode_ordinary(doc)


if __name__ == "__main__":
    enc = m.get_encoding("gpt2", path={gpt2!r})
    trained = m.Tokenizer.train(open({corpus!r}, encoding="utf-8").read()[:30000], 256 + 300)
    text = open({corpus!r}, encoding="utf-8").read()
    docs = [d for d in text.split("\\n") if d.strip()][:700]
    out = {{}}
    for method in sys.argv[1:]:
        ctx = multiprocessing.get_context(method)
        for label, tok in (("registered", enc), ("trained", trained)):
            serial = [tok.encode_ordinary(d) for d in docs]
            with ctx.Pool(2) as pool:
                ok = pool.map(tok.encode_ordinary, docs, chunksize=64) == serial
                seen = pool.map(same_core, [(tok, d) for d in docs[:200]], chunksize=8)
            ok = ok and [ids for _, _, ids in seen] == serial[:200]
            out[method + " " + label] = [ok, all(same for _, same, _ in seen)]
    print(json.dumps(out))
"""


@pytest.mark.parametrize("method", ["fork", pytest.param("spawn", marks=pytest.mark.slow)])
def test_pool_map_gives_the_serial_ids(mod, tmp_path, method):
    """Pool(2).map(enc.encode_ordinary, docs, chunksize=64) (fork and spawn) equals the serial
    ids, for a registered encoding and a trained tokenizer; each worker builds a model once
    and reuses its core for every later task."""
    script = tmp_path / "pool_script.py"
    script.write_text(POOL.format(mod=mod.__name__, gpt2=str(GPT2_VOCAB),
                                  corpus=str(DATA / "corpus.en")))
    env = fresh_env(TIKTOKEN_CACHE_DIR=str(tmp_path / "empty"), BPE_OFFLINE="1")
    run = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True,
                         timeout=600,
                         cwd=os.path.dirname(os.path.abspath(mod.__file__)), env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out == {k: [True, True] for k in out} and len(out) == 2, out


# ---------------------------------------------------------------------------
# `import bpe as tiktoken`: tiktoken's module surface and README
# ---------------------------------------------------------------------------

SURFACE = ["Encoding", "get_encoding", "encoding_for_model", "encoding_name_for_model",
           "list_encoding_names"]


def test_tiktokens_module_surface(mod):
    for name in SURFACE:
        assert callable(getattr(mod, name, None)), name
        assert name in mod.__all__, name


@pytest.mark.slow  # o200k_base
def test_readme_quick_start(mod, cache_dir):
    """tiktoken's README, first block, with `import bpe as tiktoken`."""
    tiktoken_ = mod
    with environ(TIKTOKEN_CACHE_DIR=str(cache_dir)):
        enc = tiktoken_.get_encoding("o200k_base")
        assert enc.decode(enc.encode("hello world")) == "hello world"

        # To get the tokeniser corresponding to a specific model in the OpenAI API:
        enc = tiktoken_.encoding_for_model("gpt-4o")
        assert enc.name == "o200k_base"
        # one instance per name, as tiktoken's registry: a program may call it per request
        assert tiktoken_.get_encoding("o200k_base") is enc
    ref = tiktoken.Encoding("o200k-ref", pat_str=enc._pat_str, mergeable_ranks=enc._mergeable_ranks,
                            special_tokens=enc._special_tokens)
    text = read_data("corpus.en", 3000) + EOT
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")


@pytest.mark.slow  # cl100k_base; test_the_encoding_constructor: the same on GPT-2's ranks
def test_readme_extending_tiktoken(mod, cache_dir):
    """tiktoken's README, "Extending tiktoken", with `import bpe as tiktoken`; the same code
    run by tiktoken is the oracle."""

    def extend(tiktoken):  # the README's code, as written
        cl100k_base = tiktoken.get_encoding("cl100k_base")

        # In production, load the arguments directly instead of accessing private attributes
        # See openai_public.py for examples of arguments for specific encodings
        enc = tiktoken.Encoding(
            # If you're changing the set of special tokens, make sure to use a different name
            # It should be clear from the name what behaviour to expect.
            name="cl100k_im",
            pat_str=cl100k_base._pat_str,
            mergeable_ranks=cl100k_base._mergeable_ranks,
            special_tokens={
                **cl100k_base._special_tokens,
                "<|im_start|>": 100264,
                "<|im_end|>": 100265,
            }
        )
        return cl100k_base, enc

    with environ(TIKTOKEN_CACHE_DIR=str(cache_dir)):
        base, enc = extend(mod)
        ref_base, ref = extend(tiktoken)
    assert base._pat_str == ref_base._pat_str
    assert base._mergeable_ranks == ref_base._mergeable_ranks
    assert base._special_tokens == ref_base._special_tokens
    assert isinstance(enc, mod.Encoding) and isinstance(enc, mod.Tokenizer)
    assert enc.name == "cl100k_im" and enc.n_vocab == ref.n_vocab
    text = ("<|im_start|>user\nhello there, naïve café<|im_end|>\n"
            "<|im_start|>assistant\n日本語<|im_end|>")
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="im_start"):
        enc.encode(text)
    assert enc.decode(ref.encode(text, allowed_special="all")) == text


_ENCODINGS = {}


def made_with_encoding(mod):
    """mod.Encoding of GPT-2's ranks with tiktoken's r50k pattern (possessive quantifiers)."""
    from tiktoken_ext.openai_public import r50k_pat_str

    if mod.__name__ not in _ENCODINGS:
        _ENCODINGS[mod.__name__] = mod.Encoding("gpt2-copy", pat_str=r50k_pat_str,
                                                mergeable_ranks=gpt2_ranks(),
                                                special_tokens={EOT: 50256})
    return _ENCODINGS[mod.__name__]


def test_the_encoding_constructor(mod):
    from tiktoken_ext.openai_public import r50k_pat_str

    enc = made_with_encoding(mod)
    ref = tiktoken.Encoding("gpt2-copy", pat_str=r50k_pat_str, mergeable_ranks=gpt2_ranks(),
                            special_tokens={EOT: 50256})
    assert isinstance(enc, mod.Encoding) and isinstance(enc, mod.Tokenizer)
    assert enc.name == ref.name and enc.n_vocab == ref.n_vocab == 50257
    assert enc.max_token_value == ref.max_token_value and enc.eot_token == ref.eot_token
    assert enc._pat_str == r50k_pat_str and enc._special_tokens == {EOT: 50256}
    assert enc._mergeable_ranks == gpt2_ranks()
    texts = [*PLAIN_TEXTS.values(), *texts_with([EOT]).values(), "a   \n\n  b  ", "x" + " " * 9]
    for text in texts:
        assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


@pytest.mark.parametrize("falsy", [None, "", 0, False])
def test_a_falsy_disallowed_special_disallows_nothing(mod, falsy):
    """tiktoken checks `if disallowed_special:`: None, "", 0 and False disallow nothing."""
    ours = mod.Encoding("g", pat_str=mod.PATTERNS["gpt2"], mergeable_ranks=gpt2_ranks(),
                        special_tokens={EOT: 50256})
    theirs = gpt2_tiktoken()
    text = "hi" + EOT
    assert ours.encode(text, disallowed_special=falsy) == theirs.encode(
        text, disallowed_special=falsy)
    assert ours.encode_to_numpy(text, disallowed_special=falsy).tolist() == theirs.encode_to_numpy(
        text, disallowed_special=falsy).tolist()
    assert ours.encode_with_unstable(text, disallowed_special=falsy)[0] == \
        theirs.encode_with_unstable(text, disallowed_special=falsy)[0]
    if falsy == "":   # (tiktoken's encode_batch takes only that one)
        assert ours.encode_batch([text], disallowed_special=falsy) == theirs.encode_batch(
            [text], disallowed_special=falsy)
    with pytest.raises(TypeError):
        ours.encode(text, disallowed_special=3)


def test_decode_reads_bytes_and_bools_as_tiktoken_does(mod):
    ours = mod.Encoding("g", pat_str=mod.PATTERNS["gpt2"], mergeable_ranks=gpt2_ranks(),
                        special_tokens={EOT: 50256})
    theirs = gpt2_tiktoken()
    for ids in (b"ab", [True, 1, False], bytearray(b"xy")):
        assert ours.decode(ids) == theirs.decode(ids)
        assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)


def test_an_id_that_is_an_array_is_a_type_error(mod):
    np = pytest.importorskip("numpy")
    ranks = {bytes([b]): b for b in range(256)}
    for specials, mergeable in (({"<s>": np.array([1, 2])}, ranks),
                                ({}, {**ranks, b"ab": np.array([256, 257])})):
        with pytest.raises(TypeError, match="ndarray"):
            mod.Encoding("a", pat_str=r"\S+|\s+", mergeable_ranks=mergeable,
                         special_tokens=specials)


def test_the_encoding_constructor_checks_its_arguments(mod):
    from tiktoken_ext.openai_public import r50k_pat_str

    small = {bytes([b]): b for b in range(256)}
    small[b"hi"] = 256
    args = dict(pat_str=r50k_pat_str, mergeable_ranks=small, special_tokens={EOT: 257})
    enc = mod.Encoding("small", explicit_n_vocab=258, **args)
    assert enc.encode("hi hi" + EOT, allowed_special="all") == [256, 32, 256, 257]
    with pytest.raises((ValueError, AssertionError)):  # tiktoken: AssertionError
        mod.Encoding("small", explicit_n_vocab=300, **args)
    with pytest.raises(TypeError):  # keyword-only, as tiktoken's
        mod.Encoding("small", r50k_pat_str, small, {})
    for bad in ["258", 258.0, True]:  # tiktoken: AssertionError, or 258.0 taken as 258
        with pytest.raises(TypeError, match="explicit_n_vocab must be an int"):
            mod.Encoding("small", explicit_n_vocab=bad, **args)
    with pytest.raises(TypeError, match="train"):  # no arguments: how to make one
        mod.Tokenizer()
    with pytest.raises(ValueError):  # "hi" without "h" and "i" could never be made
        mod.Encoding("bad", pat_str=r50k_pat_str, mergeable_ranks={b"hi": 0}, special_tokens={})


def test_model_names_as_tiktoken(mod):
    from tiktoken.model import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING

    for model in MODEL_TO_ENCODING:
        assert mod.encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model), model
    for prefix in MODEL_PREFIX_TO_ENCODING:
        model = prefix + "2099-01-01"
        assert mod.encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model), model
    for model in ("no-such-model", "", "gpt", "GPT-4O"):
        with pytest.raises(KeyError):
            tiktoken.encoding_name_for_model(model)
        with pytest.raises(KeyError):
            mod.encoding_name_for_model(model)
    assert mod.encoding_name_for_model("gpt-oss-120b") == "o200k_harmony"


@pytest.mark.parametrize("models", [("davinci", "gpt2"), pytest.param(
    ("gpt-4", "gpt-3.5-turbo-0125", "text-embedding-3-small"), marks=pytest.mark.slow)])
def test_encoding_for_model(mod, cache_dir, models):
    with environ(TIKTOKEN_CACHE_DIR=str(cache_dir)):
        for model in models:
            enc = mod.encoding_for_model(model)
            assert enc.name == tiktoken.encoding_name_for_model(model)
            assert isinstance(enc, mod.Encoding)
            assert enc is mod.get_encoding(enc.name)


def test_list_encoding_names(mod):
    names = mod.list_encoding_names()
    assert isinstance(names, list)
    assert names == tiktoken.list_encoding_names()  # o200k_harmony too, in tiktoken's order


def test_encodings_are_hashable(mod, gpt2):
    again = pickle.loads(pickle.dumps(gpt2))
    other = mod.Tokenizer.from_merges([(b"h", b"i")])
    assert hash(again) == hash(gpt2)
    table = {gpt2: "gpt2", other: "other"}
    assert table[again] == "gpt2" and table[mod.Tokenizer.from_merges([(b"h", b"i")])] == "other"
    assert len({gpt2, again, other}) == 2

    @functools.cache
    def count(enc, text):
        return len(enc.encode(text))

    assert count(gpt2, "hello world") == 2 and count(again, "hello world") == 2


# ---------------------------------------------------------------------------
# get_encoding on a fresh machine: tiktoken's cache, else a download (a local server)
# ---------------------------------------------------------------------------

class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes, self.requests, self.stop = {}, [], threading.Event()

    def url(self, scenario):
        return f"http://127.0.0.1:{self.server_address[1]}/{scenario}/"

    def count(self, scenario):
        return sum(1 for p in self.requests if p.startswith(f"/{scenario}/"))


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        server = self.server
        server.requests.append(self.path)
        scenario = self.path.split("/")[1]
        body = server.routes.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if scenario == "short":  # half the body, then the connection closes
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif scenario == "stall":  # a little, then nothing until the test ends
            self.wfile.write(body[:1000])
            self.wfile.flush()
            server.stop.wait(120)
        else:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    """A local HTTP server with scenarios good / bad (wrong bytes) / short (truncated) /
    stall (sends 1000 bytes, then nothing): /<scenario>/encodings/r50k_base.tiktoken."""
    srv = _Server()
    good = ranks_file("r50k_base")
    lines = good.splitlines(keepends=True)
    bad = b"".join(lines[:1000] + [lines[1001], lines[1000]] + lines[1002:])  # two ranks swapped
    for scenario, body in (("good", good), ("bad", bad), ("short", good), ("stall", good)):
        srv.routes[f"/{scenario}/{FILES['r50k_base']}"] = body
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.stop.set()
        srv.shutdown()
        srv.server_close()
        thread.join(10)


def listing(directory):
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def test_download_fills_tiktokens_cache(mod, server, tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "sub"  # made where missing, as tiktoken does
    before = server.count("good")
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache),
                             BPE_ENCODINGS_URL=server.url("good"))
    assert out["ok"], out
    assert out["ids"] == gpt2_ids() and out["name"] == "r50k_base"
    assert server.count("good") == before + 1
    assert listing(cache) == [cache_key("r50k_base")]  # tiktoken's key, no temporary file left
    assert (cache / cache_key("r50k_base")).read_bytes() == ranks_file("r50k_base")

    # tiktoken reads the file we wrote (and never goes to the network)
    import tiktoken.load

    def no_network(url):
        raise AssertionError(f"tiktoken fetched {url}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    ranks = tiktoken.load.load_tiktoken_bpe(BLOB + FILES["r50k_base"], pinned("r50k_base"))
    assert ranks == gpt2_ranks()

    # a second fresh process reads the cache, the server is not asked again (gpt2: same file)
    for name in ("r50k_base", "gpt2"):
        out = fresh_get_encoding(mod, name, TIKTOKEN_CACHE_DIR=str(cache),
                                 BPE_ENCODINGS_URL=server.url("gone"))
        assert out["ok"] and out["ids"] == gpt2_ids(), out
    assert server.count("gone") == 0


@pytest.mark.parametrize("where", ["TIKTOKEN_CACHE_DIR",
                                   pytest.param("DATA_GYM_CACHE_DIR", marks=pytest.mark.slow),
                                   pytest.param("default", marks=pytest.mark.slow)])
def test_we_read_the_cache_tiktoken_wrote(mod, tmp_path, monkeypatch, where):
    import tiktoken.load

    served = []

    def network(url):  # tiktoken's download, served from tests/data
        served.append(url)
        assert url == BLOB + FILES["r50k_base"]
        return ranks_file("r50k_base")

    monkeypatch.setattr(tiktoken.load, "read_file", network)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    if where == "default":
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        cache, env = tmp / "data-gym-cache", {"TMPDIR": str(tmp)}
    else:
        cache = tmp_path / "cache"
        monkeypatch.setenv(where, str(cache))
        env = {where: str(cache)}
    tiktoken.load.read_file_cached(BLOB + FILES["r50k_base"], pinned("r50k_base"))
    assert served and listing(cache) == [cache_key("r50k_base")]
    out = fresh_get_encoding(mod, "r50k_base", BPE_OFFLINE="1", **env)
    assert out["ok"] and out["ids"] == gpt2_ids(), out


def test_offline_never_downloads(mod, server, tmp_path):
    cache = tmp_path / "cache"
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache), BPE_OFFLINE="1")
    assert not out["ok"] and out["type"] == "FileNotFoundError", out
    message = out["message"]
    assert str(cache / cache_key("r50k_base")) in message  # where to put the file
    assert BLOB + FILES["r50k_base"] in message and pinned("r50k_base") in message  # what file
    assert "path=" in message and "BPE_OFFLINE" in message
    out = fresh_get_encoding(mod, "cl100k_base", TIKTOKEN_CACHE_DIR="", BPE_OFFLINE="1")
    assert not out["ok"] and out["type"] == "FileNotFoundError", out
    assert "BPE_OFFLINE" in out["message"]
    # offline with a server at hand: still no request
    before = len(server.requests)
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache), BPE_OFFLINE="1",
                             BPE_ENCODINGS_URL=server.url("good"))
    assert not out["ok"] and out["type"] == "FileNotFoundError", out
    assert len(server.requests) == before and listing(cache) == []
    # offline, a cached file that is not OpenAI's is named as such
    cache.mkdir()
    (cache / cache_key("r50k_base")).write_bytes(ranks_file("r50k_base")[:-100])
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache), BPE_OFFLINE="1")
    assert not out["ok"] and out["type"] == "FileNotFoundError", out
    assert "does not match" in out["message"] and "BPE_OFFLINE" in out["message"]


def test_a_wrong_download_is_refused(mod, server, tmp_path):
    cache = tmp_path / "cache"
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache),
                             BPE_ENCODINGS_URL=server.url("bad"))
    assert not out["ok"] and out["type"] == "ValueError", out
    assert "sha256" in out["message"] and server.url("bad") in out["message"]
    assert listing(cache) == []


def test_a_truncated_download_is_refused(mod, server, tmp_path):
    cache = tmp_path / "cache"
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache),
                             BPE_ENCODINGS_URL=server.url("short"))
    assert not out["ok"] and "OSError" in out["mro"], out
    assert server.url("short") in out["message"]
    assert listing(cache) == []


def test_a_stalled_download_times_out(mod, server, tmp_path):
    cache = tmp_path / "cache"
    out = fresh_get_encoding(mod, "r50k_base", timeout=120, TIKTOKEN_CACHE_DIR=str(cache),
                             BPE_ENCODINGS_URL=server.url("stall"), BPE_DOWNLOAD_TIMEOUT="1")
    assert not out["ok"] and "OSError" in out["mro"], out
    assert server.url("stall") in out["message"] and "timed out" in out["message"]
    assert out["seconds"] < 30
    assert listing(cache) == []


@pytest.mark.slow
def test_a_mismatched_cache_file_is_fetched_again(mod, server, tmp_path):
    """tiktoken's rule: a cached file whose sha256 is wrong is downloaded again."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / cache_key("r50k_base")).write_bytes(ranks_file("r50k_base")[:-100])
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR=str(cache),
                             BPE_ENCODINGS_URL=server.url("good"))
    assert out["ok"] and out["ids"] == gpt2_ids(), out
    assert listing(cache) == [cache_key("r50k_base")]
    assert (cache / cache_key("r50k_base")).read_bytes() == ranks_file("r50k_base")


@pytest.mark.slow
def test_cache_off_downloads_without_writing(mod, server, tmp_path):
    out = fresh_get_encoding(mod, "r50k_base", TIKTOKEN_CACHE_DIR="", TMPDIR=str(tmp_path),
                             BPE_ENCODINGS_URL=server.url("good"))
    assert out["ok"] and out["ids"] == gpt2_ids(), out
    assert listing(tmp_path) == []


# ---------------------------------------------------------------------------
# transformers round trips; post-processors that add and change nothing
# ---------------------------------------------------------------------------

HF_SPECIALS = [EOT, "<s>", "<|pad|>"]
HF_TEXTS = [*PLAIN_TEXTS.values(), *texts_with([EOT, "<s>"]).values()]


@pytest.fixture(scope="module")
def hf_tok(mod):
    return mod.Tokenizer.train(corpus_with_specials(20000), 256 + 300 + len(HF_SPECIALS),
                               special_tokens=HF_SPECIALS)


def test_autotokenizer_save_pretrained_loads_back(mod, hf_tok, tmp_path):
    transformers = pytest.importorskip("transformers")
    hf_tok.save_pretrained(tmp_path / "a", bos_token="<s>", eos_token=EOT, pad_token="<|pad|>")
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "a"))
    hf.save_pretrained(str(tmp_path / "b"))
    back = mod.Tokenizer.from_huggingface(tmp_path / "b" / "tokenizer.json")
    assert back == hf_tok
    assert mod.Tokenizer.from_huggingface(tmp_path / "b") == hf_tok
    for text in HF_TEXTS:
        assert back.encode(text, allowed_special="all") == hf.encode(text)


def test_gpt2_tokenizer_fast_directory_loads(mod, gpt2, tmp_path):
    transformers = pytest.importorskip("transformers")
    # positional: vocab_file / merges_file in transformers 4, vocab / merges in 5
    hf = transformers.GPT2TokenizerFast(str(GPT2_VOCAB), str(GPT2_MERGES))
    assert len(hf) == 50257
    hf.save_pretrained(str(tmp_path))
    back = mod.Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    assert back == gpt2
    for text in HF_TEXTS:
        assert back.encode(text, allowed_special="all") == hf(text)["input_ids"]


def _processor(kind, tok):
    """A post-processor made by `tokenizers` itself."""
    from tokenizers import processors as P

    eot, s = tok.special_tokens[EOT], tok.special_tokens["<s>"]
    return {
        "template": lambda: P.TemplateProcessing(single="$A", pair="$A $B"),
        "template_type_ids": lambda: P.TemplateProcessing(single="$A:0", pair="$A:0 $B:1"),
        "template_zero": lambda: P.TemplateProcessing(single="$0", pair="$A $B:1"),
        "byte_level": lambda: P.ByteLevel(trim_offsets=False),
        "byte_level_prefix": lambda: P.ByteLevel(add_prefix_space=True, trim_offsets=True),
        "sequence": lambda: P.Sequence([P.ByteLevel(),
                                        P.TemplateProcessing(single="$A", pair="$A $B:1")]),
        "empty_sequence": lambda: P.Sequence([]),
        # these add ids, to single texts or to pairs
        "template_bos": lambda: P.TemplateProcessing(single="<s> $A", pair="<s> $A $B",
                                                     special_tokens=[("<s>", s)]),
        "template_eos": lambda: P.TemplateProcessing(single=f"$A {EOT}", pair=f"$A {EOT} $B {EOT}",
                                                     special_tokens=[(EOT, eot)]),
        "template_pair_sep": lambda: P.TemplateProcessing(single="$A", pair=f"$A {EOT} $B",
                                                          special_tokens=[(EOT, eot)]),
        "template_swapped_pair": lambda: P.TemplateProcessing(single="$A", pair="$B $A"),
        "bert": lambda: P.BertProcessing((EOT, eot), ("<s>", s)),
        "roberta": lambda: P.RobertaProcessing((EOT, eot), ("<s>", s)),
        "sequence_bert": lambda: P.Sequence([P.ByteLevel(),
                                             P.BertProcessing((EOT, eot), ("<s>", s))]),
    }[kind]()


ADD_NOTHING = ["template", "template_type_ids", "template_zero", "byte_level", "byte_level_prefix",
               "sequence", "empty_sequence"]
ADD_SOMETHING = ["template_bos", "template_eos", "template_pair_sep", "template_swapped_pair",
                 "bert", "roberta", "sequence_bert"]


@pytest.mark.parametrize("kind", ADD_NOTHING + ADD_SOMETHING)
def test_post_processors(mod, hf_tok, tmp_path, kind):
    """Accepted exactly when tokenizers gives the ids of the text, and of a pair the ids of
    the two texts one after the other (checked here with tokenizers itself)."""
    import tokenizers

    path = tmp_path / "tokenizer.json"
    hf_tok.save_huggingface(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    hf.post_processor = _processor(kind, hf_tok)
    hf.save(str(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    same = all(hf.encode(t).ids == hf_tok.encode(t, allowed_special="all") for t in HF_TEXTS[:6])
    a, b = "the cat sat", " on the mat"
    same = same and hf.encode(a, b).ids == hf_tok.encode(a) + hf_tok.encode(b)
    assert same == (kind in ADD_NOTHING)  # the oracle agrees with the lists above
    if kind in ADD_NOTHING:
        back = mod.Tokenizer.from_huggingface(path)
        assert back == hf_tok
    else:
        with pytest.raises(ValueError, match="post_processor"):
            mod.Tokenizer.from_huggingface(path)


# ---------------------------------------------------------------------------
# errors and warnings as a caller sees them
# ---------------------------------------------------------------------------

def test_an_unknown_id_has_a_public_error_type(mod, gpt2):
    for call in (lambda: gpt2.decode([10 ** 8]), lambda: gpt2.decode_bytes([50257]),
                 lambda: gpt2.token_bytes(-1), lambda: gpt2.decode_single_token_bytes(10 ** 8)):
        with pytest.raises(ValueError) as err:
            call()
        kind = type(err.value)
        assert isinstance(err.value, KeyError)  # what tiktoken raises
        assert not kind.__name__.startswith("_"), kind
        assert getattr(mod, kind.__name__) is kind  # importable by the name the traceback shows
        last = traceback.format_exception_only(kind, err.value)[-1]
        assert last.startswith(f"{kind.__module__}.{kind.__name__}: "), last
        assert "_Unknown" not in last


def _bad_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world \xff\xfe some bytes that are not UTF-8\n" * 200)
    return path


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


@pytest.mark.parametrize("workers", [1, 2])
def test_warnings_point_at_the_caller(mod, tmp_path, workers):
    bad = _bad_utf8(tmp_path)
    tok = mod.Tokenizer.from_merges([(b"h", b"e")])
    calls = {
        "train_files": lambda: mod.Tokenizer.train_files([bad, bad], 300, workers=workers,
                                                         chunk_size=4096),
        "encode_files": lambda: tok.encode_files([bad, bad], tmp_path / "out.bin", workers=workers),
    }
    for what, call in calls.items():
        caught = _caught(call)
        assert caught, what
        for w in caught:
            assert "invalid UTF-8" in str(w.message)
            assert w.filename == __file__, (what, w.filename, w.lineno)
