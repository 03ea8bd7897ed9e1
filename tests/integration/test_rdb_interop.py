"""RDB files and DUMP payloads move between real Redis 7.0 and pykv, in both directions."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from support.keyspace import key_value, keyspace
from support.resp import RawClient
from support.servers import REDIS_SERVER, RealRedis

from pykv.storage.rdb._codec import crc64
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


# -- damaged files at start-up: refused exactly as redis-server refuses them ----------------------
_LOADER_MESSAGES = ("Wrong RDB checksum", "Internal error in RDB", "Short read",
                    "Wrong signature", "Can't handle RDB", "Fatal error loading",
                    "rdbLoadObject skipping", "Done loading RDB", "RDB file was saved")


def _start_on(workdir: str, argv0: list[str], *extra: str) -> tuple[int, list[str]]:
    """Start a server on ``workdir/dump.rdb``; (exit status or 0 if it came up, loader log
    lines without their pid/time prefix)."""
    from pykv.testing import free_port

    logfile = os.path.join(workdir, "server.log")
    if os.path.exists(logfile):
        os.unlink(logfile)
    port = free_port()
    proc = subprocess.Popen([*argv0, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--dir", workdir, "--logfile", logfile, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    code = None
    while code is None:
        code = proc.poll()
        if code is None and "Ready to accept connections" in _read(logfile):
            proc.terminate()  # it started: the file was accepted
            proc.wait(10)
            code = 0
        assert time.monotonic() < deadline, f"{argv0} neither started nor exited"
        time.sleep(0.05)
    lines = [line.split(" ", 6)[-1].strip() for line in _read(logfile).splitlines()]
    return code, [m for m in lines if m.startswith(_LOADER_MESSAGES)]


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


def _damaged(good: bytes, more: bool) -> dict[str, bytes]:
    crc = bytearray(good)
    crc[-3:] = b"\0\0\0"  # the last bytes overwritten: checksum mismatch
    magic = bytearray(good)
    magic[:5] = b"RODIS"
    version = bytearray(good)
    version[5:9] = b"0011"
    no_crc = good[:-8]
    files = {"checksum": bytes(crc), "truncated": good[:-20], "magic": bytes(magic)}
    listpack = b"\x0b\x00\x00\x00\x01\x00\x81v\x02\xff"  # total-bytes field 11, not 10
    objects = {"corrupt listpack": b"\x10\x01k\x0a" + listpack}
    if more:
        files.update({"version": bytes(version), "no checksum": no_crc, "empty": b""})
        objects.update({"duplicate member": b"\x02\x01s\x02\x01a\x01a",
                        "unknown type": b"\x1e\x01k\x00", "empty set": b"\x02\x01e\x00"})
    for name, obj in objects.items():
        data = b"REDIS0010\xfe\x00" + obj + b"\xff"
        files[name] = data + crc64(0, data).to_bytes(8, "little")
    return files


def test_damaged_rdb_files_are_refused_at_start_like_redis(workdir):
    _compare_start_up(workdir, more=False)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_more_damaged_rdb_files_are_refused_at_start_like_redis(workdir):
    _compare_start_up(workdir, more=True)


def _compare_start_up(workdir: str, more: bool) -> None:
    real = RealRedis()
    try:
        c = RawClient(port=real.port)
        c.call("SET", "a", "1" * 30)
        c.call("RPUSH", "l", "a", "b", "c")
        c.call("HSET", "h", "f", "v")
        assert c.call("SAVE") == b"+OK\r\n"
        good = open(os.path.join(real.dir, "dump.rdb"), "rb").read()
    finally:
        real.stop()
    pykv_cmd = [sys.executable, "-m", "pykv"]
    for name, data in _damaged(good, more).items():
        with open(os.path.join(workdir, "dump.rdb"), "wb") as fh:
            fh.write(data)
        expected = _start_on(workdir, [REDIS_SERVER])
        got = _start_on(workdir, pykv_cmd)
        assert expected[0] == (0 if name == "empty set" else 1), (name, expected)
        assert got == expected, f"{name}:\n  redis: {expected}\n  pykv:  {got}"


def test_corrupt_value_in_an_aof_base_stops_start_up_like_redis(workdir):
    """The RDB base of a multi-part AOF goes through the same checks."""

    os.makedirs(os.path.join(workdir, "appendonlydir"))
    with open(os.path.join(workdir, "appendonlydir", "appendonly.aof.manifest"), "w") as fh:
        fh.write("file appendonly.aof.1.base.rdb seq 1 type b\n")
    data = b"REDIS0010\xfe\x00" + b"\x0b\x01s\x0c" + (2).to_bytes(4, "little") \
        + (2).to_bytes(4, "little") + b"\x05\x00\x01\x00" + b"\xff"  # intset out of order
    with open(os.path.join(workdir, "appendonlydir", "appendonly.aof.1.base.rdb"), "wb") as fh:
        fh.write(data + crc64(0, data).to_bytes(8, "little"))
    # (a shallow Redis, sanitize-dump-payload no, keeps the unsorted intset; pykv never does)
    args = ("--appendonly", "yes", "--sanitize-dump-payload", "yes")
    assert _start_on(workdir, [REDIS_SERVER], *args)[0] == 1
    assert _start_on(workdir, [sys.executable, "-m", "pykv"], *args)[0] == 1


def test_real_redis_is_ready_only_once_its_rdb_is_loaded():
    """RealRedis must not take a -LOADING reply to PING for readiness (tests then saw a
    half-loaded dataset): key-load-delay stretches the load over a second, and a small
    events interval lets the server answer while loading."""
    first = RealRedis()
    try:
        c = RawClient(port=first.port)
        for i in range(60):
            c.call("SET", f"k{i}", os.urandom(2048))
        assert c.call("SAVE") == b"+OK\r\n"
        workdir = tempfile.mkdtemp(prefix="loading-")
        shutil.copy(os.path.join(first.dir, "dump.rdb"), workdir)
    finally:
        first.stop()
    slow = RealRedis(["--dir", workdir, "--dbfilename", "dump.rdb", "--key-load-delay", "20000",
                      "--loading-process-events-interval-bytes", "1024"])
    try:
        c = RawClient(port=slow.port)
        assert c.call("PING") == b"+PONG\r\n"
        assert c.call("DBSIZE") == b":60\r\n"
    finally:
        slow.stop()
        shutil.rmtree(workdir, ignore_errors=True)


EDGE_ELEMENTS = ["0", "127", "128", "-1", "-4096", "4095", "4096", "32767", "-32769",
                 "8388607", "8388608", "2147483647", "-2147483649", "9223372036854775807",
                 "-9223372036854775808", "9223372036854775808", "007", "-0", " 1", "1.5",
                 "", "a" * 63, "b" * 64, "10", "9"]


def build_packed_edges(c: RawClient) -> None:
    """Listpack hashes and zsets whose entries take every listpack encoding, at and past
    the entry limits, with scores whose text is not what the double prints as; a stream
    whose node listpacks hold the same elements."""
    for i, element in enumerate(EDGE_ELEMENTS):
        c.call("HSET", "hash:edges", element, EDGE_ELEMENTS[-1 - i])
    c.call("HSET", "hash:512", *[x for i in range(512) for x in (str(i * 1000), f"v{i}")])
    c.call("HSET", "hash:513", *[x for i in range(513) for x in (str(i * 1000), f"v{i}")])
    scores = ["-0", "0", "1e300", "-inf", "inf", "9007199254740993", "-2.5", "3", "3", "3",
              "0.1", "123456789012", "-17"]
    members = ["m-0", "m0", "big", "neg-inf", "pos-inf", "2^53+1", "neg", "10", "9", "b" * 64,
               "tenth", "12-digit", "-4096"]
    c.call("ZADD", "zset:edges", *[x for s, m in zip(scores, members, strict=True)
                                   for x in (s, m)])
    c.call("ZADD", "zset:128", *[x for i in range(128) for x in (str(i % 7), str(i))])
    c.call("ZADD", "zset:129", *[x for i in range(129) for x in (str(i % 7), str(i))])
    # streams: the edge elements as values and as field names (the master's and others),
    # big values, several nodes, deleted entries and a group with pending entries
    for i, element in enumerate(EDGE_ELEMENTS):
        c.call("XADD", "stream:edges", f"{i + 1}-{i}", "f", element)
        c.call("XADD", "stream:edges", f"{i + 1}-{i + 100}", element, EDGE_ELEMENTS[-1 - i])
    c.call("XADD", "stream:edges", "99-0", "f", "x" * 5000, "g", "y" * 70000)
    for i in range(250):
        c.call("XADD", "stream:edges", f"{1000 + i // 9}-{i}", "f", str(i * 997 - 70000))
    c.call("XDEL", "stream:edges", "2-1", "3-102", *[f"{1000 + i // 9}-{i}" for i in range(0, 250, 3)])
    c.call("XGROUP", "CREATE", "stream:edges", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "30", "STREAMS", "stream:edges", ">")


def _digest(c: RawClient) -> bytes:
    return c.call("DEBUG", "DIGEST")


def test_packed_edge_values_move_both_ways_with_redis_digests(workdir):
    real = RealRedis()
    try:
        c = RawClient(port=real.port)
        build_packed_edges(c)
        expected, digest = snapshot(c), _digest(c)
        assert c.call("SAVE") == b"+OK\r\n"
        shutil.copy(os.path.join(real.dir, "dump.rdb"), os.path.join(workdir, "dump.rdb"))
        c.close()
    finally:
        real.stop()
    with Server(config={"dir": workdir, "save": "", "enable-debug-command": "yes"}) as server:
        ours = RawClient(port=server.port)
        assert snapshot(ours) == expected
        assert _digest(ours) == digest
        assert ours.call("SAVE") == b"+OK\r\n"
    back = RealRedis(["--dir", workdir, "--dbfilename", "dump.rdb"])
    try:
        c = RawClient(port=back.port)
        assert snapshot(c) == expected
        assert _digest(c) == digest
    finally:
        back.stop()
