"""MIGRATE between pykv and redis-server in both directions, and RESTORE-ASKING.

The replies are compared byte for byte with redis-server 7.0 running the same MIGRATE to
the same kind of target; the integration cases cover what a reply cannot show: every value
type arriving intact, the cached connection, other clients served while a MIGRATE waits on
a slow target, and keys changed meanwhile left alone.
"""
from __future__ import annotations

import glob
import os
import select
import shutil
import socket
import tempfile
import time

import pytest
from support.keyspace import keyspace
from support.resp import RawClient, encode_command, parse
from support.servers import RealRedis

from pykv.testing import Server, free_port

pytestmark = pytest.mark.usefixtures("redis_binary")

KINDS = ("redis", "pykv")


class Net:
    """Sources and targets of both kinds, an authenticated target of each kind, a listener
    that never answers and a port where nothing listens."""

    def __init__(self) -> None:
        self.reals: list[RealRedis] = []
        self.pykvs: list[Server] = []
        self.src = {"redis": self._real(), "pykv": self._pykv()}
        self.dst = {"redis": self._real(), "pykv": self._pykv()}
        self.auth = {"redis": self._real(["--requirepass", "pw"]),
                     "pykv": self._pykv({"requirepass": "pw"})}
        for port in self.auth.values():
            c = RawClient(port=port)
            assert c.call("AUTH", "pw") == b"+OK\r\n"
            assert c.call("ACL", "SETUSER", "mover", "on", ">mpw", "~*", "+@all") == b"+OK\r\n"
            c.close()
        self.silent = socket.socket()
        self.silent.bind(("127.0.0.1", 0))
        self.silent.listen(16)  # connections complete in the backlog and are never read
        self.silent_port = self.silent.getsockname()[1]
        self.refused_port = free_port()

    def _real(self, extra: list[str] | None = None) -> int:
        server = RealRedis(extra)
        self.reals.append(server)
        return server.port

    def _pykv(self, config: dict | None = None) -> int:
        server = Server(config={"enable-debug-command": "yes", **(config or {})})
        server.start()
        self.pykvs.append(server)
        return server.port

    def stop(self) -> None:
        self.silent.close()
        for server in self.reals:
            server.stop()
        for server in self.pykvs:
            server.stop()


@pytest.fixture(scope="module")
def net():
    n = Net()
    yield n
    n.stop()


def client(port: int, password: str | None = None) -> RawClient:
    c = RawClient(port=port)
    if password:
        assert c.call("AUTH", password) == b"+OK\r\n"
    c.call("FLUSHALL")
    return c


def fill_every_type(c: RawClient) -> list[str]:
    """One key of each type and encoding Redis 7.0 has; returns their names."""
    c.call("SET", "str:int", "12345")
    c.call("SET", "str:embstr", "hello")
    c.call("SET", "str:raw", "abc" * 500)
    c.call("SET", "str:binary", bytes(range(256)))
    c.call("SET", "str:ttl", "x", "PX", "3600000")
    c.call("RPUSH", "list:small", "a", "1", "-5", "b" * 70)
    c.call("RPUSH", "list:big", *[f"item-{i}-{'z' * (i % 50)}" for i in range(2000)])
    c.call("HSET", "hash:small", "f1", "v1", "f2", "2")
    c.call("HSET", "hash:big", *[x for i in range(600) for x in (f"f{i}", f"v{i}")])
    c.call("SADD", "set:int", *[str(i * 7 - 100) for i in range(50)])
    c.call("SADD", "set:str", "a", "b", "c")
    c.call("SADD", "set:big", *[f"m{i}" for i in range(700)])
    c.call("ZADD", "zset:small", "1", "a", "2.5", "b", "-3", "c", "inf", "d")
    c.call("ZADD", "zset:big", *[x for i in range(300) for x in (str(i / 7), f"m{i}")])
    for i in range(5):
        c.call("XADD", "stream", f"{i + 1}-0", "f", str(i))
    c.call("XGROUP", "CREATE", "stream", "g", "0")
    c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "stream", ">")
    c.call("PFADD", "hll", "a", "b", "c")
    c.call("EXPIRE", "hash:small", "100000")
    return [k.decode() for k in parse(c.call("KEYS", "*"))]


