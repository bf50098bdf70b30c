"""The public Tokenizer: its own API and the extras' mixins, and the module-level
functions of tiktoken's API."""

from __future__ import annotations as _annotations

from .cluster import _ClusterWork
from .corpus import _CorpusWork
from .huggingface import _FileFormats
from .registry import _forget_built, _patch
from .tiktoken_api import _TiktokenMethods
from .tokenizer import _TokenizerBase


def get_encoding(name, path=None):
    """One of tiktoken's encodings as a Tokenizer: ``"gpt2"`` / ``"r50k_base"``,
    ``"p50k_base"``, ``"p50k_edit"``, ``"cl100k_base"``, ``"o200k_base"``,
    ``"o200k_harmony"`` (GPT-OSS), with tiktoken's pattern, special tokens and
    ids, or one that a tiktoken plugin defines (see list_encoding_names; built
    as tiktoken builds it, no `path`).  The ranks come from `path` (the
    .tiktoken file, plain or gzipped; for the GPT-2 encodings also GPT-2's
    vocab.json; or a directory holding one of these), or else from tiktoken's
    cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or the system's
    temporary directory ``/data-gym-cache``; shared with tiktoken), or else they
    are downloaded from tiktoken's URL into that cache; either way they must be
    OpenAI's (sha256 checked).  ``BPE_OFFLINE=1``: never a download, a
    FileNotFoundError saying where to put the file.  Without `path`, a process
    builds each encoding once and returns that instance (as tiktoken does).

    >>> get_encoding("o200k")
    Traceback (most recent call last):
    ...
    ValueError: Unknown encoding o200k.
    Plugins found: ['tiktoken_ext.openai_public']
    Known encodings: gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, ...
    >>> get_encoding("cl100k_base", path="no/such/cl100k_base.tiktoken")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no/such/cl100k_base.tiktoken: no such file (the ranks of encoding ...)
    """
    return Tokenizer.get_encoding(name, path)


def encoding_for_model(model_name):
    """``get_encoding(encoding_name_for_model(model_name))``, as tiktoken's."""
    return Tokenizer.encoding_for_model(model_name)


def patch_tiktoken(tokenizer_class=None):
    """Run programs written for tiktoken on this library: after it,
    ``import tiktoken`` (and ``tiktoken.core``, ``tiktoken.model``,
    ``tiktoken.registry``, ``tiktoken.load``, ``tiktoken_ext.openai_public``)
    gives modules made from this library's API, whose ``Encoding`` is
    `tokenizer_class` (default: this module's Tokenizer; the compiled ``bpe``
    passes its own) under tiktoken's name.  Call it before importing the
    programs: a module that imported tiktoken already keeps what it got.
    ``unpatch_tiktoken()`` puts back what sys.modules held.  Calling it again
    is harmless.

    >>> patch_tiktoken()
    >>> import tiktoken
    >>> enc = tiktoken.Encoding("mine", pat_str=PATTERNS["gpt2"], special_tokens={},
    ...                         mergeable_ranks={bytes([b]): b for b in range(256)})
    >>> enc, isinstance(enc, Tokenizer), type(enc).__module__
    (<Encoding 'mine'>, True, 'tiktoken.core')
    >>> unpatch_tiktoken()
    """
    base = Tokenizer if tokenizer_class is None else tokenizer_class
    if not (isinstance(base, type) and issubclass(base, Tokenizer)):
        raise TypeError(f"tokenizer_class must be a Tokenizer class, not {base!r}")
    _patch(base)


class Tokenizer(_TokenizerBase, _TiktokenMethods, _FileFormats, _CorpusWork, _ClusterWork):
    """A byte-level BPE tokenizer: a pre-tokenization pattern, mergeable tokens
    (bytes -> id), the ordered merges and special tokens (str -> id).

    Made by its class methods: train, train_files, train_from_counts,
    from_merges, load, from_file, from_gpt2, from_tiktoken, from_huggingface,
    get_encoding; or as tiktoken's Encoding, ``Tokenizer(name, pat_str=...,
    mergeable_ranks=..., special_tokens=...)``.

    >>> tok = Tokenizer.train("the cat sat on the mat. " * 10, 270, special_tokens=["<|end|>"])
    >>> ids = tok.encode("the cat<|end|>", allowed_special="all")
    >>> ids[-1] == tok.special_tokens["<|end|>"]
    True
    >>> tok.decode(ids)
    'the cat<|end|>'
    """

    # How an instance is made, whichever way in.  A new model (pattern, tokens,
    # merges, special tokens) is read or learned, then _create validates it and
    # builds its core (core_class(...)); or a core's C reader builds the core
    # straight from a file (_from_model, _load_plain).  Either way _from_core
    # makes the instance: the one place a Tokenizer's state is set.
    # Tokenizer(...) below is from_tiktoken under tiktoken's arguments, whose
    # state the new instance adopts (as a subclass's __init__ may call it through
    # super(), as tiktoken's allows); the registry (get_encoding) and unpickling
    # hand out _sharing copies of a model this process has built.

    def __init__(self, name=None, *, pat_str=None, mergeable_ranks=None, special_tokens=None,
                 explicit_n_vocab=None):
        """tiktoken's constructor, ``Encoding(name, *, pat_str, mergeable_ranks,
        special_tokens, explicit_n_vocab=None)`` (``Encoding`` is this class).
        A subclass may call it from its own ``__init__`` through ``super()``.

        >>> ranks = {bytes([b]): b for b in range(256)}
        >>> ranks[b"hi"] = 256
        >>> enc = Tokenizer("mine", pat_str=PATTERNS["gpt2"], mergeable_ranks=ranks,
        ...                 special_tokens={"<s>": 257})
        >>> enc.encode("hi<s>", allowed_special="all"), enc.name
        ([256, 257], 'mine')
        """
        built = type(self)._from_encoding_args(name, pat_str, mergeable_ranks, special_tokens,
                                               explicit_n_vocab)
        # called again (as tiktoken's may be): nothing of the old model stays, neither
        # its state nor what was made from it, nor the old model's place among the
        # models unpickling shares; a subclass's own attributes do stay
        _forget_built(self)
        for key in self._own_state(self):
            del self.__dict__[key]
        self.__dict__.update(built.__dict__)


Tokenizer._library_names = frozenset(
    name for c in Tokenizer.__mro__ for name in vars(c) if name[:1] == "_")
Encoding = Tokenizer  # tiktoken's name for it: Encoding(name, *, pat_str, ...)
count_pretokens = Tokenizer.count_pretokens
