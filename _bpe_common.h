/* C helpers shared by every part of the compiled core: the prefetch, the
   profiling probes of a stats build, count trailing zeros and little-endian
   loads, big allocations on huge pages, giving memory back.  Declared to
   Cython in _bpe_common.pxi. */
#ifndef BPE_COMMON_H
#define BPE_COMMON_H

/* The empty volatile asm keeps the prefetch: GCC (12) takes a static
   function whose only effect is __builtin_prefetch for one without side
   effects and drops its calls (ipa-pure-const). */
#if defined(__GNUC__) || defined(__clang__)
#define BPE_PREFETCH(p) do { __builtin_prefetch((const void *)(p)); \
                             __asm__ __volatile__(""); } while (0)
#else
#define BPE_PREFETCH(p) ((void)0)
#endif

/* Profiling probes: counts of the encoder's paths, kept only in a build
   with -DBPE_STATS (CFLAGS=-DBPE_STATS python setup.py build_ext --inplace
   --force), where bpe._path_counts() reads them; elsewhere STAT is nothing.
   0 flat table hit in the home line, 1 hit further along, 2 new short
   pre-tokens merged by rank, 3 repeats of one being merged, 4 cache hit
   (long results), 5 whole token from the trie walk, 6 backtracking runs,
   7 backtracking gave up (merge by rank), 8 merge steps of short
   pre-tokens, 9 bytes backtracked, 10 memo lookups, 11 memo misses,
   12 dead ends, 13 steps in compatible(), 14 trie steps, 15 flat table
   resets (first use included). */
#ifdef BPE_STATS
#define BPE_STATS_ON 1
#define BPE_STAT(i, k) (bpe_stats[i] += (k))
#else
#define BPE_STATS_ON 0
#define BPE_STAT(i, k) ((void)0)
#endif
static long long bpe_stats[16];

#include <stdint.h>
static inline int bpe_ctz64(uint64_t x) {   /* x != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { x >>= 1; n++; }
    return n;
#endif
}
static inline uint64_t bpe_le64(uint64_t x) {   /* a little-endian load's value */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(x);
#else
    return x;
#endif
}

/* Large read-mostly tables on 2 MB pages where the system offers them
   (Linux: transparent huge pages on request): the encoder's lookups are
   random accesses into tables of several MB, and with 4 KB pages most of
   them would miss the TLB too.  The block is freed with free(). */
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
static void *bpe_big_alloc(size_t size, int zero) {
    void *p = NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= ((size_t) 1 << 20)) {
        size_t huge = ((size_t) 1 << 21), rounded = (size + huge - 1) & ~(huge - 1);
        if (posix_memalign(&p, huge, rounded) == 0) {
            madvise(p, rounded, MADV_HUGEPAGE);
            if (zero) memset(p, 0, size);
            return p;
        }
        p = NULL;
    }
#endif
    p = zero ? calloc(size ? size : 1, 1) : malloc(size ? size : 1);
    return p;
}

/* Give freed heap memory back to the system (glibc keeps the large blocks
   that training frees in its heap otherwise, and the peak of train_files
   would count them again when the tokenizer's tables are built). */
#if defined(__GLIBC__)
#include <malloc.h>
static void bpe_release_memory(void) { malloc_trim(0); }
#else
static void bpe_release_memory(void) {}
#endif

#endif
