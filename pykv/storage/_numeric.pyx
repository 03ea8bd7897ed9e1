# cython: language_level=3
"""C-speed kernels for string commands: ``long double`` arithmetic and the LCS table.

INCRBYFLOAT: Redis parses both operands with ``strtold``, adds them as C ``long double``
(80-bit x87 extended precision here) and prints the sum with ``%.17Lf`` before trimming
trailing zeros. Python floats are 64-bit, so matching Redis to the last digit needs the
same C types: ``incrbyfloat`` does the whole step in C.

LCS: the dynamic-programming table is (len(a)+1) x (len(b)+1) 32-bit cells, as in Redis;
building it in Python would cost seconds for strings of a few thousand bytes.
"""
from libc.errno cimport errno, ERANGE, EINVAL
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.stdint cimport uint32_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

cdef extern from "stdlib.h":
    long double strtold(const char *s, char **end) nogil

cdef extern from "stdio.h":
    int snprintf(char *buf, size_t n, const char *fmt, ...) nogil

cdef extern from "ctype.h":
    int isspace(int c) nogil

cdef extern from "math.h":
    bint isnan(long double x) nogil
    bint isinf(long double x) nogil
    int fpclassify(long double x) nogil
    int FP_ZERO

# Redis's MAX_LONG_DOUBLE_CHARS: the longest text it parses or prints for a long double
DEF MAX_LD_CHARS = 5 * 1024


cdef bint _parse_ld(const char *s, Py_ssize_t n, long double *out):
    """Redis's ``string2ld``: the whole text must be a finite, in-range number."""
    cdef char buf[MAX_LD_CHARS]
    cdef char *end
    cdef long double value
    if n == 0 or n >= MAX_LD_CHARS:
        return False
    memcpy(buf, s, n)
    buf[n] = 0
    errno = 0
    value = strtold(buf, &end)
    if (isspace(<unsigned char>buf[0]) or end[0] != 0 or <Py_ssize_t>(end - buf) != n
            or (errno == ERANGE and (isinf(value) or fpclassify(value) == FP_ZERO))
            or errno == EINVAL or isnan(value)):
        return False
    out[0] = value
    return True


def parse_long_double(data) -> bool:
    """True if Redis would accept ``data`` as a long double (``string2ld``)."""
    cdef bytes b = bytes(data)
    cdef long double v
    return _parse_ld(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), &v)


cdef bytes _format_ld(long double value):
    """Redis's ``ld2string`` in human mode: ``%.17Lf`` without trailing zeros, no ``-0``."""
    cdef char buf[MAX_LD_CHARS]
    cdef int n = snprintf(buf, MAX_LD_CHARS, "%.17Lf", value)
    cdef int i
    if n < 0 or n >= MAX_LD_CHARS:
        return None
    for i in range(n):
        if buf[i] == b'.':
            while buf[n - 1] == b'0':
                n -= 1
            if buf[n - 1] == b'.':
                n -= 1
            break
    if n == 2 and buf[0] == b'-' and buf[1] == b'0':
        return b"0"
    return buf[:n]


def incrbyfloat(current, increment):
    """INCRBYFLOAT's arithmetic: (0, text) with the new value, or (1, None) if ``current``
    is not a valid float, (2, None) if ``increment`` is not, (3, None) for NaN/Infinity.

    ``current`` is the stored string or None for a missing key (zero).
    """
    cdef bytes a, b
    cdef long double value = 0, incr
    cdef bytes text
    if current is not None:
        a = bytes(current)
        if not _parse_ld(PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a), &value):
            return 1, None
    b = bytes(increment)
    if not _parse_ld(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), &incr):
        return 2, None
    value += incr
    if isnan(value) or isinf(value):
        return 3, None
    text = _format_ld(value)
    if text is None:
        return 3, None
    return 0, text


def lcs(a, b, bint want_string, bint want_ranges, long long min_len, bint with_len):
    """Redis's LCS: ``(length, lcs_string_or_None, ranges)``.

    ``ranges`` lists ``((a_start, a_end), (b_start, b_end), length)`` from the end of the
    strings backwards, as Redis emits them, filtered by ``min_len`` (0 = all).
    """
    cdef bytes sa = bytes(a), sb = bytes(b)
    cdef const unsigned char *pa = <const unsigned char *>PyBytes_AS_STRING(sa)
    cdef const unsigned char *pb = <const unsigned char *>PyBytes_AS_STRING(sb)
    cdef Py_ssize_t alen = PyBytes_GET_SIZE(sa), blen = PyBytes_GET_SIZE(sb)
    cdef Py_ssize_t width = blen + 1
    cdef Py_ssize_t i, j
    cdef uint32_t *table
    cdef uint32_t up, left, total, idx
    cdef bytearray result = None
    cdef list ranges = []
    cdef Py_ssize_t a_start, a_end = 0, b_start = 0, b_end = 0
    cdef bint in_range, emit
    cdef Py_ssize_t match_len
    table = <uint32_t *>malloc((alen + 1) * width * sizeof(uint32_t))
    if table == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(alen + 1):
                for j in range(blen + 1):
                    if i == 0 or j == 0:
                        table[i * width + j] = 0
                    elif pa[i - 1] == pb[j - 1]:
                        table[i * width + j] = table[(i - 1) * width + j - 1] + 1
                    else:
                        up = table[(i - 1) * width + j]
                        left = table[i * width + j - 1]
                        table[i * width + j] = up if up > left else left
        total = table[alen * width + blen]
        if not (want_string or want_ranges):
            return total, None, ranges
        result = bytearray(total)
        idx = total
        i, j = alen, blen
        in_range = False
        a_start = 0
        # walk back from the end; a run of matches on the diagonal is one range
        while i > 0 and j > 0:
            emit = False
            if pa[i - 1] == pb[j - 1]:
                result[idx - 1] = pa[i - 1]
                if not in_range:
                    in_range = True
                    a_start = a_end = i - 1
                    b_start = b_end = j - 1
                elif a_start == i and b_start == j:
                    a_start -= 1
                    b_start -= 1
                else:
                    emit = True
                if a_start == 0 or b_start == 0:
                    emit = True
                idx -= 1
                i -= 1
                j -= 1
            else:
                up = table[(i - 1) * width + j]
                left = table[i * width + j - 1]
                if up > left:
                    i -= 1
                else:
                    j -= 1
                if in_range:
                    emit = True
            if emit:
                match_len = a_end - a_start + 1
                if want_ranges and (min_len == 0 or match_len >= min_len):
                    ranges.append(((a_start, a_end), (b_start, b_end), match_len))
                in_range = False
        return total, (bytes(result) if want_string else None), ranges
    finally:
        free(table)
