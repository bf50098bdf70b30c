"""Checks and helpers every layer uses: argument checks, the id limit, short
reprs of bad values, the progress display."""

from __future__ import annotations as _annotations

import operator as _operator
import os as _os
import sys as _sys
import threading as _threading
import time as _time
import warnings as _warnings

import regex as _regex

_MAX_ID = 1 << 31  # ids are int32 in the compiled core


class _gc_paused:  # noqa: N801 - used as a function: `with _gc_paused():`
    """The cycle collector paused for a block that makes hundreds of thousands
    of acyclic containers (a tokenizer.json's document, a batch's results):
    collecting as they come costs a tenth of a load.  A block that frees them
    before it ends leaves the collector nothing to find."""

    def __enter__(self):
        import gc

        self.paused = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.paused:
            import gc

            gc.enable()


# ---- threads: how many a call uses by default -----------------------------

_THREADS = [None]   # set_num_threads's value (None: the default)
_FORKED = [False]   # this process is a fork() child


def _forked():
    _FORKED[0] = True


if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_forked)

_THREADS_ENV = "BPE_NUM_THREADS"
_MOST_THREADS = 4096


def set_num_threads(n):
    """Set how many threads ``encode_batch``, ``encode_ordinary_batch``, and
    ``encode``, ``encode_ordinary`` and ``encode_to_numpy`` of long texts use
    when not told (``num_threads=``); None restores the default.  The
    default: the environment variable BPE_NUM_THREADS if set, else one in a
    worker process (multiprocessing's, Dask's) or a fork() child, else the
    CPUs this process may run on.  Only the compiled core uses threads.

    >>> set_num_threads(1); set_num_threads(None)
    """
    if n is not None and _check_int("set_num_threads's n", n, 1) > _MOST_THREADS:
        raise ValueError(f"set_num_threads's n must be at most {_MOST_THREADS}, got {n}")
    _THREADS[0] = n


def _default_threads():
    """The number of threads a call uses when not told (see set_num_threads)."""
    if _THREADS[0] is not None:
        return _THREADS[0]
    env = _os.environ.get(_THREADS_ENV, "").strip()
    if env:
        if not (env.isascii() and env.isdigit() and 0 < int(env) <= _MOST_THREADS):
            raise ValueError(f"the environment variable {_THREADS_ENV} must be a number of "
                             f"threads (1 to {_MOST_THREADS}), not {_short(env)}")
        return int(env)
    mp = _sys.modules.get("multiprocessing")   # (a worker process has imported it)
    if _FORKED[0] or (mp is not None and mp.parent_process() is not None):
        return 1   # never more threads than the one CPU a worker stands for
    return _cpu_count()


