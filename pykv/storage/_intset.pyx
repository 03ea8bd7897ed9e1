# cython: language_level=3
"""Sets of integers packed as Redis's intset, compiled.

``IntSet`` owns one malloc'd block laid out as Redis's ``intset.c`` lays it out: a 4-byte
element width (2, 4 or 8), a 4-byte count, then the members as little-endian signed
integers in ascending order. Adding a member wider than the current width upgrades every
member (``intsetUpgradeAndAdd``); removing never narrows it, as in Redis, so the buffer is
byte for byte Redis's and is what RDB/DUMP write. Members go in and come out as the decimal
``bytes`` the set commands use; lookups are binary searches, inserts and removals move the
tail (O(n), as Redis's).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t
from libc.string cimport memcpy, memmove

from pykv.protocol._parser cimport parse_ll

DEF HEADER = 8


cdef inline int _width_for(int64_t v) noexcept:
    if -32768 <= v <= 32767:
        return 2
    if -2147483648 <= v <= 2147483647:
        return 4
    return 8


cdef inline bint _member_value(bytes member, int64_t *v) noexcept:
    """The integer a member stands for, if Redis would keep it in an intset."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(member)
    cdef long long out
    if n == 0 or n > 20 or not parse_ll(PyBytes_AS_STRING(member), n, &out):
        return False
    v[0] = out
    return True


