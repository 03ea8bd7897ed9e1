"""Shared fixtures: a pykv server per session, real redis-server for differential tests."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from support.resp import RawClient  # noqa: E402

from pykv.testing import Server, free_port  # noqa: E402

REDIS_SERVER = shutil.which("redis-server")


class RealRedis:
    """Debian's redis-server on a free port, the oracle for differential tests."""

    def __init__(self, extra: list[str] | None = None) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="real-redis-")
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
             "--enable-debug-command", "yes", *(extra or [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                c = RawClient(port=self.port)
                c.call("PING")
                c.close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pykv_proc():
    with Server() as server:
        yield server


@pytest.fixture(scope="session")
def real_redis():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
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
