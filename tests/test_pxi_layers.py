"""The compiled core's source files form layers: bpe.pyx includes the _bpe_*.pxi files so that
each uses only names defined in the files before it, and each file's "# Needs:" comment lists
exactly those names, by the file that defines them.  Their C is in _bpe_*.h headers, not in
Python strings, and the sdist's manifest ships the headers.

This reads the source files only (no compiled core needed).  A name counts as defined by a
file when the file declares it at module level (cdef struct/union/enum/class, ctypedef, cdef
functions and globals, the names of `cdef extern` blocks, def, class, Python globals, cimports)
and as used when it appears in code (not in comments or strings, not after a dot).
"""

import fnmatch
import functools
import io
import keyword
import os
import re
import tokenize

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDENT = r"[A-Za-z_]\w*"
# Python's name for a classmethod's class, which _bpe_core.pxi's methods take: not a use of
# _bpe_scanner.pxi's cls()
NOT_USES = {"cls"}


def _read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def _code(src):
    """The source with comments and string literals blanked (lines kept), and its names as
    (name, line) where not an attribute (after a dot)."""
    rows = [list(line) for line in src.splitlines(True)]
    names, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            (r0, c0), (r1, c1) = tok.start, tok.end
            for r in range(r0, r1 + 1):
                row = rows[r - 1]
                for c in range(c0 if r == r0 else 0, c1 if r == r1 else len(row)):
                    if row[c] != "\n":
                        row[c] = " "
        elif tok.type == tokenize.NAME and prev != "." and not keyword.iskeyword(tok.string):
            names.append((tok.string, tok.start[0]))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                            tokenize.INDENT, tokenize.DEDENT):
            prev = tok.string
    return ["".join(row) for row in rows], names


def _declared(text):
    """The names one declaration (after cdef/cpdef/ctypedef, or in an extern block) defines."""
    text = text.strip().rstrip(":").strip()
    m = re.match(r"(?:(?:packed|public|readonly)\s+)*(?:struct|union|enum|class)\s+(" + IDENT
                 + ")", text)
    if m:
        return [m.group(1)]
    m = re.match(r"fused\s+(" + IDENT + ")", text)
    if m:
        return [m.group(1)]
    if re.match(r"enum\s*:", text):
        return re.findall(r"(" + IDENT + r")\s*(?:=[^,]*)?(?:,|$)", text.split(":", 1)[1])
    m = re.search(r"\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(", text)   # a function pointer
    if m:
        return [m.group(1)]
    head = text.split("=", 1)[0]
    if "(" in head:   # a function: the name before its parameters
        m = re.search(r"(" + IDENT + r")\s*(?:\"[^\"]*\"\s*)?$", head.split("(", 1)[0])
        return [m.group(1)] if m else []
    words = re.findall(IDENT, re.sub(r"\[.*", "", head))
    return [words[-1]] if len(words) >= 2 else []


def definitions(lines):
    """The names a file defines at module level."""
    defs = set()
    block = indent = None   # "extern" or "enum": the block whose first level declares names
    for line in lines:
        if not line.strip():
            continue
        ind = len(line) - len(line.lstrip())
        body = line.strip()
        if ind == 0:
            block = indent = None
            m = re.match(r"(cdef|cpdef|ctypedef)\s+(.*)", body)
            if m:
                if m.group(2).startswith("extern"):
                    block = "extern"
                    continue
                if re.match(r"enum\s*(" + IDENT + r")?\s*:\s*$", m.group(2)):
                    block = "enum"
                defs.update(_declared(m.group(2)))
                continue
            m = re.match(r"(?:def|class)\s+(" + IDENT + ")", body)
            if m:
                defs.add(m.group(1))
                continue
            m = re.match(r"from\s+\S+\s+c?import\s+(.*)", body)
            if m:
                defs.update(re.findall(r"(" + IDENT + r")\s*(?:,|$|\))", m.group(1)))
                continue
            m = re.match(r"((?:" + IDENT + r"\s*,\s*)*" + IDENT + r")\s*=(?!=)", body)
            if m:
                defs.update(re.findall(IDENT, m.group(1)))
            continue
        if block is None:
            continue
        indent = ind if indent is None else indent
        if ind != indent:
            continue   # a struct's fields
        if block == "enum":
            defs.update(re.findall(r"(" + IDENT + r")\s*(?:=[^,]*)?(?:,|$)", body))
        else:
            defs.update(_declared(re.sub(r"^(?:ctypedef|cdef)\s+", "", body)))
    return defs


def include_order():
    return re.findall(r'^include "(.+?)"', _read("bpe.pyx"), re.M)


