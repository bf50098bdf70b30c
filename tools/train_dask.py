#!/usr/bin/env python3
"""Train a byte-level BPE tokenizer, or encode a corpus with one, on a Dask cluster.

    python tools/train_dask.py train INPUT... --vocab-size N [-o tokenizer.bpe]
                                     [--scheduler ADDRESS]
    python tools/train_dask.py encode --tokenizer T INPUT... -o DIR [--eot TOKEN]
                                      [--scheduler ADDRESS]

The inputs are files or glob patterns, local or any fsspec URL the workers can read. JSON
lines (`.jsonl`, `.ndjson`, maybe compressed; or every input with `--jsonl`) give one
document per record (its `--text-field`), anything else is UTF-8 text, one document per file.

train: each task counts the pre-tokens of its part of the input (large files in byte ranges
cut by `file_cuts`, the rule of `Tokenizer.train_files`); the counts are summed on the
workers, and only the sum reaches the driver, which trains with `train_from_counts`.  The
merges are those of `Tokenizer.train_files` (text) or `Tokenizer.train` (the records' texts).

encode: each task encodes its part with `Tokenizer.encode_files` on a worker and writes
its own shard, DIR/part-00000.bin with its sidecar part-00000.bin.json; the driver writes
DIR/index.json (the shards in order, the dtype, the total count).  The shards, concatenated
in order, are exactly the array `Tokenizer.encode_files` writes for the same inputs (every
id, every document start).  Neither text nor ids pass through the driver.  Workers read
local paths in place (a shared file system); remote or compressed files are copied to the
worker, one task each.

Without `--scheduler` a local cluster of `--workers` processes runs for the command.
`count_on_dask`, `train_on_dask` and `encode_on_dask` are the same steps for use from Python.
"""

import argparse
import importlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings

TEXT_FIELD = "text"
JSONL_SUFFIXES = (".jsonl", ".ndjson")
MIN_AUTO_BLOCK = 1 << 20
MAX_AUTO_BLOCK = 1 << 26


class ToolError(ValueError):
    """A bad input or invocation: one line, no traceback."""


# --------------------------------------------------------------------------
# Inputs and the task plan (driver side)
# --------------------------------------------------------------------------


class Source:
    """One input file: its fsspec filesystem and path, size, kind and compression."""

    __slots__ = ("fs", "path", "name", "size", "jsonl", "compression", "local")

    def __init__(self, fs, path, name, size, jsonl, compression, local):
        self.fs, self.path, self.name, self.size = fs, path, name, size
        self.jsonl, self.compression, self.local = jsonl, compression, local

    def __repr__(self):
        return (f"Source({self.name!r}, {self.size}, jsonl={self.jsonl}, "
                f"compression={self.compression!r})")


def resolve_inputs(inputs, *, jsonl=None):
    """Expand files and glob patterns (local paths or fsspec URLs) into Sources.
    jsonl=None decides by the file name (maybe compressed); True or False forces it."""
    from fsspec.core import has_magic, url_to_fs
    from fsspec.utils import infer_compression

    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    sources = []
    for given in map(os.fspath, inputs):
        try:
            fs, path = url_to_fs(given)
            if has_magic(path):
                infos = [
                    i for i in fs.glob(path, detail=True).values() if i.get("type") != "directory"
                ]
                if not infos:
                    raise ToolError(f"no file matches {given}")
            else:
                infos = [fs.info(path)]
                if infos[0].get("type") == "directory":
                    raise ToolError(f"{given} is a directory; give files or a glob such as "
                                    f"{given.rstrip('/')}/*.txt")
        except FileNotFoundError:
            raise ToolError(f"no such file: {given}") from None
        except (ImportError, ValueError, OSError) as e:  # unknown protocol, missing extra
            if isinstance(e, ToolError):
                raise
            raise ToolError(f"cannot read {given}: {' '.join(str(e).split())}") from None
        protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        local = "file" in protocols
        for info in sorted(infos, key=lambda i: i["name"]):
            path, compression = info["name"], infer_compression(info["name"])
            plain = path.lower().rsplit(".", 1)[0] if compression else path.lower()
            kind = plain.endswith(JSONL_SUFFIXES) if jsonl is None else bool(jsonl)
            sources.append(Source(fs, path, path if local else fs.unstrip_protocol(path),
                                  int(info.get("size") or 0), kind, compression, local))
    if not sources:
        raise ToolError("no input files")
    return sources


