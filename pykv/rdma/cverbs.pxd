cdef class WC:
    cdef readonly unsigned long long wr_id
    cdef readonly int status, opcode
    cdef readonly unsigned int byte_len
    cdef unsigned int _imm
    cdef bint _has_imm
    cdef int sq_release   # backend bookkeeping (soft fabric: SQ entries freed when polled)


cdef class CMemoryRegion:
    cpdef bytes read(self, Py_ssize_t offset, Py_ssize_t n)
    cpdef write(self, Py_ssize_t offset, data)
    cpdef view(self, Py_ssize_t offset, Py_ssize_t n)
    cdef char *span(self, Py_ssize_t offset, Py_ssize_t n) except NULL
    cdef int write_from(self, Py_ssize_t offset, const char *data, Py_ssize_t n) except -1


# one work completion as a C struct (``CQueuePair.poll_wc``): ``imm`` in host byte order,
# 0 unless the opcode carries an immediate
ctypedef struct wc_t:
    unsigned long long wr_id
    int status
    int opcode
    unsigned int byte_len
    unsigned int imm


cdef class CQueuePair:
    cdef public Py_ssize_t max_inline_data   # largest IBV_SEND_INLINE payload (0: none)

    cdef int poll_wc(self, wc_t *out, int max_entries) except -1

    cpdef post_recv(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length)
    cpdef post_write_imm(self, unsigned long long wr_id, mr, Py_ssize_t offset,
                         Py_ssize_t length, unsigned long long remote_addr, unsigned int rkey,
                         unsigned int imm, bint signaled)
    cpdef post_write_imm_inline(self, unsigned long long wr_id, data,
                                unsigned long long remote_addr, unsigned int rkey,
                                unsigned int imm, bint signaled)
    cdef int post_inline(self, unsigned long long wr_id, const char *data, Py_ssize_t n,
                         unsigned long long remote_addr, unsigned int rkey, unsigned int imm,
                         bint signaled) except -1
    cpdef bint get_cq_event(self)
    cpdef ack_cq_events(self, long long n)
    cpdef req_notify(self)
    cpdef list poll(self, int max_entries)
    cpdef bint pump(self, int fd)
    cpdef bint has_output(self)
