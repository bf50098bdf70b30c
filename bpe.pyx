# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""bpe: a byte-level BPE tokenizer with a compiled core.

Same API and same results as ``bpe_fallback`` (which holds the rules, the
special-token policy and the file formats); this module replaces only the hot
loops with typed C: the merge loop of training, a native pre-tokenizer for
the named patterns (on UTF-8), and encoding with a trie over the token bytes
(longest match, a compatibility check with the token before, backtracking)
behind per-thread caches of recent pre-tokens, all run without the GIL.

>>> tok = Tokenizer.train("low lower lowest " * 20, 260, pattern="words")
>>> tok.merges[:2]
[(b'o', b'w'), (b'l', b'ow')]
>>> tok.decode(tok.encode("slowest")) == "slowest"
True
"""

from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memcpy, memcmp, memset
from libc.stdint cimport int32_t, int64_t, uint64_t, uint32_t, uint16_t, uint8_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.ref cimport Py_INCREF, PyObject

cimport cython

import array
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import regex

import bpe_fallback as _py
from bpe_fallback import PATTERNS, __version__
# the public helpers this module does not replace
from bpe_fallback import (ProgressBar, file_cuts, main, read_jsonl, resolve_pattern, str_to_token,
                          token_to_str)

__all__ = list(_py.__all__)
BACKEND = "cython"

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BPE_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define BPE_PREFETCH(p) ((void)0)
    #endif
    """
    void prefetch "BPE_PREFETCH"(const void *p) noexcept nogil

cdef extern from *:
    """
    /* Counts of the encoder's paths, for profiling: built with -DBPE_STATS only. */
    #ifdef BPE_STATS
    static long long bpe_stats[16];
    #define BPE_STAT(i, k) (bpe_stats[i] += (k))
    #else
    static long long bpe_stats[16];
    #define BPE_STAT(i, k) ((void)0)
    #endif
    """
    long long bpe_stats[16]
    void STAT "BPE_STAT"(int i, long long k) noexcept nogil


def _path_counts(reset=False):
    """Counts of the encoder's paths (a build with -DBPE_STATS; else zeros)."""
    r = [bpe_stats[i] for i in range(16)]
    if reset:
        for i in range(16):
            bpe_stats[i] = 0
    return r


cdef extern from *:
    """
    #define BPE_LIST_ITEMS(op) (((PyListObject *)(op))->ob_item)
    """
    PyObject **list_items "BPE_LIST_ITEMS"(list op)

cdef extern from *:
    """
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
    """
    int ctz64 "bpe_ctz64"(uint64_t x) noexcept nogil
    uint64_t le64 "bpe_le64"(uint64_t x) noexcept nogil

cdef extern from *:
    """
    /* k more references to o at once (an immortal object keeps its count) */
    static inline void bpe_add_refs(PyObject *o, Py_ssize_t k) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (_Py_IsImmortal(o)) return;
    #endif
        Py_SET_REFCNT(o, Py_REFCNT(o) + k);
    }
    """
    void add_refs "bpe_add_refs"(PyObject *o, Py_ssize_t k)

cdef extern from *:
    """
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
    """
    void *big_alloc "bpe_big_alloc"(size_t size, int zero) noexcept nogil

cdef extern from *:
    """
    /* Give freed heap memory back to the system (glibc keeps the large blocks
       that training frees in its heap otherwise, and the peak of train_files
       would count them again when the tokenizer's tables are built). */
    #if defined(__GLIBC__)
    #include <malloc.h>
    static void bpe_release_memory(void) { malloc_trim(0); }
    #else
    static void bpe_release_memory(void) {}
    #endif
    """
    void release_memory "bpe_release_memory"() noexcept nogil

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)
    int PyErr_CheckSignals() except? -1
    unsigned long PyLong_AsUnsignedLong(object) except? -1
    int PyUnicode_KIND(object)
    void *PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)


# ===========================================================================
# Small C containers
# ===========================================================================

cdef struct IVec:
    int32_t *data
    Py_ssize_t len
    Py_ssize_t cap

