# The scan-and-encode loop over a whole text: the named scanners (or a
# compiled pattern) find the pre-tokens; the short ones are probes of the flat
# table (its template built by build_flat in _bpe_tables.pxi), the first-seen
# ones merged by rank several at a time (merge_batch), the long ones go to
# piece_long (through the cache of long results to encode_new, which picks the
# way: merge_small, the atoms, or the encoder's backtrack or rank merge).
# Needs: IVec, ivec_extend, ivec_push, ivec_reserve, le64, prefetch, STAT
# (_bpe_common.pxi); is_cl, next_cl100k, next_gpt2, next_o200k, next_words,
# P_GPT2, P_O200K (_bpe_scanner.pxi); bs_iter, bs_next, bs_start
# (_bpe_bitscan.pxi); P_PAT, pat_next, pn_init, pn_state (_bpe_pattern.pxi);
# CACHE_MAX_BYTES, CSlot, FSlot, PCache, pcache_get, pcache_put, piece_hash
# (_bpe_cache.pxi); ATOM_BYTES, backtrack, CoreT, GRID, GRID_BITS,
# longest_whole, LOW21, narrow_home, narrow_key, narrow_slot, pair_get,
# rank_merge, Scratch, scratch_free (_bpe_encoder.pxi); atomize, encode_atoms,
# is_ascii, merge_syms, pair_rank_filtered (_bpe_atoms.pxi).

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


cdef int encode_new(const CoreT *T, const uint8_t *s, Py_ssize_t n, uint64_t h, IVec *out,
                    Scratch *sc) noexcept nogil:
    """Append the ids of a pre-token of more than FS_MAX bytes that no cache
    holds (h: its piece_hash; shorter ones: the flat table): ASCII of up to
    MID_MAX bytes by the whole-token rule (a walk down the trie), else
    merge_small; other text of up to ATOM_BYTES by encode_atoms; the
    rest, or what has too many symbols, by the trie encoder, else the rank
    merge.  Irregular merges: ASCII (or any text, without atoms) of up to
    MID_MAX bytes as above, other text by the atoms, the whole-token rule and
    the rank merge beyond.  (The atoms hold for any merges merged by lowest
    rank: a character's bytes merge among themselves alone unless a token
    holds part of it, which the fragments block; for irregular merges,
    build_atoms leaves out a character that a merge joins before it is
    whole.)"""
    cdef int err
    cdef int32_t ids[MID_MAX]
    cdef int32_t length = 0, tok
    cdef Py_ssize_t cnt
    cdef bint ascii = n <= ATOM_BYTES and is_ascii(s, n)
    if (ascii or (T.irregular and T.atoms == NULL)) and n <= MID_MAX:
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


cdef extern from "_bpe_scan.h":
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
    cdef Py_ssize_t i = 0, e, m, j, cnt, h
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
