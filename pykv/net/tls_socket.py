"""A client TLS socket driven from the event loop: the handshake, sends and receives of a
non-blocking ``ssl.SSLSocket``, waiting for readiness between OpenSSL's want-read and
want-write answers (the loop's ``sock_*`` calls refuse an SSLSocket).

For code that keeps a raw socket per peer and runs its exchange either on the loop or with
blocking calls on the same socket (MIGRATE's cached connections under ``tls-cluster``).
Data OpenSSL has already decrypted is read before any wait, so none is left behind.
"""
from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wrap(ctx: ssl.SSLContext, sock: socket.socket) -> ssl.SSLSocket:
    """``sock`` (connected) as a TLS client socket whose handshake is still to do."""
    return ctx.wrap_socket(sock, server_side=False, do_handshake_on_connect=False,
                           server_hostname=None)


async def _wait(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket, writing: bool) -> None:
    fut = loop.create_future()
    fd = sock.fileno()
    add, remove = (loop.add_writer, loop.remove_writer) if writing else \
        (loop.add_reader, loop.remove_reader)

    def ready() -> None:
        if not fut.done():
            fut.set_result(None)

    add(fd, ready)
    try:
        await fut
    finally:
        remove(fd)


async def _drive(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket,
                 step: Callable[[], T]) -> T:
    while True:
        try:
            return step()
        except ssl.SSLWantReadError:
            await _wait(loop, sock, False)
        except ssl.SSLWantWriteError:
            await _wait(loop, sock, True)


async def handshake(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket) -> None:
    sock.setblocking(False)
    await _drive(loop, sock, sock.do_handshake)


async def sendall(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket, data: bytes) -> None:
    sock.setblocking(False)
    view = memoryview(data)
    while view:
        sent = await _drive(loop, sock, lambda part=view: sock.send(part))
        view = view[sent:]


async def recv(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket, size: int) -> bytes:
    sock.setblocking(False)
    return await _drive(loop, sock, lambda: sock.recv(size))
