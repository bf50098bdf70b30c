"""Corpus work: train_files' counting in threads or processes, encode_files (a
corpus to one flat array of ids with a sidecar), the _CorpusWork mixin."""

from __future__ import annotations as _annotations

import collections as _collections
import os as _os

from .core import Core
from .counting import _count_into
from .cutting import (
    _JSONL_SUFFIXES,
    _LINE_CUT,
    _check_workers,
    _count_job,
    _CountJob,
    _CountOptions,
    _file_jobs,
    _Inflated,
    _is_cut,
    _job_texts,
    _plain_name,
    _ranges,
    _read_bytes,
    _read_range,
    _split_by_cut,
    read_jsonl,
)
from .encoding import _pack_ids
from .files import FileSet, _check_not_input, _existing_mode
from .patterns import _pattern_of_json, _special_regex
from .programs import _cut_kind
from .readers import _native_dump
from .registry import _unpickle_model
from .util import _NONE_ALLOWED, _check_int, _reporter, _short, _warn, _WarnOnce
from .workers import _count_task, _encode_task, _WorkerPool


def _count_kinds(paths, jsonl):
    """How train_files reads each file: "jsonl" or "text".  A .jsonl or
    .ndjson file read as text (jsonl=None) is warned about: its JSON syntax
    would be learned as tokens."""
    if jsonl is not None and not isinstance(jsonl, bool):
        raise TypeError(f"jsonl must be None, True or False, not {jsonl!r}")
    if jsonl is None:
        for p in paths:
            if _plain_name(p).lower().endswith(_JSONL_SUFFIXES):
                _warn(f"{p}: JSON lines trained as plain text (the JSON syntax becomes tokens); "
                      f"pass jsonl=True (bpe train --jsonl) to train on each record's text, or "
                      f"jsonl=False to keep the raw text")
                break
    return ["jsonl" if jsonl else "text"] * len(paths)


def _count_files(core, paths, options, workers, chunk_size, report=None, jsonl=None):
    """Count the pre-tokens of files with a core's counters, one job (a safe
    byte range) at a time, into one counter (returned: the compiled core's
    learn_merges reads it without making a Python object per pre-token).
    Workers: threads of this process when the core counts without the GIL
    (the compiled one), else worker processes."""
    if isinstance(paths, (str, bytes, _os.PathLike)):
        paths = [paths]
    paths = [_os.fsdecode(p) for p in paths]
    for p in paths:
        if not _os.path.isfile(p):
            raise ValueError(f"no such file: {p!r}" if not _os.path.exists(p)
                             else f"{p!r} is not a regular file")
    if not isinstance(options.text_field, str):
        raise TypeError(f"text_field must be a str, not {type(options.text_field).__name__}")
    kinds = _count_kinds(paths, jsonl)
    workers = _check_workers(workers)
    with _Inflated(paths) as paths, _WarnOnce():
        return _count_paths(core, paths, options, workers, chunk_size, report, kinds)


