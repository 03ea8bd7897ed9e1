"""Output buffer limits: close a client whose unsent replies outgrow its class's limit.

Redis's ``client-output-buffer-limit <class> <hard> <soft> <soft-seconds>`` for the classes
``normal``, ``replica`` and ``pubsub`` (a client is ``pubsub`` while it has subscriptions;
MONITOR clients are ``normal``, as in Redis's getClientType). What a client has not sent yet
is its output buffer plus what its transport still holds. At the hard limit, or after staying
at or above the soft limit for longer than its seconds, the client is closed at once: its
pending output is dropped and Redis's warning is logged with the client's CLIENT LIST line.

Redis checks when a reply is added; pykv checks when a reply batch is handed to the
transport (``ClientCore.write_out``), which is where a non-reading client's output grows,
for each pub/sub delivery, and within a pipeline each time its replies grew by 16 KB (so a
burst of big replies is closed near the limit, as in Redis). The dispatcher tests one C flag (``obuf_limits_on``), kept
true only while some class has a limit, so unlimited servers pay nothing. Before the full
check, ``obuf_may_be_over`` (``_core.pxd``) compares the buffer plus the transport backlog
``write_out`` saved (``conn_pending``: a backlog only shrinks between writes, so it bounds
the real one) with the smallest limit of any class (``ServerCore.obuf_min_limit``), in C.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from pykv.server.client_info import client_info_line, client_type

if TYPE_CHECKING:
    from pykv.server.server import Server

log = logging.getLogger("pykv")


# client type -> limit class (a master's output is limited as a normal client's, as Redis's
# checkClientOutputBufferLimits has it)
_CLASS_OF_TYPE = {"normal": "normal", "pubsub": "pubsub", "slave": "replica", "master": "normal"}


def client_class(client: Any) -> str:
    """The limit class of ``client``, from its type (``client_info.client_type``): replicas
    get the ``replica`` class as soon as the replication code marks them ``is_replica``."""
    return _CLASS_OF_TYPE[client_type(client)]


def unsent_bytes(client: Any) -> int:
    """Reply bytes not yet sent: the client's buffer plus what the transport holds."""
    pending = len(client.out)
    if client.conn is not None:
        pending += client.conn.pending_write_bytes()
    return pending


class OutputLimits:
    """The server's output-buffer limit checks (``server.output_limits``)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.min_limit = 0
        server.config.on_change("client-output-buffer-limit", self._on_config)
        self._on_config(None)

    def _on_config(self, _value: Any) -> None:
        limits = self.server.config.client_output_buffer_limit
        was_on = self.server.obuf_limits_on
        self.server.obuf_limits_on = any(hard or soft for hard, soft, _ in limits.values())
        if self.server.obuf_limits_on and not was_on:
            # write_out saved no transport backlog while nothing was limited: read it now
            for client in getattr(self.server, "clients", {}).values():
                if client.conn is not None:
                    client.conn_pending = client.conn.pending_write_bytes()
        # the smallest hard or soft limit set: a client with less unsent output is within
        # its class's limits whatever the class (ClientCore.output_limit_closed's fast path)
        self.min_limit = min((x for hard, soft, _ in limits.values() for x in (hard, soft) if x),
                             default=0)
        self.server.obuf_min_limit = self.min_limit

    def over_limit(self, client: Any) -> bool:
        """Whether ``client`` has reached its class's hard limit, or has been at or over the
        soft one for longer than its seconds (the soft clock starts here)."""
        limits = self.server.config.client_output_buffer_limit
        hard, soft, seconds = limits.get(client_class(client), (0, 0, 0))
        if not hard and not soft:
            return False
        pending = unsent_bytes(client)
        if hard and pending >= hard:
            return True
        if soft and pending >= soft:
            now = time.monotonic()
            since = client.obuf_soft_since
            if not since:
                client.obuf_soft_since = now
                return False
            return now - since > seconds
        client.obuf_soft_since = 0.0
        return False

    def check(self, client: Any) -> bool:
        """Close ``client`` if it is over its limit; True if it was closed."""
        if client.closed or not self.over_limit(client):
            return False
        log.warning("Client %s scheduled to be closed ASAP for overcoming of output buffer "
                    "limits.", client_info_line(client))
        drop_client(self.server, client)
        return True


def drop_client(server: Any, client: Any) -> None:
    """Close ``client`` at once, its unsent replies dropped (Redis's freeClient)."""
    client.out = bytearray()
    client.closing = True
    client.closed = True
    if client.conn is not None:
        client.conn.abort()
    server.remove_client(client)
