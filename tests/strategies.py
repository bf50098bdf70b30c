"""Hypothesis strategies for the differential fuzzer (tests/test_differential.py,
tools/fuzz.py): random tokenizer.json files over every component the loader accepts, random
patterns of the GPT family, small rank tables and merge lists, and texts from every Unicode
plane.

What is drawn is chosen by *families* (FAMILIES below): a set of names, all of them by
default. `BPE_DIFF_FAMILIES` narrows it for a run: `all`, a comma-separated list of names, or
`all,-name,-name` to leave some out (e.g. `all,-added_flags` while a fix for them is not
merged yet). Nothing here knows what the library gets wrong: every drawn case is compared
with a reference (see tests/differential.py).
"""

import json
import os

import regex
from hypothesis import strategies as st

from helpers import bytes_to_unicode

FAMILIES = {
    # tokenizer.json components
    "normalizers": "normalizer NFC / NFD / NFKC / NFKD and Sequences of them",
    "splits": "Split pre-tokenizers (Regex from the pattern grammar, or String), Isolated",
    "split_behaviours": "Split behaviours other than Isolated (Removed, MergedWithPrevious, "
                        "MergedWithNext, Contiguous) and invert true",
    "digits": "Digits pre-tokenizers (individual_digits true / false)",
    "byte_level_options": "ByteLevel add_prefix_space and trim_offsets, either value",
    "byte_level_regex": "ByteLevel use_regex true (GPT-2's regex, run by Oniguruma) or false",
    "added_tokens": "added tokens (special, non-normalized, numbered as tokenizers numbers them)",
    "added_flags": "added-token flags: special, normalized, lstrip, rstrip, single_word",
    "added_ids": "added-token ids with gaps, in another order, or a vocabulary token's id",
    "irregular_merges": "several merges making one token; merges joining tokens made later; "
                        "shuffled vocabulary ids",
    # patterns
    "properties": r"\p{..} / \P{..} classes (general categories and scripts)",
    "icase": "(?i:...) groups, of literals and of classes",
    "anchors": "^ and $ (and groups holding them, repeated)",
    "lookahead": r"(?!\S), (?=\s) and other look-aheads",
    "names": "literals that spell a pattern name (gpt2, words, ...)",
    "gpt_parts": "alternatives of gpt2 / cl100k / o200k's own patterns",
    # texts
    "recent_unicode": "recently assigned and unassigned code points, compatibility and "
                      "case-folding characters (U+11DE0, U+1AD5, U+32FF, fi-ligature, ...)",
}


def families(spec=None):
    """The enabled families of a spec ('all', 'a,b', 'all,-a'); default BPE_DIFF_FAMILIES."""
    if spec is None:
        spec = os.environ.get("BPE_DIFF_FAMILIES", "all")
    out = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part == "all":
            out |= set(FAMILIES)
        elif part.startswith("-"):
            out.discard(part[1:])
        elif part in FAMILIES:
            out.add(part)
        else:
            raise ValueError(f"unknown fuzz family {part!r}; known: {', '.join(FAMILIES)}")
    return frozenset(out)


# ---------------------------------------------------------------------------------------
# texts

ASCII = "abstxyABST0123'-.,!?_"
WHITE = " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u2029\u200b\u3000\r\n"
COMBINING = "\u0301\u0308\u0327\u0345\u0323\u20dd\u0e31"
# recently assigned code points (Unicode 12..17), unassigned ones, noncharacters, private use
RECENT = [0x11DE0, 0x11DE3, 0x1AD5, 0x1ACF, 0x32FF, 0x1E4D0, 0x1E4EB, 0x11F00, 0x11F50, 0x31350,
          0x2EBF0, 0x1C89, 0x10D40, 0x10D4A, 0x16D40, 0x16D70, 0x1CC00, 0x1CCF0, 0xA7CB, 0xA7DC,
          0x1F8B0, 0x0CF3, 0x1B4F, 0x1DF25, 0x1E030, 0x0378, 0x0870, 0x2FFFD, 0xE0080, 0x10FFFF,
          0xFFFE, 0xE000, 0xF0000, 0x0B55, 0x10EFC, 0x11B00, 0x1D2C0, 0x2B739, 0x1F6DC]
# characters whose case folding or compatibility form is several characters
FOLDS = "\ufb01\u0149\u01f0\u0390\u00df\u0130\u1e9e\u212a\u017f\u0131\u01c5\u1e9b\u2460" \
        "\u00b2\u2167\u3392\uff71\uff9e\u00bd\ufb2c\u0344"
