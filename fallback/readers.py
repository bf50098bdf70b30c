"""The text of the file formats: GPT-2's byte-to-unicode map, JSON helpers, the
native format, GPT-2's vocab.json + merges.txt and tiktoken's rank files."""

from __future__ import annotations as _annotations

import collections.abc as _abc

import regex as _regex

from .patterns import (
    _PROBE,
    Pipeline,
    _check_pattern,
    _check_special_text,
    _check_specials,
    _compile_pattern,
    _special_items,
    _special_set,
)
from .util import _MAX_ID, _short

# GPT-2's printable form of bytes (vocab.json, merges.txt, tokenizer.json and
# the native format all write tokens this way)

def _make_byte_unicode():
    printable = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    to_char, shifted = [], 0
    for b in range(256):
        if b in printable:
            to_char.append(chr(b))
        else:
            to_char.append(chr(256 + shifted))
            shifted += 1
    return to_char


_BYTE_TO_CHAR = _make_byte_unicode()
_ENCODE_TABLE = {b: c for b, c in enumerate(_BYTE_TO_CHAR)}
# every char that is not a valid printable form maps to one latin-1 can't encode
_DECODE_TABLE = {ord(c): chr(b) for b, c in enumerate(_BYTE_TO_CHAR)}
for _b in range(256):
    if _BYTE_TO_CHAR[_b] != chr(_b):
        _DECODE_TABLE[_b] = "\U0010ffff"


def token_to_str(token):
    """GPT-2's printable form of a token's bytes: ``b" the"`` -> ``"Ġthe"``.

    >>> token_to_str(b" the"), token_to_str(b"\\n\\xff")
    ('Ġthe', 'Ċÿ')
    """
    return token.decode("latin-1").translate(_ENCODE_TABLE)


def str_to_token(text):
    """Inverse of token_to_str; ValueError for text that is not such a form.

    >>> str_to_token("Ġthe")
    b' the'
    """
    try:
        return text.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"{_short(text)} is not a byte-level token (GPT-2's byte-to-unicode "
                         f"form)") from None


def _json(text, where):
    """json.loads, with every failure (nesting too deep included) as ValueError."""
    import json

    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{where}: not valid JSON: {str(e)[:100]}") from None


def _json_ids(raw, where, field):
    """Check a JSON object of token -> id; ValueError naming `field`."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: {field} must be a JSON object of token -> id, not "
                         f"{_json_type(raw)}")
    seen = {}
    for s, i in raw.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"{where}: {field}: the id of {_short(s)} must be an int in "
                             f"[0, 2**31), not {_short(i)}")
        other = seen.setdefault(i, s)
        if other != s:
            raise ValueError(f"{where}: {field}: id {i} is given to both {_short(other)} and "
                             f"{_short(s)}")
    return raw


def _json_type(value):
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
def _split_lines(text):
    """Lines of a text file; a CR before each LF (Windows line ends) is dropped."""
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _is_id(text):
    """ASCII digits only (str.isdigit also takes "٢" and "²"), at most 10."""
    return 0 < len(text) <= 10 and text.isascii() and text.isdigit()


class _Lines:
    """A cursor over a file's lines that reports errors with line numbers."""

    def __init__(self, text, where):
        self.lines = _split_lines(text)
        self.n = 0
        self.where = where

    def fail(self, what):
        raise ValueError(f"{self.where}: line {self.n}: {what}")

    def next(self):
        if self.n >= len(self.lines):
            self.n += 1
            self.fail("unexpected end of file (truncated?)")
        line = self.lines[self.n]
        self.n += 1
        return line

    def section(self, name):
        line = self.next()
        head, _, count = line.partition(" ")
        if head != name or not _is_id(count):
            self.fail(f"expected '{name} <count>', found {_short(line)}")
        return int(count)

    def fields(self, n):
        parts = self.next().split(" ", n - 1)
        if len(parts) != n:
            self.fail(f"expected {n} fields")
        return parts

    def int(self, text):
        if not _is_id(text):
            self.fail(f"{_short(text)} is not an id (ASCII digits)")
        return int(text)


_NATIVE_MAGIC = "#bpe-tokenizer"
_NATIVE_VERSION = 1


def _native_dump(tok):
    import json

    lines = [f"{_NATIVE_MAGIC} {_NATIVE_VERSION}",
             "pattern " + json.dumps(_pattern_json(tok._pattern))]
    made = set(tok._rank_id)
    plain = sorted((i, t) for i, t in tok._tokens.items() if i not in made)
    lines.append(f"tokens {len(plain)}")
    lines += [f"{i} {token_to_str(t)}" for i, t in plain]
    lines.append(f"merges {len(tok._merges)}")
    lines += [f"{i} {token_to_str(a)} {token_to_str(b)}"
              for i, (a, b) in zip(tok._rank_id, tok._merges)]
    lines.append(f"specials {len(tok._specials)}")
    lines += [f"{i} {json.dumps(s)}"
              for s, i in sorted(tok._specials.items(), key=lambda kv: kv[1])]
    lines.append("end")
    return "\n".join(lines) + "\n"


