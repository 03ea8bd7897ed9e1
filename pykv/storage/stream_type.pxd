# Augments pykv/storage/stream_type.py when Cython compiles it: the macro node becomes an
# extension type with C fields and the listpack integer size a C function, for XADD's hot
# path. Uncompiled, the .py runs as it is. (PelMap and Nack measured slower as extension
# types: their callers in pykv.commands.streams do not know the type, so every method call
# built a bound method.)

cpdef int lp_int_size(long long value)


cdef class Node:
    cdef public object master, fields
    cdef public list ids, items, flags
    cdef public Py_ssize_t live, dead, body_bytes

    cpdef Py_ssize_t lp_bytes(self)