def needs_line(src):
    """The "# Needs:" comment's first sentence as {file: {names}}: groups "a, b (_bpe_x.pxi)"
    split by ';'."""
    lines = src.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("# Needs:")), None)
    if start is None:
        return None
    text = []
    for line in lines[start:]:
        assert line.startswith("#"), "the Needs comment must end with a period"
        text.append(line.lstrip("#").strip())
        if line.rstrip().endswith("."):
            break
    text = re.split(r"\.(?:\s|$)", " ".join(text)[len("Needs:"):])[0]   # its first sentence
    needs = {}
    for names, name in re.findall(r"([^;()]*)\((_bpe_\w+\.pxi)\)", text):
        assert name not in needs, "Needs names " + name + " twice"
        needs[name] = set(re.findall(IDENT, names))
    return needs


@functools.cache
def layers():
    """For each included file: (its definitions, {earlier file: {names it uses from it}},
    {later file: {names}})."""
    order = include_order()
    head = _read("bpe.pyx").split("\ninclude ", 1)[0]
    defined = {"bpe.pyx": definitions(_code(head)[0])}
    code = {}
    for name in order:
        lines, names = _code(_read(name))
        defined[name] = definitions(lines)
        code[name] = names
    result = {}
    for i, name in enumerate(order):
        uses = {}
        for used, _ in code[name]:
            if used in defined[name] or used in NOT_USES:
                continue
            for other in order:
                if used in defined[other]:
                    uses.setdefault(other, set()).add(used)
        before = {f: n for f, n in uses.items() if order.index(f) < i}
        after = {f: n for f, n in uses.items() if order.index(f) > i}
        result[name] = (defined[name], before, after)
    return result


def test_every_pxi_is_included_once():
    order = include_order()
    assert len(order) == len(set(order))
    on_disk = sorted(f for f in os.listdir(ROOT) if re.fullmatch(r"_bpe_\w+\.pxi", f))
    assert sorted(order) == on_disk


def test_the_parser_sees_the_definitions():
    # the check below is only as good as this: a few names of each kind
    lay = layers()
    assert {"IVec", "ivec_push", "EMPTY_KEY", "prefetch", "STAT", "resize"} <= lay[
        "_bpe_common.pxi"][0]
    assert {"F_L", "P_O200K", "ch_t", "Utf8", "utf8_of", "_CLASS_FLAGS"} <= lay[
        "_bpe_scanner.pxi"][0]
    assert {"bs_iter", "bs_cls", "bs_next", "BITSCAN_KIND"} <= lay["_bpe_bitscan.pxi"][0]
    assert {"pn_pat", "pn_state", "PN_GREEDY", "P_PAT"} <= lay["_bpe_pattern.pxi"][0]
    assert {"iternextfunc", "SHORTCUTS", "ids_to_list"} <= lay["_bpe_cpython.pxi"][0]
    assert {"Core", "_Packer", "BIG_ENDIAN", "BpeFlatState"} <= lay["_bpe_core.pxi"][0]
    # and the uses: the trainer's of the common helpers
    assert {"resize", "IVec"} <= lay["_bpe_trainer.pxi"][1]["_bpe_common.pxi"]


def test_definitions_are_unique():
    lay = layers()
    seen = {}
    for name, (defs, _, _) in lay.items():
        for d in defs:
            assert d not in seen, f"{d} is defined in both {seen[d]} and {name}"
            seen[d] = name


@pytest.mark.parametrize("name", include_order())
def test_a_pxi_uses_only_files_before_it(name):
    _, _, after = layers()[name]
    assert after == {}, f"{name} uses names of files included after it: {after}"


@pytest.mark.parametrize("name", include_order())
def test_needs_lists_what_a_pxi_uses(name):
    _, before, _ = layers()[name]
    needs = needs_line(_read(name))
    assert needs is not None, f"{name} has no '# Needs:' comment"
    assert needs == before, (
        f"{name}: its Needs comment says {sorted((f, sorted(n)) for f, n in needs.items())}, "
        f"it uses {sorted((f, sorted(n)) for f, n in before.items())}")


def test_c_is_in_headers_that_exist_and_ship():
    with open(os.path.join(ROOT, "MANIFEST.in"), encoding="utf-8") as f:
        shipped = [pat for line in f if line.startswith("include ")
                   for pat in line.split()[1:]]
    headers = set()
    for name in ["bpe.pyx"] + include_order():
        src = _read(name)
        assert not re.search(r"^\s*cdef extern from \*", src, re.M), (
            f"{name}: C code in a Python string; it goes in a _bpe_*.h header")
        headers.update(re.findall(r'^cdef extern from "(_bpe_\w+\.h)"', src, re.M))
    assert headers
    for h in sorted(headers):
        assert os.path.exists(os.path.join(ROOT, h)), h
        assert any(fnmatch.fnmatch(h, pat) for pat in shipped), f"MANIFEST.in leaves out {h}"
    for h in os.listdir(ROOT):
        if re.fullmatch(r"_bpe_\w+\.h", h):
            assert h in headers or any(h in _read(x) for x in headers), f"{h} is not used"
