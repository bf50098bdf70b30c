"""Learning merges: the training rule over counted pre-tokens (incremental pair
counts and a priority queue)."""

from __future__ import annotations as _annotations

import heapq as _heapq

from .counting import _Counter
from .util import _MAX_ID, _check_int

# Counts are 64-bit in the compiled core: the sum of count x (length - 1) over
# the distinct pre-tokens (which bounds every pair's count) must fit.
MAX_COUNT = 2**63 - 1
COUNT_OVERFLOW = ("the pre-token counts are too large: the sum of count x (length - 1) "
                  "must stay below 2**63")


def _desc_key(token):
    """A str whose ascending order is the descending order of `token`
    (a terminator above every byte makes a prefix sort after its extensions)."""
    return token.translate(_INVERT).decode("latin-1") + "\u0100"


_INVERT = bytes(range(255, -1, -1))

# How training breaks a tie between pairs of the same count: "bytes" (the
# default) takes the greatest (left_bytes, right_bytes); "rustbpe" takes the
# smallest (left_id, right_id), as rustbpe (nanochat's trainer) does.
_TIE_BREAKS = ("bytes", "rustbpe")


def _check_tie_break(tie_break):
    if not isinstance(tie_break, str):
        raise TypeError(f"tie_break must be a str, not {type(tie_break).__name__}")
    if tie_break not in _TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {', '.join(map(repr, _TIE_BREAKS))}, "
                         f"not {tie_break!r}")


def _check_learn_options(n_merges, min_frequency, max_token_bytes, tie_break="bytes"):
    """The options of a core's ``learn_merges``, checked (both cores call it
    first, as the Tokenizer's _train_options checks its own): ``n_merges`` an
    int in [0, 2**31 - 256] (a cap: training stops where the pairs run out),
    ``min_frequency`` an int >= 0,
    ``max_token_bytes`` None or an int >= 1, ``tie_break`` one of _TIE_BREAKS."""
    _check_int("n_merges", n_merges, 0)
    if n_merges > _MAX_ID - 256:
        raise ValueError(f"n_merges {n_merges} would need ids of 2**31 or more (ids are int32)")
    _check_int("min_frequency", min_frequency, 0)
    if max_token_bytes is not None:
        _check_int("max_token_bytes", max_token_bytes, 1)
    _check_tie_break(tie_break)


def _learn_merges(counts, n_merges, min_frequency, max_token_bytes, progress=None, consume=True,
                  tie_break="bytes"):
    """The merge loop: `counts` maps pre-token bytes -> count (or is a
    counter of this core).  Returns the merges as pairs of ids (0..255 are
    bytes, 256 + k the k-th merge).  With `consume`, it empties `counts` (the
    caller's own) once it has copied them.
    `progress`: None or a callable (phase, done, total), told "pretokens",
    then "merge" every 256 merges and at the end.  `tie_break`: see
    _TIE_BREAKS.

    Three steps, named as in the compiled core: _load_words, then
    _next_pair and _apply_merge until n_merges or no pair is left."""
    _check_learn_options(n_merges, min_frequency, max_token_bytes, tie_break)
    if isinstance(counts, _Counter):
        counter, counts = counts, counts.to_dict()
        if consume:
            counter.clear()
    if progress is not None:
        progress("pretokens", len(counts), len(counts))
    limit = max_token_bytes if max_token_bytes is not None else float("inf")
    words = _load_words(counts, consume, min_frequency, limit, tie_break == "rustbpe")
    n_merges = min(n_merges, words.n_symbols - words.n_words)  # each merge takes out a symbol
    merges = []
    if progress is not None:
        progress("merge", 0, n_merges)
    while len(merges) < n_merges:
        pair = _next_pair(words)
        if pair is None:
            break
        merges.append(pair)
        _apply_merge(words, *pair)
        if progress is not None and not len(merges) & 255:
            progress("merge", len(merges), n_merges)
    if progress is not None:
        progress("merge", len(merges), len(merges))
    return merges


class _Words:
    """The merge loop's state.  Every symbol of every distinct pre-token is a
    position in flat arrays linked as lists (sym, nxt, prv; weight: the
    pre-token's count); each pair keeps its count and the positions where it
    starts, so a merge touches only its own occurrences (a 500 KB pre-token is
    no worse than many short ones).  A heap with lazy invalidation picks the
    next pair by (count, greatest bytes), or with `by_id` (count, smallest
    ids): each token's key in `keys` sorts in that order."""

    __slots__ = ("sym", "nxt", "prv", "weight", "pairs", "heap", "tokens", "keys",
                 "min_frequency", "limit", "n_symbols", "n_words", "by_id")


