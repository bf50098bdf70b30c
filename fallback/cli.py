"""The command line: bpe train ..., bpe encode ... (python -m bpe_fallback ...)."""

from __future__ import annotations as _annotations

import os as _os
import stat as _stat
import sys as _sys
import time as _time
import warnings as _warnings

from .api import Tokenizer
from .cluster import _Cluster, _input_bytes
from .corpus import _DTYPES, _INPUT_NAMES, _check_same_model, _ids_dtype, _val_path
from .cutting import _LINE_CUT, _Inflated, _ranges, read_jsonl
from .files import (
    _FILE_KINDS,
    _MAX_FILE_BYTES,
    _atomic_write,
    _check_not_input,
    _open_temporary,
    _publish,
    _read_text,
    _unlink_quietly,
    _write_target,
)
from .patterns import _NAME_LIKE, PATTERNS, SPECIAL_TOKENS, Pipeline
from .programs import _cut_kind
from .readers import _json
from .registry import _ENCODINGS
from .training import _TIE_BREAKS
from .util import _MAX_ID, ProgressBar, _fmt_bytes, _fmt_seconds, _isatty

_FORMATS = {"native": "tokenizer.bpe", "tiktoken": "tokenizer.tiktoken",
            "huggingface": "tokenizer.json", "gpt2": "tokenizer-gpt2"}
_MEASURE_LIMIT = 64 << 20  # the summary's bytes per token: on at most this much text


