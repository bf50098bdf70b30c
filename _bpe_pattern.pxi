# The native matcher of custom patterns of the GPT family, compiled from
# bpe_fallback.pattern_program's description: a backtracking matcher over
# the pattern's alternatives with regex's meaning (the first alternative
# that matches wins; greedy, lazy and possessive repeats; (?!C); $) on
# UTF-8, and the pre-tokens of the project's rule: the first non-empty match
# at a place, else the text up to the next place where one starts.
#
# Classes: each distinct one-character atom of the pattern is a bit of a
# 64-bit mask; a table gives every code point the mask of the atoms it is in
# (from regex itself, through pattern_program: the tables agree by
# construction): ASCII directly, the rest through two levels (code point >>
# 8 -> a block of 256 small numbers -> a mask), the blocks shared.
#
# Work is bounded: every step (a character a repeat takes, an alternative
# tried, a place a gap is searched from) counts against a budget of
# PN_BASE + PN_PER_BYTE steps a byte of the text; past it the matcher stops
# with PN_OVERRUN and the caller splits that text with the regex instead
# (which has its own time limit).  Recursion (one level a choice point or a
# repeat of a group) is bounded the same way.
# Needs: Utf8, utf8_of (_bpe_scanner.pxi).

cdef extern from "_bpe_pattern.h":
    enum: PN_CLASS, PN_GROUP, PN_NOT_AHEAD, PN_END
    enum: PN_GREEDY, PN_LAZY, PN_POSSESSIVE
    enum: PN_OVERRUN
    enum: PR_TAKES, PR_ANY, PR_CHECKS
    ctypedef struct pn_node:
        int32_t kind, mode
        uint32_t lo, hi
        uint64_t mask
        int32_t bit
        int32_t alt0, nalt
        int32_t rest
        uint64_t rest_first
    ctypedef struct pn_swar:
        int32_t n, neg
        uint64_t lo[4]
        uint64_t hi[4]
    ctypedef struct pn_alt:
        int32_t node0, len
        int32_t nullable
        int32_t linear
        uint64_t first
    ctypedef struct pn_pat:
        pn_node *nodes
        pn_alt *alts
        int32_t nalt
        uint64_t first
        uint64_t amask[128]
        pn_swar swar[64]
        uint16_t *top
        uint8_t *blocks
        uint64_t *combo
    ctypedef struct pn_state:
        const pn_pat *P
        int64_t n
    void pn_init(pn_state *st, const pn_pat *P, const uint8_t *s, int64_t n) noexcept nogil
    int64_t pn_next(pn_state *st, int64_t i) noexcept nogil


cdef enum: P_PAT = 16    # a compiled pattern (the scanners' numbers: _bpe_scanner.pxi)


class _Overrun(Exception):
    """A compiled pattern spent its budget on a text: the regex splits it."""


cdef class _Pattern:
    """A compiled pattern (pn_pat) and the memory it owns."""
    cdef pn_pat P

    def __dealloc__(self):
        free(self.P.nodes)
        free(self.P.alts)
        free(self.P.top)
        free(self.P.blocks)
        free(self.P.combo)


_compiled_patterns = {}      # pattern -> _Pattern, or None outside the family
_compile_lock = threading.Lock()


def _new_compile_lock():
    """A forked child's own lock: another thread may have held it (compiling
    a pattern, which it publishes only when whole) when the process forked."""
    global _compile_lock
    _compile_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_compile_lock)
_MODES = {"greedy": PN_GREEDY, "lazy": PN_LAZY, "possessive": PN_POSSESSIVE}


cdef object compiled_pattern(object pattern):
    """The native matcher of a resolved custom pattern (built once a process),
    or None where the pattern is outside the family (the regex splits)."""
    try:
        return _compiled_patterns[pattern]
    except KeyError:
        pass
    with _compile_lock:
        if pattern not in _compiled_patterns:
            program = _py.pattern_program(pattern)
            _compiled_patterns[pattern] = None if program is None else _build_pattern(program)
        return _compiled_patterns[pattern]