OTHER = "é日本語😀٣١२Ωωκ한국"


def planes():
    """One code point from any of the 17 planes (assigned or not), surrogates left out."""
    return st.integers(0, 16).flatmap(
        lambda plane: st.integers(plane << 16, (plane << 16) | 0xFFFF)
        .filter(lambda c: not 0xD800 <= c < 0xE000)).map(chr)


def characters(fam):
    parts = [st.sampled_from(ASCII), st.sampled_from(WHITE), st.sampled_from(OTHER),
             st.characters(exclude_categories=("Cs",))]
    if "recent_unicode" in fam:
        parts += [st.sampled_from(RECENT).map(chr), st.sampled_from(FOLDS),
                  st.sampled_from(COMBINING), planes()]
    return st.one_of(parts)


def texts(fam, fragments=()):
    """A short text: characters, runs of digits and letters, the case's own fragments
    (added tokens' contents, the strings merges were learned on), often a final line end."""
    pieces = [characters(fam), st.text(st.sampled_from("ab s'"), min_size=1, max_size=6),
              st.sampled_from(["123", "4567", " 2024", "\n\n", "  ", "'s", " ab"])]
    if "recent_unicode" in fam:
        pieces.append(st.sampled_from(FOLDS + "".join(map(chr, RECENT))))
    if fragments:
        pieces.append(st.sampled_from(sorted(set(fragments))))
    body = st.lists(st.one_of(pieces), max_size=12).map("".join)
    return st.tuples(body, st.sampled_from(["", "", "\n", " ", "\n\n", "\r\n"])).map("".join)


# ---------------------------------------------------------------------------------------
# patterns (one grammar for `regex` and Oniguruma syntax: what they share)

PROPERTIES = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "N", "Nd", "Nl", "No", "P",
              "Po", "S", "Sm", "So", "Z", "Zs", "Cc", "Cf", "Han", "Latin", "Greek", "Arabic"]
LITERALS = ["a", "b", "s", "t", "'", " ", "-", ",", r"\n", r"\r", r"\t", "1", "é", "A", "/",
            r"\.", r"\?"]
NAMES = ["gpt2", "words", "bytes", "cl100k", "o200k", "llama3"]


def _alternatives(pattern):
    """The top-level alternatives of a pattern (no '|' inside groups or classes)."""
    out, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    return out + [pattern[start:]]


def gpt_parts():
    from bpe_fallback import PATTERNS

    return sorted({alt for name in ("gpt2", "cl100k", "o200k")
                   for alt in _alternatives(PATTERNS[name])})


def properties():
    """A Unicode property name, the common ones (L, Lu, Ll, Lt, N) more often."""
    return st.one_of(st.sampled_from(["L", "Lu", "Ll", "Lt", "N"]), st.sampled_from(PROPERTIES))


def _class(fam):
    members = [st.sampled_from([r"\s", r"\r", r"\n", "a-z", "A-Z", "0-9", "'", "a", " ", "é",
                                "-", r"\d"])]
    if "properties" in fam:
        members.append(properties().map(lambda p: rf"\p{{{p}}}"))
    body = st.lists(st.one_of(members), min_size=1, max_size=3).map("".join)
    return st.tuples(st.sampled_from(["[", "[^"]), body).map(lambda t: t[0] + t[1] + "]")


def _atom(fam, depth):
    atoms = [st.sampled_from([r"\s", r"\S", r"\d", r"\w", "."]), _class(fam),
             st.sampled_from(LITERALS)]
    if "properties" in fam:
        atoms.append(st.tuples(st.sampled_from(["p", "P"]), properties())
                     .map(lambda t: rf"\{t[0]}{{{t[1]}}}"))
    if depth < 2:
        atoms.append(_alternation(fam, depth + 1).map(lambda p: f"(?:{p})"))
        if "icase" in fam:
            words = st.sampled_from(["'s", "'t", "ll", "re", "x", "s", "a", "k"])
            inner = [st.lists(words, min_size=1, max_size=3).map("|".join),
                     _alternation(fam, depth + 1)]
            if "properties" in fam:  # a literal, then a class: (?i:x?\p{Lu}), (?i:'s|\p{Lu}+)
                inner.append(st.tuples(words, st.sampled_from(["?", "|", ""]), _class(fam)
                                       | properties().map(lambda p: rf"\p{{{p}}}"),
                                       _quantifier()).map("".join))
            inner = st.one_of(inner)
            atoms.append(inner.map(lambda p: f"(?i:{p})"))
        if "anchors" in fam:
            atoms.append(st.tuples(st.sampled_from(LITERALS + [r"\s"]),
                                   st.sampled_from(["$", "^"]))
                         .map(lambda t: f"(?:{t[0]}|{t[1]})"))
    return atoms


