# The encoder: the tables it reads (CoreT: trie, pair table, shorts),
# the per-thread pre-token caches, and the encode loops (backtracking over the
# trie, merge by rank, the scan-and-encode loop over a whole text).
# Needs: IVec, hashes, big_alloc, prefetch, STAT (_bpe_common.pxi); the
# scanners (_bpe_scanner.pxi).  The tables are built in _bpe_tables.pxi.

# Token numbers: the core numbers tokens its own way, 0..255 the single bytes
# and 256 + r the token merge r makes.  A token is *buildable* when merge by
# rank of its own bytes gives that token alone; only those can appear in a
# result, so the encoder walks only them (the trie also holds the others, the
# orphans, for the rule that a pre-token which is a token is that one id).
#
# Encoding a pre-token (backtrack): take the longest buildable prefix that is
# compatible with the token before it (merge by rank of the two gives exactly
# those two), else the next shorter one; when none fits, take the previous
# token back and remember the dead end.  The first sequence found is the
# merge-by-rank result.  Most pre-tokens never get there: per thread (a
# _Cache) they are looked up first in hot8 (one-token pre-tokens of up to 8
# bytes), hot (4-way, up to 16 bytes and 3 ids), the read-only shorts table,
# and a cache of longer results (slots).  All of it is memory-bound.

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
