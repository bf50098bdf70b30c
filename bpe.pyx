# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""bpe: a byte-level BPE tokenizer with a compiled core.

Same API and same results as ``bpe_fallback`` (which holds the rules, the
special-token policy and the file formats); this module replaces only the hot
loops with typed C: the merge loop of training, a native pre-tokenizer for
the named patterns (on UTF-8), and encoding with a trie over the token bytes
(longest match, a compatibility check with the token before, backtracking)
behind per-thread caches of recent pre-tokens, all run without the GIL.

>>> tok = Tokenizer.train("low lower lowest " * 20, 260, pattern="words")
>>> tok.merges[:2]
[(b'o', b'w'), (b'l', b'ow')]
>>> tok.decode(tok.encode("slowest")) == "slowest"
True
"""

from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memcpy, memcmp, memset, memmove
from libc.stdint cimport int32_t, int64_t, uint64_t, uint32_t, uint16_t, uint8_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport Py_INCREF, PyObject

import operator
import os
import threading

import bpe_fallback as _py
from bpe_fallback import PATTERNS, SPECIAL_TOKENS, __version__  # no-cython-lint
# the public helpers this module does not replace
from bpe_fallback import (CoreProtocol, FileSet, Pipeline, ProgressBar,  # no-cython-lint
                          UnknownTokenError, encoding_name_for_model, file_cuts,  # no-cython-lint
                          gpt4_variant, list_encoding_names, main, pattern_program,  # no-cython-lint
                          pretokenizer, read_jsonl, resolve_pattern, str_to_token,  # no-cython-lint
                          set_num_threads, token_to_str, unpatch_tiktoken)  # no-cython-lint

__all__ = list(_py.__all__)
BACKEND = "cython"


include "_bpe_common.pxi"
include "_bpe_cpython.pxi"
include "_bpe_scanner.pxi"
include "_bpe_bitscan.pxi"
include "_bpe_pattern.pxi"
include "_bpe_counter.pxi"
include "_bpe_trainer.pxi"
include "_bpe_cache.pxi"
include "_bpe_encoder.pxi"
include "_bpe_atoms.pxi"
include "_bpe_scan.pxi"
include "_bpe_tables.pxi"
include "_bpe_load.pxi"
include "_bpe_core.pxi"


class Tokenizer(_py.Tokenizer):
    __doc__ = _py.Tokenizer.__doc__
    core_class = Core


Encoding = Tokenizer
count_pretokens = Tokenizer.count_pretokens


def get_encoding(name, path=None):
    return Tokenizer.get_encoding(name, path)


def encoding_for_model(model_name):
    return Tokenizer.encoding_for_model(model_name)


def patch_tiktoken():
    _py.patch_tiktoken(Tokenizer)


get_encoding.__doc__ = _py.get_encoding.__doc__
patch_tiktoken.__doc__ = _py.patch_tiktoken.__doc__
encoding_for_model.__doc__ = _py.encoding_for_model.__doc__
