# cython: language_level=3
"""Small collections packed in one buffer: Redis 7.0's listpack byte layout, compiled.

``Listpack`` owns one malloc'd block laid out exactly as Redis lays out a listpack (a 4-byte
total size, a 2-byte element count saturating at 65535, entries of encoding + data +
back-length, a 0xFF terminator). Elements that are canonical 64-bit integers (Redis's
``string2ll``) are stored as packed integers and read back as their decimal bytes, so the
buffer is byte for byte what Redis would hold for the same elements and is what RDB/DUMP
write for a listpack-encoded value. Every operation is O(n) over the buffer, as Redis's.

``ListpackMap`` reads the entries as field/value pairs in insertion order and answers the
part of the ``dict`` protocol the hash commands use, so a small hash keeps the dict's
interface at a fraction of its memory. ``ListpackZset`` reads them as member/score pairs in
(score, member) order and answers the ``dict`` subset the zset commands read through
``ZSet.scores`` itself (no view object: a small zset is the ZSet plus this); a ``SortedView``
made per use answers the ``SortedList`` subset read through ``ZSet.sl``.
``PackedList`` answers the ``deque`` subset of a small list, ``QuickList`` the same subset
for a big one: a sequence of small listpack nodes, as Redis's quicklist.
"""
cimport cython
from itertools import chain, islice
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdio cimport snprintf
from libc.stdlib cimport strtod
from libc.string cimport memcmp, memcpy, memmove

from pykv.protocol._decimal cimport LL_DIGITS_SIZE, ll_digits
from pykv.protocol._parser cimport parse_ll

DEF HEADER = 6
# Redis's LISTPACK_MAX_SAFETY_SIZE: lpSafeToAdd refuses to grow a listpack past it and the
# value converts to its big encoding instead (the 4-byte size field could not hold 4 GB)
cdef Py_ssize_t LISTPACK_MAX_SAFETY_SIZE = 1 << 30


def set_safety_size(Py_ssize_t size):
    """Changes the safety size (tests reach it without gigabytes); returns the old one."""
    global LISTPACK_MAX_SAFETY_SIZE
    old = LISTPACK_MAX_SAFETY_SIZE
    LISTPACK_MAX_SAFETY_SIZE = size
    return old


class ListpackFull(OverflowError):
    """The write would grow the listpack past Redis's safety size: convert, then write."""
DEF MAX_ENTRY_HEAD = 5   # encoding bytes before a string's data
DEF MAX_BACKLEN = 5


# -- the header's element count -------------------------------------------------------------
cdef Py_ssize_t _lp_walk_count(const unsigned char *lp) noexcept:
    """Entries counted one by one (the header's count saturated: Redis's ``lpLength``)."""
    cdef Py_ssize_t off = HEADER, n = 0
    cdef Py_ssize_t end = (lp[0] | (lp[1] << 8) | (lp[2] << 16) | (<Py_ssize_t>lp[3] << 24)) - 1
    while off < end:
        off += _entry_size(lp + off)
        n += 1
    return n


cdef inline Py_ssize_t _lp_len(const unsigned char *lp) noexcept:
    """Elements in the listpack: the header's count, or a walk once it saturated at 65535."""
    cdef Py_ssize_t c = lp[4] | (lp[5] << 8)
    if c < 65535:
        return c
    return _lp_walk_count(lp)


cdef inline void _lp_store_len(unsigned char *lp, Py_ssize_t c) noexcept:
    if c > 65535:
        c = 65535
    lp[4] = c & 0xFF
    lp[5] = (c >> 8) & 0xFF


cdef inline void _lp_add_len(unsigned char *lp, Py_ssize_t delta) noexcept:
    """After ``delta`` elements were added (or removed, negative) to the buffer."""
    cdef Py_ssize_t c = lp[4] | (lp[5] << 8)
    if c < 65535:
        c += delta
    elif delta < 0:
        c = _lp_walk_count(lp)  # may fit the header again
    _lp_store_len(lp, c)


# -- RESP replies written straight from the entries (LRANGE) ---------------------------------
cdef inline Py_ssize_t _put_header(char *w, char kind, Py_ssize_t n) noexcept:
    """``<kind><n>\\r\\n`` at ``w`` (NULL: only measured); returns its size."""
    cdef char buf[LL_DIGITS_SIZE]
    cdef Py_ssize_t k = ll_digits(buf, n), size = k + 3
    if w != NULL:
        w[0] = kind
        memcpy(w + 1, buf + LL_DIGITS_SIZE - k, k)
        w[size - 2] = 13
        w[size - 1] = 10
    return size


cdef Py_ssize_t _put_entries(char *w, const unsigned char *lp, Py_ssize_t off, Py_ssize_t end,
                             Py_ssize_t *left) noexcept:
    """The entries from ``off`` (until ``end``, or until ``left`` of them are done) as RESP
    bulk strings at ``w``, integers in decimal; with ``w`` NULL only measured. Returns the
    size."""
    cdef char buf[LL_DIGITS_SIZE]
    cdef const unsigned char *p
    cdef const char *data
    cdef Py_ssize_t n, k, total = 0
    while off < end and left[0] > 0:
        p = lp + off
        if _is_int_entry(p):
            n = ll_digits(buf, _int_value(p))
            data = buf + LL_DIGITS_SIZE - n
        else:
            data = <const char *>_str_data(p, &n)
        if w == NULL:
            total += _put_header(NULL, 36, n) + n + 2
        else:
            k = _put_header(w + total, 36, n)  # '$'
            memcpy(w + total + k, data, n)
            total += k + n
            w[total] = 13
            w[total + 1] = 10
            total += 2
        left[0] -= 1
        off += _entry_size(p)
    return total


cdef char *_append_array(bytearray out, Py_ssize_t count, Py_ssize_t size) except NULL:
    """Grow ``out`` by an array header of ``count`` and ``size`` bytes of elements; write
    the header and return where the elements go."""
    cdef Py_ssize_t used = PyByteArray_GET_SIZE(out)
    cdef Py_ssize_t head = _put_header(NULL, 42, count)
    cdef char *w
    PyByteArray_Resize(out, used + head + size)
    w = PyByteArray_AS_STRING(out) + used
    _put_header(w, 42, count)  # '*'
    return w + head