def _quantifier():
    base = st.sampled_from(["", "", "", "?", "*", "+", "{2}", "{1,3}", "{2,}", "{0,2}"])
    return st.tuples(base, st.sampled_from(["", "", "?", "+"])).map(
        lambda t: t[0] + t[1] if t[0] else "")


@st.composite
def _sequence(draw, fam, depth):
    items = []
    for _ in range(draw(st.integers(1, 3))):
        choice = draw(st.integers(0, 9))
        if choice == 0 and "anchors" in fam:  # an anchor, often after a line end
            items.append(draw(st.sampled_from(["", r"\s", r"\n", r"[\r\n]", r"\s+", "a"]))
                         + draw(st.sampled_from(["$", "^"])))
        elif choice == 1 and "lookahead" in fam:
            items.append(draw(st.sampled_from([r"(?!\S)", r"(?=\s)", r"(?!\s)", r"(?=\p{L})"
                                               if "properties" in fam else "(?=a)"])))
        elif choice == 2 and "names" in fam:
            items.append(draw(st.sampled_from(NAMES)))
        else:
            items.append(draw(st.one_of(_atom(fam, depth))) + draw(_quantifier()))
    return "".join(items)


def _alternation(fam, depth=0):
    alts = [_sequence(fam, depth)]
    if depth == 0 and "gpt_parts" in fam:
        alts.append(st.sampled_from(gpt_parts()))
    return st.lists(st.one_of(alts), min_size=1, max_size=4 if depth == 0 else 2).map("|".join)


def _compiles(pattern):
    try:
        regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError):
        return False
    return True


def patterns(fam, whole=False):
    """A random pattern of the GPT family that `regex` compiles.  `whole`: often with a final
    catch-all alternative (so the matches cover the text, as tiktoken needs), sometimes a
    name alone (a pattern that spells a name is that regex in a file)."""
    body = _alternation(fam)
    if whole:
        body = st.tuples(body, st.sampled_from([r"|[\s\S]", r"|\s+|[\s\S]", r"|\s+(?!\S)|\s+",
                                                ""])).map("".join)
    if "gpt_parts" in fam:
        from bpe_fallback import PATTERNS

        body = st.one_of(body, st.sampled_from([PATTERNS[n] for n in ("gpt2", "cl100k",
                                                                       "o200k")]))
    if "names" in fam:
        body = st.one_of(body, st.sampled_from(NAMES))
    return body.filter(_compiles)


# ---------------------------------------------------------------------------------------
# merges, rank tables, tokenizer.json

def seed_alphabet(fam):
    """The characters merges are learned on."""
    chars = list("abst ' \n") + ["é", "日", "1", "2", "ﬁ"]
    if "recent_unicode" in fam:
        chars += ["\U00011de0", "\u32ff"]
    return st.sampled_from(chars)


@st.composite
def merge_table(draw, fam, regular=False):
    """(tokens, merges, seeds): byte tokens then merged ones in the order made (bytes), the
    merges (pairs of bytes) in file order, and the strings they were learned on.  Learned
    like training (a random adjacent pair of a seed's pieces at a time), so texts made of the
    seeds use them.  `regular`: each token made once, every merge after the merges of its
    parts (what a tiktoken rank table or from_merges holds); else, with irregular_merges,
    seeds learned twice (one token made by several merges) and merges swapped."""
    seeds = draw(st.lists(st.lists(seed_alphabet(fam), min_size=2, max_size=7).map("".join),
                          min_size=1, max_size=4))
    irregular = not regular and "irregular_merges" in fam
    pool = seeds * 2 if irregular else seeds
    segs = [[bytes([b]) for b in s.encode()] for s in pool]
    tokens = [bytes([b]) for b in range(256)]
    known = set(tokens)
    merges, pairs = [], set()
    for _ in range(draw(st.integers(0, 20))):
        cands = [(i, j) for i, seg in enumerate(segs) for j in range(len(seg) - 1)]
        if not cands:
            break
        i, j = draw(st.sampled_from(cands))
        a, b = segs[i][j], segs[i][j + 1]
        segs[i][j:j + 2] = [a + b]
        if (a, b) in pairs or (a + b in known and not irregular):
            continue
        pairs.add((a, b))
        merges.append((a, b))
        if a + b not in known:
            known.add(a + b)
            tokens.append(a + b)
    if irregular and len(merges) > 1:
        for _ in range(draw(st.integers(0, 3))):
            k = draw(st.integers(0, len(merges) - 2))
            merges[k], merges[k + 1] = merges[k + 1], merges[k]
    return tokens, merges, seeds


