# The Python-facing core: Core (what bpe_fallback.Tokenizer holds), its
# results (_Ids and the _Flatten iterator of encode_iterable), the per-thread
# _Packer, and the small helpers Core exposes (repair, pack_ids).
# Needs: big_alloc, IVec, ivec_free, PyLong_AsUnsignedLong, PyUnicode_DATA,
# PyUnicode_GET_LENGTH, PyUnicode_IS_ASCII, PyUnicode_KIND (_bpe_common.pxi);
# fill_items, gc_untrack, ids_to_list, incref, list_adopt, list_items, Py_DECREF,
# PyMem_Free, PyMem_Malloc, PyTypeObject, set_iternext, SHORTCUTS, take_counted
# (_bpe_cpython.pxi); _build_flags, _which, as_str, has_surrogate, P_NONE,
# Utf8, utf8_chars, utf8_of, utf8_offset (_bpe_scanner.pxi); native_pretokens
# (_bpe_bitscan.pxi); _Overrun, _Pattern, compiled_pattern, P_PAT,
# pattern_pretokens (_bpe_pattern.pxi); _Counter (_bpe_counter.pxi);
# _learn_merges (_bpe_trainer.pxi); _Cache, FSlot, PCache, SPARE_IDS
# (_bpe_cache.pxi); backtrack, CoreT, rank_merge, Scratch, scratch_free
# (_bpe_encoder.pxi); atoms_free (_bpe_atoms.pxi); flat_reset, piece_flat,
# scan_text (_bpe_scan.pxi); alloc_core, build_atoms, build_flat, build_tables,
# IdMap, idmap_free, idmap_init, MergeRec, TrieBuild (_bpe_tables.pxi); _hf_model,
# _Model, _native_model, _tiktoken_model, ModelT (_bpe_load.pxi).

def _repair(text):
    """Core.repair (see repaired)."""
    return repaired(text)


cdef inline object repaired(object text):
    """bpe_fallback.Core.repair after a scan for surrogates without the GIL
    (none, the common case: the text as it is; an ASCII or Latin-1 str is
    returned at once)."""
    if type(text) is str and PyUnicode_KIND(text) == 1:
        return text
    return repaired_wide(text)


cdef object repaired_wide(object text):
    cdef int kind
    cdef bint bad
    cdef const void *data
    cdef Py_ssize_t n
    if type(text) is not str:
        return _py.Core.repair(text)
    kind = PyUnicode_KIND(text)
    data = PyUnicode_DATA(text)
    n = PyUnicode_GET_LENGTH(text)
    with nogil:
        if kind == 2:
            bad = has_surrogate(<const uint16_t *> data, n)
        else:
            bad = has_surrogate(<const uint32_t *> data, n)
    return _py.Core.repair(text) if bad else text


def _pack_ids(list ids, int itemsize):
    """Core.pack_ids: a list of ids as little-endian unsigned ints of
    `itemsize` (2 or 4) bytes."""
    cdef Py_ssize_t n = len(ids), i
    cdef unsigned long v, limit = 0xFFFF if itemsize == 2 else 0xFFFFFFFF
    if itemsize != 2 and itemsize != 4:
        raise ValueError(f"itemsize must be 2 or 4, not {itemsize}")
    out = PyBytes_FromStringAndSize(NULL, n * itemsize)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    for i in range(n):
        v = PyLong_AsUnsignedLong(<object> PyList_GET_ITEM(ids, i))
        if v > limit:
            raise OverflowError(f"id {v} does not fit {itemsize} bytes")
        put_le(p, <uint32_t> v, itemsize)
        p += itemsize
    return out


cdef inline void put_le(uint8_t *p, uint32_t v, int itemsize) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    if itemsize == 4:
        p[2] = (v >> 16) & 0xFF
        p[3] = v >> 24


cdef Py_ssize_t pack_le(const int32_t *ids, Py_ssize_t n, int itemsize, uint8_t *p) noexcept nogil:
    """Write ids as little-endian unsigned ints of `itemsize` bytes; the index
    of the first id that does not fit, or -1."""
    cdef Py_ssize_t i
    cdef uint32_t limit = 0xFFFF if itemsize == 2 else 0xFFFFFFFF
    for i in range(n):
        if <uint32_t> ids[i] > limit:
            return i
        put_le(p, <uint32_t> ids[i], itemsize)
        p += itemsize
    return -1


from cpython.buffer cimport PyBuffer_FillInfo


cdef extern from "_bpe_core.h":
    bint BIG_ENDIAN "BPE_BIG_ENDIAN"


cdef class _PackedIds:
    """pack_text's result for a long text: the ids as little-endian uint32 in
    the buffer the core wrote them to (no copy), read-only through the buffer
    protocol (numpy.frombuffer, memoryview, bytes())."""
    cdef IVec v

    def __dealloc__(self):
        ivec_free(&self.v)

    def __len__(self):
        return self.v.len * 4

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.v.data, self.v.len * 4, 1, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


cdef _PackedIds packed_in_place(IVec *v):
    """The ids of `v` as a _PackedIds over v's own buffer (taken: v is left
    empty), trimmed to its length; each id is a uint32 already (ids are not
    negative): bytes swapped on a big-endian machine only."""
    cdef _PackedIds packed = _PackedIds.__new__(_PackedIds)
    cdef Py_ssize_t i
    cdef int32_t *trimmed
    if BIG_ENDIAN:
        for i in range(v.len):
            put_le(<uint8_t *> &v.data[i], <uint32_t> v.data[i], 4)
    if v.len < v.cap:
        trimmed = <int32_t *> realloc(v.data, (v.len if v.len else 1) * sizeof(int32_t))
        if trimmed != NULL:
            v.data = trimmed
            v.cap = v.len
    packed.v = v[0]
    memset(v, 0, sizeof(IVec))
    return packed


cdef class _Ids:
    """Ids in an int32 buffer (encode_prefix's result): a sequence for len(),
    iteration and list(); flatten() reads the buffer without a list."""
    cdef IVec v
    cdef list objs   # the core's int object per id, or None (sparse ids)

    def __dealloc__(self):
        ivec_free(&self.v)

    def __len__(self):
        return self.v.len

    def __getitem__(self, k):
        return self.tolist()[k]

    def __iter__(self):
        return _Flatten((self,))

    def __eq__(self, other):
        return self.tolist() == (other.tolist() if isinstance(other, _Ids) else other)

    def tolist(self):
        cdef Py_ssize_t i
        return [self.item(i) for i in range(self.v.len)]

    cdef inline object item(self, Py_ssize_t i):
        if self.objs is None:
            return self.v.data[i]
        return <object> PyList_GET_ITEM(self.objs, self.v.data[i])


cdef extern from "_bpe_core.h":
    ctypedef struct BpeFlatState:
        const int32_t *data
        Py_ssize_t i
        Py_ssize_t n
        PyObject **objs
        PyObject *list
    Py_ssize_t bpe_flat_offset
    PyObject *(*bpe_flat_refill)(PyObject *) except? NULL
    PyObject *bpe_flat_next(PyObject *) except? NULL


cdef object _END = object()
cdef Py_ssize_t HINT_MAX = 1 << 23   # items a _Flatten's length hint adds to what it holds
cdef Py_ssize_t HOLD_GIL_BYTES = 1024  # shorter texts are scanned with the GIL held
cdef enum: TEXT_GROUP = 64   # encode_texts: texts scanned in one stretch without the GIL