cdef struct Probe:
    # an element prepared for comparisons against entries (parsed once)
    const char *s
    Py_ssize_t n
    bint is_int
    long long v


cdef inline void _probe(Probe *pr, bytes item) noexcept:
    pr.s = PyBytes_AS_STRING(item)
    pr.n = PyBytes_GET_SIZE(item)
    pr.is_int = pr.n > 0 and pr.n <= 20 and parse_ll(pr.s, pr.n, &pr.v)


cdef inline bint _matches(const unsigned char *p, Probe *pr) noexcept:
    cdef Py_ssize_t n
    cdef const unsigned char *data
    if _is_int_entry(p):
        return pr.is_int and _int_value(p) == pr.v
    if pr.is_int:
        return False
    data = _str_data(p, &n)
    return n == pr.n and memcmp(data, pr.s, n) == 0


cdef Py_ssize_t _encode(unsigned char *out, const char *s, Py_ssize_t n) noexcept:
    """Writes the entry for element ``s[:n]`` at ``out`` (room: n + 10); returns its size."""
    cdef long long v
    cdef Py_ssize_t head
    if n > 0 and n <= 20 and parse_ll(s, n, &v):
        return _encode_int(out, v)
    if n < 64:
        out[0] = <unsigned char>(0x80 | n)
        head = 1
    elif n < 4096:
        out[0] = <unsigned char>(0xE0 | (n >> 8))
        out[1] = <unsigned char>(n & 0xFF)
        head = 2
    else:
        out[0] = 0xF0
        out[1] = <unsigned char>(n & 0xFF)
        out[2] = <unsigned char>((n >> 8) & 0xFF)
        out[3] = <unsigned char>((n >> 16) & 0xFF)
        out[4] = <unsigned char>((n >> 24) & 0xFF)
        head = 5
    memcpy(out + head, s, n)
    head += n
    return head + _put_backlen(out + head, head)


cdef int _check_room(Listpack lp, bytes a, bytes b) except -1:
    """ListpackFull unless entries for ``a`` and ``b`` fit under the safety size."""
    if lp._total() + PyBytes_GET_SIZE(a) + PyBytes_GET_SIZE(b) + 20 > LISTPACK_MAX_SAFETY_SIZE:
        raise ListpackFull()
    return 0


cdef class Listpack:
    """A sequence of ``bytes`` elements in one Redis-layout listpack buffer."""
    cdef unsigned char *lp
    # the element count lives in the header only (``_lp_len``): no field for it keeps a
    # small hash's or zset's listpack object in the 32-byte allocation class

    def __cinit__(self):
        self.lp = <unsigned char *>PyMem_Malloc(HEADER + 1)
        if self.lp == NULL:
            raise MemoryError()
        self._set_header(HEADER + 1)
        _lp_store_len(self.lp, 0)
        self.lp[HEADER] = 0xFF

    def __dealloc__(self):
        PyMem_Free(self.lp)

    def __init__(self, items=None):
        if items is not None:
            self.extend(items)

    cdef inline Py_ssize_t _total(self) noexcept:
        cdef unsigned char *p = self.lp
        return p[0] | (p[1] << 8) | (p[2] << 16) | (<Py_ssize_t>p[3] << 24)

    cdef inline void _set_header(self, Py_ssize_t total) noexcept:
        cdef unsigned char *p = self.lp
        p[0] = total & 0xFF
        p[1] = (total >> 8) & 0xFF
        p[2] = (total >> 16) & 0xFF
        p[3] = (total >> 24) & 0xFF

    cdef int _splice(self, Py_ssize_t off, Py_ssize_t remove, const unsigned char *ins,
                     Py_ssize_t n) except -1:
        """Replaces ``remove`` bytes at ``off`` with ``ins[:n]`` (header size updated)."""
        cdef Py_ssize_t total = self._total()
        cdef Py_ssize_t new_total = total - remove + n
        cdef unsigned char *p
        if new_total > LISTPACK_MAX_SAFETY_SIZE:
            raise ListpackFull()
        if n > remove:
            p = <unsigned char *>PyMem_Realloc(self.lp, new_total)
            if p == NULL:
                raise MemoryError()
            self.lp = p
        memmove(self.lp + off + n, self.lp + off + remove, total - off - remove)
        if n:
            memcpy(self.lp + off, ins, n)
        if n < remove:
            p = <unsigned char *>PyMem_Realloc(self.lp, new_total)
            if p != NULL:
                self.lp = p
        self._set_header(new_total)
        return 0

    cdef int _put(self, Py_ssize_t off, Py_ssize_t remove, bytes item) except -1:
        """Encodes ``item`` in place of the ``remove`` bytes at ``off``."""
        if item is None:
            raise TypeError("listpack elements are bytes")
        cdef Py_ssize_t n = PyBytes_GET_SIZE(item)
        cdef unsigned char small[80]
        cdef unsigned char *buf = small
        if n + 10 > 80:
            buf = <unsigned char *>PyMem_Malloc(n + 10)
            if buf == NULL:
                raise MemoryError()
        try:
            self._splice(off, remove, buf, _encode(buf, PyBytes_AS_STRING(item), n))
        finally:
            if buf != small:
                PyMem_Free(buf)
        return 0

    cdef int _insert_at(self, Py_ssize_t off, bytes item) except -1:
        self._put(off, 0, item)
        _lp_add_len(self.lp, 1)
        return 0

    cdef int _replace_at(self, Py_ssize_t off, bytes item) except -1:
        return self._put(off, _entry_size(self.lp + off), item)

    cdef inline Py_ssize_t _end(self) noexcept:
        """Offset of the terminator."""
        return self._total() - 1

    cdef Py_ssize_t _offset(self, Py_ssize_t index) noexcept:
        cdef Py_ssize_t off = HEADER, i
        for i in range(index):
            off += _entry_size(self.lp + off)
        return off

    # -- the sequence --------------------------------------------------------------------
    def __len__(self):
        return _lp_len(self.lp)

    def append(self, bytes item not None):
        self._insert_at(self._end(), item)

    def extend(self, items):
        for item in items:
            self._insert_at(self._end(), item)

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        """Every element, in order."""
        cdef list out = []
        cdef Py_ssize_t off = HEADER, end = self._end()
        while off < end:
            out.append(_entry_bytes(self.lp + off))
            off += _entry_size(self.lp + off)
        return out

    def __getitem__(self, Py_ssize_t index):
        if index < 0:
            index += _lp_len(self.lp)
        if not 0 <= index < _lp_len(self.lp):
            raise IndexError("listpack index out of range")
        return _entry_bytes(self.lp + self._offset(index))

    def nbytes(self):
        """The buffer's size (what Redis's listpack of these elements takes)."""
        return self._total()

    def blob(self):
        """The buffer as ``bytes``: what RDB and DUMP store for a listpack."""
        return PyBytes_FromStringAndSize(<const char *>self.lp, self._total())

    cdef int _load_blob(self, bytes blob, Py_ssize_t count) except -1:
        cdef Py_ssize_t n = PyBytes_GET_SIZE(blob)
        cdef const unsigned char *b = <const unsigned char *>PyBytes_AS_STRING(blob)
        cdef unsigned char *p
        # the entries were validated by the caller; the frame is checked here
        if n < HEADER + 1 or b[n - 1] != 0xFF or \
                (b[0] | (b[1] << 8) | (b[2] << 16) | (<Py_ssize_t>b[3] << 24)) != n:
            raise ValueError("not a listpack")
        p = <unsigned char *>PyMem_Realloc(self.lp, n)
        if p == NULL:
            raise MemoryError()
        self.lp = p
        memcpy(p, PyBytes_AS_STRING(blob), n)
        return 0  # the blob's header holds the count

    def __sizeof__(self):
        return object.__sizeof__(self) + self._total()


