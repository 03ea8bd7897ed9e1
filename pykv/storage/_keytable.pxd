# The key table as a C type, so keyspace.py's compiled Database probes it without a call
# through Python (see _keytable.pyx).
from cpython.object cimport PyObject
from libc.stdint cimport int32_t, uint32_t


cdef struct Entry:
    PyObject* key      # NULL: a hole left by a deletion
    PyObject* value
    uint32_t access
    uint32_t mem


cdef class KeyTable:
    cdef int32_t* index
    cdef Entry* entries
    cdef Py_ssize_t size, mask, cap, n_entries, used, fill
    cdef readonly long long mem_total
    cdef readonly Py_ssize_t rebuilds
    cdef bint int_values  # IntTable: the value is the int64 in access/mem
    cdef Py_ssize_t found  # the entry index the last find() returned (a hint, checked on use)

    cdef void _release(self) noexcept
    cdef object _val(self, Entry* e)
    cdef Py_ssize_t find(self, object key) except -2
    cdef int _rebuild(self, Py_ssize_t size) except -1
    cdef int _make_room(self) except -1
    cdef int _shrink_if_sparse(self) except -1
    cdef Py_ssize_t put(self, object key, object value) except -1
    cdef object remove(self, object key)
    cpdef store(self, key, value)
    cpdef discard(self, key)
    cpdef get_touch(self, key, long long sec)
    cpdef put_touch(self, key, value, long long sec)
    cpdef object get_access(self, key, default=*)
    cpdef set_access(self, key, long long access)
    cpdef object get_mem(self, key)
    cpdef set_mem(self, key, long long mem)
    cpdef get(self, key, default=*)
    cpdef replace_found(self, key, value)


cdef class IntTable(KeyTable):
    pass
