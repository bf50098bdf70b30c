"""bpe_fallback: a byte-level BPE tokenizer in one pure-Python file.

Train a vocabulary on your own corpus, encode and decode text with it, and read
and write the files of GPT-2 (vocab.json + merges.txt), tiktoken and Hugging
Face ``tokenizers``.  This module needs only the standard library and
``regex``; it is the reference implementation of the package ``bpe``, whose
compiled core gives the same merges, vocabulary and ids, only faster.  Copy
this file into a project to vendor the tokenizer.

>>> tok = Tokenizer.train("low lower lowest " * 20, 260, pattern="words")
>>> tok.merges[:2]
[(b'o', b'w'), (b'l', b'ow')]
>>> tok.decode(tok.encode("slowest")) == "slowest"
True

The training rule, exactly (both backends, every entry point):

1. The corpus is split on the special tokens (longest first); special-token
   text never merges.
2. Each piece is split by the pattern into pre-tokens; a pre-token's UTF-8
   bytes are its initial symbols; counting is over the multiset of pre-tokens.
3. Each step takes the adjacent symbol pair with the highest count (every
   adjacent position counts, weighted by the pre-token's count); ties go to the
   greatest ``(left_bytes, right_bytes)``.  A count below ``min_frequency``
   stops training.  Every non-overlapping occurrence is merged, left to right.
4. Training stops at ``vocab_size`` (256 bytes + merges + specials) or when no
   pair is left.  Pairs whose token would exceed ``max_token_bytes`` are never
   chosen.
"""

from __future__ import annotations

import base64
import collections.abc as _abc
import hashlib
import heapq
import json
import os
import signal
import stat
import sys
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import regex

__all__ = ["Tokenizer", "count_pretokens", "PATTERNS", "BACKEND", "__version__"]

__version__ = "0.1.0"
BACKEND = "python"

# --------------------------------------------------------------------------
# Pre-tokenization patterns
# --------------------------------------------------------------------------

PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "words": r"""\S+\s?|\s+""",
    "bytes": r"""[\s\S]+""",
}

# Where a file may be cut without changing its pre-tokens: a place no
# pre-token spans, whose left part ends the same way at the end of the text.
# GPT-2: after printable ASCII that a line break follows (a run of letters,
# digits or punctuation stops at white space).  cl100k/o200k: the same after an
# ASCII letter or digit only (their punctuation runs take the line breaks
# along).  words: after a line feed that printable ASCII follows.  Custom
# patterns and "bytes" are never cut inside a file.
_FILE_CUTS = {
    PATTERNS["gpt2"]: regex.compile(rb"[\x21-\x7e](?=[\r\n])"),
    PATTERNS["cl100k"]: regex.compile(rb"[0-9A-Za-z](?=[\r\n])"),
    PATTERNS["o200k"]: regex.compile(rb"[0-9A-Za-z](?=[\r\n])"),
    PATTERNS["words"]: regex.compile(rb"\n(?=[\x21-\x7e])"),
}


def resolve_pattern(pattern):
    """Return the regex string for a pattern name, None, or a custom regex.

    >>> resolve_pattern("words")
    '\\\\S+\\\\s?|\\\\s+'
    >>> resolve_pattern(None) == resolve_pattern("bytes")
    True
    """
    if pattern is None:
        return PATTERNS["bytes"]
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or None, not {type(pattern).__name__}")
    pattern = PATTERNS.get(pattern, pattern)
    _compile_pattern(pattern)
    return pattern


_compiled = {}


def _compile_pattern(pattern):
    rx = _compiled.get(pattern)
    if rx is None:
        try:
            rx = regex.compile(pattern)
        except (regex.error, TypeError, ValueError, OverflowError) as e:
            raise ValueError(f"invalid pattern {pattern!r}: {e}") from None
        _compiled[pattern] = rx
    return rx


def _pretokenizer(rx):
    """text -> list of pre-tokens: whole matches, even when a custom pattern
    has capture groups (findall would give the groups)."""
    if rx.groups == 0:
        return rx.findall
    return lambda text: [m.group() for m in rx.finditer(text)]


def _cut_kind(pattern, specials):
    """The regex (over bytes) whose match ends mark safe cuts, or None.  A
    special token with a line break in it could straddle a cut: none then."""
    if any("\n" in s or "\r" in s for s in specials):
        return None
    return _FILE_CUTS.get(pattern)


def _special_regex(specials):
    """A regex matching any of `specials`, the longest first at each place."""
    if not specials:
        return None
    alts = sorted(set(specials), key=lambda s: (-len(s), s))
    return regex.compile("|".join(regex.escape(s) for s in alts))


def _check_specials(special_tokens):
    """The special tokens as a tuple of str, in the order given (a sequence, or
    a mapping's keys).  A set has no order, so the ids it would give change
    from run to run: TypeError."""
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError(f"special_tokens must be a sequence of str, not a {type(special_tokens).__name__}")
    if isinstance(special_tokens, _abc.Set) and not isinstance(special_tokens, _abc.KeysView):
        raise TypeError("special_tokens must be a list (or another sequence), not a "
                        f"{type(special_tokens).__name__}: a set has no order, so the ids it "
                        "gives would change from run to run")
    try:
        specials = tuple(special_tokens)
    except TypeError:
        raise TypeError(f"special_tokens must be a sequence of str, not "
                        f"{type(special_tokens).__name__}") from None
    seen = set()
    for s in specials:
        _check_special_text(s)
        if s in seen:
            raise ValueError(f"special token {_short(s)} is given twice")
        seen.add(s)
    return specials


def _check_special_text(s):
    if not isinstance(s, str):
        raise TypeError(f"special_tokens must hold str, not {type(s).__name__}: {_short(s)}")
    if not s:
        raise ValueError("special tokens must not be empty")
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"special token {_short(s)} holds a lone surrogate "
                             f"(U+{ord(s[e.start]):04X}), which has no UTF-8 bytes") from None


def _short(value, limit=60):
    """repr(value), cut to about `limit` characters for error messages."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} long)" if hasattr(value, "__len__") else ""
    return text[:limit] + "..." + size


def _repair(text):
    """Replace lone surrogates by U+FFFD (as tiktoken does); check the type."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, not {type(text).__name__}")
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# --------------------------------------------------------------------------
# GPT-2's printable form of bytes (vocab.json, merges.txt, tokenizer.json and
# the native format all write tokens this way)
# --------------------------------------------------------------------------


def _make_byte_unicode():
    printable = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    to_char, shifted = [], 0
    for b in range(256):
        if b in printable:
            to_char.append(chr(b))
        else:
            to_char.append(chr(256 + shifted))
            shifted += 1
    return to_char


_BYTE_TO_CHAR = _make_byte_unicode()
_ENCODE_TABLE = {b: c for b, c in enumerate(_BYTE_TO_CHAR)}
# every char that is not a valid printable form maps to one latin-1 can't encode
_DECODE_TABLE = {ord(c): chr(b) for b, c in enumerate(_BYTE_TO_CHAR)}
for _b in range(256):
    if _BYTE_TO_CHAR[_b] != chr(_b):
        _DECODE_TABLE[_b] = "\U0010ffff"


def token_to_str(token):
    """GPT-2's printable form of a token's bytes: ``b" the"`` -> ``"Ġthe"``."""
    return token.decode("latin-1").translate(_ENCODE_TABLE)


def str_to_token(text):
    """Inverse of token_to_str; ValueError for text that is not such a form."""
    try:
        return text.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"{_short(text)} is not a byte-level token (GPT-2's byte-to-unicode form)") from None


# --------------------------------------------------------------------------
# Counting pre-tokens
# --------------------------------------------------------------------------


def _count_text(counter, text, findall, special_re):
    """Add the pre-tokens of one document to `counter` (str -> count)."""
    text = _repair(text)
    if special_re is None:
        counter.update(findall(text))
    else:
        for piece in special_re.split(text):
            if piece:
                counter.update(findall(piece))


def _bytes_counts(counter):
    counter.pop("", None)
    return {k.encode("utf-8"): v for k, v in counter.items()}


def count_pretokens(texts, *, pattern="gpt2", special_tokens=()):
    """Count the pre-tokens of `texts` (a str or an iterable of str documents).

    This is the counting step of training: counts from several workers merge
    by addition and feed ``Tokenizer.train_from_counts``.

    >>> sorted(count_pretokens(["a cat", "a dog"]).items())
    [(b' cat', 1), (b' dog', 1), (b'a', 2)]
    """
    pattern = resolve_pattern(pattern)
    findall = _pretokenizer(_compile_pattern(pattern))
    special_re = _special_regex(_check_specials(special_tokens))
    counter = Counter()
    if isinstance(texts, str):
        texts = (texts,)
    for text in texts:
        _count_text(counter, text, findall, special_re)
    return _bytes_counts(counter)


