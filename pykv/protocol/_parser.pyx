# cython: language_level=3
"""The RESP request parser: bytes in, argv lists out (sans-IO, compiled with Cython).

It follows Redis 7.0's ``processMultibulkBuffer``/``processInlineBuffer`` to the byte,
including their quirks, because clients and tests observe them:

* count lines are found with ``strchr(..., '\\r')``: a NUL byte before the ``\\r`` hides it;
* the byte after ``\\r`` is never checked, and neither are the two bytes after a bulk;
* integers use ``string2ll`` rules: no ``+``, no leading zeros, no ``-0``;
* a count line longer than 64 KiB without ``\\r`` is a protocol error.

``get_command()`` hands out one command at a time so that the dispatcher can stop between
commands (a blocked client, ``CLIENT PAUSE``, a change of authentication state).
"""
from cpython.bytearray cimport (PyByteArray_AS_STRING, PyByteArray_FromStringAndSize,
                                 PyByteArray_GET_SIZE, PyByteArray_Resize)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.limits cimport INT_MAX, LLONG_MAX, ULLONG_MAX
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.string cimport memchr, memcmp

from pykv.protocol._bytebuf cimport bytearray_append, bytearray_empty
from pykv.protocol._decimal cimport LL_DIGITS_SIZE, ll_digits

DEF INLINE_MAX_SIZE = 65536
DEF KEEP_QUERY_ALLOC = 4096  # an emptied query buffer keeps this much for the next request
DEF ARGV_PREALLOC = 1024  # argument slots made before the arguments arrive (Redis's too)


class ProtocolError(Exception):
    """A request that Redis rejects with ``-ERR Protocol error: ...`` and then closes."""


cdef bint parse_ll(const char *s, Py_ssize_t n, long long *out) noexcept:
    """Redis's string2ll: strict decimal, no '+', no leading zeros, fits in long long."""
    cdef Py_ssize_t i = 0
    cdef bint neg = False
    cdef unsigned long long v = 0
    cdef unsigned int d
    if n == 0 or n > 20:
        return False
    if n == 1 and s[0] == b'0':
        out[0] = 0
        return True
    if s[0] == b'-':
        neg = True
        i = 1
        if n == 1:
            return False
    if s[i] < b'1' or s[i] > b'9':
        return False
    while i < n:
        d = <unsigned char>s[i] - 48
        if d > 9:
            return False
        if v > (ULLONG_MAX - d) / 10:
            return False
        v = v * 10 + d
        i += 1
    if neg:
        if v > <unsigned long long>LLONG_MAX + 1:
            return False
        out[0] = <long long>(0 - v)
    else:
        if v > <unsigned long long>LLONG_MAX:
            return False
        out[0] = <long long>v
    return True


cpdef object string2ll(object data):
    """Redis's ``string2ll`` for command arguments: the integer, or None if Redis rejects it
    (no '+', no spaces, no leading zeros, within 64 bits)."""
    cdef long long value
    cdef const unsigned char[:] view
    if type(data) is bytes:  # command arguments: read in place, no buffer view to build
        if parse_ll(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), &value):
            return value
        return None
    view = data
    if view.shape[0] == 0:
        return None
    if parse_ll(<const char *>&view[0], view.shape[0], &value):
        return value
    return None


cpdef bytes ll2bytes(long long value):
    """``b"%d" % value`` without the formatting machinery (Redis's ll2string)."""
    cdef char buf[LL_DIGITS_SIZE]
    cdef Py_ssize_t n = ll_digits(buf, value)
    return PyBytes_FromStringAndSize(buf + LL_DIGITS_SIZE - n, n)


cdef Py_ssize_t find_cr(const char *p, Py_ssize_t start, Py_ssize_t end) noexcept:
    """strchr(p + start, '\\r') bounded by end: -1 when absent or hidden by a NUL."""
    cdef Py_ssize_t i = start
    cdef char c
    while i < end:
        c = p[i]
        if c == b'\r':
            return i
        if c == 0:
            return -1
        i += 1
    return -1


