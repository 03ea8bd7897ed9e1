# cython: language_level=3
"""Byte-level codecs of the RDB format that need C speed: CRC64 and LZF.

* ``crc64(crc, data)`` — the CRC-64 Redis puts after every RDB file and DUMP payload
  ("Jones" polynomial 0xad93d23594c935a9, reflected, initial value 0, no final xor;
  ``crc64(0, b"123456789") == 0xe9c6d914c4b8d9ca``).
* ``lzf_decompress(data, expected_len)`` / ``lzf_compress(data)`` — the LZF block format
  (liblzf) Redis uses for compressed strings: literal runs of 1–32 bytes (control byte
  ``< 32``) and back references of length 3–264 at distances up to 8 KiB. The compressor
  makes the choices Redis's liblzf makes, so compressed strings are Redis's bytes.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

# slicing-by-8 (as Redis 7's crcspeed): _TABLE[k][b] is byte b's CRC followed by k zero bytes
cdef uint64_t _TABLE[8][256]
cdef bint _table_ready = False


cdef void _init_table() noexcept:
    cdef uint64_t poly = 0x95ac9329ac4bc9b5ULL  # 0xad93d23594c935a9 bit-reversed
    cdef uint64_t crc
    cdef int i, j, k
    for i in range(256):
        crc = i
        for j in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
        _TABLE[0][i] = crc
    for i in range(256):
        crc = _TABLE[0][i]
        for k in range(1, 8):
            crc = _TABLE[0][crc & 0xFF] ^ (crc >> 8)
            _TABLE[k][i] = crc


def crc64(uint64_t crc, const uint8_t[:] data) -> int:
    """Continue a Redis CRC-64 over ``data`` (start with ``crc=0``)."""
    global _table_ready
    cdef Py_ssize_t i = 0, n = data.shape[0]
    cdef const uint8_t *p
    if not _table_ready:
        _init_table()
        _table_ready = True
    if n == 0:
        return crc
    p = &data[0]
    while n - i >= 8:
        crc ^= (<uint64_t>p[i] | <uint64_t>p[i + 1] << 8 | <uint64_t>p[i + 2] << 16 |
                <uint64_t>p[i + 3] << 24 | <uint64_t>p[i + 4] << 32 | <uint64_t>p[i + 5] << 40 |
                <uint64_t>p[i + 6] << 48 | <uint64_t>p[i + 7] << 56)
        crc = (_TABLE[7][crc & 0xFF] ^ _TABLE[6][(crc >> 8) & 0xFF] ^
               _TABLE[5][(crc >> 16) & 0xFF] ^ _TABLE[4][(crc >> 24) & 0xFF] ^
               _TABLE[3][(crc >> 32) & 0xFF] ^ _TABLE[2][(crc >> 40) & 0xFF] ^
               _TABLE[1][(crc >> 48) & 0xFF] ^ _TABLE[0][crc >> 56])
        i += 8
    while i < n:
        crc = _TABLE[0][(crc ^ p[i]) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc


class LzfError(ValueError):
    """A compressed string that does not decode to its announced length."""


def lzf_decompress(const uint8_t[:] src, Py_ssize_t out_len) -> bytes:
    if out_len == 0:  # liblzf then returns 0 whatever the input, which Redis takes as ""
        return b""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, out_len)
    cdef uint8_t *op = <uint8_t *>PyBytes_AS_STRING(out)
    cdef Py_ssize_t ip = 0, o = 0, n = src.shape[0]
    cdef unsigned int ctrl, length
    cdef Py_ssize_t ref
    while ip < n:
        ctrl = src[ip]
        ip += 1
        if ctrl < 32:
            length = ctrl + 1
            if o + length > out_len or ip + length > n:
                raise LzfError("corrupt LZF literal run")
            for _ in range(length):
                op[o] = src[ip]
                o += 1
                ip += 1
        else:
            length = ctrl >> 5
            if length == 7:
                if ip >= n:
                    raise LzfError("truncated LZF reference")
                length += src[ip]
                ip += 1
            if ip >= n:
                raise LzfError("truncated LZF reference")
            ref = o - ((ctrl & 0x1F) << 8) - src[ip] - 1
            ip += 1
            length += 2
            if ref < 0 or o + length > out_len:
                raise LzfError("corrupt LZF back reference")
            for _ in range(length):  # byte by byte: references may overlap the output
                op[o] = op[ref]
                o += 1
                ref += 1
    if o != out_len:
        raise LzfError("LZF data shorter than announced")
    return out


DEF LZF_HLOG = 16  # Redis builds liblzf with a 2^16-slot hash table
DEF MAX_LIT = 32
DEF MAX_OFF = 8192
DEF MAX_REF = 264  # 7 + 255 + 2


# The hash table is kept between calls instead of being cleared (256 KiB) for each string:
# a slot counts as empty (0, as in a cleared table) unless its stamp is this call's.
cdef uint32_t _htab[1 << LZF_HLOG]
cdef uint16_t _stamp[1 << LZF_HLOG]
cdef uint16_t _generation = 0


cdef inline uint32_t _lzf_get(uint32_t slot) noexcept:
    return _htab[slot] if _stamp[slot] == _generation else 0


cdef inline void _lzf_set(uint32_t slot, uint32_t ip) noexcept:
    _htab[slot] = ip
    _stamp[slot] = _generation


cdef inline uint32_t _lzf_idx(uint32_t h) noexcept:
    """liblzf's table slot for the hash of the 3 bytes in ``h``'s low 24 bits."""
    return ((h >> (24 - LZF_HLOG)) - h * 5) & ((1 << LZF_HLOG) - 1)


cdef inline void _literal(uint8_t *out, Py_ssize_t *op, Py_ssize_t *lit,
                          uint8_t byte) noexcept:
    """One more byte in the open literal run; a full run (32) is closed, a new one opened."""
    out[op[0]] = byte
    op[0] += 1
    lit[0] += 1
    if lit[0] == MAX_LIT:
        out[op[0] - lit[0] - 1] = <uint8_t>(lit[0] - 1)
        lit[0] = 0
        op[0] += 1


def lzf_compress(const uint8_t[:] src, Py_ssize_t max_out=-1):
    """Compress ``src`` as Redis's liblzf does (so DUMP payloads and RDB files come out
    the same bytes); None when the result would not fit in ``max_out`` bytes.

    liblzf's "very fast" mode with a 2^16-slot table: a rolling 3-byte hash finds the last
    position with the same hash; a match there (not at offset 0, within 8 KiB) is extended
    up to 264 bytes, and the two positions before the match's end are hashed too.
    """
    cdef Py_ssize_t n = src.shape[0]
    if max_out < 0:
        max_out = n + n // 16 + 64
    global _generation
    cdef uint8_t *out = <uint8_t *>malloc(max_out + 4)
    cdef const uint8_t *p = &src[0] if n else NULL
    cdef Py_ssize_t ip = 0, op = 1, lit = 0, ref, off, length, maxlen
    cdef uint32_t hval, slot
    if out == NULL:
        raise MemoryError()
    _generation += 1
    if _generation == 0:  # wrapped: every old stamp could be taken for this call's
        memset(_stamp, 0, sizeof(_stamp))
        _generation = 1
    try:
        if n == 0:
            return b""
        hval = (<uint32_t>p[0] << 8) | p[1] if n > 1 else 0
        while ip < n - 2:
            hval = (hval << 8) | p[ip + 2]
            slot = _lzf_idx(hval)
            ref = _lzf_get(slot)
            _lzf_set(slot, <uint32_t>ip)
            off = ip - ref - 1
            if (ref > 0 and off < MAX_OFF and p[ref] == p[ip] and p[ref + 1] == p[ip + 1]
                    and p[ref + 2] == p[ip + 2]):
                maxlen = n - ip - 2
                if maxlen > MAX_REF:
                    maxlen = MAX_REF
                if op + 4 >= max_out and op - (lit == 0) + 4 >= max_out:
                    return None
                out[op - lit - 1] = <uint8_t>(lit - 1)  # close the literal run
                op -= lit == 0  # an empty run takes no byte
                length = 3
                while length < maxlen and p[ref + length] == p[ip + length]:
                    length += 1
                length -= 2
                ip += 1
                if length < 7:
                    out[op] = <uint8_t>((off >> 8) + (length << 5))
                    op += 1
                else:
                    out[op] = <uint8_t>((off >> 8) + (7 << 5))
                    out[op + 1] = <uint8_t>(length - 7)
                    op += 2
                out[op] = <uint8_t>off
                op += 2  # and a slot for the next run's control byte
                lit = 0
                ip += length + 1
                if ip >= n - 2:
                    break
                ip -= 2
                hval = (<uint32_t>p[ip] << 8) | p[ip + 1]
                hval = (hval << 8) | p[ip + 2]
                _lzf_set(_lzf_idx(hval), <uint32_t>ip)
                ip += 1
                hval = (hval << 8) | p[ip + 2]
                _lzf_set(_lzf_idx(hval), <uint32_t>ip)
                ip += 1
            else:
                if op >= max_out:
                    return None
                _literal(out, &op, &lit, p[ip])
                ip += 1
        if op + 3 > max_out:
            return None
        while ip < n:
            _literal(out, &op, &lit, p[ip])
            ip += 1
        out[op - lit - 1] = <uint8_t>(lit - 1)
        op -= lit == 0
        return PyBytes_FromStringAndSize(<char *>out, op)
    finally:
        free(out)
