# Reading a vocabulary straight into C arrays, for start-up: a .tiktoken text
# or a ranks dict with its merges derived by tiktoken's rule, the token and
# merge sections of the native format, and a tokenizer.json's model.vocab and
# model.merges.  Each reader takes the plain case only
# and answers "not plain" for anything else (odd base64, ids out of order, a
# repeated or missing token, a merge that is not the BPE of two lower-ranked
# tokens, ...): the Tokenizer then reads the input its own way (bpe_fallback),
# which gives the same model or the error it reports.  So these readers never
# decide what a file means; they only get there faster.
# Needs: hash_bytes, prefetch, PyUnicode_DATA, PyUnicode_GET_LENGTH,
# PyUnicode_IS_ASCII, PyUnicode_KIND, U64Map, u64map_free, u64map_get,
# u64map_init, u64map_put (_bpe_common.pxi); ch_t
# (_bpe_scanner.pxi); IdMap, idmap_free, idmap_get, idmap_init, idmap_put,
# MergeRec (_bpe_tables.pxi).

from libc.stdint cimport int8_t, int16_t
from cpython.bytes cimport PyBytes_Check
from cpython.dict cimport PyDict_Next
from cpython.long cimport PyLong_CheckExact, PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_READ_CHAR

cdef enum: NOT_PLAIN = 1    # a reader's answer: take the reference path
cdef enum: LONGEST = 4096   # longer tokens: the reference path (its heap is O(n log n))
cdef int32_t NO_RANK = 0x7FFFFFFF
cdef int64_t ID_LIMIT = (<int64_t> 1) << 31   # ids are int32
cdef Py_ssize_t LINE_LIMIT = 0x7FFFFFFF      # longer lines: not plain (lengths are int32)


cdef struct VSlot:          # the model's index: token bytes -> token number
    uint64_t key            # up to 7 bytes inline, the length in the top byte;
    int32_t k               #   longer ones: a hash, top byte 0xFF.  k: -1 empty
    int32_t id


cdef struct ModelT:
    uint8_t *arena          # every token's bytes, end to end
    Py_ssize_t arena_len
    int64_t *off            # token number k: arena[off[k]:off[k] + lens[k]], id ids[k]
    int32_t *lens
    int32_t *ids            # distinct (model_index checks)
    Py_ssize_t n_tok
    MergeRec *merges        # in rank order
    Py_ssize_t n_merges
    int32_t max_id
    int32_t byte_id[256]    # -1: the single byte is not a token
    bint ready              # read whole by a reader (else the arrays may be NULL)
    VSlot *index
    int index_shift
    Py_ssize_t index_mask
    IdMap by_id             # id -> token number


cdef void model_free(ModelT *M) noexcept nogil:
    free(M.arena)
    free(M.off)
    free(M.lens)
    free(M.ids)
    free(M.merges)
    free(M.index)
    idmap_free(&M.by_id)
    memset(M, 0, sizeof(ModelT))


cdef int model_alloc(ModelT *M, Py_ssize_t n_tok, Py_ssize_t arena_bytes) noexcept nogil:
    M.arena = <uint8_t *> malloc(arena_bytes + 8)
    M.off = <int64_t *> malloc((n_tok + 1) * sizeof(int64_t))
    M.lens = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
    M.ids = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
    M.merges = <MergeRec *> malloc((n_tok + 1) * sizeof(MergeRec))
    if M.arena == NULL or M.off == NULL or M.lens == NULL or M.ids == NULL or M.merges == NULL:
        return -1
    return 0


