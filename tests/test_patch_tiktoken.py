"""Under the programs that import tiktoken themselves, on both backends.

- `patch_tiktoken()` puts modules made from this library's API under tiktoken's names
  (`tiktoken`, `.core`, `.model`, `.registry`, `.load`, `tiktoken_ext.openai_public`);
  `unpatch_tiktoken()` puts back what sys.modules held. The oracle is tiktoken 0.14 itself.
- Real clients (langchain-text-splitters, semchunk, chonkie, litellm with its local model
  map), each run in a fresh interpreter twice: with tiktoken (the control) and after
  `patch_tiktoken()`; the same ids, counts and chunks. A client that is not installed is
  skipped (`pip install '.[clients]'`).
- A `tiktoken_ext` plugin package written to a temporary folder: tiktoken and this library
  list the same names and give the same ids.
- An encoding pickled by a patched process brings the patch into a spawned worker.
- o200k_harmony (GPT-OSS): tiktoken's ids, two special token names on one id.
"""

import base64
import copy
import gzip
import hashlib
import importlib.util
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from helpers import DATA, EOT, gpt2_ranks, patched_worker

tiktoken = pytest.importorskip("tiktoken")
import tiktoken.load  # noqa: E402, F811 - after the skip: the real modules, before any patch
import tiktoken.registry  # noqa: E402

TESTS = os.path.dirname(os.path.abspath(__file__))
BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
MODULES = ("tiktoken", "tiktoken.core", "tiktoken.model", "tiktoken.registry", "tiktoken.load",
           "tiktoken_ext", "tiktoken_ext.openai_public")


def ranks_file(name):
    if name == "r50k_base":
        return b"".join(base64.b64encode(t) + b" %d\n" % i
                        for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    return gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes())


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    """A tiktoken cache directory holding r50k_base, cl100k_base and o200k_base."""
    d = tmp_path_factory.mktemp("patch-cache")
    for name in ("r50k_base", "cl100k_base", "o200k_base"):
        key = hashlib.sha1(f"{BLOB}{name}.tiktoken".encode()).hexdigest()
        (d / key).write_bytes(ranks_file(name))
    return d


