#!/usr/bin/env python3
"""Train a byte-level BPE tokenizer on text files and write it out.

    python tools/train_and_dump.py INPUT... --vocab-size N [--pattern P]
        [--special TOKEN]... [--min-frequency N] [--max-token-bytes N] [--workers N]
        [-o OUT] [--format native|tiktoken|huggingface|gpt2] [--eval FILE]...
        [--quiet] [--progress]

INPUT is a UTF-8 text file, or `-` for standard input.  With no INPUT it trains the
sample corpus shipped in the repository (tests/data/corpus.en, vocab 1000, GPT-2's
pattern, the special token <|endoftext|>) and writes sample.bpe in the current directory.

Outputs (default names in the current directory):

    native       tokenizer.bpe      bpe.Tokenizer.load(path)
    tiktoken     tokenizer.tiktoken tiktoken.Encoding(..., mergeable_ranks=load_tiktoken_bpe(path));
                                    a .tiktoken file holds neither the pattern nor the
                                    special tokens, so they go to the sidecar <out>.json
                                    as {"pattern": ..., "special_tokens": {...},
                                    "sha256": ...} (for load_tiktoken_bpe's expected_hash)
    huggingface  tokenizer.json     tokenizers.Tokenizer.from_file(path)
    gpt2         tokenizer-gpt2/    vocab.json + merges.txt: bpe.Tokenizer.from_gpt2(...)

Every output gives exactly the ids of bpe.Tokenizer.train_files with the same options.

Progress (phase lines, then merges done of the target, rate and time left) goes to stderr
when stderr is a terminal, or always with --progress; a summary goes to stdout unless
--quiet.  A bad invocation exits with status 2 (usage) or 1 (anything else) and one line
on stderr.  The environment variable BPE_BACKEND=python makes the tool use the
pure-Python module bpe_fallback instead of the compiled bpe (BPE_BACKEND=cython insists
on the compiled one); BPE_DEBUG=1 shows tracebacks instead of one-line errors.

This module also holds the helpers that tools/analyze.py shares (backend choice, error
handling, reading text).
"""

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
import warnings

PROG = "train_and_dump"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.path.join(REPO, "tests", "data")
SAMPLE = os.path.join(DATA, "corpus.en")
EOT = "<|endoftext|>"

FORMATS = {
    # format: (default output, default output in sample mode)
    "native": ("tokenizer.bpe", "sample.bpe"),
    "tiktoken": ("tokenizer.tiktoken", "sample.tiktoken"),
    "huggingface": ("tokenizer.json", "sample.json"),
    "gpt2": ("tokenizer-gpt2", "sample-gpt2"),
}

# Above this much training text the summary measures bytes per token on a prefix.
MEASURE_LIMIT = 64 << 20


# ---------------------------------------------------------------------------
# Shared helpers (also used by tools/analyze.py)
# ---------------------------------------------------------------------------


class CLIError(Exception):
    """A bad invocation: reported as one line on stderr, exit status `code`."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`prog: error: ...`), exit status 2."""

    def error(self, message):
        raise CLIError(f"{message} (see --help)", code=2)


def import_backend():
    """The bpe module to use: `bpe` (compiled where it built), or `bpe_fallback` with
    BPE_BACKEND=python."""
    want = os.environ.get("BPE_BACKEND", "").strip().lower()
    try:
        if want in ("python", "py", "fallback", "bpe_fallback", "pure"):
            import bpe_fallback as mod
        elif want in ("", "auto", "bpe", "default", "cython", "compiled"):
            import bpe as mod

            if want in ("cython", "compiled") and mod.BACKEND != "cython":
                raise CLIError("BPE_BACKEND=cython, but the installed bpe is the pure-Python "
                               "build (no compiler at install time?)")
        else:
            raise CLIError(f"BPE_BACKEND must be 'python' or 'cython', not {want!r}")
    except ImportError as e:
        raise CLIError(f"cannot import the bpe library ({e}); install it with `pip install .`")
    return mod


