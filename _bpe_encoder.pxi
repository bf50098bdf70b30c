# The encoder: the tables it reads (CoreT: trie, pair table, the flat table's
# template), the per-thread pre-token caches, and the encode loops (merge by
# rank over small arrays, backtracking over the trie, the scan-and-encode loop
# over a whole text).
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
# merge-by-rank result.  That is the path of the pre-tokens of more than
# FS_MAX bytes, behind a cache of their results (slots).
#
# A pre-token of up to FS_MAX (15) bytes is one probe of the flat table: per
# thread (a _Cache), 32-byte slots (the bytes as two words with the length in
# the top byte, up to 3 ids inline), a copy of the core's template that holds
# every token of up to 15 bytes (so the whole-token rule is a plain hit), and
# then the recent pre-tokens.  scan_flat works a chunk of FCHUNK pre-tokens at
# a time: the scanner's spans are keyed and their slots prefetched as they are
# found, then probed; a hit copies 3 ids and advances by its count.  A
# pre-token that is not there is merged by rank over small arrays
# (merge_batch), several at a time in turn so that their waits for the pair
# table overlap, the pairs of small core numbers from a dense 4 MB grid; its
# place in the output is kept and filled when the batch is done.  All of it
# is memory-bound: the aim is independent loads, asked for early.

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


# ---- atoms: characters a merge may start from --------------------------------
#
# A character c of 2 or 3 bytes that is a token, and that merging its bytes
# alone makes (its "atom"), can enter a pre-token's merge as one symbol
# instead of its bytes wherever no token covers part of c and bytes next to
# it (a "fragment": a token ending in a character's first bytes, or starting
# with its last ones), checked against the pre-token's actual bytes.  Then no
# merge crosses c's edges before c is whole, c's own merges happen as they
# would alone, and every merge with c as a part ranks after them (a merge's
# parts come before it), so the merges, and the ids, are the same.  A CJK
# run then merges from its characters: a fifth of the merge steps
# (o200k x multilingual.txt, the pre-tokens of more than 15 bytes).

cdef enum: ATOM_MAX = 64   # symbols a long pre-token may have to merge from its atoms
cdef enum: ATOM_BYTES = 4 * ATOM_MAX   # the longest pre-token encode_atoms is given
cdef enum: PAIR_WORDS = 1024   # a bit set of the 256 x 256 byte pairs (bit_at, bit_set)

cdef struct Frag:
    uint32_t part     # the bytes inside the character (1-3), little-endian
    int32_t part_len
    int32_t off       # the bytes outside it, in Atoms.bytes
    int32_t len

cdef struct Atoms:
    int32_t *of       # code point (BMP) -> its atom's core number, or -1
    uint64_t *head_bits   # [lead byte][the byte before]: a head fragment may end there
    uint64_t *tail_bits   # [last byte][the byte after]: a tail fragment may start there
    Frag *heads       # by lead byte: heads[head_at[b]:head_at[b + 1]]
    Frag *tails       # by the character's last byte, likewise
    int32_t head_at[257]
    int32_t tail_at[257]
    uint8_t *bytes
    LongTok *longs    # the tokens of more than FS_MAX bytes that are not ASCII, by
    int long_shift    #   piece_hash (open addressing): the whole-token rule without a
                      #   walk down the trie
    uint64_t long_bits[PAIR_WORDS]   # a bit for each one's hash (its top two bytes):
                      #   most pre-tokens are no token, and this says so

cdef struct LongTok:
    uint64_t h        # piece_hash of its bytes (0: an empty slot)
    int64_t off       # its bytes, in Atoms.bytes
    int32_t len
    int32_t id


cdef inline int utf8_need(uint8_t b) noexcept nogil:
    """The bytes of the character a byte starts (0: a continuation byte)."""
    if b < 0x80:
        return 1
    if b < 0xC0:
        return 0
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 3
    return 4


cdef inline bint bit_at(const uint64_t *bits, uint32_t a, uint32_t b) noexcept nogil:
    """Whether the byte pair (a, b) is in the bit set (PAIR_WORDS words)."""
    cdef uint32_t k = (a << 8) | b
    return (bits[k >> 6] >> (k & 63)) & 1


cdef inline void bit_set(uint64_t *bits, uint32_t a, uint32_t b) noexcept nogil:
    cdef uint32_t k = (a << 8) | b
    bits[k >> 6] |= (<uint64_t> 1) << (k & 63)


cdef inline uint32_t char_at(const uint8_t *b, Py_ssize_t L) noexcept nogil:
    """The code point b[:L] (L = 2 or 3, its lead byte's count) encodes in
    its shortest form, not a surrogate; else 0x10000 (never an atom's)."""
    cdef uint32_t cp
    if (b[1] & 0xC0) != 0x80:
        return 0x10000
    if L == 2:
        cp = ((<uint32_t> b[0] & 0x1F) << 6) | (b[1] & 0x3F)
        return cp if cp >= 0x80 else 0x10000
    if (b[2] & 0xC0) != 0x80:
        return 0x10000
    cp = ((<uint32_t> b[0] & 0x0F) << 12) | ((<uint32_t> b[1] & 0x3F) << 6) | (b[2] & 0x3F)
    return cp if cp >= 0x800 and not (0xD800 <= cp < 0xE000) else 0x10000


cdef bint atom_blocked(const Atoms *A, const uint8_t *s, Py_ssize_t n, Py_ssize_t i,
                       Py_ssize_t L) noexcept nogil:
    """Whether a fragment covers part of the character s[i:i + L] and the
    bytes next to it."""
    cdef Py_ssize_t k
    cdef const Frag *f
    cdef uint32_t w
    if i > 0 and bit_at(A.head_bits, s[i], s[i - 1]):
        for k in range(A.head_at[s[i]], A.head_at[s[i] + 1]):
            f = &A.heads[k]
            if f.part_len < L and f.len <= i:
                w = 0
                memcpy(&w, s + i, f.part_len)
                if w == f.part and memcmp(A.bytes + f.off, s + i - f.len, f.len) == 0:
                    return True
    if i + L < n and bit_at(A.tail_bits, s[i + L - 1], s[i + L]):
        for k in range(A.tail_at[s[i + L - 1]], A.tail_at[s[i + L - 1] + 1]):
            f = &A.tails[k]
            if f.part_len < L and f.len <= n - i - L:
                w = 0
                memcpy(&w, s + i + L - f.part_len, f.part_len)
                if w == f.part and memcmp(A.bytes + f.off, s + i + L, f.len) == 0:
                    return True
    return False


