"""The ``tcp`` connection type: IPv4 and IPv6, one or several bind addresses."""
from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

from pykv.net.base import AcceptFn, ConnectionType, Listener, ListenerSpec
from pykv.net.stream import StreamConnection


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
