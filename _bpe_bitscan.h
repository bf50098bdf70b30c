/* The bitmap pre-tokenizer's C: classify 64 bytes into class bitmaps
   (SSE2, AVX2 or 8 bytes at a time) and the rules of one block.  Included by
   _bpe_bitscan.pxi, which says what the rules are and drives the scan; needs
   bpe_ctz64 and bpe_le64 (_bpe_common.h). */
#ifndef BPE_BITSCAN_H
#define BPE_BITSCAN_H

#include <stdint.h>
#include <string.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define BS_X86 1
#endif

typedef struct {          /* the classes of 64 bytes: bit j is byte j */
    uint64_t lo, up, d, sp, nl, wn, a, sl, hi;
} bs_cls;

/* What each bitmap holds, once for every width: each classifier defines
   BS_IN(lo, hi) (a byte in [lo, hi]), BS_EQ(x), BS_OR, BS_ANDNOT(a, b)
   (b and not a) and BS_PUT(field, mask) (the mask's bytes into the field's
   bits) over its vector, and passes its type and the bytes' high bits. */
#define BS_CLASSES(vec_, high_) do {                                   \
        vec_ nl_ = BS_OR(BS_EQ(10), BS_EQ(13));                      \
        vec_ sp_ = BS_EQ(32);                                        \
        BS_PUT(lo, BS_IN(97, 122));                                  \
        BS_PUT(up, BS_IN(65, 90));                                   \
        BS_PUT(d, BS_IN(48, 57));                                    \
        BS_PUT(sp, sp_);                                             \
        BS_PUT(nl, nl_);                                             \
        BS_PUT(wn, BS_OR(sp_, BS_ANDNOT(nl_, BS_IN(9, 13))));        \
        BS_PUT(a, BS_EQ(39));                                        \
        BS_PUT(sl, BS_EQ(47));                                       \
        BS_PUT(hi, high_);                                           \
    } while (0)

#ifdef BS_X86
static void bs_classify_sse2(const uint8_t *p, bs_cls *c) {
    int k;
    memset(c, 0, sizeof(*c));
    for (k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        #define BS_IN(lo_, hi_) _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(lo_ - 1)), \
                                               _mm_cmplt_epi8(v, _mm_set1_epi8(hi_ + 1)))
        #define BS_EQ(x_) _mm_cmpeq_epi8(v, _mm_set1_epi8(x_))
        #define BS_OR _mm_or_si128
        #define BS_ANDNOT _mm_andnot_si128
        #define BS_PUT(f_, m_) c->f_ |= (uint64_t)(uint16_t)_mm_movemask_epi8(m_) << (16 * k)
        BS_CLASSES(__m128i, v);
        #undef BS_IN
        #undef BS_EQ
        #undef BS_OR
        #undef BS_ANDNOT
        #undef BS_PUT
    }
}

__attribute__((target("avx2")))
static void bs_classify_avx2(const uint8_t *p, bs_cls *c) {
    int k;
    memset(c, 0, sizeof(*c));
    for (k = 0; k < 2; k++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * k));
        #define BS_IN(lo_, hi_) _mm256_and_si256(_mm256_cmpgt_epi8(v, _mm256_set1_epi8(lo_ - 1)), \
                                                  _mm256_cmpgt_epi8(_mm256_set1_epi8(hi_ + 1), v))
        #define BS_EQ(x_) _mm256_cmpeq_epi8(v, _mm256_set1_epi8(x_))
        #define BS_OR _mm256_or_si256
        #define BS_ANDNOT _mm256_andnot_si256
        #define BS_PUT(f_, m_) c->f_ |= (uint64_t)(uint32_t)_mm256_movemask_epi8(m_) << (32 * k)
        BS_CLASSES(__m256i, v);
        #undef BS_IN
        #undef BS_EQ
        #undef BS_OR
        #undef BS_ANDNOT
        #undef BS_PUT
    }
}
#endif

/* The portable way: 8 bytes at a time; bit 7 of each byte of a mask
   gathered into 8 bits by one multiplication. */
