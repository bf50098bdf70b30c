"""The tokenizer's own API: construct, train, encode, decode, special tokens, save
and load.  The extras below add their methods to it as mixins; the public class, Tokenizer, is
composed in api.py."""

from __future__ import annotations as _annotations

import collections.abc as _abc
import itertools as _itertools
import operator as _operator

from .core import Core
from .counting import _count_into
from .files import _atomic_write, _read_text
from .model import (
    _assign_specials,
    _check_merges,
    _check_special_ids,
    _check_tokens,
    _check_untouched_by_merges,
)
from .patterns import (
    _FILE_CUTS,
    PATTERNS,
    _check_specials,
    _line_cut,
    _repair,
    _special_regex,
    pretokenizer,
    resolve_pattern,
)
from .programs import _cut_kind, _text_cut
from .readers import _Lines, _native_dump, _native_head, _native_parse, _native_specials
from .training import _check_tie_break
from .util import (
    _MAX_ID,
    _NONE_ALLOWED,
    _UNSET,
    _as_list,
    _check_int,
    _cpu_count,
    _default_threads,
    _either,
    _gc_paused,
    _name_set,
    _reporter,
    _short,
    _thread_count,
    _thread_map,
)


class _FromCore:
    """One of a Tokenizer's copies of its model (tokens, merges, their
    tables, the pattern's regex), made when it is first read: a Tokenizer
    read by a core's C reader starts with the core alone.  A constructor
    that has the copy sets it instead (an instance attribute hides this)."""

    def __init__(self, make):
        self.make = make

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, tok, owner=None):
        if tok is None:
            return self
        value = tok.__dict__[self.name] = self.make(tok)
        return value


def _decoder_of(tok):
    decoder = dict(tok._tokens)
    for s, i in reversed(tok._specials.items()):  # an id's first name decodes it
        decoder[i] = s.encode("utf-8")
    return decoder


class UnknownTokenError(KeyError, ValueError):
    """An id that is not in the vocabulary: a ValueError, and the KeyError
    tiktoken raises for one.

    >>> Tokenizer.from_merges([]).decode([300])
    Traceback (most recent call last):
    ...
    bpe_fallback.UnknownTokenError: unknown token id 300
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class _StreamSource:
    """encode_iterable's input: its chunks, how many were taken, and from
    them an estimate of the stream's ids (what list() asks for first, to size
    its result once instead of growing it step by step)."""

    def __init__(self, iterable):
        self._chunks = iter(iterable)
        self.taken = 0

    def take(self, k):
        """The next k chunks (fewer at the end)."""
        batch = list(_itertools.islice(self._chunks, k))
        self.taken += len(batch)
        return batch

    def estimate(self, ids):
        """The stream's ids, from the `ids` of the chunks taken so far and the
        input's own length hint (none: `ids`, nothing more is known)."""
        try:
            rest = _operator.length_hint(self._chunks, 0)
        except Exception:  # noqa: BLE001 - a hint is optional; a broken one is none
            rest = 0
        if not self.taken or rest <= 0:
            return ids
        return ids + ids * rest // self.taken


class _Pieces:
    """A long text's pieces between its cuts (`bounds`, the first 0 and the
    last its length), each sliced when asked for: on the thread that encodes
    it (see _thread_map), while the others scan without the GIL, not all
    before the threads start."""

    __slots__ = ("_text", "_bounds")

    def __init__(self, text, bounds):
        self._text, self._bounds = text, bounds

    def __len__(self):
        return len(self._bounds) - 1

    def __getitem__(self, k):
        if not 0 <= k < len(self._bounds) - 1:
            raise IndexError("piece index out of range")
        return self._text[self._bounds[k]:self._bounds[k + 1]]


