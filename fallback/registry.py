"""tiktoken's encodings offline (get_encoding: the facts of
tiktoken_ext/openai_public.py), tiktoken's cache and download, plugins, pickling by name or
compactly, and patch_tiktoken."""

from __future__ import annotations as _annotations

import array as _array
import collections as _collections
import collections.abc as _abc
import operator as _operator
import os as _os
import sys as _sys
import threading as _threading

from .files import (
    _MAX_FILE_BYTES,
    _atomic_write,
    _check_regular,
    _inflate,
    _mode_size,
    _read_file,
    _unlink_quietly,
    _write_target,
)
from .patterns import PATTERNS, _pattern_of_json
from .ranks import _PinnedRanks
from .readers import _gpt2_parse, _json, _tiktoken_parse, str_to_token
from .util import _MAX_ID, _short

_OPENAI_BLOB = "https://openaipublic.blob.core.windows.net/"
_EOT, _FIM = "<|endoftext|>", ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
_R50K = ("encodings/r50k_base.tiktoken",
         "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
_P50K = ("encodings/p50k_base.tiktoken",
         "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
_O200K = ("encodings/o200k_base.tiktoken",
          "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")
# name -> (pattern, special tokens, (ranks file under _OPENAI_BLOB, its sha256)).
# GPT-2's pattern here is PATTERNS["gpt2"]; tiktoken writes the same splits as
# '...| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s'.
_ENCODINGS = {
    "gpt2": ("gpt2", {_EOT: 50256}, _R50K),
    "r50k_base": ("gpt2", {_EOT: 50256}, _R50K),
    "p50k_base": ("gpt2", {_EOT: 50256}, _P50K),
    "p50k_edit": ("gpt2", {_EOT: 50256, **dict(zip(_FIM, range(50281, 50284)))}, _P50K),
    "cl100k_base": ("cl100k", {_EOT: 100257, **dict(zip(_FIM, range(100258, 100261))),
                               "<|endofprompt|>": 100276},
                    ("encodings/cl100k_base.tiktoken",
                     "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7")),
    "o200k_base": ("o200k", {_EOT: 199999, "<|endofprompt|>": 200018}, _O200K),
    # GPT-OSS: o200k_base's ranks; 200018 has two names, the first decodes it (as in tiktoken)
    "o200k_harmony": ("o200k", {
        _EOT: 199999, "<|endofprompt|>": 200018, "<|startoftext|>": 199998,
        **{f"<|{n}|>": 200000 + k for k, n in enumerate(
            "reserved_200000 reserved_200001 return constrain reserved_200004 channel start end "
            "message reserved_200009 reserved_200010 reserved_200011 call".split())},
        **{f"<|reserved_{i}|>": i for i in range(200013, 201088)}}, _O200K),
}
# OpenAI's .tiktoken files, known by their sha256 (what from_file reads without a
# sidecar): sha256 -> the first encoding that reads it (r50k's file: "gpt2")
_KNOWN_RANKS = {sha: name for name, (_, _, (_, sha)) in reversed(list(_ENCODINGS.items()))}
# the files whose text Core.tiktoken_model may read unchecked (see _PinnedRanks): those
# tests/test_vocabularies.py reads both ways
_PINNED_TEXT = frozenset((_O200K[1], _ENCODINGS["cl100k_base"][2][1]))
# tiktoken's "gpt2" reads GPT-2's own pair of files; each holds the same ranks as r50k_base
_GPT2_FILES = (("gpt-2/encodings/main/encoder.json",
                "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"),)


def _tiktoken_cache_dir():
    """Where tiktoken caches the files it downloads ('' when caching is off)."""
    import tempfile

    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in _os.environ:
            return _os.environ[var]
    return _os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cache_key(url):
    """The name of `url`'s file in tiktoken's cache: the sha1 of the URL."""
    import hashlib

    return hashlib.sha1(url.encode()).hexdigest()


def _ranks_sha256(ranks):
    """sha256 of the ranks written as OpenAI writes its .tiktoken files."""
    import base64
    import hashlib

    h = hashlib.sha256()
    for t, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        h.update(base64.b64encode(t) + b" %d\n" % r)
    return h.hexdigest()


def _read_ranks(path, where):
    """(ranks, sha256 of the file's text) of a .tiktoken file, plain or
    gzipped (its text: Tokenizer._from_ranks reads it), or of GPT-2's
    vocab.json / encoder.json (a dict, ids without the special token); read as
    every loader reads (_read_file: a regular file, at most _MAX_FILE_BYTES,
    inflated a step at a time)."""
    return _ranks_of(_read_file(path), where)


def _ranks_of(data, where):
    """_read_ranks of a file's bytes (inflated the same way if gzipped)."""
    import hashlib

    if data[:2] == b"\x1f\x8b":
        data = _inflate(data, where)
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not UTF-8 text (byte {e.start})") from None
    if digest in _PINNED_TEXT:
        return _PinnedRanks(text), digest
    if text.lstrip().startswith("{"):
        raw = _json(text, where)
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a JSON object of token -> id")
        ranks = {}
        for token, i in raw.items():
            if token == _EOT:
                continue
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
                raise ValueError(f"{where}: the id of {_short(token)} is not an int in [0, 2**31)")
            ranks[str_to_token(token)] = i
        return ranks, digest
    return text, digest


def _unknown_encoding(name, known):
    """get_encoding's ValueError for a name no encoding has: tiktoken's first
    two lines, then the names it could have been."""
    import pkgutil

    plugins = ["tiktoken_ext.openai_public"] + [
        m.name for m in pkgutil.iter_modules(list(_tiktoken_ext_folders()), "tiktoken_ext.")
        if m.name != "tiktoken_ext.openai_public"]
    return ValueError(f"Unknown encoding {name}.\nPlugins found: {plugins}\n"
                      f"Known encodings: {', '.join(known)}")


def _registry_ranks(name, path):
    """(pattern, specials, ranks, source) of one of tiktoken's encodings: the
    ranks (as _read_ranks gives them) read from `path` (source: the file
    read), else from tiktoken's cache, else downloaded from tiktoken's URL
    into that cache (source: None); always checked against the sha256 of
    OpenAI's file."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if name not in _ENCODINGS:
        raise _unknown_encoding(name, _ENCODINGS)
    pattern, specials, (file, sha256) = _ENCODINGS[name]
    pattern = PATTERNS[pattern]
    url = _OPENAI_BLOB + file
    basename = file.rsplit("/", 1)[1]
    gpt2 = name in ("gpt2", "r50k_base")
    sources = [(file, sha256)] + (list(_GPT2_FILES) if gpt2 else [])
    if path is not None:
        path = _os.fspath(path)
        if _os.path.isdir(path):
            names = [basename, basename + ".gz"] + (["vocab.json", "encoder.json"] if gpt2 else [])
            names += [_cache_key(_OPENAI_BLOB + f) for f, _ in sources]
            found = [_os.path.join(path, n) for n in names
                     if _os.path.isfile(_os.path.join(path, n))]
            if not found:
                raise FileNotFoundError(f"{path}: holds no {basename} (nor {basename}.gz) for "
                                        f"encoding {name!r}")
            path = found[0]
        if not _os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file (the ranks of encoding {name!r})")
        if not _os.path.isfile(path):
            raise ValueError(f"{path}: not a regular file")
        ranks, digest = _read_ranks(path, path)
        if digest != sha256 and all(digest != h for _, h in sources) and _ranks_sha256(
                ranks if isinstance(ranks, dict) else _tiktoken_parse(ranks, path)) != sha256:
            raise ValueError(f"{path}: these are not the ranks of {name!r} (OpenAI's {basename} "
                             f"has sha256 {sha256})")
        return pattern, dict(specials), ranks, path
    cache = _tiktoken_cache_dir()
    mismatched = None
    if cache:
        for f, h in sources:
            cached = _os.path.join(cache, _cache_key(_OPENAI_BLOB + f))
            if _os.path.isfile(cached):
                try:
                    ranks, digest = _read_ranks(cached, cached)
                except ValueError:  # not even a ranks file: fetched again, as a wrong one
                    digest = None
                if digest == h:
                    return pattern, dict(specials), ranks, None
                mismatched = mismatched or cached
    target = _os.path.join(cache, _cache_key(url)) if cache else None
    if _os.environ.get("BPE_OFFLINE", "").strip().lower() not in ("", "0", "false", "no"):
        if mismatched:
            where = f"tiktoken's cache file {mismatched} does not match OpenAI's file (sha256)"
        else:
            where = (f"tiktoken's cache has no {target}" if cache else
                     "tiktoken's cache is off (TIKTOKEN_CACHE_DIR is empty)")
        there = f" as {target}" if cache else ""
        raise FileNotFoundError(
            f"the ranks of encoding {name!r} are not here, and BPE_OFFLINE is set (no "
            f"download): {where}. Download {url} (sha256 {sha256}) and save it{there}, or pass "
            f"its path (plain or .gz): get_encoding({name!r}, path=...)")
    base = _os.environ.get("BPE_ENCODINGS_URL") or _OPENAI_BLOB
    data = _download(base.rstrip("/") + "/" + file, sha256, name)
    if target is not None:
        chosen = "TIKTOKEN_CACHE_DIR" in _os.environ or "DATA_GYM_CACHE_DIR" in _os.environ
        _cache_write(cache, target, data, chosen)
    return pattern, dict(specials), _ranks_of(data, url)[0], None


_DOWNLOAD_TIMEOUT = 60.0  # seconds the server may send nothing (BPE_DOWNLOAD_TIMEOUT)


def _download(url, sha256, name):
    """The bytes at `url`, whose sha256 must be `sha256`: ValueError for other
    bytes, OSError (TimeoutError, ConnectionError) when the transfer fails."""
    import hashlib
    import http.client
    import socket
    import urllib.error
    import urllib.request

    try:
        timeout = float(_os.environ.get("BPE_DOWNLOAD_TIMEOUT") or _DOWNLOAD_TIMEOUT)
    except ValueError:
        raise ValueError(f"BPE_DOWNLOAD_TIMEOUT must be a number of seconds, not "
                         f"{_os.environ['BPE_DOWNLOAD_TIMEOUT']!r}") from None
    hint = (f"; or download it yourself and pass its path: get_encoding({name!r}, path=...)"
            if name else "")
    chunks, size = [], 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            while True:
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > _MAX_FILE_BYTES:
                    raise ValueError(f"{url}: more than {_MAX_FILE_BYTES} bytes, not a ranks file")
                chunks.append(chunk)
    except (socket.timeout, TimeoutError):
        raise TimeoutError(f"downloading {url}: timed out (nothing for {timeout:g} s; "
                           f"BPE_DOWNLOAD_TIMEOUT sets the seconds){hint}") from None
    except urllib.error.HTTPError as e:
        raise ConnectionError(f"downloading {url}: HTTP {e.code} {e.reason}{hint}") from None
    except urllib.error.URLError as e:
        raise ConnectionError(f"downloading {url}: {e.reason}{hint}") from None
    except (OSError, http.client.HTTPException) as e:
        raise ConnectionError(f"downloading {url}: {type(e).__name__}: {e}{hint}") from None
    if length is not None and length.isdigit() and size != int(length):
        raise ConnectionError(f"downloading {url}: the connection closed after {size} of "
                              f"{length} bytes{hint}")
    data = b"".join(chunks)
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(f"downloaded {url}: its sha256 is {digest}, not {sha256} (a corrupted "
                         f"or altered file; nothing was cached){hint}")
    return data


def _cache_write(cache, target, data, chosen):
    """Put `data` in tiktoken's cache as `target`, atomically (a temporary
    file beside it, then a rename), as tiktoken does; where the user did not
    choose the directory, one that cannot be written is no error."""
    import uuid

    try:
        _os.makedirs(cache, exist_ok=True)
        target = _write_target(target)   # (a device or FIFO there stays: ValueError)
        tmp = f"{target}.{uuid.uuid4().hex}.tmp"
        try:
            with open(tmp, "xb") as f:
                f.write(data)
            _os.replace(tmp, target)
        except BaseException:
            _unlink_quietly(tmp)
            raise
    except (OSError, ValueError):
        if chosen:
            raise


# tiktoken's table of OpenAI's models (tiktoken/model.py, 0.14): names, then prefixes
_MODEL_TO_ENCODING = {
    "o1": "o200k_base", "o3": "o200k_base", "o4-mini": "o200k_base", "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base", "gpt-4o": "o200k_base", "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base", "gpt-3.5": "cl100k_base", "gpt-35-turbo": "cl100k_base",
    "davinci-002": "cl100k_base", "babbage-002": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base", "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    "text-davinci-003": "p50k_base", "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base", "text-curie-001": "r50k_base", "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base", "davinci": "r50k_base", "curie": "r50k_base",
    "babbage": "r50k_base", "ada": "r50k_base",
    "code-davinci-002": "p50k_base", "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base", "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base", "cushman-codex": "p50k_base",
    "text-davinci-edit-001": "p50k_edit", "code-davinci-edit-001": "p50k_edit",
    "text-similarity-davinci-001": "r50k_base", "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base", "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base", "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base", "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base", "code-search-ada-code-001": "r50k_base",
    "gpt2": "gpt2", "gpt-2": "gpt2",
}
_MODEL_PREFIX_TO_ENCODING = {
    "o1-": "o200k_base", "o3-": "o200k_base", "o4-mini-": "o200k_base", "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base", "gpt-4.1-": "o200k_base", "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base", "gpt-4-": "cl100k_base", "gpt-3.5-turbo-": "cl100k_base",
    "gpt-35-turbo-": "cl100k_base", "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base", "ft:gpt-4": "cl100k_base", "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base", "ft:babbage-002": "cl100k_base",
}


def encoding_name_for_model(model_name):
    """The name of the encoding an OpenAI model uses, from tiktoken's table;
    KeyError for a model it does not know.

    >>> encoding_name_for_model("gpt-4o-2024-08-06"), encoding_name_for_model("gpt-4")
    ('o200k_base', 'cl100k_base')
    """
    if model_name in _MODEL_TO_ENCODING:
        return _MODEL_TO_ENCODING[model_name]
    for prefix, name in _MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(f"Could not automatically map {model_name} to a tokeniser. Please use "
                   f"`tiktoken.get_encoding` to explicitly get the tokeniser you expect.")


def list_encoding_names():
    """The names ``get_encoding`` knows: tiktoken's encodings and those of
    tiktoken's plugins (modules of the ``tiktoken_ext`` namespace package
    that define ``ENCODING_CONSTRUCTORS``), in tiktoken's order.

    >>> list_encoding_names()[:7]
    ['gpt2', 'r50k_base', 'p50k_base', 'p50k_edit', 'cl100k_base', 'o200k_base', 'o200k_harmony']
    """
    return list(_plugins()[0])


# One built model per process.  get_encoding(name) gives one instance per
# class and name, as tiktoken's registry does (programs call it per request).
# Unpickling a model this process has built (pickled here, or unpickled
# before) shares its tables and core: _built() maps (class, the sha256 of the
# model's compact state) to a tokenizer holding it, weakly, and _RECENT keeps
# the last models unpickled alive (a Pool worker drops its task's tokenizer
# before the next task arrives).

_REGISTRY = {}
_REGISTRY_LOCK = _threading.RLock()
_BUILT = []  # [the WeakValueDictionary], made on first use
_RECENT = _collections.deque(maxlen=2)
_BUILT_LOCK = _threading.Lock()


def _new_locks():
    """A forked child's own locks: another thread may have held these (building
    an encoding) when the process forked."""
    global _REGISTRY_LOCK, _BUILT_LOCK
    _REGISTRY_LOCK, _BUILT_LOCK = _threading.RLock(), _threading.Lock()


def _finish_imports():
    """Before fork(): wait for the imports other threads are in the middle of
    (this library imports its heavy modules where they are used, so a thread
    building a tokenizer may be importing one).  A child forked mid-import
    would find the module half made and its import lock held forever.  The
    module locks are importlib's own (taking and releasing each one waits for
    its import, as a second importer of the module would); where importlib
    has none of these names, nothing is waited for."""
    try:
        from importlib import _bootstrap

        names = list(_bootstrap._module_locks)
        wait = _bootstrap._lock_unlock_module
    except (ImportError, AttributeError):  # pragma: no cover - another importlib
        return
    for name in names:
        try:
            wait(name)
        except Exception:  # noqa: BLE001 - the importing thread reports its own error
            pass


if hasattr(_os, "register_at_fork"):  # POSIX
    _os.register_at_fork(before=_finish_imports, after_in_child=_new_locks)


def _built():
    if not _BUILT:
        import weakref

        _BUILT.append(weakref.WeakValueDictionary())
    return _BUILT[0]


def _registered(cls, name, build):
    """The registry's instance of `cls` for encoding `name` (get_encoding
    hands out one per class and name): it shares the model of every class
    with the same core (Tokenizer, and tiktoken.core.Encoding while patched),
    which `build()` makes the first time."""
    with _REGISTRY_LOCK:
        tok = _REGISTRY.get((cls, name))
        if tok is None:
            model = _REGISTRY.get((cls.core_class, name))
            if model is None:
                model = _REGISTRY[(cls.core_class, name)] = build()
            tok = _REGISTRY[(cls, name)] = cls._sharing(model)
        return tok


_STATE_VERSION = 1


def _compact_state(tok):
    """(key, blob): the model without the tokens that merges make, ids as
    little-endian int32 columns, zlib-compressed; key: its sha256.  Made once
    per model."""
    state = tok.__dict__.get("_state")
    if state is None:
        import hashlib
        import json
        import zlib

        made = set(tok._rank_id)
        base = sorted((i, t) for i, t in tok._tokens.items() if i not in made)
        columns = [_array.array("i", c) for c in (
            [i for i, _ in base], [len(t) for _, t in base], [a for a, _ in tok._rank_pair],
            [b for _, b in tok._rank_pair], tok._rank_id)]
        if _sys.byteorder == "big":
            for c in columns:
                c.byteswap()
        head = json.dumps([_STATE_VERSION, tok._pattern, _specials_by_id(tok._specials),
                           len(base), len(tok._rank_id)]).encode()
        payload = b"".join([len(head).to_bytes(4, "little"), head,
                            *(c.tobytes() for c in columns), *(t for _, t in base)])
        state = tok._state = (hashlib.sha256(payload).hexdigest(), zlib.compress(payload, 1))
    return state


def _specials_by_id(specials):
    """The special tokens as [name, id] pairs by id; names sharing an id keep
    their order (the first decodes it)."""
    return sorted(specials.items(), key=_operator.itemgetter(1))


def _from_state(cls, blob):
    import json
    import zlib

    payload = zlib.decompress(blob)
    pos = 4 + int.from_bytes(payload[:4], "little")
    version, pattern, specials, n_base, n_merges = json.loads(payload[4:pos])
    if version != _STATE_VERSION:
        raise ValueError(f"a tokenizer pickled by another version of this library (state "
                         f"{version}; this one reads {_STATE_VERSION})")
    columns = []
    for n in (n_base, n_base, n_merges, n_merges, n_merges):
        column = _array.array("i", payload[pos:pos + 4 * n])
        if _sys.byteorder == "big":
            column.byteswap()
        columns.append(column)
        pos += 4 * n
    ids, lengths, lefts, rights, made = columns
    tokens = {}
    for i, n in zip(ids, lengths):
        tokens[i] = payload[pos:pos + n]
        pos += n
    merges = []
    for a, b, m in zip(lefts, rights, made):
        merges.append((tokens[a], tokens[b]))
        tokens[m] = tokens[a] + tokens[b]
    return cls._create(_pattern_of_json(pattern), tokens, merges, dict(specials))


def _unpickle_model(cls, key, blob, name):
    with _BUILT_LOCK:
        tok = _built().get((cls.core_class, key))
    if tok is None:
        tok = _from_state(cls, blob)
        tok._state = (key, blob)
        with _BUILT_LOCK:
            tok = _built().setdefault((cls.core_class, key), tok)
    with _BUILT_LOCK:
        if not any(t is tok for t in _RECENT):
            _RECENT.append(tok)
    new = cls._sharing(tok)
    if name != cls._name:
        new._name = name
    else:   # (tok, the first of this model pickled here, may have had another)
        new.__dict__.pop("_name", None)
    return new


def _forget_built(tok):
    """Take tok out of the models unpickling shares (its model is to change)."""
    with _BUILT_LOCK:
        built = _built()
        for key in [k for k, t in built.items() if t is tok]:
            del built[key]


def _unpickle_registered(cls, name, sha256, source, label):
    known = _ENCODINGS.get(name)
    if known is None or known[2][1] != sha256:
        here = f"its file has sha256 {known[2][1]}" if known else "there is no such encoding"
        raise ValueError(f"a pickled encoding {name!r} read from a file with sha256 {sha256}; "
                         f"here {here}")
    with _REGISTRY_LOCK:
        tok = _REGISTRY.get((cls, name))
    if tok is None and source is not None and _os.path.isfile(source):
        try:  # the file it was read from, where it still is
            tok = cls.get_encoding(name, path=source)
        except (OSError, ValueError):
            tok = None
    if tok is None:
        tok = cls.get_encoding(name)  # tiktoken's cache, or a download
    new = type(tok)._sharing(tok)
    new._name, new._registered = label, (name, sha256, source)
    return new


# tiktoken's plugins: the modules of the `tiktoken_ext` namespace package
# (other than openai_public, whose encodings are _ENCODINGS) each define
# ENCODING_CONSTRUCTORS, name -> a function returning Encoding's arguments.
# Found where tiktoken finds them, once per set of the namespace's folders.

_PLUGINS = {}  # the namespace's folders (a tuple) -> (names in tiktoken's order, constructors)


def _tiktoken_ext_folders():
    import importlib.machinery

    try:  # the folders on sys.path, whatever sys.modules holds (patch_tiktoken's module)
        spec = importlib.machinery.PathFinder.find_spec("tiktoken_ext")
    except (ImportError, ValueError):
        spec = None
    return tuple(spec.submodule_search_locations or ()) if spec is not None else ()


def _plugins():
    """(every encoding name in tiktoken's order, {plugin name: constructor})."""
    import importlib
    import pkgutil

    folders = _tiktoken_ext_folders()
    with _REGISTRY_LOCK:
        found = _PLUGINS.get(folders)
        if found is not None:
            return found
        ext = _sys.modules.get("tiktoken_ext")
        if ext is not None and getattr(ext, "_bpe_patch", False):
            ext.__path__[:] = folders  # sys.path may have grown since patch_tiktoken()
        names, constructors = [], {}
        modules = [m.name for m in pkgutil.iter_modules(list(folders), "tiktoken_ext.")]
        if "tiktoken_ext.openai_public" not in modules:
            names += _ENCODINGS
        for module_name in modules:
            if module_name == "tiktoken_ext.openai_public":
                names += _ENCODINGS
                continue
            made = getattr(importlib.import_module(module_name), "ENCODING_CONSTRUCTORS", None)
            if not isinstance(made, _abc.Mapping):
                raise ValueError(f"tiktoken plugin {module_name} does not define "
                                 f"ENCODING_CONSTRUCTORS")
            for name, constructor in made.items():
                if name in _ENCODINGS or name in constructors:
                    raise ValueError(f"Duplicate encoding name {name} in tiktoken plugin "
                                     f"{module_name}")
                names.append(name)
                constructors[name] = constructor
        found = _PLUGINS[folders] = (names, constructors)
        return found


def _plugin_encoding(cls, name, path):
    """get_encoding of an encoding a tiktoken plugin defines: built as
    tiktoken builds it, ``Encoding(**constructor())``, once per process."""
    constructor = _plugins()[1].get(name)
    if constructor is None:
        raise _unknown_encoding(name, list_encoding_names())
    if path is not None:
        raise ValueError(f"encoding {name!r} comes from a tiktoken plugin, which reads its own "
                         f"files: get_encoding({name!r}) takes no path")
    return _registered(cls, name, lambda: cls(**constructor()))


# tiktoken.load's functions (plugins call them), with tiktoken's cache rules:
# the same directory and keys as get_encoding's

def _tiktoken_read_file(blobpath):
    """tiktoken.load.read_file: the bytes of a local file or of a URL (http,
    https; other schemes through blobfile, as tiktoken)."""
    if not isinstance(blobpath, str):
        blobpath = _os.fspath(blobpath)
    if "://" not in blobpath:
        return _raw_bytes(blobpath)
    if blobpath.startswith(("http://", "https://")):
        if _offline():
            raise FileNotFoundError(f"{blobpath}: not downloaded, BPE_OFFLINE is set; put the file "
                                    f"in tiktoken's cache or read it from a local path")
        return _download(blobpath, None, None)
    try:
        import blobfile
    except ImportError:
        raise ImportError(f"reading {blobpath} needs blobfile: pip install blobfile") from None
    return blobfile.read_bytes(blobpath)


def _raw_bytes(path):
    """A regular file's bytes as they are (not inflated: hashes are of these)."""
    _check_regular(path, *_mode_size(_os.stat(path)))
    with open(path, "rb") as f:
        return f.read(_MAX_FILE_BYTES + 1)[:_MAX_FILE_BYTES + 1]


def _tiktoken_check_hash(data, expected_hash):
    import hashlib

    return hashlib.sha256(data).hexdigest() == expected_hash


def _tiktoken_read_file_cached(blobpath, expected_hash=None):
    """tiktoken.load.read_file_cached: read_file through tiktoken's cache (a
    cached file whose sha256 is not `expected_hash` is fetched again; a
    download is checked, then cached atomically)."""

    cache = _tiktoken_cache_dir()
    if not cache:
        data = _tiktoken_read_file(blobpath)
    else:
        target = _os.path.join(cache, _cache_key(blobpath))
        if _os.path.exists(target):
            data = _raw_bytes(target)
            if expected_hash is None or _tiktoken_check_hash(data, expected_hash):
                return data
            _unlink_quietly(target)
        data = _tiktoken_read_file(blobpath)
    if expected_hash and not _tiktoken_check_hash(data, expected_hash):
        raise ValueError(f"Hash mismatch for data downloaded from {blobpath} (expected "
                         f"{expected_hash}): a corrupted or altered file")
    if cache:
        chosen = "TIKTOKEN_CACHE_DIR" in _os.environ or "DATA_GYM_CACHE_DIR" in _os.environ
        _cache_write(cache, target, data, chosen)
    return data


def _tiktoken_load_tiktoken_bpe(tiktoken_bpe_file, expected_hash=None):
    """tiktoken.load.load_tiktoken_bpe: a .tiktoken file's ranks, bytes -> int."""
    data = _tiktoken_read_file_cached(tiktoken_bpe_file, expected_hash)
    if data[:2] == b"\x1f\x8b":
        data = _inflate(data, tiktoken_bpe_file)
    try:   # the plain file, fast; anything else as tiktoken reads it
        return _tiktoken_parse(data.decode("ascii"), tiktoken_bpe_file)
    except ValueError:
        return _tiktoken_lines(data, tiktoken_bpe_file)


def _tiktoken_lines(data, where):
    """tiktoken's own reading of a .tiktoken file: every line that is not
    empty is split at whitespace into base64 (non-alphabet bytes, a byte
    order mark among them, skipped) and a rank (as int() reads it: signs,
    underscores, surrounding spaces); a line it cannot read: ValueError."""
    import base64

    ranks = {}
    for line in data.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: cannot read the line {_short(line)}: {e}") from None
    return ranks


def _tiktoken_data_gym_to_mergeable_bpe_ranks(vocab_bpe_file, encoder_json_file,
                                              vocab_bpe_hash=None, encoder_json_hash=None,
                                              clobber_one_byte_tokens=False):
    """tiktoken.load.data_gym_to_mergeable_bpe_ranks: the ranks of GPT-2's
    vocab.bpe (merges) + encoder.json pair, which must agree (ValueError)."""
    merges = _tiktoken_read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode("utf-8")
    vocab = _tiktoken_read_file_cached(encoder_json_file, encoder_json_hash).decode("utf-8")
    tokens, _, _ = _gpt2_parse(vocab, merges, None, encoder_json_file, vocab_bpe_file)
    ranks = {t: i for i, t in tokens.items()}
    for special in (b"<|endoftext|>", b"<|startoftext|>"):
        ranks.pop(special, None)
    # tiktoken's check: the ids are the ranks of the merges, after the single bytes in
    # GPT-2's order (printable ones first) or, with clobber_one_byte_tokens, encoder.json's
    singles = sorted(range(256), key=lambda b: (not (chr(b).isprintable() and b != 32), b))
    expected = {bytes([b]): r for r, b in enumerate(singles)}
    if clobber_one_byte_tokens:
        expected.update((t, i) for t, i in ranks.items() if len(t) == 1)
    expected.update((a + b, 256 + k) for k, (a, b) in enumerate(_gpt2_merges(merges)))
    if expected != ranks:
        raise ValueError(f"{encoder_json_file}: its ids are not the ranks of the merges of "
                         f"{vocab_bpe_file}")
    return ranks


def _gpt2_merges(text):
    return [tuple(map(str_to_token, line.split())) for line in text.split("\n")[1:-1]]


def _tiktoken_dump_tiktoken_bpe(bpe_ranks, tiktoken_bpe_file):
    """tiktoken.load.dump_tiktoken_bpe: write ranks as a .tiktoken file."""
    import base64

    text = "".join(f"{base64.b64encode(t).decode()} {r}\n"
                   for t, r in sorted(bpe_ranks.items(), key=lambda kv: kv[1]))
    _atomic_write(tiktoken_bpe_file, text)


def _offline():
    return _os.environ.get("BPE_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


# patch_tiktoken(): modules that stand for tiktoken's, made from this module's
# API (nothing here is a second copy of it), put in sys.modules.

_TIKTOKEN_MODULES = ("tiktoken", "tiktoken.core", "tiktoken.model", "tiktoken.registry",
                     "tiktoken.load", "tiktoken_ext", "tiktoken_ext.openai_public")
_PATCH = {}            # while patched: "class" (the Tokenizer class), "saved" (sys.modules')
_ENCODING_CLASSES = {}  # Tokenizer class -> its tiktoken.core.Encoding
_PATCHED_ONCE = []      # [True] once this process (or its parent before a fork) has patched


def _encoding_class(base):
    """The class tiktoken.core.Encoding is while patched: `base` (a Tokenizer
    class) under tiktoken's name, which is where a patched process finds it.
    It pickles as tiktoken's Encoding does (see _reduce_patched) and reads
    tiktoken's pickles (_setstate_patched).  Sent to a worker process by
    multiprocessing, it pickles as `base` does and brings the patch: a
    process that unpickles one and has never patched is patched (a spawned
    worker imports tiktoken the way its parent does)."""
    with _REGISTRY_LOCK:
        cls = _ENCODING_CLASSES.get(base)
        if cls is None:
            from multiprocessing.reduction import ForkingPickler

            cls = _ENCODING_CLASSES[base] = type(base)("Encoding", (base,), {
                "__module__": "tiktoken.core", "__qualname__": "Encoding",
                "__doc__": f"tiktoken.core.Encoding while {base.__module__}.patch_tiktoken() is "
                           f"in effect: {base.__module__}.Tokenizer under tiktoken's name.",
                "__reduce__": _reduce_patched, "__setstate__": _setstate_patched,
                "__copy__": _copy_patched, "__deepcopy__": _copy_patched})
            ForkingPickler.register(cls, _reduce_bringing_the_patch)
        return cls


def _patched_classes(cls):
    """(the tiktoken.core.Encoding class among cls's bases, its Tokenizer class)."""
    encoding = next(c for c in cls.__mro__ if c.__dict__.get("__reduce__") is _reduce_patched)
    return encoding, encoding.__bases__[0]


def _reduce_patched(self):
    """An instance of tiktoken.core.Encoding pickles as tiktoken's does, so that
    a process with tiktoken alone reads it: tiktoken.core.Encoding and
    tiktoken's state, the name of an encoding of the registry (from
    get_encoding), else the constructor's arguments.  That is while the patch
    is in effect and the model was made from tiktoken's ranks (tiktoken's
    constructor or get_encoding: ids that are ranks, which tiktoken rebuilds
    exactly).  Any other (a program's subclass, a model from another
    constructor, after unpatch_tiktoken) pickles as its Tokenizer class does."""
    cls = type(self)
    encoding, base = _patched_classes(cls)
    if (cls is encoding and self._from_ranks_exactly
            and getattr(_sys.modules.get("tiktoken.core"), "Encoding", None) is cls):
        import copyreg

        registered = self.__dict__.get("_registered")
        with _REGISTRY_LOCK:
            by_name = _REGISTRY.get((cls, self.name)) is self
        if by_name or (registered is not None and registered[0] == self.name):
            return (copyreg.__newobj__, (cls,), self.name)
        return (copyreg.__newobj__, (cls,), {
            "name": self.name, "pat_str": self._pat_str, "mergeable_ranks": self._mergeable_ranks,
            "special_tokens": self._special_tokens})
    return _reduce_bringing_the_patch(self)


def _reduce_bringing_the_patch(self):
    """An instance of tiktoken.core.Encoding pickled as its Tokenizer class's
    are, and one of a subclass of it (a program's) as that subclass; the
    process that unpickles it is patched, if it never was."""
    cls = type(self)
    encoding, base = _patched_classes(cls)
    function, args = base.__reduce__(self)
    return (_unpickle_patched, (base, function, args[1:], None if cls is encoding else cls,
                                self._from_ranks_exactly))


def _unpickle_patched(base, function, args, cls=None, from_ranks_exactly=None):
    with _REGISTRY_LOCK:
        if not _PATCHED_ONCE:
            _patch(base)
    tok = function(_encoding_class(base) if cls is None else cls, *args)
    if from_ranks_exactly:  # (the worker pickles it as tiktoken's, as its parent did)
        tok._from_ranks_exactly = True
    return tok


def _copy_patched(self, memo=None):
    """copy.copy and copy.deepcopy: a new instance sharing the model (not
    rebuilt from tiktoken's state)."""
    function, args = _reduce_bringing_the_patch(self)
    return function(*args)


def _setstate_patched(self, state):
    """Read tiktoken's pickle of an Encoding (what its __getstate__ gives): the
    name of a registered encoding, or the constructor's arguments (passed to
    __init__, as tiktoken does)."""
    if isinstance(state, str):
        encoding, _ = _patched_classes(type(self))
        enc = encoding.get_encoding(state)
        _forget_built(self)
        for key in self._own_state(self):
            del self.__dict__[key]
        self.__dict__.update({k: enc.__dict__[k] for k in self._own_state(enc)})
    elif isinstance(state, dict):
        self.__init__(**state)
    else:
        raise TypeError(f"a pickled tiktoken Encoding's state is an encoding's name or a dict "
                        f"of its constructor's arguments, not {type(state).__name__}")


class _RegistryEncodings(_abc.Mapping):
    """tiktoken.registry.ENCODINGS while patched: name -> the encoding
    get_encoding has made, of `cls` (tiktoken's Encoding.__getstate__ reads it
    to pickle a registered encoding by name)."""

    def __init__(self, cls):
        self._cls = cls

    def __getitem__(self, name):
        with _REGISTRY_LOCK:
            tok = _REGISTRY.get((self._cls, name))
        if tok is None:
            raise KeyError(name)
        return tok

    def __iter__(self):
        with _REGISTRY_LOCK:
            return iter([n for c, n in _REGISTRY if c is self._cls])

    def __len__(self):
        return len(list(iter(self)))


def _tiktoken_modules(base):
    import functools
    import importlib.machinery
    import types

    cls = _encoding_class(base)

    def module(name, doc, folders=None, **names):
        m = types.ModuleType(name, doc)
        m.__spec__ = importlib.machinery.ModuleSpec(name, None, origin=origin,
                                                    is_package=folders is not None)
        if folders is not None:
            m.__path__ = m.__spec__.submodule_search_locations = list(folders)
        m.__dict__.update(names, _bpe_patch=True)
        return m

    def constructor(name):
        enc = cls.get_encoding(name)
        made = {"name": name, "pat_str": enc._pat_str, "mergeable_ranks": enc._mergeable_ranks,
                "special_tokens": enc._special_tokens}
        if name in ("gpt2", "r50k_base", "p50k_base"):
            made["explicit_n_vocab"] = enc.n_vocab
        return made

    made = {name: functools.partial(constructor, name) for name in _ENCODINGS}
    origin = f"{base.__module__}.patch_tiktoken()"
    where = f"made by {origin}"
    try:  # tiktoken's other submodules (tiktoken._educational) from its files, if installed
        spec = importlib.machinery.PathFinder.find_spec("tiktoken")
    except (ImportError, ValueError):
        spec = None
    api = {"Encoding": cls, "get_encoding": cls.get_encoding,
           "list_encoding_names": list_encoding_names,
           "encoding_for_model": cls.encoding_for_model,
           "encoding_name_for_model": encoding_name_for_model}
    models = {"MODEL_TO_ENCODING": _MODEL_TO_ENCODING,
              "MODEL_PREFIX_TO_ENCODING": _MODEL_PREFIX_TO_ENCODING}
    load = {"read_file": _tiktoken_read_file, "read_file_cached": _tiktoken_read_file_cached,
            "check_hash": _tiktoken_check_hash, "load_tiktoken_bpe": _tiktoken_load_tiktoken_bpe,
            "data_gym_to_mergeable_bpe_ranks": _tiktoken_data_gym_to_mergeable_bpe_ranks,
            "dump_tiktoken_bpe": _tiktoken_dump_tiktoken_bpe}
    parts = {
        "core": module("tiktoken.core", f"tiktoken.core, {where}", Encoding=cls),
        "model": module("tiktoken.model", f"tiktoken.model, {where}", **models,
                        **{k: api[k] for k in ("encoding_for_model", "encoding_name_for_model")}),
        "registry": module("tiktoken.registry", f"tiktoken.registry, {where}",
                           ENCODINGS=_RegistryEncodings(cls),
                           **{k: api[k] for k in ("get_encoding", "list_encoding_names")}),
        "load": module("tiktoken.load", f"tiktoken.load, {where}", **load),
    }
    top = module("tiktoken", f"tiktoken's API, {where}",
                 folders=list(spec.submodule_search_locations or ()) if spec else [],
                 **api, **parts, __version__=_TIKTOKEN_API)
    public = module("tiktoken_ext.openai_public", f"tiktoken's encodings, {where}",
                    ENCODING_CONSTRUCTORS=made, **made)
    ext = module("tiktoken_ext", f"tiktoken's plugin namespace, {where}",
                 folders=_tiktoken_ext_folders(), openai_public=public)
    return {"tiktoken": top, **{f"tiktoken.{k}": v for k, v in parts.items()},
            "tiktoken_ext": ext, "tiktoken_ext.openai_public": public}


_TIKTOKEN_API = "0.14.0"  # the version of tiktoken whose API this module offers


def _patch(base):
    """patch_tiktoken with `base`, a Tokenizer class."""
    with _REGISTRY_LOCK:
        if _PATCH.get("class") is base:
            return
        unpatch_tiktoken()
        modules = _tiktoken_modules(base)
        _PATCH["saved"] = {name: _sys.modules.get(name) for name in _TIKTOKEN_MODULES}
        _PATCH["class"] = base
        _PATCHED_ONCE[:] = [True]
        _sys.modules.update(modules)


def unpatch_tiktoken():
    """Undo ``patch_tiktoken()``: sys.modules holds again what it held before
    (tiktoken's own modules, or nothing).  Harmless when not patched."""
    with _REGISTRY_LOCK:
        saved = _PATCH.pop("saved", None)
        _PATCH.pop("class", None)
        if saved is None:
            return
        for name, module in saved.items():
            if module is None:
                _sys.modules.pop(name, None)
            else:
                _sys.modules[name] = module