def _contents(space: dict, db: int) -> dict:
    """Keyspace entries keyed for ``db``; a string's encoding left out (Redis itself turns a
    restored raw string into embstr when it is short)."""
    return {(db, key): (kind, value, ttl, None if kind == b"string" else encoding)
            for (_, key), (kind, value, ttl, encoding) in space.items()}


@pytest.mark.parametrize("src", KINDS)
@pytest.mark.parametrize("dst", KINDS)
def test_every_type_arrives_intact(net, src, dst):
    s, d = client(net.src[src]), client(net.dst[dst])
    keys = fill_every_type(s)
    expected = _contents(keyspace(s), 3)
    stream_info = parse(s.call("XINFO", "STREAM", "stream", "FULL"))
    reply = s.call("MIGRATE", "127.0.0.1", net.dst[dst], "", "3", "5000", "KEYS", *keys)
    assert reply == b"+OK\r\n"
    assert parse(s.call("DBSIZE")) == 0
    assert _contents(keyspace(d, (3,)), 3) == expected
    d.call("SELECT", "3")
    assert parse(d.call("XINFO", "STREAM", "stream", "FULL")) == stream_info
    assert 0 < parse(d.call("PTTL", "str:ttl")) <= 3600000


# -- the replies, against redis-server's -------------------------------------------------
def _basic(net, s, d, port):
    s.call("SET", "k", "v")
    s.call("SET", "t", "v", "PX", "100000")
    return [s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000"),
            s.call("EXISTS", "k"), d.call("GET", "k"),
            s.call("MIGRATE", "127.0.0.1", port, "t", "0", "1000"),
            d.call("EXISTS", "t"), b"ttl:%d" % (0 < parse(d.call("PTTL", "t")) <= 100000),
            s.call("SET", "k", "v"),  # AUTH to a target without a password: its error
            s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000", "REPLACE", "AUTH", "x"),
            s.call("EXISTS", "k")]


