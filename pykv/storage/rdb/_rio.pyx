# cython: language_level=3
"""RDB reading and writing primitives, compiled: they run once or more per stored key.

``RdbWriter`` appends lengths, strings (raw, integer-encoded or LZF-compressed), doubles and
millisecond times to ``buf``; ``RdbReader`` reads them back from ``data`` at ``pos``. The
listpack codec (the blob Redis 7 stores small hashes, sets of pairs, zsets and list nodes
in) is here too. ``pykv.storage.rdb.encoding`` re-exports all of it with the format's
constants; see that module for the format overview.
"""
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdio cimport snprintf
from libc.stdlib cimport strtod
from libc.string cimport memcmp, memcpy

from pykv.protocol._parser cimport parse_ll
from pykv.storage.rdb._codec import LzfError, lzf_compress, lzf_decompress

DEF ENC_INT8 = 0
DEF ENC_INT16 = 1
DEF ENC_INT32 = 2
DEF ENC_LZF = 3


class RdbFormatError(ValueError):
    """The bytes are not a valid RDB stream (or use a feature pykv can't load)."""


class RdbShortRead(RdbFormatError):
    """The data ends before the value it announces (a truncated file or payload)."""


cdef class RdbWriter:
    """Appends RDB primitives to ``buf``."""

    def __init__(self, compress=True):
        self.buf = bytearray()
        self.compress = compress

    cpdef byte(self, int value):
        self.buf.append(value)

    cpdef length(self, unsigned long long n):
        cdef bytearray buf = self.buf
        if n < 64:
            buf.append(n)
        elif n < 16384:
            buf.append((n >> 8) | 0x40)
            buf.append(n & 0xFF)
        elif n <= 0xFFFFFFFF:
            buf.append(0x80)
            buf += (<object>n).to_bytes(4, "big")
        else:
            buf.append(0x81)
            buf += (<object>n).to_bytes(8, "big")

    cpdef string(self, data):
        cdef const unsigned char[:] view = data
        cdef Py_ssize_t n = view.shape[0]
        cdef long long value
        if 0 < n <= 11 and parse_ll(<const char *>&view[0], n, &value) \
                and -2147483648 <= value <= 2147483647:
            self._int_string(value)
            return
        if self.compress and n > 20:
            packed = lzf_compress(data, n - 4)
            if packed is not None:
                self.buf.append(0xC0 | ENC_LZF)
                self.length(len(packed))
                self.length(n)
                self.buf += packed
                return
        self.length(n)
        self.buf += data

    cdef _int_string(self, long long value):
        cdef bytearray buf = self.buf
        if -128 <= value <= 127:
            buf.append(0xC0 | ENC_INT8)
            buf.append(<uint8_t><int8_t>value)
        elif -32768 <= value <= 32767:
            buf.append(0xC0 | ENC_INT16)
            buf += (<object>value).to_bytes(2, "little", signed=True)
        else:
            buf.append(0xC0 | ENC_INT32)
            buf += (<object>value).to_bytes(4, "little", signed=True)

    def int_string(self, value):
        """An integer saved as a string (integer encoding when it fits in 32 bits)."""
        if -(1 << 31) <= value < (1 << 31):
            self._int_string(value)
        else:
            self.string(b"%d" % value)

    cpdef binary_double(self, double value):
        cdef char raw[8]
        memcpy(raw, &value, 8)
        self.buf += PyBytes_FromStringAndSize(raw, 8)

    cpdef millis(self, long long ms):
        self.buf += (<object>ms).to_bytes(8, "little", signed=True)

    cpdef raw(self, data):
        self.buf += data


