#!/usr/bin/env python3
"""Derive the Unicode normalization data of `tokenizers`; write it into fallback/normalization.py.

    python tools/normalization_tables.py [--check]

A tokenizer.json's normalizers (NFC, NFD, NFKC, NFKD) are applied as `tokenizers` applies
them, whatever Python (and its unicodedata) is installed: bpe_fallback ships the data of
tokenizers' own normalizer, probed here from tokenizers itself, code point by code point:

- the canonical decomposition of every code point: NFD(c) where it is not c (in full:
  recursive and canonically ordered); Hangul syllables are left out (computed);
- the compatibility decomposition: NFKD(c) where it is not NFD(c);
- the canonical combining class of every character that NFD leaves alone, found by
  reordering: NFD(x + y) swaps two marks exactly when ccc(x) > ccc(y) > 0.  The marks are
  found against U+0334 (class 1) and U+0301 (class 230); their numbers are Python's
  unicodedata's, each checked against one mark of every class, in both orders, so a class
  tokenizers orders otherwise fails here;
- the composition exclusions: the characters whose NFD has two characters or more that
  NFC does not give back (NFC(c) != c).  The pairs that compose are the others' NFD read
  back (checked here: NFC(a + b) == c for each).

The data goes between the BEGIN/END lines of fallback/normalization.py (then run
tools/amalgamate.py to rebuild bpe_fallback.py), as
zlib-compressed ASCII (base85), with the reference version in _NORM_REFERENCE.  --check
only says whether the shipped data is what tokenizers gives now (exit 1 if not).
"""
import base64
import os
import re
import sys
import unicodedata
import zlib

import tokenizers
from tokenizers import normalizers

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, os.pardir, "fallback", "normalization.py")
BEGIN = "# BEGIN normalization data (tools/normalization_tables.py)\n"
END = "# END normalization data\n"
HANGUL = range(0xAC00, 0xD7A4)
# the Rust crate tokenizers normalizes with, and the Unicode version of its tables
CRATE = "unicode-normalization-alignments 0.1.12, Unicode 9.0.0"


def code_points():
    return [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]


def probe():
    nfd = normalizers.NFD().normalize_str
    nfkd = normalizers.NFKD().normalize_str
    nfc = normalizers.NFC().normalize_str
    canon, compat, excluded = {}, {}, []
    for cp in code_points():
        c = chr(cp)
        d = nfd(c)
        if d != c and cp not in HANGUL:
            canon[cp] = d
        k = nfkd(c)
        if k != d:
            compat[cp] = k
        if len(d) > 1 and cp not in HANGUL and nfc(c) != c:
            excluded.append(cp)

    low, high = "\u0334", "\u0301"   # classes 1 and 230

    def moves(x, y):
        return nfd(x + y) != x + y

    marks = [cp for cp in code_points() if cp not in canon and cp not in HANGUL
             and (moves(chr(cp), low) or moves(high, chr(cp))
                  or moves(low, chr(cp)) or moves(chr(cp), high))]
    ccc = {cp: unicodedata.combining(chr(cp)) for cp in marks}
    if 0 in ccc.values():
        sys.exit(f"unicodedata gives class 0 to a mark tokenizers reorders: "
                 f"{[hex(cp) for cp, v in ccc.items() if not v]}")
    one_of_each = {}
    for cp in marks:
        one_of_each.setdefault(ccc[cp], chr(cp))
    for cp in marks:
        c = chr(cp)
        for value, r in one_of_each.items():
            if moves(c, r) != (ccc[cp] > value) or moves(r, c) != (value > ccc[cp]):
                sys.exit(f"U+{cp:04X}: tokenizers orders it against U+{ord(r):04X} otherwise "
                         f"than classes {ccc[cp]} and {value} say")

    # compositions: every other multi-character canonical decomposition, read back
    back = {d: chr(cp) for cp, d in canon.items() if len(d) > 1 and cp not in excluded}
    for cp, d in canon.items():
        if len(d) > 1 and cp not in excluded:
            a = d[:-1] if len(d) == 2 else back.get(d[:-1])
            if a is None or nfc(a + d[-1]) != chr(cp):
                sys.exit(f"U+{cp:04X}: no pair composes to it")
            if ord(d[-1]) in canon:
                sys.exit(f"U+{cp:04X}: the second of its pair decomposes")
    seconds = {d[-1] for d in back}
    for cp, d in canon.items():   # a composite is left alone when no mark follows it
        if d[0] in seconds or ccc.get(ord(d[0])):
            if cp not in excluded and len(d) > 1:
                sys.exit(f"U+{cp:04X}: a composite starts with a character that composes "
                         f"with what precedes it")
    return canon, compat, ccc, excluded


def encode(canon, compat, ccc, excluded):
    def mapping(m):
        out, prev = [], 0
        for cp in sorted(m):
            out.append(f"{cp - prev:x}:" + " ".join(f"{ord(c):x}" for c in m[cp]))
            prev = cp
        return ";".join(out)

    runs, prev = [], 0   # ccc: runs of consecutive code points of one class
    for cp in sorted(ccc):
        if runs and cp == runs[-1][0] + runs[-1][1] and ccc[cp] == runs[-1][2]:
            runs[-1][1] += 1
        else:
            runs.append([cp, 1, ccc[cp]])
    classes = []
    for start, count, value in runs:
        classes.append(f"{start - prev:x}:{count:x}:{value}")
        prev = start
    gaps, prev = [], 0
    for cp in sorted(excluded):
        gaps.append(f"{cp - prev:x}")
        prev = cp
    text = "\n".join([mapping(canon), mapping(compat), ";".join(classes), ";".join(gaps)])
    blob = base64.b85encode(zlib.compress(text.encode("ascii"), 9)).decode("ascii")
    lines = [f'    "{blob[i:i + 88]}"\n' for i in range(0, len(blob), 88)]
    return ([f'_NORM_REFERENCE = "tokenizers {tokenizers.__version__} ({CRATE})"\n',
             "_NORM_DATA = (\n"] + lines + [")\n"])


def main(argv):
    with open(TARGET, encoding="utf-8") as f:
        source = f.read()
    head, sep, rest = source.partition(BEGIN)
    old, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        sys.exit(f"{TARGET}: no {BEGIN.strip()!r} ... {END.strip()!r} block")
    new = "".join(encode(*probe()))
    if "--check" in argv:
        same = re.sub(r"\s", "", old) == re.sub(r"\s", "", new)
        print("the shipped data is tokenizers' data" if same else
              "the shipped data differs from tokenizers': run tools/normalization_tables.py")
        return 0 if same else 1
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + new + END + tail)
    print(f"wrote {len(new)} characters of normalization data into {os.path.normpath(TARGET)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
