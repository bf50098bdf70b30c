#!/usr/bin/env python3
"""Write a synthetic text corpus of any size for scale tests: nothing to download.

    python tools/make_scale_corpus.py OUT --size 1GB [--seed 0] [--eot '<|endoftext|>']

The text is documents of sentences in six made-up languages with their own scripts (two
Latin ones, one with diacritics, Cyrillic, Greek, Arabic and Chinese characters), each with
a Zipfian vocabulary (word of rank r drawn with weight 1 / (r + 2.7)): 1.45 million words,
1.4 million distinct (the two Latin-script languages share a few), the frequent ones short.
Sentences start with a capital, end with . ? or !, hold commas, numbers (counts, years,
decimals), and now and then a misspelt word (a word with a letter more), so the number of
distinct pre-tokens keeps growing with the size of the text, as in real text (Heaps' law),
instead of stopping at the vocabulary as a repeated file would.
Documents are separated by a blank line (or by --eot and a line break).

The same seed writes the same bytes, and a smaller size writes a prefix of a larger one (the
text is made in blocks of one language, independent of the size; the last one is cut at a
line end).  Needs numpy (the words are drawn with numpy's seeded generator, fast enough:
some 30-60 MB/s on one core).
"""

import argparse
import random
import sys
import time

LANGUAGES = {
    # name: (share of the text, vocabulary size, onsets, vowels, codas, capitalized)
    "latin": (0.46, 600_000,
              "b c d f g h j k l m n p r s t v w y z st tr ch sh th br pl gr cl fr".split() + [""],
              "a e i o u ea ou io ai ee oo".split(),
              [""] * 4 + "n r s t l m nd st ng ck rs".split(), True),
    "accented": (0.14, 250_000,
                 "b d f g h k l m n p r s t v w z sch st pf kr".split() + [""],
                 "a e i o u ä ö ü é è ei au ie".split(), [""] * 4 + "n r s t l ß ch nd ng".split(),
                 True),
    "cyrillic": (0.16, 250_000,
                 "б в г д ж з к л м н п р с т ф х ц ч ш щ ст пр кр".split() + [""],
                 "а е и о у ы э ю я ё".split(), [""] * 4 + "н р с т л й м к в".split(), True),
    "greek": (0.08, 120_000,
              "β γ δ ζ θ κ λ μ ν ξ π ρ σ τ φ χ ψ στ".split() + [""],
              "α ε η ι ο υ ω αι ου ει".split(), [""] * 4 + "ς ν ρ σ".split(), True),
    "arabic": (0.10, 150_000,
               "ب ت ث ج ح خ د ذ ر ز س ش ص ض ط ظ ع غ ف ق ك ل م ن ه".split() + [""],
               "ا و ي".split() + [""], [""] * 3 + "ن م ة ت ل".split(), False),
    "chinese": (0.06, 80_000, None, None, None, False),
}
ZIPF_OFFSET = 2.7
BLOCK_WORDS = 1 << 13  # words per block (one language): about 50 KB of text
ROUND = 50  # blocks per round: each language has its share of every round, in a shuffled order


def _syllables(onsets, vowels, codas):
    return sorted({o + v + c for o in onsets for v in vowels for c in codas})


def _vocabulary(name, size, onsets, vowels, codas, seed):
    """`size` distinct words, the frequent (low rank) ones short: rank r spelt as r in the
    bijective base of the syllables, the syllables' order shuffled by the seed."""
    rng = random.Random(f"{seed}-{name}")
    if onsets is None:  # Chinese: one to three characters of the common block
        units = [chr(c) for c in range(0x4E00, 0x4E00 + 6000)]
    else:
        units = [u for u in _syllables(onsets, vowels, codas) if u]
    rng.shuffle(units)
    base = len(units)
    words, seen, r = [], set(), 0
    while len(words) < size:
        r += 1
        n, parts = r, []
        while n:
            n, d = divmod(n - 1, base)
            parts.append(units[d])
        word = "".join(parts)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Language:
    def __init__(self, name, share, size, onsets, vowels, codas, capitalized, seed, np):
        self.name, self.share, self.capitalized = name, share, capitalized
        words = _vocabulary(name, size, onsets, vowels, codas, seed)
        self.words = np.empty(size, dtype=object)
        self.words[:] = words
        self.chinese = onsets is None
        self.letters = sorted(set("".join(words[:2000])))
        # Zipf-Mandelbrot, weight 1 / (r + a): rank r = floor(a * (V/a + 1) ** u - a) for u
        # uniform in [0, 1) (the inverse of the weights' integral: no table to search)
        self.log_span = float(np.log(size / ZIPF_OFFSET + 1))


def _numbers(rng, n):
    """n numbers as text: counts, years and decimals."""
    kind = rng.integers(0, 4, n)
    values = rng.integers(0, 10 ** rng.integers(1, 7, n))
    years = rng.integers(1800, 2030, n)
    out = []
    for k, v, y in zip(kind.tolist(), values.tolist(), years.tolist()):
        out.append(str(y) if k == 0 else f"{v / 100:.2f}" if k == 1 else str(v))
    return out


