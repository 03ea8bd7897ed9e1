"""Shared fixtures: a pykv server per session, real redis-server for differential tests."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from support.resp import RawClient  # noqa: E402
from support.servers import REDIS_SERVER, RealRedis, require_redis  # noqa: E402

from pykv.testing import Server  # noqa: E402

__all__ = ["REDIS_SERVER", "RealRedis"]


@pytest.fixture(scope="session")
def pykv_proc():
    # like the real redis the harness compares against: DEBUG allowed
    with Server(config={"enable-debug-command": "yes"}) as server:
        yield server


@pytest.fixture(scope="session")
def redis_binary() -> str:
    """The redis-server binary: a missing oracle fails the tests that need it."""
    return require_redis()


@pytest.fixture(scope="session")
def real_redis():
    server = RealRedis()
    yield server
    server.stop()


@pytest.fixture
def raw(pykv_proc):
    """A raw RESP connection to the session's pykv (database flushed)."""
    client = RawClient(port=pykv_proc.port)
    client.call("FLUSHALL")
    yield client
    client.close()