static inline uint64_t bs_in8(uint64_t x, uint8_t lo, uint8_t hi) {
    uint64_t y = x & 0x7F7F7F7F7F7F7F7FULL, ones = 0x0101010101010101ULL;
    return (y + (0x80 - lo) * ones) & ~(y + (0x7F - hi) * ones) & ~x & 0x8080808080808080ULL;
}
static inline uint64_t bs_gather(uint64_t m) {
    return ((m >> 7) * 0x0102040810204080ULL) >> 56;
}
static void bs_classify_swar(const uint8_t *p, bs_cls *c) {
    int k;
    memset(c, 0, sizeof(*c));
    for (k = 0; k < 8; k++) {
        uint64_t x;
        memcpy(&x, p + 8 * k, 8);
        x = bpe_le64(x);
        #define BS_IN(lo_, hi_) bs_in8(x, lo_, hi_)
        #define BS_EQ(x_) bs_in8(x, x_, x_)
        #define BS_OR(a_, b_) ((a_) | (b_))
        #define BS_ANDNOT(a_, b_) (~(a_) & (b_))
        #define BS_PUT(f_, m_) c->f_ |= bs_gather(m_) << (8 * k)
        BS_CLASSES(uint64_t, x & 0x8080808080808080ULL);
        #undef BS_IN
        #undef BS_EQ
        #undef BS_OR
        #undef BS_ANDNOT
        #undef BS_PUT
    }
}

/* The index of the highest set bit of x != 0. */
static inline int bs_top(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll(x);
#else
    int r = 0;
    while (x >>= 1)
        r++;
    return r;
#endif
}

typedef void (*bs_classify_fn)(const uint8_t *, bs_cls *);
static bs_classify_fn bs_classify = bs_classify_swar;

/* The best classifier this CPU has, up to `most` (0: the portable one,
   1: SSE2, 2: AVX2); its name (for the tests and the docs). */
static const char *bs_choose(int most) {
    bs_classify = bs_classify_swar;
#ifdef BS_X86
    if (most < 1)
        return "swar";
    __builtin_cpu_init();
    if (most >= 2 && __builtin_cpu_supports("avx2")) {
        bs_classify = bs_classify_avx2;
        return "avx2";
    }
    bs_classify = bs_classify_sse2;
    return "sse2";
#else
    (void)most;
    return "swar";
#endif
}

/* The classes of the 64 bytes at s + b, of a text of n bytes: past its
   end, of a copy padded with zero bytes. */
static inline void bs_classify_at(const uint8_t *s, int64_t n, int64_t b, bs_cls *c) {
    uint8_t pad[64];
    if (b + 64 <= n) {
        bs_classify(s + b, c);
        return;
    }
    memset(pad, 0, sizeof(pad));
    if (b < n)
        memcpy(pad, s + b, (size_t)(n - b));
    bs_classify(pad, c);
}

/* ---- the state of a scan and the rules of one block ---- */

typedef struct {
    bs_cls prev, cur, next;   /* blocks base - 64, base, base + 64 */
    int64_t base;             /* the block whose starts are in `bits` */
    uint64_t bits;            /* its starts not yet returned */
    int64_t next_base;        /* the next block to compute */
    int64_t scalar_to;        /* the scalar scanner decides before this */
    int chained;              /* the carries below hold (block next_base - 64 was computed) */
    uint64_t prev_wp;         /* the previous block's white space after the absorbed line breaks */
    uint64_t abs_c;           /* 1: its last byte is a line break that punctuation took */
    uint64_t con_c;           /* starts after a contraction that ran into this block */
    uint64_t conin_c;         /* bytes of this block inside such a contraction */
    int64_t dig_r;            /* where the run of digits reaching this block started */
    uint64_t skip;            /* bytes of this block before the scan resumed: no class */
} bs_iter;

#define BS_SH1(x, px) (((x) << 1) | ((px) >> 63))
#define BS_SH2(x, px) (((x) << 2) | ((px) >> 62))
#define BS_SH3(x, px) (((x) << 3) | ((px) >> 61))