cdef class ListpackMap(Listpack):
    """Field/value pairs in one listpack, insertion-ordered: the dict subset hashes use."""

    @staticmethod
    def from_blob(bytes blob, Py_ssize_t pairs):
        """A map over a copy of a listpack blob already validated (an RDB load) holding
        ``pairs`` field/value pairs with distinct fields."""
        cdef ListpackMap m = ListpackMap.__new__(ListpackMap)
        m._load_blob(blob, 2 * pairs)
        return m

    def __init__(self, pairs=None):
        cdef Py_ssize_t end
        if pairs is None:
            return
        if isinstance(pairs, dict):  # distinct fields: appended without a search
            for field, value in pairs.items():
                end = self._end()
                self._insert_at(end, field)
                self._insert_at(self._end(), value)
        else:
            for field, value in pairs:
                self[field] = value

    cdef Py_ssize_t _find(self, bytes field) except -2:
        """Offset of ``field``'s entry, or -1."""
        cdef Probe pr
        cdef Py_ssize_t off = HEADER, end = self._end()
        cdef unsigned char *lp = self.lp
        _probe(&pr, field)
        while off < end:
            if _matches(lp + off, &pr):
                return off
            off += _entry_size(lp + off)
            off += _entry_size(lp + off)
        return -1

    def __len__(self):
        return _lp_len(self.lp) >> 1

    def __contains__(self, bytes field not None):
        return self._find(field) >= 0

    def get(self, bytes field not None, default=None):
        cdef Py_ssize_t off = self._find(field)
        if off < 0:
            return default
        off += _entry_size(self.lp + off)
        return _entry_bytes(self.lp + off)

    def __getitem__(self, bytes field not None):
        cdef Py_ssize_t off = self._find(field)
        if off < 0:
            raise KeyError(field)
        off += _entry_size(self.lp + off)
        return _entry_bytes(self.lp + off)

    cdef bint _set(self, bytes field, bytes value) except -1:
        cdef Py_ssize_t off = self._find(field)
        if off >= 0:
            self._replace_at(off + _entry_size(self.lp + off), value)
            return False
        _check_room(self, field, value)  # both entries or neither
        self._insert_at(self._end(), field)
        self._insert_at(self._end(), value)
        return True

    def set(self, bytes field not None, bytes value not None):
        """Sets ``field`` (in place if present, else appended); True if it is new."""
        return self._set(field, value)

    def __setitem__(self, bytes field not None, bytes value not None):
        self._set(field, value)

    def pop(self, bytes field not None, *default):
        cdef Py_ssize_t off = self._find(field)
        cdef Py_ssize_t size
        if off < 0:
            if default:
                return default[0]
            raise KeyError(field)
        size = _entry_size(self.lp + off)
        value = _entry_bytes(self.lp + off + size)
        size += _entry_size(self.lp + off + size)
        self._splice(off, size, NULL, 0)
        _lp_add_len(self.lp, -2)
        return value

    def __delitem__(self, bytes field not None):
        self.pop(field)

    def keys(self):
        return self.tolist()[0::2]

    def values(self):
        return self.tolist()[1::2]

    def items(self):
        cdef list flat = self.tolist()
        return list(zip(flat[0::2], flat[1::2]))

    def __iter__(self):
        return iter(self.keys())

    def copy(self):
        cdef ListpackMap m = ListpackMap.__new__(ListpackMap)
        m._load_blob(self.blob(), _lp_len(self.lp))
        return m

    def __eq__(self, other):
        if isinstance(other, ListpackMap):
            return self.blob() == (<ListpackMap>other).blob()
        if isinstance(other, dict):
            return dict(self.items()) == other
        return NotImplemented

    def __repr__(self):
        return f"ListpackMap({self.items()!r})"


