"""The core: the hot work behind a small interface (CoreProtocol), in pure Python."""

from __future__ import annotations as _annotations

import array as _array
import itertools as _itertools
import operator as _operator
import typing as _typing

from .counting import _Counter
from .encoding import _merger, _pack_ids, _PieceCache, _stop_names
from .model import _check_special_ids
from .patterns import _FAST_PATHS, _FILE_CUTS, Pipeline, _compile_pattern, _repair, pretokenizer
from .ranks import _rank_merger, _rank_model, _RankModel, _tiktoken_model
from .training import _check_learn_options, _learn_merges
from .util import _MAX_ID, _short

_chain_from = _itertools.chain.from_iterable

if _typing.TYPE_CHECKING:  # the names of CoreProtocol's annotations
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any, Literal


class _Flattened(_itertools.chain):
    """itertools.chain that also holds its source: CPython 3.11's chain drops
    its reference to a generator that raised, even one still running (an
    input that calls next() on its own stream), and frees it mid-run."""

    @classmethod
    def from_iterable(cls, iterable):
        it = iter(iterable)
        flat = super().from_iterable(it)
        flat.source = it
        return flat


def _check_core_model(pattern, ranks, merges, specials, is_token=None):
    """Validate what a core is built from (``Core(pattern, ranks, merges,
    specials)``; ``Core.from_model`` passes its model's ``has_id`` as
    `is_token` and no ranks): both cores call it first, so a core built by
    hand raises TypeError (a wrong type) or ValueError (a bad value) naming
    the value, and the compiled one never indexes with an unchecked id.
    Ranks map non-empty bytes (every single byte among them) to distinct ids
    in [0, 2**31); each merge is (left id, right id, merged id) of tokens,
    the merged token's bytes being the left's then the right's; specials map
    non-empty str to ids no token and no other special token has.  Bulk
    checks first (a GPT-2-sized model in milliseconds), then the first
    offender is looked for only when one is known to exist."""
    if not isinstance(pattern, (str, Pipeline)):
        raise TypeError(f"a core's pattern must be a str or a Pipeline, not "
                        f"{type(pattern).__name__}")
    if not isinstance(specials, dict):
        raise TypeError(f"a core's specials must be a dict, not {type(specials).__name__}")
    if is_token is None:
        if not isinstance(ranks, dict):
            raise TypeError(f"a core's ranks must be a dict, not {type(ranks).__name__}")
        if not isinstance(merges, list):
            raise TypeError(f"a core's merges must be a list, not {type(merges).__name__}")
        decoder = _check_core_ranks(ranks)
        _check_core_merges(merges, ranks, decoder)
        is_token = decoder.__contains__
    _check_special_ids(specials, is_token)


def _first(items, bad):
    return next(x for x in items if bad(x))


def _check_core_ranks(ranks):
    if set(map(type, ranks)) - {bytes}:
        t = _first(ranks, lambda t: type(t) is not bytes)
        raise TypeError(f"a core's token {_short(t)} must be bytes, not {type(t).__name__}")
    if b"" in ranks:
        raise ValueError(f"a core's token b'' (id {ranks[b'']}) is empty")
    ids = list(ranks.values())
    if set(map(type, ids)) - {int}:
        t = _first(ranks, lambda t: type(ranks[t]) is not int)
        raise TypeError(f"a core's token {_short(t)} has id {_short(ranks[t])}, not an int")
    if ids and not (0 <= min(ids) and max(ids) < _MAX_ID):
        t = _first(ranks, lambda t: not 0 <= ranks[t] < _MAX_ID)
        raise ValueError(f"a core's token {_short(t)} has id {ranks[t]}, outside [0, 2**31)")
    decoder = dict(zip(ids, ranks))
    if len(decoder) != len(ranks):
        seen = {}
        for t, i in ranks.items():
            if seen.setdefault(i, t) is not t:
                raise ValueError(f"a core's id {i} is given to two tokens, {_short(seen[i])} and "
                                 f"{_short(t)}")
    for b in range(256):
        if bytes([b]) not in ranks:
            raise ValueError(f"a core's ranks lack the single byte 0x{b:02x}")
    return decoder


