# The listpack element codec shared by the compiled modules that keep Redis listpacks
# (_listpack.pyx's hashes, zsets and lists, _stream.pyx's stream nodes): reading an entry's
# size, integer or string, and writing one. The small readers are inline here, so each
# cimporting module gets them inlined; _encode is a C call into _listpack.
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint32_t, uint64_t

from pykv.protocol._decimal cimport LL_DIGITS_SIZE, ll_digits


cdef Py_ssize_t _encode(unsigned char *out, const char *s, Py_ssize_t n) noexcept


cdef inline Py_ssize_t _backlen_size(Py_ssize_t n) noexcept:
    """Bytes of the back-length of an ``n``-byte entry: one up to 127, then one more per 7
    bits, each step's bound being 2**(7k) - 1 exclusive (Redis's ``lpEncodeBacklen``)."""
    cdef Py_ssize_t size = 1
    if n > 127:
        size = 2
        while size < 5 and n >= (<Py_ssize_t>1 << (7 * size)) - 1:
            size += 1
    return size


cdef inline Py_ssize_t _put_backlen(unsigned char *out, Py_ssize_t n) noexcept:
    """Writes the back-length of an ``n``-byte entry at ``out``; returns its size."""
    cdef Py_ssize_t size = _backlen_size(n), i
    out[0] = <unsigned char>(n >> (7 * (size - 1)))
    for i in range(1, size):
        out[i] = <unsigned char>(((n >> (7 * (size - 1 - i))) & 127) | 128)
    return size


cdef inline Py_ssize_t _head_size(const unsigned char *p) noexcept:
    """Encoding + data bytes of the entry at ``p`` (without its back-length)."""
    cdef unsigned char b = p[0]
    if b < 0x80:
        return 1
    if b < 0xC0:
        return 1 + (b & 0x3F)
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 2 + (((b & 0x0F) << 8) | p[1])
    if b == 0xF0:
        return 5 + (p[1] | (p[2] << 8) | (p[3] << 16) | (<Py_ssize_t>p[4] << 24))
    if b == 0xF1:
        return 3
    if b == 0xF2:
        return 4
    if b == 0xF3:
        return 5
    return 9


cdef inline Py_ssize_t _entry_size(const unsigned char *p) noexcept:
    cdef Py_ssize_t n = _head_size(p)
    return n + _backlen_size(n)


cdef inline bint _is_int_entry(const unsigned char *p) noexcept:
    cdef unsigned char b = p[0]
    return b < 0x80 or (0xC0 <= b < 0xE0) or (0xF1 <= b <= 0xF4)


cdef inline int64_t _int_value(const unsigned char *p) noexcept:
    cdef unsigned char b = p[0]
    cdef uint64_t u
    cdef int i
    if b < 0x80:
        return b
    if b < 0xE0:
        u = ((b & 0x1F) << 8) | p[1]
        return <int64_t>u - 8192 if u >= 4096 else <int64_t>u
    if b == 0xF1:
        return <int64_t>(<short>(p[1] | (p[2] << 8)))
    if b == 0xF2:
        u = p[1] | (p[2] << 8) | (<uint64_t>p[3] << 16)
        return <int64_t>u - (1 << 24) if u >= (1 << 23) else <int64_t>u
    if b == 0xF3:
        return <int64_t>(<int>(p[1] | (p[2] << 8) | (p[3] << 16) | (<uint32_t>p[4] << 24)))
    u = 0
    for i in range(8):
        u |= (<uint64_t>p[1 + i]) << (8 * i)
    return <int64_t>u


cdef inline const unsigned char *_str_data(const unsigned char *p, Py_ssize_t *n) noexcept:
    """The data of a string entry (its length in ``n``)."""
    cdef unsigned char b = p[0]
    if b < 0xC0:
        n[0] = b & 0x3F
        return p + 1
    if b < 0xF0:
        n[0] = ((b & 0x0F) << 8) | p[1]
        return p + 2
    n[0] = p[1] | (p[2] << 8) | (p[3] << 16) | (<Py_ssize_t>p[4] << 24)
    return p + 5


cdef inline bytes _int_bytes(int64_t v):
    """``v`` in decimal, written straight into the bytes (no Python int or formatting)."""
    cdef char buf[LL_DIGITS_SIZE]
    cdef Py_ssize_t n = ll_digits(buf, v)
    return PyBytes_FromStringAndSize(buf + LL_DIGITS_SIZE - n, n)


cdef inline bytes _entry_bytes(const unsigned char *p):
    cdef Py_ssize_t n
    cdef const unsigned char *data
    if _is_int_entry(p):
        return _int_bytes(_int_value(p))
    data = _str_data(p, &n)
    return PyBytes_FromStringAndSize(<const char *>data, n)



cdef inline Py_ssize_t _encode_int(unsigned char *out, int64_t v) noexcept:
    """Writes the integer entry for ``v`` at ``out`` (room: 10); returns its size."""
    cdef Py_ssize_t head
    cdef uint64_t u
    cdef int i
    if 0 <= v <= 127:
        out[0] = <unsigned char>v
        out[1] = 1
        return 2
    if -4096 <= v <= 4095:
        u = <uint64_t>v & 0x1FFF
        out[0] = <unsigned char>(0xC0 | (u >> 8))
        out[1] = <unsigned char>(u & 0xFF)
        out[2] = 2
        return 3
    if -32768 <= v <= 32767:
        out[0] = 0xF1
        head = 2
    elif -(1 << 23) <= v < (1 << 23):
        out[0] = 0xF2
        head = 3
    elif -(1LL << 31) <= v < (1LL << 31):
        out[0] = 0xF3
        head = 4
    else:
        out[0] = 0xF4
        head = 8
    u = <uint64_t>v
    for i in range(head):
        out[1 + i] = <unsigned char>((u >> (8 * i)) & 0xFF)
    out[head + 1] = <unsigned char>(head + 1)
    return head + 2


cdef inline Py_ssize_t _prev_offset(const unsigned char *lp, Py_ssize_t off) noexcept:
    """Offset of the entry before the one at ``off`` (its back-length, read backwards:
    Redis's ``lpDecodeBacklen``)."""
    cdef Py_ssize_t val = 0, last = off - 1, size = 0
    cdef int shift = 0
    while True:
        val |= <Py_ssize_t>(lp[last] & 127) << shift
        size += 1
        if not lp[last] & 128:
            break
        shift += 7
        last -= 1
    return off - size - val