def plan_jobs(sources, blocksize, pattern, specials, mod):
    """Cut the sources into jobs (kind, fs, path, name, start, end, compression), by the
    library's own cut points (`file_cuts`); compressed files are one job each.  `pattern`
    is a regex (a tokenizer's, or one resolve_pattern gave): one that is a bare word, which
    file_cuts would read as a pattern name, goes to it as the same regex in a group."""
    if isinstance(pattern, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", pattern):
        pattern = f"(?:{pattern})"
    jobs = []
    for src in sources:
        kind = "jsonl" if src.jsonl else "text"
        ranges = [(0, src.size)]
        if src.compression is None and src.size > blocksize:
            with src.fs.open(src.path, "rb", block_size=1 << 17) as f:
                ranges = mod.file_cuts(f, blocksize, pattern=pattern, special_tokens=specials,
                                       jsonl=src.jsonl)
        jobs += [(kind, src.fs, src.path, src.name, a, b, src.compression) for a, b in ranges]
    return jobs


def pack_jobs(jobs, blocksize):
    """Group consecutive jobs into tasks of up to `blocksize` bytes (many small files make
    few tasks; a range of a large file is a task of its own)."""
    groups, current, size = [], [], 0
    for job in jobs:
        n = job[5] - job[4]
        if current and size + n > blocksize:
            groups.append(current)
            current, size = [], 0
        current.append(job)
        size += n
    if current:
        groups.append(current)
    return groups


def auto_blocksize(total_bytes, n_threads):
    """About four tasks per worker thread, between 1 MiB and 64 MiB."""
    return min(max(total_bytes // (4 * max(n_threads, 1)), MIN_AUTO_BLOCK), MAX_AUTO_BLOCK)


def _threads(client):
    return sum(client.nthreads().values()) if client is not None else (os.cpu_count() or 1)


def _ship_module(client):
    """Workers unpickle the task functions by module name.  Run as a script, this file's
    functions travel by value; imported as a module (tests, notebooks), each worker gets a
    copy of the file (importable there; not imported now, so nothing is reloaded here)."""
    if client is not None and __name__ != "__main__":
        from distributed.diagnostics.plugin import UploadFile

        client.register_plugin(UploadFile(os.path.abspath(__file__), load=False),
                               name="bpe-train-dask-module")


def _run_tasks(client, fn, tasks, sizes, progress, phase, *args):
    """fn(task, *args) for every task: futures on `client` (progress as they finish), or
    Dask's default scheduler.  Returns the futures / results in task order."""
    import dask
    import dask.bag as db

    if client is None:
        bag = db.from_sequence(tasks, npartitions=max(len(tasks), 1)).map(fn, *args)
        return dask.compute(bag)[0]
    from distributed import as_completed

    futures = client.map(fn, tasks, *[[a] * len(tasks) for a in args], pure=False)
    if progress is not None:
        total, done, size = sum(sizes), 0, dict(zip(futures, sizes))
        progress(phase, 0, total)
        for future in as_completed(futures):
            done += size[future]
            progress(phase, done, total)
    return futures


def _reporter(progress):
    if progress is True:
        import bpe_fallback

        return bpe_fallback.ProgressBar()
    return progress or None


# --------------------------------------------------------------------------
# Counting (train)
# --------------------------------------------------------------------------


def _read_job(fs, path, start, end, compression):
    if compression is not None:
        with fs.open(path, "rb", compression=compression) as f:
            return f.read()
    return fs.cat_file(path, start=start, end=end)


def count_job(job, backend, pattern, specials, field):
    """Count the pre-tokens of one job: (counts, notes), notes being (name, byte offset) of
    invalid UTF-8 read as U+FFFD."""
    kind, fs, path, name, start, end, compression = job
    mod = importlib.import_module(backend)
    if kind == "jsonl":
        if compression is not None:
            with fs.open(path, "rb", compression=compression) as f:
                docs = mod.read_jsonl(f, text_field=field, name=f"{name} (decompressed)")
                return mod.count_pretokens(docs, pattern=pattern, special_tokens=specials), []
        docs = mod.read_jsonl(_read_job(fs, path, start, end, None), text_field=field, name=name,
                              offset=start)
        return mod.count_pretokens(docs, pattern=pattern, special_tokens=specials), []
    data = _read_job(fs, path, start, end, compression)
    notes = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        notes.append((name, start + e.start))
        text = data.decode("utf-8", "replace")
    del data
    return mod.count_pretokens(text, pattern=pattern, special_tokens=specials), notes


def _add_into(total, counts):
    get = total.get
    for token, n in counts.items():
        total[token] = get(token, 0) + n


def count_task(jobs, backend, pattern, specials, field):
    """Count the jobs of one task: (counts, notes)."""
    total, notes = {}, []
    for job in jobs:
        counts, more = count_job(job, backend, pattern, specials, field)
        notes.extend(more)
        if len(counts) > len(total):  # both are this task's own dicts
            total, counts = counts, total
        _add_into(total, counts)
    return total, notes


def sum_counts(parts):
    """Add (counts, notes) pairs, leaving the inputs alone: the largest dict is copied once
    and the others are added to the copy."""
    parts = sorted(parts, key=lambda p: len(p[0]), reverse=True)
    if not parts:
        return {}, []
    if len(parts) == 1:
        return parts[0]
    total, notes = dict(parts[0][0]), list(parts[0][1])
    for counts, more in parts[1:]:
        _add_into(total, counts)
        notes.extend(more)
    return total, notes


class Counted:
    """The result of count_on_dask: summed counts and what was read."""

    def __init__(self, counts, files, n_bytes, tasks, blocksize, notes, seconds):
        self.counts, self.files, self.bytes, self.tasks = counts, files, n_bytes, tasks
        self.blocksize, self.notes, self.seconds = blocksize, notes, seconds

    def invalid_utf8(self):
        """{file name: first offset} of files with invalid UTF-8 (read as U+FFFD)."""
        first = {}
        for name, offset in self.notes:
            first[name] = min(offset, first.get(name, offset))
        return first


def _sources(inputs, jsonl):
    if inputs and all(isinstance(s, Source) for s in inputs):
        return list(inputs)
    return resolve_inputs(inputs, jsonl=jsonl)


def count_on_dask(inputs, *, client=None, pattern="gpt2", special_tokens=(),
                  text_field=TEXT_FIELD, blocksize=None, jsonl=None, backend="bpe",
                  split_every=8, progress=False):
    """Count the pre-tokens of the inputs on Dask; returns a Counted.

    `client`: a distributed.Client (None: Dask's current default scheduler).
    `blocksize`: bytes per task (None: about four tasks per worker thread).
    `backend`: the module the workers count with ("bpe" or "bpe_fallback").
    `progress`: True or a callable (phase, done, total), told of finished tasks."""
    mod = importlib.import_module(backend)
    pattern = mod.resolve_pattern(pattern)
    specials = list(special_tokens)
    mod.count_pretokens("", pattern=pattern, special_tokens=specials)  # checks the specials
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, not {type(text_field).__name__}")
    sources = _sources(inputs, jsonl)
    total = sum(s.size for s in sources)
    blocksize = _blocksize(blocksize, total, client)
    tasks = pack_jobs(plan_jobs(sources, blocksize, pattern, specials, mod), blocksize)
    _ship_module(client)
    start = time.perf_counter()
    sizes = [sum(j[5] - j[4] for j in t) for t in tasks]
    parts = _run_tasks(client, count_task, tasks, sizes, _reporter(progress), "count",
                       backend, pattern, specials, text_field)
    if client is None:
        counts, notes = sum_counts(parts)
    else:  # a tree of sums on the workers: only the total comes to the driver
        while len(parts) > 1:
            parts = [client.submit(sum_counts, parts[i:i + split_every], pure=False)
                     for i in range(0, len(parts), split_every)]
        counts, notes = parts[0].result()
    return Counted(counts, len(sources), total, len(tasks), blocksize, notes,
                   time.perf_counter() - start)


def _blocksize(blocksize, total, client):
    if blocksize is None:
        return auto_blocksize(total, _threads(client))
    if isinstance(blocksize, bool) or not isinstance(blocksize, int) or blocksize < 1:
        raise ValueError(f"blocksize must be a positive int, not {blocksize!r}")
    return blocksize


def train_on_dask(inputs, vocab_size, *, client=None, pattern="gpt2", special_tokens=(),
                  min_frequency=2, max_token_bytes=None, text_field=TEXT_FIELD, blocksize=None,
                  jsonl=None, backend="bpe", progress=False):
    """count_on_dask, then `Tokenizer.train_from_counts` of `backend` on the driver.
    Returns (tokenizer, counted)."""
    mod = importlib.import_module(backend)
    progress = _reporter(progress)
    options = dict(pattern=pattern, special_tokens=special_tokens, min_frequency=min_frequency,
                   max_token_bytes=max_token_bytes)
    mod.Tokenizer.train_from_counts({}, vocab_size, **options)  # checks the options (instant)
    counted = count_on_dask(inputs, client=client, pattern=pattern, special_tokens=special_tokens,
                            text_field=text_field, blocksize=blocksize, jsonl=jsonl,
                            backend=backend, progress=progress)
    counts, counted.counts = counted.counts, None
    counted.distinct = len(counts)
    tok = mod.Tokenizer.train_from_counts(counts, vocab_size, progress=progress or False, **options)
    return tok, counted


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------


def encode_task(task, tok, shard, options):
    """Encode one task's jobs into the shard `shard` (+ its sidecar) with encode_files on
    this worker; returns the sidecar's dict.  Remote or compressed files are copied here."""
    ranges, copies = [], []
    try:
        for _kind, fs, path, _name, start, end, compression in task:
            if compression is None and "file" in (
                fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
            ):
                ranges.append((path, start, end))
                continue
            fd, copy = tempfile.mkstemp(prefix="bpe-dask-")
            copies.append(copy)
            with os.fdopen(fd, "wb") as out, fs.open(path, "rb", compression=compression) as f:
                shutil.copyfileobj(f, out, 1 << 20)
            ranges.append(copy)
        return tok.encode_files(ranges, shard, workers=1, jsonl=task[0][0] == "jsonl", **options)
    finally:
        for copy in copies:
            os.unlink(copy)


def encode_on_dask(inputs, tokenizer, out_dir, *, client=None, eot=None, dtype=None,
                   allowed_special=frozenset(), disallowed_special="all", text_field=TEXT_FIELD,
                   jsonl=None, blocksize=None, progress=False):
    """Encode the inputs on Dask into out_dir: one shard per task (part-NNNNN.bin and its
    sidecar part-NNNNN.bin.json, written by the workers) and index.json (written here).
    Concatenated in order, the shards are the array ``tokenizer.encode_files`` writes for
    the inputs.  Returns the index's dict."""
    tok = tokenizer
    sources = _sources(inputs, jsonl)
    if not os.path.isdir(out_dir):
        raise ToolError(f"no such directory: {out_dir}")
    options = dict(dtype=dtype, eot=eot, allowed_special=allowed_special,
                   disallowed_special=disallowed_special, text_field=text_field)
    blocksize = _blocksize(blocksize, sum(s.size for s in sources), client)
    lib = importlib.import_module(type(tok).__module__)
    jobs = []
    for src in sources:
        if src.local and src.compression is None:  # read in place, in ranges
            jobs += plan_jobs([src], blocksize, tok.pattern, list(tok.special_tokens), lib)
        else:  # copied to the worker whole: a task of its own
            jobs.append(("jsonl" if src.jsonl else "text", src.fs, src.path, src.name, 0,
                         src.size, src.compression or "copy"))
    tasks = _in_input_order(jobs, blocksize)
    _ship_module(client)
    shards = [
        os.path.join(os.path.abspath(out_dir), f"part-{k:05d}.bin") for k in range(len(tasks))
    ]
    # the workers write the shards into this run's hidden directory; all of them and the
    # index are published together at the end, so no index lists a shard of another run.  On
    # a failure the directory goes: a task still running then fails to write into it.

    staging = tempfile.mkdtemp(prefix=".bpe-shards-", dir=os.path.abspath(out_dir))
    start = time.perf_counter()
    staged = [os.path.join(staging, os.path.basename(s)) for s in shards]
    try:
        metas = _encode_tasks(client, tasks, tok, staged, options, progress,
                              [sum(j[5] - j[4] for j in t) for t in tasks])
        return _publish_shards(out_dir, tok, shards, staged, metas, start)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish_shards(out_dir, tok, shards, staged, metas, start):
    """Rename the staged shards, their sidecars and the new index.json into out_dir as one
    set (bpe_fallback.FileSet); remove the shards the old index listed and the new does not.
    The index's dict."""
    import bpe_fallback

    index = {"format": "bpe-ids-shards", "version": 1, "dtype": metas[0]["dtype"],
             "count": sum(m["count"] for m in metas), "vocab_size": tok.vocab_size,
             "tokenizer_sha256": metas[0]["tokenizer_sha256"], "eot": metas[0]["eot"],
             "documents": sum(len(m["documents"]) for m in metas),
             "seconds": round(time.perf_counter() - start, 3),
             "shards": [{"path": os.path.basename(s), "count": m["count"],
                         "documents": len(m["documents"])} for s, m in zip(shards, metas)]}
    index_path = os.path.join(out_dir, "index.json")
    old = _old_shards(index_path, out_dir)
    with bpe_fallback.FileSet() as files:
        for path, shard in zip(staged, shards):
            files.adopt(path, shard)
            files.adopt(path + ".json", shard + ".json", describes=True)
        files.text(index_path, json.dumps(index, indent=1) + "\n", describes=True)
        files.publish()
    for path in old - {os.path.basename(s) for s in shards}:  # the last run's, now unlisted
        for name in (path, path + ".json"):
            try:
                os.unlink(os.path.join(out_dir, name))
            except OSError:
                pass
    return index


def _old_shards(index_path, out_dir):
    """The shard files the index in out_dir lists (none if it has none, or no index)."""
    try:
        with open(index_path, encoding="utf-8") as f:
            old = json.load(f)
        names = {s["path"] for s in old["shards"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return {n for n in names if isinstance(n, str) and os.path.basename(n) == n
            and n.startswith("part-") and n.endswith(".bin")}


def _encode_tasks(client, tasks, tok, shards, options, progress, sizes):
    """Run encode_task for every task (on the client's cluster, or dask's local scheduler):
    the shards' sidecars' dicts."""
    if client is not None:
        tok_arg = client.scatter(tok, broadcast=True, hash=False)
        futures = client.map(encode_task, tasks, [tok_arg] * len(tasks), shards,
                             [options] * len(tasks), pure=False)
        try:
            if progress:
                from distributed import as_completed

                report, done = _reporter(progress), 0
                report("encode", 0, sum(sizes))
                for future in as_completed(futures):
                    done += sizes[futures.index(future)]
                    report("encode", done, sum(sizes))
            metas = client.gather(futures)
        except BaseException:
            client.cancel(futures)  # the tasks not yet started write nothing
            raise
    else:
        import dask

        metas = dask.compute(*[dask.delayed(encode_task)(t, tok, s, options)
                               for t, s in zip(tasks, shards)])
    return metas


def _in_input_order(jobs, blocksize):
    """Tasks in input order: local ranges of one kind (text or JSON lines) grouped up to
    blocksize, copied files alone."""
    tasks, current, size = [], [], 0
    for job in jobs:
        n = job[5] - job[4]
        alone = job[6] is not None
        if current and (alone or size + n > blocksize or job[0] != current[0][0]):
            tasks.append(current)
            current, size = [], 0
        if alone:
            tasks.append([job[:6] + (None if job[6] == "copy" else job[6],)])
            continue
        current.append(job)
        size += n
    if current:
        tasks.append(current)
    return tasks


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

PROG = "train_dask"
FORMATS = {
    "native": ("tokenizer.bpe", "save"),
    "huggingface": ("tokenizer.json", "save_huggingface"),
    "gpt2": ("tokenizer-gpt2", "save_gpt2"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ToolError(f"{message} (see --help)")


def _size(text):
    if text == "auto":
        return None
    try:
        from dask.utils import parse_bytes

        n = int(parse_bytes(text))
    except (ValueError, TypeError, ImportError):
        raise argparse.ArgumentTypeError(
            f"not a size: {text!r} (e.g. 64MiB, 1000000, auto)") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return n


def build_parser():
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0],
                epilog="BPE_BACKEND=python uses the pure-Python bpe_fallback, on the workers too; "
                       "BPE_DEBUG=1 shows tracebacks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    t = sub.add_parser("train", help="count on the cluster, train on this machine")
    e = sub.add_parser("encode", help="encode into shards on the cluster")
    for c in (t, e):
        c.add_argument("inputs", nargs="+", metavar="INPUT",
                       help="files or glob patterns, local or fsspec URLs the workers can read")
        c.add_argument("--scheduler", metavar="ADDRESS",
                       help="a running Dask scheduler (tcp://host:8786) or its scheduler file; "
                            "default: a local cluster for this run")
        c.add_argument("--workers", type=int, metavar="N",
                       help="worker processes of the local cluster (default 2, one thread each)")
        c.add_argument("--jsonl", action="store_true", help="read every input as JSON lines")
        c.add_argument("--text-field", default=TEXT_FIELD, metavar="FIELD",
                       help="the field of a JSON record that holds its text (default text)")
        c.add_argument("--blocksize", type=_size, metavar="SIZE",
                       help="bytes per task, e.g. 64MiB (default: about 4 tasks per worker thread)")
        c.add_argument(
            "-q", "--quiet", action="store_true", help="no summary, no automatic progress"
        )
        c.add_argument("--progress", action="store_true",
                       help="show progress on stderr even when it is not a terminal")
    t.add_argument("--vocab-size", type=int, required=True, metavar="N")
    t.add_argument(
        "--pattern",
        default="gpt2",
        metavar="P",
        help="gpt2, cl100k, o200k, words, bytes or a regex",
    )
    t.add_argument(
        "--special", action="append", default=[], metavar="TOKEN", help="a special token"
    )
    t.add_argument("--min-frequency", type=int, default=2, metavar="N")
    t.add_argument("--max-token-bytes", type=int, metavar="N")
    t.add_argument("-o", "--output", metavar="OUT", help="default: tokenizer.bpe (native)")
    t.add_argument("--format", choices=list(FORMATS), default="native")
    e.add_argument("--tokenizer", "-t", required=True, metavar="T",
                   help="a tokenizer file in any format Tokenizer.from_file reads")
    e.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="the directory of the shards"
    )
    e.add_argument("--eot", metavar="TOKEN", help="a special token to append after every document")
    e.add_argument(
        "--allowed-special",
        action="append",
        default=[],
        metavar="TOKEN",
        help="encode this special token's text as the token (repeatable; all: every one)",
    )
    return p


def _connect(args, say):
    """(client, cluster); cluster is None for a given scheduler."""
    import logging

    from distributed import Client, LocalCluster

    if args.scheduler:
        try:
            client = (Client(scheduler_file=args.scheduler) if os.path.isfile(args.scheduler)
                      else Client(args.scheduler))
        except (OSError, ValueError, TypeError) as e:
            raise ToolError(f"cannot connect to the scheduler {args.scheduler}: {e}") from None
        try:
            client.wait_for_workers(1, timeout=60)
        except Exception:  # a timeout, whichever flavour
            client.close()
            raise ToolError(
                f"no worker joined the scheduler {args.scheduler} within 60 s"
            ) from None
        say(f"cluster      {client.scheduler.address}, {len(client.nthreads())} workers")
        return client, None
    n = args.workers or 2
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.CRITICAL)
    try:
        client = Client(cluster)
    except BaseException:
        cluster.close()
        raise
    say(f"cluster      local, {n} worker process{'es' if n != 1 else ''}")
    return client, cluster


def _backend_of(name):
    return importlib.import_module(name).BACKEND


def _main(args):
    name = "bpe_fallback" if os.environ.get("BPE_BACKEND", "").lower() == "python" else "bpe"
    mod = importlib.import_module(name)
    say = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    progress = (
        mod.ProgressBar() if args.progress or (not args.quiet and sys.stderr.isatty()) else None
    )
    if args.workers is not None and (args.workers < 1 or args.scheduler):
        raise ToolError(
            "--workers must be at least 1, and sizes the local cluster (not with --scheduler)"
        )
    if args.command == "train":
        if args.vocab_size > 1 << 31:
            raise ToolError(f"--vocab-size must be at most {1 << 31} (ids are 32-bit)")
        options = dict(pattern=args.pattern, special_tokens=args.special,
                       min_frequency=args.min_frequency, max_token_bytes=args.max_token_bytes)
        mod.Tokenizer.train_from_counts({}, args.vocab_size, **options)  # checks them (instant)
        out = args.output or FORMATS[args.format][0]
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent) or (args.format != "gpt2" and os.path.isdir(out)):
            raise ToolError(f"cannot write {out}: " + ("it is a directory" if os.path.isdir(out)
                                                       else f"{parent} does not exist"))
    else:
        tok = mod.Tokenizer.from_file(args.tokenizer)
        if not os.path.isdir(args.output):
            os.makedirs(args.output)
    missing = [m for m in ("dask", "distributed", "fsspec") if importlib.util.find_spec(m) is None]
    if missing:
        raise ToolError(f"this tool needs {' and '.join(missing)}: pip install "
                        f"'dask[distributed]' (or pip install '.[dask]')")
    sources = resolve_inputs(args.inputs, jsonl=True if args.jsonl else None)
    client, cluster = _connect(args, say)
    try:
        say(f"backend      {mod.BACKEND} (driver), "
            f"{'/'.join(sorted(set(client.run(_backend_of, mod.__name__).values())))} (workers)")
        if args.command == "encode":
            allowed = "all" if "all" in args.allowed_special else set(args.allowed_special)
            index = encode_on_dask(sources, tok, args.output, client=client, eot=args.eot,
                                   allowed_special=allowed, text_field=args.text_field,
                                   blocksize=args.blocksize, progress=progress)
            say(f"encoded      {len(sources)} files, {index['documents']:,} documents: "
                f"{index['count']:,} ids ({index['dtype']}) in {index['seconds']:.2f} s")
            say(f"wrote        {len(index['shards'])} shards and index.json in {args.output}")
            return 0
        tok, counted = train_on_dask(sources, args.vocab_size, client=client,
                                     text_field=args.text_field, blocksize=args.blocksize,
                                     backend=mod.__name__, progress=progress, **options)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    for path, offset in sorted(counted.invalid_utf8().items()):
        warnings.warn(f"{path}: invalid UTF-8 at byte {offset} (and maybe later); "
                      f"such bytes are read as U+FFFD", stacklevel=1)
    say(
        f"inputs       {counted.files} files ({counted.bytes:,} bytes) in {counted.tasks} "
        f"task{'s' * (counted.tasks != 1)} of up to {counted.blocksize:,} bytes"
    )
    say(f"counted      {counted.distinct:,} distinct pre-tokens in {counted.seconds:.2f} s")
    say(f"merges       {len(tok.merges):,} learned; vocab_size {tok.vocab_size}")
    getattr(tok, FORMATS[args.format][1])(out)
    say(f"wrote        {out} ({args.format})")
    return 0


def main(argv=None):
    """The command line; returns the exit status.  Errors are one line on stderr."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *rest, **kw: sys.stderr.write(
            f"{PROG}: warning: {' '.join(str(message).split())}\n")
        try:
            return _main(build_parser().parse_args(argv))
        except SystemExit as e:  # --help
            return e.code or 0
        except KeyboardInterrupt:
            message, code = "interrupted", 130
        except (ValueError, TypeError, OSError, ImportError, RuntimeError) as e:
            if os.environ.get("BPE_DEBUG"):
                raise
            cause = type(e).__module__.split(".")[0] in ("dask", "distributed")
            message = (f"the cluster failed: {type(e).__name__}: " if cause else "") + (
                str(e) or type(e).__name__
            )
            code = 2 if isinstance(e, ToolError) and "--help" in str(e) else 1
    sys.stderr.write(f"{PROG}: error: {' '.join(message.split())}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
