# cython: language_level=3
"""The RESP reply writer: Python reply values in, RESP2 or RESP3 bytes out (Cython).

Commands return plain values and the writer picks the wire shape for the client's protocol,
the way Redis's ``addReply*`` family does:

=====================  =========================  ===========================
value                  RESP2                      RESP3
=====================  =========================  ===========================
bytes / bytearray      ``$n`` bulk                ``$n`` bulk
int                    ``:n``                     ``:n``
None                   ``$-1``                    ``_``
NULL_ARRAY             ``*-1``                    ``_``
list / tuple           ``*n``                     ``*n``
dict                   ``*2n`` flattened          ``%n`` map
RespSet                ``*n``                     ``~n``
Push                   ``*n``                     ``>n``
float                  bulk ``%.17g``             ``,%.17g``
bool                   ``:1`` / ``:0``            ``#t`` / ``#f``
SimpleString           ``+s``                     ``+s``
ErrorReply             ``-s``                     ``-s``
Verbatim               bulk (text only)           ``=n`` with its format
BigNumber              bulk                       ``(n``
RawReply               as is                      as is
=====================  =========================  ===========================
"""
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.math cimport isinf, isnan
from libc.string cimport memcpy

from pykv.protocol._decimal cimport LL_DIGITS_SIZE, ll_digits

from pykv.protocol.types import (
    NULL_ARRAY,
    BigNumber,
    ErrorReply,
    Push,
    RawReply,
    RespSet,
    SimpleString,
    Verbatim,
)

cdef object _NULL_ARRAY = NULL_ARRAY
cdef type _ErrorReply = ErrorReply
cdef type _SimpleString = SimpleString
cdef type _RespSet = RespSet
cdef type _Push = Push
cdef type _RawReply = RawReply
cdef type _Verbatim = Verbatim
cdef type _BigNumber = BigNumber


cdef extern from "Python.h":
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_alloc


cdef inline char *_grow(bytearray out, Py_ssize_t n) except NULL:
    """Make room for ``n`` more bytes at the end of ``out``; return where they go.

    Appending reply after reply into one buffer must be amortised O(1) without building
    intermediate bytes objects. ``PyByteArray_Resize`` over-allocates only by 1/8, and
    not at all for a jump past that (it then allocates the exact size), so a batch of large
    replies would be re-allocated — and copied — at every append: past the allocation,
    the buffer grows to at least twice its size (then shrinks its logical size, which
    CPython does in place).
    """
    cdef Py_ssize_t old = PyByteArray_GET_SIZE(out)
    cdef Py_ssize_t want = old + n
    if want >= (<PyByteArrayObject *>out).ob_alloc and want < 2 * old:
        PyByteArray_Resize(out, 2 * old)
    PyByteArray_Resize(out, want)
    return PyByteArray_AS_STRING(out) + old


cdef inline void _header(bytearray out, char prefix, long long n) except *:
    """``<prefix><n>\\r\\n`` (array, map, set, integer and bulk headers)."""
    cdef char buf[LL_DIGITS_SIZE]
    cdef Py_ssize_t k = ll_digits(buf, n)
    cdef char *dst = _grow(out, k + 3)
    dst[0] = prefix
    memcpy(dst + 1, buf + LL_DIGITS_SIZE - k, k)
    dst[k + 1] = b'\r'
    dst[k + 2] = b'\n'


cdef inline void _bulk_ptr(bytearray out, const char *data, Py_ssize_t n) except *:
    cdef char buf[LL_DIGITS_SIZE]
    cdef Py_ssize_t k = ll_digits(buf, n)
    cdef char *dst = _grow(out, k + n + 5)
    dst[0] = b'$'
    memcpy(dst + 1, buf + LL_DIGITS_SIZE - k, k)
    dst[k + 1] = b'\r'
    dst[k + 2] = b'\n'
    memcpy(dst + k + 3, data, n)
    dst[k + n + 3] = b'\r'
    dst[k + n + 4] = b'\n'


cdef inline void _line(bytearray out, char prefix, bytes text) except *:
    """``<prefix><text>\\r\\n`` (simple strings, errors, doubles, big numbers)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(text)
    cdef char *dst = _grow(out, n + 3)
    dst[0] = prefix
    memcpy(dst + 1, PyBytes_AS_STRING(text), n)
    dst[n + 1] = b'\r'
    dst[n + 2] = b'\n'


cdef inline void _raw(bytearray out, bytes data) except *:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    memcpy(_grow(out, n), PyBytes_AS_STRING(data), n)


cdef void append_raw(bytearray out, bytes data) except *:
    """Append ``data``, a reply already encoded (QUEUED, an array header), to ``out``."""
    _raw(out, data)


cdef void append_encoded(bytearray out, bytearray data) except *:
    """Append ``data``, replies already encoded (one pub/sub message for many subscribers),
    to ``out`` with the writer's amortised growth."""
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(data)
    memcpy(_grow(out, n), PyByteArray_AS_STRING(data), n)


