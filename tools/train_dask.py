#!/usr/bin/env python3
"""Train a byte-level BPE tokenizer with the pre-token counting on a Dask cluster.

    python tools/train_dask.py corpus/*.txt --vocab-size 32768 --special '<|endoftext|>'
    python tools/train_dask.py 's3://bucket/shards/*.jsonl.gz' --vocab-size 32768 \\
        --scheduler tcp://10.0.0.1:8786 --format huggingface -o tokenizer.json

The inputs are files or glob patterns, local or any fsspec URL the workers can read.
Plain text files are counted whole, large ones in byte ranges cut only where no pre-token
can change (the cut rule of `Tokenizer.train_files`), so the merges are exactly those of
`Tokenizer.train_files` on the same files.  JSON lines files (`.jsonl`, `.json`, or every
input with `--jsonl`; gzip, bz2 and xz compressed ones too) give one document per record,
its `--text-field`, so the merges are those of `Tokenizer.train(list_of_documents)`.

Each task reads its own range on a worker and returns the pre-token counts of that range;
the counts are summed by a tree reduction on the workers (never the raw text on the
driver), then the driver trains with `Tokenizer.train_from_counts` and writes the result
in the chosen format.  Without `--scheduler` a local cluster of `--workers` processes is
started and closed at the end.

The functions `count_on_dask` and `train_on_dask` are the same steps for use from Python.
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
import warnings

TEXT_FIELD = "text"
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
MIN_AUTO_BLOCK = 1 << 20
MAX_AUTO_BLOCK = 1 << 26


class ToolError(ValueError):
    """A bad input (no such file, no match, a directory): one line, no traceback."""


# --------------------------------------------------------------------------
# Inputs and the task plan (driver side)
# --------------------------------------------------------------------------


class Source:
    """One input file: its fsspec filesystem and path, size, kind and compression."""

    __slots__ = ("fs", "path", "name", "size", "jsonl", "compression")

    def __init__(self, fs, path, name, size, jsonl, compression):
        self.fs, self.path, self.name = fs, path, name
        self.size, self.jsonl, self.compression = size, jsonl, compression

    def __repr__(self):
        return f"Source({self.name!r}, {self.size}, jsonl={self.jsonl}, compression={self.compression!r})"


def _is_jsonl(path, compression):
    name = path.lower()
    if compression:
        name = name.rsplit(".", 1)[0]
    return name.endswith(JSONL_SUFFIXES)


def resolve_inputs(inputs, *, jsonl=None):
    """Expand files and glob patterns (local paths or fsspec URLs) into Sources.

    jsonl=None decides by the file name (.jsonl/.json/.ndjson, maybe compressed);
    True or False forces every input."""
    from fsspec.core import has_magic, url_to_fs
    from fsspec.utils import infer_compression

    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    sources = []
    for given in inputs:
        given = os.fspath(given)
        try:
            fs, path = url_to_fs(given)
            if has_magic(path):
                infos = list(fs.glob(path, detail=True).values())
                infos = [i for i in infos if i.get("type") != "directory"]
                if not infos:
                    raise ToolError(f"no file matches {given}")
            else:
                info = fs.info(path)
                if info.get("type") == "directory":
                    raise ToolError(f"{given} is a directory; give files or a glob "
                                    f"such as {given.rstrip('/')}/*.txt")
                infos = [info]
        except FileNotFoundError:
            raise ToolError(f"no such file: {given}") from None
        except (ImportError, ValueError, OSError) as e:  # unknown protocol, missing extra
            raise ToolError(f"cannot read {given}: {' '.join(str(e).split())}") from None
        protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        local = "file" in protocols
        for info in sorted(infos, key=lambda i: i["name"]):
            path = info["name"]
            name = path if local else fs.unstrip_protocol(path)
            compression = infer_compression(path)
            kind = _is_jsonl(path, compression) if jsonl is None else bool(jsonl)
            sources.append(Source(fs, path, name, int(info.get("size") or 0), kind, compression))
    if not sources:
        raise ToolError("no input files")
    return sources


def _find_line_cut(f, pos, size):
    """The offset just after the first line feed at or after `pos`, or None."""
    window = 1 << 16
    while pos < size:
        f.seek(pos)
        data = f.read(window)
        if not data:
            return None
        i = data.find(b"\n")
        if i >= 0:
            cut = pos + i + 1
            return cut if cut < size else None
        pos += len(data)
    return None


def plan_jobs(sources, blocksize, pattern, specials):
    """Cut the sources into jobs (kind, fs, path, name, start, end, compression).

    Plain text is cut only where `Tokenizer.train_files` may cut (no pre-token can
    change there: the library's own rule); JSON lines just after a line feed.
    Compressed files are one job each."""
    from bpe_fallback import _cut_kind, _find_cut

    text_cut = _cut_kind(pattern, specials)
    jobs = []
    for src in sources:
        kind = "jsonl" if src.jsonl else "text"
        start, size = 0, src.size
        if src.compression is None and size > blocksize and (src.jsonl or text_cut is not None):
            with src.fs.open(src.path, "rb", block_size=1 << 17) as f:
                while start + blocksize < size:
                    if src.jsonl:
                        cut = _find_line_cut(f, start + blocksize, size)
                    else:
                        cut = _find_cut(f, start + blocksize, size, text_cut)
                    if cut is None:
                        break
                    jobs.append((kind, src.fs, src.path, src.name, start, cut, None))
                    start = cut
        jobs.append((kind, src.fs, src.path, src.name, start, size, src.compression))
    return jobs


def pack_jobs(jobs, blocksize):
    """Group consecutive jobs into tasks of up to `blocksize` bytes (many small
    files make few tasks; a range of a large file is a task of its own)."""
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
    """About four tasks per worker thread, between 1 MiB and 64 MiB (as train_files)."""
    return min(max(total_bytes // (4 * max(n_threads, 1)), MIN_AUTO_BLOCK), MAX_AUTO_BLOCK)


# --------------------------------------------------------------------------
# Worker side: count one job; sum counts
# --------------------------------------------------------------------------


def _read_job(fs, path, start, end, compression):
    if compression is not None:
        with fs.open(path, "rb", compression=compression) as f:
            return f.read()
    return fs.cat_file(path, start=start, end=end)


def _json_docs(lines, name, field):
    """The text field of each JSON record; `lines` yields (byte offset, bytes)."""
    for offset, line in lines:
        if not line.strip():
            continue
        where = f"{name}: the line at byte {offset}"
        try:
            text = line.decode("utf-8")
            if offset == 0 and text.startswith("\ufeff"):  # a byte order mark
                text = text[1:]
            record = json.loads(text)
        except UnicodeDecodeError as e:
            raise ValueError(f"{where} is not valid UTF-8 ({e.reason} at byte "
                             f"{offset + e.start})") from None
        except ValueError as e:
            msg = getattr(e, "msg", str(e))
            col = getattr(e, "colno", None)
            raise ValueError(f"{where} is not JSON ({msg}"
                             + (f" at column {col}" if col else "") + ")") from None
        if not isinstance(record, dict):
            raise ValueError(f"{where} is a JSON {type(record).__name__}, not an object")
        try:
            text = record[field]
        except KeyError:
            raise ValueError(f"{where} has no field {field!r}") from None
        if not isinstance(text, str):
            raise ValueError(f"{where}: field {field!r} is {json.dumps(text)[:40]}, not a string")
        yield text


def _lines_of(data, start):
    pos, n = 0, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        stop = n if nl < 0 else nl + 1
        yield start + pos, data[pos:stop]
        pos = stop


def _stream_lines(fs, path, compression):
    with fs.open(path, "rb", compression=compression) as f:
        offset = 0
        for line in f:
            yield offset, line
            offset += len(line)


def count_job(job, backend, pattern, specials, field):
    """Count the pre-tokens of one job; returns (counts, notes), notes being
    (name, byte offset) of invalid UTF-8 read as U+FFFD."""
    kind, fs, path, name, start, end, compression = job
    mod = importlib.import_module(backend)
    notes = []
    if kind == "jsonl":
        if compression is not None:
            lines = _stream_lines(fs, path, compression)
            where = f"{name} (decompressed)"
        else:
            lines = _lines_of(_read_job(fs, path, start, end, None), start)
            where = name
        docs = _json_docs(lines, where, field)
        return mod.count_pretokens(docs, pattern=pattern, special_tokens=specials), notes
    data = _read_job(fs, path, start, end, compression)
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
    """Count the jobs of one task; returns (counts, notes)."""
    total, notes = {}, []
    for job in jobs:
        counts, more = count_job(job, backend, pattern, specials, field)
        notes.extend(more)
        if len(counts) > len(total):  # both are this task's own dicts
            total, counts = counts, total
        _add_into(total, counts)
    return total, notes


def sum_counts(parts):
    """Add (counts, notes) pairs: the per-partition and the aggregate step of the
    tree reduction.  The inputs are left alone: the largest dict is copied once
    and the others are added to the copy."""
    parts = list(parts)
    if not parts:
        return {}, []
    if len(parts) == 1:
        return parts[0]
    parts.sort(key=lambda p: len(p[0]), reverse=True)
    total = dict(parts[0][0])
    notes = list(parts[0][1])
    for counts, more in parts[1:]:
        _add_into(total, counts)
        notes.extend(more)
    return total, notes


def _worker_backend(backend):
    mod = importlib.import_module(backend)
    return getattr(mod, "BACKEND", "?")


# --------------------------------------------------------------------------
# The Dask steps (driver side)
# --------------------------------------------------------------------------


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


def _ship_module(client):
    """Workers unpickle the task functions by module name.  Run as a script, this
    file's functions travel by value; imported as a module (tests, notebooks), each
    worker gets a copy of the file in its local directory (importable there; not
    imported now, so nothing is reloaded in this process)."""
    if __name__ != "__main__":
        from distributed.diagnostics.plugin import UploadFile

        client.register_plugin(UploadFile(os.path.abspath(__file__), load=False),
                               name="bpe-train-dask-module")


def count_on_dask(inputs, *, client=None, pattern="gpt2", special_tokens=(),
                  text_field=TEXT_FIELD, blocksize=None, jsonl=None, backend="bpe",
                  split_every=8):
    """Count the pre-tokens of the inputs on Dask; returns a Counted.

    `client`: a distributed.Client (None: Dask's current default scheduler).
    `blocksize`: bytes per task (None: about four tasks per worker thread).
    `backend`: the module the workers count with ("bpe" or "bpe_fallback")."""
    import dask
    import dask.bag as db
    from bpe_fallback import _check_specials, resolve_pattern

    pattern = resolve_pattern(pattern)
    specials = _check_specials(special_tokens)
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, not {type(text_field).__name__}")
    sources = inputs if inputs and all(isinstance(s, Source) for s in inputs) \
        else resolve_inputs(inputs, jsonl=jsonl)
    total = sum(s.size for s in sources)
    if blocksize is None:
        threads = sum(client.nthreads().values()) if client is not None else (os.cpu_count() or 1)
        blocksize = auto_blocksize(total, threads)
    if isinstance(blocksize, bool) or not isinstance(blocksize, int) or blocksize < 1:
        raise ValueError(f"blocksize must be a positive int, not {blocksize!r}")
    tasks = pack_jobs(plan_jobs(sources, blocksize, pattern, specials), blocksize)
    if client is not None:
        _ship_module(client)
    start = time.perf_counter()
    bag = db.from_sequence(tasks, npartitions=len(tasks))
    counted = bag.map(count_task, backend, pattern, specials, text_field)
    reduced = counted.reduction(sum_counts, sum_counts, split_every=split_every)
    if client is not None:
        (counts, notes), = dask.compute(reduced, scheduler=client)
    else:
        counts, notes = reduced.compute()
    return Counted(counts, len(sources), total, len(tasks), blocksize, notes,
                   time.perf_counter() - start)


def train_on_dask(inputs, vocab_size, *, client=None, pattern="gpt2", special_tokens=(),
                  min_frequency=2, max_token_bytes=None, text_field=TEXT_FIELD, blocksize=None,
                  jsonl=None, backend="bpe", progress=False):
    """count_on_dask, then `Tokenizer.train_from_counts` of `backend` on the driver.
    Returns (tokenizer, counted)."""
    mod = importlib.import_module(backend)
    # check the options before any work (training on no counts is instant)
    mod.Tokenizer.train_from_counts({}, vocab_size, pattern=pattern, special_tokens=special_tokens,
                                    min_frequency=min_frequency, max_token_bytes=max_token_bytes)
    counted = count_on_dask(inputs, client=client, pattern=pattern, special_tokens=special_tokens,
                            text_field=text_field, blocksize=blocksize, jsonl=jsonl,
                            backend=backend)
    counts, counted.counts = counted.counts, None
    tok = mod.Tokenizer.train_from_counts(counts, vocab_size, pattern=pattern,
                                          special_tokens=special_tokens,
                                          min_frequency=min_frequency,
                                          max_token_bytes=max_token_bytes, progress=progress)
    return tok, counted


# --------------------------------------------------------------------------
# Command line (its helpers are shared with tools/train_and_dump.py)
# --------------------------------------------------------------------------

PROG = "train_dask"


def _cli():
    """tools/train_and_dump.py: one-line errors, the backend choice, output checks and
    writers (imported on the driver only; workers never need it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import train_and_dump

    return train_and_dump


def _size(text):
    if text == "auto":
        return None
    try:
        from dask.utils import parse_bytes
    except ImportError:
        parse_bytes = int
    try:
        n = int(parse_bytes(text))
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64MiB, 1000000, auto)")
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return n


def build_parser(cli):
    p = cli.ArgumentParser(
        prog=PROG,
        description="Train a byte-level BPE tokenizer, counting pre-tokens on a Dask cluster. "
                    "The merges equal Tokenizer.train_files on the same text files "
                    "(Tokenizer.train on the records' texts for JSON lines).",
        epilog="default outputs: native tokenizer.bpe, tiktoken tokenizer.tiktoken (+ "
               "tokenizer.tiktoken.json with the pattern and special tokens), huggingface "
               "tokenizer.json, gpt2 tokenizer-gpt2/ (vocab.json + merges.txt). "
               "Environment: BPE_BACKEND=python counts and trains with the pure-Python "
               "bpe_fallback (on the workers too); BPE_DEBUG=1 shows tracebacks.")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="files or glob patterns, local or fsspec URLs (s3://..., gs://...) "
                        "that the workers can read; .jsonl/.json/.ndjson (maybe .gz, .bz2, "
                        ".xz) are JSON lines, anything else UTF-8 text")
    p.add_argument("--vocab-size", type=int, required=True, metavar="N",
                   help="the vocabulary size: 256 bytes + merges + special tokens")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler (tcp://host:8786) or its scheduler file; "
                        "default: start a local cluster for this run")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default 2, one thread each)")
    cli.add_training_options(p)
    p.add_argument("--jsonl", action="store_true",
                   help="read every input as JSON lines, whatever its name")
    p.add_argument("--text-field", default=TEXT_FIELD, metavar="FIELD",
                   help=f"the field of each JSON record that holds its text (default {TEXT_FIELD})")
    p.add_argument("--blocksize", type=_size, default=None, metavar="SIZE",
                   help="bytes per task, e.g. 64MiB (default auto: about 4 tasks per worker "
                        "thread, from 1 MiB to 64 MiB)")
    cli.add_output_options(p, "show the merge progress on stderr even when it is not a terminal")
    return p


