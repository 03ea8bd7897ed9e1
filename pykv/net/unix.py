"""The ``unix`` connection type: a path socket with Redis's ``unixsocketperm``."""
from __future__ import annotations

import asyncio
import os
from typing import Any

from pykv.net.base import AcceptFn, ConnectionType, Listener, ListenerSpec
from pykv.net.stream import StreamConnection


class UnixListener(Listener):
    def __init__(self, spec: ListenerSpec, server: asyncio.AbstractServer) -> None:
        self.spec = spec
        self.server = server

    def close(self) -> None:
        self.server.close()
        try:
            os.unlink(self.spec.path)
        except OSError:
            pass

    def info_fields(self) -> str:
        return f",bind={self.spec.path}"


class UnixConnectionType(ConnectionType):
    name = "unix"

    async def listen(self, spec: ListenerSpec, accept: AcceptFn, server: Any) -> Listener:
        if not spec.path:
            raise ValueError("unix listener needs path=...")
        loop = asyncio.get_running_loop()
        try:
            os.unlink(spec.path)
        except FileNotFoundError:
            pass
        backlog = int(getattr(server.config, "tcp_backlog", 511)) if server else 511
        try:
            srv = await loop.create_unix_server(
                lambda: StreamConnection("unix", accept), path=spec.path, backlog=backlog
            )
        except OSError as exc:
            raise OSError(exc.errno, f"Failed opening Unix socket: {exc.strerror}") from exc
        perm = spec.options.get("perm") or spec.options.get("unixsocketperm")
        if perm:
            os.chmod(spec.path, int(perm, 8))
        return UnixListener(spec, srv)