def _pattern_json(pattern):
    """A pattern as the native format writes it: the regex, or a Pipeline's
    {"normalizers": [...], "splits": [...]}."""
    if isinstance(pattern, Pipeline):
        return {"normalizers": list(pattern.normalizers), "splits": list(pattern.splits)}
    return pattern


def _native_parse(text, where):
    c = _Lines(text, where)
    pattern = _native_head(c)
    tokens, merged = {}, set()

    def add(i, t, merge=False):
        if i in tokens and not (merge and i in merged and tokens[i] == t):
            c.fail(f"id {i} appears twice")  # (several merges may make one token)
        tokens[i] = t
        if merge:
            merged.add(i)

    for _ in range(c.section("tokens")):
        i, t = c.fields(2)
        i = c.int(i)
        try:
            add(i, str_to_token(t))
        except ValueError as e:
            c.fail(str(e))
    merges = []
    for _ in range(c.section("merges")):
        i, a, b = c.fields(3)
        i = c.int(i)
        try:
            a, b = str_to_token(a), str_to_token(b)
        except ValueError as e:
            c.fail(str(e))
        add(i, a + b, merge=True)
        merges.append((a, b))
    return pattern, tokens, merges, _native_specials(c)


def _native_head(c):
    """The header and pattern lines of a native file: the pattern."""
    import json

    head = c.next().split(" ")
    if len(head) != 2 or head[0] != _NATIVE_MAGIC:
        c.fail(f"not a bpe tokenizer file (expected '{_NATIVE_MAGIC} {_NATIVE_VERSION}')")
    if head[1] != str(_NATIVE_VERSION):
        c.fail(f"unsupported format version {_short(head[1])} (this library reads "
               f"{_NATIVE_VERSION})")
    line = c.next()
    if not line.startswith("pattern "):
        c.fail("expected 'pattern <json string>'")
    try:
        pattern = json.loads(line[8:])
    except (ValueError, RecursionError):
        pattern = None
    if isinstance(pattern, dict) and set(pattern) == {"normalizers", "splits"}:
        if not all(isinstance(x, list) for x in pattern.values()):
            c.fail("a pipeline's normalizers and splits are JSON arrays")
        pattern = Pipeline(tuple(pattern["normalizers"]), tuple(pattern["splits"]))
    elif not isinstance(pattern, str):
        c.fail("the pattern is not a JSON string, or an object of normalizers and splits")
    try:
        if isinstance(pattern, Pipeline):
            if _check_pattern(pattern) != pattern:
                c.fail("a pipeline that is one plain regex is written as that regex")
        else:
            _compile_pattern(pattern)
    except (ValueError, TypeError, RecursionError) as e:
        c.fail(f"bad pattern: {str(e)[:200]}")
    return pattern


def _native_specials(c):
    """The specials section and the end of a native file."""
    import json

    specials = {}
    for _ in range(c.section("specials")):
        i, s = c.fields(2)
        i = c.int(i)
        try:
            s = json.loads(s)
        except (ValueError, RecursionError):
            s = None
        if not isinstance(s, str) or s in specials:
            c.fail("bad or repeated special token")
        try:
            _check_special_text(s)
        except ValueError as e:
            c.fail(str(e))
        specials[s] = i
    if c.next() != "end" or any(line for line in c.lines[c.n:]):
        c.fail("expected 'end' as the last line")
    return specials


# GPT-2's vocab.json + merges.txt.  save_gpt2 writes a fingerprint of the pair
# into merges.txt's first line ("#version: 0.2 bpe-pair:<hex>"; tokenizers,
# transformers and GPT-2's own encoder skip that line), which from_gpt2 checks.

_GPT2_FINGERPRINT = _regex.compile(r"\bbpe-pair:([0-9a-f]{32})\b")


