"""A model checked once: tokens, merges and special tokens a core may be built from."""

from __future__ import annotations as _annotations

import collections.abc as _abc

from .patterns import _check_specials, _special_items, _special_set
from .util import _MAX_ID, _short


def _check_tokens(tokens):
    """The encoder (bytes -> id) of a vocabulary (id -> bytes) that holds
    every single byte and no token twice.  Bulk checks in C first; the
    first offender is looked for only when one is known to exist (or for
    subclasses of int and bytes)."""
    ids, values = list(tokens), list(tokens.values())
    encoder = None
    if (not set(map(type, ids)) - {int} and not set(map(type, values)) - {bytes}
            and (not ids or (0 <= min(ids) and max(ids) < _MAX_ID)) and b"" not in values):
        encoder = dict(zip(values, ids))
        if len(encoder) != len(values):
            encoder = None
    if encoder is None:
        encoder = _check_tokens_one_by_one(tokens)
    missing = [b for b in range(256) if bytes([b]) not in encoder]
    if missing:
        raise ValueError(f"the vocabulary lacks {len(missing)} single bytes, e.g. "
                         f"0x{missing[0]:02x}")
    return encoder


def _check_tokens_one_by_one(tokens):
    encoder = {}
    for i, t in tokens.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"token id {_short(i)} is not an int in [0, 2**31)")
        if not isinstance(t, bytes) or not t:
            raise ValueError(f"token {i} must be non-empty bytes, not {_short(t)}")
        other = encoder.setdefault(t, i)
        if other != i:
            raise ValueError(f"token {_short(t)} appears twice, as ids {other} and {i}")
    return encoder


def _check_merges(merges, encoder):
    """(rank -> pair of ids, rank -> merged id) of merges (pairs of bytes)
    whose results and parts are tokens, no pair twice, as tuples (nothing the
    garbage collector walks again).  Several merges may make the same token,
    and a merge may join a token that a later merge makes: merging by lowest
    rank gives them a meaning (tiktoken's and tokenizers'), and real
    vocabularies have them (see _bpe_short).  Bulk checks in C first; the
    first offender is looked for only when one is known to exist."""
    merges = list(merges)
    if not set(map(type, merges)) - {tuple, list} and not set(map(len, merges)) - {2}:
        lefts, rights = [m[0] for m in merges], [m[1] for m in merges]
        if not set(map(type, lefts)) - {bytes} and not set(map(type, rights)) - {bytes}:
            get = encoder.get
            rank_id = tuple(map(get, map(bytes.__add__, lefts, rights)))
            left_ids, right_ids = list(map(get, lefts)), list(map(get, rights))
            rank_pair = tuple(zip(left_ids, right_ids))
            if (None not in rank_id and None not in left_ids and None not in right_ids
                    and len(set(rank_pair)) == len(rank_pair)):
                return rank_pair, rank_id
    return _check_merges_one_by_one(merges, encoder)


def _check_merges_one_by_one(merges, encoder):
    """_check_merges merge by merge: the error of the first merge it cannot
    take (or the result, for subclasses of tuple and bytes)."""
    pair_rank, rank_pair, rank_id = {}, [], []
    for rank, merge in enumerate(merges):
        if not (isinstance(merge, (tuple, list)) and len(merge) == 2
                and all(isinstance(x, bytes) for x in merge)):
            raise ValueError(f"merge {rank} must be a pair of bytes, not {_short(merge)}")
        left, right = merge
        new = encoder.get(left + right)
        if new is None:
            raise ValueError(f"merge {rank} {_short(merge)}: {_short(left + right)} is not "
                             "in the vocabulary")
        ids = []
        for part in (left, right):
            i = encoder.get(part)
            if i is None:
                raise ValueError(f"merge {rank} {_short(merge)}: {_short(part)} is not in the "
                                 "vocabulary")
            ids.append(i)
        pair = (ids[0], ids[1])
        if pair in pair_rank:
            raise ValueError(f"merge {rank} {_short(merge)} repeats merge {pair_rank[pair]}")
        pair_rank[pair] = rank
        rank_pair.append(pair)
        rank_id.append(new)
    return tuple(rank_pair), tuple(rank_id)


def _check_special_ids(specials, is_token):
    """Special tokens (str -> id) must have ids that no token (`is_token(id)`)
    takes.  Several special tokens may share an id, as tiktoken allows (its
    o200k_harmony gives 200018 two names): each name encodes to it, and the
    first name given decodes it (what tiktoken decodes there)."""
    for s, i in specials.items():
        if not isinstance(s, str) or not s:
            raise ValueError(f"special token {_short(s)} must be a non-empty str")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"special token {_short(s)} has a bad id {_short(i)} (ids are ints in "
                             f"[0, 2**31))")
        if is_token(i):
            raise ValueError(f"special token {_short(s)} has id {i}, which is already taken")


def _assign_specials(special_tokens, token_at, id_of, max_id):
    """(specials, taken): each special token's id, and the ids of the tokens
    that become special tokens.  An explicit id (a mapping), or the id of
    the token with the same bytes, or the next id after `max_id`.
    `token_at(id)` and `id_of(bytes)` look the vocabulary up (None: none)."""
    specials, taken = {}, []
    special_tokens = _special_set(special_tokens)
    if isinstance(special_tokens, _abc.Mapping):
        for s, i in _special_items(special_tokens):
            if not 0 <= i < _MAX_ID:
                raise ValueError(f"special token {_short(s)} has id {i}, outside [0, 2**31)")
            if token_at(i) == s.encode("utf-8"):
                taken.append(i)
            specials[s] = i
    else:
        names = _check_specials(special_tokens)
        next_id = max_id + 1
        for s in names:
            i = id_of(s.encode("utf-8"))
            if i is not None and i not in taken:
                taken.append(i)
            else:
                i = next_id
                next_id += 1
            specials[s] = i
    return specials, taken


def _check_untouched_by_merges(taken, specials, merges):
    """ValueError where a token that becomes a special token (`taken`: its
    bytes -> its id) is one that merges make or join: the special token would
    have to stay a mergeable token too, and an id here is one or the other;
    likewise a single byte, which every text may need."""
    for t, i in taken.items():
        if len(t) == 1:
            name = next(s for s, j in specials.items() if j == i)
            raise ValueError(f"special token {_short(name)} would take token {i} ({_short(t)}), "
                             f"a single byte that any text may need: give the special token an "
                             f"id of its own")
    for k, (a, b) in enumerate(merges):
        for t in (a + b, a, b):
            i = taken.get(t)
            if i is not None:
                name = next(s for s, j in specials.items() if j == i)
                raise ValueError(
                    f"special token {_short(name)} would take token {i} ({_short(t)}), which "
                    f"merge {k} ({_short(a)}, {_short(b)}) {'makes' if t == a + b else 'joins'}: "
                    f"give the special token an id of its own")
