"""Worker processes for train_files and encode_files in pure Python: a fresh
interpreter fed over pipes, its jobs, its failures."""

from __future__ import annotations as _annotations

import collections as _collections
import itertools as _itertools
import os as _os
import sys as _sys
import warnings as _warnings

from .registry import _compact_state
from .util import _warn

# Worker processes (a core that needs the GIL: the pure-Python one).  Each is
# a fresh interpreter running this module's _worker_main, fed over pipes: it
# never imports the user's main script, so no `if __name__ == "__main__":`
# guard is needed, and `python -c` and a script on stdin work.  Messages are
# frames: a 4-byte length, a JSON header, then the raw byte blobs the header
# lists (no pickle).  The first message sets a worker up for its task.

def _send(f, header, blobs=()):
    import json

    blobs = [bytes(b) for b in blobs]
    header = dict(header, blobs=[len(b) for b in blobs])
    data = json.dumps(header, separators=(",", ":")).encode("utf-8")
    f.write(len(data).to_bytes(4, "little") + data)
    for blob in blobs:
        f.write(blob)
    f.flush()


def _read_exact(f, n):
    data = f.read(n)
    if len(data) != n:
        raise EOFError("the other end closed the pipe")
    return data


def _recv(f):
    import json

    header = json.loads(_read_exact(f, int.from_bytes(_read_exact(f, 4), "little")))
    return header, [_read_exact(f, n) for n in header.pop("blobs")]


def _count_task(options):
    """train_files' setup message for a worker process."""
    return {"task": "count", "pattern": options.pattern, "specials": list(options.specials),
            "text_field": options.text_field}, []


def _encode_task(tok, options):
    """encode_files' setup message: the model's compact state (what pickling
    sends, never a registered encoding's name: a worker would read its file
    again), and the options."""
    key, blob = _compact_state(tok)
    header = {"task": "encode", "key": key, "name": tok.name,
              "options": dict(options._asdict(), allowed=sorted(options.allowed),
                              disallowed=sorted(options.disallowed))}
    return header, [blob]


