# Training: the compiled merge loop (Core.learn_merges = _learn_merges, at the
# end, in the steps bpe_fallback's loop has too: load_words, next_pair,
# apply_merge).  Below: the trainer's arrays, the heap of pairs, the pair index
# and the positions of each pair, then the two passes that load the words.
# Needs: bytes_reserve, IVec, ivec_free, ivec_push, mix64, PyErr_CheckSignals,
# release_memory, resize (_bpe_common.pxi); _Counter, CEntry
# (_bpe_counter.pxi).  The counter's entries are read without a Python object
# per pre-token.
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
    bint by_id          # ties: the smallest pair of ids (rustbpe's), else the greatest bytes


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
    """True if u is chosen before v: more count, then the greater bytes (or
    with by_id the smaller ids)."""
    cdef int r
    if u.count != v.count:
        return u.count > v.count
    if t.by_id:
        if t.ab[u.pair].a != t.ab[v.pair].a:
            return t.ab[u.pair].a < t.ab[v.pair].a
        return t.ab[u.pair].b < t.ab[v.pair].b
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
    free(t.sym)
    free(t.start)
    free(t.gend)
    free(t.gcnt)
    free(t.slots)
    free(t.ab)
    if t.occ != NULL:
        for i in range(t.npairs):
            occ_free(&t.occ[i])
    free(t.occ)
    free(t.pcount)
    free(t.stamp)
    free(t.tbuf)
    free(t.toff)
    free(t.tlen)
    free(t.heap)
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

cdef struct CountGroup:
    int64_t count
    int64_t n           # symbols of that count, then where the next one goes

cdef struct Loader:
    # where the next pre-token of each count goes: small counts by index,
    # the others (sorted, distinct) by binary search
    int64_t *small      # [SMALL_COUNT]
    CountGroup *big     # (count, symbols), then (count, cursor) once grouped
    Py_ssize_t nbig
    Py_ssize_t bigcap
    int32_t *bpocc      # [65536] occurrences of each pair of bytes

cdef int loader_note(Loader *L, const uint8_t *w, Py_ssize_t n, int64_t c) noexcept nogil:
    """First pass: a pre-token of n >= 2 bytes and count c > 0."""
    cdef Py_ssize_t i
    cdef CountGroup *p
    for i in range(n - 1):
        L.bpocc[(<int32_t> w[i] << 8) | w[i + 1]] += 1
    if c < SMALL_COUNT:
        L.small[c] += n
        return 0
    if L.nbig == L.bigcap:
        L.bigcap = L.bigcap * 2 if L.bigcap else 256
        p = <CountGroup *> realloc(L.big, L.bigcap * sizeof(CountGroup))
        if p == NULL:
            return -1
        L.big = p
    L.big[L.nbig].count = c
    L.big[L.nbig].n = n
    L.nbig += 1
    return 0

cdef int cmp_int64_first(const void *x, const void *y) noexcept nogil:
    cdef int64_t a = (<const int64_t *> x)[0], b = (<const int64_t *> y)[0]
    return (a > b) - (a < b)

cdef int loader_group(Loader *L, Trainer *t) noexcept nogil:
    """Lay out the count groups: small counts ascending, then the big ones."""
    cdef Py_ssize_t i, k = 0, g = 0
    cdef int64_t pos = 0, n
    qsort(L.big, L.nbig, sizeof(CountGroup), cmp_int64_first)
    for i in range(L.nbig):       # merge equal counts: (count, symbols) distinct
        if k > 0 and L.big[k - 1].count == L.big[i].count:
            L.big[k - 1].n += L.big[i].n
        else:
            L.big[k] = L.big[i]
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
        n = L.big[i].n
        L.big[i].n = pos
        pos += n
        t.gend[g] = pos
        t.gcnt[g] = L.big[i].count
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
            if L.big[mid].count < c:
                lo = mid + 1
            else:
                hi = mid
        cur = &L.big[lo].n
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

cdef struct WordTotals:
    # what the first pass over the pre-tokens finds
    Py_ssize_t symbols    # bytes of the pre-tokens that can merge (2 bytes or more, count > 0)
    Py_ssize_t words      # how many such pre-tokens
    int64_t pairs         # their pairs of bytes, weighted by count (checked for overflow)
    int64_t max_count     # bpe_fallback.MAX_COUNT