static inline uint64_t bs_punct(const bs_cls *c) {
    return ~(c->lo | c->up | c->d | c->wn | c->nl | c->hi);
}

/* After the last line break of a run of white space: a start unless
   another line break follows in the same run (`end`, cl100k's `\s++$`:
   or the run ends the text, one pre-token from its first character) (-1:
   a multi-byte character follows the run, which may be white space). */
static int bs_after_breaks(const bs_iter *it, const uint8_t *s, int64_t n, uint64_t cand,
                           int end, uint64_t *out) {
    uint64_t wn = it->cur.wn;
    while (cand) {
        int q = bpe_ctz64(cand), f, brk;
        uint64_t rest = ~(wn >> q);   /* 0: blanks to the end of the block */
        cand &= cand - 1;
        f = rest ? q + bpe_ctz64(rest) : 64;
        if (it->base + f >= n) {
            brk = end;   /* the run ends the text (\s++$) */
        } else if (f < 64) {
            brk = (int)((it->cur.nl >> f) & 1);
        } else {
            int64_t k = it->base + 64;
            while (k < n && (s[k] == 32 || s[k] == 9 || s[k] == 11 || s[k] == 12))
                k++;
            if (k < n && s[k] >= 0x80)
                return -1;
            brk = k < n ? (s[k] == 10 || s[k] == 13) : end;   /* \s++$ */
        }
        if (!brk)
            *out |= (uint64_t)1 << q;
    }
    return 0;
}

/* Contractions: apostrophes after a letter (cand); their apostrophes and
   letters (*in) and the starts after them (*end); bits past the block go
   to the carries of the next one. */
static void bs_contractions(bs_iter *it, const uint8_t *s, int64_t n, uint64_t cand,
                            int first, uint64_t *in, uint64_t *end) {
    uint64_t con_in = 0, con_end = 0, next_in = 0, next_end = 0;
    while (cand) {
        int j = bpe_ctz64(cand), k = 0, t;
        int64_t at = it->base + j;   /* the apostrophe; what follows may be the end */
        uint8_t c1 = at + 1 < n ? s[at + 1] | 0x20 : 0, c2 = at + 2 < n ? s[at + 2] | 0x20 : 0;
        cand &= cand - 1;
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')
            k = 2;
        else if (((c1 == 'r' || c1 == 'v') && c2 == 'e') || (c1 == 'l' && c2 == 'l'))
            k = 3;
        for (t = first; t < k; t++) {
            if (j + t < 64) con_in |= (uint64_t)1 << (j + t);
            else next_in |= (uint64_t)1 << (j + t - 64);
        }
        if (k) {
            if (j + k < 64) con_end |= (uint64_t)1 << (j + k);
            else next_end |= (uint64_t)1 << (j + k - 64);
        }
    }
    *in = con_in;
    *end = con_end;
    it->conin_c = next_in;
    it->con_c = next_end;
}

/* Digits: a start at the start of each run and every `most`-th digit
   after (d1: a digit is before; dm: `most` digits are before). */
static inline uint64_t bs_digits(bs_iter *it, uint64_t d, uint64_t d1, uint64_t dm,
                                 const int most) {
    uint64_t runs = d & ~d1, out = runs, rest = d & dm;
    if (most == 1)
        return d;
    while (rest) {
        int p = bpe_ctz64(rest), q;
        uint64_t below = runs & (p == 63 ? ~(uint64_t)0 : (((uint64_t)2 << p) - 1));
        int64_t r = below ? bs_top(below) : it->dig_r - it->base;
        for (q = p; q < 64 && ((d >> q) & 1); q++)
            if ((q - r) % most == 0)
                out |= (uint64_t)1 << q;
        rest = q >= 64 ? 0 : rest & ~(((uint64_t)1 << q) - 1);
    }
    if (d >> 63)
        it->dig_r = runs ? it->base + bs_top(runs) : it->dig_r;
    return out;
}

/* The starts of the block at it->base (its classes and carries set) for
   o200k (cl == 0) or cl100k and its variants (cl == 1; `most` digits a
   pre-token, `end`: \s++$); -1: not covered by the rules, the scalar
   scanner decides it. */