cdef Py_ssize_t atomize(const Atoms *A, const uint8_t *s, Py_ssize_t n, uint32_t *sym,
                        Py_ssize_t cap) noexcept nogil:
    """The symbols s[:n] merges from: atoms where allowed, else bytes; their
    count, or -1 when there would be more than cap.  s is UTF-8 (a str's),
    so a token of continuation bytes alone never spans two characters (such
    tokens are no fragments)."""
    cdef Py_ssize_t i = 0, m = 0, L, k
    cdef uint32_t cp
    cdef int32_t a
    while i < n:
        L = utf8_need(s[i])
        a = -1
        if (L == 2 or L == 3) and i + L <= n:
            cp = char_at(s + i, L)   # (bytes that are not UTF-8, as encode_bytes may
            if cp < 0x10000:         # give: no atom)
                a = A.of[cp]
                if a >= 0 and atom_blocked(A, s, n, i, L):
                    a = -1
        if a >= 0:
            if m >= cap:
                return -1
            sym[m] = <uint32_t> a
            m += 1
            i += L
        else:
            if L < 1 or i + L > n:
                L = 1
            if m + L > cap:
                return -1
            for k in range(L):
                sym[m + k] = s[i + k]
            m += L
            i += L
    return m


cdef Py_ssize_t merge_syms(const CoreT *T, uint32_t *sym, Py_ssize_t m) noexcept nogil:
    """Merge sym[:m] (m <= ATOM_MAX) by rank, the lowest-ranked adjacent pair
    first (the leftmost of equals); the symbols left."""
    cdef uint32_t rk[ATOM_MAX]
    cdef Py_ssize_t i, j
    cdef uint64_t best, x
    for i in range(m - 1):
        rk[i] = pair_rank_filtered(T, sym[i], sym[i + 1])
    while m > 1:
        best = (<uint64_t> rk[0] << 6)
        for i in range(1, m - 1):
            x = (<uint64_t> rk[i] << 6) | <uint64_t> i
            if x < best:
                best = x
        if (best >> 6) == 0xFFFFFFFFULL:
            break
        j = <Py_ssize_t> (best & 63)
        sym[j] = <uint32_t> (best >> 6)
        if T.canon != NULL:
            sym[j] = <uint32_t> T.canon[sym[j]]
        for i in range(j + 1, m - 1):
            sym[i] = sym[i + 1]
            rk[i] = rk[i + 1]
        m -= 1
        if j + 1 < m:
            rk[j] = pair_rank_filtered(T, sym[j], sym[j + 1])
        if j > 0:
            rk[j - 1] = pair_rank_filtered(T, sym[j - 1], sym[j])
    return m


cdef inline uint32_t pair_rank_filtered(const CoreT *T, uint32_t a, uint32_t b) noexcept nogil:
    """pair_rank, the pair table asked only when the filter lets the pair
    through (adjacent characters mostly make no merge; the filter stays in
    the CPU's caches)."""
    cdef int32_t r
    if (a | b) < GRID:
        return T.pair1[(a << GRID_BITS) | b]
    r = pair_get(T, <int32_t> a, <int32_t> b)
    return 0xFFFFFFFFU if r < 0 else <uint32_t> r


cdef int32_t long_token(const Atoms *A, const uint8_t *s, Py_ssize_t n,
                        uint64_t h) noexcept nogil:
    """The id of the token s[:n] (more than FS_MAX bytes, not ASCII; h: its
    piece_hash), or -1."""
    cdef Py_ssize_t mask = ((<Py_ssize_t> 1) << (64 - A.long_shift)) - 1
    cdef Py_ssize_t i = <Py_ssize_t> (h >> A.long_shift)
    if not bit_at(A.long_bits, <uint32_t> (h >> 56), <uint32_t> (h >> 48) & 0xFF):
        return -1
    while A.longs[i].h != 0:
        if A.longs[i].h == h and A.longs[i].len == n and \
                memcmp(A.bytes + A.longs[i].off, s, n) == 0:
            return A.longs[i].id
        i = (i + 1) & mask
    return -1


cdef int encode_atoms(const CoreT *T, const uint8_t *s, Py_ssize_t n, uint64_t h,
                      IVec *out) noexcept nogil:
    """Append the ids of s[:n] (more than FS_MAX bytes, not ASCII; h: its
    piece_hash): the whole-token rule, else merged from its atoms.  1 done,
    0 not (too many symbols), -1 no memory."""
    cdef uint32_t sym[ATOM_MAX]
    cdef Py_ssize_t m = atomize(T.atoms, s, n, sym, ATOM_MAX), k
    cdef int32_t whole
    if m < 0:
        return 0
    whole = long_token(T.atoms, s, n, h)
    if whole >= 0:
        return 1 if ivec_push(out, whole) == 0 else -1
    m = merge_syms(T, sym, m)
    if ivec_reserve(out, out.len + m) < 0:
        return -1
    for k in range(m):
        out.data[out.len + k] = T.t_id[sym[k]]
    out.len += m
    return 1


