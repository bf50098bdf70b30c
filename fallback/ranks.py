"""A rank table as a model, as tiktoken reads one: token bytes -> rank, the
rank being the id.  tiktoken's rule encodes a pre-token from the ranks
alone (join the adjacent pair whose join has the lowest rank), so a core
built from a rank table needs no merges; the merges the table implies (for
the native format, tokenizer.json, ``Tokenizer.merges``) are derived when
first asked."""

from __future__ import annotations as _annotations

import heapq as _heapq
from itertools import repeat as _repeat

from .encoding import _NO_RANK
from .util import _MAX_ID, _short

_RANK_SHORT = 24     # tokens up to this many bytes merge by a scan, longer ones by a heap
_BYTES = tuple(bytes([b]) for b in range(256))


def _rank_merge(data, get, below=_NO_RANK, least=1):
    """tiktoken's rule on the bytes `data`: join the adjacent pair whose join
    has the lowest rank under `below` (the leftmost of equals) while more
    than `least` pieces are left; the pieces.  `get`: the ranks' dict.get.
    A scan for short data (min() and index() in C), a heap over a linked
    list for long data: O(n log n)."""
    if len(data) > _RANK_SHORT:
        return _rank_merge_long(data, get, below, least)
    parts = list(map(_BYTES.__getitem__, data))
    ranks = list(map(get, map(bytes.__add__, parts, parts[1:]), _repeat(_NO_RANK)))
    while len(parts) > least:
        r = min(ranks)
        if r >= below:
            break
        i = ranks.index(r)
        parts[i] += parts[i + 1]
        del parts[i + 1], ranks[i]
        if i:
            ranks[i - 1] = get(parts[i - 1] + parts[i], _NO_RANK)
        if i < len(ranks):
            ranks[i] = get(parts[i] + parts[i + 1], _NO_RANK)
    return parts


def _rank_merger(ranks):
    """bytes -> their ids by tiktoken's rule on `ranks` (the rank is the id)."""
    get, id_of = ranks.get, ranks.__getitem__
    return lambda data: list(map(id_of, _rank_merge(data, get)))


def _rank_merge_long(data, get, below, least):
    n = len(data)
    sym = list(map(_BYTES.__getitem__, data))
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    heap = []
    left = n

    def push(p, q):
        rank = get(sym[p] + sym[q], _NO_RANK)
        if rank < below:
            _heapq.heappush(heap, (rank, p, sym[p], sym[q]))

    for i in range(n - 1):
        push(i, i + 1)
    while heap and left > least:
        _, p, a, b = _heapq.heappop(heap)
        q = nxt[p] if sym[p] is a else -1
        if q < 0 or sym[q] is not b:
            continue  # stale: a neighbour changed since
        sym[p] = a + b
        sym[q] = None
        left -= 1
        nxt[p] = nxt[q]
        if nxt[p] >= 0:
            prv[nxt[p]] = p
            push(p, nxt[p])
        if prv[p] >= 0:
            push(prv[p], p)
    return [s for s in sym if s is not None]


def _tiktoken_model(ranks, where):
    """Tokens (id -> bytes) and the merges that ranks imply, by tiktoken's
    own encoding rule: each multi-byte token splits into the two pieces that
    byte-pair encoding with the lower-ranked tokens leaves.  Where that
    leaves three or more, tiktoken's merging of the token's bytes goes on
    with higher-ranked tokens; if it gets down to two pieces, they join into
    the token at its own rank (a merge of a token a later merge makes: 90 of
    Llama 3's tokens), else no merge makes the token and it is given only for
    a pre-token that is the token itself (588 of Llama 3's)."""
    keys, values = list(ranks), list(ranks.values())
    tokens = None
    if (not set(map(type, keys)) - {bytes} and not set(map(type, values)) - {int}
            and (not values or (0 <= min(values) and max(values) < _MAX_ID))
            and b"" not in keys):   # bulk checks in C first
        tokens = dict(zip(values, keys))
        if len(tokens) != len(keys):
            tokens = None
    if tokens is None:
        tokens = _rank_tokens_one_by_one(ranks, where)
        ranks = {t: r for r, t in tokens.items()}   # plain bytes, as tiktoken reads them
    merges, get = [], ranks.get
    for r, t in sorted(tokens.items()):
        if len(t) < 2:
            continue
        parts = _rank_merge(t, get, r, 2)
        if len(parts) > 2:
            parts = _rank_merge(t, get, _MAX_ID, 2)
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return tokens, merges