def _layout(alternatives, bit_of, overlap):
    """The nodes ([kind, mode, lo, hi, mask, bit, alt0, nalt, rest, rest_first]) and alternatives
    ([node0, len, nullable, linear, first]) of a program's alternatives, each group's
    alternatives and each alternative's nodes contiguous; and the mask of the
    first character of a non-empty match.  overlap: bit -> the bits of
    the classes that share a character with its class.

    A greedy repeat of a class that backing off cannot help is made
    possessive (no choice point): where what follows it in its sequence
    must take a character first and none of its class, or (in the
    pattern's own alternatives, where nothing follows the sequence) always
    matches the empty string."""
    nodes, alts = [], []
    info = {}   # node index -> (first, nullable, takes nothing but optional characters)

    def linear(node0, count):
        return all(x[0] in (PN_NOT_AHEAD, PN_END) or (
            x[0] == PN_CLASS and (x[1] == PN_POSSESSIVE or x[2] == x[3]))
            for x in nodes[node0:node0 + count])

    def possessive(node0, count, top):
        first, nullable, trivial, checks = 0, True, True, True   # of the nodes after t
        for t in range(count - 1, -1, -1):
            x = nodes[node0 + t]
            if x[0] == PN_CLASS and x[1] == PN_GREEDY and x[2] != x[3]:
                if (not nullable and not (first & overlap[x[4]])) or (top and trivial):
                    x[1] = PN_POSSESSIVE
            if not nullable:
                x[8], x[9] = PR_TAKES, first
            elif top and checks and t < count - 1:
                x[8] = PR_CHECKS
            f, null, triv = info[node0 + t]
            first = f | (first if null else 0)
            nullable = nullable and null
            trivial = trivial and triv
            checks = checks and x[0] in (PN_NOT_AHEAD, PN_END)

    def place(group_alts, top=False):
        alt0 = len(alts)
        alts.extend([None] * len(group_alts))
        first_all, nullable_all = 0, False
        for j, seq in enumerate(group_alts):
            node0 = len(nodes)
            nodes.extend([None] * len(seq))
            first, nullable = 0, True
            for t, node in enumerate(seq):
                kind = node[0]
                if kind == "class" or kind == "group":
                    hi = 0xFFFFFFFF if node[3] is None else node[3]
                    if kind == "class":
                        bit = 1 << bit_of[node[1]]
                        nodes[node0 + t] = [PN_CLASS, _MODES[node[4]], node[2], hi, bit,
                                            bit_of[node[1]], 0, 0, PR_ANY, 0]
                        inner_first, inner_null = bit, False
                    else:
                        g0, inner_first, inner_null = place(node[1])
                        nodes[node0 + t] = [PN_GROUP, _MODES[node[4]], node[2], hi, 0, 0, g0,
                                            len(node[1]), PR_ANY, 0]
                    null = node[2] == 0 or hi == 0 or inner_null
                    info[node0 + t] = (inner_first, null, node[2] == 0 or hi == 0)
                    if nullable:
                        first |= inner_first
                        nullable = null
                elif kind == "not_ahead":
                    nodes[node0 + t] = [PN_NOT_AHEAD, 0, 1, 1, 1 << bit_of[node[1]], 0, 0, 0,
                                        PR_ANY, 0]
                    info[node0 + t] = (0, True, False)
                else:
                    nodes[node0 + t] = [PN_END, 0, 1, 1, 0, 0, 0, 0, PR_ANY, 0]
                    info[node0 + t] = (0, True, False)
            possessive(node0, len(seq), top)
            alts[alt0 + j] = [node0, len(seq), nullable, top and linear(node0, len(seq)), first]
            first_all |= first
            nullable_all = nullable_all or nullable
        return alt0, first_all, nullable_all

    first = place(alternatives, True)[1]
    return nodes, alts, first


cdef _Pattern _build_pattern(dict program):
    cdef _Pattern m = _Pattern.__new__(_Pattern)
    cdef list classes = program["classes"]
    cdef list bit_of = []     # class -> bit (classes with the same code points share one)
    cdef dict seen = {}
    cdef Py_ssize_t i
    for ranges in classes:
        bit_of.append(seen.setdefault(tuple(ranges), len(seen)))
    combos = _class_tables(&m.P, classes, bit_of)
    if combos is None:
        return None
    overlap = {}
    for k in set(bit_of):
        overlap[1 << k] = 0
        for c in combos:
            if c >> k & 1:
                overlap[1 << k] |= c
    nodes, alts, first = _layout(program["alternatives"], bit_of, overlap)
    m.P.nalt = len(program["alternatives"])
    m.P.first = first
    m.P.nodes = <pn_node *> calloc(len(nodes) + 1, sizeof(pn_node))
    m.P.alts = <pn_alt *> calloc(len(alts) + 1, sizeof(pn_alt))
    if m.P.nodes == NULL or m.P.alts == NULL:
        raise MemoryError()
    for i in range(len(nodes)):
        x = nodes[i]
        m.P.nodes[i].kind, m.P.nodes[i].mode, m.P.nodes[i].lo, m.P.nodes[i].hi = x[0], x[1], x[2], x[3]
        m.P.nodes[i].mask, m.P.nodes[i].bit, m.P.nodes[i].alt0, m.P.nodes[i].nalt = x[4:8]
        m.P.nodes[i].rest, m.P.nodes[i].rest_first = x[8], x[9]
    for k, ranges in enumerate(classes):
        _ascii_ranges(&m.P.swar[bit_of[k]], ranges)
    for i in range(len(alts)):
        x = alts[i]
        m.P.alts[i].node0, m.P.alts[i].len, m.P.alts[i].nullable = x[0], x[1], x[2]
        m.P.alts[i].linear, m.P.alts[i].first = x[3], x[4]
    return m


