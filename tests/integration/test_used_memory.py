"""used_memory is a dataset estimate comparable with Redis's, not the process RSS.

The same data goes into real redis-server and pykv; the growth of ``used_memory`` must stay
within 20% of Redis's for each value type (the ratios are printed: ``-s`` shows them),
go back down when the keys go, and INFO memory and MEMORY STATS must agree with each other.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient, encode_command
from support.servers import server_pair


def _string(key: str, n: int = 100) -> list[tuple]:
    return [("SET", key, "v" * n)]


def _fields(cmd: str, key: str, n: int, pair: bool, score: bool = False) -> list[tuple]:
    args: list = [cmd, key]
    for i in range(n):
        if score:
            args += [str(i), f"member:{i}"]
        elif pair:
            args += [f"field:{i}", f"value:{i}"]
        else:
            args.append(f"element:{i}")
    return [tuple(args)]


# name: (number of keys, the commands building one key from its name)
CASES = {
    "string-100": (5000, lambda k: _string(k)),
    "string-int": (5000, lambda k: [("SET", k, "123456")]),
    # INCR over an int-encoded string (no re-estimate) and over an APPENDed raw one
    "string-incr": (5000, lambda k: [("SET", k, "99999"), ("INCR", k)]),
    "string-raw-incr": (5000, lambda k: [("SET", k, "12345"), ("APPEND", k, "6"), ("INCR", k)]),
    "string-1000": (2000, lambda k: _string(k, 1000)),
    "hash-10": (2000, lambda k: _fields("HSET", k, 10, True)),
    "hash-1000": (20, lambda k: _fields("HSET", k, 1000, True)),
    "list-100": (500, lambda k: _fields("RPUSH", k, 100, False)),
    "set-10": (2000, lambda k: _fields("SADD", k, 10, False)),
    "set-1000": (20, lambda k: _fields("SADD", k, 1000, False)),
    "zset-10": (2000, lambda k: _fields("ZADD", k, 10, False, score=True)),
    "zset-1000": (20, lambda k: _fields("ZADD", k, 1000, False, score=True)),
    "stream-100": (50, lambda k: [("XADD", k, "*", "f", f"v{i}") for i in range(100)]),
}
# the bound this test holds pykv's estimate to, the 20% (measured: 0.84 .. 1.02)
LOW, HIGH = 0.8, 1.2


def _used(c: RawClient) -> int:
    info = c.call("INFO", "memory").decode()
    return int(info.split("used_memory:", 1)[1].split("\r\n", 1)[0])


def _load(c: RawClient, n: int, build) -> None:
    batch = b"".join(encode_command(*cmd) for i in range(n) for cmd in build(f"key:{i}"))
    c.send_raw(batch)
    count = sum(len(build("key:0")) for _ in range(n))
    for _ in range(count):
        c.read_reply()


@pytest.fixture(scope="module")
def pair():
    with server_pair({}) as ports:
        yield ports


@pytest.mark.parametrize("case", list(CASES))
def test_used_memory_tracks_redis(pair, case):
    n, build = CASES[case]
    grew = []
    for port in pair:
        c = RawClient(port=port)
        try:
            c.call("FLUSHALL")
            before = _used(c)
            _load(c, n, build)
            grew.append(_used(c) - before)
            c.call("FLUSHALL")
            after = _used(c)
            assert after - before < max(grew[-1] // 10, 64 << 10), (case, before, after)
        finally:
            c.close()
    real, ours = grew
    ratio = ours / real
    print(f"{case}: redis {real} pykv {ours} ratio {ratio:.2f}")
    assert LOW <= ratio <= HIGH, (case, real, ours)


def test_info_and_memory_stats_agree(pair):
    c = RawClient(port=pair[1])
    try:
        c.call("FLUSHALL")
        _load(c, 1000, lambda k: _string(k))
        info = dict(line.split(":", 1) for line in c.call("INFO", "memory").decode()
                    .split("\r\n") if ":" in line)
        stats = c.call("MEMORY", "STATS").split(b"\r\n")
        total = int(stats[stats.index(b"total.allocated") + 1][1:])
        dataset = int(stats[stats.index(b"dataset.bytes") + 1][1:])
        used = int(info["used_memory"])
        assert abs(total - used) < 4096 and abs(dataset - int(info["used_memory_dataset"])) < 4096
        assert int(info["used_memory_overhead"]) + int(info["used_memory_dataset"]) == used
        rss = int(info["used_memory_rss"])
        assert float(info["mem_fragmentation_ratio"]) == pytest.approx(rss / used, abs=0.01)
        assert used < rss  # an estimate of the data, not the interpreter's footprint
    finally:
        c.close()
