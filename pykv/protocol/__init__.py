"""RESP: the request parser and the reply writer (compiled), and the reply value types."""
from pykv.protocol._parser import ProtocolError, RequestParser, split_args
from pykv.protocol._writer import encode_reply, format_double, write_reply
from pykv.protocol.types import (
    NULL_ARRAY,
    OK,
    PONG,
    QUEUED,
    BigNumber,
    ErrorReply,
    Push,
    RawReply,
    RespSet,
    SimpleString,
    Verbatim,
)

__all__ = [
    "NULL_ARRAY", "OK", "PONG", "QUEUED", "BigNumber", "ErrorReply", "ProtocolError", "Push",
    "RawReply", "RequestParser", "RespSet", "SimpleString", "Verbatim", "encode_reply",
    "format_double", "split_args", "write_reply",
]
