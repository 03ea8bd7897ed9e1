# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The ``hashtable`` encoding of a hash: a compiled field -> value table of raw blobs.

Each field is ONE ``PyMem_Malloc`` allocation: a 12-byte header (the low 32 bits of the
field's hash, the field's and the value's lengths) followed by the field's and the value's
bytes. No Python object is kept per field; reads build new ``bytes``. The index is an
array of pointers to those blobs (linear probing, power-of-two size, at most 3/4 full
counting tombstones, half full or less after a resize, shrunk below 1/10), so a field
costs its blob (pymalloc's 16-byte classes) and ~17 bytes of index, where a dict of
``bytes`` cost two objects and a dict entry.

The table answers the dict subset ``HashValue.d`` promises (``get``, ``[]``, ``in``,
``len``, iteration, ``keys``/``values``/``items``, ``pop``, ``copy``, ``==``), plus
``set`` (store, saying whether the field is new), ``scan`` (Redis's reverse-binary cursor
over the buckets, as ``dictScan``), uniform random picks (``random_field``, ``picks``) and
``nbytes``.

SCAN's guarantee rests on linear probing with tombstones, as in pykv.storage._keytable:
every field whose home bucket is ``b`` (``hash & mask``) lies between slot ``b`` and the
next empty slot, so a bucket is walked by following that run; a resize maps bucket ``b``
onto the buckets whose low bits are ``b``, which is what the cursor arithmetic expects.
A random pick draws slots until one holds a field: every field has exactly one slot, so
picks are uniform, and the shrink rule bounds the expected draws by 10.
"""
from cpython.bytes cimport (PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize,
                            PyBytes_GET_SIZE)
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject_Hash
from libc.stdint cimport uint32_t, uint64_t, uintptr_t
from libc.string cimport memcmp, memcpy, memset
from pykv.storage._cursor cimport next_cursor
import random as _random

cdef extern from *:
    """
    typedef struct { uint32_t hash; uint32_t flen; uint32_t vlen; } pykv_fentry;
    #define PYKV_FDATA(e) (((char *)(e)) + sizeof(pykv_fentry))
    """
    ctypedef struct FEntry "pykv_fentry":
        uint32_t hash
        uint32_t flen
        uint32_t vlen
    char* FDATA "PYKV_FDATA"(FEntry* e) noexcept nogil

cdef enum:
    MIN_SIZE = 8

cdef FEntry* DUMMY = <FEntry*><uintptr_t>1  # a deleted slot (tombstone)
cdef object _MISSING = object()
_getrandbits = _random.getrandbits
_sample = _random.sample


cdef inline bint _live(FEntry* e) noexcept:
    return <uintptr_t>e > 1


cdef inline bytes _as_bytes(object field):
    if PyBytes_CheckExact(field):
        return <bytes>field
    return bytes(field)


cdef inline object _field(FEntry* e):
    return PyBytes_FromStringAndSize(FDATA(e), e.flen)


cdef inline object _value(FEntry* e):
    return PyBytes_FromStringAndSize(FDATA(e) + e.flen, e.vlen)


cdef inline Py_ssize_t _size_for(Py_ssize_t used) noexcept:
    """The index size a resize picks: at most half full."""
    cdef Py_ssize_t size = MIN_SIZE
    while size < used * 2:
        size <<= 1
    return size


cdef class FieldTable:
    """A hash's fields and values as raw blobs (see the module docstring)."""

    cdef FEntry** index
    cdef Py_ssize_t size, mask, used, fill, rebuilds
    cdef unsigned int bits

    def __cinit__(self, pairs=None):
        self.index = <FEntry**>PyMem_Malloc(MIN_SIZE * sizeof(FEntry*))
        if self.index is NULL:
            raise MemoryError()
        memset(self.index, 0, MIN_SIZE * sizeof(FEntry*))
        self.size = MIN_SIZE
        self.mask = MIN_SIZE - 1
        self.bits = 3
        self.used = 0
        self.fill = 0
        self.rebuilds = 0

    def __init__(self, pairs=None):
        """``pairs``: None, a mapping (its ``items()``) or an iterable of (field, value)."""
        if pairs is None:
            return
        if hasattr(pairs, "items"):
            pairs = pairs.items()
        try:
            n = len(pairs)
        except TypeError:
            n = 0
        if n > 6:
            self._rebuild(_size_for(n))
        for field, value in pairs:
            self.put(field, value)

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.index is NULL:
            return
        for i in range(self.size):
            if _live(self.index[i]):
                PyMem_Free(self.index[i])
        PyMem_Free(self.index)

    # -- probing -------------------------------------------------------------------------
    cdef Py_ssize_t find(self, bytes field, Py_hash_t h) noexcept:
        """The slot holding ``field``, or -1."""
        cdef Py_ssize_t i = h & self.mask
        cdef Py_ssize_t n = PyBytes_GET_SIZE(field)
        cdef const char* s = PyBytes_AS_STRING(field)
        cdef uint32_t h32 = <uint32_t>h
        cdef FEntry* e
        while True:
            e = self.index[i]
            if e is NULL:
                return -1
            if (_live(e) and e.hash == h32 and e.flen == <uint32_t>n
                    and memcmp(FDATA(e), s, n) == 0):
                return i
            i = (i + 1) & self.mask

    cdef int _rebuild(self, Py_ssize_t size) except -1:
        """Index the fields again in ``size`` slots (tombstones go)."""
        cdef FEntry** index = <FEntry**>PyMem_Malloc(size * sizeof(FEntry*))
        cdef Py_ssize_t i, slot, mask = size - 1
        cdef FEntry* e
        if index is NULL:
            raise MemoryError()
        memset(index, 0, size * sizeof(FEntry*))
        for i in range(self.size):
            e = self.index[i]
            if not _live(e):
                continue
            slot = e.hash & mask
            while index[slot] is not NULL:
                slot = (slot + 1) & mask
            index[slot] = e
        PyMem_Free(self.index)
        self.index = index
        self.size = size
        self.mask = mask
        self.bits = 0
        while (<Py_ssize_t>1 << self.bits) < size:
            self.bits += 1
        self.fill = self.used
        self.rebuilds += 1
        return 0

    cdef int put(self, object field, object value) except -1:
        """Store ``value`` at ``field``; returns 1 if the field is new, else 0."""
        cdef bytes f = _as_bytes(field)
        cdef bytes v = _as_bytes(value)
        cdef Py_hash_t h = PyObject_Hash(f)
        cdef Py_ssize_t flen = PyBytes_GET_SIZE(f), vlen = PyBytes_GET_SIZE(v)
        cdef Py_ssize_t i, dummy = -1
        cdef uint32_t h32 = <uint32_t>h
        cdef FEntry* e
        if flen > 0xFFFFFFFF or vlen > 0xFFFFFFFF:
            raise OverflowError("hash field or value too long")
        i = h & self.mask
        while True:
            e = self.index[i]
            if e is NULL:
                break
            if e is DUMMY:
                if dummy < 0:
                    dummy = i
            elif (e.hash == h32 and e.flen == <uint32_t>flen
                    and memcmp(FDATA(e), PyBytes_AS_STRING(f), flen) == 0):
                if e.vlen != <uint32_t>vlen:
                    e = <FEntry*>PyMem_Realloc(e, sizeof(FEntry) + flen + vlen)
                    if e is NULL:
                        raise MemoryError()
                    e.vlen = <uint32_t>vlen
                    self.index[i] = e
                memcpy(FDATA(e) + flen, PyBytes_AS_STRING(v), vlen)
                return 0
            i = (i + 1) & self.mask
        e = <FEntry*>PyMem_Malloc(sizeof(FEntry) + flen + vlen)
        if e is NULL:
            raise MemoryError()
        e.hash = h32
        e.flen = <uint32_t>flen
        e.vlen = <uint32_t>vlen
        memcpy(FDATA(e), PyBytes_AS_STRING(f), flen)
        memcpy(FDATA(e) + flen, PyBytes_AS_STRING(v), vlen)
        if dummy < 0 and (self.fill + 1) * 4 > self.size * 3:
            try:
                self._rebuild(_size_for(self.used + 1))
            except MemoryError:
                PyMem_Free(e)
                raise
            i = h & self.mask
            while self.index[i] is not NULL:
                i = (i + 1) & self.mask
        elif dummy >= 0:
            i = dummy
        if self.index[i] is NULL:
            self.fill += 1
        self.index[i] = e
        self.used += 1
        return 1

    cdef bint remove(self, object field) except -1:
        """Delete ``field``; True if it was there."""
        cdef bytes f = _as_bytes(field)
        cdef Py_ssize_t i = self.find(f, PyObject_Hash(f))
        if i < 0:
            return False
        PyMem_Free(self.index[i])
        self.index[i] = DUMMY
        self.used -= 1
        if self.size > MIN_SIZE and self.used * 10 < self.size:
            self._rebuild(_size_for(self.used))
        return True

    cdef FEntry* entry(self, object field) except? NULL:
        cdef bytes f = _as_bytes(field)
        cdef Py_ssize_t i = self.find(f, PyObject_Hash(f))
        return NULL if i < 0 else self.index[i]

    # -- dict interface ------------------------------------------------------------------
    def __len__(self):
        return self.used

    def __bool__(self):
        return self.used != 0

    def __contains__(self, field):
        return self.entry(field) is not NULL

    def __getitem__(self, field):
        cdef FEntry* e = self.entry(field)
        if e is NULL:
            raise KeyError(field)
        return _value(e)

    cpdef get(self, field, default=None):
        """The value at ``field`` (a new ``bytes``), or ``default``."""
        cdef FEntry* e = self.entry(field)
        if e is NULL:
            return default
        return _value(e)

    def __setitem__(self, field, value):
        self.put(field, value)

    cpdef bint set(self, field, value) except -1:
        """Store ``value`` at ``field``; True if the field is new."""
        return self.put(field, value)

    def __delitem__(self, field):
        if not self.remove(field):
            raise KeyError(field)

    def pop(self, field, default=_MISSING):
        cdef FEntry* e = self.entry(field)
        if e is NULL:
            if default is _MISSING:
                raise KeyError(field)
            return default
        value = _value(e)
        self.remove(field)
        return value

    def __iter__(self):
        return _FieldIter(self, 0)

    def keys(self):
        return _FieldView(self, 0)

    def values(self):
        return _FieldView(self, 1)

    def items(self):
        return _FieldView(self, 2)

    def copy(self):
        """An independent table with the same fields (each blob copied)."""
        cdef FieldTable t = FieldTable.__new__(FieldTable)
        cdef FEntry** index = <FEntry**>PyMem_Malloc(self.size * sizeof(FEntry*))
        cdef Py_ssize_t i, n
        cdef FEntry* e
        cdef FEntry* c
        if index is NULL:
            raise MemoryError()
        memset(index, 0, self.size * sizeof(FEntry*))
        PyMem_Free(t.index)
        t.index = index
        t.size = self.size
        t.mask = self.mask
        t.bits = self.bits
        for i in range(self.size):
            e = self.index[i]
            if not _live(e):
                continue
            n = sizeof(FEntry) + e.flen + e.vlen
            c = <FEntry*>PyMem_Malloc(n)
            if c is NULL:
                raise MemoryError()
            memcpy(c, e, n)
            index[i] = c
            t.used += 1
        t.fill = t.used
        return t

    def __eq__(self, other):
        if isinstance(other, FieldTable):
            other = dict(_FieldIter(<FieldTable>other, 2))
        return dict(_FieldIter(self, 2)) == other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return f"FieldTable({dict(_FieldIter(self, 2))!r})"

    # -- cursors and random picks --------------------------------------------------------
    def scan(self, object cursor, Py_ssize_t count):
        """One HSCAN step: ``(next_cursor, [field, value, field, value...])``.

        Redis's ``dictScan`` over the buckets: at most ``count * 10`` buckets, stopping
        once the reply list holds ``count`` elements (fields and values both count).
        """
        cdef uint64_t v = cursor, m = <uint64_t>self.mask
        cdef Py_ssize_t i, maxiter = count * 10
        cdef FEntry* e
        cdef list out = []
        if self.used == 0:
            return 0, out
        if maxiter < 10:
            maxiter = 10
        while True:
            i = <Py_ssize_t>(v & m)
            while True:  # the run of slots holding the fields whose home bucket is v & m
                e = self.index[i]
                if e is NULL:
                    break
                if _live(e) and (e.hash & m) == (v & m):
                    out.append(_field(e))
                    out.append(_value(e))
                i = (i + 1) & self.mask
            v = next_cursor(v, m)
            maxiter -= 1
            if v == 0 or maxiter <= 0 or len(out) >= count:
                break
        return v, out

    cdef FEntry* _pick(self) except NULL:
        """A field chosen uniformly at random (the table is not empty)."""
        cdef FEntry* e
        while True:
            e = self.index[<Py_ssize_t>_getrandbits(self.bits)]
            if _live(e):
                return e

    def random_field(self):
        """A field picked at random, or None if the table is empty."""
        if self.used == 0:
            return None
        return _field(self._pick())

    def picks(self, Py_ssize_t count, bint distinct, bint withvalues):
        """``count`` random fields (flat field, value... with ``withvalues``): independent
        picks, or ``distinct`` ones in random order (``count`` < ``len``)."""
        cdef list out = []
        cdef FEntry* e
        cdef set seen
        cdef Py_ssize_t n
        if self.used == 0 or count <= 0:
            return out
        if not distinct:
            for n in range(count):
                e = self._pick()
                out.append(_field(e))
                if withvalues:
                    out.append(_value(e))
            return out
        if count * 3 > self.used:  # Redis's case 3: most of the hash, so sample all of it
            chosen = _sample(list(_FieldIter(self, 2 if withvalues else 0)), count)
            if not withvalues:
                return chosen
            for pair in chosen:
                out += pair
            return out
        seen = set()
        while len(seen) < count:  # case 4: random picks until ``count`` distinct ones
            e = self._pick()
            if <uintptr_t>e in seen:
                continue
            seen.add(<uintptr_t>e)
            out.append(_field(e))
            if withvalues:
                out.append(_value(e))
        return out

    def stats(self):
        """(index slots, slots in use including tombstones, live fields) for tests."""
        return self.size, self.fill, self.used

    def nbytes(self):
        """Bytes the index and the blobs take (blob sizes before allocator rounding)."""
        cdef Py_ssize_t i, total = self.size * sizeof(FEntry*)
        cdef FEntry* e
        for i in range(self.size):
            e = self.index[i]
            if _live(e):
                total += sizeof(FEntry) + e.flen + e.vlen
        return total


cdef class _FieldIter:
    """Fields (kind 0), values (1) or (field, value) pairs (2) in slot order."""

    cdef FieldTable table
    cdef Py_ssize_t pos, rebuilds, used
    cdef int kind

    def __cinit__(self, FieldTable table, int kind):
        self.table = table
        self.kind = kind
        self.pos = 0
        self.rebuilds = table.rebuilds
        self.used = table.used

    def __iter__(self):
        return self

    def __next__(self):
        cdef FieldTable t = self.table
        cdef FEntry* e
        if t.rebuilds != self.rebuilds or t.used != self.used:
            self.used = -1
            raise RuntimeError("hash changed size during iteration")
        while self.pos < t.size:
            e = t.index[self.pos]
            self.pos += 1
            if _live(e):
                if self.kind == 0:
                    return _field(e)
                if self.kind == 1:
                    return _value(e)
                return (_field(e), _value(e))
        raise StopIteration


cdef class _FieldView:
    cdef FieldTable table
    cdef int kind

    def __cinit__(self, FieldTable table, int kind):
        self.table = table
        self.kind = kind

    def __len__(self):
        return self.table.used

    def __iter__(self):
        return _FieldIter(self.table, self.kind)

    def __contains__(self, item):
        if self.kind == 0:
            return item in self.table
        if self.kind == 2:
            try:
                field, value = item
            except (TypeError, ValueError):
                return False
            return self.table.get(field, None) == value
        return item in list(_FieldIter(self.table, 1))
