"""Patterns for native scanners: what a compiled core needs to run a custom
pattern in C (pattern_program, read with the regex reader), and the spellings of GPT-4's
pattern that cl100k's scanner serves (gpt4_variant)."""

from __future__ import annotations as _annotations

import regex as _regex

from .patterns import _FILE_CUTS, PATTERNS, Pipeline, _check_pattern, _line_cut
from .regex_syntax import _char_ranges, _nullable, _regex_char, _RegexReader

_CUSTOM_CUTS = {}   # pattern -> its cut regex (bytes) or None


def _custom_cut(pattern):
    """_line_cut(bytes) (between an ASCII letter or digit and a line feed) where that
    is a safe cut for a pattern of the GPT family, else None.  It is where
    no match can take such a character and then the line feed (so a
    pre-token ends there), where no (?!C) with a line feed in C and no $
    can be tried right after such a character (the only tests that read the
    line feed and the end of the text differently), and where a match always
    starts at a line feed (so no text between two matches spans the cut).
    What follows the cut does not depend on what precedes it: the family has
    no look-behind."""
    if pattern in _CUSTOM_CUTS:
        return _CUSTOM_CUTS[pattern]
    program = pattern_program(pattern)
    cut = None
    if program is not None:
        classes = program["classes"]
        alnum = {k for k, ranges in enumerate(classes)
                 if any(a <= hi and lo <= b for a, b in ranges
                        for lo, hi in ((48, 57), (65, 90), (97, 122)))}
        lf = {k for k, ranges in enumerate(classes) if any(a <= 10 <= b for a, b in ranges)}
        pairs, checks = set(), []

        def walk(seq, last):
            """The classes the last character taken may be in after `seq`
            (None: nothing taken yet), given `last` before it."""
            for node in seq:
                if node[0] == "class":
                    k, low, high = node[1], node[2], node[3]
                    pairs.update((a, k) for a in last)
                    if high is None or high >= 2:
                        pairs.add((k, k))
                    last = last | {k} if low == 0 else {k}
                elif node[0] == "group":
                    low, high = node[2], node[3]
                    out = set()
                    for inner in node[1]:
                        out |= walk(inner, last)
                    if high is None or high >= 2:   # a round after a round
                        for inner in node[1]:
                            out |= walk(inner, last | out)
                    nullable = low == 0 or _program_nullable(node[1])
                    last = last | out if nullable else out
                elif node[0] == "end" or node[1] in lf:   # (?!C) with a line feed in C
                    checks.append(last)
            return last

        for seq in program["alternatives"]:
            walk(seq, set())
        starts = any(seq and seq[0][0] == "class" and seq[0][1] in lf and seq[0][2] == 1
                     and all(n[0] in ("class", "group") and n[2] == 0 for n in seq[1:])
                     for seq in program["alternatives"])
        if (starts and not any(a in alnum and b in lf for a, b in pairs)
                and not any(last & alnum for last in checks)):
            cut = _line_cut(bytes)
    _CUSTOM_CUTS[pattern] = cut
    return cut


def _program_nullable(alts):
    return any(all(n[0] in ("end", "not_ahead") or n[2] == 0
                   or (n[0] == "group" and _program_nullable(n[1])) for n in seq)
               for seq in alts)


def _cut_kind(pattern, specials):
    """The regex (over bytes) whose match ends mark safe cuts, or None.  A
    special token with a line break in it could straddle a cut: none then."""
    if any("\n" in s or "\r" in s for s in specials):
        return None
    if isinstance(pattern, Pipeline):
        return _pipeline_cut(pattern)
    cut = _FILE_CUTS.get(pattern)
    return cut if cut is not None or pattern == PATTERNS["bytes"] else _custom_cut(pattern)


