# The C interfaces between a transport, the loop's reader and the client (see _byteio.pyx).


cdef class ReadTarget:
    """What a transport hands received bytes to, by a C call (pykv.server._core.ClientCore)."""

    cdef int read_ready(self, const char *data, Py_ssize_t n) except -1


cdef class ReplySink:
    """Where a client hands its replies by a C call, when its transport can take them now
    (pykv.rdma.endpoint.Endpoint)."""

    cdef Py_ssize_t take(self, const char *data, Py_ssize_t n) except -1


cdef class FdTarget:
    """What the loop's reader (pykv.net._readmux) calls when a descriptor it watches for
    it is readable (pykv.rdma.endpoint.Endpoint: a completion channel, a fabric fd)."""

    cdef int fd_ready(self, int fd) except -1