@pytest.fixture
def patched(mod, cache, monkeypatch):
    """mod.patch_tiktoken() for one test (tiktoken's cache: `cache`), undone after it."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    before = {name: sys.modules.get(name) for name in MODULES}
    mod.patch_tiktoken()
    yield sys.modules["tiktoken"]
    mod.unpatch_tiktoken()
    assert {name: sys.modules.get(name) for name in MODULES} == before


def test_patch_puts_the_api_under_tiktokens_names(mod, patched):
    import tiktoken as tk
    import tiktoken.core
    import tiktoken.load
    import tiktoken.model
    import tiktoken.registry
    import tiktoken_ext.openai_public

    assert tk is patched and tk.core is tiktoken.core and tk.Encoding is tiktoken.core.Encoding
    enc = tk.get_encoding("cl100k_base")
    assert enc is tiktoken.registry.get_encoding("cl100k_base")  # one instance, as tiktoken's
    assert isinstance(enc, mod.Tokenizer) and isinstance(enc, tk.Encoding)
    assert repr(enc) == "<Encoding 'cl100k_base'>" and type(enc).__name__ == "Encoding"
    assert "tiktoken" in str(type(enc))  # how chonkie picks its adapter
    assert enc.core is mod.get_encoding("cl100k_base").core  # one model per process
    assert tiktoken.model.encoding_for_model("gpt-4o").name == "o200k_base"
    assert tiktoken.model.MODEL_TO_ENCODING["gpt-4"] == "cl100k_base"
    with pytest.raises(KeyError):
        tk.encoding_for_model("no-such-model")
    assert tk.list_encoding_names() == tiktoken.registry.list_encoding_names()
    made = tiktoken_ext.openai_public.ENCODING_CONSTRUCTORS["cl100k_base"]()
    assert made["mergeable_ranks"] == enc._mergeable_ranks
    assert tk.Encoding(**made).encode("hello world") == enc.encode("hello world")
    assert importlib.util.find_spec("tiktoken") is not None  # how programs ask if it is there
    mod.patch_tiktoken()  # again: harmless
    assert sys.modules["tiktoken"] is tk


def test_a_subclass_of_the_patched_encoding(mod, patched):
    import tiktoken as tk

    class Mine(tk.Encoding):
        def __init__(self):
            base = tk.get_encoding("gpt2")
            super().__init__("mine", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
                             special_tokens={})

    mine = Mine()
    assert isinstance(mine, mod.Tokenizer) and mine.name == "mine"
    assert mine.encode("hello world") == mod.get_encoding("gpt2").encode("hello world")


def test_a_subclass_of_the_patched_encoding_pickles_and_copies_as_itself(mod, patched,
                                                                          monkeypatch):
    import tiktoken as tk

    class Mine(tk.Encoding):
        def __init__(self, extra):
            super().__init__("mine", pat_str=r"\S+|\s+", special_tokens={"<e>": 257},
                             mergeable_ranks={bytes([b]): b for b in range(256)} | {b"ab": 256})
            self.extra = extra

    # pickled by reference, as a class of a module is
    Mine.__qualname__ = "PatchedSubclass"
    monkeypatch.setattr(sys.modules[__name__], "PatchedSubclass", Mine, raising=False)
    mine = Mine(7)
    for again in (pickle.loads(pickle.dumps(mine)), copy.copy(mine), copy.deepcopy(mine)):
        assert type(again) is Mine and again.name == "mine"
        assert again.encode("abab <e>", allowed_special="all") == [256, 256, 32, 257]
    plain = tk.Encoding("plain", pat_str=r"\S+", mergeable_ranks=mine._mergeable_ranks,
                        special_tokens={})
    assert type(copy.copy(plain)) is tk.Encoding


def test_unpatch_restores_tiktoken(mod, cache, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    real = sys.modules["tiktoken"]
    mod.patch_tiktoken()
    other = [m for m in ("bpe", "bpe_fallback") if m != mod.__name__][0]
    __import__(other).patch_tiktoken()  # another backend: replaces the patch
    assert sys.modules["tiktoken"].Encoding.__bases__[0] is __import__(other).Tokenizer
    mod.unpatch_tiktoken()
    mod.unpatch_tiktoken()  # harmless when not patched
    assert sys.modules["tiktoken"] is real and sys.modules["tiktoken.load"] is tiktoken.load
    import tiktoken as again

    assert again.get_encoding is tiktoken.registry.get_encoding


@pytest.mark.parametrize("shape", ["tabs", "spaces", "indented", "cr", "crlf", "bom", "signs",
                                   "underscores", "blank lines", "empty"])
def test_load_tiktoken_bpe_reads_what_tiktoken_reads(mod, patched, tmp_path, shape):
    """The patched loader reads the files tiktoken's reads, as it reads them."""
    real = tiktoken.load
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines += [f"{base64.b64encode(t).decode()} {256 + k}" for k, t in enumerate([b"ab", b"abc"])]
    text = {"tabs": "\n".join(line.replace(" ", "\t") for line in lines) + "\n",
            "spaces": "\n".join(line.replace(" ", "   ") for line in lines) + "\n",
            "indented": "\n".join(f"  {line} " for line in lines),
            "cr": "\r".join(lines), "crlf": "\r\n".join(lines) + "\r\n",
            "bom": "\ufeff" + "\n".join(lines), "signs": "\n".join(lines).replace(" 1", " +1"),
            "underscores": "\n".join(lines).replace(" 25", " 2_5"),
            "blank lines": "\n\n".join(lines) + "\n\n", "empty": ""}[shape]
    path = tmp_path / "odd.tiktoken"
    path.write_bytes(text.encode("utf-8"))
    assert sys.modules["tiktoken.load"].load_tiktoken_bpe(str(path)) == \
        real.load_tiktoken_bpe(str(path))


