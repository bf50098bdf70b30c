"""The differential fuzzer's cases and checks: one function per target, each comparing a
backend with its reference on one drawn case (tests/test_differential.py, tools/fuzz.py).

- hf:       a random tokenizer.json: tokenizers' ids (`Tokenizer.from_str`) against
            `Tokenizer.from_huggingface`'s `encode(text, allowed_special="all")`.
- tiktoken: a random pattern over a small rank table: `tiktoken.Encoding(...)` against this
            library's `Encoding(...)` (same arguments), `encode_ordinary`.
- regex:    a random pattern: `Core.pretokenize` against `regex` (the matches, and the text
            between two matches as a pre-token of its own).
- export:   `from_merges` with a random pattern, `save_huggingface`: tokenizers loads the file
            and gives the same ids.

A check may end in `Refused` (this library's ValueError, which must name a field or the
pattern) or `Unsupported` (the reference itself refuses the case): neither is a failure.
Anything else -- other ids or pieces, a ValueError that names nothing, another exception --
is an AssertionError or that exception.
"""

import json
import os
import re
import tempfile

import regex
from hypothesis import strategies as st

import strategies as S


class Refused(Exception):
    """This library refused the case with a ValueError naming what."""


class Unsupported(Exception):
    """The reference refused the case (nothing to compare)."""


TARGETS = ("hf", "tiktoken", "regex", "export")

# a refusal names what it refuses: a tokenizer.json field, or the pattern
_NAMES_FIELD = re.compile(r"added_tokens|pre_tokenizer|normalizer|model\.|merges|vocab|decoder|"
                          r"post_processor|[Pp]attern|Split|regex|id\b|token")


def _refused(err):
    text = str(err)
    assert _NAMES_FIELD.search(text), f"a refusal that names nothing: {text!r}"
    raise Refused(text) from err


def _reference(call, *args):
    """The reference's answer; Unsupported if it raises anything (a Rust panic included)."""
    try:
        return call(*args)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        raise Unsupported(f"{type(e).__name__}: {e}") from None


# ---------------------------------------------------------------------------------------
# cases


@st.composite
def hf_cases(draw, fam):
    doc, fragments = draw(S.tokenizer_jsons(fam))
    texts = draw(st.lists(S.texts(fam, fragments), min_size=1, max_size=4))
    return S.TokenizerJson(json.dumps(doc, ensure_ascii=False)), texts


@st.composite
def tiktoken_cases(draw, fam):
    ranks, seeds = draw(S.rank_tables(fam))
    pattern = draw(S.patterns(fam, whole=True))
    return pattern, ranks, draw(st.lists(S.texts(fam, seeds), min_size=1, max_size=4))


@st.composite
def regex_cases(draw, fam):
    return draw(S.patterns(fam)), draw(st.lists(S.texts(fam), min_size=1, max_size=4))


@st.composite
def export_cases(draw, fam):
    tokens, merges, seeds = draw(S.merge_table(fam, regular=True))
    pattern = draw(S.patterns(fam, whole=True))
    return pattern, merges, draw(st.lists(S.texts(fam, seeds), min_size=1, max_size=4))


CASES = {"hf": hf_cases, "tiktoken": tiktoken_cases, "regex": regex_cases,
         "export": export_cases}


# ---------------------------------------------------------------------------------------
# checks


def _tmp_json(text):
    d = tempfile.mkdtemp(prefix="bpe-fuzz-")
    path = os.path.join(d, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return d, path


def _cleanup(d):
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)


def check_hf(mod, case):
    """tokenizers' ids of a tokenizer.json, or a refusal naming the field."""
    import tokenizers

    text_json, texts = case
    ref = _reference(tokenizers.Tokenizer.from_str, text_json)
    d, path = _tmp_json(text_json)
    try:
        try:
            tok = mod.Tokenizer.from_huggingface(path)
        except ValueError as e:
            _refused(e)
    finally:
        _cleanup(d)
    for text in texts:
        want = _reference(lambda t: ref.encode(t, add_special_tokens=False).ids, text)
        got = tok.encode(text, allowed_special="all")
        assert got == want, (f"ids differ from tokenizers' on {text!r}:\n ours       {got}\n"
                             f" tokenizers {want}")


