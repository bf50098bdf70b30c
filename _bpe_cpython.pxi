# CPython shortcuts, all of them here: places where the core relies on how
# CPython (with a GIL) lays out its objects, for speed.  Each has a safe path
# that uses only the public API; it is compiled instead when the interpreter
# is free-threaded (Py_GIL_DISABLED: no GIL, so reference counts must go
# through Py_INCREF, and type slots are not ours to patch) or when the build
# asks for it with -DBPE_SAFE_CPYTHON (how the safe path is tested here).
# Needs: the cimports of bpe.pyx.  Used by _bpe_core.pxi (Core.to_list,
# _Flatten).
#
# What they buy, measured against the safe path (-DBPE_SAFE_CPYTHON), o200k,
# 10 MB of text seen before (2.2M ids), one pinned CPU, CPU time, best of 5:
# - ids_to_list (Core.to_list): the result's items written and the ids
#   counted without the GIL, then one reference update per distinct id:
#   encode_text 52 ms against 57 ms (about 2 ns an id), and encode_batch's
#   threads overlap while the list is filled.
# - set_iternext (_Flatten, encode_iterable's iterator): next() is a C call
#   and a pointer read: 7.8 ms against 9.2 ms for the 2.2M ids.

cdef extern from "Python.h":
    ctypedef struct PyTypeObject:
        pass
    # public API: a list's item array (the list is not resized while it is read)
    PyObject **list_items "PySequence_Fast_ITEMS"(list op)
    void incref "Py_INCREF"(PyObject *o)
    void Py_DECREF(PyObject *)

cdef extern from *:
    """
    #if defined(Py_GIL_DISABLED) || defined(BPE_SAFE_CPYTHON)
    #define BPE_SHORTCUTS 0
    /* the safe path: public API only */
    static inline void bpe_add_refs(PyObject *o, Py_ssize_t k) {
        while (k-- > 0) Py_INCREF(o);
    }
    static inline void bpe_set_iternext(PyTypeObject *t, iternextfunc f) {
        (void) t; (void) f;   /* keep the type's own __next__ */
    }
    #else
    #define BPE_SHORTCUTS 1
    /* k more references to o at once (an immortal object keeps its count) */
    static inline void bpe_add_refs(PyObject *o, Py_ssize_t k) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (_Py_IsImmortal(o)) return;
    #endif
        Py_SET_REFCNT(o, Py_REFCNT(o) + k);
    }
    /* a C function as the type's tp_iternext: next() without a Python call */
    static inline void bpe_set_iternext(PyTypeObject *t, iternextfunc f) {
        t->tp_iternext = f;
        PyType_Modified(t);
    }
    #endif
    """
    const bint SHORTCUTS "BPE_SHORTCUTS"
    ctypedef PyObject *(*iternextfunc)(PyObject *) except? NULL
    void add_refs "bpe_add_refs"(PyObject *o, Py_ssize_t k)
    void set_iternext "bpe_set_iternext"(PyTypeObject *t, iternextfunc f)


cdef list ids_to_list(list objs, const int32_t *ids, Py_ssize_t n,
                      Py_ssize_t *count, int32_t *seen):
    """A new list of objs[id] for each id.  `count` (zeros, one per id; left
    zero) and `seen` (room for the distinct ids) are scratch space."""
    cdef list result = PyList_New(n)
    cdef PyObject **items = list_items(result)
    cdef PyObject **by_id = list_items(objs)
    cdef PyObject *o
    cdef Py_ssize_t i, distinct = 0
    cdef int32_t v
    if not SHORTCUTS or n < 128:   # short: the counts' random accesses cost more than they save
        for i in range(n):
            o = by_id[ids[i]]
            incref(o)
            PyList_SET_ITEM(result, i, <object> o)  # steals the reference taken
        return result
    # shortcut: the new list is seen by no one yet, so its items are written
    # without the GIL; the references follow, one update per distinct id
    with nogil:
        for i in range(n):
            v = ids[i]
            items[i] = by_id[v]
            if count[v] == 0:
                seen[distinct] = v
                distinct += 1
            count[v] += 1
    for i in range(distinct):
        v = seen[i]
        add_refs(by_id[v], count[v])
        count[v] = 0
    return result
