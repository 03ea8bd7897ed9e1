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
