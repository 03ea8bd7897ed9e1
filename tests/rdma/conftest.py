"""Fixtures for the RDMA tests: a pykv server with an ``rdma`` listener on the software
fabric (same port number as its TCP listener), in its own process."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from rdma_support import RdmaServer  # noqa: E402


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