cdef inline bint is_ascii(const uint8_t *b, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = 0
    cdef Py_ssize_t k
    for k in range(n):
        c |= b[k]
    return c < 0x80


cdef void atoms_free(Atoms *A) noexcept nogil:
    if A != NULL:
        free(A.of)
        free(A.head_bits)
        free(A.tail_bits)
        free(A.heads)
        free(A.tails)
        free(A.bytes)
        free(A.longs)
        free(A)


cdef inline Py_ssize_t head_cut(const uint8_t *b, Py_ssize_t L) noexcept nogil:
    """Where a token b[:L] that ends in a character's first 1-3 bytes, after
    at least one byte, has them (a head fragment: b[:j] + that part); 0: not
    one."""
    cdef Py_ssize_t j = L - 1
    while j >= 0 and utf8_need(b[j]) == 0:
        j -= 1
    return j if j > 0 and utf8_need(b[j]) > L - j and L - j <= 3 else 0


cdef inline Py_ssize_t tail_cut(const uint8_t *b, Py_ssize_t L) noexcept nogil:
    """How many bytes a token b[:L] that starts with a character's last 1-3
    bytes, with more after them, has of them (a tail fragment); 0: not one."""
    cdef Py_ssize_t j = 0
    while j < L and utf8_need(b[j]) == 0:
        j += 1
    return j if j < L and j <= 3 else 0


cdef int add_frag(Frag *f, int32_t *count, const uint8_t *part, Py_ssize_t part_len,
                  const uint8_t *rest, Py_ssize_t rest_len, uint8_t *arena,
                  Py_ssize_t *used) noexcept nogil:
    f.part = 0
    memcpy(&f.part, part, part_len)
    f.part_len = <int32_t> part_len
    f.off = <int32_t> used[0]
    f.len = <int32_t> rest_len
    memcpy(arena + used[0], rest, rest_len)
    used[0] += rest_len
    count[0] += 1
    return 0


cdef int build_atoms(CoreT *T, const uint8_t *buf, const int64_t *off, const int32_t *lens,
                     Py_ssize_t n_ids, const uint8_t *skip) noexcept nogil:
    """T.atoms from the decoder's tables (the tokens' bytes by id): the
    fragments (grouped for atom_blocked), the long tokens that are not ASCII
    (for long_token), and the atoms.  -1: no memory."""
    cdef Atoms *A = <Atoms *> calloc(1, sizeof(Atoms))
    cdef Py_ssize_t k, j, L, nh = 0, nt = 0, nl = 0, used = 0, total = 0, q
    cdef uint64_t h
    cdef const uint8_t *b
    cdef uint32_t sym[ATOM_MAX]
    cdef uint32_t cp
    cdef int32_t hc[257]
    cdef int32_t tc[257]
    if A == NULL:
        return -1
    T.atoms = NULL
    A.of = <int32_t *> malloc(65536 * sizeof(int32_t))
    A.head_bits = <uint64_t *> calloc(PAIR_WORDS, sizeof(uint64_t))
    A.tail_bits = <uint64_t *> calloc(PAIR_WORDS, sizeof(uint64_t))
    if A.of == NULL or A.head_bits == NULL or A.tail_bits == NULL:
        atoms_free(A)
        return -1
    memset(A.of, 0xFF, 65536 * sizeof(int32_t))
    memset(hc, 0, sizeof(hc))
    memset(tc, 0, sizeof(tc))
    for k in range(n_ids):   # count the fragments, by lead byte / last byte
        L = lens[k]
        if skip[k] or L < 2:
            continue
        b = buf + off[k]
        j = head_cut(b, L)
        if j:
            hc[b[j]] += 1
            nh += 1
            total += j
        j = tail_cut(b, L)
        if j:
            tc[b[j - 1]] += 1
            nt += 1
            total += L - j
        if L > FS_MAX and not is_ascii(b, L):
            nl += 1
            total += L
    A.long_shift = 64
    while (<Py_ssize_t> 1 << (64 - A.long_shift)) < 2 * nl + 2:
        A.long_shift -= 1
    A.longs = <LongTok *> calloc(<Py_ssize_t> 1 << (64 - A.long_shift), sizeof(LongTok))
    A.heads = <Frag *> malloc((nh + 1) * sizeof(Frag))
    A.tails = <Frag *> malloc((nt + 1) * sizeof(Frag))
    A.bytes = <uint8_t *> malloc(total + 1)
    if A.heads == NULL or A.tails == NULL or A.bytes == NULL or A.longs == NULL:
        atoms_free(A)
        return -1
    A.head_at[0] = A.tail_at[0] = 0
    for k in range(256):
        A.head_at[k + 1] = A.head_at[k] + hc[k]
        A.tail_at[k + 1] = A.tail_at[k] + tc[k]
        hc[k] = A.head_at[k]
        tc[k] = A.tail_at[k]
    for k in range(n_ids):   # place them
        L = lens[k]
        if skip[k] or L < 2:
            continue
        b = buf + off[k]
        j = head_cut(b, L)
        if j:
            add_frag(&A.heads[hc[b[j]]], &hc[b[j]], b + j, L - j, b, j, A.bytes, &used)
            bit_set(A.head_bits, b[j], b[j - 1])
        j = tail_cut(b, L)
        if j:
            add_frag(&A.tails[tc[b[j - 1]]], &tc[b[j - 1]], b, j, b + j, L - j, A.bytes, &used)
            bit_set(A.tail_bits, b[j - 1], b[j])
        if L <= FS_MAX or is_ascii(b, L):
            continue
        h = piece_hash(b, L)
        if long_token(A, b, L, h) < 0:
            q = <Py_ssize_t> (h >> A.long_shift)
            bit_set(A.long_bits, <uint32_t> (h >> 56), <uint32_t> (h >> 48) & 0xFF)
            while A.longs[q].h != 0:
                q = (q + 1) & ((<Py_ssize_t> 1 << (64 - A.long_shift)) - 1)
            A.longs[q].h = h
            A.longs[q].off = used
            A.longs[q].len = <int32_t> L
            A.longs[q].id = <int32_t> k
            memcpy(A.bytes + used, b, L)
            used += L
    for k in range(n_ids):   # the atoms: one character of 2 or 3 bytes, merged to itself
        L = lens[k]
        if skip[k] or L < 2 or L > 3:
            continue
        b = buf + off[k]
        if utf8_need(b[0]) != L:
            continue
        cp = char_at(b, L)
        if cp >= 0x10000:
            continue
        for j in range(L):
            sym[j] = b[j]
        if merge_syms(T, sym, L) != 1 or T.t_id[sym[0]] != k:
            continue
        if A.of[cp] < 0:
            A.of[cp] = <int32_t> sym[0]
    T.atoms = A
    return 0


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
    int which            # the native scanner (P_PAT: the compiled pattern pat), or P_NONE
    const pn_pat *pat
    uint64_t *bloom      # a filter of the merges' pairs: two bits in one word a pair
    int bloom_shift      # 64 - log2(words): most pairs are no merge, and this says so
                         # from a table that stays in the CPU's cache
    FSlot *flat          # the flat table's template (built at the first encode: build_flat)
    int flat_bits        # log2 of its slots
    Py_ssize_t flat_limit
    Py_ssize_t flat_seeded
    uint32_t *pair1      # GRID x GRID: the core number of the merge of two core numbers
                         # below GRID (0xFFFFFFFF: none); its byte-pair corner, read by
                         # every first round, stays in the CPU's caches
    Atoms *atoms         # the characters merging may start from (NULL: none; build_atoms)
    bint irregular       # merges by rank differ from replaying them in order (several
                         # merges make one token, or a merge joins a token a later one
                         # makes): no trie walk (its compatibility check undoes merges
                         # in rank order); merged one pair at a time
    int32_t *canon       # irregular only: the core number of a merge -> the core number
                         # every pair of its token is keyed by (its first merge's)


cdef inline uint64_t narrow_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t> (a + 1) << 42) | (<uint64_t> b << 21)   # never 0, an empty slot