cdef bint valid_utf8(const uint8_t *s, Py_ssize_t n) noexcept nogil:
    """Whether s[:n] is UTF-8 as Python's strict decoder reads it (no overlong
    forms, no surrogates, nothing above U+10FFFF)."""
    cdef Py_ssize_t i = 0, k, need
    cdef uint8_t c, lo, hi
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            need = 1
        elif 0xE0 <= c <= 0xEF:
            need = 2
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            need = 3
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            return False
        if i + need >= n:   # (the sequence runs past the end)
            return False
        if not lo <= s[i + 1] <= hi:
            return False
        for k in range(2, need + 1):
            if not 0x80 <= s[i + k] <= 0xBF:
                return False
        i += need + 1
    return True


cdef int scan_chars(const CoreT *T, const Utf8 *u, Py_ssize_t n, bint ascii, Py_ssize_t limit,
                    PCache *cache, IVec *out, Py_ssize_t *chars) noexcept nogil:
    """scan_text over a str's UTF-8 (n code points) up to code point `limit`;
    *chars: the code points its pre-tokens cover."""
    cdef Py_ssize_t byte_limit, cut = 0
    cdef int err
    if limit >= n:
        byte_limit = (<Py_ssize_t> 1) << 62
    elif ascii:
        byte_limit = limit
    else:  # where code point `limit` starts
        byte_limit = utf8_offset(u.data, u.len, n, limit)
    err = scan_text(T, u.data, u.len, cache, out, byte_limit, &cut)
    chars[0] = cut if ascii else utf8_chars(u.data, u.len, n, cut)
    return err


cdef class _Fill:
    """One thread's share of Core.join_ids: its parts' ids written into the
    shared item array from `start` on, without the GIL, counted in its own
    cache's scratch space (references taken by the caller, with the GIL)."""
    cdef PyObject **items
    cdef PyObject **by_id
    cdef _Cache cache
    cdef list parts      # _Ids, one after another
    cdef Py_ssize_t start, end, distinct

    def run(self):
        cdef _Ids ids
        cdef Py_ssize_t at = self.start
        for p in self.parts:
            ids = <_Ids> p
            with nogil:
                self.distinct = fill_items(self.by_id, ids.v.data, ids.v.len, self.items + at,
                                           self.cache.c.id_count, self.cache.c.id_seen,
                                           self.distinct)
            at += ids.v.len


cdef class _Flatten:
    """The items of an iterable of id sequences, one after another (what
    itertools.chain.from_iterable does), reading _Ids buffers directly: a
    window's references are added in one tight loop when it comes, so
    handing out an item is a pointer read."""
    cdef BpeFlatState st
    cdef object windows
    cdef _Ids ids        # the window st reads
    cdef list win        # or the list window st reads
    cdef object it       # or an iterator over a window of another kind
    cdef object estimate # ids so far -> the expected total (None: no estimate)
    cdef Py_ssize_t seen # the items of the windows taken so far
    cdef bint started
    cdef object error    # what taking the first window raised in __length_hint__

    def __cinit__(self, windows, estimate=None):
        self.windows = iter(windows)
        self.estimate = estimate

    def __length_hint__(self):
        """The items still to come, estimated (list() sizes its result by
        this, instead of growing it step by step): before the first item,
        the first window is taken now.  What that raises is raised by the
        next next(): list() would take a TypeError here for "no hint"."""
        cdef Py_ssize_t left
        if not self.started:
            try:
                self.advance()   # (which marks the iterator started)
            except BaseException as e:  # noqa: B036 - raised again by next()
                self.error = e
                return 0
        left = self.st.n - self.st.i
        if self.st.list != NULL:   # (a list changed under the iterator may be shorter)
            left = max(PyList_GET_SIZE(<object> self.st.list) - self.st.i, 0)
        if self.estimate is None:
            return left
        try:   # a guess: one that fails or does not fit is none
            guess = self.estimate(self.seen)
            guess = min(max(guess - self.seen, 0), HINT_MAX)
        except Exception:  # noqa: BLE001
            return left
        return left + <Py_ssize_t> guess

    def __dealloc__(self):
        self.drop()

    def __iter__(self):
        return self

    def __next__(self):  # bpe_flat_next is the type's slot in most builds (set_iternext)
        cdef PyObject *o = bpe_flat_next(<PyObject *> self)
        if o == NULL:
            raise StopIteration
        r = <object> o
        Py_DECREF(o)  # r holds it now
        return r

    cdef void drop(self) noexcept:
        """Give back the references of the window's items not handed out."""
        cdef Py_ssize_t k
        for k in range(self.st.i, self.st.n):
            Py_DECREF(self.st.objs[self.st.data[k]])
        self.st.i = self.st.n = 0
        self.st.list = NULL
        self.ids = None
        self.win = None

    cdef int load(self, _Ids ids) except -1:
        """Read `ids` next, adding the reference of each item it will hand out."""
        cdef Py_ssize_t n = ids.v.len, k
        cdef const int32_t *data = ids.v.data
        cdef PyObject **objs = list_items(ids.objs)
        for k in range(n):  # a tight loop: the increments overlap
            incref(objs[data[k]])
        self.ids = ids
        self.st.data = data
        self.st.objs = objs
        self.st.n = n
        self.st.i = 0
        return 0

    cdef bint advance(self) except -1:
        """Take the next window that has items (False: none is left)."""
        cdef _Ids ids
        self.started = True
        while True:
            window = next(self.windows, _END)
            if window is _END:
                return False
            if type(window) is _Ids and (<_Ids> window).objs is not None:
                ids = <_Ids> window
                if ids.v.len:
                    self.load(ids)
                    self.seen += ids.v.len
                    return True
            elif type(window) is _Ids:
                self.it = iter((<_Ids> window).tolist())
                return True
            elif type(window) is list:
                if PyList_GET_SIZE(window):
                    self.win = window
                    self.st.list = <PyObject *> window
                    self.st.i = 0
                    self.seen += PyList_GET_SIZE(window)
                    return True
            else:
                self.it = iter(window)
                return True


cdef PyObject *_flat_refill(PyObject *selfp) except? NULL:
    """The next item after a window ends (NULL, no error: the end)."""
    cdef _Flatten self = <_Flatten> selfp
    cdef object item
    if self.error is not None:
        item, self.error = self.error, None
        raise item
    while True:
        if self.it is not None:
            item = next(self.it, _END)
            if item is not _END:
                Py_INCREF(item)
                return <PyObject *> item
            self.it = None
        self.drop()
        if not self.advance():
            return NULL
        if self.it is None:   # a window of ids or a list, not empty: its first item
            return bpe_flat_next(selfp)


cdef void _install_flat_next():
    """Let C code find a _Flatten's state, and make bpe_flat_next its next()."""
    global bpe_flat_offset, bpe_flat_refill
    cdef _Flatten probe = _Flatten.__new__(_Flatten, ())
    bpe_flat_offset = <char *> &probe.st - <char *> <PyObject *> probe
    bpe_flat_refill = _flat_refill
    set_iternext(<PyTypeObject *> _Flatten, bpe_flat_next)


_install_flat_next()


cdef extern from "_bpe_core.h":
    bint bpe_holds_any(const uint8_t *s, size_t n, const uint8_t **names,
                       const Py_ssize_t *lens, Py_ssize_t k) noexcept nogil


