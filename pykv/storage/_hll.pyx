# cython: language_level=3
"""HyperLogLog register math in C speed: Redis's exact byte format, hash and estimator.

The value is a Redis string: a 16-byte header (``HYLL``, encoding byte 0 dense / 1 sparse,
3 unused bytes, 8-byte little-endian cached cardinality whose top bit marks it stale) and
then either 16384 dense 6-bit registers (12288 bytes) or the sparse opcodes ZERO
(``00xxxxxx``), XZERO (``01xxxxxx yyyyyyyy``) and VAL (``1vvvvvxx``). Updating a sparse
value edits it in place exactly as Redis does (same splits, same merges of adjacent VALs,
same promotion to dense past ``hll-sparse-max-bytes``), so the bytes GET returns are the
bytes Redis would hold for the same history. Counts use Ertl's estimator as Redis 7.0.
"""
from libc.math cimport sqrt, pow, INFINITY
from libc.stdint cimport uint64_t, uint8_t, int64_t
from libc.string cimport memset

DEF P = 14
DEF Q = 50
DEF REGISTERS = 16384
DEF P_MASK = 16383
DEF HDR = 16
DEF DENSE_BYTES = 12288
DEF VAL_MAX_VALUE = 32
DEF VAL_MAX_LEN = 4
DEF ZERO_MAX_LEN = 64

DENSE_SIZE = HDR + DENSE_BYTES
HEADER_SIZE = HDR
NUM_REGISTERS = REGISTERS


cpdef uint64_t murmurhash64a(const unsigned char[:] key, unsigned int seed=0xadc83b19):
    """MurmurHash64A as Redis uses it (little-endian reads)."""
    cdef uint64_t m = 0xc6a4a7935bd1e995ULL
    cdef int r = 47
    cdef Py_ssize_t n = key.shape[0]
    cdef uint64_t h = (<uint64_t>seed) ^ ((<uint64_t>n) * m)
    cdef Py_ssize_t i = 0, blocks = n - (n & 7)
    cdef uint64_t k
    cdef int j
    while i < blocks:
        k = 0
        for j in range(8):
            k |= (<uint64_t>key[i + j]) << (8 * j)
        k *= m
        k ^= k >> r
        k *= m
        h ^= k
        h *= m
        i += 8
    cdef int rem = n & 7
    if rem:
        for j in range(rem - 1, -1, -1):
            h ^= (<uint64_t>key[i + j]) << (8 * j)
        h *= m
    h ^= h >> r
    h *= m
    h ^= h >> r
    return h


cpdef tuple pat_len(const unsigned char[:] ele):
    """(register index, run length of the "000..1" pattern) for an element."""
    cdef uint64_t h = murmurhash64a(ele)
    cdef long index = h & P_MASK
    h >>= P
    h |= (<uint64_t>1) << Q
    cdef uint64_t bit = 1
    cdef int count = 1
    while (h & bit) == 0:
        count += 1
        bit <<= 1
    return index, count


cdef inline int dense_get(const uint8_t[:] regs, long off, long i) nogil:
    cdef long byte = i * 6 // 8
    cdef int fb = (i * 6) & 7
    cdef int fb8 = 8 - fb
    cdef unsigned int b0 = regs[off + byte]
    cdef unsigned int b1 = regs[off + byte + 1] if off + byte + 1 < regs.shape[0] else 0
    return ((b0 >> fb) | (b1 << fb8)) & 63


cdef inline void dense_set(uint8_t[:] regs, long off, long i, int val) nogil:
    cdef long byte = i * 6 // 8
    cdef int fb = (i * 6) & 7
    cdef int fb8 = 8 - fb
    regs[off + byte] &= ~(63 << fb)
    regs[off + byte] |= (val << fb) & 0xff
    if off + byte + 1 < regs.shape[0]:
        regs[off + byte + 1] &= ~(63 >> fb8)
        regs[off + byte + 1] |= val >> fb8