_progress_line_open = [False]  # a \r progress line is on stderr without its newline


def _one_line(text):
    return " ".join(str(text).split())


def describe_error(e):
    """One line saying what went wrong, for the exceptions a bad invocation raises."""
    if isinstance(e, OSError) and e.strerror:
        what = e.strerror[0].lower() + e.strerror[1:]
        if e.filename is not None:
            return f"{e.filename}: {what}"
        return what
    if isinstance(e, MemoryError):
        return "out of memory"
    text = str(e) or type(e).__name__
    return _one_line(text)


def run(main, prog, argv=None):
    """Run main(argv) -> exit status; expected errors become one line on stderr."""
    try:
        return main(argv)
    except CLIError as e:
        code, message = e.code, str(e)
    except KeyboardInterrupt:
        code, message = 130, "interrupted"
    except BrokenPipeError:
        # stdout closed early (`... | head`): not an error worth a message
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
    except (ValueError, TypeError, OSError, ImportError, MemoryError) as e:
        if os.environ.get("BPE_DEBUG"):
            raise
        code, message = 1, describe_error(e)
    if _progress_line_open[0]:
        sys.stderr.write("\n")
        _progress_line_open[0] = False
    sys.stderr.write(f"{prog}: error: {_one_line(message)}\n")
    sys.stderr.flush()
    return code


def one_line_warnings(prog):
    """Show warnings (e.g. invalid UTF-8 in a corpus) as `prog: warning: ...`."""

    def show(message, category, filename, lineno, file=None, line=None):
        stream = file or sys.stderr
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if tty:
            # clear a progress line of this process or of the parent of a worker process
            stream.write("\r\x1b[K")
        elif _progress_line_open[0]:
            stream.write("\n")
        _progress_line_open[0] = False
        stream.write(f"{prog}: warning: {_one_line(message)}\n")

    warnings.showwarning = show


def check_input_file(path, what="file"):
    """Raise CLIError unless `path` is a readable regular file."""
    if not os.path.exists(path):
        raise CLIError(f"no such {what}: {path}")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory, not a {what}")
    if not os.access(path, os.R_OK):
        raise CLIError(f"cannot read {path}: permission denied")


