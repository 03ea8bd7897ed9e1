"""The cluster bus as a connection type: a listener on the bus port and outgoing links.

Only framing happens here: a bus message starts with 4 signature bytes and its total
length (u32, big-endian); ``frame_length`` (given by the cluster layer) validates those 8
bytes and says how long the message is. Whole messages go to the link's handler
(``on_message(bytes)``); a bad header or a message over ``max_message`` calls
``on_bad_frame(reason)`` and closes the link, as Redis frees a link on a bad length or
signature. The transport never looks inside a message.

With ``tls-cluster yes`` both directions run over TLS: ``serve`` and ``connect`` take the
``ssl.SSLContext`` to use (the event loop's TLS transport does the handshake, and a link
reaches the cluster layer only once it succeeded).
"""
from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Callable
from typing import Protocol

from pykv.net.tcp import bind_sockets

HEAD_LEN = 8
DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024


class BusHandler(Protocol):
    def on_message(self, data: bytes) -> None: ...
    def on_bad_frame(self, reason: str) -> None: ...
    def on_close(self) -> None: ...


class BusLink(asyncio.Protocol):
    """One TCP connection of the bus, either direction."""

    def __init__(self, frame_length: Callable[[bytes], int], inbound: bool,
                 max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        self.frame_length = frame_length
        self.inbound = inbound
        self.max_message = max_message
        self.handler: BusHandler | None = None
        self.transport: asyncio.Transport | None = None
        self.ctime = int(time.time() * 1000)
        self.buf = bytearray()
        self.closed = False
        self.peer = ("", 0)
        self.on_made: Callable[[BusLink], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.peer = (peer[0], peer[1])
        if self.on_made is not None:
            self.on_made(self)

    def local_ip(self) -> str:
        local = self.transport.get_extra_info("sockname") if self.transport else None
        return local[0] if isinstance(local, tuple) else ""

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        while not self.closed and len(buf) >= HEAD_LEN:
            try:
                total = self.frame_length(bytes(buf[:HEAD_LEN]))
            except ValueError as exc:
                self._bad(str(exc))
                return
            if total > self.max_message:
                self._bad(f"message of {total} bytes is too large")
                return
            if len(buf) < total:
                break
            message = bytes(buf[:total])
            del buf[:total]
            if self.handler is not None:
                self.handler.on_message(message)

    def _bad(self, reason: str) -> None:
        self.buf = bytearray()
        if self.handler is not None:
            self.handler.on_bad_frame(reason)
        self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        was_closed = self.closed
        self.closed = True
        if self.handler is not None and not was_closed:
            self.handler.on_close()

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def send_buffer_used(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport else 0

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.abort()


class BusListener:
    """The bus port's sockets, served plain or over TLS; ``reload`` serves new links with
    another context (None: plain) while the links already open keep theirs."""

    def __init__(self, socks: list[socket.socket], factory: Callable[[], BusLink],
                 port: int) -> None:
        self.socks = socks
        self.factory = factory
        self.port = port
        self.servers: list[asyncio.AbstractServer] = []

    async def serve(self, tls: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        servers = []
        try:
            for sock in self.socks:  # the server owns (and closes) a duplicate
                servers.append(await loop.create_server(self.factory, sock=sock.dup(),
                                                        ssl=tls))
        except Exception:
            for srv in servers:
                srv.close()
            raise
        old, self.servers = self.servers, servers
        for srv in old:
            srv.close()

    async def reload(self, tls: ssl.SSLContext | None) -> None:
        if self.socks:
            await self.serve(tls)

    def close(self) -> None:
        for srv in self.servers:
            srv.close()
        self.servers = []
        for sock in self.socks:
            sock.close()
        self.socks = []


def bind(binds: list[str], port: int, backlog: int = 511) -> list[socket.socket]:
    """The bus port's listening sockets (raises OSError when it cannot be bound)."""
    return bind_sockets(binds or ["127.0.0.1"], port, backlog, kind="cluster bus")


async def serve(socks: list[socket.socket], frame_length: Callable[[bytes], int],
                on_accept: Callable[[BusLink], None], port: int,
                tls: ssl.SSLContext | None = None) -> BusListener:
    """Accept links on ``socks`` (over TLS with ``tls``); ``on_accept(link)`` installs each
    link's handler."""
    def factory() -> BusLink:
        link = BusLink(frame_length, inbound=True)
        link.on_made = on_accept
        return link

    listener = BusListener(socks, factory, port)
    try:
        await listener.serve(tls)
    except Exception:
        listener.close()
        raise
    return listener


async def connect(ip: str, port: int, frame_length: Callable[[bytes], int],
                  timeout: float, tls: ssl.SSLContext | None = None) -> BusLink:
    """An outgoing link to ``ip:port``, over TLS with ``tls`` (raises OSError, including
    ssl.SSLError, or TimeoutError on failure)."""
    loop = asyncio.get_running_loop()
    _transport, link = await asyncio.wait_for(
        loop.create_connection(lambda: BusLink(frame_length, inbound=False), ip, port,
                               ssl=tls, server_hostname="" if tls is not None else None),
        timeout)
    return link


