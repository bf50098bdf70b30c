# Building the encoder's tables from a vocabulary and its merges: the
# double-array trie and the pair table (Core.build), and, at the first
# encode, the atoms (build_atoms) and the flat table's template (build_flat).
# Everything here runs once per Core, without the GIL; the encoder only reads
# what it builds.
# Needs: big_alloc, EMPTY_KEY, prefetch, resize, U64Map, u64map_free,
# u64map_get, u64map_init, u64map_put (_bpe_common.pxi); FSlot, piece_hash
# (_bpe_cache.pxi); ATOM_MAX, Atoms, compatible, CoreT, DA_BASE, DA_OK,
# DABuild, DALeaf, DANode, Frag, GRID, GRID_BITS, LongTok, narrow_home,
# narrow_key, NARROW_LIMIT, pair_key, pair_put, PAIR_WORDS, PairSlot, Tok,
# word_hash (_bpe_encoder.pxi); atoms_free, bit_set, char_at, is_ascii,
# long_token, merge_syms, pair_rank_filtered, utf8_need (_bpe_atoms.pxi);
# fs_home, fs_key, FS_MAX, FS_OVF (_bpe_scan.pxi).

# ---- building the double-array trie --------------------------------------

cdef struct TrieBuild:
    DABuild *da
    int32_t *next_free     # a doubly linked list of the free slots, in index order
    int32_t *prev_free
    Py_ssize_t cap
    Py_ssize_t free_head   # -1: no free slot below cap
    Py_ssize_t free_tail
    Py_ssize_t high        # one past the highest slot in use


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
    cdef Py_ssize_t f, base
    cdef int j, tries = 0
    # keep free slots above the highest in use: the search below never runs
    # off the list's end, so where it lands does not depend on how far ahead
    # the arrays were grown
    if tb_grow(b, b.high + 1024) < 0:
        return -1
    f = b.free_head
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
    """Place every token in a double array (root at slot 0); -1: no memory.
    The placement reads the tokens in sorted order, many times over: it reads
    a sorted copy of them (one pass of random reads instead of one per byte)."""
    cdef int32_t *order = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    cdef int32_t *tmp = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    cdef Py_ssize_t *stack = <Py_ssize_t *> malloc(3 * (n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t i, total = 0, at = 0
    cdef int32_t x
    cdef uint8_t *s_arena = NULL
    cdef int64_t *s_off = NULL
    cdef int32_t *s_lens = NULL
    cdef int32_t *s_vals = NULL
    cdef int32_t *s_ids = NULL
    cdef int err = -1
    for i in range(n):
        total += lens[i]
    s_arena = <uint8_t *> malloc(total + 1)
    s_off = <int64_t *> malloc((n + 1) * sizeof(int64_t))
    s_lens = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    s_vals = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    s_ids = <int32_t *> malloc((n + 1) * sizeof(int32_t))
    if (order != NULL and tmp != NULL and stack != NULL and s_arena != NULL and s_off != NULL
            and s_lens != NULL and s_vals != NULL and s_ids != NULL):
        for i in range(n):
            order[i] = <int32_t> i
        sort_tokens(order, n, arena, off, lens, tmp, stack)
        for i in range(n):
            x = order[i]
            memcpy(s_arena + at, arena + off[x], lens[x])
            s_off[i] = at
            s_lens[i] = lens[x]
            s_vals[i] = vals[x]
            s_ids[i] = ids[x]
            at += lens[x]
            order[i] = <int32_t> i
        err = place_nodes(b, n, order, s_arena, s_off, s_lens, s_vals, s_ids)
    free(order)
    free(tmp)
    free(stack)
    free(s_arena)
    free(s_off)
    free(s_lens)
    free(s_vals)
    free(s_ids)
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
    if tb_grow(b, m // 3 + 1024) < 0:  # about what the vocabularies take; grown as needed
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


cdef struct MergeRec:   # one merge, by the tokenizer's ids
    int32_t left
    int32_t right
    int32_t id


cdef int alloc_core(CoreT *T, Py_ssize_t n_core, Py_ssize_t n_merges) noexcept nogil:
    """Size and allocate the tables by core number, the pair table (buckets of
    8 slots, or wide slots for 2**21 tokens or more) and the bloom filter."""
    cdef Py_ssize_t cap = 16, m = 64, k
    T.n_core = n_core
    T.tok = <Tok *> big_alloc(n_core * sizeof(Tok), 0)
    T.t_id = <int32_t *> big_alloc(n_core * sizeof(int32_t), 0)
    while cap < 2 * n_merges:
        cap *= 2
    if n_core < NARROW_LIMIT - 1:
        cap //= 8   # buckets of 8 slots
    T.pair_mask = cap - 1
    T.pair_shift = 64
    while (<Py_ssize_t> 1 << (64 - T.pair_shift)) < cap:
        T.pair_shift -= 1
    while 3 * m < n_merges:
        m *= 2
    T.bloom_shift = 64
    while (<Py_ssize_t> 1 << (64 - T.bloom_shift)) < m:
        T.bloom_shift -= 1
    T.bloom = <uint64_t *> calloc(m, sizeof(uint64_t))
    if n_core < NARROW_LIMIT - 1:
        T.pairs = <uint64_t *> big_alloc(8 * cap * sizeof(uint64_t), 1)
    else:
        T.wide_pairs = <PairSlot *> big_alloc(cap * sizeof(PairSlot), 0)
        if T.wide_pairs != NULL:
            for k in range(cap):
                T.wide_pairs[k].key = EMPTY_KEY
    if T.tok == NULL or T.t_id == NULL or T.bloom == NULL or (T.pairs == NULL and T.wide_pairs == NULL):
        return -1
    return 0


cdef enum: AHEAD = 16   # merges: the pair table's lines are fetched this many merges ahead


cdef inline void prefetch_pair(const CoreT *T, int32_t a, int32_t b) noexcept nogil:
    """Fetch the bloom word and the first pair-table line of (a, b)."""
    cdef uint64_t h = word_hash(pair_key(a, b))
    prefetch(&T.bloom[h >> T.bloom_shift])
    if T.pairs != NULL:
        prefetch(T.pairs + 8 * narrow_home(T, narrow_key(a, b)))
    else:
        prefetch(&T.wide_pairs[<Py_ssize_t> (h >> T.pair_shift)])


cdef inline void prefetch_chain(const CoreT *T, int32_t t) noexcept nogil:
    """Fetch the first pairs compatible() looks up for merge t (the pairs
    depend on the token table alone, not on what the lookups find)."""
    cdef int32_t a = T.tok[t].left, b = T.tok[t].right
    cdef int _step
    for _step in range(3):
        if a < 0 or b < 0 or a >= t or b >= t:
            return
        prefetch_pair(T, a, b)
        if a >= 256 and a > b:
            a = T.tok[a].right
        elif b >= 256:
            b = T.tok[b].left
        else:
            return


cdef int build_tables(CoreT *T, Py_ssize_t n_tok, const uint8_t *arena, const int64_t *off,
                      const int32_t *lens, const int32_t *ids, int32_t *vals,
                      Py_ssize_t n_merges, const MergeRec *merge_ids, const int32_t *byte_id,
                      uint8_t *ok, IdMap *by_id, IdMap *core_of, TrieBuild *tb) noexcept nogil:
    """Core numbers, the pair table, which tokens are buildable, then the trie."""
    cdef Py_ssize_t k, r
    cdef int32_t a, b, t, x
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
    # a token's pairs are keyed by the core number of its first merge
    T.irregular = False
    for r in range(n_merges):
        t = <int32_t> (256 + r)
        T.t_id[t] = merge_ids[r].id
        if idmap_get(core_of, merge_ids[r].id) >= 0:
            T.irregular = True   # another merge makes the same token
        elif idmap_put(core_of, merge_ids[r].id, t) < 0:
            return -1
    for r in range(n_merges):
        t = <int32_t> (256 + r)
        T.tok[t].left = idmap_get(core_of, merge_ids[r].left)
        T.tok[t].right = idmap_get(core_of, merge_ids[r].right)
        if T.tok[t].left >= t or T.tok[t].right >= t:
            T.irregular = True   # a part that a later merge makes
    if T.irregular:
        T.canon = <int32_t *> malloc(T.n_core * sizeof(int32_t))
        if T.canon == NULL:
            return -1
        for r in range(256):
            T.canon[r] = <int32_t> r
        for r in range(256, T.n_core):
            T.canon[r] = idmap_get(core_of, T.t_id[r])
    for r in range(n_merges):
        if r + AHEAD < n_merges:
            prefetch_pair(T, T.tok[256 + r + AHEAD].left, T.tok[256 + r + AHEAD].right)
        t = <int32_t> (256 + r)
        a = T.tok[t].left
        b = T.tok[t].right
        if a < 0 or b < 0:
            continue  # a part that no merge makes: this merge never fires
        pair_put(T, a, b, t)
    # buildable: both parts are, and the boundary between them survives until
    # this merge (nothing across it merges first); irregular merges: none (the
    # trie is then the index of the whole-token rule only)
    for r in range(n_merges if not T.irregular else 0):
        if r + AHEAD < n_merges:
            prefetch_chain(T, 256 + r + AHEAD)
        t = <int32_t> (256 + r)
        a = T.tok[t].left
        b = T.tok[t].right
        if a >= 0 and b >= 0 and a < t and b < t and ok[a] and ok[b]:
            ok[t] = compatible(T, a, b, t)
    for k in range(n_tok):
        x = idmap_get(core_of, ids[k])
        vals[k] = x if x >= 0 and ok[x] else -1
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


# ---- the atoms (_bpe_atoms.pxi) ------------------------------------------

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
    cdef int32_t *first_use = NULL
    if A == NULL:
        return -1
    T.atoms = NULL
    if T.canon != NULL:   # irregular merges: an atom must be whole before its first use
        first_use = first_uses(T)
        if first_use == NULL:
            atoms_free(A)
            return -1
    A.of = <int32_t *> malloc(65536 * sizeof(int32_t))
    A.head_bits = <uint64_t *> calloc(PAIR_WORDS, sizeof(uint64_t))
    A.tail_bits = <uint64_t *> calloc(PAIR_WORDS, sizeof(uint64_t))
    if A.of == NULL or A.head_bits == NULL or A.tail_bits == NULL:
        free(first_use)
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
        free(first_use)
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
        if first_use != NULL and <uint32_t> first_use[sym[0]] <= last_inner(T, b, L):
            continue   # a merge with it as a part can come before it is whole
        if A.of[cp] < 0:
            A.of[cp] = <int32_t> sym[0]
    free(first_use)
    T.atoms = A
    return 0


cdef int32_t *first_uses(const CoreT *T) noexcept nogil:
    """Irregular merges: for each core number, the first merge that has it as
    a part (n_core: none); NULL when the merges are regular (a merge's parts
    always come before it) or no memory (then build_atoms fails)."""
    cdef int32_t *first = <int32_t *> malloc(T.n_core * sizeof(int32_t))
    cdef Py_ssize_t t
    if first == NULL:
        return NULL
    for t in range(T.n_core):
        first[t] = <int32_t> T.n_core
    for t in range(T.n_core - 1, 255, -1):   # the latest first: the earliest stays
        if T.tok[t].left >= 0:
            first[T.tok[t].left] = <int32_t> t
        if T.tok[t].right >= 0:
            first[T.tok[t].right] = <int32_t> t
    return first


cdef uint32_t last_inner(const CoreT *T, const uint8_t *b, Py_ssize_t L) noexcept nogil:
    """The latest of the merges that join a character's L (2 or 3) bytes, in
    the order merging by rank takes them (merge_syms has made it one token)."""
    cdef uint32_t r01 = pair_rank_filtered(T, b[0], b[1]), r12, x
    if L == 2:
        return r01
    r12 = pair_rank_filtered(T, b[1], b[2])
    if r01 <= r12:
        x = <uint32_t> T.canon[r01]
        return max(r01, pair_rank_filtered(T, x, b[2]))
    x = <uint32_t> T.canon[r12]
    return max(r12, pair_rank_filtered(T, b[0], x))


# ---- the flat table's template (_bpe_scan.pxi) ---------------------------

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
