"""Test servers: Debian's real redis-server, the oracle for differential tests."""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time

import pytest

from pykv.testing import free_port
from support.resp import RawClient

REDIS_SERVER = shutil.which("redis-server")
MISSING_REDIS = "redis-server is not installed (apt-get install redis-server): the differential " \
    "tests need it as their oracle"


def require_redis() -> str:
    """The redis-server binary; a missing oracle fails the test (it is never skipped)."""
    if REDIS_SERVER is None:
        pytest.fail(MISSING_REDIS, pytrace=False)
    return REDIS_SERVER


class RealRedis:
    """Debian's redis-server on a free port, the oracle for differential tests."""

    def __init__(self, extra: list[str] | None = None) -> None:
        require_redis()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="real-redis-")
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
             "--enable-debug-command", "yes", *(extra or [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        # Ready means the dataset is loaded: PING answers -LOADING while an RDB/AOF loads.
        # Any other reply counts (-NOAUTH under requirepass, -MASTERDOWN on a stale replica).
        deadline = time.monotonic() + 30
        reply = b""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            try:
                c = RawClient(port=self.port)
                reply = c.call("PING")
                c.close()
                if not reply.startswith(b"-LOADING"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start (last PING reply {reply!r})")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_while_in_progress(client: RawClient, field: bytes, timeout: float = 30) -> bytes:
    """Poll ``INFO persistence`` until ``field:1`` (e.g. ``b"aof_rewrite_in_progress"``) is
    gone; return the last INFO reply."""
    deadline = time.monotonic() + timeout
    while True:
        info = client.call("INFO", "persistence")
        if field + b":1" not in info:
            return info
        assert time.monotonic() < deadline, f"{field!r} still in progress after {timeout}s"
        time.sleep(0.05)


@contextlib.contextmanager
def server_pair(config: dict[str, str]):
    """A real redis-server and a pykv started with the same extra ``config``; yields
    their ports (for tests that need a setting the session's servers do not have)."""
    from pykv.testing import Server

    real = RealRedis(extra=[x for name, value in config.items()
                            for x in (f"--{name}", value)])
    try:
        with Server(config=config) as ours:
            yield real.port, ours.port
    finally:
        real.stop()