def _connect(args, cli, say):
    """(client, cluster); cluster is None for a given scheduler."""
    import logging

    from distributed import Client, LocalCluster

    if args.scheduler:
        target = args.scheduler
        try:
            if os.path.isfile(target):
                client = Client(scheduler_file=target)
            else:
                client = Client(target)
        except (OSError, ValueError, TypeError) as e:
            raise cli.CLIError(f"cannot connect to the scheduler {target}: "
                               f"{cli.describe_error(e)}") from None
        try:
            client.wait_for_workers(1, timeout=60)
        except Exception:  # a timeout, whichever flavour
            client.close()
            raise cli.CLIError(f"no worker joined the scheduler {target} within 60 s") from None
        say(f"cluster      {client.scheduler.address}, {_n(len(client.nthreads()), 'worker')}")
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


def _n(k, word):
    return f"{k:,} {word}{'' if k == 1 else 's'}"


def _is_dask_error(e):
    import asyncio

    module = type(e).__module__ or ""
    return module.split(".")[0] in ("dask", "distributed") or isinstance(
        e, (asyncio.CancelledError, asyncio.TimeoutError))


def _main(argv, cli):
    args = build_parser(cli).parse_args(argv)
    args.special = args.special or []
    cli.one_line_warnings(PROG)
    mod = cli.import_backend()
    say = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))

    least = 256 + len(args.special)
    if args.vocab_size < least:
        why = (f"256 bytes + {_n(len(args.special), 'special token')}" if args.special
               else "the 256 single bytes")
        raise cli.CLIError(f"--vocab-size must be at least {least} ({why}), got {args.vocab_size}",
                           code=2)
    for flag, value, low in (("--workers", args.workers, 1), ("--min-frequency", args.min_frequency, 0),
                             ("--max-token-bytes", args.max_token_bytes, 1)):
        if value is not None and value < low:
            raise cli.CLIError(f"{flag} must be at least {low}, got {value}", code=2)
    if args.scheduler and args.workers is not None:
        raise cli.CLIError("--workers sizes the local cluster; it cannot be used with --scheduler",
                           code=2)
    # the remaining options, checked by the library before any work (no counts: instant)
    mod.Tokenizer.train_from_counts({}, args.vocab_size, pattern=args.pattern,
                                    special_tokens=args.special, min_frequency=args.min_frequency,
                                    max_token_bytes=args.max_token_bytes)
    out = args.output or cli.FORMATS[args.format][0]  # (default, default for its sample)
    missing = [m for m in ("dask", "distributed", "fsspec") if importlib.util.find_spec(m) is None]
    if missing:
        raise cli.CLIError(f"this tool needs {' and '.join(missing)}: pip install "
                           f"'dask[distributed]' (or pip install '.[dask]')")
    try:
        sources = resolve_inputs(args.inputs, jsonl=True if args.jsonl else None)
    except ToolError as e:
        raise cli.CLIError(str(e)) from None
    local = [s.path for s in sources if s.name == s.path]
    cli.check_output(out, args.format, local)
    client, cluster = _connect(args, cli, say)
    try:
        try:
            backends = client.run(_worker_backend, mod.__name__)
        except ImportError as e:
            raise cli.CLIError(f"a worker cannot import {mod.__name__} ({cli.describe_error(e)}); "
                               f"install bpe on every worker") from None
        say(f"backend      {mod.BACKEND} (driver), {'/'.join(sorted(set(backends.values())))} "
            f"({_n(len(backends), 'worker')})")
        try:
            counted = count_on_dask(sources, client=client, pattern=args.pattern,
                                    special_tokens=args.special, text_field=args.text_field,
                                    blocksize=args.blocksize, backend=mod.__name__)
        except Exception as e:
            if not _is_dask_error(e) or os.environ.get("BPE_DEBUG"):
                raise
            raise cli.CLIError(f"counting on the cluster failed: {type(e).__name__}: "
                               f"{cli.describe_error(e)}") from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    for name, offset in sorted(counted.invalid_utf8().items()):
        warnings.warn(f"{name}: invalid UTF-8 at byte {offset} (and maybe later); "
                      f"such bytes are read as U+FFFD")
    n_jsonl = sum(s.jsonl for s in sources)
    kinds = [f"{len(sources) - n_jsonl} text"] if n_jsonl < len(sources) else []
    kinds += [f"{n_jsonl} JSON lines"] if n_jsonl else []
    say(f"inputs       {_n(len(sources), 'file')} ({', '.join(kinds)}; {counted.bytes:,} bytes) "
        f"in {_n(counted.tasks, 'task')} of up to {counted.blocksize:,} bytes")
    counts, counted.counts = counted.counts, None
    say(f"counted      {len(counts):,} distinct pre-tokens in {counted.seconds:.2f} s")
    start = time.perf_counter()
    progress = args.progress or (not args.quiet and sys.stderr.isatty())
    tok = mod.Tokenizer.train_from_counts(
        counts, args.vocab_size, pattern=args.pattern, special_tokens=args.special,
        min_frequency=args.min_frequency, max_token_bytes=args.max_token_bytes, progress=progress)
    del counts
    say(f"merges       {len(tok.merges):,} learned in {time.perf_counter() - start:.2f} s; "
        f"vocab_size {tok.vocab_size}")
    written = cli.save(tok, out, args.format)
    say(f"wrote        {', '.join(written)} ({args.format})")
    if not args.quiet and args.format != "native":
        for line in cli.how_to_load(tok, out, args.format, mod):
            say(line)
    return 0


def main(argv=None):
    try:
        cli = _cli()
    except ImportError as e:
        print(f"{PROG}: error: cannot import tools/train_and_dump.py ({e})", file=sys.stderr)
        return 1
    return cli.run(lambda a: _main(a, cli), PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