def _check_core_merges(merges, ranks, decoder):
    if set(map(type, merges)) - {tuple, list} or set(map(len, merges)) - {3}:
        k, m = _first(enumerate(merges), lambda km: type(km[1]) not in (tuple, list)
                      or len(km[1]) != 3)
        raise TypeError(f"a core's merge {k} must be (left id, right id, merged id), not "
                        f"{_short(m)}")
    flat = list(_itertools.chain.from_iterable(merges))
    if set(map(type, flat)) - {int}:
        k, m = _first(enumerate(merges), lambda km: set(map(type, km[1])) - {int})
        raise TypeError(f"a core's merge {k} {_short(m)} must hold three ints")
    if not set(flat) <= decoder.keys():
        k, m = _first(enumerate(merges), lambda km: not set(km[1]) <= decoder.keys())
        i = _first(m, lambda i: i not in decoder)
        raise ValueError(f"a core's merge {k} {_short(m)}: {i} is not a token's id")
    left = map(decoder.__getitem__, flat[0::3])
    right = map(decoder.__getitem__, flat[1::3])
    joined = list(map(ranks.get, map(bytes.__add__, left, right)))
    if joined != flat[2::3]:
        k = _first(range(len(merges)), lambda k: joined[k] != merges[k][2])
        a, b, m = merges[k]
        raise ValueError(f"a core's merge {k} {_short(merges[k])} joins "
                         f"{_short(decoder[a] + decoder[b])}, which is not token {m} "
                         f"({_short(decoder[m])})")


