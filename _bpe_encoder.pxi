# The encoder's core: the tables it reads (CoreT: trie, pair table, the flat
# table's template, the atoms' types) and the ways one pre-token is encoded
# (backtracking over the trie, merge by rank with a heap).  The subsystems
# around it, each in a file of its own: the per-thread pre-token cache
# (_bpe_cache.pxi), the atoms (_bpe_atoms.pxi), the flat table and the
# scan-and-encode loop over a whole text, which picks the way for a
# first-seen long pre-token (_bpe_scan.pxi); the tables are built in
# _bpe_tables.pxi.
# Needs: EMPTY_KEY, IVec, ivec_free, ivec_push, ivec_reserve, STAT
# (_bpe_common.pxi); pn_pat (_bpe_pattern.pxi); FSlot, MEMO_BITS
# (_bpe_cache.pxi).

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


# ---- the core ---------------------------------------------------------------

# CoreT.pair1's grid (read by pair_rank and pair_rank_filtered)
cdef enum: GRID_BITS = 10
cdef enum: GRID = 1 << GRID_BITS   # pairs of core numbers below: a dense table (4 MB)

# The atoms' tables (CoreT.atoms; built by build_atoms, used in _bpe_atoms.pxi)
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
