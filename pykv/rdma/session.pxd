from pykv.rdma.window cimport RxWindow, TxWindow


cdef class PostSend:
    cdef public object wr_id
    cdef public bytes msg


cdef class PostWrite:
    cdef public long long offset
    cdef public object data
    cdef public unsigned long long remote_addr
    cdef public unsigned int rkey
    cdef public bint signaled


cdef class Session:
    cdef public str role
    cdef public RxWindow rx
    cdef public TxWindow tx
    cdef public unsigned long long rx_addr
    cdef public unsigned int rx_rkey
    cdef public list actions   # a list, not a deque: its emptiness is a C test
    cdef public object pending, _signaled
    cdef public bint established, announced
    cdef public long long pending_bytes
    cdef public long long sq_depth, signal_every, posted, released, unsignaled_run
    cdef public list _free_slots
    cdef public double keepalive_interval
    cdef public object next_keepalive, keepalive_slot
    cdef public long long keepalives_sent, keepalives_skipped
    cdef public long long writes_posted, bytes_sent, bytes_received
    cdef public dict ctrl_received

    cpdef int on_write_imm(self, long long n) except -1
    cpdef on_send_completed(self, wr_id)
    cpdef int consume(self, long long n) except -1
    cpdef write(self, data)
    cpdef flush(self)
    cpdef long long outstanding(self)
    cdef bint fits_now(self, long long n) noexcept
    cdef long long claim_unsignaled(self, long long n) noexcept
    cdef _announce(self)
    cdef _post(self, signaled_wr_id)
