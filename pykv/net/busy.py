"""Serving clients while the event loop is held by a slow script (processEventsWhileBlocked).

A Lua script runs on the loop thread; past ``busy-reply-threshold`` Redis keeps answering
other clients (``-BUSY``, ``SCRIPT KILL``, ``SHUTDOWN NOSAVE``) from inside the script's
hook. The event loop cannot be re-entered, so ``BusyPoller.poll`` does its job by hand:

* it asks every connection to deliver what arrived (``Connection.serve_while_busy``): a
  TCP or unix client's socket is read straight (non-blocking ``os.read``) and fed to its
  ``Client`` as the transport would; a TLS client's socket is read the same way and its
  records handed to the connection's own TLS protocol, which decrypts them for the
  ``Client``; an RDMA connection drains its completion queue as its loop callback would;
  replies go out through the transports as usual;
* it accepts new connections on the tcp/unix listeners itself, serves them over a plain
  socket (``HeldConnection``) while the script runs, and hands each one to the event loop
  afterwards (``adopt``), keeping its ``Client``, so an operator can connect and send
  ``SCRIPT KILL`` during a runaway script; on the TLS listeners it does the handshakes
  too, a step per poll, and keeps the connections on their ``ssl.SSLSocket``
  (``pykv.net.tls_held``).
"""
from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from typing import Any

from pykv.net import tls_held
from pykv.net.base import Connection
from pykv.net.stream import StreamConnection, format_address, read_while_busy


class HeldConnection(Connection):
    """A connection accepted while the loop was busy: a plain non-blocking socket."""

    def __init__(self, sock: socket.socket, type_name: str) -> None:
        self.sock = sock
        self.type_name = type_name
        self.closed = False
        if type_name == "unix":
            self._peer = self._local = format_address(sock.getsockname(), "unix")
        else:
            self._peer = format_address(sock.getpeername(), "tcp")
            self._local = format_address(sock.getsockname(), "tcp")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def write(self, data: bytes | bytearray) -> None:
        if not self.closed:
            try:
                self.sock.setblocking(True)  # short replies while busy: just send them
                self.sock.sendall(data)
                self.sock.setblocking(False)
            except OSError:
                self.closed = True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()

    def peer_address(self) -> str:
        return self._peer

    def local_address(self) -> str:
        return self._local

    def fd(self) -> int:
        return -1 if self.closed else self.sock.fileno()

    def serve_while_busy(self, handler: Any) -> None:
        read_while_busy(self.fd(), handler)


class BusyPoller:
    """One busy period: polls clients and listeners until ``finish``."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.held: list[tuple[Any, Any]] = []  # (client, HeldConnection or SocketTlsConnection)
        self._listen: list[tuple[socket.socket, str]] = []
        self._tls_listen: list[tuple[socket.socket, Any]] = []  # (socket, listener)
        self._handshakes: list[tls_held.Handshake] = []
        for listener in server.listeners:
            if listener.spec.type == "tls":
                for s in listener.listening_sockets():
                    self._tls_listen.append((_nonblocking_dup(s), listener))
                continue
            servers = getattr(listener, "servers", None) or (
                [listener.server] if getattr(listener, "server", None) is not None else [])
            type_name = "unix" if listener.spec.type == "unix" else "tcp"
            if listener.spec.type not in ("tcp", "unix"):
                continue
            for srv in servers:
                for s in srv.sockets or ():
                    self._listen.append((_nonblocking_dup(s), type_name))

    def poll(self, skip: Any) -> None:
        """Serve everyone but ``skip`` (the script's caller) once. The commands served
        see the time now; the script keeps its own (Redis's script time snapshot: a key
        that expires while the script runs stays visible to it)."""
        server = self.server
        clock = server.clock
        ms, sec = clock.ms, clock.sec
        try:
            self._poll(skip)
        finally:
            clock.ms, clock.sec = ms, sec

    def _poll(self, skip: Any) -> None:
        server = self.server
        for sock, type_name in self._listen:
            for conn in _accepted(sock):
                conn.setblocking(False)
                held = HeldConnection(conn, type_name)
                client = server.accept(held)
                self.held.append((client, held))
        for sock, listener in self._tls_listen:
            for conn in _accepted(sock):
                try:
                    self._handshakes.append(tls_held.Handshake(listener.context, conn))
                except (OSError, ValueError):
                    conn.close()
        for hs in list(self._handshakes):
            try:
                done = hs.step()
            except OSError:  # refused (logged)
                self._handshakes.remove(hs)
                continue
            if done:
                self._handshakes.remove(hs)
                accepted = tls_held.as_client(hs, server.accept)
                if accepted is not None:
                    self.held.append(accepted)
        for client in list(server.clients.values()):
            if client is skip or client.closed or client.conn is None:
                continue
            client.conn.serve_while_busy(client)

    def finish(self) -> None:
        """Close the duplicated listener sockets; give held connections (and unfinished
        TLS handshakes) to the loop."""
        for sock, _ in self._listen + self._tls_listen:
            sock.close()
        loop = self.server.loop
        for client, held in self.held:
            if isinstance(held, tls_held.SocketTlsConnection):
                held.adopt(loop)
            elif not (held.closed or client.closed):
                loop.create_task(_adopt(loop, client, held))
        for hs in self._handshakes:
            loop.create_task(tls_held.finish_handshake(loop, hs, self.server.accept))


def _accepted(sock: socket.socket) -> Iterator[socket.socket]:
    """The connections waiting on a non-blocking listening socket."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:  # (BlockingIOError: none left)
            return
        yield conn


def _nonblocking_dup(sock: socket.socket) -> socket.socket:
    dup = socket.socket(fileno=os.dup(sock.fileno()))
    dup.setblocking(False)
    return dup


async def _adopt(loop: asyncio.AbstractEventLoop, client: Any, held: HeldConnection) -> None:
    """Move a held connection under the event loop, keeping its Client."""
    held.sock.setblocking(False)

    def rebind(conn: Connection) -> Any:
        client.conn = conn
        return client

    try:
        await loop.connect_accepted_socket(lambda: StreamConnection(held.type_name, rebind),
                                           held.sock)
    except OSError:
        client.close_now()
