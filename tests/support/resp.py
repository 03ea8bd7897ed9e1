"""A raw RESP client for byte-exact tests: sends argv, returns each reply's exact bytes."""
from __future__ import annotations

import socket


def encode_command(*args: bytes | str | int) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            arg = arg.encode()
        elif isinstance(arg, int):
            arg = b"%d" % arg
        parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(parts)


class RawClient:
    """Reads whole RESP2/RESP3 replies as raw bytes (framing only, no decoding)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, unix: str | None = None,
                 timeout: float = 10.0) -> None:
        if unix:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unix)
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, *args) -> bytes:
        self.send_raw(encode_command(*args))
        return self.read_reply()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def _line_end(self, pos: int) -> int:
        while True:
            idx = self.buf.find(b"\r\n", pos)
            if idx >= 0:
                return idx
            self._fill()

    def _skip(self, pos: int) -> int:
        """Position just after the reply starting at ``pos``."""
        while len(self.buf) <= pos:
            self._fill()
        t = self.buf[pos:pos + 1]
        end = self._line_end(pos)
        head = self.buf[pos + 1:end]
        pos = end + 2
        if t in b"$=!":
            n = int(head)
            if n < 0:
                return pos
            while len(self.buf) < pos + n + 2:
                self._fill()
            return pos + n + 2
        if t in b"*~>":
            n = int(head)
            for _ in range(max(n, 0)):
                pos = self._skip(pos)
            return pos
        if t in b"%|":
            for _ in range(2 * int(head)):
                pos = self._skip(pos)
            if t == b"|":
                pos = self._skip(pos)
            return pos
        return pos  # + - : _ , # (

    def read_reply(self) -> bytes:
        end = self._skip(0)
        reply, self.buf = self.buf[:end], self.buf[end:]
        return reply

    def read_until_closed(self) -> bytes:
        """Everything the server sends until it closes the connection."""
        data = self.buf
        self.buf = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except (ConnectionResetError, TimeoutError, OSError):
                return data
            if not chunk:
                return data
            data += chunk


# -- decoding replies into values, for comparisons the order or the clock can change --------

class Error(str):
    """A decoded error reply."""


class RespSet(list):
    """A RESP3 set (``~``): equal only to another set, never to an array with the same items."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return f"~{list.__repr__(self)}"


class Push(RespSet):
    """A RESP3 push (``>``): equal only to another push."""

    def __repr__(self) -> str:
        return f">{list.__repr__(self)}"


class _Null:
    """The nulls RESP2 tells apart: a null bulk string (``$-1``) is not a null array (``*-1``);
    RESP3's one null (``_``) decodes as None."""

    def __init__(self, wire: str) -> None:
        self.wire = wire

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return self.wire


NULL_BULK = _Null("$-1")
NULL_ARRAY = _Null("*-1")


def parse(data: bytes):
    """Decode exactly one whole reply: bulk/simple strings as bytes, integers as int, arrays as
    lists, sets as RespSet, pushes as Push, maps as ``("map", [(k, v), ...])`` (order kept),
    doubles as float, errors as Error."""
    value, end = _parse(data, 0)
    assert end == len(data), f"trailing bytes in {data!r}"
    return value


def _parse(data: bytes, pos: int):
    t = data[pos:pos + 1]
    end = data.index(b"\r\n", pos)
    head = data[pos + 1:end]
    pos = end + 2
    if t in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return NULL_BULK, pos
        body = data[pos:pos + n]
        return (Error(body.decode()) if t == b"!" else body), pos + n + 2
    if t in (b"*", b"~", b">"):
        n = int(head)
        if n < 0:
            return NULL_ARRAY, pos
        out = []
        for _ in range(n):
            item, pos = _parse(data, pos)
            out.append(item)
        return {b"*": list, b"~": RespSet, b">": Push}[t](out), pos
    if t in (b"%", b"|"):
        out_map = []
        for _ in range(int(head)):
            k, pos = _parse(data, pos)
            v, pos = _parse(data, pos)
            out_map.append((k, v))
        if t == b"|":  # an attribute precedes the reply it describes
            value, pos = _parse(data, pos)
            return ("attr", out_map, value), pos
        return ("map", out_map), pos
    if t in (b":", b"("):
        return int(head), pos
    if t == b"_":
        return None, pos
    if t == b"-":
        return Error(head.decode()), pos
    if t == b"+":
        return head, pos
    if t == b",":
        return float(head), pos
    if t == b"#":
        return head == b"t", pos
    raise AssertionError(f"unknown reply type {t!r}")
