# The pre-token cache of each thread (a _Cache): UTF-8 bytes of a pre-token
# longer than the flat table's keys -> its ids, in C memory, no Python
# objects.  The flat table of short pre-tokens lives in the same PCache and is
# worked by _bpe_scan.pxi.
# Needs: big_alloc, bytes_reserve, IVec, ivec_free (_bpe_common.pxi).  The flat
# table's users: _bpe_scan.pxi.

cdef enum: CACHE_BITS = 18
cdef enum: CACHE_MAX_BYTES = 255
cdef enum: MEMO_BITS = 14   # the memo of compatible() (PCache.memo, Scratch.memo): 2**MEMO_BITS words

cdef struct CSlot:
    uint64_t hash     # 0: empty
    uint32_t off      # its record in the arena: the ids (int32 each), then the key's bytes
    uint8_t key_len   # at most CACHE_MAX_BYTES
    uint8_t n_ids
    uint16_t spare

cdef enum: CACHE_MIN_BITS = 12
cdef enum: SPARE_IDS = 1 << 16   # PCache.ids: the capacity kept between calls

cdef struct FSlot:    # a slot of the flat table (32 bytes, two a cache line)
    uint64_t k0       # bytes 0-7 of the pre-token, zero-padded (a little-endian load)
    uint64_t k1       # bytes 8-14, zero-padded; the top byte: the length; 0: a free slot
    int32_t ids[3]    # n <= 3: the ids (the rest zero)
    uint32_t n        # the count, or FS_LONG (ids[0]: an offset in flat_ids, ids[1]: the
                      # count) or FS_PENDING (being merged: ids[0] is its item), in the
                      # low byte; FS_OVF in the first slot of a line: a key whose home
                      # is this line sits beyond it (else a key not in the line is new)

cdef struct PCache:
    uint64_t *memo    # the backtracking's remembered compatibility checks
    Py_ssize_t *id_count # to_list: how often each id occurs (zero between calls)
    int32_t *id_seen  # to_list: the ids that occur
    IVec ids          # a call's ids before they become a list, kept for the next
                      #   call up to SPARE_IDS (short calls allocate nothing)
    FSlot *flat       # the flat table: a copy of the core's template, then the recent
                      #   pre-tokens of up to FS_MAX bytes
    const void *flat_of   # the CoreT whose template it copies (NULL: none yet)
    Py_ssize_t flat_count # slots taken
    Py_ssize_t flat_limit # at this count the table is reset to the template
    int32_t *flat_ids # the ids of the entries of more than 3
    Py_ssize_t flat_ids_len
    Py_ssize_t flat_ids_cap
    CSlot *slots      # open addressing, at most 3/4 full: doubled up to 2**CACHE_BITS
    int bits          #   slots, then emptied when full
    Py_ssize_t count
    uint8_t *arena    # the records: a hit reads its slot and one record, side by side
    Py_ssize_t arena_len
    Py_ssize_t arena_cap


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
    c.memo = <uint64_t *> calloc(1 << MEMO_BITS, sizeof(uint64_t))
    return -1 if c.slots == NULL or c.memo == NULL else 0


cdef void pcache_free(PCache *c) noexcept nogil:
    free(c.flat)
    free(c.flat_ids)
    c.flat = NULL
    c.flat_ids = NULL
    c.flat_of = NULL
    free(c.memo)
    c.memo = NULL
    free(c.id_count)
    free(c.id_seen)
    c.id_count = NULL
    c.id_seen = NULL
    ivec_free(&c.ids)
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