def decode_text(data, where):
    """UTF-8 bytes -> str; invalid bytes become U+FFFD with a warning (as train_files does)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        warnings.warn(f"{where}: invalid UTF-8 at byte {e.start} (and maybe later); "
                      f"such bytes are read as U+FFFD")
        return data.decode("utf-8", "replace")


def read_text(path):
    check_input_file(path)
    with open(path, "rb") as f:
        return decode_text(f.read(), path)


def fmt_size(n):
    """133,027 bytes -> '133,027 bytes'; larger sizes also in MB."""
    if n >= 10 << 20:
        return f"{n / 1e6:,.1f} MB"
    return f"{n:,} bytes"


def fmt_duration(seconds):
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def display_path(path):
    """`path` relative to the current directory when that is shorter and not upward."""
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def show_token(token):
    """A learned token as a short quoted string (bytes that are no whole UTF-8
    character shown as \\xNN)."""
    return repr(token.decode("utf-8", "backslashreplace"))


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


class Progress:
    """Phase lines and a changing status line on stderr (when enabled).  On a terminal
    the status line is rewritten in place; elsewhere (a log file, with --progress) it is
    written as a line of its own at most every `interval` seconds."""

    def __init__(self, enabled, stream=None, interval=10.0):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self.interval = interval
        self._width = 0
        self._last = time.monotonic()

    def _write(self, text, final):
        pad = max(self._width - len(text), 0)
        self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
        self.stream.flush()
        self._width = 0 if final else len(text)
        _progress_line_open[0] = not final

    def status(self, text):
        """Replace the current status line."""
        if not self.enabled:
            return
        if self.tty:
            self._write(text, final=False)
        elif time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self.stream.write(text + "\n")
            self.stream.flush()

    def line(self, text):
        """A finished line (replacing the status line, if any)."""
        if not self.enabled:
            return
        if self.tty:
            self._write(text, final=True)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def clear(self):
        """Remove the status line (on a terminal)."""
        if self.enabled and self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
            _progress_line_open[0] = False

    def ticker(self, label):
        """A context manager: `label ... 3.5 s` updated twice a second until it exits."""
        return _Ticker(self, label)


class _Ticker:
    def __init__(self, progress, label):
        self.progress, self.label = progress, label
        self.stopped = threading.Event()
        self.thread = None
        self.start = time.perf_counter()

    def __enter__(self):
        if self.progress.enabled:
            self.progress.status(f"{self.label} ...")
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()
        return self

    def _run(self):
        while not self.stopped.wait(0.5):
            self.progress.status(f"{self.label} ... {fmt_duration(time.perf_counter() - self.start)}")

    def stop(self):
        """Stop ticking (idempotent); the caller then prints its own line."""
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def __exit__(self, *exc):
        self.stop()
        return False


# The line the library's progress=True writes: "\rmerges: 1234/31743 (5000/s)".
_LIBRARY_LINE = re.compile(r"\r(\w+): (\d+)/(\d+) \((\d+)/s\)")


class MergeProgressFilter:
    """Stands in for sys.stderr while the library trains with progress=True, and
    rewrites its merge lines to add the share done and the time left; anything else
    passes through unchanged."""

    def __init__(self, stream, progress, on_first=None):
        self.stream, self.progress, self.on_first = stream, progress, on_first
        self.last = None  # (time, merges done) at the last line seen

    def write(self, text):
        m = _LIBRARY_LINE.fullmatch(text)
        if m:
            done, total, rate = int(m.group(2)), int(m.group(3)), int(m.group(4))
            now = time.perf_counter()
            if self.last is None:
                if self.on_first is not None:
                    self.on_first()
            else:
                # merges get faster as training goes on: the time left follows the
                # rate since the previous line, not the average so far
                then, before = self.last
                if now > then and done > before:
                    rate = (done - before) / (now - then)
            self.last = (now, done)
            share = f" ({100 * done / total:.0f}%)" if total else ""
            left = f", {fmt_duration((total - done) / rate)} left" if rate and done < total else ""
            self.progress.status(f"merging: {done:,}/{total:,} merges{share}, {rate:,.0f}/s{left}")
            return len(text)
        if text == "\n" and self.last is not None:
            return len(text)  # the library ends its line; the caller prints a final one
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def trainer_class(mod, on_counted):
    """mod.Tokenizer, or a subclass that calls on_counted(counts) when the counting
    phase is over and the merge loop starts (to time the two phases and report the
    number of distinct pre-tokens).  It hooks the `_learn` step of the library; where
    a build lacks it, the phases are simply not told apart."""
    base = mod.Tokenizer
    learn = getattr(base, "_learn", None)
    if not callable(learn):
        return base

    def learn_with_report(counts, *args, **kwargs):
        on_counted(counts)
        return learn(counts, *args, **kwargs)

    return type(base.__name__, (base,), {"_learn": staticmethod(learn_with_report),
                                         "__module__": base.__module__})


# ---------------------------------------------------------------------------
# train_and_dump
# ---------------------------------------------------------------------------


def build_parser():
    p = ArgumentParser(
        prog=PROG,
        description="Train a byte-level BPE tokenizer and write it in the native, tiktoken,\n"
                    "Hugging Face or GPT-2 format.  With no INPUT, train the bundled sample\n"
                    "(tests/data/corpus.en, vocab 1000, <|endoftext|>) and write sample.bpe.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="default outputs:\n"
               "  native       tokenizer.bpe\n"
               "  tiktoken     tokenizer.tiktoken, and tokenizer.tiktoken.json holding the\n"
               "               pattern and special tokens (a .tiktoken file has neither)\n"
               "  huggingface  tokenizer.json\n"
               "  gpt2         tokenizer-gpt2/ (vocab.json + merges.txt)\n"
               "environment: BPE_BACKEND=python uses the pure-Python bpe_fallback",
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="UTF-8 text files to train on; - reads standard input")
    p.add_argument("--vocab-size", type=int, metavar="N",
                   help="the vocabulary size: 256 bytes + merges + special tokens "
                        "(required with INPUT; 1000 for the sample)")
    add_training_options(p)
    p.add_argument("--workers", type=int, metavar="N",
                   help="processes counting pre-tokens (default: the number of CPUs)")
    p.add_argument("--eval", action="append", default=[], metavar="FILE",
                   help="also report bytes per token on this held-out file (repeatable)")
    add_output_options(p, "show progress on stderr even when it is not a terminal")
    return p


def add_training_options(p):
    """The training options this tool and train_dask.py share (--special
    defaults to None: not given)."""
    p.add_argument("--pattern", default="gpt2", metavar="P",
                   help="pre-tokenization: gpt2 (default), cl100k, o200k, words, bytes, or a regex")
    p.add_argument("--special", action="append", metavar="TOKEN",
                   help="a special token (repeat for several; ids follow the merges in this order)")
    p.add_argument("--min-frequency", type=int, default=2, metavar="N",
                   help="stop when the best pair occurs fewer than N times (default 2)")
    p.add_argument("--max-token-bytes", type=int, metavar="N",
                   help="never learn a token longer than N bytes")


def add_output_options(p, progress_help):
    """The output options this tool and train_dask.py share."""
    p.add_argument("-o", "--output", metavar="OUT",
                   help="the output file (directory for --format gpt2)")
    p.add_argument("--format", choices=list(FORMATS), default="native",
                   help="output format (default native)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary, no automatic progress")
    p.add_argument("--progress", action="store_true", help=progress_help)


def check_output(out, fmt, inputs):
    """Fail before training if `out` cannot be written."""
    targets = [out]
    if fmt == "gpt2":
        if os.path.exists(out) and not os.path.isdir(out):
            raise CLIError(f"cannot write {out}/: it exists and is not a directory")
        parent = out if os.path.isdir(out) else os.path.dirname(os.path.abspath(out))
        targets = [os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt")]
    else:
        if os.path.isdir(out):
            raise CLIError(f"cannot write {out}: it is a directory")
        parent = os.path.dirname(os.path.abspath(out))
        if fmt == "tiktoken":
            targets.append(out + ".json")
    if not os.path.exists(parent):
        raise CLIError(f"cannot write {out}: directory {parent} does not exist")
    if not os.path.isdir(parent):
        raise CLIError(f"cannot write {out}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CLIError(f"cannot write {out}: directory {parent} is not writable")
    for target in targets:
        if os.path.isdir(target):
            raise CLIError(f"cannot write {target}: it is a directory")
        for path in inputs:
            if path != "-" and os.path.exists(target) and os.path.samefile(path, target):
                raise CLIError(f"the output {target} is the input {path}")


def save(tok, out, fmt):
    """Write `tok` in format `fmt`; returns the paths written."""
    if fmt == "native":
        tok.save(out)
        return [out]
    if fmt == "huggingface":
        tok.save_huggingface(out)
        return [out]
    if fmt == "gpt2":
        tok.save_gpt2(out)
        return [os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt")]
    # tiktoken: the file holds the ranks; the pattern and specials go to a sidecar
    tok.save_tiktoken(out)
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    # sha256: for load_tiktoken_bpe(path, expected_hash=...), since tiktoken caches what
    # it reads by path and would otherwise hand back an older file of the same name
    meta = {"pattern": tok.pattern, "special_tokens": tok.special_tokens, "sha256": digest}
    side = out + ".json"
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(os.path.abspath(side)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(meta, f, ensure_ascii=False, indent=1)
            f.write("\n")
        os.replace(tmp, side)
    except BaseException:
        os.unlink(tmp)
        raise
    return [out, side]


def how_to_load(tok, out, fmt, mod):
    """Lines telling the user how to load what was written (for formats that need it)."""
    name = os.path.splitext(os.path.basename(out.rstrip("/\\")))[0] or "tokenizer"
    if fmt == "tiktoken":
        starts_alike = [(a, b) for a in tok.special_tokens for b in tok.special_tokens
                        if a != b and b.startswith(a)]
        lines = [
            "tiktoken needs the pattern and the special tokens, which a .tiktoken file does not",
            f"hold; they are in {out}.json:",
            "    import json, tiktoken",
            "    from tiktoken.load import load_tiktoken_bpe",
            f"    meta = json.load(open({out + '.json'!r}, encoding='utf-8'))",
            f"    ranks = load_tiktoken_bpe({out!r}, expected_hash=meta['sha256'])",
            f"    enc = tiktoken.Encoding({name!r}, pat_str=meta['pattern'], mergeable_ranks=ranks,",
            "                            special_tokens=meta['special_tokens'])",
            "(expected_hash: tiktoken caches the files it reads by path, and without it would",
            "return an earlier file of the same name)",
        ]
        if starts_alike:
            a, b = starts_alike[0]
            lines.append(f"note: special tokens {a!r} and {b!r} start alike; tiktoken does not "
                         f"match them longest first, so text holding {b!r} encodes differently")
        return lines
    if fmt == "gpt2":
        pattern_arg = ""
        if tok.pattern != pattern_regex(mod, "gpt2"):
            pattern_arg = f", pattern={pattern_name(mod, tok.pattern)}"
        return [
            "load with:",
            f"    bpe.Tokenizer.from_gpt2({os.path.join(out, 'vocab.json')!r}, "
            f"{os.path.join(out, 'merges.txt')!r}{pattern_arg})",
        ] + ([] if not pattern_arg else
             ["(GPT-2 files hold no pattern: pass the training pattern when loading)"])
    if fmt == "huggingface":
        return ["load with:", f"    tokenizers.Tokenizer.from_file({out!r})"]
    return ["load with:", f"    bpe.Tokenizer.load({out!r})"]


def pattern_name(mod, regex):
    """A pattern's name as Python source ('gpt2'), or the regex itself as a literal."""
    for name in ("gpt2", "cl100k", "o200k", "words", "bytes"):
        if pattern_regex(mod, name) == regex:
            return repr(name)
    return repr(regex)


