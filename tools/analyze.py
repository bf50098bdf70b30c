#!/usr/bin/env python3
"""Look at what a BPE tokenizer does to text.

    python tools/analyze.py compress TOKENIZER FILE...
        bytes per token and tokens per character of each file: how much more a
        language (or kind of text) costs than the first file (the "multilingual tax")
    python tools/analyze.py curve FILE... [--sizes 300,500,1000,2000] [--eval FILE]...
                                    [--pattern P] [--special TOKEN]... [--plot out.png]
        train once, then tabulate bytes per token against vocabulary size (and plot it
        with matplotlib, when installed)
    python tools/analyze.py show TOKENIZER [TEXT | --file F] [--ids] [--no-color]
        the text's token boundaries: coloured in a terminal, [bracketed] otherwise
    python tools/analyze.py compare TOKENIZER [TEXT | --file F] [--tiktoken FILE
                                    [--pattern P]] [--hf tokenizer.json] [--ids]
        the same text tokenized by this tokenizer, by tiktoken (GPT-2 built offline
        from tests/data, or the given .tiktoken file) and by Hugging Face tokenizers
        (the given tokenizer.json), with token counts

TOKENIZER is one of
    a tokenizer file in any format `bpe train` writes, read with Tokenizer.from_file (for a
        .tiktoken file without its <file>.json sidecar, or GPT-2 files of another pattern
        than GPT-2's, give --pattern),
    gpt2: GPT-2's files in tests/data,
    tiktoken:NAME: a tiktoken encoding (cl100k_base, ...) if tiktoken has it in its
        cache; this tool never downloads.

Texts in special tokens' form (<|endoftext|>) are encoded as the special tokens.
Errors are one line on stderr and a non-zero exit status; BPE_BACKEND=python uses the
pure-Python bpe_fallback.
"""

import argparse
import importlib
import importlib.util
import os
import sys
import time
import warnings

PROG = "analyze"
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data")
GPT2_VOCAB = os.path.join(DATA, "gpt2_vocab.json")
GPT2_MERGES = os.path.join(DATA, "gpt2_merges.txt")


class CLIError(Exception):
    """A bad invocation: one line on stderr, exit status `code`."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def import_backend():
    """The installed bpe, or bpe_fallback with BPE_BACKEND=python."""
    name = "bpe_fallback" if os.environ.get("BPE_BACKEND", "").lower() == "python" else "bpe"
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise CLIError(f"cannot import {name} ({e}); install it with `pip install .`") from e


def read_text(path):
    check_input_file(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        warnings.warn(f"{path}: invalid UTF-8 at byte {e.start}; read as U+FFFD", stacklevel=1)
        return data.decode("utf-8", "replace")


def check_input_file(path, what="file"):
    if not os.path.exists(path):
        raise CLIError(f"no such {what}: {path}")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory, not a {what}")
    if not os.path.isfile(path):  # a FIFO would block the tool, a device never end
        raise CLIError(f"{path} is not a regular file (a FIFO or a device), not a {what}")


def display_path(path):
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def one_line(text):
    return " ".join(str(text).split())


# ---------------------------------------------------------------------------
# Tokenizers of three libraries, as this tool needs them
# ---------------------------------------------------------------------------


class Tok:
    """name, encode(text) -> ids (special tokens as their ids), token_bytes(id) -> bytes."""

    def __init__(self, name, encode, token_bytes, size, specials=()):
        self.name, self.encode, self.token_bytes, self.size = name, encode, token_bytes, size
        self.specials = frozenset(specials)  # the ids of the special tokens

    def tokens(self, text):
        ids = self.encode(text)
        return ids, [self.token_bytes(i) for i in ids]


def from_bpe(name, tok):
    return Tok(name, lambda text: tok.encode(text, allowed_special="all"), tok.token_bytes,
               tok.vocab_size, tok.special_tokens.values())


def from_tiktoken(name, enc):
    return Tok(name, lambda text: enc.encode(text, allowed_special="all"),
               enc.decode_single_token_bytes, enc.n_vocab,
               [enc.encode_single_token(s) for s in enc.special_tokens_set])


def from_hf(name, hf, mod):
    added = {i: t.content for i, t in hf.get_added_tokens_decoder().items()}

    def token_bytes(i):
        if i in added:
            return added[i].encode("utf-8")
        try:
            return mod.str_to_token(hf.id_to_token(i))
        except (ValueError, TypeError):
            return hf.decode([i], skip_special_tokens=False).encode("utf-8")

    return Tok(name, lambda text: hf.encode(text, add_special_tokens=False).ids, token_bytes,
               hf.get_vocab_size(), added)


class _Offline(Exception):
    pass


def offline_tiktoken(name):
    """tiktoken.get_encoding(name), only from tiktoken's cache: never the network."""
    try:
        import tiktoken
        import tiktoken.load
    except ImportError:
        raise CLIError(f"tiktoken:{name} needs tiktoken, which is not installed") from None
    real = tiktoken.load.read_file

    def no_download(blobpath):
        if "://" in blobpath:
            raise _Offline(blobpath)
        return real(blobpath)

    tiktoken.load.read_file = no_download
    try:
        enc = tiktoken.get_encoding(name)
    except _Offline:
        raise CLIError(f"tiktoken:{name} is not available offline (it is not in tiktoken's "
                       f"cache, and this tool does not download)") from None
    except ValueError as e:
        known = ", ".join(tiktoken.list_encoding_names())
        raise CLIError(f"tiktoken:{name}: {e}; tiktoken knows {known}") from e
    finally:
        tiktoken.load.read_file = real
    return from_tiktoken(f"tiktoken:{name}", enc)


