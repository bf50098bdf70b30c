# Counting pre-tokens in C (Core.counter): a hash table of pre-token bytes
# -> count that the trainer reads directly.
# Needs: bytes_reserve, hash_bytes (_bpe_common.pxi); _build_flags, _which,
# as_str, next_pretoken, P_NONE, Utf8, utf8_of, utf8_start (_bpe_scanner.pxi);
# _Pattern, compiled_pattern, P_PAT, pat_next, pn_init, pn_pat, pn_state
# (_bpe_pattern.pxi).

cdef struct CEntry:
    int64_t key_off     # into the counter's keys, which hold them end to end
    int64_t count
    int32_t key_len
    uint32_t hlo        # the low 32 bits of the key's hash: where it goes in the slots

cdef class _Counter:
    """Pre-token (UTF-8) -> count in a C hash map: no Python object per
    pre-token occurrence, only one per distinct pre-token at the end.
    Entries (24 bytes: key offset, count, length, hash) are kept in the order
    they came, their keys end to end; open addressing over 8-byte slots
    (the high 32 bits of the hash, and the entry's number + 1; 0: empty)."""
    cdef uint64_t *slots
    cdef Py_ssize_t mask
    cdef CEntry *ents
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef uint8_t *keys
    cdef Py_ssize_t keys_len
    cdef Py_ssize_t keys_cap
    cdef int which
    cdef object findall
    cdef object matcher          # a compiled pattern (P_PAT)
    cdef const pn_pat *pat

    def __cinit__(self, pattern):
        if self.init_table() < 0:
            raise MemoryError()
        self.which = _which(pattern)
        if self.which != P_NONE:
            _build_flags()
        else:
            self.findall = _py.pretokenizer(pattern)
            self.matcher = compiled_pattern(pattern)
            if self.matcher is not None:
                self.which = P_PAT
                self.pat = &(<_Pattern> self.matcher).P

    def __dealloc__(self):
        free(self.slots)
        free(self.ents)
        free(self.keys)

    cdef int init_table(self) noexcept nogil:
        self.slots = <uint64_t *> calloc(1 << 12, sizeof(uint64_t))
        if self.slots == NULL:
            return -1
        self.mask = (1 << 12) - 1
        return 0

    cdef int grow(self) noexcept nogil:
        """Twice the slots (the entries stay where they are)."""
        cdef Py_ssize_t cap = (self.mask + 1) * 2, i, j
        cdef uint64_t *old = self.slots
        cdef uint64_t *s = <uint64_t *> calloc(cap, sizeof(uint64_t))
        if s == NULL:
            return -1
        for j in range(self.mask + 1):
            if old[j]:
                i = <Py_ssize_t> (self.ents[(old[j] & 0xFFFFFFFFULL) - 1].hlo & <uint64_t> (cap - 1))
                while s[i]:
                    i = (i + 1) & (cap - 1)
                s[i] = old[j]
        free(old)
        self.slots = s
        self.mask = cap - 1
        return 0

    cdef int put(self, const uint8_t *s, Py_ssize_t n, int64_t k) noexcept nogil:
        cdef uint64_t h = hash_bytes(s, n), tag = h & 0xFFFFFFFF00000000ULL, v
        cdef Py_ssize_t i = <Py_ssize_t> (h & <uint64_t> self.mask), cap
        cdef CEntry *e
        cdef void *p
        while True:
            v = self.slots[i]
            if v == 0:
                break
            if (v & 0xFFFFFFFF00000000ULL) == tag:
                e = &self.ents[(v & 0xFFFFFFFFULL) - 1]
                if e.key_len == n and memcmp(self.keys + e.key_off, s, n) == 0:
                    e.count += k
                    return 0
            i = (i + 1) & self.mask
        if (self.n + 1) * 2 > self.mask + 1:
            if self.n >= <Py_ssize_t> 0x7FFFFFFF or self.grow() < 0:  # slots stay within 2**32: hlo places them
                return -1
            i = <Py_ssize_t> (h & <uint64_t> self.mask)
            while self.slots[i]:
                i = (i + 1) & self.mask
        if self.n == self.cap:
            cap = self.cap * 2 if self.cap else 1024
            p = realloc(self.ents, cap * sizeof(CEntry))
            if p == NULL:
                return -1
            self.ents = <CEntry *> p
            self.cap = cap
        if bytes_reserve(&self.keys, &self.keys_cap, self.keys_len + n) < 0:
            return -1
        memcpy(self.keys + self.keys_len, s, n)
        e = &self.ents[self.n]
        e.key_off = self.keys_len
        e.key_len = <int32_t> n
        e.count = k
        e.hlo = <uint32_t> h
        self.keys_len += n
        self.n += 1
        self.slots[i] = tag | <uint64_t> self.n
        return 0

    def add(self, text):
        """Count the pre-tokens of text (repaired, no special tokens in it)."""
        cdef bytes b
        cdef Utf8 u
        cdef int err = 0
        cdef Py_ssize_t stop = 0, chars = 0, j
        cdef bint by_regex = self.which == P_NONE
        text = as_str(text)
        if self.which != P_NONE:
            utf8_of(text, &u)
            try:
                with nogil:
                    err = count_text(self, u.data, u.len, &stop)
                    if err == -3:   # the code points before the last pre-token counted
                        for j in range(stop):
                            chars += utf8_start(u.data[j])
            finally:
                free(u.owned)
        if err == -3:   # a compiled pattern gave up: the regex, with its time limit, from there
            err = 0
            text = text[chars:]
            by_regex = True
        if by_regex:
            for token in self.findall(text):
                if not token:
                    continue  # a custom pattern may match the empty string
                b = token.encode("utf-8")
                err = self.put(<const uint8_t *> PyBytes_AS_STRING(b), len(b), 1)
                if err:
                    break
        if err:
            raise MemoryError()

    def pack(self):
        """(keys end to end, int32 lengths, int64 counts) as three bytes objects:
        what a worker sends back instead of a dict of Python objects."""
        cdef Py_ssize_t i
        cdef bytes keys = PyBytes_FromStringAndSize(<const char *> self.keys, self.keys_len)
        cdef bytes lens = PyBytes_FromStringAndSize(NULL, self.n * sizeof(int32_t))
        cdef bytes cnts = PyBytes_FromStringAndSize(NULL, self.n * sizeof(int64_t))
        cdef int32_t *lp = <int32_t *> PyBytes_AS_STRING(lens)
        cdef int64_t *cp = <int64_t *> PyBytes_AS_STRING(cnts)
        for i in range(self.n):
            lp[i] = self.ents[i].key_len
            cp[i] = self.ents[i].count
        return keys, lens, cnts

    def add_packed(self, packed):
        """Add the counts of another counter's pack()."""
        cdef bytes keys, lens, cnts
        keys, lens, cnts = packed
        cdef const uint8_t *kp = <const uint8_t *> PyBytes_AS_STRING(keys)
        cdef const int32_t *lp = <const int32_t *> PyBytes_AS_STRING(lens)
        cdef const int64_t *cp = <const int64_t *> PyBytes_AS_STRING(cnts)
        cdef Py_ssize_t i, n = len(lens) // sizeof(int32_t), off = 0
        if len(cnts) != n * sizeof(int64_t):
            raise ValueError("malformed packed counts")
        for i in range(n):
            if lp[i] < 0 or off + lp[i] > len(keys):
                raise ValueError("malformed packed counts")
            if self.put(kp + off, lp[i], cp[i]) < 0:
                raise MemoryError()
            off += lp[i]

    def clear(self):
        """Forget every count (and give the memory back)."""
        free(self.slots)
        free(self.ents)
        free(self.keys)
        self.slots = NULL
        self.ents = NULL
        self.keys = NULL
        self.n = self.cap = self.keys_len = self.keys_cap = 0
        if self.init_table() < 0:
            raise MemoryError()

    def __len__(self):
        return self.n

    def to_dict(self):
        cdef dict out = {}
        cdef Py_ssize_t i
        for i in range(self.n):
            out[PyBytes_FromStringAndSize(<char *> self.keys + self.ents[i].key_off, self.ents[i].key_len)] = \
                self.ents[i].count
        return out


cdef int count_text(_Counter counter, const uint8_t *s, Py_ssize_t n, Py_ssize_t *stop) noexcept nogil:
    """Count every pre-token of s (UTF-8) by the native scanner; -3: a
    compiled pattern spent its budget (*stop: where its pre-tokens end)."""
    cdef Py_ssize_t i = 0, e
    cdef pn_state st
    if counter.which == P_PAT:
        pn_init(&st, counter.pat, s, n)
        while i < n:
            e = pat_next(&st, i)
            if e < 0:
                stop[0] = i
                return -3
            if counter.put(s + i, e - i, 1) < 0:
                return -1
            i = e
        return 0
    while i < n:
        e = next_pretoken(counter.which, s, i, n)
        if counter.put(s + i, e - i, 1) < 0:
            return -1
        i = e
    return 0
