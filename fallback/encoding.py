"""Encoding one pre-token by merge rank (short pieces by a rank merge, long ones in
linear time)."""

from __future__ import annotations as _annotations

import array as _array
import heapq as _heapq
import operator as _operator
import sys as _sys

from .util import _short


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
    _heapq.heapify(heap)
    while heap:
        r, p = _heapq.heappop(heap)
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
                _heapq.heappush(heap, (r2, p))
        left = prv[p]
        if left >= 0:
            r2 = get((sym[left], sym[p]))
            if r2 is not None:
                _heapq.heappush(heap, (r2, left))
    return [s for s in sym if s >= 0]


_TYPECODES = {2: "H", 4: "I" if _array.array("I").itemsize == 4 else "L"}


def _pack_ids(ids, itemsize):
    """A list of ids as little-endian unsigned ints of `itemsize` (2 or 4) bytes."""
    if _operator.index(itemsize) not in _TYPECODES:
        raise ValueError(f"itemsize must be 2 or 4, not {_short(itemsize)}")
    packed = _array.array(_TYPECODES[itemsize], ids)
    if _sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _stop_names(stop):
    """The strs a core's `stop` holds (the disallowed special tokens), as a
    tuple; TypeError for anything else."""
    stop = tuple(stop)
    for name in stop:
        if not isinstance(name, str):
            raise TypeError(f"expected str, not {type(name).__name__}")
    return stop


_SHORT = 48            # pre-tokens up to this many bytes use _bpe_short
_CACHE_SIZE = 1 << 16  # pre-token -> ids entries before the cache is cleared
_CACHE_MAX_LEN = 64    # longer pre-tokens are not cached
