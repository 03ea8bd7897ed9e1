# cython: language_level=3
"""The C-level face of the verbs interface (``pykv.rdma.verbs``), for backends in Cython.

Owns three extension base types and nothing else: ``WC`` (a work completion with the fields
of ``verbs.WorkCompletion``), ``CMemoryRegion`` and ``CQueuePair`` (the per-request verbs
calls as ``cpdef`` methods). A backend whose objects derive from them (the software fabric)
is driven by the endpoint through C vtable calls — no Python argument parsing, no attribute
lookups on completions; any other backend (pyverbs) is driven through ordinary Python calls.
The verbs methods here only raise: subclasses implement them.
"""

cimport cython


@cython.freelist(256)
cdef class WC:
    """One work completion (``imm`` is None unless the opcode carries an immediate)."""

    @property
    def imm(self):
        return self._imm if self._has_imm else None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(wr_id={self.wr_id}, status={self.status}, "
                f"opcode={self.opcode}, byte_len={self.byte_len}, imm={self.imm})")


cdef class CMemoryRegion:
    cpdef bytes read(self, Py_ssize_t offset, Py_ssize_t n):
        raise NotImplementedError

    cpdef write(self, Py_ssize_t offset, data):
        raise NotImplementedError

    cpdef view(self, Py_ssize_t offset, Py_ssize_t n):
        raise NotImplementedError

    cdef char *span(self, Py_ssize_t offset, Py_ssize_t n) except NULL:
        """The region's memory at ``[offset, offset + n)`` (checked), no copy."""
        raise NotImplementedError

    cdef int write_from(self, Py_ssize_t offset, const char *data, Py_ssize_t n) except -1:
        """``write`` from C memory."""
        raise NotImplementedError


cdef class CQueuePair:
    cpdef post_recv(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length):
        raise NotImplementedError

    cpdef post_write_imm(self, unsigned long long wr_id, mr, Py_ssize_t offset,
                         Py_ssize_t length, unsigned long long remote_addr, unsigned int rkey,
                         unsigned int imm, bint signaled):
        raise NotImplementedError

    cpdef post_write_imm_inline(self, unsigned long long wr_id, data,
                                unsigned long long remote_addr, unsigned int rkey,
                                unsigned int imm, bint signaled):
        """RDMA_WRITE_WITH_IMM with IBV_SEND_INLINE: the payload is taken from ``data``
        at post time (no MR, no lkey), for payloads up to ``max_inline_data``."""
        raise NotImplementedError

    cdef int post_inline(self, unsigned long long wr_id, const char *data, Py_ssize_t n,
                         unsigned long long remote_addr, unsigned int rkey, unsigned int imm,
                         bint signaled) except -1:
        """``post_write_imm_inline`` of the ``n`` bytes at ``data``."""
        raise NotImplementedError

    cpdef bint get_cq_event(self):
        raise NotImplementedError

    cpdef ack_cq_events(self, long long n):
        raise NotImplementedError

    cpdef req_notify(self):
        raise NotImplementedError

    cpdef list poll(self, int max_entries):
        raise NotImplementedError

    cdef int poll_wc(self, wc_t *out, int max_entries) except -1:
        """Up to ``max_entries`` (at most 64) completions into ``out``; the count (the
        endpoint's path: no object per completion)."""
        raise NotImplementedError

    # a backend whose NIC runs in this process (the software fabric) is driven through
    # extra fds (``aux_fds``); these defaults are for one whose NIC does not need it
    cpdef bint pump(self, int fd):
        """Run the NIC on readable ``fd``; False once that fd is finished with."""
        return True

    cpdef bint has_output(self):
        """The NIC has bytes queued for a writable fd (``write_fds``)."""
        return False