def _pipeline_cut(pipeline):
    """A Pipeline's cut: between an ASCII letter or digit and a line feed
    (_line_cut), where that is a cut of its first split.  The normalizers
    change neither character and join nothing across a line feed, so the
    pieces normalize apart as the text does; the later splits split the
    first one's pre-tokens, so its cuts are theirs."""
    first = pipeline.splits[0] if pipeline.splits else PATTERNS["bytes"]
    if first == PATTERNS["words"] or _cut_kind(first, ()) is None:
        return None   # (words' cut is after the line feed; the other named ones take this one)
    return _line_cut(bytes)


_TEXT_CUTS = {}   # a cut regex over bytes -> the same over str


def _text_cut(pattern, specials):
    """_cut_kind's regex over str, or None: its cuts fall between ASCII
    characters, so it reads a text as it reads the text's UTF-8."""
    cut = _cut_kind(pattern, specials)
    if cut is None:
        return None
    rx = _TEXT_CUTS.get(cut)
    if rx is None:
        rx = _TEXT_CUTS[cut] = _regex.compile(cut.pattern.decode("ascii"))
    return rx


# GPT-4's pattern as other models and projects spell it: Llama 3's (cl100k's
# before tiktoken added `\s++$`), minbpe's, nanochat's (two digits), Qwen 2's
# and 3's (one digit).  The spellings of each part below match the same text,
# so every combination splits text as cl100k's pattern does, but for the
# longest run of digits and whether trailing white space is one pre-token.
_GPT4_PARTS = (
    (r"""'(?i:[sdmt]|ll|ve|re)""", r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)"""),
    (r"""[^\r\n\p{L}\p{N}]?+\p{L}++""", r"""[^\r\n\p{L}\p{N}]?+\p{L}+""",
     r"""[^\r\n\p{L}\p{N}]?\p{L}+"""),
    None,   # the digits: _GPT4_DIGITS
    (r""" ?[^\s\p{L}\p{N}]++[\r\n]*+""", r""" ?[^\s\p{L}\p{N}]++[\r\n]*""",
     r""" ?[^\s\p{L}\p{N}]+[\r\n]*"""),
    (r"""\s++$|""", ""),   # present: trailing white space is one pre-token
    (r"""\s*[\r\n]|\s+(?!\S)|\s""", r"""\s*[\r\n]|\s+(?!\S)|\s+""",
     r"""\s*[\r\n]+|\s+(?!\S)|\s+"""),
)
_GPT4_DIGITS = {r"\p{N}{1,3}+": 3, r"\p{N}{1,3}": 3, r"\p{N}{1,2}+": 2, r"\p{N}{1,2}": 2,
                r"\p{N}": 1}
_gpt4_spellings = None


def gpt4_variant(pattern):
    """(digits, trailing) where `pattern` is a spelling of GPT-4's pattern
    that splits text as cl100k's does but for the longest run of digits a
    pre-token takes (1, 2 or 3) and whether trailing white space is one
    pre-token (cl100k's `\\s++$`); else None.  Compiled cores scan these
    with cl100k's scanner.

    >>> gpt4_variant(PATTERNS["cl100k"])
    (3, True)
    >>> gpt4_variant(PATTERNS["gpt2"]) is None
    True
    """
    global _gpt4_spellings
    if type(pattern) is not str:
        return None
    if _gpt4_spellings is None:
        import itertools
        table = {}
        for digits, most in _GPT4_DIGITS.items():
            parts = [p if p is not None else (digits,) for p in _GPT4_PARTS]
            for a, b, c, d, end, ws in itertools.product(*parts):
                table["|".join((a, b, c, d, end + ws))] = (most, bool(end))
        _gpt4_spellings = table
    return _gpt4_spellings.get(pattern)


_PROGRAMS = {}
_MAX_PROGRAM_CLASSES = 64   # a native matcher keeps a class as one bit of a 64-bit mask
_MAX_PROGRAM_NODES = 512


def pattern_program(pattern):
    """A pattern of the GPT family as plain data, for a native matcher that
    gives ``regex.findall``'s matches; None for any other pattern (and for a
    Pipeline: its regexes split in turn).

    The family: alternation and groups (capturing or not, atomic,
    case-insensitive ``(?i:...)``); one-character atoms (literals, ``.``,
    class escapes such as ``\\s`` or ``\\p{L}`` and their negations, classes
    ``[...]`` and ``[^...]``, either case where ``(?i:`` says so) repeated by
    ``?``, ``*``, ``+`` or ``{m,n}`` (greedy, lazy or possessive); ``$``; and
    ``(?!C)`` for a one-character atom C (``(?!\\S)``).  A repeat of a group
    that can match the empty string repeats at most once (``?``); any
    other construct (a look-behind, another look-ahead, a back-reference,
    anchors but ``$``, flags) is outside.  The result, a dict:

    - ``"classes"``: for each distinct atom, the code points it matches as
      sorted inclusive ranges (found by ``regex`` itself: the tables agree);
    - ``"alternatives"``: a list of sequences, each a list of nodes:
      ``("class", k, low, high, mode)``: `low` to `high` (None: no bound)
      characters of class k; ``("group", alternatives, low, high, mode)``;
      ``("not_ahead", k)``: the next character is not in class k (or the
      text ends); ``("end",)``: ``$`` (the end, or before a final line
      feed).  `mode` is "greedy", "lazy" or "possessive".

    >>> p = pattern_program(r"\\p{N}{1,3}|\\s+(?!\\S)")
    >>> p["alternatives"]
    [[('class', 0, 1, 3, 'greedy')], [('class', 1, 1, None, 'greedy'), ('not_ahead', 2)]]
    >>> p["classes"][0][:2]
    [(48, 57), (178, 179)]
    >>> pattern_program(r"(?<=a)b") is None
    True
    """
    pattern = _check_pattern(pattern)  # a regex: names are the API's (resolve_pattern)
    if isinstance(pattern, Pipeline):
        return None  # several steps: the regexes split in turn
    if pattern in _PROGRAMS:
        return _PROGRAMS[pattern]
    atoms = {}   # atom text -> class number, then ranges -> the first class that has them

    def cls(node):
        if node[0] == "char":
            text = _regex_char(node[1])
            icase = node[2]
        elif node[0] == "set":
            text, icase = node[1], node[2]
        elif node[0] == "any":
            text, icase = ".", False
        else:
            return None
        text = f"(?i:{text})" if icase else text
        return atoms.setdefault(text, len(atoms))

    count = [0]

    def seq(nodes):
        out = []
        for node in nodes:
            low, high, mode = 1, 1, "greedy"
            if node[0] == "repeat":
                node, low, high, mode = node[1], node[2], node[3], node[4]
            count[0] += 1
            k = cls(node)
            if k is not None:
                out.append(("class", k, low, high, mode))
            elif node[0] == "anchor" and node[1] == "end":
                out.append(("end",))
            elif node[0] == "group" and node[1] == "not_ahead":
                inner = node[2]
                if len(inner) != 1 or len(inner[0]) != 1 or cls(inner[0][0]) is None:
                    return None
                out.append(("not_ahead", cls(inner[0][0])))
            elif node[0] == "group" and node[1] in ("group", "icase", "atomic"):
                alts = group(node[2])
                if alts is None or ((high is None or high > 1) and _nullable(node[2])):
                    return None
                if node[1] == "atomic":
                    alts = [[("group", alts, 1, 1, "possessive")]]
                out.append(("group", alts, low, high, mode))
            else:
                return None
        return out

    def group(alts):
        out = [seq(s) for s in alts]
        return None if None in out else out

    program = None
    try:
        tree = _RegexReader(pattern, onig=False).parse()
        alts = group(tree)
    except (ValueError, RecursionError):
        alts = None
    if alts is not None and len(atoms) <= _MAX_PROGRAM_CLASSES and count[0] <= _MAX_PROGRAM_NODES:
        program = {"classes": [_char_ranges(a) for a in atoms], "alternatives": alts}
    _PROGRAMS[pattern] = program
    return program