def _read_range(path, start, end):
    """The text of bytes [start, end) of a UTF-8 file (bad bytes -> U+FFFD, with a warning)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        warnings.warn(f"{path}: invalid UTF-8 at byte {start + e.start} (and maybe later); "
                      f"such bytes are read as U+FFFD", stacklevel=2)
        text = data.decode("utf-8", "replace")
    return text


def _count_range(job):
    """Worker: count the pre-tokens of bytes [start, end) of a file."""
    path, start, end, pattern, specials = job
    return count_pretokens(_read_range(path, start, end), pattern=pattern, special_tokens=specials)


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


def _file_jobs(paths, chunk_size, pattern, specials):
    kind = _cut_kind(pattern, specials)
    jobs = []
    for path in paths:
        size = os.path.getsize(path)
        start = 0
        if kind is not None and size > chunk_size:
            with open(path, "rb") as f:
                while start + chunk_size < size:
                    cut = _find_cut(f, start + chunk_size, size, kind)
                    if cut is None:
                        break
                    jobs.append((path, start, cut, pattern, specials))
                    start = cut
        jobs.append((path, start, size, pattern, specials))
    return jobs


def _count_files(paths, pattern, specials, workers, chunk_size, count_job, merge=None):
    """Count the pre-tokens of files: `count_job` counts one job (a safe byte
    range) in a worker, `merge` sums the jobs' results into bytes -> count."""
    merge = merge or _merge_counts
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    for p in paths:
        if not os.path.isfile(p):
            raise ValueError(f"no such file: {p!r}")
    if workers is None:
        workers = os.cpu_count() or 1
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    if chunk_size is None:
        total = sum(os.path.getsize(p) for p in paths)
        # memory follows the chunk, not the corpus: at most 16 MB of text per worker
        chunk_size = min(max(total // (4 * workers), 1 << 20), 1 << 24)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
    jobs = _file_jobs(paths, chunk_size, pattern, specials)
    if workers == 1 or len(jobs) == 1:
        return merge(map(count_job, jobs))
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=_worker_init)
    try:
        counts = merge(pool.map(count_job, jobs))
    except BaseException:
        # Ctrl-C or a failed job: stop every worker now, leave no process behind
        _stop_pool(pool)
        raise
    pool.shutdown()
    return counts


def _worker_init():
    """Workers leave Ctrl-C to the parent, which stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(pool):
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()


def _merge_counts(parts):
    """Sum count dicts (Counter.update adds)."""
    total = Counter()
    for part in parts:
        total.update(part)
    return total


# --------------------------------------------------------------------------
# Learning merges
# --------------------------------------------------------------------------


def _desc_key(token):
    """A str whose ascending order is the descending order of `token`
    (a terminator above every byte makes a prefix sort after its extensions)."""
    return token.translate(_INVERT).decode("latin-1") + "\u0100"


_INVERT = bytes(range(255, -1, -1))


class _Progress:
    def __init__(self, enabled, total, what):
        self.enabled, self.total, self.what = enabled, total, what
        self.start = self.last = time.monotonic()

    def update(self, done, force=False):
        if not self.enabled:
            return
        now = time.monotonic()
        if force or now - self.last >= 0.5:
            self.last = now
            rate = done / max(now - self.start, 1e-9)
            sys.stderr.write(f"\r{self.what}: {done}/{self.total} ({rate:.0f}/s)")
            if force:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _learn_merges(counts, n_merges, min_frequency, max_token_bytes, progress=False):
    """The merge loop: `counts` maps pre-token bytes -> count.  Returns the
    merges as pairs of ids (0..255 are bytes, 256 + k the k-th merge).  It
    empties `counts` (the callers' own dict) once it has copied them.

    Every symbol of every distinct pre-token is a position in flat arrays
    linked as lists; each pair keeps its count and the positions where it
    starts, so a merge touches only its own occurrences (a 500 KB pre-token is
    no worse than many short ones).  A heap with lazy invalidation picks the
    next pair by (count, greatest bytes)."""
    tokens = [bytes([i]) for i in range(256)]
    keys = [_desc_key(t) for t in tokens]
    sym, nxt, prv, weight = [], [], [], []
    pair_count, where = {}, {}
    for word, count in counts.items():
        n = len(word)
        if n < 2 or count <= 0:
            continue
        base = len(sym)
        sym.extend(word)
        nxt.extend(range(base + 1, base + n))
        nxt.append(-1)
        prv.append(-1)
        prv.extend(range(base, base + n - 1))
        weight.extend([count] * n)
        for pos, pair in enumerate(zip(word, word[1:]), base):
            pair_count[pair] = pair_count.get(pair, 0) + count
            occ = where.get(pair)
            if occ is None:
                where[pair] = [pos]
            else:
                occ.append(pos)
    counts.clear()  # every caller passes its own dict; free it before the loop
    limit = max_token_bytes if max_token_bytes is not None else float("inf")
    heap = [(-c, keys[a], keys[b], a, b) for (a, b), c in pair_count.items() if limit >= 2]
    heapq.heapify(heap)
    merges = []
    report = _Progress(progress, n_merges, "merges")

    def drop(pair, n):
        c = pair_count.get(pair, 0) - n
        if c > 0:
            pair_count[pair] = c
        else:
            pair_count.pop(pair, None)
            where.pop(pair, None)

    while len(merges) < n_merges and heap:
        neg, _, _, a, b = heap[0]
        c = pair_count.get((a, b), 0)
        if c != -neg:
            if c > 0:
                heapq.heapreplace(heap, (-c, keys[a], keys[b], a, b))
            else:
                heapq.heappop(heap)
            continue
        if c < min_frequency:
            break
        heapq.heappop(heap)
        new = 256 + len(merges)
        merges.append((a, b))
        tokens.append(tokens[a] + tokens[b])
        keys.append(_desc_key(tokens[new]))
        positions = where.pop((a, b))
        positions.sort()
        born = set()
        for p in positions:
            if sym[p] != a:
                continue
            q = nxt[p]
            if q < 0 or sym[q] != b:
                continue
            n = weight[p]
            left, right = prv[p], nxt[q]
            if left >= 0:
                x = sym[left]
                drop((x, a), n)
                pair = (x, new)
                pair_count[pair] = pair_count.get(pair, 0) + n
                where.setdefault(pair, []).append(left)
                born.add(pair)
            if right >= 0:
                y = sym[right]
                drop((b, y), n)
                pair = (new, y)
                pair_count[pair] = pair_count.get(pair, 0) + n
                where.setdefault(pair, []).append(p)
                born.add(pair)
                prv[right] = p
            sym[p] = new
            sym[q] = -1
            nxt[p] = right
        pair_count.pop((a, b), None)
        for x, y in born:
            c = pair_count.get((x, y), 0)
            if c > 0 and len(tokens[x]) + len(tokens[y]) <= limit:
                heapq.heappush(heap, (-c, keys[x], keys[y], x, y))
        report.update(len(merges))
    report.update(len(merges), force=True)
    return merges


# --------------------------------------------------------------------------
# Encoding one pre-token by merge rank
# --------------------------------------------------------------------------


def _bpe_short(ids, pair_rank, rank_pair, rank_id):
    """Merge the lowest-ranked adjacent pair, every non-overlapping occurrence
    left to right, until none is left.  Quadratic; for short pre-tokens."""
    get = pair_rank.get
    while len(ids) > 1:
        best = None
        for pair in zip(ids, ids[1:]):
            r = get(pair)
            if r is not None and (best is None or r < best):
                best = r
        if best is None:
            break
        a, b = rank_pair[best]
        new = rank_id[best]
        out, i, n = [], 0, len(ids)
        while i < n:
            if i + 1 < n and ids[i] == a and ids[i + 1] == b:
                out.append(new)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


def _bpe_long(ids, pair_rank, rank_id):
    """The same result with a heap of (rank, position) over a linked list:
    O(n log n) for long pre-tokens."""
    n = len(ids)
    sym = list(ids)
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    get = pair_rank.get
    heap = []
    for i in range(n - 1):
        r = get((sym[i], sym[i + 1]))
        if r is not None:
            heap.append((r, i))
    heapq.heapify(heap)
    while heap:
        r, p = heapq.heappop(heap)
        q = nxt[p] if sym[p] >= 0 else -1
        if q < 0 or get((sym[p], sym[q])) != r:
            continue
        sym[p] = rank_id[r]
        sym[q] = -1
        right = nxt[q]
        nxt[p] = right
        if right >= 0:
            prv[right] = p
            r2 = get((sym[p], sym[right]))
            if r2 is not None:
                heapq.heappush(heap, (r2, p))
        left = prv[p]
        if left >= 0:
            r2 = get((sym[left], sym[p]))
            if r2 is not None:
                heapq.heappush(heap, (r2, left))
    return [s for s in sym if s >= 0]


_SHORT = 48            # pre-tokens up to this many bytes use _bpe_short
_CACHE_SIZE = 1 << 16  # pre-token -> ids entries before the cache is cleared
_CACHE_MAX_LEN = 64    # longer pre-tokens are not cached


# --------------------------------------------------------------------------
# The tokenizer
# --------------------------------------------------------------------------


_MAX_ID = 1 << 31  # ids are int32 in the compiled core


def _json(text, where):
    """json.loads, with every failure (nesting too deep included) as ValueError."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{where}: not valid JSON: {str(e)[:100]}") from None


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


class Tokenizer:
    """A byte-level BPE tokenizer: a pre-tokenization pattern, mergeable tokens
    (bytes -> id), the ordered merges and special tokens (str -> id).

    >>> tok = Tokenizer.train("the cat sat on the mat. " * 10, 270, special_tokens=["<|end|>"])
    >>> ids = tok.encode("the cat<|end|>", allowed_special="all")
    >>> ids[-1] == tok.special_tokens["<|end|>"]
    True
    >>> tok.decode(ids)
    'the cat<|end|>'
    """

    # ---- construction ---------------------------------------------------

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "make a Tokenizer with Tokenizer.train, train_files, train_from_counts, "
            "from_merges, load, from_gpt2, from_tiktoken or from_huggingface"
        )

    @classmethod
    def _create(cls, pattern, tokens, merges, specials):
        """Validate a model and build the tables encoding needs.

        pattern: regex str; tokens: dict id -> bytes (not the specials);
        merges: list of (bytes, bytes), each result in `tokens`;
        specials: dict str -> id, ids not in `tokens`."""
        self = object.__new__(cls)
        self._pattern = pattern
        self._rx = _compile_pattern(pattern)
        self._findall = _pretokenizer(self._rx)
        encoder = {}
        for i, t in tokens.items():
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
                raise ValueError(f"token id {_short(i)} is not an int in [0, 2**31)")
            if not isinstance(t, bytes) or not t:
                raise ValueError(f"token {i} must be non-empty bytes, not {_short(t)}")
            other = encoder.setdefault(t, i)
            if other != i:
                raise ValueError(f"token {_short(t)} appears twice, as ids {other} and {i}")
        missing = [b for b in range(256) if bytes([b]) not in encoder]
        if missing:
            raise ValueError(f"the vocabulary lacks {len(missing)} single bytes, e.g. 0x{missing[0]:02x}")
        made = {}
        for rank, merge in enumerate(merges):
            if not (isinstance(merge, (tuple, list)) and len(merge) == 2
                    and all(isinstance(x, bytes) for x in merge)):
                raise ValueError(f"merge {rank} must be a pair of bytes, not {_short(merge)}")
            new = encoder.get(merge[0] + merge[1])
            if new is None:
                raise ValueError(f"merge {rank} {_short(merge)}: {_short(merge[0] + merge[1])} is not in "
                                 f"the vocabulary")
            if made.setdefault(new, rank) != rank:
                raise ValueError(f"merge {rank} {_short(merge)} makes {_short(merge[0] + merge[1])} again "
                                 f"(merge {made[new]})")
        pair_rank, rank_pair, rank_id = {}, [], []
        for rank, (left, right) in enumerate(merges):
            merge = (left, right)
            ids = []
            for part in (left, right):
                i = encoder.get(part)
                if i is None:
                    raise ValueError(f"merge {rank} {_short(merge)}: {_short(part)} is not in the vocabulary")
                if made.get(i, -1) >= rank:
                    raise ValueError(f"merge {rank} {_short(merge)} uses {_short(part)}, which a later "
                                     f"merge makes")
                ids.append(i)
            pair = (ids[0], ids[1])
            if pair in pair_rank:
                raise ValueError(f"merge {rank} {_short(merge)} repeats merge {pair_rank[pair]}")
            pair_rank[pair] = rank
            rank_pair.append(pair)
            rank_id.append(encoder[left + right])
        decoder = dict(tokens)
        for s, i in specials.items():
            if not isinstance(s, str) or not s:
                raise ValueError(f"special token {_short(s)} must be a non-empty str")
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
                raise ValueError(f"special token {_short(s)} has a bad id {_short(i)} (ids are ints in "
                                 f"[0, 2**31))")
            if i in decoder:
                raise ValueError(f"special token {_short(s)} has id {i}, which is already taken")
            decoder[i] = s.encode("utf-8")
        self._tokens = dict(tokens)
        self._merges = [tuple(m) for m in merges]
        self._specials = dict(specials)
        self._encoder = encoder
        self._byte_ids = [encoder[bytes([b])] for b in range(256)]
        self._identity_bytes = self._byte_ids == list(range(256))
        self._pair_rank = pair_rank
        self._rank_pair = rank_pair
        self._rank_id = rank_id
        self._decoder = decoder
        self._special_res = {}
        self._init_core()
        return self

    def _init_core(self):
        self._cache = {}

    @classmethod
    def _from_trained(cls, pattern, merge_ids, specials):
        tokens = {i: bytes([i]) for i in range(256)}
        merges = []
        for k, (a, b) in enumerate(merge_ids):
            merges.append((tokens[a], tokens[b]))
            tokens[256 + k] = tokens[a] + tokens[b]
        first = 256 + len(merge_ids)
        return cls._create(pattern, tokens, merges, {s: first + i for i, s in enumerate(specials)})

    # ---- training -------------------------------------------------------

    # the hot loops a compiled backend replaces
    _count = staticmethod(count_pretokens)
    _count_job = staticmethod(_count_range)
    _merge_jobs = staticmethod(_merge_counts)
    _learn = staticmethod(_learn_merges)
    _repair = staticmethod(_repair)

    @staticmethod
    def _train_options(vocab_size, pattern, special_tokens, min_frequency, max_token_bytes):
        pattern = resolve_pattern(pattern)
        specials = _check_specials(special_tokens)
        _check_int("vocab_size", vocab_size, 256 + len(specials))
        _check_int("min_frequency", min_frequency, 0)
        if max_token_bytes is not None:
            _check_int("max_token_bytes", max_token_bytes, 1)
        return pattern, specials

    @classmethod
    def _train_counts(cls, counts, vocab_size, pattern, specials, min_frequency, max_token_bytes, progress):
        n_merges = vocab_size - 256 - len(specials)
        merge_ids = cls._learn(counts, n_merges, min_frequency, max_token_bytes, progress)
        return cls._from_trained(pattern, merge_ids, specials)

    @classmethod
    def train(cls, corpus, vocab_size, *, pattern="gpt2", special_tokens=(), min_frequency=2,
              max_token_bytes=None, progress=False):
        """Train on a str, or an iterable of str documents (streamed; a
        pre-token never spans two documents).

        >>> tok = Tokenizer.train(["hello hello", "hello world"], 258)
        >>> tok.merges
        [(b'l', b'o'), (b'l', b'lo')]
        """
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes)
        counts = cls._count(corpus, pattern=pattern, special_tokens=specials)
        return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress)

    @classmethod
    def train_files(cls, paths, vocab_size, *, workers=None, chunk_size=None, pattern="gpt2",
                    special_tokens=(), min_frequency=2, max_token_bytes=None, progress=False):
        """Train on UTF-8 files: large files are read in chunks cut where no
        pre-token can change, counted in `workers` processes; the merges are
        exactly those of ``train([whole text of each file])``."""
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes)
        counts = _count_files(paths, pattern, specials, workers, chunk_size, cls._count_job,
                              cls._merge_jobs)
        return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress)

    @classmethod
    def train_from_counts(cls, counts, vocab_size, *, pattern="gpt2", special_tokens=(),
                          min_frequency=2, max_token_bytes=None, progress=False):
        """Train on pre-token counts (bytes or str -> int), from any source.

        >>> Tokenizer.train_from_counts({"abab": 3, b"ab": 1}, 257).merges
        [(b'a', b'b')]
        """
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes)
        if not isinstance(counts, _abc.Mapping):
            raise TypeError(f"counts must be a mapping of pre-token (bytes or str) -> int, "
                            f"not {type(counts).__name__}")
        clean = {}
        for word, n in counts.items():
            if isinstance(word, str):
                word = _repair(word).encode("utf-8")
            elif not isinstance(word, bytes):
                raise TypeError(f"pre-tokens must be bytes or str, not {type(word).__name__}")
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"the count of {word!r} must be an int, not {type(n).__name__}")
            if n < 0:
                raise ValueError(f"the count of {word!r} is negative: {n}")
            if n and word:
                clean[word] = clean.get(word, 0) + n
        return cls._train_counts(clean, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress)

    # ---- building from parts ---------------------------------------------

    @classmethod
    def from_merges(cls, merges, *, vocab=None, pattern="gpt2", special_tokens=None):
        """Build from ordered merges (pairs of bytes).  Without `vocab`, ids
        are trained-style (bytes, then 256 + k); with `vocab` (dict id ->
        bytes) its ids are kept.  A special token whose bytes are in vocab
        keeps that id; the others take the next ids.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode("hi"), tok.special_tokens
        ([256], {'<s>': 257})
        """
        pattern = resolve_pattern(pattern)
        if isinstance(merges, (str, bytes)) or not isinstance(merges, _abc.Iterable):
            raise TypeError(f"merges must be a list of (bytes, bytes) pairs, not {type(merges).__name__}")
        merges = [tuple(m) if isinstance(m, (tuple, list)) else m for m in merges]
        for k, m in enumerate(merges):
            if not (isinstance(m, tuple) and len(m) == 2 and all(isinstance(x, bytes) for x in m)):
                raise TypeError(f"merge {k} must be a pair of bytes, not {_short(m)}")
        if vocab is None:
            tokens = {i: bytes([i]) for i in range(256)}
            for k, m in enumerate(merges):
                tokens[256 + k] = m[0] + m[1]
        else:
            if not isinstance(vocab, _abc.Mapping):
                raise TypeError(f"vocab must be a dict of id -> bytes, not {type(vocab).__name__}")
            tokens = dict(vocab)
            for i, t in tokens.items():
                if isinstance(i, bool) or not isinstance(i, int) or not isinstance(t, bytes):
                    raise TypeError(f"vocab must map int ids to bytes, not {_short(i)} -> {_short(t)}")
        return cls._with_specials(pattern, tokens, merges, special_tokens)

    @classmethod
    def _with_specials(cls, pattern, tokens, merges, special_tokens):
        """Give each special token an id: an explicit one (a mapping), the id
        of a token with the same bytes (which then becomes the special), or
        the next free id."""
        tokens = dict(tokens)
        specials = {}
        if isinstance(special_tokens, _abc.Mapping):
            for s, i in special_tokens.items():
                _check_special_text(s)
                if isinstance(i, bool) or not isinstance(i, int):
                    raise TypeError(f"special_tokens must map str to int ids, not {_short(s)} -> {_short(i)}")
                if not 0 <= i < _MAX_ID:
                    raise ValueError(f"special token {_short(s)} has id {i}, outside [0, 2**31)")
                if tokens.get(i) == s.encode("utf-8"):
                    del tokens[i]
                specials[s] = i
        else:
            by_bytes = {t: i for i, t in tokens.items()}
            names = _check_specials(special_tokens)
            next_id = max(tokens, default=-1) + 1
            for s in names:
                i = by_bytes.get(s.encode("utf-8"))
                if i is not None and i in tokens:
                    del tokens[i]
                else:
                    i = next_id
                    next_id += 1
                specials[s] = i
        return cls._create(pattern, tokens, merges, specials)

    # ---- encoding -------------------------------------------------------

    def _bpe(self, piece):
        """Ids of one pre-token (str), through the cache."""
        data = piece.encode("utf-8")
        i = self._encoder.get(data)
        if i is not None:
            ids = [i]
        else:
            ids = list(data) if self._identity_bytes else [self._byte_ids[b] for b in data]
            if len(ids) <= _SHORT:
                ids = _bpe_short(ids, self._pair_rank, self._rank_pair, self._rank_id)
            else:
                ids = _bpe_long(ids, self._pair_rank, self._rank_id)
        if len(piece) <= _CACHE_MAX_LEN:
            cache = self._cache
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[piece] = ids
        return ids

    def _encode_pieces(self, pieces, out):
        cache_get = self._cache.get
        bpe = self._bpe
        extend = out.extend
        for piece in pieces:
            ids = cache_get(piece)
            if ids is None:
                ids = bpe(piece)
                cache_get = self._cache.get
            extend(ids)
        return out

    def _encode_chunk(self, text, out):
        """Encode text that holds no special tokens (already repaired)."""
        return self._encode_pieces(self._findall(text), out)

    def encode_ordinary(self, text):
        """Encode `text`, treating special-token text as ordinary text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_ordinary("hi<s>")
        [256, 60, 115, 62]
        """
        return self._encode_chunk(self._repair(text), [])

    def _policy(self, allowed_special, disallowed_special):
        specials = self._specials
        if allowed_special == "all":
            allowed = frozenset(specials)
        else:
            if isinstance(allowed_special, str):
                raise TypeError('allowed_special must be "all" or a set of str')
            allowed = frozenset(allowed_special)
            unknown = allowed - specials.keys()
            if unknown:
                raise ValueError(f"allowed_special names unknown special tokens: {sorted(unknown)!r}")
        if disallowed_special == "all":
            disallowed = frozenset(specials) - allowed
        else:
            if isinstance(disallowed_special, str):
                raise TypeError('disallowed_special must be "all" or a collection of str')
            disallowed = frozenset(disallowed_special)
        return allowed, disallowed

    def _special_re(self, names):
        rx = self._special_res.get(names)
        if rx is None:
            rx = self._special_res[names] = _special_regex(names)
        return rx

    def _check_disallowed(self, text, disallowed):
        if disallowed:
            m = self._special_re(disallowed).search(text, concurrent=True)
            if m:
                raise ValueError(
                    f"text contains the disallowed special token {m.group()!r}; pass "
                    f"allowed_special={{{m.group()!r}}} to encode it as a special token, or "
                    f"disallowed_special=() to encode it as ordinary text"
                )

    def _encode_allowed(self, text, allowed, out):
        """Append the ids of `text` to `out`, splitting on the allowed special
        tokens; return the list (a compiled backend may return a new one when
        `out` is empty: use the result)."""
        if not allowed:
            return self._encode_chunk(text, out)
        specials = self._specials
        pos = 0
        for m in self._special_re(allowed).finditer(text):
            self._encode_chunk(text[pos:m.start()], out)
            out.append(specials[m.group()])
            pos = m.end()
        return self._encode_chunk(text[pos:], out)

    def encode(self, text, *, allowed_special=frozenset(), disallowed_special="all"):
        """Encode `text` with tiktoken's special-token policy: a disallowed
        special token in the text raises ValueError; allowed ones ("all" or a
        set of names) become their ids; ``disallowed_special=()`` lets them
        through as ordinary text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode("hi<s>", allowed_special={"<s>"})
        [256, 257]
        """
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        text = self._repair(text)
        self._check_disallowed(text, disallowed)
        return self._encode_allowed(text, allowed, [])

    def encode_batch(self, texts, *, num_threads=None, allowed_special=frozenset(),
                     disallowed_special="all"):
        """``[encode(t) for t in texts]`` (the compiled backend runs threads).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_batch(["hi", "ih"])
        [[256], [105, 104]]
        """
        if num_threads is not None:
            _check_int("num_threads", num_threads, 1)
        if isinstance(texts, str):
            raise TypeError("encode_batch expects a list of str, not a str")
        return [self.encode(t, allowed_special=allowed_special, disallowed_special=disallowed_special)
                for t in texts]

    _STREAM_BLOCK = 1 << 14   # characters encode_iterable gathers before it cuts
    _STREAM_MARGIN = 32        # characters kept back so that a cut never changes a pre-token

    def encode_iterable(self, iterable, *, allowed_special=frozenset(), disallowed_special="all"):
        """Yield the ids of ``encode("".join(iterable))``, holding only a small
        window of text: it is cut where no pre-token or special token can
        change (for custom patterns and "bytes", only at special tokens).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> list(tok.encode_iterable(["h", "i h", "i"]))
        [256, 32, 256]
        """
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        if isinstance(iterable, str):
            iterable = (iterable,)
        watch = allowed | disallowed
        watch_re = self._special_re(watch) if watch else None
        margin = self._STREAM_MARGIN + max((len(s) for s in watch), default=0)
        split_pretokens = _cut_kind(self._pattern, ()) is not None
        buf = ""
        for chunk in iterable:
            if not isinstance(chunk, str):
                raise TypeError(f"encode_iterable expects str chunks, not {type(chunk).__name__}")
            buf += chunk
            if len(buf) < self._STREAM_BLOCK:
                continue
            # a high surrogate at the end may pair with the next chunk's low one
            tail = buf[-1] if "\ud800" <= buf[-1] <= "\udbff" else ""
            text = self._repair(buf[:len(buf) - len(tail)])
            cut, out = self._stream_cut(text, margin, split_pretokens, watch_re, allowed, disallowed)
            buf = text[cut:] + tail
            yield from out
        text = self._repair(buf)
        self._check_disallowed(text, disallowed)
        yield from self._encode_allowed(text, allowed, [])

    def _stream_cut(self, text, margin, split_pretokens, watch_re, allowed, disallowed):
        """Encode a prefix of `text` after which no later text can change the
        ids; return (its length, its ids).

        Special tokens that start `margin` characters before the end are
        certain, as are pre-tokens of a named pattern that end that far before
        the end of their piece: none of those patterns looks further ahead."""
        limit = len(text) - margin
        out = []
        if limit <= 0:
            return 0, out
        start, end = 0, len(text)
        if watch_re is not None:
            for m in watch_re.finditer(text):
                if m.end() > limit:
                    end = m.start()
                    break
                start = m.end()
        head = text[:start]
        self._check_disallowed(head, disallowed)
        out = self._encode_allowed(head, allowed, out)
        limit = min(limit, end - self._STREAM_MARGIN)
        if not split_pretokens or limit <= start:
            return start, out
        keep, cut = [], start
        for m in self._rx.finditer(text, start, end):
            if m.end() > limit:
                break
            keep.append(m.group())
            cut = m.end()
        self._encode_pieces(keep, out)
        return cut, out

    # ---- decoding -------------------------------------------------------

    def _checked_ids(self, ids):
        """The ids as plain ints; TypeError for a non-int, ValueError for an
        id that is not in the vocabulary."""
        clean = []
        for i in ids:
            if isinstance(i, bool) or not hasattr(i, "__index__"):
                raise TypeError(f"token ids must be ints, not {type(i).__name__}: {i!r}")
            i = i.__index__()
            if i not in self._decoder:
                raise ValueError(f"unknown token id {i}")
            clean.append(i)
        return clean

    def decode_bytes(self, ids):
        """The bytes of a sequence of ids.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_bytes([256, 33])
        b'hi!'
        """
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"ids must be a sequence of int, not {type(ids).__name__}")
        ids = list(ids)
        if set(map(type, ids)) - {int}:
            ids = self._checked_ids(ids)
        try:
            return b"".join(map(self._decoder.__getitem__, ids))
        except KeyError:
            self._checked_ids(ids)
            raise  # pragma: no cover

    def decode(self, ids, errors="replace"):
        """Decode ids to text; invalid UTF-8 (a token split mid-character) is
        handled by `errors` (default: replaced by U+FFFD).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode([256, 33])
        'hi!'
        """
        return self.decode_bytes(ids).decode("utf-8", errors)

    def token_bytes(self, token_id):
        """The bytes of one id.

        >>> Tokenizer.from_merges([(b"h", b"i")]).token_bytes(256)
        b'hi'
        """
        return self.decode_bytes([token_id])

    # ---- properties -----------------------------------------------------

    @property
    def merges(self):
        """The merges, in order, as pairs of bytes."""
        return list(self._merges)

    @property
    def vocab(self):
        """dict id -> bytes, special tokens included as their UTF-8 bytes."""
        return dict(sorted(self._decoder.items()))

    @property
    def special_tokens(self):
        """dict special token -> id."""
        return dict(self._specials)

    @property
    def pattern(self):
        """The pre-tokenization regex."""
        return self._pattern

    @property
    def vocab_size(self):
        """One more than the largest id (the size an embedding table needs)."""
        return max(self._decoder) + 1

    def __repr__(self):
        name = next((k for k, v in PATTERNS.items() if v == self._pattern), "custom")
        return (f"<{type(self).__module__}.Tokenizer vocab_size={self.vocab_size} "
                f"merges={len(self._merges)} specials={len(self._specials)} pattern={name}>")

    # ---- equality and pickling -------------------------------------------

    def _model(self):
        return (self._pattern, self._tokens, self._merges, self._specials)

    def __eq__(self, other):
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self._model() == other._model()

    __hash__ = None

    def __reduce__(self):
        return (_rebuild, (type(self), self._pattern, self._tokens, self._merges, self._specials))

    # ---- files ----------------------------------------------------------

    def save(self, path):
        """Write the native format: versioned UTF-8 text, atomically.

        >>> import os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> path = os.path.join(tempfile.mkdtemp(), "tok.bpe")
        >>> tok.save(path); Tokenizer.load(path) == tok
        True
        """
        _atomic_write(path, _native_dump(self))

    @classmethod
    def load(cls, path):
        """Read a file written by ``save``; ValueError if it is not one."""
        return cls._create(*_native_parse(_read_text(path), path))

    @classmethod
    def from_gpt2(cls, vocab_json, merges_txt, *, special_tokens=None, pattern="gpt2"):
        """Read GPT-2's vocab.json and merges.txt, keeping their ids.

        The two must belong together: every vocab.json entry is a single
        byte, the result of a merge, or a special token.  With
        ``special_tokens=None`` the entries no merge makes are the special
        tokens: for a pair save_gpt2 wrote, all of them (merges.txt's first
        line holds a fingerprint of the pair, checked here); for other files,
        each must look like a special token (``<...>`` or ``[...]``, such as
        GPT-2's ``<|endoftext|>``) or be no join of two other entries -- one
        that is, is a token whose merge line is missing (merges.txt cut short
        or from another vocabulary): ValueError.  `special_tokens`: a list of
        names (their vocab.json ids, or new ids after the largest), or a dict
        name -> id; they must cover every entry no merge makes."""
        pattern = resolve_pattern(pattern)
        return cls._create(pattern, *_gpt2_parse(_read_text(vocab_json), _read_text(merges_txt),
                                                 special_tokens, vocab_json, merges_txt))

    def save_gpt2(self, directory):
        """Write directory/vocab.json and directory/merges.txt, each
        atomically; merges.txt's first line (``#version: 0.2 bpe-pair:...``,
        which other readers skip) holds a fingerprint of both files, so that
        a vocab.json beside a merges.txt of another save is refused on load."""
        vocab, merges = _gpt2_dump(self)
        os.makedirs(directory, exist_ok=True)
        _atomic_write(os.path.join(directory, "vocab.json"), vocab)
        _atomic_write(os.path.join(directory, "merges.txt"), merges)

    @classmethod
    def from_tiktoken(cls, path_or_ranks, *, pattern, special_tokens=None):
        """Read a .tiktoken file (or a dict bytes -> rank); ranks become ids
        and the merges are recovered from the ranks.  `special_tokens`: a
        dict str -> id, or names that take the ids after the largest rank."""
        pattern = resolve_pattern(pattern)
        if isinstance(path_or_ranks, _abc.Mapping):
            ranks = dict(path_or_ranks)
            where = "ranks"
        else:
            ranks = _tiktoken_parse(_read_text(path_or_ranks), path_or_ranks)
            where = path_or_ranks
        tokens, merges = _tiktoken_model(ranks, where)
        if special_tokens is None:
            special_tokens = {}
        return cls._with_specials(pattern, tokens, merges, special_tokens)

    def save_tiktoken(self, path):
        """Write tiktoken's format: one ``base64(token) id`` line per token."""
        _atomic_write(path, _tiktoken_dump(self))

    def to_tiktoken(self, name="bpe"):
        """A ``tiktoken.Encoding`` with the same ids (needs tiktoken)."""
        try:
            import tiktoken
        except ImportError:
            raise ImportError("to_tiktoken needs tiktoken: pip install tiktoken") from None
        _check_rank_order(self)
        for a in self._specials:
            for b in self._specials:
                if a != b and b.startswith(a):
                    raise ValueError(f"special tokens {a!r} and {b!r} start alike; tiktoken does not "
                                     f"match them longest first, so it would encode differently")
        return tiktoken.Encoding(name=name, pat_str=self._pattern,
                                 mergeable_ranks={t: i for i, t in self._tokens.items()},
                                 special_tokens=dict(self._specials))

    def save_huggingface(self, path):
        """Write a tokenizer.json that Hugging Face ``tokenizers`` loads and
        encodes to the same ids.  The pattern is written for its regex engine
        (Oniguruma): classes and Unicode properties as the explicit code
        point ranges this library matches, possessive repeats as atomic
        groups; a pattern that cannot be written with the same meaning (a
        back-reference, \\b, a pattern that can match the empty string, ...) is
        a ValueError."""
        _atomic_write(path, _hf_dump(self))

    @classmethod
    def from_huggingface(cls, path):
        """Read a byte-level BPE tokenizer.json (what save_huggingface writes,
        GPT-2's, or a Split-regex + ByteLevel pre-tokenizer); anything this
        library cannot reproduce exactly raises ValueError saying what: a
        normalizer, a post-processor or decoder other than ByteLevel,
        truncation, padding, dropout, subword prefixes or suffixes, unknown
        fields, a Split regex whose meaning differs between the engines, and,
        with ``ignore_merges: false``, a token its own merges do not rebuild."""
        pattern, tokens, merges, specials, ignore_merges = _hf_parse(_read_text(path), path)
        tok = cls._create(pattern, tokens, merges, specials)
        if not ignore_merges:
            _check_merges_rebuild(tok, path)
        return tok


