"""redis-py's client-side cache (RESP3 + CLIENT TRACKING) against pykv.

redis-py turns tracking on for its connections, answers repeated reads from its local
cache, and drops entries when pykv pushes ``invalidate`` messages. These tests prove the
cache is really used (pykv sees fewer GETs) and really invalidated (writes from another
client, expiry and FLUSHALL become visible).

redis-py 8 only enables its cache for servers that announce Redis 7.4+ (a policy gate in
``CacheProxyConnection.connect``, not a protocol difference: tracking and the invalidation
pushes are Redis 6+). pykv announces 7.0.15, so the fixture lowers that gate for the test.
"""
from __future__ import annotations

import time

import pytest
import redis
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection


@pytest.fixture
def cached(pykv_proc, monkeypatch):
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    plain = redis.Redis(port=pykv_proc.port)
    plain.flushall()
    client = redis.Redis(port=pykv_proc.port, protocol=3, cache_config=CacheConfig())
    yield client, plain
    client.close()
    plain.close()


def _gets(plain: redis.Redis) -> int:
    return int(plain.info("commandstats").get("cmdstat_get", {}).get("calls", 0))


def _eventually(check, timeout: float = 3.0):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.02)


def test_reads_are_cached_and_invalidated(cached):
    client, plain = cached
    plain.set("k", "v1")
    assert client.get("k") == b"v1"
    before = _gets(plain)
    for _ in range(5):
        assert client.get("k") == b"v1"
    assert _gets(plain) == before  # answered from the local cache
    info = plain.client_list()
    assert any("t" in c["flags"] for c in info)  # the caching connection tracks
    plain.set("k", "v2")
    assert _eventually(lambda: client.get("k") == b"v2")
    assert _gets(plain) > before


def test_invalidation_on_delete_expiry_and_flush(cached):
    client, plain = cached
    plain.mset({"a": "1", "b": "2"})
    plain.set("ttl", "x", px=100)
    assert client.get("a") == b"1"
    assert client.get("ttl") == b"x"
    assert client.hgetall("h") == {}
    plain.delete("a")
    assert _eventually(lambda: client.get("a") is None)
    time.sleep(0.3)  # the key expires (active expiry) and the cached copy is dropped
    assert _eventually(lambda: client.get("ttl") is None)
    plain.hset("h", "f", "v")
    assert _eventually(lambda: client.hgetall("h") == {b"f": b"v"})
    assert client.get("b") == b"2"
    plain.flushall()
    assert _eventually(lambda: client.get("b") is None)


def test_own_writes_are_seen(cached):
    client, _ = cached
    client.set("mine", "1")
    assert client.get("mine") == b"1"
    client.set("mine", "2")
    assert client.get("mine") == b"2"
    client.incr("n")
    assert client.get("n") == b"1"
    client.incr("n")
    assert client.get("n") == b"2"
