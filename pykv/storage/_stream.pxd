# A stream macro node as a C type (see _stream.pyx), so that the compiled stream_type.py's
# XADD append and XREAD/XREADGROUP range walk are C calls.
from libc.stdint cimport uint64_t

cdef extern from *:
    """
    /* "ms-seq" of a stream ID, the two unsigned 64-bit parts in decimal */
    static char *pykv_u64_digits(char *end, unsigned long long v) {
        do { *--end = (char)('0' + v % 10); v /= 10; } while (v);
        return end;
    }
    static PyObject *pykv_format_id(unsigned long long ms, unsigned long long seq) {
        char buf[48];
        char *end = buf + sizeof buf;
        char *p = pykv_u64_digits(end, seq);
        *--p = '-';
        p = pykv_u64_digits(p, ms);
        return PyBytes_FromStringAndSize(p, end - p);
    }
    """
    bytes pykv_format_id(unsigned long long ms, unsigned long long seq)


cdef struct Entry:
    # one decoded entry header: where it is, its flags and ID, where its fields start
    Py_ssize_t off, body, next
    long long flags
    uint64_t ms, seq
    Py_ssize_t nfields


cdef class StreamNode:
    cdef unsigned char *lp
    cdef Py_ssize_t cap
    cdef readonly tuple master, fields
    cdef readonly Py_ssize_t live, dead
    cdef uint64_t mms, mseq
    cdef Py_ssize_t first  # offset of the first entry, past the master entry
    # where the last forward walk stopped: every entry before first + hint has an ID at or
    # below (hint_ms, hint_seq), so a walk from above that starts there (0: no hint)
    cdef Py_ssize_t hint
    cdef uint64_t hint_ms, hint_seq

    cdef int _scan(self, Py_ssize_t off, Entry *e) except -1
    cdef Py_ssize_t _before(self, Py_ssize_t off) except -1
    cdef object _values(self, Entry *e, bint as_list)
    cdef tuple _flat(self, Entry *e)
    cdef list _reply(self, Entry *e)
    cdef object _item(self, Entry *e, int form)
    cdef int _reserve(self, Py_ssize_t extra) except -1
    cdef int _replace_int(self, Py_ssize_t off, long long value) except -1
    cdef int _set_counts(self, Py_ssize_t live, Py_ssize_t dead) except -1
    cdef Py_ssize_t _replace_entry_flags(self, Entry *e, long long flags) except -1
    cpdef Py_ssize_t lp_bytes(self)
    cpdef append(self, tuple sid, tuple flat, int flags=*)
    cpdef shrink(self)
    cdef int forward(self, uint64_t sms, uint64_t sseq, bint bounded, uint64_t ems,
                     uint64_t eseq, Py_ssize_t count, list out, int form=*) except -1
