"""Keyspace behaviour: lazy and active expiry, TTL edges, and the hooks commands must call
(dirty counter, keyspace events, hit/miss statistics), checked in-process on a real
``Server`` whose clock the tests control.
"""
from __future__ import annotations

import time

import pytest
from support.inproc import run

from pykv.assemble import build_server
from pykv.protocol import encode_reply
from pykv.server.client import Client
from pykv.storage.keyspace import Clock, Database


class FakeClock(Clock):
    """A clock that only moves when told (``update`` keeps the set time)."""

    def __init__(self, ms: int = 1_700_000_000_000) -> None:
        super().__init__()
        self.set(ms)

    def set(self, ms: int) -> None:
        self.ms = ms
        self.sec = ms // 1000

    def update(self) -> int:
        return self.ms


@pytest.fixture
def server():
    srv = build_server()
    srv.clock = clock = FakeClock()
    for db in srv.dbs:
        db.clock = clock
    srv.events = []
    srv.keyspace_notifier = lambda klass, event, key, dbid: srv.events.append(
        (klass, event, key, dbid))
    return srv


@pytest.fixture
def client(server):
    return Client(server, None, 1)


# -- lazy expiry and TTL ------------------------------------------------------------------
def test_lazy_expiry_on_access(server, client):
    db = server.dbs[0]
    expired = []
    db.on_expired = lambda d, key: expired.append(key)
    run(client, "SET", "k", "v", "PX", 100)
    server.clock.set(server.clock.ms + 99)
    assert run(client, "GET", "k") == b"$1\r\nv\r\n"
    server.clock.set(server.clock.ms + 1)
    assert b"k" in db.data  # still stored until touched
    assert run(client, "GET", "k") == b"$-1\r\n"
    assert expired == [b"k"] and b"k" not in db.data and b"k" not in db.expires
    assert db.expired_count == 1


def test_ttl_edges(server, client):
    clock = server.clock
    assert run(client, "TTL", "missing") == b":-2\r\n"
    run(client, "SET", "k", "v")
    assert run(client, "TTL", "k") == b":-1\r\n"
    assert run(client, "PEXPIRETIME", "k") == b":-1\r\n"
    run(client, "PEXPIRE", "k", 1500)
    assert run(client, "TTL", "k") == b":2\r\n"  # rounded half up
    assert run(client, "PTTL", "k") == b":1500\r\n"
    clock.set(clock.ms + 1001)
    assert run(client, "TTL", "k") == b":0\r\n"  # 499 ms rounds down
    assert run(client, "PTTL", "k") == b":499\r\n"
    assert run(client, "PEXPIRETIME", "k") == b":%d\r\n" % (clock.ms + 499)
    clock.set(clock.ms + 499)
    assert run(client, "PTTL", "k") == b":-2\r\n"  # expiry time reached: gone


def test_expire_in_past_deletes_and_notifies_del(server, client):
    run(client, "SET", "k", "v")
    server.events.clear()
    dirty = server.dirty
    assert run(client, "EXPIRE", "k", -1) == b":1\r\n"
    assert server.events == [("g", b"del", b"k", 0)]
    assert server.dirty == dirty + 1
    assert b"k" not in server.dbs[0].data
    run(client, "SET", "k", "v")
    server.events.clear()
    assert run(client, "PEXPIREAT", "k", server.clock.ms) == b":1\r\n"
    assert server.events == [("g", b"del", b"k", 0)]


def test_set_with_past_exat_expires_lazily(server, client):
    run(client, "SET", "k", "v", "EXAT", 1)
    assert server.events[-2:] == [("$", b"set", b"k", 0), ("g", b"expire", b"k", 0)]
    assert run(client, "EXISTS", "k") == b":0\r\n"


# -- active expiry ------------------------------------------------------------------------
def test_active_expire_removes_stale_keys():
    clock = FakeClock()
    db = Database(0, clock)
    for i in range(1000):
        db.set(b"k%d" % i, b"v")
        db.set_expire(b"k%d" % i, clock.ms + (10 if i % 2 else 10_000))
    clock.set(clock.ms + 20)
    deadline = time.monotonic_ns() + 10**9
    while db.active_expire(deadline) and len(db) > 500:
        pass
    # every cycle expires a quarter-or-more batch until the stale half is gone
    for _ in range(50):
        db.active_expire(time.monotonic_ns() + 10**9)
    assert len(db) == 500
    assert all(int(k[1:]) % 2 == 0 for k in db.data)
    assert db.expired_count == 500
    assert 9_000 < db.avg_ttl <= 10_000


