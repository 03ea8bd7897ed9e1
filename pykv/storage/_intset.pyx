# cython: language_level=3
"""Sets of integers packed as Redis's intset, compiled.

``IntSet`` owns one buffer (inside the object while it is at most 32 bytes, a malloc'd
block past that) laid out as Redis's ``intset.c`` lays it out: a 4-byte
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


# the width and the count live in the buffer's header only (no fields for them)
cdef inline int _enc(const unsigned char *buf) noexcept:
    cdef uint32_t w
    memcpy(&w, buf, 4)  # x86-64 and every other target here: little-endian
    return <int>w


cdef inline Py_ssize_t _len(const unsigned char *buf) noexcept:
    cdef uint32_t c
    memcpy(&c, buf + 4, 4)
    return c


cdef inline void _set_header(unsigned char *buf, int width, Py_ssize_t count) noexcept:
    cdef uint32_t w = width, c = <uint32_t>count
    memcpy(buf, &w, 4)
    memcpy(buf + 4, &c, 4)


cdef inline int64_t _get(const unsigned char *buf, int width, Py_ssize_t i) noexcept:
    cdef const unsigned char *p = buf + HEADER
    cdef int16_t a
    cdef int32_t b
    cdef int64_t c
    if width == 2:
        memcpy(&a, p + 2 * i, 2)
        return a
    if width == 4:
        memcpy(&b, p + 4 * i, 4)
        return b
    memcpy(&c, p + 8 * i, 8)
    return c


cdef inline void _put(unsigned char *buf, int width, Py_ssize_t i, int64_t v) noexcept:
    cdef unsigned char *p = buf + HEADER
    cdef int16_t a
    cdef int32_t b
    if width == 2:
        a = <int16_t>v
        memcpy(p + 2 * i, &a, 2)
    elif width == 4:
        b = <int32_t>v
        memcpy(p + 4 * i, &b, 4)
    else:
        memcpy(p + 8 * i, &v, 8)


DEF INLINE = 32  # bytes of buffer kept inside the object: 16 + 32 = the 48-byte class


cdef class IntSet:
    """Canonical-integer ``bytes`` members in one Redis-layout intset buffer.

    The buffer lives inside the object while it fits in ``INLINE`` bytes (up to 12 16-bit,
    6 32-bit or 3 64-bit members: one 48-byte allocation for the object and its members);
    a larger one is malloc'd, and the inline area then holds a width of 0 and, at offset 8,
    the pointer to it."""
    cdef unsigned char area[INLINE]

    def __cinit__(self):
        _set_header(self.area, 2, 0)

    def __dealloc__(self):
        if _enc(self.area) == 0:
            PyMem_Free(_buf(self))

    def __init__(self, members=None):
        if members is not None:
            for m in members:
                self.add(m)

    def add(self, bytes member not None):
        """Adds an integer member; True if it was new. ValueError for a non-integer."""
        cdef int64_t v
        cdef bint found
        cdef Py_ssize_t pos, n
        cdef int width
        cdef unsigned char *buf
        if not _member_value(member, &v):
            raise ValueError("not an intset member")
        width = _width_for(v)
        if width > _enc(_buf(self)):
            _upgrade(self, width)
        pos = _search(self, v, &found)
        if found:
            return False
        buf = _buf(self)
        width = _enc(buf)
        n = _len(buf)
        _resize(self, n + 1, width)
        buf = _buf(self)
        memmove(buf + HEADER + (pos + 1) * width, buf + HEADER + pos * width, (n - pos) * width)
        _put(buf, width, pos, v)
        _set_header(buf, width, n + 1)
        return True

    def discard(self, bytes member not None):
        """Removes ``member`` if present; True if it was there."""
        cdef int64_t v
        cdef bint found
        cdef Py_ssize_t pos, n
        cdef unsigned char *buf = _buf(self)
        cdef int width = _enc(buf)
        if not _member_value(member, &v) or _width_for(v) > width:
            return False
        pos = _search(self, v, &found)
        if not found:
            return False
        n = _len(buf)
        memmove(buf + HEADER + pos * width, buf + HEADER + (pos + 1) * width,
                (n - pos - 1) * width)
        _resize(self, n - 1, width)
        _set_header(_buf(self), width, n - 1)
        return True

    def remove(self, bytes member not None):
        if not self.discard(member):
            raise KeyError(member)

    def __contains__(self, member):
        cdef int64_t v
        cdef bint found
        if type(member) is not bytes or not _member_value(member, &v) \
                or _width_for(v) > _enc(_buf(self)):
            return False
        _search(self, v, &found)
        return found

    def __len__(self):
        return _len(_buf(self))

    def at(self, Py_ssize_t i):
        """The member at sorted position ``i`` (random picks)."""
        if not 0 <= i < _len(_buf(self)):
            raise IndexError("intset index out of range")
        return b"%d" % _get(_buf(self), _enc(_buf(self)), i)

    def tolist(self):
        """Every member, ascending."""
        cdef Py_ssize_t i
        cdef const unsigned char *buf = _buf(self)
        cdef int width = _enc(buf)
        return [b"%d" % _get(buf, width, i) for i in range(_len(buf))]

    def __iter__(self):
        return iter(self.tolist())

    def nbytes(self):
        return HEADER + _len(_buf(self)) * _enc(_buf(self))

    def blob(self):
        """The buffer as ``bytes``: what RDB and DUMP store for an intset."""
        return PyBytes_FromStringAndSize(<const char *>_buf(self),
                                         HEADER + _len(_buf(self)) * _enc(_buf(self)))

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
        _resize(s, c, w)
        memcpy(_buf(s), PyBytes_AS_STRING(blob), HEADER + c * w)  # the header with it
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
        if _enc(self.area) != 0:
            return object.__sizeof__(self)
        return object.__sizeof__(self) + self.nbytes()

    def __repr__(self):
        return f"IntSet({self.tolist()!r})"


cdef inline unsigned char *_buf(IntSet self) noexcept:
    """The Redis-layout buffer: the inline area or the malloc'd block."""
    cdef unsigned char *p
    if _enc(self.area) != 0:
        return self.area
    memcpy(&p, self.area + 8, sizeof(p))
    return p