def _count_paths(core, paths, options, workers, chunk_size, report, kinds):
    """_count_files of checked, plain files."""
    if chunk_size is None:
        total = sum(_os.path.getsize(p) for p in paths)
        # memory follows the chunk, not the corpus: at most 16 MB of text per worker
        chunk_size = min(max(total // (4 * workers), 1 << 20), 1 << 24)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
    jobs = _file_jobs(paths, chunk_size, options.pattern, options.specials, kinds)
    sizes = [job.end - job.start for job in jobs]
    total = core.counter(options.pattern)
    if workers == 1 or len(jobs) == 1:
        counted = (_count_job(job, options, core, total) for job in jobs)
        for _ in _reported(counted, sizes, report, "count"):
            pass
        return total
    workers = min(workers, len(jobs))
    if core.releases_gil:
        _count_in_threads(core, jobs, options, workers, total, sizes, report)
        return total
    with _WorkerPool(workers, "train_files", _count_task(options)) as pool:
        for packed in _reported(pool.map(jobs), sizes, report, "count"):
            total.add_packed(packed)
    return total


def _count_in_threads(core, jobs, options, workers, total, sizes, report):
    """Count the jobs in `workers` threads, each into its own counter (a core
    that counts without the GIL: they run in parallel; the first counts into
    `total`), then add the others to `total`.  This thread reads the pieces
    (reading and decoding hold the GIL anyway; their warnings and errors
    arise here, in the caller's thread) and hands them over, at most two per
    thread ahead.  On an error or Ctrl-C the threads finish what they were
    handed and stop."""
    import queue
    import threading

    special_re = _special_regex(options.specials)
    todo = queue.Queue(maxsize=2 * workers)
    failed = []

    def work(counter):
        while True:
            texts = todo.get()
            if texts is None:
                return
            if failed:
                continue
            try:
                for text in texts:
                    _count_into(counter, text, core.repair, special_re)
            except BaseException as e:  # noqa: B036 - raised again by the caller
                failed.append(e)

    def hand_over(job):
        for texts in _job_texts(job, options):
            if failed:
                raise failed[0]
            todo.put(texts)

    counters = [total] + [core.counter(options.pattern) for _ in range(workers - 1)]
    pool = [threading.Thread(target=work, args=(c,), name=f"train_files-{i}", daemon=True)
            for i, c in enumerate(counters)]
    try:
        for thread in pool:
            thread.start()
        for _ in _reported(map(hand_over, jobs), sizes, report, "count"):
            pass
    finally:
        for thread in pool:
            if thread.ident is not None:
                todo.put(None)
        for thread in pool:
            if thread.ident is not None:
                thread.join()
    if failed:
        raise failed[0]
    for counter in counters[1:]:
        total.add_packed(counter.pack())
        counter.clear()


def _reported(results, sizes, report, phase):
    """Yield `results`, reporting progress (the bytes done) as each arrives."""
    if report is None:
        yield from results
        return
    total, done = sum(sizes), 0
    report(phase, 0, total)
    for size, result in zip(sizes, results):
        done += size
        report(phase, done, total)
        yield result


def _worker_setup(header, blobs, tokenizer_class):
    """In a worker: the task's setup message -> a function of a job (the job's
    reply header and blobs); `tokenizer_class` makes an encode task's model."""
    if header["task"] == "count":
        options = _CountOptions(_pattern_of_json(header["pattern"]), tuple(header["specials"]),
                                header["text_field"])

        def count(job):
            counter = Core.counter(options.pattern)
            _count_job(_CountJob(*job), options, Core, counter)
            return {"counts": counter.pack()}, []

        return count
    tok = _unpickle_model(tokenizer_class, header["key"], blobs[0], header["name"])
    o = header["options"]
    options = _EncodeOptions(**dict(o, allowed=frozenset(o["allowed"]),
                                    disallowed=frozenset(o["disallowed"])))

    def encode(job):
        parts = _encode_job(_EncodeJob(*job), tok, options)
        return {"parts": [[n, docs] for _, n, docs in parts]}, [data for data, _, _ in parts]

    return encode


# Encoding files to arrays of ids (Tokenizer.encode_files)

_DTYPES = {"uint16": 2, "uint32": 4}


_IDS_FORMAT = "bpe-ids"

# encode_files' unit of work: bytes [start, end) of a file, "text" or "jsonl", and
# whether they start / end the file (where a text file's document starts and ends)
_EncodeJob = _collections.namedtuple("_EncodeJob",
                                     "path start end kind starts_document ends_document val")
# what every job is encoded with: the special-token policy, the id appended after each
# document (or None), the bytes per id, the field of a JSON record that holds its text,
# and the validation split: None, or [key, threshold] (see _is_val)
_EncodeOptions = _collections.namedtuple("_EncodeOptions",
                                         "allowed disallowed eot itemsize text_field val")


def _is_val(data, val):
    """Whether a document (its bytes, or a hash object fed them) goes to the
    validation file: blake2b(data, key=str(seed), digest_size=8) (an 8-byte
    digest, not the first 8 bytes of the default one) as a little-endian
    integer, below int(val_fraction * 2**64)."""
    import hashlib

    key, threshold = val
    h = data if not isinstance(data, (bytes, bytearray)) else hashlib.blake2b(
        data, key=key.encode("utf-8"), digest_size=8)
    return int.from_bytes(h.digest()[:8], "little") < threshold


def _file_is_val(path, val):
    """_is_val of a whole file's bytes (a text file is one document)."""
    import hashlib

    h = hashlib.blake2b(key=val[0].encode("utf-8"), digest_size=8)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return _is_val(h, val)


def _val_options(val_fraction, seed):
    """encode_files' val_fraction and seed -> _EncodeOptions.val."""
    if val_fraction is None:
        return None
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) or \
            not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be a number between 0 and 1 (exclusive), not "
                         f"{val_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    return [str(seed), min(int(val_fraction * 2 ** 64), 2 ** 64 - 1)]


def _val_path(out):
    """Where encode_files writes the validation split of `out` by default: its
    name with the last "train" replaced by "val" (``data/train.bin`` ->
    ``data/val.bin``), else ``NAME.val.EXT``.

    >>> _val_path("data/train.bin"), _val_path("corpus.bin")
    ('data/val.bin', 'corpus.val.bin')
    """
    out = _os.fspath(out)
    head, name = _os.path.split(out)
    at = name.rfind("train")
    if at >= 0:
        name = name[:at] + "val" + name[at + 5:]
    else:
        stem, ext = _os.path.splitext(name)
        name = f"{stem}.val{ext}"
    return _os.path.join(head, name)


def _ids_dtype(tok, dtype):
    need = "uint16" if tok.vocab_size <= 1 << 16 else "uint32"
    if dtype is None:
        return need
    name = str(getattr(dtype, "__name__", dtype))  # "uint16", numpy.uint16, numpy.dtype("uint16")
    if name not in _DTYPES:
        raise ValueError(f"dtype must be 'uint16' or 'uint32', not {dtype!r}")
    if _DTYPES[name] < _DTYPES[need]:
        raise ValueError(f"dtype uint16 cannot hold ids up to {tok.vocab_size - 1}: use uint32")
    return name


def _eot_id(tok, eot):
    if eot is None:
        return None
    if isinstance(eot, str):
        if eot not in tok._specials:
            raise ValueError(f"eot {eot!r} is not a special token of this tokenizer "
                             f"(it has {sorted(tok._specials) or 'none'})")
        return tok._specials[eot]
    if isinstance(eot, bool) or not isinstance(eot, int):
        raise TypeError("eot must be a special token (str) or an id (int), not "
                        f"{type(eot).__name__}")
    if eot not in tok._decoder:
        raise ValueError(f"eot {eot} is not an id of this tokenizer")
    return eot


def _encode_inputs(paths):
    """paths -> [(path, start or None, end or None)]."""
    if isinstance(paths, (str, bytes, _os.PathLike)) or (
            isinstance(paths, tuple) and len(paths) == 3 and isinstance(paths[1], int)):
        paths = [paths]
    inputs = []
    for item in paths:
        if isinstance(item, tuple):
            if not (len(item) == 3 and all(isinstance(x, int) and not isinstance(x, bool)
                                            for x in item[1:])):
                raise TypeError(f"a range must be (path, start, end), not {item!r}")
            path, start, end = item
        else:
            path, start, end = item, None, None
        if not isinstance(path, (str, bytes, _os.PathLike)):
            raise TypeError(f"expected a path, not {type(path).__name__}: {path!r}")
        path = _os.fsdecode(path)
        if not _os.path.isfile(path):
            raise ValueError(f"no such file: {path!r}" if not _os.path.exists(path)
                             else f"{path!r} is not a regular file")
        inputs.append((path, start, end))
    return inputs


def _plan_encode(tok, inputs, jsonl, chunk_size, workers, threads=False, disallowed=(),
                 val=None):
    """(jobs, the input of each job, the inputs as (path, start, end)); a job
    is an _EncodeJob.  By default each worker gets about 8 chunks, 32 when
    the workers are threads (a job costs a thread almost nothing, and smaller
    ones leave less of a last one for one thread to finish alone), of 256 KB
    to 4 MB.  The jobs check their own text for `disallowed` strings; one
    that a cut of a text file splits is refused here, as encode refuses it."""
    if chunk_size is None:
        total = sum(_os.path.getsize(p) if s is None else e - s for p, s, e in inputs)
        chunk_size = min(max(total // ((32 if threads else 8) * workers), 1 << 18), 1 << 22)
    _check_int("chunk_size", chunk_size, 1)
    text_cut = _cut_kind(tok._pattern, tuple(tok._specials))
    needles = [s.encode("utf-8", "surrogatepass") for s in disallowed if len(s) > 1]
    jobs, owners, ranges = [], [], []
    for path, start, end in inputs:
        kind = "jsonl" if (path.lower().endswith(_JSONL_SUFFIXES) if jsonl is None else jsonl) \
            else "text"
        cut_re = _LINE_CUT if kind == "jsonl" else text_cut
        with open(path, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            if start is None:
                start, end = 0, size
            if not 0 <= start <= end <= size:
                raise ValueError(f"{path}: range ({start}, {end}) is not within the file "
                                 f"({size} bytes)")
            for pos in (start, end):
                if not _is_cut(f, pos, size, cut_re):
                    raise ValueError(f"{path}: byte {pos} is not a place where the file may be "
                                     f"cut (take the ranges from file_cuts)")
            side = 1 if kind == "text" and val is not None and _file_is_val(path, val) else 0
            cuts = _ranges(f, size, start, end, chunk_size, cut_re)
            for a, b in cuts:
                jobs.append(_EncodeJob(path, a, b, kind, a == 0, b == size, side))
                owners.append(len(ranges))
            if kind == "text" and needles:  # (a JSON line's text is a document of its own)
                for pos in {start, end, *(a for a, _ in cuts)} - {0, size}:
                    found = _split_by_cut(f, pos, needles)
                    if found is not None:
                        tok._check_disallowed(found, frozenset([found]))
        ranges.append((path, start, end))
    return jobs, owners, ranges


def _read_job(job, options, opener=open):
    """The documents of a job, read: ([text], None) for a text file's range;
    for JSON lines, (the records' texts, the ValueError of a bad line that
    ended them, or None)."""
    if job.kind != "jsonl":
        return [_read_range(job.path, job.start, job.end, opener)], None
    texts = []
    try:
        for text in read_jsonl(_read_bytes(job.path, job.start, job.end, opener),
                               text_field=options.text_field, name=job.path, offset=job.start):
            texts.append(text)
    except ValueError as e:
        return texts, e  # raised after the records before it are encoded
    return texts, None


def _encode_read(job, read, tok, options, pack=None):
    """Encode a job's documents (what _read_job gave): a list of parts
    (packed ids, number of ids, document starts), one for `out` and, with a
    validation split, one for the validation file.  `pack`: None, or this
    thread's function text -> the packed ids of encode_ordinary(text) (a
    core's, made without the GIL and without a list of ids), used when no
    special token is allowed."""
    kind, starts_doc, ends_doc = job.kind, job.starts_document, job.ends_document
    allowed, disallowed, eot, itemsize = (options.allowed, options.disallowed, options.eot,
                                          options.itemsize)
    texts, error = read
    if allowed:
        pack = None  # the tokenizer splits the text on the allowed ones
    jsonl = kind == "jsonl"
    # each side: the ids (or, with pack, packed parts), the document starts, the count
    sides = [[[], [], 0] for _ in range(1 if options.val is None else 2)]
    eot_item = eot if pack is None or eot is None else _pack_ids([eot], itemsize)
    for text in texts:
        if jsonl:
            text = tok._core.repair(text)  # a JSON string may hold a lone surrogate
        tok._check_disallowed(text, disallowed)
        if options.val is None:
            side = sides[0]
        elif jsonl:
            side = sides[_is_val(text.encode("utf-8"), options.val)]
        else:
            side = sides[job.val]
        out, docs, count = side
        if jsonl or starts_doc:
            docs.append(count)
        if pack is None:
            out = tok._encode_allowed(text, allowed, out)
        else:
            out.append(pack(text))
            count += len(out[-1]) // itemsize
        if eot is not None and (jsonl or ends_doc):
            out.append(eot_item)
            count += 1
        if pack is None:
            count = len(out)
        side[0], side[2] = out, count
    if error is not None:
        raise error
    if pack is None:
        return [(tok._core.pack_ids(out, itemsize), count, docs) for out, docs, count in sides]
    return [(b"".join(out), count, docs) for out, docs, count in sides]


def _encode_job(job, tok, options, pack=None):
    """Read and encode one job: its parts (see _encode_read)."""
    return _encode_read(job, _read_job(job, options), tok, options, pack)


def _check_same_model(meta, tok, name, ids_path):
    """An array's sidecar `meta` names the model it was encoded with (its
    ``tokenizer_sha256``): decoding it with another model gives plausible
    garbage, so that is refused, naming both.  The digest is the model's
    (_tokenizer_sha256), so the same model in another file format agrees."""
    want = meta.get("tokenizer_sha256")
    if want is None:
        return
    have = _tokenizer_sha256(tok)
    if want != have:
        raise ValueError(f"{ids_path} was encoded with another tokenizer (sha256 "
                         f"{_short(want, 80)} in its sidecar) than {name} (sha256 {have!r}): "
                         "decode it with that one")


def _tokenizer_sha256(tok):
    """sha256 of the tokenizer's model: its native file (the bytes ``save``
    writes: pattern, tokens, merges, special tokens), whatever file it was
    read from; once per tokenizer.  Written in encode_files' sidecars and
    checked by ``bpe decode``."""
    import hashlib

    digest = tok.__dict__.get("_sha256")
    if digest is None:
        digest = tok._sha256 = hashlib.sha256(_native_dump(tok).encode("utf-8")).hexdigest()
    return digest


def _gil_free_core(tok):
    """The tokenizer's core if it encodes without the GIL (the compiled one),
    else None.  With one, encode_files' workers are threads of this process
    (no process to start, no model to send), each encoding with its own
    ``core.packer``; without, they are worker processes."""
    return tok._core if tok._core.releases_gil else None


def _encode_jobs(tok, jobs, options, workers):
    """Yield the results of the jobs, in order: encoded here (one worker),
    by threads (a core that encodes without the GIL), or by worker
    processes."""
    core = _gil_free_core(tok)
    if workers == 1 or len(jobs) == 1:
        pack = None if core is None else core.packer(options.itemsize)
        yield from (_encode_job(job, tok, options, pack) for job in jobs)
        return
    if core is not None:
        yield from _encode_in_threads(tok, core, jobs, options, workers)
        return
    yield from _encode_in_processes(tok, jobs, options, workers)


def _encode_in_processes(tok, jobs, options, workers):
    """Yield the results of the jobs, in order, encoded by worker processes,
    this process being one of them: it encodes jobs itself while they start
    (a thread starts them), then alongside them, holding a bounded number of
    results ahead of the one to be written next."""
    import concurrent.futures
    import threading

    n = len(jobs)
    procs = min(workers - 1, n - 1)
    window, limit = 2 * procs, 4 * workers
    pool = _WorkerPool(procs, "encode_files", _encode_task(tok, options))
    ended = threading.Event()  # this generator ended: start() stops waiting
    starter = None

    def halt():
        # The thread that starts the workers must be done before the pool is
        # stopped: a worker it started while stop() killed the others could be
        # left waiting forever on a queue lock that a killed one held.
        ended.set()
        if starter is not None:
            starter.join()  # within a tenth of a second, and the tokenizer's hash

    try:
        with pool:
            try:
                slots = {}  # job index -> a worker's future or this process's result
                started = []  # the outcome of start(): True, or the exception it raised

                def start():  # starting the processes takes a while: meanwhile this one encodes
                    try:
                        ready = []
                        for _ in range(procs):  # (each submit may start a process)
                            if ended.is_set():
                                break
                            ready.append(pool.submit(None))
                        _tokenizer_sha256(tok)  # for the sidecar, while the workers start
                        while concurrent.futures.wait(ready, 0.1).not_done and not ended.is_set():
                            pass  # (a stopped pool may never finish a starting worker's future)
                        started.append(True)
                    except BaseException as e:  # noqa: B036 - raised again in the caller
                        started.append(e)

                starter = threading.Thread(target=start, name="encode_files-start", daemon=True)
                starter.start()
                head = following = 0
                while head < n:
                    slot = slots.get(head)
                    if isinstance(slot, list) or (slot is not None and slot.done()):
                        del slots[head]
                        head += 1
                        yield slot if isinstance(slot, list) else pool.result(slot)
                        continue
                    if started and started[0] is not True:
                        raise started[0]
                    if started:  # keep every worker process busy
                        busy = sum(1 for s in slots.values()
                                   if not isinstance(s, list) and not s.done())
                        if busy < window and following < n:
                            end = min(following + window - busy, n)
                            for k in range(following, end):
                                slots[k] = pool.submit(jobs[k])
                            following = end
                            continue
                    if following < n and following - head < limit:
                        slots[following] = _encode_job(jobs[following], tok, options)
                        following += 1
                    else:
                        concurrent.futures.wait([slot])
                if not started:
                    halt()
                    pool.stop()  # done before the workers were: they have nothing to do
            finally:
                halt()  # before the pool stops
    finally:
        halt()


def _encode_in_threads(tok, core, jobs, options, workers):
    """Yield the results of the jobs, in order.  This thread reads the jobs
    (reading and decoding hold the GIL anyway; their memory is then not
    spread over the threads' malloc arenas) and writes the results; `workers`
    threads encode them, each with its own ``core.packer``.  At most
    2 x workers jobs are read and not yet written: memory follows the chunk
    size and the workers.  The first error in job order is raised as it was
    raised (in a thread, or reading); then, or on Ctrl-C or close(), the
    threads take no more jobs and are joined (each finishes the one it has)."""
    import threading

    n = len(jobs)
    threads = min(workers, n)
    ahead = 2 * threads
    shared = _JobThreads(tok, jobs, options)
    lock, done = shared.lock, shared.done
    pool = [threading.Thread(target=shared.work, args=(core.packer(options.itemsize),),
                             name=f"encode_files-{i}", daemon=True) for i in range(threads)]
    hashed = False
    try:
        for thread in pool:
            thread.start()
        for head in range(n):
            while True:
                with lock:
                    feed = (not (shared.stop or shared.failed) and shared.fed < n
                            and shared.fed - head < ahead)
                    if not feed:
                        if head in done:
                            result, error = done.pop(head)
                            break
                        if hashed:
                            lock.wait()
                            continue
                if not feed:  # nothing to read for now: the sidecar's hash meanwhile
                    _tokenizer_sha256(tok)
                    hashed = True
                    continue
                shared.feed()
            if error is not None:
                raise error
            yield result
    finally:
        with lock:
            shared.stop = True
            lock.notify_all()
        for thread in pool:
            if thread.ident is not None:  # started
                thread.join()


class _JobThreads:
    """What encode_files' encoding threads share with the thread that reads
    the jobs and writes their results (see _encode_in_threads)."""

    def __init__(self, tok, jobs, options):
        import threading

        self.tok, self.jobs, self.options = tok, jobs, options
        self.lock = threading.Condition()
        self.todo = _collections.deque()  # (job index, its documents): read, not yet taken
        self.done = {}  # job index -> (result, None) or (None, the exception it raised)
        self.fed = 0  # jobs read (or failed to read)
        self.failed = False  # reading a job failed: no more are read
        self.stop = False  # an error, Ctrl-C or close(): the threads take no more jobs

    def work(self, pack):
        """An encoding thread; `pack`: its encoder, with its own cache."""
        lock, todo, n = self.lock, self.todo, len(self.jobs)
        while True:
            with lock:
                while not (self.stop or todo or self.fed == n):
                    lock.wait()
                if self.stop or not todo:
                    return
                k, read = todo.popleft()
            try:
                outcome = (_encode_read(self.jobs[k], read, self.tok, self.options, pack), None)
            except BaseException as e:  # noqa: B036 - raised again by the writer
                outcome = (None, e)
            del read
            with lock:
                self.done[k] = outcome
                if outcome[1] is not None:
                    self.stop = True  # the jobs before this one are taken already
                lock.notify_all()

    def feed(self):
        """Read the next job (in the writer's thread) and hand it to the
        encoding threads; a job that fails to read is an outcome of its own."""
        k = self.fed
        try:
            read, bad = _read_job(self.jobs[k], self.options), None
        except Exception as e:  # noqa: BLE001 - raised in its turn, by the writer
            read, bad = None, e
        with self.lock:
            if bad is None:
                self.todo.append((k, read))
            else:
                self.done[k] = (None, bad)
                self.failed = True  # the jobs before it are read already
            self.fed += 1
            self.lock.notify_all()


def _encode_files(tok, paths, out, dtype, eot, jsonl, text_field, allowed_special,
                  disallowed_special, workers, chunk_size, progress, val_fraction=None,
                  val_out=None, seed=0, dask=None):
    allowed, disallowed = tok._policy(allowed_special, disallowed_special)
    dtype = _ids_dtype(tok, dtype)
    eot = _eot_id(tok, eot)
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, not {type(text_field).__name__}")
    if jsonl is not None and not isinstance(jsonl, bool):
        raise TypeError(f"jsonl must be None, True or False, not {jsonl!r}")
    val = _val_options(val_fraction, seed)
    report = _reporter(progress)
    options = _EncodeOptions(allowed, disallowed, eot, _DTYPES[dtype], text_field, val)
    if dask is not None:  # the cluster's workers encode (see _ClusterWork)
        if workers is not None:
            raise ValueError("workers counts this machine's workers: with dask, the cluster's "
                             "workers encode")
        return tok._encode_on_dask(dask, paths, out, val_out, jsonl, chunk_size, options, dtype,
                                   (val_fraction, seed), report)
    inputs = _encode_inputs(paths)
    outs = _ids_outputs(out, val_out, val, inputs)
    inflated = _Inflated(p for p, _, _ in inputs)
    with inflated as plain, _WarnOnce():
        inputs = [(q, a, b) for q, (_, a, b) in zip(plain, inputs)]
        threads = _gil_free_core(tok) is not None  # the workers are threads, else processes
        workers = _encode_workers(workers, inputs, threads)
        jobs, owners, ranges = _plan_encode(tok, inputs, jsonl, chunk_size, workers,
                                            threads and workers > 1, disallowed, val)
        ranges = [(inflated.name(p), a, b) for p, a, b in ranges]
        return _write_encoded(tok, outs, owners, ranges, options, dtype, (val_fraction, seed),
                              lambda: _encode_jobs(tok, jobs, options, workers),
                              [job.end - job.start for job in jobs], report)


def _write_encoded(tok, outs, owners, ranges, options, dtype, split, results, sizes, report):
    """Write the arrays `outs` (the train array, and the validation one with
    a split) from `results()`, the jobs' results in order (an iterator that
    is closed at the end: workers on this machine, or a Dask cluster's), and
    their sidecars, published together: a failure leaves the old set.
    `split`: (val_fraction, seed).  Returns the sidecar of the first."""
    val, (val_fraction, seed) = options.val, split
    with FileSet() as publish:
        modes = [(_existing_mode(path), _existing_mode(path + ".json")) for path in outs]
        fds = [publish.open(path, mode) for path, (mode, _) in zip(outs, modes)]
        files = [open(fd, "wb", closefd=False) for fd in fds]
        try:
            results = results()
            try:
                written = _write_ids(files, owners, len(ranges),
                                     _reported(results, sizes, report, "encode"))
            finally:
                # an error or Ctrl-C here, not in the generator: stop its workers now, not
                # when it is collected (maybe at exit, with the threads that starts frozen)
                results.close()
            for f in files:
                f.flush()
        finally:
            for f in files:
                f.close()
        by = None
        if val is not None:
            written, by = _split_sides(fds, written, options.itemsize, val_fraction, seed, outs)
        metas = _ids_metas(tok, dtype, options.eot, ranges, written)
        if val is not None:
            for meta, name in zip(metas, ("train", "val")):
                meta["split"] = {"part": name, "val_fraction": val_fraction, "seed": seed,
                                 "by": by}
        for path, meta, (_, mode) in zip(outs, metas, modes):
            publish.text(path + ".json", _sidecar_text(meta), mode, describes=True)
        publish.publish()
    return metas[0]


def _split_sides(fds, written, itemsize, val_fraction, seed, outs):
    """A validation split, made whole: documents go whole to one side (by
    their hash, _is_val), but a corpus of one document (one text file, one
    record, or ranges of one file) is split by tokens instead, nanoGPT's
    way: its first ``int(n * (1 - val_fraction))`` ids stay in the training
    file and the rest go to the validation file (moved between the two
    temporary files `fds` in blocks, never held whole).  Neither side may be
    left empty: ValueError, before anything is published.  Returns (the
    `written` of the two files, "tokens" or "documents")."""
    (n0, docs0, _), (n1, docs1, _) = written
    total = n0 + n1
    train, val = outs
    if not total:
        raise ValueError(f"val_fraction {val_fraction}: the corpus has no ids to split")
    if len(docs0) + len(docs1) <= 1 and not (n0 and n1):
        keep = int(total * (1 - val_fraction))
        if not 0 < keep < total:
            raise ValueError(f"val_fraction {val_fraction}: the corpus is one document of "
                             f"{total:,} id{'s' * (total != 1)}, too few to split by tokens "
                             f"({keep:,} for {train}, {total - keep:,} for {val})")
        whole = written[0 if n0 else 1]
        _move_ids(fds, 0 if n0 else 1, keep * itemsize, total * itemsize)
        return [_clip_written(whole, 0, keep), _clip_written(whole, keep, total)], "tokens"
    if not (n0 and n1):
        full, empty = (train, val) if n0 else (val, train)
        n_docs = len(docs0) + len(docs1)
        raise ValueError(f"val_fraction {val_fraction} (seed {seed}) put all {n_docs:,} "
                         f"documents in {full} and none in {empty}: documents go whole to one "
                         f"side, by a hash of their text; pass more documents, another "
                         f"val_fraction or another seed")
    return written, "documents"


def _move_ids(fds, holder, cut, end):
    """Bytes [0, end) of one document's ids are in file fds[holder] (the
    other file is empty): leave [0, cut) in fds[0] and [cut, end) in fds[1],
    copying in blocks of a megabyte."""
    train, val = fds
    if holder == 0:
        _copy_bytes(train, cut, end, val, 0)
        _os.ftruncate(train, cut)
    else:
        _copy_bytes(val, 0, cut, train, 0)
        _copy_bytes(val, cut, end, val, 0)  # forwards: each block is read before it is written
        _os.ftruncate(val, end - cut)


def _copy_bytes(src, start, end, dst, to):
    """Copy bytes [start, end) of descriptor `src` to descriptor `dst` at `to` (<= start
    when src is dst)."""
    while start < end:
        _os.lseek(src, start, _os.SEEK_SET)
        block = _os.read(src, min(end - start, 1 << 20))
        if not block:
            raise OSError(f"a temporary file ended at byte {start}, before {end}")
        _os.lseek(dst, to, _os.SEEK_SET)
        view = memoryview(block)
        while view:
            view = view[_os.write(dst, view):]
        start += len(block)
        to += len(block)


def _clip_written(written, lo, hi):
    """What _write_ids returns for one file, for its ids [lo, hi) only: the
    count, the document starts, each input's [ids start, ids count]."""
    _, documents, spans = written
    clipped = []
    for start, n in spans:
        a, b = max(start, lo), min(start + n, hi)
        clipped.append([a - lo, b - a] if b > a else [0, 0])
    return hi - lo, [d - lo for d in documents if lo <= d < hi], clipped


# a temporary file that holds another input -> that input's name in a sidecar (the
# command line's copy of standard input -> "-")
_INPUT_NAMES = {}


def _ids_metas(tok, dtype, eot, ranges, written):
    """The sidecars of encode_files' arrays: one per (count, documents, spans) written."""
    return [{
        "format": _IDS_FORMAT, "version": 1, "dtype": dtype, "byteorder": "little",
        "count": count, "vocab_size": tok.vocab_size,
        "tokenizer_sha256": _tokenizer_sha256(tok),
        "eot": eot,
        "inputs": [{"path": _INPUT_NAMES.get(p, p), "start": a, "end": b, "ids_start": i,
                    "ids_count": n}
                   for (p, a, b), (i, n) in zip(ranges, spans)],
        "documents": documents,
    } for count, documents, spans in written]


def _ids_outputs(out, val_out, val, inputs):
    """encode_files' output paths, checked (the train array, then the validation one)."""
    outs = [_check_ids_output(out, inputs)]
    if val is not None:
        outs.append(_check_ids_output(_val_path(out) if val_out is None else val_out, inputs))
        if outs[1] == outs[0]:
            raise ValueError(f"the validation output is the output {outs[0]}")
        _check_distinct([outs[0], outs[0] + ".json", outs[1], outs[1] + ".json"])
    return outs


def _check_distinct(paths):
    """The files of one set are four names for four files: a name written twice
    (``val_out = out + ".json"``) would lose one of them.  ValueError naming
    both, before anything is written."""
    roles = ["the output", "the output's sidecar", "the validation output",
             "the validation output's sidecar"]
    seen = {}
    for role, path in zip(roles, paths):
        keys = {_os.path.normcase(_os.path.realpath(path))}
        try:
            st = _os.stat(path)
            keys.add((st.st_dev, st.st_ino))  # a hard link to another name of the set
        except OSError:
            pass
        for key in keys:
            if key in seen:
                other, first = seen[key]
                name = path if path == first else f"{first} and {path}"
                raise ValueError(f"{name} would be both {other} and {role} (each array has a "
                                 f"sidecar, its name + .json): name the outputs apart")
            seen[key] = role, path


def _encode_workers(workers, inputs, threads):
    """The number of workers: a worker process takes as long to start as a few MB take to
    encode (one per 8 MB of input by default); a thread starts at once (one per MB)."""
    if workers is None:
        total = sum(_os.path.getsize(p) if a is None else b - a for p, a, b in inputs)
        workers = max(1, min(_os.cpu_count() or 1, total >> (20 if threads else 23)))
    return _check_workers(workers)


def _check_ids_output(out, inputs):
    """The absolute path of encode_files' output, checked: in a directory
    that exists, and neither it nor its sidecar an input."""
    out = _os.path.abspath(_os.fspath(out))
    directory = _os.path.dirname(out)
    if _os.path.isdir(out):
        raise ValueError(f"cannot write {out}: it is a directory")
    if not _os.path.isdir(directory):
        raise ValueError(f"cannot write {out}: no directory {directory}")
    _check_not_input([out, out + ".json"], [path for path, _, _ in inputs])
    return out


def _sidecar_text(meta):
    """JSON, one key per line and one input per line (lists of numbers on one line)."""
    import json

    lines = []
    for key, value in meta.items():
        if key == "inputs":
            text = ("[\n" + ",\n".join("  " + json.dumps(v) for v in value) + "\n ]"
                    if value else "[]")
        else:
            text = json.dumps(value)
        lines.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _write_ids(files, owners, n_inputs, results):
    """Write the jobs' packed ids in order, each part to its file: for each
    file (count, document starts, [ids start, ids count] of each input)."""
    written = [(0, [], [[0, 0] for _ in range(n_inputs)]) for _ in files]
    for owner, parts in zip(owners, results):
        for k, (f, (data, n, docs)) in enumerate(zip(files, parts)):
            count, documents, spans = written[k]
            if not spans[owner][1]:
                spans[owner][0] = count
            documents += [count + d for d in docs]
            f.write(data)
            spans[owner][1] += n
            written[k] = (count + n, documents, spans)
    return written


# Corpus work as Tokenizer methods

class _CorpusWork:
    """Training on files and encoding a corpus to a flat array of ids."""

    @classmethod
    def train_files(cls, paths, vocab_size, *, workers=None, chunk_size=None, pattern="gpt2",
                    special_tokens=(), min_frequency=2, max_token_bytes=None, progress=False,
                    jsonl=None, text_field="text", tie_break="bytes", dask=None):
        """Train on UTF-8 files: large files are read in chunks cut where no
        pre-token can change and counted by `workers` workers (default: the
        CPUs): threads of this process with the compiled core, worker
        processes with the pure-Python one (never a re-run of the main
        script: no ``if __name__ == "__main__":`` needed).  The merges are
        exactly those of ``train([whole text of each file])``.

        ``jsonl=True``: every file is JSON lines, each record's `text_field`
        one document (the merges of ``train(texts)``).  A ``.jsonl`` or
        ``.ndjson`` file read as text (the default, ``jsonl=None``) warns;
        ``jsonl=False`` reads it as text quietly.  ``tie_break``: as for
        ``train``.

        ``dask``: a ``distributed.Client``, or an address (``"local:N"``, a
        scheduler's): the cluster's workers count, reading paths or fsspec
        URLs; this process receives the counts and merges (the same merges).
        See docs/dask.md."""
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes, tie_break)
        progress = _reporter(progress)
        options = _CountOptions(pattern, specials, text_field)
        if dask is not None:
            if workers is not None:
                raise ValueError("workers counts this machine's workers: with dask, the "
                                 "cluster's workers count")
            counts = cls._count_on_dask(dask, paths, options, chunk_size, progress, jsonl)
        else:
            counts = _count_files(cls.core_class, paths, options, workers, chunk_size, progress,
                                  jsonl)
        return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress, tie_break=tie_break)

    def encode_files(self, paths, out, *, dtype=None, eot=None, jsonl=None, text_field="text",
                     allowed_special=_NONE_ALLOWED, disallowed_special="all", workers=None,
                     chunk_size=None, progress=False, val_fraction=None, val_out=None, seed=0,
                     dask=None):
        """Encode a corpus into `out`, one flat little-endian array of ids
        (``uint16`` when every id fits, else ``uint32``; no header: what
        ``numpy.memmap(out, dtype=..., mode="r")`` reads), and write
        ``out + ".json"``, the sidecar: dtype, count, the tokenizer's sha256,
        where each document starts.  Returns the sidecar's dict.

        Each text file is a document; in JSON lines (``.jsonl``, ``.ndjson``,
        or every input with ``jsonl=True``) each record's `text_field` is one.
        The ids of a document are ``encode(text, allowed_special=...,
        disallowed_special=...)``, followed by the id of `eot` (a special
        token, or an id) when given.  An input may also be a byte range
        ``(path, start, end)`` from ``file_cuts``: a text file's document then
        starts at byte 0 and ends at its end.

        Large files are read in chunks of `chunk_size` bytes cut where no id
        can change (see ``file_cuts``) and encoded by `workers` workers:
        threads of this process when the core encodes without the GIL (the
        compiled one; default: the CPUs, at most one per MB of input), else
        processes (this one and workers - 1 more; default: the CPUs, at most
        one per 8 MB of input; they never re-run the main script); memory
        follows the chunk size and the workers, not the corpus.  The files are
        written atomically: a crash or Ctrl-C leaves no partial `out`.
        `progress`: True, or a callable (phase, done, total).

        ``val_fraction`` (between 0 and 1): whole documents go to a second
        array, `val_out` (default: `out` with its last "train" replaced by
        "val", ``train.bin`` -> ``val.bin``, else ``NAME.val.EXT``), with its
        own sidecar; the rest to `out`.  A document goes there when
        ``int.from_bytes(hashlib.blake2b(data, key=str(seed).encode("utf-8"),
        digest_size=8).digest(), "little") < int(val_fraction * 2**64)``
        (`data`: a text file's bytes, a record's text as UTF-8): about that
        fraction of the documents, the same choice on every run and with any
        workers, and equal documents always on the same side.  A corpus of
        one document is split by tokens instead: the last ``val_fraction`` of
        its ids go to `val_out` (the first ``int(n * (1 - val_fraction))``
        stay).  A side left empty is a ValueError, and so are two files of
        the set with one name; nothing is written then.  Returns the sidecar
        of `out`.

        ``dask``: a ``distributed.Client``, or an address (``"local:N"``, a
        scheduler's): the cluster's workers read (paths or fsspec URLs) and
        encode the chunks; their ids come back in order and this process
        writes the same files (see docs/dask.md).

        >>> import os, tempfile, array
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<|endoftext|>"])
        >>> d = tempfile.mkdtemp()
        >>> for name, text in [("a.txt", "hi hi"), ("b.txt", "ih")]:
        ...     with open(os.path.join(d, name), "w") as f:
        ...         _ = f.write(text)
        >>> meta = tok.encode_files([os.path.join(d, "a.txt"), os.path.join(d, "b.txt")],
        ...                         os.path.join(d, "train.bin"), eot="<|endoftext|>")
        >>> meta["dtype"], meta["count"], meta["documents"]
        ('uint16', 7, [0, 4])
        >>> with open(os.path.join(d, "train.bin"), "rb") as f:
        ...     array.array("H", f.read()).tolist()
        [256, 32, 256, 257, 105, 104, 257]
        """
        return _encode_files(self, paths, out, dtype, eot, jsonl, text_field, allowed_special,
                             disallowed_special, workers, chunk_size, progress, val_fraction,
                             val_out, seed, dask)