def test_active_expire_respects_deadline():
    clock = FakeClock()
    db = Database(0, clock)
    for i in range(5000):
        db.set(b"k%d" % i, b"v")
        db.set_expire(b"k%d" % i, clock.ms + 1)
    clock.set(clock.ms + 5)
    expired = db.active_expire(time.monotonic_ns() - 1)  # already past: one batch only
    assert 0 < expired <= 20


def test_server_cron_expires(server):
    db = server.dbs[3]
    for i in range(100):
        db.set(b"k%d" % i, b"v")
        db.set_expire(b"k%d" % i, server.clock.ms + 5)
    server.clock.set(server.clock.ms + 10)
    for _ in range(20):
        server.active_expire_cycle()
    assert len(db) == 0


# -- version counter (SCAN snapshots) ----------------------------------------------------
def test_set_bumps_version_and_scan_sees_new_keys(server, client):
    db = server.dbs[0]
    v = db.version
    run(client, "SET", "a", "1")
    assert db.version > v
    assert run(client, "SCAN", 0) == b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\na\r\n"
    run(client, "SET", "b", "1")
    run(client, "DEL", "a")
    run(client, "SET", "c", "1")
    reply = run(client, "SCAN", 0, "COUNT", 100)
    assert b"$1\r\nb\r\n" in reply and b"$1\r\nc\r\n" in reply and b"\r\na\r\n" not in reply


# -- hooks: dirty, events, statistics ---------------------------------------------------
HOOK_CASES = [
    # (setup commands, command, expected events, dirty increase)
    ([], ("SET", "k", "v"), [("$", b"set")], 1),
    ([], ("SET", "k", "v", "EX", 10), [("$", b"set"), ("g", b"expire")], 1),
    ([("SET", "k", "v")], ("SET", "k", "v", "NX"), [], 0),
    ([], ("SETNX", "k", "v"), [("$", b"set")], 1),
    ([], ("SETEX", "k", 10, "v"), [("$", b"set"), ("g", b"expire")], 1),
    ([], ("MSET", "k", "1", "k2", "2"), [("$", b"set"), ("$", b"set")], 2),
    ([("SET", "k2", "v")], ("MSETNX", "k", "1", "k2", "2"), [], 0),
    ([], ("MSETNX", "k", "1", "k2", "2"), [("$", b"set"), ("$", b"set")], 2),
    ([], ("APPEND", "k", "x"), [("$", b"append")], 1),
    ([], ("INCR", "k"), [("$", b"incrby")], 1),
    ([], ("DECRBY", "k", 3), [("$", b"incrby")], 1),
    ([], ("INCRBYFLOAT", "k", "1.5"), [("$", b"incrbyfloat")], 1),
    ([], ("SETRANGE", "k", 1, "x"), [("$", b"setrange")], 1),
    ([], ("SETRANGE", "k", 1, ""), [], 0),
    ([("SET", "k", "v")], ("GETSET", "k", "w"), [("$", b"set")], 1),
    ([("SET", "k", "v")], ("GETDEL", "k"), [("g", b"del")], 1),
    ([("SET", "k", "v")], ("GETEX", "k", "EX", 10), [("g", b"expire")], 1),
    ([("SET", "k", "v", "EX", 10)], ("GETEX", "k", "PERSIST"), [("g", b"persist")], 1),
    ([("SET", "k", "v")], ("GETEX", "k", "PERSIST"), [], 0),
    ([("SET", "k", "v")], ("GETEX", "k", "PXAT", 1), [("g", b"del")], 1),
    ([("SET", "k", "v")], ("DEL", "k", "k", "x"), [("g", b"del")], 1),
    ([("SET", "k", "v")], ("UNLINK", "k"), [("g", b"del")], 1),
    ([("SET", "k", "v")], ("EXPIRE", "k", 10), [("g", b"expire")], 1),
    ([("SET", "k", "v")], ("EXPIRE", "k", 10, "XX"), [], 0),
    ([("SET", "k", "v", "EX", 10)], ("PERSIST", "k"), [("g", b"persist")], 1),
    ([("SET", "k", "v")], ("RENAME", "k", "k2"),
     [("g", b"rename_from"), ("g", b"rename_to")], 1),
    ([("SET", "k", "v")], ("COPY", "k", "k2"), [("g", b"copy_to")], 1),
    ([("SET", "k", "v")], ("MOVE", "k", 1), [("g", b"move_from"), ("g", b"move_to")], 1),
    ([], ("GET", "k"), [("m", b"keymiss")], 0),
    ([], ("MGET", "k", "k2"), [("m", b"keymiss"), ("m", b"keymiss")], 0),
    ([("SET", "k", "v")], ("GET", "k"), [], 0),
]