def _rebuild(cls, pattern, tokens, merges, specials):
    return cls._create(pattern, tokens, merges, specials)


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

# Loaders read at most this many bytes: far above any real vocabulary (o200k's
# .tiktoken file is 3.6 MB, its tokenizer.json about 15 MB), far below what
# would exhaust memory when a path names something endless.
_MAX_FILE_BYTES = 1 << 28

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def _check_regular(path, mode, size):
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{path}: {kind}; tokenizer files must be regular files")
    if size > _MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {_MAX_FILE_BYTES} bytes a tokenizer "
                         f"file may have")


def _read_text(path):
    """The UTF-8 text of a regular file (a leading byte order mark dropped).

    Devices, FIFOs, sockets and directories are refused before anything is
    read (a FIFO is opened without blocking, so a missing writer never hangs
    the caller), and so is a file larger than _MAX_FILE_BYTES."""
    path = os.fspath(path)
    _check_regular(path, *_mode_size(os.stat(path)))
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        _check_regular(path, *_mode_size(os.fstat(fd)))  # the same file as stat() saw
        data = f.read(_MAX_FILE_BYTES + 1)
    if len(data) > _MAX_FILE_BYTES:
        _check_regular(path, stat.S_IFREG, len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _mode_size(st):
    return st.st_mode, st.st_size


def _atomic_write(path, text):
    """Write `text` (UTF-8) to `path` atomically: the data goes to a new file
    in the same directory, which is synced, then renamed over `path`, so a
    crash leaves the old file or the new one, never half of one.

    A new file gets the mode open() would give it (0o666 less the umask); a
    file that exists keeps its mode.  On Linux the data is written to an
    unnamed file (O_TMPFILE) that gets a name only just before the rename, so
    a process killed while writing leaves nothing behind; elsewhere the
    temporary name is hidden, ends in ".tmp" and is removed on any error."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    data = text.encode("utf-8")
    directory = os.path.dirname(os.path.abspath(path))
    try:
        st = os.stat(path)
        keep_mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        keep_mode = None
    fd, tmp = _open_unnamed(directory, path)
    try:
        try:
            if keep_mode is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, keep_mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if tmp is None:
                tmp = _link_unnamed(fd, directory, path)
        finally:
            os.close(fd)
        if tmp is None:  # no way to give the unnamed file a name: write a named one
            _atomic_write_named(path, data, directory, keep_mode)
            return
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _sync_directory(directory)


def _temp_name(directory, path):
    base = os.path.basename(path)[:100]
    return os.path.join(directory, f".{base}.{os.urandom(6).hex()}.tmp")


def _open_unnamed(directory, path):
    """(fd, None) for an unnamed file in `directory` (Linux O_TMPFILE), else
    (fd, name) for a new hidden file."""
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.open(directory, flags | os.O_TMPFILE, 0o666), None
        except OSError:
            pass  # not supported by this file system
    return _open_named(directory, path, flags)


def _open_named(directory, path, flags):
    while True:
        tmp = _temp_name(directory, path)
        try:
            return os.open(tmp, flags | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _link_unnamed(fd, directory, path):
    """Give the unnamed file `fd` a hidden temporary name; None if impossible."""
    tmp = _temp_name(directory, path)
    try:
        os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
    except (OSError, NotImplementedError):
        return None
    return tmp


def _atomic_write_named(path, data, directory, keep_mode):
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd, tmp = _open_named(directory, path, flags)
    try:
        with os.fdopen(fd, "wb") as f:
            if keep_mode is not None and hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), keep_mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _sync_directory(directory)


def _sync_directory(directory):
    """Make the rename itself durable (POSIX); best effort."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _split_lines(text):
    """Lines of a text file; a CR before each LF (Windows line ends) is dropped."""
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _is_id(text):
    """ASCII digits only (str.isdigit also takes "٢" and "²"), at most 10."""
    return 0 < len(text) <= 10 and text.isascii() and text.isdigit()


class _Lines:
    """A cursor over a file's lines that reports errors with line numbers."""

    def __init__(self, text, where):
        self.lines = _split_lines(text)
        self.n = 0
        self.where = where

    def fail(self, what):
        raise ValueError(f"{self.where}: line {self.n}: {what}")

    def next(self):
        if self.n >= len(self.lines):
            self.n += 1
            self.fail("unexpected end of file (truncated?)")
        line = self.lines[self.n]
        self.n += 1
        return line

    def section(self, name):
        line = self.next()
        head, _, count = line.partition(" ")
        if head != name or not _is_id(count):
            self.fail(f"expected '{name} <count>', found {_short(line)}")
        return int(count)

    def fields(self, n):
        parts = self.next().split(" ", n - 1)
        if len(parts) != n:
            self.fail(f"expected {n} fields")
        return parts

    def int(self, text):
        if not _is_id(text):
            self.fail(f"{_short(text)} is not an id (ASCII digits)")
        return int(text)


_NATIVE_MAGIC = "#bpe-tokenizer"
_NATIVE_VERSION = 1


def _native_dump(tok):
    lines = [f"{_NATIVE_MAGIC} {_NATIVE_VERSION}", "pattern " + json.dumps(tok._pattern)]
    made = set(tok._rank_id)
    plain = sorted((i, t) for i, t in tok._tokens.items() if i not in made)
    lines.append(f"tokens {len(plain)}")
    lines += [f"{i} {token_to_str(t)}" for i, t in plain]
    lines.append(f"merges {len(tok._merges)}")
    lines += [f"{i} {token_to_str(a)} {token_to_str(b)}" for i, (a, b) in zip(tok._rank_id, tok._merges)]
    lines.append(f"specials {len(tok._specials)}")
    lines += [f"{i} {json.dumps(s)}" for s, i in sorted(tok._specials.items(), key=lambda kv: kv[1])]
    lines.append("end")
    return "\n".join(lines) + "\n"


def _native_parse(text, where):
    c = _Lines(text, where)
    head = c.next().split(" ")
    if len(head) != 2 or head[0] != _NATIVE_MAGIC:
        c.fail(f"not a bpe tokenizer file (expected '{_NATIVE_MAGIC} {_NATIVE_VERSION}')")
    if head[1] != str(_NATIVE_VERSION):
        c.fail(f"unsupported format version {_short(head[1])} (this library reads {_NATIVE_VERSION})")
    line = c.next()
    if not line.startswith("pattern "):
        c.fail("expected 'pattern <json string>'")
    try:
        pattern = json.loads(line[8:])
    except (ValueError, RecursionError):
        pattern = None
    if not isinstance(pattern, str):
        c.fail("the pattern is not a JSON string")
    try:
        _compile_pattern(pattern)
    except (ValueError, RecursionError) as e:
        c.fail(f"bad pattern: {str(e)[:200]}")
    tokens = {}

    def add(i, t):
        if i in tokens:
            c.fail(f"id {i} appears twice")
        tokens[i] = t

    for _ in range(c.section("tokens")):
        i, t = c.fields(2)
        i = c.int(i)
        try:
            add(i, str_to_token(t))
        except ValueError as e:
            c.fail(str(e))
    merges = []
    for _ in range(c.section("merges")):
        i, a, b = c.fields(3)
        i = c.int(i)
        try:
            a, b = str_to_token(a), str_to_token(b)
        except ValueError as e:
            c.fail(str(e))
        add(i, a + b)
        merges.append((a, b))
    specials = {}
    for _ in range(c.section("specials")):
        i, s = c.fields(2)
        i = c.int(i)
        try:
            s = json.loads(s)
        except (ValueError, RecursionError):
            s = None
        if not isinstance(s, str) or s in specials:
            c.fail("bad or repeated special token")
        try:
            _check_special_text(s)
        except ValueError as e:
            c.fail(str(e))
        specials[s] = i
    if c.next() != "end" or any(line for line in c.lines[c.n:]):
        c.fail("expected 'end' as the last line")
    return pattern, tokens, merges, specials


# GPT-2's vocab.json + merges.txt.  save_gpt2 writes a fingerprint of the pair
# into merges.txt's first line ("#version: 0.2 bpe-pair:<hex>"; tokenizers,
# transformers and GPT-2's own encoder skip that line), which from_gpt2 checks.

_GPT2_FINGERPRINT = regex.compile(r"\bbpe-pair:([0-9a-f]{32})\b")


def _gpt2_fingerprint(raw, merge_lines):
    """A digest of vocab.json's entries (by id) and merges.txt's lines."""
    h = hashlib.sha256()
    h.update("\n".join(f"{i} {s}" for s, i in sorted(raw.items(), key=lambda kv: kv[1]))
             .encode("utf-8", "surrogatepass"))
    h.update(b"\n\x00\n")
    h.update("\n".join(merge_lines).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def _json_ids(raw, where, field):
    """Check a JSON object of token -> id; ValueError naming `field`."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: {field} must be a JSON object of token -> id, not "
                         f"{_json_type(raw)}")
    seen = {}
    for s, i in raw.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"{where}: {field}: the id of {_short(s)} must be an int in "
                             f"[0, 2**31), not {_short(i)}")
        other = seen.setdefault(i, s)
        if other != s:
            raise ValueError(f"{where}: {field}: id {i} is given to both {_short(other)} and {_short(s)}")
    return raw


def _json_type(value):
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _gpt2_parse(vocab_text, merges_text, special_tokens, vocab_where, merges_where):
    raw = _json_ids(_json(vocab_text, vocab_where), vocab_where, "vocab.json")
    merges, merge_lines, fingerprint = [], [], None
    c = _Lines(merges_text, merges_where)
    for line in c.lines:
        c.n += 1
        if c.n == 1 and line.startswith("#version"):
            m = _GPT2_FINGERPRINT.search(line)
            fingerprint = m.group(1) if m else None
            continue
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            c.fail(f"expected 'left right', found {_short(line)}")
        try:
            merges.append((str_to_token(parts[0]), str_to_token(parts[1])))
        except ValueError as e:
            c.fail(str(e))
        merge_lines.append(line)
    if fingerprint is not None and fingerprint != _gpt2_fingerprint(raw, merge_lines):
        raise ValueError(f"{vocab_where} and {merges_where} do not belong together: merges.txt "
                         f"was saved with another vocab.json, or one of them was edited since (to "
                         f"load an edited pair, delete 'bpe-pair:...' from merges.txt's first line)")
    tokens, specials = _gpt2_vocab(raw, merges, special_tokens, fingerprint is not None,
                                   f"{vocab_where} and {merges_where}")
    return tokens, merges, specials


def _looks_special(s):
    """<...> or [...]: how special tokens are spelled (<|endoftext|>, <s>, [PAD])."""
    return len(s) >= 3 and ((s[0] == "<" and s[-1] == ">") or (s[0] == "[" and s[-1] == "]"))


def _gpt2_vocab(raw, merges, special_tokens, paired, where):
    """Split vocab.json's entries into tokens (id -> bytes) and specials.

    Every entry must be a single byte, made by a merge, or a special token.
    With special_tokens None, the entries no merge makes are the specials:
    all of them for a pair save_gpt2 wrote (`paired`: its fingerprint
    matched); for other files, each must look like a special token (<...>,
    [...]) or be no join of two other entries: an entry that two others make
    up is a token whose merge line is missing, and the files do not belong
    together."""
    made = {a + b for a, b in merges} | {bytes([b]) for b in range(256)}
    specials = {}
    if special_tokens is not None:
        if isinstance(special_tokens, _abc.Mapping):
            for s, i in special_tokens.items():
                _check_special_text(s)
                if isinstance(i, bool) or not isinstance(i, int):
                    raise TypeError(f"special_tokens must map str to int ids, not {_short(s)} -> {_short(i)}")
                specials[s] = i
        else:
            next_id = max(raw.values(), default=-1) + 1
            for s in _check_specials(special_tokens):
                if s in raw:
                    specials[s] = raw[s]
                else:
                    specials[s] = next_id
                    next_id += 1
    special_ids = set(specials.values())
    tokens, unmade = {}, []
    for s, i in raw.items():
        if i in special_ids:
            continue
        try:
            t = str_to_token(s)
        except ValueError:
            t = None
        if t is not None and t in made:
            tokens[i] = t
        else:
            unmade.append((s, i, t))
    if not unmade:
        return tokens, specials
    if special_tokens is not None:
        s, i, _ = unmade[0]
        raise ValueError(f"{where} do not belong together, or special_tokens is incomplete: "
                         f"{len(unmade)} entries of vocab.json are no single byte, no merge makes "
                         f"them and special_tokens does not name them, e.g. {_short(s)} (id {i})")
    if not paired:
        entries = {t for _, _, t in unmade if t is not None} | made
        joined = [(s, i) for s, i, t in unmade if t is not None and not _looks_special(s)
                  and any(t[:k] in entries and t[k:] in entries for k in range(1, len(t)))]
        if joined:
            s, i = joined[0]
            raise ValueError(f"{where} do not belong together: {len(joined)} entries of vocab.json "
                             f"join two other entries but no merge in merges.txt makes them, e.g. "
                             f"{_short(s)} (id {i}); merges.txt is cut short or from another "
                             f"vocabulary")
    for s, i, _ in unmade:
        try:
            _check_special_text(s)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        specials[s] = i
    return tokens, specials


def _gpt2_dump(tok):
    vocab = {token_to_str(t): i for i, t in tok._tokens.items()}
    for s, i in tok._specials.items():
        if s in vocab:
            raise ValueError(f"special token {_short(s)} has the same text as token {vocab[s]} in vocab.json")
        vocab[s] = i
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    lines = [f"{token_to_str(a)} {token_to_str(b)}" for a, b in tok._merges]
    head = f"#version: 0.2 bpe-pair:{_gpt2_fingerprint(vocab, lines)}\n"
    return json.dumps(vocab, ensure_ascii=False), head + "".join(line + "\n" for line in lines)


# tiktoken's format: "base64(token) rank" lines; the merges are recovered.

def _tiktoken_parse(text, where):
    ranks = {}
    c = _Lines(text, where)
    for line in c.lines:
        c.n += 1
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            c.fail("expected '<base64 token> <rank>'")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except ValueError:
            c.fail(f"{_short(parts[0])} is not base64")
        rank = c.int(parts[1])
        if not token or token in ranks:
            c.fail(f"empty or repeated token {_short(token)}")
        ranks[token] = rank
    if not ranks:
        raise ValueError(f"{where}: no tokens")
    return ranks


def _tiktoken_model(ranks, where):
    """Tokens (id -> bytes) and the merges that ranks imply: each multi-byte
    token splits into the two pieces that byte-pair encoding with the
    lower-ranked tokens leaves (tiktoken's own encoding rule)."""
    tokens = {}
    for t, r in ranks.items():
        if not isinstance(t, bytes) or isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"{where}: ranks must map bytes to int, not {_short(t)} -> {_short(r)}")
        if not t or not 0 <= r < _MAX_ID:
            raise ValueError(f"{where}: bad entry {_short(t)} -> {_short(r)} (tokens are non-empty, "
                             f"ranks ints in [0, 2**31))")
        if tokens.setdefault(r, t) != t:
            raise ValueError(f"{where}: rank {r} is given to both {_short(tokens[r])} and {_short(t)}")
    merges = []
    for r, t in sorted(tokens.items()):
        if len(t) < 2:
            continue
        parts = _rank_split(t, ranks, r)
        if len(parts) != 2:
            raise ValueError(f"{where}: token {_short(t)} (rank {r}) is not the merge of two "
                             f"lower-ranked tokens")
        merges.append((parts[0], parts[1]))
    return tokens, merges


def _rank_split(t, ranks, r):
    """Byte-pair encode `t` with the tokens ranked below `r`: repeatedly join
    the adjacent pair whose join has the lowest rank (leftmost first).  A heap
    over a linked list: O(n log n) steps for a token of n bytes."""
    get = ranks.get
    n = len(t)
    if n <= 16:  # short tokens: a plain scan is faster
        parts = [t[i:i + 1] for i in range(n)]
        while len(parts) > 2:
            best, at = r, -1
            for i in range(len(parts) - 1):
                q = get(parts[i] + parts[i + 1])
                if q is not None and q < best:
                    best, at = q, i
            if at < 0:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return parts
    sym = [t[i:i + 1] for i in range(n)]
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    heap = []

    def push(p, q):
        join = sym[p] + sym[q]
        rank = get(join)
        if rank is not None and rank < r:
            heapq.heappush(heap, (rank, p, sym[p], sym[q]))

    for i in range(n - 1):
        push(i, i + 1)
    while heap:
        _, p, left, right = heapq.heappop(heap)
        q = nxt[p] if sym[p] is left else -1
        if q < 0 or sym[q] is not right:
            continue  # stale: a neighbour changed since
        sym[p] = left + right
        sym[q] = None
        nxt[p] = nxt[q]
        if nxt[p] >= 0:
            prv[nxt[p]] = p
            push(p, nxt[p])
        if prv[p] >= 0:
            push(prv[p], p)
    return [s for s in sym if s is not None]


def _check_rank_order(tok):
    ids = tok._rank_id
    if any(a >= b for a, b in zip(ids, ids[1:])):
        raise ValueError("tiktoken uses ids as merge ranks, but this tokenizer's merge results "
                         "do not have increasing ids")


def _tiktoken_dump(tok):
    _check_rank_order(tok)
    return "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n" for i, t in sorted(tok._tokens.items()))


# --------------------------------------------------------------------------
# Patterns in tokenizer.json.  Hugging Face tokenizers runs them with
# Oniguruma (Ruby syntax), which reads some syntax otherwise than `regex`:
# `X{1,3}+` is possessive here and a repeated group there, `^` and `$` are
# line anchors there, `(?i:ss)` matches "ß" there; and the two engines take
# their Unicode tables from different Unicode versions.  So an export writes
# each character class, class escape (\s, \p{L}, ...) and case-insensitive
# letter as the explicit ranges of code points that `regex` matches for it,
# a possessive repeat as an atomic group, and anchors by their unambiguous
# names: the target reads the pattern as this library does, for every code
# point.  An import reads the Oniguruma syntax it can map exactly (Unicode
# properties are then read with `regex`'s tables).  Anything else is refused,
# as is a pattern that can match the empty string (the engines step past an
# empty match differently).
# --------------------------------------------------------------------------

_ALL_CHARS = []   # [every code point but the surrogates, in order], built on first use
_CHAR_RANGES = {}
_TO_ONIG = {}
_ONIG_MAX_REPEAT = 100000
_LOOK = ("ahead", "not_ahead", "behind", "not_behind")
# Unicode properties an import accepts: general categories and common scripts,
# which both engines name alike.
_ONIG_PROPERTIES = frozenset(
    "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp Cc Cf Co "
    "Han Hiragana Katakana Hangul Latin Greek Cyrillic Arabic Hebrew Thai Devanagari".split())
_QUANTIFIER = regex.compile(r"\{(\d{0,6})(?:(,)(\d{0,6}))?\}")
_GROUP_NAME = regex.compile(r"\?P?<([A-Za-z_][A-Za-z0-9_]*)>")


def _all_chars():
    if not _ALL_CHARS:
        import array

        codes = array.array("I", range(0xD800))
        codes.extend(range(0xE000, 0x110000))
        if codes.itemsize == 4:
            text = codes.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")
        else:  # pragma: no cover
            text = "".join(map(chr, codes))
        _ALL_CHARS.append(text)
    return _ALL_CHARS[0]


def _char_ranges(atom):
    """The code points `regex` matches with the one-character pattern `atom`,
    as sorted inclusive ranges (surrogates, which text never holds, left out)."""
    ranges = _CHAR_RANGES.get(atom)
    if ranges is None:
        ranges = []
        for m in regex.finditer(f"(?:{atom})+", _all_chars()):
            a, b = m.start(), m.end() - 1
            if a < 0xD800 <= b:
                ranges += [(a, 0xD7FF), (0xE000, b + 0x800)]
            else:
                ranges.append((a + 0x800 if a >= 0xD800 else a, b + 0x800 if b >= 0xD800 else b))
        _CHAR_RANGES[atom] = ranges
    return ranges


class _RegexReader:
    """A parser for the regular expressions both engines can share.  `onig`:
    read Oniguruma's (Ruby) syntax, else `regex`'s.  The tree: a list of
    alternatives, each a list of nodes:
      ("char", c, icase)          a literal character
      ("set", text, icase)        regex syntax: a class or class escape (from `regex` syntax)
      ("cls", negated, members)   from Oniguruma syntax: members are ("char", c),
                                  ("range", a, b) or ("text", regex text)
      ("raw", regex text)         from Oniguruma syntax: a class escape
      ("any",)  ("anchor", kind)  ("group", kind, alternatives)
      ("repeat", node, low, high or None, "greedy" | "lazy" | "possessive")"""

    def __init__(self, pattern, onig):
        self.p, self.i, self.onig = pattern, 0, onig

    def fail(self, what):
        raise ValueError(f"{what} (at character {self.i})")

    def peek(self, text):
        return self.p.startswith(text, self.i)

    def parse(self):
        alts = self.alternatives(False)
        if self.i < len(self.p):
            self.fail("unbalanced ')'")
        return alts

    def alternatives(self, icase):
        alts = [self.sequence(icase)]
        while self.peek("|"):
            self.i += 1
            alts.append(self.sequence(icase))
        return alts

    def sequence(self, icase):
        nodes = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            if self.onig and self.peek("(?#"):  # a comment
                self.comment()
                continue
            nodes.append(self.repeat(self.atom(icase), icase))
        if icase and self.onig:
            self.check_folds(nodes)
        return nodes

    def atom(self, icase):
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            if icase and self.onig:
                self.fail("(?i) with a group inside")
            return self.group(icase)
        if c == "[":
            return self.char_class(icase)
        if c == "\\":
            kind, value = self.escape()
            if kind == "char":
                return self.char(value, icase)
            if kind == "anchor":
                return ("anchor", value)
            return self.class_escape(kind, value, icase)
        if c == ".":
            return ("any",)
        if c == "^":
            return ("anchor", "line_start" if self.onig else "start")
        if c == "$":
            return ("anchor", "line_end" if self.onig else "end")
        if c in "*+?":
            self.i -= 1
            self.fail(f"'{c}' repeats nothing")
        if c == "{":
            self.i -= 1
            self.fail("a literal '{' (write '\\{')")
        return self.char(c, icase)

    def comment(self):
        i = self.i + 3
        while i < len(self.p) and self.p[i] != ")":
            i += 2 if self.p[i] == "\\" else 1
        if i >= len(self.p):
            self.fail("an unclosed comment")
        self.i = i + 1

    def char(self, c, icase):
        if icase and self.onig and (not c.isascii() or c in "iI"):
            self.fail(f"(?i) with {c!r}: Oniguruma folds it otherwise than regex")
        return ("char", c, icase)

    def class_escape(self, kind, value, icase):
        if not self.onig:
            return ("set", value, icase)
        if icase:
            self.fail(f"(?i) with {value}: Oniguruma folds it otherwise than regex")
        return ("raw", value)

    def group(self, icase):
        kind = "group"
        if self.peek("?"):
            for prefix, name in (("?:", "group"), ("?>", "atomic"), ("?=", "ahead"), ("?!", "not_ahead"),
                                 ("?<=", "behind"), ("?<!", "not_behind"), ("?i:", "icase")):
                if self.peek(prefix):
                    self.i += len(prefix)
                    kind = name
                    break
            else:
                m = _GROUP_NAME.match(self.p, self.i)
                if m is None or (self.onig and self.peek("?P")):
                    self.fail(f"the group '({_short(self.p[self.i:self.i + 4])[1:-1]}' is not supported")
                self.i = m.end()
        alts = self.alternatives(icase or kind == "icase")
        if not self.peek(")"):
            self.fail("missing ')'")
        self.i += 1
        return ("group", kind, alts)

    def quantifier(self):
        """(low, high, braces) of a repeat operator at the cursor, or None."""
        c = self.p[self.i:self.i + 1]
        if c in ("*", "+", "?") and c:
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c] + (False,)
        m = _QUANTIFIER.match(self.p, self.i)
        if c != "{" or m is None or not (m.group(1) or m.group(3)):
            return None
        low = int(m.group(1) or 0)
        high = (int(m.group(3)) if m.group(3) else None) if m.group(2) else low
        if (high is not None and high < low) or max(low, high or 0) > _ONIG_MAX_REPEAT:
            self.fail(f"the repeat {m.group()} (at most {_ONIG_MAX_REPEAT})")
        self.i = m.end()
        return low, high, True

    def repeat(self, node, icase):
        q = self.quantifier()
        if q is None:
            return node
        if icase and self.onig:  # Oniguruma's folds can span repeats: refuse what is not tested
            self.fail("(?i) with a repeat inside")
        if node[0] == "anchor" or (node[0] == "group" and node[1] in _LOOK):
            self.fail("a repeated anchor or look-around")
        low, high, braces = q
        mode = "greedy"
        if self.peek("?"):
            self.i += 1
            if self.onig and braces and low == high:  # Ruby: x{n}? is (?:x{n})?
                node, low, high = ("repeat", node, low, high, "greedy"), 0, 1
            else:
                mode = "lazy"
        elif self.peek("+"):
            self.i += 1
            if self.onig and braces:  # Ruby: x{n,m}+ is (?:x{n,m})+, not possessive
                node, low, high = ("repeat", node, low, high, "greedy"), 1, None
            else:
                mode = "possessive"
        if self.i < len(self.p) and (self.p[self.i] in "*+?" or _QUANTIFIER.match(self.p, self.i)):
            self.fail("a repeat of a repeat")
        return ("repeat", node, low, high, mode)

    def escape(self):
        """After a backslash: ("char", c), ("anchor", kind), or (kind, regex
        text) for a class escape, kind "class" or "property"."""
        p = self.p
        if self.i >= len(p):
            self.fail("a trailing backslash")
        c = p[self.i]
        self.i += 1
        if c in "sSdD" or (c in "wW" and not self.onig):
            return "class", "\\" + c
        if c in "pP":
            if not self.peek("{"):
                if self.onig or not (self.i < len(p) and p[self.i].isalpha()):
                    self.fail(f"\\{c} without a {{name}}")
                self.i += 1
                return "property", f"\\{c}{{{p[self.i - 1]}}}"
            end = p.find("}", self.i)
            if end < 0:
                self.fail(f"\\{c}{{ without '}}'")
            name = p[self.i + 1:end]
            self.i = end + 1
            negated = c == "P"
            if self.onig and name.startswith("^"):
                name, negated = name[1:], not negated
            if self.onig and name not in _ONIG_PROPERTIES:
                self.fail(f"the Unicode property {_short(name)} (general categories and common "
                          f"scripts only)")
            return "property", f"\\{'P' if negated else 'p'}{{{name}}}"
        if c == "x":
            if self.onig and self.peek("{"):
                m = regex.compile(r"\{([0-9A-Fa-f]{1,6})\}").match(p, self.i)
                if m is None or int(m.group(1), 16) > 0x10FFFF or 0xD800 <= int(m.group(1), 16) < 0xE000:
                    self.fail("a bad \\x{...}")
                self.i = m.end()
                return "char", chr(int(m.group(1), 16))
            m = regex.compile(r"[0-9A-Fa-f]{2}" if not self.onig else r"[0-9A-Fa-f]{1,2}").match(p, self.i)
            if m is None:
                self.fail("a bad \\x escape")
            self.i = m.end()
            if self.onig and int(m.group(), 16) > 0x7F:
                self.fail("\\x above 7F (a byte, not a character, in Oniguruma)")
            return "char", chr(int(m.group(), 16))
        if c == "u" or (c == "U" and not self.onig):
            n = 4 if c == "u" else 8
            m = regex.compile(r"[0-9A-Fa-f]{%d}" % n).match(p, self.i)
            if m is None or int(m.group(), 16) > 0x10FFFF or 0xD800 <= int(m.group(), 16) < 0xE000:
                self.fail(f"a bad \\{c} escape")
            self.i = m.end()
            return "char", chr(int(m.group(), 16))
        simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
        if self.onig:
            simple["e"] = "\x1b"
        if c in simple:
            return "char", simple[c]
        anchors = {"A": "start", "Z": "end", "z": "abs_end"} if self.onig else {"A": "start", "Z": "abs_end"}
        if c in anchors:
            return "anchor", anchors[c]
        if c.isascii() and c.isalnum():
            self.fail(f"the escape \\{c}")
        return "char", c

    def char_class(self, icase):
        start = self.i - 1
        p = self.p
        negated = self.peek("^")
        if negated:
            self.i += 1
        if self.peek("]"):
            self.fail("']' first in a class (write '\\]')")
        members = []
        while True:
            if self.i >= len(p):
                self.fail("missing ']'")
            c = p[self.i]
            if c == "]":
                self.i += 1
                break
            if c == "[":
                self.fail("'[' inside a class (a nested or POSIX class)")
            if self.peek("&&") or (not self.onig and (self.peek("--") or self.peek("||") or self.peek("~~"))):
                self.fail("a set operation in a class")
            item = self.class_item()
            if item[0] == "char" and self.peek("-") and p[self.i + 1:self.i + 2] not in ("]", ""):
                self.i += 1
                end = self.class_item()
                if end[0] != "char" or end[1] < item[1]:
                    self.fail("a bad range in a class")
                item = ("range", item[1], end[1])
            members.append(item)
        if not self.onig:
            return ("set", p[start:self.i], icase)
        if icase:
            for m in members:
                if m[0] != "char" or not m[1].isascii() or m[1] in "iI":
                    self.fail("(?i) with a class of more than ASCII letters other than i")
        return ("cls", negated, members)

    def class_item(self):
        c = self.p[self.i]
        self.i += 1
        if c != "\\":
            return ("char", c)
        if not self.onig and self.peek("b"):
            self.i += 1
            return ("char", "\b")
        kind, value = self.escape()
        if kind == "anchor":
            self.fail("an anchor inside a class")
        return ("char", value) if kind == "char" else ("text", value)

    def check_folds(self, nodes):
        """Oniguruma folds some letter pairs to one character ("ss" to "ß",
        "fi" to "ﬁ"); regex does not."""
        def letters(node):
            if node[0] == "char":
                return {node[1].lower()}
            if node[0] == "cls":
                return {m[1].lower() for m in node[2]}
            return set()

        for a, b in zip(nodes, nodes[1:]):
            if any(x + y in ("ss", "st", "ff", "fi", "fl") for x in letters(a) for y in letters(b)):
                self.fail("(?i) with a letter pair that Oniguruma folds to one character")


