"""Stream-socket connections (TCP and unix) on top of asyncio transports.

asyncio (uvloop when installed) owns the sockets; this module adapts its Protocol callbacks
to the ``Connection`` interface. TCP_NODELAY is set on every TCP connection (uvloop and
asyncio both do it; we make sure), and the listen backlog is Redis's ``tcp-backlog``.

A plain TCP or unix client's hot path bypasses the transport both ways once connected:
its replies are sent from C while the transport holds nothing queued
(``ClientCore.send_directly``) and its socket is read from C by the loop's ``ReadMux``
(``pykv.net._readmux``), which hands EOF and errors back to the transport. TLS
connections and clients that are not a ``ReadTarget`` keep the transport's own reads.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any

from pykv.net._readmux import read_mux
from pykv.net._sockopt import set_nodelay
from pykv.net.base import AcceptFn, Connection, ConnectionHandler
from pykv.util._byteio import ReadTarget


def read_now(fd: int) -> bytes:
    """What socket ``fd`` holds, read without the loop (the busy-script poller,
    pykv.net.busy); b"" when there is nothing: EAGAIN, an error or EOF, all left to the
    transport once the loop is back."""
    if fd < 0:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def read_while_busy(fd: int, handler: Any) -> None:
    """What a plain socket holds, read without the loop and handed to ``handler``."""
    data = read_now(fd)
    if data:
        handler.on_data(data)


def format_address(addr: Any, type_name: str) -> str:
    """Redis's ``ip:port`` form: IPv6 addresses are printed bare, path sockets as ``path:0``."""
    if type_name == "unix":
        return f"{addr or ''}:0"
    if isinstance(addr, tuple) and len(addr) >= 2:
        return f"{addr[0]}:{addr[1]}"
    return str(addr)


class StreamConnection(asyncio.Protocol, Connection):
    """An accepted TCP or unix stream connection."""

    def __init__(self, type_name: str, accept: AcceptFn) -> None:
        self.type_name = type_name
        self._accept = accept
        self.transport: asyncio.Transport | None = None
        self.handler: ConnectionHandler | None = None
        self._peer = self._local = ""
        self._closed = False
        self._mux: Any = None  # the ReadMux reading this socket, if one does
        self._fd = -1
        self._paused = False  # pause_reading: the mux must not read either when it takes over

    # asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if self.type_name != "unix" and sock is not None:  # tcp, tls
            set_nodelay(sock.fileno())
        if self.type_name == "unix":
            self._peer = format_address(transport.get_extra_info("sockname"), "unix")
            self._local = self._peer
        else:
            self._peer = format_address(transport.get_extra_info("peername"), "tcp")
            self._local = format_address(transport.get_extra_info("sockname"), "tcp")
        self.handler = self._accept(self)
        if self.handler is not None and self.type_name != "tls":
            # the hot path without a Python frame per read or write: uvloop keeps the
            # protocol's data_received it found at set_protocol, and write is the
            # transport's own until the connection closes (_mark_closed)
            self.data_received = self.handler.on_data  # type: ignore[method-assign]
            self.write = transport.write  # type: ignore[method-assign]
            transport.set_protocol(self)
            direct = getattr(self.handler, "send_directly", None)
            if direct is not None and self.type_name in ("tcp", "unix") and sock is not None:
                # replies go to the socket from C while the transport holds nothing queued
                # (pykv.server._core ClientCore.send_directly); the fd is the transport's
                # until connection_lost, which comes before uvloop closes it
                direct(sock.fileno(), transport.get_write_buffer_size)
                if isinstance(self.handler, ReadTarget):
                    # (uvloop starts the transport's reads after connection_made returns:
                    # they stop, and the mux takes over, at the next callback)
                    asyncio.get_running_loop().call_soon(self._read_from_c, sock.fileno())

    def _read_from_c(self, fd: int) -> None:
        """Move this socket's reads to the loop's ReadMux (whatever the transport read
        until now was delivered to the handler already)."""
        if self._closed or self.transport.is_closing():
            return
        mux = read_mux(asyncio.get_running_loop())
        if mux is None:
            return
        try:
            mux.add(fd, self.handler, self._reads_back, self._read_failed)
        except OSError:  # (epoll refused it, e.g. max_user_watches): the transport reads on
            return
        self.transport.pause_reading()  # (no read can come between: one callback)
        self._mux, self._fd = mux, fd
        if self._paused:
            mux.pause(fd, self.handler)

    def _reads_back(self) -> None:
        """The mux met EOF or an error: the transport reads again, meets the same and
        closes as it does without the mux."""
        self._mux = None
        if not self._closed:
            self.transport.resume_reading()

    def _read_failed(self, exc: Exception) -> None:
        """The handler raised on bytes the mux read (uvloop's fatal error on an exception
        out of data_received): report it and drop the connection."""
        self._mux = None
        asyncio.get_running_loop().call_exception_handler({
            "message": "Fatal error: protocol.data_received() call failed.",
            "exception": exc, "transport": self.transport, "protocol": self})
        self.abort()

    def data_received(self, data: bytes) -> None:
        self.handler.on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._mark_closed()
        if self.handler is not None:
            self.handler.on_close()

    def eof_received(self) -> bool:
        # the transport closes now and drops what is written after: so must a direct send
        self._stop_direct()
        return False  # close our side too, as Redis does on EOF

    # Connection -------------------------------------------------------------------------
    def write(self, data: bytes | bytearray) -> None:
        if not self._closed:
            self.transport.write(data)

    def writev(self, chunks: list[bytes]) -> None:
        if not self._closed:
            self.transport.writelines(chunks)

    def close(self) -> None:
        if not self._closed and self.transport is not None:
            self._mark_closed()
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self._mark_closed()
            self.transport.abort()

    def _mark_closed(self) -> None:
        self._closed = True
        if self._mux is not None:
            self._mux.remove(self._fd, self.handler)
            self._mux = None
        self.__dict__.pop("write", None)  # back to the guarded method: writes are dropped
        self._stop_direct()

    def _stop_direct(self) -> None:
        stop = getattr(self.handler, "send_directly", None)
        if stop is not None:
            stop(-1, None)

    def peer_address(self) -> str:
        return self._peer

    def local_address(self) -> str:
        return self._local

    def serve_while_busy(self, handler: Any) -> None:
        if self.type_name in ("tcp", "unix") and not self._closed:  # (TLS: TlsConnection)
            read_while_busy(self.fd(), handler)

    def fd(self) -> int:
        sock = self.transport.get_extra_info("socket") if self.transport else None
        return sock.fileno() if sock is not None else -1

    def pending_write_bytes(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport else 0

    def pause_reading(self) -> None:
        self._paused = True
        if self._mux is not None:
            self._mux.pause(self._fd, self.handler)
        elif self.transport is not None and not self._closed:
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        self._paused = False
        if self._mux is not None:
            self._mux.resume(self._fd, self.handler)
        elif self.transport is not None and not self._closed:
            self.transport.resume_reading()
