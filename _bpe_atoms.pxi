# Atoms: the characters a first-seen pre-token that is not ASCII merges from
# (run time: atomize, merge_syms, encode_atoms).  Built once per core by
# build_atoms in _bpe_tables.pxi.  Their types (Atoms, Frag, LongTok) are in
# _bpe_encoder.pxi, beside CoreT, which holds them.
# Needs: IVec, ivec_push, ivec_reserve (_bpe_common.pxi); ATOM_MAX, Atoms,
# CoreT, Frag, GRID, GRID_BITS, pair_get (_bpe_encoder.pxi).

# ---- atoms: characters a merge may start from --------------------------------
#
# A character c of 2 or 3 bytes that is a token, and that merging its bytes
# alone makes (its "atom"), can enter a pre-token's merge as one symbol
# instead of its bytes wherever no token covers part of c and bytes next to
# it (a "fragment": a token ending in a character's first bytes, or starting
# with its last ones), checked against the pre-token's actual bytes.  Then no
# merge crosses c's edges before c is whole, c's own merges happen as they
# would alone, and every merge with c as a part ranks after them (a merge's
# parts come before it; where merges are irregular, a character for which
# that fails is no atom), so the merges, and the ids, are the same.  A CJK
# run then merges from its characters: a fifth of the merge steps
# (o200k x multilingual.txt, the pre-tokens of more than 15 bytes).

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