cdef inline bint holds_any(const uint8_t *s, Py_ssize_t n, const uint8_t **names,
                           const Py_ssize_t *lens, Py_ssize_t k) noexcept nogil:
    """Whether the UTF-8 s[:n] holds one of the k strings (UTF-8 too, so a
    match is a match of the strs): one memchr pass per distinct first byte
    (one for all of OpenAI's, which start with "<|"), not one search a name."""
    return bpe_holds_any(s, <size_t> n, names, lens, k)


cdef list stop_names(object stop):
    """The strs of `stop` as UTF-8 (a lone surrogate kept as its bytes, which
    no repaired text holds), TypeError for anything else."""
    return [as_str(name).encode("utf-8", "surrogatepass") for name in stop]


cdef bint holds_names(str text, list names, bint keep) except -1:
    """Whether `text` holds one of `names` (stop_names): searched in its UTF-8
    (a lone surrogate: UnicodeEncodeError, as utf8_of); `keep`: CPython keeps
    it with the str, for the native scan that follows."""
    cdef Utf8 u
    cdef Py_ssize_t k = len(names), i
    cdef bint found
    cdef const uint8_t **at = <const uint8_t **> malloc((k + 1) * sizeof(uint8_t *))
    cdef Py_ssize_t *lens = <Py_ssize_t *> malloc((k + 1) * sizeof(Py_ssize_t))
    u.owned = NULL
    try:
        if at == NULL or lens == NULL:
            raise MemoryError()
        for i in range(k):
            at[i] = <const uint8_t *> PyBytes_AS_STRING(names[i])
            lens[i] = PyBytes_GET_SIZE(names[i])
        utf8_of(text, &u, keep)
        if u.len < HOLD_GIL_BYTES:
            found = holds_any(u.data, u.len, at, lens, k)
        else:
            with nogil:
                found = holds_any(u.data, u.len, at, lens, k)
        return found
    finally:
        free(u.owned)
        free(<void *> at)
        free(lens)