cdef inline Py_ssize_t narrow_home(const CoreT *T, uint64_t key) noexcept nogil:
    """The first bucket of key's way in the narrow pair table (8 slots from
    T.pairs + 8 * it: a cache line)."""
    return <Py_ssize_t> (word_hash(key) >> T.pair_shift)


cdef inline uint64_t *narrow_slot(const CoreT *T, uint64_t key) noexcept nogil:
    """The slot of the narrow pair table holding key, or the first free one on
    its way: buckets of 8 slots (a cache line each), taken in turn."""
    cdef uint64_t *bucket
    cdef Py_ssize_t i = narrow_home(T, key)
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
        sym[p] = m if T.canon == NULL else T.canon[m]
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


cdef int encode_new(const CoreT *T, const uint8_t *s, Py_ssize_t n, uint64_t h, IVec *out,
                    Scratch *sc) noexcept nogil:
    """Append the ids of a pre-token of more than FS_MAX bytes that no cache
    holds (h: its piece_hash; shorter ones: the flat table): ASCII of up to
    MID_MAX bytes by the whole-token rule (a walk down the trie), else
    merge_small; other text of up to ATOM_BYTES by encode_atoms; the
    rest, or what has too many symbols, by the trie encoder, else the rank
    merge.  Irregular merges: the whole-token rule, then merge_small up to
    MID_MAX bytes, the atoms, the rank merge beyond.  (The atoms hold for any
    merges merged by lowest rank: a character's bytes merge among themselves
    alone unless a token holds part of it, which the fragments block.)"""
    cdef int err
    cdef int32_t ids[MID_MAX]
    cdef int32_t length = 0, tok
    cdef Py_ssize_t cnt
    cdef bint ascii = n <= ATOM_BYTES and is_ascii(s, n)
    if (ascii or T.irregular) and n <= MID_MAX:
        longest_whole(T, s, n, &length, &tok)
        if tok >= 0:
            return ivec_push(out, tok)
        cnt = merge_small(T, s, n, ids)
        return ivec_extend(out, ids, cnt)
    if T.atoms != NULL and n <= ATOM_BYTES and not ascii:   # (long_token: not ASCII)
        err = encode_atoms(T, s, n, h, out)
        if err != 0:
            return -1 if err < 0 else 0
    if T.irregular:   # the whole-token rule, then merge by rank
        longest_whole(T, s, n, &length, &tok)
        if tok >= 0:
            return ivec_push(out, tok)
        return -1 if rank_merge(T, s, n, out, sc) < 0 else 0
    err = backtrack(T, s, n, out, sc, True)
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
    """A pre-token of more than FS_MAX bytes: through the cache of longer
    results, which then keeps its ids."""
    cdef const CSlot *e
    cdef Py_ssize_t start = out.len
    cdef uint64_t h = 0
    if n <= CACHE_MAX_BYTES or n <= ATOM_BYTES:   # (the cache's key; encode_atoms')
        h = piece_hash(s, n)
    if n <= CACHE_MAX_BYTES:
        e = pcache_get(cache, s, n, h)
        if e != NULL:
            STAT(4, 1)
            return append_cached(cache, e, out)
    if encode_new(T, s, n, h, out, sc) < 0:
        return -1
    if n <= CACHE_MAX_BYTES:
        return pcache_put(cache, s, n, h, out.data + start, out.len - start)
    return 0


cdef struct O200kScan:
    char unused
cdef struct Cl100kScan:   # cl100k's pattern or a variant of it (is_cl)
    int which
cdef struct Gpt2Scan:
    char unused
cdef struct WordsScan:
    char unused

ctypedef fused scanner_t:
    O200kScan
    Cl100kScan
    Gpt2Scan
    WordsScan
    pn_state


cdef inline Py_ssize_t next_end(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, scanner_t *which) noexcept nogil:
    if scanner_t is O200kScan:
        return next_o200k(s, i, n)
    elif scanner_t is Cl100kScan:
        return next_cl100k(s, i, n, which.which)
    elif scanner_t is Gpt2Scan:
        return next_gpt2(s, i, n)
    elif scanner_t is pn_state:
        return pat_next(which, i)
    else:
        return next_words(s, i, n)


# ---- the flat table and the scan-and-encode loop ---------------------------

cdef enum: FS_MAX = 15
cdef enum: MID_MAX = 48   # ASCII pre-tokens up to this long, first seen, take merge_small
cdef enum: FS_LONG = 255
cdef enum: FCHUNK = 64   # spans scanned, keyed and prefetched before their probes
cdef enum: GRID_BITS = 10
cdef enum: GRID = 1 << GRID_BITS   # pairs of core numbers below: a dense table (4 MB)
cdef enum: FS_PENDING = 254   # a slot whose pre-token is being merged (ids[0]: its item)
cdef enum: MAXPEND = 128
cdef enum: FS_OVF = 0x100
cdef uint64_t FS_DEAD = <uint64_t> 0xFF << 56   # a k1 no key has (a length of 255)

cdef uint64_t FS_LO[16]   # k0's mask for a length: the first min(n, 8) bytes
cdef uint64_t FS_HI[16]   # k1's: bytes 8 to n - 1
for _n in range(16):
    FS_LO[_n] = 0xFFFFFFFFFFFFFFFFULL if _n >= 8 else ((<uint64_t> 1 << (8 * _n)) - 1)
    FS_HI[_n] = 0 if _n <= 8 else ((<uint64_t> 1 << (8 * (_n - 8))) - 1)