# -- sorted sets -------------------------------------------------------------------------------
cdef double _entry_score(const unsigned char *p) noexcept:
    """A score entry's value (Redis's ``zzlGetScore``: integers, or text read by strtod)."""
    cdef Py_ssize_t n
    cdef const unsigned char *data
    cdef char small[64]
    cdef char *buf
    cdef double d
    if _is_int_entry(p):
        return <double>_int_value(p)
    data = _str_data(p, &n)
    if n < 64:
        memcpy(small, data, n)
        small[n] = 0
        return strtod(small, NULL)
    buf = <char *>PyMem_Malloc(n + 1)
    if buf == NULL:
        return 0.0
    memcpy(buf, data, n)
    buf[n] = 0
    d = strtod(buf, NULL)
    PyMem_Free(buf)
    return d


cdef int _member_cmp(const unsigned char *p, const char *s, Py_ssize_t n) noexcept:
    """Compares the member entry at ``p`` with ``s[:n]`` as bytes (memcmp, then length)."""
    cdef char digits[24]
    cdef const char *data
    cdef Py_ssize_t m
    cdef int r
    if _is_int_entry(p):
        m = snprintf(digits, 24, "%lld", <long long>_int_value(p))
        data = digits
    else:
        data = <const char *>_str_data(p, &m)
    r = memcmp(data, s, m if m < n else n)
    if r:
        return r
    return (m > n) - (m < n)


cdef class ListpackZset(Listpack):
    """Member/score pairs in one listpack, ordered by (score, member) as Redis's
    ``zzlInsert`` keeps them; scores stored as Redis writes them (``score_text``)."""

    @staticmethod
    def from_blob(bytes blob, Py_ssize_t pairs):
        """Over a copy of a validated, sorted zset listpack blob of ``pairs`` pairs."""
        cdef ListpackZset z = ListpackZset.__new__(ListpackZset)
        z._load_blob(blob, 2 * pairs)
        return z

    def __len__(self):
        return _lp_len(self.lp) >> 1

    cdef Py_ssize_t _find(self, bytes member) except -2:
        cdef Probe pr
        cdef Py_ssize_t off = HEADER, end = self._end()
        _probe(&pr, member)
        while off < end:
            if _matches(self.lp + off, &pr):
                return off
            off += _entry_size(self.lp + off)
            off += _entry_size(self.lp + off)
        return -1

    cdef inline bint _before(self, const unsigned char *p, double score, const char *s,
                             Py_ssize_t n) noexcept:
        """True if the pair at ``p`` sorts before (score, s[:n])."""
        cdef double cur = _entry_score(p + _entry_size(p))
        if cur != score:
            return cur < score
        return _member_cmp(p, s, n) < 0

    def score(self, bytes member not None):
        """``member``'s score, or None."""
        cdef Py_ssize_t off = self._find(member)
        if off < 0:
            return None
        return _entry_score(self.lp + off + _entry_size(self.lp + off))

    def extend_sorted(self, pairs):
        """Appends (member, score text) pairs already in (score, member) order and absent
        (a set built whole: RDB load, a store command's result) without searching."""
        for member, text in pairs:
            _check_room(self, member, text)
            self._insert_at(self._end(), member)
            self._insert_at(self._end(), text)

    def insert(self, bytes member not None, double score, bytes text not None):
        """Adds an absent ``member`` whose score ``score`` is written as ``text``."""
        cdef Py_ssize_t off = HEADER, end = self._end()
        cdef const char *s = PyBytes_AS_STRING(member)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(member)
        _check_room(self, member, text)  # both entries or neither
        while off < end and self._before(self.lp + off, score, s, n):
            off += _entry_size(self.lp + off)
            off += _entry_size(self.lp + off)
        self._insert_at(off, member)
        self._insert_at(off + _entry_size(self.lp + off), text)

    def delete(self, bytes member not None):
        """Removes ``member``; True if it was there."""
        cdef Py_ssize_t off = self._find(member)
        cdef Py_ssize_t size
        if off < 0:
            return False
        size = _entry_size(self.lp + off)
        size += _entry_size(self.lp + off + size)
        self._splice(off, size, NULL, 0)
        _lp_add_len(self.lp, -2)
        return True

    def remove_range(self, Py_ssize_t lo, Py_ssize_t hi):
        """Removes the pairs at sorted positions [lo, hi)."""
        cdef Py_ssize_t start, stop, i
        if lo < 0:
            lo = 0
        if hi > (_lp_len(self.lp) >> 1):
            hi = _lp_len(self.lp) >> 1
        if hi <= lo:
            return
        start = self._offset(2 * lo)
        stop = start
        for i in range(2 * (hi - lo)):
            stop += _entry_size(self.lp + stop)
        self._splice(start, stop - start, NULL, 0)
        _lp_add_len(self.lp, -(2 * (hi - lo)))

    def rank(self, bytes member not None):
        """``member``'s 0-based position, or None."""
        cdef Probe pr
        cdef Py_ssize_t off = HEADER, end = self._end(), i = 0
        _probe(&pr, member)
        while off < end:
            if _matches(self.lp + off, &pr):
                return i
            off += _entry_size(self.lp + off)
            off += _entry_size(self.lp + off)
            i += 1
        return None

    def pairs(self, Py_ssize_t lo=0, Py_ssize_t hi=-1):
        """(score, member) tuples at sorted positions [lo, hi) (hi -1: to the end)."""
        cdef list out = []
        cdef Py_ssize_t off, end = self._end(), i
        cdef bytes member
        if hi < 0 or hi > (_lp_len(self.lp) >> 1):
            hi = _lp_len(self.lp) >> 1
        if lo < 0:
            lo = 0
        if lo >= hi:
            return out
        off = self._offset(2 * lo)
        for i in range(lo, hi):
            member = _entry_bytes(self.lp + off)
            off += _entry_size(self.lp + off)
            out.append((_entry_score(self.lp + off), member))
            off += _entry_size(self.lp + off)
        return out

    def members_scores(self):
        """(member, score) tuples in sorted order."""
        return [(m, s) for s, m in self.pairs()]

    def bisect(self, tuple key, bint right=False):
        """Position of ``key`` ((score,) or (score, member)) among the (score, member)
        tuples, as ``bisect_left`` (or ``bisect_right``) would find it."""
        cdef double score = key[0]
        cdef bytes member = key[1] if len(key) > 1 else None
        cdef Py_ssize_t off = HEADER, end = self._end(), i = 0, n = 0
        cdef const char *s = NULL
        cdef double cur
        cdef int cmp
        if member is not None:
            s = PyBytes_AS_STRING(member)
            n = PyBytes_GET_SIZE(member)
        while off < end:
            cur = _entry_score(self.lp + off + _entry_size(self.lp + off))
            if cur > score:
                break
            if cur == score:
                if member is None:
                    break  # (score, m) > (score,): both bisects stop here
                cmp = _member_cmp(self.lp + off, s, n)
                if cmp > 0 or (cmp == 0 and not right):
                    break
            off += _entry_size(self.lp + off)
            off += _entry_size(self.lp + off)
            i += 1
        return i

    def copy(self):
        cdef ListpackZset z = ListpackZset.__new__(ListpackZset)
        z._load_blob(self.blob(), _lp_len(self.lp))
        return z

    # -- the member -> score ``dict`` subset the zset commands read (``ZSet.scores``) ----
    def get(self, member, default=None):
        cdef Py_ssize_t off
        if type(member) is not bytes:
            return default
        off = self._find(member)
        if off < 0:
            return default
        return _entry_score(self.lp + off + _entry_size(self.lp + off))

    def __getitem__(self, member):
        score = self.get(member)
        if score is None:
            raise KeyError(member)
        return score

    def __contains__(self, member):
        return self.get(member) is not None

    def items(self):
        return self.members_scores()

    def keys(self):
        return [m for _, m in self.pairs()]

    def values(self):
        return [s for s, _ in self.pairs()]

    def __iter__(self):
        return iter(self.keys())

    def __eq__(self, other):
        if isinstance(other, (dict, ListpackZset)):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __repr__(self):
        return f"ListpackZset({dict(self.items())!r})"

    def sorted_view(self):
        """A ``SortedView`` over these pairs (made per use: a zset keeps none)."""
        cdef SortedView v = SortedView.__new__(SortedView)
        v.z = self
        return v


