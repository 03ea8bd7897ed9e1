# cython: language_level=3
"""C-level declarations of the RDB primitives (``_rio.pyx``) for compiled loops."""


cdef class RdbWriter:
    cdef public bytearray buf
    cdef public bint compress

    cpdef byte(self, int value)
    cpdef length(self, unsigned long long n)
    cpdef string(self, data)
    cdef _int_string(self, long long value)
    cpdef binary_double(self, double value)
    cpdef millis(self, long long ms)
    cpdef raw(self, data)


cdef class RdbReader:
    cdef public object data
    cdef public Py_ssize_t pos
    cdef const unsigned char[:] view

    cpdef Py_ssize_t remaining(self)
    cpdef bytes take(self, Py_ssize_t n)
    cpdef int byte(self) except -1
    cdef unsigned long long _be(self, int width) except? 0
    cpdef tuple length_or_encoding(self)
    cpdef unsigned long long length(self) except? 0
    cpdef bytes string(self)
    cpdef double binary_double(self) except? -1.0
