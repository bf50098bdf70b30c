"""Corpus work on a Dask cluster: train_files' counting and encode_files'
encoding done by the workers of a ``distributed`` cluster, which read local
paths or fsspec URLs; the _ClusterWork mixin.  Dask is an optional extra
(``pip install bpe[dask]``): it is imported only when a call is given a
cluster."""

from __future__ import annotations as _annotations

import collections as _collections
import os as _os

from .corpus import (
    _check_distinct,
    _check_ids_output,
    _count_kinds,
    _encode_read,
    _EncodeJob,
    _gil_free_core,
    _is_val,
    _read_job,
    _val_path,
    _write_encoded,
)
from .cutting import (
    _JSONL_SUFFIXES,
    _LINE_CUT,
    _count_job,
    _CountJob,
    _Inflated,
    _plain_name,
    _ranges,
    _split_by_cut,
)
from .programs import _cut_kind
from .util import _warn, _WarnOnce

_DASK_EXTRA = "pip install bpe[dask]"


def _need_dask():
    """The module ``distributed`` (with fsspec, which dask brings), or an
    ImportError naming the extra to install."""
    try:
        import distributed
        import fsspec  # noqa: F401 - the workers read the inputs through it
    except ImportError as e:
        raise ImportError(f"running on a Dask cluster needs dask[distributed] ({e.name} is not "
                          f"installed): {_DASK_EXTRA}") from None
    return distributed


class _Cluster:
    """``with _Cluster(dask) as client``: `dask` itself when it is a
    ``distributed.Client``; else an address, connected for the call and
    closed after it: ``"local"`` or ``"local:N"`` (a cluster of N worker
    processes on this machine, one thread each; N defaults to the CPUs), a
    scheduler's address (``tcp://host:8786``) or its scheduler file."""

    def __init__(self, dask):
        self.dask, self.client, self.cluster = dask, None, None

    def __enter__(self):
        distributed = _need_dask()
        if isinstance(self.dask, distributed.Client):
            return self.dask
        if not isinstance(self.dask, str):
            raise TypeError(f"dask must be a distributed.Client or an address (str), not "
                            f"{type(self.dask).__name__}")
        address = self.dask.strip()
        try:
            if address == "local" or address.startswith("local:"):
                n = _local_workers(address)
                import logging

                self.cluster = distributed.LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                    silence_logs=logging.CRITICAL)
                self.client = distributed.Client(self.cluster)
            elif _os.path.isfile(address):
                self.client = distributed.Client(scheduler_file=address)
            else:
                self.client = distributed.Client(address)
            self.client.wait_for_workers(1, timeout=120)
        except BaseException as e:
            self.__exit__(None, None, None)
            if isinstance(e, (OSError, TimeoutError)) or type(e).__name__ == "TimeoutError":
                raise OSError(f"cannot reach the Dask cluster {address}: "
                              f"{' '.join(str(e).split()) or type(e).__name__}") from None
            raise
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
        return False


def _local_workers(address):
    if address == "local":
        return _os.cpu_count() or 1
    n = address[len("local:"):]
    if not n.isdigit() or int(n) < 1:
        raise ValueError(f"dask address {address!r}: want local or local:N (N worker processes, "
                         f"N >= 1), or a scheduler's address")
    return int(n)


def _threads(client):
    return max(sum(client.nthreads().values()), 1)


# Inputs: local paths or fsspec URLs, listed and cut on this machine (the client)

# one input file: its name (as given, or as a glob found it), fsspec filesystem and path,
# size, whether the filesystem is this machine's, gzip, "text" or "jsonl"
_Source = _collections.namedtuple("_Source", "name fs path size local gzip kind")


