# Augments pykv/storage/stream_type.py when Cython compiles it: the pending entry and the
# stream become extension types with C fields, and the node appends and range walks are C
# calls into _stream.pyx's StreamNode, for XADD's and XREADGROUP's hot paths. Uncompiled,
# the .py runs as it is.
# (PelMap measured slower as an extension type: its callers in pykv.commands.streams do not
# know the type, so every method call built a bound method; XREADGROUP's inserts go through
# the typed pel_put instead.)

cimport cython
from pykv.storage._stream cimport StreamNode

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

cpdef bytes format_id(tuple sid)


cdef class Nack:
    # a PEL entry: built per delivered entry, from pel_deliver's typed code
    cdef public object consumer, delivery_time, delivery_count


cdef class StreamValue:
    # C slots: XADD's per-request reads and writes of them were generic attribute lookups
    cdef public list nodes, masters
    cdef public object length, last_id, first_id, max_deleted, entries_added, groups


@cython.locals(nodes=list, node=StreamNode, last=StreamNode, total=Py_ssize_t,
               length=Py_ssize_t)
cpdef stream_append(StreamValue s, tuple sid, tuple flat, Py_ssize_t max_bytes, Py_ssize_t max_entries)

@cython.locals(nodes=list, node=StreamNode, i=Py_ssize_t, bounded=bint,
               sms=cython.ulonglong, sseq=cython.ulonglong, ems=cython.ulonglong,
               eseq=cython.ulonglong)
cpdef range_forward(StreamValue s, tuple start, tuple end, Py_ssize_t count, list out)

@cython.locals(a_ms=cython.ulonglong, b_ms=cython.ulonglong, a_seq=cython.ulonglong,
               b_seq=cython.ulonglong)
cpdef bint id_above(tuple a, tuple b) except -1

@cython.locals(items=dict, stale=set, order=list, size=Py_ssize_t)
cpdef pel_put(pel, tuple sid, nack)

@cython.locals(nack=Nack)
cpdef pel_deliver(group, consumer, tuple sid, long long now)
