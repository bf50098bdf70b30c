"""Reading regular expressions: a parser for the syntax both `regex` and
Oniguruma share (_RegexReader), and the code point ranges of a one-character pattern."""

from __future__ import annotations as _annotations

import regex as _regex

from .unicode_tables import _atom_ranges
from .util import _short

_ONIG_MAX_REPEAT = 100000
_LOOK = ("ahead", "not_ahead", "behind", "not_behind")
# Unicode properties an import accepts: general categories and common scripts,
# which both engines name alike.
_ONIG_PROPERTIES = frozenset(
    "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp Cc Cf "
    "Co Han Hiragana Katakana Hangul Latin Greek Cyrillic Arabic Hebrew Thai Devanagari".split())
_QUANTIFIER = _regex.compile(r"\{(\d{0,6})(?:(,)(\d{0,6}))?\}")
_GROUP_NAME = _regex.compile(r"\?P?<([A-Za-z_][A-Za-z0-9_]*)>")


def _char_ranges(atom):
    """The code points the one-character pattern `atom` matches, as sorted
    inclusive ranges without the surrogates: the reference tables' meaning
    (see _atom_ranges), the one both backends and an export give it."""
    return _atom_ranges(atom)


_PROPERTIES = {}  # a \p{...} name -> whether `regex` reads it as a property


def _is_property(name):
    r"""Whether `regex` reads \p{name} alone as one property (a class of characters)."""
    known = _PROPERTIES.get(name)
    if known is None:
        try:
            _regex.compile(f"\\p{{{name}}}")
            known = True
        except _regex.error:
            known = False
        _PROPERTIES[name] = known
    return known


