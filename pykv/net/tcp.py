"""The ``tcp`` connection type: IPv4 and IPv6, one or several bind addresses."""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from typing import Any

from pykv.net.base import AcceptFn, ConnectionType, Listener, ListenerSpec
from pykv.net.stream import StreamConnection

log = logging.getLogger("pykv")


class TcpListener(Listener):
    def __init__(self, spec: ListenerSpec, servers: list[asyncio.AbstractServer]) -> None:
        self.spec = spec
        self.servers = servers

    def close(self) -> None:
        for srv in self.servers:
            srv.close()


def bind_address(addr: str) -> tuple[str, bool]:
    """Redis bind syntax: a leading ``-`` marks an optional address; ``*`` is any IPv4."""
    optional = addr.startswith("-")
    if optional:
        addr = addr[1:]
    if addr == "*":
        addr = "0.0.0.0"
    elif addr == "::*":
        addr = "::"
    return addr, optional


class TcpConnectionType(ConnectionType):
    name = "tcp"

    async def listen(self, spec: ListenerSpec, accept: AcceptFn, server: Any) -> Listener:
        loop = asyncio.get_running_loop()
        backlog = int(getattr(server.config, "tcp_backlog", 511)) if server else 511
        binds = spec.binds or ["127.0.0.1"]
        servers = []
        for raw in binds:
            addr, optional = bind_address(raw)
            family = socket.AF_INET6 if ":" in addr else socket.AF_INET
            try:
                srv = await loop.create_server(
                    lambda: StreamConnection("tcp", accept), host=addr, port=spec.port,
                    family=family, backlog=backlog, reuse_address=True,
                )
            except OSError as exc:
                if optional:
                    continue
                for s in servers:
                    s.close()
                # Redis's anet wording; uvloop's own strerror text is not the C library's
                reason = f"bind: {os.strerror(exc.errno)}" if exc.errno else str(exc)
                raise OSError(exc.errno, f"Could not create server TCP listening socket "
                              f"{raw}:{spec.port}: {reason}") from exc
            servers.append(srv)
            if spec.port == 0:  # ephemeral: report the real port
                spec.port = srv.sockets[0].getsockname()[1]
        return TcpListener(spec, servers)


# a failed optional ("-addr") bind is skipped for these, as in Redis's listenToPort
_OPTIONAL_BIND_ERRNOS = {errno.ENOPROTOOPT, errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT,
                         errno.EPFNOSUPPORT, errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL}


def bind_sockets(binds: list[str], port: int, backlog: int, kind: str = "TCP"
                 ) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for Redis-style bind addresses (``kind`` names
    them in the log: TCP, TLS). Port 0 binds every address to the first one's port.

    ``-addr`` is optional (skipped when the address does not exist here), ``*`` is every
    IPv4 address and ``::*`` every IPv6 one. Failures are logged as Redis logs them.
    """
    socks: list[socket.socket] = []
    for raw in binds:
        optional = raw.startswith("-")
        addr = raw[1:] if optional else raw
        host = {"*": "0.0.0.0", "::*": "::"}.get(addr, addr)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((host, port))
            sock.listen(backlog)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            if optional and exc.errno in _OPTIONAL_BIND_ERRNOS:
                continue
            log.warning("Warning: Could not create server %s listening socket %s:%d: "
                        "bind: %s", kind, addr, port, exc.strerror)
            for s in socks:
                s.close()
            raise
        if port == 0:
            port = sock.getsockname()[1]
        socks.append(sock)
    return socks