def _rank_tokens_one_by_one(ranks, where):
    """_tiktoken_model's tokens (rank -> bytes), entry by entry: the error of
    the first bad one (or the tokens, for subclasses of bytes and int: as
    plain bytes, which the core takes)."""
    tokens = {}
    for t, r in ranks.items():
        if not isinstance(t, bytes) or isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"{where}: ranks must map bytes to int, not {_short(t)} -> {_short(r)}")
        t = bytes(t)
        if not t or not 0 <= r < _MAX_ID:
            raise ValueError(f"{where}: bad entry {_short(t)} -> {_short(r)} (tokens are "
                             "non-empty, "
                             f"ranks ints in [0, 2**31))")
        if tokens.setdefault(r, t) != t:
            raise ValueError(f"{where}: rank {r} is given to both {_short(tokens[r])} and "
                             f"{_short(t)}")
    return tokens


class _RankModel:
    """A rank table as Core.tiktoken_model reads it: `ranks`, token bytes ->
    id (every single byte among them; distinct ids in [0, 2**31)), and what
    the Tokenizer asks of a model (max_id, id_of, token, has_id)."""

    __slots__ = ("ranks", "max_id", "_dense", "_tokens")

    def __init__(self, ranks, max_id):
        self.ranks = ranks
        self.max_id = max_id
        self._dense = len(ranks) == max_id + 1   # the ids are 0..max_id
        self._tokens = None

    def tokens(self):
        """id -> bytes (built on first use: a load that never decodes skips it)."""
        if self._tokens is None:
            self._tokens = dict(zip(self.ranks.values(), self.ranks))
        return self._tokens

    def id_of(self, token):
        return self.ranks.get(token)

    def token(self, i):
        return self.tokens().get(i) if 0 <= i <= self.max_id else None

    def has_id(self, i):
        if self._dense and type(i) is int:
            return 0 <= i <= self.max_id
        return i in self.tokens()


class _PinnedRanks(str):
    """The text of a .tiktoken file whose sha256 is one the registry pins and
    the tests read both ways (OpenAI's cl100k_base and o200k_base files): as
    _plain_rank_text checks a file, so it is read without the checks."""

    __slots__ = ()


def _rank_model(source):
    """A .tiktoken file's text or a ranks dict as a _RankModel, or None where
    it is not plain: anything the Tokenizer's own reader (_tiktoken_parse,
    _tiktoken_model, _check_tokens) would read otherwise or refuse, it then
    reads itself, with the same result or error."""
    import binascii

    if type(source) is _PinnedRanks:
        fields = source.split()
        ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))
        return _RankModel(ranks, max(ranks.values()))
    if isinstance(source, str):
        ranks = _plain_rank_text(source)
        if ranks is None:
            return None
    elif type(source) is dict:
        ranks = dict(source)
        if set(map(type, ranks)) - {bytes} or set(map(type, ranks.values())) - {int}:
            return None
    else:
        return None
    ids = ranks.values()
    if not ranks or b"" in ranks:
        return None
    top = max(ids)
    if (min(ids) < 0 or top >= _MAX_ID or len(set(ids)) != len(ranks)
            or not all(map(ranks.__contains__, _BYTES))):
        return None
    return _RankModel(ranks, top)


def _plain_rank_text(text):
    """The ranks of a .tiktoken text with one `base64 rank` line per token,
    the base64 canonical, the ranks ASCII digits, a line feed after each
    line; else None."""
    import binascii

    fields = text.split()
    tokens, ranks = fields[0::2], fields[1::2]
    if len(tokens) != len(ranks) or not tokens:
        return None
    digits = "".join(ranks)
    if not (digits.isascii() and digits.isdigit()) or max(map(len, ranks)) > 10:
        return None
    if text != "\n".join(map(" ".join, zip(tokens, ranks))) + "\n":
        return None   # other white space, empty lines, three fields on a line, no last line feed
    try:
        data = list(map(binascii.a2b_base64, tokens))
    except ValueError:
        return None
    if b"".join(map(binascii.b2a_base64, data)) != "\n".join(tokens).encode("ascii") + b"\n":
        return None   # not canonical: base64.b64decode(validate=True) might read it otherwise
    out = dict(zip(data, map(int, ranks)))
    return out if len(out) == len(data) else None
