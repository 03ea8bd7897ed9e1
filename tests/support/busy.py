"""Helpers for tests of busy scripts: a pair of connections with a short
``busy-reply-threshold``, and a bounded wait until a server answers ``-BUSY``."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from support.resp import RawClient


def wait_busy(admin: RawClient, timeout: float = 10) -> None:
    """Until the server answers PING with ``-BUSY`` (a script runs past its threshold)."""
    deadline = time.monotonic() + timeout
    while not admin.call("PING").startswith(b"-BUSY"):
        assert time.monotonic() < deadline, "the script never became busy"
        time.sleep(0.01)


@contextmanager
def busy_pair(port: int, resp: int = 2) -> Iterator[tuple[RawClient, RawClient]]:
    """(admin, runner) on an emptied server with busy-reply-threshold 10 ms (put back to
    Redis's 5000 afterwards)."""
    admin = RawClient(port=port)
    runner = RawClient(port=port)
    try:
        if resp == 3:
            admin.call("HELLO", "3")
            runner.call("HELLO", "3")
        admin.call("FLUSHALL")
        admin.call("CONFIG", "SET", "busy-reply-threshold", "10")
        yield admin, runner
    finally:
        admin.call("CONFIG", "SET", "busy-reply-threshold", "5000")
        admin.close()
        runner.close()