class _TokenizerBase:
    """The tokenizer's own API: construct, train, encode, decode, special
    tokens, native save and load, over a model (pattern, tokens, merges,
    special tokens) validated once and a core that does the hot work.  The
    public class, Tokenizer (after the extras, below), is this class and the
    extras' mixins; its docstring tells how an instance is made."""

    # ---- construction: every instance's state comes from _from_core ------

    @classmethod
    def _from_core(cls, pattern, core, specials):
        """A new Tokenizer: the one place an instance's state is set (the
        pattern, the special tokens, a built core).  Its copies of the model
        (tokens, merges, their tables) come from the core when first read
        (_FromCore), unless the caller has them and sets them (_create)."""
        self = object.__new__(cls)
        self._pattern = pattern
        self._specials = dict(specials)
        self._all_specials = frozenset(self._specials)
        self._special_res = {}
        self._core = core
        return self

    _CORE_STATE = frozenset(("_pattern", "_specials", "_all_specials", "_special_res", "_core"))
    # the private names the library's classes declare: set where the public class is
    # composed (Tokenizer), so a subclass's own private attributes are not among them
    _library_names = frozenset()

    @classmethod
    def _own_state(cls, tok):
        """The keys of tok's dict that are the library's: what _from_core sets,
        and every private name declared on the class (the model's copies and
        caches, a name); the others (an `encode` a program wraps, say) are a
        subclass's or a program's own."""
        return [k for k in tok.__dict__ if k in cls._CORE_STATE
                or (k[:1] == "_" and k in cls._library_names)]

    @classmethod
    def _sharing(cls, tok):
        """A new instance of `cls` (whose core_class is tok's) holding tok's
        model: the same core and every table tok has built so far, name and
        all, but none of a subclass's own attributes.  The registry and
        unpickling hand these out: one model per process."""
        new = object.__new__(cls)
        new.__dict__.update({k: tok.__dict__[k] for k in cls._own_state(tok)})
        return new

    @classmethod
    def _create(cls, pattern, tokens, merges, specials):
        """Validate a model, build its core and a Tokenizer around it.

        pattern: regex str; tokens: dict id -> bytes (not the specials);
        merges: list of (bytes, bytes), each result in `tokens`;
        specials: dict str -> id, ids not in `tokens`."""
        encoder = _check_tokens(tokens)
        rank_pair, rank_id = _check_merges(merges, encoder)
        _check_special_ids(specials, tokens.__contains__)
        self = cls._from_core(pattern, cls.core_class(
            pattern, encoder, [(a, b, m) for (a, b), m in zip(rank_pair, rank_id)], specials),
            specials)
        self._tokens = dict(tokens)
        self._encoder = encoder
        self._rank_pair = rank_pair
        self._rank_id = rank_id
        return self

    @classmethod
    def _from_model(cls, pattern, model, special_tokens):
        """A Tokenizer from a model a core's C reader gave (see CoreProtocol), with
        special tokens as _with_specials gives them; None when a special
        token takes a token's place (the caller then reads the input itself)."""
        specials, taken = _assign_specials(special_tokens, model.token, model.id_of,
                                           model.max_id)
        if taken:
            return None
        _check_special_ids(specials, model.has_id)
        return cls._from_core(pattern, cls.core_class.from_model(pattern, model, specials),
                              specials)

    # Every other attribute an instance may set on itself is declared on the class
    # (a _FromCore copy above or below, a cache a method fills, what the registry
    # marks), so that __init__ can tell the model's state from a subclass's own.
    _special_ids = _sorted_token_bytes = _state = _sha256 = _registered = None

    _findall = _FromCore(lambda tok: pretokenizer(tok._pattern))
    _tokens = _FromCore(lambda tok: tok._core.tokens())
    _merges = _FromCore(lambda tok: [(tok._tokens[a], tok._tokens[b]) for a, b in tok._rank_pair])
    _encoder = _FromCore(lambda tok: {t: i for i, t in tok._tokens.items()})
    _decoder = _FromCore(_decoder_of)
    _rank_pair = _FromCore(lambda tok: [(a, b) for a, b, _ in tok._core.merges()])
    _rank_id = _FromCore(lambda tok: [m for _, _, m in tok._core.merges()])

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

    #: the class of the core this Tokenizer's instances hold (``bpe.Tokenizer``
    #: has the compiled one; nothing else differs)
    core_class = Core

    @classmethod
    def count_pretokens(cls, texts, *, pattern="gpt2", special_tokens=()):
        """Count the pre-tokens of `texts` (a str or an iterable of str
        documents): the counting step of training.  Counts from several
        workers merge by addition and feed ``Tokenizer.train_from_counts``.
        (The module-level ``count_pretokens`` is this method.)

        >>> sorted(Tokenizer.count_pretokens(["a cat", "a dog"]).items())
        [(b' cat', 1), (b' dog', 1), (b'a', 2)]
        """
        pattern = resolve_pattern(pattern)
        special_re = _special_regex(_check_specials(special_tokens))
        core = cls.core_class
        counter = core.counter(pattern)
        if isinstance(texts, str):
            texts = (texts,)
        for text in texts:
            _count_into(counter, text, core.repair, special_re)
        return counter.to_dict()

    @staticmethod
    def _train_options(vocab_size, pattern, special_tokens, min_frequency, max_token_bytes,
                       tie_break="bytes"):
        _check_tie_break(tie_break)
        pattern = resolve_pattern(pattern)
        specials = _check_specials(special_tokens)
        _check_int("vocab_size", vocab_size, 256 + len(specials))
        if vocab_size > _MAX_ID:
            raise ValueError(f"vocab_size {vocab_size} would need ids of 2**31 or more "
                             f"(ids are int32)")
        _check_int("min_frequency", min_frequency, 0)
        if max_token_bytes is not None:
            _check_int("max_token_bytes", max_token_bytes, 1)
        return pattern, specials

    @classmethod
    def _train_counts(cls, counts, vocab_size, pattern, specials, min_frequency, max_token_bytes,
                      progress, consume=True, tie_break="bytes"):
        n_merges = vocab_size - 256 - len(specials)
        merge_ids = cls.core_class.learn_merges(counts, n_merges, min_frequency, max_token_bytes,
                                                _reporter(progress), consume, tie_break)
        return cls._from_trained(pattern, merge_ids, specials)

    @classmethod
    def train(cls, corpus, vocab_size, *, pattern="gpt2", special_tokens=(), min_frequency=2,
              max_token_bytes=None, progress=False, tie_break="bytes"):
        """Train on a str, or an iterable of str documents (streamed; a
        pre-token never spans two documents).

        ``tie_break``: which of the pairs of the highest count is merged:
        ``"bytes"`` (the default), the greatest ``(left_bytes, right_bytes)``;
        ``"rustbpe"``, the smallest ``(left_id, right_id)``, rustbpe's rule
        (with ``min_frequency=1``, rustbpe's merges exactly).

        >>> tok = Tokenizer.train(["hello hello", "hello world"], 258)
        >>> tok.merges
        [(b'l', b'o'), (b'l', b'lo')]
        >>> Tokenizer.train(["hello hello", "hello world"], 258, tie_break="rustbpe").merges
        [(b'e', b'l'), (b'h', b'el')]
        """
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes, tie_break)
        progress = _reporter(progress)
        counts = cls.count_pretokens(corpus, pattern=pattern, special_tokens=specials)
        return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress, tie_break=tie_break)

    @classmethod
    def train_from_counts(cls, counts, vocab_size, *, pattern="gpt2", special_tokens=(),
                          min_frequency=2, max_token_bytes=None, progress=False,
                          tie_break="bytes"):
        """Train on pre-token counts (bytes or str -> int), from any source.

        >>> Tokenizer.train_from_counts({"abab": 3, b"ab": 1}, 257).merges
        [(b'a', b'b')]
        """
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes, tie_break)
        if not isinstance(counts, _abc.Mapping):
            raise TypeError(f"counts must be a mapping of pre-token (bytes or str) -> int, "
                            f"not {type(counts).__name__}")
        if (type(counts) is dict and set(map(type, counts)) <= {bytes}
                and set(map(type, counts.values())) <= {int}
                and min(counts.values(), default=0) >= 0):
            # already bytes -> int: the merge loop reads them as they are, without a
            # normalized copy (tens of millions of pre-tokens stay one dict)
            return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                     max_token_bytes, progress, consume=False,
                                     tie_break=tie_break)
        clean = {}
        for word, n in counts.items():
            if isinstance(word, str):
                word = _repair(word).encode("utf-8")
            elif not isinstance(word, bytes):
                raise TypeError(f"pre-tokens must be bytes or str, not {type(word).__name__}")
            elif type(word) is not bytes:   # a subclass (numpy.bytes_): its bytes, as held
                word = bytes(memoryview(word))
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"the count of {word!r} must be an int, not {type(n).__name__}")
            if n < 0:
                raise ValueError(f"the count of {word!r} is negative: {n}")
            if n and word:
                clean[word] = clean.get(word, 0) + n
        return cls._train_counts(clean, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress, tie_break=tie_break)

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
            raise TypeError("merges must be a list of (bytes, bytes) pairs, not "
                            f"{type(merges).__name__}")
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
                    raise TypeError(f"vocab must map int ids to bytes, not {_short(i)} -> "
                                    f"{_short(t)}")
        return cls._with_specials(pattern, tokens, merges, special_tokens)

    @classmethod
    def _with_specials(cls, pattern, tokens, merges, special_tokens):
        """Give each special token an id: an explicit one (a mapping), the id
        of a token with the same bytes (which then becomes the special), or
        the next free id."""
        tokens = dict(tokens)
        by_bytes = {} if isinstance(special_tokens, _abc.Mapping) else {
            t: i for i, t in tokens.items()}
        specials, taken = _assign_specials(special_tokens, tokens.get, by_bytes.get,
                                           max(tokens, default=-1))
        if taken:
            _check_untouched_by_merges({tokens[i]: i for i in taken}, specials, merges)
        for i in taken:
            del tokens[i]
        return cls._create(pattern, tokens, merges, specials)

    # ---- encoding -------------------------------------------------------

    def _encode_pieces(self, pieces, out):
        out.extend(self._core.encode_pieces(pieces))
        return out

    def _encode_chunk(self, text, out):
        """Encode text that holds no special tokens (already repaired)."""
        out.extend(self._core.encode_text(text))
        return out

    def encode_ordinary(self, text):
        """Encode `text`, treating special-token text as ordinary text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_ordinary("hi<s>")
        [256, 60, 115, 62]
        """
        if len(text) < self._LONG_TEXT:   # the short calls' path: one comparison
            return self._core.encode_text(text)  # the core repairs the text
        long = self._long_pieces(text)
        if long is not None:
            return self._encode_long(long, frozenset(), frozenset())
        return self._core.encode_text(text)

    # A text this long (in characters) is cut where its pre-tokens do not change
    # (see _FILE_CUTS, _custom_cut) into pieces that threads encode, where the core
    # encodes without the GIL and a call may use several threads (set_num_threads).
    _LONG_TEXT = 1 << 20
    _LONG_PIECE = 1 << 18   # the least a piece is given

    def _long_pieces(self, text, threads=None, disallowed=()):
        """(pieces, threads) of a long text, about four pieces a thread, or
        None where the text is short, one thread serves, or the pattern has
        no safe cut.  Each piece is checked for the `disallowed` names on its
        own: one with a line break could straddle a cut (cuts are next to
        line breaks), so then there is none, as for such a special token."""
        if not isinstance(text, str) or not self._core.releases_gil:
            return None
        if type(text) is not str:   # its characters: a subclass's own len() or slicing may
            text = str.__str__(text)   # say otherwise (a short text's core reads them too)
        if len(text) < self._LONG_TEXT:
            return None
        threads = threads or _default_threads()
        count = min(4 * threads, len(text) // self._LONG_PIECE)
        cut = _text_cut(self._pattern, (*self._specials, *disallowed)) if threads > 1 else None
        if cut is None or count < 2:
            return None
        bounds, step = [0], len(text) // count
        for k in range(1, count):
            at = max(bounds[-1] + 1, k * step)
            m = cut.search(text, at, min(len(text), at + (1 << 16)))
            if m is not None:
                bounds.append(m.end())
        if len(bounds) < 2:
            return None
        bounds.append(len(text))
        pieces = _Pieces(text, bounds)
        threads = min(threads, len(pieces))
        self._core.reserve(threads)
        return pieces, threads

    def _encode_long(self, long, allowed, disallowed):
        """encode of a long text's (pieces, threads), the policy resolved."""
        pieces, threads = long
        return self._core.join_ids(_thread_map(
            lambda piece: self._encode_piece(piece, allowed, disallowed), pieces, threads),
            threads)

    def _encode_piece(self, text, allowed, disallowed):
        """A long text's piece: its ids for join_ids."""
        text = self._core.repair(text)
        self._check_disallowed(text, disallowed)
        if allowed and self._special_re(allowed).search(text):
            return self._encode_allowed(text, allowed, [])
        return self._core.scan_ids(text)

    def _policy(self, allowed_special, disallowed_special):
        """(allowed, disallowed): frozensets of special-token names."""
        if allowed_special is _NONE_ALLOWED and type(disallowed_special) is str \
                and disallowed_special == "all":   # the defaults: nothing to work out
            return _NONE_ALLOWED, self._all_specials
        specials = self._specials
        if allowed_special == "all":
            allowed = frozenset(specials)
        else:
            allowed = _name_set(allowed_special, "allowed_special", 'must be "all" or a set of str')
            if not allowed <= specials.keys():  # tiktoken ignores the others
                allowed = frozenset(allowed.intersection(specials))
        if disallowed_special == "all":
            disallowed = frozenset(specials) - allowed
        elif disallowed_special is None or (type(disallowed_special) in (bool, int, str)
                                            and not disallowed_special):
            disallowed = frozenset()   # tiktoken checks `if disallowed_special:`
        else:
            disallowed = _name_set(disallowed_special, "disallowed_special",
                                   'must be "all" or a collection of str')
        return allowed, disallowed

    def _special_re(self, names):
        rx = self._special_res.get(names)
        if rx is None:
            rx = self._special_res[names] = _special_regex(names)
        return rx

    _FEW_SPECIALS = 8  # up to this many names are looked for one by one, not by a regex

    def _check_disallowed(self, text, disallowed, start=0):
        if disallowed:
            if len(disallowed) <= self._FEW_SPECIALS:  # str's own search, no regex call
                # one scan per distinct start ("<|" for all of OpenAI's): no start, no name
                if not any(head in text for head in {name[:2] for name in disallowed}):
                    return
            m = self._special_re(disallowed).search(text, start, concurrent=True)
            if m:  # tiktoken's words (programs written for it show them to their users)
                token = m.group()
                raise ValueError(
                    f"Encountered text corresponding to disallowed special token {token!r}.\n"
                    f"If you want this text to be encoded as a special token, pass it to "
                    f"`allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
                    f"If you want this text to be encoded as normal text, disable the check for "
                    f"this token by passing `disallowed_special=(enc.special_tokens_set - "
                    f"{{{token!r}}})`.\n"
                    f"To disable this check for all special tokens, pass "
                    f"`disallowed_special=()`.\n")

    def _core_looks(self, allowed, disallowed):
        """Whether the core looks for the disallowed names as it encodes (its
        `stop`): a few of them, and no allowed ones to split by."""
        return not allowed and len(disallowed) <= self._FEW_SPECIALS

    def _stopped(self, text, disallowed):
        """Raise the ValueError of a text the core stopped at: it holds a
        disallowed name."""
        self._check_disallowed(text, disallowed)
        raise AssertionError("the core stopped at a text the policy allows")

    def _encode_allowed(self, text, allowed, out):
        """Append the ids of `text` to `out`, splitting on the allowed special
        tokens; return the list (a compiled backend may return a new one when
        `out` is empty: use the result)."""
        if not allowed:
            if out:
                return self._encode_chunk(text, out)
            return self._core.encode_text(text)  # no copy
        specials = self._specials
        pos = 0
        for m in self._special_re(allowed).finditer(text):
            self._encode_chunk(text[pos:m.start()], out)
            out.append(specials[m.group()])
            pos = m.end()
        return self._encode_chunk(text[pos:], out)

    def encode(self, text, *, allowed_special=_NONE_ALLOWED, disallowed_special="all"):
        """Encode `text` with tiktoken's special-token policy: a disallowed
        special token in the text raises ValueError; allowed ones ("all" or a
        set of names) become their ids; ``disallowed_special=()`` lets them
        through as ordinary text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode("hi<s>", allowed_special={"<s>"})
        [256, 257]
        """
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        if len(text) >= self._LONG_TEXT:   # (one comparison for a short text)
            long = self._long_pieces(text, None, disallowed)
            if long is not None:   # (the cuts never split a name: none has a line feed)
                return self._encode_long(long, allowed, disallowed)
        text = self._core.repair(text)
        if disallowed and self._core_looks(allowed, disallowed):
            done = self._core.encode_texts((text,), tuple(disallowed))
            if not done:
                self._stopped(text, disallowed)
            return done[0]
        self._check_disallowed(text, disallowed)
        return self._encode_allowed(text, allowed, [])

    def encode_batch(self, texts=_UNSET, *, num_threads=None, allowed_special=_NONE_ALLOWED,
                     disallowed_special="all", text=_UNSET):
        """``[encode(t) for t in texts]``, on `num_threads` threads (default:
        see set_num_threads) where the core encodes without the GIL (the
        compiled one), else in this thread.  ``text=``: tiktoken's keyword
        for the texts.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_batch(["hi", "ih"], num_threads=2)
        [[256], [105, 104]]
        """
        if texts is _UNSET or text is not _UNSET:
            texts = _either("encode_batch", "texts", texts, "text", text)
        num_threads = _thread_count(num_threads)
        texts = _as_list(texts, "encode_batch expects a list of str")
        if not texts:
            return []
        if num_threads is None:   # (one text: its pieces may take them all)
            threads = _default_threads()   # (read on both cores: the same errors)
        else:   # never more than the CPUs
            threads = min(num_threads, _cpu_count())
        if not self._core.releases_gil:
            threads = 1
        policy = self._policy(allowed_special, disallowed_special)
        # thousands of new lists: the cycle collector would go over them (and over
        # everything else) again and again while they come; it waits for the end
        with _gc_paused():
            return self._encode_batch(texts, threads, policy)

    def _encode_batch(self, texts, threads, policy):
        if len(texts) == 1:   # one text: its pieces take the threads
            long = self._long_pieces(texts[0], threads, policy[1])
            if long is not None:
                return [self._encode_long(long, *policy)]
        threads = min(threads, len(texts))
        if threads <= 1:
            results = [None] * len(texts)
            for start in range(0, len(texts), 64):
                failed = self._encode_block(texts, start, min(start + 64, len(texts)), policy,
                                            results)
                if failed is not None:
                    raise failed[1]
            return results
        return self._encode_batch_in_threads(texts, threads, policy)

    def _encode_block(self, texts, start, end, policy, results):
        """results[start:end] = what encode gives for texts[start:end] (the
        special-token policy already resolved), the texts with no allowed
        special token in one call of the core.  None, or (i, the exception
        encode raises for texts[i]) for the first text that fails: the texts
        before it are encoded, those after it not."""
        allowed, disallowed = policy
        core_looks = self._core_looks(allowed, disallowed)
        if core_looks and not allowed:   # the core repairs and looks: one call for the block
            try:
                done = self._core.encode_texts(texts[start:end], tuple(disallowed))
            except Exception:  # noqa: BLE001 - a bad text: the way below finds which
                pass
            else:
                results[start : start + len(done)] = done
                if start + len(done) < end:   # that text holds a disallowed special token
                    try:
                        self._stopped(self._core.repair(texts[start + len(done)]), disallowed)
                    except ValueError as e:
                        return start + len(done), e
                return None
        repair = self._core.repair
        ready, failed = [], None
        for i in range(start, end):
            try:
                text = repair(texts[i])
                if not core_looks:
                    self._check_disallowed(text, disallowed)
            except BaseException as e:  # noqa: B036 - given back, raised by the caller
                failed, end = (i, e), i
                break
            ready.append(text)
        try:
            if allowed:
                results[start:end] = [self._encode_allowed(t, allowed, []) for t in ready]
                return failed
            done = self._core.encode_texts(ready, tuple(disallowed) if core_looks else ())
            results[start : start + len(done)] = done
        except BaseException as e:  # noqa: B036 - the first text of the block takes it
            return start, e
        if len(done) < len(ready):  # that text holds a disallowed special token
            try:
                self._stopped(ready[len(done)], disallowed)
            except ValueError as e:
                return start + len(done), e
        return failed

    def _encode_batch_in_threads(self, texts, threads, policy):
        """encode_batch on `threads` threads (this one among them), which take
        the next few texts each as they become free (see _thread_map): an
        error is the one encode would raise first in list order."""
        n = len(texts)
        results = [None] * n
        # Blocks of texts, smaller towards the end (a quarter of a thread's
        # share of what is left, at most 64), so that the threads finish together.
        blocks, start = [], 0
        while start < n:
            size = max(1, min(64, (n - start) // (threads * 4)))
            blocks.append((start, min(start + size, n)))
            start += size

        def encode_block(block):
            failure = self._encode_block(texts, block[0], block[1], policy, results)
            if failure is not None:
                raise failure[1]

        self._core.reserve(threads)
        _thread_map(encode_block, blocks, threads)
        return results

    _STREAM_BLOCK = 1 << 15   # characters encode_iterable gathers before it cuts
    _STREAM_MARGIN = 32        # characters kept back so that a cut never changes a pre-token

    def encode_iterable(self, iterable, *, allowed_special=_NONE_ALLOWED, disallowed_special="all"):
        """Yield the ids of ``encode("".join(iterable))``, holding only a small
        window of text: it is cut where no pre-token or special token can
        change (for "bytes" and custom patterns, only at special tokens and,
        where a pattern of the GPT family allows it, between a letter or digit
        and a line feed, as files are).  The
        special-token policy is that of encode, applied to the raw text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> list(tok.encode_iterable(["h", "i h", "i"]))
        [256, 32, 256]
        """
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        if isinstance(iterable, str):
            iterable = (iterable,)
        source = _StreamSource(iterable)
        # the windows' ids, flattened in C (a generator per id costs as much as encoding)
        return self._core.flatten(self._stream_windows(source, allowed, disallowed),
                                  source.estimate)

    def _stream_windows(self, source, allowed, disallowed):
        """The ids of encode_iterable, a list per window of text."""
        longest = max((len(s) for s in allowed | disallowed), default=1)
        split_pretokens = self._pattern in _FILE_CUTS   # (what encode_prefix reads)
        if not split_pretokens and _cut_kind(self._pattern, tuple(self._specials)) is not None:
            split_pretokens = _line_cut(str, last=True)   # a custom pattern cut at line feeds
        parts, size = [], 0
        checked = 0  # the window's first `checked` characters were searched for disallowed ones
        block = self._STREAM_BLOCK
        take = 1
        while True:
            # small chunks are taken and joined many at a time (nothing per chunk in
            # Python), large ones one by one: a batch holds about a quarter of a window,
            # and never more than 64 chunks
            batch = source.take(take)
            if not batch:
                break
            got = self._join_chunks(batch)
            parts.append(got)
            size += len(got)
            take = max(1, min(64, self._STREAM_BLOCK * len(batch) // (4 * len(got) + 1)))
            if size < block:
                continue
            buf = self._join_chunks(parts)
            # a high surrogate at the end may pair with the next chunk's low one
            tail = buf[-1] if "\ud800" <= buf[-1] <= "\udbff" else ""
            text = self._core.repair(buf[:len(buf) - len(tail)])
            self._check_disallowed(text, disallowed, max(checked - longest + 1, 0))
            cut, out = self._stream_cut(text, longest, split_pretokens, allowed)
            rest = text[cut:] + tail
            parts, size, checked = [rest], len(rest), len(text) - cut
            # scan again only once the window has doubled: linear in the input
            # even when nothing can be cut (one long pre-token, a custom pattern)
            block = max(self._STREAM_BLOCK, 2 * size)
            yield out
        text = self._core.repair(self._join_chunks(parts))
        self._check_disallowed(text, disallowed, max(checked - longest + 1, 0))
        if split_pretokens is True and not allowed:  # the core's own sequence: flatten reads it
            # fastest
            yield self._core.encode_prefix(text, len(text))[1]
        else:
            yield self._encode_allowed(text, allowed, [])

    @staticmethod
    def _join_chunks(parts):
        """The chunks as one str (subclasses are strings); TypeError naming a chunk that is not."""
        try:
            return "".join(parts)
        except TypeError:
            bad = next(p for p in parts if not isinstance(p, str))
            raise TypeError(f"encode_iterable expects str chunks, not "
                            f"{type(bad).__name__}") from None

    def _stream_cut(self, text, longest, split_pretokens, allowed):
        """Encode a prefix of `text` after which no later text can change the
        ids; return (its length, its ids).

        Special tokens that start `longest` characters before the end are
        certain, as are pre-tokens of a named pattern that end
        _STREAM_MARGIN characters before the end of their piece: none of
        those patterns looks further ahead.  `split_pretokens` may instead be
        the regex of a custom pattern's file cuts (see _custom_cut), searching
        from the end: then the text is cut at the last of those before that
        limit."""
        limit = len(text) - longest - self._STREAM_MARGIN
        out = []
        if limit <= 0:
            return 0, out
        start, end = 0, len(text)
        if allowed:
            for m in self._special_re(allowed).finditer(text):
                if m.start() > len(text) - longest:
                    end = m.start()
                    break
                start = m.end()
        limit = min(limit, end - self._STREAM_MARGIN)
        if split_pretokens is not True and limit > start:   # a custom pattern's last cut
            m = split_pretokens.search(text, start, limit) if split_pretokens else None
            start = m.end() if m is not None else start
            return start, self._encode_allowed(text[:start], allowed, out)
        out = self._encode_allowed(text[:start], allowed, out)
        if not split_pretokens or limit <= start:
            return start, out
        cut, ids = self._core.encode_prefix(text[start:end] if start or end < len(text) else text,
                                            limit - start)
        if out:
            out.extend(ids)
            return start + cut, out
        return start + cut, ids  # no copy when no special token came first

    # ---- decoding -------------------------------------------------------

    def _checked_ids(self, ids):
        """The ids as plain ints; TypeError for a non-int, ValueError for an
        id that is not in the vocabulary."""
        clean = []
        for i in ids:   # (a bool is the int it is, as tiktoken takes it)
            if not hasattr(i, "__index__"):
                raise TypeError(f"token ids must be ints, not {type(i).__name__}: {i!r}")
            # an int subclass is its value (int's own __index__: not an override's)
            i = int.__index__(i) if isinstance(i, int) else _operator.index(i)
            if i not in self._decoder:
                raise UnknownTokenError(f"unknown token id {i}")
            clean.append(i)
        return clean

    def decode_bytes(self, ids=_UNSET, *, tokens=_UNSET):
        """The bytes of a sequence of ids (``tokens=``: tiktoken's keyword).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_bytes([256, 33])
        b'hi!'
        """
        if ids is _UNSET or tokens is not _UNSET:
            ids = _either("decode_bytes", "ids", ids, "tokens", tokens)
        if type(ids) is not list:   # bytes are a sequence of ints too, as tiktoken reads them
            ids = list(ids) if isinstance(ids, bytes) else _as_list(
                ids, "ids must be a sequence of int")
        out = self._core.decode_bytes(ids)
        if out is None:  # not all plain ints of the vocabulary
            out = self._core.decode_bytes(self._checked_ids(ids))  # raises, or numpy ints made int
        return out

    def decode(self, ids=_UNSET, errors="replace", *, tokens=_UNSET):
        """Decode ids to text; invalid UTF-8 (a token split mid-character) is
        handled by `errors` (default: replaced by U+FFFD).  ``tokens=``:
        tiktoken's keyword for the ids.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode([256, 33])
        'hi!'
        """
        if ids is _UNSET or tokens is not _UNSET:
            ids = _either("decode", "ids", ids, "tokens", tokens)
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
    def pretokenizer(self):
        """How this tokenizer splits text into pre-tokens: "native" (the
        compiled core's scanner, for the named patterns and every pattern of
        the GPT family: see ``pattern_program``) or "regex" (the ``regex``
        module, under a time limit: the pure-Python core, and patterns
        outside the family).

        >>> Tokenizer.from_merges([], pattern=r"(?<=a)b|.").pretokenizer
        'regex'
        """
        return self._core.pretokenizer

    @property
    def core(self):
        """The core this tokenizer holds (an instance of ``core_class``, which
        keeps ``CoreProtocol``), for tools that call it directly.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.core.encode_text("hi hi") == tok.encode_ordinary("hi hi")
        True
        """
        return self._core

    @property
    def vocab_size(self):
        """One more than the largest id (the size an embedding table needs)."""
        return max(self._decoder) + 1

    def __repr__(self):
        if "_name" in self.__dict__:  # named: from get_encoding, Encoding(...), or .name = ...
            return f"<Encoding {self._name!r}>"
        name = next((k for k, v in PATTERNS.items() if v == self._pattern), "custom")
        return (f"<{type(self).__module__}.Tokenizer vocab_size={self.vocab_size} "
                f"tokens={len(self._tokens)} specials={len(self._specials)} pattern={name}>")

    # ---- equality, the native file (pickling: with tiktoken's, below) ----

    def __eq__(self, other):
        if not isinstance(other, _TokenizerBase):
            return NotImplemented
        # the merges last: a rank table's are derived when first asked for
        return (self._pattern == other._pattern and self._specials == other._specials
                and self._tokens == other._tokens and self._merges == other._merges)

    def __hash__(self):  # equal models hash alike (tiktoken's Encoding is hashable)
        return hash((self._pattern, len(self._tokens), frozenset(self._specials.items())))

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
        return cls._from_native_text(_read_text(path), path)

    @classmethod
    def _from_native_text(cls, text, where):
        tok = cls._load_plain(text, where)
        return tok if tok is not None else cls._create(*_native_parse(text, where))

    @classmethod
    def _load_plain(cls, text, where):
        """load through the core's C reader of the token and merge sections;
        None when it does not take the file (see CoreProtocol)."""
        start = text.find("\n", text.find("\n") + 1) + 1
        got = cls.core_class.native_model(text, start) if start else None
        if got is None:
            return None
        model, end = got
        try:
            pattern = _native_head(_Lines(text[:start], where))
            specials = _native_specials(_Lines(text[end:], where))
        except ValueError:
            return None  # the reference reader says what is wrong, and where
        _check_special_ids(specials, model.has_id)
        return cls._from_core(pattern, cls.core_class.from_model(pattern, model, specials),
                              specials)
