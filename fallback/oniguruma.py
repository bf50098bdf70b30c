"""Patterns in tokenizer.json: Hugging Face tokenizers runs them with Oniguruma,
which reads some syntax and Unicode otherwise than `regex`.  An export spells every class,
property and case-insensitive letter as explicit code point ranges (possessive repeats as atomic
groups); an import maps the syntax it can map exactly and refuses the rest, and any pattern
matching ""."""

from __future__ import annotations as _annotations

import regex as _regex

from .patterns import _compile_pattern
from .regex_syntax import (
    _LOOK,
    _MAX_CLASSES,
    _char_ranges,
    _class_atoms,
    _nullable,
    _regex_char,
    _RegexReader,
)
from .unicode_tables import _atom_ranges, _class_text, _corrected, _unicode_ranges
from .util import _short

_TO_ONIG = {}


def _quantifier_text(low, high):
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _onig_char(c, in_class=False):
    if ((c.isascii() and (c.isalnum() or c == "_"))
            or (not c.isascii() and c.isalnum() and not in_class)):
        return c
    return f"\\x{{{ord(c):X}}}"


def _onig_ranges(ranges):
    if not ranges:
        raise ValueError("a class that matches no character")
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _onig_char(chr(ranges[0][0]))
    parts = []
    for a, b in ranges:
        parts.append(_onig_char(chr(a), True))
        if b > a:
            parts.append(("" if b == a + 1 else "-") + _onig_char(chr(b), True))
    return "[" + "".join(parts) + "]"


def _onig_text(alts, behind=False):
    return "|".join("".join(_onig_node(n, behind) for n in seq) for seq in alts)


def _onig_node(node, behind):
    kind = node[0]
    if kind == "char":
        if node[2]:
            return _onig_ranges(_char_ranges(f"(?i:{_regex_char(node[1])})"))
        return _onig_char(node[1])
    if kind == "set":
        return _onig_ranges(_char_ranges(f"(?i:{node[1]})" if node[2] else node[1]))
    if kind == "any":
        return "."
    if kind == "anchor":
        if behind and node[1] != "start":
            raise ValueError("an end-of-text anchor inside a look-behind (Oniguruma: "
                             "\"invalid pattern in look-behind\")")
        return {"start": r"\A", "end": r"\Z", "abs_end": r"\z"}[node[1]]
    if kind == "group":
        if behind:
            raise ValueError("a group inside a look-behind")
        prefix = {"group": "(?:", "icase": "(?:", "atomic": "(?>", "ahead": "(?=",
                  "not_ahead": "(?!", "behind": "(?<=", "not_behind": "(?<!"}[node[1]]
        return prefix + _onig_text(node[2], node[1] in ("behind", "not_behind")) + ")"
    _, inner, low, high, mode = node
    if behind and low != high:
        raise ValueError("a repeat of varying length inside a look-behind")
    if _onig_anchor_like(inner):
        raise ValueError("a repeated group with an alternative that is an anchor or a "
                         "look-around alone (Oniguruma: \"target of repeat operator is "
                         "invalid\")")
    atom, q = _onig_node(inner, behind), _quantifier_text(low, high)
    if mode == "possessive":
        return atom + q + "+" if q in ("*", "+", "?") else f"(?>{atom}{q})"
    if mode == "lazy" and low != high:
        return atom + q + "?"
    return atom + q


def _onig_anchor_like(node):
    """Whether Oniguruma refuses to repeat `node` as written for it: an anchor
    or a look-around, or a (?:...) group (which is no node of its own there)
    with an alternative that is one of these alone."""
    if node[0] == "anchor" or (node[0] == "group" and node[1] in _LOOK):
        return True
    if node[0] == "group" and node[1] in ("group", "icase"):
        return any(len(seq) == 1 and _onig_anchor_like(seq[0]) for seq in node[2])
    return False


def _onig_class(text):
    """A class of a tokenizer.json in `regex` syntax: as written where its
    code points by Oniguruma's tables are those tiktoken's give it, else
    spelled out."""
    ranges = _atom_ranges(text, "onig")
    return text if ranges == _atom_ranges(text) else f"[{_class_text(ranges)}]"


def _digits_pattern(individual):
    """tokenizers' Digits pre-tokenizer as a pattern: its class is Rust's
    `char::is_numeric` (the compiler's Unicode, not Oniguruma's), from the
    tables: \\p{N} with the code points where the two differ listed."""
    ranges, numeric = _unicode_ranges("digits", "onig"), _unicode_ranges("N")
    cls = r"\p{N}" if ranges == numeric else _corrected(r"\p{N}", numeric, ranges, False, False)
    return cls if individual else cls + "+"