def dense_get_register(buf, long i):
    return dense_get(buf, HDR, i)


cpdef int dense_set_if_greater(bytearray buf, long index, int count):
    cdef uint8_t[:] v = buf
    if count > dense_get(v, HDR, index):
        dense_set(v, HDR, index, count)
        return 1
    return 0


cpdef bint sparse_to_dense(bytearray buf):
    """Rewrite a sparse HLL as dense in place (header kept); False if it is corrupt."""
    if buf[4] == 0:
        return True
    cdef bytearray dense = bytearray(HDR + DENSE_BYTES)
    dense[:HDR] = buf[:HDR]
    dense[4] = 0
    cdef uint8_t[:] d = dense
    cdef const uint8_t[:] s = buf
    cdef Py_ssize_t p = HDR, end = len(buf)
    cdef long idx = 0, runlen
    cdef int regval, op
    while p < end:
        op = s[p]
        if (op & 0xc0) == 0:
            idx += (op & 0x3f) + 1
            p += 1
        elif (op & 0xc0) == 0x40:
            if p + 1 >= end:
                break
            idx += (((op & 0x3f) << 8) | s[p + 1]) + 1
            p += 2
        else:
            runlen = (op & 3) + 1
            regval = ((op >> 2) & 0x1f) + 1
            if runlen + idx > REGISTERS:
                break
            while runlen:
                dense_set(d, HDR, idx, regval)
                idx += 1
                runlen -= 1
            p += 1
    if idx != REGISTERS:
        return False
    s = None  # release the buffer before resizing
    buf[:] = dense
    return True


cpdef int sparse_set(bytearray buf, long index, int count, long max_bytes):
    """Redis's ``hllSparseSet``: 1 changed, 0 unchanged, -1 corrupt (may promote)."""
    cdef Py_ssize_t p, prev = -1, nxt, end, first = 0, span = 0, oplen
    cdef int op, oldcount, curval
    cdef long runlen = 0, last, ln
    cdef bint is_zero = 0, is_xzero = 0, is_val = 0
    cdef uint8_t seq[5]
    cdef int n = 0, seqlen, oldlen, deltalen, v1, v2, scanlen
    cdef uint8_t[:] b
    if count > VAL_MAX_VALUE:
        return _promote(buf, index, count)
    b = buf
    p = HDR
    end = len(buf)
    while p < end:
        op = b[p]
        oplen = 1
        if (op & 0xc0) == 0:
            span = (op & 0x3f) + 1
        elif op & 0x80:
            span = (op & 3) + 1
        else:
            if p + 1 >= end:
                return -1
            span = (((op & 0x3f) << 8) | b[p + 1]) + 1
            oplen = 2
        if index <= first + span - 1:
            break
        prev = p
        p += oplen
        first += span
    if span == 0 or p >= end:
        return -1
    op = b[p]
    if (op & 0xc0) == 0:
        is_zero = 1
        runlen = (op & 0x3f) + 1
    elif (op & 0xc0) == 0x40:
        is_xzero = 1
        runlen = (((op & 0x3f) << 8) | b[p + 1]) + 1
    else:
        is_val = 1
        runlen = (op & 3) + 1
    if is_val:
        oldcount = ((op >> 2) & 0x1f) + 1
        if oldcount >= count:
            return 0
        if runlen == 1:
            b[p] = ((count - 1) << 2) | 0x80
            b = None
            return _merge(buf, prev, end)
    if is_zero and runlen == 1:
        b[p] = ((count - 1) << 2) | 0x80
        b = None
        return _merge(buf, prev, end)
    last = first + span - 1
    if is_zero or is_xzero:
        if index != first:
            ln = index - first
            if ln > ZERO_MAX_LEN:
                seq[n] = ((ln - 1) >> 8) | 0x40
                seq[n + 1] = (ln - 1) & 0xff
                n += 2
            else:
                seq[n] = ln - 1
                n += 1
        seq[n] = ((count - 1) << 2) | 0x80
        n += 1
        if index != last:
            ln = last - index
            if ln > ZERO_MAX_LEN:
                seq[n] = ((ln - 1) >> 8) | 0x40
                seq[n + 1] = (ln - 1) & 0xff
                n += 2
            else:
                seq[n] = ln - 1
                n += 1
    else:
        curval = ((op >> 2) & 0x1f) + 1
        if index != first:
            seq[n] = ((curval - 1) << 2) | (index - first - 1) | 0x80
            n += 1
        seq[n] = ((count - 1) << 2) | 0x80
        n += 1
        if index != last:
            seq[n] = ((curval - 1) << 2) | (last - index - 1) | 0x80
            n += 1
    seqlen = n
    oldlen = 2 if is_xzero else 1
    deltalen = seqlen - oldlen
    if deltalen > 0 and end + deltalen > max_bytes:
        b = None
        return _promote(buf, index, count)
    b = None  # release the buffer before resizing
    buf[p:p + oldlen] = bytes(seq[:seqlen])
    return _merge(buf, prev, end + deltalen)


