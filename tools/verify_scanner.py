#!/usr/bin/env python3
"""Check the compiled core's native pre-tokenizer against `regex` on whole corpora.

    python tools/verify_scanner.py [FILE ...]     (default: the bench corpora in /tmp/bpe-corpora)

For every named pattern and every file, the pre-tokens of the whole text must be exactly
those of regex.findall(pattern, text). Prints one line per (file, pattern); exits 1 on any
difference, naming the first pre-token that differs.
"""
import os
import sys
import time

import regex

import bpe
import bpe_fallback

CORPORA = os.path.join(os.environ.get("TMPDIR", "/tmp"), "bpe-corpora")
DEFAULT = ["english.txt", "english10.txt", "multilingual.txt", "code.txt"]


def main(argv):
    if bpe.BACKEND != "cython":
        print("bpe is the pure-Python backend: there is no native scanner to check")
        return 1
    paths = argv or [os.path.join(CORPORA, name) for name in DEFAULT]
    failed = False
    for path in paths:
        if not os.path.exists(path):
            print(f"{path}: missing (make it with ../shared/bench/make_corpora.sh)")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in ("gpt2", "cl100k", "o200k", "words"):
            pattern = bpe_fallback.PATTERNS[name]
            start = time.perf_counter()
            ours = bpe._native_pretokens(text, pattern)
            mid = time.perf_counter()
            theirs = regex.findall(pattern, text)
            end = time.perf_counter()
            if ours == theirs:
                verdict = "identical"
            else:
                failed = True
                i = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                         min(len(ours), len(theirs)))
                verdict = (f"DIFFERENT at pre-token {i}: native "
                           f"{ours[i] if i < len(ours) else None!r} vs regex "
                           f"{theirs[i] if i < len(theirs) else None!r}")
            print(f"{os.path.basename(path):18} {name:7} {len(theirs):>10,} pre-tokens  {verdict}"
                  f"  (native {mid - start:.2f} s, regex {end - mid:.2f} s)")
            del ours, theirs
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