@cython.no_gc  # refers to a ListpackZset only
cdef class SortedView:
    """The ``SortedList`` of (score, member) subset the zset commands read, over a
    ListpackZset, read-only. ``ZSet.sl`` makes one per use, so a small zset carries no view;
    a command holding one across an insert that converts the set sees the old pairs."""
    cdef ListpackZset z

    def __len__(self):
        return len(self.z)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.z.pairs()[index]
        cdef Py_ssize_t i = index, n = len(self.z)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("zset index out of range")
        return self.z.pairs(i, i + 1)[0]

    def __iter__(self):
        return iter(self.z.pairs())

    def __reversed__(self):
        return reversed(self.z.pairs())

    def islice(self, start=None, stop=None, reverse=False):
        out = self.z.pairs()[start:stop]
        if reverse:
            out.reverse()
        return iter(out)

    def bisect_left(self, key):
        return self.z.bisect(key)

    def bisect_right(self, key):
        return self.z.bisect(key, True)

    @property
    def _lists(self):
        """SortedList's sublists, for code that peeks at them: one (a copy)."""
        return [self.z.pairs()]

    def __eq__(self, other):
        if isinstance(other, SortedView):
            return self.z.pairs() == (<SortedView>other).z.pairs()
        try:
            return self.z.pairs() == list(other)
        except TypeError:
            return NotImplemented

    def __repr__(self):
        return f"SortedView({self.z.pairs()!r})"


# -- lists -------------------------------------------------------------------------------------
# A list stays packed while its listpack fits one quicklist node of the default
# list-max-listpack-size (-2: 8 KB); past that its elements move to a QuickList of
# nodes.
DEF LIST_PACKED_BYTES = 8192
# A QuickList's nodes are smaller: the node layout is internal (RDB and DEBUG re-split by
# list-max-listpack-size), and a push or pop at the head moves the whole head node, so a
# smaller node costs fewer instructions there for a few bytes per node more
DEF NODE_BYTES = 2048
QUICKLIST_NODE_BYTES = NODE_BYTES