_MAX_CLASSES = 256  # an export scans every code point once per distinct class (a few ms each)


def _class_atoms(alts, found):
    """The distinct one-character atoms an export writes as code point ranges."""
    for seq in alts:
        for node in seq:
            while node[0] == "repeat":
                node = node[1]
            if node[0] == "set" or (node[0] == "char" and node[2]):
                found.add(node[1:])
            elif node[0] == "group":
                _class_atoms(node[2], found)
    return found


def _nullable(alts):
    return any(all(_node_nullable(n) for n in seq) for seq in alts)


def _node_nullable(node):
    kind = node[0]
    if kind == "anchor":
        return True
    if kind == "group":
        return node[1] in _LOOK or _nullable(node[2])
    if kind == "repeat":
        return node[2] == 0 or _node_nullable(node[1])
    return False


def _quantifier_text(low, high):
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _onig_char(c, in_class=False):
    if (c.isascii() and (c.isalnum() or c == "_")) or (not c.isascii() and c.isalnum() and not in_class):
        return c
    return f"\\x{{{ord(c):X}}}"


def _onig_ranges(ranges):
    if not ranges:
        raise ValueError("a class that matches no character")
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _onig_char(chr(ranges[0][0]))
    parts = []
    for a, b in ranges:
        parts.append(_onig_char(chr(a), True))
        if b > a:
            parts.append(("" if b == a + 1 else "-") + _onig_char(chr(b), True))
    return "[" + "".join(parts) + "]"