cdef class Core:
    """The compiled core: the hot work of one tokenizer, in C.  It keeps
    ``bpe_fallback.CoreProtocol``, with the same results as
    ``bpe_fallback.Core``; a ``bpe.Tokenizer`` holds one.

    Its tables (CoreT: the trie over every token's bytes, the core's token
    numbers, the merges by pair; the id tables for decoding) are read-only
    once built, so threads share them; each call borrows a cache (pre-token
    -> ids) from a small pool, so threads encode at once, without the GIL.

    >>> core = Core(PATTERNS["gpt2"], {bytes([b]): b for b in range(256)} | {b"hi": 256},
    ...             [(104, 105, 256)], {})
    >>> core.encode_text("hi hi"), core.encode_pieces(["hi", " hi"]), core.decode_bytes([256, 33])
    ([256, 32, 256], [256, 32, 256], b'hi!')
    """
    cdef CoreT T
    cdef object rx_findall
    cdef object matcher        # the compiled pattern T.pat points into (a _Pattern)
    cdef object pattern        # a regex str, or a Pipeline
    cdef tuple forms           # a Pipeline of normalizers and one split the native scanners
                               # run: its Unicode forms, applied before the scan (else None)
    cdef list id_objs          # the int object of every id, shared by all results
    cdef bytes dec_buf         # every token's bytes, end to end
    cdef int64_t *dec_off      # id -> offset in dec_buf
    cdef int32_t *dec_len      # id -> length (-1: no such id)
    cdef Py_ssize_t n_ids
    cdef dict sparse           # id -> bytes, when the ids are too sparse for the byte table
    cdef list spare            # caches not in use, the most recently used last
    cdef Py_ssize_t max_spare
    cdef MergeRec *merge_recs  # the merges (for merges())
    cdef Py_ssize_t n_merges
    cdef dict specials
    cdef bint seed_ids         # the decoder's tables hold every token exactly (build_decoder):
                               # the flat table's template comes from them
    cdef tuple last_stop       # (a stop tuple of plain strs, its stop_names): see names_of

    releases_gil = True

    def __cinit__(self, pattern, ranks, merges, specials, _Model model=None):
        if model is None:
            _py.Core.check_model(pattern, ranks, merges, specials)
        else:
            _py.Core.check_model(pattern, None, None, specials, model.has_id)
        self.pattern = pattern
        if isinstance(pattern, _py.Pipeline) and len(pattern.splits) == 1 and (
                _which(pattern.splits[0]) != P_NONE
                or compiled_pattern(pattern.splits[0]) is not None):
            # normalized first (repaired_first), then scanned as the one split
            self.forms = tuple(pattern.normalizers)
            pattern = pattern.splits[0]
        self.T.which = _which(pattern)
        if self.T.which != P_NONE:
            _build_flags()
        else:
            self.rx_findall = _py.pretokenizer(pattern)
            self.matcher = compiled_pattern(pattern)
            if self.matcher is not None:
                self.T.which = P_PAT
                self.T.pat = &(<_Pattern> self.matcher).P
        self.spare = []
        self.max_spare = (os.cpu_count() or 1) + 1
        self.specials = dict(specials)
        if model is not None:
            self.build_model(&model.M)
        else:
            self.build(ranks, merges, [ranks[bytes([b])] for b in range(256)])

    # start-up: the C readers (_bpe_load.pxi) and a core from what they read
    tiktoken_model = staticmethod(_tiktoken_model)
    native_model = staticmethod(_native_model)
    hf_model = staticmethod(_hf_model)
    check_model = staticmethod(_py.Core.check_model)
    check_learn_options = staticmethod(_py.Core.check_learn_options)

    @classmethod
    def from_model(cls, pattern, _Model model not None, dict specials):
        """A core from a model read by tiktoken_model or native_model."""
        if not model.M.ready:
            raise ValueError("from_model needs a model that tiktoken_model or native_model read")
        return cls(pattern, None, None, specials, model)

    def tokens(self):
        """Core.tokens: id -> bytes of every token but the special tokens, in id order."""
        cdef dict tokens = {}
        cdef Py_ssize_t i
        cdef set special_ids = set(self.specials.values())
        cdef const char *buf
        if self.sparse is not None:
            for i in sorted(self.sparse):
                if i not in special_ids:
                    tokens[i] = self.sparse[i]
            return tokens
        buf = PyBytes_AS_STRING(self.dec_buf)
        for i in range(self.n_ids):
            if self.dec_len[i] >= 0 and i not in special_ids:
                tokens[i] = PyBytes_FromStringAndSize(buf + self.dec_off[i], self.dec_len[i])
        return tokens

    def merges(self):
        """Core.merges: (left id, right id, merged id) of each merge, in rank order."""
        cdef Py_ssize_t r
        return [(self.merge_recs[r].left, self.merge_recs[r].right, self.merge_recs[r].id)
                for r in range(self.n_merges)]

    @staticmethod
    def counter(pattern):
        """A pre-token counter in C (_Counter): a function, as the contract has it."""
        return _Counter(pattern)

    learn_merges = staticmethod(_learn_merges)
    repair = staticmethod(_repair)
    pack_ids = staticmethod(_pack_ids)

    cdef _Cache take(self):
        """A cache for one call: a spare one (the warmest), or a new one."""
        cdef _Cache cache = self.spare.pop() if self.spare else _Cache()
        self.prepare(cache)
        return cache

    cdef int prepare(self, _Cache cache) except -1:
        """The flat table's template and pair grid (at the first encode), and
        the cache's own copy of the template (at its first use)."""
        cdef int err = 0
        cdef uint8_t *skip = NULL
        cdef const uint8_t *buf = NULL
        if self.T.flat == NULL:
            if self.seed_ids and self.id_objs is not None:
                skip = <uint8_t *> calloc(self.n_ids + 1, 1)
                if skip == NULL:
                    raise MemoryError()
                for i in self.specials.values():
                    skip[<Py_ssize_t> i] = 1
                buf = <const uint8_t *> PyBytes_AS_STRING(self.dec_buf)
            # with the GIL held: no other thread sees a template half built
            err = build_flat(&self.T, buf, self.dec_off, self.dec_len, self.n_ids, skip)
            if err == 0 and buf != NULL:
                err = build_atoms(&self.T, buf, self.dec_off, self.dec_len, self.n_ids, skip)
            free(skip)
            if err < 0:
                raise MemoryError()
        if cache.c.flat_of != <const void *> &self.T:
            self.own_flat(cache)
            flat_reset(&self.T, &cache.c)
        return 0

    cdef int own_flat(self, _Cache cache) except -1:
        """Room for a flat table of this core's size in the cache (its
        contents for the caller to fill)."""
        free(cache.c.flat)
        cache.c.flat = <FSlot *> big_alloc((<size_t> 1 << self.T.flat_bits) * sizeof(FSlot), 0)
        if cache.c.flat == NULL:
            cache.c.flat_of = NULL
            raise MemoryError()
        cache.c.flat_of = <const void *> &self.T
        cache.c.flat_limit = self.T.flat_limit
        return 0

    def reserve(self, threads):
        """A spare cache for each of `threads` threads about to encode, each
        knowing at least half of what the warmest spare cache has learned:
        the others are made copies of its flat table (new ones too, up to
        the pool's size).  An empty pool stays empty (nothing learned yet)."""
        cdef _Cache warm = None, cache
        cdef Py_ssize_t k, top, want = max(0, min(operator.index(threads), self.max_spare))
        for cache in self.spare:
            if cache.c.flat_of == <const void *> &self.T and (
                    warm is None or cache.c.flat_count > warm.c.flat_count):
                warm = cache
        # (a source past half its limit would reset soon after: copies of it
        # would reset, and be copied again, call after call)
        if warm is None or 2 * (warm.c.flat_count - self.T.flat_seeded) > \
                warm.c.flat_limit - self.T.flat_seeded:
            return
        while len(self.spare) < want:
            self.spare.insert(0, _Cache())
        top = len(self.spare)
        for k in range(top - want, top):
            cache = self.spare[k]
            if cache is not warm and (cache.c.flat_of != warm.c.flat_of or
                                      2 * (cache.c.flat_count - self.T.flat_seeded)
                                      < warm.c.flat_count - self.T.flat_seeded):
                self.copy_flat(cache, warm)

    cdef int copy_flat(self, _Cache dst, _Cache src) except -1:
        """dst's flat table a copy of src's (idle both: the GIL held, and
        neither is out of the pool)."""
        cdef size_t size = (<size_t> 1 << self.T.flat_bits) * sizeof(FSlot)
        cdef Py_ssize_t n = src.c.flat_ids_len
        cdef int32_t *ids
        if dst.c.flat_of != src.c.flat_of:
            self.own_flat(dst)
        if n > dst.c.flat_ids_cap:
            ids = <int32_t *> realloc(dst.c.flat_ids, n * sizeof(int32_t))
            if ids == NULL:
                raise MemoryError()
            dst.c.flat_ids = ids
            dst.c.flat_ids_cap = n
        if n:
            memcpy(dst.c.flat_ids, src.c.flat_ids, n * sizeof(int32_t))
        dst.c.flat_ids_len = n
        memcpy(dst.c.flat, src.c.flat, size)
        dst.c.flat_count = src.c.flat_count
        return 0

    cdef void give(self, _Cache cache):
        """Back to the pool, which keeps at most a few (one per CPU, and one)."""
        if len(self.spare) < self.max_spare:
            self.spare.append(cache)

    def __dealloc__(self):
        free(self.T.da)
        free(self.T.leaf)
        free(self.T.tok)
        free(self.T.t_id)
        free(self.T.pairs)
        free(self.T.bloom)
        free(self.T.wide_pairs)
        free(self.T.flat)
        free(self.T.pair1)
        free(self.T.canon)
        atoms_free(self.T.atoms)
        free(self.dec_off)
        free(self.dec_len)
        free(self.merge_recs)

    cdef int build_decoder(self, Py_ssize_t n_tok, const uint8_t *arena, const int64_t *off,
                           const int32_t *lens, const int32_t *ids, int32_t max_id) except -1:
        """Dense tables by id (every token's bytes end to end, the special
        tokens' after them), unless the ids are sparse: then a dict."""
        cdef Py_ssize_t total = 0, at, k, n
        cdef int32_t i
        cdef bytes t
        cdef char *p
        cdef dict encoded = {i: s.encode("utf-8")  # an id's first name decodes it
                             for s, i in reversed(self.specials.items())}
        self.n_ids = <Py_ssize_t> max_id + 1
        for i in encoded:
            if i >= self.n_ids:
                self.n_ids = <Py_ssize_t> i + 1
        if self.n_ids > 8 * (n_tok + len(encoded)) + (1 << 20):
            self.n_ids = 0
            self.id_objs = None
            self.dec_buf = b""
            self.sparse = {ids[k]: PyBytes_FromStringAndSize(<char *> arena + off[k], lens[k])
                           for k in range(n_tok)}
            self.sparse.update(encoded)
            return 0
        self.id_objs = list(range(self.n_ids))
        gc_untrack(self.id_objs)   # ints only, never handed out: no cycle to look for in it
        self.dec_off = <int64_t *> malloc(self.n_ids * sizeof(int64_t))
        self.dec_len = <int32_t *> malloc(self.n_ids * sizeof(int32_t))
        if self.dec_off == NULL or self.dec_len == NULL:
            raise MemoryError()
        for k in range(n_tok):
            total += lens[k]
        for t in encoded.values():
            total += PyBytes_GET_SIZE(t)
        self.dec_buf = PyBytes_FromStringAndSize(NULL, total)
        p = PyBytes_AS_STRING(self.dec_buf)
        for i in range(self.n_ids):
            self.dec_len[i] = -1
        at = 0
        self.seed_ids = True   # unless an id has two tokens, or a token and a special
        for k in range(n_tok):
            memcpy(p + at, arena + off[k], lens[k])
            if self.dec_len[ids[k]] >= 0:
                self.seed_ids = False
            self.dec_off[ids[k]] = at
            self.dec_len[ids[k]] = lens[k]
            at += lens[k]
        for i, t in encoded.items():
            if self.dec_len[i] >= 0:
                self.seed_ids = False
            n = PyBytes_GET_SIZE(t)
            memcpy(p + at, PyBytes_AS_STRING(t), n)
            self.dec_off[i] = at
            self.dec_len[i] = <int32_t> n
            at += n
        return 0

    cdef int build_model(self, const ModelT *M) except -1:
        """The core's tables from a model read by a C reader."""
        self.build_arrays(M.n_tok, M.arena, M.off, M.lens, M.ids, M.max_id, M.n_merges, M.merges,
                          M.byte_id)
        self.build_decoder(M.n_tok, M.arena, M.off, M.lens, M.ids, M.max_id)
        return 0

    cdef int build(self, dict encoder, list merges, list byte_ids) except -1:
        """The core's tables from the vocabulary (bytes -> id), the merges in
        rank order ((left id, right id, merged id) each), and the byte ids."""
        cdef Py_ssize_t n_tok = len(encoder), n_merges = len(merges), total = 0, k, r, m
        cdef int32_t max_id = 0
        cdef uint8_t *arena = NULL
        cdef int64_t *off = NULL
        cdef int32_t *lens = NULL
        cdef int32_t *ids = NULL
        cdef MergeRec *merge_ids = NULL
        cdef int32_t byte_id[256]
        cdef bytes t
        for t, i in encoder.items():
            total += PyBytes_GET_SIZE(t)
            if i > max_id:
                max_id = i
        arena = <uint8_t *> malloc(total + 1)
        off = <int64_t *> malloc((n_tok + 1) * sizeof(int64_t))
        lens = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
        ids = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
        merge_ids = <MergeRec *> malloc((n_merges + 1) * sizeof(MergeRec))
        try:
            if arena == NULL or off == NULL or lens == NULL or ids == NULL or merge_ids == NULL:
                raise MemoryError()
            k = 0
            m = 0
            for t, i in encoder.items():
                memcpy(arena + m, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t))
                off[k] = m
                lens[k] = <int32_t> PyBytes_GET_SIZE(t)
                ids[k] = i
                m += lens[k]
                k += 1
            for r in range(n_merges):
                left, right, merged = merges[r]
                merge_ids[r].left = left
                merge_ids[r].right = right
                merge_ids[r].id = merged
            for r in range(256):
                byte_id[r] = byte_ids[r]
            self.build_arrays(n_tok, arena, off, lens, ids, max_id, n_merges, merge_ids, byte_id)
            self.build_decoder(n_tok, arena, off, lens, ids, max_id)
        finally:
            free(arena)
            free(off)
            free(lens)
            free(ids)
            free(merge_ids)
        return 0

    cdef int build_arrays(self, Py_ssize_t n_tok, const uint8_t *arena, const int64_t *off,
                          const int32_t *lens, const int32_t *ids, int32_t max_id,
                          Py_ssize_t n_merges, const MergeRec *merges,
                          const int32_t *byte_id) except -1:
        """The trie and the core's tables from token arrays and merges."""
        cdef Py_ssize_t n_core = 256 + n_merges, total = 0, k
        cdef int32_t *vals = NULL
        cdef uint8_t *ok = NULL
        cdef IdMap by_id, core_of
        cdef TrieBuild tb
        cdef int err = 0
        cdef CoreT *T = &self.T
        memset(&tb, 0, sizeof(TrieBuild))
        tb.free_head = -1
        tb.free_tail = -1
        memset(&by_id, 0, sizeof(IdMap))
        memset(&core_of, 0, sizeof(IdMap))
        for k in range(n_tok):
            total += lens[k]
        if total > 0x0FFFFFFF or n_core > 0x0FFFFFFF:
            raise MemoryError("vocabulary too large for the compiled core")
        self.merge_recs = <MergeRec *> malloc((n_merges + 1) * sizeof(MergeRec))
        if self.merge_recs == NULL or alloc_core(T, n_core, n_merges) < 0:
            raise MemoryError()
        memcpy(self.merge_recs, merges, n_merges * sizeof(MergeRec))
        self.n_merges = n_merges
        ok = <uint8_t *> calloc(n_core, 1)
        vals = <int32_t *> malloc((n_tok + 1) * sizeof(int32_t))
        try:
            if (ok == NULL or vals == NULL
                    or idmap_init(&by_id, max_id, n_tok) < 0 or idmap_init(&core_of, max_id, n_core) < 0):
                raise MemoryError()
            with nogil:
                err = build_tables(T, n_tok, arena, off, lens, ids, vals, n_merges, merges,
                                   byte_id, ok, &by_id, &core_of, &tb)
            if err < 0:
                raise MemoryError()
        finally:
            free(ok)
            free(vals)
            free(tb.next_free)
            free(tb.prev_free)
            idmap_free(&by_id)
            idmap_free(&core_of)
            free(tb.da)
        return 0

    def decode_bytes(self, list ids):
        """The bytes of `ids` through the byte table, or None when an id is not
        a plain int of the vocabulary (the caller then reports it)."""
        cdef Py_ssize_t k, n = len(ids), total = 0
        cdef long v
        cdef bytes out
        cdef char *p
        cdef const char *src = PyBytes_AS_STRING(self.dec_buf)
        if self.id_objs is None:  # sparse ids: no byte table
            try:
                return b"".join(map(self.sparse.__getitem__, ids))
            except KeyError:
                return None
        for k in range(n):
            o = ids[k]
            if type(o) is not int:
                return None
            try:
                v = o
            except OverflowError:
                return None
            if v < 0 or v >= self.n_ids or self.dec_len[v] < 0:
                return None
            total += self.dec_len[v]
        out = PyBytes_FromStringAndSize(NULL, total)
        p = PyBytes_AS_STRING(out)
        for k in range(n):
            v = ids[k]
            memcpy(p, src + self.dec_off[v], self.dec_len[v])
            p += self.dec_len[v]
        return out

    cdef int counts(self, PCache *cache) except -1:
        """The cache's scratch space for counting ids (ids_to_list)."""
        if cache.id_count == NULL:
            cache.id_count = <Py_ssize_t *> big_alloc(self.n_ids * sizeof(Py_ssize_t), 1)
        if cache.id_seen == NULL:
            cache.id_seen = <int32_t *> malloc(self.n_ids * sizeof(int32_t))
        if cache.id_count == NULL or cache.id_seen == NULL:
            raise MemoryError()
        return 0

    cdef list to_list(self, IVec *out, PCache *cache):
        """The ids as a list of the shared int objects (ids_to_list)."""
        cdef Py_ssize_t i
        if self.id_objs is None:
            return [out.data[i] for i in range(out.len)]
        self.counts(cache)
        return ids_to_list(self.id_objs, out.data, out.len, cache.id_count, cache.id_seen)

    def encode_pieces(self, pieces):
        """Ids of pre-tokens already split (str each)."""
        cdef _Cache cache = self.take()
        try:
            return self.pieces_with(pieces, cache)
        finally:
            self.give(cache)

    cdef list pieces_with(self, pieces, _Cache cache):
        cdef IVec out
        cdef Scratch sc
        cdef bytes b
        memset(&out, 0, sizeof(IVec))
        memset(&sc, 0, sizeof(Scratch))
        sc.memo = cache.c.memo
        try:
            for p in pieces:
                b = p.encode("utf-8")
                if piece_flat(&self.T, <const uint8_t *> PyBytes_AS_STRING(b), len(b), &cache.c, &out, &sc):
                    raise MemoryError()
            return self.to_list(&out, &cache.c)
        finally:
            ivec_free(&out)
            scratch_free(&sc)

    def encode_text(self, text):
        """Ids of text that holds no special tokens (repaired here first, as
        repair does).  The GIL is released while the named patterns scan."""
        cdef _Cache cache
        text = self.repaired_first(text)
        cache = self.take()
        try:
            if self.T.which == P_NONE:
                return self.pieces_with(self.rx_findall(text), cache)
            try:
                return self.text_with(text, cache)
            except UnicodeEncodeError:   # a surrogate: repaired, then again
                return self.text_with(repaired_wide(text), cache)
            except _Overrun:   # a compiled pattern gave up: the regex, with its time limit
                return self.pieces_with(self.rx_findall(repaired(text)), cache)
        finally:
            self.give(cache)

    def scan_ids(self, text):
        """Core.scan_ids: encode_text's ids for join_ids, a long text's piece
        scanned on a thread of its own: its UTF-8 made and its pre-tokens
        merged without the GIL, the ids left in an int32 buffer (an _Ids)."""
        cdef _Cache cache
        cdef _Ids ids
        text = self.repaired_first(text)
        if self.T.which == P_NONE or self.id_objs is None:
            return self.encode_text(text)
        ids = _Ids.__new__(_Ids)
        ids.objs = self.id_objs
        cache = self.take()
        try:
            try:
                self.scan_into(text, PyUnicode_GET_LENGTH(text), cache, &ids.v, False)
            except UnicodeEncodeError:   # a surrogate: repaired, then again
                ids.v.len = 0
                text = repaired_wide(text)
                self.scan_into(text, PyUnicode_GET_LENGTH(text), cache, &ids.v, False)
            return ids
        except _Overrun:   # a compiled pattern gave up: the regex, with its time limit
            return self.encode_text(text)
        finally:
            self.give(cache)

    def join_ids(self, parts, Py_ssize_t threads=1):
        """Core.join_ids: the ids of scan_ids's results one after another, one
        list, no list made per part: its item array written and the ids
        counted without the GIL (ids_to_list's way) on up to `threads`
        threads, each a share of the parts and counts of its own."""
        cdef list out, fills
        cdef Py_ssize_t total = 0, at = 0, share, k
        cdef PyObject **items
        cdef _Fill fill
        parts = list(parts)
        if self.id_objs is None or not SHORTCUTS \
                or not all([type(p) is _Ids and (<_Ids> p).objs is self.id_objs for p in parts]):
            out = []
            for p in parts:
                out += p.tolist() if type(p) is _Ids else p
            return out
        for p in parts:
            total += (<_Ids> p).v.len
        out = []
        if total == 0:
            return out
        items = <PyObject **> PyMem_Malloc(total * sizeof(PyObject *))
        if items == NULL:
            raise MemoryError()
        fills = []
        share = total // max(1, min(threads, len(parts))) + 1
        try:
            for p in parts:   # the parts in runs of about `share` ids, one run a thread
                if not fills or fill.end - fill.start >= share:
                    fill = _Fill.__new__(_Fill)
                    fill.items = items
                    fill.by_id = list_items(self.id_objs)
                    fill.cache = self.take()
                    self.counts(&fill.cache.c)
                    fill.parts = []
                    fill.start = fill.end = at
                    fills.append(fill)
                fill.parts.append(p)
                at += (<_Ids> p).v.len
                fill.end = at
            helpers = [threading.Thread(target=f.run, name=f"bpe-join-{k}", daemon=True)
                       for k, f in enumerate(fills[1:])]
            for t in helpers:
                t.start()
            (<_Fill> fills[0]).run()
            for t in helpers:
                t.join()
            for f in fills:
                fill = <_Fill> f
                take_counted(fill.by_id, fill.cache.c.id_count, fill.cache.c.id_seen,
                             fill.distinct, True)
                fill.distinct = 0
            list_adopt(out, items, total)
            items = NULL
            return out
        finally:
            for f in fills:
                fill = <_Fill> f
                if fill.distinct:   # (an error came first: the counts forgotten)
                    take_counted(fill.by_id, fill.cache.c.id_count, fill.cache.c.id_seen,
                                 fill.distinct, False)
                self.give(fill.cache)
            PyMem_Free(items)

    @property
    def pretokenizer(self):
        """Core.pretokenizer: "native" (a named pattern's scanner or a
        compiled pattern of the GPT family) or "regex"."""
        return "regex" if self.T.which == P_NONE else "native"

    cdef object repaired_first(self, object text):
        """What encode_text and the packer scan: a plain str as it is for a
        named pattern (taking its UTF-8 finds a surrogate; the caller then
        repairs and scans again), anything else repaired now; and, for a
        Pipeline's split, repaired and normalized (as the regex path does)."""
        if self.forms is not None:
            return self.pattern.normalize(repaired(text))
        if type(text) is not str or self.T.which == P_NONE:
            return repaired(text)
        return text

    cdef list names_of(self, object stop):
        """stop_names(stop), the answer for the last tuple of plain strs kept:
        the Tokenizer passes the same disallowed names call after call (the
        tuples are equal item for item; a str subclass could claim to equal
        anything, so tuples holding one are not kept)."""
        cdef tuple last = self.last_stop
        cdef list names
        if type(stop) is not tuple:
            return stop_names(stop)
        for name in <tuple> stop:
            if type(name) is not str:
                return stop_names(stop)
        if last is not None and stop == last[0]:
            return last[1]
        names = stop_names(stop)
        self.last_stop = (stop, names)
        return names

    def encode_texts(self, texts, stop=()):
        """[encode_text(t) for t in texts] (each text repaired here, no special
        tokens) up to the first text holding a str of `stop` (once repaired), for
        encode_batch: one cache for all of them, the GIL held only to
        allocate each result's item array, and the references of all the
        results taken at the end, one update per distinct id."""
        cdef _Cache cache
        cdef list names
        cdef list done
        texts = [as_str(text) for text in texts]
        if type(stop) is not tuple:
            stop = tuple(stop)
        names = self.names_of(stop)   # (TypeError for a name that is no str)
        if self.T.which != P_NONE and self.id_objs is not None and SHORTCUTS \
                and self.forms is None:   # (stop names are looked for before normalizing)
            cache = self.take()
            try:
                return self.texts_with(texts, cache, names)
            except _Overrun:
                pass   # a compiled pattern gave up on a text: one by one, as below
            finally:
                self.give(cache)
        stop = [as_str(name) for name in stop]
        done = []
        for text in texts:
            text = _repair(text)
            if any([name in text for name in stop]):
                break
            done.append(self.encode_text(text))
        return done

    cdef list texts_with(self, list texts, _Cache cache, list names):
        """encode_texts of named or compiled patterns, a group of texts at a
        time: their UTF-8 taken with the GIL, all of them scanned in one
        stretch without it, their item arrays allocated with it, written
        without it: a handful of GIL hand-offs a group, not a few a text (a
        batch of short texts on several threads spends its time encoding, not
        waiting for the GIL)."""
        cdef Py_ssize_t n = len(texts), k, k0, k1, j, distinct = 0, cut = 0, nn = len(names)
        cdef Py_ssize_t start, stop_at
        cdef const uint8_t **name_at = <const uint8_t **> malloc((nn + 1) * sizeof(uint8_t *))
        cdef Py_ssize_t *name_len = <Py_ssize_t *> malloc((nn + 1) * sizeof(Py_ssize_t))
        cdef Utf8 *u = <Utf8 *> calloc(TEXT_GROUP, sizeof(Utf8))
        cdef Py_ssize_t *ends = <Py_ssize_t *> malloc((TEXT_GROUP + 1) * sizeof(Py_ssize_t))
        cdef IVec ids
        cdef int err = 0
        cdef bint taken = False
        cdef PyObject **by_id = list_items(self.id_objs)
        cdef PyObject ***items = <PyObject ***> calloc(n + 1, sizeof(PyObject **))
        cdef Py_ssize_t *lens = <Py_ssize_t *> calloc(n + 1, sizeof(Py_ssize_t))
        cdef list result = [[] for _ in range(n)]  # empty until their items are theirs
        memset(&ids, 0, sizeof(IVec))
        try:
            if (items == NULL or lens == NULL or name_at == NULL or name_len == NULL
                    or u == NULL or ends == NULL):
                raise MemoryError()
            for k in range(nn):
                name_at[k] = <const uint8_t *> PyBytes_AS_STRING(names[k])
                name_len[k] = PyBytes_GET_SIZE(names[k])
            self.counts(&cache.c)
            k0 = 0
            while k0 < n:
                k1 = k0 + TEXT_GROUP if k0 + TEXT_GROUP < n else n
                for k in range(k0, k1):
                    try:
                        utf8_of(<str> texts[k], &u[k - k0])
                    except UnicodeEncodeError:   # a surrogate: repaired, then again
                        texts[k] = repaired_wide(texts[k])
                        utf8_of(<str> texts[k], &u[k - k0])
                stop_at = k1
                with nogil:
                    ids.len = 0
                    ends[0] = 0
                    for k in range(k0, k1):
                        j = k - k0
                        if nn > 0 and holds_any(u[j].data, u[j].len, name_at, name_len, nn):
                            stop_at = k
                            break
                        err = scan_text(&self.T, u[j].data, u[j].len, &cache.c, &ids,
                                        (<Py_ssize_t> 1) << 62, &cut)
                        if err:
                            break
                        ends[j + 1] = ids.len
                    for j in range(k1 - k0):
                        free(u[j].owned)
                        u[j].owned = NULL
                if err == -3:
                    raise _Overrun()
                if err:
                    raise MemoryError()
                for k in range(k0, stop_at):
                    lens[k] = ends[k - k0 + 1] - ends[k - k0]
                    if lens[k]:
                        items[k] = <PyObject **> PyMem_Malloc(lens[k] * sizeof(PyObject *))
                        if items[k] == NULL:
                            raise MemoryError()
                with nogil:
                    for k in range(k0, stop_at):
                        if lens[k]:
                            start = ends[k - k0]
                            distinct = fill_items(by_id, ids.data + start, lens[k], items[k],
                                                  cache.c.id_count, cache.c.id_seen, distinct)
                if stop_at < k1:
                    n = stop_at   # the results of the texts before it
                    break
                k0 = k1
            take_counted(by_id, cache.c.id_count, cache.c.id_seen, distinct, True)
            taken = True
            for k in range(n):
                if lens[k]:
                    list_adopt(result[k], items[k], lens[k])
                    items[k] = NULL
            del result[n:]   # (stopped: the texts from there on are not encoded)
            return result
        finally:
            if not taken and cache.c.id_count != NULL:
                take_counted(by_id, cache.c.id_count, cache.c.id_seen, distinct, False)
            if items != NULL:
                for k in range(len(texts)):
                    PyMem_Free(items[k])
            if u != NULL:
                for j in range(TEXT_GROUP):
                    free(u[j].owned)
            free(u)
            free(ends)
            free(items)
            free(lens)
            free(name_at)
            free(name_len)
            ivec_free(&ids)

    def encode_prefix(self, text, Py_ssize_t limit):
        """(end, ids) of the pre-tokens of `text` that end at or before
        `limit`; for a named pattern, scanned without the GIL.  The ids are
        a compact sequence (len, iteration, list()), not a list."""
        cdef _Cache cache
        text = as_str(text)
        if self.T.which == P_NONE or self.T.which == P_PAT or self.forms is not None:
            raise ValueError("encode_prefix needs the gpt2, cl100k, o200k or words pattern")
        cache = self.take()
        try:
            return self.prefix_with(text, limit, cache)
        finally:
            self.give(cache)

    cdef list text_with(self, str text, _Cache cache):
        """The ids of encode_text, through the cache's own id buffer."""
        cdef IVec out = cache.c.ids   # taken: an error leaves the cache without it
        memset(&cache.c.ids, 0, sizeof(IVec))
        out.len = 0
        try:
            self.scan_into(text, PyUnicode_GET_LENGTH(text), cache, &out, True)
            return self.to_list(&out, &cache.c)
        finally:
            if out.cap <= SPARE_IDS:
                out.len = 0
                cache.c.ids = out
            else:
                ivec_free(&out)

    cdef tuple prefix_with(self, str text, Py_ssize_t limit, _Cache cache):
        """(cut, ids) of encode_prefix, ids an _Ids (its buffer, not copied)
        for flatten(); the str's UTF-8 made for this call only (a window of
        a stream is read once)."""
        cdef IVec out
        cdef Py_ssize_t chars
        cdef _Ids ids
        memset(&out, 0, sizeof(IVec))
        try:
            chars = self.scan_into(text, limit, cache, &out, False)
            ids = _Ids.__new__(_Ids)
            ids.v = out  # the buffer moves to the _Ids
            ids.objs = self.id_objs
            memset(&out, 0, sizeof(IVec))
            return chars, ids
        finally:
            ivec_free(&out)

    cdef Py_ssize_t scan_into(self, str text, Py_ssize_t limit, _Cache cache, IVec *out,
                              bint keep) except -1:
        """Append to `out` the ids of the pre-tokens of `text` that end by
        character `limit`; return the characters they cover.  `keep`: the
        str's UTF-8 is kept by CPython (else made for this call only)."""
        cdef int err = 0
        cdef Utf8 u
        cdef Py_ssize_t n, chars = 0
        cdef bint ascii = PyUnicode_IS_ASCII(text)
        n = PyUnicode_GET_LENGTH(text)
        utf8_of(text, &u, keep)
        try:
            if u.len < HOLD_GIL_BYTES:   # releasing the GIL and taking it back: 3% of 200 chars
                err = scan_chars(&self.T, &u, n, ascii, limit, &cache.c, out, &chars)
            else:
                with nogil:
                    err = scan_chars(&self.T, &u, n, ascii, limit, &cache.c, out, &chars)
            if err == -3:
                raise _Overrun()
            if err:
                raise MemoryError()
            return chars
        finally:
            free(u.owned)

    @staticmethod
    def flatten(windows, estimate=None):
        """An iterator over the ids of an iterable of id sequences (lists, or
        what encode_prefix returns): encode_iterable's output, read straight
        from the windows' int32 buffers; its length hint from `estimate`."""
        return _Flatten(windows, estimate)

    cdef object encode_packed(self, str text, int itemsize, _Cache cache, IVec *out,
                              bint keep=False, bint own=False):
        """The ids of encode_text as little-endian unsigned ints of `itemsize`
        (2 or 4) bytes: for a named pattern, scanned and written without the
        GIL, with no list of ids.  `out`: scratch space for the ids, kept by
        the caller from call to call (no allocation per call to grow it).
        keep: as scan_into's (a packer's chunks are read once: not kept).
        own: 4-byte ids that outgrew the scratch space the caller keeps come
        back in out's own buffer, a _PackedIds (out is left empty)."""
        cdef Py_ssize_t bad
        cdef bytes packed
        cdef uint8_t *p
        self.prepare(cache)
        if self.T.which == P_NONE:
            return _pack_ids(self.pieces_with(self.rx_findall(text), cache), itemsize)
        out.len = 0
        try:
            try:
                self.scan_into(text, PyUnicode_GET_LENGTH(text), cache, out, keep)
            except _Overrun:   # a compiled pattern gave up: the regex, with its time limit
                return _pack_ids(self.pieces_with(self.rx_findall(repaired(text)), cache), itemsize)
            if own and itemsize == 4 and out.cap > SPARE_IDS:   # it would be freed: no copy
                return packed_in_place(out)
            packed = PyBytes_FromStringAndSize(NULL, out.len * itemsize)
            p = <uint8_t *> PyBytes_AS_STRING(packed)
            with nogil:
                bad = pack_le(out.data, out.len, itemsize, p)
            if bad >= 0:
                raise OverflowError(f"id {out.data[bad]} does not fit {itemsize} bytes")
            return packed
        finally:
            out.len = 0

    def pack_text(self, text, int itemsize, stop=()):
        """The ids of encode_text as little-endian unsigned ints of `itemsize`
        (2 or 4) bytes, through the shared caches: no list, no int objects;
        None if the (repaired) text holds a str of `stop`, looked for in its
        UTF-8 before the scan.  Bytes, or for a long text a read-only buffer
        over the ids where the scan wrote them (_PackedIds)."""
        cdef _Cache cache
        cdef IVec out
        cdef list names
        if type(stop) is not tuple:
            stop = tuple(stop)
        names = self.names_of(stop)
        if itemsize != 2 and itemsize != 4:
            raise ValueError(f"itemsize must be 2 or 4, not {itemsize}")
        if self.forms is not None and names:   # looked for before normalizing
            raw = repaired(text)
            if any([name in raw for name in stop]):
                return None
            names = []
        text = self.repaired_first(text)
        cache = self.take()
        out = cache.c.ids   # taken: an error leaves the cache without it
        memset(&cache.c.ids, 0, sizeof(IVec))
        try:
            try:
                if names and holds_names(text, names, self.T.which != P_NONE):
                    return None
                return self.encode_packed(text, itemsize, cache, &out, True, True)
            except UnicodeEncodeError:   # a surrogate: repaired, then again
                text = repaired_wide(text)
                if names and holds_names(text, names, self.T.which != P_NONE):
                    return None
                return self.encode_packed(text, itemsize, cache, &out, True, True)
        finally:
            if out.cap <= SPARE_IDS:
                out.len = 0
                cache.c.ids = out
            else:
                ivec_free(&out)
            self.give(cache)

    def packer(self, int itemsize):
        """A function text -> the ids of encode_ordinary(text) as little-endian
        unsigned ints of `itemsize` (2 or 4) bytes, for one thread: it has its
        own cache, and encodes without the GIL (text with no special tokens in
        it, lone surrogates repaired)."""
        if itemsize != 2 and itemsize != 4:
            raise ValueError(f"itemsize must be 2 or 4, not {itemsize}")
        return _Packer(self, itemsize)

    def merge_bytes(self, bytes data):
        """Ids of `data` by merge rank alone over its bytes (no pre-tokens, no
        trie, no whole-token rule)."""
        return self.by(data, False)

    @staticmethod
    def pretokenize(pattern, text):
        """The pre-tokens of text (lone surrogates repaired): the native scanner
        for a named pattern, else the regex (what encode_text splits by; both
        equal regex.findall)."""
        cdef int which = _which(pattern)
        text = _repair(text)
        if which == P_NONE:
            matcher = compiled_pattern(pattern)
            if matcher is not None:
                try:
                    return pattern_pretokens(text, matcher)
                except _Overrun:
                    pass
            return _py.pretokenizer(pattern)(text)
        return native_pretokens(text, which)

    def trie_ids(self, bytes data):
        """Ids of `data` by the trie alone (no whole-token rule, no cache): what
        tests compare with merge_bytes (encoding would hide a trie that found
        no encoding behind its fallback to the rank merge).
        Irregular merges (see build_tables) never walk the trie: merge_bytes."""
        return self.by(data, True)

    def unrebuilt(self):
        """Core.unrebuilt: (id, ids) of the first token by id, of two bytes or
        more and valid UTF-8 (a text's pre-token may be it), whose bytes
        merge_bytes does not give back as the token itself (what tokenizers
        gives it with ignore_merges false), or None."""
        cdef IVec out
        cdef Scratch sc
        cdef Py_ssize_t i, n, found = -1
        cdef int err = 0
        cdef const uint8_t *buf
        cdef uint8_t *special = NULL
        if self.sparse is not None:
            for i, t in self.tokens().items():
                if len(t) >= 2 and valid_utf8(<const uint8_t *> PyBytes_AS_STRING(t), len(t)):
                    ids = self.merge_bytes(t)
                    if ids != [i]:
                        return i, ids
            return None
        memset(&out, 0, sizeof(IVec))
        memset(&sc, 0, sizeof(Scratch))
        special = <uint8_t *> calloc(self.n_ids + 1, 1)
        buf = <const uint8_t *> PyBytes_AS_STRING(self.dec_buf)
        try:
            if special == NULL:
                raise MemoryError()
            for i in self.specials.values():
                special[<Py_ssize_t> i] = 1
            with nogil:
                for i in range(self.n_ids):
                    n = self.dec_len[i]
                    if n < 2 or special[i] or not valid_utf8(buf + self.dec_off[i], n):
                        continue
                    out.len = 0   # (the trie gives merge_bytes's ids, faster: see trie_ids)
                    err = -2 if self.T.irregular else backtrack(&self.T, buf + self.dec_off[i],
                                                                n, &out, &sc)
                    if err == -2:
                        out.len = 0
                        err = rank_merge(&self.T, buf + self.dec_off[i], n, &out, &sc)
                    if err < 0 or out.len != 1 or out.data[0] != i:
                        found = i
                        break
            if err < 0:
                raise MemoryError()
            if found >= 0:
                return found, [out.data[k] for k in range(out.len)]
            return None
        finally:
            free(special)
            ivec_free(&out)
            scratch_free(&sc)

    cdef list by(self, bytes data, bint trie):
        cdef IVec out
        cdef Scratch sc
        cdef int err
        memset(&out, 0, sizeof(IVec))
        memset(&sc, 0, sizeof(Scratch))
        try:
            if trie and not self.T.irregular:
                err = backtrack(&self.T, <const uint8_t *> PyBytes_AS_STRING(data), len(data), &out, &sc)
            else:
                err = rank_merge(&self.T, <const uint8_t *> PyBytes_AS_STRING(data), len(data), &out, &sc)
            if err == -2:
                raise AssertionError("the trie found no encoding")
            if err < 0:
                raise MemoryError()
            return [out.data[i] for i in range(out.len)]
        finally:
            ivec_free(&out)
            scratch_free(&sc)


cdef class _Packer:
    """Core.packer's function: one thread's encoder of text to packed ids,
    with its own cache and its own buffer for the ids (kept from call to
    call: a worker thread does not allocate and free it for every chunk)."""
    cdef Core core
    cdef _Cache cache
    cdef IVec ids
    cdef int itemsize

    def __cinit__(self, Core core, int itemsize):
        self.core = core
        self.cache = _Cache()
        self.itemsize = itemsize
        memset(&self.ids, 0, sizeof(IVec))

    def __dealloc__(self):
        ivec_free(&self.ids)

    def __call__(self, text):
        text = self.core.repaired_first(text)
        if self.cache.busy:  # taken and given back under the GIL
            raise RuntimeError("a packer encodes for one thread at a time")
        self.cache.busy = True
        try:
            try:
                return self.core.encode_packed(text, self.itemsize, self.cache, &self.ids)
            except UnicodeEncodeError:   # a surrogate: repaired, then again
                return self.core.encode_packed(repaired_wide(text), self.itemsize, self.cache,
                                               &self.ids)
        finally:
            self.cache.busy = False
