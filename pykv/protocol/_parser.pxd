# The request parser's C interface, for the dispatcher (pykv/server/_core.pyx) and the RDB
# codecs (pykv/storage/rdb/_rio.pyx), which share its string2ll.
cdef bint parse_ll(const char *s, Py_ssize_t n, long long *out) noexcept
cpdef object string2ll(object data)
cpdef bytes ll2bytes(long long value)

cdef class RequestParser:
    cdef bytearray buf
    cdef Py_ssize_t pos
    cdef long long multibulklen
    cdef long long bulklen
    cdef list argv  # the arguments of a command being parsed: ``argc`` filled so far
    cdef Py_ssize_t argc
    cdef bytes last_name  # the previous command's name, handed out again when it repeats
    cdef public long long max_bulk_len
    cdef public bint auth_required

    cpdef feed(self, data)
    cdef int feed_raw(self, const char *data, Py_ssize_t n) except -1
    cdef int _drop_consumed(self) except -1
    cpdef Py_ssize_t buffered(self)
    cpdef tuple mem_state(self)
    cpdef bytes peek(self, Py_ssize_t n)
    cpdef compact(self)
    cpdef reset(self)
    cpdef object get_command(self)
    cdef list _inline(self)
    cdef list _multibulk(self)
    cdef Py_ssize_t _line_end(self, const char *p, Py_ssize_t end, str too_big) except -2
    cdef bytes _name(self, const char *p, Py_ssize_t n)
