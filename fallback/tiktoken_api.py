"""tiktoken compatibility: tiktoken.Encoding's methods, as a mixin of the
Tokenizer."""

from __future__ import annotations as _annotations

import collections.abc as _abc
import itertools as _itertools
import operator as _operator
import os as _os

import regex as _regex

from .patterns import _NAMED_PATTERNS, _check_pattern
from .programs import _cut_kind
from .regex_syntax import _from_fancy
from .registry import (
    _BUILT_LOCK,
    _ENCODINGS,
    _built,
    _compact_state,
    _plugin_encoding,
    _registered,
    _registry_ranks,
    _unpickle_model,
    _unpickle_registered,
    encoding_name_for_model,
)
from .util import _NONE_ALLOWED, _as_list, _short, _thread_count, _thread_map

_WHITE_SPACE = _regex.compile(r"\p{White_Space}")
_DROP_CONTINUATION = _operator.methodcaller("translate", None, bytes(range(0x80, 0xC0)))


def _int_values(mapping, what):
    """`mapping` with its values as ints (operator.index: numpy's integers
    too); TypeError for a value that is not an integer."""
    if not isinstance(mapping, _abc.Mapping):
        raise TypeError(f"{what} must be a dict, not {type(mapping).__name__}")
    if all(type(v) is int for v in mapping.values()):
        return mapping
    try:
        return {k: _operator.index(v) for k, v in mapping.items()}
    except TypeError:
        bad = next(filter(_not_an_index, mapping.values()), None)
        raise TypeError(f"{what} must map to int ids, not {type(bad).__name__}: "
                        f"{_short(bad)}") from None


def _not_an_index(value):
    """Whether operator.index refuses `value` (a numpy array of several
    numbers has __index__, and raises)."""
    try:
        _operator.index(value)
    except TypeError:
        return True
    return False


_U4 = None  # numpy's little-endian uint32 dtype, once encode_to_numpy has imported numpy


