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
# Needs: the cimports of bpe.pyx; bpe_fallback as _py.

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    enum { PN_CLASS = 0, PN_GROUP = 1, PN_NOT_AHEAD = 2, PN_END = 3 };
    enum { PN_GREEDY = 0, PN_LAZY = 1, PN_POSSESSIVE = 2 };
    enum { PK_SEQ = 0, PK_REP = 1, PK_ACCEPT = 2 };
    #define PN_FAIL (-1)
    #define PN_OVERRUN (-2)
    #define PN_MAX_DEPTH 1000
    #define PN_BASE ((int64_t)1 << 20)
    #define PN_PER_BYTE 256

    typedef struct {
        int32_t kind, mode;
        uint32_t lo, hi;      /* repeat bounds (hi 0xFFFFFFFF: none) */
        uint64_t mask;        /* CLASS, NOT_AHEAD: the class's bit */
        int32_t alt0, nalt;   /* GROUP: its alternatives */
    } pn_node;

    typedef struct {
        int32_t node0, len;   /* its nodes */
        int32_t nullable;     /* it can match the empty string */
        uint64_t first;       /* the classes the first character it takes may be in */
    } pn_alt;

    typedef struct {
        pn_node *nodes;
        pn_alt *alts;
        int32_t nalt;         /* the pattern's own alternatives: alts[0, nalt) */
        uint64_t first;
        uint64_t amask[128];  /* ASCII -> mask */
        uint16_t *top;        /* code point >> 8 -> block */
        uint8_t *blocks;      /* block << 8 | (code point & 255) -> combination */
        uint64_t *combo;      /* combination -> mask */
    } pn_pat;

    typedef struct {
        const pn_pat *P;
        const uint8_t *s;
        int64_t n, start;
        int64_t steps, limit;
        int depth;
    } pn_state;

    typedef struct pn_k {     /* what follows a match of part of the pattern */
        int kind;             /* PK_SEQ: the rest of a sequence; PK_REP: the next round
                                 of a repeated group; PK_ACCEPT: nothing (an atomic part) */
        int32_t alt, idx;
        const pn_node *rep;
        uint32_t count;
        const struct pn_k *up;
    } pn_k;

    static void pn_init(pn_state *st, const pn_pat *P, const uint8_t *s, int64_t n) {
        st->P = P;
        st->s = s;
        st->n = n;
        st->start = 0;
        st->steps = 0;
        st->limit = PN_BASE + PN_PER_BYTE * n;
        st->depth = 0;
    }

    /* The mask of the character at byte i of valid UTF-8, *w its width. */
    static inline uint64_t pn_mask_at(const pn_pat *P, const uint8_t *s, int64_t i, int *w) {
        uint32_t b = s[i], c;
        if (b < 0x80) {
            *w = 1;
            return P->amask[b];
        }
        if (b < 0xE0) {
            c = ((b & 0x1F) << 6) | (s[i + 1] & 0x3F);
            *w = 2;
        } else if (b < 0xF0) {
            c = ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            *w = 3;
        } else {
            c = ((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6)
                | (s[i + 3] & 0x3F);
            *w = 4;
        }
        return P->combo[P->blocks[((uint32_t)P->top[c >> 8] << 8) | (c & 0xFF)]];
    }

    /* The end of up to `hi` characters of `mask` from byte i; *count: how many. */
    static inline int64_t pn_run(const pn_pat *P, const uint8_t *s, int64_t i, int64_t n,
                                 uint64_t mask, uint32_t hi, uint32_t *count) {
        uint32_t c = 0;
        int w;
        while (c < hi && i < n) {
            uint32_t b = s[i];
            if (b < 0x80) {
                if (!(P->amask[b] & mask))
                    break;
                i++;
            } else {
                if (!(pn_mask_at(P, s, i, &w) & mask))
                    break;
                i += w;
            }
            c++;
        }
        *count = c;
        return i;
    }

    static int64_t pn_seq(pn_state *st, int32_t a, int32_t idx, int64_t pos, const pn_k *k);

    /* Where the match goes on after `k` from pos (the end of the pre-token), or PN_FAIL:
       the whole match must not be empty. */
    static int64_t pn_cont(pn_state *st, const pn_k *k, int64_t pos);

    /* One more round of the repeated group g (count rounds done) at pos, then `after`. */
    static int64_t pn_alts(pn_state *st, const pn_node *g, int64_t pos, const pn_k *k) {
        const pn_pat *P = st->P;
        int32_t a;
        int64_t r;
        int w;
        uint64_t m = pos < st->n ? pn_mask_at(P, st->s, pos, &w) : 0;
        for (a = g->alt0; a < g->alt0 + g->nalt; a++) {
            if (!(P->alts[a].first & m) && !P->alts[a].nullable)
                continue;
            r = pn_seq(st, a, 0, pos, k);
            if (r != PN_FAIL)
                return r;
        }
        return PN_FAIL;
    }

    static int64_t pn_rep(pn_state *st, const pn_node *g, uint32_t count, int64_t pos,
                          const pn_k *after) {
        int64_t r;
        pn_k next = {PK_REP, 0, 0, g, count + 1, after};
        if (++st->steps > st->limit)
            return PN_OVERRUN;
        if (g->mode == PN_LAZY) {
            if (count >= g->lo) {
                r = pn_cont(st, after, pos);
                if (r != PN_FAIL)
                    return r;
            }
            return count < g->hi ? pn_alts(st, g, pos, &next) : PN_FAIL;
        }
        if (count < g->hi) {
            r = pn_alts(st, g, pos, &next);
            if (r != PN_FAIL)
                return r;
        }
        return count >= g->lo ? pn_cont(st, after, pos) : PN_FAIL;
    }

    static int64_t pn_cont(pn_state *st, const pn_k *k, int64_t pos) {
        if (k == NULL)
            return pos > st->start ? pos : PN_FAIL;
        if (k->kind == PK_SEQ)
            return pn_seq(st, k->alt, k->idx, pos, k->up);
        if (k->kind == PK_REP)
            return pn_rep(st, k->rep, k->count, pos, k->up);
        return pos;
    }

    /* Nodes idx.. of alternative a at pos, then k. */
    static int64_t pn_seq_body(pn_state *st, int32_t a, int32_t idx, int64_t pos, const pn_k *k) {
        const pn_pat *P = st->P;
        const pn_alt *alt = &P->alts[a];
        const uint8_t *s = st->s;
        int64_t n = st->n, r, p;
        uint32_t c;
        int w;
        for (; idx < alt->len; idx++) {
            const pn_node *x = &P->nodes[alt->node0 + idx];
            if (x->kind == PN_CLASS) {
                if (x->hi == 1 && x->lo == 1) {
                    if (pos >= n || !(pn_mask_at(P, s, pos, &w) & x->mask))
                        return PN_FAIL;
                    pos += w;
                    continue;
                }
                if (x->mode == PN_LAZY) {
                    p = pn_run(P, s, pos, n, x->mask, x->lo, &c);
                    st->steps += c;
                    if (c < x->lo)
                        return PN_FAIL;
                    for (;;) {
                        r = pn_seq(st, a, idx + 1, p, k);
                        if (r != PN_FAIL)
                            return r;
                        if (c >= x->hi || p >= n || !(pn_mask_at(P, s, p, &w) & x->mask))
                            return PN_FAIL;
                        p += w;
                        c++;
                        if (++st->steps > st->limit)
                            return PN_OVERRUN;
                    }
                }
                p = pn_run(P, s, pos, n, x->mask, x->hi, &c);
                st->steps += c;
                if (c < x->lo)
                    return PN_FAIL;
                if (x->mode == PN_POSSESSIVE || p == pos) {
                    pos = p;
                    continue;
                }
                if (idx + 1 == alt->len && k == NULL)
                    return p > st->start ? p : PN_FAIL;
                for (;;) {          /* greedy: the longest run first, then shorter */
                    r = pn_seq(st, a, idx + 1, p, k);
                    if (r != PN_FAIL)
                        return r;
                    if (c == x->lo)
                        return PN_FAIL;
                    do p--; while ((s[p] & 0xC0) == 0x80);
                    c--;
                    if (++st->steps > st->limit)
                        return PN_OVERRUN;
                }
            }
            if (x->kind == PN_NOT_AHEAD) {
                if (pos < n && (pn_mask_at(P, s, pos, &w) & x->mask))
                    return PN_FAIL;
                continue;
            }
            if (x->kind == PN_END) {
                if (!(pos == n || (pos == n - 1 && s[pos] == '\\n')))
                    return PN_FAIL;
                continue;
            }
            /* a group */
            if (x->mode == PN_POSSESSIVE) {   /* atomic: its first match only */
                pn_k accept = {PK_ACCEPT, 0, 0, NULL, 0, NULL};
                r = pn_rep(st, x, 0, pos, &accept);
                if (r < 0)
                    return r;
                pos = r;
                continue;
            } else {
                pn_k after = {PK_SEQ, a, idx + 1, NULL, 0, k};
                return pn_rep(st, x, 0, pos, &after);
            }
        }
        return pn_cont(st, k, pos);
    }

    static int64_t pn_seq(pn_state *st, int32_t a, int32_t idx, int64_t pos, const pn_k *k) {
        int64_t r;
        if (++st->steps > st->limit || st->depth >= PN_MAX_DEPTH)
            return PN_OVERRUN;
        st->depth++;
        r = pn_seq_body(st, a, idx, pos, k);
        st->depth--;
        return r;
    }

    /* The first non-empty match at byte pos (m: the mask of its character), or PN_FAIL. */
    static int64_t pn_match(pn_state *st, int64_t pos, uint64_t m) {
        const pn_pat *P = st->P;
        int32_t a;
        int64_t r;
        st->start = pos;
        for (a = 0; a < P->nalt; a++) {
            if (!(P->alts[a].first & m))
                continue;
            r = pn_seq(st, a, 0, pos, NULL);
            if (r != PN_FAIL)
                return r;
        }
        return PN_FAIL;
    }

    /* The end of the pre-token at byte i < n: the match there, else the text up to
       the next place where one starts (or the end); PN_OVERRUN past the budget. */
    static int64_t pn_next(pn_state *st, int64_t i) {
        const pn_pat *P = st->P;
        int w;
        uint64_t m = pn_mask_at(P, st->s, i, &w);
        int64_t r, j;
        if (m & P->first) {
            r = pn_match(st, i, m);
            if (r != PN_FAIL)
                return r;
        }
        for (j = i + w; j < st->n; j += w) {
            m = pn_mask_at(P, st->s, j, &w);
            if (m & P->first) {
                r = pn_match(st, j, m);
                if (r == PN_OVERRUN)
                    return r;
                if (r != PN_FAIL)
                    return j;
            }
            if (++st->steps > st->limit)
                return PN_OVERRUN;
        }
        return st->n;
    }
    """
    enum: PN_CLASS, PN_GROUP, PN_NOT_AHEAD, PN_END
    enum: PN_GREEDY, PN_LAZY, PN_POSSESSIVE
    enum: PN_OVERRUN
    ctypedef struct pn_node:
        int32_t kind, mode
        uint32_t lo, hi
        uint64_t mask
        int32_t alt0, nalt
    ctypedef struct pn_alt:
        int32_t node0, len
        int32_t nullable
        uint64_t first
    ctypedef struct pn_pat:
        pn_node *nodes
        pn_alt *alts
        int32_t nalt
        uint64_t first
        uint64_t amask[128]
        uint16_t *top
        uint8_t *blocks
        uint64_t *combo
    ctypedef struct pn_state:
        const pn_pat *P
        int64_t n
    void pn_init(pn_state *st, const pn_pat *P, const uint8_t *s, int64_t n) noexcept nogil
    int64_t pn_next(pn_state *st, int64_t i) noexcept nogil


cdef enum: P_PAT = 5     # a compiled pattern (the scanners' numbers: _bpe_scanner.pxi)


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
_MODES = {"greedy": PN_GREEDY, "lazy": PN_LAZY, "possessive": PN_POSSESSIVE}


cdef object compiled_pattern(str pattern):
    """The native matcher of a resolved custom pattern (built once a process),
    or None where the pattern is outside the family (the regex splits)."""
    cdef _Pattern m
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
    """The nodes ([kind, mode, lo, hi, mask, alt0, nalt]) and alternatives
    ([node0, len, nullable, first]) of a program's alternatives, each group's
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

    def possessive(node0, count, top):
        first, nullable, trivial = 0, True, True   # of the nodes after t
        for t in range(count - 1, -1, -1):
            x = nodes[node0 + t]
            if x[0] == PN_CLASS and x[1] == PN_GREEDY and x[2] != x[3]:
                if (not nullable and not (first & overlap[x[4]])) or (top and trivial):
                    x[1] = PN_POSSESSIVE
            f, null, triv = info[node0 + t]
            first = f | (first if null else 0)
            nullable = nullable and null
            trivial = trivial and triv

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
                        nodes[node0 + t] = [PN_CLASS, _MODES[node[4]], node[2], hi, bit, 0, 0]
                        inner_first, inner_null = bit, False
                    else:
                        g0, inner_first, inner_null = place(node[1])
                        nodes[node0 + t] = [PN_GROUP, _MODES[node[4]], node[2], hi, 0, g0,
                                            len(node[1])]
                    null = node[2] == 0 or hi == 0 or inner_null
                    info[node0 + t] = (inner_first, null, node[2] == 0 or hi == 0)
                    if nullable:
                        first |= inner_first
                        nullable = null
                elif kind == "not_ahead":
                    nodes[node0 + t] = [PN_NOT_AHEAD, 0, 1, 1, 1 << bit_of[node[1]], 0, 0]
                    info[node0 + t] = (0, True, False)
                else:
                    nodes[node0 + t] = [PN_END, 0, 1, 1, 0, 0, 0]
                    info[node0 + t] = (0, True, False)
            possessive(node0, len(seq), top)
            alts[alt0 + j] = [node0, len(seq), nullable, first]
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
        m.P.nodes[i].mask, m.P.nodes[i].alt0, m.P.nodes[i].nalt = x[4], x[5], x[6]
    for i in range(len(alts)):
        x = alts[i]
        m.P.alts[i].node0, m.P.alts[i].len, m.P.alts[i].nullable, m.P.alts[i].first = x
    return m


cdef object _class_tables(pn_pat *P, list classes, list bit_of):
    """Fill P's code point -> mask tables; return the distinct masks (None
    if there are more than 256)."""
    cdef uint64_t *mask = <uint64_t *> calloc(0x110000, sizeof(uint64_t))
    cdef uint64_t bit, cur
    cdef Py_ssize_t k, a, b, c, nblocks = 0, ncombo = 0
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
