#!/usr/bin/env python3
"""Train a byte-level BPE tokenizer and write it: the library's `bpe train`, run from a clone.

    python tools/train_and_dump.py INPUT... --vocab-size N
                                   [--format native|tiktoken|huggingface|gpt2]
                                   [-o OUT] [--pattern P] [--special TOKEN]... [...]
    python tools/train_and_dump.py      (no arguments: the bundled sample tests/data/corpus.en,
                                         vocab 1000, <|endoftext|>, written to sample.bpe)

Every option is `bpe train`'s (see `python tools/train_and_dump.py --help`); the installed
command `bpe train` is the same code, bpe_fallback.main.
"""

import os
import sys

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "tests", "data", "corpus.en")

if __name__ == "__main__":
    try:
        from bpe_fallback import main
    except ImportError:  # not installed: the clone's own copy
        sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from bpe_fallback import main
    args = sys.argv[1:] or [SAMPLE, "--vocab-size", "1000", "--special", "<|endoftext|>",
                            "-o", "sample.bpe"]
    sys.exit(main(["train", *args]))