cdef inline uint64_t vkey(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t w = 0
    if n <= 7:
        memcpy(&w, p, n)
        return w | (<uint64_t> n << 56)
    return (hash_bytes(p, n) >> 8) | (<uint64_t> 0xFF << 56)


cdef inline Py_ssize_t vhome(const ModelT *M, uint64_t key) noexcept nogil:
    return <Py_ssize_t> (((key ^ (key >> 31)) * 0x9E3779B97F4A7C15ULL) >> M.index_shift)


cdef inline const VSlot *vfind(const ModelT *M, uint64_t key, const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """The slot of the token with bytes p[:n] (key: vkey(p, n)), or NULL."""
    cdef Py_ssize_t i = vhome(M, key)
    cdef const VSlot *s
    while True:
        s = &M.index[i]
        if s.k < 0:
            return NULL
        if s.key == key and (n <= 7 or (M.lens[s.k] == n and memcmp(M.arena + M.off[s.k], p, n) == 0)):
            return s
        i = (i + 1) & M.index_mask


cdef int model_index(ModelT *M) noexcept nogil:
    """The index of every token, the byte ids and the id map; NOT_PLAIN if two
    tokens have the same bytes or the same id or a single byte is missing, -1
    if no memory."""
    cdef Py_ssize_t cap = 16, k, k0, end, i, n
    cdef uint64_t keys[16]
    cdef const uint8_t *p
    cdef VSlot *s
    if M.n_tok < 256:   # not every single byte
        return NOT_PLAIN
    while 3 * cap < 4 * M.n_tok:   # at most 3/4 full
        cap *= 2
    M.index_mask = cap - 1
    M.index_shift = 64
    while (<Py_ssize_t> 1 << (64 - M.index_shift)) < cap:
        M.index_shift -= 1
    M.index = <VSlot *> malloc(cap * sizeof(VSlot))
    if M.index == NULL or idmap_init(&M.by_id, M.max_id, M.n_tok) < 0:
        return -1
    for i in range(cap):
        M.index[i].k = -1
    for i in range(256):
        M.byte_id[i] = -1
    k0 = 0
    while k0 < M.n_tok:  # 16 at a time: their slots are fetched together
        end = k0 + 16 if k0 + 16 < M.n_tok else M.n_tok
        for k in range(k0, end):
            keys[k - k0] = vkey(M.arena + M.off[k], M.lens[k])
            prefetch(&M.index[vhome(M, keys[k - k0])])
        for k in range(k0, end):
            p = M.arena + M.off[k]
            n = M.lens[k]
            if vfind(M, keys[k - k0], p, n) != NULL:
                return NOT_PLAIN
            i = vhome(M, keys[k - k0])
            while M.index[i].k >= 0:
                i = (i + 1) & M.index_mask
            s = &M.index[i]
            s.key = keys[k - k0]
            s.k = <int32_t> k
            s.id = M.ids[k]
            if n == 1:
                M.byte_id[p[0]] = M.ids[k]
            if idmap_get(&M.by_id, M.ids[k]) >= 0:
                return NOT_PLAIN
            if idmap_put(&M.by_id, M.ids[k], <int32_t> k) < 0:
                return -1
        k0 = end
    for i in range(256):
        if M.byte_id[i] < 0:
            return NOT_PLAIN
    return 0


# ---- .tiktoken: "<base64 token> <rank>" per line -------------------------

cdef int8_t B64[256]
cdef void _init_b64():
    cdef int i
    cdef const char *alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for i in range(256):
        B64[i] = -1
    for i in range(64):
        B64[<uint8_t> alphabet[i]] = <int8_t> i
_init_b64()


cdef inline Py_ssize_t b64_decode(const uint8_t *s, Py_ssize_t n, uint8_t *out) noexcept nogil:
    """Canonical base64 only (whole quads, padding at the end, no stray bits):
    the number of bytes written, or -1."""
    cdef Py_ssize_t i = 0, o = 0
    cdef int a, b, c, d
    if n == 0 or n % 4 != 0:
        return -1
    while i < n:
        a = B64[s[i]]
        b = B64[s[i + 1]]
        c = B64[s[i + 2]]
        d = B64[s[i + 3]]
        if a < 0 or b < 0:
            return -1
        if c < 0 or d < 0:
            if i + 4 != n or d >= 0 or s[i + 3] != 61:   # '=' only in the last quad
                return -1
            if c < 0:
                if s[i + 2] != 61 or (b & 15):
                    return -1
                out[o] = <uint8_t> ((a << 2) | (b >> 4))
                return o + 1
            if c & 3:
                return -1
            out[o] = <uint8_t> ((a << 2) | (b >> 4))
            out[o + 1] = <uint8_t> (((b & 15) << 4) | (c >> 2))
            return o + 2
        out[o] = <uint8_t> ((a << 2) | (b >> 4))
        out[o + 1] = <uint8_t> (((b & 15) << 4) | (c >> 2))
        out[o + 2] = <uint8_t> (((c & 3) << 6) | d)
        o += 3
        i += 4
    return o


cdef inline int64_t parse_id(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """1 to 10 ASCII digits (what _is_id takes) below 2**31, else -1."""
    cdef int64_t v = 0
    cdef Py_ssize_t i
    if n < 1 or n > 10:
        return -1
    for i in range(n):
        if s[i] < 48 or s[i] > 57:
            return -1
        v = v * 10 + (s[i] - 48)
    return v if v < ID_LIMIT else -1


cdef int parse_tiktoken(ModelT *M, const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """The tokens of a .tiktoken text (ASCII), each line `base64 rank`, the
    ranks ascending; empty lines skipped, a CR before each LF dropped."""
    cdef Py_ssize_t lines = 1, spaces = 0, i, a, e, sp, k = 0, m = 0, got
    cdef int64_t rank, last = -1
    for i in range(n):
        if s[i] == 10:
            lines += 1
        elif s[i] == 32:
            spaces += 1
    # a token takes a line with a space: room for min(lines, spaces) of them,
    # not a slot per line (a file of newlines allocates nothing)
    if spaces == 0:
        return NOT_PLAIN
    if model_alloc(M, lines if lines < spaces else spaces, n) < 0:
        return -1
    i = 0
    while i < n:
        a = i
        e = a
        while e < n and s[e] != 10:
            e += 1
        i = e + 1
        if e > a and s[e - 1] == 13:
            e -= 1
        if e == a:
            continue
        sp = a
        while sp < e and s[sp] != 32:
            sp += 1
        if sp == e or sp - a > 4 * (LONGEST // 3 + 1):   # longer: derive_merges refuses it
            return NOT_PLAIN
        rank = parse_id(s + sp + 1, e - sp - 1)   # a second space fails here too
        if rank <= last:
            return NOT_PLAIN
        got = b64_decode(s + a, sp - a, M.arena + m)
        if got < 0:
            return NOT_PLAIN
        M.off[k] = m
        M.lens[k] = <int32_t> got
        M.ids[k] = <int32_t> rank
        m += got
        k += 1
        last = rank
    if k == 0:
        return NOT_PLAIN
    M.n_tok = k
    M.arena_len = m
    M.max_id = <int32_t> last
    return 0


cdef int model_from_ranks(ModelT *M, dict ranks) except -1:
    """The tokens of a dict bytes -> rank, whose ranks ascend in its order."""
    cdef Py_ssize_t n = len(ranks), total = 0, k = 0, m = 0, size
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef int64_t rank, last = -1
    cdef int overflow = 0
    while PyDict_Next(ranks, &pos, &key, &value):
        if not PyBytes_Check(<object> key):
            return NOT_PLAIN
        total += PyBytes_GET_SIZE(<object> key)
    if n == 0:
        return NOT_PLAIN
    if model_alloc(M, n, total) < 0:
        raise MemoryError()
    pos = 0
    while PyDict_Next(ranks, &pos, &key, &value):
        if not PyLong_CheckExact(<object> value):
            return NOT_PLAIN
        rank = PyLong_AsLongLongAndOverflow(<object> value, &overflow)
        size = PyBytes_GET_SIZE(<object> key)
        if overflow or rank <= last or rank >= ID_LIMIT or size == 0:
            return NOT_PLAIN
        memcpy(M.arena + m, PyBytes_AS_STRING(<object> key), size)
        M.off[k] = m
        M.lens[k] = <int32_t> size
        M.ids[k] = <int32_t> rank
        m += size
        k += 1
        last = rank
    M.n_tok = k
    M.arena_len = m
    M.max_id = <int32_t> last
    return 0


# ---- deriving the merges: tiktoken's rule ----------------------------------
#
# A token of rank r is the merge of the two parts that byte-pair encoding of
# its bytes with the tokens ranked below r leaves (bpe_fallback._rank_merge):
# join the adjacent pair whose join has the lowest rank, the leftmost first.
# Each join's rank is a lookup in the index, a random access into a table of
# several MB: one token at a time, every step waits for memory.  So LANES
# tokens are derived at once, round-robin: a step fetches the slots of the
# next lookups, which arrive while the other lanes take their steps.

cdef enum: LANES = 16
cdef enum: LANE_BYTES = 64     # longer tokens are derived alone, after the lanes


cdef struct Lane:
    Py_ssize_t k               # the token number, -1: idle
    const uint8_t *t
    int32_t limit              # the token's rank
    Py_ssize_t np              # parts: part q is t[cut[q]:cut[q + 1]], id part[q]
    int32_t *cut
    int32_t *part
    int32_t *pair              # the rank of joining parts q and q + 1 (NO_RANK: none below limit)
    int pending[2]             # pairs whose rank is being fetched (-1: none)
    uint64_t key[2]
    int32_t cut_buf[LANE_BYTES + 1]
    int32_t part_buf[LANE_BYTES]
    int32_t pair_buf[LANE_BYTES]


cdef inline int32_t join_rank(const ModelT *M, const Lane *L, int q, uint64_t key) noexcept nogil:
    cdef const VSlot *s = vfind(M, key, L.t + L.cut[q], L.cut[q + 2] - L.cut[q])
    if s == NULL or s.id >= L.limit:
        return NO_RANK
    return s.id


cdef inline void lane_fetch(const ModelT *M, Lane *L, int j, int q) noexcept nogil:
    L.pending[j] = q
    L.key[j] = vkey(L.t + L.cut[q], L.cut[q + 2] - L.cut[q])
    prefetch(&M.index[vhome(M, L.key[j])])


cdef void lane_start(const ModelT *M, const int32_t *pair2, Lane *L, Py_ssize_t k,
                     int32_t limit) noexcept nogil:
    """Start deriving token k with the tokens ranked below `limit`."""
    cdef Py_ssize_t q, n = M.lens[k]
    cdef int32_t r
    L.k = k
    L.t = M.arena + M.off[k]
    L.limit = limit
    L.np = n
    L.pending[0] = -1
    L.pending[1] = -1
    for q in range(n + 1):
        L.cut[q] = <int32_t> q
    for q in range(n):
        L.part[q] = M.byte_id[L.t[q]]
    for q in range(n - 1):
        r = pair2[L.t[q] | (<int> L.t[q + 1] << 8)]
        L.pair[q] = r if 0 <= r < L.limit else NO_RANK


cdef bint lane_step(const ModelT *M, Lane *L) noexcept nogil:
    """Take the fetched ranks, then one join; True when the lane is done (two
    parts left, or no join possible)."""
    cdef Py_ssize_t q, best = -1, np
    cdef int32_t low = NO_RANK
    cdef int j
    for j in range(2):
        if L.pending[j] >= 0:
            L.pair[L.pending[j]] = join_rank(M, L, L.pending[j], L.key[j])
            L.pending[j] = -1
    np = L.np
    if np <= 2:
        return True
    for q in range(np - 1):
        if L.pair[q] < low:
            low = L.pair[q]
            best = q
    if best < 0:
        return True
    L.part[best] = low   # a rank is the token's id in a .tiktoken file
    for q in range(best + 1, np):
        L.cut[q] = L.cut[q + 1]
    for q in range(best + 1, np - 1):
        L.part[q] = L.part[q + 1]
        L.pair[q] = L.pair[q + 1]
    np -= 1
    L.np = np
    if np <= 2:
        return True
    if best > 0:
        lane_fetch(M, L, 0, best - 1)
    if best < np - 1:
        lane_fetch(M, L, 1, best)
    return False


cdef inline bint lane_finish(ModelT *M, Lane *L, MergeRec *by_token) noexcept nogil:
    """Record the lane's merge; False if its token is not a merge of two parts
    (left -1: none yet)."""
    by_token[L.k].left = -1
    by_token[L.k].id = M.ids[L.k]
    if L.np != 2:
        return False
    by_token[L.k].left = L.part[0]
    by_token[L.k].right = L.part[1]
    return True


cdef int derive_merges(ModelT *M) noexcept nogil:
    """M.merges from the tokens (ranks ascending: the merges come in token
    order); NOT_PLAIN if a token is longer than LONGEST, -1 if no memory.
    A token whose lower-ranked pieces are three or more is derived again
    with every token (bpe_fallback._tiktoken_model): two pieces then are a
    merge of a token a later merge makes, more are no merge at all."""
    cdef int32_t *pair2 = <int32_t *> malloc(65536 * sizeof(int32_t))
    cdef MergeRec *by_token = <MergeRec *> malloc((M.n_tok + 1) * sizeof(MergeRec))
    cdef Lane *lanes = <Lane *> malloc(LANES * sizeof(Lane))
    cdef Lane *L
    cdef Lane big
    cdef Py_ssize_t k, nxt = 0, n, r = 0
    cdef int j, busy, err = 0
    cdef const uint8_t *p
    big.cut = NULL
    big.part = NULL
    big.pair = NULL
    if pair2 == NULL or by_token == NULL or lanes == NULL:
        err = -1
    else:
        for k in range(65536):
            pair2[k] = -1
        for k in range(M.n_tok):
            if M.lens[k] == 2:
                p = M.arena + M.off[k]
                pair2[p[0] | (<int> p[1] << 8)] = M.ids[k]
        for j in range(LANES):
            lanes[j].k = -1
            lanes[j].cut = lanes[j].cut_buf
            lanes[j].part = lanes[j].part_buf
            lanes[j].pair = lanes[j].pair_buf
        while err == 0:
            busy = 0
            for j in range(LANES):
                L = &lanes[j]
                if L.k < 0:
                    while nxt < M.n_tok and (M.lens[nxt] < 2 or M.lens[nxt] > LANE_BYTES):
                        nxt += 1
                    if nxt == M.n_tok:
                        continue
                    lane_start(M, pair2, L, nxt, M.ids[nxt])
                    nxt += 1
                busy = 1
                if lane_step(M, L):
                    lane_finish(M, L, by_token)
                    L.k = -1
            if not busy:
                break
        # the long tokens, one at a time; then again with every token, those
        # whose lower-ranked pieces were more than two
        for k in range(2 * M.n_tok):
            if err != 0:
                break
            n = M.lens[k % M.n_tok]
            if n < 2 or (k < M.n_tok and n <= LANE_BYTES):
                continue
            if k >= M.n_tok and by_token[k - M.n_tok].left >= 0:
                continue
            if n > LONGEST:
                err = NOT_PLAIN
                break
            if big.cut == NULL:
                big.cut = <int32_t *> malloc((LONGEST + 1) * sizeof(int32_t))
                big.part = <int32_t *> malloc(LONGEST * sizeof(int32_t))
                big.pair = <int32_t *> malloc(LONGEST * sizeof(int32_t))
                if big.cut == NULL or big.part == NULL or big.pair == NULL:
                    err = -1
                    break
            lane_start(M, pair2, &big, k % M.n_tok, M.ids[k % M.n_tok] if k < M.n_tok else NO_RANK)
            while not lane_step(M, &big):
                pass
            lane_finish(M, &big, by_token)
        if err == 0:
            for k in range(M.n_tok):
                if M.lens[k] >= 2 and by_token[k].left >= 0:
                    M.merges[r] = by_token[k]
                    r += 1
            M.n_merges = r
    free(pair2)
    free(by_token)
    free(lanes)
    free(big.cut)
    free(big.part)
    free(big.pair)
    return err


# ---- the native format's tokens and merges sections ------------------------

cdef int16_t CHAR_BYTE[0x144]   # GPT-2's printable form: char -> its byte, -1: not a form


cdef void _init_char_byte():
    cdef int b, shifted = 0
    for b in range(0x144):
        CHAR_BYTE[b] = -1
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF:
            CHAR_BYTE[b] = <int16_t> b
        else:
            CHAR_BYTE[256 + shifted] = <int16_t> b
            shifted += 1


_init_char_byte()


cdef inline Py_ssize_t line_end(const ch_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and s[i] != 10:
        i += 1
    return i


cdef inline Py_ssize_t field_end(const ch_t *s, Py_ssize_t i, Py_ssize_t e) noexcept nogil:
    while i < e and s[i] != 32:
        i += 1
    return i


cdef inline int64_t char_id(const ch_t *s, Py_ssize_t a, Py_ssize_t e) noexcept nogil:
    """parse_id over chars."""
    cdef int64_t v = 0
    cdef Py_ssize_t i
    if e - a < 1 or e - a > 10:
        return -1
    for i in range(a, e):
        if s[i] < 48 or s[i] > 57:
            return -1
        v = v * 10 + <int64_t> (s[i] - 48)
    return v if v < ID_LIMIT else -1


cdef inline Py_ssize_t printable_bytes(const ch_t *s, Py_ssize_t a, Py_ssize_t e, uint8_t *out) noexcept nogil:
    """str_to_token over chars: the number of bytes, or -1 (empty, or not a form)."""
    cdef Py_ssize_t i
    cdef int16_t b
    if e == a:
        return -1
    for i in range(a, e):
        if s[i] >= 0x144:
            return -1
        b = CHAR_BYTE[s[i]]
        if b < 0:
            return -1
        out[i - a] = <uint8_t> b
    return e - a


cdef inline Py_ssize_t section(const ch_t *s, Py_ssize_t i, Py_ssize_t n, const char *name,
                               int64_t *count) noexcept nogil:
    """Reads the line `<name> <count>` at i: the next line's start, or -1."""
    cdef Py_ssize_t e = line_end(s, i, n), k = 0, stop
    stop = e - 1 if e > i and s[e - 1] == 13 else e
    while name[k] != 0:
        if i + k >= stop or s[i + k] != <uint8_t> name[k]:
            return -1
        k += 1
    if i + k >= stop or s[i + k] != 32:
        return -1
    count[0] = char_id(s, i + k + 1, stop)
    if count[0] < 0 or e >= n:
        return -1
    return e + 1


cdef int parse_native(ModelT *M, const ch_t *s, Py_ssize_t n, Py_ssize_t i, Py_ssize_t *end) noexcept nogil:
    """The `tokens` and `merges` sections of a native file from char i: the
    plain tokens (ascending ids), then each merge's result (its parts' lengths
    kept in M.merges[r].left until parts_of_merges; its id any unused one,
    which model_index checks); `end`: where the next line starts."""
    cdef int64_t n_plain, n_merges, v, last = -1, top = -1
    cdef Py_ssize_t k = 0, m = 0, e, stop, f, g, got, got2, r, _r, lines = 0, spaces = 0, j
    for j in range(i, n):
        if s[j] == 10:
            lines += 1
        elif s[j] == 32:
            spaces += 1
    i = section(s, i, n, b"tokens", &n_plain)
    if i < 0 or n_plain > lines:
        return NOT_PLAIN
    # a token takes a line with a space: room for min(lines, spaces) of them;
    # at most as many bytes as chars: the arena fits in the text's length
    if model_alloc(M, lines if lines < spaces else spaces, n - i) < 0:
        return -1
    for _r in range(n_plain):
        if i >= n:
            return NOT_PLAIN
        e = line_end(s, i, n)
        if e - i > LINE_LIMIT:
            return NOT_PLAIN
        stop = e - 1 if e > i and s[e - 1] == 13 else e
        f = field_end(s, i, stop)
        v = char_id(s, i, f)
        if f == stop or v <= last:
            return NOT_PLAIN
        got = printable_bytes(s, f + 1, stop, M.arena + m)
        if got < 0:
            return NOT_PLAIN
        M.off[k] = m
        M.lens[k] = <int32_t> got
        M.ids[k] = <int32_t> v
        m += got
        k += 1
        last = v
        i = e + 1
    if i >= n:
        return NOT_PLAIN
    i = section(s, i, n, b"merges", &n_merges)
    if i < 0 or n_merges > lines:
        return NOT_PLAIN
    for r in range(n_merges):
        if i >= n:
            return NOT_PLAIN
        e = line_end(s, i, n)
        if e - i > LINE_LIMIT:
            return NOT_PLAIN
        stop = e - 1 if e > i and s[e - 1] == 13 else e
        f = field_end(s, i, stop)
        v = char_id(s, i, f)
        if f == stop or v < 0:
            return NOT_PLAIN
        g = field_end(s, f + 1, stop)
        if g == stop:
            return NOT_PLAIN
        got = printable_bytes(s, f + 1, g, M.arena + m)
        got2 = printable_bytes(s, g + 1, stop, M.arena + m + (got if got > 0 else 0))
        if got < 0 or got2 < 0:
            return NOT_PLAIN
        M.off[k] = m
        M.lens[k] = <int32_t> (got + got2)
        M.ids[k] = <int32_t> v
        M.merges[r].left = <int32_t> got
        m += got + got2
        k += 1
        if v > top:
            top = v
        i = e + 1
    M.n_tok = k
    M.n_merges = <Py_ssize_t> n_merges
    M.arena_len = m
    M.max_id = <int32_t> (top if top > last else last)
    end[0] = i if i <= n else n
    return 0


cdef int parts_of_merges(ModelT *M) noexcept nogil:
    """Each merge's parts by id (after model_index): both must be tokens (a
    part a later merge makes is the core's irregular case, as in the
    reference); 16 merges' lookups fetched at a time."""
    cdef Py_ssize_t first = M.n_tok - M.n_merges, r0, r, end, t
    cdef uint64_t keys[32]
    cdef const uint8_t *p
    cdef int32_t la, lb
    cdef const VSlot *a
    cdef const VSlot *b
    r0 = 0
    while r0 < M.n_merges:
        end = r0 + 16 if r0 + 16 < M.n_merges else M.n_merges
        for r in range(r0, end):
            t = first + r
            p = M.arena + M.off[t]
            la = M.merges[r].left
            keys[2 * (r - r0)] = vkey(p, la)
            keys[2 * (r - r0) + 1] = vkey(p + la, M.lens[t] - la)
            prefetch(&M.index[vhome(M, keys[2 * (r - r0)])])
            prefetch(&M.index[vhome(M, keys[2 * (r - r0) + 1])])
        for r in range(r0, end):
            t = first + r
            p = M.arena + M.off[t]
            la = M.merges[r].left
            lb = M.lens[t] - la
            a = vfind(M, keys[2 * (r - r0)], p, la)
            b = vfind(M, keys[2 * (r - r0) + 1], p + la, lb)
            if a == NULL or b == NULL:
                return NOT_PLAIN
            M.merges[r].left = a.id
            M.merges[r].right = b.id
            M.merges[r].id = M.ids[t]
        r0 = end
    return 0


# ---- the Python side -------------------------------------------------------

cdef class _Model:
    """A vocabulary and its merges read by the C readers (see Core's
    tiktoken_model / native_model), until a Core is built from it."""
    cdef ModelT M

    def __dealloc__(self):
        model_free(&self.M)

    @property
    def max_id(self):
        return self.M.max_id

    def id_of(self, bytes data not None):
        """The id of the token with these bytes, or None."""
        cdef const uint8_t *p = <const uint8_t *> PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        cdef const VSlot *s
        if n == 0 or not self.M.ready:
            return None
        s = vfind(&self.M, vkey(p, n), p, n)
        return None if s == NULL else s.id

    def has_id(self, i):
        """Whether a token has id i."""
        return self.token(i) is not None

    def token(self, i):
        """The bytes of the token with id i, or None."""
        cdef int32_t k
        if (not self.M.ready or isinstance(i, bool) or not isinstance(i, int)
                or not 0 <= i <= self.M.max_id):
            return None
        k = idmap_get(&self.M.by_id, <int32_t> i)
        if k < 0:
            return None
        return PyBytes_FromStringAndSize(<char *> self.M.arena + self.M.off[k], self.M.lens[k])


cdef _Model _checked(_Model model, int err):
    if err < 0:
        raise MemoryError()
    if err != 0:
        return None
    model.M.ready = True
    return model


def _tiktoken_model(source):
    """Core.tiktoken_model: a _Model of a .tiktoken text (str) or a ranks dict,
    merges derived; None when it is not the plain case."""
    cdef _Model model = _Model.__new__(_Model)
    cdef int err
    if type(source) is dict:
        err = model_from_ranks(&model.M, <dict> source)
    elif isinstance(source, str) and PyUnicode_IS_ASCII(source):
        # (any str's own characters: the registry's pinned files come as a str subclass)
        err = parse_tiktoken(&model.M, <const uint8_t *> PyUnicode_DATA(source),
                             PyUnicode_GET_LENGTH(source))
    else:
        return None
    if err == 0:
        with nogil:
            err = model_index(&model.M)
            if err == 0:
                err = derive_merges(&model.M)
    return _checked(model, err)


def _native_model(str text not None, Py_ssize_t start):
    """Core.native_model: (a _Model of the tokens and merges sections of a
    native file's text from char `start`, where the next line starts), or None
    when it is not the plain case."""
    cdef _Model model = _Model.__new__(_Model)
    cdef int err, kind = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), end = 0
    if not 0 <= start <= n:
        return None
    with nogil:
        if kind == 1:
            err = parse_native(&model.M, <const uint8_t *> data, n, start, &end)
        elif kind == 2:
            err = parse_native(&model.M, <const uint16_t *> data, n, start, &end)
        else:
            err = parse_native(&model.M, <const uint32_t *> data, n, start, &end)
        if err == 0:
            err = model_index(&model.M)
        if err == 0:
            err = parts_of_merges(&model.M)
    if _checked(model, err) is None:
        return None
    return model, end


# ---- tokenizer.json: model.vocab (form -> id) and model.merges ------------

cdef Py_ssize_t form_bytes(str s, Py_ssize_t a, Py_ssize_t e, uint8_t *out):
    """str_to_token over s[a:e] (any kind of str): the number of bytes, or -1."""
    cdef int kind = PyUnicode_KIND(s)
    cdef const void *data = PyUnicode_DATA(s)
    if kind == 1:
        return printable_bytes(<const uint8_t *> data, a, e, out)
    if kind == 2:
        return printable_bytes(<const uint16_t *> data, a, e, out)
    return printable_bytes(<const uint32_t *> data, a, e, out)


cdef int hf_vocab(ModelT *M, dict vocab) except -1:
    """model.vocab into the model's tokens; NOT_PLAIN for a key that is not a
    form or an id that is not an int in [0, 2**31) (model_index then checks
    repeats and the single bytes)."""
    cdef Py_ssize_t pos = 0, total = 0, k = 0, m = 0, got
    cdef PyObject *key
    cdef PyObject *value
    cdef long long v
    cdef int overflow
    cdef int32_t top = -1
    while PyDict_Next(vocab, &pos, &key, &value):
        if type(<object> key) is not str or not PyLong_CheckExact(<object> value):
            return NOT_PLAIN
        total += PyUnicode_GET_LENGTH(<object> key)
    if model_alloc(M, len(vocab), total) < 0:
        return -1
    pos = 0
    while PyDict_Next(vocab, &pos, &key, &value):
        v = PyLong_AsLongLongAndOverflow(<object> value, &overflow)
        if overflow or not 0 <= v < ID_LIMIT:
            return NOT_PLAIN
        got = form_bytes(<str> key, 0, PyUnicode_GET_LENGTH(<object> key), M.arena + m)
        if got < 0:
            return NOT_PLAIN
        M.off[k] = m
        M.lens[k] = <int32_t> got
        M.ids[k] = <int32_t> v
        if v > top:
            top = <int32_t> v
        m += got
        k += 1
    M.n_tok = k
    M.arena_len = m
    M.max_id = top
    return 0


cdef int hf_parts(object merge, uint8_t *buf, Py_ssize_t room, Py_ssize_t *la, Py_ssize_t *lb) except -1:
    """One merge ("a b", or [a, b]) as its parts' bytes, end to end in buf;
    NOT_PLAIN where the reference reader would fail or differ."""
    cdef str a, b
    cdef Py_ssize_t n, sp = -1, i
    if type(merge) is str:
        a = <str> merge
        n = PyUnicode_GET_LENGTH(a)
        for i in range(n):
            if PyUnicode_READ_CHAR(a, i) == 32:
                if sp >= 0:
                    return NOT_PLAIN
                sp = i
        if sp < 1 or n - sp - 1 > room or sp > room:
            return NOT_PLAIN
        la[0] = form_bytes(a, 0, sp, buf)
        lb[0] = form_bytes(a, sp + 1, n, buf + (la[0] if la[0] > 0 else 0))
    elif type(merge) is list and len(<list> merge) == 2:
        if type((<list> merge)[0]) is not str or type((<list> merge)[1]) is not str:
            return NOT_PLAIN
        a = (<list> merge)[0]
        b = (<list> merge)[1]
        if PyUnicode_GET_LENGTH(a) > room or PyUnicode_GET_LENGTH(b) > room:
            return NOT_PLAIN
        la[0] = form_bytes(a, 0, PyUnicode_GET_LENGTH(a), buf)
        lb[0] = form_bytes(b, 0, PyUnicode_GET_LENGTH(b), buf + (la[0] if la[0] > 0 else 0))
    else:
        return NOT_PLAIN
    return NOT_PLAIN if la[0] < 0 or lb[0] < 0 else 0


cdef int hf_merges(ModelT *M, list merges) except -1:
    """model.merges into the model's merges, in order: each one's parts and
    their join looked up, 16 merges' lookups fetched at a time; NOT_PLAIN
    for a part or a join that is not a token, or a pair given twice (the
    reference reader names it: a repeated pair makes its token twice, so
    only the pairs of tokens made more than once are kept to compare)."""
    cdef Py_ssize_t r, r0, end, j, k, room = 0, step
    cdef Py_ssize_t la[16]
    cdef Py_ssize_t lb[16]
    cdef uint64_t keys[48]
    cdef uint8_t *buf
    cdef uint8_t *p
    cdef const VSlot *x
    cdef const VSlot *y
    cdef const VSlot *z
    cdef U64Map seen
    cdef int32_t *first = <int32_t *> malloc((M.n_tok + 1) * sizeof(int32_t))
    cdef int err = 0
    for k in range(M.n_tok):
        if M.lens[k] > room:
            room = M.lens[k]
    step = 2 * room + 8
    free(M.merges)
    M.merges = <MergeRec *> malloc((len(merges) + 1) * sizeof(MergeRec))
    buf = <uint8_t *> malloc(16 * step)
    memset(&seen, 0, sizeof(U64Map))
    try:
        if M.merges == NULL or buf == NULL or first == NULL or u64map_init(&seen, 16) < 0:
            return -1
        memset(first, 0xFF, (M.n_tok + 1) * sizeof(int32_t))
        r0 = 0
        while r0 < len(merges):
            end = r0 + 16 if r0 + 16 < len(merges) else len(merges)
            for r in range(r0, end):
                j = r - r0
                p = buf + j * step
                err = hf_parts(merges[r], p, room, &la[j], &lb[j])
                if err != 0:
                    return err
                keys[3 * j] = vkey(p, la[j])
                keys[3 * j + 1] = vkey(p + la[j], lb[j])
                keys[3 * j + 2] = vkey(p, la[j] + lb[j])
                prefetch(&M.index[vhome(M, keys[3 * j])])
                prefetch(&M.index[vhome(M, keys[3 * j + 1])])
                prefetch(&M.index[vhome(M, keys[3 * j + 2])])
            for r in range(r0, end):
                j = r - r0
                p = buf + j * step
                x = vfind(M, keys[3 * j], p, la[j])
                y = vfind(M, keys[3 * j + 1], p + la[j], lb[j])
                z = vfind(M, keys[3 * j + 2], p, la[j] + lb[j])
                if x == NULL or y == NULL or z == NULL:
                    return NOT_PLAIN
                M.merges[r].left = x.id
                M.merges[r].right = y.id
                M.merges[r].id = z.id
                if first[z.k] < 0:   # the first merge of its token: no repeat
                    first[z.k] = <int32_t> r
                    continue
                # a token made again: the pairs of its merges go to `seen`
                k = (<Py_ssize_t> M.merges[first[z.k]].left << 32) | M.merges[first[z.k]].right
                if u64map_put(&seen, <uint64_t> k, first[z.k]) < 0:
                    return -1
                k = (<Py_ssize_t> x.id << 32) | y.id
                if u64map_get(&seen, <uint64_t> k, -1) >= 0:
                    return NOT_PLAIN
                if u64map_put(&seen, <uint64_t> k, r) < 0:
                    return -1
            r0 = end
        M.n_merges = len(merges)
        return 0
    finally:
        free(buf)
        free(first)
        u64map_free(&seen)


def _hf_model(vocab, merges):
    """Core.hf_model: a _Model of a tokenizer.json's model.vocab (form -> id)
    and model.merges ("a b" or [a, b] each, in rank order), or None when it
    is not the plain case (the Tokenizer then reads them itself)."""
    cdef _Model model = _Model.__new__(_Model)
    cdef int err
    if type(vocab) is not dict or type(merges) is not list:
        return None
    err = hf_vocab(&model.M, <dict> vocab)
    if err == 0:
        with nogil:
            err = model_index(&model.M)
    if err == 0:
        err = hf_merges(&model.M, <list> merges)
    return _checked(model, err)