def gpt2_files():
    for path in (GPT2_VOCAB, GPT2_MERGES):
        if not os.path.isfile(path):
            raise CLIError(f"gpt2 means GPT-2's files in tests/data, but {path} is missing")
    return GPT2_VOCAB, GPT2_MERGES


def load_tokenizer(spec, mod, pattern=None):
    """TOKENIZER (see the module docstring) -> Tok."""
    if spec == "gpt2":
        return from_bpe("gpt2", mod.Tokenizer.from_gpt2(*gpt2_files()))
    if spec.startswith("tiktoken:"):
        return offline_tiktoken(spec[len("tiktoken:"):])
    if not os.path.exists(spec):
        raise CLIError(f"no such tokenizer: {spec} (a .bpe, tokenizer.json or .tiktoken file, "
                       f"a GPT-2 directory, gpt2 or tiktoken:NAME)")
    return from_bpe(display_path(spec), mod.Tokenizer.from_file(spec, pattern=pattern))


# ---------------------------------------------------------------------------
# Output helpers
# ---------------------------------------------------------------------------


def table(header, rows, right=None):
    """Rows as aligned text columns; `right`: the columns aligned right (default all but
    the first)."""
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    right = set(range(1, len(header))) if right is None else set(right)
    lines = []
    for row in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def use_color(args):
    if args.color == "always":
        return True
    if args.color == "never" or args.no_color:
        return False
    return (sys.stdout.isatty() and "NO_COLOR" not in os.environ
            and os.environ.get("TERM") != "dumb")


# 256-colour pastel backgrounds, black text
BACKGROUNDS = (153, 223, 151, 218, 229, 189)
RESET = "\x1b[0m"