cdef int _resize(IntSet self, Py_ssize_t count, int width) except -1:
    """Room for ``count`` members of ``width`` bytes (the header is the caller's to
    set); the contents up to the new size are kept, moving between the inline area and
    a malloc'd block as the size crosses ``INLINE``."""
    cdef Py_ssize_t need = HEADER + count * width
    cdef bint inline = _enc(self.area) != 0
    cdef unsigned char *p
    if need <= INLINE:
        if not inline:
            p = _buf(self)
            memcpy(self.area, p, need)
            PyMem_Free(p)
        return 0
    if inline:
        p = <unsigned char *>PyMem_Malloc(need)
        if p == NULL:
            raise MemoryError()
        memcpy(p, self.area, INLINE)
    else:
        p = <unsigned char *>PyMem_Realloc(_buf(self), need)
        if p == NULL:
            raise MemoryError()
    _set_header(self.area, 0, 0)
    memcpy(self.area + 8, &p, sizeof(p))
    return 0


cdef Py_ssize_t _search(IntSet self, int64_t v, bint *found) noexcept:
    """Position of ``v`` (found) or where it would go."""
    cdef const unsigned char *buf = _buf(self)
    cdef int width = _enc(buf)
    cdef Py_ssize_t lo = 0, hi = _len(buf), mid
    cdef int64_t cur
    while lo < hi:
        mid = (lo + hi) >> 1
        cur = _get(buf, width, mid)
        if cur < v:
            lo = mid + 1
        elif cur > v:
            hi = mid
        else:
            found[0] = True
            return mid
    found[0] = False
    return lo


cdef int _upgrade(IntSet self, int width) except -1:
    """Widens every member to ``width`` bytes (from the end, in place)."""
    cdef unsigned char *buf = _buf(self)
    cdef int old = _enc(buf)
    cdef Py_ssize_t i, n = _len(buf)
    _resize(self, n, width)
    buf = _buf(self)
    for i in range(n - 1, -1, -1):
        _put(buf, width, i, _get(buf, old, i))
    _set_header(buf, width, n)
    return 0