def _load_words(counts, consume, min_frequency, limit, by_id=False):
    """Pre-token counts -> the symbol arrays, each pair's count and
    positions, and the heap of the pairs that may be merged (a _Words).
    `by_id`: ties go to the smallest pair of ids (rustbpe's rule)."""
    w = _Words()
    w.tokens = [bytes([i]) for i in range(256)]
    w.by_id = by_id
    w.keys = keys = list(range(256)) if by_id else [_desc_key(t) for t in w.tokens]
    w.sym, w.nxt, w.prv, w.weight = sym, nxt, prv, weight = [], [], [], []
    pairs = {}  # (a, b) -> [count, the positions where it starts (some stale)...]
    pairs_total = n_words = 0
    get = pairs.get
    for word, count in counts.items():
        n = len(word)
        if n < 2 or count <= 0:
            continue
        pairs_total += count * (n - 1)
        if pairs_total > MAX_COUNT:
            raise ValueError(COUNT_OVERFLOW)
        n_words += 1
        base = len(sym)
        sym.extend(word)
        nxt.extend(range(base + 1, base + n))
        nxt.append(-1)
        prv.append(-1)
        prv.extend(range(base, base + n - 1))
        weight.extend([count] * n)
        for pos, pair in enumerate(zip(word, word[1:]), base):
            e = get(pair)
            if e is None:
                pairs[pair] = [count, pos]
            else:
                e[0] += count
                e.append(pos)
    if consume:
        counts.clear()  # the caller's own dict: free it before the loop
    w.n_symbols, w.n_words = len(sym), n_words
    w.min_frequency, w.limit = min_frequency, limit
    # A pair's count never grows once the merge that makes it is over: one
    # below min_frequency can never be merged, and is forgotten.
    w.pairs = pairs = {pair: e for pair, e in pairs.items() if e[0] >= min_frequency}
    w.heap = [(-e[0], keys[a], keys[b], a, b) for (a, b), e in pairs.items() if limit >= 2]
    _heapq.heapify(w.heap)
    return w


def _next_pair(w):
    """Pop the pair with the highest count (ties: the greatest bytes, or with
    w.by_id the smallest ids), skipping
    stale heap entries; None when no pair is left or the best one is below
    min_frequency (training stops)."""
    heap, get, keys = w.heap, w.pairs.get, w.keys
    while heap:
        neg, _, _, a, b = heap[0]
        e = get((a, b))
        c = e[0] if e is not None else 0
        if c != -neg:  # stale: the count changed since it was pushed
            if c > 0:
                _heapq.heapreplace(heap, (-c, keys[a], keys[b], a, b))
            else:
                _heapq.heappop(heap)
            continue
        if c < w.min_frequency:
            return None
        _heapq.heappop(heap)
        return a, b
    return None


def _apply_merge(w, a, b):
    """Merge (a, b) into a new token at every position that still holds it,
    left to right; move the counts of the neighbour pairs, (x, a) -> (x, new)
    and (b, y) -> (new, y); push the pairs this merge makes onto the heap."""
    # the hot loop of training (every occurrence of every merge): kept in one piece
    sym, nxt, prv, weight, pairs, tokens = w.sym, w.nxt, w.prv, w.weight, w.pairs, w.tokens
    get = pairs.get
    new = len(tokens)
    tokens.append(tokens[a] + tokens[b])
    w.keys.append(new if w.by_id else _desc_key(tokens[new]))
    positions = get((a, b))[1:]
    positions.sort()
    born = []  # the pairs this merge makes
    for p in positions:
        if sym[p] != a:
            continue
        q = nxt[p]
        if q < 0 or sym[q] != b:
            continue
        n = weight[p]
        left, right = prv[p], nxt[q]
        if left >= 0:  # (x, a) loses n, (x, new) gains it
            x = sym[left]
            old = (x, a)
            e = get(old)
            if e is not None:
                e[0] -= n
                if not e[0]:
                    del pairs[old]
            pair = (x, new)
            e = get(pair)
            if e is None:
                pairs[pair] = [n, left]
                born.append(pair)
            else:
                e[0] += n
                e.append(left)
        if right >= 0:  # (b, y) loses n, (new, y) gains it
            y = sym[right]
            old = (b, y)
            e = get(old)
            if e is not None:
                e[0] -= n
                if not e[0]:
                    del pairs[old]
            pair = (new, y)
            e = get(pair)
            if e is None:
                pairs[pair] = [n, p]
                born.append(pair)
            else:
                e[0] += n
                e.append(p)
            prv[right] = p
        sym[p] = new
        sym[q] = -1
        nxt[p] = right
    pairs.pop((a, b), None)
    keys, heap = w.keys, w.heap
    for pair in born:
        e = get(pair)
        if e is None:
            continue
        if e[0] < w.min_frequency:  # never mergeable: its count can only drop
            del pairs[pair]
            continue
        x, y = pair
        if len(tokens[x]) + len(tokens[y]) <= w.limit:
            _heapq.heappush(heap, (-e[0], keys[x], keys[y], x, y))