class _RegexReader:
    """A parser for the regular expressions both engines can share.  `onig`:
    read Oniguruma's (Ruby) syntax, else `regex`'s.  The tree: a list of
    alternatives, each a list of nodes:
      ("char", c, icase)          a literal character
      ("set", text, icase)        regex syntax: a class or class escape (from `regex` syntax)
      ("cls", negated, members)   from Oniguruma syntax: members are ("char", c),
                                  ("range", a, b) or ("text", regex text)
      ("raw", regex text)         from Oniguruma syntax: a class escape
      ("any",)  ("anchor", kind)  ("group", kind, alternatives)
      ("repeat", node, low, high or None, "greedy" | "lazy" | "possessive")"""

    def __init__(self, pattern, onig):
        self.p, self.i, self.onig = pattern, 0, onig

    def fail(self, what):
        raise ValueError(f"{what} (at character {self.i})")

    def peek(self, text):
        return self.p.startswith(text, self.i)

    def parse(self):
        alts = self.alternatives(False)
        if self.i < len(self.p):
            self.fail("unbalanced ')'")
        return alts

    def alternatives(self, icase):
        alts = [self.sequence(icase)]
        while self.peek("|"):
            self.i += 1
            alts.append(self.sequence(icase))
        return alts

    def sequence(self, icase):
        nodes = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            if self.onig and self.peek("(?#"):  # a comment
                self.comment()
                continue
            nodes.append(self.repeat(self.atom(icase), icase))
        if icase and self.onig:
            self.check_folds(nodes)
        return nodes

    def atom(self, icase):
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            if icase and self.onig:
                self.fail("(?i) with a group inside")
            return self.group(icase)
        if c == "[":
            return self.char_class(icase)
        if c == "\\":
            kind, value = self.escape()
            if kind == "char":
                return self.char(value, icase)
            if kind == "anchor":
                return ("anchor", value)
            return self.class_escape(kind, value, icase)
        if c == ".":
            return ("any",)
        if c == "^":
            return ("anchor", "line_start" if self.onig else "start")
        if c == "$":
            return ("anchor", "line_end" if self.onig else "end")
        if c in "*+?":
            self.i -= 1
            self.fail(f"'{c}' repeats nothing")
        if c == "{":
            self.i -= 1
            self.fail("a literal '{' (write '\\{')")
        return self.char(c, icase)

    def comment(self):
        i = self.i + 3
        while i < len(self.p) and self.p[i] != ")":
            i += 2 if self.p[i] == "\\" else 1
        if i >= len(self.p):
            self.fail("an unclosed comment")
        self.i = i + 1

    def char(self, c, icase):
        if icase and self.onig and (not c.isascii() or c in "iI"):
            self.fail(f"(?i) with {c!r}: Oniguruma folds it otherwise than regex")
        return ("char", c, icase)

    def class_escape(self, kind, value, icase):
        if not self.onig:
            return ("set", value, icase)
        if icase:
            self.fail(f"(?i) with {value}: Oniguruma folds it otherwise than regex")
        return ("raw", value)

    def group(self, icase):
        kind = "group"
        if self.peek("?"):
            for prefix, name in (("?:", "group"), ("?>", "atomic"), ("?=", "ahead"),
                                 ("?!", "not_ahead"), ("?<=", "behind"), ("?<!", "not_behind"),
                                 ("?i:", "icase")):
                if self.peek(prefix):
                    self.i += len(prefix)
                    kind = name
                    break
            else:
                m = _GROUP_NAME.match(self.p, self.i)
                if m is None or (self.onig and self.peek("?P")):
                    self.fail(f"the group '({_short(self.p[self.i:self.i + 4])[1:-1]}' is not "
                              "supported")
                self.i = m.end()
        alts = self.alternatives(icase or kind == "icase")
        if not self.peek(")"):
            self.fail("missing ')'")
        self.i += 1
        return ("group", kind, alts)

    def quantifier(self):
        """(low, high, braces, fixed) of a repeat operator at the cursor, or
        None; fixed: written {n}, without a comma."""
        c = self.p[self.i:self.i + 1]
        if c in ("*", "+", "?") and c:
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c] + (False, False)
        m = _QUANTIFIER.match(self.p, self.i)
        if c != "{" or m is None or not (m.group(1) or m.group(3)):
            return None
        low = int(m.group(1) or 0)
        high = (int(m.group(3)) if m.group(3) else None) if m.group(2) else low
        if (high is not None and high < low) or max(low, high or 0) > _ONIG_MAX_REPEAT:
            self.fail(f"the repeat {m.group()} (at most {_ONIG_MAX_REPEAT})")
        self.i = m.end()
        return low, high, True, not m.group(2)

    def repeat(self, node, icase):
        q = self.quantifier()
        if q is None:
            return node
        if icase and self.onig:  # Oniguruma's folds can span repeats: refuse what is not tested
            self.fail("(?i) with a repeat inside")
        if node[0] == "anchor" or (node[0] == "group" and node[1] in _LOOK):
            self.fail("a repeated anchor or look-around")
        low, high, braces, fixed = q
        mode = "greedy"
        if (self.onig and braces and low == high == 1 and node[0] == "group"
                and (self.peek("+") or (fixed and self.peek("?")))):
            # Oniguruma drops the {1}, and the ? or + then repeats the group's last atom alone
            self.fail("a group repeated {1} then '?' or '+'")
        if self.peek("?"):
            self.i += 1
            if self.onig and fixed:  # Ruby: x{n}? is (?:x{n})? (x{n,n}? is lazy)
                node, low, high = ("repeat", node, low, high, "greedy"), 0, 1
            else:
                mode = "lazy"
        elif self.peek("+"):
            self.i += 1
            if self.onig and braces:  # Ruby: x{n,m}+ is (?:x{n,m})+, not possessive
                node, low, high = ("repeat", node, low, high, "greedy"), 1, None
            else:
                mode = "possessive"
        if self.i < len(self.p) and (self.p[self.i] in "*+?" or _QUANTIFIER.match(self.p, self.i)):
            self.fail("a repeat of a repeat")
        return ("repeat", node, low, high, mode)

    def escape(self):
        """After a backslash: ("char", c), ("anchor", kind), or (kind, regex
        text) for a class escape, kind "class" or "property"."""
        p = self.p
        if self.i >= len(p):
            self.fail("a trailing backslash")
        c = p[self.i]
        self.i += 1
        if c in "sSdD" or (c in "wW" and not self.onig):
            return "class", "\\" + c
        if c in "pP":
            if not self.peek("{"):
                if self.onig or not (self.i < len(p) and p[self.i].isalpha()):
                    self.fail(f"\\{c} without a {{name}}")
                self.i += 1
                return "property", f"\\{c}{{{p[self.i - 1]}}}"
            end = p.find("}", self.i)
            if end < 0:
                self.fail(f"\\{c}{{ without '}}'")
            name = p[self.i + 1:end]
            self.i = end + 1
            negated = c == "P"
            if self.onig and name.startswith("^"):
                name, negated = name[1:], not negated
            if self.onig and name not in _ONIG_PROPERTIES:
                self.fail(f"the Unicode property {_short(name)} (general categories and common "
                          f"scripts only)")
            if not self.onig and not _is_property(name):
                # regex reads a brace that holds no property name otherwise (as text)
                self.fail(f"\\{c}{{{_short(name)}}}: not a Unicode property `regex` knows")
            return "property", f"\\{'P' if negated else 'p'}{{{name}}}"
        if c == "x":
            if self.onig and self.peek("{"):
                m = _regex.compile(r"\{([0-9A-Fa-f]{1,6})\}").match(p, self.i)
                if (m is None or int(m.group(1), 16) > 0x10FFFF
                        or 0xD800 <= int(m.group(1), 16) < 0xE000):
                    self.fail("a bad \\x{...}")
                self.i = m.end()
                return "char", chr(int(m.group(1), 16))
            hex_digits = r"[0-9A-Fa-f]{2}" if not self.onig else r"[0-9A-Fa-f]{1,2}"
            m = _regex.compile(hex_digits).match(p, self.i)
            if m is None:
                self.fail("a bad \\x escape")
            self.i = m.end()
            if self.onig and int(m.group(), 16) > 0x7F:
                self.fail("\\x above 7F (a byte, not a character, in Oniguruma)")
            return "char", chr(int(m.group(), 16))
        if c == "u" or (c == "U" and not self.onig):
            n = 4 if c == "u" else 8
            m = _regex.compile(rf"[0-9A-Fa-f]{{{n}}}").match(p, self.i)
            if m is None or int(m.group(), 16) > 0x10FFFF or 0xD800 <= int(m.group(), 16) < 0xE000:
                self.fail(f"a bad \\{c} escape")
            self.i = m.end()
            return "char", chr(int(m.group(), 16))
        simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
        if self.onig:
            simple["e"] = "\x1b"
        if c in simple:
            return "char", simple[c]
        if self.onig:
            anchors = {"A": "start", "Z": "end", "z": "abs_end"}
        else:
            anchors = {"A": "start", "Z": "abs_end"}
        if c in anchors:
            return "anchor", anchors[c]
        if c.isascii() and c.isalnum():
            self.fail(f"the escape \\{c}")
        return "char", c

    def char_class(self, icase):
        start = self.i - 1
        p = self.p
        negated = self.peek("^")
        if negated:
            self.i += 1
        if self.peek("]"):
            self.fail("']' first in a class (write '\\]')")
        members = []
        while True:
            if self.i >= len(p):
                self.fail("missing ']'")
            c = p[self.i]
            if c == "]":
                self.i += 1
                break
            if c == "[":
                self.fail("'[' inside a class (a nested or POSIX class)")
            if self.peek("&&") or (not self.onig and (self.peek("--") or self.peek("||")
                                                       or self.peek("~~"))):
                self.fail("a set operation in a class")
            item = self.class_item()
            if item[0] == "char" and self.peek("-") and p[self.i + 1:self.i + 2] not in ("]", ""):
                self.i += 1
                end = self.class_item()
                if end[0] != "char" or end[1] < item[1]:
                    self.fail("a bad range in a class")
                item = ("range", item[1], end[1])
            members.append(item)
        if not self.onig:
            return ("set", p[start:self.i], icase)
        if icase:
            for m in members:
                if m[0] != "char" or not m[1].isascii() or m[1] in "iI":
                    self.fail("(?i) with a class of more than ASCII letters other than i")
        return ("cls", negated, members)

    def class_item(self):
        c = self.p[self.i]
        self.i += 1
        if c != "\\":
            return ("char", c)
        if not self.onig and self.peek("b"):
            self.i += 1
            return ("char", "\b")
        kind, value = self.escape()
        if kind == "anchor":
            self.fail("an anchor inside a class")
        return ("char", value) if kind == "char" else ("text", value)

    def check_folds(self, nodes):
        """Oniguruma folds some letter pairs to one character ("ss" to "ß",
        "fi" to "ﬁ"); regex does not."""
        def letters(node):
            if node[0] == "char":
                return {node[1].lower()}
            if node[0] == "cls":
                return {m[1].lower() for m in node[2]}
            return set()

        for a, b in zip(nodes, nodes[1:]):
            if any(x + y in ("ss", "st", "ff", "fi", "fl") for x in letters(a) for y in letters(b)):
                self.fail("(?i) with a letter pair that Oniguruma folds to one character")