def _onig_text(alts, behind=False):
    return "|".join("".join(_onig_node(n, behind) for n in seq) for seq in alts)


def _onig_node(node, behind):
    kind = node[0]
    if kind == "char":
        return _onig_ranges(_char_ranges(f"(?i:{_regex_char(node[1])})")) if node[2] else _onig_char(node[1])
    if kind == "set":
        return _onig_ranges(_char_ranges(f"(?i:{node[1]})" if node[2] else node[1]))
    if kind == "any":
        return "."
    if kind == "anchor":
        return {"start": r"\A", "end": r"\Z", "abs_end": r"\z"}[node[1]]
    if kind == "group":
        if behind:
            raise ValueError("a group inside a look-behind")
        prefix = {"group": "(?:", "icase": "(?:", "atomic": "(?>", "ahead": "(?=", "not_ahead": "(?!",
                  "behind": "(?<=", "not_behind": "(?<!"}[node[1]]
        return prefix + _onig_text(node[2], node[1] in ("behind", "not_behind")) + ")"
    _, inner, low, high, mode = node
    if behind and low != high:
        raise ValueError("a repeat of varying length inside a look-behind")
    atom, q = _onig_node(inner, behind), _quantifier_text(low, high)
    if mode == "possessive":
        return atom + q + "+" if q in ("*", "+", "?") else f"(?>{atom}{q})"
    if mode == "lazy" and low != high:
        return atom + q + "?"
    return atom + q


