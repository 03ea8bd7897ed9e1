"""Connection types and listeners: the transport layer's one small interface.

This mirrors Redis/Valkey ``src/connection.h``: each transport (tcp, unix, rdma, …) is a
``ConnectionType`` registered by name, which opens listeners from a generic
``ListenerSpec`` and produces ``Connection`` objects. The dispatcher sees only
``Connection``; transports never see commands.

A transport delivers bytes by calling ``handler.on_data(data)`` (``bytes``, or a
``memoryview`` valid only during the call, which the handler copies) and reports the end of a
connection with ``handler.on_close()``, where ``handler`` is what ``accept`` (the server's
``Server.accept``) returned for that connection. Transports that keep received bytes outside
the kernel socket (TLS, RDMA) answer ``has_pending_data()`` and drain in
``process_pending_data()``; such a transport schedules that drain on the next loop iteration
(``loop.call_soon``) whenever something is left, so no received byte waits for another
readiness event — Valkey's rule that every iteration processes pending data.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class ConnectionHandler(Protocol):
    def on_data(self, data: bytes | memoryview) -> None: ...
    def on_close(self) -> None: ...


AcceptFn = Callable[["Connection"], ConnectionHandler]


class Connection(ABC):
    """One accepted client connection of some transport."""

    type_name: str = "?"

    @abstractmethod
    def write(self, data: bytes | bytearray) -> None:
        """Queue bytes for the peer (never blocks; the transport buffers what it can't send)."""

    def writev(self, chunks: list[bytes]) -> None:
        self.write(b"".join(chunks))

    @abstractmethod
    def close(self) -> None:
        """Close after flushing what was written."""

    def abort(self) -> None:
        """Close at once, dropping unsent data."""
        self.close()

    @abstractmethod
    def peer_address(self) -> str:
        """``ip:port`` (``[v6]:port`` style as Redis prints it) or ``path:0`` for unix."""

    @abstractmethod
    def local_address(self) -> str: ...

    def fd(self) -> int:
        return -1

    def pending_write_bytes(self) -> int:
        return 0

    def pause_reading(self) -> None:
        """Stop delivering received bytes (CLIENT PAUSE, output back-pressure)."""
        return None

    def resume_reading(self) -> None:
        return None

    def has_pending_data(self) -> bool:
        return False

    def process_pending_data(self) -> None:
        """Deliver bytes the transport holds outside the kernel (none for plain sockets)."""
        return None

    def serve_while_busy(self, handler: ConnectionHandler) -> None:
        """Deliver to ``handler`` what arrived while a busy script holds the event loop
        (pykv.net.busy), for a transport that can be read without the loop. By default
        nothing: the connection is served when the loop is back."""
        return None


class Listener(ABC):
    """An open listening endpoint of one connection type."""

    spec: ListenerSpec

    @abstractmethod
    def close(self) -> None: ...

    def info_fields(self) -> str:
        """The part of ``INFO server``'s ``listenerN:`` line after ``name=TYPE``."""
        parts = [f",bind={b}" for b in self.spec.binds]
        if self.spec.port:
            parts.append(f",port={self.spec.port}")
        return "".join(parts)


@dataclass
class ListenerSpec:
    """``--listener TYPE,key=value,...`` parsed generically; the type interprets options."""

    type: str
    binds: list[str] = field(default_factory=list)
    port: int = 0
    path: str = ""
    options: dict[str, str] = field(default_factory=dict)
    optional: bool = False

    @classmethod
    def parse(cls, text: str) -> ListenerSpec:
        parts = [p for p in text.split(",") if p]
        if not parts:
            raise ValueError("empty listener specification")
        spec = cls(type=parts[0].strip().lower())
        for part in parts[1:]:
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep:
                if key == "optional":
                    spec.optional = True
                    continue
                raise ValueError(f"listener option '{part}' is not key=value")
            value = value.strip()
            if key == "bind":
                spec.binds.extend(v for v in value.split(" ") if v)
            elif key == "port":
                try:
                    spec.port = int(value)
                except ValueError:
                    raise ValueError(f"listener port '{value}' is not a number") from None
                if not 0 <= spec.port <= 65535:
                    raise ValueError(f"listener port {spec.port} is out of range")
            elif key == "path":
                spec.path = value
            elif key == "optional":
                spec.optional = value.lower() in ("yes", "1", "true")
            else:
                spec.options[key] = value
        return spec


class ConnectionType(ABC):
    """A transport: knows how to listen and accept, nothing about commands."""

    name: str = "?"

    @abstractmethod
    async def listen(self, spec: ListenerSpec, accept: AcceptFn, server: Any) -> Listener:
        """Open ``spec`` and call ``accept(connection)`` for each new client."""


_TYPES: dict[str, ConnectionType] = {}


def register_connection_type(ct: ConnectionType) -> None:
    _TYPES[ct.name] = ct


def get_connection_type(name: str) -> ConnectionType:
    try:
        return _TYPES[name]
    except KeyError:
        raise ValueError(
            f"unknown listener type '{name}' (known: {', '.join(sorted(_TYPES))})"
        ) from None


def connection_types() -> dict[str, ConnectionType]:
    return dict(_TYPES)