def make_block(lang, rng, eot, np):
    """One block of documents in `lang`: a str."""
    n = BLOCK_WORDS
    ranks = (ZIPF_OFFSET * np.exp(rng.random(n) * lang.log_span) - ZIPF_OFFSET).astype(np.int64)
    tokens = lang.words[np.minimum(ranks, len(lang.words) - 1)]
    # misspellings (a word with one letter more: a new word now and then) and numbers
    for i in np.flatnonzero(rng.random(n) < 0.004).tolist():
        w = tokens[i]
        at = int(rng.integers(0, len(w) + 1))
        tokens[i] = w[:at] + lang.letters[int(rng.integers(0, len(lang.letters)))] + w[at:]
    numbers = np.flatnonzero(rng.random(n) < 0.02)
    tokens[numbers] = _numbers(rng, len(numbers))
    # what follows each word: a space, a comma, or the end of a sentence, a line, a document
    if lang.chinese:
        space, comma, ends = "", "，", ["。", "？", "！"]
    elif lang.name == "arabic":
        space, comma, ends = " ", "، ", [". ", "؟ ", "! "]
    else:
        space, comma, ends = " ", ", ", [". ", "? ", "! "]
    u = rng.random(n)
    seps = np.zeros(n, dtype=np.int8)
    seps[u < 0.15] = 1   # a comma
    seps[u < 0.09] = 2   # the end of a sentence (about eleven words)
    seps[u < 0.03] = 3   # ... and of its line
    seps[u < 0.004] = 4  # ... and of its document (about 250 words)
    seps[-1] = 4
    doc_end = ("\n" + eot + "\n") if eot else "\n\n"
    # codes: 0 a space, 1 a comma, then each (end, what it ends) pair
    table = [space, comma] + [e if s == 2 else e.rstrip(" ") + ("\n" if s == 3 else doc_end)
                              for s in (2, 3, 4) for e in ends]
    codes = np.where(seps < 2, seps, 2 + (seps - 2) * 3 + rng.integers(0, 3, n))
    if lang.capitalized:
        starts = np.concatenate(([0], np.flatnonzero(seps[:-1] >= 2) + 1))
        tokens[starts] = [w.capitalize() for w in tokens[starts].tolist()]
    merged = np.empty(2 * n, dtype=object)
    merged[0::2] = tokens
    merged[1::2] = np.array(table, dtype=object)[codes]
    return "".join(merged.tolist())


def languages(seed=0, scale=1.0):
    """The languages with their vocabularies (`scale`: of their sizes, for quick tests)."""
    import numpy as np

    return [Language(name, share, max(int(size * scale), 1), *rest, seed, np)
            for name, (share, size, *rest) in LANGUAGES.items()]


def generate(out, size, seed=0, eot=None, quiet=False, scale=1.0):
    """Write `size` bytes (cut at a line end at or before it) of the corpus to `out`;
    returns the bytes written.  `scale`: of the vocabularies' sizes."""
    import numpy as np

    start = time.perf_counter()
    langs = languages(seed, scale)
    if not quiet:
        print(f"vocabulary   {sum(len(lang.words) for lang in langs):,} words in "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    rng = np.random.default_rng(seed)
    rounds = [k for k, lang in enumerate(langs) for _ in range(round(lang.share * ROUND))]
    order = []
    written = 0
    with open(out, "wb") as f:
        while written < size:
            if not order:
                order = rng.permutation(rounds).tolist()
            lang = langs[order.pop()]
            data = make_block(lang, rng, eot, np).encode("utf-8")
            if written + len(data) > size:
                cut = data.rfind(b"\n", 0, size - written)
                data = data[:cut + 1] if cut >= 0 else b""
                f.write(data)
                written += len(data)
                break
            f.write(data)
            written += len(data)
            if not quiet:
                took = time.perf_counter() - start
                print(f"\rwritten      {written / 1e6:,.0f} MB, {written / 1e6 / took:.1f} MB/s",
                      end="", file=sys.stderr)
    if not quiet:
        took = time.perf_counter() - start
        print(f"\rwritten      {written:,} bytes to {out} in {took:.1f} s "
              f"({written / 1e6 / took:.1f} MB/s)", file=sys.stderr)
    return written


def _size(text):
    units = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 1 << 10,
             "MIB": 1 << 20, "GIB": 1 << 30}
    t = text.strip().upper()
    num = t.rstrip("KMGIB")
    unit = t[len(num):]
    try:
        return int(float(num) * units[unit])
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 100MB, 1GB)") from None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the file to write")
    p.add_argument("--size", type=_size, default=10**9, help="bytes, e.g. 100MB, 1GB (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eot", help="a special token written between documents")
    p.add_argument("-q", "--quiet", action="store_true")
    args = p.parse_args(argv)
    generate(args.out, args.size, args.seed, args.eot, args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