class Ranks(dict):
    """A rank table (bytes -> rank) that prints short: `ranks(merged)` for the one whose bytes
    have their own values as ranks, `ranks(merged, byte_ranks)` otherwise."""

    def __repr__(self):
        merged = {t: r for t, r in self.items() if len(t) > 1}
        byte_ranks = [self[bytes([b])] for b in range(256)]
        if byte_ranks == list(range(256)):
            return f"ranks({merged!r})"
        return f"ranks({merged!r}, {byte_ranks!r})"

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def ranks(merged, byte_ranks=range(256)):
    out = Ranks((bytes([b]), r) for b, r in zip(range(256), byte_ranks))
    out.update(merged)
    return out


class TokenizerJson(str):
    """A tokenizer.json's text that prints short: `tokenizer_json(doc)`, the vocabulary's
    256 byte tokens left out where each has its byte's value as id."""

    def __repr__(self):
        doc = json.loads(self)
        vocab = doc["model"]["vocab"]
        b2u = bytes_to_unicode()
        if all(vocab.get(b2u[b]) == b for b in range(256)):
            doc["model"]["vocab"] = {k: i for k, i in vocab.items()
                                     if not (len(k) == 1 and i < 256 and b2u[i] == k)}
            return f"tokenizer_json({doc!r})"
        return f"tokenizer_json({doc!r}, byte_tokens=False)"

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def tokenizer_json(doc, byte_tokens=True):
    """The text of `doc`, with the 256 byte tokens added at their values' ids unless
    `byte_tokens` is False."""
    if byte_tokens:
        b2u = bytes_to_unicode()
        doc = json.loads(json.dumps(doc))
        doc["model"]["vocab"] = {**{b2u[b]: b for b in range(256)}, **doc["model"]["vocab"]}
    return TokenizerJson(json.dumps(doc, ensure_ascii=False))


@st.composite
def rank_tables(draw, fam):
    """(ranks, seeds): a tiktoken rank table (bytes -> rank), byte ranks maybe shuffled."""
    tokens, _, seeds = draw(merge_table(fam, regular=True))
    byte_ranks = list(range(256))
    if "irregular_merges" in fam and draw(st.booleans()):
        byte_ranks = draw(st.permutations(byte_ranks))
    return ranks({t: 256 + k for k, t in enumerate(tokens[256:])}, byte_ranks), seeds


ADDED_TEXTS = ["<|endoftext|>", "<s>", "[X]", "ab", "a", "b", "bc", "abc", " a", "s ", "ﬁ", "fi",
               "é", "e\u0301", "\n", " ", "AB", "ß", "ss"]


@st.composite
def added_tokens(draw, fam, vocab, seeds):
    """tokenizer.json's added_tokens: contents from the seeds, the vocabulary's own strings
    and a few special-looking, normalization-sensitive or space-edged strings."""
    if "added_tokens" not in fam:
        return []
    contents = draw(st.lists(st.one_of(
        st.sampled_from(ADDED_TEXTS + (["\U00011de0", "\u32ff", "令和"]
                                       if "recent_unicode" in fam else [])),
        st.sampled_from(seeds),
        st.sampled_from(sorted(vocab, key=lambda k: (len(k) == 1, k))[:40]),
        st.sampled_from(seeds).map(lambda s: " " + s.strip())),
        max_size=4, unique=True).filter(lambda xs: all(xs)))
    entries = []
    size, fresh = len(vocab), 0
    for content in contents:
        if content in vocab:
            i = vocab[content]
        else:
            i = size + fresh
            fresh += 1
        flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                 "special": True}
        if "added_flags" in fam:  # special and normalized either way; the others now and then
            flags["special"], flags["normalized"] = draw(st.booleans()), draw(st.booleans())
            if draw(st.integers(0, 3)) == 0:
                flags.update((k, draw(st.booleans())) for k in ("single_word", "lstrip",
                                                                "rstrip"))
        entries.append({"id": i, "content": content, **flags})
    if "added_ids" in fam and entries:
        how = draw(st.sampled_from(["as numbered", "gaps", "swapped", "vocabulary id"]))
        ids = [e["id"] for e in entries]
        if how == "gaps":
            gap = 0
            for k in range(len(ids)):
                gap += draw(st.integers(0, 3))
                ids[k] += gap
        elif how == "swapped":
            ids = draw(st.permutations(ids))
        elif how == "vocabulary id":
            k = draw(st.integers(0, len(ids) - 1))
            ids[k] = draw(st.sampled_from(sorted(vocab.values())))
        for e, i in zip(entries, ids):
            e["id"] = i
    return entries


