# The decimal text of a C integer (Redis's ll2string), one digit loop for every compiled
# module that writes integers: the reply writer, the request parser's ll2bytes, the
# listpack's integer entries and its direct LRANGE replies, the Lua C entry's result
# framing. Defined inline here, so each cimporting module gets it inlined (no call).

cdef enum:
    LL_DIGITS_SIZE = 24  # the buffer ll_digits writes into: "-9223372036854775808" fits


cdef inline Py_ssize_t ll_digits(char *buf, long long value) noexcept nogil:
    """``value`` in decimal at the end of a ``LL_DIGITS_SIZE``-byte ``buf``; returns its
    length (the text starts at ``buf + LL_DIGITS_SIZE - length``)."""
    cdef unsigned long long v = <unsigned long long>value
    cdef char *p = buf + LL_DIGITS_SIZE
    if value < 0:
        v = 0 - v  # in unsigned arithmetic: right for LLONG_MIN too
    while True:
        p -= 1
        p[0] = <char>(48 + v % 10)
        v //= 10
        if v == 0:
            break
    if value < 0:
        p -= 1
        p[0] = 45  # '-'
    return buf + LL_DIGITS_SIZE - p