def check_tiktoken(mod, case):
    """tiktoken's ids of Encoding(pat_str=pattern, mergeable_ranks=ranks), on the texts whose
    pre-tokens (by `regex`) cover them, none empty (tiktoken drops the text between matches,
    this library keeps it: a documented difference)."""
    import tiktoken

    pattern, ranks, texts = case
    ref = _reference(lambda: tiktoken.Encoding("fuzz", pat_str=pattern, mergeable_ranks=ranks,
                                               special_tokens={}))
    try:
        ours = mod.Encoding("fuzz", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    except ValueError as e:
        _refused(e)
    compared = 0
    for text in texts:
        matches = [m.group() for m in regex.finditer(pattern, text)]
        if "".join(matches) != text or not all(matches):
            continue  # gaps or empty matches: tiktoken drops the one, may panic on the other
        want = _reference(ref.encode_ordinary, text)
        got = ours.encode_ordinary(text)
        compared += 1
        assert got == want, (f"ids differ from tiktoken's on {text!r}:\n ours     {got}\n"
                             f" tiktoken {want}")
    if not compared:
        raise Unsupported("no text the pattern covers")


def regex_pieces(pattern, text):
    """The matches of `pattern` (empty ones skipped) and the text between them."""
    out, at = [], 0
    for m in regex.finditer(pattern, text):
        if m.end() == m.start():
            continue
        if m.start() > at:
            out.append(text[at:m.start()])
        out.append(m.group())
        at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out


# Character classes follow the reference's tables (tiktoken's), not the installed regex's:
# regex is the oracle of the pattern engine only on characters whose classes both read alike
# (the tiktoken target and test_unicode_tables hold the tables over every code point).
CLASS_ESCAPES = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}",
                 r"\p{N}", r"\p{Nd}", r"\p{P}", r"\p{S}", r"\s", r"\d", r"\w"]
_DISAGREE = []


def tables_disagree():
    """The code points some class escape's reference ranges and the installed regex's differ on."""
    if not _DISAGREE:
        import bpe_fallback

        everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
        out = set()
        for escape in CLASS_ESCAPES:
            program = bpe_fallback.pattern_program(escape + "+")
            ours = {c for a, b in program["classes"][0] for c in range(a, b + 1)}
            theirs = {ord(c) for c in regex.findall(escape, everything)}
            out |= ours ^ theirs
        _DISAGREE.append(frozenset(out))
    return _DISAGREE[0]


def check_regex(mod, case):
    """Core.pretokenize of a custom pattern equals `regex`'s pieces (both backends: the
    compiled core runs a pattern of the GPT family natively), on texts whose characters
    regex classes as the reference tables do."""
    pattern, texts = case
    disagree = tables_disagree()
    for text in texts:
        if not disagree.isdisjoint(map(ord, text)):
            continue  # regex's own Unicode tables are not the reference here
        want = _reference(regex_pieces, pattern, text)
        try:
            got = mod.Core.pretokenize(pattern, text)
        except ValueError as e:
            _refused(e)
        assert got == want, f"pre-tokens differ from regex's on {text!r}:\n ours  {got}\n" \
                            f" regex {want}"


def check_export(mod, case):
    """save_huggingface writes a file tokenizers loads, with this library's ids (or refuses
    before writing, naming the pattern)."""
    import tokenizers

    pattern, merges, texts = case
    try:
        tok = mod.Tokenizer.from_merges(merges, pattern=pattern)
    except ValueError as e:
        _refused(e)
    d = tempfile.mkdtemp(prefix="bpe-fuzz-")
    path = os.path.join(d, "tokenizer.json")
    try:
        try:
            tok.save_huggingface(path)
        except ValueError as e:
            assert not os.path.exists(path), "a refused export left a file"
            _refused(e)
        try:
            ref = tokenizers.Tokenizer.from_file(path)
        except Exception as e:  # noqa: BLE001 - any failure to load is the finding
            raise AssertionError(f"tokenizers cannot load the export of {pattern!r}: "
                                 f"{type(e).__name__}: {e}") from None
    finally:
        if os.path.exists(d):
            _cleanup(d)
    for text in texts:
        want = _reference(lambda t: ref.encode(t, add_special_tokens=False).ids, text)
        got = tok.encode(text)
        assert got == want, (f"the export's ids differ in tokenizers on {text!r}:\n"
                             f" ours       {got}\n tokenizers {want}")


CHECKS = {"hf": check_hf, "tiktoken": check_tiktoken, "regex": check_regex,
          "export": check_export}


def run(target, mod, case):
    """'ok', 'refused: ...' or 'unsupported: ...'; raises on a failure."""
    try:
        CHECKS[target](mod, case)
    except Refused as e:
        return f"refused: {e}"
    except Unsupported as e:
        return f"unsupported: {e}"
    return "ok"
