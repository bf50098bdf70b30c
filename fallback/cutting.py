"""Reading a corpus: cutting files into chunks at pre-token boundaries, gzip
corpora, JSON lines."""

from __future__ import annotations as _annotations

import collections as _collections
import os as _os

import regex as _regex

from .counting import _count_into
from .files import _INFLATE_STEP, _inflate_steps
from .patterns import _check_specials, _special_regex, resolve_pattern
from .programs import _cut_kind
from .util import _check_int, _warn


def _read_bytes(path, start, end, opener=open):
    """Bytes [start, end) of a file; `opener(path, "rb")` opens it (a Dask
    worker's opener reads a remote file's range it fetched)."""
    with opener(path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


def _read_range(path, start, end, opener=open):
    """The text of bytes [start, end) of a UTF-8 file (bad bytes -> U+FFFD, with a warning)."""
    data = _read_bytes(path, start, end, opener)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        _warn(f"{path}: invalid UTF-8 at byte {start + e.start} (and maybe elsewhere); such "
              f"bytes are read as U+FFFD")
        text = data.decode("utf-8", "replace")
    return text


_COUNT_PIECE = 1 << 20

# train_files' unit of work: bytes [start, end) of a file, "text" or "jsonl"
_CountJob = _collections.namedtuple("_CountJob", "path start end kind")
# what every count job is counted with: the pattern, the special tokens (split out and
# never counted) and the field of a JSON record that holds its text
_CountOptions = _collections.namedtuple("_CountOptions", "pattern specials text_field")


def _job_texts(job, options, opener=open):
    """The documents of a count job, a list per piece: a text file's range
    is read in pieces of about _COUNT_PIECE bytes cut where its pre-tokens do
    not change (as the jobs are), a JSON lines range in pieces of whole
    lines, each record one document: a job's memory is a piece, not its text."""
    path, start, end, kind = job
    jsonl = kind == "jsonl"
    cut_re = _LINE_CUT if jsonl else _cut_kind(options.pattern, options.specials)
    with opener(path, "rb") as f:
        pieces = _ranges(f, end, start, end, _COUNT_PIECE, cut_re)
    for a, b in pieces:
        if jsonl:
            yield list(read_jsonl(_read_bytes(path, a, b, opener), text_field=options.text_field,
                                  name=path, offset=a))
        else:
            yield [_read_range(path, a, b, opener)]


def _count_job(job, options, core, counter, opener=open):
    """Count the pre-tokens of bytes [start, end) of a file into `counter`
    (a core's)."""
    special_re = _special_regex(options.specials)
    for texts in _job_texts(job, options, opener):
        for text in texts:
            _count_into(counter, text, core.repair, special_re)


def _find_cut(f, pos, size, cut_re):
    """First offset >= pos where a file may be cut without changing its
    pre-tokens (see _FILE_CUTS), or None.  Cuts fall between ASCII bytes,
    never inside a UTF-8 sequence."""
    window = 1 << 16
    while pos < size:
        f.seek(pos - 1)
        data = f.read(window + 2)
        m = cut_re.search(data, 1)
        if m is not None and pos - 1 + m.end() < size:
            return pos - 1 + m.end()
        pos += window
    return None


_LINE_CUT = _regex.compile(rb"\n")  # JSON lines: after any line feed


def _ranges(f, size, start, end, chunk_size, cut_re):
    """(start, end) ranges covering bytes [start, end) of an open file, each
    about `chunk_size` bytes, cut only where `cut_re` allows (None: no cut)."""
    ranges = []
    if cut_re is not None:
        while start + chunk_size < end:
            cut = _find_cut(f, start + chunk_size, end, cut_re)
            if cut is None:
                break
            ranges.append((start, cut))
            start = cut
    ranges.append((start, end))
    return ranges


def _is_cut(f, pos, size, cut_re):
    """Whether a file may be cut at `pos` (its ends always may)."""
    if pos in (0, size):
        return True
    if cut_re is None:
        return False
    f.seek(pos - 1)
    m = cut_re.match(f.read(2))
    return m is not None and m.end() == 1


def file_cuts(file, chunk_size, *, pattern="gpt2", special_tokens=(), jsonl=False):
    r"""Cut a file into byte ranges of about `chunk_size` bytes that can be
    read, counted and encoded apart: the ranges' pre-tokens are those of the
    whole text (the rule ``train_files`` and ``encode_files`` use), or, with
    ``jsonl=True``, each range holds whole lines.  A custom pattern is cut
    between an ASCII letter or digit and a line feed where it is of the GPT
    family (``pattern_program``) and that is safe for it, else not at all,
    as ``"bytes"``.  `file`: a path, or a binary file open for reading.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("one line\nanother line\n" * 3)
    >>> file_cuts(path, 10)
    [(0, 21), (21, 43), (43, 65), (65, 66)]
    >>> file_cuts(path, 10, pattern=r"\w+|\W")
    [(0, 21), (21, 43), (43, 65), (65, 66)]
    >>> file_cuts(path, 10, pattern=r"\w+\n?|\W")   # a word takes the line feed after it
    [(0, 66)]
    """
    if jsonl:
        cut_re = _LINE_CUT
    else:
        cut_re = _cut_kind(resolve_pattern(pattern), _check_specials(special_tokens))
    _check_int("chunk_size", chunk_size, 1)
    if isinstance(file, (str, bytes, _os.PathLike)):
        if not _os.path.isfile(file):  # a FIFO would block open(), /dev/zero look empty
            raise ValueError(f"no such file: {file!r}" if not _os.path.exists(file)
                             else f"{file!r} is not a regular file")
        with open(file, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            _not_gzip(f, _os.fsdecode(file))
            return _ranges(f, size, 0, size, chunk_size, cut_re)
    size = file.seek(0, _os.SEEK_END)
    _not_gzip(file, getattr(file, "name", "the file"))
    return _ranges(file, size, 0, size, chunk_size, cut_re)


def _not_gzip(f, name):
    """file_cuts' ranges are of the file's own bytes: a gzip stream cannot be
    read from the middle (train_files and encode_files inflate it first)."""
    f.seek(0)
    if f.read(2) == b"\x1f\x8b":
        raise ValueError(f"{name}: a gzip file cannot be cut into byte ranges read apart; "
                         f"inflate it first (train_files and encode_files read it whole)")


def _file_jobs(paths, chunk_size, pattern, specials, kinds):
    text_cut = _cut_kind(pattern, specials)
    jobs = []
    for path, kind in zip(paths, kinds):
        with open(path, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            cut_re = _LINE_CUT if kind == "jsonl" else text_cut
            jobs += [_CountJob(path, a, b, kind)
                     for a, b in _ranges(f, size, 0, size, chunk_size, cut_re)]
    return jobs


def _check_workers(workers):
    if workers is None:
        return _os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    return workers


def _plain_name(path):
    """A corpus file's name less a ".gz" (what it holds once inflated)."""
    return path[:-3] if path.lower().endswith(".gz") else path


def _is_gzip(path):
    """Whether a corpus file is gzip: named *.gz, or starting with gzip's magic
    bytes (which no UTF-8 text starts with)."""
    if path.lower().endswith(".gz"):
        return True
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


class _Inflated:
    """``with _Inflated(paths) as paths:`` the corpus files, each gzip one
    (see _is_gzip) inflated by the loaders' stepwise reader into a temporary
    file of its name less ".gz" (removed at the end), so that it is read, cut
    and counted as the plain file would be: offsets are the inflated text's.
    ``name(path)`` gives back the path the caller named, and a ValueError
    raised inside names the caller's files, not the temporary ones."""

    live = {}  # every temporary file of this process's _Inflated -> the path it inflates

    def __init__(self, paths):
        self.paths = list(paths)
        self.names = {}
        self.directory = None

    def __enter__(self):
        out = []
        try:
            for path in self.paths:
                out.append(self._inflate(path) if _is_gzip(path) else path)
        except BaseException:
            self._remove()
            raise
        return out

    def _inflate(self, path):
        import tempfile

        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="bpe-inflated-")
        base = _os.path.basename(_plain_name(path))
        tmp = _os.path.join(tempfile.mkdtemp(dir=self.directory), base or "corpus")
        with open(path, "rb") as f, open(tmp, "wb") as out:
            for piece in _inflate_steps(iter(lambda: f.read(_INFLATE_STEP), b""), path):
                out.write(piece)
        self.names[tmp] = self.live[tmp] = path
        return tmp

    def name(self, path):
        return self.names.get(path, path)

    def _remove(self):
        for tmp in self.names:
            self.live.pop(tmp, None)
        if self.directory is not None:
            import shutil

            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __exit__(self, kind, value, traceback):
        self._remove()
        if isinstance(value, ValueError) and self.names:
            text = str(value)
            for tmp, path in self.names.items():
                text = text.replace(tmp, path)
            if text != str(value):
                raise ValueError(text) from None
        return False


_JSONL_SUFFIXES = (".jsonl", ".ndjson")


def _split_by_cut(f, pos, needles):
    """The first of `needles` (bytes) that a cut of file `f` at `pos` would
    split, as text; None if none."""
    reach = max(map(len, needles)) - 1
    low = max(pos - reach, 0)
    f.seek(low)
    window = f.read(pos + reach - low)
    for s in needles:
        i = window.find(s, max(pos - low - len(s) + 1, 0))
        if i != -1 and low + i < pos:
            return s.decode("utf-8", "surrogatepass")
    return None


def read_jsonl(data, *, text_field="text", name="<data>", offset=0):
    r"""Yield the `text_field` of each record of JSON lines, the documents
    ``encode_files`` reads: `data` is bytes, or a binary file (read line by
    line).  Blank lines are skipped; a line that is not a JSON object with a
    string `text_field` is a ValueError naming `name` and the line's byte
    offset (counted from `offset`).

    >>> list(read_jsonl(b'{"text": "a cat", "id": 1}\n\n{"text": "a dog"}\n'))
    ['a cat', 'a dog']
    """
    import json

    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, not {type(text_field).__name__}")
    whole = isinstance(data, (bytes, bytearray))
    lines = data.split(b"\n") if whole else data  # a file's lines keep their line feeds
    pos = offset
    for line in lines:
        where, pos = pos, pos + len(line) + whole
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as e:
            why = "not UTF-8" if isinstance(e, UnicodeDecodeError) else "not JSON"
            raise ValueError(f"{name}: the line at byte {where} is {why} "
                             f"({' '.join(str(e).split())[:80]})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{name}: the line at byte {where} is a JSON "
                             f"{type(record).__name__}, not an object")
        text = record.get(text_field)
        if not isinstance(text, str):
            raise ValueError(f"{name}: the line at byte {where} has no string field {text_field!r}"
                             + ("" if text is None else f" (it is {json.dumps(text)[:40]})"))
        yield text
