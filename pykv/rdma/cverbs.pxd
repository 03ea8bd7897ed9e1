cdef class WC:
    cdef readonly unsigned long long wr_id
    cdef readonly int status, opcode
    cdef readonly unsigned int byte_len
    cdef unsigned int _imm
    cdef bint _has_imm


cdef class CMemoryRegion:
    cpdef bytes read(self, Py_ssize_t offset, Py_ssize_t n)
    cpdef write(self, Py_ssize_t offset, data)
    cpdef view(self, Py_ssize_t offset, Py_ssize_t n)


cdef class CQueuePair:
    cpdef post_recv(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length)
    cpdef post_write_imm(self, unsigned long long wr_id, mr, Py_ssize_t offset,
                         Py_ssize_t length, unsigned long long remote_addr, unsigned int rkey,
                         unsigned int imm, bint signaled)
    cpdef bint get_cq_event(self)
    cpdef ack_cq_events(self, long long n)
    cpdef req_notify(self)
    cpdef list poll(self, int max_entries)
