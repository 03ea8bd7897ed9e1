# The compiled keyspace.py's Clock and Database as extension types: the fields every lookup
# and write reads are C struct members (a pointer load instead of a slot-descriptor lookup),
# and the per-command methods are cpdef (C calls from typed code, ordinary methods otherwise).
# Each keeps an instance __dict__ too, so an attribute added to keyspace.py's __slots__ but
# not declared here still works (as a slower dict attribute): declare it here when it is hot.

cimport cython
from posix.time cimport CLOCK_REALTIME, clock_gettime, timespec

from pykv.storage._keytable cimport IntTable, KeyTable


cdef inline double wall_time() noexcept:
    """``time.time()`` computed in C: the double CPython makes of CLOCK_REALTIME
    (_PyTime_AsSecondsDouble), without a module lookup and a Python call."""
    cdef timespec ts
    cdef long long ns
    clock_gettime(CLOCK_REALTIME, &ts)
    ns = ts.tv_sec * 1000000000LL + ts.tv_nsec
    if ns % 1000000000LL == 0:
        return <double>(ns // 1000000000LL)
    return <double>ns / 1e9


cdef inline long long _wall_ms() noexcept:
    """``int(time.time() * 1000)`` in C."""
    return <long long>(wall_time() * 1000.0)


cdef class Clock:
    cdef public long long ms, sec
    cdef public bint no_touch, master_view
    cdef dict __dict__

    @cython.locals(ms=cython.longlong)
    cpdef update(self)


cdef class Database:
    cdef public object id
    cdef public KeyTable data
    cdef public IntTable expires
    cdef public Clock clock
    cdef public object _signal_hook, on_expired, on_flush, on_key_ready, on_new_key
    cdef public dict signal_keys
    cdef public list _expire_snapshot
    cdef public object _expire_pos, avg_ttl, expired_count
    cdef public long long version
    cdef public dict blocking_keys
    cdef public bint lfu, expire_paused
    cdef public object lfu_log_factor, lfu_decay_time
    cdef public set mem_dirty
    cdef public object slot_index
    cdef dict __dict__

    @cython.locals(sec=cython.longlong)
    cpdef get(self, key, bint touch=*)
    cpdef touch(self, key)
    cpdef lfu_touch(self, key)
    cpdef expire_now(self, key)
    @cython.locals(sec=cython.longlong)
    cpdef set(self, key, value, bint keep_ttl=*)
    cpdef modified(self, key)
    cpdef replace_value(self, key, value)
    cpdef _remove(self, key)
    cdef _signal(self, key)
    cpdef replace_counter(self, key, value)
