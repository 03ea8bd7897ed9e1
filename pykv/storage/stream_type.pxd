# Augments pykv/storage/stream_type.py when Cython compiles it: the pending entry and the
# stream become extension types with C fields, and the node appends and range walks are C
# calls into _stream.pyx's StreamNode, for XADD's and XREADGROUP's hot paths. Uncompiled,
# the .py runs as it is.
# (PelMap measured slower as an extension type: its callers in pykv.commands.streams do not
# know the type, so every method call built a bound method; XREADGROUP's inserts go through
# the typed pel_put instead.)

cimport cython
from pykv.storage._stream cimport StreamNode, pykv_format_id

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
cpdef range_forward(StreamValue s, tuple start, tuple end, Py_ssize_t count, list out,
                    int form=*)

@cython.locals(a_ms=cython.ulonglong, b_ms=cython.ulonglong, a_seq=cython.ulonglong,
               b_seq=cython.ulonglong)
cpdef bint id_above(tuple a, tuple b) except -1

@cython.locals(items=dict, stale=set, order=list, size=Py_ssize_t)
cpdef pel_put(pel, tuple sid, nack)

@cython.locals(nack=Nack)
cpdef pel_deliver(group, consumer, tuple sid, long long now)
