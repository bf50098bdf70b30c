#!/usr/bin/env python3
"""Check the compiled core's native pre-tokenizer against `regex` on whole corpora.

    python tools/verify_scanner.py [FILE ...]     (default: the bench corpora in /tmp/bpe-corpora,
                                                   made by tools/make_corpora.sh)

For every named pattern and every file, the pre-token counts of the whole text from the
compiled `bpe.count_pretokens` (the native scanner) must equal those of the pure-Python
`bpe_fallback.count_pretokens` (regex.findall).  Prints one line per (file, pattern); exits 1
on any difference, naming a pre-token whose count differs.
"""
import os
import sys
import time

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
            print(f"{path}: missing (make it with tools/make_corpora.sh)")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in ("gpt2", "cl100k", "o200k", "words"):
            start = time.perf_counter()
            ours = bpe.count_pretokens(text, pattern=name)
            mid = time.perf_counter()
            theirs = bpe_fallback.count_pretokens(text, pattern=name)
            end = time.perf_counter()
            if ours == theirs:
                verdict = "identical"
            else:
                failed = True
                token = next(
                    t for t in sorted(set(ours) | set(theirs)) if ours.get(t) != theirs.get(t)
                )
                verdict = (f"DIFFERENT: {token!r} native {ours.get(token, 0)} "
                           f"vs regex {theirs.get(token, 0)}")
            print(f"{os.path.basename(path):18} {name:7} {sum(theirs.values()):>10,} pre-tokens  "
                  f"{verdict}  (native {mid - start:.2f} s, regex {end - mid:.2f} s)")
            del ours, theirs
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