def visible(token, color):
    """A token's text with control characters made visible; bytes that are not a whole
    UTF-8 character are shown as \\xNN."""
    out = []
    for ch in token.decode("utf-8", "backslashreplace"):
        if ch == "\n":
            out.append("\u21b5" if color else "\\n")
        elif ch == "\t":
            out.append("\u21e5" if color else "\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def render(ids, tokens, color, show_ids, specials=frozenset()):
    """The tokens one after another: alternating background colours, or [bracketed];
    a line break after each token that holds one."""
    out = []
    for k, (i, token) in enumerate(zip(ids, tokens)):
        text = visible(token, color)
        if color:
            bold = "\x1b[1m" if i in specials else ""
            tag = f"\x1b[2m{i}\x1b[22m" if show_ids else ""
            out.append(f"\x1b[38;5;16;48;5;{BACKGROUNDS[k % len(BACKGROUNDS)]}m{bold}{text}"
                       f"{tag}{RESET}")
        else:
            out.append(f"[{text}|{i}]" if show_ids else f"[{text}]")
        if b"\n" in token:
            out.append("\n")
    text = "".join(out)
    return text if text.endswith("\n") or not text else text + "\n"


def stats(nbytes, nchars, ntokens):
    per = f"{nbytes / ntokens:.2f} bytes per token" if ntokens else "no tokens"
    return (f"{ntokens:,} token{'s' if ntokens != 1 else ''}, {nchars:,} characters, "
            f"{nbytes:,} bytes: {per}")


def get_text(args):
    """TEXT, --file F, or standard input when it is not a terminal."""
    if args.text is not None and args.file is not None:
        raise CLIError("give TEXT or --file, not both", code=2)
    if args.text is not None:
        return args.text
    if args.file is not None:
        return read_text(args.file)
    if sys.stdin is None or sys.stdin.isatty():
        raise CLIError("give a TEXT, --file F, or text on standard input", code=2)
    return sys.stdin.buffer.read().decode("utf-8", "replace")


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------


def cmd_compress(args, mod):
    for path in args.files:
        check_input_file(path)
    tok = load_tokenizer(args.tokenizer, mod, args.pattern)
    rows = []
    first = None
    for path in args.files:
        text = read_text(path)
        nbytes, nchars = len(text.encode("utf-8")), len(text)
        ntokens = len(tok.encode(text))
        per_char = ntokens / nchars if nchars else 0.0
        if first is None:
            first = per_char
        tax = f"{per_char / first:.2f}" if first else "-"
        rows.append([display_path(path), f"{nbytes:,}", f"{nchars:,}", f"{ntokens:,}",
                     f"{nbytes / ntokens:.2f}" if ntokens else "-", f"{per_char:.3f}", tax])
    print(f"tokenizer {tok.name} ({tok.size:,} tokens)")
    print(table(["file", "bytes", "chars", "tokens", "bytes/token", "tokens/char", "tax"], rows))
    if len(rows) > 1:
        print("tax: tokens per character relative to the first file")
    return 0


def parse_sizes(text):
    try:
        sizes = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        raise CLIError(f"--sizes must be comma-separated integers, like 300,500,1000, "
                       f"not {text!r}", code=2) from None
    if not sizes:
        raise CLIError("--sizes is empty", code=2)
    return sizes


def load_pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CLIError("--plot needs matplotlib, which is not installed (pip install matplotlib); "
                       "without --plot the table is printed") from None
    return plt


def check_writable(path):
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CLIError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(parent):
        raise CLIError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CLIError(f"cannot write {path}: directory {parent} is not writable")


def cmd_curve(args, mod):
    sizes = parse_sizes(args.sizes)
    specials = args.special or []
    least = 256 + len(specials)
    if sizes[0] < least:
        why = f"256 bytes + {len(specials)} special tokens" if specials else "256 single bytes"
        raise CLIError(f"--sizes: {sizes[0]} is below {least} ({why})", code=2)
    for path in args.files:
        check_input_file(path)
    for path in args.eval:
        check_input_file(path, "eval file")
    plt = None
    if args.plot:
        check_writable(args.plot)
        for path in args.files + args.eval:
            if os.path.exists(args.plot) and os.path.samefile(path, args.plot):
                raise CLIError(f"the output {args.plot} is the input {path}")
        plt = load_pyplot()

    start = time.perf_counter()
    # Training is greedy: the first k merges of a longer training are the merges of a
    # training to 256 + k (+ specials), so one training to the largest size gives all.
    full = mod.Tokenizer.train_files(args.files, sizes[-1], workers=args.workers,
                                     pattern=args.pattern, special_tokens=specials,
                                     min_frequency=args.min_frequency)
    took = time.perf_counter() - start
    merges = full.merges
    texts = [read_text(p) for p in args.files]
    train_bytes = sum(len(t.encode("utf-8")) for t in texts)
    evals = [(display_path(p), read_text(p)) for p in args.eval]
    rows = []
    curves = [[] for _ in range(1 + len(evals))]  # bytes per token: training text, evals
    for size in sizes:
        k = min(size - least, len(merges))
        tok = mod.Tokenizer.from_merges(merges[:k], pattern=full.pattern, special_tokens=specials)
        ntok = sum(len(tok.encode(t, allowed_special="all")) for t in texts)
        row = [size, f"{k:,}", f"{ntok:,}"]
        for curve, (nbytes, text) in zip(curves, [(train_bytes, None)] + [
                (len(t.encode("utf-8")), t) for _, t in evals]):
            n = ntok if text is None else len(tok.encode(text, allowed_special="all"))
            curve.append(nbytes / n if n else 0.0)
            row.append(f"{curve[-1]:.3f}")
        rows.append(row)
    names = ", ".join(display_path(p) for p in args.files)
    print(f"training text {names} ({train_bytes:,} bytes); pattern {args.pattern}; "
          f"trained to {sizes[-1]:,} in {took:.2f} s")
    header = ["vocab", "merges", "tokens", "bytes/token"]
    for k, (name, text) in enumerate(evals, 1):
        print(f"eval {k}: {name} ({len(text.encode('utf-8')):,} bytes)")
        header.append(f"eval {k}")
    print(table(header, rows))
    if len(merges) < sizes[-1] - least:
        print(f"training stopped after {len(merges):,} merges (no pair occurs "
              f"{args.min_frequency} times or more)")
    if plt is not None:
        labels = [f"training text ({', '.join(os.path.basename(p) for p in args.files)})"]
        labels += [f"held out ({os.path.basename(name)})" for name, _ in evals]
        plot_curve(plt, args.plot, sizes, curves, labels, args.pattern)
        print(f"wrote {args.plot}")
    return 0


def plot_curve(plt, path, sizes, curves, labels, pattern):
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    markers = "osD^v<>"
    for k, (curve, label) in enumerate(zip(curves, labels)):
        ax.plot(sizes, curve, marker=markers[k % len(markers)],
                linestyle="-" if k == 0 else "--", label=label)
    if sizes[-1] / sizes[0] >= 8:
        ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{s:,}" for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("vocabulary size")
    ax.set_ylabel("bytes per token")
    ax.set_title(f"Bytes per token against vocabulary size (pattern {pattern})")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def cmd_show(args, mod):
    text = get_text(args)
    tok = load_tokenizer(args.tokenizer, mod, args.pattern)
    ids, tokens = tok.tokens(text)
    sys.stdout.write(render(ids, tokens, use_color(args), args.ids, tok.specials))
    print(stats(len(text.encode("utf-8")), len(text), len(ids)))
    return 0


def tiktoken_file(path, pattern, mod):
    """tiktoken's Encoding of a .tiktoken file, its ranks read by tiktoken's own loader (the
    pattern and special tokens as Tokenizer.from_file finds them)."""
    import tiktoken
    import tiktoken.load

    check_input_file(path, "tiktoken file")
    ours = mod.Tokenizer.from_file(path, pattern=pattern)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # a local file: read it, keep no cached copy
    try:
        ranks = tiktoken.load.load_tiktoken_bpe(path)
    except Exception as e:  # tiktoken reports a bad file with assorted exceptions
        raise CLIError(f"{path}: tiktoken cannot read it ({type(e).__name__}: {e})") from e
    finally:
        if saved is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved
    return tiktoken.Encoding(os.path.basename(path), pat_str=ours.pattern, mergeable_ranks=ranks,
                             special_tokens=ours.special_tokens)


def cmd_compare(args, mod):
    text = get_text(args)
    if args.hf is not None:
        check_input_file(args.hf, "tokenizer.json")
    if args.tiktoken is not None:
        check_input_file(args.tiktoken, "tiktoken file")
    ours = load_tokenizer(args.tokenizer, mod, args.pattern)
    others, notes = [], []
    if importlib.util.find_spec("tiktoken") is None:
        notes.append("tiktoken: not installed, skipped")
    elif args.tiktoken is not None:
        enc = tiktoken_file(args.tiktoken, args.pattern, mod)
        others.append(from_tiktoken(f"tiktoken: {display_path(args.tiktoken)}", enc))
    elif not (os.path.isfile(GPT2_VOCAB) and os.path.isfile(GPT2_MERGES)):
        notes.append(f"tiktoken: skipped, GPT-2's files are not in {DATA}")
    else:
        others.append(from_tiktoken("tiktoken: gpt2 (tests/data)",
                                    mod.Tokenizer.from_gpt2(*gpt2_files()).to_tiktoken("gpt2")))
    if args.hf is not None:
        if importlib.util.find_spec("tokenizers") is None:
            notes.append("tokenizers: not installed, skipped")
        else:
            import tokenizers

            try:
                hf = tokenizers.Tokenizer.from_file(args.hf)
            except Exception as e:  # tokenizers raises its own exception type
                raise CLIError(f"{args.hf}: tokenizers cannot read it ({one_line(e)})") from e
            others.append(from_hf(f"tokenizers: {display_path(args.hf)}", hf, mod))

    color = use_color(args)
    nbytes = len(text.encode("utf-8"))
    results = []
    for k, tok in enumerate([ours] + others):
        ids, tokens = tok.tokens(text)
        results.append((tok, ids, tokens))
        title = f"{'ours: ' if k == 0 else ''}{tok.name}: {len(ids):,} tokens"
        print(f"\x1b[1m{title}\x1b[0m" if color else f"== {title}")
        sys.stdout.write(render(ids, tokens, color, args.ids, tok.specials))
        print()
    rows = []
    _, ids0, tokens0 = results[0]
    for k, (tok, ids, tokens) in enumerate(results):
        if k == 0:
            same = "-"
        elif tokens == tokens0:
            same = "same ids" if ids == ids0 else "same tokens, other ids"
        else:
            same = f"differ from byte {first_difference(tokens, tokens0):,}"
        rows.append([("ours: " if k == 0 else "") + tok.name, f"{len(ids):,}",
                     f"{nbytes / len(ids):.2f}" if ids else "-", same])
    print(table(["tokenizer", "tokens", "bytes/token", "vs ours"], rows, right=[1, 2]))
    for note in notes:
        print(note)
    return 0


def first_difference(a, b):
    """The byte offset of the first token boundary where two tokenizations differ."""
    pos = 0
    for x, y in zip(a, b):
        if x != y:
            return pos
        pos += len(x)
    return pos


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit status 2
        raise CLIError(f"{message} (see --help)", code=2)


def build_parser():
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                       epilog="run `analyze.py COMMAND --help` for each command's options")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def sub_parser(name, help):
        return sub.add_parser(name, help=help, description=help)

    c = sub_parser("compress", "bytes per token and tokens per character of several files")
    c.add_argument("tokenizer", metavar="TOKENIZER")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.add_argument("--pattern", help="the pattern for a .tiktoken file or GPT-2 directory")

    c = sub_parser("curve", "bytes per token against vocabulary size")
    c.add_argument("files", nargs="+", metavar="FILE", help="the training text")
    c.add_argument("--sizes", default="300,500,1000,2000",
                   help="vocabulary sizes, comma-separated (default 300,500,1000,2000)")
    c.add_argument("--eval", action="append", default=[], metavar="FILE",
                   help="a held-out text to measure as well (repeatable)")
    c.add_argument("--pattern", default="gpt2", help="pre-tokenization pattern (default gpt2)")
    c.add_argument("--special", action="append", metavar="TOKEN", help="a special token")
    c.add_argument("--min-frequency", type=int, default=2, metavar="N")
    c.add_argument("--workers", type=int, metavar="N")
    c.add_argument("--plot", metavar="PNG", help="also draw the curve (needs matplotlib)")

    for name, help in (("show", "a text's token boundaries"),
                       ("compare", "a text tokenized by this tokenizer, tiktoken and tokenizers")):
        c = sub_parser(name, help)
        c.add_argument("tokenizer", metavar="TOKENIZER")
        c.add_argument("text", nargs="?", metavar="TEXT")
        c.add_argument("--file", "-f", metavar="F", help="read the text from a file")
        c.add_argument("--ids", action="store_true", help="show each token's id")
        c.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                       help="colour the tokens (default: when stdout is a terminal)")
        c.add_argument("--no-color", action="store_true", help="same as --color never")
        if name == "show":
            c.add_argument("--pattern", help="the pattern for a .tiktoken file or GPT-2 directory")
        else:
            c.add_argument("--tiktoken", metavar="FILE",
                           help="compare with this .tiktoken file (default: GPT-2 from tests/data)")
            c.add_argument("--pattern",
                           help="the pattern for a .tiktoken file (default: its sidecar, else "
                                "gpt2) or GPT-2 directory")
            c.add_argument("--hf", metavar="JSON", help="compare with this tokenizer.json")
    return p