cdef int note_word(Loader *L, WordTotals *w, const uint8_t *s, Py_ssize_t n, int64_t c) except -1:
    """First pass, one pre-token: the totals, and where its count group goes."""
    if c > w.max_count or c > (w.max_count - w.pairs) // (n - 1):
        raise ValueError(_py.COUNT_OVERFLOW)
    w.pairs += c * (n - 1)
    w.symbols += n
    w.words += 1
    if loader_note(L, s, n, c) < 0:
        raise MemoryError()
    return 0


cdef int note_words(Loader *L, WordTotals *w, counts, _Counter counter) except -1:
    """First pass over the pre-tokens (a _Counter, or a dict bytes -> count)."""
    cdef Py_ssize_t i
    cdef CEntry *e
    if counter is not None:
        for i in range(counter.n):
            e = &counter.ents[i]
            if e.key_len >= 2 and e.count > 0:
                note_word(L, w, counter.keys + e.key_off, e.key_len, e.count)
        return 0
    for word, count in counts.items():
        if type(word) is not bytes:
            raise TypeError(f"pre-tokens must be bytes, not {type(word).__name__}")
        if len(word) >= 2 and count > 0:
            if count > _py.MAX_COUNT:
                raise ValueError(_py.COUNT_OVERFLOW)
            note_word(L, w, <const uint8_t *> PyBytes_AS_STRING(word), len(word), count)
    return 0


cdef int trainer_init(Trainer *t, Loader *L, Py_ssize_t total, Py_ssize_t n_merges) except -1:
    """The trainer's arrays for `total` symbols and up to `n_merges` merges;
    the 256 byte tokens."""
    cdef Py_ssize_t i
    t.sym = <int32_t *> malloc((total + 1) * sizeof(int32_t))
    t.start = <uint64_t *> calloc((total >> 6) + 1, sizeof(uint64_t))
    t.tbuf_cap = 1 << 16
    t.tbuf = <uint8_t *> malloc(t.tbuf_cap)
    t.toff = <int64_t *> malloc((256 + n_merges + 1) * sizeof(int64_t))
    t.tlen = <int32_t *> malloc((256 + n_merges + 1) * sizeof(int32_t))
    if (t.sym == NULL or t.start == NULL or t.tbuf == NULL or t.toff == NULL or t.tlen == NULL
            or index_grow(t) < 0 or loader_group(L, t) < 0):
        raise MemoryError()
    t.start[total >> 6] |= (<uint64_t> 1) << (total & 63)
    for i in range(256):
        t.tbuf[i] = <uint8_t> i
        t.toff[i] = i
        t.tlen[i] = 1
    t.tbuf_len = 256
    t.ntok = 256
    return 0


cdef int place_words(Trainer *t, Loader *L, counts, _Counter counter, bint consume) except -1:
    """Second pass: every pre-token's symbols in place, its pairs counted
    (without the GIL for a _Counter); with `consume`, `counts` is emptied."""
    cdef Py_ssize_t i, n
    cdef CEntry *e
    cdef int err = 0
    if counter is not None:
        with nogil:
            for i in range(counter.n):
                e = &counter.ents[i]
                if e.key_len >= 2 and e.count > 0:
                    if load_word(t, L, counter.keys + e.key_off, e.key_len, e.count) < 0:
                        err = -1
                        break
        if err < 0:
            raise MemoryError()
        if consume:
            counter.clear()
            release_memory()
        return 0
    for word, count in counts.items():
        n = PyBytes_GET_SIZE(word)
        if n >= 2 and count > 0:
            if load_word(t, L, <const uint8_t *> PyBytes_AS_STRING(word), n, count) < 0:
                raise MemoryError()
    if consume:
        counts.clear()  # the caller's private dict; its objects are not needed any more
    return 0