class _Usage(Exception):
    """A bad invocation: one line on stderr, exit status `code`."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


def _cli_parser():
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise _Usage(f"{message} (see {self.prog} --help)")

    p = Parser(prog="bpe", description="Train a byte-level BPE tokenizer on text files, encode "
               "a corpus into a flat array of token ids, decode one, or describe a tokenizer.",
               epilog="`bpe COMMAND --help` shows each command's options.  BPE_BACKEND=python "
                      "uses the pure-Python bpe_fallback; BPE_DEBUG=1 shows tracebacks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    t = _cli_train_parser(sub)
    e = _cli_encode_parser(sub)
    _cli_decode_parser(sub)
    _cli_info_parser(sub)
    _cli_run_parser(sub)
    for c in (t, e):
        c.add_argument("-q", "--quiet", action="store_true",
                       help="no summary, no automatic progress")
        c.add_argument("--progress", action="store_true",
                       help="show progress on stderr even when it is not a terminal")
        c.add_argument("--dask", metavar="ADDRESS",
                       help="run on a Dask cluster (pip install bpe[dask]): a scheduler's address "
                            "(tcp://host:8786) or scheduler file, or local[:N] for N worker "
                            "processes here; INPUTs may be fsspec URLs (s3://...). The same "
                            "output as without it")
    return p


def _cli_train_parser(sub):
    """The options of `bpe train`."""
    t = sub.add_parser("train", help="train a tokenizer and write it",
                       description="Train a tokenizer on UTF-8 text files (each one document; - is "
                                   "standard input): Tokenizer.train_files with these options.")
    t.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="UTF-8 text files; - reads standard input")
    t.add_argument("--vocab-size", type=int, required=True, metavar="N",
                   help="256 bytes + merges + special tokens")
    t.add_argument("--pattern", default="gpt2", metavar="P",
                   help="pre-tokenization: a name (" + _PATTERN_NAMES + "; default gpt2) or "
                        "a regex")
    t.add_argument("--special", action="append", default=[], metavar="TOKEN",
                   help="a special token (repeat for several; their ids follow the merges), "
                        "or a named set: " + ", ".join(SPECIAL_TOKENS))
    t.add_argument("--min-frequency", type=int, default=2, metavar="N",
                   help="stop when the best pair occurs fewer than N times (default 2)")
    t.add_argument("--max-token-bytes", type=int, metavar="N", help="never learn a longer token")
    t.add_argument("--tie-break", choices=list(_TIE_BREAKS), default="bytes",
                   help="which of the most frequent pairs to merge: bytes (default), the greatest "
                        "pair of bytes; rustbpe, the smallest pair of ids (rustbpe's, nanochat's)")
    t.add_argument("--workers", type=int, metavar="N",
                   help="counting workers (default: the CPUs): threads with the compiled core, "
                        "processes with the pure-Python one")
    t.add_argument("--jsonl", action="store_true",
                   help="read every input as JSON lines, each record's text one document")
    t.add_argument("--text-field", default="text", metavar="FIELD",
                   help="with --jsonl: the field of a record that holds its text (default text)")
    t.add_argument("-o", "--output", metavar="OUT", help="default by format: " + ", ".join(
        f"{v}{'/' if k == 'gpt2' else ''} ({k})" for k, v in _FORMATS.items()))
    t.add_argument("--format", choices=list(_FORMATS), default="native",
                   help="native (default); tiktoken (+ OUT.json with the pattern and special "
                        "tokens); huggingface (tokenizer.json); gpt2 (vocab.json + merges.txt)")
    t.add_argument("--eval", action="append", default=[], metavar="FILE",
                   help="also report bytes per token on this held-out file (repeatable)")
    return t


def _cli_encode_parser(sub):
    """The options of `bpe encode`."""
    e = sub.add_parser("encode", help="encode a corpus into a flat array of ids",
                       description="Encode text files (each one document) or JSON lines (each "
                                   "record one) into OUT, a flat little-endian uint16/uint32 array "
                                   "of ids that numpy.memmap reads, and OUT.json, its sidecar: "
                                   "Tokenizer.encode_files.")
    e.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="text files, .jsonl/.ndjson files, - for standard input")
    e.add_argument("--tokenizer", "-t", required=True, metavar="T", help=_TOKENIZER_HELP)
    e.add_argument("-o", "--output", required=True, metavar="OUT", help="the array of ids, e.g. "
                                                                        "train.bin")
    e.add_argument("--eot", metavar="TOKEN", help="a special token to append after every document")
    e.add_argument("--allowed-special", action="append", default=[], metavar="TOKEN",
                   help="encode this special token's text as the special token (repeatable; `all` "
                        "for every one); other special-token text in the input is an error")
    e.add_argument("--ordinary", action="store_true",
                   help="encode special-token text in the input as ordinary text")
    e.add_argument("--dtype", choices=["auto", "uint16", "uint32"], default="auto",
                   help="auto (default): uint16 when every id fits")
    e.add_argument("--jsonl", action="store_true", help="read every input as JSON lines")
    e.add_argument("--text-field", default="text", metavar="FIELD",
                   help="the field of a JSON record that holds its text (default text)")
    _cli_bare_options(e)
    e.add_argument("--workers", type=int, metavar="N",
                   help="encoding workers (default: the CPUs, at most one per MB of input): "
                        "threads with the compiled core, processes with the pure-Python one")
    e.add_argument("--val-fraction", type=float, metavar="F",
                   help="write about this fraction of the documents (whole ones, chosen by a "
                        "seeded hash of their text; one document: its last F of ids) to a "
                        "second array beside OUT: train.bin -> val.bin, else OUT.val.bin")
    e.add_argument("--seed", type=int, default=0, metavar="S",
                   help="with --val-fraction: the seed of the choice (default 0)")
    return e


_TOKENIZER_HELP = ("a tokenizer file in any format bpe train writes (a .tiktoken file may be "
                   "gzipped), a directory of GPT-2's vocab.json and merges.txt, or the name of "
                   "an encoding: gpt2, r50k_base, p50k_base, cl100k_base, o200k_base (tiktoken's "
                   "cached files)")


_PATTERN_NAMES = ", ".join(PATTERNS)


def _cli_bare_options(c):
    """--pattern and --special: what a bare rank table (a .tiktoken file,
    GPT-2's files) lacks."""
    c.add_argument("--pattern", metavar="P",
                   help="the pattern of a tokenizer file that holds none (a .tiktoken file, "
                        "GPT-2's files): a name (" + _PATTERN_NAMES + ") or a regex")
    c.add_argument("--special", action="append", metavar="TOKEN=ID",
                   help="a special token of a tokenizer file that holds none (repeatable), or "
                        "a named set: " + ", ".join(SPECIAL_TOKENS))


def _cli_specials(values):
    """--special TOKEN=ID (repeatable) or a set's name: a dict; a set without
    fixed ids (its tokens take the ids after the vocabulary) given alone: its
    list; None when not given."""
    if not values:
        return None
    if len(values) == 1 and isinstance(SPECIAL_TOKENS.get(values[0]), list):
        return list(SPECIAL_TOKENS[values[0]])
    specials = {}
    for value in values:
        token, eq, i = value.rpartition("=")
        if eq and token:
            try:
                i = int(i)
            except ValueError:
                raise _Usage(f"--special {value}: the id after '=' must be an integer") from None
            added = {token: i}
        elif value in SPECIAL_TOKENS:
            added = SPECIAL_TOKENS[value]
            if not isinstance(added, dict):
                raise _Usage(f"--special {value}: the set {value} has no fixed ids (its tokens "
                             f"take the ids after the vocabulary): give it alone")
        else:
            raise _Usage(f"--special {value}: want TOKEN=ID, or a named set "
                         f"({', '.join(SPECIAL_TOKENS)})")
        for token, i in added.items():
            if specials.get(token, i) != i:
                raise _Usage(f"--special: {token} is given two ids, {specials[token]} and {i}")
            specials[token] = i
    return specials


def _cli_decode_parser(sub):
    """The options of `bpe decode`."""
    d = sub.add_parser("decode", help="decode an array of ids back to text",
                       description="Decode IDS, an array of ids that bpe encode wrote (its dtype "
                                   "read from IDS.json, the sidecar), back to text: to standard "
                                   "output, or to OUT.")
    d.add_argument("ids", metavar="IDS", help="the array of ids, e.g. train.bin")
    d.add_argument("--tokenizer", "-t", required=True, metavar="T", help=_TOKENIZER_HELP)
    d.add_argument("-o", "--output", metavar="OUT", help="write the text here (default: standard "
                                                          "output)")
    d.add_argument("--dtype", choices=["auto", "uint16", "uint32"], default="auto",
                   help="auto (default): the sidecar's, else uint16 when every id fits")
    _cli_bare_options(d)
    return d


def _cli_info_parser(sub):
    """The options of `bpe info`."""
    i = sub.add_parser("info", help="describe a tokenizer",
                       description="Show a tokenizer's vocabulary size, pattern, special tokens "
                                   "and longest tokens.")
    i.add_argument("tokenizer", metavar="T", help=_TOKENIZER_HELP)
    _cli_bare_options(i)
    return i

def _cli_backend():
    """The module the command runs on: the compiled `bpe` when importable."""
    want = _os.environ.get("BPE_BACKEND", "").strip().lower()
    if want == "python":
        return _sys.modules[__name__]
    if want not in ("", "cython"):
        raise _Usage(f"BPE_BACKEND must be 'python' or 'cython', not {want!r}", 1)
    try:
        import bpe
    except ImportError:
        bpe = None
    if want == "cython" and getattr(bpe, "BACKEND", None) != "cython":
        raise _Usage("BPE_BACKEND=cython, but the compiled bpe is not installed", 1)
    if bpe is not None and issubclass(bpe.Tokenizer, Tokenizer):
        return bpe
    return _sys.modules[__name__]


def _cli_error_text(e):
    if isinstance(e, OSError) and e.strerror:
        what = e.strerror[0].lower() + e.strerror[1:]
        return f"{e.filename}: {what}" if e.filename is not None else what
    if isinstance(e, MemoryError):
        return "out of memory"
    return str(e) or type(e).__name__


def main(argv=None):
    """The ``bpe`` command (also ``python -m bpe_fallback``): ``bpe train``
    and ``bpe encode``; see ``bpe --help``.  Returns the exit status: 0, 1
    for an error, 2 for a bad invocation; errors are one line on stderr.

    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "tok.bpe")
    >>> with open(out + ".txt", "w") as f:
    ...     _ = f.write("low lower lowest " * 20)
    >>> main(["train", out + ".txt", "--vocab-size", "260", "-o", out, "--quiet"])
    0
    >>> Tokenizer.load(out).merges[:2]
    [(b'o', b'w'), (b'l', b'ow')]
    >>> main(["train", out + ".txt", "--vocab-size", "lots"])  # one line on stderr
    2
    """
    args = _sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["run"]:  # the command's own arguments, warnings and errors
        return _cli_run(args[1:])
    status, message = 1, None
    with _warnings.catch_warnings():
        def show(message, category, filename, lineno, file=None, line=None):
            out = file or _sys.stderr
            text = _Spooled.named(" ".join(str(message).split()))
            out.write(("\r\x1b[K" if _isatty(out) else "") + f"bpe: warning: {text}\n")

        _warnings.showwarning = show
        try:
            args = _cli_parser().parse_args(argv)
            mod = _cli_backend()
            run = {"train": _cli_train, "encode": _cli_encode, "decode": _cli_decode,
                   "info": _cli_info}[args.command]
            return run(args, mod)
        except _Usage as e:
            status, message = e.code, str(e)
        except SystemExit as e:  # --help
            return e.code or 0
        except KeyboardInterrupt:
            status, message = 130, "interrupted"
        except BrokenPipeError:  # `bpe ... | head`
            try:
                _sys.stdout = open(_os.devnull, "w")
            except OSError:
                pass
            return 1
        except (ValueError, TypeError, OSError, ImportError, MemoryError, ArithmeticError,
                RuntimeError) as e:
            if _os.environ.get("BPE_DEBUG"):
                raise
            message = _Spooled.named(_cli_error_text(e))
    _sys.stderr.write(("\r\x1b[K" if _isatty(_sys.stderr) else "")
                     + f"bpe: error: {' '.join(message.split())}\n")
    _sys.stderr.flush()
    return status


def _check_input(path, what="file"):
    if path == "-":
        return
    if not _os.path.exists(path):
        raise _Usage(f"no such {what}: {path}", 1)
    if _os.path.isdir(path):
        raise _Usage(f"{path} is a directory, not a {what}", 1)
    mode = _os.stat(path).st_mode
    if not _stat.S_ISREG(mode):  # a FIFO would block the command, a device never end
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise _Usage(f"{path}: {kind}, not a regular file"
                     + (" (- reads standard input)" if what == "file" else ""), 1)
    if not _os.access(path, _os.R_OK):
        raise _Usage(f"cannot read {path}: permission denied", 1)


def _check_output(out, inputs, directory=False, outputs=None):
    """Fail before any work if `out` cannot be written, or if a file written
    (`outputs`, default `out`) is a file read (`inputs`).  A directory that
    does not exist yet is fine where it can be made (_make_parent makes it)."""
    if directory and _os.path.exists(out) and not _os.path.isdir(out):
        raise _Usage(f"cannot write {out}/: it exists and is not a directory", 1)
    if not directory and _os.path.isdir(out):
        raise _Usage(f"cannot write {out}: it is a directory", 1)
    if not directory:
        try:   # a device, FIFO or socket is never replaced by a file
            out = _write_target(out)
        except ValueError as e:
            raise _Usage(str(e), 1) from None
    parent = out if directory and _os.path.isdir(out) else _os.path.dirname(_os.path.abspath(out))
    while not _os.path.lexists(parent) and _os.path.dirname(parent) != parent:
        parent = _os.path.dirname(parent)  # to be made: the nearest that exists must take it
    if not _os.path.isdir(parent):
        why = "does not exist" if not _os.path.exists(parent) else "is not a directory"
        raise _Usage(f"cannot write {out}: {parent} {why}", 1)
    if not _os.access(parent, _os.W_OK | _os.X_OK):
        raise _Usage(f"cannot write {out}: directory {parent} is not writable", 1)
    _check_not_input([out] if outputs is None else outputs, [p for p in inputs if p != "-"])


def _make_parent(out):
    """Make the directories `out` is to be written in (checked by _check_output)."""
    _os.makedirs(_os.path.dirname(_os.path.abspath(out)), exist_ok=True)


def _tokenizer_files(path):
    """The files a tokenizer path can make bpe read: the file and its
    sidecar, or a directory's tokenizer.json, vocab.json and merges.txt."""
    if _os.path.isdir(path):
        return [_os.path.join(path, n) for n in ("tokenizer.json", "vocab.json", "merges.txt")]
    return [path, path + ".json"]


def _check_counts(args, least):
    for flag, value, low in (("--workers", getattr(args, "workers", None), 1),
                             ("--min-frequency", getattr(args, "min_frequency", None), 0),
                             ("--max-token-bytes", getattr(args, "max_token_bytes", None), 1)):
        if value is not None and value < low:
            raise _Usage(f"{flag} must be at least {low}, got {value}")
    if least is not None:
        n = args.vocab_size
        if n < least:
            why = (f"256 bytes + {len(args.special)} special token{'s' * (len(args.special) != 1)}"
                   if args.special else "the 256 single bytes")
            raise _Usage(f"--vocab-size must be at least {least} ({why}), got {n}")
        if n > _MAX_ID:
            raise _Usage(f"--vocab-size must be at most {_MAX_ID:,} (ids are 32-bit), got {n:,}")


class _Phases:
    """A progress callback that remembers when each phase began and the
    number of distinct pre-tokens, and passes every call on to `show`."""

    def __init__(self, show):
        self.show, self.began, self.pretokens = show, {}, None

    def __call__(self, phase, done, total):
        self.began.setdefault(phase, _time.perf_counter())
        if phase == "pretokens":
            self.pretokens = done
        if self.show is not None:
            self.show(phase, done, total)


class _Spooled:
    """The inputs, with standard input (-) copied into a temporary file
    (which messages call <stdin>: see named)."""

    spools = []  # the temporary files of standard input, in this process

    def __init__(self, inputs):
        self.inputs, self.tmp = inputs, None

    @classmethod
    def named(cls, message):
        """A message with the temporary files' names replaced by <stdin>."""
        for tmp in cls.spools:
            message = message.replace(tmp, "<stdin>")
        for tmp, path in _Inflated.live.items():
            message = message.replace(tmp, path)
        return message

    def __enter__(self):
        import tempfile

        if self.inputs.count("-") > 1:
            raise _Usage("standard input (-) can be read only once")
        paths = list(self.inputs)
        if "-" in paths:
            fd, self.tmp = tempfile.mkstemp(prefix="bpe-stdin-", suffix=".txt")
            self.spools.append(self.tmp)
            _INPUT_NAMES[self.tmp] = "-"   # a sidecar names it as the command was given it
            with _os.fdopen(fd, "wb") as f:
                while True:
                    block = _sys.stdin.buffer.read(1 << 20)
                    if not block:
                        break
                    f.write(block)
            paths[paths.index("-")] = self.tmp
        return paths

    def __exit__(self, *exc):
        if self.tmp is not None:
            _os.unlink(self.tmp)
            _INPUT_NAMES.pop(self.tmp, None)
        return False


def _check_dask_options(args):
    """--dask with what it cannot take: one line, before any work."""
    if args.dask is None:
        return
    if "-" in args.inputs:
        raise _Usage("--dask: the cluster's workers cannot read standard input (-): write it to "
                     "a file they can read")
    if args.workers is not None:
        raise _Usage("--workers counts this machine's workers: with --dask the cluster's "
                     "workers do the work (local:N starts N here)")


class _cli_inputs:
    """``with _cli_inputs(args) as (paths, client)``: without --dask, the
    inputs with standard input spooled and gzip files inflated (their sizes
    are the text's), client None; with it, the inputs as given (the workers
    read them) and a client of the cluster, closed at the end."""

    def __init__(self, args):
        self.args, self.stack = args, None

    def __enter__(self):
        import contextlib

        self.stack = contextlib.ExitStack()
        try:
            if self.args.dask is not None:
                client = self.stack.enter_context(_Cluster(self.args.dask))
                return list(self.args.inputs), client
            paths = self.stack.enter_context(_Spooled(self.args.inputs))
            if self.args.command == "train":
                paths = self.stack.enter_context(_Inflated(paths))
            return paths, None
        except BaseException:
            self.stack.close()
            raise

    def __exit__(self, *exc):
        return self.stack.__exit__(*exc)


def _cluster_rows(client):
    """The summary's row about the Dask cluster (none without one)."""
    if client is None:
        return []
    threads = client.nthreads()
    n, total = len(threads), sum(threads.values())
    return [("cluster", f"Dask, {n} worker{'s' * (n != 1)} ({total} thread{'s' * (total != 1)}) "
                        f"at {client.scheduler.address}")]


def _show_progress(args):
    return ProgressBar() if args.progress or (not args.quiet and _isatty(_sys.stderr)) else None


def _cli_train(args, mod):
    if len(args.special) == 1 and args.special[0] in SPECIAL_TOKENS:   # a set's name: its tokens
        args.special = list(SPECIAL_TOKENS[args.special[0]])
    least = 256 + len(args.special)
    _check_counts(args, least)
    out = args.output or _FORMATS[args.format]
    _check_dask_options(args)
    for path in args.inputs if args.dask is None else ():  # (the cluster's: paths or URLs)
        _check_input(path)
    for path in args.eval:
        _check_input(path, "eval file")
    written = {"tiktoken": [out, out + ".json"], "gpt2": [_os.path.join(out, "vocab.json"),
               _os.path.join(out, "merges.txt")]}.get(args.format, [out])
    _check_output(out, args.inputs + args.eval, directory=args.format == "gpt2", outputs=written)
    options = dict(pattern=args.pattern, special_tokens=args.special,
                   min_frequency=args.min_frequency, max_token_bytes=args.max_token_bytes,
                   tie_break=args.tie_break)
    mod.Tokenizer.train("", least, **options)  # the library checks the options first (instant)
    workers = args.workers or _os.cpu_count() or 1
    phases = _Phases(_show_progress(args))
    with _cli_inputs(args) as (paths, client):
        size = (sum(_os.path.getsize(p) for p in paths) if client is None  # inflated ones
                else _input_bytes(paths))
        start = _time.perf_counter()
        tok = mod.Tokenizer.train_files(paths, args.vocab_size,
                                        workers=workers if client is None else None,
                                        progress=phases, jsonl=True if args.jsonl else None,
                                        text_field=args.text_field, dask=client, **options)
        took = _time.perf_counter() - start
        _make_parent(out)
        written = _save_as(tok, out, args.format)
        if args.quiet:
            return 0
        rows = _train_summary(args, mod, tok, paths, phases, size, start, took, client)
    rows.append(("wrote", f"{', '.join(written)} ({args.format})"))
    for key, value in rows:
        print(f"{key:<12} {value}")
    for line in _how_to_load(tok, out, args.format, mod):
        print(line)
    return 0


def _train_summary(args, mod, tok, paths, phases, size, start, took, client=None):
    """The rows of bpe train's summary: what was trained on, what was
    learned, how long it took, and the compression on the training text
    (not read here when a cluster read it) and on each --eval file."""
    least = 256 + len(args.special)
    if client is None:
        nbytes, ntokens, whole = _measure(tok, paths, jsonl=args.jsonl,
                                          text_field=args.text_field)
    evals = [(path, *_measure(tok, [path])) for path in args.eval]
    names = ["standard input" if p == "-" else p for p in args.inputs]
    names = names[:3] + ([f"... ({len(names) - 3} more)"] if len(names) > 3 else [])
    n_target, n_merges = args.vocab_size - least, len(tok.merges)
    rows = [("backend", mod.BACKEND)] + _cluster_rows(client) + [
            ("corpus", f"{', '.join(names)} ({_fmt_bytes(size)}"
                       f"{f', {len(paths)} files' if len(paths) > 1 else ''})")]
    if phases.pretokens is not None:
        rows.append(("pre-tokens", f"{phases.pretokens:,} distinct"))
    stop = ""
    if n_merges < n_target:
        stop = (f"; stopped early: no pair occurs {args.min_frequency} or more times"
                if args.min_frequency > 0 else "; stopped early: no pair left")
        stop += f" within {args.max_token_bytes} bytes" if args.max_token_bytes else ""
    rows.append(("merges", f"{n_merges:,} of {n_target:,} learned; vocab_size {tok.vocab_size:,} "
                           f"({len(args.special)} special{'s' * (len(args.special) != 1)}){stop}"))
    merging = phases.began.get("pretokens")
    if merging is not None:
        rows.append(("time", f"{_fmt_seconds(took)}: {_fmt_seconds(merging - start)} counting, "
                             f"{_fmt_seconds(start + took - merging)} merging"))
    else:
        rows.append(("time", _fmt_seconds(took)))

    def ratio(b, t):
        return f"{b / t:.2f} bytes per token" if t else "no tokens"

    if client is None:
        part = ("the training text" if whole
                else f"the first {_fmt_bytes(nbytes)} of the training text")
        if args.jsonl:
            part = part.replace("the training text", "the records' texts")
        rows.append(("compression", f"{ratio(nbytes, ntokens)} on {part} ({ntokens:,} tokens)"))
    for path, b, t, full in evals:
        rows.append(("eval", f"{ratio(b, t)} on {path} ({t:,} tokens"
                             f"{'' if full else f', first {_fmt_bytes(b)}'})"))
    made = sorted((t for i, t in tok.vocab.items() if 256 <= i < 256 + n_merges),
                  key=lambda t: -len(t))[:5]
    if made:
        rows.append(("longest", ", ".join(f"{t.decode('utf-8', 'backslashreplace')!r} ({len(t)})"
                                          for t in made)))
    return rows


def _measure(tok, paths, limit=_MEASURE_LIMIT, jsonl=False, text_field="text"):
    """(bytes, tokens, whole) of encoding the files (with jsonl, the texts of
    their records), specials as their ids, stopping at a line end after
    `limit` bytes of file.  The text is read and encoded in pieces of about
    a megabyte cut where no id changes (file_cuts' rule): memory holds a
    piece and its ids, never the corpus's."""
    cut_re = _LINE_CUT if jsonl else _cut_kind(tok._pattern, tuple(tok._specials))
    nbytes = ntokens = read = 0
    for path in paths:
        with open(path, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            end = size if read + size <= limit else _line_end_before(f, limit - read)
            for a, b in _ranges(f, end, 0, end, 1 << 20, cut_re):
                f.seek(a)
                data = f.read(b - a)
                texts = (read_jsonl(data, text_field=text_field, name=path, offset=a) if jsonl
                         else [data.decode("utf-8", "replace")])
                for text in texts:
                    nbytes += len(text.encode("utf-8", "replace")) if jsonl else 0
                    ntokens += len(tok.encode(text, allowed_special="all"))
                nbytes += 0 if jsonl else len(data)
        read += end
        if end < size:
            return nbytes, ntokens, False
    return nbytes, ntokens, True


def _line_end_before(f, pos):
    """The offset just after the last line feed before `pos` (0 if none)."""
    step = 1 << 20
    while pos > 0:
        start = max(0, pos - step)
        f.seek(start)
        at = f.read(pos - start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        pos = start
    return 0


def _save_as(tok, out, fmt):
    """Write `tok` in format `fmt`; the paths written."""
    import hashlib
    import json

    if fmt == "native":
        tok.save(out)
        return [out]
    if fmt == "huggingface":
        tok.save_huggingface(out)
        return [out]
    if fmt == "gpt2":
        tok.save_gpt2(out)
        return [_os.path.join(out, "vocab.json"), _os.path.join(out, "merges.txt")]
    # a .tiktoken file holds the ranks only: the pattern and the special tokens go to a
    # sidecar, with the file's sha256 for load_tiktoken_bpe(path, expected_hash=...)
    tok.save_tiktoken(out)
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    meta = {"pattern": tok.pattern, "special_tokens": tok.special_tokens, "sha256": digest}
    _atomic_write(out + ".json", json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    return [out, out + ".json"]


def _how_to_load(tok, out, fmt, mod):
    if fmt == "native":
        return []
    if fmt == "huggingface":
        return ["load with:", f"    tokenizers.Tokenizer.from_file({out!r})"]
    if fmt == "gpt2":
        extra = "" if tok.pattern == PATTERNS["gpt2"] else f", pattern={_pattern_name(tok.pattern)}"
        return ["load with:", f"    bpe.Tokenizer.from_gpt2({_os.path.join(out, 'vocab.json')!r}, "
                              f"{_os.path.join(out, 'merges.txt')!r}{extra})"]
    name = _os.path.splitext(_os.path.basename(out))[0] or "tokenizer"
    lines = [
        f"load with tiktoken (the pattern and special tokens are in {out}.json):",
        "    import json, tiktoken",
        "    from tiktoken.load import load_tiktoken_bpe",
        f"    meta = json.load(open({out + '.json'!r}, encoding='utf-8'))",
        f"    ranks = load_tiktoken_bpe({out!r}, expected_hash=meta['sha256'])",
        f"    enc = tiktoken.Encoding({name!r}, pat_str=meta['pattern'], mergeable_ranks=ranks,",
        "                            special_tokens=meta['special_tokens'])",
    ]
    alike = [(a, b) for a in tok.special_tokens for b in tok.special_tokens
             if a != b and b.startswith(a)]
    if alike:
        lines.append(f"note: special tokens {alike[0][0]!r} and {alike[0][1]!r} start alike; "
                     "tiktoken does not match them longest first, so it encodes such text "
                     "differently")
    return lines


def _pattern_name(pattern):
    """A pattern as Python source: its name where it has one (a regex that
    is a bare word, as a group: the API would read it as a name)."""
    name = next((name for name, rx in PATTERNS.items() if rx == pattern), None)
    if name is not None:
        return repr(name)
    if isinstance(pattern, str) and _NAME_LIKE.fullmatch(pattern):
        return repr(f"(?:{pattern})")
    return repr(pattern)


def _describe_pattern(pattern):
    """bpe info's pattern: "regex ...", or "pipeline: " and its steps."""
    def shown(rx):
        return rx if rx.isprintable() and rx.strip() == rx and rx else repr(rx)

    if not isinstance(pattern, Pipeline):
        return f"regex {shown(pattern)}"
    steps = [f"normalize {form}" for form in pattern.normalizers]
    steps += [f"split by the regex {shown(rx)}" for rx in pattern.splits]
    return "pipeline: " + "; then ".join(steps)


def _cli_tokenizer(spec, pattern, mod, special=None):
    """-t T: a tokenizer file in any format, a directory of GPT-2's files, or
    the name of one of tiktoken's encodings (get_encoding); `pattern` and
    `special` (--pattern, --special) complete a file that holds none."""
    specials = _cli_specials(special)
    if not _os.path.exists(spec):
        if spec in _ENCODINGS:
            if pattern is not None:
                raise _Usage(f"--pattern: encoding {spec} has its own pattern")
            if specials is not None:
                raise _Usage(f"--special: encoding {spec} has its own special tokens")
            return mod.get_encoding(spec)
        raise _Usage(f"no such tokenizer: {spec} (a tokenizer file, a directory of GPT-2's "
                     f"vocab.json and merges.txt, or one of {', '.join(_ENCODINGS)})", 1)
    if not _os.path.isdir(spec):
        _check_input(spec, "tokenizer")
    try:
        return mod.Tokenizer.from_file(spec, pattern=pattern, special_tokens=specials)
    except ValueError:
        if _looks_like_gpt2_vocab(spec):
            raise ValueError(f"{spec}: a GPT-2 vocab.json (token -> id) holds no merges: pass "
                             f"the directory that holds it and its merges.txt, or load both "
                             f"with Tokenizer.from_gpt2(vocab_json, merges_txt)") from None
        raise


def _looks_like_gpt2_vocab(path):
    """Whether a file is a JSON object of token -> int, as GPT-2's vocab.json."""
    import json

    if _os.path.isdir(path) or _os.path.getsize(path) > _MAX_FILE_BYTES:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError, RecursionError):
        return False
    return (isinstance(raw, dict) and len(raw) > 0
            and all(isinstance(v, int) for v in raw.values()))


def _val_fraction(args):
    """--val-fraction, checked; None when not given."""
    f = args.val_fraction
    if f is not None and not 0 < f < 1:  # (nan is neither)
        raise _Usage(f"--val-fraction must be between 0 and 1 (exclusive), got {f}")
    return f


def _cli_encode(args, mod):
    _check_counts(args, None)
    val_fraction = _val_fraction(args)
    _check_dask_options(args)
    for path in args.inputs if args.dask is None else ():  # (the cluster's: paths or URLs)
        _check_input(path)
    read = args.inputs + _tokenizer_files(args.tokenizer)
    _check_output(args.output, read, outputs=[args.output, args.output + ".json"])
    val_out = None
    if val_fraction is not None:
        val_out = _val_path(args.output)
        _check_output(val_out, read, outputs=[val_out, val_out + ".json"])
    tok = _cli_tokenizer(args.tokenizer, args.pattern, mod, args.special)
    allowed = "all" if "all" in args.allowed_special else set(args.allowed_special)
    options = dict(dtype=None if args.dtype == "auto" else args.dtype, eot=args.eot,
                   jsonl=True if args.jsonl else None, text_field=args.text_field,
                   allowed_special=allowed, disallowed_special=() if args.ordinary else "all",
                   workers=args.workers, val_fraction=val_fraction, seed=args.seed)
    for path in [args.output] + ([val_out] if val_out is not None else []):
        _make_parent(path)
    with _cli_inputs(args) as (paths, client):
        start = _time.perf_counter()
        try:
            meta = tok.encode_files(paths, args.output, progress=_show_progress(args) or False,
                                    dask=client, **options)
        except ValueError as e:
            if "disallowed special token" not in str(e):
                raise
            # (the first line of the message, tiktoken's: "... special token '<|x|>'.")
            token = str(e).splitlines()[0].partition("disallowed special token ")[2][:-1]
            found = f"text contains the disallowed special token {token}"
            raise ValueError(f"{found}: pass --allowed-special TOKEN (or all) to encode it as "
                             f"the special token, or --ordinary to encode it as text") from None
        took = _time.perf_counter() - start
        cluster = _cluster_rows(client)
    if args.quiet:
        return 0
    n, docs = meta["count"], len(meta["documents"])
    size = sum(r["end"] - r["start"] for r in meta["inputs"])  # a gzip file's once inflated
    val = None
    if val_out is not None:
        import json

        with open(val_out + ".json", encoding="utf-8") as f:
            val = json.load(f)
        n, docs = n + val["count"], docs + len(val["documents"])
    rows = [("backend", mod.BACKEND)] + cluster + [
            ("tokenizer", f"{args.tokenizer} (vocab_size {tok.vocab_size:,})"),
            ("inputs", f"{len(meta['inputs'])} file{'s' * (len(meta['inputs']) != 1)} "
                       f"({_fmt_bytes(size)}), "
                       f"{docs:,} document{'s' * (docs != 1)}"),
            ("ids", f"{n:,} {meta['dtype']}"
                    + (f" ({size / n:.2f} bytes per id)" if n else "")
                    + f" in {_fmt_seconds(took)}"
                    + (f" ({size / took / 1e6:,.1f} MB/s)" if took >= 0.1 else "")),
            ("wrote", f"{args.output} ({_fmt_bytes(_os.path.getsize(args.output))}), "
                      f"{args.output}.json")]
    if val is not None:
        rows.insert(-1, ("split", f"one document, split by tokens: {meta['count']:,} ids to "
                                  f"{args.output}, {val['count']:,} to {val_out}"
                         if meta["split"]["by"] == "tokens" else
                         f"{len(meta['documents']):,} documents ({meta['count']:,} ids) "
                         f"to {args.output}, {len(val['documents']):,} "
                         f"({val['count']:,} ids) to {val_out}"))
        rows.append(("wrote", f"{val_out} ({_fmt_bytes(_os.path.getsize(val_out))}), "
                              f"{val_out}.json"))
    for key, value in rows:
        print(f"{key:<12} {value}")
    print("load with:")
    for path in [args.output] + ([val_out] if val is not None else []):
        print(f"    numpy.memmap({path!r}, dtype=numpy.{meta['dtype']}, mode='r')")
    return 0


def _cli_decode(args, mod):
    import array

    _check_input(args.ids)
    tok = _cli_tokenizer(args.tokenizer, args.pattern, mod, args.special)
    dtype, byteorder = args.dtype, "little"
    sidecar = args.ids + ".json"
    if _os.path.isfile(sidecar):
        meta = _json(_read_text(sidecar), sidecar)
        if dtype == "auto":
            dtype = meta.get("dtype") if isinstance(meta, dict) else None
        byteorder = meta.get("byteorder", "little") if isinstance(meta, dict) else None
        if dtype not in _DTYPES or byteorder not in ("little", "big"):
            raise ValueError(f"{sidecar}: not the sidecar of an array of ids (expected "
                             f"\"dtype\": \"uint16\" or \"uint32\")")
        _check_same_model(meta, tok, args.tokenizer, args.ids)
    elif dtype == "auto":
        dtype = _ids_dtype(tok, None)
    itemsize = _DTYPES[dtype]
    size = _os.path.getsize(args.ids)
    if size % itemsize:
        raise ValueError(f"{args.ids}: {size:,} bytes is not a whole number of {dtype} ids")
    code = next(c for c in "HIL" if array.array(c).itemsize == itemsize)
    if args.output == "-":
        args.output = None   # standard output, as without -o
    if args.output is not None:
        _check_output(args.output, [args.ids, args.ids + ".json",
                                    *_tokenizer_files(args.tokenizer)])
        _make_parent(args.output)
        target = _write_target(args.output)
        fd, tmp = _open_temporary(_os.path.dirname(target), _os.path.basename(target))
        sink = open(fd, "wb", closefd=False)
    else:
        fd = tmp = None
        sink = _sys.stdout.buffer
    written = 0
    try:
        with open(args.ids, "rb") as f:
            for block in iter(lambda: f.read(itemsize << 18), b""):
                ids = array.array(code, block)
                if byteorder != _sys.byteorder:
                    ids.byteswap()
                try:
                    data = tok.decode_bytes(ids.tolist())
                except ValueError as e:
                    raise ValueError(f"{args.ids}: {e}") from None
                sink.write(data)
                written += len(data)
        sink.flush()
        if fd is not None:
            _os.fsync(fd)
            sink.close()
            _publish(fd, tmp, target)
            tmp = None
    except BaseException:
        if tmp is not None:
            _unlink_quietly(tmp)
        raise
    finally:
        if fd is not None:
            sink.close()
            _os.close(fd)
    if args.output is not None:
        print(f"decoded {size // itemsize:,} {dtype} ids to {args.output} ({_fmt_bytes(written)})")
    return 0


def _cli_info(args, mod):
    tok = _cli_tokenizer(args.tokenizer, args.pattern, mod, args.special)
    specials = tok.special_tokens
    special_ids = set(specials.values())
    n_merges = len(tok.merges)
    named = next((name for name, rx in PATTERNS.items() if rx == tok.pattern), None)
    pattern = _describe_pattern(tok.pattern)
    rows = [("tokenizer", args.tokenizer),
            ("vocab_size", f"{tok.vocab_size:,} ({tok.vocab_size - len(specials):,} tokens: "
                           f"{n_merges:,} merges; {len(specials):,} special "
                           f"token{'s' * (len(specials) != 1)})"),
            ("pattern", (f"name {named}, the " if named else "") + pattern),
            ("pretokenizer", tok.pretokenizer + (" (compiled from the pattern)"
                                                 if tok.pretokenizer == "native" and named
                                                 not in ("gpt2", "cl100k", "o200k", "words")
                                                 else ""))]
    shown = sorted(specials.items(), key=lambda kv: kv[1])
    text = ", ".join(f"{name!r} {i}" for name, i in shown[:12])
    rows.append(("specials", (text + (f", ... ({len(shown) - 12} more)" if len(shown) > 12
                                      else "")) if shown else "none"))
    longest = sorted(((-len(t), i, t) for i, t in tok.vocab.items() if i not in special_ids))[:5]
    rows.append(("longest", ", ".join(f"{t.decode('utf-8', 'backslashreplace')!r} ({len(t)})"
                                      for _, _, t in longest)))
    for key, value in rows:
        print(f"{key:<12} {value}")
    return 0


_RUN_USAGE = "usage: bpe run COMMAND [ARGS...] | bpe run -m MODULE [ARGS...]"
_RUN_HELP = """Run a program written for tiktoken on this library, unchanged: COMMAND (a
console script of this Python's packages, else a Python script on PATH or at a
path) or MODULE (as python -m), in this process after patch_tiktoken(), with
ARGS.  The exit status is the program's; a command not found exits 127."""


def _cli_run_parser(sub):
    """`bpe run` in `bpe --help`; _cli_run reads its own arguments."""
    return sub.add_parser(
        "run", help="run a command written for tiktoken on this library",
        description=_RUN_HELP, usage=_RUN_USAGE[len("usage: "):])


def _cli_run(argv):
    """``bpe run COMMAND ARGS...``: the program COMMAND, unchanged, on this
    library under tiktoken's names.  COMMAND is a console script of this
    Python's packages (its entry point), else a Python script on PATH or at a
    path; ``-m MODULE`` a module, as ``python -m``.  It runs in this process
    after patch_tiktoken(), with sys.argv set, and its exit status is bpe's
    (SystemExit's, an entry point's return value, 1 after an uncaught
    exception with Python's traceback).  Not found: one line, status 127."""
    def fail(message, code):
        _sys.stderr.write(f"bpe: error: {message}\n")
        return code

    if not argv or argv[0] in ("-h", "--help"):
        _sys.stdout.write(f"{_RUN_USAGE}\n\n{_RUN_HELP}\n")
        return 0 if argv else 2
    if argv[0] == "-m":
        if len(argv) < 2:
            return fail(f"-m needs a module name ({_RUN_USAGE})", 2)
        run, where, args = _run_module(argv[1]), argv[1], argv[2:]
    else:
        run, where = _run_target(argv[0])
        if run is None:
            return fail(where, 127)
        args = argv[1:]
    try:
        mod = _cli_backend()
    except _Usage as e:
        return fail(str(e), e.code)
    mod.patch_tiktoken()
    _sys.argv[:] = [where, *args]
    try:
        raise SystemExit(run())
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        _sys.stderr.write(f"{e.code}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # noqa: BLE001 - the command's own error, as Python shows it
        import traceback

        traceback.print_exc()
        return 1


def _run_module(name):
    def run():
        import runpy

        runpy.run_module(name, run_name="__main__", alter_sys=True)

    return run


def _run_script(path):
    def run():
        import runpy

        _sys.path[0:1] = [_os.path.dirname(_os.path.abspath(path))]  # as `python PATH` does
        runpy.run_path(path, run_name="__main__")

    return run


def _run_target(name):
    """(a function running command `name`, the path or name it runs as), or
    (None, why there is no such command)."""
    import shutil

    if _os.sep in name or (_os.altsep and _os.altsep in name):
        if not _os.path.isfile(name):
            return None, f"{name}: no such file"
        return _run_script(name), name
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="console_scripts") if ep.name == name]
    if found:  # the wrapper pip writes: sys.exit(entry_point())
        return (lambda: found[0].load()()), shutil.which(name) or name
    path = shutil.which(name)
    if path is None:
        return None, (f"{name}: command not found (neither a console script of this Python's "
                      f"packages nor a program on PATH)")
    try:
        with open(path, "rb") as f:
            head = f.readline(256)
    except OSError as e:
        return None, f"{path}: {_cli_error_text(e)}"
    if not (head.startswith(b"#!") and b"python" in head):
        return None, (f"{path} is not a Python script: bpe run runs Python programs in this "
                      f"process, where the patch applies")
    return _run_script(path), path


if __name__ == "__main__":
    # run as the module everyone imports (worker processes find its functions by that name)
    import importlib

    _sys.exit(importlib.import_module(__spec__.name if __spec__ is not None else
                                     _os.path.splitext(_os.path.basename(__file__))[0]).main())
