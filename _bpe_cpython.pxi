# CPython shortcuts, all of them here: places where the core relies on how
# CPython (with a GIL) lays out its objects, for speed.  Each has a safe path
# that uses only the public API; it is compiled instead when the interpreter
# is free-threaded (Py_GIL_DISABLED: no GIL, so reference counts must go
# through Py_INCREF, and type slots are not ours to patch) or when the build
# asks for it with -DBPE_SAFE_CPYTHON (how the safe path is tested here).
# Needs: prefetch (_bpe_common.pxi).  Used by _bpe_core.pxi (Core.to_list,
# _Flatten).
#
# What they buy, measured against the safe path (-DBPE_SAFE_CPYTHON), o200k,
# 10 MB of text seen before (2.2M ids), one pinned CPU, CPU time, best of 5:
# - ids_to_list (Core.to_list): the result's item array allocated without
#   zeroing, written and the ids counted without the GIL, then one reference
#   update per distinct id: encode_text 52 ms against 57 ms (about 2 ns an
#   id), and encode_batch's threads overlap while the list is filled.
# - list_adopt: that array becomes an empty list's (no PyList_New(n), whose
#   zeroing and page faults ran with the GIL held: serial in encode_batch).
# - set_iternext (_Flatten, encode_iterable's iterator): next() is a C call
#   and a pointer read: 7.8 ms against 9.2 ms for the 2.2M ids.

cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        pass
    # public API: a list's item array (the list is not resized while it is read)
    PyObject **list_items "PySequence_Fast_ITEMS"(list op)
    void incref "Py_INCREF"(PyObject *o)
    void Py_DECREF(PyObject *)
    void *PyMem_Malloc(size_t n)
    void PyMem_Free(void *p)
    # public API: the cycle collector no longer looks into an object (a container of
    # ints only: each full collection would visit every item)
    void gc_untrack "PyObject_GC_UnTrack"(object o)

cdef extern from "_bpe_cpython.h":
    const bint SHORTCUTS "BPE_SHORTCUTS"
    ctypedef PyObject *(*iternextfunc)(PyObject *) except? NULL
    void add_refs "bpe_add_refs"(PyObject *o, Py_ssize_t k)
    void set_iternext "bpe_set_iternext"(PyTypeObject *t, iternextfunc f)
    void list_adopt "bpe_list_adopt"(object lst, PyObject **items, Py_ssize_t n)
    void stream_ptr "bpe_stream_ptr"(PyObject **dst, PyObject *v) noexcept nogil
    void stream_fence "bpe_stream_fence"() noexcept nogil


# References by count: the ids of a result are counted without the GIL
# (`count`, one slot per id, zero between uses; `seen`, the distinct ids in
# the order they came), then each distinct id's object gains its count at
# once, with the GIL: one update per distinct id instead of one per item.

# A run of items this long (1 MB of pointers, more than a core's L2 cache) is
# written with stores that go around the caches (stream_ptr): a long text's
# list is written once and read much later, and a plain store reads each
# line in before writing it; the join of 10 MB of text (2.9M ids, one
# thread) takes about 4.7 ms instead of 5.2.  Shorter ones (encode_batch's lists,
# read at once) are written plainly, into the cache.
cdef enum: STREAM_ITEMS = 1 << 17

cdef inline Py_ssize_t fill_items(PyObject **by_id, const int32_t *ids, Py_ssize_t n,
                                  PyObject **items, Py_ssize_t *count, int32_t *seen,
                                  Py_ssize_t distinct) noexcept nogil:
    """items[i] = by_id[ids[i]] for i < n (no reference taken), the ids
    counted in `count` and `seen` (see above); the distinct ids so far."""
    cdef Py_ssize_t i
    cdef int32_t v
    if n < STREAM_ITEMS:
        for i in range(n):
            v = ids[i]
            items[i] = by_id[v]
            if count[v] == 0:
                seen[distinct] = v
                distinct += 1
            count[v] += 1
        return distinct
    for i in range(n):   # (the same, the items stored around the caches)
        v = ids[i]
        stream_ptr(&items[i], by_id[v])
        if count[v] == 0:
            seen[distinct] = v
            distinct += 1
        count[v] += 1
    stream_fence()
    return distinct


cdef inline void take_counted(PyObject **by_id, Py_ssize_t *count, const int32_t *seen,
                              Py_ssize_t distinct, bint refs) noexcept:
    """The counted references taken (with `refs`; else forgotten: an error
    came first), the counts back to zero.  With the GIL."""
    cdef Py_ssize_t i
    cdef int32_t v
    for i in range(distinct):
        v = seen[i]
        if refs:
            add_refs(by_id[v], count[v])
        count[v] = 0


cdef list ids_to_list(list objs, const int32_t *ids, Py_ssize_t n,
                      Py_ssize_t *count, int32_t *seen):
    """A new list of objs[id] for each id.  `count` (zeros, one per id; left
    zero) and `seen` (room for the distinct ids) are scratch space."""
    cdef list result
    cdef PyObject **items
    cdef PyObject **by_id = list_items(objs)
    cdef PyObject *o
    cdef Py_ssize_t i, distinct = 0
    # short (4,000-character calls: ~900 ids): a reference at a time, the table's
    # entry and the object prefetched ahead; the counts (one a vocabulary id, 1.6 MB
    # for o200k) miss the cache as often as the objects and pay off only on long lists
    if not SHORTCUTS or n < 4096:
        result = PyList_New(n)
        for i in range(n):
            if i + 16 < n:
                prefetch(&by_id[ids[i + 16]])
            if i + 8 < n:
                prefetch(by_id[ids[i + 8]])
            o = by_id[ids[i]]
            incref(o)
            PyList_SET_ITEM(result, i, <object> o)  # steals the reference taken
        return result
    # shortcut: the item array is allocated (not zeroed) with the GIL, written
    # and the ids counted without it; then one reference update per distinct
    # id, and the array becomes the (empty until then) list's
    result = PyList_New(0)
    if n == 0:
        return result
    items = <PyObject **> PyMem_Malloc(n * sizeof(PyObject *))
    if items == NULL:
        raise MemoryError()
    with nogil:
        distinct = fill_items(by_id, ids, n, items, count, seen, 0)
    take_counted(by_id, count, seen, distinct, True)
    list_adopt(result, items, n)
    return result