_MAX_CLASSES = 256  # an export scans every code point once per distinct class (a few ms each)


def _class_atoms(alts, found):
    """The distinct one-character atoms an export writes as code point ranges."""
    for seq in alts:
        for node in seq:
            while node[0] == "repeat":
                node = node[1]
            if node[0] == "set" or (node[0] == "char" and node[2]):
                found.add(node[1:])
            elif node[0] == "group":
                _class_atoms(node[2], found)
    return found


def _nullable(alts):
    return any(all(_node_nullable(n) for n in seq) for seq in alts)


def _node_nullable(node):
    kind = node[0]
    if kind == "anchor":
        return True
    if kind == "group":
        return node[1] in _LOOK or _nullable(node[2])
    if kind == "repeat":
        return node[2] == 0 or _node_nullable(node[1])
    return False


def _may_consume(pattern):
    """Whether `pattern` may match a non-empty string: some alternative holds a
    character outside a lookaround that is not repeated {0} times.  False
    where the reader cannot tell (syntax it does not read: \\b, ...)."""
    try:
        return _consumes(_RegexReader(pattern, onig=False).parse())
    except (ValueError, RecursionError):
        return False


def _consumes(alts):
    return any(any(_node_consumes(n) for n in seq) for seq in alts)


def _node_consumes(node):
    kind = node[0]
    if kind == "anchor":
        return False
    if kind == "group":
        return node[1] not in _LOOK and _consumes(node[2])
    if kind == "repeat":
        return node[3] != 0 and _node_consumes(node[1])
    return True


