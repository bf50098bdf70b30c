/* The C of the Python-facing core (_bpe_core.pxi declares it): the byte
   order of pack_ids, the next() of encode_iterable's iterator (_Flatten),
   and the search for stop names in a text (holds_any). */
#ifndef BPE_CORE_H
#define BPE_CORE_H

#include <Python.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BPE_BIG_ENDIAN 1
#else
#define BPE_BIG_ENDIAN 0
#endif

/* encode_iterable's iterator: while a window of ids lasts, an item is a
   pointer read (its reference was added in bulk when the window came);
   refill (Cython, below) takes the next window. */
typedef struct {
    const int32_t *data;  /* an _Ids window: its ids, */
    Py_ssize_t i, n;      /* the next one to hand out and how many */
    PyObject **objs;      /* the int objects by id */
    PyObject *list;       /* or a list window (borrowed: the _Flatten holds it) */
} BpeFlatState;
static Py_ssize_t bpe_flat_offset;  /* where the state lives in a _Flatten */
static PyObject *(*bpe_flat_refill)(PyObject *);
static PyObject *bpe_flat_next(PyObject *self) {
    BpeFlatState *st = (BpeFlatState *) ((char *) self + bpe_flat_offset);
    if (st->i < st->n)
        return st->objs[st->data[st->i++]];
    if (st->list != NULL && st->i < PyList_GET_SIZE(st->list)) {
        PyObject *o = PyList_GET_ITEM(st->list, st->i++);
        Py_INCREF(o);
        return o;
    }
    return bpe_flat_refill(self);
}

#include <string.h>
/* Whether s[:n] holds one of the k byte strings names[i][:lens[i]]: one
   memchr pass per distinct first byte; at a hit, the next byte is looked
   up among those that follow that first byte in a name, and only then
   are the names compared (a name of one byte: any hit; an empty name is
   in every text) */
static int bpe_holds_any(const unsigned char *s, size_t n,
                         const unsigned char **names, const Py_ssize_t *lens,
                         Py_ssize_t k) {
    unsigned char done[256], next[256];
    const unsigned char *p, *end = s + n;
    Py_ssize_t i, j;
    memset(done, 0, sizeof done);
    for (i = 0; i < k; i++) {
        unsigned char b;
        int one = 0;
        if (lens[i] == 0)
            return 1;
        b = names[i][0];
        if (done[b])
            continue;
        done[b] = 1;
        memset(next, 0, sizeof next);
        for (j = i; j < k; j++) {
            if (lens[j] == 0 || names[j][0] != b)
                continue;
            if (lens[j] == 1)
                one = 1;
            else
                next[names[j][1]] = 1;
        }
        if (one) {
            if (n && memchr(s, b, n) != NULL)
                return 1;
            continue;
        }
        for (p = s; p < end && (p = (const unsigned char *) memchr(p, b, (size_t) (end - p))) != NULL; p++) {
            if (p + 1 == end)
                break;
            if (!next[p[1]])
                continue;
            for (j = i; j < k; j++)
                if (lens[j] >= 2 && names[j][0] == b && lens[j] <= end - p &&
                        memcmp(p, names[j], (size_t) lens[j]) == 0)
                    return 1;
        }
    }
    return 0;
}

#endif
