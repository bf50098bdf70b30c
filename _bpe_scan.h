/* The C of the scan-and-encode loop (_bpe_scan.pxi declares it): the
   choice of a merge step, argmin16. */
#ifndef BPE_SCAN_H
#define BPE_SCAN_H

#include <stdint.h>
#if defined(__SSE2__) && !defined(BPE_NO_SSE2)
#define BPE_ARGMIN_SSE2 1
#include <emmintrin.h>
#endif
/* The index of the smallest of r[0..15] (the first of equals); *v: it.
   Branch-free with SSE2 (x86-64 always has it): a merge step's choice
   costs the same whatever the pre-token's length, and no loop exit is
   mispredicted.  -DBPE_NO_SSE2 compiles the portable loop instead. */
static inline int bpe_argmin16(const uint32_t *r, uint32_t *v) {
#ifdef BPE_ARGMIN_SSE2
    const __m128i flip = _mm_set1_epi32((int) 0x80000000u);  /* unsigned order */
    __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *) r), flip);
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (r + 4)), flip);
    __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (r + 8)), flip);
    __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (r + 12)), flip);
    #define BPE_MIN4(x_, y_) _mm_or_si128(_mm_and_si128(_mm_cmpgt_epi32(x_, y_), y_), \
                                          _mm_andnot_si128(_mm_cmpgt_epi32(x_, y_), x_))
    __m128i m = BPE_MIN4(BPE_MIN4(a, b), BPE_MIN4(c, d));
    m = BPE_MIN4(m, _mm_shuffle_epi32(m, 0x4E));
    m = BPE_MIN4(m, _mm_shuffle_epi32(m, 0xB1));
    #undef BPE_MIN4
    __m128i e = _mm_packs_epi16(_mm_packs_epi32(_mm_cmpeq_epi32(a, m), _mm_cmpeq_epi32(b, m)),
                                _mm_packs_epi32(_mm_cmpeq_epi32(c, m), _mm_cmpeq_epi32(d, m)));
    *v = (uint32_t) _mm_cvtsi128_si32(m) ^ 0x80000000u;
    return __builtin_ctz((unsigned) _mm_movemask_epi8(e));
#else
    int i, j = 0;
    for (i = 1; i < 16; i++)
        if (r[i] < r[j]) j = i;
    *v = r[j];
    return j;
#endif
}

#endif