@_typing.runtime_checkable
class CoreProtocol(_typing.Protocol):
    """What a Tokenizer asks of its core: the contract that ``bpe_fallback.Core``
    (pure Python) and the compiled ``bpe.Core`` (typed C) both keep, with the
    same results.  A Tokenizer (the policy: API, special tokens, files) holds
    one core and never looks inside it.  tests/test_core_contract.py checks
    that each core has exactly these members, of the same kinds and
    signatures; bpe.pyi declares them once, here, for the compiled Core.

    A core is built as ``Core(pattern, ranks, merges, specials)`` from a model
    the Tokenizer has validated (``check_model`` checks it again): the regex of
    a resolved pattern (or a Pipeline); ranks, token bytes -> id (the special
    tokens excluded); the merges in rank order as (left id, right id, merged
    id); specials, str -> id (names may share an id: the first decodes it).
    Text given to the encoding members holds no special tokens (the Tokenizer
    splits them out), and lone surrogates are repaired as ``repair`` does.
    The members the Tokenizer needs before any core exists (start-up,
    training, checks) are static or class methods.  The C readers
    (tiktoken_model, native_model, hf_model) take the plain case of a file only, with
    every check of the Tokenizer's own readers; their model answers max_id,
    id_of(bytes), token(id) and has_id(id); None means that the Tokenizer
    reads the input itself (with the same result or error).
    """

    # ---- what the Tokenizer reads about its core ---------------------------

    @property
    def releases_gil(self) -> bool:
        """Whether threads encode in parallel (then encode_batch and encode_files use threads)."""

    @property
    def pretokenizer(self) -> Literal["native", "regex"]:
        """How this core splits text: what Tokenizer.pretokenizer reports."""

    # ---- encoding ----------------------------------------------------------

    def encode_text(self, text: str) -> list[int]:
        """The ids of text: its pre-tokens, each merged by rank (encode's unit of work)."""

    def encode_texts(self, texts: Iterable[str], stop: Iterable[str] = ()) -> list[list[int]]:
        """encode_text of each text (repaired) up to the first holding a str of `stop`:
        encode_batch's."""

    def scan_ids(self, text: str) -> Sequence[int]:
        """encode_text's ids as a sequence for join_ids: a long text's piece on a thread."""

    def join_ids(self, parts: Iterable[Sequence[int]], threads: int = 1) -> list[int]:
        """The ids of scan_ids's results one after another, in one list (written by up to
        `threads` threads)."""

    def encode_prefix(self, text: str, limit: int) -> tuple[int, Sequence[int]]:
        """(cut, ids) of the pre-tokens ending by char `limit`: how encode_iterable cuts."""

    def encode_pieces(self, pieces: Iterable[str]) -> list[int]:
        """The ids of pre-tokens already split (encode_with_unstable's stable part)."""

    def merge_bytes(self, data: bytes) -> list[int]:
        """The ids of raw bytes by merge rank alone, no pre-tokens (encode_bytes)."""

    def unrebuilt(self) -> tuple[int, list[int]] | None:
        """(id, ids) of the first token by id (2+ bytes, valid UTF-8) merge_bytes does not
        give back as itself (tokenizers' ignore_merges false), or None."""

    def trie_ids(self, data: bytes) -> list[int]:
        """merge_bytes's ids by the compiled core's trie alone: tests check its trie by it."""

    @staticmethod
    def pretokenize(pattern: str | Pipeline, text: str) -> list[str]:
        """The pre-tokens of text as this core splits them: always ``pretokenizer``'s."""

    @staticmethod
    def flatten(windows: Iterable[Iterable[int]],
                estimate: Callable[[int], int] | None = None) -> Iterator[int]:
        """The ids of id sequences in a row, length hint by `estimate`: encode_iterable's."""

    def reserve(self, threads: int) -> None:
        """Prepare for `threads` threads encoding at once (a warm cache each, in C)."""

    def packer(self, itemsize: int) -> Callable[[str], bytes]:
        """One thread's function text -> pack_ids(encode_text(text)): encode_files' work."""

    def pack_text(self, text: str, itemsize: int, stop: Iterable[str] = ()) -> Any:
        """pack_ids(encode_text(text), itemsize), no list of ids in C: encode_to_numpy's;
        None if the repaired text holds a str of `stop` (the compiled core looks in its
        UTF-8, one memchr pass per distinct first byte).  A bytes-like object: a long
        text's 4-byte ids may come back in the buffer the core wrote them to."""

    # ---- decoding, and the model it was built from -------------------------

    def decode_bytes(self, ids: list[int]) -> bytes | None:
        """The bytes of int ids; None if one is unknown (the Tokenizer then says which)."""

    def tokens(self) -> dict[int, bytes]:
        """id -> bytes of every token but the specials, in id order (the model)."""

    def merges(self) -> list[tuple[int, int, int]]:
        """The merges in rank order as (left id, right id, merged id) (the model)."""

    # ---- start-up: the C readers (this module's core has none) -------------

    @staticmethod
    def tiktoken_model(source: str | dict[bytes, int]) -> Any | None:
        """A .tiktoken text or ranks dict read in C into a model, or None if not plain."""

    @staticmethod
    def native_model(text: str, start: int) -> tuple[Any, int] | None:
        """A native file's tokens and merges from `start` read in C: (model, end) or None."""

    @staticmethod
    def hf_model(vocab: Any, merges: Any) -> Any | None:
        """A tokenizer.json's model.vocab and model.merges (as JSON gave them) read in C
        into a model, or None if not plain."""

    @classmethod
    def from_model(cls, pattern: str | Pipeline, model: Any,
                   specials: dict[str, int]) -> CoreProtocol:
        """A core from what a C reader (tiktoken_model, native_model, hf_model) read;
        TypeError for other input."""

    # ---- training and files ------------------------------------------------

    @staticmethod
    def counter(pattern: str | Pipeline) -> Any:
        """A pre-token counter: add, pack, add_packed, to_dict, clear, len (training)."""

    @staticmethod
    def learn_merges(counts: dict[bytes, int] | Any, n_merges: int, min_frequency: int,
                     max_token_bytes: int | None,
                     progress: Callable[[str, int, int], Any] | None = None,
                     consume: bool = True, tie_break: str = "bytes") -> list[tuple[int, int]]:
        """The merge loop (the training rule) over counts: the merges as pairs of ids."""

    @staticmethod
    def repair(text: str) -> str:
        """text with each lone surrogate replaced by U+FFFD: what is encoded."""

    @staticmethod
    def pack_ids(ids: list[int], itemsize: int) -> bytes:
        """ids as little-endian unsigned ints of `itemsize` (2 or 4) bytes."""

    @staticmethod
    def check_model(pattern: str | Pipeline, ranks: dict[bytes, int] | None,
                    merges: list[tuple[int, int, int]] | None, specials: dict[str, int],
                    is_token: Callable[[int], bool] | None = None) -> None:
        """What a core checks first on what it is built from (TypeError / ValueError)."""

    @staticmethod
    def check_learn_options(n_merges: int, min_frequency: int,
                            max_token_bytes: int | None, tie_break: str = "bytes") -> None:
        """What learn_merges checks first on its options, in both cores."""