def _worker_main(setup, tokenizer_class):
    """A worker process: set up by the first message (`setup(header, blobs,
    tokenizer_class)` gives the task), then one reply per job message until
    standard input ends.  Ctrl-C is left to the parent."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source = _sys.stdin.buffer
    sink = open(_os.dup(1), "wb")
    _os.dup2(2, 1)  # whatever else prints goes to stderr, not into the replies
    _sys.stdout = _sys.stderr
    try:
        header, blobs = _recv(source)
        task = setup(header, blobs, tokenizer_class)
    except EOFError:
        return
    _send(sink, {"ready": True})
    while True:
        try:
            header, _ = _recv(source)
        except EOFError:
            return
        with _warnings.catch_warnings(record=True) as caught:
            _warnings.simplefilter("always")
            try:
                reply, blobs = task(header["job"])
            except Exception as e:  # noqa: BLE001 - raised again in the parent
                reply, blobs = {"error": [type(e).__name__, str(e)]}, []
        reply["warnings"] = [[str(w.message), w.category.__name__] for w in caught]
        _send(sink, reply, blobs)


class _WorkerDied(Exception):
    pass


def _raised(name, message):
    """The exception a worker raised, rebuilt in the parent."""
    import builtins

    cls = getattr(builtins, name, None)
    if cls in (ValueError, TypeError, OSError, MemoryError, RuntimeError, ArithmeticError,
               OverflowError, FileNotFoundError, PermissionError, IsADirectoryError):
        return cls(message)
    if isinstance(cls, type) and issubclass(cls, ValueError):
        return ValueError(message)
    return RuntimeError(f"{name}: {message}")


class _WorkerPool:
    """Worker processes for train_files and encode_files (see _worker_main):
    `task` (a setup message) is sent to each; submit(job) returns a Future of
    the worker's reply.  They are started with the interpreter's own flags
    and this process's sys.path, not forked (a lock another thread holds
    would stay held in the child).  On any error or interrupt every worker is
    stopped; a worker that dies is a RuntimeError naming `what`.  A job's
    warnings are raised again here; nothing is written to disk."""

    def __init__(self, workers, what, task):
        import queue
        import subprocess
        import threading

        self.what, self.workers, self.task = what, workers, task
        self.queue = queue.SimpleQueue()
        self.broken = None
        self.procs, self.threads = [], []
        code = (f"import sys; sys.path[:0] = {[p for p in _sys.path if isinstance(p, str)]!r}; "
                f"import {__name__} as m; m._worker_main(m._worker_setup, m.Tokenizer)")
        args = [_sys.executable, *subprocess._args_from_interpreter_flags(), "-c", code]
        try:
            for i in range(workers):
                proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self.procs.append(proc)
                thread = threading.Thread(target=self._serve, args=(proc,),
                                          name=f"{what}-worker-{i}", daemon=True)
                self.threads.append(thread)
                thread.start()
        except BaseException:
            self.stop()
            raise

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.shutdown()
        else:
            self.stop()  # Ctrl-C or a failed job: stop every worker now, leave none behind
        if isinstance(value, _WorkerDied):
            raise RuntimeError(f"{self.what}: a worker process died (killed, or out of "
                               f"memory?) or could not start") from value
        return False

    def _serve(self, proc):
        """One worker's thread: its setup, then the jobs it takes from the queue."""
        current = None
        try:
            _send(proc.stdin, *self.task)
            _recv(proc.stdout)  # ready
            while True:
                item = self.queue.get()
                if item is None:
                    return
                current, job = item
                if not current.set_running_or_notify_cancel():
                    continue
                if job is None:  # submit(None): whether a worker is ready
                    current.set_result(None)
                    continue
                _send(proc.stdin, {"job": job})
                current.set_result(_recv(proc.stdout))
                current = None
        except (OSError, EOFError, ValueError) as e:
            self._broke(e, current)

    def _broke(self, error, current):
        import queue

        if self.broken is None:
            self.broken = _WorkerDied(f"{self.what}: a worker process died ({error})")
        if current is not None and not current.done():
            current.set_exception(self.broken)
        stops = 0  # the end-of-work marks (None) met are put back, for the other threads
        while True:  # no worker may wait for jobs no one will take
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                stops += 1
            elif item[0].set_running_or_notify_cancel():
                item[0].set_exception(self.broken)
        for _ in range(stops):
            self.queue.put(None)

    def submit(self, job):
        """A Future of a worker's reply to `job` (a list; None: of it being ready)."""
        from concurrent.futures import Future

        future = Future()
        if self.broken is not None:
            future.set_exception(self.broken)
        else:
            self.queue.put((future, None if job is None else list(job)))
        return future

    @staticmethod
    def result(future):
        reply = future.result()
        if reply is None:
            return None
        header, blobs = reply
        for message, category in header.get("warnings", ()):
            import builtins

            cls = getattr(builtins, category, None)
            if not (isinstance(cls, type) and issubclass(cls, Warning)):
                cls = UserWarning
            _warn(message, cls)
        if "error" in header:
            raise _raised(*header["error"])
        if "counts" in header:
            return header["counts"]
        return [(blob, n, docs) for blob, (n, docs) in zip(blobs, header["parts"])]

    def map(self, jobs):
        """The result of each job, in order, with a few jobs per worker
        submitted ahead (not all: their results would wait in memory)."""
        jobs = iter(jobs)
        ahead = _collections.deque(self.submit(job)
                                   for job in _itertools.islice(jobs, 2 * self.workers))
        while ahead:
            future = ahead.popleft()
            ahead.extend(self.submit(job) for job in _itertools.islice(jobs, 1))
            yield self.result(future)

    def shutdown(self):
        """Let the workers finish (their standard input ends) and wait for them."""
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(10)
            except Exception:  # noqa: BLE001 - a worker that does not end is killed
                proc.kill()
                proc.wait()
            proc.stdout.close()

    def stop(self):
        """Stop every worker now; the futures not yet done fail."""
        self._broke(OSError("stopped"), None) if self.broken is None else None
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()
        for proc in self.procs:
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