def _cpu_count():
    """The CPUs this process may run on."""
    try:
        return max(1, len(_os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return _os.cpu_count() or 1


def _thread_map(fn, items, threads):
    """``[fn(x) for x in items]`` on `threads` threads (this one among them),
    each taking the next item as it becomes free, so that unequal items or a
    busier CPU leave no thread idle.  The exception of the first item (in
    order) that failed is raised; no item after a failed one is started, the
    ones before it finish."""
    results = [None] * len(items)
    errors = {}
    failed = [len(items)]   # the smallest index that failed
    ahead = iter(range(len(items)))   # next() is atomic: each item goes to one thread

    def work():
        for i in ahead:
            if i >= failed[0]:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # noqa: B036 - raised below, in this thread
                errors[i] = e
                failed[0] = min(failed[0], i)
                return

    helpers = [_threading.Thread(target=work, name=f"bpe-{k}", daemon=True)
               for k in range(min(threads, len(items)) - 1)]
    for t in helpers:
        t.start()
    try:
        work()
    except BaseException:
        failed[0] = -1   # Ctrl-C between two items: the other threads take no more
        raise
    finally:
        for t in helpers:
            t.join()
    if errors:
        raise errors[min(errors)]
    return results


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


def _thread_count(num_threads):
    """A batch method's `num_threads`: None, or a plain int >= 1 (an integer
    type such as numpy's is read as its int, as tiktoken takes it; not a bool)."""
    if num_threads is None:
        return None
    if not isinstance(num_threads, int):
        try:
            num_threads = _operator.index(num_threads)
        except TypeError:
            pass  # _check_int names the type
    return _check_int("num_threads", num_threads, 1)


def _as_list(items, must):
    """A batch's texts or a sequence of ids as a new list; for a str, bytes or
    anything not iterable, TypeError "<must>, not <its type>" (an iterable's
    own TypeError, raised as it runs, comes through as it is)."""
    if not isinstance(items, (str, bytes)):
        try:
            return list(items)
        except TypeError:
            if hasattr(items, "__iter__") or hasattr(items, "__getitem__"):
                raise
    raise TypeError(f"{must}, not {type(items).__name__}")


def _short(value, limit=60):
    """repr(value), cut to about `limit` characters for error messages."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} long)" if hasattr(value, "__len__") else ""
    return text[:limit] + "..." + size


_NONE_ALLOWED = frozenset()   # the default allowed_special (told apart by identity)


class _Unset:
    """The default of an argument that may come under tiktoken's keyword instead."""

    def __repr__(self):
        return "<required>"


_UNSET = _Unset()


def _either(method, name, value, alias, alias_value):
    """The argument `name` of `method`, given positionally or by name, or
    under tiktoken's keyword `alias` (decode(tokens=...), encode_batch(text=...)),
    so that code written for tiktoken.Encoding runs unchanged."""
    if alias_value is _UNSET:
        if value is _UNSET:
            raise TypeError(f"{method}() missing its argument {name!r}")
        return value
    if value is not _UNSET:
        raise TypeError(f"{method}() got both {name!r} and {alias!r}")
    return alias_value


def _reporter(progress):
    """A progress argument as a callable (phase, done, total), or None."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return ProgressBar()
    if not callable(progress):
        raise TypeError(f"progress must be True, False or a callable (phase, done, total), "
                        f"not {type(progress).__name__}")
    return progress


def _name_set(names, what, must):
    """allowed_special's or disallowed_special's names (not "all") as a
    frozenset of str; TypeError naming the argument for anything else."""
    names = _as_list(names, f"{what} {must}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold str, not {type(name).__name__}: {name!r}")
    # a str subclass is the text it holds (its own ==, hash or len could say otherwise)
    return frozenset(n if type(n) is str else str.__str__(n) for n in names)


def _fmt_bytes(n):
    return f"{n / 1e6:,.1f} MB" if n >= 10_000_000 else f"{n:,} bytes"


def _fmt_seconds(seconds):
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressBar:
    r"""The progress display of ``progress=True``: a callable
    ``(phase, done, total)``, as every ``progress`` argument may be.

    Phases: ``"count"`` (bytes of input counted), ``"pretokens"`` (once, the
    number of distinct pre-tokens: done == total), ``"merge"`` (merges
    learned), ``"encode"`` (bytes of input encoded).  The last call of a
    phase has ``done == total`` (training that stops early ends its merge
    phase with the number it learned).

    On a terminal, a bar with the rate and the time left is rewritten in place;
    elsewhere (a log file) a line is written every `interval` seconds (default
    10), and one when each phase ends.  `stream`: default sys.stderr.

    >>> import io
    >>> log = io.StringIO()
    >>> show = ProgressBar(log)
    >>> show("merge", 0, 300); show("merge", 300, 300)
    >>> log.getvalue()
    'learned 300 merges in 0.00 s\n'
    """

    _DONE = {"count": "counted", "merge": "learned", "encode": "encoded"}
    _DOING = {"count": "counting", "merge": "merging", "encode": "encoding"}

    def __init__(self, stream=None, interval=None):
        self.stream, self.interval = stream, interval
        self.phase = None
        self.width = 0  # of the status line on a terminal

    def __call__(self, phase, done, total):
        out = self.stream if self.stream is not None else _sys.stderr
        tty = _isatty(out)
        now = _time.monotonic()
        if phase == "pretokens":
            self._line(out, tty, f"counted {done:,} distinct pre-tokens")
            return
        if phase != self.phase or done < self.seen:
            self.phase, self.start, self.shown, self.seen = phase, now, None, done
            self.mark = (now, done)
        self.seen = done
        elapsed = now - self.start
        unit = "merges" if phase == "merge" else "bytes"
        if total is not None and done >= total:
            if self.shown != "end":
                self.shown = "end"
                amount = f"{done:,} merges" if unit == "merges" else _fmt_bytes(done)
                rate = ""
                if elapsed >= 0.1 and done:
                    rate = f" ({done / elapsed:,.0f}/s)" if unit == "merges" else \
                        f" ({done / elapsed / 1e6:,.1f} MB/s)"
                self._line(out, tty, f"{self._DONE.get(phase, phase)} {amount} in "
                                     f"{_fmt_seconds(elapsed)}{rate}")
            return
        interval = self.interval if self.interval is not None else (0.25 if tty else 10.0)
        since = now - (self.start if self.shown is None else self.shown)
        if (self.shown is not None or not tty) and since < interval:
            return
        # merges speed up as training goes on: their rate is the recent one
        then, before = self.mark if unit == "merges" else (self.start, 0)
        rate = (done - before) / (now - then) if now - then > 1e-3 else 0.0
        self.mark, self.shown = (now, done), now
        text = f"{self._DOING.get(phase, phase)}: "
        if total:
            share = min(done / total, 1.0)
            if tty:
                filled = int(share * 24)
                text += "[" + "#" * filled + "." * (24 - filled) + "] "
            text += f"{100 * share:.0f}% "
        if unit == "merges":
            text += f"{done:,}/{total:,} merges" if total else f"{done:,} merges"
            text += f", {rate:,.0f}/s" if rate else ""
        else:
            text += f"{done / 1e6:,.1f}/{total / 1e6:,.1f} MB" if total else _fmt_bytes(done)
            text += f", {rate / 1e6:,.1f} MB/s" if rate else ""
        if rate and total:
            text += f", {_fmt_seconds((total - done) / rate)} left"
        if tty:
            out.write("\r" + text + " " * max(self.width - len(text), 0))
            self.width = len(text)
            out.flush()
        else:
            self._line(out, tty, text)

    def _line(self, out, tty, text):
        if tty:
            text = "\r" + text + " " * max(self.width - len(text), 0)
            self.width = 0
        out.write(text + "\n")
        out.flush()


def _warn(message, category=UserWarning):
    """warnings.warn, attributed to the line that called the library (the
    first frame outside this module), wherever in it the warning arose.
    Within a _WarnOnce scope, a warning given already (byte offsets aside)
    is not given again."""
    if not _WarnOnce.first(message):
        return
    frame, level = _sys._getframe(1), 2  # level: warnings.warn's stacklevel of `frame`
    while frame is not None and frame.f_globals.get("__name__") in _OWN_MODULES:
        frame, level = frame.f_back, level + 1
    _warnings.warn(message, category, stacklevel=level)


class _WarnOnce:
    """A scope (a with block around a corpus call: train_files,
    encode_files) in which each warning is given once: a file whose bad bytes
    fall in several of its chunks is warned about once, not per chunk (the
    chunks' warnings differ only by their byte offsets, and may come from
    threads or, relayed, from worker processes)."""

    _lock = _threading.Lock()
    _depth = 0
    _seen = set()
    _OFFSET = _regex.compile(r" at byte \d+")

    def __enter__(self):
        with self._lock:
            type(self)._depth += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            type(self)._depth -= 1
            if not self._depth:
                self._seen.clear()

    @classmethod
    def first(cls, message):
        """Whether `message` is to be given: outside a scope always, inside
        the first time."""
        with cls._lock:
            if not cls._depth:
                return True
            key = cls._OFFSET.sub("", str(message))
            if key in cls._seen:
                return False
            cls._seen.add(key)
            return True


_OWN_MODULES = frozenset([__name__, "bpe"])  # "bpe": the compiled backend
