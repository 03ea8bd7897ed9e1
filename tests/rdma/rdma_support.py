"""Test helpers for the RDMA suites (kept out of conftest.py so tests can import them)."""
from __future__ import annotations

import os

from pykv.testing import Server


def resp(*args: bytes | str | int) -> bytes:
    """A command as a RESP array of bulk strings."""
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def exchange(sock, payload: bytes, replies: int) -> bytes:
    """Send ``payload`` on ``sock`` (a socket or an RdmaSocket) and read until ``replies``
    complete replies arrived; the raw bytes."""
    import hiredis
    sock.sendall(payload)
    reader, raw, n = hiredis.Reader(), bytearray(), 0
    while n < replies:
        chunk = sock.recv(1 << 20)
        assert chunk, f"connection closed ({type(sock).__name__})"
        raw += chunk
        reader.feed(chunk)
        while reader.gets() is not False:
            n += 1
    return bytes(raw)


class RdmaServer(Server):
    """A pykv subprocess listening on TCP and RDMA (soft fabric) on the same port."""

    def __init__(self, fabric_dir: str, rx_size: int = 65536, keepalive: float = 0.5,
                 **kw) -> None:
        super().__init__(**kw)
        self.fabric_dir = fabric_dir
        self.extra_args += ["--listener", f"rdma,bind=127.0.0.1,port={self.port},"
                            f"rx-size={rx_size},keepalive={keepalive},backend=soft"]

    def start(self):
        os.environ["PYKV_SOFTRDMA_DIR"] = self.fabric_dir
        return super().start()
