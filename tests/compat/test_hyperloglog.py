"""HyperLogLog against real redis-server 7.0: same counts, same bytes, values interchangeable."""
from __future__ import annotations

import random

from support.resp import RawClient


def _bulk(reply: bytes) -> bytes:
    header, _, rest = reply.partition(b"\r\n")
    return rest[: int(header[1:])]


def test_pfadd_pfcount_and_bytes_match(diff):
    rng = random.Random(11)
    total = 0
    for size in (1, 5, 50, 200, 1000, 3000, 12000):
        elements = [b"e%d-%d" % (total + i, rng.getrandbits(20)) for i in range(size)]
        total += size
        for i in range(0, size, 500):
            diff("PFADD", "h", *elements[i:i + 500])
        diff("PFCOUNT", "h")
        diff("GET", "h")
        diff("PFDEBUG", "ENCODING", "h")
    diff("PFADD", "h", "e1-1")
    diff("PFCOUNT", "h", "nokey")


def test_sparse_bytes_and_decode(diff):
    for i in range(40):
        diff("PFADD", "s", f"x{i}", f"y{i * 7}")
        diff("PFDEBUG", "DECODE", "s")
    diff("GET", "s")
    diff("PFCOUNT", "s")
    diff("GET", "s")
    diff("PFADD", "empty")
    diff("GET", "empty")
    diff("PFCOUNT", "empty")
    diff("GET", "empty")
    diff("PFADD", "empty")
    diff("PFDEBUG", "GETREG", "s")
    diff("PFDEBUG", "ENCODING", "s")
    diff("PFDEBUG", "TODENSE", "s")
    diff("PFDEBUG", "TODENSE", "s")
    diff("PFDEBUG", "DECODE", "s")
    diff("PFDEBUG", "FOO", "s")
    diff("PFDEBUG", "GETREG", "nokey")


def test_merge_and_multi_count(diff):
    rng = random.Random(5)
    for name, n in (("a", 30), ("b", 400), ("c", 5000)):
        elements = [b"%s%d" % (name.encode(), rng.getrandbits(30)) for _ in range(n)]
        for i in range(0, n, 1000):
            diff("PFADD", name, *elements[i:i + 1000])
    diff("PFCOUNT", "a", "b")
    diff("PFCOUNT", "a", "b", "c", "nokey")
    diff("PFMERGE", "ab", "a", "b")
    diff("GET", "ab")
    diff("PFCOUNT", "ab")
    diff("PFMERGE", "abc", "a", "b", "c")
    diff("GET", "abc")
    diff("PFMERGE", "a", "b")
    diff("GET", "a")
    diff("PFCOUNT", "a")
    diff("PFMERGE", "fresh")
    diff("GET", "fresh")
    diff("PFMERGE", "fresh2", "nokey")
    diff("PFCOUNT", "fresh2")


def test_sparse_max_bytes_config(diff):
    diff("CONFIG", "SET", "hll-sparse-max-bytes", "200")
    try:
        for i in range(0, 300, 10):
            diff("PFADD", "h", *[f"k{j}" for j in range(i, i + 10)])
            diff("PFDEBUG", "ENCODING", "h")
        diff("GET", "h")
    finally:
        for cl in (diff.real, diff.ours):
            cl.call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


def test_errors(diff):
    diff.many([
        ("SET", "str", "hello"), ("PFADD", "str", "a"), ("PFCOUNT", "str"),
        ("PFCOUNT", "str", "other"), ("PFMERGE", "d", "str"), ("PFDEBUG", "GETREG", "str"),
        ("SET", "bad", "HYLL\x02" + "\x00" * 20), ("PFADD", "bad", "a"),
        ("SET", "short", "HYLL\x00" + "\x00" * 20), ("PFCOUNT", "short"),
        ("SET", "corrupt", "HYLL\x01" + "\x00" * 11 + "\x7f\xf0"), ("PFCOUNT", "corrupt"),
        ("PFCOUNT", "corrupt", "nokey"), ("PFADD", "corrupt", "x", "y", "z", "w"),
        ("PFMERGE", "d2", "corrupt"), ("EXISTS", "d2"),
        ("ZADD", "z", "1", "a"), ("PFADD", "z", "a"), ("PFCOUNT", "z"),
    ])


def test_values_interoperate(real_redis, pykv_proc):
    real = RawClient(port=real_redis.port)
    ours = RawClient(port=pykv_proc.port)
    try:
        for cl in (real, ours):
            cl.call("FLUSHALL")
        rng = random.Random(3)
        for n in (10, 2000, 20000):
            elems = [b"v%d" % rng.getrandbits(40) for _ in range(n)]
            for i in range(0, n, 1000):
                real.call("PFADD", f"r{n}", *elems[i:i + 1000])
                ours.call("PFADD", f"o{n}", *elems[i:i + 1000])
            from_real = _bulk(real.call("GET", f"r{n}"))
            from_ours = _bulk(ours.call("GET", f"o{n}"))
            assert from_real == from_ours
            ours.call("SET", "copy", from_real)
            real.call("SET", "copy", from_ours)
            assert ours.call("PFCOUNT", "copy") == real.call("PFCOUNT", f"r{n}")
            assert real.call("PFCOUNT", "copy") == ours.call("PFCOUNT", f"o{n}")
            ours.call("PFADD", "copy", "extra1", "extra2")
            real.call("PFADD", "copy", "extra1", "extra2")
            assert _bulk(ours.call("GET", "copy")) == _bulk(real.call("GET", "copy"))
    finally:
        real.close()
        ours.close()


def test_selftest(raw):
    assert raw.call("PFSELFTEST") == b"+OK\r\n"