def _regex_char(c, in_class=False):
    """`c` as a literal in `regex` syntax."""
    if c in ("\\]^-[" if in_class else ".^$*+?{}[]\\|()"):
        return "\\" + c
    if c.isprintable() and not (c.isspace() and c != " "):
        return c
    if c in "\n\r\t\f\v":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f", "\v": "\\v"}[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


# tiktoken reads pat_str with fancy-regex (Rust's syntax); `regex` reads some of it
# otherwise.  What differs, and the text both read alike that stands for it:
_FANCY_END = "(?![\\s\\S])"                        # \z, and $ (no multi-line mode there)
_FANCY_ESCAPES = {"z": _FANCY_END, "Z": "(?=\\n*(?![\\s\\S]))",   # \Z: also before final \n's
                  "h": "[0-9A-Fa-f]", "H": "[^0-9A-Fa-f]"}          # \h: a hexadecimal digit
_FANCY_POSIX = {   # Rust's POSIX classes are ASCII only
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7F", "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
    "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f"}
_FANCY_HEX = _regex.compile(r"\\x\{([0-9A-Fa-f]{1,8})\}")
_FANCY_POSIX_CLASS = _regex.compile(r"\[:(\^?)([a-z]+):\]")


def _from_fancy(pattern):
    r"""tiktoken's `pat_str` (Rust's regex syntax, as fancy-regex reads it) as
    a pattern `regex` reads with the same meaning, in a form both engines
    read alike (so reading the result again changes nothing): $, \z and \Z
    as lookaheads, \h as its class, \x{...} as \u or \U, a POSIX class as its
    ASCII ranges.  A construct `regex` would read otherwise and this cannot
    write (a set operation or a class nested in a class, a negated POSIX
    class, an inline flag other than i): ValueError naming it."""
    out, i, n = [], 0, len(pattern)

    def refuse(what):
        raise ValueError(f"the pattern {_short(pattern)} holds {what} (at character {i + 1}), "
                         "which tiktoken's regex engine reads otherwise than this library's")

    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            j = _fancy_hex(pattern, i, out, False)
            if j is None:
                out.append(_FANCY_ESCAPES.get(pattern[i + 1], pattern[i:i + 2]))
                j = i + 2
            i = j
        elif c == "$":
            out.append(_FANCY_END)
            i += 1
        elif c == "[":
            i = _fancy_class(pattern, i, out, refuse)
        elif c == "(" and pattern.startswith("(?", i):
            j = i + 2
            while j < n and pattern[j].isalpha():
                j += 1
            if j > i + 2 and j < n and pattern[j] in ":)-":
                flags = pattern[i + 2:j]
                if set(flags) - {"i"} or pattern[j] == "-":
                    refuse(f"the inline flags (?{flags}{pattern[j]}")
            out.append(pattern[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _fancy_hex(pattern, i, out, in_class):
    """A \\x{...} escape at pattern[i] written to `out` as its character
    (_regex_char: a form both engines read alike); the index after it, or
    None where there is none (one past U+10FFFF stays as it is written)."""
    m = _FANCY_HEX.match(pattern, i)
    if m is None or int(m.group(1), 16) > 0x10FFFF:
        return None
    out.append(_regex_char(chr(int(m.group(1), 16)), in_class))
    return m.end()


def _fancy_class(pattern, i, out, refuse):
    """Copy the class at pattern[i] ('[') to `out` as `regex` reads it with
    Rust's meaning; the index after it."""
    n, start = len(pattern), i
    out.append("[")
    i += 1
    if i < n and pattern[i] == "^":
        out.append("^")
        i += 1
    if i < n and pattern[i] == "]":   # a ']' first is a literal in both
        out.append("\\]")
        i += 1
    while i < n and pattern[i] != "]":
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            j = _fancy_hex(pattern, i, out, True)
            if j is not None:
                i = j
                continue
            if pattern[i + 1] == "h":
                out.append("0-9A-Fa-f")
            elif pattern[i + 1] in "HzZ":
                refuse(f"\\{pattern[i + 1]} in a class")
            else:
                out.append(pattern[i:i + 2])
            i += 2
        elif c == "[":
            m = _FANCY_POSIX_CLASS.match(pattern, i)
            if m is None or m.group(1) or m.group(2) not in _FANCY_POSIX:
                refuse("a class inside a class (a nested, negated POSIX or unknown POSIX class)")
            out.append(_FANCY_POSIX[m.group(2)])
            i = m.end()
        elif pattern.startswith(("--", "&&", "~~"), i):
            refuse(f"the set operation {pattern[i:i + 2]} in a class")
        else:
            out.append(c)
            i += 1
    if i >= n:
        raise ValueError(f"the pattern {_short(pattern)} has a class that is never closed "
                         f"(at character {start + 1})")
    out.append("]")
    return i + 1