@cython.no_gc  # its QuickList holds listpack nodes only: no cycle runs through it
cdef class PackedList(Listpack):
    """The ``collections.deque`` subset the list commands use, packed in one listpack
    while small; past one node's worth of bytes the elements move to a ``QuickList``
    (``dq``) that every method then forwards to (``ListValue.settle`` swaps it in).
    A QuickList's nodes are PackedLists whose ``dq`` stays None."""
    cdef public object dq
    def __init__(self, items=None):
        if items is not None:
            self.extend(items)

    cdef inline bint _fits(self, Py_ssize_t more) noexcept:
        return self._total() + more <= LIST_PACKED_BYTES

    cdef int _spill(self, Py_ssize_t more) except -1:
        """Moves to a QuickList when ``more`` bytes of new elements would not fit."""
        if not self._fits(more):
            self.dq = QuickList(self.tolist())
            self._splice(HEADER, self._end() - HEADER, NULL, 0)
            _lp_store_len(self.lp, 0)
        return 0

    cdef Py_ssize_t _index_offset(self, Py_ssize_t index) except -2:
        """Offset of the element at ``index`` (negative from the end), or IndexError."""
        cdef Py_ssize_t n = _lp_len(self.lp), off, i
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("deque index out of range")
        if index <= n // 2:
            return self._offset(index)
        off = self._end()
        for i in range(n - index):
            off = _prev_offset(self.lp, off)
        return off

    def __len__(self):
        if self.dq is not None:
            return len(self.dq)
        return _lp_len(self.lp)

    cdef int _push(self, bytes item, bint left) except -1:
        if item is None:
            raise TypeError("list elements are bytes")
        if self.dq is None:
            self._spill(PyBytes_GET_SIZE(item) + 10)
        if self.dq is not None:
            if left:
                self.dq.appendleft(item)
            else:
                self.dq.append(item)
        else:
            self._insert_at(HEADER if left else self._end(), item)
        return 0

    def append(self, bytes item not None):
        self._push(item, False)

    def appendleft(self, bytes item not None):
        self._push(item, True)

    def extend(self, items):
        it = iter(items)
        for item in it:
            self._push(item, False)
            if self.dq is not None:
                self.dq.extend(it)
                return

    def extendleft(self, items):
        it = iter(items)
        for item in it:
            self._push(item, True)
            if self.dq is not None:
                self.dq.extendleft(it)
                return

    cdef bytes _take(self, bint left):
        """Removes and returns the first (``left``) or last element of the listpack."""
        cdef Py_ssize_t off
        if not _lp_len(self.lp):
            raise IndexError("pop from an empty deque")
        off = HEADER if left else _prev_offset(self.lp, self._end())
        item = _entry_bytes(self.lp + off)
        self._splice(off, _entry_size(self.lp + off), NULL, 0)
        _lp_add_len(self.lp, -1)
        return item

    def pop(self):
        if self.dq is not None:
            return self.dq.pop()
        return self._take(False)

    def popleft(self):
        if self.dq is not None:
            return self.dq.popleft()
        return self._take(True)

    def __getitem__(self, Py_ssize_t index):
        if self.dq is not None:
            return self.dq[index]
        return _entry_bytes(self.lp + self._index_offset(index))

    def __setitem__(self, Py_ssize_t index, bytes item not None):
        cdef Py_ssize_t off
        if self.dq is None:
            off = self._index_offset(index)  # IndexError before any conversion
            self._spill(PyBytes_GET_SIZE(item) + 10)
        if self.dq is not None:
            self.dq[index] = item
        else:
            self._replace_at(self._index_offset(index), item)

    def insert(self, Py_ssize_t index, bytes item not None):
        cdef Py_ssize_t n
        if self.dq is None:
            self._spill(PyBytes_GET_SIZE(item) + 10)
        if self.dq is not None:
            self.dq.insert(index, item)
            return
        n = _lp_len(self.lp)
        if index < 0:
            index = max(0, index + n)
        if index >= n:
            self._insert_at(self._end(), item)
        else:
            self._insert_at(self._index_offset(index), item)

    def index(self, item, Py_ssize_t start=0, Py_ssize_t stop=PY_SSIZE_T_MAX):
        cdef Probe pr
        cdef Py_ssize_t off, end, i, n
        if self.dq is not None:
            return self.dq.index(item, start, stop)
        n = _lp_len(self.lp)
        if start < 0:
            start = max(0, start + n)
        if stop < 0:
            stop = max(0, stop + n)
        if stop > n:
            stop = n
        if type(item) is bytes and start < stop:
            _probe(&pr, item)
            off = self._offset(start)
            end = self._end()
            for i in range(start, stop):
                if _matches(self.lp + off, &pr):
                    return i
                off += _entry_size(self.lp + off)
        raise ValueError(f"{item!r} is not in deque")

    def range(self, Py_ssize_t start, Py_ssize_t stop):
        """Elements at [start, stop) (0 <= start <= stop <= len), walking only to them."""
        cdef list out = []
        cdef Py_ssize_t off, i
        if self.dq is not None:
            return self.dq.range(start, stop)
        if stop > _lp_len(self.lp):
            stop = _lp_len(self.lp)
        if start >= stop:
            return out
        off = self._index_offset(start)
        for i in range(start, stop):
            out.append(_entry_bytes(self.lp + off))
            off += _entry_size(self.lp + off)
        return out

    def write_range(self, bytearray out, Py_ssize_t start, Py_ssize_t stop):
        """``range(start, stop)`` as a RESP array appended to ``out``, written from the
        entries (no element object is made)."""
        cdef Py_ssize_t off, left, size
        cdef char *w
        if self.dq is not None:
            self.dq.write_range(out, start, stop)
            return
        if stop > _lp_len(self.lp):
            stop = _lp_len(self.lp)
        if start >= stop:
            _append_array(out, 0, 0)
            return
        off = self._index_offset(start)
        left = stop - start
        size = _put_entries(NULL, self.lp, off, self._end(), &left)
        w = _append_array(out, stop - start, size)
        left = stop - start
        _put_entries(w, self.lp, off, self._end(), &left)

    def clear(self):
        if self.dq is not None:
            self.dq.clear()
            return
        self._splice(HEADER, self._end() - HEADER, NULL, 0)
        _lp_store_len(self.lp, 0)

    def __iter__(self):
        if self.dq is not None:
            return iter(self.dq)
        return iter(self.tolist())

    def __reversed__(self):
        if self.dq is not None:
            return reversed(self.dq)
        cdef list out = self.tolist()
        out.reverse()
        return iter(out)

    def copy(self):
        cdef PackedList other = PackedList.__new__(PackedList)
        if self.dq is not None:
            other.dq = self.dq.copy()
        else:
            other._load_blob(self.blob(), _lp_len(self.lp))
        return other

    def __eq__(self, other):
        try:
            return list(self) == list(other)
        except TypeError:
            return NotImplemented

    def __repr__(self):
        return f"PackedList({list(self)!r})"


# -- big lists: Redis's quicklist ---------------------------------------------------------------
# an upper bound of the bytes an element adds to a listpack beyond its data
DEF ENTRY_OVERHEAD = MAX_ENTRY_HEAD + MAX_BACKLEN


cdef inline PackedList _node_at(list nodes, Py_ssize_t i):
    return <PackedList>nodes[i]


cdef list _reversed_elements(PackedList node):
    cdef list out = node.tolist()
    out.reverse()
    return out