cdef inline Py_ssize_t quick_len(const char *p, Py_ssize_t i, Py_ssize_t end,
                                 long long *out) noexcept:
    """A length line's digits from ``i``: the index of its '\r' when they are 1 to 18
    plain digits without a leading zero (``0`` alone is fine) and the byte after the '\r'
    has arrived, storing the value; -1 for anything else (the exact path decides)."""
    cdef Py_ssize_t start = i
    cdef long long v = 0
    cdef unsigned int d
    while i < end:
        d = <unsigned char>p[i] - 48
        if d > 9:
            break
        v = v * 10 + d
        i += 1
        if i - start > 18:
            return -1
    if i == start or i + 1 >= end or p[i] != b'\r':
        return -1
    if p[start] == b'0' and i - start > 1:
        return -1
    out[0] = v
    return i


cdef inline bint is_space(char c) noexcept:
    return c == b' ' or c == b'\n' or c == b'\r' or c == b'\t' or c == b'\v' or c == b'\f'


cdef inline bint ends_word(char c) noexcept:
    # sdssplitargs skips blanks with isspace() but ends an unquoted word only on these:
    # "a\vb" is one argument
    return c == b' ' or c == b'\n' or c == b'\r' or c == b'\t'


cdef inline int hex_digit(char c) noexcept:
    if b'0' <= c <= b'9':
        return c - 48
    if b'a' <= c <= b'f':
        return c - 87
    if b'A' <= c <= b'F':
        return c - 55
    return -1


cpdef list split_args(bytes line):
    """Redis's sdssplitargs: the inline-command and config-file tokenizer.

    Returns None for unbalanced quotes (or a closing quote not followed by a space).
    """
    return _split(line, len(line))