def pattern_regex(mod, name):
    """The regex of a pattern name (or of a regex), as a trained tokenizer stores it."""
    return mod.Tokenizer.train("", 256, pattern=name).pattern


def measure(tok, texts, limit=MEASURE_LIMIT):
    """(bytes, tokens, complete) of encoding `texts` (an iterable of (name, opener)),
    specials as their ids, stopping at a line end after `limit` bytes."""
    total_bytes = total_tokens = 0
    complete = True
    for opener in texts:
        if total_bytes >= limit:
            complete = False
            break
        lines, counted = opener(), [0]

        def upto():
            nonlocal complete
            for line in lines:
                counted[0] += len(line.encode("utf-8"))
                yield line
                if total_bytes + counted[0] >= limit:
                    complete = False
                    return

        n = 0
        for _ in tok.encode_iterable(upto(), allowed_special="all"):
            n += 1
        total_bytes += counted[0]
        total_tokens += n
    return total_bytes, total_tokens, complete


def file_lines(path):
    """An opener for `measure`: the lines of a UTF-8 file (bad bytes -> U+FFFD)."""

    def open_lines():
        with open(path, "r", encoding="utf-8", errors="replace", newline="") as f:
            yield from f

    return open_lines


def text_lines(text):
    return lambda: iter(text.splitlines(keepends=True))