class Core:
    """The core in pure Python: it keeps ``CoreProtocol`` (the contract, member
    by member) and is the reference the compiled ``bpe.Core`` is tested
    against.  It merges each pre-token by rank (a heap for long ones) through
    one cache for all threads and holds the GIL while it encodes.  Its one
    reader, ``tiktoken_model``, takes a plain rank table, which it merges by
    tiktoken's rule (the merges derived only when asked for); ``native_model``
    and ``hf_model`` answer None.

    >>> core = Core(PATTERNS["gpt2"], {bytes([b]): b for b in range(256)} | {b"hi": 256},
    ...             [(104, 105, 256)], {})
    >>> core.encode_text("hi hi"), core.encode_pieces(["hi", " hi"]), core.decode_bytes([256, 33])
    ([256, 32, 256], [256, 32, 256], b'hi!')
    """

    releases_gil = False
    pretokenizer = "regex"

    def __init__(self, pattern, ranks, merges, specials):
        _check_core_model(pattern, ranks, merges, specials)
        ranks = dict(ranks)   # the core's own: the caller's dict may change (bpe.Core copies too)
        # an array and a dict of ints, which the garbage collector never walks, and the
        # merged ids as a tuple of the model's own int objects (one object per id in every
        # result; walked once, at the first collection, then untracked): see _PieceCache
        flat = _array.array("q", _itertools.chain.from_iterable(merges))
        rank_id = tuple(m for _, _, m in merges)
        shift = max(ranks.values()).bit_length()
        pair_rank = dict(zip(map(_operator.or_, map(_operator.lshift, flat[0::3],
                                                    _itertools.repeat(shift)), flat[1::3]),
                             range(len(merges))))
        byte_ids = tuple(ranks[bytes([b])] for b in range(256))
        self._start(pattern, ranks, specials, _merger(byte_ids, pair_rank, rank_id, shift))
        self._merges = flat

    def _start(self, pattern, ranks, specials, ids_of):
        """The state both kinds of core share: `ids_of` merges a pre-token's bytes."""
        self._pattern = pattern
        self._split = pretokenizer(pattern)
        self._encoder = ranks
        self._specials = dict(specials)   # decoded from by the first decode
        self._decoder = None   # id -> bytes, built by the first decode
        self._merge_bytes = ids_of
        self._cache = _PieceCache(ranks.get, ids_of)
        self._lookup = self._cache.__getitem__

    counter = staticmethod(_Counter)
    learn_merges = staticmethod(_learn_merges)
    check_model = staticmethod(_check_core_model)
    check_learn_options = staticmethod(_check_learn_options)
    repair = staticmethod(_repair)
    pack_ids = staticmethod(_pack_ids)

    @staticmethod
    def flatten(windows, estimate=None):
        return _Flattened.from_iterable(windows)

    @staticmethod
    def tiktoken_model(source):
        return _rank_model(source)   # a rank table, merged by tiktoken's rule

    @staticmethod
    def native_model(text, start):
        return None  # no reader: the Tokenizer reads the file itself

    @staticmethod
    def hf_model(vocab, merges):
        return None  # likewise

    @classmethod
    def from_model(cls, pattern, model, specials):
        """A core over a rank table (from tiktoken_model): it merges each
        pre-token by tiktoken's rule on the ranks, and derives the merges the
        ranks imply when they are first asked for."""
        if not isinstance(model, _RankModel):
            raise TypeError(f"{cls.__module__}.Core.from_model takes what its tiktoken_model "
                            f"read, not {type(model).__name__}")
        _check_core_model(pattern, None, None, specials, model.has_id)
        self = object.__new__(cls)
        self._start(pattern, model.ranks, specials, _rank_merger(model.ranks))
        self._merges = None
        return self

    def merge_bytes(self, data):
        return list(self._merge_bytes(data))

    def trie_ids(self, data):
        return self.merge_bytes(data)  # no trie here: the rank merge it must equal

    def unrebuilt(self):
        for i, t in self.tokens().items():   # (in id order)
            if len(t) < 2:
                continue
            try:
                t.decode("utf-8")
            except UnicodeDecodeError:
                continue
            ids = self.merge_bytes(t)
            if ids != [i]:
                return i, ids
        return None

    @staticmethod
    def pretokenize(pattern, text):
        return pretokenizer(pattern)(_repair(text))

    def encode_pieces(self, pieces):
        return list(_chain_from(map(self._lookup, pieces)))

    def encode_text(self, text):
        return self.encode_pieces(self._split(_repair(text)))

    def reserve(self, threads):
        _operator.index(threads)  # one cache, and this core encodes in one thread at a time

    def encode_texts(self, texts, stop=()):
        out = []
        stop = _stop_names(stop)
        for text in texts:
            text = _repair(text)
            if any(name in text for name in stop):
                break
            out.append(self.encode_pieces(self._split(text)))
        return out

    def scan_ids(self, text):
        return self.encode_text(text)

    def join_ids(self, parts, threads=1):
        return list(_itertools.chain.from_iterable(parts))

    def encode_prefix(self, text, limit):
        if self._pattern not in _FILE_CUTS:
            raise ValueError("encode_prefix needs the gpt2, cl100k, o200k or words pattern")
        keep, cut = [], 0
        _compile_pattern(self._pattern)
        for m in _FAST_PATHS[self._pattern](text).finditer(text):
            if m.end() > limit:
                break
            keep.append(m.group())
            cut = m.end()
        return cut, self.encode_pieces(keep)

    def _decoding(self):
        decoder = {i: t for t, i in self._encoder.items()}
        for s, i in reversed(self._specials.items()):  # an id's first name decodes it
            decoder[i] = s.encode("utf-8")
        self._decoder = decoder
        return decoder

    def decode_bytes(self, ids):
        if set(map(type, ids)) - {int}:
            return None  # True would be found as id 1
        try:
            return b"".join(map((self._decoder or self._decoding()).__getitem__, ids))
        except KeyError:
            return None

    def packer(self, itemsize):
        _pack_ids([], itemsize)  # the same check as the compiled core's, before any text
        return lambda text: _pack_ids(self.encode_text(text), itemsize)

    def pack_text(self, text, itemsize, stop=()):
        stop = _stop_names(stop)
        text = _repair(text)
        if any(name in text for name in stop):
            return None
        return _pack_ids(self.encode_pieces(self._split(text)), itemsize)

    def tokens(self):
        return {i: t for t, i in sorted(self._encoder.items(), key=_operator.itemgetter(1))}

    def merges(self):
        flat = self._merges
        if flat is None:   # a rank table's, derived once
            ranks = self._encoder
            pairs = _tiktoken_model(ranks, "ranks")[1]
            flat = self._merges = _array.array("q", _itertools.chain.from_iterable(
                (ranks[a], ranks[b], ranks[a + b]) for a, b in pairs))
        return list(zip(flat[0::3], flat[1::3], flat[2::3]))