def _gpt2_fingerprint(raw, merge_lines):
    """A digest of vocab.json's entries (by id) and merges.txt's lines."""
    import hashlib

    h = hashlib.sha256()
    h.update("\n".join(f"{i} {s}" for s, i in sorted(raw.items(), key=lambda kv: kv[1]))
             .encode("utf-8", "surrogatepass"))
    h.update(b"\n\x00\n")
    h.update("\n".join(merge_lines).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def _gpt2_parse(vocab_text, merges_text, special_tokens, vocab_where, merges_where):
    raw = _json_ids(_json(vocab_text, vocab_where), vocab_where, "vocab.json")
    merges, merge_lines, fingerprint = [], [], None
    c = _Lines(merges_text, merges_where)
    for line in c.lines:
        c.n += 1
        if c.n == 1 and line.startswith("#version"):
            m = _GPT2_FINGERPRINT.search(line)
            fingerprint = m.group(1) if m else None
            continue
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            c.fail(f"expected 'left right', found {_short(line)}")
        try:
            merges.append((str_to_token(parts[0]), str_to_token(parts[1])))
        except ValueError as e:
            c.fail(str(e))
        merge_lines.append(line)
    if fingerprint is not None and fingerprint != _gpt2_fingerprint(raw, merge_lines):
        raise ValueError(f"{vocab_where} and {merges_where} do not belong together: merges.txt "
                         f"was saved with another vocab.json, or one of them was edited since (to "
                         f"load an edited pair, delete 'bpe-pair:...' from merges.txt's first "
                         f"line)")
    tokens, specials = _gpt2_vocab(raw, merges, special_tokens, fingerprint is not None,
                                   f"{vocab_where} and {merges_where}")
    return tokens, merges, specials


def _looks_special(s):
    """<...> or [...]: how special tokens are spelled (<|endoftext|>, <s>, [PAD])."""
    return len(s) >= 3 and ((s[0] == "<" and s[-1] == ">") or (s[0] == "[" and s[-1] == "]"))


def _gpt2_vocab(raw, merges, special_tokens, paired, where):
    """Split vocab.json's entries into tokens (id -> bytes) and specials.

    Every entry must be a single byte, made by a merge, or a special token.
    With special_tokens None, the entries no merge makes are the specials:
    all of them for a pair save_gpt2 wrote (`paired`: its fingerprint
    matched); for other files, each must look like a special token (<...>,
    [...]) or be no join of two other entries: an entry that two others make
    up is a token whose merge line is missing, and the files do not belong
    together."""
    made = {a + b for a, b in merges} | {bytes([b]) for b in range(256)}
    specials = {}
    special_tokens = _special_set(special_tokens)
    if special_tokens is not None:
        if isinstance(special_tokens, _abc.Mapping):
            specials.update(_special_items(special_tokens))
        else:
            next_id = max(raw.values(), default=-1) + 1
            for s in _check_specials(special_tokens):
                if s in raw:
                    specials[s] = raw[s]
                else:
                    specials[s] = next_id
                    next_id += 1
    special_ids = set(specials.values())
    tokens, unmade = {}, []
    for s, i in raw.items():
        if i in special_ids:
            continue
        try:
            t = str_to_token(s)
        except ValueError:
            t = None
        if t is not None and t in made:
            tokens[i] = t
        else:
            unmade.append((s, i, t))
    if not unmade:
        return tokens, specials
    if special_tokens is not None:
        s, i, _ = unmade[0]
        raise ValueError(f"{where} do not belong together, or special_tokens is incomplete: "
                         f"{len(unmade)} entries of vocab.json are no single byte, no merge makes "
                         f"them and special_tokens does not name them, e.g. {_short(s)} (id {i})")
    if not paired:
        entries = {t for _, _, t in unmade if t is not None} | made
        joined = [(s, i) for s, i, t in unmade if t is not None and not _looks_special(s)
                  and any(t[:k] in entries and t[k:] in entries for k in range(1, len(t)))]
        if joined:
            s, i = joined[0]
            raise ValueError(f"{where} do not belong together: {len(joined)} entries of vocab.json "
                             f"join two other entries but no merge in merges.txt makes them, e.g. "
                             f"{_short(s)} (id {i}); merges.txt is cut short or from another "
                             f"vocabulary")
    for s, i, _ in unmade:
        try:
            _check_special_text(s)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        specials[s] = i
    return tokens, specials


# tiktoken's format: "base64(token) rank" lines; the merges are recovered.

def _tiktoken_parse(text, where):
    import base64

    ranks = {}
    c = _Lines(text, where)
    for line in c.lines:
        c.n += 1
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            c.fail("expected '<base64 token> <rank>'")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except ValueError:
            c.fail(f"{_short(parts[0])} is not base64")
        rank = c.int(parts[1])
        if not token or token in ranks:
            c.fail(f"empty or repeated token {_short(token)}")
        ranks[token] = rank
    if not ranks:
        raise ValueError(f"{where}: no tokens")
    return ranks


# Texts an Encoding from to_tiktoken must encode as this library does before it is given
_TIKTOKEN_PROBES = (_PROBE, "", "a", "\n", "a\n", "\n\n", "a\n\n", "a \n\n\n",
                    " \n a\n\nb 12345 x\n",
                    "AbC aBc ſK k ß straße 日本語\u3000\x85\u2028 \U0001F600\n")


def _tiktoken_checked(tok, enc):
    """`enc` (tiktoken's Encoding of `tok`) once it encodes the probe texts to
    tok's ids; else ValueError (tiktoken panics on some patterns)."""
    for text in _TIKTOKEN_PROBES:
        try:
            ids = enc.encode_ordinary(text)
        except BaseException as e:  # pyo3's PanicException derives from BaseException
            if not type(e).__name__.endswith("PanicException"):
                raise
            raise ValueError(f"tiktoken fails on the pattern {_short(tok._pattern)} as written "
                             f"for it ({_short(str(e))}); not exported") from None
        if ids != tok.encode_ordinary(text):
            raise ValueError(f"tiktoken's regex engine reads the pattern {_short(tok._pattern)} "
                             f"otherwise (the text {_short(text)} gives other ids); not "
                             "exported")
    return enc
