"""Reply value types: how a command says "this is a status, an error, a set, a push…".

Plain Python values cover most replies (bytes, int, None, list, dict, float, bool); these
small wrappers cover the rest. The writer (``_writer.pyx``) turns them into RESP2 or RESP3.
"""
from __future__ import annotations


class SimpleString:
    """A ``+status`` reply such as ``+OK``."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimpleString) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"SimpleString({self.data!r})"


class ErrorReply(Exception):
    """A ``-PREFIX message`` reply. Raise it from a command or return it.

    ``data`` is the full text after the ``-`` (e.g. ``b"ERR syntax error"``); trailing CR and
    LF are dropped and the others replaced by spaces, as Redis's addReplyErrorFormat does, so
    an error can never break the protocol.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if b"\r" in data or b"\n" in data:
            data = data.rstrip(b"\r\n").replace(b"\r", b" ").replace(b"\n", b" ")
        self.data = data
        super().__init__(data)

    @property
    def code(self) -> bytes:
        """The error code Redis counts in ``INFO errorstats`` (the first word)."""
        return self.data.split(b" ", 1)[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ErrorReply) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"ErrorReply({self.data!r})"


class RespSet(list):
    """An unordered collection: ``~`` in RESP3, an array in RESP2 (order as given)."""

    __slots__ = ()


class Push(list):
    """An out-of-band push (pub/sub messages, invalidations): ``>`` in RESP3."""

    __slots__ = ()


class Verbatim:
    """A verbatim string (``=``) such as INFO's ``txt`` reply in RESP3."""

    __slots__ = ("fmt", "data")

    def __init__(self, data: bytes, fmt: bytes = b"txt") -> None:
        self.fmt = fmt
        self.data = data


class BigNumber:
    """A RESP3 big number (``(``); a bulk string in RESP2."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class RawReply:
    """Bytes already in RESP form, written as they are."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class _NullArray:
    """``*-1`` in RESP2 (a null multi-bulk), ``_`` in RESP3."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY = _NullArray()
OK = SimpleString(b"OK")
PONG = SimpleString(b"PONG")
QUEUED = SimpleString(b"QUEUED")
