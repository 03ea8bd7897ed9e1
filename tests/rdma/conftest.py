"""Fixtures for the RDMA tests: a pykv server with an ``rdma`` listener on the software
fabric (same port number as its TCP listener), in its own process."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from pykv.testing import Server  # noqa: E402


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


def pytest_collection_modifyitems(config, items):
    """VM tests are opt-in: ``-m vm`` or PYKV_VM_TESTS=1 (they take minutes)."""
    if "vm" in (config.getoption("markexpr") or "") or os.environ.get("PYKV_VM_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="boots a VM: run with -m vm or PYKV_VM_TESTS=1")
    for item in items:
        if "vm" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fabric_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("softrdma"))
    os.environ["PYKV_SOFTRDMA_DIR"] = path
    os.environ["PYKV_RDMA_BACKEND"] = "soft"
    return path


@pytest.fixture(scope="module")
def rdma_server(fabric_dir):
    with RdmaServer(fabric_dir) as server:
        yield server