cdef Py_ssize_t load_words(Trainer *t, counts, Py_ssize_t n_merges, int64_t limit,
                           bint consume, progress) except -1:
    """Pre-token counts -> the symbol arrays, the initial pair counts and the
    queue of pairs.  Returns how many merges can happen at most."""
    cdef Loader L
    cdef WordTotals w
    cdef _Counter counter = counts if isinstance(counts, _Counter) else None
    cdef Py_ssize_t i, distinct = counter.n if counter is not None else len(counts)
    memset(&L, 0, sizeof(Loader))
    memset(&w, 0, sizeof(WordTotals))
    w.max_count = _py.MAX_COUNT
    try:
        L.small = <int64_t *> calloc(SMALL_COUNT, sizeof(int64_t))
        L.bpocc = <int32_t *> calloc(65536, sizeof(int32_t))
        if L.small == NULL or L.bpocc == NULL:
            raise MemoryError()
        note_words(&L, &w, counts, counter)
        if w.symbols >= 0x7FFFFFF0:
            raise MemoryError("more than 2**31 symbols in distinct pre-tokens")
        # each merge takes at least one symbol out of a distinct pre-token: never
        # size anything by the requested number alone
        n_merges = min(n_merges, w.symbols - w.words)
        if progress is not None:
            progress("pretokens", distinct, distinct)
        trainer_init(t, &L, w.symbols, n_merges)
        place_words(t, &L, counts, counter, consume)
    finally:
        free(L.small)
        free(L.big)
        free(L.bpocc)
    if limit >= 2:
        for i in range(t.npairs):
            if heap_push(t, t.pcount[i], <int32_t> i) < 0:
                raise MemoryError()
    return n_merges


cdef int32_t next_pair(Trainer *t, int64_t min_frequency) noexcept nogil:
    """Pop the most frequent pair (ties: the smaller tokens' bytes) whose
    count in the queue is current; -1: none left at min_frequency or more;
    -2: no memory.  (max_token_bytes: such pairs never enter the queue.)"""
    cdef HeapItem top
    cdef int64_t c
    while t.hlen > 0:
        top = t.heap[0]
        c = t.pcount[top.pair]
        if c != top.count:  # stale: requeue with its current count
            heap_pop(t)
            if c > 0 and heap_push(t, c, top.pair) < 0:
                return -2
            continue
        if c < min_frequency:
            return -1
        heap_pop(t)
        return top.pair
    return -1


cdef int apply_merge(Trainer *t, int32_t pair, int32_t step, int64_t limit,
                     IVec *born) noexcept nogil:
    """Merge `pair` into the new token 256 + step in every word holding it,
    update the neighbours' counts, queue the pairs that changed (those whose
    token would be at most `limit` bytes).  -1: no memory."""
    cdef Py_ssize_t i
    cdef int32_t p
    cdef int64_t c
    if add_token(t, t.ab[pair].a, t.ab[pair].b) < 0:
        return -1
    born.len = 0
    if merge_step(t, pair, <int32_t> (256 + step), step, born) < 0:
        return -1
    for i in range(born.len):
        p = born.data[i]
        c = t.pcount[p]
        if c > 0 and t.tlen[t.ab[p].a] + t.tlen[t.ab[p].b] <= limit:
            if heap_push(t, c, p) < 0:
                return -1
    return 0


def _learn_merges(counts, n_merges, min_frequency, max_token_bytes, progress=None,
                  bint consume=True, tie_break="bytes"):
    _py.Core.check_learn_options(n_merges, min_frequency, max_token_bytes, tie_break)
    return _learn_checked(counts, n_merges, min_frequency, max_token_bytes, progress, consume,
                          tie_break == "rustbpe")


def _learn_checked(counts, Py_ssize_t n_merges, min_freq, max_token_bytes,
                   progress=None, bint consume=True, bint by_id=False):
    """Core.learn_merges: the compiled merge loop.  `counts`: a dict of
    pre-token bytes -> count, or a counter of this core (Core.counter), read
    in C with no Python object per pre-token.  With `consume`, it empties
    `counts` once its arrays hold them; `progress` is None or a callable
    (phase, done, total); `by_id`: ties go to the smallest pair of ids."""
    cdef Trainer t
    cdef IVec born
    cdef Py_ssize_t step = 0
    cdef int64_t limit = (1 << 62) if max_token_bytes is None else min(max_token_bytes, 1 << 62)
    cdef int64_t min_frequency = min(min_freq, _py.MAX_COUNT)
    cdef int32_t pair, a, b
    cdef int err = 0
    memset(&t, 0, sizeof(Trainer))
    memset(&born, 0, sizeof(IVec))
    t.by_id = by_id
    try:
        n_merges = load_words(&t, counts, n_merges, limit, consume, progress)
        merges = []
        if progress is not None:
            progress("merge", 0, n_merges)
        while step < n_merges:
            with nogil:
                pair = next_pair(&t, min_frequency)
                if pair >= 0:
                    err = apply_merge(&t, pair, <int32_t> step, limit, &born)
            if pair == -2 or err < 0:
                raise MemoryError()
            if pair == -1:
                break
            a = t.ab[pair].a
            b = t.ab[pair].b
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
        ivec_free(&born)
        trainer_free(&t)
        release_memory()