COMMANDS = {"compress": cmd_compress, "curve": cmd_curve, "show": cmd_show,
            "compare": cmd_compare}


def main(argv=None):
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # argparse gives an optional positional (TEXT) nothing when an option comes between
    # it and TOKENIZER (`show gpt2 --ids "some text"`): take it from the leftovers
    if (extra and getattr(args, "text", "") is None and not extra[0].startswith("-")
            and args.command in ("show", "compare")):
        args.text = extra.pop(0)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    mod = import_backend()
    if getattr(args, "workers", None) is not None and args.workers < 1:
        raise CLIError(f"--workers must be at least 1, got {args.workers}", code=2)
    return COMMANDS[args.command](args, mod)


def run(argv=None):
    """main(argv), with errors (and warnings) as one line on stderr: the exit status."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *rest, **kw: sys.stderr.write(
            f"{PROG}: warning: {one_line(message)}\n")
        try:
            return main(argv)
        except CLIError as e:
            code, message = e.code, str(e)
        except (ValueError, TypeError, OSError, ImportError) as e:
            if os.environ.get("BPE_DEBUG"):
                raise
            code, message = 1, str(e) or type(e).__name__
    sys.stderr.write(f"{PROG}: error: {one_line(message)}\n")
    return code


if __name__ == "__main__":
    sys.exit(run())
