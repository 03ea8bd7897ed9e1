"""pykv as the master of a real Redis 7.0 replica (and of replication clients).

Full sync (disk and diskless, with the replica's ``repl-diskless-load`` variants) of a
mixed dataset, then random writes of every family flowing through the stream, ending with
``DEBUG DIGEST`` and a key-by-key comparison; partial resync after a link kill, full
resync after a backlog overflow, WAIT, min-replicas-to-write, ``redis-cli --rdb`` and
``redis-cli --replica`` against pykv, and the stream bytes compared with redis-server's.
"""
from __future__ import annotations

import os
import random
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
from support.keyspace import key_value
from support.resp import RawClient, encode_command, parse
from support.servers import RealRedis, require_redis

from pykv.testing import Server

pytestmark = pytest.mark.usefixtures("redis_binary")

DBS = (0, 1, 3)
REDIS_CLI = shutil.which("redis-cli") or "redis-cli"


# -- helpers ---------------------------------------------------------------------------------
def info(c: RawClient, section: str) -> dict[str, str]:
    text = parse(c.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def wait_for(what: str, predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.05)


def wait_link_up(replica: RawClient) -> None:
    wait_for("the replica's link to be up",
             lambda: info(replica, "replication").get("master_link_status") == "up")


def wait_in_sync(master: RawClient, replica: RawClient) -> None:
    """Until the replica has processed everything the master has produced."""
    def caught_up() -> bool:
        m = int(info(master, "replication")["master_repl_offset"])
        r = info(replica, "replication")
        return r.get("master_link_status") == "up" and int(r["slave_repl_offset"]) == m
    wait_for("the replica to catch up", caught_up)


def dataset(c: RawClient) -> dict:
    """(db, key) -> (type, contents, has a TTL) for every key of ``DBS``."""
    out = {}
    for db in DBS:
        c.call("SELECT", str(db))
        for key in parse(c.call("KEYS", "*")):
            kind, value = key_value(c, key)
            out[(db, key)] = (kind, value, parse(c.call("PTTL", key)) >= 0)
    c.call("SELECT", "0")
    return out


def expire_short_ttls(c: RawClient, names: list[str]) -> None:
    """Touch the keys that got TTLs of milliseconds, so the master deletes (and propagates)
    the expired ones: a replica never deletes them itself."""
    time.sleep(0.06)
    for db in DBS:
        c.call("SELECT", str(db))
        for name in names:
            c.call("EXISTS", name)
    c.call("SELECT", "0")


def assert_same_dataset(master: RawClient, replica: RawClient) -> None:
    assert parse(master.call("DEBUG", "DIGEST")) == parse(replica.call("DEBUG", "DIGEST"))
    mine, theirs = dataset(master), dataset(replica)
    assert mine.keys() == theirs.keys()
    for key, value in mine.items():
        assert theirs[key] == value, key


def build_dataset(c: RawClient) -> None:
    """Every type, with expiries, in several databases."""
    c.call("SELECT", "0")
    c.call("SET", "s", "hello")
    c.call("SET", "n", "12345")
    c.call("SET", "ttl", "x", "PX", "3600000")
    c.call("RPUSH", "l", *[f"i{i}" for i in range(200)])
    c.call("RPUSH", "lsmall", "a", "1")
    c.call("HSET", "h", *[x for i in range(300) for x in (f"f{i}", f"v{i}")])
    c.call("HSET", "hsmall", "a", "1")
    c.call("SADD", "si", *[str(i) for i in range(100)])
    c.call("SADD", "ss", "a", "b", "c")
    c.call("ZADD", "z", *[x for i in range(200) for x in (str(i / 3), f"m{i}")])
    c.call("ZADD", "zsmall", "1", "a")
    for i in range(20):
        c.call("XADD", "x", "*", "f", str(i))
    c.call("XGROUP", "CREATE", "x", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "5", "STREAMS", "x", ">")
    c.call("SELECT", "1")
    c.call("SET", "db1", "one")
    c.call("HSET", "db1h", "f", "v")
    c.call("EXPIRE", "db1h", "100000")
    c.call("SELECT", "3")
    c.call("RPUSH", "db3l", "x", "y")
    c.call("SELECT", "0")


_SCRIPT = "redis.call('incr', KEYS[1]); redis.call('rpush', KEYS[2], ARGV[1]); return 1"


def random_writes(c: RawClient, other: RawClient, n: int, seed: int) -> None:
    """``n`` random writes of every family on ``c`` (``other`` serves blocking pops)."""
    rnd = random.Random(seed)
    keys = [f"k{i}" for i in range(40)]

    def k() -> str:
        return rnd.choice(keys)

    ops = [
        lambda: c.call("SET", k(), str(rnd.random())),
        lambda: c.call("INCR", "ctr" + k()),
        lambda: c.call("APPEND", "str" + k(), "ab"),
        lambda: c.call("SET", "e" + k(), "v", "PX", str(rnd.randint(1, 50))),
        lambda: c.call("SET", "e" + k(), "v", "EX", "1000"),
        lambda: c.call("EXPIRE", "ctr" + k(), "-1"),  # in the past: a DEL
        lambda: c.call("PEXPIRE", "str" + k(), str(rnd.randint(1, 30))),
        lambda: c.call("GETEX", "e" + k(), "PERSIST"),
        lambda: c.call("DEL", k()),
        lambda: c.call("LPUSH", "l" + k(), *[str(i) for i in range(rnd.randint(1, 4))]),
        lambda: c.call("RPOP", "l" + k()),
        lambda: c.call("LMOVE", "l" + k(), "l" + k(), "LEFT", "RIGHT"),
        lambda: c.call("HSET", "h" + k(), f"f{rnd.randint(0, 9)}", "v"),
        lambda: c.call("HINCRBYFLOAT", "hf" + k(), "f", "1.5"),
        lambda: c.call("HDEL", "h" + k(), f"f{rnd.randint(0, 9)}"),
        lambda: c.call("SADD", "s" + k(), *[str(rnd.randint(0, 20)) for _ in range(3)]),
        lambda: c.call("SPOP", "s" + k()),
        lambda: c.call("SRANDMEMBER", "s" + k()),
        lambda: c.call("ZADD", "z" + k(), str(rnd.randint(0, 100)), f"m{rnd.randint(0, 9)}"),
        lambda: c.call("ZINCRBY", "z" + k(), "2", f"m{rnd.randint(0, 9)}"),
        lambda: c.call("ZPOPMIN", "z" + k()),
        lambda: c.call("XADD", "x" + k(), "MAXLEN", "~", "10", "*", "a", "1"),
        lambda: c.call("EVAL", _SCRIPT, "2", "ctr" + k(), "l" + k(), "s"),
        lambda: c.call("SELECT", str(rnd.choice(DBS))),
    ]
    for i in range(n):
        roll = rnd.random()
        if roll < 0.02:
            c.send_raw(b"MULTI\r\nINCR mctr\r\nRPUSH mlist a\r\nSET mset 1\r\nEXEC\r\n")
            for _ in range(5):
                c.read_reply()
        elif roll < 0.03:
            other.send_raw(b"BLPOP blocked%d:%d 5\r\n" % (seed, i))
            wait_for("BLPOP to block",
                     lambda: info(c, "clients").get("blocked_clients") == "1")
            c.call("SELECT", "0")
            c.call("RPUSH", f"blocked{seed}:{i}", "v1", "v2")
            other.read_reply()
        elif roll < 0.035:
            c.call("SWAPDB", "0", "1")
        elif roll < 0.037 and i > n // 2:
            c.call("FLUSHALL")
        else:
            rnd.choice(ops)()
    c.call("SELECT", "0")
    expire_short_ttls(c, [p + k for k in keys for p in ("e", "str")])


def redis_replica(master_port: int, extra: list[str] | None = None) -> RealRedis:
    return RealRedis(extra=["--replicaof", "127.0.0.1", str(master_port), *(extra or [])])


def pykv(config: dict | None = None) -> Server:
    """A pykv server that allows DEBUG (DIGEST) and syncs diskless replicas at once."""
    return Server(config={"enable-debug-command": "yes", "repl-diskless-sync-delay": "0",
                          **(config or {})})


@pytest.fixture
def pykv_master():
    with pykv() as server:
        yield server


# -- full sync and the stream ----------------------------------------------------------------
@pytest.mark.parametrize(("master_config", "load", "writes"), [
    ({"repl-diskless-sync": "no"}, "disabled", 1000),
    ({"repl-diskless-sync": "yes"}, "disabled", 2500),
    ({"repl-diskless-sync": "yes"}, "swapdb", 500),
    ({"repl-diskless-sync": "yes"}, "on-empty-db", 500),
], ids=["disk", "diskless", "diskless-swapdb", "diskless-on-empty-db"])
def test_full_sync_then_stream(master_config, load, writes):
    with pykv({"maxmemory-policy": "allkeys-random", **master_config}) as server:
        c = RawClient(port=server.port)
        other = RawClient(port=server.port)
        build_dataset(c)
        replica = redis_replica(server.port, ["--repl-diskless-load", load])
        try:
            r = RawClient(port=replica.port)
            wait_link_up(r)
            wait_in_sync(c, r)
            assert_same_dataset(c, r)
            random_writes(c, other, writes, seed=len(load) + len(master_config))
            # evictions flow as DELs too
            used = int(info(c, "memory")["used_memory"])
            c.call("CONFIG", "SET", "maxmemory", str(used + 200_000))
            for i in range(300):
                c.call("SET", f"big{i}", "x" * 2000)
            c.call("CONFIG", "SET", "maxmemory", "0")
            assert int(info(c, "stats")["evicted_keys"]) > 0
            wait_in_sync(c, r)
            assert_same_dataset(c, r)
            stats = info(c, "stats")
            assert stats["sync_full"] == "1"
            rinfo = info(c, "replication")
            assert rinfo["connected_slaves"] == "1"
            assert re.fullmatch(rf"ip=127\.0\.0\.1,port={replica.port},state=online,"
                                r"offset=\d+,lag=\d+", rinfo["slave0"])
        finally:
            replica.stop()


def test_writes_during_sync_are_delivered_after_the_snapshot():
    """A slow BGSAVE child (rdb-key-save-delay): writes made meanwhile reach the replica."""
    with pykv({"repl-diskless-sync": "no", "rdb-key-save-delay": "2000"}) as server:
        c = RawClient(port=server.port)
        for i in range(500):
            c.call("SET", f"pre{i}", str(i))
        replica = redis_replica(server.port)
        try:
            wait_for("the sync to start",
                     lambda: info(c, "replication").get("connected_slaves") == "1")
            for i in range(200):
                c.call("SET", f"during{i}", str(i))
                c.call("INCR", "pre1")
            r = RawClient(port=replica.port)
            wait_in_sync(c, r)
            assert_same_dataset(c, r)
        finally:
            replica.stop()


# -- partial resync and its limits ------------------------------------------------------------
def test_partial_resync_after_link_kill(pykv_master):
    c = RawClient(port=pykv_master.port)
    build_dataset(c)
    replica = redis_replica(pykv_master.port)
    try:
        r = RawClient(port=replica.port)
        wait_in_sync(c, r)
        c.call("SET", "before-kill", "1")
        listed = parse(c.call("CLIENT", "LIST", "TYPE", "replica")).decode()
        assert len(listed.splitlines()) == 1 and " flags=S " in listed
        memory = info(c, "memory")
        assert int(memory["mem_replication_backlog"]) == 1 << 20
        assert int(memory["mem_total_replication_buffers"]) >= 1 << 20
        assert parse(c.call("CLIENT", "KILL", "TYPE", "replica")) == 1
        c.call("SET", "after-kill", "2")
        c.call("RPUSH", "l", "more")
        wait_in_sync(c, r)
        stats = info(c, "stats")
        assert (stats["sync_full"], stats["sync_partial_ok"], stats["sync_partial_err"]) == \
            ("1", "1", "0")
        assert_same_dataset(c, r)
    finally:
        replica.stop()


def test_backlog_overflow_needs_a_full_resync(pykv_master):
    c = RawClient(port=pykv_master.port)
    c.call("CONFIG", "SET", "repl-backlog-size", "16384")
    replica = redis_replica(pykv_master.port)
    try:
        r = RawClient(port=replica.port)
        wait_in_sync(c, r)
        replica.proc.send_signal(signal.SIGSTOP)  # it cannot reconnect before the overflow
        try:
            c.call("CLIENT", "KILL", "TYPE", "replica")
            pipe = b"".join(b"*3\r\n$3\r\nSET\r\n$4\r\nk%03d\r\n$1000\r\n%s\r\n"
                            % (i, b"v" * 1000) for i in range(100))
            c.send_raw(pipe)
            for _ in range(100):
                c.read_reply()
        finally:
            replica.proc.send_signal(signal.SIGCONT)
        wait_in_sync(c, r)
        stats = info(c, "stats")
        assert stats["sync_full"] == "2"
        assert stats["sync_partial_err"] == "1"
        repl = info(c, "replication")
        assert repl["repl_backlog_histlen"] == "16384"
        assert_same_dataset(c, r)
    finally:
        replica.stop()


def test_psync_continue_replies():
    """PSYNC from a replication client: +CONTINUE with the id for psync2 replicas, without
    for the others; an unknown history gets +FULLRESYNC and counts as a partial error."""
    with pykv({"repl-diskless-sync": "no"}) as server:
        first = RawClient(port=server.port)
        first.call("REPLCONF", "capa", "psync2")
        first.send_raw(b"PSYNC ? -1\r\n")
        line = first.sock.recv(200).split(b"\r\n")[0]
        m = re.fullmatch(rb"\+FULLRESYNC ([0-9a-f]{40}) (\d+)", line)
        assert m, line
        replid, offset = m.group(1), int(m.group(2))
        c = RawClient(port=server.port)
        c.call("SET", "a", "1")
        second = RawClient(port=server.port)
        second.call("REPLCONF", "capa", "psync2")
        second.send_raw(b"PSYNC %s %d\r\n" % (replid, offset + 1))
        data = wait_for("+CONTINUE", lambda: second.sock.recv(4096))
        assert data.startswith(b"+CONTINUE %s\r\n" % replid)
        assert b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n" in data
        third = RawClient(port=server.port)
        third.send_raw(b"PSYNC %s %d\r\n" % (replid, offset + 1))
        assert third.sock.recv(4096).startswith(b"+CONTINUE\r\n")
        fourth = RawClient(port=server.port)
        fourth.send_raw(b"PSYNC %s 1\r\n" % (b"f" * 40))
        assert fourth.sock.recv(100).startswith(b"+FULLRESYNC ")
        stats = info(c, "stats")
        assert (stats["sync_full"], stats["sync_partial_ok"], stats["sync_partial_err"]) == \
            ("2", "2", "1")


# -- WAIT and min-replicas-to-write ------------------------------------------------------------
def test_wait_counts_replicas(pykv_master):
    c = RawClient(port=pykv_master.port)
    assert parse(c.call("WAIT", "0", "0")) == 0
    replica = redis_replica(pykv_master.port)
    try:
        r = RawClient(port=replica.port)
        wait_in_sync(c, r)
        c.call("SET", "k", "v")
        assert parse(c.call("WAIT", "1", "5000")) == 1
        assert parse(c.call("WAIT", "2", "300")) == 1  # only one exists: the timeout answers
    finally:
        replica.stop()
    wait_for("the replica to be gone",
             lambda: info(c, "replication")["connected_slaves"] == "0")
    c.call("SET", "k", "v2")
    start = time.monotonic()
    assert parse(c.call("WAIT", "1", "200")) == 0
    assert time.monotonic() - start >= 0.19  # it did wait for the timeout


def _refusals(port: int) -> list[bytes]:
    c = RawClient(port=port)
    out = [c.call("SET", "a", "1"), c.call("GET", "a")]
    c.send_raw(b"MULTI\r\nSET a 1\r\nEXEC\r\n")
    out += [c.read_reply() for _ in range(3)]
    out.append(c.call("EVAL", "return redis.call('set', 'a', '1')", "0"))
    out.append(c.call("EVAL", "return redis.call('get', 'a')", "0"))
    return out


def test_min_replicas_to_write_refusals_match_redis(real_redis):
    config = {"min-replicas-to-write": "1", "min-replicas-max-lag": "10"}
    theirs = RealRedis(extra=["--min-replicas-to-write", "1"])
    try:
        with pykv(config) as server:
            assert _refusals(server.port) == _refusals(theirs.port)
            assert _refusals(server.port)[0] == b"-NOREPLICAS Not enough good replicas " \
                b"to write.\r\n"
            replica = redis_replica(server.port)
            try:
                c = RawClient(port=server.port)
                wait_for("a good replica",
                         lambda: info(c, "replication").get("min_slaves_good_slaves") == "1")
                assert parse(c.call("SET", "a", "1")) == b"OK"
            finally:
                replica.stop()
    finally:
        theirs.stop()


# -- replication clients: redis-cli, the raw stream ----------------------------------------------
def test_redis_cli_rdb_is_a_valid_rdb(pykv_master):
    c = RawClient(port=pykv_master.port)
    build_dataset(c)
    workdir = tempfile.mkdtemp(prefix="repl-rdb-")
    try:
        path = os.path.join(workdir, "dump.rdb")
        done = subprocess.run([REDIS_CLI, "-p", str(pykv_master.port), "--rdb", path],
                              capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        check = subprocess.run(["redis-check-rdb", path], capture_output=True, timeout=60)
        assert check.returncode == 0, check.stdout
        loaded = RealRedis(extra=["--dbfilename", "dump.rdb"])
        try:
            shutil.copy(path, os.path.join(loaded.dir, "dump.rdb"))
            r = RawClient(port=loaded.port)
            r.call("DEBUG", "RELOAD", "NOSAVE")
            assert_same_dataset(c, r)
        finally:
            loaded.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


_HELLO_DUMP = b"\x00\x05hello\n\x00cr\xdfve4 \n"  # DUMP of "hello" by Redis 7.0

_STREAM_STEPS = [
    ["SET", "a", "1"],
    ["SELECT", "2"],
    ["RPUSH", "l", "x", "y"],
    ["PEXPIREAT", "l", "99999999999999"],
    ["SELECT", "0"],
    ["EVAL", "redis.call('set','x','1'); redis.call('incr','x')", "0"],
    ["EVAL", "redis.call('set','y','1')", "0"],
    ["SADD", "s", "m"],
    ["SPOP", "s"],
    ["INCRBYFLOAT", "f", "1.5"],
    ["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
    ["SET", "t", "1", "PX", "1"],
    ["DEBUG", "SLEEP", "0.01"],
    ["INCR", "t"],  # the expired key's DEL and the INCR: one MULTI/EXEC (Redis 7.0)
    ["SET", "u", "1", "PX", "1"],
    ["DEBUG", "SLEEP", "0.01"],
    ["GET", "u"],  # a DEL alone
    ["DEBUG", "SET-ACTIVE-EXPIRE", "1"],
    ["EXPIRE", "a", "-1"],
    ["XADD", "st", "1-1", "a", "1"],
    ["XGROUP", "CREATE", "st", "g", "0"],
    # consumer-group effects (streamPropagateXCLAIM/GroupID/ConsumerCreation in 7.0.15)
    ["XADD", "st", "1-2", "b", "2"],
    ["XADD", "st", "1-3", "c", "3"],
    ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "st", ">"],
    ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "st", ">"],
    ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "st", "0"],
    ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "st", "0"],
    ["XREADGROUP", "GROUP", "g", "n1", "NOACK", "STREAMS", "st", "0"],
    ["XREADGROUP", "GROUP", "g", "n2", "NOACK", "STREAMS", "st", ">"],
    ["XADD", "st", "1-4", "d", "4"],
    ["XREADGROUP", "GROUP", "g", "carol", "NOACK", "STREAMS", "st", ">"],
    ["XADD", "st", "1-5", "e", "5"],
    ["XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "st", ">"],
    ["XADD", "st2", "1-1", "a", "1"],
    ["XGROUP", "CREATE", "st2", "g", "0"],
    ["XADD", "st", "1-6", "f", "6"],
    ["XREADGROUP", "GROUP", "g", "n3", "STREAMS", "st", "st2", ">", ">"],
    ["XCLAIM", "st", "g", "bob", "0", "1-1"],
    ["XCLAIM", "st", "g", "newc", "0", "1-2", "JUSTID"],
    ["XCLAIM", "st", "g", "newc", "0", "1-6", "LASTID", "5-0"],
    ["XCLAIM", "st", "g", "newc", "0", "9-9", "LASTID", "8-0"],
    ["XCLAIM", "st", "g", "newc", "0", "9-9", "FORCE"],
    ["XCLAIM", "st", "g", "newd", "0", "1-1", "IDLE", "5000", "RETRYCOUNT", "7"],
    ["XAUTOCLAIM", "st", "g", "newe", "0", "0", "COUNT", "1"],
    ["XAUTOCLAIM", "st", "g", "newe", "0", "0", "JUSTID"],
    ["XACK", "st", "g", "1-1"],
    ["XGROUP", "CREATECONSUMER", "st", "g", "erin"],
    ["XGROUP", "SETID", "st", "g", "1-2", "ENTRIESREAD", "2"],
    ["XGROUP", "DELCONSUMER", "st", "g", "erin"],
    ["XDEL", "st", "1-3"],
    ["XAUTOCLAIM", "st", "g", "dave", "0", "0"],
    ["XDEL", "st", "1-2"],
    ["XCLAIM", "st", "g", "dave", "0", "1-2"],
    ["XDEL", "st", "1-6"],
    ["XCLAIM", "st", "g", "dave", "0", "1-6", "LASTID", "9-0"],
    ["EVAL", "redis.call('xreadgroup','group','g','sc','streams','st','0');"
     " redis.call('xadd','st','7-1','q','1');"
     " return redis.call('xreadgroup','group','g','sc','noack','streams','st','>')", "1", "st"],
    ("blocked", ["XREADGROUP", "GROUP", "g", "blk", "BLOCK", "0", "STREAMS", "st", ">"],
     ["XADD", "st", "10-1", "z", "1"]),
    ("blocked", ["XREADGROUP", "GROUP", "g", "blk2", "NOACK", "BLOCK", "0", "STREAMS", "st", ">"],
     ["XADD", "st", "10-2", "z", "1"]),
    # other families: a random choice, a served blocked pop, an option kept (7.0.15's output)
    ["SADD", "s3", "a", "b", "c", "d", "e"],
    ["SPOP", "s3", "1"],
    ["SPOP", "s3", "2"],
    ["SPOP", "s3", "10"],
    ["SADD", "s4", *[str(i) for i in range(20)]],
    ["SPOP", "s4", "15"],
    ["ZADD", "z1", "1", "a", "2", "b", "3", "c", "4", "d"],
    ["BZPOPMIN", "z1", "0"],
    ["BZPOPMAX", "z1", "0"],
    ["BZMPOP", "0", "1", "z1", "MIN", "COUNT", "5"],
    ["ZADD", "z2", "1", "a", "2", "b", "3", "c", "4", "d"],
    ["ZMPOP", "1", "z2", "MAX", "COUNT", "2"],
    ["ZPOPMIN", "z2", "0"],
    ("blocked", ["BZPOPMAX", "bz", "0"], ["ZADD", "bz", "1", "a", "2", "b"]),
    ("blocked", ["BZMPOP", "0", "1", "bz2", "MAX", "COUNT", "2"],
     ["ZADD", "bz2", "1", "a", "2", "b", "3", "c"]),
    ("blocked", ["BZMPOP", "0", "1", "bz3", "MIN"], ["ZADD", "bz3", "1", "a", "2", "b"]),
    ("blocked", ["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"], ["RPUSH", "src", "v"]),
    ("blocked", ["BLMPOP", "0", "1", "bm", "LEFT", "COUNT", "2"], ["RPUSH", "bm", "a", "b", "c"]),
    ["SET", "x5", "1", "EX", "100"],
    ["EXPIRE", "x5", "200", "GT"],
    ["PEXPIRE", "x5", "300000", "XX"],
    ["pexpireat", "x5", "99999999999999", "lt"],
    ["EXPIREAT", "x5", "1", "NX"],
    ["SET", "x6", "1"],
    ["CONFIG", "SET", "lazyfree-lazy-expire", "yes"],
    ["EXPIRE", "x6", "-1"],  # logged as UNLINK now
    ["CONFIG", "SET", "lazyfree-lazy-expire", "no"],
    ["SET", "g1", "v"],
    ["GETEX", "g1", "EX", "100"],
    ["GETEX", "g1", "PERSIST"],
    ["GETEX", "g1", "PXAT", "1"],
    ["RESTORE", "r1", "0", _HELLO_DUMP],
    ["RESTORE", "r2", "5000", _HELLO_DUMP],  # a relative TTL goes out as ABSTTL
    ["RESTORE", "r1", "0", _HELLO_DUMP, "REPLACE"],
    ["RESTORE", "r3", "1", _HELLO_DUMP, "ABSTTL"],  # already expired: nothing to log
    ["LPOP", "nothing"],
    ["SET", "g2", "v"],
    ["GETDEL", "g2"],  # logged as DEL (UNLINK under lazyfree-lazy-user-del)
    ["SET", "g3", "v"],
    ["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"],
    ["GETDEL", "g3"],
    ["CONFIG", "SET", "lazyfree-lazy-user-del", "no"],
    ["SET", "g4", "v", "GET"],  # logged without GET
    ["SET", "g4", "w", "XX", "GET", "KEEPTTL"],
    ["SET", "g4", "x", "GET", "EX", "100"],  # logged as SET ... PXAT
    ["SET", "g5", "v"],
    ["CONFIG", "SET", "lazyfree-lazy-expire", "yes"],
    ["GETEX", "g5", "PXAT", "1"],  # logged as UNLINK now
    ["CONFIG", "SET", "lazyfree-lazy-expire", "no"],
    ["SET", "g6", "v", "NX", "GET"],  # changed nothing: nothing logged...
    ["INCR", "g7"],  # ... and the next write logged as itself
    ["FLUSHDB"],
]