cdef list _split(const char *p, Py_ssize_t n):
    """``split_args`` over ``n`` bytes at ``p``."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t start
    cdef list out = []
    cdef bytearray cur
    cdef bint inq, insq, done
    cdef char c
    cdef int h1, h2
    while True:
        while i < n and is_space(p[i]):
            i += 1
        if i >= n:
            return out
        # a plain word (no quote in it: the common case) is one copy out of the line
        start = i
        while i < n and not ends_word(p[i]) and p[i] != b'"' and p[i] != b"'":
            i += 1
        if i >= n or ends_word(p[i]):
            out.append(PyBytes_FromStringAndSize(p + start, i - start))
            if i < n:
                i += 1
            continue
        cur = PyByteArray_FromStringAndSize(p + start, i - start)
        inq = insq = done = False
        while not done:
            if inq:
                if i >= n:
                    return None
                c = p[i]
                if c == b'\\' and i + 3 < n + 0 and p[i + 1] == b'x' and hex_digit(p[i + 2]) >= 0 and hex_digit(p[i + 3]) >= 0:
                    h1 = hex_digit(p[i + 2])
                    h2 = hex_digit(p[i + 3])
                    cur.append(h1 * 16 + h2)
                    i += 3
                elif c == b'\\' and i + 1 < n:
                    i += 1
                    c = p[i]
                    if c == b'n':
                        cur.append(10)
                    elif c == b'r':
                        cur.append(13)
                    elif c == b't':
                        cur.append(9)
                    elif c == b'b':
                        cur.append(8)
                    elif c == b'a':
                        cur.append(7)
                    else:
                        cur.append(<unsigned char>c)
                elif c == b'"':
                    if i + 1 < n and not is_space(p[i + 1]):
                        return None
                    done = True
                else:
                    cur.append(<unsigned char>c)
            elif insq:
                if i >= n:
                    return None
                c = p[i]
                if c == b'\\' and i + 1 < n and p[i + 1] == b"'":
                    i += 1
                    cur.append(39)
                elif c == b"'":
                    if i + 1 < n and not is_space(p[i + 1]):
                        return None
                    done = True
                else:
                    cur.append(<unsigned char>c)
            else:
                if i >= n:
                    done = True
                    break
                c = p[i]
                if ends_word(c):
                    done = True
                elif c == b'"':
                    inq = True
                elif c == b"'":
                    insq = True
                else:
                    cur.append(<unsigned char>c)
            if i < n:
                i += 1
        out.append(PyBytes_FromStringAndSize(PyByteArray_AS_STRING(cur),
                                             PyByteArray_GET_SIZE(cur)))


cdef class RequestParser:
    """Accumulates client bytes and yields commands one at a time (fields: _parser.pxd)."""

    def __cinit__(self, long long max_bulk_len=512 * 1024 * 1024):
        self.buf = bytearray()
        self.pos = 0
        self.multibulklen = 0
        self.bulklen = -1
        self.argv = None
        self.max_bulk_len = max_bulk_len
        self.auth_required = False

    cpdef feed(self, data):
        """Append ``data``: ``bytes`` (a transport's read) or any contiguous buffer (RDMA
        hands a view of its receive window, valid during this call only)."""
        cdef const unsigned char[::1] view
        if type(data) is bytes:
            self.feed_raw(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
            return
        view = data
        if view.shape[0]:
            self.feed_raw(<const char *>&view[0], view.shape[0])

    cdef int feed_raw(self, const char *data, Py_ssize_t n) except -1:
        """Append ``n`` bytes at ``data`` (a socket read, pykv.net._readmux): C calls
        only, in the buffer's own allocation while it has room."""
        self._drop_consumed()
        return bytearray_append(self.buf, data, n)

    cdef int _drop_consumed(self) except -1:
        """Once every byte received is consumed, start the buffer over: emptied in place
        (a big one, left by a big argument or pipeline, is given back)."""
        if self.pos and self.pos == PyByteArray_GET_SIZE(self.buf):
            self.pos = 0
            if not bytearray_empty(self.buf, KEEP_QUERY_ALLOC):
                PyByteArray_Resize(self.buf, 0)
        return 0

    cpdef Py_ssize_t buffered(self):
        """Bytes received and not yet consumed (what Redis counts as the query buffer)."""
        return PyByteArray_GET_SIZE(self.buf) - self.pos

    cpdef tuple mem_state(self):
        """What Redis's client memory figures need (CLIENT LIST, client eviction): the
        query buffer's length (consumed bytes of this read batch included, as Redis trims
        them after the batch), the pending bulk's announced length (-1 if none), and the
        count and total length of the arguments of a command parsed only in part."""
        cdef Py_ssize_t argv_len = 0
        cdef Py_ssize_t argc = 0
        cdef Py_ssize_t i
        if self.argv is not None:
            argc = self.argc
            for i in range(argc):
                argv_len += PyBytes_GET_SIZE(<bytes><object>PyList_GET_ITEM(self.argv, i))
        return (PyByteArray_GET_SIZE(self.buf),
                self.bulklen if self.multibulklen else -1, argc, argv_len)

    cpdef bytes peek(self, Py_ssize_t n):
        """The first ``n`` unconsumed bytes (for log lines)."""
        return bytes(self.buf[self.pos:self.pos + n])

    cpdef compact(self):
        self._drop_consumed()  # (all consumed: the usual end of a batch)
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0

    cpdef reset(self):
        del self.buf[:]
        self.pos = 0
        self.multibulklen = 0
        self.bulklen = -1
        self.argv = None

    cpdef object get_command(self):
        """The next complete command as a list of bytes, or None if more bytes are needed.

        Empty inline lines and ``*0``/``*-1`` headers are skipped, as Redis skips them.
        Raises ProtocolError with the text Redis replies (without the ``ERR`` prefix).
        """
        cdef list argv
        while True:
            if self.pos >= PyByteArray_GET_SIZE(self.buf):
                return None
            if self.multibulklen == 0 and self.argv is None:
                if PyByteArray_AS_STRING(self.buf)[self.pos] == b'*':
                    argv = self._multibulk()
                else:
                    argv = self._inline()
            else:
                argv = self._multibulk()
            if argv is None:
                return None
            if len(argv):
                return argv

    cdef list _inline(self):
        cdef const char *p = PyByteArray_AS_STRING(self.buf)
        cdef Py_ssize_t end = PyByteArray_GET_SIZE(self.buf)
        cdef const char *nl = <const char *>memchr(p + self.pos, b'\n', end - self.pos)
        cdef Py_ssize_t i
        cdef Py_ssize_t k
        cdef Py_ssize_t line_end
        cdef list args
        # strchr semantics: a NUL byte before the newline hides it
        if nl != NULL:
            k = nl - p
            for i in range(self.pos, k):
                if p[i] == 0:
                    nl = NULL
                    break
        if nl == NULL:
            if end - self.pos > INLINE_MAX_SIZE:
                raise ProtocolError("Protocol error: too big inline request")
            return None
        line_end = nl - p
        if line_end - self.pos > INLINE_MAX_SIZE:
            # Redis checks only a buffer without a newline, so whether it saw the line
            # before its end arrived depends on its reads; pykv refuses every line that
            # Redis can refuse, whatever the chunking
            raise ProtocolError("Protocol error: too big inline request")
        if line_end > self.pos and p[line_end - 1] == b'\r':
            line_end -= 1
        args = _split(p + self.pos, line_end - self.pos)
        if args is None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        self.pos = (nl - p) + 1
        return args

    cdef bytes _name(self, const char *p, Py_ssize_t n):
        """A command name: the previous command's object when the bytes repeat (pipelines
        repeat one name), so its hash is already cached and the command table lookup
        matches it by identity."""
        cdef bytes last = self.last_name
        if last is not None and PyBytes_GET_SIZE(last) == n \
                and memcmp(PyBytes_AS_STRING(last), p, n) == 0:
            return last
        last = PyBytes_FromStringAndSize(p, n)
        self.last_name = last
        return last

    cdef Py_ssize_t _line_end(self, const char *p, Py_ssize_t end, str too_big) except -2:
        """The '\\r' ending the count line at ``pos`` once it and the byte after it are
        here (-1 until then); a line longer than Redis accepts raises ``too_big``."""
        cdef Py_ssize_t nl = find_cr(p, self.pos, end)
        if nl < 0:
            if end - self.pos > INLINE_MAX_SIZE:
                raise ProtocolError(too_big)
            return -1
        if nl - self.pos > end - self.pos - 2:
            return -1
        return nl

    cdef list _multibulk(self):
        cdef const char *p = PyByteArray_AS_STRING(self.buf)
        cdef Py_ssize_t end = PyByteArray_GET_SIZE(self.buf)
        cdef Py_ssize_t nl
        cdef long long ll
        cdef list argv
        cdef bytes arg
        if self.multibulklen == 0:
            nl = quick_len(p, self.pos + 1, end, &ll)  # get_command saw the '*'
            if nl < 0:
                nl = self._line_end(p, end, "Protocol error: too big mbulk count string")
                if nl < 0:
                    return None
                if not parse_ll(p + self.pos + 1, nl - self.pos - 1, &ll):
                    raise ProtocolError("Protocol error: invalid multibulk length")
            if ll > INT_MAX:
                raise ProtocolError("Protocol error: invalid multibulk length")
            if ll > 10 and self.auth_required:
                raise ProtocolError("Protocol error: unauthenticated multibulk length")
            self.pos = nl + 2
            if ll <= 0:
                return []
            self.multibulklen = ll
            # (sized for its arguments up front, as Redis allocates argv: slots filled as
            # they arrive, ``argc`` of them so far; at most 1024 before they do arrive)
            self.argv = PyList_New(ll if ll <= ARGV_PREALLOC else ARGV_PREALLOC)
            self.argc = 0
            self.bulklen = -1
        while self.multibulklen:
            if self.bulklen == -1:
                # the common shape first: '$', plain digits, '\r' and the byte after it here
                nl = quick_len(p, self.pos + 1, end, &ll) if p[self.pos] == b'$' else -1
                if nl < 0:
                    nl = self._line_end(p, end, "Protocol error: too big bulk count string")
                    if nl < 0:
                        return None
                    if p[self.pos] != b'$':
                        raise ProtocolError(
                            "Protocol error: expected '$', got '%s'"
                            % chr(<unsigned char>p[self.pos]))
                    if not parse_ll(p + self.pos + 1, nl - self.pos - 1, &ll):
                        raise ProtocolError("Protocol error: invalid bulk length")
                if ll < 0 or ll > self.max_bulk_len:
                    raise ProtocolError("Protocol error: invalid bulk length")
                if ll > 16384 and self.auth_required:
                    raise ProtocolError("Protocol error: unauthenticated bulk length")
                self.pos = nl + 2
                self.bulklen = ll
            if end - self.pos < self.bulklen + 2:
                return None
            if self.argc == 0:
                arg = self._name(p + self.pos, self.bulklen)
            else:
                arg = PyBytes_FromStringAndSize(p + self.pos, self.bulklen)
            if self.argc < PyList_GET_SIZE(self.argv):
                Py_INCREF(arg)  # (SET_ITEM steals a reference)
                PyList_SET_ITEM(self.argv, self.argc, arg)
            else:
                self.argv.append(arg)
            self.argc += 1
            self.pos += self.bulklen + 2
            self.bulklen = -1
            self.multibulklen -= 1
        argv = self.argv
        self.argv = None
        return argv