cpdef bytes format_double(double d):
    """Redis 7.0's ``%.17g`` rendering of a double (as used for replies and INCRBYFLOAT)."""
    if isinf(d):
        return b"inf" if d > 0 else b"-inf"
    if isnan(d):
        return b"nan"
    return b"%.17g" % d


cdef inline void _bulk(bytearray out, object data) except *:
    if type(data) is bytes:
        _bulk_ptr(out, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    else:  # bytearray
        _bulk_ptr(out, PyByteArray_AS_STRING(data), PyByteArray_GET_SIZE(data))


cdef void _double(bytearray out, double d, int resp) except *:
    cdef bytes text = format_double(d)
    if resp == 3:
        _line(out, b',', text)
    else:
        _bulk(out, text)


cpdef void write_reply(bytearray out, object v, int resp) except *:
    """Append the RESP encoding of ``v`` for protocol ``resp`` (2 or 3) to ``out``."""
    cdef type t = type(v)
    cdef object item
    if t is bytes:
        _bulk_ptr(out, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
    elif t is bytearray:
        _bulk_ptr(out, PyByteArray_AS_STRING(v), PyByteArray_GET_SIZE(v))
    elif t is int:
        try:
            _header(out, b':', v)
        except OverflowError:  # beyond 64 bits (never from Redis commands)
            _line(out, b':', b"%d" % v)
    elif t is _SimpleString:
        _line(out, b'+', (<object>v).data)
    elif t is list or t is tuple:
        _header(out, b'*', len(v))
        for item in v:
            write_reply(out, item, resp)
    elif v is None:
        _raw(out, b"_\r\n" if resp == 3 else b"$-1\r\n")
    elif t is _ErrorReply:
        _line(out, b'-', (<object>v).data)
    elif t is _RawReply:
        _raw(out, (<object>v).data)
    elif t is float:
        _double(out, v, resp)
    elif t is dict:
        if resp == 3:
            _header(out, b'%', len(v))
        else:
            _header(out, b'*', 2 * len(v))
        for key, item in (<dict>v).items():
            write_reply(out, key, resp)
            write_reply(out, item, resp)
    elif t is _RespSet:
        _header(out, b'~' if resp == 3 else b'*', len(v))
        for item in v:
            write_reply(out, item, resp)
    elif t is bool:
        if resp == 3:
            _raw(out, b"#t\r\n" if v else b"#f\r\n")
        else:
            _raw(out, b":1\r\n" if v else b":0\r\n")
    elif v is _NULL_ARRAY:
        _raw(out, b"_\r\n" if resp == 3 else b"*-1\r\n")
    elif t is _Push:
        _header(out, b'>' if resp == 3 else b'*', len(v))
        for item in v:
            write_reply(out, item, resp)
    elif t is _Verbatim:
        if resp == 3:
            _header(out, b'=', len((<object>v).data) + 4)
            _raw(out, (<object>v).fmt)
            _raw(out, b":")
            _raw(out, bytes((<object>v).data))
            _raw(out, b"\r\n")
        else:
            _bulk(out, (<object>v).data)
    elif t is _BigNumber:
        if resp == 3:
            _line(out, b'(', (<object>v).data)
        else:
            _bulk(out, (<object>v).data)
    elif isinstance(v, int):  # IntEnum and friends
        write_reply(out, int(v), resp)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        write_reply(out, bytes(v), resp)
    elif isinstance(v, (list, tuple)):
        write_reply(out, list(v), resp)
    else:
        raise TypeError(f"cannot encode reply of type {t.__name__}")


def encode_reply(object v, int resp=2) -> bytes:
    """Convenience for tests and one-off replies: the encoding as ``bytes``."""
    cdef bytearray out = bytearray()
    write_reply(out, v, resp)
    return bytes(out)


# -- in place, for compiled commands that write their reply themselves ---------------------
cpdef int write_integer_reply(bytearray out, long long value) except -1:
    """``:<value>\\r\\n`` (a push's new length, without an int object)."""
    _header(out, b':', value)
    return 0


cpdef int write_integer_text(bytearray out, bytes digits) except -1:
    """``:<digits>\\r\\n`` from a canonical decimal already made (INCR's stored value)."""
    _line(out, b':', digits)
    return 0
