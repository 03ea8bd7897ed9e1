"""RDB files and DUMP payloads move between real Redis 7.0 and pykv, in both directions."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile

import pytest
from support.keyspace import key_value, keyspace
from support.resp import RawClient
from support.servers import RealRedis

from pykv.testing import Server

pytestmark = pytest.mark.usefixtures("redis_binary")


def build_dataset(c: RawClient, seed: int = 7) -> None:
    """A mixed dataset covering every encoding Redis 7.0 writes."""
    rnd = random.Random(seed)
    c.call("SET", "str:small", "hello")
    c.call("SET", "str:int", "12345")
    c.call("SET", "str:bigint", "123456789012345")
    c.call("SET", "str:neg", "-17")
    c.call("SET", "str:compressible", "abc" * 500)
    c.call("SET", "str:random", bytes(rnd.getrandbits(8) for _ in range(300)))
    c.call("SET", "str:empty", "")
    c.call("SET", "str:ttl", "x", "PX", "3600000")
    c.call("RPUSH", "list:small", "a", "1", "-5", "b" * 70, "300000")
    c.call("RPUSH", "list:big", *[f"item-{i}-{'z' * (i % 50)}" for i in range(3000)])
    c.call("HSET", "hash:small", "f1", "v1", "f2", "2", "n", "-99999999999")
    c.call("HSET", "hash:big", *[x for i in range(700) for x in (f"f{i}", f"v{i}")])
    c.call("SADD", "set:int", *[str(i * 7 - 100) for i in range(50)])
    c.call("SADD", "set:str", "a", "b", "c", "1")
    c.call("SADD", "set:bigint", *[str(i) for i in range(1000)])
    c.call("ZADD", "zset:small", "1", "a", "2.5", "b", "-3", "c", "inf", "d")
    c.call("ZADD", "zset:big", *[x for i in range(300) for x in (str(i / 7), f"m{i}")])
    c.call("EXPIRE", "hash:small", "100000")
    c.call("SELECT", "3")
    c.call("SET", "db3:key", "in db 3")
    c.call("SELECT", "0")


def snapshot(c: RawClient) -> dict:
    """Every key of dbs 0 and 3: type, contents by value (hash fields to values, set members
    as a set), whether it has a TTL, and its encoding."""
    return keyspace(c, (0, 3))


@pytest.fixture
def workdir():
    path = tempfile.mkdtemp(prefix="rdb-interop-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_redis_rdb_loads_into_pykv(workdir):
    real = RealRedis()
    try:
        c = RawClient(port=real.port)
        build_dataset(c)
        expected = snapshot(c)
        assert c.call("SAVE") == b"+OK\r\n"
        shutil.copy(os.path.join(real.dir, "dump.rdb"), os.path.join(workdir, "dump.rdb"))
        c.close()
    finally:
        real.stop()
    with Server(config={"dir": workdir, "save": ""}) as server:
        got = snapshot(RawClient(port=server.port))
    assert got == expected


def test_pykv_rdb_loads_into_redis(workdir):
    with Server(config={"dir": workdir, "save": ""}) as server:
        c = RawClient(port=server.port)
        build_dataset(c)
        expected = snapshot(c)
        assert c.call("SAVE") == b"+OK\r\n"
    check = subprocess.run(["redis-check-rdb", os.path.join(workdir, "dump.rdb")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "RDB looks OK" in check.stdout
    real = RealRedis(["--dir", workdir, "--dbfilename", "dump.rdb"])
    try:
        got = snapshot(RawClient(port=real.port))
    finally:
        real.stop()
    assert got == expected


# encodings whose DUMP bytes follow from the contents alone (no hash-table order)
DETERMINISTIC_DUMP = {b"embstr", b"int", b"raw", b"listpack", b"intset", b"quicklist",
                      b"skiplist"}


def test_dump_restore_both_ways(real_redis, pykv_proc):
    real = RawClient(port=real_redis.port)
    ours = RawClient(port=pykv_proc.port)
    for c in (real, ours):
        c.call("FLUSHALL")
    build_dataset(real)
    keys = [k for k in real.call("KEYS", "*").split(b"\r\n")[2::2] if k]
    for key in keys:
        payload = _bulk(real.call("DUMP", key))
        assert ours.call("RESTORE", key, "0", payload, "REPLACE") == b"+OK\r\n", key
        expected = key_value(real, key)
        assert key_value(ours, key) == expected, key
        back = _bulk(ours.call("DUMP", key))
        assert real.call("RESTORE", key + b":back", "0", back) == b"+OK\r\n", key
        assert key_value(real, key + b":back") == expected, key
        for cmd in (("TYPE",), ("OBJECT", "ENCODING")):
            assert real.call(*cmd, key) == ours.call(*cmd, key)
            assert real.call(*cmd, key + b":back") == real.call(*cmd, key)
    # LZF output is each compressor's own (any valid stream loads), so the bytes are compared
    # with rdbcompression off on both servers
    try:
        for c in (real, ours):
            assert c.call("CONFIG", "SET", "rdbcompression", "no") == b"+OK\r\n"
        differ = []
        for key in keys:
            encoding = real.call("OBJECT", "ENCODING", key).split(b"\r\n")[1]
            if encoding in DETERMINISTIC_DUMP and ours.call("DUMP", key) != real.call("DUMP", key):
                differ.append((key, encoding))
        assert differ == [], "DUMP bytes differ from Redis's"
    finally:
        for c in (real, ours):
            c.call("CONFIG", "SET", "rdbcompression", "yes")


def _bulk(reply: bytes) -> bytes:
    assert reply.startswith(b"$"), reply
    head, _, rest = reply.partition(b"\r\n")
    return rest[:int(head[1:])]
