"""redis-py integration: ``RdmaConnection`` is a redis-py ``Connection`` over RDMA.

Usage::

    pool = redis.ConnectionPool(connection_class=RdmaConnection, host="10.0.0.5", port=6380)
    r = redis.Redis(connection_pool=pool)

Only the transport changes: redis-py's parsers read from ``pykv.rdma.client.RdmaSocket``.
``rdma_backend`` picks the verbs backend (``soft``, ``ibverbs`` or ``pyverbs``; default from
``PYKV_RDMA_BACKEND``). Importing this module imports redis-py, nothing else does.
"""
from __future__ import annotations

from typing import Any

from redis.connection import Connection

from pykv.rdma.client import RdmaSocket


class RdmaConnection(Connection):
    def __init__(self, *args: Any, rdma_backend: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rdma_backend = rdma_backend

    def _connect(self) -> RdmaSocket:
        return RdmaSocket(self.host, int(self.port), timeout=self.socket_timeout,
                          connect_timeout=self.socket_connect_timeout or 10.0,
                          backend=self.rdma_backend)

    def repr_pieces(self) -> list[tuple[str, Any]]:
        return [("transport", "rdma"), *super().repr_pieces()]
