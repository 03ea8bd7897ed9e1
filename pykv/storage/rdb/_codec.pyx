# cython: language_level=3
"""Byte-level codecs of the RDB format that need C speed: CRC64 and LZF.

* ``crc64(crc, data)`` — the CRC-64 Redis puts after every RDB file and DUMP payload
  ("Jones" polynomial 0xad93d23594c935a9, reflected, initial value 0, no final xor;
  ``crc64(0, b"123456789") == 0xe9c6d914c4b8d9ca``).
* ``lzf_decompress(data, expected_len)`` / ``lzf_compress(data)`` — the LZF block format
  (liblzf) Redis uses for compressed strings: literal runs of 1–32 bytes (control byte
  ``< 32``) and back references of length 3–264 at distances up to 8 KiB. Any valid LZF
  stream decompresses in Redis, so pykv's compressor is its own simple greedy matcher.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

cdef uint64_t _TABLE[256]
cdef bint _table_ready = False


cdef void _init_table() noexcept:
    cdef uint64_t poly = 0x95ac9329ac4bc9b5ULL  # 0xad93d23594c935a9 bit-reversed
    cdef uint64_t crc
    cdef int i, j
    for i in range(256):
        crc = i
        for j in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
        _TABLE[i] = crc


def crc64(uint64_t crc, const uint8_t[:] data) -> int:
    """Continue a Redis CRC-64 over ``data`` (start with ``crc=0``)."""
    global _table_ready
    cdef Py_ssize_t i
    if not _table_ready:
        _init_table()
        _table_ready = True
    for i in range(data.shape[0]):
        crc = _TABLE[(crc ^ data[i]) & 0xFF] ^ (crc >> 8)
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


DEF HLOG = 14
DEF MAX_LIT = 32
DEF MAX_OFF = 8192
DEF MAX_REF = 264  # 7 + 255 + 2


cdef Py_ssize_t _literals(uint8_t *out, Py_ssize_t op, Py_ssize_t max_out,
                         const uint8_t *src, Py_ssize_t start, Py_ssize_t end) noexcept:
    """Emit ``src[start:end]`` as literal runs of at most 32 bytes; -1 if out of room."""
    cdef Py_ssize_t k
    while start < end:
        k = end - start
        if k > MAX_LIT:
            k = MAX_LIT
        if op + 1 + k > max_out:
            return -1
        out[op] = <uint8_t>(k - 1)
        memcpy(out + op + 1, src + start, k)
        op += 1 + k
        start += k
    return op


def lzf_compress(const uint8_t[:] src, Py_ssize_t max_out=-1):
    """Compress ``src``; None when the result would not fit in ``max_out`` bytes.

    Greedy: a 3-byte hash finds the most recent candidate within 8 KiB; matches are
    extended as far as allowed, everything else goes into literal runs.
    """
    cdef Py_ssize_t n = src.shape[0]
    if max_out < 0:
        max_out = n + n // 16 + 64
    cdef uint32_t *htab = <uint32_t *>malloc(sizeof(uint32_t) << HLOG)
    cdef uint8_t *out = <uint8_t *>malloc(max_out + 1 if max_out > 0 else 1)
    cdef Py_ssize_t ip = 0, op = 0, lit_start = 0, ref, length, maxlen, off, k
    cdef uint32_t h
    if htab == NULL or out == NULL:
        free(htab)
        free(out)
        raise MemoryError()
    memset(htab, 0xFF, sizeof(uint32_t) << HLOG)
    try:
        while ip + 2 < n:
            h = ((<uint32_t>src[ip] << 16) | (<uint32_t>src[ip + 1] << 8) | src[ip + 2])
            h = (h * 2654435761U) >> (32 - HLOG)
            ref = htab[h]
            htab[h] = <uint32_t>ip
            off = ip - ref - 1
            if (ref != 0xFFFFFFFF and ref < ip and off < MAX_OFF
                    and src[ref] == src[ip] and src[ref + 1] == src[ip + 1]
                    and src[ref + 2] == src[ip + 2]):
                maxlen = n - ip
                if maxlen > MAX_REF:
                    maxlen = MAX_REF
                length = 3
                while length < maxlen and src[ref + length] == src[ip + length]:
                    length += 1
                op = _literals(out, op, max_out, &src[0], lit_start, ip)
                if op < 0:
                    return None
                length -= 2
                if length < 7:
                    if op + 2 > max_out:
                        return None
                    out[op] = <uint8_t>((length << 5) | (off >> 8))
                    op += 1
                else:
                    if op + 3 > max_out:
                        return None
                    out[op] = <uint8_t>((7 << 5) | (off >> 8))
                    out[op + 1] = <uint8_t>(length - 7)
                    op += 2
                out[op] = <uint8_t>(off & 0xFF)
                op += 1
                ip += length + 2
                lit_start = ip
            else:
                ip += 1
        if n:
            op = _literals(out, op, max_out, &src[0], lit_start, n)
            if op < 0:
                return None
        return PyBytes_FromStringAndSize(<char *>out, op)
    finally:
        free(htab)
        free(out)