cdef inline void fs_key(const uint8_t *s, Py_ssize_t m, bint wide, uint64_t *k0,
                        uint64_t *k1) noexcept nogil:
    """The key of s[:m] (1 <= m <= FS_MAX); wide: s[:16] is readable."""
    cdef uint64_t w0 = 0, w1 = 0
    if wide:
        memcpy(&w0, s, 8)
        memcpy(&w1, s + 8, 8)
    elif m > 8:
        memcpy(&w0, s, 8)
        memcpy(&w1, s + 8, m - 8)
    else:
        memcpy(&w0, s, m)
    k0[0] = le64(w0) & FS_LO[m]
    k1[0] = (le64(w1) & FS_HI[m]) | (<uint64_t> m << 56)


cdef inline Py_ssize_t fs_home(uint64_t k0, uint64_t k1, int shift) noexcept nogil:
    """The home slot: the first of a pair of slots (a cache line)."""
    return <Py_ssize_t> ((((k0 ^ (k1 * 0xC2B2AE3D27D4EB4FULL)) * 0x9E3779B97F4A7C15ULL) >> shift)
                         & ~(<uint64_t> 1))


cdef inline uint32_t pair_rank(const CoreT *T, uint32_t a, uint32_t b) noexcept nogil:
    """The core number that merges a and b (its rank order), or 0xFFFFFFFF."""
    cdef uint64_t x
    if (a | b) < GRID:
        return T.pair1[(a << GRID_BITS) | b]
    if T.pairs != NULL:   # straight to the table: one cache line, no filter word first
        x = narrow_slot(T, narrow_key(<int32_t> a, <int32_t> b))[0]
        return <uint32_t> (x & LOW21) if x != 0 else 0xFFFFFFFF
    return <uint32_t> pair_get(T, <int32_t> a, <int32_t> b)


cdef inline void pair_prefetch(const CoreT *T, uint32_t a, uint32_t b) noexcept nogil:
    """Ask for the line pair_rank(T, a, b) will read (a select, not a branch)."""
    cdef const void *g = &T.pair1[((a << GRID_BITS) | b) & (GRID * GRID - 1)]
    cdef const void *w = g
    if T.pairs != NULL:
        w = T.pairs + 8 * narrow_home(T, narrow_key(<int32_t> a, <int32_t> b))
    prefetch(g if (a | b) < GRID else w)


cdef inline Py_ssize_t merge_small(const CoreT *T, const uint8_t *s, Py_ssize_t n,
                                   int32_t *ids) noexcept nogil:
    """The ids of s[:n] (2 <= n <= MID_MAX) by merging the lowest-ranked
    adjacent pair first (merge_syms over its bytes).  Returns the count."""
    cdef uint32_t sym[MID_MAX]
    cdef Py_ssize_t m, i
    for i in range(n):
        sym[i] = s[i]
    m = merge_syms(T, sym, n)
    for i in range(m):
        ids[i] = T.t_id[sym[i]]
    return m


cdef int flat_reset(const CoreT *T, PCache *c) noexcept nogil:
    """The cache's flat table back to the template (at its first use, and when full)."""
    STAT(15, 1)
    memcpy(c.flat, T.flat, (<size_t> 1 << T.flat_bits) * sizeof(FSlot))
    c.flat_count = T.flat_seeded
    c.flat_ids_len = 0
    return 0


cdef inline int fs_emit(const PCache *c, const FSlot *e, IVec *out) noexcept nogil:
    cdef Py_ssize_t k
    cdef uint32_t cnt = e.n & 0xFF
    if cnt <= 3:
        if ivec_reserve(out, out.len + 3) < 0:
            return -1
        for k in range(3):
            out.data[out.len + k] = e.ids[k]
        out.len += cnt
        return 0
    k = e.ids[1]
    if ivec_reserve(out, out.len + k) < 0:
        return -1
    memcpy(out.data + out.len, c.flat_ids + e.ids[0], k * sizeof(int32_t))
    out.len += k
    return 0


cdef extern from *:
    """
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
    """
    int argmin16 "bpe_argmin16"(const uint32_t *r, uint32_t *v) noexcept nogil


cdef struct MissItem:
    uint32_t sym[32]  # the symbols so far (core numbers); 16 used, the rest lets a
                      # merge's shift be one move of a fixed size (no call)
    uint32_t rk[32]   # rk[i]: the rank of the pair (sym[i], sym[i + 1]), 0xFFFFFFFF: none
                      # (so from m - 1 on: argmin16 reads the first 16)
    int32_t m         # symbols left
    int32_t j         # where the last merge was (its two new pairs to be read), -1: none
    int32_t n         # the pre-token's length
    int32_t src       # >= 0: the same pre-token as that earlier item (nothing to merge)
    uint64_t k0       # its key
    uint64_t k1
    Py_ssize_t pos    # its place in the output (n ids reserved)
    Py_ssize_t slot   # its pending slot in the flat table (-1: none)


cdef void merge_batch(const CoreT *T, MissItem *items, Py_ssize_t cnt) noexcept nogil:
    """merge_small on several pre-tokens in turn, a step of each at a time:
    each round first reads the new pairs of every pre-token in one tight loop
    (independent loads, so their waits for memory overlap), then takes each
    one's next merge (argmin16 over its ranks: those past its last pair are
    none)."""
    cdef Py_ssize_t active[MAXPEND]
    cdef Py_ssize_t na = 0, k, w, j, m
    cdef MissItem *t
    cdef uint32_t best
    cdef uint32_t tmp[14]
    for k in range(cnt):
        if items[k].src < 0:
            active[na] = k
            na += 1
    while na > 0:
        # the pairs around each pre-token's last merge: independent loads, in one tight loop
        for k in range(na):
            t = &items[active[k]]
            j = t.j
            if j >= 0:
                if j + 1 < t.m:
                    t.rk[j] = pair_rank(T, t.sym[j], t.sym[j + 1])
                if j > 0:
                    t.rk[j - 1] = pair_rank(T, t.sym[j - 1], t.sym[j])
        w = 0
        for k in range(na):
            t = &items[active[k]]
            j = argmin16(t.rk, &best)
            if best == 0xFFFFFFFFU:
                continue
            m = t.m
            STAT(8, 1)
            t.sym[j] = best if T.canon == NULL else <uint32_t> T.canon[best]
            memcpy(tmp, &t.sym[j + 2], sizeof(tmp))   # through a copy: inlined moves
            memcpy(&t.sym[j + 1], tmp, sizeof(tmp))
            memcpy(tmp, &t.rk[j + 2], sizeof(tmp))
            memcpy(&t.rk[j + 1], tmp, sizeof(tmp))
            t.rk[j] = 0xFFFFFFFFU   # (read again in the next round if a pair is there)
            m -= 1
            t.m = <int32_t> m
            t.j = <int32_t> j
            if j + 1 < m:   # the two new pairs, read in the next round
                pair_prefetch(T, t.sym[j], t.sym[j + 1])
            if j > 0:
                pair_prefetch(T, t.sym[j - 1], t.sym[j])
            active[w] = active[k]
            w += 1
        na = w