cdef void _ascii_ranges(pn_swar *sw, list ranges):
    """A class's ASCII members as at most four byte ranges, or the ASCII bytes outside at most
    four ranges; n = -1 where neither fits."""
    inside = [(a, min(b, 127)) for a, b in ranges if a < 128]
    outside, at = [], 0
    for a, b in inside:
        if a > at:
            outside.append((at, a - 1))
        at = b + 1
    if at < 128:
        outside.append((at, 127))
    sw.n, sw.neg = -1, 0
    for neg, rs in ((0, inside), (1, outside)):
        if len(rs) <= 4 and (sw.n < 0 or len(rs) < sw.n):
            sw.n, sw.neg = len(rs), neg
            for j, (a, b) in enumerate(rs):
                sw.lo[j], sw.hi[j] = (0x80 - a) * 0x0101010101010101, (0x7F - b) * 0x0101010101010101


cdef object _class_tables(pn_pat *P, list classes, list bit_of):
    """Fill P's code point -> mask tables; return the distinct masks (None
    if there are more than 256)."""
    cdef uint64_t *mask = <uint64_t *> calloc(0x110000, sizeof(uint64_t))
    cdef uint64_t bit, cur
    cdef Py_ssize_t k, a, b, c
    cdef uint8_t block[256]
    cdef dict blocks = {}
    cdef uint8_t last_id = 0
    if mask == NULL:
        raise MemoryError()
    try:
        for k in range(len(classes)):
            bit = (<uint64_t> 1) << <int> bit_of[k]
            for a, b in classes[k]:
                for c in range(a, b + 1):
                    mask[c] |= bit
        for c in range(128):
            P.amask[c] = mask[c]
        combos = {0: 0}
        order = [0]
        P.top = <uint16_t *> malloc(0x1100 * sizeof(uint16_t))
        if P.top == NULL:
            raise MemoryError()
        chunks = []
        cur = 0
        for b in range(0x1100):
            for c in range(256):
                if c == 0 or mask[(b << 8) | c] != cur:
                    cur = mask[(b << 8) | c]
                    got = combos.get(cur)
                    if got is None:
                        if len(order) == 256:
                            return None
                        got = combos[cur] = len(order)
                        order.append(cur)
                    last_id = <uint8_t> got
                block[c] = last_id
            key = PyBytes_FromStringAndSize(<const char *> block, 256)
            got = blocks.get(key)
            if got is None:
                got = blocks[key] = len(chunks)
                chunks.append(key)
            P.top[b] = <uint16_t> got
        joined = b"".join(chunks)
        P.blocks = <uint8_t *> malloc(len(joined))
        P.combo = <uint64_t *> calloc(256, sizeof(uint64_t))
        if P.blocks == NULL or P.combo == NULL:
            raise MemoryError()
        memcpy(P.blocks, PyBytes_AS_STRING(joined), len(joined))
        for k in range(len(order)):
            P.combo[k] = order[k]
        return order
    finally:
        free(mask)


cdef inline Py_ssize_t pat_next(pn_state *st, Py_ssize_t i) noexcept nogil:
    """The end of the pre-token at byte i by a compiled pattern (< 0: overrun)."""
    return pn_next(st, i)


cdef list pattern_pretokens(str text, _Pattern m):
    """The pre-tokens of `text` (no surrogates) by a compiled pattern
    (Core.pretokenize); _Overrun past the budget."""
    cdef Py_ssize_t i = 0, e
    cdef Utf8 u
    cdef pn_state st
    cdef list out = []
    utf8_of(text, &u)
    try:
        pn_init(&st, &m.P, u.data, u.len)
        while i < u.len:
            e = pat_next(&st, i)
            if e < 0:
                raise _Overrun()
            out.append(PyBytes_FromStringAndSize(<const char *> u.data + i, e - i).decode("utf-8"))
            i = e
        return out
    finally:
        free(u.owned)