def _regex_char(c, in_class=False):
    """`c` as a literal in `regex` syntax."""
    if c in ("\\]^-[" if in_class else ".^$*+?{}[]\\|()"):
        return "\\" + c
    if c.isprintable() and not (c.isspace() and c != " "):
        return c
    if c in "\n\r\t\f\v":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f", "\v": "\\v"}[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _regex_text(alts):
    return "|".join("".join(_regex_node(n) for n in seq) for seq in alts)


def _regex_node(node):
    kind = node[0]
    if kind == "char":
        return _regex_char(node[1])
    if kind == "cls":
        parts = []
        for m in node[2]:
            if m[0] == "char":
                parts.append(_regex_char(m[1], True))
            elif m[0] == "range":
                parts.append(_regex_char(m[1], True) + "-" + _regex_char(m[2], True))
            else:
                parts.append(m[1])
        return "[" + ("^" if node[1] else "") + "".join(parts) + "]"
    if kind == "raw":
        return node[1]
    if kind == "any":
        return "."
    if kind == "anchor":
        return {"start": r"\A", "end": "$", "abs_end": r"\Z", "line_start": "(?m:^)",
                "line_end": "(?m:$)"}[node[1]]
    if kind == "group":
        prefix = {"group": "(?:", "icase": "(?i:", "atomic": "(?>", "ahead": "(?=", "not_ahead": "(?!",
                  "behind": "(?<=", "not_behind": "(?<!"}[node[1]]
        return prefix + _regex_text(node[2]) + ")"
    _, inner, low, high, mode = node
    atom = _regex_node(inner)
    if inner[0] == "repeat":  # Oniguruma's x{n,m}+ and x{n}?: a repeat of a repeat
        atom = f"(?:{atom})"
    return atom + _quantifier_text(low, high) + {"greedy": "", "lazy": "?", "possessive": "+"}[mode]


