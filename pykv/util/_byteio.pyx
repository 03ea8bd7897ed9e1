# cython: language_level=3
"""The C-level hand-offs between the loop's reader, a transport and the client it serves.

A request's bytes reach the client, and its replies leave it, without a Python call when
both ends are compiled: ``ReadTarget.read_ready`` is how the socket reader
(``pykv.net._readmux``) and the RDMA endpoint (``pykv.rdma.endpoint``) deliver what
arrived, ``ReplySink.take`` is how the client (``pykv.server._core``) gives its output to
a transport that can send it at once (the RDMA endpoint; a plain socket is written with
``send()`` directly), and ``FdTarget.fd_ready`` is how the socket reader tells a
transport that reads its descriptors itself (the RDMA endpoint's completion channel) that
one is readable. They live here, below both transports and the server in the layers,
because each side only needs the interface, never the other side's module.
"""


cdef class ReadTarget:
    cdef int read_ready(self, const char *data, Py_ssize_t n) except -1:
        """``n`` bytes arrived at ``data`` (valid during this call only: copy what is kept)."""
        raise NotImplementedError


cdef class ReplySink:
    cdef Py_ssize_t take(self, const char *data, Py_ssize_t n) except -1:
        """Send or copy what can go now of the ``n`` bytes at ``data`` (valid during this
        call only); how many were taken. 0 leaves them all to the connection's ``write``,
        which queues, waits and reports errors as it always does; a sink takes all or none,
        so the order of the bytes never depends on which path sent them."""
        return 0


cdef class FdTarget:
    cdef int fd_ready(self, int fd) except -1:
        """Descriptor ``fd`` is readable (level-triggered: it stays so until read)."""
        raise NotImplementedError
