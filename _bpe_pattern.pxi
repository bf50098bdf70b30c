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
    #define PN_MAX_DEPTH 300   /* levels of recursion, at most some 600 bytes of stack each */
    #define PN_BASE ((int64_t)1 << 20)
    #define PN_PER_BYTE 256

    typedef struct {
        int32_t kind, mode;
        uint32_t lo, hi;      /* repeat bounds (hi 0xFFFFFFFF: none) */
        uint64_t mask;        /* CLASS, NOT_AHEAD: the class's bit */
        int32_t bit;          /* CLASS: the class's number */
        int32_t alt0, nalt;   /* GROUP: its alternatives */
        int32_t rest;         /* what follows in the sequence: PR_TAKES (a character of
                                 rest_first first), PR_ANY, or PR_CHECKS (only (?!C) and $,
                                 in one of the pattern's own alternatives) */
        uint64_t rest_first;
    } pn_node;

    enum { PR_TAKES = 0, PR_ANY = 1, PR_CHECKS = 2 };

    typedef struct {          /* a class's ASCII members as byte ranges, for 8 bytes at a time */
        int32_t n;            /* how many (-1: too many: one byte at a time) */
        int32_t neg;          /* the members are the ASCII bytes outside the ranges */
        uint64_t lo[4], hi[4];   /* (0x80 - first) and (0x7F - last) in every byte */
    } pn_swar;

    typedef struct {
        int32_t node0, len;   /* its nodes */
        int32_t nullable;     /* it can match the empty string */
        int32_t linear;       /* no choice point: classes taken possessively (or a fixed
                                 number of times), (?!C) and $ only */
        uint64_t first;       /* the classes the first character it takes may be in */
    } pn_alt;

    typedef struct {
        pn_node *nodes;
        pn_alt *alts;
        int32_t nalt;         /* the pattern's own alternatives: alts[0, nalt) */
        uint64_t first;
        uint64_t amask[128];  /* ASCII -> mask */
        pn_swar swar[64];     /* class number -> its ASCII ranges */
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
        if (__builtin_expect(b < 0x80, 1)) {
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

    /* Bit 7 of each byte of the result: that byte of x (y: x without bit 7 of each byte) is
       in [first, last] (ASCII), where lo and hi hold 0x80 - first and 0x7F - last. */
    static inline uint64_t pn_in_range8(uint64_t x, uint64_t y, uint64_t lo, uint64_t hi) {
        return (y + lo) & ~(y + hi) & ~x & 0x8080808080808080ULL;
    }

    /* The end of a run of characters of class `bit` (its mask: `mask`) from byte i, no bound
       on their number: ASCII 8 bytes at a time where the class's ASCII members are a few
       ranges, other characters one at a time. */
    static inline int64_t pn_run_all(const pn_pat *P, const uint8_t *s, int64_t i, int64_t n,
                                     uint64_t mask, int32_t bit) {
        const pn_swar *sw = &P->swar[bit];
        const int nr = sw->n, neg = sw->neg;
        const uint64_t l0 = sw->lo[0], h0 = sw->hi[0], l1 = sw->lo[1], h1 = sw->hi[1];
        uint64_t x, y, m;
        int w, r;
        for (;;) {
            if (nr >= 0) {
                while (i + 8 <= n) {
                    memcpy(&x, s + i, 8);
                    x = bpe_le64(x);
                    y = x & 0x7F7F7F7F7F7F7F7FULL;
                    if (nr <= 2) {   /* the common classes: letters, digits, white space */
                        m = (nr > 0 ? pn_in_range8(x, y, l0, h0) : 0)
                            | (nr > 1 ? pn_in_range8(x, y, l1, h1) : 0);
                    } else {
                        m = 0;
                        for (r = 0; r < nr; r++)
                            m |= pn_in_range8(x, y, sw->lo[r], sw->hi[r]);
                    }
                    if (neg)
                        m = ~m & ~x & 0x8080808080808080ULL;
                    m = ~m & 0x8080808080808080ULL;      /* the bytes that end the run */
                    if (m) {
                        i += bpe_ctz64(m) >> 3;
                        if (s[i] < 0x80)
                            return i;                    /* an ASCII byte outside the class */
                        break;
                    }
                    i += 8;
                }
            }
            if (i >= n)
                return i;
            uint32_t b = s[i];
            if (b < 0x80) {
                if (!(P->amask[b] & mask))
                    return i;
                i++;
            } else {
                if (!(pn_mask_at(P, s, i, &w) & mask))
                    return i;
                i += w;
            }
        }
    }

    /* A linear alternative of the pattern at pos: one way to match, no recursion. */
    static inline int64_t pn_linear(pn_state *st, const pn_alt *A, int64_t pos) {
        const pn_pat *P = st->P;
        const pn_node *x = &P->nodes[A->node0], *end = x + A->len;
        const uint8_t *s = st->s;
        int64_t n = st->n, p = pos, q;
        uint32_t c;
        int w;
        for (; x < end; x++) {
            if (x->kind == PN_CLASS) {
                if (x->hi == 1) {
                    if (p < n && (pn_mask_at(P, s, p, &w) & x->mask))
                        p += w;
                    else if (x->lo)
                        return PN_FAIL;
                    continue;
                }
                if (x->hi == 0xFFFFFFFFu && x->lo <= 1) {
                    q = pn_run_all(P, s, p, n, x->mask, x->bit);
                    if (q == p && x->lo)
                        return PN_FAIL;
                    st->steps += q - p;
                    p = q;
                    continue;
                }
                q = pn_run(P, s, p, n, x->mask, x->hi, &c);
                st->steps += c;
                if (c < x->lo)
                    return PN_FAIL;
                p = q;
            } else if (x->kind == PN_NOT_AHEAD) {
                if (p < n && (pn_mask_at(P, s, p, &w) & x->mask))
                    return PN_FAIL;
            } else if (!(p == n || (p == n - 1 && s[p] == '\\n'))) {   /* PN_END */
                return PN_FAIL;
            }
        }
        return p > pos ? p : PN_FAIL;
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

    static inline int pn_width(uint8_t b) {
        return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    }

    /* Whether the (?!C) and $ nodes x[0, count) hold at pos. */
    static int pn_checks(pn_state *st, const pn_node *x, int32_t count, int64_t pos) {
        int w;
        for (; count > 0; count--, x++) {
            if (x->kind == PN_NOT_AHEAD) {
                if (pos < st->n && (pn_mask_at(st->P, st->s, pos, &w) & x->mask))
                    return 0;
            } else if (!(pos == st->n || (pos == st->n - 1 && st->s[pos] == '\\n'))) {
                return 0;
            }
        }
        return 1;
    }

    /* Nodes idx.. of alternative a at pos, then k. */
    static int64_t pn_seq_body(pn_state *st, int32_t a, int32_t idx, int64_t pos, const pn_k *k) {
        const pn_pat *P = st->P;
        const pn_alt *alt = &P->alts[a];
        const uint8_t *s = st->s;
        int64_t n = st->n, r, p, q;
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
                if (x->hi == 0xFFFFFFFFu && x->lo <= 1) {
                    p = pn_run_all(P, s, pos, n, x->mask, x->bit);
                    st->steps += p - pos;
                    if (p == pos) {
                        if (x->lo)
                            return PN_FAIL;
                        continue;
                    }
                    c = 0;
                    q = x->lo ? pos + pn_width(s[pos]) : pos;   /* where backing off stops */
                } else {
                    p = pn_run(P, s, pos, n, x->mask, x->hi, &c);
                    st->steps += c;
                    if (c < x->lo)
                        return PN_FAIL;
                    q = -1;
                }
                if (x->mode == PN_POSSESSIVE || p == pos) {
                    pos = p;
                    continue;
                }
                if (idx + 1 == alt->len && k == NULL)
                    return p > st->start ? p : PN_FAIL;
                for (;;) {          /* greedy: the longest run first, then shorter */
                    if (x->rest == PR_CHECKS) {             /* (k is NULL) */
                        if (p > st->start && pn_checks(st, x + 1, alt->len - idx - 1, p))
                            return p;
                    } else if (x->rest == PR_ANY
                               || (p < n && (pn_mask_at(P, s, p, &w) & x->rest_first))) {
                        r = pn_seq(st, a, idx + 1, p, k);
                        if (r != PN_FAIL)
                            return r;
                    }
                    if (q >= 0 ? p == q : c == x->lo)
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
            if (P->alts[a].linear) {
                if (++st->steps > st->limit)
                    return PN_OVERRUN;
                r = pn_linear(st, &P->alts[a], pos);
            } else {
                r = pn_seq(st, a, 0, pos, NULL);
            }
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