cdef int flat_fill(PCache *c, FSlot *e, uint64_t k0, uint64_t k1, const int32_t *ids,
                   Py_ssize_t cnt) noexcept nogil:
    """Write a pre-token's ids into slot e: a free one (0: written, -1: not),
    or its own pending one, which is marked dead (a key no pre-token has)
    where the ids cannot be kept."""
    cdef Py_ssize_t k
    cdef int32_t *p
    if cnt > 3:
        if c.flat_ids_len + cnt > c.flat_ids_cap:
            k = 2 * c.flat_ids_cap + 256 if c.flat_ids_cap else 4096
            p = <int32_t *> realloc(c.flat_ids, k * sizeof(int32_t))
            if p == NULL:
                if e.k1 != 0:
                    e.k0 = 0
                    e.k1 = FS_DEAD
                    e.n &= FS_OVF
                return -1
            c.flat_ids = p
            c.flat_ids_cap = k
        memcpy(c.flat_ids + c.flat_ids_len, ids, cnt * sizeof(int32_t))
        e.ids[0] = <int32_t> c.flat_ids_len
        e.ids[1] = <int32_t> cnt
        e.ids[2] = 0
        e.n = (e.n & FS_OVF) | FS_LONG
        c.flat_ids_len += cnt
    else:
        for k in range(3):
            e.ids[k] = ids[k] if k < cnt else 0
        e.n = (e.n & FS_OVF) | <uint32_t> cnt
    e.k0 = k0
    e.k1 = k1
    return 0


cdef int flat_add(const CoreT *T, PCache *c, uint64_t k0, uint64_t k1, const int32_t *ids,
                  Py_ssize_t cnt) noexcept nogil:
    """Remember a pre-token's ids (unless the table has it)."""
    cdef Py_ssize_t mask = (<Py_ssize_t> 1 << T.flat_bits) - 1, h, home
    cdef FSlot *e
    if c.flat_count >= c.flat_limit:
        flat_reset(T, c)
    home = fs_home(k0, k1, 64 - T.flat_bits)
    h = home
    e = &c.flat[h]
    while e.k1 != 0:
        if e.k0 == k0 and e.k1 == k1:
            if (e.n & 0xFF) == FS_PENDING:
                flat_fill(c, e, k0, k1, ids, cnt)   # counted when it was marked
            return 0
        h = (h + 1) & mask
        e = &c.flat[h]
    if (h ^ home) > 1:
        c.flat[home].n |= FS_OVF
    if flat_fill(c, e, k0, k1, ids, cnt) == 0:
        c.flat_count += 1
    return 0


cdef inline const FSlot *flat_find(const CoreT *T, const PCache *c, uint64_t k0, uint64_t k1,
                                   Py_ssize_t h) noexcept nogil:
    """The slot holding the key, along the probe sequence from h; NULL: none."""
    cdef Py_ssize_t mask = (<Py_ssize_t> 1 << T.flat_bits) - 1
    cdef const FSlot *e = &c.flat[h]
    while e.k1 != 0:
        if e.k0 == k0 and e.k1 == k1:
            return e
        h = (h + 1) & mask
        e = &c.flat[h]
    return NULL


cdef int piece_flat(const CoreT *T, const uint8_t *s, Py_ssize_t n, PCache *cache,
                    IVec *out, Scratch *sc) noexcept nogil:
    """Append the ids of one pre-token (a custom pattern's, one at a time)."""
    cdef uint64_t k0, k1
    cdef const FSlot *e
    cdef int32_t ids[16]
    cdef Py_ssize_t cnt
    if n == 0:
        return 0  # a custom pattern may match the empty string: no ids
    if n > FS_MAX:
        return piece_long(T, s, n, cache, out, sc)
    fs_key(s, n, False, &k0, &k1)
    e = flat_find(T, cache, k0, k1, fs_home(k0, k1, 64 - T.flat_bits))
    if e != NULL:
        return fs_emit(cache, e, out)
    STAT(2, 1)
    cnt = merge_small(T, s, n, ids)
    if ivec_extend(out, ids, cnt) < 0:
        return -1
    return flat_add(T, cache, k0, k1, ids, cnt)


cdef void misses_done(const CoreT *T, PCache *c, MissItem *items, Py_ssize_t cnt,
                      IVec *out) noexcept nogil:
    """Merge the pending new pre-tokens, put their ids in the places kept for
    them (closing the gaps), and remember them."""
    cdef Py_ssize_t k, i, dst, seg, end
    cdef MissItem *t
    cdef MissItem *u
    cdef FSlot *e
    cdef int32_t ids[16]
    merge_batch(T, items, cnt)
    dst = items[0].pos
    for k in range(cnt):
        t = &items[k]
        u = &items[t.src] if t.src >= 0 else t
        for i in range(u.m):
            ids[i] = T.t_id[u.sym[i]]
        memcpy(out.data + dst, ids, u.m * sizeof(int32_t))
        dst += u.m
        seg = t.pos + t.n
        end = items[k + 1].pos if k + 1 < cnt else out.len
        if end > seg:
            memmove(out.data + dst, out.data + seg, (end - seg) * sizeof(int32_t))
            dst += end - seg
        if t.src < 0:   # its slot, unless the table was reset since
            e = &c.flat[t.slot] if t.slot >= 0 else NULL
            if e != NULL and e.k0 == t.k0 and e.k1 == t.k1 and (e.n & 0xFF) == FS_PENDING:
                flat_fill(c, e, t.k0, t.k1, ids, u.m)
            else:
                flat_add(T, c, t.k0, t.k1, ids, u.m)
    out.len = dst