def _pattern_to_onig(pattern):
    """`pattern` written for tokenizers' Oniguruma with the same meaning,
    after a comment that holds the pattern itself (base64), from which an
    import gets it back exactly; ValueError if this library cannot write it."""
    body = _onig_body(pattern)
    b64 = base64.b64encode(pattern.encode("utf-8")).decode("ascii")
    return f"(?#bpe:{b64}){body}"


def _onig_body(pattern):
    out = _TO_ONIG.get(pattern)
    if out is None:
        try:
            if not pattern.isascii():
                try:
                    pattern.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("it holds a lone surrogate") from None
            tree = _RegexReader(pattern, onig=False).parse()
            if _nullable(tree):
                raise ValueError("it can match the empty string")
            atoms = _class_atoms(tree, set())
            if len(atoms) > _MAX_CLASSES:
                raise ValueError(f"more than {_MAX_CLASSES} distinct character classes")
            out = _onig_text(tree)
        except RecursionError:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for Hugging Face tokenizers: "
                             f"it nests too deeply") from None
        except ValueError as e:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for Hugging Face tokenizers "
                             f"(Oniguruma) so that it means the same: {e}") from None
        _TO_ONIG[pattern] = out
    return out


_ONIG_ORIGIN = regex.compile(r"\(\?#bpe:([A-Za-z0-9+/=]*)\)")


