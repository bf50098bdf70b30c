/* The native matcher of custom patterns (_bpe_pattern.pxi says what it
   matches and declares it): the compiled pattern's nodes, its class tables,
   and the backtracking matcher with its step budget.  Needs bpe_ctz64 and
   bpe_le64 (_bpe_common.h). */
#ifndef BPE_PATTERN_H
#define BPE_PATTERN_H

#include "_bpe_common.h"

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
        } else if (!(p == n || (p == n - 1 && s[p] == '\n'))) {   /* PN_END */
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
        } else if (!(pos == st->n || (pos == st->n - 1 && st->s[pos] == '\n'))) {
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
            if (!(pos == n || (pos == n - 1 && s[pos] == '\n')))
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

#endif