cdef class IntSet:
    """Canonical-integer ``bytes`` members in one Redis-layout intset buffer."""
    cdef unsigned char *buf
    cdef int width
    cdef Py_ssize_t count

    def __cinit__(self):
        self.buf = <unsigned char *>PyMem_Malloc(HEADER)
        if self.buf == NULL:
            raise MemoryError()
        self.width = 2
        self.count = 0
        self._set_header()

    def __dealloc__(self):
        PyMem_Free(self.buf)

    def __init__(self, members=None):
        if members is not None:
            for m in members:
                self.add(m)

    cdef inline void _set_header(self) noexcept:
        cdef uint32_t w = self.width, c = <uint32_t>self.count
        memcpy(self.buf, &w, 4)  # x86-64 and every other target here: little-endian
        memcpy(self.buf + 4, &c, 4)

    cdef inline int64_t _get(self, Py_ssize_t i) noexcept:
        cdef unsigned char *p = self.buf + HEADER
        cdef int16_t a
        cdef int32_t b
        cdef int64_t c
        if self.width == 2:
            memcpy(&a, p + 2 * i, 2)
            return a
        if self.width == 4:
            memcpy(&b, p + 4 * i, 4)
            return b
        memcpy(&c, p + 8 * i, 8)
        return c

    cdef inline void _put(self, Py_ssize_t i, int64_t v) noexcept:
        cdef unsigned char *p = self.buf + HEADER
        cdef int16_t a
        cdef int32_t b
        if self.width == 2:
            a = <int16_t>v
            memcpy(p + 2 * i, &a, 2)
        elif self.width == 4:
            b = <int32_t>v
            memcpy(p + 4 * i, &b, 4)
        else:
            memcpy(p + 8 * i, &v, 8)

    cdef Py_ssize_t _search(self, int64_t v, bint *found) noexcept:
        """Position of ``v`` (found) or where it would go."""
        cdef Py_ssize_t lo = 0, hi = self.count, mid
        cdef int64_t cur
        while lo < hi:
            mid = (lo + hi) >> 1
            cur = self._get(mid)
            if cur < v:
                lo = mid + 1
            elif cur > v:
                hi = mid
            else:
                found[0] = True
                return mid
        found[0] = False
        return lo

    cdef int _resize(self, Py_ssize_t count, int width) except -1:
        cdef unsigned char *p = <unsigned char *>PyMem_Realloc(self.buf, HEADER + count * width)
        if p == NULL:
            raise MemoryError()
        self.buf = p
        return 0

    cdef int _upgrade(self, int width) except -1:
        """Widens every member to ``width`` bytes (from the end, in place)."""
        cdef int old = self.width
        cdef Py_ssize_t i
        cdef int64_t v
        self._resize(self.count, width)
        for i in range(self.count - 1, -1, -1):
            self.width = old
            v = self._get(i)
            self.width = width
            self._put(i, v)
        self.width = width
        return 0

    def add(self, bytes member not None):
        """Adds an integer member; True if it was new. ValueError for a non-integer."""
        cdef int64_t v
        cdef bint found
        cdef Py_ssize_t pos
        cdef int width
        if not _member_value(member, &v):
            raise ValueError("not an intset member")
        width = _width_for(v)
        if width > self.width:
            self._upgrade(width)
        pos = self._search(v, &found)
        if found:
            return False
        self._resize(self.count + 1, self.width)
        memmove(self.buf + HEADER + (pos + 1) * self.width, self.buf + HEADER + pos * self.width,
                (self.count - pos) * self.width)
        self.count += 1
        self._put(pos, v)
        self._set_header()
        return True

    def discard(self, bytes member not None):
        """Removes ``member`` if present; True if it was there."""
        cdef int64_t v
        cdef bint found
        cdef Py_ssize_t pos
        if not _member_value(member, &v) or _width_for(v) > self.width:
            return False
        pos = self._search(v, &found)
        if not found:
            return False
        memmove(self.buf + HEADER + pos * self.width, self.buf + HEADER + (pos + 1) * self.width,
                (self.count - pos - 1) * self.width)
        self.count -= 1
        self._resize(self.count, self.width)
        self._set_header()
        return True

    def remove(self, bytes member not None):
        if not self.discard(member):
            raise KeyError(member)

    def __contains__(self, member):
        cdef int64_t v
        cdef bint found
        if type(member) is not bytes or not _member_value(member, &v) \
                or _width_for(v) > self.width:
            return False
        self._search(v, &found)
        return found

    def __len__(self):
        return self.count

    def at(self, Py_ssize_t i):
        """The member at sorted position ``i`` (random picks)."""
        if not 0 <= i < self.count:
            raise IndexError("intset index out of range")
        return b"%d" % self._get(i)

    def tolist(self):
        """Every member, ascending."""
        cdef Py_ssize_t i
        return [b"%d" % self._get(i) for i in range(self.count)]

    def __iter__(self):
        return iter(self.tolist())

    def nbytes(self):
        return HEADER + self.count * self.width

    def blob(self):
        """The buffer as ``bytes``: what RDB and DUMP store for an intset."""
        return PyBytes_FromStringAndSize(<const char *>self.buf, HEADER + self.count * self.width)

    @staticmethod
    def from_blob(bytes blob not None):
        """An intset over a copy of an already validated intset blob."""
        cdef IntSet s = IntSet.__new__(IntSet)
        cdef uint32_t w, c
        if PyBytes_GET_SIZE(blob) < HEADER:
            raise ValueError("not an intset")
        memcpy(&w, PyBytes_AS_STRING(blob), 4)
        memcpy(&c, PyBytes_AS_STRING(blob) + 4, 4)
        if (w != 2 and w != 4 and w != 8) or PyBytes_GET_SIZE(blob) != HEADER + <Py_ssize_t>c * w:
            raise ValueError("not an intset")
        s._resize(c, w)
        memcpy(s.buf, PyBytes_AS_STRING(blob), HEADER + c * w)
        s.width = w
        s.count = c
        return s

    def copy(self):
        return IntSet.from_blob(self.blob())

    def __eq__(self, other):
        if isinstance(other, IntSet):
            return self.tolist() == (<IntSet>other).tolist()
        if isinstance(other, (set, frozenset)):
            return set(self.tolist()) == other
        return NotImplemented

    def __sizeof__(self):
        return object.__sizeof__(self) + self.nbytes()

    def __repr__(self):
        return f"IntSet({self.tolist()!r})"