cdef int _promote(bytearray buf, long index, int count):
    if not sparse_to_dense(buf):
        return -1
    return dense_set_if_greater(buf, index, count)


cdef int _merge(bytearray buf, Py_ssize_t prev, Py_ssize_t end):
    """Step 4 of hllSparseSet: merge adjacent equal VALs near the change; invalidate."""
    cdef Py_ssize_t p = prev if prev >= 0 else HDR
    cdef int scanlen = 5, op, op2, v1, ln
    cdef uint8_t[:] b = buf
    while p < end and scanlen > 0:
        scanlen -= 1
        op = b[p]
        if (op & 0xc0) == 0x40:
            p += 2
            continue
        if (op & 0xc0) == 0:
            p += 1
            continue
        if p + 1 < end and (b[p + 1] & 0x80):
            op2 = b[p + 1]
            v1 = ((op >> 2) & 0x1f) + 1
            if v1 == ((op2 >> 2) & 0x1f) + 1:
                ln = (op & 3) + (op2 & 3) + 2
                if ln <= VAL_MAX_LEN:
                    b = None  # release the buffer before resizing
                    buf[p + 1] = ((v1 - 1) << 2) | (ln - 1) | 0x80
                    del buf[p]
                    b = buf
                    end -= 1
                    continue
        p += 1
    buf[15] |= 0x80
    return 1


cdef double _sigma(double x):
    if x == 1.0:
        return INFINITY
    cdef double z_prime, y = 1.0, z = x
    while True:
        x *= x
        z_prime = z
        z += x * y
        y += y
        if z_prime == z:
            break
    return z


cdef double _tau(double x):
    if x == 0.0 or x == 1.0:
        return 0.0
    cdef double z_prime, y = 1.0, z = 1 - x
    while True:
        x = sqrt(x)
        z_prime = z
        y *= 0.5
        z -= pow(1 - x, 2) * y
        if z_prime == z:
            break
    return z / 3


cdef uint64_t _estimate(long* histo):
    cdef double m = REGISTERS
    cdef double z = m * _tau((m - histo[Q + 1]) / m)
    cdef int j
    for j in range(Q, 0, -1):
        z += histo[j]
        z *= 0.5
    z += m * _sigma(histo[0] / m)
    cdef double e = 0.721347520444481703680 * m * m / z
    cdef long double le = e
    return <uint64_t>(le + 0.5) if le >= 0 else 0