class _TiktokenMethods:
    """Every public method and property of tiktoken.Encoding (0.14) with the
    same names, arguments, results and errors, built on encode / encode_batch /
    decode_bytes (so the compiled backend's core does the work in both).
    Where tiktoken's behaviour is a defect these do better: surrogate pairs and
    lone surrogates never raise; a str passed where a list of str is expected
    raises TypeError instead of being encoded one character at a time."""

    _name = "bpe"
    # True on a model made from tiktoken's ranks (tiktoken's constructor, get_encoding):
    # its ids are ranks, so tiktoken's Encoding rebuilds it from them (see _reduce_patched)
    _from_ranks_exactly = None
    # tiktoken's constructor: the pat_str given (_pat_str gives it back as it was given; the
    # pattern the tokenizer holds is written so that both engines read it alike)
    _pat_given = None

    @classmethod
    def _from_encoding_args(cls, name, pat_str, mergeable_ranks, special_tokens,
                            explicit_n_vocab):
        """``Tokenizer(name, pat_str=..., ...)``, tiktoken's constructor: its
        arguments checked as tiktoken checks them, then from_tiktoken."""
        given = {"name": name, "pat_str": pat_str, "mergeable_ranks": mergeable_ranks,
                 "special_tokens": special_tokens}
        if all(v is None for v in given.values()):
            raise TypeError(
                "make a Tokenizer with Tokenizer.train, train_files, train_from_counts, "
                "from_merges, load, from_gpt2, from_tiktoken or from_huggingface (or as "
                "tiktoken's Encoding: Tokenizer(name, pat_str=..., mergeable_ranks=..., "
                "special_tokens=...))")
        missing = [k for k, v in given.items() if v is None]
        if missing:
            raise TypeError(f"Encoding() needs {', '.join(missing)}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if not isinstance(pat_str, str):
            raise TypeError(f"pat_str must be a str, not {type(pat_str).__name__}")
        # ids as tiktoken takes them: any integer (numpy's too), not a bool or a float
        mergeable_ranks, special_tokens = (_int_values(d, what) for d, what in (
            (mergeable_ranks, "mergeable_ranks"), (special_tokens, "special_tokens")))
        if explicit_n_vocab is not None and (isinstance(explicit_n_vocab, bool)
                                             or not hasattr(explicit_n_vocab, "__index__")):
            raise TypeError(f"explicit_n_vocab must be an int, not "
                            f"{type(explicit_n_vocab).__name__}: {_short(explicit_n_vocab)}")
        if explicit_n_vocab:  # tiktoken's check (an assert there)
            top = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
            if (len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab
                    or top != explicit_n_vocab - 1):
                raise ValueError(f"explicit_n_vocab={explicit_n_vocab}, but there are "
                                 f"{len(mergeable_ranks)} mergeable and {len(special_tokens)} "
                                 f"special tokens, the largest id {top}")
        # pat_str is a regex, as tiktoken reads it: never one of this library's names, and
        # what tiktoken's engine reads otherwise than regex written with tiktoken's meaning
        # (a named pattern's regex is tiktoken's own, tested as such: kept as it is)
        pattern = pat_str if pat_str in _NAMED_PATTERNS else _from_fancy(pat_str)
        tok = cls._from_ranks(_check_pattern(pattern), dict(mergeable_ranks), "ranks",
                              special_tokens)
        tok._name, tok._from_ranks_exactly = name, True
        if pattern != pat_str:
            tok._pat_given = pat_str
        return tok

    # the attributes programs read from an Encoding (tiktoken's README copies them)

    @property
    def _pat_str(self):
        """The pattern (tiktoken's ``Encoding._pat_str``): as tiktoken's constructor was
        given it, else the one this tokenizer holds."""
        return self._pattern if self._pat_given is None else self._pat_given

    @property
    def _mergeable_ranks(self):
        """dict token bytes -> id of every token but the special ones (tiktoken's
        ``Encoding._mergeable_ranks``; a copy)."""
        return dict(self._encoder)

    @property
    def _special_tokens(self):
        """dict special token -> id (tiktoken's ``Encoding._special_tokens``; a copy)."""
        return dict(self._specials)

    @property
    def name(self):
        """The encoding's name (tiktoken's ``Encoding.name``): the registry name
        for ``get_encoding``, else ``"bpe"``; it can be set.

        >>> tok = Tokenizer.from_merges([])
        >>> tok.name
        'bpe'
        >>> tok.name = "mine"; tok.name
        'mine'
        """
        return self._name

    @name.setter
    def name(self, value):
        if not isinstance(value, str):
            raise TypeError(f"name must be a str, not {type(value).__name__}")
        self._name = value

    @property
    def max_token_value(self):
        """The largest id, special tokens included.

        >>> Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"]).max_token_value
        257
        """
        return max(self._decoder)

    @property
    def n_vocab(self):
        """``max_token_value + 1`` (tiktoken's name for ``vocab_size``).

        >>> Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"]).n_vocab
        258
        """
        return max(self._decoder) + 1

    @property
    def eot_token(self):
        """The id of ``<|endoftext|>``; KeyError if there is no such special token.

        >>> Tokenizer.from_merges([], special_tokens=["<|endoftext|>"]).eot_token
        256
        """
        return self._specials["<|endoftext|>"]

    @property
    def special_tokens_set(self):
        """The special tokens' names, as a set.

        >>> sorted(Tokenizer.from_merges([], special_tokens=["<a>", "<b>"]).special_tokens_set)
        ['<a>', '<b>']
        """
        return set(self._specials)

    def is_special_token(self, token):
        """Whether id `token` is a special token's (TypeError if it is not an int).

        >>> tok = Tokenizer.from_merges([], special_tokens=["<s>"])
        >>> tok.is_special_token(256), tok.is_special_token(65)
        (True, False)
        """
        token = _operator.index(token)
        ids = self.__dict__.get("_special_ids")
        if ids is None:
            ids = self._special_ids = frozenset(self._specials.values())
        return token in ids

    def encode_single_token(self, text_or_bytes):
        """The id of a text (str or bytes) that is exactly one token, special
        tokens included; KeyError if it is not one.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_single_token("hi"), tok.encode_single_token(b"<s>")
        (256, 257)
        >>> tok.encode_single_token("hi!")
        Traceback (most recent call last):
        ...
        KeyError: b'hi!'
        """
        if isinstance(text_or_bytes, str):
            data = self._core.repair(text_or_bytes).encode("utf-8")
        elif isinstance(text_or_bytes, bytes):
            data = bytes(text_or_bytes)
        else:
            raise TypeError(f"expected str or bytes, not {type(text_or_bytes).__name__}")
        i = self._encoder.get(data)
        if i is None:
            try:
                i = self._specials.get(data.decode("utf-8"))
            except UnicodeDecodeError:
                pass
        if i is None:
            raise KeyError(data)
        return i

    def encode_ordinary_batch(self, text, *, num_threads=None):
        """``[encode_ordinary(t) for t in text]``, on `num_threads` threads
        (default: the number of CPUs; the compiled backend encodes without
        the GIL).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_ordinary_batch(["hi", "<s>"])
        [[256], [60, 115, 62]]
        """
        text = _as_list(text, "encode_ordinary_batch expects a list of str")
        return self.encode_batch(text, num_threads=num_threads, disallowed_special=())

    def encode_to_numpy(self, text, *, allowed_special=_NONE_ALLOWED, disallowed_special="all"):
        """``encode`` as a numpy array of uint32 (needs numpy).

        >>> Tokenizer.from_merges([(b"h", b"i")]).encode_to_numpy("hi!")
        array([256,  33], dtype=uint32)
        """
        # the policy and the text are checked before numpy is needed, as tiktoken does
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        try:
            import numpy
        except ImportError:
            self._check_disallowed(self._core.repair(text), disallowed)
            raise ImportError("encode_to_numpy needs numpy: pip install numpy "
                              "(or use encode, which returns a list)") from None
        long = self._long_pieces(text, None, disallowed) if len(text) >= self._LONG_TEXT \
            else None
        if long is not None:
            packed = b"".join(_thread_map(lambda piece: self._packed(piece, allowed, disallowed),
                                          *long))
        else:
            packed = self._packed(text, allowed, disallowed)
        global _U4
        if _U4 is None:
            _U4 = numpy.dtype("<u4")
        # read-only, over the packed ids (as tiktoken's over its buffer)
        return numpy.frombuffer(packed, _U4)

    def _packed(self, text, allowed, disallowed):
        """encode_to_numpy's ids as little-endian uint32 (a buffer)."""
        if self._core_looks(allowed, disallowed):
            packed = self._core.pack_text(text, 4, tuple(disallowed))
            if packed is None:
                self._stopped(self._core.repair(text), disallowed)
            return packed
        text = self._core.repair(text)
        self._check_disallowed(text, disallowed)
        if allowed and self._special_re(allowed).search(text):
            return self._core.pack_ids(self._encode_allowed(text, allowed, []), 4)
        return self._core.pack_text(text, 4)

    def _ordinary_tail(self, text, allowed):
        """tiktoken's `_encode_native` + `_increase_last_piece_token_len`: the
        ids of `text` (already repaired and checked) and how many of the last
        ones may change if text were appended: those of the last pre-token
        (none after a special token), grown back over tokens made only of
        spaces, tabs and line feeds."""
        ids = self._encode_allowed(text, allowed, [])
        tail = text
        if allowed:
            last = None
            for last in self._special_re(allowed).finditer(text):  # noqa: B007 - the last one
                pass
            if last is not None:
                tail = text[last.end():]
        pieces = self._findall(self._last_stretch(tail)) if tail else ()
        if not pieces:
            return ids, 0
        n = len(self._encode_pieces([pieces[-1]], []))
        if n and self._is_blank(ids[-n]):
            while n < len(ids) and self._is_blank(ids[-n - 1]):
                n += 1
        return ids, n

    def _last_stretch(self, text):
        """A suffix of `text` whose pre-tokens are the last ones of `text`: from
        the last place near its end where a file may be cut (see _FILE_CUTS
        and _custom_cut), else all of it.  Spares a long text's scan."""
        cut_re = _cut_kind(self._pattern, ())
        if cut_re is not None:
            for size in (1 << 12, 1 << 16):
                if len(text) <= size:
                    break
                window = text[-size:]
                data = window.encode("utf-8")
                last = None
                for last in cut_re.finditer(data):  # noqa: B007 - the last one
                    pass
                if last is not None:
                    return window[len(data[:last.end()].decode("utf-8")):]
        return text

    def _is_blank(self, i):
        t = self._tokens.get(i)
        return t is not None and not t.translate(None, b" \t\n")

    def _bpe_bytes(self, data):
        """tiktoken's byte_pair_encode: merge by rank over raw bytes, no
        pre-tokenization, no whole-token shortcut."""
        return self._core.merge_bytes(data)

    def _sorted_tokens(self):
        """The mergeable tokens' bytes in ascending order, and the length of
        the longest (built once)."""
        tokens = self.__dict__.get("_sorted_token_bytes")
        if tokens is None:
            tokens = sorted(self._tokens.values())
            tokens = self._sorted_token_bytes = (tokens, max(map(len, tokens)))
        return tokens

    def encode_bytes(self, data):
        """Encode bytes that need not be UTF-8 (tiktoken's ``_encode_bytes``);
        special-token text is ordinary text.  Valid UTF-8 gives
        ``encode_ordinary(data.decode())``; otherwise the text before the first
        invalid byte is encoded, and its last pre-token joins the remaining
        bytes, which are merged by rank as one piece (tiktoken's rule).  Unlike
        tiktoken, bytes that start invalid are encoded too, never dropped.
        Always ``decode_bytes(encode_bytes(data)) == data``.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_bytes(b"hi \\xff")
        [256, 32, 255]
        """
        if not isinstance(data, bytes):
            raise TypeError(f"encode_bytes expects bytes, not {type(data).__name__}")
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid = e.start
        ids, n = self._ordinary_tail(data[:valid].decode("utf-8"), frozenset())
        rest = data[valid:]
        if n:
            rest = self.decode_bytes(ids[-n:]) + rest
            del ids[-n:]
        i = self._encoder.get(rest)
        ids.extend([i] if i is not None else self._bpe_bytes(rest))
        return ids

    def _encode_bytes(self, text):
        """encode_bytes under tiktoken's name and argument (its own tests call it)."""
        return self.encode_bytes(text)

    def encode_with_unstable(self, text, *, allowed_special=_NONE_ALLOWED,
                             disallowed_special="all"):
        """Stable ids and the possible completions of the rest (tiktoken's
        rule, for completion-style decoding): returns ``(stable, completions)``
        where ``stable`` encodes a prefix of the text and each completion
        (a list of ids) continues it so that its bytes start with the whole
        text.  The completions are sorted (tiktoken's come in set order).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_with_unstable("say h")
        ([115, 97, 121], [[32, 104], [32, 256]])
        """
        import bisect

        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        text = self._core.repair(text)
        self._check_disallowed(text, disallowed)
        ids, n = self._ordinary_tail(text, allowed)
        if not n:
            return ids, []
        unstable = self.decode_bytes(ids[-n:])
        del ids[-n:]
        (tokens, longest), encoder, size = self._sorted_tokens(), self._encoder, len(unstable)
        found = set()
        # every token that starts with the unstable bytes
        k = bisect.bisect_left(tokens, unstable)
        while k < len(tokens) and tokens[k].startswith(unstable):
            found.add((encoder[tokens[k]],))
            k += 1
        # a token straddling each later place: retokenize prefix + token, keep
        # the ids that cover the unstable bytes (no token is longer than the
        # longest, so earlier places have none)
        for cut in range(max(1, size - longest), size):
            prefix, suffix = unstable[:cut], unstable[cut:]
            k = bisect.bisect_left(tokens, suffix)
            while k < len(tokens) and tokens[k].startswith(suffix):
                whole = prefix + tokens[k]
                k += 1
                try:
                    seq = self.encode_ordinary(whole.decode("utf-8"))
                except UnicodeDecodeError:
                    seq = self._bpe_bytes(whole)
                covered = 0
                for m, i in enumerate(seq):
                    covered += len(self._decoder[i])
                    if covered >= size:
                        seq = seq[:m + 1]
                        break
                found.add(tuple(seq))
        # a split the pattern would make before a final white space character
        if size > 1:
            for width in range(1, min(4, size - 1) + 1):
                try:
                    last = unstable[-width:].decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if len(last) == 1 and _WHITE_SPACE.match(last):
                    found.add(tuple(self._bpe_bytes(unstable[:-width])
                                    + self._bpe_bytes(unstable[-width:])))
                break
        return ids, [list(seq) for seq in sorted(found)]

    def decode_single_token_bytes(self, token):
        """The bytes of one id, special tokens included; KeyError (also a
        ValueError) for an id that is not in the vocabulary.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_single_token_bytes(256)
        b'hi'
        """
        return self.decode_tokens_bytes([token])[0]

    def decode_tokens_bytes(self, tokens):
        """The bytes of each id, as a list (to show how a text was cut).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_tokens_bytes([256, 33])
        [b'hi', b'!']
        """
        ids = _as_list(tokens, "tokens must be a sequence of int")
        if set(map(type, ids)) - {int}:
            ids = self._checked_ids(ids)
        try:
            return list(map(self._decoder.__getitem__, ids))
        except KeyError:
            self._checked_ids(ids)
            raise  # pragma: no cover

    def decode_with_offsets(self, tokens):
        """The text of `tokens` and, for each, the index of the character
        where it starts (of the character it starts inside, when a token
        begins within a multi-byte character); UnicodeDecodeError if the
        bytes are not UTF-8 (as tiktoken).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.decode_with_offsets([256, 32] + list("é".encode()))
        ('hi é', [0, 2, 3, 3])
        """
        parts = self.decode_tokens_bytes(tokens)
        text = b"".join(parts).decode("utf-8")
        # each token adds the characters that start in it (bytes that are not
        # 10xxxxxx); one that starts inside a character belongs to that one
        starts = _itertools.accumulate(map(len, map(_DROP_CONTINUATION, parts)), initial=0)
        offsets = [n - (p[0] & 0xC0 == 0x80) for n, p in zip(starts, parts)]
        return text, offsets

    def decode_batch(self, batch, *, errors="replace", num_threads=None):
        """``[decode(ids, errors) for ids in batch]``.  `num_threads` is
        accepted as tiktoken does; decoding is a copy of bytes, done in order.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_batch([[256], [33, 256]])
        ['hi', '!hi']
        """
        return [b.decode("utf-8", errors)
                for b in self.decode_bytes_batch(batch, num_threads=num_threads)]

    def decode_bytes_batch(self, batch, *, num_threads=None):
        """``[decode_bytes(ids) for ids in batch]`` (see decode_batch).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_bytes_batch([[256], [33]])
        [b'hi', b'!']
        """
        _thread_count(num_threads)
        batch = _as_list(batch, "batch must be a sequence of sequences of int")
        return list(map(self.decode_bytes, batch))

    def token_byte_values(self):
        """The bytes of every token but the special ones, sorted.

        >>> Tokenizer.from_merges([(b"h", b"i")]).token_byte_values()[104:107]
        [b'h', b'hi', b'i']
        """
        return list(self._sorted_tokens()[0])

    @classmethod
    def get_encoding(cls, name, path=None):
        """The same as the module's ``get_encoding``, for this class."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if name not in _ENCODINGS:
            return _plugin_encoding(cls, name, path)
        pin = _ENCODINGS[name][2][1]

        def build(pattern, specials, ranks, source=None):
            tok = cls._from_ranks(pattern, ranks, "ranks", specials)
            tok._name, tok._registered = name, (name, pin, None)
            tok._from_ranks_exactly = True
            return tok

        if path is None:  # tiktoken's cache or a download, under the registry's lock: once
            return _registered(cls, name, lambda: build(*_registry_ranks(name, None)))
        read = _registry_ranks(name, path)
        # the file is OpenAI's (checked): the registry's model too
        tok = cls._sharing(_registered(cls, name, lambda: build(*read)))
        tok._registered = (name, pin, _os.path.abspath(read[3]))
        return tok

    @classmethod
    def encoding_for_model(cls, model_name):
        """The same as the module's ``encoding_for_model``, for this class."""
        return cls.get_encoding(encoding_name_for_model(model_name))

    # ---- pickling: by name as tiktoken's, compactly otherwise --------------

    def __reduce__(self):
        """A registered encoding (from ``get_encoding``) pickles as its name, the
        sha256 of its ranks file and the path it was read from; any other
        tokenizer as its compact state and that state's sha256.  Unpickling a
        model this process has built shares it: the same tables and core."""
        registered = self.__dict__.get("_registered")
        if registered is not None:
            return (_unpickle_registered, (type(self), *registered, self._name))
        key, blob = _compact_state(self)
        with _BUILT_LOCK:
            _built().setdefault((type(self).core_class, key), self)
        return (_unpickle_model, (type(self), key, blob, self._name))