def _regex_text(alts):
    return "|".join("".join(_regex_node(n) for n in seq) for seq in alts)


def _regex_node(node):
    """A node of an Oniguruma tree in `regex` syntax, with the meaning this
    library gives that syntax (tiktoken's tables): a class of Oniguruma's
    that means otherwise is spelled as its code points."""
    kind = node[0]
    if kind == "char":
        c = node[1]
        if node[2] and c.isascii() and c.isalpha() and (
                _unicode_ranges("i" + c.lower(), "onig") != _unicode_ranges("i" + c.lower())):
            raise ValueError(f"(?i) with {c!r}: Oniguruma folds it otherwise than tiktoken")
        return _regex_char(c)
    if kind == "cls":
        parts = []
        for m in node[2]:
            if m[0] == "char":
                parts.append(_regex_char(m[1], True))
            elif m[0] == "range":
                parts.append(_regex_char(m[1], True) + "-" + _regex_char(m[2], True))
            else:
                parts.append(m[1])
        return _onig_class("[" + ("^" if node[1] else "") + "".join(parts) + "]")
    if kind == "raw":
        return _onig_class(node[1])
    if kind == "any":
        return "."
    if kind == "anchor":
        # Oniguruma's ^ matches after every "\n" but one that ends the text; its $ before
        # every "\n" and at the end, written without a flag group (regex's m), which would
        # leave the whole pattern to regex's own Unicode tables (see _spell_pattern)
        return {"start": r"\A", "end": "$", "abs_end": r"\Z",
                "line_start": r"(?:\A|(?<=\n)(?!\Z))", "line_end": r"(?=\n|\Z)"}[node[1]]
    if kind == "group":
        prefix = {"group": "(?:", "icase": "(?i:", "atomic": "(?>", "ahead": "(?=",
                  "not_ahead": "(?!", "behind": "(?<=", "not_behind": "(?<!"}[node[1]]
        return prefix + _regex_text(node[2]) + ")"
    _, inner, low, high, mode = node
    atom = _regex_node(inner)
    if inner[0] == "repeat":  # Oniguruma's x{n,m}+ and x{n}?: a repeat of a repeat
        atom = f"(?:{atom})"
    return atom + _quantifier_text(low, high) + {"greedy": "", "lazy": "?", "possessive": "+"}[mode]


def _pattern_to_onig(pattern):
    """`pattern` written for tokenizers' Oniguruma with the same meaning,
    after a comment that holds the pattern itself (base64), from which an
    import gets it back exactly; ValueError if this library cannot write it."""
    import base64

    body = _onig_body(pattern)
    b64 = base64.b64encode(pattern.encode("utf-8")).decode("ascii")
    return f"(?#bpe:{b64}){body}"


def _onig_body(pattern):
    out = _TO_ONIG.get(pattern)
    if out is None:
        try:
            if not pattern.isascii():
                try:
                    pattern.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("it holds a lone surrogate") from None
            tree = _RegexReader(pattern, onig=False).parse()
            if _nullable(tree):
                raise ValueError("it can match the empty string")
            atoms = _class_atoms(tree, set())
            if len(atoms) > _MAX_CLASSES:
                raise ValueError(f"more than {_MAX_CLASSES} distinct character classes")
            out = _onig_text(tree)
        except RecursionError:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for Hugging Face "
                             "tokenizers: "
                             f"it nests too deeply") from None
        except ValueError as e:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for Hugging Face "
                             "tokenizers "
                             f"(Oniguruma) so that it means the same: {e}") from None
        _TO_ONIG[pattern] = out
    return out


_ONIG_ORIGIN = _regex.compile(r"\(\?#bpe:([A-Za-z0-9+/=]*)\)")


def _pattern_from_onig(text):
    """A Split regex of a tokenizer.json as a `regex` pattern of the same
    meaning; ValueError if there is none this library can write.  What
    save_huggingface wrote comes back as the pattern it was written from."""
    import base64

    m = _ONIG_ORIGIN.match(text)
    if m:
        try:
            pattern = base64.b64decode(m.group(1), validate=True).decode("utf-8")
            _compile_pattern(pattern)
            if _onig_body(pattern) == text[m.end():]:
                return pattern
        except ValueError:
            pass  # edited since: read the regex itself
    try:
        try:
            tree = _RegexReader(text, onig=True).parse()
            if _nullable(tree):
                raise ValueError("it can match the empty string")
            pattern = _regex_text(tree)
            _compile_pattern(pattern)
        except RecursionError:
            raise ValueError("it nests too deeply") from None
    except ValueError as e:
        raise ValueError(f"the Split regex {_short(text)} cannot be read with the meaning it has "
                         f"in tokenizers: {e}") from None
    return pattern
