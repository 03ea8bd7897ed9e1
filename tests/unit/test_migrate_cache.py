"""MIGRATE's connection cache (pykv.commands.migrate.SocketCache): Redis's limits of 64
connections and 10 idle seconds, and the request it sends over them."""
from __future__ import annotations

import socket
import time

import pytest

from pykv.commands.migrate import CACHE_ITEMS, CACHE_TTL_S, Job, SocketCache, build_request


class _Server:
    def __init__(self) -> None:
        self.crons: list = []

    def add_cron(self, hook) -> None:
        self.crons.append(hook)


@pytest.fixture
def cache():
    c = SocketCache(_Server())
    yield c
    for name, conn in list(c.conns.items()):
        c.close(name, conn)


def test_at_most_64_connections(cache):
    socks = [socket.socket() for _ in range(CACHE_ITEMS + 1)]
    for i, sock in enumerate(socks):
        cache.add(b"h:%d" % i, sock)
    assert len(cache) == CACHE_ITEMS
    assert b"h:%d" % CACHE_ITEMS in cache.conns  # the newest is kept; one older one went
    closed = [s for s in socks if s.fileno() == -1]
    assert len(closed) == 1


def test_idle_connections_closed_by_cron(cache):
    idle = cache.add(b"idle:1", socket.socket())
    fresh = cache.add(b"fresh:1", socket.socket())
    idle.last_use = int(time.time()) - CACHE_TTL_S - 1
    cache._last_sweep = 0.0
    cache.cron()
    assert list(cache.conns) == [b"fresh:1"]
    assert idle.sock.fileno() == -1 and fresh.sock.fileno() != -1


def test_request_is_pipelined_auth_select_restores():
    job = Job()
    job.dbid = 3
    job.replace = True
    job.username, job.password = b"u", b"p"
    now = int(time.time() * 1000)
    job.items = [(b"a", None, b"PAYLOAD", -1), (b"gone", None, b"X", now - 5),
                 (b"t", None, b"Y", now + 60_000)]
    data, sent = build_request(job, select=True)
    assert [item[0] for item in sent] == [b"a", b"t"]  # expired since its lookup: not sent
    assert data.startswith(b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n"
                           b"*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
                           b"*5\r\n$7\r\nRESTORE\r\n$1\r\na\r\n$1\r\n0\r\n$7\r\nPAYLOAD\r\n"
                           b"$7\r\nREPLACE\r\n*5\r\n$7\r\nRESTORE\r\n$1\r\nt\r\n")
    ttl = int(data.split(b"$1\r\nt\r\n")[1].split(b"\r\n")[1])
    assert 0 < ttl <= 60_000
    plain, _ = build_request(Job(), select=False)
    assert plain == b""
