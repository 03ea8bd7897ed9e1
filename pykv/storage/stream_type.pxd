# Augments pykv/storage/stream_type.py when Cython compiles it: the macro node becomes an
# extension type with C fields and the listpack integer size a C function, for XADD's hot
# path. Uncompiled, the .py runs as it is. (PelMap and Nack measured slower as extension
# types: their callers in pykv.commands.streams do not know the type, so every method call
# built a bound method.)

cimport cython

cpdef int lp_int_size(long long value)
cpdef _int_like(item)
@cython.locals(n=Py_ssize_t, head=Py_ssize_t)
cpdef Py_ssize_t lp_str_size(item) except -1


cdef class Node:
    cdef public object master, fields
    cdef public list ids, items, flags
    cdef public Py_ssize_t live, dead, body_bytes

    cpdef Py_ssize_t lp_bytes(self)
    @cython.locals(nfields=Py_ssize_t, i=Py_ssize_t, size=Py_ssize_t, lp_count=Py_ssize_t,
                   fields=tuple, same=bint)
    cpdef append(self, sid, list flat, int flags=*)
