"""The Python RDMA client: a blocking byte stream over the Valkey protocol.

Follows libvalkey's client logic: a 1 MiB RX window announced as soon as the connection is
ESTABLISHED, writes that fill whatever room the server's window has left (partial writes),
a re-announcement only when our window was entirely consumed, Keepalives ignored, and any
other opcode (or a receive that is not 32 bytes) fatal. ``RdmaSocket`` looks enough like a
socket (``sendall``, ``recv``, ``recv_into``, ``settimeout``, ``fileno``, ``pending``,
``close``) for redis-py's parsers; ``pykv.rdma.redis_py`` wraps it as a redis-py
``Connection``.
"""
from __future__ import annotations

import select
import socket
import time

from pykv.rdma import verbs as v
from pykv.rdma.endpoint import Endpoint
from pykv.rdma.session import CLIENT

CLIENT_RX_SIZE = 1024 * 1024
_MSG_PEEK = int(socket.MSG_PEEK)   # an int: enum arithmetic per recv() is measurable


class RdmaError(ConnectionError):
    """The RDMA connection failed (the message says why, libvalkey style)."""


class RdmaSocket:
    """A connected RDMA client stream with socket-like blocking methods."""

    def __init__(self, host: str, port: int, *, timeout: float | None = None,
                 connect_timeout: float | None = 10.0, backend: v.Backend | str | None = None,
                 rx_size: int = CLIENT_RX_SIZE, rnr_retry: int = 7) -> None:
        self.host, self.port = host, port
        self._timeout = timeout
        self._buf = bytearray()
        self._eof = False
        self._closed = False
        self.endpoint: Endpoint | None = None
        be = backend if isinstance(backend, v.Backend) else v.get_backend(backend)

        def prepare(qp: v.QueuePair) -> None:
            self.endpoint = Endpoint(qp, CLIENT, rx_size, self._buf.extend)
            self.endpoint.post_receives()

        kwargs = {"rnr_retry": rnr_retry} if be.name == "soft" else {}
        self.qp = be.connect(host, port, connect_timeout or 3600.0, prepare, **kwargs)
        assert self.endpoint is not None
        err = self.endpoint.established(time.monotonic())
        if err:
            self.close()
            raise RdmaError(err)

    # -- socket-like API -----------------------------------------------------------------
    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def gettimeout(self) -> float | None:
        return self._timeout

    def setsockopt(self, *args: object) -> None:
        pass

    def fileno(self) -> int:
        aux = self.qp.aux_fds()
        return aux[0] if aux else self.qp.comp_fd

    def getsockname(self) -> tuple[str, int]:
        host, _, port = self.qp.local_address.rpartition(":")
        return host, int(port or 0)

    def getpeername(self) -> tuple[str, int]:
        return self.host, self.port

    def pending(self) -> int:
        return len(self._buf)

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        ep = self._live()
        # the session may keep a reference while the server's window is full: own the bytes
        self._check(ep.write(data if type(data) is bytes else bytes(data)))
        if ep.session.pending_bytes:
            deadline = self._deadline()
            # block while the server's window is full (libvalkey: "waiting for TX window")
            while ep.session.pending_bytes:
                self._wait(deadline, "RDMA: IO timeout")

    send = sendall

    def recv(self, n: int, flags: int = 0) -> bytes:
        buf = self._buf
        peek = flags & _MSG_PEEK
        if not buf and not self._eof:
            if peek:
                try:
                    self._fill(time.monotonic())
                except (TimeoutError, BlockingIOError):
                    raise BlockingIOError("no data yet") from None
            else:
                self._fill(self._deadline())
        if n >= len(buf):
            out = bytes(buf)
            if not peek:
                buf.clear()
            return out
        out = bytes(memoryview(buf)[:n])
        if not peek:
            del buf[:n]
        return out

    def recv_into(self, buffer: bytearray | memoryview, nbytes: int = 0, flags: int = 0) -> int:
        n = nbytes or len(buffer)
        data = self.recv(n, flags)
        buffer[:len(data)] = data
        return len(data)

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.endpoint is not None:
            self.endpoint.close()

    def __enter__(self) -> RdmaSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request helper --------------------------------------------------------------------
    def call(self, *args: bytes | str | int) -> bytes:
        """Send one command and return the raw bytes of one complete RESP reply."""
        import hiredis

        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        self.sendall(b"*%d\r\n" % len(parts)
                     + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        reader = hiredis.Reader()
        raw = bytearray()
        while True:
            chunk = self.recv(1 << 20)
            if not chunk:
                raise RdmaError("Server closed the connection")
            raw += chunk
            reader.feed(chunk)
            if reader.gets() is not False:
                return bytes(raw)

    # -- internals --------------------------------------------------------------------------
    def _live(self) -> Endpoint:
        if self._closed or self.endpoint is None:
            raise RdmaError("RDMA connection is closed")
        if self._eof:
            raise RdmaError("Server closed the connection")
        return self.endpoint

    def _check(self, err: str | None) -> None:
        if err is not None:
            self._eof = True
            raise RdmaError(err)

    def _deadline(self) -> float | None:
        return None if self._timeout is None else time.monotonic() + self._timeout

    def _fill(self, deadline: float | None) -> None:
        while not self._buf and not self._eof:
            self._wait(deadline, "RDMA: IO timeout")

    def _wait(self, deadline: float | None, what: str) -> None:
        """Wait for one batch of fabric/completion work and process it."""
        ep = self._live()
        qp = self.qp
        fds = [qp.comp_fd, *qp.aux_fds()]
        wfds = qp.write_fds()
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, writable, _ = select.select(fds, wfds, (), timeout)
        for fd in writable:
            qp.pump_write(fd)
        if not ready and writable:
            return
        if not ready:
            if timeout == 0 and self._timeout == 0:
                raise BlockingIOError(what)
            raise TimeoutError(what)
        for fd in ready:
            if fd != qp.comp_fd and not qp.pump(fd):
                pass
        err = ep.handle_completions()
        if qp.cm_events() or err is not None:
            self._eof = True
            if err is not None and not self._buf:
                raise RdmaError(err)
