# cython: language_level=3
"""Redis's SCAN cursor step (``dictScan``'s reverse-binary increment), inlined by the
compiled tables that scan their buckets (pykv.storage._keytable, pykv.storage._fieldtable)."""
from libc.stdint cimport uint64_t


cdef inline uint64_t _rev(uint64_t v) noexcept:
    cdef uint64_t r = 0
    cdef int i
    for i in range(64):
        r = (r << 1) | (v & 1)
        v >>= 1
    return r


cdef inline uint64_t next_cursor(uint64_t v, uint64_t mask) noexcept:
    """The cursor after bucket ``v & mask``: the high bits set, then +1 in reverse order."""
    v |= ~mask
    return _rev(_rev(v) + 1)
