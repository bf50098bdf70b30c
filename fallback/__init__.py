"""bpe_fallback: a byte-level BPE tokenizer in one pure-Python file.

Train a vocabulary on your own corpus, encode and decode text with it, and read
and write the files of GPT-2 (vocab.json + merges.txt), tiktoken and Hugging
Face ``tokenizers``.  This module needs only the standard library and
``regex``; it is the reference implementation of the package ``bpe``, whose
compiled core gives the same merges, vocabulary and ids, only faster.  Copy
this file into a project to vendor the tokenizer.

>>> tok = Tokenizer.train("low lower lowest " * 20, 260, pattern="words")
>>> tok.merges[:2]
[(b'o', b'w'), (b'l', b'ow')]
>>> tok.decode(tok.encode("slowest")) == "slowest"
True

The training rule, exactly (both backends, every entry point):

1. The corpus is split on the special tokens (longest first); special-token
   text never merges.
2. Each piece is split by the pattern into pre-tokens; a pre-token's UTF-8
   bytes are its initial symbols; counting is over the multiset of pre-tokens.
3. Each step takes the adjacent symbol pair with the highest count (every
   adjacent position counts, weighted by the pre-token's count); ties go to the
   greatest ``(left_bytes, right_bytes)``.  A count below ``min_frequency``
   stops training.  Every non-overlapping occurrence is merged, left to right.
4. Training stops at ``vocab_size`` (256 bytes + merges + specials) or when no
   pair is left.  Pairs whose token would exceed ``max_token_bytes`` are never
   chosen.
"""

__all__ = ["Tokenizer", "Core", "CoreProtocol", "count_pretokens", "get_encoding", "PATTERNS",
           "BACKEND", "__version__", "resolve_pattern", "pretokenizer", "token_to_str",
           "str_to_token", "file_cuts", "read_jsonl", "ProgressBar", "main", "UnknownTokenError",
           "Encoding", "encoding_for_model", "encoding_name_for_model", "list_encoding_names",
           "patch_tiktoken", "unpatch_tiktoken", "Pipeline", "pattern_program", "FileSet",
           "gpt4_variant", "SPECIAL_TOKENS", "set_num_threads"]

__version__ = "0.1.0"
BACKEND = "python"

# The modules in the order they are joined into bpe_fallback.py: each imports only
# from those before it (tests/test_amalgamation.py checks it).
LAYERS = [
    "util",
    "unicode_tables",
    "normalization",
    "regex_syntax",
    "patterns",
    "programs",
    "counting",
    "training",
    "encoding",
    "ranks",
    "model",
    "core",
    "files",
    "readers",
    "tokenizer",
    "registry",
    "tiktoken_api",
    "oniguruma",
    "formats",
    "huggingface",
    "cutting",
    "workers",
    "corpus",
    "cluster",
    "api",
    "cli",
]