cdef int ivec_reserve(IVec *v, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t cap
    cdef int32_t *p
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap else 8
    while cap < need:
        cap *= 2
    p = <int32_t *> realloc(v.data, cap * sizeof(int32_t))
    if p == NULL:
        return -1
    v.data = p
    v.cap = cap
    return 0

cdef int bytes_reserve(uint8_t **buf, Py_ssize_t *cap, Py_ssize_t need) noexcept nogil:
    """Grow a malloc'ed byte buffer (by doubling) to hold `need` bytes."""
    cdef Py_ssize_t c
    cdef uint8_t *p
    if need <= cap[0]:
        return 0
    c = cap[0] * 2 if cap[0] else 4096
    while c < need:
        c *= 2
    p = <uint8_t *> realloc(buf[0], c)
    if p == NULL:
        return -1
    buf[0] = p
    cap[0] = c
    return 0

cdef inline int ivec_push(IVec *v, int32_t x) noexcept nogil:
    if v.len == v.cap and ivec_reserve(v, v.len + 1) < 0:
        return -1
    v.data[v.len] = x
    v.len += 1
    return 0

cdef inline void ivec_free(IVec *v) noexcept nogil:
    free(v.data)
    v.data = NULL
    v.len = 0
    v.cap = 0


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= 0xff51afd7ed558ccdULL
    x ^= x >> 33
    x *= 0xc4ceb9fe1a85ec53ULL
    x ^= x >> 33
    return x

cdef inline uint64_t hash_bytes(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t> n
    cdef Py_ssize_t i = 0
    cdef uint64_t w
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = mix64(h ^ w) + 0x9E3779B97F4A7C15ULL
        i += 8
    w = 0
    if i < n:
        memcpy(&w, p + i, n - i)
    return mix64(h ^ w ^ (<uint64_t> n << 56))


# ---- uint64 -> int64 map (open addressing, linear probing) -----------------

cdef uint64_t EMPTY_KEY = 0xFFFFFFFFFFFFFFFFULL

cdef struct U64Map:
    uint64_t *keys
    int64_t *vals
    Py_ssize_t mask
    Py_ssize_t size

cdef int u64map_init(U64Map *m, Py_ssize_t want) noexcept nogil:
    cdef Py_ssize_t cap = 16
    while cap < want * 2:
        cap *= 2
    m.keys = <uint64_t *> malloc(cap * sizeof(uint64_t))
    m.vals = <int64_t *> malloc(cap * sizeof(int64_t))
    if m.keys == NULL or m.vals == NULL:
        return -1
    memset(m.keys, 0xFF, cap * sizeof(uint64_t))
    m.mask = cap - 1
    m.size = 0
    return 0

cdef void u64map_free(U64Map *m) noexcept nogil:
    free(m.keys)
    free(m.vals)
    m.keys = NULL
    m.vals = NULL

cdef inline Py_ssize_t u64map_slot(const U64Map *m, uint64_t key) noexcept nogil:
    cdef Py_ssize_t i = <Py_ssize_t> (mix64(key) & <uint64_t> m.mask)
    while m.keys[i] != key and m.keys[i] != EMPTY_KEY:
        i = (i + 1) & m.mask
    return i

cdef inline int64_t u64map_get(const U64Map *m, uint64_t key, int64_t missing) noexcept nogil:
    cdef Py_ssize_t i = u64map_slot(m, key)
    if m.keys[i] == key:
        return m.vals[i]
    return missing

cdef int u64map_put(U64Map *m, uint64_t key, int64_t val) noexcept nogil:
    cdef Py_ssize_t i, j, old_cap
    cdef uint64_t *old_keys
    cdef int64_t *old_vals
    if (m.size + 1) * 2 > m.mask + 1:
        old_keys = m.keys
        old_vals = m.vals
        old_cap = m.mask + 1
        if u64map_init(m, old_cap) < 0:
            return -1
        for j in range(old_cap):
            if old_keys[j] != EMPTY_KEY:
                i = u64map_slot(m, old_keys[j])
                m.keys[i] = old_keys[j]
                m.vals[i] = old_vals[j]
                m.size += 1
        free(old_keys)
        free(old_vals)
    i = u64map_slot(m, key)
    if m.keys[i] != key:
        m.keys[i] = key
        m.size += 1
    m.vals[i] = val
    return 0


# ===========================================================================
# Training: the merge loop
# ===========================================================================
#
# Memory, per symbol of the distinct pre-tokens, is one int32 and one bit.
# Each pre-token's bytes are a run of positions in `sym`; a token covering
# positions [s, s + L) is its id at sym[s], -L at its last position (L >= 2)
# and any negative number between, so the next token starts at s + tlen[id]
# and the previous one ends at s - 1 (where a number >= 0 is a token of one
# byte, and -L says where it starts).  A bit marks where each pre-token
# starts.  Pre-tokens are laid out grouped by their count, so a position's
# count comes from a small table of the groups' ends.

cdef struct HeapItem:
    int64_t count
    int32_t pair

cdef union OccData:
    int32_t *ptr
    int32_t inl[2]

cdef struct Occ:
    # the positions where a pair was made (some no longer hold it): up to
    # two in place (cap 0), more in a malloc'ed array of cap
    OccData d
    int32_t len
    int32_t cap

cdef struct PairAB:
    int32_t a
    int32_t b

cdef struct Trainer:
    int32_t *sym
    uint64_t *start     # bit p: a pre-token starts at position p (and at `total`)
    int64_t *gend       # count groups: positions [gend[g-1], gend[g]) have count gcnt[g]
    int64_t *gcnt
    Py_ssize_t ngroups
    Py_ssize_t glast    # the group found last
    # pairs: (a, b) -> index into the arrays below, by open addressing
    int32_t *slots      # -1: empty
    Py_ssize_t smask
    PairAB *ab
    int64_t *pcount
    Occ *occ
    int32_t *stamp
    Py_ssize_t npairs
    Py_ssize_t pcap
    # token bytes
    uint8_t *tbuf
    Py_ssize_t tbuf_len
    Py_ssize_t tbuf_cap
    int64_t *toff
    int32_t *tlen
    Py_ssize_t ntok
    # heap
    HeapItem *heap
    Py_ssize_t hlen
    Py_ssize_t hcap


cdef inline bint is_start(const Trainer *t, Py_ssize_t p) noexcept nogil:
    return (t.start[p >> 6] >> (p & 63)) & 1

cdef inline int64_t count_at(Trainer *t, Py_ssize_t p) noexcept nogil:
    """The count of the pre-token holding position p."""
    cdef Py_ssize_t g = t.glast, lo, hi, mid
    if p < t.gend[g] and (g == 0 or p >= t.gend[g - 1]):
        return t.gcnt[g]
    lo = 0
    hi = t.ngroups - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if t.gend[mid] > p:
            hi = mid
        else:
            lo = mid + 1
    t.glast = lo
    return t.gcnt[lo]

cdef inline int32_t *occ_data(Occ *o) noexcept nogil:
    return &o.d.inl[0] if o.cap == 0 else o.d.ptr

cdef int occ_reserve(Occ *o, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t cap
    cdef int32_t *p
    if need <= (o.cap if o.cap else 2):
        return 0
    if need > 0x7FFFFFFF:
        return -1
    cap = o.cap * 2 if o.cap else 4
    while cap < need:
        cap *= 2
    if cap > 0x7FFFFFFF:
        cap = 0x7FFFFFFF
    if o.cap == 0:
        p = <int32_t *> malloc(cap * sizeof(int32_t))
        if p == NULL:
            return -1
        memcpy(p, &o.d.inl[0], o.len * sizeof(int32_t))
    else:
        p = <int32_t *> realloc(o.d.ptr, cap * sizeof(int32_t))
        if p == NULL:
            return -1
    o.d.ptr = p
    o.cap = <int32_t> cap
    return 0

cdef inline int occ_push(Occ *o, int32_t x) noexcept nogil:
    if o.len >= (o.cap if o.cap else 2) and occ_reserve(o, o.len + 1) < 0:
        return -1
    occ_data(o)[o.len] = x
    o.len += 1
    return 0

cdef inline void occ_free(Occ *o) noexcept nogil:
    if o.cap:
        free(o.d.ptr)
    o.len = 0
    o.cap = 0


cdef inline int cmp_tok(const Trainer *t, int32_t x, int32_t y) noexcept nogil:
    cdef int32_t lx = t.tlen[x], ly = t.tlen[y]
    cdef int r = memcmp(t.tbuf + t.toff[x], t.tbuf + t.toff[y], lx if lx < ly else ly)
    if r != 0:
        return r
    return (lx > ly) - (lx < ly)

cdef inline bint before(const Trainer *t, HeapItem u, HeapItem v) noexcept nogil:
    """True if u is chosen before v: more count, then the greater bytes."""
    cdef int r
    if u.count != v.count:
        return u.count > v.count
    r = cmp_tok(t, t.ab[u.pair].a, t.ab[v.pair].a)
    if r == 0:
        r = cmp_tok(t, t.ab[u.pair].b, t.ab[v.pair].b)
    return r > 0

cdef int heap_push(Trainer *t, int64_t count, int32_t pair) noexcept nogil:
    cdef HeapItem item, parent
    cdef Py_ssize_t i
    cdef HeapItem *p
    if t.hlen == t.hcap:
        t.hcap = t.hcap * 2 if t.hcap else 1024
        p = <HeapItem *> realloc(t.heap, t.hcap * sizeof(HeapItem))
        if p == NULL:
            return -1
        t.heap = p
    item.count = count
    item.pair = pair
    i = t.hlen
    t.hlen += 1
    while i > 0:
        parent = t.heap[(i - 1) >> 1]
        if not before(t, item, parent):
            break
        t.heap[i] = parent
        i = (i - 1) >> 1
    t.heap[i] = item
    return 0

cdef void heap_pop(Trainer *t) noexcept nogil:
    cdef HeapItem last
    cdef Py_ssize_t i = 0, c, n
    t.hlen -= 1
    n = t.hlen
    if n == 0:
        return
    last = t.heap[n]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and before(t, t.heap[c + 1], t.heap[c]):
            c += 1
        if not before(t, t.heap[c], last):
            break
        t.heap[i] = t.heap[c]
        i = c
    t.heap[i] = last


cdef inline Py_ssize_t pair_slot(const Trainer *t, int32_t a, int32_t b) noexcept nogil:
    """The slot of pair (a, b) in the index, or the empty slot where it would go."""
    cdef uint64_t key = (<uint64_t> <uint32_t> a << 32) | <uint32_t> b
    cdef Py_ssize_t i = <Py_ssize_t> (mix64(key) & <uint64_t> t.smask)
    cdef int32_t j
    while True:
        j = t.slots[i]
        if j < 0 or (t.ab[j].a == a and t.ab[j].b == b):
            return i
        i = (i + 1) & t.smask

cdef int index_grow(Trainer *t) noexcept nogil:
    cdef Py_ssize_t cap = (t.smask + 1) * 2 if t.slots != NULL else 1 << 12, i, k
    cdef int32_t *old = t.slots
    cdef Py_ssize_t old_cap = t.smask + 1
    t.slots = <int32_t *> malloc(cap * sizeof(int32_t))
    if t.slots == NULL:
        t.slots = old
        return -1
    memset(t.slots, 0xFF, cap * sizeof(int32_t))
    t.smask = cap - 1
    if old != NULL:
        for k in range(old_cap):
            if old[k] >= 0:
                i = pair_slot(t, t.ab[old[k]].a, t.ab[old[k]].b)
                t.slots[i] = old[k]
        free(old)
    return 0

cdef int32_t pair_index(Trainer *t, int32_t a, int32_t b, Py_ssize_t reserve) noexcept nogil:
    """The index of pair (a, b), made if new (with room for `reserve`
    positions); -1 when out of memory."""
    cdef Py_ssize_t s = pair_slot(t, a, b), cap
    cdef int32_t i = t.slots[s]
    if i >= 0:
        return i
    if (t.npairs + 1) * 2 > t.smask + 1:
        if index_grow(t) < 0:
            return -1
        s = pair_slot(t, a, b)
    if t.npairs == t.pcap:
        cap = t.pcap * 2 if t.pcap else 1024
        if (resize(<void **> &t.pcount, cap * sizeof(int64_t)) < 0
                or resize(<void **> &t.occ, cap * sizeof(Occ)) < 0
                or resize(<void **> &t.stamp, cap * sizeof(int32_t)) < 0
                or resize(<void **> &t.ab, cap * sizeof(PairAB)) < 0):
            return -1
        t.pcap = cap
    i = <int32_t> t.npairs
    t.npairs += 1
    t.pcount[i] = 0
    t.occ[i].len = 0
    t.occ[i].cap = 0
    t.stamp[i] = -1
    t.ab[i].a = a
    t.ab[i].b = b
    t.slots[s] = i
    if reserve > 2 and occ_reserve(&t.occ[i], reserve) < 0:
        return -1
    return i

cdef inline int32_t add_pair(Trainer *t, int32_t a, int32_t b, int64_t n, int32_t pos) noexcept nogil:
    """Pair (a, b) gains n and the position; its index (-1: out of memory)."""
    cdef int32_t i = pair_index(t, a, b, 0)
    if i < 0:
        return -1
    t.pcount[i] += n
    if occ_push(&t.occ[i], pos) < 0:
        return -1
    return i

cdef inline void drop_pair(Trainer *t, int32_t a, int32_t b, int64_t n) noexcept nogil:
    cdef int32_t i = t.slots[pair_slot(t, a, b)]
    if i < 0:
        return
    t.pcount[i] -= n
    if t.pcount[i] <= 0:
        t.pcount[i] = 0
        occ_free(&t.occ[i])

cdef int add_token(Trainer *t, int32_t a, int32_t b) noexcept nogil:
    cdef Py_ssize_t need = t.tbuf_len + t.tlen[a] + t.tlen[b]
    if bytes_reserve(&t.tbuf, &t.tbuf_cap, need) < 0:
        return -1
    memcpy(t.tbuf + t.tbuf_len, t.tbuf + t.toff[a], t.tlen[a])
    memcpy(t.tbuf + t.tbuf_len + t.tlen[a], t.tbuf + t.toff[b], t.tlen[b])
    t.toff[t.ntok] = t.tbuf_len
    t.tlen[t.ntok] = t.tlen[a] + t.tlen[b]
    t.tbuf_len = need
    t.ntok += 1
    return 0

cdef int cmp_int32(const void *x, const void *y) noexcept nogil:
    cdef int32_t a = (<const int32_t *> x)[0], b = (<const int32_t *> y)[0]
    return (a > b) - (a < b)


cdef void trainer_free(Trainer *t) noexcept nogil:
    cdef Py_ssize_t i
    free(t.sym); free(t.start); free(t.gend); free(t.gcnt)
    free(t.slots); free(t.ab)
    if t.occ != NULL:
        for i in range(t.npairs):
            occ_free(&t.occ[i])
    free(t.occ); free(t.pcount); free(t.stamp)
    free(t.tbuf); free(t.toff); free(t.tlen); free(t.heap)
    memset(t, 0, sizeof(Trainer))


cdef inline int replace_pair(Trainer *t, int32_t old_a, int32_t old_b, int32_t new_a, int32_t new_b,
                             int64_t n, int32_t pos, int32_t step, IVec *born) noexcept nogil:
    """A neighbour pair changes at `pos` (weight n): (old_a, old_b) loses n,
    (new_a, new_b) gains n and the position; new pairs are listed once a step."""
    cdef int32_t j
    drop_pair(t, old_a, old_b, n)
    j = add_pair(t, new_a, new_b, n, pos)
    if j < 0:
        return -1
    if t.stamp[j] != step:
        t.stamp[j] = step
        return ivec_push(born, j)
    return 0


cdef int merge_step(Trainer *t, int32_t pair, int32_t new, int32_t step, IVec *born) noexcept nogil:
    """Apply merge `pair` -> `new` at every valid occurrence, left to right
    within each pre-token; update neighbouring pair counts; list new pairs."""
    cdef int32_t a = t.ab[pair].a, b = t.ab[pair].b
    cdef int32_t la = t.tlen[a], lb = t.tlen[b]
    cdef Occ occ = t.occ[pair]
    cdef int32_t *data = occ_data(&occ)
    cdef Py_ssize_t k
    cdef int32_t p, q, r, left, v, x, y
    cdef int64_t n
    t.occ[pair].len = 0
    t.occ[pair].cap = 0
    qsort(data, occ.len, sizeof(int32_t), cmp_int32)
    for k in range(occ.len):
        p = data[k]
        if t.sym[p] != a:
            continue
        q = p + la
        if is_start(t, q) or t.sym[q] != b:
            continue
        n = count_at(t, p)
        if not is_start(t, p):
            v = t.sym[p - 1]
            left = p - 1 if v >= 0 else p + v
            x = t.sym[left]
            if replace_pair(t, x, a, x, new, n, left, step, born) < 0:
                occ_free(&occ)
                return -1
        r = q + lb
        if not is_start(t, r):
            y = t.sym[r]
            if replace_pair(t, b, y, new, y, n, p, step, born) < 0:
                occ_free(&occ)
                return -1
        t.sym[p] = new
        t.sym[q] = -1
        t.sym[r - 1] = -(la + lb)
    occ_free(&occ)
    t.pcount[pair] = 0
    occ_free(&t.occ[pair])
    return 0


cdef enum: SMALL_COUNT = 4096   # counts below: a group cursor by direct index

cdef struct Loader:
    # where the next pre-token of each count goes: small counts by index,
    # the others (sorted, distinct) by binary search
    int64_t *small      # [SMALL_COUNT]
    int64_t *big        # pairs (count, symbols), then (count, cursor) once grouped
    Py_ssize_t nbig
    Py_ssize_t bigcap
    int32_t *bpocc      # [65536] occurrences of each pair of bytes

cdef int loader_note(Loader *L, const uint8_t *w, Py_ssize_t n, int64_t c) noexcept nogil:
    """First pass: a pre-token of n >= 2 bytes and count c > 0."""
    cdef Py_ssize_t i
    cdef int64_t *p
    for i in range(n - 1):
        L.bpocc[(<int32_t> w[i] << 8) | w[i + 1]] += 1
    if c < SMALL_COUNT:
        L.small[c] += n
        return 0
    if L.nbig == L.bigcap:
        L.bigcap = L.bigcap * 2 if L.bigcap else 256
        p = <int64_t *> realloc(L.big, L.bigcap * 2 * sizeof(int64_t))
        if p == NULL:
            return -1
        L.big = p
    L.big[2 * L.nbig] = c
    L.big[2 * L.nbig + 1] = n
    L.nbig += 1
    return 0

cdef int cmp_int64_first(const void *x, const void *y) noexcept nogil:
    cdef int64_t a = (<const int64_t *> x)[0], b = (<const int64_t *> y)[0]
    return (a > b) - (a < b)

cdef int loader_group(Loader *L, Trainer *t) noexcept nogil:
    """Lay out the count groups: small counts ascending, then the big ones."""
    cdef Py_ssize_t i, k = 0, g = 0
    cdef int64_t pos = 0, n
    qsort(L.big, L.nbig, 2 * sizeof(int64_t), cmp_int64_first)
    for i in range(L.nbig):       # merge equal counts: (count, symbols) distinct
        if k > 0 and L.big[2 * (k - 1)] == L.big[2 * i]:
            L.big[2 * (k - 1) + 1] += L.big[2 * i + 1]
        else:
            L.big[2 * k] = L.big[2 * i]
            L.big[2 * k + 1] = L.big[2 * i + 1]
            k += 1
    L.nbig = k
    for i in range(SMALL_COUNT):
        g += L.small[i] > 0
    t.ngroups = g + k
    t.gend = <int64_t *> malloc((t.ngroups + 1) * sizeof(int64_t))
    t.gcnt = <int64_t *> malloc((t.ngroups + 1) * sizeof(int64_t))
    if t.gend == NULL or t.gcnt == NULL:
        return -1
    g = 0
    for i in range(SMALL_COUNT):
        if L.small[i] > 0:
            n = L.small[i]
            L.small[i] = pos
            pos += n
            t.gend[g] = pos
            t.gcnt[g] = i
            g += 1
    for i in range(k):
        n = L.big[2 * i + 1]
        L.big[2 * i + 1] = pos
        pos += n
        t.gend[g] = pos
        t.gcnt[g] = L.big[2 * i]
        g += 1
    if t.ngroups == 0:      # nothing to learn from: one empty group
        t.ngroups = 1
        t.gend[0] = 0
        t.gcnt[0] = 0
    return 0

cdef int load_word(Trainer *t, Loader *L, const uint8_t *w, Py_ssize_t n, int64_t c) noexcept nogil:
    """Second pass: put one distinct pre-token (n >= 2 bytes, count c > 0) in
    its count's group, and count its pairs of bytes."""
    cdef Py_ssize_t i, lo, hi, mid
    cdef int64_t *cur
    cdef int32_t b
    cdef int32_t j
    if c < SMALL_COUNT:
        cur = &L.small[c]
    else:
        lo = 0
        hi = L.nbig - 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if L.big[2 * mid] < c:
                lo = mid + 1
            else:
                hi = mid
        cur = &L.big[2 * lo + 1]
    b = <int32_t> cur[0]
    cur[0] += n
    t.start[b >> 6] |= (<uint64_t> 1) << (b & 63)
    for i in range(n):
        t.sym[b + i] = w[i]
    for i in range(n - 1):
        j = pair_index(t, w[i], w[i + 1], L.bpocc[(<int32_t> w[i] << 8) | w[i + 1]])
        if j < 0:
            return -1
        t.pcount[j] += c
        if occ_push(&t.occ[j], <int32_t> (b + i)) < 0:
            return -1
    return 0


def _learn_merges(counts, Py_ssize_t n_merges, min_freq, max_token_bytes,
                  progress=None, bint consume=True):
    """Core.learn_merges: the compiled merge loop.  `counts`: a dict of
    pre-token bytes -> count, or a counter of this core (Core.counter), read
    in C with no Python object per pre-token.  With `consume`, it empties
    `counts` once its arrays hold them; `progress` is None or a callable
    (phase, done, total)."""
    cdef Trainer t
    cdef Loader L
    cdef Py_ssize_t total = 0, nwords = 0, i, n, step, distinct
    cdef int64_t c, limit = (1 << 62) if max_token_bytes is None else min(max_token_bytes, 1 << 62)
    cdef int64_t min_frequency = min(min_freq, _py.MAX_COUNT)
    cdef int64_t max_count = _py.MAX_COUNT
    cdef int32_t a, b, pair
    cdef HeapItem top
    cdef IVec born
    cdef int err = 0
    cdef _Counter counter = counts if isinstance(counts, _Counter) else None
    cdef CEntry *e
    memset(&t, 0, sizeof(Trainer))
    memset(&L, 0, sizeof(Loader))
    memset(&born, 0, sizeof(IVec))
    cdef int64_t pairs_total = 0
    try:
        L.small = <int64_t *> calloc(SMALL_COUNT, sizeof(int64_t))
        L.bpocc = <int32_t *> calloc(65536, sizeof(int32_t))
        if L.small == NULL or L.bpocc == NULL:
            raise MemoryError()
        if counter is not None:
            distinct = counter.n
            for i in range(counter.n):
                e = &counter.ents[i]
                n = e.key_len
                c = e.count
                if n >= 2 and c > 0:
                    if c > max_count or c > (max_count - pairs_total) // (n - 1):
                        raise ValueError(_py.COUNT_OVERFLOW)
                    pairs_total += c * (n - 1)
                    total += n
                    nwords += 1
                    if loader_note(&L, counter.keys + e.key_off, n, c) < 0:
                        raise MemoryError()
        else:
            distinct = len(counts)
            for word, count in counts.items():
                if type(word) is not bytes:
                    raise TypeError(f"pre-tokens must be bytes, not {type(word).__name__}")
                n = len(word)
                if n >= 2 and count > 0:
                    if count > _py.MAX_COUNT or count > (_py.MAX_COUNT - pairs_total) // (n - 1):
                        raise ValueError(_py.COUNT_OVERFLOW)
                    c = count
                    pairs_total += c * (n - 1)
                    total += n
                    nwords += 1
                    if loader_note(&L, <const uint8_t *> PyBytes_AS_STRING(word), n, c) < 0:
                        raise MemoryError()
        if total >= 0x7FFFFFF0:
            raise MemoryError("more than 2**31 symbols in distinct pre-tokens")
        # each merge takes at least one symbol out of a distinct pre-token: never
        # size anything by the requested number alone
        n_merges = min(n_merges, total - nwords)
        if progress is not None:
            progress("pretokens", distinct, distinct)
        t.sym = <int32_t *> malloc((total + 1) * sizeof(int32_t))
        t.start = <uint64_t *> calloc((total >> 6) + 1, sizeof(uint64_t))
        t.tbuf_cap = 1 << 16
        t.tbuf = <uint8_t *> malloc(t.tbuf_cap)
        t.toff = <int64_t *> malloc((256 + n_merges + 1) * sizeof(int64_t))
        t.tlen = <int32_t *> malloc((256 + n_merges + 1) * sizeof(int32_t))
        if (t.sym == NULL or t.start == NULL or t.tbuf == NULL or t.toff == NULL or t.tlen == NULL
                or index_grow(&t) < 0 or loader_group(&L, &t) < 0):
            raise MemoryError()
        t.start[total >> 6] |= (<uint64_t> 1) << (total & 63)
        for i in range(256):
            t.tbuf[i] = <uint8_t> i
            t.toff[i] = i
            t.tlen[i] = 1
        t.tbuf_len = 256
        t.ntok = 256
        if counter is not None:
            with nogil:
                for i in range(counter.n):
                    e = &counter.ents[i]
                    if e.key_len < 2 or e.count <= 0:
                        continue
                    if load_word(&t, &L, counter.keys + e.key_off, e.key_len, e.count) < 0:
                        err = -1
                        break
            if err < 0:
                raise MemoryError()
            if consume:
                counter.clear()
                release_memory()
        else:
            for word, count in counts.items():
                n = PyBytes_GET_SIZE(word)
                if n < 2 or count <= 0:
                    continue
                if load_word(&t, &L, <const uint8_t *> PyBytes_AS_STRING(word), n, count) < 0:
                    raise MemoryError()
            if consume:
                counts.clear()  # the caller's private dict; its objects are not needed any more
        free(L.small); free(L.big); free(L.bpocc)
        memset(&L, 0, sizeof(Loader))
        if limit >= 2:
            for i in range(t.npairs):
                if heap_push(&t, t.pcount[i], <int32_t> i) < 0:
                    raise MemoryError()
        merges = []
        step = 0
        if progress is not None:
            progress("merge", 0, n_merges)
        while step < n_merges and t.hlen > 0:
            top = t.heap[0]
            c = t.pcount[top.pair]
            if c != top.count:
                heap_pop(&t)
                if c > 0 and heap_push(&t, c, top.pair) < 0:
                    raise MemoryError()
                continue
            if c < min_frequency:
                break
            heap_pop(&t)
            a = t.ab[top.pair].a
            b = t.ab[top.pair].b
            if add_token(&t, a, b) < 0:
                raise MemoryError()
            born.len = 0
            with nogil:
                err = merge_step(&t, top.pair, <int32_t> (256 + step), <int32_t> step, &born)
                if err == 0:
                    for i in range(born.len):
                        pair = born.data[i]
                        c = t.pcount[pair]
                        if c > 0 and t.tlen[t.ab[pair].a] + t.tlen[t.ab[pair].b] <= limit:
                            if heap_push(&t, c, pair) < 0:
                                err = -1
                                break
            if err < 0:
                raise MemoryError()
            merges.append((a, b))
            step += 1
            if (step & 255) == 0:
                PyErr_CheckSignals()  # Ctrl-C (KeyboardInterrupt) stops training within 256 merges
                if progress is not None:
                    progress("merge", step, n_merges)
        if progress is not None:
            progress("merge", step, step)
        return merges
    finally:
        free(L.small); free(L.big); free(L.bpocc)
        ivec_free(&born)
        trainer_free(&t)
        release_memory()


# ===========================================================================
# Native pre-tokenizer for the named patterns
# ===========================================================================

cdef enum: F_L = 1      # \p{L}
cdef enum: F_N = 2      # \p{N}
cdef enum: F_S = 4      # \s
cdef enum: F_U = 8      # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
cdef enum: F_W = 16     # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
cdef enum: F_CASE_S = 32   # matches "s" case-insensitively in regex (s, S, U+017F)

cdef enum: P_NONE = 0
cdef enum: P_GPT2 = 1
cdef enum: P_CL100K = 2
cdef enum: P_O200K = 3
cdef enum: P_WORDS = 4

cdef enum: F_MB = 64     # BYTE_FLAGS only: a byte of a multi-byte UTF-8 character

cdef uint8_t *FLAGS = NULL       # code point -> flags
cdef uint8_t BYTE_FLAGS[256]     # UTF-8 byte -> flags (ASCII) or F_MB
_flags_lock = threading.Lock()


cdef void _build_flags() except *:
    """Classify every code point with `regex` itself, so the native scanner
    agrees with regex's Unicode tables by construction."""
    global FLAGS
    cdef uint8_t *table
    cdef Py_ssize_t i
    with _flags_lock:
        if FLAGS != NULL:
            return
        table = <uint8_t *> calloc(0x110000, 1)
        if table == NULL:
            raise MemoryError()
        # every code point in one str, without a million one-character strings on the way
        everything = array.array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")
        for flag, pat in ((F_L, r"\p{L}+"), (F_N, r"\p{N}+"), (F_S, r"\s+"),
                          (F_U, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"),
                          (F_W, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"), (F_CASE_S, r"(?i:s)+")):
            for m in regex.finditer(pat, everything):
                for i in range(m.start(), m.end()):
                    table[i] |= <uint8_t> flag
        for i in range(256):
            BYTE_FLAGS[i] = table[i] if i < 0x80 else F_MB
        FLAGS = table


# The scanner reads UTF-8: an ASCII str's own buffer, or the text converted
# once (utf8_of).  A pre-token is then a slice of that buffer, handed to the
# encoder without a copy.  BYTE_FLAGS classifies an ASCII byte in one lookup
# and marks the bytes of multi-byte characters (F_MB), which are decoded and
# looked up in FLAGS.  A class is returned as flags | width << 8.

ctypedef fused ch_t:
    uint8_t
    uint16_t
    uint32_t


cdef inline uint32_t mb_class(const uint8_t *s, Py_ssize_t i) noexcept nogil:
    """Flags | width << 8 of the multi-byte character at byte i of valid UTF-8."""
    cdef uint32_t b = s[i]
    if b < 0xE0:
        return FLAGS[((b & 0x1F) << 6) | (s[i + 1] & 0x3F)] | (2 << 8)
    if b < 0xF0:
        return FLAGS[((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)] | (3 << 8)
    return FLAGS[((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6)
                 | (s[i + 3] & 0x3F)] | (4 << 8)

cdef inline uint32_t cls(const uint8_t *s, Py_ssize_t i) noexcept nogil:
    """Flags | width << 8 of the character at byte i."""
    cdef uint32_t f = BYTE_FLAGS[s[i]]
    if f & F_MB:
        return mb_class(s, i)
    return f | (1 << 8)

cdef inline Py_ssize_t prev_start(const uint8_t *s, Py_ssize_t j) noexcept nogil:
    """The start of the character that ends at byte j."""
    j -= 1
    while (s[j] & 0xC0) == 0x80:
        j -= 1
    return j

cdef inline bint is_other(uint32_t f) noexcept nogil:
    return (f & (F_L | F_N | F_S)) == 0

cdef inline bint is_crlf(uint32_t c) noexcept nogil:
    return c == 10 or c == 13

cdef inline Py_ssize_t run_of(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t mask) noexcept nogil:
    """The end of the run of characters in class `mask` from byte i."""
    cdef uint8_t f
    cdef uint32_t x
    while i < n:
        f = BYTE_FLAGS[s[i]]
        if f & mask:
            i += 1
        elif f & F_MB:
            x = mb_class(s, i)
            if not (x & mask):
                break
            i += x >> 8
        else:
            break
    return i

cdef inline Py_ssize_t run_other(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The end of the run of characters that are neither letters, numbers nor white space."""
    cdef uint8_t f
    cdef uint32_t x
    while i < n:
        f = BYTE_FLAGS[s[i]]
        if not (f & (F_L | F_N | F_S | F_MB)):
            i += 1
        elif f & F_MB:
            x = mb_class(s, i)
            if not is_other(x):
                break
            i += x >> 8
        else:
            break
    return i

cdef inline Py_ssize_t lower_is(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, char ch, bint fold) noexcept nogil:
    """The width of the character at i if it is ch (ASCII lowercase), or one
    of its case variants when `fold`; else 0."""
    cdef uint8_t b
    cdef uint32_t x
    if i >= n:
        return 0
    b = s[i]
    if b == <uint8_t> ch:
        return 1
    if not fold:
        return 0
    if b < 0x80:
        return 1 if b == <uint8_t> (ch - 32) else 0
    if ch == c's':
        x = mb_class(s, i)
        if x & F_CASE_S:
            return x >> 8
    return 0

cdef inline Py_ssize_t two(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, char a, char b, bint fold) noexcept nogil:
    cdef Py_ssize_t k = lower_is(s, i, n, a, fold), j
    if not k:
        return 0
    j = lower_is(s, i + k, n, b, fold)
    return k + j if j else 0

cdef Py_ssize_t contraction(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, bint fold) noexcept nogil:
    """Byte length of 's 't 'd 'm 'll 've 're at i (0 if none)."""
    cdef Py_ssize_t k
    if i + 1 >= n or s[i] != 39:
        return 0
    k = lower_is(s, i + 1, n, c's', fold)
    if not k:
        k = lower_is(s, i + 1, n, c't', fold)
    if not k:
        k = lower_is(s, i + 1, n, c'd', fold)
    if not k:
        k = lower_is(s, i + 1, n, c'm', fold)
    if k:
        return 1 + k
    k = two(s, i + 1, n, c'l', c'l', fold)
    if not k:
        k = two(s, i + 1, n, c'v', c'e', fold)
    if not k:
        k = two(s, i + 1, n, c'r', c'e', fold)
    return 1 + k if k else 0

cdef inline Py_ssize_t ws_tail(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """`\\s+(?!\\S)|\\s+` at a white-space character i."""
    cdef Py_ssize_t r = run_of(s, i, n, F_S), q
    if r == n:
        return r
    q = prev_start(s, r)
    return r if q == i else q

cdef inline Py_ssize_t letters_or_contraction(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint32_t x,
                                              bint fold) noexcept nogil:
    """GPT-2 and cl100k at i (x: its class): a run of letters, or a
    contraction; -1: neither."""
    cdef Py_ssize_t k
    if x & F_L:
        return run_of(s, i + (x >> 8), n, F_L)
    if s[i] == 39:
        k = contraction(s, i, n, fold)
        if k:
            return i + k
    return -1

cdef Py_ssize_t next_gpt2_any(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i]
    cdef uint32_t x = cls(s, i), f = x & 0xFF, g
    cdef Py_ssize_t w = x >> 8, e = letters_or_contraction(s, i, n, x, False)
    if e >= 0:
        return e
    if c == 32 and i + 1 < n:
        g = cls(s, i + 1)
        if g & F_L:
            return run_of(s, i + 1 + (g >> 8), n, F_L)
        if g & F_N:
            return run_of(s, i + 1 + (g >> 8), n, F_N)
        if is_other(g):
            return run_other(s, i + 1 + (g >> 8), n)
    if f & F_N:
        return run_of(s, i + w, n, F_N)
    if is_other(f):
        return run_other(s, i + w, n)
    return ws_tail(s, i, n)

cdef inline Py_ssize_t next_words(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint32_t x = cls(s, i)
    cdef Py_ssize_t r
    if x & F_S:
        return run_of(s, i + (x >> 8), n, F_S)
    r = i + (x >> 8)
    while r < n:
        x = cls(s, r)
        if x & F_S:
            return r + (x >> 8)
        r += x >> 8
    return r

cdef inline Py_ssize_t crlf_run(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, bint slash) noexcept nogil:
    cdef uint8_t c
    while i < n:
        c = s[i]
        if not (is_crlf(c) or (slash and c == 47)):
            break
        i += 1
    return i

cdef Py_ssize_t space_cl100k(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, bint plus) noexcept nogil:
    """`\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s` (cl100k), or with [\\r\\n]+ and
    without the `$` branch (o200k: `\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`)."""
    cdef Py_ssize_t r = run_of(s, i, n, F_S), q
    if r == n and not plus:
        return n
    q = r - 1
    while q >= i and not is_crlf(s[q]):  # CR and LF are never part of another character
        q -= 1
    if q >= i:
        return q + 1
    if r == n:
        return n
    q = prev_start(s, r)
    if q > i:
        return q  # two characters or more: all but the last
    return r

cdef inline Py_ssize_t digits_punct_space(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint32_t f,
                                          Py_ssize_t w, bint o200k) noexcept nogil:
    """What cl100k and o200k share after their letter branches: up to three
    digits; an optional space, a punctuation run and the line breaks after it
    (and slashes, in o200k); then the white-space rules."""
    cdef Py_ssize_t k
    cdef uint32_t x
    cdef int count
    if f & F_N:
        k = i + w
        count = 1
        while k < n and count < 3:
            x = cls(s, k)
            if not (x & F_N):
                break
            k += x >> 8
            count += 1
        return k
    if is_other(f):
        return crlf_run(s, run_other(s, i + w, n), n, o200k)
    if s[i] == 32 and i + 1 < n:
        x = cls(s, i + 1)
        if is_other(x):
            return crlf_run(s, run_other(s, i + 1 + (x >> 8), n), n, o200k)
    return space_cl100k(s, i, n, o200k)

cdef Py_ssize_t next_cl100k_any(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i]
    cdef uint32_t x = cls(s, i), f = x & 0xFF
    cdef Py_ssize_t w = x >> 8, e = letters_or_contraction(s, i, n, x, True)
    if e >= 0:
        return e
    if not is_crlf(c) and not (f & F_N) and i + w < n:
        x = cls(s, i + w)
        if x & F_L:
            return run_of(s, i + w + (x >> 8), n, F_L)
    return digits_punct_space(s, i, n, f, w, False)

cdef Py_ssize_t last_w(const uint8_t *s, Py_ssize_t k, Py_ssize_t u) noexcept nogil:
    """The start of the last character of [k, u) that is in W, or -1."""
    cdef Py_ssize_t j = u
    while j > k:
        j = prev_start(s, j)
        if cls(s, j) & F_W:
            return j
    return -1

cdef Py_ssize_t o200k_letters(const uint8_t *s, Py_ssize_t k, Py_ssize_t n, bint need_lower) noexcept nogil:
    """Match [U]*[W]+ (need_lower) or [U]+[W]* at k, then the optional
    contraction; return the end, or -1."""
    cdef Py_ssize_t u = run_of(s, k, n, F_U), j, e
    if need_lower:
        if u < n and (cls(s, u) & F_W):
            e = run_of(s, u, n, F_W)
        else:
            j = last_w(s, k, u)
            if j < 0:
                return -1
            e = run_of(s, j, n, F_W)
    else:
        if u == k:
            return -1
        e = run_of(s, u, n, F_W)
    return e + contraction(s, e, n, True)

cdef inline Py_ssize_t o200k_word(const uint8_t *s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
    """[U]*[W]+ at k, else [U]+[W]*, then the optional contraction, where the
    character at k is in U or W (so one of them matches)."""
    cdef Py_ssize_t u = run_of(s, k, n, F_U), e, j
    if u < n and (cls(s, u) & F_W):
        e = run_of(s, u, n, F_W)
    else:
        # [U]* gives back its last character that is in W too (Lm, Lo, marks),
        # else [U]+ alone
        j = last_w(s, k, u)
        e = j + (cls(s, j) >> 8) if j >= 0 else u
    if e < n and s[e] == 39:
        e += contraction(s, e, n, True)
    return e

cdef Py_ssize_t next_o200k_any(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i]
    cdef uint32_t x = cls(s, i), f = x & 0xFF
    cdef Py_ssize_t e, w = x >> 8
    cdef int need
    if f & F_L:
        return o200k_word(s, i, n)  # a letter is never the optional prefix
    if not (f & (F_U | F_W)):
        if not (f & F_N) and not is_crlf(c) and i + w < n and (cls(s, i + w) & (F_U | F_W)):
            return o200k_word(s, i + w, n)
        return digits_punct_space(s, i, n, f, w, True)
    # a mark: it may be the prefix or start the word; regex's order
    for need in range(1, -1, -1):
        if i + w < n:
            e = o200k_letters(s, i + w, n, need)
            if e >= 0:
                return e
        e = o200k_letters(s, i, n, need)
        if e >= 0:
            return e
    return digits_punct_space(s, i, n, f, w, True)


# The common cases first, for ASCII: words, digits, punctuation and white
# space that end at an ASCII byte.  Whenever a byte of another script is
# involved (it may be a letter, a digit or a space), the general functions
# above decide.  F_U and F_W: ASCII upper case is in U only, lower case in W only.

cdef inline Py_ssize_t ascii_run(const uint8_t *s, Py_ssize_t k, Py_ssize_t n, uint8_t mask) noexcept nogil:
    while k < n and (BYTE_FLAGS[s[k]] & mask):
        k += 1
    return k

cdef inline uint64_t in_range8(uint64_t x, uint8_t lo, uint8_t hi) noexcept nogil:
    """Bit 7 of each byte of the result: that byte of x is in [lo, hi] (ASCII)."""
    cdef uint64_t y = x & 0x7F7F7F7F7F7F7F7FULL       # no carry from one byte to the next
    cdef uint64_t ones = 0x0101010101010101ULL
    return (y + (0x80 - lo) * ones) & ~(y + (0x7F - hi) * ones) & ~x & 0x8080808080808080ULL

cdef inline Py_ssize_t letters_run(const uint8_t *s, Py_ssize_t k, Py_ssize_t n, int which) noexcept nogil:
    """The end of a run of ASCII lower case (which 1), upper case (2) or either
    (3) letters from k: eight bytes at a time, without a branch per byte."""
    cdef uint64_t x, m
    while k + 8 <= n:
        memcpy(&x, s + k, 8)
        x = le64(x)
        if which == 1:
            m = in_range8(x, 0x61, 0x7A)
        elif which == 2:
            m = in_range8(x, 0x41, 0x5A)
        else:
            m = in_range8(x, 0x61, 0x7A) | in_range8(x, 0x41, 0x5A)
        m = ~m & 0x8080808080808080ULL     # the bytes that end the run
        if m:
            return k + (ctz64(m) >> 3)
        k += 8
    return ascii_run(s, k, n, F_W if which == 1 else (F_U if which == 2 else F_L))

cdef inline Py_ssize_t ascii_other(const uint8_t *s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
    """The end of a run of ASCII punctuation (-1: it ends at a multi-byte character)."""
    while k < n and not (BYTE_FLAGS[s[k]] & (F_L | F_N | F_S | F_MB)):
        k += 1
    return -1 if k < n and s[k] >= 0x80 else k

cdef inline Py_ssize_t ascii_space(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int which) noexcept nogil:
    """The white-space rules of each pattern on a run of ASCII white space
    (-1: it ends at a multi-byte character)."""
    cdef Py_ssize_t e = ascii_run(s, i + 1, n, F_S), q
    if e < n and s[e] >= 0x80:
        return -1
    if which == P_GPT2:
        return e if e == n or e - i == 1 else e - 1
    if e == n and which == P_CL100K:
        return n                          # \s++$
    q = e - 1
    while q >= i and not is_crlf(s[q]):
        q -= 1
    if q >= i:
        return q + 1                      # up to the last line break
    if e == n:
        return n
    return e - 1 if e - i >= 2 else e     # all but the last, or the one

cdef inline Py_ssize_t o200k_ascii_word(const uint8_t *s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
    """[A-Z]*[a-z]+ or [A-Z]+ and the contraction at k (-1: a multi-byte character follows)."""
    cdef Py_ssize_t e = letters_run(s, letters_run(s, k, n, 2), n, 1)
    if e < n:
        if s[e] >= 0x80:
            return -1
        if s[e] == 39:
            e += contraction(s, e, n, True)
    return e

cdef inline Py_ssize_t ascii_digits3(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Up to three ASCII digits at i (-1: fewer, and a multi-byte character follows)."""
    cdef Py_ssize_t e = i + 1
    while e < n and e < i + 3 and (BYTE_FLAGS[s[e]] & F_N):
        e += 1
    return -1 if e < n and e < i + 3 and s[e] >= 0x80 else e

cdef inline Py_ssize_t ascii_tail(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t c, uint8_t f,
                                  uint8_t g, int which) noexcept nogil:
    """cl100k and o200k at an ASCII character that starts no word (c, its
    flags f; g: the flags of the byte after it): a punctuation run and the
    line breaks (and slashes, in o200k) after it, with an optional space
    before it; else the white-space rules.  -1: the general way decides."""
    cdef Py_ssize_t e
    if not (f & F_S):
        e = ascii_other(s, i + 1, n)
    elif c == 32 and not (g & (F_L | F_N | F_S)):
        e = ascii_other(s, i + 2, n)
    else:
        return ascii_space(s, i, n, which)
    return crlf_run(s, e, n, which == P_O200K) if e >= 0 else -1

cdef inline Py_ssize_t next_o200k(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i], f = BYTE_FLAGS[c], g
    cdef Py_ssize_t e = -1
    if f & F_L:
        e = o200k_ascii_word(s, i, n)
    elif f & F_N:
        e = ascii_digits3(s, i, n)
    elif not (f & F_MB) and i + 1 < n:
        g = BYTE_FLAGS[s[i + 1]]
        if g & F_MB:
            e = -1
        elif g & F_L and not is_crlf(c):
            e = o200k_ascii_word(s, i + 1, n)   # the optional prefix, then the word
        else:
            e = ascii_tail(s, i, n, c, f, g, P_O200K)
    return e if e >= 0 else next_o200k_any(s, i, n)

cdef inline Py_ssize_t next_cl100k(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i], f = BYTE_FLAGS[c], g
    cdef Py_ssize_t e = -1
    if f & F_L:
        e = letters_run(s, i + 1, n, 3)
        if e < n and s[e] >= 0x80:
            e = -1
    elif f & F_N:
        e = ascii_digits3(s, i, n)
    elif not (f & F_MB) and c != 39 and i + 1 < n:   # not an apostrophe: contractions come first
        g = BYTE_FLAGS[s[i + 1]]
        if g & F_MB:
            e = -1
        elif g & F_L and not is_crlf(c):
            e = letters_run(s, i + 2, n, 3)   # the optional prefix, then the letters
            if e < n and s[e] >= 0x80:
                e = -1
        else:
            e = ascii_tail(s, i, n, c, f, g, P_CL100K)
    return e if e >= 0 else next_cl100k_any(s, i, n)

cdef inline Py_ssize_t next_gpt2(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i], f = BYTE_FLAGS[c], g
    cdef Py_ssize_t e = -1, k = i
    if not (f & F_MB) and c != 39:
        if c == 32 and i + 1 < n:
            g = BYTE_FLAGS[s[i + 1]]
            if not (g & (F_S | F_MB)):
                k = i + 1          # the optional space before a word, digits or punctuation
                f = g
        if f & F_L:
            e = letters_run(s, k + 1, n, 3)
        elif f & F_N:
            e = ascii_run(s, k + 1, n, F_N)
        elif not (f & F_S):
            e = ascii_other(s, k + 1, n)
        else:
            e = ascii_space(s, i, n, P_GPT2)
        if e >= 0 and e < n and s[e] >= 0x80:
            e = -1
    return e if e >= 0 else next_gpt2_any(s, i, n)


cdef inline Py_ssize_t next_pretoken(int which, const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The end of the pre-token that starts at byte i."""
    if which == P_O200K:
        return next_o200k(s, i, n)
    if which == P_CL100K:
        return next_cl100k(s, i, n)
    if which == P_GPT2:
        return next_gpt2(s, i, n)
    return next_words(s, i, n)


# ---- str -> UTF-8 --------------------------------------------------------

cdef Py_ssize_t encode_utf8(const ch_t *s, Py_ssize_t n, uint8_t *u) noexcept nogil:
    """Write the UTF-8 of n code points (no surrogates) to u; its length."""
    cdef Py_ssize_t i = 0, m = 0
    cdef uint32_t c
    cdef uint64_t x, y, w
    while i < n:
        # runs of ASCII, a word at a time
        if ch_t is uint8_t:
            if i + 8 <= n:
                memcpy(&x, s + i, 8)
                if (x & 0x8080808080808080ULL) == 0:
                    memcpy(u + m, &x, 8)
                    i += 8
                    m += 8
                    continue
        elif ch_t is uint16_t:
            if i + 8 <= n:
                memcpy(&x, s + i, 8)
                memcpy(&y, s + i + 4, 8)
                if ((x | y) & 0xFF80FF80FF80FF80ULL) == 0:
                    x = le64(x)
                    y = le64(y)
                    w = ((x & 0xFFULL) | ((x >> 8) & 0xFF00ULL) | ((x >> 16) & 0xFF0000ULL)
                         | ((x >> 24) & 0xFF000000ULL) | ((y & 0xFFULL) << 32) | ((y << 24) & 0xFF0000000000ULL)
                         | ((y << 16) & 0xFF000000000000ULL) | ((y << 8) & 0xFF00000000000000ULL))
                    w = le64(w)
                    memcpy(u + m, &w, 8)
                    i += 8
                    m += 8
                    continue
        c = s[i]
        i += 1
        if c < 0x80:
            u[m] = <uint8_t> c
            m += 1
        elif c < 0x800:
            u[m] = <uint8_t> (0xC0 | (c >> 6))
            u[m + 1] = <uint8_t> (0x80 | (c & 0x3F))
            m += 2
        elif c < 0x10000:
            u[m] = <uint8_t> (0xE0 | (c >> 12))
            u[m + 1] = <uint8_t> (0x80 | ((c >> 6) & 0x3F))
            u[m + 2] = <uint8_t> (0x80 | (c & 0x3F))
            m += 3
        else:
            u[m] = <uint8_t> (0xF0 | (c >> 18))
            u[m + 1] = <uint8_t> (0x80 | ((c >> 12) & 0x3F))
            u[m + 2] = <uint8_t> (0x80 | ((c >> 6) & 0x3F))
            u[m + 3] = <uint8_t> (0x80 | (c & 0x3F))
            m += 4
    return m


cdef struct Utf8:
    const uint8_t *data
    Py_ssize_t len
    uint8_t *owned      # what to free (NULL: the str's own ASCII buffer)


cdef int utf8_of(str text, Utf8 *out) except -1:
    """The UTF-8 of a str with no surrogates: an ASCII str's own buffer, or a
    converted copy (the GIL is released while converting)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    out.owned = NULL
    if PyUnicode_IS_ASCII(text):
        out.data = <const uint8_t *> data
        out.len = n
        return 0
    out.owned = <uint8_t *> malloc(kind * n + (n if kind < 4 else 0) + 1)  # 2, 3 or 4 bytes a code point at most
    if out.owned == NULL:
        raise MemoryError()
    with nogil:
        if kind == 1:
            out.len = encode_utf8(<const uint8_t *> data, n, out.owned)
        elif kind == 2:
            out.len = encode_utf8(<const uint16_t *> data, n, out.owned)
        else:
            out.len = encode_utf8(<const uint32_t *> data, n, out.owned)
    out.data = out.owned
    return 0


cdef Py_ssize_t utf8_offset(const uint8_t *u, Py_ssize_t n, Py_ssize_t chars) noexcept nogil:
    """The byte offset of code point number `chars` in UTF-8 u[:n]."""
    cdef Py_ssize_t i = 0
    while i < n:
        if (u[i] & 0xC0) != 0x80:
            if chars == 0:
                return i
            chars -= 1
        i += 1
    return n


cdef Py_ssize_t code_points(const uint8_t *u, Py_ssize_t n) noexcept nogil:
    """How many code points UTF-8 u[:n] holds."""
    cdef Py_ssize_t i, k = 0
    for i in range(n):
        k += (u[i] & 0xC0) != 0x80
    return k


cdef list native_pretokens(str text, int which):
    """The pre-tokens of `text` (repaired) by the native scanner `which`
    (Core.pretokenize)."""
    cdef Py_ssize_t i = 0, e
    cdef Utf8 u
    cdef list out = []
    _build_flags()
    utf8_of(text, &u)
    try:
        while i < u.len:
            e = next_pretoken(which, u.data, i, u.len)
            out.append(PyBytes_FromStringAndSize(<const char *> u.data + i, e - i).decode("utf-8"))
            i = e
        return out
    finally:
        free(u.owned)


cdef int _which(pattern):
    if pattern == PATTERNS["gpt2"]:
        return P_GPT2
    if pattern == PATTERNS["cl100k"]:
        return P_CL100K
    if pattern == PATTERNS["o200k"]:
        return P_O200K
    if pattern == PATTERNS["words"]:
        return P_WORDS
    return P_NONE


# ===========================================================================
# Counting pre-tokens
# ===========================================================================

cdef struct CEntry:
    int64_t key_off     # into the counter's keys, which hold them end to end
    int64_t count
    int32_t key_len
    uint32_t hlo        # the low 32 bits of the key's hash: where it goes in the slots

cdef class _Counter:
    """Pre-token (UTF-8) -> count in a C hash map: no Python object per
    pre-token occurrence, only one per distinct pre-token at the end.
    Entries (24 bytes: key offset, count, length, hash) are kept in the order
    they came, their keys end to end; open addressing over 8-byte slots
    (the high 32 bits of the hash, and the entry's number + 1; 0: empty)."""
    cdef uint64_t *slots
    cdef Py_ssize_t mask
    cdef CEntry *ents
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef uint8_t *keys
    cdef Py_ssize_t keys_len
    cdef Py_ssize_t keys_cap
    cdef int which
    cdef object findall

    def __cinit__(self, str pattern):
        if self.init_table() < 0:
            raise MemoryError()
        self.which = _which(pattern)
        if self.which != P_NONE:
            _build_flags()
        else:
            self.findall = _py.pretokenizer(pattern)

    def __dealloc__(self):
        free(self.slots)
        free(self.ents)
        free(self.keys)

    cdef int init_table(self) noexcept nogil:
        self.slots = <uint64_t *> calloc(1 << 12, sizeof(uint64_t))
        if self.slots == NULL:
            return -1
        self.mask = (1 << 12) - 1
        return 0

    cdef int grow(self) noexcept nogil:
        """Twice the slots (the entries stay where they are)."""
        cdef Py_ssize_t cap = (self.mask + 1) * 2, i, j
        cdef uint64_t *old = self.slots
        cdef uint64_t *s = <uint64_t *> calloc(cap, sizeof(uint64_t))
        if s == NULL:
            return -1
        for j in range(self.mask + 1):
            if old[j]:
                i = <Py_ssize_t> (self.ents[(old[j] & 0xFFFFFFFFULL) - 1].hlo & <uint64_t> (cap - 1))
                while s[i]:
                    i = (i + 1) & (cap - 1)
                s[i] = old[j]
        free(old)
        self.slots = s
        self.mask = cap - 1
        return 0

    cdef int put(self, const uint8_t *s, Py_ssize_t n, int64_t k) noexcept nogil:
        cdef uint64_t h = hash_bytes(s, n), tag = h & 0xFFFFFFFF00000000ULL, v
        cdef Py_ssize_t i = <Py_ssize_t> (h & <uint64_t> self.mask), cap
        cdef CEntry *e
        cdef void *p
        while True:
            v = self.slots[i]
            if v == 0:
                break
            if (v & 0xFFFFFFFF00000000ULL) == tag:
                e = &self.ents[(v & 0xFFFFFFFFULL) - 1]
                if e.key_len == n and memcmp(self.keys + e.key_off, s, n) == 0:
                    e.count += k
                    return 0
            i = (i + 1) & self.mask
        if (self.n + 1) * 2 > self.mask + 1:
            if self.n >= <Py_ssize_t> 0x7FFFFFFF or self.grow() < 0:  # slots stay within 2**32: hlo places them
                return -1
            i = <Py_ssize_t> (h & <uint64_t> self.mask)
            while self.slots[i]:
                i = (i + 1) & self.mask
        if self.n == self.cap:
            cap = self.cap * 2 if self.cap else 1024
            p = realloc(self.ents, cap * sizeof(CEntry))
            if p == NULL:
                return -1
            self.ents = <CEntry *> p
            self.cap = cap
        if bytes_reserve(&self.keys, &self.keys_cap, self.keys_len + n) < 0:
            return -1
        memcpy(self.keys + self.keys_len, s, n)
        e = &self.ents[self.n]
        e.key_off = self.keys_len
        e.key_len = <int32_t> n
        e.count = k
        e.hlo = <uint32_t> h
        self.keys_len += n
        self.n += 1
        self.slots[i] = tag | <uint64_t> self.n
        return 0

    def add(self, str text):
        """Count the pre-tokens of text (repaired, no special tokens in it)."""
        cdef bytes b
        cdef Utf8 u
        cdef int err = 0
        if self.which != P_NONE:
            utf8_of(text, &u)
            try:
                with nogil:
                    err = count_text(self, u.data, u.len)
            finally:
                free(u.owned)
        else:
            for token in self.findall(text):
                if not token:
                    continue  # a custom pattern may match the empty string
                b = token.encode("utf-8")
                err = self.put(<const uint8_t *> PyBytes_AS_STRING(b), len(b), 1)
                if err:
                    break
        if err:
            raise MemoryError()

    def pack(self):
        """(keys end to end, int32 lengths, int64 counts) as three bytes objects:
        what a worker sends back instead of a dict of Python objects."""
        cdef Py_ssize_t i
        cdef bytes keys = PyBytes_FromStringAndSize(<const char *> self.keys, self.keys_len)
        cdef bytes lens = PyBytes_FromStringAndSize(NULL, self.n * sizeof(int32_t))
        cdef bytes cnts = PyBytes_FromStringAndSize(NULL, self.n * sizeof(int64_t))
        cdef int32_t *lp = <int32_t *> PyBytes_AS_STRING(lens)
        cdef int64_t *cp = <int64_t *> PyBytes_AS_STRING(cnts)
        for i in range(self.n):
            lp[i] = self.ents[i].key_len
            cp[i] = self.ents[i].count
        return keys, lens, cnts

    def add_packed(self, packed):
        """Add the counts of another counter's pack()."""
        cdef bytes keys, lens, cnts
        keys, lens, cnts = packed
        cdef const uint8_t *kp = <const uint8_t *> PyBytes_AS_STRING(keys)
        cdef const int32_t *lp = <const int32_t *> PyBytes_AS_STRING(lens)
        cdef const int64_t *cp = <const int64_t *> PyBytes_AS_STRING(cnts)
        cdef Py_ssize_t i, n = len(lens) // sizeof(int32_t), off = 0
        if len(cnts) != n * sizeof(int64_t):
            raise ValueError("malformed packed counts")
        for i in range(n):
            if lp[i] < 0 or off + lp[i] > len(keys):
                raise ValueError("malformed packed counts")
            if self.put(kp + off, lp[i], cp[i]) < 0:
                raise MemoryError()
            off += lp[i]

    def clear(self):
        """Forget every count (and give the memory back)."""
        free(self.slots)
        free(self.ents)
        free(self.keys)
        self.slots = NULL
        self.ents = NULL
        self.keys = NULL
        self.n = self.cap = self.keys_len = self.keys_cap = 0
        if self.init_table() < 0:
            raise MemoryError()

    def __len__(self):
        return self.n

    def to_dict(self):
        cdef dict out = {}
        cdef Py_ssize_t i
        for i in range(self.n):
            out[PyBytes_FromStringAndSize(<char *> self.keys + self.ents[i].key_off, self.ents[i].key_len)] = \
                self.ents[i].count
        return out


cdef int count_text(_Counter counter, const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """Count every pre-token of s (UTF-8) by the native scanner."""
    cdef Py_ssize_t i = 0, e
    while i < n:
        e = next_pretoken(counter.which, s, i, n)
        if counter.put(s + i, e - i, 1) < 0:
            return -1
        i = e
    return 0


# ===========================================================================
# Encoding: a double-array trie over the token bytes, and backtracking
# ===========================================================================
#
# The core numbers tokens its own way: 0..255 are the single bytes and 256 + r
# is the token that merge r makes, so a smaller number is a token that exists
# earlier in the merge-by-rank process.  A token is *buildable* when
# merge-by-rank of its own bytes gives that token alone.  Only buildable tokens
# can appear in a merge-by-rank result (a token that its own bytes do not
# build never forms inside a longer text either: until it forms, its bytes
# merge exactly as they do alone), so the encoder walks only those.  Every
# other token of the vocabulary -- one that no merge makes, or one whose merge
# never fires -- is an *orphan*: the trie still holds it, for the rule that a
# pre-token which is itself a token is that one id.
#
# Encoding a pre-token: the longest buildable token that starts the text is
# taken if it is compatible with the token before it (merge-by-rank of the two
# tokens' bytes gives exactly those two tokens); if not, the next shorter
# buildable prefix is tried; when none fits, the previous token is taken back
# and that position is remembered as a dead end.  The first sequence found
# this way is the merge-by-rank result: it is the only sequence of buildable
# tokens whose neighbours are all compatible.
#
# Most pre-tokens never get that far.  The scanner runs 16 pre-tokens ahead of
# the encoder; per thread (a _Cache), in this order: a direct-mapped table of
# the recent pre-tokens of up to 8 bytes that are one token (hot8: probed while
# scanning; for a miss the next two tables' slots are asked for at once), a
# 4-way table of the recent other pre-tokens of up to 16 bytes and their ids
# (hot, 8 MB; a full bucket's least recently used slot moves to the cache
# below, and the bucket remembers that it did), the read-only table of every
# token of up to 8 bytes (shorts), and a cache of the pre-tokens of more than
# 16 bytes or 3 ids (slots, growing to 2**CACHE_BITS; a hit reads its slot and
# one record).  Only a pre-token seen for the first time walks the trie: the
# whole-token rule for more than 8 bytes from the first walk, then the
# backtracking, whose compatibility checks are remembered (memo) and whose
# "is this pair a merge" questions a small filter mostly answers (bloom).
# Everything here is memory-bound: a pre-token seen for the first time touches
# some twenty cache lines of tables of several MB (the tables sit on 2 MB pages
# where the system offers them), one seen recently one or two.

cdef enum: CACHE_BITS = 18
cdef enum: CACHE_MAX_BYTES = 255


cdef struct DANode:
    int32_t base      # the children of this node are at (base & DA_BASE) + byte; DA_OK: a
                      # buildable token ends here (its core number: DALeaf.val)
    int32_t check     # the parent's index; -1: a free slot
                      # (8 bytes: a walk down the trie reads only these)

cdef struct DALeaf:   # beside each node, in an array of its own
    int32_t val       # the buildable token ending here (core number), -1: none
    int32_t id        # the id of the token ending here, -1: none

cdef struct DABuild:  # both, while the trie is built
    int32_t base
    int32_t check
    int32_t val
    int32_t id

cdef enum: DA_BASE = 0x3FFFFFFF
cdef enum: DA_OK = 0x40000000


# The merges by pair: one word a slot, (left + 1) << 42 | right << 21 | made
# (core numbers; 0: a free slot), in buckets of 8 slots (a cache line), for
# fewer than 2**21 - 1 core tokens; two words (PairSlot) a slot for more.
cdef struct PairSlot:
    uint64_t key      # left << 32 | right (core numbers); EMPTY_KEY: free
    int32_t val       # the core number of the token that merge makes
    int32_t spare

cdef enum: NARROW_LIMIT = 1 << 21
cdef uint64_t LOW21 = (1 << 21) - 1


cdef struct Tok:
    int32_t left      # the two tokens its merge joins (-1: a byte, or a part that
    int32_t right     #   no earlier merge makes)



cdef struct ShortSlot:
    uint64_t key      # the token's bytes, zero-padded (little-endian load)
    int32_t id
    int32_t len       # 0: a free slot


cdef inline uint64_t short_key(const uint8_t *s, Py_ssize_t n, bint may_overread) noexcept nogil:
    """Bytes s[:n] (1 <= n <= 8) as a zero-padded word; may_overread: 8 bytes are readable."""
    cdef uint64_t x = 0
    if may_overread:
        memcpy(&x, s, 8)
        return x & (0xFFFFFFFFFFFFFFFFULL >> (64 - 8 * n))
    memcpy(&x, s, n)
    return x


cdef inline Py_ssize_t short_home(uint64_t key, Py_ssize_t n, int shift) noexcept nogil:
    return <Py_ssize_t> (((key + <uint64_t> n) * 0x9E3779B97F4A7C15ULL) >> shift)


cdef inline uint64_t pair_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t> <uint32_t> a << 32) | <uint32_t> b


cdef inline uint64_t word_hash(uint64_t x) noexcept nogil:
    return x * 0x9E3779B97F4A7C15ULL


cdef struct Scratch:
    int32_t *toks     # the tokens of the pre-token so far (core numbers)
    int32_t *nodes    # their trie nodes
    int32_t *lens     # their lengths
    uint64_t *bits    # positions not (yet) known to be dead ends
    Py_ssize_t cap    # bytes of pre-token the buffers hold
    uint64_t *memo    # compatible(a, b), remembered: 2**MEMO_BITS of (a << 28 | b) << 2 | 2 | answer
    bint memo_owned   # else the cache's, kept from call to call
    IVec heap         # the rank merge's work space

cdef enum: MEMO_BITS = 14


cdef void scratch_free(Scratch *sc) noexcept nogil:
    free(sc.toks)
    free(sc.nodes)
    free(sc.lens)
    free(sc.bits)
    if sc.memo_owned:
        free(sc.memo)
    sc.memo = NULL
    sc.nodes = NULL
    sc.lens = NULL
    ivec_free(&sc.heap)
    sc.toks = NULL
    sc.bits = NULL
    sc.cap = 0


cdef int scratch_reserve(Scratch *sc, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t cap
    if n <= sc.cap:
        return 0
    cap = sc.cap * 2 if sc.cap else 256
    while cap < n:
        cap *= 2
    free(sc.toks)
    free(sc.nodes)
    free(sc.lens)
    free(sc.bits)
    sc.toks = <int32_t *> malloc(cap * sizeof(int32_t))
    sc.nodes = <int32_t *> malloc(cap * sizeof(int32_t))
    sc.lens = <int32_t *> malloc(cap * sizeof(int32_t))
    sc.bits = <uint64_t *> malloc((cap // 64 + 2) * sizeof(uint64_t))
    if sc.memo == NULL:
        sc.memo = <uint64_t *> calloc(1 << MEMO_BITS, sizeof(uint64_t))
        sc.memo_owned = True
    if sc.toks == NULL or sc.nodes == NULL or sc.lens == NULL or sc.bits == NULL or sc.memo == NULL:
        sc.cap = 0
        return -1
    sc.cap = cap
    return 0


# ---- the pre-token cache: UTF-8 bytes -> ids, no Python objects ----------

cdef struct CSlot:
    uint64_t hash     # 0: empty
    uint32_t off      # its record in the arena: the ids (int32 each), then the key's bytes
    uint8_t key_len   # at most CACHE_MAX_BYTES
    uint8_t n_ids
    uint16_t spare

cdef struct HotSlot:
    uint64_t k0       # the pre-token's bytes, zero-padded to 16
    uint64_t k1
    uint8_t len       # 0: empty
    uint8_t n         # 1 to HOT_IDS ids; HOT_IDS + 1: more, in the cache of longer results
    uint8_t spilled   # the bucket has lost a slot to that cache (one slot of it says so)
    uint8_t spare
    int32_t ids[3]    # HOT_IDS

cdef enum: HOT_IDS = 3
cdef enum: HOT_WAYS = 4
cdef enum: HOT_BITS = 16     # buckets of HOT_WAYS slots (two cache lines): 8 MB
cdef enum: HOT8_BITS = 14

cdef enum: CACHE_MIN_BITS = 12

cdef struct PCache:
    uint64_t *memo    # the backtracking's remembered compatibility checks
    Py_ssize_t *id_count # to_list: how often each id occurs (zero between calls)
    int32_t *id_seen  # to_list: the ids that occur
    ShortSlot *hot8   # the last pre-token of up to 8 bytes and one id seen at each slot
    HotSlot *hot      # the recent others of up to 16 bytes: HOT_WAYS slots a bucket,
                      #   the more recently used first
    CSlot *slots      # open addressing, at most 3/4 full: doubled up to 2**CACHE_BITS
    int bits          #   slots, then emptied when full
    Py_ssize_t count
    uint8_t *arena    # the records: a hit reads its slot and one record, side by side
    Py_ssize_t arena_len
    Py_ssize_t arena_cap


cdef inline ShortSlot *hot8_slot(const PCache *c, uint64_t k, Py_ssize_t n) noexcept nogil:
    return &c.hot8[((k + <uint64_t> n) * 0x9E3779B97F4A7C15ULL) >> (64 - HOT8_BITS)]


cdef inline HotSlot *hot_slot(const PCache *c, uint64_t k0, uint64_t k1, Py_ssize_t n) noexcept nogil:
    """The bucket (HOT_WAYS slots) of a pre-token of up to 16 bytes in the hot table."""
    return &c.hot[HOT_WAYS * (((k0 ^ (k1 * 0xC2B2AE3D27D4EB4FULL) ^ <uint64_t> n) * 0x9E3779B97F4A7C15ULL)
                       >> (64 - HOT_BITS))]


cdef inline uint64_t piece_hash(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """A multiplicative hash of a short byte string; never 0."""
    cdef uint64_t h = <uint64_t> n * 0x9E3779B97F4A7C15ULL, w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = (h ^ w) * 0xD6E8FEB86659FD93ULL
        i += 8
    if i < n:
        w = 0
        memcpy(&w, p + i, n - i)
        h = (h ^ w) * 0xD6E8FEB86659FD93ULL
    h ^= h >> 29
    return h | 1


cdef int pcache_init(PCache *c) noexcept nogil:
    memset(c, 0, sizeof(PCache))
    c.bits = CACHE_MIN_BITS
    c.slots = <CSlot *> calloc(<size_t> 1 << CACHE_MIN_BITS, sizeof(CSlot))
    c.hot = <HotSlot *> big_alloc((<size_t> HOT_WAYS << HOT_BITS) * sizeof(HotSlot), 1)
    c.hot8 = <ShortSlot *> calloc(1 << HOT8_BITS, sizeof(ShortSlot))
    c.memo = <uint64_t *> calloc(1 << MEMO_BITS, sizeof(uint64_t))
    return -1 if c.slots == NULL or c.hot == NULL or c.hot8 == NULL or c.memo == NULL else 0


cdef void pcache_free(PCache *c) noexcept nogil:
    free(c.hot)
    free(c.hot8)
    free(c.memo)
    c.memo = NULL
    free(c.id_count)
    free(c.id_seen)
    c.id_count = NULL
    c.id_seen = NULL
    c.hot = NULL
    c.hot8 = NULL
    free(c.slots)
    free(c.arena)
    c.slots = NULL
    c.arena = NULL


cdef inline const CSlot *pcache_get(const PCache *c, const uint8_t *s, Py_ssize_t n,
                                    uint64_t h) noexcept nogil:
    cdef Py_ssize_t mask = (<Py_ssize_t> 1 << c.bits) - 1
    cdef Py_ssize_t i = <Py_ssize_t> (h >> (64 - c.bits))
    cdef const CSlot *e
    while True:
        e = &c.slots[i]
        if e.hash == h and e.key_len == n and memcmp(c.arena + e.off + 4 * e.n_ids, s, n) == 0:
            return e
        if e.hash == 0:
            return NULL
        i = (i + 1) & mask


cdef int pcache_grow(PCache *c) noexcept nogil:
    """Twice the slots, the entries moved (their records stay)."""
    cdef int bits = c.bits + 1
    cdef Py_ssize_t cap = <Py_ssize_t> 1 << bits, k, i
    cdef CSlot *old = c.slots
    cdef CSlot *slots = <CSlot *> (big_alloc(cap * sizeof(CSlot), 1) if bits >= 16 else
                                   calloc(cap, sizeof(CSlot)))
    if slots == NULL:
        return -1
    for k in range(<Py_ssize_t> 1 << c.bits):
        if old[k].hash != 0:
            i = <Py_ssize_t> (old[k].hash >> (64 - bits))
            while slots[i].hash != 0:
                i = (i + 1) & (cap - 1)
            slots[i] = old[k]
    free(old)
    c.slots = slots
    c.bits = bits
    return 0


cdef int pcache_put(PCache *c, const uint8_t *s, Py_ssize_t n, uint64_t h,
                    const int32_t *ids, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t i, mask, size = 4 * k + ((n + 3) & ~3)
    cdef CSlot *e
    if k > 255 or n > CACHE_MAX_BYTES:
        return 0
    if 4 * (c.count + 1) > 3 * (<Py_ssize_t> 1 << c.bits):
        if c.bits < CACHE_BITS:
            if pcache_grow(c) < 0:
                return -1
        else:
            memset(c.slots, 0, (<Py_ssize_t> 1 << c.bits) * sizeof(CSlot))
            c.count = 0
            c.arena_len = 0
    if c.arena_len + size > <Py_ssize_t> 0xFFFFFFF0:
        memset(c.slots, 0, (<Py_ssize_t> 1 << c.bits) * sizeof(CSlot))
        c.count = 0
        c.arena_len = 0
    if bytes_reserve(&c.arena, &c.arena_cap, c.arena_len + size) < 0:
        return -1
    mask = (<Py_ssize_t> 1 << c.bits) - 1
    i = <Py_ssize_t> (h >> (64 - c.bits))
    while c.slots[i].hash != 0:
        i = (i + 1) & mask
    memcpy(c.arena + c.arena_len, ids, k * sizeof(int32_t))
    memcpy(c.arena + c.arena_len + 4 * k, s, n)
    e = &c.slots[i]
    e.hash = h
    e.off = <uint32_t> c.arena_len
    e.key_len = <uint8_t> n
    e.n_ids = <uint8_t> k
    c.arena_len += size
    c.count += 1
    return 0


cdef class _Cache:
    """A bounded pre-token (UTF-8) -> ids cache; one per thread at a time."""
    cdef PCache c
    cdef bint busy

    def __cinit__(self):
        if pcache_init(&self.c) < 0:
            raise MemoryError()

    def __dealloc__(self):
        pcache_free(&self.c)


# ---- building the double-array trie --------------------------------------

cdef struct TrieBuild:
    DABuild *da
    int32_t *next_free     # a doubly linked list of the free slots, in index order
    int32_t *prev_free
    Py_ssize_t cap
    Py_ssize_t free_head   # -1: no free slot below cap
    Py_ssize_t free_tail
    Py_ssize_t high        # one past the highest slot in use


cdef int resize(void **p, Py_ssize_t size) noexcept nogil:
    """realloc in place of the pointer; -1 (and the block untouched) if no memory."""
    cdef void *q = realloc(p[0], size)
    if q == NULL:
        return -1
    p[0] = q
    return 0


cdef int tb_grow(TrieBuild *b, Py_ssize_t need) noexcept nogil:
    """Make slots [0, need) exist; new slots are free, linked at the tail."""
    cdef Py_ssize_t cap = b.cap, i
    if need <= cap:
        return 0
    if need > 0x7FFFFF00:
        return -1
    cap = cap + cap // 2
    if cap < need:
        cap = need
    if cap > 0x7FFFFF00:
        cap = 0x7FFFFF00
    if (resize(<void **> &b.da, cap * sizeof(DABuild)) < 0
            or resize(<void **> &b.next_free, cap * sizeof(int32_t)) < 0
            or resize(<void **> &b.prev_free, cap * sizeof(int32_t)) < 0):
        return -1
    for i in range(b.cap, cap):
        b.da[i].base = 0
        b.da[i].check = -1
        b.da[i].val = -1
        b.da[i].id = -1
        b.prev_free[i] = <int32_t> (i - 1) if i > b.cap else <int32_t> b.free_tail
        b.next_free[i] = <int32_t> (i + 1) if i + 1 < cap else -1
    if b.free_tail >= 0:
        b.next_free[b.free_tail] = <int32_t> b.cap
    else:
        b.free_head = b.cap
    b.free_tail = cap - 1
    b.cap = cap
    return 0


cdef inline void tb_take(TrieBuild *b, Py_ssize_t s, int32_t parent) noexcept nogil:
    cdef int32_t p = b.prev_free[s], q = b.next_free[s]
    if p >= 0:
        b.next_free[p] = q
    else:
        b.free_head = q
    if q >= 0:
        b.prev_free[q] = p
    else:
        b.free_tail = p
    b.da[s].check = parent
    if s + 1 > b.high:
        b.high = s + 1


cdef Py_ssize_t tb_find_base(TrieBuild *b, const uint8_t *labels, int k) noexcept nogil:
    """A base such that base + label is free for every label (ascending); -1: no memory."""
    cdef Py_ssize_t f = b.free_head, base
    cdef int j, tries = 0
    while True:
        if f < 0 or tries > 256:
            # past every slot in use, everything is free
            base = b.high - labels[0]
            if base < 1:
                base = 1
            if tb_grow(b, base + 257) < 0:
                return -1
            return base
        base = f - labels[0]
        if base >= 1:
            if tb_grow(b, base + 257) < 0:
                return -1
            j = 1
            while j < k and b.da[base + labels[j]].check == -1:
                j += 1
            if j == k:
                return base
            tries += 1
        f = b.next_free[f]


cdef void sort_tokens(int32_t *order, Py_ssize_t n, const uint8_t *arena, const int64_t *off,
                      const int32_t *lens, int32_t *tmp, Py_ssize_t *stack) noexcept nogil:
    """Sort token numbers by their bytes: most-significant-byte radix sort,
    insertion sort for small ranges.  `stack` holds 3 * (n + 1) entries."""
    cdef Py_ssize_t top = 0, lo, hi, d, i, j, x, y
    cdef Py_ssize_t count[258]
    cdef int c
    cdef int32_t v
    cdef int r
    stack[0] = 0
    stack[1] = n
    stack[2] = 0
    top = 3
    while top > 0:
        top -= 3
        lo = stack[top]
        hi = stack[top + 1]
        d = stack[top + 2]
        if hi - lo <= 16:
            for i in range(lo + 1, hi):
                v = order[i]
                j = i
                while j > lo:
                    x = order[j - 1]
                    # compare from byte d on (the first d bytes are equal)
                    r = memcmp(arena + off[x] + d, arena + off[v] + d,
                               (lens[x] if lens[x] < lens[v] else lens[v]) - d)
                    if r < 0 or (r == 0 and lens[x] <= lens[v]):
                        break
                    order[j] = x
                    j -= 1
                order[j] = v
            continue
        memset(count, 0, sizeof(count))
        for i in range(lo, hi):
            x = order[i]
            c = arena[off[x] + d] + 1 if lens[x] > d else 0
            count[c + 1] += 1
        for c in range(1, 258):
            count[c] += count[c - 1]
        for i in range(lo, hi):
            x = order[i]
            c = arena[off[x] + d] + 1 if lens[x] > d else 0
            tmp[count[c]] = <int32_t> x
            count[c] += 1
        memcpy(order + lo, tmp, (hi - lo) * sizeof(int32_t))
        # after the scatter, count[c] is the end of bucket c; bucket 0 (ended) holds at most one
        for c in range(1, 257):
            y = lo + (count[c - 1] if c > 0 else 0)
            x = lo + count[c]
            if x - y > 1:
                stack[top] = y
                stack[top + 1] = x
                stack[top + 2] = d + 1
                top += 3


cdef int build_trie(TrieBuild *b, Py_ssize_t n, const uint8_t *arena, const int64_t *off,
                    const int32_t *lens, const int32_t *vals, const int32_t *ids) noexcept nogil:
    """Place every token in a double array (root at slot 0); -1: no memory."""
    cdef int32_t *order = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    cdef int32_t *tmp = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    cdef Py_ssize_t *stack = <Py_ssize_t *> malloc(3 * (n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t i
    cdef int err = -1
    if order != NULL and tmp != NULL and stack != NULL:
        for i in range(n):
            order[i] = <int32_t> i
        sort_tokens(order, n, arena, off, lens, tmp, stack)
        err = place_nodes(b, n, order, arena, off, lens, vals, ids)
    free(order)
    free(tmp)
    free(stack)
    return err


cdef int place_nodes(TrieBuild *b, Py_ssize_t n, const int32_t *order, const uint8_t *arena,
                     const int64_t *off, const int32_t *lens, const int32_t *vals,
                     const int32_t *ids) noexcept nogil:
    """Depth first over the sorted tokens: each node takes the first base at
    which all its children's slots are free."""
    cdef Py_ssize_t *todo
    cdef Py_ssize_t todo_len, todo_cap = 1024, lo, hi, d, slot, base, g, i, m = 0
    cdef Py_ssize_t glo[256]
    cdef uint8_t labels[256]
    cdef int k, j
    cdef int32_t x, v
    cdef void *p
    for i in range(n):
        m += lens[i]
    if tb_grow(b, m + m // 8 + 1024) < 0:  # at most one node per byte, and a few holes
        return -1
    tb_take(b, 0, -2)
    # (slot, lo, hi, depth): the tokens order[lo:hi] share this node's prefix
    # of `depth` bytes
    todo = <Py_ssize_t *> malloc(todo_cap * 4 * sizeof(Py_ssize_t))
    if todo == NULL:
        return -1
    todo[0] = 0
    todo[1] = 0
    todo[2] = n
    todo[3] = 0
    todo_len = 1
    while todo_len > 0:
        todo_len -= 1
        slot = todo[4 * todo_len]
        lo = todo[4 * todo_len + 1]
        hi = todo[4 * todo_len + 2]
        d = todo[4 * todo_len + 3]
        if lo < hi and lens[order[lo]] == d:
            v = vals[order[lo]]
            b.da[slot].val = v
            b.da[slot].id = ids[order[lo]]
            if v >= 0:
                b.da[slot].base = DA_OK
            lo += 1
        if lo == hi:
            continue
        k = 0
        for i in range(lo, hi):
            x = order[i]
            if k == 0 or arena[off[x] + d] != labels[k - 1]:
                labels[k] = arena[off[x] + d]
                glo[k] = i
                k += 1
        base = tb_find_base(b, labels, k)
        if base < 0:
            free(todo)
            return -1
        b.da[slot].base |= <int32_t> base
        for j in range(k):
            tb_take(b, base + labels[j], <int32_t> slot)
        if todo_len + k > todo_cap:
            todo_cap = 2 * (todo_len + k)
            p = realloc(todo, todo_cap * 4 * sizeof(Py_ssize_t))
            if p == NULL:
                free(todo)
                return -1
            todo = <Py_ssize_t *> p
        for j in range(k - 1, -1, -1):
            g = 4 * todo_len
            todo[g] = base + labels[j]
            todo[g + 1] = glo[j]
            todo[g + 2] = glo[j + 1] if j + 1 < k else hi
            todo[g + 3] = d + 1
            todo_len += 1
    free(todo)
    return 0


# ---- id -> number maps for the build (dense unless the ids are sparse) ----

cdef struct IdMap:
    int32_t *dense     # NULL: sparse, in the hash map
    Py_ssize_t n
    U64Map sparse

cdef int idmap_init(IdMap *m, Py_ssize_t max_id, Py_ssize_t count) noexcept nogil:
    cdef Py_ssize_t i
    if max_id < 8 * count + (1 << 20):
        m.n = max_id + 1
        m.dense = <int32_t *> malloc(m.n * sizeof(int32_t))
        if m.dense == NULL:
            return -1
        for i in range(m.n):
            m.dense[i] = -1
        return 0
    return u64map_init(&m.sparse, count)

cdef void idmap_free(IdMap *m) noexcept nogil:
    free(m.dense)
    m.dense = NULL
    u64map_free(&m.sparse)

cdef inline int idmap_put(IdMap *m, int32_t i, int32_t v) noexcept nogil:
    if m.dense != NULL:
        m.dense[i] = v
        return 0
    return u64map_put(&m.sparse, <uint64_t> i, v)

cdef inline int32_t idmap_get(const IdMap *m, int32_t i) noexcept nogil:
    """The number put for id i; -1 if none."""
    if m.dense != NULL:
        return m.dense[i] if 0 <= i < m.n else -1
    return <int32_t> u64map_get(&m.sparse, <uint64_t> i, -1)


# ---- the core ---------------------------------------------------------------

cdef struct CoreT:
    DANode *da           # the trie: every token of the vocabulary
    DALeaf *leaf         # what ends at each node
    Py_ssize_t da_len
    Py_ssize_t n_core    # 256 + number of merges
    Tok *tok             # core number -> its parts
    int32_t *t_id        # core number -> the tokenizer's id
    uint64_t *pairs      # (left, right) -> the core number of the merge's token
    PairSlot *wide_pairs # the same, for vocabularies of 2**21 tokens or more
    Py_ssize_t pair_mask
    int pair_shift
    ShortSlot *shorts    # every token of at most 8 bytes -> its id
    Py_ssize_t short_mask
    int short_shift
    int which            # the native scanner, or P_NONE
    uint64_t *bloom      # a filter of the merges' pairs: two bits in one word a pair
    int bloom_shift      # 64 - log2(words): most pairs are no merge, and this says so
                         # from a table that stays in the CPU's cache


cdef inline uint64_t narrow_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t> (a + 1) << 42) | (<uint64_t> b << 21)   # never 0, an empty slot


cdef inline uint64_t *narrow_slot(const CoreT *T, uint64_t key) noexcept nogil:
    """The slot of the narrow pair table holding key, or the first free one on
    its way: buckets of 8 slots (a cache line each), taken in turn."""
    cdef uint64_t *bucket
    cdef Py_ssize_t i = <Py_ssize_t> (word_hash(key) >> T.pair_shift)
    cdef int k
    while True:
        bucket = T.pairs + 8 * i
        for k in range(8):
            if bucket[k] == 0 or (bucket[k] & ~LOW21) == key:
                return &bucket[k]
        i = (i + 1) & T.pair_mask


cdef inline PairSlot *wide_slot(const CoreT *T, uint64_t key) noexcept nogil:
    """The slot of the wide pair table holding key, or the first free one on its way."""
    cdef Py_ssize_t i = <Py_ssize_t> (word_hash(key) >> T.pair_shift)
    while T.wide_pairs[i].key != key and T.wide_pairs[i].key != EMPTY_KEY:
        i = (i + 1) & T.pair_mask
    return &T.wide_pairs[i]


cdef inline uint64_t bloom_bits(uint64_t h) noexcept nogil:
    return (<uint64_t> 1 << ((h >> 20) & 63)) | (<uint64_t> 1 << ((h >> 26) & 63))


cdef inline int32_t pair_get(const CoreT *T, int32_t a, int32_t b) noexcept nogil:
    """The core number of the token that merges a and b; -1 if none."""
    cdef uint64_t x, h = word_hash(pair_key(a, b)), bits = bloom_bits(h)
    cdef const PairSlot *w
    if (T.bloom[h >> T.bloom_shift] & bits) != bits:
        return -1
    if T.pairs != NULL:
        x = narrow_slot(T, narrow_key(a, b))[0]
        return <int32_t> (x & LOW21) if x != 0 else -1
    w = wide_slot(T, pair_key(a, b))
    return w.val if w.key != EMPTY_KEY else -1


cdef void pair_put(CoreT *T, int32_t a, int32_t b, int32_t m) noexcept nogil:
    """Add merge (a, b) -> m unless the pair is there (the earlier merge stays)."""
    cdef uint64_t *x
    cdef PairSlot *w
    cdef uint64_t h = word_hash(pair_key(a, b))
    T.bloom[h >> T.bloom_shift] |= bloom_bits(h)
    if T.pairs != NULL:
        x = narrow_slot(T, narrow_key(a, b))
        if x[0] == 0:
            x[0] = narrow_key(a, b) | <uint64_t> m
        return
    w = wide_slot(T, pair_key(a, b))
    if w.key == EMPTY_KEY:
        w.key = pair_key(a, b)
        w.val = m


cdef bint compatible(const CoreT *T, int32_t a, int32_t b, int32_t limit) noexcept nogil:
    """Does merge-by-rank of a's bytes then b's bytes keep the boundary between
    them until `limit` (a core number: the merge steps before it)?  Undo the
    two tokens' merges, the latest first; at each step the tokens touching the
    boundary must have no merge of their own that comes before the next undone
    one.  (limit n_core: for good.)"""
    while True:
        STAT(13, 1)
        if <uint32_t> pair_get(T, a, b) < <uint32_t> limit:  # -1 (no merge) is never below
            return False
        if a >= 256 and a > b:
            limit = a            # before a formed, its right part touched b
            a = T.tok[a].right
        elif b >= 256:
            limit = b + 1        # before b formed, a touched b's left part; a merge of
            b = T.tok[b].left    # that pair at b's own rank would take the left one first
        else:
            return True


cdef inline int32_t longest(const CoreT *T, const uint8_t *s, Py_ssize_t n, int32_t *length) noexcept nogil:
    """The trie node of the longest buildable token that starts s (a single
    byte at least), and its length."""
    cdef const DANode *da = T.da
    cdef int32_t node = 0, t, best = 0
    cdef Py_ssize_t k
    for k in range(n):
        STAT(14, 1)
        t = (da[node].base & DA_BASE) + s[k]
        if da[t].check != node:
            break
        node = t
        if da[t].base & DA_OK:
            best = t
            length[0] = <int32_t> (k + 1)
    return best


cdef inline int32_t longest_whole(const CoreT *T, const uint8_t *s, Py_ssize_t n, int32_t *length,
                                  int32_t *whole) noexcept nogil:
    """longest(), and *whole: the id of the token whose bytes are s[:n], or -1."""
    cdef const DANode *da = T.da
    cdef int32_t node = 0, t, best = 0
    cdef Py_ssize_t k
    whole[0] = -1
    for k in range(n):
        STAT(14, 1)
        t = (da[node].base & DA_BASE) + s[k]
        if da[t].check != node:
            return best
        node = t
        if da[t].base & DA_OK:
            best = t
            length[0] = <int32_t> (k + 1)
    whole[0] = T.leaf[node].id
    return best


cdef inline int32_t shorter(const DANode *da, int32_t node, int32_t *length) noexcept nogil:
    """The node of the next shorter buildable token on the path to `node`
    (its longest buildable proper prefix), or 0 (the root) if none."""
    while node != 0:
        node = da[node].check
        length[0] -= 1
        if da[node].base & DA_OK:
            return node
    return 0


cdef inline bint compatible_memo(const CoreT *T, uint64_t *memo, int32_t a, int32_t b) noexcept nogil:
    """compatible(a, b) for good, remembered in a small direct-mapped table."""
    cdef uint64_t key = (<uint64_t> a << 28) | <uint64_t> b
    cdef Py_ssize_t i = <Py_ssize_t> (word_hash(key) >> (64 - MEMO_BITS))
    cdef uint64_t x = memo[i]
    cdef bint r
    STAT(10, 1)
    if (x >> 2) == key:
        return <bint> (x & 1)
    STAT(11, 1)
    r = compatible(T, a, b, <int32_t> T.n_core)
    memo[i] = (key << 2) | 2 | <uint64_t> r
    return r


cdef int backtrack(const CoreT *T, const uint8_t *s, Py_ssize_t n, IVec *out, Scratch *sc,
                   bint whole=False) noexcept nogil:
    """Append the ids of s by the trie: the longest compatible token first,
    backtracking at dead ends.  The candidates at a position are the buildable
    tokens on the trie path of the text there, longest first; a dead end
    (a position from which nothing fits) is remembered.  -2: no encoding found
    (cannot happen for a consistent vocabulary; the caller then merges by rank).
    whole: first the whole-token rule (s itself a token: its id), from the
    same first walk down the trie."""
    cdef const DANode *da = T.da
    cdef Py_ssize_t pos = 0, level = 0, end, k
    cdef int32_t node, length = 0, tok
    cdef int32_t *toks
    cdef int32_t *nodes
    cdef int32_t *lens
    cdef uint64_t *bits
    if n == 0:
        return 0
    if scratch_reserve(sc, n + 1) < 0:
        return -1
    toks = sc.toks
    nodes = sc.nodes
    lens = sc.lens
    bits = sc.bits
    memset(bits, 0xFF, (n // 64 + 1) * sizeof(uint64_t))
    if whole:
        node = longest_whole(T, s, n, &length, &tok)
        if tok >= 0:
            STAT(5, 1)
            return ivec_push(out, tok)
    else:
        node = longest(T, s, n, &length)
    STAT(6, 1)
    STAT(9, n)
    while True:
        # try the candidates at pos, from `node` down
        while node != 0:
            end = pos + length
            if (bits[end >> 6] >> (end & 63)) & 1:
                tok = T.leaf[node].val
                if level == 0 or compatible_memo(T, sc.memo, toks[level - 1], tok):
                    break
            node = shorter(da, node, &length)
        if node != 0:
            toks[level] = tok
            nodes[level] = node
            lens[level] = length
            level += 1
            pos = end
            if pos == n:
                break
            node = longest(T, s + pos, n - pos, &length)
            continue
        # nothing fits at pos: a dead end; take the last token back, try its shorter ones
        if level == 0:
            return -2
        bits[pos >> 6] &= ~(<uint64_t> 1 << (pos & 63))
        STAT(12, 1)
        level -= 1
        length = lens[level]
        pos -= length
        node = shorter(da, nodes[level], &length)
    if ivec_reserve(out, out.len + level) < 0:
        return -1
    for k in range(level):
        out.data[out.len + k] = T.t_id[toks[k]]
    out.len += level
    return 0


cdef inline void push_pair(const CoreT *T, int64_t *heap, Py_ssize_t *hlen, const int32_t *sym,
                           int32_t p, int32_t q) noexcept nogil:
    """Push the pair at positions p, q if it is a merge: key rank << 32 | p."""
    cdef int32_t m = pair_get(T, sym[p], sym[q])
    if m >= 0:
        i64heap_push(heap, hlen, (<int64_t> (m - 256) << 32) | p)


cdef int rank_merge(const CoreT *T, const uint8_t *s, Py_ssize_t n, IVec *out, Scratch *sc) noexcept nogil:
    """Append the ids of s by merging the lowest-ranked pair first: a heap of
    (rank, position) over a linked list, O(n log n).  The reference the trie
    is checked against, and its guard."""
    cdef Py_ssize_t i, hlen = 0, j
    cdef int32_t *sym
    cdef int32_t *nxt
    cdef int32_t *prv
    cdef int64_t *heap
    cdef int64_t item
    cdef int32_t p, q, right, left, m
    sc.heap.len = 0
    if ivec_reserve(&sc.heap, 9 * n + 16) < 0:  # symbols, links, then up to 3n int64 entries
        return -1
    sym = sc.heap.data
    nxt = sym + n
    prv = sym + 2 * n
    heap = <int64_t *> (sym + 3 * n + (n & 1))
    for i in range(n):
        sym[i] = s[i]
        nxt[i] = <int32_t> (i + 1) if i + 1 < n else -1
        prv[i] = <int32_t> (i - 1)
    for i in range(n - 1):
        push_pair(T, heap, &hlen, sym, <int32_t> i, <int32_t> (i + 1))
    while hlen > 0:
        item = i64heap_pop(heap, &hlen)
        p = <int32_t> <uint32_t> item
        if sym[p] < 0:
            continue
        q = nxt[p]
        if q < 0:
            continue
        m = pair_get(T, sym[p], sym[q])
        if m < 0 or m - 256 != (item >> 32):
            continue  # stale: this position's pair changed since the push
        sym[p] = m
        sym[q] = -1
        right = nxt[q]
        nxt[p] = right
        if right >= 0:
            prv[right] = p
            push_pair(T, heap, &hlen, sym, p, right)
        left = prv[p]
        if left >= 0:
            push_pair(T, heap, &hlen, sym, left, p)
    if ivec_reserve(out, out.len + n) < 0:
        return -1
    j = out.len
    for i in range(n):
        if sym[i] >= 0:
            out.data[j] = T.t_id[sym[i]]
            j += 1
    out.len = j
    return 0


cdef int encode_new(const CoreT *T, const uint8_t *s, Py_ssize_t n, IVec *out, Scratch *sc) noexcept nogil:
    """Append the ids of a pre-token that no cache holds: the whole-token rule
    (a walk down the trie, for more than 8 bytes; the caller has asked the
    table of short tokens), else the trie encoder, else the rank merge."""
    cdef int err
    err = backtrack(T, s, n, out, sc, n > 8)
    if err == -2:
        STAT(7, 1)
        err = rank_merge(T, s, n, out, sc)
    return -1 if err < 0 else 0


cdef inline int append_cached(const PCache *cache, const CSlot *e, IVec *out) noexcept nogil:
    """Append the ids of a hit in the cache of longer results."""
    if ivec_reserve(out, out.len + e.n_ids) < 0:
        return -1
    memcpy(out.data + out.len, cache.arena + e.off, e.n_ids * sizeof(int32_t))
    out.len += e.n_ids
    return 0


cdef int piece_long(const CoreT *T, const uint8_t *s, Py_ssize_t n, PCache *cache,
                    IVec *out, Scratch *sc) noexcept nogil:
    """A pre-token of more than 16 bytes, or of more than HOT_IDS ids: through
    the cache, whose ids it then keeps."""
    cdef const CSlot *e
    cdef Py_ssize_t start = out.len
    cdef uint64_t h = 0
    if n <= CACHE_MAX_BYTES:
        h = piece_hash(s, n)
        e = pcache_get(cache, s, n, h)
        if e != NULL:
            STAT(4, 1)
            return append_cached(cache, e, out)
    if encode_new(T, s, n, out, sc) < 0:
        return -1
    if n <= CACHE_MAX_BYTES:
        return pcache_put(cache, s, n, h, out.data + start, out.len - start)
    return 0


cdef inline int32_t whole_token(const CoreT *T, Py_ssize_t n, uint64_t k0) noexcept nogil:
    """The id of the token of n <= 8 bytes whose bytes are k0 (zero-padded), or
    -1: one probe of the table of short tokens.  (Longer ones: backtrack's
    first walk down the trie.)"""
    cdef const ShortSlot *e
    cdef Py_ssize_t j = short_home(k0, n, T.short_shift)
    while True:
        e = &T.shorts[j]
        if e.key == k0 and e.len == n:
            return e.id
        if e.len == 0:
            return -1
        j = (j + 1) & T.short_mask


cdef inline int piece(const CoreT *T, const uint8_t *s, Py_ssize_t n, bint may_overread, PCache *cache,
                      IVec *out, Scratch *sc) noexcept nogil:
    """Append the ids of one pre-token (UTF-8 bytes).  The common case -- a
    pre-token of up to 8 bytes that is a token -- is one probe of a small
    per-thread table of the recent ones (hot8); one of up to 16 bytes is one
    probe of a second one (hot: its ids, up to HOT_IDS, or word that the cache
    of longer results has them); only then the table of every token of up to
    8 bytes, then the encoder.  may_overread: s[:8] is readable."""
    cdef uint64_t k0 = 0, k1 = 0
    cdef ShortSlot *x8 = NULL
    cdef HotSlot *x
    cdef HotSlot hot, victim
    cdef const CSlot *e
    cdef uint8_t key[16]
    cdef uint8_t spilled
    cdef int32_t i
    cdef Py_ssize_t start = out.len, k
    if n > 16:
        return piece_long(T, s, n, cache, out, sc)
    if n <= 8:
        if n == 0:
            return 0  # a custom pattern may match the empty string: no ids
        k0 = short_key(s, n, may_overread)
        x8 = hot8_slot(cache, k0, n)
        if x8.key == k0 and x8.len == n:
            STAT(1, 1)
            if out.len == out.cap and ivec_reserve(out, out.len + 1) < 0:
                return -1
            out.data[out.len] = x8.id
            out.len += 1
            return 0
    else:
        memcpy(&k0, s, 8)
        memcpy(&k1, s + 8, n - 8)
    x = hot_slot(cache, k0, k1, n)
    hot.len = 0
    spilled = 0
    for k in range(HOT_WAYS):
        spilled |= x[k].spilled
        if x[k].k0 == k0 and x[k].k1 == k1 and x[k].len == n:
            hot = x[k]
            while k > 0:       # to the front
                x[k] = x[k - 1]
                k -= 1
            x[0] = hot
            break
    if hot.len:
        if hot.n > HOT_IDS:
            return piece_long(T, s, n, cache, out, sc)
        STAT(3, 1)
        if out.cap - out.len < HOT_IDS and ivec_reserve(out, out.len + HOT_IDS) < 0:
            return -1
        for k in range(HOT_IDS):
            out.data[out.len + k] = hot.ids[k]
        out.len += hot.n
        return 0
    if n <= 8:
        i = whole_token(T, n, k0)
        STAT(2 if i >= 0 else 8, 1)
        if i >= 0:
            x8.key = k0
            x8.len = <int32_t> n
            x8.id = i
            return ivec_push(out, i)
    if spilled:   # this bucket has lost slots to the cache of longer results: ask it
        e = pcache_get(cache, s, n, piece_hash(s, n))
        if e != NULL:
            STAT(15, 1)
            return append_cached(cache, e, out)
    if encode_new(T, s, n, out, sc) < 0:
        return -1
    victim = x[HOT_WAYS - 1]
    for k in range(HOT_WAYS - 1, 0, -1):
        x[k] = x[k - 1]
    x.k0 = k0
    x.k1 = k1
    x.len = <uint8_t> n
    x.spilled = victim.len != 0
    if victim.len and victim.n <= HOT_IDS:   # the least recently used moves to the cache
        memcpy(key, &victim.k0, 8)
        memcpy(key + 8, &victim.k1, 8)
        if pcache_put(cache, key, victim.len, piece_hash(key, victim.len), victim.ids, victim.n) < 0:
            return -1
    if out.len - start <= HOT_IDS:
        x.n = <uint8_t> (out.len - start)
        for k in range(HOT_IDS):
            x.ids[k] = out.data[start + k] if k < x.n else 0
        return 0
    x.n = HOT_IDS + 1   # the cache of longer results has them
    return pcache_put(cache, s, n, piece_hash(s, n), out.data + start, out.len - start)


cdef struct O200kScan:
    char unused
cdef struct Cl100kScan:
    char unused
cdef struct Gpt2Scan:
    char unused
cdef struct WordsScan:
    char unused

ctypedef fused scanner_t:
    O200kScan
    Cl100kScan
    Gpt2Scan
    WordsScan


cdef inline Py_ssize_t next_end(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, scanner_t *which) noexcept nogil:
    if scanner_t is O200kScan:
        return next_o200k(s, i, n)
    elif scanner_t is Cl100kScan:
        return next_cl100k(s, i, n)
    elif scanner_t is Gpt2Scan:
        return next_gpt2(s, i, n)
    else:
        return next_words(s, i, n)


cdef enum: BATCH = 16


cdef int scan_with(const CoreT *T, const uint8_t *s, Py_ssize_t n, PCache *cache, IVec *out,
                   Py_ssize_t limit, Py_ssize_t *cut, scanner_t *which) noexcept nogil:
    """Pre-tokenize UTF-8 with one named pattern (a specialization each) and
    encode every pre-token that ends at or before byte `limit` (*cut: where
    the last one ends).  The scanner runs BATCH pre-tokens ahead of the
    encoder and asks for their slots in the per-thread tables early, so that
    the encoder finds them in the CPU's cache."""
    cdef Py_ssize_t i = 0, e, m, j, cnt
    cdef Py_ssize_t ends[BATCH + 1]
    cdef int32_t hits[BATCH]
    cdef uint64_t k0, k1
    cdef const ShortSlot *x
    cdef Scratch sc
    cdef int err = 0
    cdef bint more = True
    memset(&sc, 0, sizeof(Scratch))
    sc.memo = cache.memo
    cut[0] = 0
    if ivec_reserve(out, (n if n < limit else limit) // 4 + 64) < 0:
        return -1
    while more and i < n:
        ends[0] = i
        cnt = 0
        while cnt < BATCH and i < n:
            e = next_end(s, i, n, which)
            if e > limit:
                more = False  # [i, e) is left for later: *cut = i
                break
            m = e - i
            hits[cnt] = -1
            if m <= 8:
                k0 = short_key(s + i, m, i + 8 <= n)
                x = hot8_slot(cache, k0, m)
                if x.key == k0 and x.len == m:
                    hits[cnt] = x.id
                else:
                    prefetch(hot_slot(cache, k0, 0, m))
                    prefetch(hot_slot(cache, k0, 0, m) + 2)
                    prefetch(&T.shorts[short_home(k0, m, T.short_shift)])
            elif m <= 16:
                memcpy(&k0, s + i, 8)
                k1 = 0
                memcpy(&k1, s + i + 8, m - 8)
                prefetch(hot_slot(cache, k0, k1, m))
                prefetch(hot_slot(cache, k0, k1, m) + 2)
            cnt += 1
            ends[cnt] = e
            i = e
        for j in range(cnt):
            if hits[j] >= 0:
                STAT(0, 1)
                if out.len == out.cap and ivec_reserve(out, out.len + 1) < 0:
                    err = -1
                    more = False
                    i = ends[j]
                    break
                out.data[out.len] = hits[j]
                out.len += 1
            elif piece(T, s + ends[j], ends[j + 1] - ends[j], ends[j] + 8 <= n, cache, out, &sc) < 0:
                err = -1
                more = False
                i = ends[j]
                break
    cut[0] = i
    scratch_free(&sc)
    return err


cdef int scan_text(const CoreT *T, const uint8_t *s, Py_ssize_t n, PCache *cache,
                   IVec *out, Py_ssize_t limit, Py_ssize_t *cut) noexcept nogil:
    """Pre-tokenize UTF-8 natively and encode every pre-token that ends at or
    before byte `limit` (*cut: where the last one ends)."""
    if T.which == P_O200K:
        return scan_with(T, s, n, cache, out, limit, cut, <O200kScan *> NULL)
    if T.which == P_CL100K:
        return scan_with(T, s, n, cache, out, limit, cut, <Cl100kScan *> NULL)
    if T.which == P_GPT2:
        return scan_with(T, s, n, cache, out, limit, cut, <Gpt2Scan *> NULL)
    return scan_with(T, s, n, cache, out, limit, cut, <WordsScan *> NULL)


cdef inline void i64heap_push(int64_t *heap, Py_ssize_t *hlen, int64_t item) noexcept nogil:
    cdef Py_ssize_t j = hlen[0]
    hlen[0] += 1
    while j > 0 and heap[(j - 1) >> 1] > item:
        heap[j] = heap[(j - 1) >> 1]
        j = (j - 1) >> 1
    heap[j] = item

cdef inline int64_t i64heap_pop(int64_t *heap, Py_ssize_t *hlen) noexcept nogil:
    """Remove and return the smallest item of a non-empty min-heap."""
    cdef int64_t top = heap[0], last
    cdef Py_ssize_t j = 0, c, n
    hlen[0] -= 1
    n = hlen[0]
    last = heap[n]
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= last:
            break
        heap[j] = heap[c]
        j = c
    heap[j] = last
    return top


@cython.final
def _repair(text):
    """Core.repair: bpe_fallback.Core.repair after a scan for surrogates
    without the GIL (none, the common case: the text as it is)."""
    cdef int kind
    cdef bint bad
    cdef const void *data
    cdef Py_ssize_t n
    if type(text) is not str:
        return _py.Core.repair(text)
    kind = PyUnicode_KIND(text)
    if kind == 1:
        return text
    data = PyUnicode_DATA(text)
    n = PyUnicode_GET_LENGTH(text)
    with nogil:
        if kind == 2:
            bad = has_surrogate(<const uint16_t *> data, n)
        else:
            bad = has_surrogate(<const uint32_t *> data, n)
    return _py.Core.repair(text) if bad else text


def _pack_ids(list ids, int itemsize):
    """Core.pack_ids: a list of ids as little-endian unsigned ints of
    `itemsize` (2 or 4) bytes."""
    cdef Py_ssize_t n = len(ids), i
    cdef unsigned long v, limit = 0xFFFF if itemsize == 2 else 0xFFFFFFFF
    out = PyBytes_FromStringAndSize(NULL, n * itemsize)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    for i in range(n):
        v = PyLong_AsUnsignedLong(<object> PyList_GET_ITEM(ids, i))
        if v > limit:
            raise OverflowError(f"id {v} does not fit {itemsize} bytes")
        put_le(p, <uint32_t> v, itemsize)
        p += itemsize
    return out



cdef class _Ids:
    """Ids in an int32 buffer (encode_prefix's result): a sequence for len(),
    iteration and list(); flatten() reads the buffer without a list."""
    cdef IVec v
    cdef list objs   # the core's int object per id, or None (sparse ids)

    def __dealloc__(self):
        ivec_free(&self.v)

    def __len__(self):
        return self.v.len

    def __getitem__(self, k):
        return self.tolist()[k]

    def __iter__(self):
        return _Flatten((self,))

    def __eq__(self, other):
        return self.tolist() == (other.tolist() if isinstance(other, _Ids) else other)

    def tolist(self):
        cdef Py_ssize_t i
        return [self.item(i) for i in range(self.v.len)]

    cdef inline object item(self, Py_ssize_t i):
        if self.objs is None:
            return self.v.data[i]
        return <object> list_items(self.objs)[self.v.data[i]]


cdef extern from *:
    """
    /* encode_iterable's iterator: while a window of ids lasts, an item is a
       pointer read (its reference was added in bulk when the window came);
       refill (Cython, below) takes the next window. */
    typedef struct {
        const int32_t *data;  /* an _Ids window: its ids, */
        Py_ssize_t i, n;      /* the next one to hand out and how many */
        PyObject **objs;      /* the int objects by id */
        PyObject *list;       /* or a list window (borrowed: the _Flatten holds it) */
    } BpeFlatState;
    static Py_ssize_t bpe_flat_offset;  /* where the state lives in a _Flatten */
    static PyObject *(*bpe_flat_refill)(PyObject *);
    static PyObject *bpe_flat_next(PyObject *self) {
        BpeFlatState *st = (BpeFlatState *) ((char *) self + bpe_flat_offset);
        if (st->i < st->n)
            return st->objs[st->data[st->i++]];
        if (st->list != NULL && st->i < PyList_GET_SIZE(st->list)) {
            PyObject *o = PyList_GET_ITEM(st->list, st->i++);
            Py_INCREF(o);
            return o;
        }
        return bpe_flat_refill(self);
    }
    """
    ctypedef struct BpeFlatState:
        const int32_t *data
        Py_ssize_t i
        Py_ssize_t n
        PyObject **objs
        PyObject *list
    Py_ssize_t bpe_flat_offset
    PyObject *(*bpe_flat_refill)(PyObject *) except? NULL
    PyObject *bpe_flat_next(PyObject *) except? NULL

cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        PyObject *(*tp_iternext)(PyObject *) except? NULL
    void PyType_Modified(PyTypeObject *)
    void Py_DECREF(PyObject *)


cdef object _END = object()


cdef class _Flatten:
    """The items of an iterable of id sequences, one after another (what
    itertools.chain.from_iterable does), reading _Ids buffers directly: a
    window's references are added in one tight loop when it comes, so
    handing out an item is a pointer read."""
    cdef BpeFlatState st
    cdef object windows
    cdef _Ids ids        # the window st reads
    cdef list win        # or the list window st reads
    cdef object it       # or an iterator over a window of another kind

    def __cinit__(self, windows):
        self.windows = iter(windows)

    def __dealloc__(self):
        self.drop()

    def __iter__(self):
        return self

    def __next__(self):  # the type's slot is bpe_flat_next (set at import); the same, slower
        cdef PyObject *o = bpe_flat_next(<PyObject *> self)
        if o == NULL:
            raise StopIteration
        r = <object> o
        Py_DECREF(o)  # r holds it now
        return r

    cdef void drop(self) noexcept:
        """Give back the references of the window's items not handed out."""
        cdef Py_ssize_t k
        for k in range(self.st.i, self.st.n):
            Py_DECREF(self.st.objs[self.st.data[k]])
        self.st.i = self.st.n = 0
        self.st.list = NULL
        self.ids = None
        self.win = None

    cdef int load(self, _Ids ids) except -1:
        """Read `ids` next, adding the reference of each item it will hand out."""
        cdef Py_ssize_t n = ids.v.len, k
        cdef const int32_t *data = ids.v.data
        cdef PyObject **objs = list_items(ids.objs)
        for k in range(n):  # a tight loop: the increments overlap
            add_refs(objs[data[k]], 1)
        self.ids = ids
        self.st.data = data
        self.st.objs = objs
        self.st.n = n
        self.st.i = 0
        return 0


cdef PyObject *_flat_refill(PyObject *selfp) except? NULL:
    """The next item after a window ends (NULL, no error: the end)."""
    cdef _Flatten self = <_Flatten> selfp
    cdef _Ids ids
    cdef object item
    while True:
        if self.it is not None:
            item = next(self.it, _END)
            if item is not _END:
                Py_INCREF(item)
                return <PyObject *> item
            self.it = None
        self.drop()
        window = next(self.windows, _END)
        if window is _END:
            return NULL
        if type(window) is _Ids and (<_Ids> window).objs is not None:
            ids = <_Ids> window
            if ids.v.len:
                self.load(ids)
                self.st.i = 1
                return self.st.objs[self.st.data[0]]
        elif type(window) is _Ids:
            self.it = iter((<_Ids> window).tolist())
        elif type(window) is list:
            if PyList_GET_SIZE(window):
                self.win = window
                self.st.list = <PyObject *> window
                self.st.i = 1
                item = <object> PyList_GET_ITEM(window, 0)
                Py_INCREF(item)
                return <PyObject *> item
        else:
            self.it = iter(window)


cdef void _install_flat_next():
    """Make bpe_flat_next the iterator slot of _Flatten."""
    global bpe_flat_offset, bpe_flat_refill
    cdef _Flatten probe = _Flatten.__new__(_Flatten, ())
    bpe_flat_offset = <char *> &probe.st - <char *> <PyObject *> probe
    bpe_flat_refill = _flat_refill
    (<PyTypeObject *> _Flatten).tp_iternext = bpe_flat_next
    PyType_Modified(<PyTypeObject *> _Flatten)


_install_flat_next()


cdef class Core:
    """The compiled core: the hot work of one tokenizer, in C.  The same
    interface as ``bpe_fallback.Core`` (whose docstring describes it); a
    ``bpe.Tokenizer`` holds one.

    Its tables (CoreT: the trie over every token's bytes, the core's token
    numbers, the merges by pair; the id tables for decoding) are read-only
    once built, so threads share them; each call borrows a cache (pre-token
    -> ids) from a small pool, so threads encode at once, without the GIL.

    >>> core = Core(PATTERNS["gpt2"], {bytes([b]): b for b in range(256)} | {b"hi": 256},
    ...             [(104, 105, 256)], {})
    >>> core.encode_text("hi hi"), core.encode_pieces(["hi", " hi"]), core.decode_bytes([256, 33])
    ([256, 32, 256], [256, 32, 256], b'hi!')
    """
    cdef CoreT T
    cdef object rx_findall
    cdef str pattern
    cdef list id_objs          # the int object of every id, shared by all results
    cdef bytes dec_buf         # every token's bytes, end to end
    cdef int64_t *dec_off      # id -> offset in dec_buf
    cdef int32_t *dec_len      # id -> length (-1: no such id)
    cdef Py_ssize_t n_ids
    cdef dict sparse           # id -> bytes, when the ids are too sparse for the byte table
    cdef list spare            # caches not in use, the most recently used last
    cdef Py_ssize_t max_spare

    releases_gil = True

    def __cinit__(self, str pattern, dict ranks, list merges, dict specials):
        cdef dict decoder
        self.pattern = pattern
        self.T.which = _which(pattern)
        if self.T.which != P_NONE:
            _build_flags()
        else:
            self.rx_findall = _py.pretokenizer(pattern)
        self.spare = []
        self.max_spare = (os.cpu_count() or 1) + 1
        self.build(ranks, [(a, b) for a, b, _ in merges], [m for _, _, m in merges],
                   [ranks[bytes([b])] for b in range(256)])
        decoder = {i: t for t, i in ranks.items()}
        for name, i in specials.items():
            decoder[i] = name.encode("utf-8")
        self.build_decoder(decoder)

    counter = _Counter
    learn_merges = staticmethod(_learn_merges)
    repair = staticmethod(_repair)
    pack_ids = staticmethod(_pack_ids)

    cdef _Cache take(self):
        """A cache for one call: a spare one (the warmest), or a new one."""
        if self.spare:
            return self.spare.pop()
        return _Cache()

    cdef void give(self, _Cache cache):
        """Back to the pool, which keeps at most a few (one per CPU, and one)."""
        if len(self.spare) < self.max_spare:
            self.spare.append(cache)

    def __dealloc__(self):
        free(self.T.da)
        free(self.T.leaf)
        free(self.T.tok)
        free(self.T.t_id)
        free(self.T.pairs)
        free(self.T.bloom)
        free(self.T.wide_pairs)
        free(self.T.shorts)
        free(self.dec_off)
        free(self.dec_len)

    cdef int build_decoder(self, dict decoder) except -1:
        """Dense tables by id (every token's bytes end to end), unless the ids
        are sparse: then the reference paths decode."""
        cdef Py_ssize_t total = 0, off = 0, n
        cdef int32_t i
        cdef bytes t
        cdef char *p
        self.n_ids = max(decoder) + 1
        if self.n_ids > 8 * len(decoder) + (1 << 20):
            self.n_ids = 0
            self.id_objs = None
            self.sparse = decoder
            self.dec_buf = b""
            return 0
        self.id_objs = list(range(self.n_ids))
        self.dec_off = <int64_t *> malloc(self.n_ids * sizeof(int64_t))
        self.dec_len = <int32_t *> malloc(self.n_ids * sizeof(int32_t))
        if self.dec_off == NULL or self.dec_len == NULL:
            raise MemoryError()
        for i in range(self.n_ids):
            self.dec_len[i] = -1
        for t in decoder.values():
            total += PyBytes_GET_SIZE(t)
        self.dec_buf = PyBytes_FromStringAndSize(NULL, total)
        p = PyBytes_AS_STRING(self.dec_buf)
        for i, t in decoder.items():
            n = PyBytes_GET_SIZE(t)
            memcpy(p + off, PyBytes_AS_STRING(t), n)
            self.dec_off[i] = off
            self.dec_len[i] = <int32_t> n
            off += n
        return 0

    cdef int build(self, dict encoder, list rank_pair, list rank_id, list byte_ids) except -1:
        """The trie and the core's tables from the vocabulary (bytes -> id),
        the merges as pairs of ids in rank order, their ids, and the byte ids."""
        cdef Py_ssize_t n_tok = len(encoder), n_merges = len(rank_id), total = 0, k, r, m
        cdef Py_ssize_t n_core = 256 + n_merges, cap, max_id = 0
        cdef uint8_t *arena = NULL
        cdef int64_t *off = NULL
        cdef int32_t *lens = NULL
        cdef int32_t *ids = NULL
        cdef int32_t *vals = NULL
        cdef int32_t *merge_ids = NULL
        cdef uint8_t *ok = NULL
        cdef int32_t byte_id[256]
        cdef IdMap by_id, core_of
        cdef TrieBuild tb
        cdef bytes t
        cdef tuple pair
        cdef int err = 0
        cdef CoreT *T = &self.T
        memset(&tb, 0, sizeof(TrieBuild))
        tb.free_head = -1
        tb.free_tail = -1
        memset(&by_id, 0, sizeof(IdMap))
        memset(&core_of, 0, sizeof(IdMap))
        for t, i in encoder.items():
            total += PyBytes_GET_SIZE(t)
            if i > max_id:
                max_id = i
        if total > 0x0FFFFFFF or n_core > 0x0FFFFFFF:
            raise MemoryError("vocabulary too large for the compiled core")
        T.n_core = n_core
        T.tok = <Tok *> big_alloc(n_core * sizeof(Tok), 0)
        T.t_id = <int32_t *> big_alloc(n_core * sizeof(int32_t), 0)
        cap = 16
        while cap < 2 * n_merges:
            cap *= 2
        if n_core < NARROW_LIMIT - 1:
            cap //= 8   # buckets of 8 slots
        T.pair_mask = cap - 1
        T.pair_shift = 64
        while (<Py_ssize_t> 1 << (64 - T.pair_shift)) < cap:
            T.pair_shift -= 1
        m = 64
        while 3 * m < n_merges:
            m *= 2
        T.bloom_shift = 64
        while (<Py_ssize_t> 1 << (64 - T.bloom_shift)) < m:
            T.bloom_shift -= 1
        T.bloom = <uint64_t *> calloc(m, sizeof(uint64_t))
        if T.bloom == NULL:
            raise MemoryError()
        if n_core < NARROW_LIMIT - 1:
            T.pairs = <uint64_t *> big_alloc(8 * cap * sizeof(uint64_t), 1)
        else:
            T.wide_pairs = <PairSlot *> big_alloc(cap * sizeof(PairSlot), 0)
            if T.wide_pairs != NULL:
                for k in range(cap):
                    T.wide_pairs[k].key = EMPTY_KEY
        ok = <uint8_t *> calloc(n_core, 1)
        arena = <uint8_t *> malloc(total + 1)
        off = <int64_t *> malloc((n_tok + 1) * sizeof(int64_t))
        lens = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
        ids = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
        vals = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
        merge_ids = <int32_t *> malloc((3 * n_merges + 1) * sizeof(int32_t))
        try:
            if (T.tok == NULL or T.t_id == NULL or (T.pairs == NULL and T.wide_pairs == NULL)
                    or ok == NULL or arena == NULL
                    or off == NULL or lens == NULL or ids == NULL or vals == NULL or merge_ids == NULL
                    or idmap_init(&by_id, max_id, n_tok) < 0 or idmap_init(&core_of, max_id, n_core) < 0):
                raise MemoryError()
            k = 0
            m = 0
            for t, i in encoder.items():
                memcpy(arena + m, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t))
                off[k] = m
                lens[k] = <int32_t> PyBytes_GET_SIZE(t)
                ids[k] = i
                m += lens[k]
                k += 1
            for r in range(n_merges):
                pair = <tuple> rank_pair[r]
                merge_ids[3 * r] = <object> PyTuple_GET_ITEM(pair, 0)
                merge_ids[3 * r + 1] = <object> PyTuple_GET_ITEM(pair, 1)
                merge_ids[3 * r + 2] = rank_id[r]
            for r in range(256):
                byte_id[r] = byte_ids[r]
            with nogil:
                err = build_tables(T, n_tok, arena, off, lens, ids, vals, n_merges, merge_ids,
                                   byte_id, ok, &by_id, &core_of, &tb)
            if err < 0:
                raise MemoryError()
        finally:
            free(ok)
            free(arena)
            free(off)
            free(lens)
            free(ids)
            free(vals)
            free(merge_ids)
            free(tb.next_free)
            free(tb.prev_free)
            idmap_free(&by_id)
            idmap_free(&core_of)
            free(tb.da)
        return 0

    def decode_bytes(self, list ids):
        """The bytes of `ids` through the byte table, or None when an id is not
        a plain int of the vocabulary (the caller then reports it)."""
        cdef Py_ssize_t k, n = len(ids), total = 0
        cdef long v
        cdef bytes out
        cdef char *p
        cdef const char *src = PyBytes_AS_STRING(self.dec_buf)
        if self.id_objs is None:  # sparse ids: no byte table
            try:
                return b"".join(map(self.sparse.__getitem__, ids))
            except KeyError:
                return None
        for k in range(n):
            o = ids[k]
            if type(o) is not int:
                return None
            try:
                v = o
            except OverflowError:
                return None
            if v < 0 or v >= self.n_ids or self.dec_len[v] < 0:
                return None
            total += self.dec_len[v]
        out = PyBytes_FromStringAndSize(NULL, total)
        p = PyBytes_AS_STRING(out)
        for k in range(n):
            v = ids[k]
            memcpy(p, src + self.dec_off[v], self.dec_len[v])
            p += self.dec_len[v]
        return out

    cdef list to_list(self, IVec *out, PCache *cache):
        """The ids as a list of the shared int objects.  Only the list's
        creation and one reference count update per distinct id hold the
        GIL: the items are written (into the new list, which no one else
        sees yet) and the ids counted without it, so that threads overlap."""
        cdef list result
        cdef Py_ssize_t i, n = out.len, distinct = 0
        cdef PyObject **objs
        cdef PyObject **items
        cdef PyObject *o
        cdef const int32_t *ids = out.data
        cdef Py_ssize_t *count
        cdef int32_t *seen
        cdef int32_t v
        if self.id_objs is None:
            return [out.data[i] for i in range(out.len)]
        if cache.id_count == NULL:
            cache.id_count = <Py_ssize_t *> big_alloc(self.n_ids * sizeof(Py_ssize_t), 1)
            cache.id_seen = <int32_t *> malloc(self.n_ids * sizeof(int32_t))
            if cache.id_count == NULL or cache.id_seen == NULL:
                raise MemoryError()
        count = cache.id_count
        seen = cache.id_seen
        result = PyList_New(n)
        objs = list_items(self.id_objs)
        items = list_items(result)
        with nogil:
            for i in range(n):
                v = ids[i]
                items[i] = objs[v]
                if count[v] == 0:
                    seen[distinct] = v
                    distinct += 1
                count[v] += 1
        for i in range(distinct):
            v = seen[i]
            o = objs[v]
            add_refs(o, count[v])
            count[v] = 0
        return result

    def encode_pieces(self, pieces):
        """Ids of pre-tokens already split (str each)."""
        cdef _Cache cache = self.take()
        try:
            return self.pieces_with(pieces, cache)
        finally:
            self.give(cache)

    cdef list pieces_with(self, pieces, _Cache cache):
        cdef IVec out
        cdef Scratch sc
        cdef bytes b
        memset(&out, 0, sizeof(IVec))
        memset(&sc, 0, sizeof(Scratch))
        sc.memo = cache.c.memo
        try:
            for p in pieces:
                b = p.encode("utf-8")
                if piece(&self.T, <const uint8_t *> PyBytes_AS_STRING(b), len(b), False, &cache.c, &out, &sc):
                    raise MemoryError()
            return self.to_list(&out, &cache.c)
        finally:
            ivec_free(&out)
            scratch_free(&sc)

    def encode_text(self, str text):
        """Ids of text that holds no special tokens (lone surrogates already
        repaired).  The GIL is released while the named patterns scan."""
        cdef _Cache cache = self.take()
        try:
            if self.T.which == P_NONE:
                return self.pieces_with(self.rx_findall(text), cache)
            return self.prefix_with(text, PyUnicode_GET_LENGTH(text), cache)[1]
        finally:
            self.give(cache)

    def encode_prefix(self, str text, Py_ssize_t limit):
        """(end, ids) of the pre-tokens of `text` that end at or before
        `limit`; for a named pattern, scanned without the GIL.  The ids are
        a compact sequence (len, iteration, list()), not a list."""
        cdef _Cache cache
        if self.T.which == P_NONE:
            raise ValueError("encode_prefix needs the gpt2, cl100k, o200k or words pattern")
        cache = self.take()
        try:
            return self.prefix_with(text, limit, cache, False)
        finally:
            self.give(cache)

    cdef tuple prefix_with(self, str text, Py_ssize_t limit, _Cache cache, bint as_list=True):
        """(cut, ids) of encode_prefix; ids a list, or else an _Ids (its
        buffer, not copied) for flatten()."""
        cdef IVec out
        cdef int err = 0
        cdef Utf8 u
        cdef Py_ssize_t n, byte_limit, cut = 0, chars = 0, i
        cdef bint ascii = PyUnicode_IS_ASCII(text)
        cdef _Ids ids
        memset(&out, 0, sizeof(IVec))
        n = PyUnicode_GET_LENGTH(text)
        utf8_of(text, &u)
        try:
            with nogil:
                if limit >= n:
                    byte_limit = (<Py_ssize_t> 1) << 62
                elif ascii:
                    byte_limit = limit
                else:  # the bytes of the first `limit` code points
                    byte_limit = 0
                    while byte_limit < u.len:
                        if (u.data[byte_limit] & 0xC0) != 0x80:
                            if chars == limit:
                                break
                            chars += 1
                        byte_limit += 1
                    chars = 0
                err = scan_text(&self.T, u.data, u.len, &cache.c, &out, byte_limit, &cut)
                if ascii:
                    chars = cut
                else:
                    for i in range(cut):  # code points: the bytes that start one
                        chars += (u.data[i] & 0xC0) != 0x80
            if err:
                raise MemoryError()
            if as_list:
                return chars, self.to_list(&out, &cache.c)
            ids = _Ids.__new__(_Ids)
            ids.v = out  # the buffer moves to the _Ids
            ids.objs = self.id_objs
            memset(&out, 0, sizeof(IVec))
            return chars, ids
        finally:
            free(u.owned)
            ivec_free(&out)

    @staticmethod
    def flatten(windows):
        """An iterator over the ids of an iterable of id sequences (lists, or
        what encode_prefix returns): encode_iterable's output, read straight
        from the windows' int32 buffers."""
        return _Flatten(windows)

    cdef bytes encode_packed(self, str text, int itemsize, _Cache cache, IVec *out):
        """The ids of encode_text as little-endian unsigned ints of `itemsize`
        (2 or 4) bytes: for a named pattern, scanned and written without the
        GIL, with no list of ids.  `out`: scratch space for the ids, kept by
        the caller from call to call (no allocation per call to grow it)."""
        cdef int err = 0
        cdef Utf8 u
        cdef Py_ssize_t cut = 0, bad
        cdef bytes packed
        cdef uint8_t *p
        if self.T.which == P_NONE:
            return _pack_ids(self.pieces_with(self.rx_findall(text), cache), itemsize)
        out.len = 0
        utf8_of(text, &u)
        try:
            with nogil:
                err = scan_text(&self.T, u.data, u.len, &cache.c, out, (<Py_ssize_t> 1) << 62, &cut)
            if err:
                raise MemoryError()
            packed = PyBytes_FromStringAndSize(NULL, out.len * itemsize)
            p = <uint8_t *> PyBytes_AS_STRING(packed)
            with nogil:
                bad = pack_le(out.data, out.len, itemsize, p)
            if bad >= 0:
                raise OverflowError(f"id {out.data[bad]} does not fit {itemsize} bytes")
            return packed
        finally:
            free(u.owned)
            out.len = 0

    def packer(self, int itemsize):
        """A function text -> the ids of encode_ordinary(text) as little-endian
        unsigned ints of `itemsize` (2 or 4) bytes, for one thread: it has its
        own cache, and encodes without the GIL (text with no special tokens in
        it, lone surrogates repaired)."""
        if itemsize != 2 and itemsize != 4:
            raise ValueError(f"itemsize must be 2 or 4, not {itemsize}")
        return _Packer(self, itemsize)


    def table_sizes(self):
        """The sizes of the C tables (for tests and the profile notes)."""
        return {"trie_slots": self.T.da_len, "core_tokens": self.T.n_core,
                "pair_slots": (self.T.pair_mask + 1) * (8 if self.T.pairs != NULL else 1),
                "short_slots": self.T.short_mask + 1}

    def merge_bytes(self, bytes data):
        """Ids of `data` by merge rank alone over its bytes (no pre-tokens, no
        trie, no whole-token rule)."""
        return self.by(data, False)

    @staticmethod
    def pretokenize(pattern, text):
        """The pre-tokens of text (lone surrogates repaired): the native scanner
        for a named pattern, else the regex (what encode_text splits by; both
        equal regex.findall)."""
        cdef int which = _which(pattern)
        text = _repair(text)
        if which == P_NONE:
            return _py.pretokenizer(pattern)(text)
        return native_pretokens(text, which)

    def trie_ids(self, bytes data):
        """Ids of `data` by the trie alone (no whole-token rule, no cache): for tests."""
        return self.by(data, True)

    cdef list by(self, bytes data, bint trie):
        cdef IVec out
        cdef Scratch sc
        cdef int err
        memset(&out, 0, sizeof(IVec))
        memset(&sc, 0, sizeof(Scratch))
        try:
            if trie:
                err = backtrack(&self.T, <const uint8_t *> PyBytes_AS_STRING(data), len(data), &out, &sc)
            else:
                err = rank_merge(&self.T, <const uint8_t *> PyBytes_AS_STRING(data), len(data), &out, &sc)
            if err == -2:
                raise AssertionError("the trie found no encoding")
            if err < 0:
                raise MemoryError()
            return [out.data[i] for i in range(out.len)]
        finally:
            ivec_free(&out)
            scratch_free(&sc)


cdef class _Packer:
    """Core.packer's function: one thread's encoder of text to packed ids,
    with its own cache and its own buffer for the ids (kept from call to
    call: a worker thread does not allocate and free it for every chunk)."""
    cdef Core core
    cdef _Cache cache
    cdef IVec ids
    cdef int itemsize

    def __cinit__(self, Core core, int itemsize):
        self.core = core
        self.cache = _Cache()
        self.itemsize = itemsize
        memset(&self.ids, 0, sizeof(IVec))

    def __dealloc__(self):
        ivec_free(&self.ids)

    def __call__(self, str text):
        if self.cache.busy:  # taken and given back under the GIL
            raise RuntimeError("a packer encodes for one thread at a time")
        self.cache.busy = True
        try:
            return self.core.encode_packed(text, self.itemsize, self.cache, &self.ids)
        finally:
            self.cache.busy = False


cdef int build_shorts(CoreT *T, Py_ssize_t n_tok, const uint8_t *arena, const int64_t *off,
                      const int32_t *lens, const int32_t *ids) noexcept nogil:
    """The table of the tokens of at most 8 bytes, at most half full."""
    cdef Py_ssize_t k, count = 0, cap = 16, j
    cdef uint64_t key
    for k in range(n_tok):
        if lens[k] <= 8:
            count += 1
    while 2 * cap < 3 * count:
        cap *= 2
    T.short_mask = cap - 1
    T.short_shift = 64
    while (<Py_ssize_t> 1 << (64 - T.short_shift)) < cap:
        T.short_shift -= 1
    T.shorts = <ShortSlot *> big_alloc(cap * sizeof(ShortSlot), 1)
    if T.shorts == NULL:
        return -1
    for k in range(n_tok):
        if lens[k] <= 8:
            key = short_key(arena + off[k], lens[k], False)
            j = short_home(key, lens[k], T.short_shift)
            while T.shorts[j].len != 0:
                j = (j + 1) & T.short_mask
            T.shorts[j].key = key
            T.shorts[j].len = lens[k]
            T.shorts[j].id = ids[k]
    return 0


cdef int build_tables(CoreT *T, Py_ssize_t n_tok, const uint8_t *arena, const int64_t *off,
                      const int32_t *lens, const int32_t *ids, int32_t *vals,
                      Py_ssize_t n_merges, const int32_t *merge_ids, const int32_t *byte_id,
                      uint8_t *ok, IdMap *by_id, IdMap *core_of, TrieBuild *tb) noexcept nogil:
    """Core numbers, the pair table, which tokens are buildable, then the trie."""
    cdef Py_ssize_t k, r, i
    cdef int32_t a, b, t, x
    cdef uint64_t key
    for k in range(n_tok):
        if idmap_put(by_id, ids[k], <int32_t> k) < 0:
            return -1
    # core numbers: the bytes, then one per merge
    for r in range(256):
        T.tok[r].left = -1
        T.tok[r].right = -1
        T.t_id[r] = byte_id[r]
        ok[r] = 1
        if idmap_put(core_of, byte_id[r], <int32_t> r) < 0:
            return -1
    for r in range(n_merges):
        t = <int32_t> (256 + r)
        T.t_id[t] = merge_ids[3 * r + 2]
        if idmap_put(core_of, merge_ids[3 * r + 2], t) < 0:
            return -1
    for r in range(n_merges):
        t = <int32_t> (256 + r)
        a = idmap_get(core_of, merge_ids[3 * r])
        b = idmap_get(core_of, merge_ids[3 * r + 1])
        T.tok[t].left = a
        T.tok[t].right = b
        if a < 0 or b < 0 or a >= t or b >= t:
            continue  # a part that no earlier merge makes: this merge never fires
        pair_put(T, a, b, t)
    # buildable: both parts are, and the boundary between them survives until
    # this merge (nothing across it merges first)
    for r in range(n_merges):
        t = <int32_t> (256 + r)
        a = T.tok[t].left
        b = T.tok[t].right
        if a >= 0 and b >= 0 and a < t and b < t and ok[a] and ok[b]:
            ok[t] = compatible(T, a, b, t)
    for k in range(n_tok):
        x = idmap_get(core_of, ids[k])
        vals[k] = x if x >= 0 and ok[x] else -1
    if build_shorts(T, n_tok, arena, off, lens, ids) < 0:
        return -1
    if build_trie(tb, n_tok, arena, off, lens, vals, ids) < 0:
        return -1
    # every base + byte stays inside the arrays: keep up to the last base + 255
    T.da_len = tb.high + 256 if tb.high + 256 < tb.cap else tb.cap
    T.da = <DANode *> big_alloc(T.da_len * sizeof(DANode), 0)
    T.leaf = <DALeaf *> big_alloc(T.da_len * sizeof(DALeaf), 0)
    if T.da == NULL or T.leaf == NULL:
        free(T.da)
        free(T.leaf)
        T.da = NULL
        T.leaf = NULL
        return -1
    for k in range(T.da_len):
        T.da[k].base = tb.da[k].base
        T.da[k].check = tb.da[k].check
        T.leaf[k].val = tb.da[k].val
        T.leaf[k].id = tb.da[k].id
    return 0



cdef bint has_surrogate(const ch_t *s, Py_ssize_t n) noexcept nogil:
    """Any code point in [0xD800, 0xDFFF]?  Blocks of 256 without a branch per
    code point (the compiler vectorizes the inner loop)."""
    cdef Py_ssize_t i = 0, j, end
    cdef uint32_t acc
    while i < n:
        end = i + 256 if i + 256 < n else n
        acc = 0
        for j in range(i, end):
            acc |= (<uint32_t> s[j] - <uint32_t> 0xD800) < <uint32_t> 0x800
        if acc:
            return True
        i = end
    return False


cdef inline void put_le(uint8_t *p, uint32_t v, int itemsize) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    if itemsize == 4:
        p[2] = (v >> 16) & 0xFF
        p[3] = v >> 24


cdef Py_ssize_t pack_le(const int32_t *ids, Py_ssize_t n, int itemsize, uint8_t *p) noexcept nogil:
    """Write ids as little-endian unsigned ints of `itemsize` bytes; the index
    of the first id that does not fit, or -1."""
    cdef Py_ssize_t i
    cdef uint32_t limit = 0xFFFF if itemsize == 2 else 0xFFFFFFFF
    for i in range(n):
        if <uint32_t> ids[i] > limit:
            return i
        put_le(p, <uint32_t> ids[i], itemsize)
        p += itemsize
    return -1


class Tokenizer(_py.Tokenizer):
    __doc__ = _py.Tokenizer.__doc__
    core_class = Core


count_pretokens = Tokenizer.count_pretokens


def get_encoding(name, path=None):
    return Tokenizer.get_encoding(name, path)


get_encoding.__doc__ = _py.get_encoding.__doc__