static inline int bs_block(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts,
                           const int cl, const int most, const int end) {
    const bs_cls *c = &it->cur, *p = &it->prev, *x = &it->next;
    uint64_t L = c->lo | c->up, Lp = p->lo | p->up;
    uint64_t W = c->wn | c->nl, P = bs_punct(c), Pp = bs_punct(p);
    uint64_t P1 = BS_SH1(P, Pp), SP1 = BS_SH1(c->sp, p->sp);
    uint64_t seeds, ab, Wp, out, con_in, con_end, in_prev = it->conin_c, end_prev = it->con_c;
    /* past the end of the text (the zero bytes of the last blocks' copies) */
    int64_t left = n - it->base;   /* > 0 */
    uint64_t E = left >= 64 ? 0 : ~(uint64_t)0 << left;
    uint64_t Ex = left >= 128 ? 0 : left <= 64 ? ~(uint64_t)0 : ~(uint64_t)0 << (left - 64);
    if ((c->hi & ~it->skip) | (x->hi & 7))
        return -1;
    if (!cl && ((c->sl & BS_SH1(c->nl, p->nl))
                | (c->a & (BS_SH2(c->a, p->a) | BS_SH3(c->a, p->a)))))
        return -1;
    /* line breaks right after punctuation (and the ones after those) are its */
    seeds = c->nl & (P1 | (it->abs_c & 1));
    ab = ((c->nl + seeds) ^ c->nl) & c->nl;
    Wp = W & ~ab;
    out = Wp & ~BS_SH1(Wp, it->prev_wp);                        /* a run's first */
    out |= c->wn & ~(((W | E) >> 1) | ((x->wn | x->nl | Ex) << 63));  /* its last before text */
    if (bs_after_breaks(it, s, n, BS_SH1(c->nl & Wp, p->nl & it->prev_wp) & c->wn, end,
                        &out) < 0)
        return -1;
    /* letters (o200k: also where lower case turns upper) */
    out |= L & ((~BS_SH1(L, Lp) & ~BS_SH1(P | c->wn, Pp | p->wn))
                | (P1 & (BS_SH2(P, Pp) | BS_SH2(c->sp, p->sp)))
                | (cl ? 0 : c->up & BS_SH1(c->lo, p->lo)));
    /* punctuation */
    out |= P & ~P1 & ~SP1;
    /* digits */
    out |= bs_digits(it, c->d, BS_SH1(c->d, p->d),
                     BS_SH1(c->d, p->d) & BS_SH2(c->d, p->d)
                     & (most == 3 ? BS_SH3(c->d, p->d) : ~(uint64_t)0), most);
    /* contractions: o200k's end a word, cl100k's are pre-tokens of their own */
    if (cl)
        bs_contractions(it, s, n, c->a & ~P1 & ~SP1, 1, &con_in, &con_end);
    else
        bs_contractions(it, s, n, c->a & BS_SH1(L, Lp), 0, &con_in, &con_end);
    out = (out | con_end | end_prev) & ~(con_in | in_prev | E);
    it->abs_c = ab >> 63;
    it->prev_wp = Wp;
    *starts = out;
    return 0;
}
/* one function per pattern: its switches are constants there */
static int bs_block_o200k(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) {
    return bs_block(it, s, n, starts, 0, 3, 0);
}
#define BS_CL_BLOCK(name_, most_, end_) \
    static int name_(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) { \
        return bs_block(it, s, n, starts, 1, most_, end_); \
    }
BS_CL_BLOCK(bs_block_cl3e, 3, 1)
BS_CL_BLOCK(bs_block_cl3, 3, 0)
BS_CL_BLOCK(bs_block_cl2, 2, 0)
BS_CL_BLOCK(bs_block_cl1, 1, 0)
BS_CL_BLOCK(bs_block_cl2e, 2, 1)
BS_CL_BLOCK(bs_block_cl1e, 1, 1)
#undef BS_CL_BLOCK

#endif