def test_tiktoken_load(mod, patched, tmp_path, monkeypatch):
    real = tiktoken.load  # the module captured before the patch
    load = sys.modules["tiktoken.load"]
    assert load is not real
    plain = tmp_path / "cl100k_base.tiktoken"
    plain.write_bytes(ranks_file("cl100k_base"))
    digest = hashlib.sha256(plain.read_bytes()).hexdigest()
    for cache_dir in ("ours", "theirs"):
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / cache_dir))
        f = load.load_tiktoken_bpe if cache_dir == "ours" else real.load_tiktoken_bpe
        assert f(str(plain), expected_hash=digest) == real.load_tiktoken_bpe(str(plain))
    # the same cache, the same keys: each reads what the other wrote
    assert os.listdir(tmp_path / "ours") == os.listdir(tmp_path / "theirs")
    with pytest.raises(ValueError):
        load.read_file_cached(str(plain), "0" * 64)
    assert load.read_file(str(plain)) == real.read_file(str(plain))
    vocab, merges = str(DATA / "gpt2_vocab.json"), str(tmp_path / "vocab.bpe")
    with open(merges, "wb") as f:  # GPT-2's vocab.bpe: a version line, then the merges
        f.write(b"#version: 0.2\n" + (DATA / "gpt2_merges.txt").read_bytes())
    assert (load.data_gym_to_mergeable_bpe_ranks(merges, vocab)
            == real.data_gym_to_mergeable_bpe_ranks(merges, vocab))
    monkeypatch.setenv("BPE_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="BPE_OFFLINE"):
        load.read_file("https://example.invalid/x.tiktoken")


def test_o200k_harmony(mod, cache, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    theirs = tiktoken.get_encoding("o200k_harmony")
    ours = mod.get_encoding("o200k_harmony", path=DATA / "o200k_base.tiktoken.gz")
    assert ours._special_tokens == theirs._special_tokens
    assert (ours.n_vocab, ours.max_token_value, ours.eot_token) == (
        theirs.n_vocab, theirs.max_token_value, theirs.eot_token)
    text = "<|start|>user<|message|>hi<|endofprompt|><|reserved_200018|><|end|>" + EOT
    ids = theirs.encode(text, allowed_special="all")
    assert ours.encode(text, allowed_special="all") == ids
    assert ours.decode(ids) == theirs.decode(ids)  # 200018 decodes as its first name
    assert mod.encoding_for_model("gpt-oss-120b").name == "o200k_harmony"
    again = pickle.loads(pickle.dumps(ours))
    assert again.decode([200018]) == "<|endofprompt|>"
    assert again._special_tokens == theirs._special_tokens
    made = mod.Tokenizer.from_merges([], special_tokens={"<a>": 300, "<b>": 300})
    assert made.decode(made.encode("<b><a>", allowed_special="all")) == "<a><a>"
    with pytest.raises(ValueError, match="share id 300"):
        made.save_huggingface(os.devnull)


def test_numpy_ids_are_ints(mod):
    np = pytest.importorskip("numpy")
    ranks = {bytes([b]): np.int64(b) for b in range(256)}
    ranks[b"hi"] = np.int32(256)
    args = dict(pat_str=mod.PATTERNS["gpt2"], mergeable_ranks=ranks,
                special_tokens={"<s>": np.uint32(257)})
    enc, theirs = mod.Encoding("np", **args), tiktoken.Encoding("np", **args)
    assert (enc.encode("hi<s>", allowed_special="all")
            == theirs.encode("hi<s>", allowed_special="all"))
    with pytest.raises(TypeError):
        mod.Encoding("np", **{**args, "special_tokens": {"<s>": 257.0}})


# ---- a tiktoken_ext plugin ----------------------------------------------------------------

PLUGIN = '''
from tiktoken.load import load_tiktoken_bpe

def tiny():
    here = __file__.rsplit("/", 2)[0]
    return {{"name": "tiny_test", "pat_str": r"""{pattern}""",
            "mergeable_ranks": load_tiktoken_bpe(here + "/tiny.tiktoken"),
            "special_tokens": {{"<|end|>": 300, "<|stop|>": 301}}}}

ENCODING_CONSTRUCTORS = {{"tiny_test": tiny}}
'''


@pytest.fixture
def plugin(mod, tmp_path, monkeypatch):
    """A plugin package `tiktoken_ext.bpe_test_plugin` on sys.path, defining `tiny_test`."""
    ranks = {bytes([b]): b for b in range(256)}
    for t in (b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world"):
        ranks[t] = len(ranks)
    (tmp_path / "tiny.tiktoken").write_bytes(b"".join(
        base64.b64encode(t) + b" %d\n" % i for t, i in ranks.items()))
    (tmp_path / "tiktoken_ext").mkdir()
    (tmp_path / "tiktoken_ext" / "bpe_test_plugin.py").write_text(
        PLUGIN.format(pattern=mod.PATTERNS["gpt2"]))
    monkeypatch.syspath_prepend(str(tmp_path))

    def fresh():  # tiktoken looks its plugins up once per process
        tiktoken.registry.ENCODING_CONSTRUCTORS = None
        tiktoken.registry.ENCODINGS.pop("tiny_test", None)
        tiktoken.registry._available_plugin_modules.cache_clear()
        sys.modules.pop("tiktoken_ext.bpe_test_plugin", None)

    fresh()
    yield "tiny_test"
    fresh()


def test_a_plugin_is_found_by_both(mod, plugin, cache, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    names = tiktoken.list_encoding_names()
    assert plugin in names and mod.list_encoding_names() == names
    text = "hello world<|end|> hello<|stop|>"
    want = tiktoken.get_encoding(plugin).encode(text, allowed_special="all")
    enc = mod.get_encoding(plugin)
    assert enc.encode(text, allowed_special="all") == want and enc.name == plugin
    assert enc is mod.get_encoding(plugin)
    assert pickle.loads(pickle.dumps(enc)).encode(text, allowed_special="all") == want
    sys.modules.pop("tiktoken_ext.bpe_test_plugin", None)
    mod.patch_tiktoken()  # the plugin imports tiktoken.load: now this library's
    try:
        import tiktoken as tk

        assert tk.get_encoding(plugin).encode(text, allowed_special="all") == want
        assert tk.list_encoding_names() == names
    finally:
        mod.unpatch_tiktoken()


# ---- worker processes ---------------------------------------------------------------------

@pytest.mark.parametrize("method", ["spawn", pytest.param("forkserver", marks=pytest.mark.slow)])
def test_a_pickled_encoding_brings_the_patch(mod, patched, method):
    """A worker started by spawn or forkserver imports nothing of the parent's patch; the
    encoding it unpickles patches it, so `import tiktoken` there is this library too."""
    enc = patched.get_encoding("cl100k_base")
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(1) as pool:
        got = pool.apply(patched_worker, (enc, "hello world, it's 12:30"))
    assert got == {"ids": enc.encode("hello world, it's 12:30"), "type": str(type(enc)),
                   "tiktoken": f"{mod.__name__}.patch_tiktoken()", "same": True}


# ---- real clients: a control run with tiktoken, then the same run after patch_tiktoken() --

TEXT_SIZE = 12000  # characters of tests/data/corpus.en

CLIENTS = {
    "langchain_text_splitters": """
        from langchain_text_splitters import (RecursiveCharacterTextSplitter,
                                              TokenTextSplitter)
        out["token"] = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=100,
                                         chunk_overlap=10).split_text(text)
        out["special"] = TokenTextSplitter(
            model_name="gpt-4o", chunk_size=50, chunk_overlap=0,
            allowed_special={"<|endoftext|>", "<|im_start|>"}).split_text(text[:3000] + EOT)
        out["recursive"] = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            model_name="gpt-4", chunk_size=200, chunk_overlap=20).split_text(text)
    """,
    "semchunk": """
        import semchunk
        chunker = semchunk.chunkerify("gpt-4", chunk_size=64)
        out["chunks"] = chunker(text)
        out["offsets"] = chunker(text, offsets=True)[1]
        enc = tiktoken.get_encoding("o200k_base")
        out["o200k"] = semchunk.chunk(text, chunk_size=128,
                                      token_counter=lambda t: len(enc.encode(t)))
    """,
    "chonkie": """
        from chonkie import RecursiveChunker, TokenChunker
        enc = tiktoken.get_encoding("o200k_base")
        for name, chunker in [("token", TokenChunker(tokenizer=enc, chunk_size=128,
                                                     chunk_overlap=16)),
                              ("recursive", RecursiveChunker(tokenizer=enc, chunk_size=256))]:
            out[name] = [(c.text, c.start_index, c.end_index, c.token_count)
                         for c in chunker.chunk(text)]
    """,
    "litellm": """
        import litellm
        messages = [{"role": "system", "content": "You are terse."},
                    {"role": "user", "content": text[:2000]}]
        out["counts"] = [litellm.token_counter(model=m, messages=messages)
                         for m in ("gpt-4o", "gpt-4", "gpt-3.5-turbo")]
        out["text"] = litellm.token_counter(model="gpt-4o", text=text)
        out["ids"] = litellm.encode(model="gpt-4", text=text[:3000])
        out["decoded"] = litellm.decode(model="gpt-4", tokens=out["ids"]) == text[:3000]
    """,
}

RUNNER = """
import json, sys
backend = sys.argv[1]
if backend != "tiktoken":
    __import__(backend).patch_tiktoken()
import tiktoken
EOT = "<|endoftext|>"
text = open(sys.argv[2], encoding="utf-8").read()[:{size}]
out = {{"class": str(type(tiktoken.get_encoding("cl100k_base"))),
       "backend": type(tiktoken.get_encoding("cl100k_base")).__mro__[1].__module__}}
{body}
print(json.dumps(out))
"""

_CONTROL = {}


def run_client(client, backend, cache):
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "BPE_OFFLINE")}
    env.update(TIKTOKEN_CACHE_DIR=str(cache), CUSTOM_TIKTOKEN_CACHE_DIR=str(cache),
               BPE_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", PYTHONPATH=os.pathsep.join(
                   [os.path.dirname(TESTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    code = RUNNER.format(size=TEXT_SIZE, body=textwrap.dedent(CLIENTS[client]))
    run = subprocess.run([sys.executable, "-c", code, backend, str(DATA / "corpus.en")],
                         capture_output=True, text=True, timeout=300, env=env,
                         cwd=os.path.dirname(TESTS))
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("client", [c if c != "litellm" else pytest.param(
    c, marks=pytest.mark.slow) for c in CLIENTS])  # litellm: some 6 s to import, each run
def test_clients_give_tiktokens_results(mod, cache, client):
    if importlib.util.find_spec(client) is None:
        pytest.skip(f"{client} is not installed (pip install '.[clients]')")
    if client not in _CONTROL:
        _CONTROL[client] = run_client(client, "tiktoken", cache)
    want = dict(_CONTROL[client])
    got = run_client(client, mod.__name__, cache)
    assert (want.pop("backend"), got.pop("backend")) == ("builtins", mod.__name__)
    assert got == want  # the class's name and module too: "<class 'tiktoken.core.Encoding'>"
    assert all(v for v in got.values()), got  # every call gave something