@cython.final
@cython.no_gc
cdef class _Node(PackedList):
    """A QuickList node: a PackedList whose buffer grows by doubling up to NODE_BYTES, so
    pushes do not realloc it each time (a small list's own PackedList is allocated to its
    exact size, and has no room for the extra field in its allocation class)."""
    cdef Py_ssize_t cap  # the bytes allocated

    cdef int _splice(self, Py_ssize_t off, Py_ssize_t remove, const unsigned char *ins,
                     Py_ssize_t n) except -1:
        cdef Py_ssize_t total, new_total, cap
        cdef unsigned char *p
        total = self._total()
        new_total = total - remove + n
        if new_total > LISTPACK_MAX_SAFETY_SIZE:
            raise ListpackFull()
        cap = self.cap
        if new_total > cap:
            cap = max(new_total, min(2 * cap, NODE_BYTES))
        elif cap > NODE_BYTES and new_total <= cap // 2:
            cap = max(new_total, NODE_BYTES)  # a big element left the node
        if cap != self.cap and new_total > total:
            p = <unsigned char *>PyMem_Realloc(self.lp, cap)
            if p == NULL:
                raise MemoryError()
            self.lp = p
            self.cap = cap
        memmove(self.lp + off + n, self.lp + off + remove, total - off - remove)
        if n:
            memcpy(self.lp + off, ins, n)
        if cap != self.cap:
            p = <unsigned char *>PyMem_Realloc(self.lp, cap)
            if p != NULL:
                self.lp = p
                self.cap = cap
        self._set_header(new_total)
        return 0


cdef PackedList _new_node():
    """An empty QuickList node."""
    cdef _Node node = _Node.__new__(_Node)
    node.cap = HEADER + 1
    return node


cdef PackedList _packed_node(list elements, Py_ssize_t lo, Py_ssize_t hi):
    """A node holding ``elements[lo:hi]``."""
    cdef PackedList node = _new_node()
    cdef Py_ssize_t i
    for i in range(lo, hi):
        node._insert_at(node._end(), <bytes>elements[i])
    return node