def _nokey(net, s, d, port):
    s.call("SET", "here", "1")
    return [s.call("MIGRATE", "127.0.0.1", port, "nothere", "0", "1000"),
            s.call("MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "x", "y"),
            s.call("MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "x", "here"),
            s.call("EXISTS", "here"), d.call("EXISTS", "here")]


def _copy_replace_busykey(net, s, d, port):
    s.call("SET", "k", "new")
    d.call("SET", "k", "old")
    return [s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000"),
            s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000", "COPY"),
            s.call("EXISTS", "k"), d.call("GET", "k"),
            s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000", "COPY", "REPLACE"),
            s.call("EXISTS", "k"), d.call("GET", "k"),
            s.call("SET", "k", "newer"),
            s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000", "REPLACE"),
            s.call("EXISTS", "k"), d.call("GET", "k")]


def _keys_partly_busy(net, s, d, port):
    s.call("MSET", "a", "1", "b", "2", "c", "3")
    d.call("SET", "b", "there")
    return [s.call("MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "a", "b", "c"),
            s.call("EXISTS", "a", "b", "c"), d.call("MGET", "a", "b", "c")]


def _dbs(net, s, d, port):
    s.call("MSET", "a", "1", "b", "2", "c", "3")
    return [s.call("MIGRATE", "127.0.0.1", port, "a", "5", "1000"),
            s.call("MIGRATE", "127.0.0.1", port, "b", "5", "1000"),
            s.call("MIGRATE", "127.0.0.1", port, "c", "99", "1000"),
            s.call("MIGRATE", "127.0.0.1", port, "c", "-1", "1000"),
            s.call("MIGRATE", "127.0.0.1", port, "c", "0", "1000"),
            d.call("SELECT", "5"), d.call("MGET", "a", "b", "c"),
            d.call("SELECT", "0"), d.call("MGET", "a", "b", "c"), s.call("EXISTS", "c")]


def _argument_errors(net, s, d, port):
    s.call("SET", "k", "v")
    p = str(port)
    return [s.call("MIGRATE", "127.0.0.1", p, "k", "0", "x"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "x", "1000"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0", "1000", "NOSUCH"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0", "1000", "AUTH"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0", "1000", "AUTH2", "u"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0", "1000", "KEYS", "k"),
            s.call("MIGRATE", "127.0.0.1", p, "", "0", "1000", "KEYS"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0", "1000", "KEYS", "NOSUCH"),
            s.call("MIGRATE", "127.0.0.1", p, "k", "0", "0"),  # timeout 0 means 1000 ms
            d.call("GET", "k")]


def _auth(net, s, d, port):
    s.call("MSET", "a", "1", "b", "2", "c", "3", "e", "5")
    c = RawClient(port=port)
    c.call("AUTH", "pw")
    c.call("FLUSHALL")
    out = [s.call("MIGRATE", "127.0.0.1", port, "a", "0", "1000"),
           s.call("MIGRATE", "127.0.0.1", port, "a", "0", "1000", "AUTH", "bad"),
           s.call("MIGRATE", "127.0.0.1", port, "a", "0", "1000", "AUTH2", "mover", "bad"),
           s.call("MIGRATE", "127.0.0.1", port, "a", "0", "1000", "AUTH", "pw"),
           s.call("MIGRATE", "127.0.0.1", port, "b", "2", "1000", "AUTH2", "mover", "mpw"),
           s.call("MIGRATE", "127.0.0.1", port, "", "2", "1000", "AUTH2", "default", "pw",
                  "KEYS", "c", "nothere"),
           s.call("MIGRATE", "127.0.0.1", port, "e", "0", "1000", "COPY", "AUTH", "pw"),
           s.call("EXISTS", "a", "b", "c", "e"), c.call("MGET", "a", "e"),
           c.call("SELECT", "2"), c.call("MGET", "b", "c")]
    c.close()
    return out


def _io_errors(net, s, d, port):
    s.call("SET", "k", "v")
    return [s.call("MIGRATE", "127.0.0.1", net.silent_port, "k", "0", "200"),
            s.call("MIGRATE", "127.0.0.1", net.refused_port, "k", "0", "200"),
            s.call("MIGRATE", "127.0.0.1", "-3", "k", "0", "200"),
            s.call("MIGRATE", "127.0.0.1", "notaport", "k", "0", "200"),
            s.call("MIGRATE", "no-such-host.invalid", port, "k", "0", "200"),
            s.call("EXISTS", "k"),
            # after all that, the target itself still works
            s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000"), s.call("EXISTS", "k")]


def _in_multi_and_script(net, s, d, port):
    s.call("MSET", "a", "1", "b", "2")
    p = str(port)
    out = [s.call("MULTI"), s.call("MIGRATE", "127.0.0.1", p, "a", "0", "1000"),
           s.call("GET", "a"), s.call("EXEC"),
           s.call("EVAL", "return redis.call('MIGRATE', ARGV[1], ARGV[2], KEYS[1], 0, 1000)",
                  "1", "b", "127.0.0.1", p),
           s.call("EXISTS", "a", "b"), d.call("MGET", "a", "b")]
    return out


def _target_connection_killed(net, s, d, port):
    """The cached connection dies on the target side: MIGRATE reconnects (one retry)."""
    s.call("MSET", "a", "1", "b", "2")
    out = [s.call("MIGRATE", "127.0.0.1", port, "a", "0", "1000")]
    d.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    time.sleep(0.05)
    out += [s.call("MIGRATE", "127.0.0.1", port, "b", "0", "1000"), d.call("MGET", "a", "b")]
    return out


def _watched_key_migrated(net, s, d, port):
    s.call("MSET", "k", "v", "big", "x" * 300_000)  # big: written in several 64 KB pieces
    w = RawClient(port=s.sock.getpeername()[1])
    out = [w.call("WATCH", "k"), s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000"),
           w.call("MULTI"), w.call("GET", "k"), w.call("EXEC"),
           s.call("MIGRATE", "127.0.0.1", port, "big", "0", "1000"), d.call("STRLEN", "big")]
    w.close()
    return out


SCENARIOS = [_basic, _watched_key_migrated, _nokey, _copy_replace_busykey, _keys_partly_busy, _dbs,
             _argument_errors, _auth, _io_errors, _in_multi_and_script,
             _target_connection_killed]


@pytest.mark.parametrize("dst", KINDS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__.strip("_"))
def test_replies_match_redis(net, dst, scenario):
    results = {}
    target = net.auth if scenario is _auth else net.dst
    for src in KINDS:
        s = client(net.src[src])
        d = client(target[dst], "pw" if scenario is _auth else None)
        results[src] = scenario(net, s, d, target[dst])
        s.close()
        d.close()
    assert results["pykv"] == results["redis"]


# -- what replies cannot show ------------------------------------------------------------
def _stat(c: RawClient, field: str) -> int:
    info = parse(c.call("INFO", "stats")).decode()
    return int(info.split(field + ":")[1].split()[0])


@pytest.mark.parametrize("dst", KINDS)
def test_one_cached_connection_per_target(net, dst):
    s = client(net.src["pykv"])
    port = net.dst[dst]
    d = client(port)
    d.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")  # no connection cached there
    time.sleep(0.05)
    opened = _stat(d, "total_connections_received")
    for i in range(6):
        s.call("SET", f"k{i}", "v")
        assert s.call("MIGRATE", "127.0.0.1", port, f"k{i}", str(i % 3), "1000") == b"+OK\r\n"
    assert _stat(d, "total_connections_received") == opened + 1  # opened once, then reused
    clients = parse(d.call("CLIENT", "LIST")).decode().splitlines()
    assert len(clients) == 2, clients  # this one and MIGRATE's
    assert _stat(s, "migrate_cached_sockets") >= 1
    for i in range(6):
        d.call("SELECT", str(i % 3))
        assert d.call("EXISTS", f"k{i}") == b":1\r\n"


@pytest.mark.slow
def test_idle_cached_connection_is_closed(net):
    s = client(net.src["pykv"])
    port = net.dst["redis"]
    s.call("SET", "k", "v")
    assert s.call("MIGRATE", "127.0.0.1", port, "k", "0", "1000") == b"+OK\r\n"
    deadline = time.monotonic() + 20
    while b"migrate_cached_sockets:0" not in s.call("INFO", "stats"):
        assert time.monotonic() < deadline, "the cached connection was never closed"
        time.sleep(0.5)


def _readable(c: RawClient) -> bool:
    return bool(c.buf) or bool(select.select([c.sock], [], [], 0)[0])


def _wait_parked(c: RawClient) -> None:
    """Until CLIENT LIST shows a MIGRATE waiting on its target."""
    deadline = time.monotonic() + 10
    while True:
        lines = parse(c.call("CLIENT", "LIST")).decode().splitlines()
        if any("cmd=migrate" in line and "flags=b" in line for line in lines):
            return
        assert time.monotonic() < deadline, f"no MIGRATE waiting: {lines}"
        time.sleep(0.01)


def test_other_clients_served_while_migrate_waits(net):
    s = client(net.src["pykv"])
    s.call("SET", "k", "v")
    s.send_raw(encode_command("MIGRATE", "127.0.0.1", net.silent_port, "k", "0", "3000")
               + encode_command("PING", "after"))
    other = RawClient(port=net.src["pykv"])
    _wait_parked(other)
    assert other.call("PING") == b"+PONG\r\n"
    assert other.call("SET", "x", "1") == b"+OK\r\n"
    assert other.call("GET", "k") == b"$1\r\nv\r\n"
    assert not _readable(s), "the MIGRATE answered before its target did"
    assert s.read_reply() == b"-IOERR error or timeout reading to target instance\r\n"
    assert s.read_reply() == b"$5\r\nafter\r\n"  # its pipelined command waited for it
    assert s.call("EXISTS", "k") == b":1\r\n"


def test_parked_client_killed(net):
    s = client(net.src["pykv"])
    s.call("SET", "k", "v")
    s.send_raw(encode_command("MIGRATE", "127.0.0.1", net.silent_port, "k", "0", "1500"))
    other = RawClient(port=net.src["pykv"])
    _wait_parked(other)
    lines = parse(other.call("CLIENT", "LIST")).decode().splitlines()
    parked = next(line for line in lines if "cmd=migrate" in line)
    assert other.call("CLIENT", "KILL", "ID", parked.split()[0][3:]) == b":1\r\n"
    deadline = time.monotonic() + 10
    while b"cmd=migrate" in other.call("CLIENT", "LIST"):
        assert time.monotonic() < deadline, "the killed MIGRATE client stayed"
        time.sleep(0.05)
    time.sleep(1.6)  # its exchange times out after the client went: nothing breaks
    assert other.call("PING") == b"+PONG\r\n"
    assert other.call("EXISTS", "k") == b":1\r\n"


def test_concurrent_migrates_to_one_target(net):
    port = net.src["pykv"]
    target = client(net.dst["redis"])
    seed = client(port)
    seed.call("MSET", "a", "1", "b", "2")
    clients = [RawClient(port=port), RawClient(port=port)]
    target.call("CLIENT", "PAUSE", "20000", "WRITE")
    try:
        for c, key in zip(clients, ("a", "b"), strict=True):
            c.send_raw(encode_command("MIGRATE", "127.0.0.1", net.dst["redis"], key, "0",
                                      "10000"))
        _wait_parked(seed)
        assert seed.call("PING") == b"+PONG\r\n"
    finally:
        target.call("CLIENT", "UNPAUSE")
    assert [c.read_reply() for c in clients] == [b"+OK\r\n", b"+OK\r\n"]
    assert target.call("MGET", "a", "b") == b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    assert seed.call("EXISTS", "a", "b") == b":0\r\n"


@pytest.fixture
def aof_source():
    path = tempfile.mkdtemp(prefix="migrate-aof-")
    with Server(config={"appendonly": "yes", "dir": path, "appendfsync": "always"}) as server:
        yield server.port, path
    shutil.rmtree(path, ignore_errors=True)


def test_keys_changed_while_waiting_are_left_alone(net, aof_source):
    port, path = aof_source
    s = client(port)
    for key in ("inplace", "replaced", "deleted", "moved"):
        s.call("RPUSH", key, "a", "b")
    target = client(net.dst["redis"])
    target.call("CLIENT", "PAUSE", "20000", "WRITE")  # RESTORE waits; AUTH/SELECT do not
    try:
        s.send_raw(encode_command("MIGRATE", "127.0.0.1", net.dst["redis"], "", "0", "10000",
                                  "KEYS", "inplace", "replaced", "deleted", "moved"))
        other = RawClient(port=port)
        _wait_parked(other)
        assert other.call("RPUSH", "inplace", "c") == b":3\r\n"
        assert other.call("SET", "replaced", "new") == b"+OK\r\n"
        assert other.call("DEL", "deleted") == b":1\r\n"
    finally:
        target.call("CLIENT", "UNPAUSE")
    assert s.read_reply() == b"+OK\r\n"
    for key in ("inplace", "replaced", "deleted", "moved"):
        assert target.call("LRANGE", key, "0", "-1") == b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert s.call("LRANGE", "inplace", "0", "-1") == b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    assert s.call("GET", "replaced") == b"$3\r\nnew\r\n"
    assert s.call("EXISTS", "deleted", "moved") == b":0\r\n"
    # inside MULTI the exchange is synchronous; its deletion is logged too (alone in its
    # transaction, so without MULTI/EXEC around it, as Redis 7.0 logs it)
    s.call("SET", "inmulti", "v")
    assert [s.call("MULTI"), s.call("MIGRATE", "127.0.0.1", net.dst["redis"], "inmulti", "0",
                                    "1000"), s.call("EXEC")] == \
        [b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n+OK\r\n"]
    # the AOF has the deletions MIGRATE made, as DEL, and nothing else of it
    logged = b"".join(open(f, "rb").read()
                      for f in glob.glob(os.path.join(path, "appendonlydir", "*.incr.aof")))
    assert encode_command("DEL", "moved") in logged
    assert logged.endswith(encode_command("SET", "inmulti", "v")
                           + encode_command("DEL", "inmulti"))
    assert b"migrate" not in logged.lower()
    for key in ("inplace", "replaced"):
        assert encode_command("DEL", key) not in logged


def test_restore_asking_is_restore(net):
    out = {}
    for kind in KINDS:
        c = client(net.src[kind])
        c.call("RPUSH", "l", "1", "2")
        payload = parse(c.call("DUMP", "l"))
        out[kind] = [c.call("RESTORE-ASKING", "copy", "0", payload),
                     c.call("RESTORE-ASKING", "copy", "0", payload),
                     c.call("RESTORE-ASKING", "copy", "5000", payload, "REPLACE"),
                     c.call("LRANGE", "copy", "0", "-1"),
                     c.call("RESTORE-ASKING", "bad", "0", b"junk"),
                     c.call("RESTORE-ASKING", "bad", "0"),
                     c.call("COMMAND", "INFO", "RESTORE-ASKING")]
        c.close()
    assert out["pykv"] == out["redis"]
