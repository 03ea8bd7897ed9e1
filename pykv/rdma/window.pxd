cdef class RxWindow:
    cdef public long long length, written, consumed, announcements

    cpdef on_write(self, long long n)
    cpdef long long unread(self)
    cpdef consume(self, long long n)
    cpdef bint exhausted(self)
    cpdef reset(self)


cdef class TxWindow:
    cdef public unsigned long long addr
    cdef public long long length, offset, announced
    cdef public unsigned int rkey

    cpdef announce(self, unsigned long long addr, long long length, unsigned int rkey)
    cpdef long long room(self)