def _cli_stream(port: int) -> list[str]:
    """What ``redis-cli --replica`` prints for ``_STREAM_STEPS`` (PINGs left out)."""
    proc = subprocess.Popen([REDIS_CLI, "-p", str(port), "--replica"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    try:
        c = RawClient(port=port)
        wait_for("redis-cli to be online", lambda: "state=online" in
                 info(c, "replication").get("slave0", ""))
        c.send_raw(b"MULTI\r\nSET m 1\r\nSET n 2\r\nEXEC\r\n")
        [c.read_reply() for _ in range(4)]
        for step in _STREAM_STEPS:
            if isinstance(step, tuple):  # a read that blocks, then the write that serves it
                _, read, write = step
                reader = RawClient(port=port)
                reader.send_raw(encode_command(*read))
                wait_for("the read to block", lambda: info(c, "clients")["blocked_clients"] == "1")
                c.call(*write)
                reader.read_reply()
                reader.close()
            else:
                c.call(*step)
        c.call("SET", "end", "1")
        deadline = time.monotonic() + 20
        buf = b""
        while b'"end"' not in buf:
            assert time.monotonic() < deadline, f"the stream never ended: {buf!r}"
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk, f"redis-cli exited: {buf!r}"
                buf += chunk
        lines = buf.decode().splitlines()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    start = next(i for i, line in enumerate(lines) if "Logging commands" in line) + 1
    lines = [re.sub(r'^("srem","[^"]+"),.*', r"\1,M", line, flags=re.I) for line in lines]
    lines = [re.sub(r'"1\d{12}"', "N", line) for line in lines]  # times from the clock
    return [re.sub(r'"(pxat|time)","\d+"', r'"\1",N', line.lower()) for line in lines[start:]
            if line.strip() and line.lower() != '"ping"' and "replconf" not in line.lower()]


def test_redis_cli_replica_stream_matches_redis(real_redis):
    require_redis()
    theirs = RealRedis(extra=["--repl-diskless-sync-delay", "0"])
    try:
        with pykv() as server:
            mine = _cli_stream(server.port)
        expected = _cli_stream(theirs.port)
    finally:
        theirs.stop()
    assert mine == expected, "\n".join(mine) + "\n---\n" + "\n".join(expected)
    assert '"multi"' in mine


def test_info_replication_fields_match_redis(real_redis):
    def names(port: int, with_replica: bool) -> list[str]:
        c = RawClient(port=port)
        if with_replica:
            rep = RawClient(port=port)
            rep.call("REPLCONF", "listening-port", "1234")
            rep.send_raw(b"SYNC\r\n")
            wait_for("the replica", lambda: info(c, "replication")["connected_slaves"] == "1")
        text = parse(c.call("INFO", "replication")).decode()
        return [line.split(":")[0] for line in text.splitlines()]

    theirs = RealRedis(extra=["--repl-diskless-sync", "no"])
    try:
        with pykv({"repl-diskless-sync": "no"}) as server:
            assert names(server.port, False) == names(theirs.port, False)
            assert names(server.port, True) == names(theirs.port, True)
    finally:
        theirs.stop()


@pytest.mark.parametrize("args", [
    ["REPLCONF"],
    ["REPLCONF", "listening-port"],
    ["REPLCONF", "listening-port", "abc"],
    ["REPLCONF", "listening-port", "7000"],
    ["REPLCONF", "ip-address", "x" * 300],
    ["REPLCONF", "capa", "eof", "capa", "whatever"],
    ["REPLCONF", "rdb-only", "2"],
    ["REPLCONF", "rdb-only", "x"],
    ["REPLCONF", "rdb-filter-only", "keys"],
    ["REPLCONF", "nope", "1"],
    ["REPLCONF", "ack", "10"],
    ["PSYNC", "x"],
    ["WAIT", "x", "0"],
    ["WAIT", "0", "-1"],
    ["WAIT", "0", "x"],
    ["ROLE"],
], ids=lambda a: " ".join(a)[:30])
def test_replication_command_replies_match_redis(real_redis, plain_pykv, args):
    assert _replies(plain_pykv.port, args) == _replies(real_redis.port, args)


@pytest.fixture(scope="module")
def plain_pykv():
    with Server() as server:
        yield server


def _replies(port: int, args: list[str]) -> list[bytes]:
    """The replies to ``args`` then PING (REPLCONF ACK answers nothing); ROLE's offset
    differs between two servers' histories, its shape must not."""
    c = RawClient(port=port)
    c.send_raw(b" ".join(a.encode() for a in args) + b"\r\nPING\r\n")
    out = []
    while not out or out[-1] != b"+PONG\r\n":
        out.append(re.sub(rb":\d+\r\n", b":N\r\n", c.read_reply()))
    return out


# -- the link's upkeep: PINGs, timeouts, the backlog's life, output limits ---------------------
def _read_until(sock, needle: bytes, timeout: float = 10.0) -> bytes:
    """Read from ``sock`` until ``needle`` has arrived (or fail after ``timeout``)."""
    deadline = time.monotonic() + timeout
    data = b""
    sock.settimeout(0.2)
    while needle not in data:
        assert time.monotonic() < deadline, f"{needle!r} never came: {data[-300:]!r}"
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        assert chunk, f"connection closed before {needle!r}: {data[-300:]!r}"
        data += chunk
    return data


def _raw_replica(port: int, *replconf: str, command: bytes = b"PSYNC ? -1") -> RawClient:
    rep = RawClient(port=port)
    for i in range(0, len(replconf), 2):
        assert rep.call("REPLCONF", replconf[i], replconf[i + 1]) == b"+OK\r\n"
    rep.send_raw(command + b"\r\n")
    return rep


def test_pings_every_period_and_timeout_drops_silent_replicas():
    with pykv({"repl-diskless-sync": "no", "repl-ping-replica-period": "1",
               "repl-timeout": "1"}) as server:
        c = RawClient(port=server.port)
        rep = _raw_replica(server.port, "listening-port", "4321")
        _read_until(rep.sock, b"*1\r\n$4\r\nPING\r\n")
        assert "state=online" in info(c, "replication")["slave0"]
        # it never sends REPLCONF ACK: repl-timeout drops it
        wait_for("the silent replica to be dropped",
                 lambda: info(c, "replication")["connected_slaves"] == "0")
        assert "Disconnecting timedout replica (streaming sync)" in server.log()


def test_backlog_ttl_resize_and_change_repl_id():
    with pykv({"repl-diskless-sync": "no", "repl-backlog-ttl": "1"}) as server:
        c = RawClient(port=server.port)
        first_id = info(c, "replication")["master_replid"]
        rep = _raw_replica(server.port)
        wait_for("the backlog", lambda: info(c, "replication")["repl_backlog_active"] == "1")
        repl = info(c, "replication")
        assert repl["master_replid"] != first_id  # new history with the first replica
        for i in range(100):
            c.call("SET", f"k{i}", "v" * 100)
        c.call("CONFIG", "SET", "repl-backlog-size", "2000")
        repl = info(c, "replication")
        assert (repl["repl_backlog_size"], repl["repl_backlog_histlen"]) == ("2000", "2000")
        assert int(repl["repl_backlog_first_byte_offset"]) == \
            int(repl["master_repl_offset"]) - 2000 + 1
        before = repl["master_replid"]
        assert c.call("DEBUG", "CHANGE-REPL-ID") == b"+OK\r\n"
        assert info(c, "replication")["master_replid"] != before
        rep.close()
        wait_for("the backlog to be freed",
                 lambda: info(c, "replication")["repl_backlog_active"] == "0")
        assert "Replication backlog freed after 1 seconds without connected replicas." in \
            server.log()


def test_replica_output_buffer_limit():
    with pykv({"repl-diskless-sync": "no",
               "client-output-buffer-limit": ["replica", "1mb", "0", "0"]}) as server:
        c = RawClient(port=server.port)
        rep = _raw_replica(server.port)
        wait_for("the replica to be online",
                 lambda: "state=online" in info(c, "replication").get("slave0", ""))
        value = b"v" * 100_000
        pipe = b"".join(b"*3\r\n$3\r\nSET\r\n$4\r\nk%03d\r\n$%d\r\n%s\r\n"
                        % (i, len(value), value) for i in range(300))
        c.send_raw(pipe)  # 30 MB of stream to a replica that reads nothing
        for _ in range(300):
            c.read_reply()
        wait_for("the replica to be dropped",
                 lambda: info(c, "replication")["connected_slaves"] == "0")
        assert "for overcoming of output buffer limits" in server.log()
        rep.close()


def test_aof_and_replica_both_get_every_effect():
    with pykv({"appendonly": "yes"}) as server:
        c = RawClient(port=server.port)
        replica = redis_replica(server.port)
        try:
            r = RawClient(port=replica.port)
            wait_in_sync(c, r)
            c.send_raw(b"MULTI\r\nSET a 1\r\nINCR a\r\nEXEC\r\n")
            [c.read_reply() for _ in range(4)]
            c.call("EVAL", _SCRIPT, "2", "n", "l", "x")
            c.call("SELECT", "1")
            c.call("SADD", "s", "1", "2", "3")
            c.call("SPOP", "s")
            c.call("SELECT", "0")
            wait_in_sync(c, r)
            assert_same_dataset(c, r)
            digest = parse(c.call("DEBUG", "DIGEST"))
            assert c.call("DEBUG", "LOADAOF") == b"+OK\r\n"
            assert parse(c.call("DEBUG", "DIGEST")) == digest
        finally:
            replica.stop()


def test_diskless_delay_serves_replicas_with_one_child():
    with pykv({"repl-diskless-sync-delay": "5", "repl-diskless-sync-max-replicas": "2"}) \
            as server:
        c = RawClient(port=server.port)
        c.call("SET", "k", "v")
        a = _raw_replica(server.port, "capa", "eof")
        time.sleep(0.2)  # the first replica waits for company (up to 5 s)
        assert info(c, "replication")["slave0"].split(",")[2] == "state=wait_bgsave"
        b = _raw_replica(server.port, "capa", "eof")
        heads = [_read_until(x.sock, b"\r\n$EOF:", 10) for x in (a, b)]
        heads = [_read_until(x.sock, b"\r\n", 10) if h.endswith(b"$EOF:") else h
                 for x, h in zip((a, b), heads, strict=True)]
        fullresync = [h.lstrip(b"\n").split(b"\r\n")[0] for h in heads]
        assert fullresync[0] == fullresync[1]  # the same snapshot point
        marks = [h.split(b"$EOF:")[1][:40] for h in heads]
        assert marks[0] == marks[1] and len(marks[0]) == 40  # one child's stream for both


def test_rdb_only_replica_gets_the_snapshot_and_no_stream(pykv_master):
    c = RawClient(port=pykv_master.port)
    c.call("SET", "k", "v")
    rep = _raw_replica(pykv_master.port, "capa", "eof", "rdb-only", "1")
    data = b""
    deadline = time.monotonic() + 10
    rep.sock.settimeout(0.2)
    while True:  # everything until the master closes the link
        assert time.monotonic() < deadline, f"still open after the snapshot: {data[-200:]!r}"
        try:
            chunk = rep.sock.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
    head, rest = data.split(b"\r\n", 1)
    assert head.startswith(b"+FULLRESYNC ")
    assert rest.startswith(b"$EOF:")
    mark = rest[5:45]
    assert rest[47:56] == b"REDIS0010" and rest.endswith(mark) and rest.count(mark) == 2
    assert info(c, "stats")["sync_full"] == "1"


def test_sync_refusals_match_redis(real_redis):
    """A filtered RDB needs ``capa eof``; SYNC from a MONITOR is ignored; PSYNC with a bad
    offset is refused."""
    def replies(port: int) -> list[bytes]:
        out = []
        c = RawClient(port=port)
        out.append(c.call("REPLCONF", "rdb-filter-only", ""))
        out.append(c.call("PSYNC", "?", "-1"))
        out.append(RawClient(port=port).call("PSYNC", "?", "x"))
        m = RawClient(port=port)
        out.append(m.call("MONITOR"))
        m.send_raw(b"SYNC\r\n")
        out.append(RawClient(port=port).call("PING"))
        seen = b""
        while b'"PING"' not in seen:  # the monitor goes on: no snapshot came
            seen += m.read_reply()
        out.append(seen.startswith(b"+"))
        return out

    with pykv() as server:
        assert replies(server.port) == replies(real_redis.port)


def test_replica_dying_mid_transfer_leaves_the_master_serving():
    """The only replica of a slow diskless transfer goes away: the child is stopped, the
    master keeps serving, and the next replica syncs."""
    with pykv({"rdb-key-save-delay": "2000"}) as server:
        c = RawClient(port=server.port)
        for i in range(2000):
            c.call("SET", f"k{i}", str(i))
        rep = _raw_replica(server.port, "capa", "eof")
        _read_until(rep.sock, b"$EOF:")
        rep.close()
        wait_for("the replica to be gone",
                 lambda: info(c, "replication")["connected_slaves"] == "0")
        assert "last replica dropped, killing fork child" in server.log()
        assert parse(c.call("SET", "after", "1")) == b"OK"
        c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        replica = redis_replica(server.port)
        try:
            r = RawClient(port=replica.port)
            wait_in_sync(c, r)
            assert_same_dataset(c, r)
        finally:
            replica.stop()


def _soak(seconds: float, seed: int) -> None:
    """Random writes while the replica's link is killed now and then (partial resyncs,
    sometimes mid-transaction); every write acknowledged by ``WAIT 1`` after the link is
    back is on the replica, and the datasets end equal."""
    rnd = random.Random(seed)
    with pykv({"repl-backlog-size": "1mb"}) as server:
        c = RawClient(port=server.port)
        other = RawClient(port=server.port)
        build_dataset(c)
        replica = redis_replica(server.port)
        try:
            r = RawClient(port=replica.port)
            wait_in_sync(c, r)
            deadline = time.monotonic() + seconds
            kills = 0
            while time.monotonic() < deadline:
                random_writes(c, other, rnd.randint(50, 300), seed=rnd.randint(0, 1 << 30))
                if rnd.random() < 0.6:
                    kills += parse(c.call("CLIENT", "KILL", "TYPE", "replica"))
                c.call("SET", "acked", str(kills))
                if parse(c.call("WAIT", "1", "5000")) == 1:
                    assert parse(r.call("GET", "acked")) == str(kills).encode()
            wait_in_sync(c, r)
            assert_same_dataset(c, r)
            stats = info(c, "stats")
            assert kills > 0
            assert int(stats["sync_partial_ok"]) + int(stats["sync_full"]) - 1 >= 1
        finally:
            replica.stop()


def test_link_kills_while_writing():
    _soak(1, seed=11)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_link_kills_while_writing_soak():
    _soak(180, seed=12)


def test_redis_cli_functions_rdb_holds_only_the_functions(pykv_master):
    c = RawClient(port=pykv_master.port)
    c.call("SET", "k", "v")
    lib = "#!lua name=mylib\nredis.register_function('f', function() return 1 end)"
    assert parse(c.call("FUNCTION", "LOAD", lib)) == b"mylib"
    workdir = tempfile.mkdtemp(prefix="repl-frdb-")
    try:
        path = os.path.join(workdir, "dump.rdb")
        done = subprocess.run([REDIS_CLI, "-p", str(pykv_master.port), "--functions-rdb",
                               path], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        loaded = RealRedis()
        try:
            shutil.copy(path, os.path.join(loaded.dir, "dump.rdb"))
            r = RawClient(port=loaded.port)
            r.call("DEBUG", "RELOAD", "NOSAVE")
            assert parse(r.call("DBSIZE")) == 0
            assert parse(r.call("FCALL", "f", "0")) == 1
        finally:
            loaded.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_several_effects_of_one_command_are_one_transaction(pykv_master):
    """XREADGROUP delivering two entries propagates several commands: inside MULTI/EXEC,
    as Redis 7.0 does (the commands themselves are the streams family's)."""
    c = RawClient(port=pykv_master.port)
    rep = _raw_replica(pykv_master.port, "capa", "eof")
    wait_for("the replica to be online",
             lambda: "state=online" in info(c, "replication").get("slave0", ""))
    rep.send_raw(b"REPLCONF ACK 0\r\n")  # diskless: the stream starts with the first ACK
    c.call("XADD", "st", "1-1", "a", "1")
    c.call("XADD", "st", "2-1", "a", "2")
    c.call("XGROUP", "CREATE", "st", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">")
    c.call("SET", "end", "1")
    data = _read_until(rep.sock, b"$3\r\nend\r\n")
    effects = data[data.index(b"CREATE"):data.index(b"$3\r\nend")]
    assert effects.count(b"XCLAIM") == 2
    assert effects.index(b"MULTI") < effects.index(b"XCLAIM")
    assert effects.rindex(b"XCLAIM") < effects.index(b"EXEC")


def test_repl_disable_tcp_nodelay_turns_nagle_back_on():
    """``repl-disable-tcp-nodelay yes``: the replica's socket loses TCP_NODELAY (tested on
    a socket pair: the option is not visible from the other end)."""
    import socket
    from types import SimpleNamespace

    from pykv.replication.master import _disable_nodelay

    with socket.create_server(("127.0.0.1", 0)) as listener:
        peer = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        with peer, accepted:
            accepted.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            transport = SimpleNamespace(get_extra_info=lambda name: accepted)
            _disable_nodelay(SimpleNamespace(conn=SimpleNamespace(transport=transport)))
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    with pykv({"repl-disable-tcp-nodelay": "yes"}) as server:
        c = RawClient(port=server.port)
        replica = redis_replica(server.port)
        try:
            r = RawClient(port=replica.port)
            c.call("SET", "k", "v")
            wait_in_sync(c, r)
            assert parse(r.call("GET", "k")) == b"v"
        finally:
            replica.stop()