cdef inline void miss_start(const CoreT *T, PCache *c, MissItem *t, Py_ssize_t index,
                            const uint8_t *s, Py_ssize_t m, uint64_t k0, uint64_t k1,
                            Py_ssize_t h, IVec *out) noexcept nogil:
    """A new pre-token (2..FS_MAX bytes: every byte is a token) waits as item
    `index`, with m ids' room kept in the output and a marker in the table."""
    cdef Py_ssize_t k, mask = (<Py_ssize_t> 1 << T.flat_bits) - 1, home = h
    cdef FSlot *e
    t.n = <int32_t> m
    t.m = <int32_t> m
    t.j = -1
    t.src = -1
    t.k0 = k0
    t.k1 = k1
    t.pos = out.len
    t.slot = -1
    out.len += m
    memset(t.rk, 0xFF, sizeof(t.rk))
    if T.atoms != NULL and ((k0 | k1) & 0x8080808080808080ULL):   # from its atoms
        t.m = <int32_t> atomize(T.atoms, s, m, t.sym, FS_MAX)
        for k in range(t.m - 1):
            t.rk[k] = pair_rank_filtered(T, t.sym[k], t.sym[k + 1])
    else:
        for k in range(m):
            t.sym[k] = s[k]
        for k in range(m - 1):
            t.rk[k] = T.pair1[(<uint32_t> s[k] << GRID_BITS) | s[k + 1]]
    if c.flat_count < c.flat_limit:
        e = &c.flat[h]
        while e.k1 != 0:
            h = (h + 1) & mask
            e = &c.flat[h]
        if (h ^ home) > 1:
            c.flat[home].n |= FS_OVF
        e.k0 = k0
        e.k1 = k1
        e.n = (e.n & FS_OVF) | FS_PENDING
        t.slot = h
        e.ids[0] = <int32_t> index
        c.flat_count += 1


