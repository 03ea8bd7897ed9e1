# Types for the compiled streams.py's hottest path (XADD): the client, its server and its
# database are C-level types (pykv/server/_core.pxd, pykv/storage/keyspace.pxd), the ID
# parts C unsigned 64-bit integers, and the node append and ID formatting C calls into
# pykv/storage/stream_type.pxd, as strings.pxd and lists.pxd do for their commands.
cimport cython

from pykv.server._core cimport ClientCore, ServerCore
from pykv.storage.keyspace cimport Database
from pykv.storage.stream_type cimport (StreamValue, format_id, id_above, pel_deliver,
                                        range_forward, stream_append)

cdef extern from *:
    """
    #include <sys/time.h>
    /* Redis's mstime(): the wall clock in milliseconds */
    static long long pykv_mstime(void) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return ((long long)tv.tv_sec) * 1000 + tv.tv_usec / 1000;
    }
    """
    long long pykv_mstime()


cpdef long long _mstime()

@cython.locals(db=Database, server=ServerCore, argc=Py_ssize_t, idpos=Py_ssize_t,
               nfields=Py_ssize_t, total=Py_ssize_t, id_given=bint, seq_given=bint,
               nomkstream=bint, trimming=bint, last_ms=cython.ulonglong,
               last_seq=cython.ulonglong, ms=cython.ulonglong, last=tuple, sid=tuple,
               fields=tuple, s=StreamValue)
cdef _xadd(ClientCore c, list argv)

cdef list _entry(tuple sid, flat)

@cython.locals(entries=list, out=list, sid=tuple, tombstones=bint)
cdef list _deliver(s, tuple start, Py_ssize_t count, group, consumer, bint noack, key=*,
                   effects=*)
