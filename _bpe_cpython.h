/* CPython shortcuts (see _bpe_cpython.pxi, which declares them and says
   what they buy) and their safe path, compiled instead when the interpreter
   is free-threaded (Py_GIL_DISABLED) or the build asks for it
   (-DBPE_SAFE_CPYTHON). */
#ifndef BPE_CPYTHON_H
#define BPE_CPYTHON_H

#include <Python.h>

/* A store that goes around the caches (the item array of a long list is
   written once and read much later: no read of each line before it is
   written), and the fence after a run of them. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
static inline void bpe_stream_ptr(PyObject **dst, PyObject *v) {
    _mm_stream_si64((long long *) dst, (long long) v);
}
static inline void bpe_stream_fence(void) { _mm_sfence(); }
#else
static inline void bpe_stream_ptr(PyObject **dst, PyObject *v) { *dst = v; }
static inline void bpe_stream_fence(void) { }
#endif

#if defined(Py_GIL_DISABLED) || defined(BPE_SAFE_CPYTHON)
#define BPE_SHORTCUTS 0
/* the safe path: public API only */
static inline void bpe_add_refs(PyObject *o, Py_ssize_t k) {
    while (k-- > 0) Py_INCREF(o);
}
static inline void bpe_set_iternext(PyTypeObject *t, iternextfunc f) {
    (void) t; (void) f;   /* keep the type's own __next__ */
}
static inline void bpe_list_adopt(PyObject *list, PyObject **items, Py_ssize_t n) {
    (void) list; (void) items; (void) n;   /* not called: SHORTCUTS is 0 */
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
/* an empty list (PyList_New(0): no item array) takes over `items`, n
   references it now holds, PyMem_Malloc'ed (list_dealloc frees it so) */
static inline void bpe_list_adopt(PyObject *list, PyObject **items, Py_ssize_t n) {
    PyListObject *op = (PyListObject *) list;
    op->ob_item = items;
    op->allocated = n;
    Py_SET_SIZE(op, n);
}
#endif

#endif