def _normalizer(fam):
    if "normalizers" not in fam:
        return st.none()
    form = st.sampled_from(["NFC", "NFD", "NFKC", "NFKD"]).map(lambda f: {"type": f})
    return st.one_of(st.none(), form, st.lists(form, min_size=1, max_size=3).map(
        lambda xs: {"type": "Sequence", "normalizers": xs}))


def _split(fam):
    behaviours = ["Isolated"]
    if "split_behaviours" in fam:
        behaviours += ["Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
    regexes = [patterns(fam)]
    if "anchors" in fam:  # where Oniguruma's ^ and $ (line anchors) may differ: at line ends
        regexes.append(st.tuples(st.sampled_from([r"\s^", r"\n^", r"\s+^", r"^\s", r"\s$",
                                                  r"a$", r"$\n"]),
                                 patterns(fam)).map("|".join))
    pattern = st.one_of(st.one_of(regexes).map(lambda p: {"Regex": p}),
                        st.sampled_from(["a", " ", "'s", "\n", "1"]
                                        + (NAMES if "names" in fam else [])).map(
                            lambda s: {"String": s}))
    return st.builds(lambda p, b, inv: {"type": "Split", "pattern": p, "behavior": b,
                                        "invert": inv},
                     pattern, st.sampled_from(behaviours),
                     st.booleans() if "split_behaviours" in fam else st.just(False))


def _pre_tokenizer(fam):
    flag = st.booleans() if "byte_level_options" in fam else st.just(False)
    use_regex = st.booleans() if "byte_level_regex" in fam else st.just(False)
    byte_level = st.builds(lambda a, t, u: {"type": "ByteLevel", "add_prefix_space": a,
                                            "trim_offsets": t, "use_regex": u},
                           flag, st.booleans(), use_regex)
    steps = []
    if "splits" in fam:
        steps.append(_split(fam))
    if "digits" in fam:
        steps.append(st.builds(lambda d: {"type": "Digits", "individual_digits": d},
                               st.booleans()))
    before = st.lists(st.one_of(steps), max_size=3) if steps else st.just([])
    return st.tuples(before, byte_level, st.booleans()).map(
        lambda t: t[1] if not t[0] and t[2] else
        {"type": "Sequence", "pretokenizers": t[0] + [t[1]]})


@st.composite
def tokenizer_jsons(draw, fam):
    """(doc, fragments): a tokenizer.json (a dict) and the strings its texts should hold."""
    b2u = bytes_to_unicode()

    def s(b):
        return "".join(b2u[x] for x in b)

    tokens, merges, seeds = draw(merge_table(fam))
    ids = list(range(len(tokens)))
    if "irregular_merges" in fam and draw(st.booleans()):
        ids = draw(st.permutations(ids))
    vocab = {s(t): i for t, i in zip(tokens, ids)}
    as_strings = draw(st.booleans())
    doc = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": draw(added_tokens(fam, vocab, seeds)),
        "normalizer": draw(_normalizer(fam)),
        "pre_tokenizer": draw(_pre_tokenizer(fam)),
        "post_processor": draw(st.sampled_from([None, {"type": "ByteLevel",
                                                       "add_prefix_space": False,
                                                       "trim_offsets": False,
                                                       "use_regex": False}])),
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": draw(st.booleans()), "vocab": vocab,
                  "merges": [f"{s(a)} {s(b)}" if as_strings else [s(a), s(b)]
                             for a, b in merges]},
    }
    fragments = list(seeds) + [e["content"] for e in doc["added_tokens"]]
    fragments += [" " + e["content"] + " " for e in doc["added_tokens"]]
    return doc, fragments