cdef int scan_flat(const CoreT *T, const uint8_t *s, Py_ssize_t n, PCache *cache, IVec *out,
                   Py_ssize_t limit, Py_ssize_t *cut, scanner_t *which) noexcept nogil:
    """Pre-tokenize UTF-8 with one named pattern and encode every pre-token
    that ends at or before byte `limit` (*cut: where the last one ends), a
    chunk of spans at a time: scan, then keys, homes and prefetches, then
    the probes.  A compiled pattern that spends its budget: -3."""
    cdef Py_ssize_t i = 0, e, m, j, cnt, a, h
    cdef Py_ssize_t ends[FCHUNK + 1]
    cdef uint64_t key0[FCHUNK]
    cdef uint64_t key1[FCHUNK]
    cdef Py_ssize_t home[FCHUNK]
    cdef MissItem items[MAXPEND]
    cdef MissItem *t
    cdef Py_ssize_t nmiss = 0
    cdef const FSlot *x
    cdef FSlot *flat = cache.flat
    cdef int shift = 64 - T.flat_bits
    cdef Scratch sc
    cdef int err = 0
    cdef bint more = True, overrun = False
    cdef int32_t *o
    cdef bs_iter bit
    bs_start(&bit)
    memset(&sc, 0, sizeof(Scratch))
    sc.memo = cache.memo
    cut[0] = 0
    if ivec_reserve(out, (n if n < limit else limit) // 4 + 64) < 0:
        return -1
    while more and i < n:
        ends[0] = i
        cnt = 0
        while cnt < FCHUNK and i < n:
            if scanner_t is O200kScan:
                e = bs_next(&bit, s, i, n, P_O200K)
            elif scanner_t is Cl100kScan:
                e = bs_next(&bit, s, i, n, which.which)
            else:
                e = next_end(s, i, n, which)
                if scanner_t is pn_state:
                    if e < 0:
                        overrun = True
                        more = False
                        break
            if e > limit:
                more = False  # [i, e) is left for later: *cut = i
                break
            m = e - i
            if m <= FS_MAX:   # its slot is asked for now, read a chunk later
                fs_key(s + i, m, i + 16 <= n, &key0[cnt], &key1[cnt])
                h = fs_home(key0[cnt], key1[cnt], shift)
                home[cnt] = h
                prefetch(&flat[h])
            else:
                home[cnt] = -1
            cnt += 1
            ends[cnt] = e
            i = e
        if ivec_reserve(out, out.len + (ends[cnt] - ends[0]) + 3) < 0:
            err = -1
            break
        for j in range(cnt):
            h = home[j]
            if h >= 0:
                x = &flat[h]
                if x.k0 != key0[j] or x.k1 != key1[j]:
                    x += 1   # the other slot of the line
                if x.k0 == key0[j] and x.k1 == key1[j]:
                    if (x.n & 0xFF) <= 3:
                        STAT(0, 1)
                        o = out.data + out.len
                        o[0] = x.ids[0]
                        o[1] = x.ids[1]
                        o[2] = x.ids[2]
                        out.len += x.n & 0xFF
                        continue
                elif flat[h].n & FS_OVF:
                    x = flat_find(T, cache, key0[j], key1[j], h)
                else:
                    x = NULL   # not in its line, and no key of its line beyond: new
                if x != NULL and (x.n & 0xFF) != FS_PENDING:
                    STAT(1, 1)
                    if fs_emit(cache, x, out) < 0:
                        err = -1
                else:   # new: merged later, with other new ones
                    if nmiss == MAXPEND:
                        misses_done(T, cache, items, nmiss, out)
                        nmiss = 0
                        x = flat_find(T, cache, key0[j], key1[j], h)
                        if x != NULL:
                            if fs_emit(cache, x, out) < 0:
                                err = -1
                            x = NULL
                            if err:
                                more = False
                                i = ends[j]
                                break
                            continue
                    m = ends[j + 1] - ends[j]
                    t = &items[nmiss]
                    if x != NULL:   # the same as a waiting one
                        STAT(3, 1)
                        t.src = x.ids[0]
                        t.n = <int32_t> m
                        t.pos = out.len
                        out.len += m
                    else:
                        STAT(2, 1)
                        miss_start(T, cache, t, nmiss, s + ends[j], m, key0[j], key1[j], h, out)
                    nmiss += 1
            elif piece_long(T, s + ends[j], ends[j + 1] - ends[j], cache, out, &sc) < 0:
                err = -1
            if err:
                more = False
                i = ends[j]
                break
    if nmiss:   # also after an error: no marker may stay in the table
        misses_done(T, cache, items, nmiss, out)
    cut[0] = i
    scratch_free(&sc)
    return -3 if overrun and err == 0 else err


cdef inline void flat_seed(CoreT *T, const uint8_t *s, Py_ssize_t m, int32_t id) noexcept nogil:
    cdef uint64_t k0, k1
    cdef Py_ssize_t h, home, mask = (<Py_ssize_t> 1 << T.flat_bits) - 1
    cdef FSlot *e
    fs_key(s, m, False, &k0, &k1)
    home = fs_home(k0, k1, 64 - T.flat_bits)
    h = home
    while T.flat[h].k1 != 0:
        if T.flat[h].k0 == k0 and T.flat[h].k1 == k1:
            return   # the same bytes twice: the first (the trie's) stays
        h = (h + 1) & mask
    if (h ^ home) > 1:
        T.flat[home].n |= FS_OVF
    e = &T.flat[h]
    e.k0 = k0
    e.k1 = k1
    e.ids[0] = id
    e.n = (e.n & FS_OVF) | 1
    T.flat_seeded += 1


cdef int build_flat(CoreT *T, const uint8_t *dec_buf, const int64_t *dec_off,
                    const int32_t *dec_len, Py_ssize_t n_ids, const uint8_t *skip) noexcept nogil:
    """The template of the flat table: every token of up to FS_MAX bytes, in
    id order (for tiktoken's files and trained ones alike the more frequent
    tokens first, so that those sit in their home slots), from the decoder's
    tables (dec_buf: ids whose skip[id] is set are not tokens), or else from
    the trie; and the dense table of the pairs of small core numbers."""
    cdef Py_ssize_t k, count = 0, cap, r
    cdef int32_t node, parent
    cdef int depth, bits
    cdef uint8_t buf[16]
    cdef uint32_t a, b
    cdef uint64_t k0, k1
    cdef Py_ssize_t t
    cdef int32_t *node_of = NULL
    free(T.pair1)
    T.pair1 = <uint32_t *> big_alloc(GRID * GRID * sizeof(uint32_t), 0)   # 2 MB pages
    if T.pair1 == NULL:
        return -1
    memset(T.pair1, 0xFF, GRID * GRID * sizeof(uint32_t))
    for t in range(256, T.n_core):   # as pair_put: the earliest merge of a pair, if it fires
        a = <uint32_t> T.tok[t].left
        b = <uint32_t> T.tok[t].right
        if (a | b) < GRID and T.pair1[(a << GRID_BITS) | b] == 0xFFFFFFFFU:
            T.pair1[(a << GRID_BITS) | b] = <uint32_t> t
    if dec_buf != NULL:
        for k in range(n_ids):
            if 0 < dec_len[k] <= FS_MAX and not skip[k]:
                count += 1
    else:
        for k in range(1, T.da_len):
            if T.da[k].check >= 0 and T.leaf[k].id >= 0:
                count += 1
    bits = 12
    while (<Py_ssize_t> 1 << bits) < 2 * count + 65536:
        bits += 1
    cap = <Py_ssize_t> 1 << bits
    T.flat = <FSlot *> big_alloc(cap * sizeof(FSlot), 1)
    if T.flat == NULL:
        return -1
    T.flat_bits = bits
    T.flat_limit = (cap * 3) // 4
    T.flat_seeded = 0
    if dec_buf != NULL:
        for k in range(n_ids):
            if k + 16 < n_ids and 0 < dec_len[k + 16] <= FS_MAX:   # its home slot, early
                fs_key(dec_buf + dec_off[k + 16], dec_len[k + 16], False, &k0, &k1)
                prefetch(&T.flat[fs_home(k0, k1, 64 - bits)])
            if 0 < dec_len[k] <= FS_MAX and not skip[k]:
                flat_seed(T, dec_buf + dec_off[k], dec_len[k], <int32_t> k)
        return 0
    # from the trie: the nodes where a token ends, by id, and each one's bytes
    # from the node up to the root
    r = 0   # 1 + the largest id
    for k in range(1, T.da_len):
        if T.da[k].check >= 0 and <Py_ssize_t> T.leaf[k].id >= r:
            r = <Py_ssize_t> T.leaf[k].id + 1
    node_of = <int32_t *> malloc((r + 1) * sizeof(int32_t)) if r < 8 * count + (1 << 20) else NULL
    if node_of != NULL:
        memset(node_of, 0xFF, (r + 1) * sizeof(int32_t))
        for k in range(1, T.da_len):
            if T.da[k].check >= 0 and T.leaf[k].id >= 0 and node_of[T.leaf[k].id] < 0:
                node_of[T.leaf[k].id] = <int32_t> k
    for r in range(r if node_of != NULL else T.da_len):
        k = node_of[r] if node_of != NULL else r
        if k <= 0 or T.da[k].check < 0 or T.leaf[k].id < 0:
            continue
        node = <int32_t> k
        depth = 0
        while node != 0 and depth <= FS_MAX:
            parent = T.da[node].check
            buf[15 - depth] = <uint8_t> (node - (T.da[parent].base & DA_BASE))
            node = parent
            depth += 1
        if node == 0 and depth <= FS_MAX:
            flat_seed(T, buf + 16 - depth, depth, T.leaf[k].id)
    free(node_of)
    return 0


cdef int scan_text(const CoreT *T, const uint8_t *s, Py_ssize_t n, PCache *cache,
                   IVec *out, Py_ssize_t limit, Py_ssize_t *cut) noexcept nogil:
    """Pre-tokenize UTF-8 natively and encode every pre-token that ends at or
    before byte `limit` (*cut: where the last one ends); -3: a compiled
    pattern spent its budget (the caller splits with the regex instead)."""
    cdef pn_state st
    cdef Cl100kScan cl
    if T.which == P_PAT:
        pn_init(&st, T.pat, s, n)
        return scan_flat(T, s, n, cache, out, limit, cut, &st)
    if T.which == P_O200K:
        return scan_flat(T, s, n, cache, out, limit, cut, <O200kScan *> NULL)
    if is_cl(T.which):
        cl.which = T.which
        return scan_flat(T, s, n, cache, out, limit, cut, &cl)
    if T.which == P_GPT2:
        return scan_flat(T, s, n, cache, out, limit, cut, <Gpt2Scan *> NULL)
    return scan_flat(T, s, n, cache, out, limit, cut, <WordsScan *> NULL)


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