def main(argv=None):
    args = build_parser().parse_args(argv)
    one_line_warnings(PROG)
    mod = import_backend()

    sample = not args.inputs
    if sample:
        if not os.path.isfile(SAMPLE):
            raise CLIError(f"the bundled sample {SAMPLE} is missing; give INPUT files", code=2)
        inputs = [SAMPLE]
        vocab_size = 1000 if args.vocab_size is None else args.vocab_size
        specials = [EOT] if args.special is None else args.special
    else:
        inputs = args.inputs
        if args.vocab_size is None:
            raise CLIError("--vocab-size is required when INPUT files are given (see --help)",
                           code=2)
        vocab_size = args.vocab_size
        specials = args.special or []
    out = args.output or FORMATS[args.format][1 if sample else 0]
    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be at least 1, got {args.workers}", code=2)
    least = 256 + len(specials)
    if vocab_size < least:
        why = (f"256 bytes + {len(specials)} special token{'s' if len(specials) != 1 else ''}"
               if specials else "the 256 single bytes")
        raise CLIError(f"--vocab-size must be at least {least} ({why}), got {vocab_size}", code=2)
    if args.min_frequency < 0:
        raise CLIError(f"--min-frequency must be at least 0, got {args.min_frequency}", code=2)
    if args.max_token_bytes is not None and args.max_token_bytes < 1:
        raise CLIError(f"--max-token-bytes must be at least 1, got {args.max_token_bytes}", code=2)

    if inputs.count("-") > 1:
        raise CLIError("standard input (-) can be read only once", code=2)
    for path in inputs:
        if path != "-":
            check_input_file(path)
    for path in args.eval:
        check_input_file(path, "eval file")
    check_output(out, args.format, inputs)
    # The options, checked by the library itself on an empty corpus (instant), before
    # reading standard input or counting anything.
    options = dict(pattern=args.pattern, special_tokens=specials,
                   min_frequency=args.min_frequency, max_token_bytes=args.max_token_bytes)
    mod.Tokenizer.train("", vocab_size, **options)

    show_progress = args.progress or (not args.quiet and sys.stderr.isatty())
    progress = Progress(show_progress)
    workers = args.workers or os.cpu_count() or 1

    stdin_text = None
    spooled = None
    try:
        if "-" in inputs:
            progress.status("reading standard input ...")
            stdin_text = decode_text(sys.stdin.buffer.read(), "<stdin>")
            progress.line(f"read {fmt_size(len(stdin_text.encode('utf-8')))} from standard input")
            if len(inputs) > 1:
                # mixed with files: spool stdin to a file so train_files counts all alike
                fd, spooled = tempfile.mkstemp(prefix="train_and_dump-", suffix=".txt")
                with os.fdopen(fd, "wb") as f:
                    f.write(stdin_text.encode("utf-8"))
        paths = [spooled if p == "-" else p for p in inputs]
        corpus_bytes = sum(len(stdin_text.encode("utf-8")) if p == "-" else os.path.getsize(p)
                           for p in inputs)

        phase = {}
        start = time.perf_counter()
        n_files = len(inputs)
        if stdin_text is not None and len(inputs) == 1:
            label = f"counting pre-tokens of {fmt_size(corpus_bytes)} from standard input"
        else:
            label = (f"counting pre-tokens of {fmt_size(corpus_bytes)} in {n_files} "
                     f"file{'s' if n_files != 1 else ''} with {workers} "
                     f"worker{'s' if workers != 1 else ''}")
        ticker = progress.ticker(label)

        def on_counted(counts):
            phase["counted"] = time.perf_counter()
            phase["distinct"] = len(counts)
            ticker.stop()
            took = phase["counted"] - start
            rate = f" ({corpus_bytes / took / 1e6:,.1f} MB/s)" if took >= 0.1 else ""
            progress.line(f"counted {len(counts):,} distinct pre-tokens in "
                          f"{fmt_duration(took)}{rate}")
            progress.status(f"merging: 0/{vocab_size - 256 - len(specials):,} merges")

        cls = trainer_class(mod, on_counted)
        real_stderr = sys.stderr
        merge_filter = MergeProgressFilter(real_stderr, progress, on_first=ticker.stop)
        with ticker:
            if show_progress:
                sys.stderr = merge_filter
            try:
                if stdin_text is not None and len(inputs) == 1:
                    tok = cls.train(stdin_text, vocab_size, progress=show_progress, **options)
                else:
                    tok = cls.train_files(paths, vocab_size, workers=workers,
                                          progress=show_progress, **options)
            finally:
                sys.stderr = real_stderr
        took = time.perf_counter() - start
        n_target = vocab_size - 256 - len(specials)
        n_merges = len(tok.merges)
        merge_time = took - (phase["counted"] - start) if "counted" in phase else None
        if merge_time is not None:
            rate = f" ({n_merges / merge_time:,.0f}/s)" if merge_time >= 0.1 else ""
            progress.line(f"learned {n_merges:,} merges in {fmt_duration(merge_time)}{rate}")
        else:
            progress.line(f"trained {n_merges:,} merges in {fmt_duration(took)}")

        written = save(tok, out, args.format)

        if args.quiet:
            return 0

        # the summary
        if show_progress:
            progress.status("measuring bytes per token ...")
        if stdin_text is not None and len(inputs) == 1:
            openers = [text_lines(stdin_text)]
        else:
            openers = [file_lines(p) for p in paths]
        nbytes, ntokens, complete = measure(tok, openers)
        evals = []
        for path in args.eval:
            evals.append((path,) + measure(tok, [file_lines(path)]))
        progress.clear()
    finally:
        if spooled is not None:
            os.unlink(spooled)

    names = ([display_path(SAMPLE)] if sample else
             ["standard input" if p == "-" else p for p in inputs])
    if len(names) > 3:
        names = names[:3] + [f"... ({len(names) - 3} more)"]
    rows = [("backend", mod.BACKEND)]
    rows.append(("corpus", f"{', '.join(names)} ({fmt_size(corpus_bytes)}"
                           f"{', %d files' % n_files if n_files > 1 else ''})"))
    if "distinct" in phase:
        rows.append(("pre-tokens", f"{phase['distinct']:,} distinct"))
    stop = ""
    if n_merges < n_target:
        stop = (f"; stopped early: no pair occurs {args.min_frequency} or more times"
                if args.min_frequency > 0 else "; stopped early: no pair left")
        if args.max_token_bytes is not None:
            stop += f" within {args.max_token_bytes} bytes"
    rows.append(("merges", f"{n_merges:,} of {n_target:,} learned; vocab_size "
                           f"{tok.vocab_size:,} ({len(specials)} special"
                           f"{'s' if len(specials) != 1 else ''}){stop}"))
    if merge_time is not None:
        rows.append(("time", f"{fmt_duration(took)}: {fmt_duration(took - merge_time)} counting, "
                             f"{fmt_duration(merge_time)} merging"))
    else:
        rows.append(("time", fmt_duration(took)))

    def ratio(b, t):
        return f"{b / t:.2f} bytes per token" if t else "no tokens"

    where = "the training text" if complete else f"the first {fmt_size(nbytes)} of the training text"
    rows.append(("compression", f"{ratio(nbytes, ntokens)} on {where} ({ntokens:,} tokens)"))
    for path, b, t, full in evals:
        part = "" if full else f", first {fmt_size(b)}"
        rows.append(("eval", f"{ratio(b, t)} on {path} ({t:,} tokens{part})"))
    specials_ids = set(tok.special_tokens.values())
    learned = sorted(((i, t) for i, t in tok.vocab.items() if i >= 256 and i not in specials_ids),
                     key=lambda it: (-len(it[1]), it[0]))[:5]
    if learned:
        rows.append(("longest", ", ".join(f"{show_token(t)} ({len(t)})" for _, t in learned)))
    rows.append(("wrote", f"{', '.join(written)} ({args.format})"))
    for key, value in rows:
        print(f"{key:<12} {value}")
    if args.format != "native":
        for line in how_to_load(tok, out, args.format, mod):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(run(main, PROG))
