"""Scenarios for differential tests with several clients: the same steps against real
redis-server and pykv, every reply each client reads recorded in one transcript, and the
two transcripts compared. Steps wait until the server reports the expected number of
blocked clients (CLIENT LIST flags with ``b``: blocked on keys or held by CLIENT PAUSE)
so that the order of blocking is the order of the steps, not of thread scheduling.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from support.resp import RawClient, encode_command

_BLOCKED_FLAGS = re.compile(rb" flags=[A-Za-z]*b[A-Za-z]* ")


class Scenario:
    """Named raw clients on one server plus a transcript of what they read."""

    def __init__(self, port: int, transform: Callable[[bytes], Any] | None = None) -> None:
        self.port = port
        self.transform = transform  # what is recorded of a reply (default: its bytes)
        self.clients: dict[str, RawClient] = {}
        self.log: list[tuple[str, Any]] = []
        self("admin", "FLUSHALL")

    def client(self, name: str) -> RawClient:
        c = self.clients.get(name)
        if c is None:
            c = self.clients[name] = RawClient(port=self.port, timeout=10)
        return c

    def send(self, name: str, *args) -> None:
        self.client(name).send_raw(encode_command(*args))

    def read(self, name: str) -> bytes:
        reply = self.client(name).read_reply()
        self.log.append((name, reply if self.transform is None else self.transform(reply)))
        return reply

    def __call__(self, name: str, *args) -> bytes:
        self.send(name, *args)
        return self.read(name)

    def silent(self, name: str, *args) -> bytes:
        """A call whose reply differs between servers by nature (ids): not recorded."""
        return self.client(name).call(*args)

    def blocked(self) -> int:
        listing = self.client("_watch").call("CLIENT", "LIST")
        return len(_BLOCKED_FLAGS.findall(listing))

    def wait_blocked(self, n: int) -> None:
        deadline = time.monotonic() + 10
        while self.blocked() != n:
            assert time.monotonic() < deadline, f"expected {n} blocked clients"
            time.sleep(0.005)

    def block(self, name: str, *args, total: int) -> None:
        """Send a blocking command and wait until ``total`` clients are blocked."""
        self.send(name, *args)
        self.wait_blocked(total)

    def close(self) -> None:
        for c in self.clients.values():
            c.close()


def run_both(real_redis, pykv_proc, steps: Callable[[Scenario], None],
             transform: Callable[[bytes], Any] | None = None) -> None:
    logs = []
    for port in (real_redis.port, pykv_proc.port):
        s = Scenario(port, transform)
        try:
            steps(s)
        finally:
            s.close()
        logs.append(s.log)
    real, ours = logs
    for i, (expected, got) in enumerate(zip(real, ours, strict=False)):
        assert got == expected, f"step {i}:\n  redis: {expected!r}\n  pykv:  {got!r}"
    assert len(ours) == len(real), f"redis: {real[len(ours):]!r}\npykv: {ours[len(real):]!r}"