@cython.final
@cython.no_gc  # holds a list of listpack nodes, which hold no references
cdef class QuickList:
    """The ``collections.deque`` subset the list commands use, over a Python list of
    listpack nodes (``PackedList``) of at most NODE_BYTES each (one element bigger than that
    gets a node of its own), as Redis's quicklist.

    Pushes and pops at either end touch one end node: O(1) apart from the node's memmove,
    as in Redis. Index access walks node counts from the nearer end, then one node. No node
    is ever empty. The layout of nodes is internal: RDB and DEBUG re-split the elements by
    the configured node size (``pykv.storage.rdb.objects.list_nodes``)."""
    cdef list nodes
    cdef Py_ssize_t n

    def __cinit__(self):
        self.nodes = []
        self.n = 0

    def __init__(self, items=None):
        if items is not None:
            self.extend(items)

    def __len__(self):
        return self.n

    # -- ends --------------------------------------------------------------------------------
    cdef int _push(self, bytes item, bint left) except -1:
        cdef PackedList node = None
        if item is None:
            raise TypeError("list elements are bytes")
        if self.n:
            node = _node_at(self.nodes, 0 if left else len(self.nodes) - 1)
            if node._total() + PyBytes_GET_SIZE(item) + ENTRY_OVERHEAD > NODE_BYTES:
                node = None
        if node is None:
            node = _new_node()
            node._insert_at(HEADER, item)
            if left:
                self.nodes.insert(0, node)
            else:
                self.nodes.append(node)
        else:
            node._insert_at(HEADER if left else node._end(), item)
        self.n += 1
        return 0

    def append(self, bytes item not None):
        self._push(item, False)

    def appendleft(self, bytes item not None):
        self._push(item, True)

    def extend(self, items):
        for item in items:
            self._push(item, False)

    def extendleft(self, items):
        for item in items:
            self._push(item, True)

    cdef bytes _pop(self, bint left):
        cdef Py_ssize_t i
        cdef PackedList node
        if not self.n:
            raise IndexError("pop from an empty deque")
        i = 0 if left else len(self.nodes) - 1
        node = _node_at(self.nodes, i)
        item = node._take(left)
        self.n -= 1
        if not _lp_len(node.lp):
            del self.nodes[i]
        return item

    def pop(self):
        return self._pop(False)

    def popleft(self):
        return self._pop(True)

    # -- positions ---------------------------------------------------------------------------
    cdef Py_ssize_t _locate(self, Py_ssize_t index, Py_ssize_t *local) noexcept:
        """The node holding element ``index`` (0 <= index < len) and, in ``local``, its
        index in that node: walks node counts from the nearer end."""
        cdef list nodes = self.nodes
        cdef Py_ssize_t i, count
        if index <= self.n // 2:
            for i in range(len(nodes)):
                count = _lp_len(_node_at(nodes, i).lp)
                if index < count:
                    local[0] = index
                    return i
                index -= count
        else:
            index = self.n - 1 - index
            for i in range(len(nodes) - 1, -1, -1):
                count = _lp_len(_node_at(nodes, i).lp)
                if index < count:
                    local[0] = count - 1 - index
                    return i
                index -= count
        local[0] = 0
        return 0

    cdef Py_ssize_t _checked(self, Py_ssize_t index) except -1:
        if index < 0:
            index += self.n
        if not 0 <= index < self.n:
            raise IndexError("deque index out of range")
        return index

    cdef int _split(self, Py_ssize_t i) except -1:
        """Re-packs node ``i`` into nodes of at most NODE_BYTES once an edit overfilled it."""
        cdef PackedList node = _node_at(self.nodes, i)
        cdef list elements, parts
        cdef Py_ssize_t lo, hi, size, need
        if _lp_len(node.lp) < 2 or node._total() <= NODE_BYTES:
            return 0
        elements = node.tolist()
        parts = []
        lo = 0
        while lo < len(elements):
            size = HEADER + 1
            hi = lo
            while hi < len(elements):
                need = PyBytes_GET_SIZE(<bytes>elements[hi]) + ENTRY_OVERHEAD
                if hi > lo and size + need > NODE_BYTES:
                    break
                size += need
                hi += 1
            parts.append(_packed_node(elements, lo, hi))
            lo = hi
        self.nodes[i:i + 1] = parts
        return 0

    def __getitem__(self, Py_ssize_t index):
        cdef Py_ssize_t local
        cdef PackedList node = _node_at(self.nodes, self._locate(self._checked(index), &local))
        return _entry_bytes(node.lp + node._index_offset(local))

    def __setitem__(self, Py_ssize_t index, bytes item not None):
        cdef Py_ssize_t local
        cdef Py_ssize_t i = self._locate(self._checked(index), &local)
        cdef PackedList node = _node_at(self.nodes, i)
        node._replace_at(node._index_offset(local), item)
        self._split(i)

    def insert(self, Py_ssize_t index, bytes item not None):
        """``deque.insert``: before ``index`` (clamped to the ends)."""
        cdef Py_ssize_t local, i
        cdef PackedList node
        if index < 0:
            index = max(0, index + self.n)
        if index == 0 or index >= self.n:
            self._push(item, index == 0)
            return
        i = self._locate(index, &local)
        node = _node_at(self.nodes, i)
        node._insert_at(node._index_offset(local), item)
        self.n += 1
        self._split(i)

    def index(self, item, Py_ssize_t start=0, Py_ssize_t stop=PY_SSIZE_T_MAX):
        """``deque.index``: the first position of ``item`` in [start, stop)."""
        cdef Probe pr
        cdef Py_ssize_t n = self.n, local, i, pos, off, end
        cdef PackedList node
        if start < 0:
            start = max(0, start + n)
        if stop < 0:
            stop = max(0, stop + n)
        if stop > n:
            stop = n
        if type(item) is bytes and start < stop:
            _probe(&pr, item)
            i = self._locate(start, &local)
            pos = start
            while pos < stop:
                node = _node_at(self.nodes, i)
                off = node._index_offset(local)
                end = node._end()
                while off < end and pos < stop:
                    if _matches(node.lp + off, &pr):
                        return pos
                    off += _entry_size(node.lp + off)
                    pos += 1
                i += 1
                local = 0
        raise ValueError(f"{item!r} is not in deque")

    def range(self, Py_ssize_t start, Py_ssize_t stop):
        """Elements at [start, stop) (0 <= start), walking only to them."""
        cdef list out
        cdef Py_ssize_t local, i, off, end, k = 0, count
        cdef PackedList node
        if stop > self.n:
            stop = self.n
        if start >= stop:
            return []
        count = stop - start
        out = PyList_New(count)
        i = self._locate(start, &local)
        while True:
            node = _node_at(self.nodes, i)
            off = node._index_offset(local)
            end = node._end()
            while off < end:
                item = _entry_bytes(node.lp + off)
                Py_INCREF(item)
                PyList_SET_ITEM(out, k, item)
                k += 1
                if k == count:
                    return out
                off += _entry_size(node.lp + off)
            i += 1
            local = 0

    def write_range(self, bytearray out, Py_ssize_t start, Py_ssize_t stop):
        """``range(start, stop)`` as a RESP array appended to ``out``, written from the
        nodes' entries (no element object is made)."""
        cdef Py_ssize_t count
        if stop > self.n:
            stop = self.n
        count = stop - start if start < stop else 0
        self._walk(_append_array(out, count, self._walk(NULL, start, count)), start, count)

    cdef Py_ssize_t _walk(self, char *w, Py_ssize_t start, Py_ssize_t count) except -1:
        """``_put_entries`` over ``count`` elements from ``start``, node after node."""
        cdef Py_ssize_t local, i, total = 0, left = count
        cdef PackedList node
        if count <= 0:
            return 0
        i = self._locate(start, &local)
        while left > 0:
            node = _node_at(self.nodes, i)
            total += _put_entries(NULL if w == NULL else w + total, node.lp,
                                  node._index_offset(local), node._end(), &left)
            i += 1
            local = 0
        return total

    def del_range(self, Py_ssize_t start, Py_ssize_t count):
        """Removes ``count`` elements from ``start`` (0 <= start, start + count <= len):
        whole nodes are dropped, the two partial ones cut in one splice each."""
        cdef Py_ssize_t local, i, off, end, take, j
        cdef PackedList node
        if count <= 0:
            return
        i = self._locate(start, &local)
        self.n -= count
        while count:
            node = _node_at(self.nodes, i)
            take = min(count, _lp_len(node.lp) - local)
            if take == _lp_len(node.lp):
                del self.nodes[i]
            else:
                off = node._index_offset(local)
                end = off
                for j in range(take):
                    end += _entry_size(node.lp + end)
                node._splice(off, end - off, NULL, 0)
                _lp_add_len(node.lp, -take)
                i += 1
            count -= take
            local = 0

    def clear(self):
        self.nodes = []
        self.n = 0

    # -- the whole list ----------------------------------------------------------------------
    def __iter__(self):
        return chain.from_iterable(map(PackedList.tolist, self.nodes))

    def __reversed__(self):
        return chain.from_iterable(map(_reversed_elements, reversed(self.nodes)))

    def nbytes(self):
        """The bytes of every node's listpack."""
        cdef Py_ssize_t total = 0, i
        for i in range(len(self.nodes)):
            total += _node_at(self.nodes, i)._total()
        return total

    def node_count(self):
        return len(self.nodes)

    def node_sizes(self):
        """(elements, listpack bytes) of every node, in order (tests check the layout)."""
        cdef PackedList node
        return [(_lp_len(node.lp), node._total()) for node in self.nodes]

    def copy(self):
        cdef QuickList other = QuickList.__new__(QuickList)
        cdef PackedList node
        cdef _Node twin
        for node in self.nodes:
            twin = _Node.__new__(_Node)
            twin._load_blob(node.blob(), _lp_len(node.lp))
            twin.cap = node._total()
            other.nodes.append(twin)
        other.n = self.n
        return other

    def __eq__(self, other):
        try:
            return list(self) == list(other)
        except TypeError:
            return NotImplemented

    def __sizeof__(self):
        return (object.__sizeof__(self) + self.nodes.__sizeof__()
                + sum(node.__sizeof__() for node in self.nodes))

    def __repr__(self):
        return f"QuickList({list(self)!r})"