def _sources(paths, kinds_of):
    """The inputs as _Sources.  An input is a path or an fsspec URL
    (``s3://bucket/corpus.txt``; the workers need the filesystem's package);
    one that does not exist but holds ``*``, ``?`` or ``[`` is a glob, its
    files in sorted order.  `kinds_of(names)` gives each file's kind."""
    from fsspec.core import url_to_fs

    if isinstance(paths, (str, bytes, _os.PathLike)):
        paths = [paths]
    found = []
    for given in paths:
        if not isinstance(given, (str, bytes, _os.PathLike)):
            raise TypeError(f"expected a path or URL, not {type(given).__name__}: {given!r}")
        given = _os.fsdecode(given)
        try:
            fs, path = url_to_fs(given)
        except (ImportError, ValueError) as e:  # an unknown protocol, its package missing
            raise ValueError(f"cannot read {given}: {' '.join(str(e).split())}") from None
        local = "file" in (fs.protocol if isinstance(fs.protocol, (tuple, list))
                           else (fs.protocol,))
        try:
            info = fs.info(path)
            infos = [info]
        except FileNotFoundError:
            infos = []
        if not infos and any(c in path for c in "*?["):
            infos = sorted((i for i in fs.glob(path, detail=True).values()
                            if i.get("type") != "directory"), key=lambda i: i["name"])
            if not infos:
                raise ValueError(f"no file matches {given!r}")
        elif not infos:
            raise ValueError(f"no such file: {given!r}")
        elif infos[0].get("type") != "file" or (local and not _os.path.isfile(path)):
            raise ValueError(f"{given!r} is not a regular file")
        for i in infos:
            name = given if len(infos) == 1 and i is info else (
                i["name"] if local else fs.unstrip_protocol(i["name"]))
            found.append((name, fs, i["name"], int(i.get("size") or 0), local))
    kinds = kinds_of([name for name, *_ in found])
    return [_Source(name, fs, path, size, local, _source_is_gzip(fs, path), kind)
            for (name, fs, path, size, local), kind in zip(found, kinds)]


def _input_bytes(paths):
    """The bytes of the inputs (paths or URLs, globs expanded; a gzip
    file's compressed size): what bpe train --dask reports reading."""
    _need_dask()
    return sum(s.size for s in _sources(paths, lambda names: ["text"] * len(names)))


def _source_is_gzip(fs, path):
    """_is_gzip of a source: named *.gz, or starting with gzip's magic bytes."""
    if path.lower().endswith(".gz"):
        return True
    return fs.cat_file(path, start=0, end=2) == b"\x1f\x8b"  # (remote: one small request)


def _opened(source):
    """A source open for reading on this machine (the client cuts it)."""
    if source.local:
        return open(source.path, "rb")
    return source.fs.open(source.path, "rb", block_size=1 << 16)


def _cuts(source, chunk_size, cut_re):
    """The ranges of a source, cut as train_files and encode_files cut a file
    (a gzip file is one range, to the end of its inflated text: None)."""
    if source.gzip:
        return [(0, None)]
    with _opened(source) as f:
        return _ranges(f, source.size, 0, source.size, chunk_size, cut_re)


