# cython: language_level=3
"""INCR/DECR/INCRBY/DECRBY's arithmetic in C: the stored decimal parsed, the delta added with
Redis's overflow test and the new decimal made, without an int object on the way (the reply
is then written from those digits in place, ``pykv.protocol._writer.write_integer_text``).

Redis parses the stored value with ``string2ll`` (so ``" 1"`` or ``"01"`` is not an integer)
and refuses a result outside 64 bits before it changes anything (``incrDecrCommand``).
"""
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.limits cimport LLONG_MAX, LLONG_MIN

from pykv.protocol._decimal cimport LL_DIGITS_SIZE, ll_digits
from pykv.protocol._parser cimport parse_ll

from pykv import errors

cdef object _NOT_INTEGER = errors.NOT_INTEGER
cdef object _INCR_OVERFLOW = errors.INCR_OVERFLOW
cdef object _WRONGTYPE = errors.WRONGTYPE


cdef inline bint _small_positive(const char *s, Py_ssize_t n, long long *out) noexcept:
    """1 to 18 digits without a leading zero (no sign, no overflow possible): the common
    counter, read without ``parse_ll``'s per-digit overflow test; False for anything else
    (``parse_ll`` then decides)."""
    cdef long long v = 0
    cdef Py_ssize_t i
    cdef unsigned int d
    if n == 0 or n > 18 or s[0] == b'0':
        return False
    for i in range(n):
        d = <unsigned char>s[i] - 48
        if d > 9:
            return False
        v = v * 10 + d
    out[0] = v
    return True


cpdef bytes counter_add(object value, long long delta):
    """The decimal text of ``value`` (a stored string, or None for a missing key: 0) plus
    ``delta``; WRONGTYPE for another type, NOT_INTEGER for a string ``string2ll`` rejects,
    INCR_OVERFLOW for a sum outside 64 bits."""
    cdef long long current = 0
    cdef bint ok
    cdef char buf[LL_DIGITS_SIZE]
    cdef Py_ssize_t n
    if value is not None:
        if type(value) is bytes:
            ok = _small_positive(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), &current) \
                or parse_ll(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), &current)
        elif type(value) is bytearray:
            ok = parse_ll(PyByteArray_AS_STRING(value), PyByteArray_GET_SIZE(value), &current)
        else:
            raise _WRONGTYPE
        if not ok:
            raise _NOT_INTEGER
        if (delta < 0 and current < 0 and delta < LLONG_MIN - current) or \
                (delta > 0 and current > 0 and delta > LLONG_MAX - current):
            raise _INCR_OVERFLOW
    n = ll_digits(buf, current + delta)
    return PyBytes_FromStringAndSize(buf + LL_DIGITS_SIZE - n, n)
