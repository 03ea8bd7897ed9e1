# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The keyspace's key table: key -> value plus the key's access clock and memory estimate.

One compact table replaces the three dicts a database used to keep per key (``data``,
``access``, ``mem_sizes``): an index of 4-byte slots (linear probing, power-of-two size,
at most 2/3 full) pointing into a dense array of 24-byte entries ``{key, value, access,
mem}``. A lookup is one probe that finds the value and the clock together; the stored
key's hash is the one ``bytes`` caches in the object, so the entry carries none.

``access`` is the LRU second or the packed LFU word (0: never recorded) and ``mem`` the
estimate behind ``used_memory`` (pykv.storage.memory); the table keeps their sum in
``mem_total``. The table speaks the dict interface the rest of the server uses for
``db.data`` (get, [], in, len, iteration, keys/items/values, pop, clear), plus
``scan`` (Redis's reverse-binary cursor over the buckets, natively) and ``random_key``.

SCAN's guarantee rests on linear probing with tombstones: every key with home bucket
``b`` (``hash & mask``) lies between slot ``b`` and the next empty slot, so a bucket is
walked by following that run; a resize maps bucket ``b`` onto the buckets whose low bits
are ``b``, which is exactly what Redis's cursor arithmetic expects.
"""
from cpython.object cimport PyObject, PyObject_Hash, PyObject_RichCompareBool, Py_EQ
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_GET_SIZE, PyBytes_AS_STRING
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp, memcpy, memset
from pykv.storage._cursor cimport next_cursor
import random as _random

cdef enum:
    EMPTY = -1
    DUMMY = -2
    MIN_SIZE = 8

cdef object _MISSING = object()

cdef extern from "Python.h":
    ctypedef struct PyBytesObject:
        Py_hash_t ob_shash  # the cached hash (-1: not computed yet)


cdef inline bint _same_key(PyObject* stored, object key, Py_hash_t h) except -1:
    cdef object s
    cdef Py_hash_t sh
    if stored == <PyObject*>key:
        return True
    s = <object>stored
    if PyBytes_CheckExact(s) and PyBytes_CheckExact(key):
        if PyBytes_GET_SIZE(s) != PyBytes_GET_SIZE(key):
            return False
        # a stored key's hash is cached in the object: read it without the call
        sh = (<PyBytesObject*>stored).ob_shash
        if sh == -1:
            sh = PyObject_Hash(s)
        if sh != h:
            return False
        return memcmp(PyBytes_AS_STRING(s), PyBytes_AS_STRING(key),
                      PyBytes_GET_SIZE(s)) == 0
    if PyObject_Hash(s) != h:
        return False
    return PyObject_RichCompareBool(s, key, Py_EQ)


cdef inline int64_t _get64(Entry* e) noexcept:
    """An IntTable's value: the 8 bytes of ``access`` and ``mem``."""
    cdef int64_t v
    memcpy(&v, &e.access, 8)
    return v


cdef inline void _set64(Entry* e, int64_t v) noexcept:
    memcpy(&e.access, &v, 8)


cdef class KeyTable:
    """A dict-like table of the keys of one database (see the module docstring)."""

    def __cinit__(self):
        self.size = MIN_SIZE
        self.mask = MIN_SIZE - 1
        self.index = <int32_t*>malloc(MIN_SIZE * sizeof(int32_t))
        memset(self.index, 0xFF, MIN_SIZE * sizeof(int32_t))
        self.cap = 5
        self.entries = <Entry*>malloc(self.cap * sizeof(Entry))
        self.n_entries = 0
        self.used = 0
        self.fill = 0
        self.mem_total = 0
        self.rebuilds = 0
        if self.index is NULL or self.entries is NULL:
            raise MemoryError()

    def __dealloc__(self):
        self._release()
        free(self.index)
        free(self.entries)

    cdef void _release(self) noexcept:
        cdef Py_ssize_t i
        for i in range(self.n_entries):
            if self.entries[i].key is not NULL:
                Py_DECREF(<object>self.entries[i].key)
                Py_XDECREF(self.entries[i].value)
                self.entries[i].key = NULL

    # -- probing -----------------------------------------------------------------------
    cdef Py_ssize_t find(self, object key) except -2:
        """The entry index of ``key``, or -1."""
        cdef Py_hash_t h = PyObject_Hash(key)
        cdef Py_ssize_t i = h & self.mask
        cdef int32_t ix
        while True:
            ix = self.index[i]
            if ix == EMPTY:
                return -1
            if ix >= 0 and _same_key(self.entries[ix].key, key, h):
                self.found = ix
                return ix
            i = (i + 1) & self.mask

    cdef int _rebuild(self, Py_ssize_t size) except -1:
        """Compact the entries (drop holes) and index them again in ``size`` slots."""
        cdef int32_t* index = <int32_t*>malloc(size * sizeof(int32_t))
        cdef Py_ssize_t i, j = 0, slot, mask = size - 1
        cdef Entry* e = self.entries
        if index is NULL:
            raise MemoryError()
        memset(index, 0xFF, size * sizeof(int32_t))
        for i in range(self.n_entries):
            if e[i].key is NULL:
                continue
            if i != j:
                e[j] = e[i]
            slot = PyObject_Hash(<object>e[j].key) & mask
            while index[slot] != EMPTY:
                slot = (slot + 1) & mask
            index[slot] = <int32_t>j
            j += 1
        free(self.index)
        self.index = index
        self.size = size
        self.mask = mask
        self.n_entries = j
        self.fill = j
        self.rebuilds += 1
        return 0

    cdef int _make_room(self) except -1:
        """Before adding an entry: room in the entries array and the index."""
        cdef Py_ssize_t size, cap
        cdef Entry* grown
        if (self.fill + 1) * 3 > self.size * 2:
            size = MIN_SIZE
            while size * 4 <= (self.used + 1) * 9:
                size <<= 1
            self._rebuild(size)
        if self.n_entries == self.cap:
            if (self.n_entries - self.used) * 4 > self.cap:
                self._rebuild(self.size)  # many holes: compact instead of growing
            else:
                cap = self.cap + (self.cap >> 1) + 4
                grown = <Entry*>realloc(self.entries, cap * sizeof(Entry))
                if grown is NULL:
                    raise MemoryError()
                self.entries = grown
                self.cap = cap
        return 0

    cdef int _shrink_if_sparse(self) except -1:
        cdef Py_ssize_t size
        if self.size > 64 and self.used * 10 < self.size:
            size = MIN_SIZE
            while size * 4 <= (self.used + 1) * 9:
                size <<= 1
            self._rebuild(size)
            if self.cap > 2 * self.n_entries + 8:
                self.cap = 2 * self.n_entries + 8
                self.entries = <Entry*>realloc(self.entries, self.cap * sizeof(Entry))
        return 0

    cdef object _val(self, Entry* e):
        if self.int_values:
            return _get64(e)
        return <object>e.value

    # -- the C API the keyspace uses -----------------------------------------------------
    cdef Py_ssize_t put(self, object key, object value) except -1:
        """Store ``value`` at ``key``; returns the entry index (new entries: access 0)."""
        cdef Py_hash_t h = PyObject_Hash(key)
        cdef Py_ssize_t i = h & self.mask, dummy = -1
        cdef int32_t ix
        cdef Entry* e
        cdef PyObject* old
        cdef int64_t iv = 0
        while True:
            ix = self.index[i]
            if ix == EMPTY:
                break
            if ix == DUMMY:
                if dummy < 0:
                    dummy = i
            elif _same_key(self.entries[ix].key, key, h):
                e = &self.entries[ix]
                if self.int_values:
                    _set64(e, value)
                    return ix
                old = e.value
                Py_INCREF(value)
                e.value = <PyObject*>value
                Py_XDECREF(old)
                return ix
            i = (i + 1) & self.mask
        if self.int_values:
            iv = value  # converted (or refused) before anything is stored
            value = None
        if (self.fill + 1) * 3 > self.size * 2 or self.n_entries == self.cap:
            self._make_room()
            dummy = -1
            i = h & self.mask
            while self.index[i] >= 0:
                i = (i + 1) & self.mask
            if self.index[i] == DUMMY:
                dummy = i
        if dummy >= 0:
            i = dummy
        else:
            self.fill += 1
        ix = <int32_t>self.n_entries
        self.n_entries += 1
        self.index[i] = ix
        e = &self.entries[ix]
        e.access = 0
        e.mem = 0
        if self.int_values:
            _set64(e, iv)
        Py_INCREF(key)
        Py_INCREF(value)
        e.key = <PyObject*>key
        e.value = <PyObject*>value
        self.used += 1
        return ix

    cdef object remove(self, object key):
        """Delete ``key``; returns its value (a new reference) or None if absent."""
        cdef Py_hash_t h = PyObject_Hash(key)
        cdef Py_ssize_t i = h & self.mask
        cdef int32_t ix
        cdef Entry* e
        cdef object value
        while True:
            ix = self.index[i]
            if ix == EMPTY:
                return None
            if ix >= 0 and _same_key(self.entries[ix].key, key, h):
                break
            i = (i + 1) & self.mask
        e = &self.entries[ix]
        value = self._val(e)
        Py_DECREF(<object>e.value)  # the table's references go; ``value`` is a new one
        Py_DECREF(<object>e.key)
        e.key = NULL
        e.value = NULL
        if not self.int_values:
            self.mem_total -= e.mem
        self.index[i] = DUMMY
        self.used -= 1
        if ix == self.n_entries - 1:
            self.n_entries -= 1
        self._shrink_if_sparse()
        return value

    cpdef store(self, key, value):
        """``table[key] = value`` as a C call for compiled callers."""
        self.put(key, value)

    cpdef discard(self, key):
        """``table.pop(key, None)`` as a C call for compiled callers."""
        return self.remove(key)

    # -- access clock and memory estimate --------------------------------------------------
    cpdef get_touch(self, key, long long sec):
        """The value of ``key`` (None if absent), its LRU clock set to ``sec``: one probe."""
        cdef Py_ssize_t ix = self.find(key)
        if ix < 0:
            return None
        self.entries[ix].access = <uint32_t>sec
        return self._val(&self.entries[ix])

    cpdef put_touch(self, key, value, long long sec):
        """Store ``value`` at ``key`` with its LRU clock at ``sec``."""
        cdef Py_ssize_t ix = self.put(key, value)
        self.entries[ix].access = <uint32_t>sec

    cpdef object get_access(self, key, default=None):
        """The key's access clock (LRU second / LFU word); ``default`` if none recorded."""
        cdef Py_ssize_t ix = self.find(key)
        if ix < 0 or self.entries[ix].access == 0:
            return default
        return self.entries[ix].access

    cpdef set_access(self, key, long long access):
        cdef Py_ssize_t ix = self.find(key)
        if ix < 0:
            raise KeyError(key)
        self.entries[ix].access = <uint32_t>access

    cpdef object get_mem(self, key):
        cdef Py_ssize_t ix = self.find(key)
        return None if ix < 0 else self.entries[ix].mem

    cpdef set_mem(self, key, long long mem):
        """Record the key's memory estimate (capped at 32 bits) and adjust the total."""
        cdef Py_ssize_t ix = self.find(key)
        if ix < 0:
            raise KeyError(key)
        if mem > 0xFFFFFFFF:
            mem = 0xFFFFFFFF
        self.mem_total += mem - self.entries[ix].mem
        self.entries[ix].mem = <uint32_t>mem

    # -- dict interface ------------------------------------------------------------------
    def __len__(self):
        return self.used

    def __bool__(self):
        return self.used != 0

    def __contains__(self, key):
        return self.find(key) >= 0

    def __getitem__(self, key):
        cdef Py_ssize_t ix = self.find(key)
        if ix < 0:
            raise KeyError(key)
        return self._val(&self.entries[ix])

    def __setitem__(self, key, value):
        self.put(key, value)

    def __delitem__(self, key):
        if self.remove(key) is None:
            raise KeyError(key)

    cpdef get(self, key, default=None):
        cdef Py_ssize_t ix = self.find(key)
        if ix < 0:
            return default
        return self._val(&self.entries[ix])

    cpdef replace_found(self, key, value):
        """``store`` for a key the last lookup just found (INCR's read-modify-write): the
        entry that lookup returned is reused without a probe when it still holds ``key``."""
        cdef Py_ssize_t ix = self.found
        cdef PyObject* old
        if (not self.int_values and 0 <= ix < self.n_entries and self.entries[ix].key is not NULL
                and _same_key(self.entries[ix].key, key, PyObject_Hash(key))):
            old = self.entries[ix].value
            Py_INCREF(value)
            self.entries[ix].value = <PyObject*>value
            Py_XDECREF(old)
            return
        self.put(key, value)

    def pop(self, key, default=_MISSING):
        value = self.remove(key)
        if value is None:
            if default is _MISSING:
                raise KeyError(key)
            return default
        return value

    def setdefault(self, key, default=None):
        cdef Py_ssize_t ix = self.find(key)
        if ix >= 0:
            return self._val(&self.entries[ix])
        self.put(key, default)
        return default

    def clear(self):
        self._release()
        self.n_entries = 0
        self.used = 0
        self.mem_total = 0
        self._rebuild(MIN_SIZE)
        self.cap = 5
        self.entries = <Entry*>realloc(self.entries, self.cap * sizeof(Entry))

    def __iter__(self):
        return _TableIter(self, 0)

    def keys(self):
        return _TableView(self, 0)

    def values(self):
        return _TableView(self, 1)

    def items(self):
        return _TableView(self, 2)

    def copy(self):
        return dict(_TableIter(self, 2))

    def __eq__(self, other):
        if isinstance(other, KeyTable):
            other = dict(_TableIter(<KeyTable>other, 2))
        return dict(_TableIter(self, 2)) == other

    def __repr__(self):
        return f"KeyTable({dict(_TableIter(self, 2))!r})"

    # -- sampling and cursors ---------------------------------------------------------------
    def random_key(self):
        """A key picked at random (None if empty)."""
        cdef Py_ssize_t ix, tries
        if self.used == 0:
            return None
        for tries in range(64):
            ix = _random.randrange(self.n_entries)
            if self.entries[ix].key is not NULL:
                return <object>self.entries[ix].key
        self._rebuild(self.size)  # mostly holes: compact, then any index is a key
        return <object>self.entries[_random.randrange(self.n_entries)].key

    def scan(self, object cursor, Py_ssize_t count):
        """One SCAN step: ``(next_cursor, keys)``, Redis's dictScan over the buckets."""
        cdef uint64_t v = cursor, m = <uint64_t>self.mask
        cdef Py_ssize_t i, maxiter = count * 10
        cdef int32_t ix
        cdef list out = []
        cdef PyObject* k
        if self.used == 0:
            return 0, out
        if maxiter < 10:
            maxiter = 10
        while True:
            i = <Py_ssize_t>(v & m)
            while True:  # the run of slots holding the keys whose home bucket is v & m
                ix = self.index[i]
                if ix == EMPTY:
                    break
                if ix >= 0:
                    k = self.entries[ix].key
                    if <uint64_t>(PyObject_Hash(<object>k) & self.mask) == (v & m):
                        out.append(<object>k)
                i = (i + 1) & self.mask
            v = next_cursor(v, m)
            maxiter -= 1
            if v == 0 or maxiter <= 0 or len(out) >= count:
                break
        return v, out

    def stats(self):
        """(index slots, entry capacity, live keys) for MEMORY/DEBUG figures and tests."""
        return self.size, self.cap, self.used

    def nbytes(self):
        """Bytes the table itself allocates (index and entries)."""
        return self.size * sizeof(int32_t) + self.cap * sizeof(Entry)


cdef class IntTable(KeyTable):
    """A key table of 64-bit integer values kept in the entry (``expires``: key -> ms).

    The value goes where a ``KeyTable`` keeps the access clock and memory estimate; the
    dict interface is the same, with ints in and out.
    """

    def __cinit__(self):
        self.int_values = True


cdef class _TableIter:
    cdef KeyTable table
    cdef Py_ssize_t pos, rebuilds, used
    cdef int kind

    def __cinit__(self, KeyTable table, int kind):
        self.table = table
        self.kind = kind
        self.pos = 0
        self.rebuilds = table.rebuilds
        self.used = table.used

    def __iter__(self):
        return self

    def __next__(self):
        cdef KeyTable t = self.table
        cdef Entry* e
        if t.rebuilds != self.rebuilds or t.used != self.used:
            self.used = -1
            raise RuntimeError("dictionary changed size during iteration")
        while self.pos < t.n_entries:
            e = &t.entries[self.pos]
            self.pos += 1
            if e.key is not NULL:
                if self.kind == 0:
                    return <object>e.key
                if self.kind == 1:
                    return t._val(e)
                return (<object>e.key, t._val(e))
        raise StopIteration


cdef class _TableView:
    cdef KeyTable table
    cdef int kind

    def __cinit__(self, KeyTable table, int kind):
        self.table = table
        self.kind = kind

    def __len__(self):
        return self.table.used

    def __iter__(self):
        return _TableIter(self.table, self.kind)

    def __contains__(self, item):
        if self.kind == 0:
            return item in self.table
        return item in list(_TableIter(self.table, self.kind))


class AccessView:
    """``db.access``: the access clocks as a read/write mapping (tests, rare callers)."""

    __slots__ = ("table",)

    def __init__(self, table):
        self.table = table

    def get(self, key, default=None):
        return self.table.get_access(key, default)

    def __getitem__(self, key):
        value = self.table.get_access(key, None)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        self.table.set_access(key, value)

    def __contains__(self, key):
        return self.table.get_access(key, None) is not None
