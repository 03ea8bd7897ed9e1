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
from libc.math cimport isinf, isnan

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

# small integers are common (counts, booleans, lengths): pre-encode them
cdef list _INT_CACHE = [b":%d\r\n" % i for i in range(-1, 1025)]


cpdef bytes format_double(double d):
    """Redis 7.0's ``%.17g`` rendering of a double (as used for replies and INCRBYFLOAT)."""
    if isinf(d):
        return b"inf" if d > 0 else b"-inf"
    if isnan(d):
        return b"nan"
    return b"%.17g" % d


cdef inline void _bulk(bytearray out, object data):
    out += b"$%d\r\n" % len(data)
    out += data
    out += b"\r\n"


cdef void _double(bytearray out, double d, int resp):
    cdef bytes text = format_double(d)
    if resp == 3:
        out += b","
        out += text
        out += b"\r\n"
    else:
        _bulk(out, text)


cpdef void write_reply(bytearray out, object v, int resp):
    """Append the RESP encoding of ``v`` for protocol ``resp`` (2 or 3) to ``out``."""
    cdef type t = type(v)
    cdef long long n
    if t is bytes or t is bytearray:
        _bulk(out, v)
    elif t is int:
        if -1 <= v <= 1023:
            out += <bytes>_INT_CACHE[<long long>v + 1]
        else:
            out += b":%d\r\n" % v
    elif t is _SimpleString:
        out += b"+"
        out += (<object>v).data
        out += b"\r\n"
    elif t is list or t is tuple:
        out += b"*%d\r\n" % len(v)
        for item in v:
            write_reply(out, item, resp)
    elif v is None:
        out += b"_\r\n" if resp == 3 else b"$-1\r\n"
    elif t is _ErrorReply:
        out += b"-"
        out += (<object>v).data
        out += b"\r\n"
    elif t is _RawReply:
        out += (<object>v).data
    elif t is float:
        _double(out, v, resp)
    elif t is dict:
        if resp == 3:
            out += b"%%%d\r\n" % len(v)
        else:
            out += b"*%d\r\n" % (2 * len(v))
        for key, item in (<dict>v).items():
            write_reply(out, key, resp)
            write_reply(out, item, resp)
    elif t is _RespSet:
        out += (b"~%d\r\n" if resp == 3 else b"*%d\r\n") % len(v)
        for item in v:
            write_reply(out, item, resp)
    elif t is bool:
        if resp == 3:
            out += b"#t\r\n" if v else b"#f\r\n"
        else:
            out += b":1\r\n" if v else b":0\r\n"
    elif v is _NULL_ARRAY:
        out += b"_\r\n" if resp == 3 else b"*-1\r\n"
    elif t is _Push:
        out += (b">%d\r\n" if resp == 3 else b"*%d\r\n") % len(v)
        for item in v:
            write_reply(out, item, resp)
    elif t is _Verbatim:
        if resp == 3:
            n = len((<object>v).data) + 4
            out += b"=%d\r\n" % n
            out += (<object>v).fmt
            out += b":"
            out += (<object>v).data
            out += b"\r\n"
        else:
            _bulk(out, (<object>v).data)
    elif t is _BigNumber:
        if resp == 3:
            out += b"("
            out += (<object>v).data
            out += b"\r\n"
        else:
            _bulk(out, (<object>v).data)
    elif isinstance(v, int):  # IntEnum and friends
        out += b":%d\r\n" % v
    elif isinstance(v, (bytes, bytearray, memoryview)):
        _bulk(out, bytes(v))
    elif isinstance(v, (list, tuple)):
        write_reply(out, list(v), resp)
    else:
        raise TypeError(f"cannot encode reply of type {t.__name__}")


def encode_reply(object v, int resp=2) -> bytes:
    """Convenience for tests and one-off replies: the encoding as ``bytes``."""
    cdef bytearray out = bytearray()
    write_reply(out, v, resp)
    return bytes(out)