@pytest.mark.parametrize("setup,cmd,events,dirty", HOOK_CASES,
                         ids=[" ".join(map(str, c[1])) for c in HOOK_CASES])
def test_command_hooks(server, client, setup, cmd, events, dirty):
    for s in setup:
        run(client, *s)
    server.events.clear()
    before = server.dirty
    reply = run(client, *cmd)
    assert not reply.startswith(b"-"), reply
    assert [(k, e) for k, e, _, _ in server.events] == events
    assert server.dirty - before == dirty


def test_move_events_name_both_databases(server, client):
    run(client, "SET", "k", "v")
    server.events.clear()
    run(client, "MOVE", "k", 5)
    assert server.events == [("g", b"move_from", b"k", 0), ("g", b"move_to", b"k", 5)]


def test_modified_signals(server, client):
    touched = []
    for db in server.dbs:
        db.signal_modified = lambda d, key: touched.append((d.id, key))
    run(client, "SET", "k", "ab")
    run(client, "APPEND", "k", "c")
    run(client, "APPEND", "k", "d")
    run(client, "SETRANGE", "k", 0, "Z")
    run(client, "INCRBYFLOAT", "n", "1")
    assert touched == [(0, b"k")] * 4 + [(0, b"n")]
    assert run(client, "GET", "k") == b"$4\r\nZbcd\r\n"


STAT_CASES = [
    (("GET", "k"), 1, 0), (("GET", "x"), 0, 1), (("MGET", "k", "x"), 1, 1),
    (("EXISTS", "k", "x"), 1, 1), (("TYPE", "k"), 1, 0), (("TTL", "x"), 0, 1),
    (("TOUCH", "k"), 1, 0), (("STRLEN", "x"), 0, 1), (("GETRANGE", "k", 0, 1), 1, 0),
    (("LCS", "k", "x"), 1, 1), (("COPY", "k", "k2"), 1, 0), (("OBJECT", "ENCODING", "k"), 1, 0),
    (("SET", "x", "1", "GET"), 0, 1), (("GETSET", "k", "1"), 1, 0), (("GETDEL", "k"), 1, 0),
    (("APPEND", "k", "1"), 0, 0), (("INCR", "x"), 0, 0), (("SET", "k", "1"), 0, 0),
    (("RENAME", "k", "y"), 0, 0), (("EXPIRE", "k", 5), 0, 0), (("KEYS", "*"), 0, 0),
    (("SCAN", 0, "TYPE", "string"), 1, 0), (("SCAN", 0), 0, 0),
]


@pytest.mark.parametrize("cmd,hits,misses", STAT_CASES, ids=[" ".join(map(str, c[0]))
                                                           for c in STAT_CASES])
def test_keyspace_hit_miss_statistics(server, client, cmd, hits, misses):
    run(client, "SET", "k", "v")
    h, m = server.stat_keyspace_hits, server.stat_keyspace_misses
    run(client, *cmd)
    assert (server.stat_keyspace_hits - h, server.stat_keyspace_misses - m) == (hits, misses)


def test_replies_never_share_stored_bytearrays(server, client):
    run(client, "SET", "k", "ab")
    run(client, "APPEND", "k", "c")  # now a bytearray
    value = server.dbs[0].data[b"k"]
    assert type(value) is bytearray
    from pykv.commands.strings import get, mget

    reply = get(client, [b"GET", b"k"])
    mreply = mget(client, [b"MGET", b"k"])
    run(client, "APPEND", "k", "d")
    assert reply == b"abc" and mreply == [b"abc"]
    assert encode_reply(reply) == b"$3\r\nabc\r\n"


def test_every_slot_of_the_compiled_classes_is_an_attribute():
    # compiled, Clock and Database are extension types (keyspace.pxd): a slot added to
    # keyspace.py must still be an attribute, declared in the .pxd or not
    clock = Clock()
    db = Database(0, clock)
    for obj in (clock, db):
        for name in type(obj).__slots__:
            getattr(obj, name)
    db.added_later = 1  # what an undeclared new slot amounts to
    assert db.added_later == 1


def test_clock_update_reads_the_wall_clock_in_milliseconds():
    # compiled, update reads CLOCK_REALTIME in C (keyspace.pxd): the same value as
    # int(time.time() * 1000) read just before and after it
    clock = Clock()
    for _ in range(100):
        before = int(time.time() * 1000)
        ms = clock.update()
        after = int(time.time() * 1000)
        assert before <= ms <= after
        assert clock.ms == ms and clock.sec == ms // 1000
