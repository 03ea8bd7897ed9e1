"""maxmemory eviction against real redis-server, policy by policy.

Both servers get the same writes (1 KB strings, every other key with a TTL so the volatile
policies have candidates) under the same maxmemory: pykv's estimate must end within the
limit, keep about as many keys as Redis (``KEYS_FACTOR``), and count ``evicted_keys``. The
default run writes 10 MB under 4 MB; the slow one the issue's 200 MB under 50 MB (``-s``
prints the table of keys left and used_memory per policy).
"""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient, encode_command
from support.servers import server_pair

POLICIES = ["allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu", "allkeys-random",
            "volatile-random", "volatile-ttl", "noeviction"]
VALUE = "x" * 1000
KEYS_FACTOR = 0.2   # keys left within 20% of Redis's


def _info(c: RawClient, section: str) -> dict[str, str]:
    text = c.call("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def _write(c: RawClient, total: int, batch: int = 200) -> int:
    """Write ``total`` bytes of values; returns how many writes were refused (-OOM)."""
    refused = 0
    n = total // len(VALUE)
    for start in range(0, n, batch):
        cmds = []
        for i in range(start, min(n, start + batch)):
            if i % 2:
                cmds.append(encode_command("SET", f"key:{i}", VALUE, "EX", str(10000 + i)))
            else:
                cmds.append(encode_command("SET", f"key:{i}", VALUE))
        c.send_raw(b"".join(cmds))
        for _ in cmds:
            if c.read_reply().startswith(b"-OOM"):
                refused += 1
    return refused


def _run(policy: str, written: int, limit: int) -> list[tuple[int, int, int, int]]:
    rows = []
    with server_pair({"maxmemory-policy": policy}) as ports:
        for port in ports:
            c = RawClient(port=port, timeout=60)
            try:
                c.call("CONFIG", "SET", "maxmemory", str(limit))
                refused = _write(c, written)
                mem = _info(c, "memory")
                stats = _info(c, "stats")
                keys = int(c.call("DBSIZE")[1:-2])
                rows.append((keys, int(mem["used_memory"]), int(stats["evicted_keys"]),
                             refused))
            finally:
                c.close()
    (rk, ru, re, rr), (ok, ou, oe, orf) = rows
    print(f"{policy:16} redis keys {rk:6} used {ru:9} evicted {re:6} refused {rr:6} | "
          f"pykv keys {ok:6} used {ou:9} evicted {oe:6} refused {orf:6}")
    return rows


def _check(policy: str, rows, limit: int) -> None:
    (rk, _, re, rr), (ok, ou, oe, orf) = rows
    assert ou <= limit * 1.02, (policy, ou, limit)  # one write may land past the limit
    assert abs(ok - rk) <= rk * KEYS_FACTOR, (policy, rk, ok)
    assert (oe > 0) == (re > 0), (policy, re, oe)
    assert (orf > 0) == (rr > 0), (policy, rr, orf)


@pytest.mark.parametrize("policy", POLICIES)
def test_eviction_keeps_the_limit(policy):
    limit = 4 << 20
    _check(policy, _run(policy, 10 << 20, limit), limit)


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
def test_eviction_200mb_under_50mb(policy):
    limit = 50 << 20
    _check(policy, _run(policy, 200 << 20, limit), limit)


def test_evictions_fire_the_event_and_reach_the_aof(tmp_path):
    from pykv.testing import Server

    config = {"maxmemory-policy": "allkeys-random", "notify-keyspace-events": "Ee",
              "appendonly": "yes", "dir": str(tmp_path)}
    with Server(config=config) as srv:
        sub = RawClient(port=srv.port)
        sub.call("SUBSCRIBE", "__keyevent@0__:evicted")
        c = RawClient(port=srv.port)
        c.call("CONFIG", "SET", "maxmemory", str(2 << 20))
        _write(c, 3 << 20)
        evicted = int(_info(c, "stats")["evicted_keys"])
        assert evicted > 0
        event = sub.read_reply()
        assert b"evicted" in event and b"key:" in event
        # every eviction reaches the AOF as a DEL; the count is read again with the file,
        # since the memory check may evict a few more keys after the writes (Redis's
        # eviction time proc) and the AOF is written once a loop iteration
        deadline = time.monotonic() + 10
        while True:
            evicted = int(_info(c, "stats")["evicted_keys"])
            aof = b"".join(p.read_bytes() for p in tmp_path.rglob("*.aof"))
            if aof.count(b"$3\r\nDEL\r\n") == evicted or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert aof.count(b"$3\r\nDEL\r\n") == evicted
        sub.close()
        c.close()
