# The C interface between the socket reader (_readmux.pyx) and what it delivers to.


cdef class ReadTarget:
    """What ReadMux hands a socket's bytes to, by a C call (pykv.server._core.ClientCore)."""

    cdef int read_ready(self, const char *data, Py_ssize_t n) except -1