def _default_chunk(sources, client, chunk_size, per_thread=4, least=1 << 20):
    """About `per_thread` chunks per worker thread, of `least` to 64 MB: each
    task's text and counts (or ids) are what a worker holds.  (Counting: few
    tasks, few counts to add; encoding: more, for the ids to come back in a
    steady stream.)"""
    if chunk_size is None:
        total = sum(s.size for s in sources)
        return min(max(total // (per_thread * _threads(client)), least), 1 << 26)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
    return chunk_size


# On a worker: reading a source's bytes, warnings caught and sent back

class _Window:
    """Bytes [start, start + len(data)) of a remote file, fetched in one
    request, read as the file is (by its offsets): a worker's text of a
    task, never more."""

    def __init__(self, data, start):
        self.data, self.start, self.pos = data, start, start

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def seek(self, pos, whence=0):
        self.pos = pos
        return pos

    def read(self, n=-1):
        i = self.pos - self.start
        out = self.data[i:] if n is None or n < 0 else self.data[i:i + n]
        self.pos += len(out)
        return out


class _Fetched:
    """``with _Fetched(source, start, end) as (path, start, end, opener)``,
    on a worker: where to read bytes [start, end) of a source with the
    library's readers.  A local file is read in place; a remote file's range
    is fetched into memory; a gzip file (end None) is inflated into a
    temporary file (remote: copied first) and read whole.  A ValueError or
    warning raised inside names the source, not a temporary file."""

    def __init__(self, source, start, end):
        self.source, self.start, self.end = source, start, end
        self.names, self.inflated, self.tmp = {}, None, None

    def __enter__(self):
        src = self.source
        if not src.gzip:
            if src.local:
                return src.path, self.start, self.end, open
            window = _Window(src.fs.cat_file(src.path, start=self.start, end=self.end),
                             self.start)
            return src.name, self.start, self.end, lambda path, mode: window
        raw = src.path
        if not src.local:
            import tempfile

            fd, self.tmp = tempfile.mkstemp(prefix="bpe-fetched-",
                                            suffix="-" + _os.path.basename(src.path))
            _os.close(fd)
            src.fs.get_file(src.path, self.tmp)
            raw = self.names[self.tmp] = self.tmp
        self.inflated = _Inflated([raw])
        (path,) = self.inflated.__enter__()
        self.names[path] = src.name
        return path, 0, _os.path.getsize(path), open

    def rename(self, text):
        for tmp, name in self.names.items():
            text = text.replace(tmp, name)
        return text

    def __exit__(self, kind, value, traceback):
        if self.inflated is not None:
            self.inflated.__exit__(None, None, None)
        if self.tmp is not None:
            _os.unlink(self.tmp)
        if isinstance(value, ValueError) and self.names:
            text = self.rename(str(value))
            if text != str(value):
                raise ValueError(text) from None
        return False


class _Caught:
    """``with _Caught(fetched) as warned``, on a worker: the warnings given
    inside, as (message, category name), the temporary files named as the
    sources they hold; given again on the client (_rewarn)."""

    def __init__(self):
        import warnings

        self.catching = warnings.catch_warnings(record=True)
        self.warned, self.names = [], {}

    def __enter__(self):
        import warnings

        self.caught = self.catching.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self.catching.__exit__(*exc)
        for w in self.caught:
            message = str(w.message)
            for tmp, name in self.names.items():
                message = message.replace(tmp, name)
            if (message, w.category.__name__) not in self.warned:
                self.warned.append((message, w.category.__name__))
        return False


def _rewarn(warned):
    import builtins

    for message, category in warned:
        cls = getattr(builtins, category, None)
        _warn(message, cls if isinstance(cls, type) and issubclass(cls, Warning)
              else UserWarning)


def _dask_count(jobs, cls, options):
    """A count task, on a worker: the pre-tokens of its jobs ((source, start,
    end), read in pieces) in one of the core's counters, packed; with the
    warnings given."""
    core = cls.core_class
    counter = core.counter(options.pattern)
    with _Caught() as caught:
        for source, start, end in jobs:
            fetched = _Fetched(source, start, end)
            with fetched as (path, a, b, opener):
                caught.names.update(fetched.names)
                _count_job(_CountJob(path, a, b, source.kind), options, core, counter, opener)
    return counter.pack(), caught.warned


def _dask_add(cls, pattern, parts):
    """A step of the sum, on a worker: counts (packed) added into one."""
    counter = cls.core_class.counter(pattern)
    warned = []
    for packed, more in parts:
        counter.add_packed(packed)
        warned += [w for w in more if w not in warned]
    return counter.pack(), warned


def _dask_encode(tok, source, job, options):
    """An encode task, on a worker: a job's parts (see _encode_read), the
    warnings given, and the size of the bytes read (a gzip file's inflated)."""
    with _Caught() as caught:
        fetched = _Fetched(source, job.start, job.end)
        with fetched as (path, a, b, opener):
            caught.names.update(fetched.names)
            local = job._replace(path=path, start=a, end=b)
            core = _gil_free_core(tok)
            pack = None if core is None else core.packer(options.itemsize)
            parts = _encode_read(local, _read_job(local, options, opener), tok, options, pack)
    return parts, caught.warned, b


def _dask_is_val(source, val):
    """Whether a text source (one document) goes to the validation array:
    _is_val of its bytes (a gzip file's inflated), streamed on a worker."""
    import hashlib

    h = hashlib.blake2b(key=val[0].encode("utf-8"), digest_size=8)

    def feed(f):
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)

    if source.gzip:
        with _Fetched(source, 0, None) as (path, _, _, _), open(path, "rb") as f:
            feed(f)
    else:
        with (open(source.path, "rb") if source.local else
              source.fs.open(source.path, "rb", block_size=1 << 22)) as f:
            feed(f)
    return _is_val(h, val)


def _itself(x):
    return x


def _dask_failed(e):
    """An error of the cluster itself (a worker killed too often, the
    scheduler gone) as a RuntimeError naming it; the tasks' own errors
    (ValueError ...) pass as they were raised."""
    if type(e).__module__.split(".")[0] in ("dask", "distributed", "tornado", "asyncio") or \
            type(e).__name__ in ("KilledWorker", "CancelledError", "CommClosedError"):
        detail = " ".join(str(e).split())
        return RuntimeError(f"the Dask cluster failed: {type(e).__name__}"
                            + (f": {detail}" if detail else "")
                            + " (nothing was written)")
    return None


class _ClusterWork:
    """train_files(dask=...) and encode_files(dask=...): the work of the
    corpus methods done by a Dask cluster's workers."""

    @classmethod
    def _count_on_dask(cls, dask, paths, options, chunk_size, report, jsonl):
        """The pre-tokens of the inputs, counted by the workers in tasks of
        about `chunk_size` bytes cut by the rule of train_files; the tasks'
        counts come here as they finish and are added into a core's counter
        (returned, as _count_files returns one): counts, never text."""
        with _Cluster(dask) as client, _WarnOnce():
            if not isinstance(options.text_field, str):
                raise TypeError(f"text_field must be a str, not "
                                f"{type(options.text_field).__name__}")
            sources = _sources(paths, lambda names: _count_kinds(names, jsonl))
            chunk_size = _default_chunk(sources, client, chunk_size)
            text_cut = _cut_kind(options.pattern, options.specials)
            tasks, sizes, current, size = [], [], [], 0
            for src in sources:
                cut_re = _LINE_CUT if src.kind == "jsonl" else text_cut
                for a, b in _cuts(src, chunk_size, cut_re):
                    n = src.size if b is None else b - a
                    if current and size + n > chunk_size:  # small files share a task
                        tasks.append(current)
                        sizes.append(size)
                        current, size = [], 0
                    current.append((src, a, b))
                    size += n
            if current:
                tasks.append(current)
                sizes.append(size)
            try:
                counts, warned = _sum_on_dask(client, cls, options, tasks, sizes, report)
            except Exception as e:
                raise (_dask_failed(e) or e) from None
            _rewarn(warned)
        return counts

    def _encode_on_dask(self, dask, paths, out, val_out, jsonl, chunk_size, options, dtype,
                        split, report):
        """encode_files(dask=...): the jobs planned here (encode_files' cuts),
        encoded by the workers, their ids brought back in order (a few tasks
        ahead of the one written) and written here, as encode_files writes."""
        with _Cluster(dask) as client, _WarnOnce():
            sources = _sources(paths, lambda names: [
                "jsonl" if (_plain_name(n).lower().endswith(_JSONL_SUFFIXES)
                            if jsonl is None else jsonl) else "text" for n in names])
            local = [(s.path, None, None) for s in sources if s.local]
            outs = [_check_ids_output(out, local)]
            if options.val is not None:
                outs.append(_check_ids_output(_val_path(out) if val_out is None else val_out,
                                              local))
                if outs[1] == outs[0]:
                    raise ValueError(f"the validation output is the output {outs[0]}")
                _check_distinct([outs[0], outs[0] + ".json", outs[1], outs[1] + ".json"])
            chunk_size = _default_chunk(sources, client, chunk_size, 8, 1 << 22)
            try:
                sides = self._dask_sides(client, sources, options.val)
                jobs, owners, ranges = self._plan_on_dask(sources, chunk_size, options, sides)
                sizes = [src.size if job.end is None else job.end - job.start
                         for src, job in jobs]
                window = 2 * _threads(client) + 2
                return _write_encoded(
                    self, outs, owners, ranges, options, dtype, split,
                    lambda: _encoded_on_dask(client, self, jobs, owners, ranges, options, window),
                    sizes, report)
            except Exception as e:
                raise (_dask_failed(e) or e) from None

    @staticmethod
    def _dask_sides(client, sources, val):
        """With a validation split, the side of each text source (a task each)."""
        texts = [s for s in sources if s.kind == "text"]
        if val is None or not texts:
            return {}
        found = client.gather(client.map(_dask_is_val, texts, val=val, pure=False))
        return {id(s): int(v) for s, v in zip(texts, found)}

    def _plan_on_dask(self, sources, chunk_size, options, sides):
        """encode_files' plan (_plan_encode) of sources: ([(source, _EncodeJob)],
        the input of each job, the inputs as (name, start, end))."""
        text_cut = _cut_kind(self._pattern, tuple(self._specials))
        needles = [s.encode("utf-8", "surrogatepass") for s in options.disallowed if len(s) > 1]
        jobs, owners, ranges = [], [], []
        for src in sources:
            cut_re = _LINE_CUT if src.kind == "jsonl" else text_cut
            cuts = _cuts(src, chunk_size, cut_re)
            for a, b in cuts:
                jobs.append((src, _EncodeJob(src.name, a, b, src.kind, a == 0,
                                             b is None or b == src.size, sides.get(id(src), 0))))
                owners.append(len(ranges))
            if src.kind == "text" and needles and len(cuts) > 1:
                with _opened(src) as f:
                    for pos in {a for a, _ in cuts} - {0}:
                        found = _split_by_cut(f, pos, needles)
                        if found is not None:
                            self._check_disallowed(found, frozenset([found]))
            ranges.append((src.name, 0, None if src.gzip else src.size))
        return jobs, owners, ranges


def _sum_on_dask(client, cls, options, tasks, sizes, report):
    """Run the count tasks and add their counts into one counter here as they come
    (while the workers count the others); when several have come at once and more are
    running (this process is behind), a worker sums them first.  Returns (the counter,
    the warnings).  Progress: the bytes of the tasks done."""
    from distributed import as_completed

    futures = client.map(_dask_count, tasks, cls=cls, options=options, pure=False)
    size_of = {f.key: n for f, n in zip(futures, sizes)}
    total, done = sum(sizes), 0
    if report is not None:
        report("count", 0, total)
    counts = cls.core_class.counter(options.pattern)
    warned, sums = [], []
    pending = as_completed(futures)
    try:
        for batch in pending.batches():
            for future in batch:
                if future.status == "error":
                    future.result()  # raises the task's error
                if future.key in size_of:
                    done += size_of[future.key]
                    if report is not None:
                        report("count", done, total)
            if len(batch) > 1 and not pending.is_empty():
                step = client.submit(_dask_add, cls, options.pattern, batch, pure=False)
                sums.append(step)
                pending.add(step)
                continue
            for future in batch:
                packed, more = future.result()
                future.release()
                counts.add_packed(packed)
                del packed
                warned += [w for w in more if w not in warned]
        return counts, warned
    finally:
        client.cancel(futures + sums)


def _encoded_on_dask(client, tok, jobs, owners, ranges, options, window):
    """Yield the parts of each job in order, encoded by the workers: at most
    `window` tasks are submitted and not yet written (their ids wait on the
    workers).  A gzip source's range gets its inflated size."""
    # the model once, as a task's result: a worker that dies with it makes Dask compute it
    # again from the task (scattered data would be lost with the last worker holding it)
    tok_future = client.submit(_itself, tok, pure=False)
    ahead = _collections.deque()
    following = 0
    try:
        for k in range(len(jobs)):
            while following < len(jobs) and following - k < window:
                src, job = jobs[following]
                ahead.append(client.submit(_dask_encode, tok_future, src, job, options,
                                           pure=False))
                following += 1
            parts, warned, size = ahead.popleft().result()
            _rewarn(warned)
            name, start, end = ranges[owners[k]]
            if end is None:
                ranges[owners[k]] = (name, start, size)
            yield parts
    finally:
        client.cancel(list(ahead))