cpdef tuple count(const uint8_t[:] buf):
    """(cardinality estimate, invalid) from the registers, ignoring the cache."""
    cdef long histo[64]
    memset(histo, 0, sizeof(histo))
    cdef long i, idx = 0, runlen
    cdef Py_ssize_t p, end = buf.shape[0]
    cdef int op, regval
    cdef bint invalid = 0
    if buf[4] == 0:
        for i in range(REGISTERS):
            histo[dense_get(buf, HDR, i)] += 1
    else:
        p = HDR
        while p < end:
            op = buf[p]
            if (op & 0xc0) == 0:
                runlen = (op & 0x3f) + 1
                idx += runlen
                histo[0] += runlen
                p += 1
            elif (op & 0xc0) == 0x40:
                runlen = ((((op & 0x3f) << 8) | (buf[p + 1] if p + 1 < end else 0))) + 1
                idx += runlen
                histo[0] += runlen
                p += 2
            else:
                runlen = (op & 3) + 1
                regval = ((op >> 2) & 0x1f) + 1
                idx += runlen
                histo[regval] += runlen
                p += 1
        invalid = idx != REGISTERS
    return _estimate(histo), invalid


cpdef uint64_t count_registers(const uint8_t[:] regs):
    """Cardinality of 16384 raw 8-bit registers (PFCOUNT of several keys)."""
    cdef long histo[64]
    memset(histo, 0, sizeof(histo))
    cdef long i
    for i in range(REGISTERS):
        histo[regs[i] & 63] += 1
    return _estimate(histo)


cpdef bint merge_into(uint8_t[:] mx, const uint8_t[:] buf):
    """max[i] = MAX(max[i], hll[i]) over raw registers; False for a corrupt sparse HLL."""
    cdef long i = 0, runlen
    cdef Py_ssize_t p, end = buf.shape[0]
    cdef int op, regval, val
    if buf[4] == 0:
        for i in range(REGISTERS):
            val = dense_get(buf, HDR, i)
            if val > mx[i]:
                mx[i] = val
        return True
    p = HDR
    while p < end:
        op = buf[p]
        if (op & 0xc0) == 0:
            i += (op & 0x3f) + 1
            p += 1
        elif (op & 0xc0) == 0x40:
            i += ((((op & 0x3f) << 8) | (buf[p + 1] if p + 1 < end else 0))) + 1
            p += 2
        else:
            runlen = (op & 3) + 1
            regval = ((op >> 2) & 0x1f) + 1
            if runlen + i > REGISTERS:
                break
            while runlen:
                if regval > mx[i]:
                    mx[i] = regval
                i += 1
                runlen -= 1
            p += 1
    return i == REGISTERS


def store_registers(bytearray buf, const uint8_t[:] mx, long max_bytes):
    """PFMERGE's write-back: set every non-zero register into ``buf`` (sparse or dense)."""
    cdef long j = 0
    cdef uint8_t[:] v
    while j < REGISTERS and buf[4] != 0:
        if mx[j]:
            sparse_set(buf, j, mx[j], max_bytes)
        j += 1
    if j < REGISTERS:
        v = buf
        while j < REGISTERS:
            if mx[j] > dense_get(v, HDR, j):
                dense_set(v, HDR, j, mx[j])
            j += 1


def decode_sparse(const uint8_t[:] buf):
    """PFDEBUG DECODE's text: ``z:N``, ``Z:N``, ``v:V,N`` opcodes separated by spaces."""
    out = []
    cdef Py_ssize_t p = HDR, end = buf.shape[0]
    cdef int op
    while p < end:
        op = buf[p]
        if (op & 0xc0) == 0:
            out.append(b"z:%d" % ((op & 0x3f) + 1))
            p += 1
        elif (op & 0xc0) == 0x40:
            out.append(b"Z:%d" % ((((op & 0x3f) << 8) | (buf[p + 1] if p + 1 < end else 0)) + 1))
            p += 2
        else:
            out.append(b"v:%d,%d" % (((op >> 2) & 0x1f) + 1, (op & 3) + 1))
            p += 1
    return b" ".join(out)


def dense_registers(const uint8_t[:] buf):
    """All 16384 registers of a dense HLL as a list of ints."""
    return [dense_get(buf, HDR, i) for i in range(REGISTERS)]