cdef class RdbReader:
    """Reads RDB primitives from a bytes-like buffer, advancing ``pos``."""

    def __init__(self, data, Py_ssize_t pos=0):
        self.data = data
        self.view = data
        self.pos = pos

    cpdef Py_ssize_t remaining(self):
        return self.view.shape[0] - self.pos

    cpdef bytes take(self, Py_ssize_t n):
        cdef Py_ssize_t end = self.pos + n
        if n < 0 or end > self.view.shape[0]:
            raise RdbShortRead("unexpected end of RDB data")
        chunk = PyBytes_FromStringAndSize(<const char *>&self.view[self.pos] if n else NULL, n)
        self.pos = end
        return chunk

    cpdef int byte(self) except -1:
        if self.pos >= self.view.shape[0]:
            raise RdbShortRead("unexpected end of RDB data")
        self.pos += 1
        return self.view[self.pos - 1]

    cdef unsigned long long _be(self, int width) except? 0:
        cdef unsigned long long v = 0
        cdef int i
        if self.pos + width > self.view.shape[0]:
            raise RdbShortRead("unexpected end of RDB data")
        for i in range(width):
            v = (v << 8) | self.view[self.pos + i]
        self.pos += width
        return v

    cpdef tuple length_or_encoding(self):
        """(length, False) or (encoding type, True) for specially encoded strings."""
        cdef int first = self.byte()
        cdef int kind = first >> 6
        if kind == 0:
            return first & 0x3F, False
        if kind == 1:
            return ((first & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return first & 0x3F, True
        if first == 0x80:
            return self._be(4), False
        if first == 0x81:
            return self._be(8), False
        raise RdbFormatError(f"unknown length encoding {first:#x}")

    cpdef unsigned long long length(self) except? 0:
        # like Redis's rdbLoadLen(rdb, NULL): a special-encoding byte reads as its low 6 bits
        return self.length_or_encoding()[0]

    cpdef bytes string(self):
        cdef int first = self.byte()
        cdef int kind = first >> 6
        cdef unsigned long long n
        cdef long long value
        if kind == 0:
            return self.take(first & 0x3F)
        if kind == 1:
            return self.take(((first & 0x3F) << 8) | self.byte())
        if kind == 2:
            if first == 0x80:
                return self.take(self._be(4))
            if first == 0x81:
                return self.take(self._be(8))
            raise RdbFormatError(f"unknown length encoding {first:#x}")
        kind = first & 0x3F
        if kind == ENC_INT8:
            value = <int8_t>self.byte()
            return b"%d" % value
        if kind == ENC_INT16:
            value = int.from_bytes(self.take(2), "little", signed=True)
            return b"%d" % value
        if kind == ENC_INT32:
            value = int.from_bytes(self.take(4), "little", signed=True)
            return b"%d" % value
        if kind == ENC_LZF:
            clen = self.length()
            ulen = self.length()
            if ulen > clen * 100 + 64:  # past LZF's best ratio (~88): don't allocate it
                raise RdbFormatError("Invalid LZF compressed string")
            try:
                return lzf_decompress(self.take(clen), ulen)
            except LzfError as exc:
                raise RdbFormatError(str(exc)) from None
        raise RdbFormatError(f"unknown string encoding {kind}")

    cpdef double binary_double(self) except? -1.0:
        cdef double d
        if self.pos + 8 > self.view.shape[0]:
            raise RdbShortRead("unexpected end of RDB data")
        memcpy(&d, &self.view[self.pos], 8)
        self.pos += 8
        return d

    def old_double(self):
        """The pre-RDB-8 string double: a length byte (253 nan, 254 +inf, 255 -inf)."""
        n = self.byte()
        if n == 253:
            return float("nan")
        if n == 254:
            return float("inf")
        if n == 255:
            return float("-inf")
        return float(self.take(n))

    def millis(self):
        return int.from_bytes(self.take(8), "little", signed=True)

    def seconds(self):
        return int.from_bytes(self.take(4), "little", signed=True)

    def u64(self):
        return int.from_bytes(self.take(8), "little")


# -- listpack ------------------------------------------------------------------------------
cpdef Py_ssize_t backlen_size(Py_ssize_t n) noexcept:
    """Bytes of a listpack entry's back-length field for an entry of ``n`` bytes."""
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


cdef void _put_backlen(bytearray out, Py_ssize_t n) except *:
    if n <= 127:
        out.append(n)
    elif n < 16383:
        out.append(n >> 7)
        out.append((n & 127) | 128)
    elif n < 2097151:
        out.append(n >> 14)
        out.append(((n >> 7) & 127) | 128)
        out.append((n & 127) | 128)
    elif n < 268435455:
        out.append(n >> 21)
        out.append(((n >> 14) & 127) | 128)
        out.append(((n >> 7) & 127) | 128)
        out.append((n & 127) | 128)
    else:
        out.append(n >> 28)
        out.append(((n >> 21) & 127) | 128)
        out.append(((n >> 14) & 127) | 128)
        out.append(((n >> 7) & 127) | 128)
        out.append((n & 127) | 128)


cdef void _put_entry(bytearray out, item) except *:
    cdef long long v
    cdef bint is_int
    cdef Py_ssize_t n, start
    cdef const unsigned char[:] view
    if isinstance(item, int):
        v = item
        is_int = True
    else:
        view = item
        n = view.shape[0]
        is_int = n and parse_ll(<const char *>&view[0], n, &v)
    start = PyByteArray_GET_SIZE(out)
    if is_int:
        if 0 <= v <= 127:
            out.append(v)
        elif -4096 <= v <= 4095:
            out.append(0xC0 | ((v & 0x1FFF) >> 8))
            out.append(v & 0xFF)
        elif -32768 <= v <= 32767:
            out.append(0xF1)
            out += (<object>v).to_bytes(2, "little", signed=True)
        elif -(1 << 23) <= v < (1 << 23):
            out.append(0xF2)
            out += (<object>v).to_bytes(3, "little", signed=True)
        elif -(1 << 31) <= v < (1 << 31):
            out.append(0xF3)
            out += (<object>v).to_bytes(4, "little", signed=True)
        else:
            out.append(0xF4)
            out += (<object>v).to_bytes(8, "little", signed=True)
    else:
        if n < 64:
            out.append(0x80 | n)
        elif n < 4096:
            out.append(0xE0 | (n >> 8))
            out.append(n & 0xFF)
        else:
            out.append(0xF0)
            out += (<object>n).to_bytes(4, "little")
        out += item
    _put_backlen(out, PyByteArray_GET_SIZE(out) - start)


cpdef Py_ssize_t listpack_entry_size(item) except -1:
    """Bytes ``item`` (bytes or int) takes in a listpack: encoding, data and back-length."""
    cdef long long v
    cdef Py_ssize_t n, size
    cdef const unsigned char[:] view
    if isinstance(item, int):
        v = item
    else:
        view = item
        n = view.shape[0]
        if not (n and parse_ll(<const char *>&view[0], n, &v)):
            size = n + (1 if n < 64 else 2 if n < 4096 else 5)
            return size + backlen_size(size)
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -(1 << 23) <= v < (1 << 23):
        return 5
    if -(1 << 31) <= v < (1 << 31):
        return 6
    return 10


def listpack_encode(items) -> bytes:
    """A listpack blob holding ``items`` (bytes, or ints), as Redis 7.0 lays it out."""
    cdef bytearray body = bytearray(b"\0\0\0\0\0\0")
    cdef Py_ssize_t count = 0
    for item in items:
        _put_entry(body, item)
        count += 1
    body.append(0xFF)
    total = len(body)
    body[0:4] = total.to_bytes(4, "little")
    body[4:6] = min(count, 65535).to_bytes(2, "little")
    return bytes(body)


cdef Py_ssize_t _decode_backlen(const unsigned char *p, Py_ssize_t last) noexcept:
    """Redis's ``lpDecodeBacklen``: the back-length ending at ``p[last]``, read backwards
    (-1 when it runs past five bytes or before the blob)."""
    cdef Py_ssize_t val = 0
    cdef int shift = 0
    while True:
        if last < 0:
            return -1
        val |= <Py_ssize_t>(p[last] & 127) << shift
        if not p[last] & 128:
            return val
        shift += 7
        last -= 1
        if shift > 28:
            return -1


cdef Py_ssize_t _entry_size(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end) except -1:
    """Bytes of the listpack entry at ``p[pos]`` (encoding and data, without the back-length),
    checked against its back-length and the blob's end byte at ``p[end]``."""
    cdef int b = p[pos]
    cdef Py_ssize_t entry, bl
    if b < 0x80:
        entry = 1
    elif b < 0xC0:
        entry = 1 + (b & 0x3F)
    elif b < 0xE0:
        entry = 2
    elif b < 0xF0:
        if pos + 2 > end:
            raise RdbFormatError("truncated listpack entry")
        entry = 2 + (((b & 0x0F) << 8) | p[pos + 1])
    elif b == 0xF0:
        if pos + 5 > end:
            raise RdbFormatError("truncated listpack entry")
        entry = 5 + (p[pos + 1] | (p[pos + 2] << 8) | (p[pos + 3] << 16) |
                     (<Py_ssize_t>p[pos + 4] << 24))
    elif b <= 0xF4:
        entry = 1 + (2 if b == 0xF1 else 3 if b == 0xF2 else 4 if b == 0xF3 else 8)
    else:
        raise RdbFormatError(f"invalid listpack entry encoding {b:#x}")
    bl = backlen_size(entry)
    if pos + entry + bl > end:
        raise RdbFormatError("truncated listpack entry")
    if _decode_backlen(p, pos + entry + bl - 1) != entry:
        raise RdbFormatError("listpack entry back-length mismatch")
    return entry


def listpack_decode(bytes blob, bint check_count=True) -> list:
    """Every element of a listpack blob, integers rendered as decimal bytes.

    The whole blob is validated as Redis's deep ``lpValidateIntegrity`` does (pykv reads
    every entry anyway): total size and terminator, each entry's
    encoding and bounds, each back-length against its entry, and the element count in the
    header (unless it is 65535, "unknown"; or ``check_count`` is False: Redis never looks
    at a stream node's count)."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(blob)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(blob)
    cdef Py_ssize_t pos = 6, end = size - 1, entry, bl, count = 0, numele
    cdef int b
    cdef list out = []
    if size < 7 or (p[0] | (p[1] << 8) | (p[2] << 16) | (<uint32_t>p[3] << 24)) != size \
            or p[end] != 0xFF:
        raise RdbFormatError("invalid listpack header")
    numele = p[4] | (p[5] << 8)
    while pos < end:
        b = p[pos]
        entry = _entry_size(p, pos, end)
        bl = backlen_size(entry)
        if b < 0x80:
            out.append(b"%d" % b)
        elif b < 0xC0:
            out.append(PyBytes_FromStringAndSize(<const char *>p + pos + 1, entry - 1))
        elif b < 0xE0 or b > 0xF0:
            out.append(b"%d" % _entry_int(p + pos, entry))
        elif b < 0xF0:
            out.append(PyBytes_FromStringAndSize(<const char *>p + pos + 2, entry - 2))
        else:
            out.append(PyBytes_FromStringAndSize(<const char *>p + pos + 5, entry - 5))
        pos += entry + bl
        count += 1
    if check_count and numele != 65535 and numele != count:
        raise RdbFormatError("listpack element count does not match its header")
    return out


cdef long long _entry_int(const unsigned char *e, Py_ssize_t entry) noexcept:
    """The value of an integer-encoded listpack entry ``e`` of ``entry`` bytes."""
    cdef int b = e[0]
    cdef Py_ssize_t width = entry - 1, k
    cdef unsigned long long u = 0
    cdef long long value
    if b < 0x80:
        return b
    if b < 0xE0:
        value = ((b & 0x1F) << 8) | e[1]
        return value - 8192 if value >= 4096 else value
    for k in range(width - 1, -1, -1):
        u = (u << 8) | e[1 + k]
    if width < 8 and u >= (1ULL << (8 * width - 1)):
        return <long long>u - (1LL << (8 * width))
    return <long long>u


cdef struct _Elem:
    const unsigned char *raw  # the entry (encoding and data): equal texts, equal bytes
    Py_ssize_t raw_len
    const char *text  # the element as text (into the blob, or ``digits``)
    Py_ssize_t text_len
    char digits[24]


cdef bint _canonical(const unsigned char *e, Py_ssize_t entry, _Elem *out) noexcept:
    """Whether the entry ``e`` is the encoding ``listpack_encode`` picks for its element
    (the smallest integer width, or a string that is no integer with the shortest
    header); fills ``out``."""
    cdef int b = e[0]
    cdef Py_ssize_t head, n
    cdef long long v
    out.raw = e
    out.raw_len = entry
    if b >= 0x80 and b < 0xC0 or b == 0xF0 or (b >= 0xE0 and b < 0xF0):
        head = 1 if b < 0xC0 else 5 if b == 0xF0 else 2
        n = entry - head
        out.text = <const char *>e + head
        out.text_len = n
        if n and parse_ll(out.text, n, &v):
            return False
        return head == (1 if n < 64 else 2 if n < 4096 else 5)
    v = _entry_int(e, entry)
    out.text = out.digits
    out.text_len = snprintf(out.digits, 24, "%lld", v)
    if b < 0x80:
        return True
    if b < 0xE0:
        return not 0 <= v <= 127
    if b == 0xF1:
        return not -4096 <= v <= 4095
    if b == 0xF2:
        return not -32768 <= v <= 32767
    if b == 0xF3:
        return not -(1 << 23) <= v < (1 << 23)
    return not -(1LL << 31) <= v < (1LL << 31)


DEF MAX_ADOPTED_PAIRS = 512


cdef int _text_cmp(const _Elem *a, const _Elem *b) noexcept:
    """Bytes order of two elements' texts (as Python compares bytes)."""
    cdef Py_ssize_t n = a.text_len if a.text_len < b.text_len else b.text_len
    cdef int c = memcmp(a.text, b.text, n) if n else 0
    if c:
        return c
    return (a.text_len > b.text_len) - (a.text_len < b.text_len)


cdef double _score(const _Elem *e) noexcept:
    """Redis's ``zzlStrtod``: strtod over a NUL-terminated copy of at most 127 bytes."""
    cdef char buf[128]
    cdef Py_ssize_t n = e.text_len if e.text_len < 127 else 127
    memcpy(buf, e.text, n)
    buf[n] = 0
    return strtod(buf, NULL)


def listpack_adoptable_pairs(bytes blob, bint zset, Py_ssize_t max_pairs) -> int:
    """The number of pairs in a hash (``zset`` False) or zset listpack ``blob`` that can be
    kept as the value's buffer as it is, or -1 when it cannot (the caller then decodes it
    element by element, and refuses or re-encodes it).

    Adoptable means: valid (as ``listpack_decode`` checks it), the very bytes
    ``listpack_encode`` makes of its elements, an even number of them, at most
    ``max_pairs`` (and 512) pairs, distinct fields (members); for a zset also scores that
    read (``strtod``) as numbers in strictly ascending (score, member) order, none of them
    0 unless written as the integer 0 (a listpack keeps scores as text, and ``-0`` or
    ``0.0`` would come back as ``0``)."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(blob)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(blob)
    cdef Py_ssize_t pos = 6, end = size - 1, entry, count = 0, numele, i, j, pairs
    cdef _Elem elems[2 * MAX_ADOPTED_PAIRS]
    cdef _Elem *e
    cdef double score, prev = 0.0
    if max_pairs > MAX_ADOPTED_PAIRS:
        max_pairs = MAX_ADOPTED_PAIRS
    if size < 7 or (p[0] | (p[1] << 8) | (p[2] << 16) | (<uint32_t>p[3] << 24)) != size \
            or p[end] != 0xFF:
        return -1
    numele = p[4] | (p[5] << 8)
    while pos < end:
        if count == 2 * max_pairs:
            return -1
        try:
            entry = _entry_size(p, pos, end)
        except RdbFormatError:
            return -1
        e = &elems[count]
        if not _canonical(p + pos, entry, e):
            return -1
        if count & 1 and zset:
            score = _score(e)
            if score != score or (score == 0.0 and not (e.raw_len == 1 and e.raw[0] == 0)):
                return -1
            if count > 1 and (score < prev or score == prev and
                              _text_cmp(&elems[count - 1], &elems[count - 3]) <= 0):
                return -1
            prev = score
        pos += entry + backlen_size(entry)
        count += 1
    if count == 0 or count & 1 or numele != (count if count < 65535 else 65535):
        return -1
    pairs = count >> 1
    for i in range(1, pairs):
        for j in range(i):
            if elems[2 * i].raw_len == elems[2 * j].raw_len and memcmp(
                    elems[2 * i].raw, elems[2 * j].raw, elems[2 * i].raw_len) == 0:
                return -1
    return pairs
