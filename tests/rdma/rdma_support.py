"""Test helpers for the RDMA suites (kept out of conftest.py so tests can import them)."""
from __future__ import annotations

import os

from pykv.testing import Server


class RdmaServer(Server):
    """A pykv subprocess listening on TCP and RDMA (soft fabric) on the same port."""

    def __init__(self, fabric_dir: str, rx_size: int = 65536, keepalive: float = 0.5,
                 **kw) -> None:
        super().__init__(**kw)
        self.fabric_dir = fabric_dir
        self.extra_args += ["--listener", f"rdma,bind=127.0.0.1,port={self.port},"
                            f"rx-size={rx_size},keepalive={keepalive},backend=soft"]

    def start(self):
        os.environ["PYKV_SOFTRDMA_DIR"] = self.fabric_dir
        return super().start()