def _pattern_from_onig(text):
    """A Split regex of a tokenizer.json as a `regex` pattern of the same
    meaning; ValueError if there is none this library can write.  What
    save_huggingface wrote comes back as the pattern it was written from."""
    m = _ONIG_ORIGIN.match(text)
    if m:
        try:
            pattern = base64.b64decode(m.group(1), validate=True).decode("utf-8")
            _compile_pattern(pattern)
            if _onig_body(pattern) == text[m.end():]:
                return pattern
        except ValueError:
            pass  # edited since: read the regex itself
    try:
        try:
            tree = _RegexReader(text, onig=True).parse()
            if _nullable(tree):
                raise ValueError("it can match the empty string")
            pattern = _regex_text(tree)
            _compile_pattern(pattern)
        except RecursionError:
            raise ValueError("it nests too deeply") from None
    except ValueError as e:
        raise ValueError(f"the Split regex {_short(text)} cannot be read with the meaning it has "
                         f"in tokenizers: {e}") from None
    return pattern


# --------------------------------------------------------------------------
# Hugging Face tokenizer.json
# --------------------------------------------------------------------------

_HF_FIELDS = frozenset(["version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                        "post_processor", "decoder", "model"])
_HF_MODEL_FIELDS = frozenset(["type", "dropout", "unk_token", "continuing_subword_prefix",
                              "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                              "vocab", "merges"])
_HF_ADDED_FIELDS = frozenset(["id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"])
_HF_BYTE_LEVEL_FIELDS = frozenset(["type", "add_prefix_space", "trim_offsets", "use_regex"])
_HF_SPLIT_FIELDS = frozenset(["type", "pattern", "behavior", "invert"])


def _hf_dump(tok):
    vocab = {token_to_str(t): i for i, t in sorted(tok._tokens.items())}
    for s in tok._specials:
        if s in vocab:
            raise ValueError(f"special token {_short(s)} has the same text as token {vocab[s]} in the "
                             f"byte-level vocabulary; tokenizers would give it that id")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": _pattern_to_onig(tok._pattern)}, "behavior": "Isolated",
             "invert": False},
            byte_level,
        ],
    }
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s, i in sorted(tok._specials.items(), key=lambda kv: kv[1])
        ],
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": dict(byte_level),
        "model": {
            # ignore_merges: a pre-token that is itself a token is that token, as here
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
            "vocab": vocab,
            "merges": [[token_to_str(a), token_to_str(b)] for a, b in tok._merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=1)


def _hf_parse(text, where):
    """(pattern, tokens, merges, specials, ignore_merges) of a tokenizer.json."""
    def fail(what):
        raise ValueError(f"{where}: {what}")

    def check(obj, field, allowed):
        unknown = sorted(set(obj) - allowed)
        if unknown:
            fail(f"{field}{'.' if field else ''}{unknown[0]} is not a field this library knows; it "
                 f"might change the ids")

    def flag(obj, field, key):
        value = obj.get(key)
        if value is not None and not isinstance(value, bool):
            fail(f"{field}.{key} must be true or false, not {_short(value)}")
        return value

    doc = _json(text, where)
    if not isinstance(doc, dict):
        fail(f"not a tokenizer.json: {_json_type(doc)}, not an object")
    model = doc.get("model")
    if not isinstance(model, dict):
        fail(f"not a tokenizer.json: 'model' must be an object, not {_json_type(model)}")
    check(doc, "", _HF_FIELDS)
    for key, effect in (("truncation", "cut"), ("padding", "pad")):
        if doc.get(key) is not None:
            fail(f"'{key}' is set: tokenizers would {effect} the ids, this library does not")
    if doc.get("normalizer") is not None:
        fail(f"the normalizer {_hf_kind(doc['normalizer'])} is not supported (byte-level BPE of the "
             f"text as it is only)")
    pattern = _hf_pattern(doc.get("pre_tokenizer"), fail)
    for key, what in (("post_processor", "it would add or change ids"),
                      ("decoder", "it would decode otherwise")):
        value = doc.get(key)
        if value is None:
            continue
        if not isinstance(value, dict) or value.get("type") != "ByteLevel":
            fail(f"the {key} {_hf_kind(value)} is not supported ({what})")
        check(value, key, _HF_BYTE_LEVEL_FIELDS)
        for name in ("add_prefix_space", "trim_offsets", "use_regex"):
            flag(value, key, name)

    # the model
    check(model, "model", _HF_MODEL_FIELDS)
    if model.get("type", "BPE") != "BPE":
        fail(f"model.type {_short(model.get('type'))} is not BPE")
    dropout = model.get("dropout")
    if dropout is not None:
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            fail(f"model.dropout must be a number or null, not {_short(dropout)}")
        if dropout != 0:
            fail(f"model.dropout = {dropout}: tokenizers would drop merges at random")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        value = model.get(key)
        if value is not None and not isinstance(value, str):
            fail(f"model.{key} must be a string or null, not {_short(value)}")
        if key != "unk_token" and value:
            fail(f"model.{key} = {_short(value)} is not supported (byte-level BPE has no subword marks)")
    # unk_token, fuse_unk and byte_fallback act only on a character missing
    # from the vocabulary: a byte-level one has all 256 (checked when built)
    for key in ("fuse_unk", "byte_fallback"):
        flag(model, "model", key)
    ignore_merges = bool(flag(model, "model", "ignore_merges"))
    vocab = _json_ids(model.get("vocab"), where, "model.vocab")
    raw_merges = model.get("merges", [])
    if not isinstance(raw_merges, list):
        fail(f"model.merges must be an array, not {_json_type(raw_merges)}")
    merges = []
    for k, m in enumerate(raw_merges):
        if isinstance(m, str):
            m = m.split(" ")
        if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)):
            fail(f"model.merges[{k}] is not a pair of tokens: {_short(m)}")
        try:
            merges.append((str_to_token(m[0]), str_to_token(m[1])))
        except ValueError as e:
            fail(f"model.merges[{k}]: {e}")

    # added tokens are the special tokens
    added = doc.get("added_tokens")
    if added is None:
        added = []
    if not isinstance(added, list):
        fail(f"added_tokens must be an array, not {_json_type(added)}")
    specials = {}
    for k, entry in enumerate(added):
        field = f"added_tokens[{k}]"
        if not isinstance(entry, dict):
            fail(f"{field} must be an object, not {_json_type(entry)}")
        check(entry, field, _HF_ADDED_FIELDS)
        content, i = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not content:
            fail(f"{field}.content must be a non-empty string, not {_short(content)}")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            fail(f"{field}.id must be an int in [0, 2**31), not {_short(i)}")
        for key in ("single_word", "lstrip", "rstrip", "normalized", "special"):
            if flag(entry, field, key) and key in ("single_word", "lstrip", "rstrip"):
                fail(f"{field} ({_short(content)}) sets {key}, which is not supported")
        try:
            _check_special_text(content)
        except ValueError as e:
            fail(f"{field}: {e}")
        if content in specials:
            fail(f"{field}: {_short(content)} is added twice")
        specials[content] = i
    special_ids = set(specials.values())
    tokens = {}
    for s, i in vocab.items():
        if i in special_ids:
            continue
        try:
            tokens[i] = str_to_token(s)
        except ValueError as e:
            fail(f"model.vocab: {e}")
    return pattern, tokens, merges, specials, ignore_merges


def _hf_kind(value):
    if isinstance(value, dict):
        return _short(value.get("type"))
    return f"({_json_type(value)})"


def _hf_pattern(pre, fail):
    want = "a ByteLevel pre-tokenizer, or a Sequence of a Split and a ByteLevel"
    if not isinstance(pre, dict):
        fail(f"pre_tokenizer must be {want}, not {_json_type(pre)}")
    kind = pre.get("type")
    if kind == "ByteLevel":
        return PATTERNS["gpt2"] if _hf_byte_level(pre, "pre_tokenizer", fail) else PATTERNS["bytes"]
    if kind == "Sequence":
        steps = pre.get("pretokenizers")
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            fail("pre_tokenizer.pretokenizers must be an array of objects")
        kinds = [s.get("type") for s in steps]
        if kinds == ["ByteLevel"]:
            return _hf_pattern(steps[0], fail)
        if kinds == ["Split", "ByteLevel"]:
            if _hf_byte_level(steps[1], "pre_tokenizer.pretokenizers[1]", fail):
                fail("a ByteLevel with use_regex=true after a Split is not supported")
            return _hf_split(steps[0], fail)
        fail(f"the pre-tokenizer sequence {_short(kinds)} is not supported (want {want})")
    fail(f"the pre-tokenizer {_short(kind)} is not supported (want {want})")


def _hf_byte_level(pre, field, fail):
    """use_regex of a ByteLevel pre-tokenizer (add_prefix_space refused)."""
    unknown = sorted(set(pre) - _HF_BYTE_LEVEL_FIELDS)
    if unknown:
        fail(f"{field}.{unknown[0]} is not a field this library knows; it might change the ids")
    for key in ("add_prefix_space", "trim_offsets", "use_regex"):
        value = pre.get(key)
        if value is not None and not isinstance(value, bool):
            fail(f"{field}.{key} must be true or false, not {_short(value)}")
    if pre.get("add_prefix_space"):
        fail(f"{field}: ByteLevel with add_prefix_space=true is not supported")
    return pre.get("use_regex", True) is not False


def _hf_split(split, fail):
    field = "pre_tokenizer.pretokenizers[0]"
    unknown = sorted(set(split) - _HF_SPLIT_FIELDS)
    if unknown:
        fail(f"{field}.{unknown[0]} is not a field this library knows; it might change the ids")
    if split.get("behavior") != "Isolated" or split.get("invert") not in (False, None):
        fail(f"{field}: only a Split with behavior Isolated and invert false is supported, not "
             f"{_short(split.get('behavior'))} / invert {_short(split.get('invert'))}")
    pat = split.get("pattern")
    if not (isinstance(pat, dict) and len(pat) == 1 and next(iter(pat)) in ("Regex", "String")
            and isinstance(next(iter(pat.values())), str)):
        fail(f"{field}.pattern must be {{\"Regex\": string}} or {{\"String\": string}}, not {_short(pat)}")
    if "String" in pat:
        if not pat["String"]:
            fail(f"{field}.pattern: an empty String matches nothing")
        return regex.escape(pat["String"])
    try:
        return _pattern_from_onig(pat["Regex"])
    except ValueError as e:
        fail(f"{field}.pattern: {e}")


def _check_merges_rebuild(tok, where):
    """With ignore_merges false, tokenizers encodes a pre-token by its merges
    only, this library (as tiktoken, and tokenizers with ignore_merges true)
    takes a pre-token that is itself a token as that token: the same ids
    exactly when every token's own merges rebuild it.  A token whose bytes
    are not UTF-8 is never a whole pre-token, one of two bytes always
    rebuilds."""
    for i, t in tok._tokens.items():
        if len(t) <= 2:
            continue
        try:
            t.decode("utf-8")
        except UnicodeDecodeError:
            continue
        ids = [tok._byte_ids[b] for b in t]
        if len(ids) <= _SHORT:
            ids = _bpe_short(ids, tok._pair_rank, tok._rank_pair, tok._rank_id)
        else:
            ids = _bpe_long(ids, tok._pair_rank, tok._rank_id)
        if ids != [i]:
            raise ValueError(f"{where}: with model.ignore_merges false, tokenizers never gives token "
                             f"{_short(t)} (id {i}) for its own text (its merges make {_short(ids)}), "
                             f"and this library would; not supported")
