"""TLS connections accepted while a busy script holds the event loop.

The loop's TLS transport cannot start while a script holds the loop, so the busy poller
(pykv.net.busy) accepts on the TLS listeners itself and does each handshake on a
non-blocking ``ssl.SSLSocket``, one step per poll (``Handshake``). A connection whose
handshake completes becomes a client at once — an operator whose only port is TLS can
connect and send ``SCRIPT KILL`` — and stays on that socket when the loop is back
(``SocketTlsConnection.adopt``: the loop's ``add_reader``/``add_writer``), since an
``SSLSocket`` in mid-session cannot be handed to the loop's TLS transport. A handshake
still under way when the script ends goes on under the loop (``finish_handshake``).

Rare by construction (only connections opened during a busy script), so plain and
unhurried: one ``recv`` of up to 64 KB at a time, until OpenSSL wants more input, and
every byte OpenSSL has already decrypted is read before the loop is waited on again.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

from pykv.net import tls_native, tls_socket
from pykv.net.base import Connection, ConnectionHandler
from pykv.net.stream import format_address

log = logging.getLogger("pykv")

HANDSHAKE_TIMEOUT = 60.0  # what the loop's TLS transport gives a handshake (start_tls)
_WOULD_BLOCK = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError,
                InterruptedError)


def _log_refused(exc: BaseException) -> None:
    log.warning("Error accepting a client connection: %s", tls_native.error_text(exc))


class Handshake:
    """A TLS server handshake on an accepted socket, stepped without the loop."""

    def __init__(self, ctx: ssl.SSLContext, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)

    def step(self) -> bool:
        """Advance it: True once done; False while it waits for the peer. A failed
        handshake is logged as Redis logs it and its socket closed (OSError raised)."""
        try:
            self.sock.do_handshake()
        except _WOULD_BLOCK:
            return False
        except OSError as exc:  # (ssl.SSLError included)
            _log_refused(exc)
            self.sock.close()
            raise
        return True


async def finish_handshake(loop: asyncio.AbstractEventLoop, hs: Handshake,
                           accept: Callable[[Connection], ConnectionHandler]) -> None:
    """A handshake the busy period left unfinished, completed under the loop; the
    connection is then accepted and adopted."""
    try:
        await asyncio.wait_for(tls_socket.handshake(loop, hs.sock), HANDSHAKE_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        _log_refused(exc)
        hs.sock.close()
        return
    accepted = as_client(hs, accept)
    if accepted is not None:
        accepted[1].adopt(loop)


class SocketTlsConnection(Connection):
    """A client connection on a non-blocking ``ssl.SSLSocket`` whose handshake is done:
    served by the busy poller (``serve_while_busy``) until ``adopt`` gives it to the loop."""

    type_name = "tls"

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.sock = sock
        self.handler: ConnectionHandler | None = None
        self._fd = sock.fileno()
        self._peer = format_address(sock.getpeername(), "tcp")
        self._local = format_address(sock.getsockname(), "tcp")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._out = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._closing = False  # close() asked: it closes once the output is sent
        self._lost = False  # EOF or an error seen while busy: dealt with at adopt
        self._paused = False
        self._reading = self._writing = False

    # -- input ----------------------------------------------------------------------------
    def _read(self) -> None:
        """Everything that can be read now (OpenSSL's decrypted bytes included)."""
        while not (self._closed or self._lost or self._paused):
            try:
                data = self.sock.recv(65536)
            except _WOULD_BLOCK:
                return
            except OSError:
                data = b""
            if not data:
                self._peer_gone()
                return
            self.handler.on_data(data)

    def serve_while_busy(self, handler: ConnectionHandler) -> None:
        self._read()

    def adopt(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop is back: it reads and writes this socket from now on."""
        self._loop = loop
        if self._closed:
            return
        if self._lost:
            self._peer_gone()
            return
        self._watch_reads(not self._paused)
        self._watch_writes(bool(self._out))
        loop.call_soon(self._read)  # what OpenSSL decrypted already raises no readiness

    def _peer_gone(self) -> None:
        if self._loop is None:  # while busy: the client goes when the loop is back
            self._lost = True
            return
        self._finish_close()

    # -- output ---------------------------------------------------------------------------
    def write(self, data: bytes | bytearray) -> None:
        if self._closed or self._closing:
            return
        self._out += data
        self._send()

    def _send(self) -> None:
        while self._out:
            try:
                n = self.sock.send(self._out)
            except _WOULD_BLOCK:
                break
            except OSError:
                self._out.clear()
                self._peer_gone()
                return
            del self._out[:n]
        if self._loop is not None and not self._closed:
            self._watch_writes(bool(self._out))
        if self._closing and not self._out:
            self._finish_close()

    # -- the loop's watches -----------------------------------------------------------------
    def _watch_reads(self, on: bool) -> None:
        if self._loop is None or on == self._reading:
            return
        self._reading = on
        if on:
            self._loop.add_reader(self._fd, self._read)
        else:
            self._loop.remove_reader(self._fd)

    def _watch_writes(self, on: bool) -> None:
        if self._loop is None or on == self._writing:
            return
        self._writing = on
        if on:
            self._loop.add_writer(self._fd, self._send)
        else:
            self._loop.remove_writer(self._fd)

    # -- Connection -------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed or self._closing:
            return
        self._closing = True
        self._send()
        if not self._closed and self._loop is None:  # while busy: no loop to wait for
            self._finish_close()

    def abort(self) -> None:
        self._out.clear()
        self._finish_close()

    def _finish_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._watch_reads(False)
        self._watch_writes(False)
        self.sock.close()
        if self.handler is not None:
            self.handler.on_close()

    def peer_address(self) -> str:
        return self._peer

    def local_address(self) -> str:
        return self._local

    def fd(self) -> int:
        return -1 if self._closed else self._fd

    def pending_write_bytes(self) -> int:
        return len(self._out)

    def pause_reading(self) -> None:
        self._paused = True
        self._watch_reads(False)

    def resume_reading(self) -> None:
        self._paused = False
        if self._loop is not None and not self._closed:
            self._watch_reads(True)
            self._loop.call_soon(self._read)

    def has_pending_data(self) -> bool:
        return not (self._closed or self._paused) and self.sock.pending() > 0

    def process_pending_data(self) -> None:
        self._read()


def as_client(hs: Handshake, accept: Callable[[Connection], Any]) -> tuple[Any, Any] | None:
    """The client ``accept`` made of a completed handshake, and its connection; None when
    the peer is gone already (its socket closed)."""
    try:
        conn = SocketTlsConnection(hs.sock)
    except OSError:  # (getpeername: ENOTCONN)
        hs.sock.close()
        return None
    conn.handler = accept(conn)
    return conn.handler, conn
