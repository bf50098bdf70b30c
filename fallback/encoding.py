"""Encoding one pre-token by merge rank (short pieces by a rank merge, long ones in
linear time)."""

from __future__ import annotations as _annotations

import array as _array
import heapq as _heapq
import operator as _operator
import sys as _sys
from itertools import repeat as _repeat

from .util import _short

_NO_RANK = 1 << 62   # above every merge rank: the pair of a place that merges no more


def _bpe_short(ids, pair_rank, rank_id, shift):
    """Merge the lowest-ranked adjacent pair, the leftmost of equals, one pair
    at a time, until none is left.  For merges that replay in order this is
    every occurrence of a pair left to right (the same ids); where a token is
    made by several merges (a tokenizer.json that lists every split of every
    token) or a merge joins a token only a later merge makes (tiktoken's rule
    on a rank table where a token's lower-ranked pieces are three or more but
    a higher-ranked token rejoins them: 90 of Llama 3's), one pair at a time
    is the meaning tiktoken and tokenizers give them.  `pair_rank` maps
    ``left << shift | right`` to the rank (int keys: a dict the garbage
    collector never walks).  The ranks of the adjacent pairs live in a list
    that min() and index() scan in C, two of them looked up again per merge:
    quadratic, but cheap for pre-tokens up to _SHORT symbols; longer ones go
    to _bpe_long."""
    get = pair_rank.get
    ranks = list(map(get, map(_operator.or_, map(_operator.lshift, ids, _repeat(shift)), ids[1:]),
                     _repeat(_NO_RANK)))
    while ranks:
        r = min(ranks)
        if r == _NO_RANK:
            break
        i = ranks.index(r)
        new = rank_id[r]
        ids[i] = new
        del ids[i + 1], ranks[i]
        if i:
            ranks[i - 1] = get(ids[i - 1] << shift | new, _NO_RANK)
        if i < len(ranks):
            ranks[i] = get(new << shift | ids[i + 1], _NO_RANK)
    return ids


def _bpe_long(ids, pair_rank, rank_id, shift):
    """The same result with a heap of (rank, position) over a linked list:
    O(n log n) for long pre-tokens."""
    n = len(ids)
    sym = list(ids)
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    get = pair_rank.get
    heap = []
    for i in range(n - 1):
        r = get(sym[i] << shift | sym[i + 1])
        if r is not None:
            heap.append((r, i))
    _heapq.heapify(heap)
    while heap:
        r, p = _heapq.heappop(heap)
        q = nxt[p] if sym[p] >= 0 else -1
        if q < 0 or get(sym[p] << shift | sym[q]) != r:
            continue
        sym[p] = rank_id[r]
        sym[q] = -1
        right = nxt[q]
        nxt[p] = right
        if right >= 0:
            prv[right] = p
            r2 = get(sym[p] << shift | sym[right])
            if r2 is not None:
                _heapq.heappush(heap, (r2, p))
        left = prv[p]
        if left >= 0:
            r2 = get(sym[left] << shift | sym[p])
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


_SHORT = 40              # pre-tokens up to this many bytes use _bpe_short
_CACHE_SIZE = 1 << 16    # pre-token -> ids entries before the cache is cleared
_CACHE_MAX_LEN = 256     # longer pre-tokens are not cached
_CACHE_CHARS = 1 << 21   # characters of cached pre-tokens before the cache is cleared


def _merge_ids(ids, pair_rank, rank_id, shift):
    """The ids of a pre-token's symbols (a fresh list) merged by rank."""
    if len(ids) <= _SHORT:
        return _bpe_short(ids, pair_rank, rank_id, shift)
    return _bpe_long(ids, pair_rank, rank_id, shift)


def _merger(byte_ids, pair_rank, rank_id, shift):
    """bytes -> their ids merged by merge rank (see _bpe_short)."""
    if list(byte_ids) == list(range(256)):   # a byte's id is the byte
        return lambda data: _merge_ids(list(data), pair_rank, rank_id, shift)
    byte_id = byte_ids.__getitem__
    return lambda data: _merge_ids(list(map(byte_id, data)), pair_rank, rank_id, shift)


class _PieceCache(dict):
    """pre-token (str) -> its ids (a tuple): a miss (__missing__) encodes
    the pre-token's UTF-8: the token it is, else `ids_of` its bytes (a
    merge rule); and keeps the result if the pre-token is at most
    _CACHE_MAX_LEN characters.  Bounded: cleared when it holds _CACHE_SIZE
    entries or _CACHE_CHARS characters of pre-tokens.  Looked up by
    map(cache.__getitem__, pieces), a pre-token seen before costs no
    Python-level call at all.  Tuples of ints, which the garbage collector
    stops tracking, keep a growing cache from setting off full collections
    (each of which walks every large list of the model)."""

    __slots__ = ("_token_id", "_ids_of", "_chars")

    def __init__(self, token_id, ids_of):
        super().__init__()
        self._token_id = token_id
        self._ids_of = ids_of
        self._chars = 0

    def __missing__(self, piece):
        data = piece.encode("utf-8")
        i = self._token_id(data)
        ids = (i,) if i is not None else tuple(self._ids_of(data))
        n = len(piece)
        if n <= _CACHE_MAX_LEN:
            if len(self) >= _CACHE_SIZE or self._chars + n > _CACHE_CHARS:
                self.clear()
                self._chars = 0
            self._chars += n
            self[piece] = ids
        return ids
