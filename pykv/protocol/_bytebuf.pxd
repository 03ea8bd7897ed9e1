# In-place bytearray operations for the buffers on the request path (the parser's query
# buffer, a client's reply buffer): CPython's PyByteArray_Resize reallocates whenever a
# buffer shrinks below half its allocation, so emptying a buffer and refilling it costs a
# free and a malloc per request. These keep the allocation instead.
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from cpython.object cimport Py_SIZE
from libc.string cimport memcpy


cdef extern from "Python.h":
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_alloc
        char *ob_bytes
        char *ob_start
        Py_ssize_t ob_exports
    void Py_SET_SIZE(object o, Py_ssize_t size)


cdef inline bint bytearray_empty(bytearray b, Py_ssize_t keep) noexcept:
    """Empty ``b`` in place, keeping its allocation, when no buffer view of it is exported
    and the allocation is at most ``keep`` bytes: True if done (else leave it to the
    caller to replace or resize it, which gives the memory back)."""
    cdef PyByteArrayObject *o = <PyByteArrayObject *>b
    if o.ob_exports != 0 or o.ob_bytes == NULL or o.ob_alloc > keep:
        return False
    Py_SET_SIZE(b, 0)
    o.ob_start = o.ob_bytes
    o.ob_bytes[0] = 0
    return True


cdef inline int bytearray_append(bytearray b, const char *p, Py_ssize_t n) except -1:
    """Append ``n`` bytes at ``p`` to ``b``: within its allocation without a realloc
    (the bytes past the end are never part of an exported view), else by a resize."""
    cdef PyByteArrayObject *o = <PyByteArrayObject *>b
    cdef Py_ssize_t size = Py_SIZE(b)
    if o.ob_bytes != NULL and (o.ob_start - o.ob_bytes) + size + n < o.ob_alloc:
        memcpy(o.ob_start + size, p, n)
        Py_SET_SIZE(b, size + n)
        o.ob_start[size + n] = 0
        return 0
    PyByteArray_Resize(b, size + n)
    memcpy(PyByteArray_AS_STRING(b) + size, p, n)
    return 0
