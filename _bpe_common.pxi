# C helpers shared by every part of the compiled core: compiler intrinsics
# (prefetch, count trailing zeros, little-endian loads), big allocations on huge
# pages, giving memory back, the profiling probes of a stats build, and the
# small containers (int32 vectors, a uint64 -> int64 map, hashes).
# Needs: nothing of the files before it (only what bpe.pyx imports).  Included
# first.

cdef extern from "_bpe_common.h":
    void prefetch "BPE_PREFETCH"(const void *p) noexcept nogil
    # the profiling probes of a stats build (-DBPE_STATS)
    const bint STATS_ON "BPE_STATS_ON"
    long long bpe_stats[16]
    void STAT "BPE_STAT"(int i, long long k) noexcept nogil
    int ctz64 "bpe_ctz64"(uint64_t x) noexcept nogil
    uint64_t le64 "bpe_le64"(uint64_t x) noexcept nogil
    void *big_alloc "bpe_big_alloc"(size_t size, int zero) noexcept nogil
    void release_memory "bpe_release_memory"() noexcept nogil


if STATS_ON:
    def _path_counts(reset=False):
        """Counts of the encoder's paths (see BPE_STAT in _bpe_common.h)."""
        r = [bpe_stats[i] for i in range(16)]
        if reset:
            for i in range(16):
                bpe_stats[i] = 0
        return r


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)
    int PyErr_CheckSignals() except? -1
    unsigned long PyLong_AsUnsignedLong(object) except? -1
    int PyUnicode_KIND(object)
    void *PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    const char *PyUnicode_AsUTF8AndSize(object, Py_ssize_t *size)


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

cdef int resize(void **p, Py_ssize_t size) noexcept nogil:
    """realloc in place of the pointer; -1 (and the block untouched) if no memory."""
    cdef void *q = realloc(p[0], size)
    if q == NULL:
        return -1
    p[0] = q
    return 0

cdef inline int ivec_push(IVec *v, int32_t x) noexcept nogil:
    if v.len == v.cap and ivec_reserve(v, v.len + 1) < 0:
        return -1
    v.data[v.len] = x
    v.len += 1
    return 0

cdef inline int ivec_extend(IVec *v, const int32_t *x, Py_ssize_t n) noexcept nogil:
    if ivec_reserve(v, v.len + n) < 0:
        return -1
    memcpy(v.data + v.len, x, n * sizeof(int32_t))
    v.len += n
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
