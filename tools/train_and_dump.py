#!/usr/bin/env python3
"""Train a byte-level BPE tokenizer and write it in the native format.

With no arguments it trains the sample corpus shipped in the repository
(tests/data/corpus.en, vocab 1000, GPT-2's pattern, <|endoftext|> special)
and writes sample.bpe in the current directory:

    python tools/train_and_dump.py
"""
import os
import sys
import time

import bpe

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, os.pardir, "tests", "data", "corpus.en")


def main():
    out = "sample.bpe"
    start = time.perf_counter()
    tok = bpe.Tokenizer.train_files([SAMPLE], 1000, special_tokens=["<|endoftext|>"])
    took = time.perf_counter() - start
    tok.save(out)
    with open(SAMPLE, encoding="utf-8") as f:
        text = f.read()
    n_tokens = len(tok.encode_ordinary(text))
    size = len(text.encode("utf-8"))
    longest = sorted(tok.vocab.values(), key=len, reverse=True)[:5]
    print(f"backend      {bpe.BACKEND}")
    print(f"corpus       {os.path.relpath(SAMPLE)} ({size:,} bytes)")
    print(f"merges       {len(tok.merges)} learned in {took:.2f} s; vocab_size {tok.vocab_size}")
    print(f"compression  {size / n_tokens:.2f} bytes per token on the training text")
    print(f"longest      {', '.join(repr(t.decode('utf-8', 'replace')) for t in longest)}")
    print(f"wrote        {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
