"""MEMORY HELP / STATS / DOCTOR / MALLOC-STATS / PURGE against real redis-server.

HELP, the errors, PURGE and an empty instance's DOCTOR are compared byte for byte. STATS
values are allocator figures, so its replies are compared by shape: the same field names in
the same order with the same reply types (RESP2 and RESP3), and the same key count. The
oracle is built with jemalloc, pykv is not: MALLOC-STATS is checked against what Redis
without jemalloc answers. (MEMORY USAGE: test_server_cmds.py; the family's COMMAND INFO and
DOCS: test_command_introspection.py.)
"""
from __future__ import annotations

import pytest
from resp_values import parse
from support.resp import RawClient
from support.servers import RealRedis

from pykv.commands import memory_cmd
from pykv.testing import Server

SUBCOMMANDS = ["doctor", "help", "malloc-stats", "purge", "stats", "usage"]


@pytest.mark.parametrize("resp3", [False, True])
def test_help(diff, diff3, resp3):
    d = diff3 if resp3 else diff
    d("MEMORY", "HELP")
    d("memory", "help")


@pytest.mark.parametrize("args", [
    ["MEMORY"], ["MEMORY", "NOSUCH"], ["MEMORY", "HELP", "x"], ["MEMORY", "DOCTOR", "x"],
    ["MEMORY", "STATS", "x"], ["MEMORY", "PURGE", "x"], ["MEMORY", "MALLOC-STATS", "x"],
    ["MEMORY", "MALLOC-STATS", "x", "y"], ["MEMORY", "USAGE"], ["MEMORY", ""],
])
def test_errors(diff, diff3, args):
    diff(*args)
    diff3(*args)


def test_purge(diff, diff3):
    diff("SET", "k", "v" * 1000)
    diff("MEMORY", "PURGE")
    diff3("MEMORY", "PURGE")
    diff("GET", "k")


def test_family_is_listed_as_in_redis(diff):
    real, ours = diff.both("COMMAND", "LIST", "FILTERBY", "PATTERN", "memory*")
    names = sorted(parse(ours))
    assert names == sorted(parse(real))
    assert names == [b"memory"] + [f"memory|{s}".encode() for s in SUBCOMMANDS]


def test_malloc_stats_is_redis_without_jemalloc(diff, diff3):
    for d in (diff, diff3):
        real, ours = d.both("MEMORY", "MALLOC-STATS")
        assert real.startswith((b"$", b"=")) and b"jemalloc" in real   # the oracle's allocator
        assert ours == b"$45\r\nStats not supported for the current allocator\r\n"


def _shape(value):
    """Field names and reply types of a decoded MEMORY STATS reply."""
    if isinstance(value, tuple) and value[0] == "map":       # RESP3 map
        return ("map", [(k, _shape(v)) for k, v in value[1]])
    if isinstance(value, list):                               # RESP2 flattened map
        return ("flat", [(k, _shape(v)) for k, v in zip(value[::2], value[1::2], strict=True)])
    return type(value).__name__


def _stats(d):
    real, ours = d.both("MEMORY", "STATS")
    return parse(real), parse(ours)


@pytest.mark.parametrize("resp3", [False, True])
def test_stats_fields_order_and_types(diff, diff3, resp3):
    d = diff3 if resp3 else diff
    real, ours = _stats(d)
    assert _shape(ours) == _shape(real)
    assert not any(k.startswith(b"db.") for k, _ in _shape(ours)[1])
    # keys in db 0 and 3 (expiring ones in 3), db 15 emptied again: no db.15 entry
    d.many([["SET", "a", "1"], ["SET", "b", "2"], ["SELECT", "3"], ["SET", "c", "3"],
            ["EXPIRE", "c", "100"], ["SELECT", "15"], ["SET", "d", "4"], ["DEL", "d"]])
    real, ours = _stats(d)
    shape = _shape(ours)
    assert shape == _shape(real)
    assert [k for k, _ in shape[1] if k.startswith(b"db.")] == [b"db.0", b"db.3"]
    fields = dict(ours[1]) if resp3 else dict(zip(ours[::2], ours[1::2], strict=True))
    assert fields[b"keys.count"] == 3
    for name in (b"replication.backlog", b"clients.slaves", b"cluster.links"):
        assert fields[name] == 0


def test_stats_agrees_with_info_memory(raw):
    raw.call("SCRIPT", "FLUSH")
    raw.call("SET", "k", "v")
    raw.call("SCRIPT", "LOAD", "return 1")
    raw.call("SCRIPT", "LOAD", "return 2")
    stats = parse(raw.call("MEMORY", "STATS"))
    stats = dict(zip(stats[::2], stats[1::2], strict=True))
    text = parse(raw.call("INFO", "memory")).decode()
    info = dict(line.split(":", 1) for line in text.split("\r\n")[1:] if line)
    assert int(info["used_memory_startup"]) == stats[b"startup.allocated"] > 0
    assert int(info["used_memory_scripts_eval"]) == stats[b"lua.caches"] > 0
    assert int(info["used_memory_functions"]) == stats[b"functions.caches"]
    assert int(info["used_memory_overhead"]) == stats[b"overhead.total"]
    assert int(info["mem_aof_buffer"]) == stats[b"aof.buffer"]
    assert info["number_of_cached_scripts"] == "2"
    assert stats[b"overhead.total"] > stats[b"startup.allocated"]
    assert stats[b"db.0"][1] > 0     # overhead.hashtable.main


@pytest.fixture
def fresh():
    """A new redis-server and a new pykv (nothing run on either yet), and a raw client to each."""
    real = RealRedis()
    try:
        with Server() as ours:
            clients = RawClient(port=real.port), RawClient(port=ours.port)
            yield clients
            for c in clients:
                c.close()
    finally:
        real.stop()


def test_doctor_on_an_empty_instance(fresh):
    real, ours = fresh
    for cmd in (["MEMORY", "DOCTOR"], ["SET", "k", "v"], ["MEMORY", "DOCTOR"], ["HELLO", "3"],
                ["MEMORY", "DOCTOR"]):
        expected = real.call(*cmd)
        if cmd[0] != "HELLO":
            assert ours.call(*cmd) == expected, cmd
        else:
            ours.call(*cmd)
    assert expected.startswith(b"=272\r\ntxt:Hi Sam, this instance is empty")


def test_doctor_with_data_finds_no_issue(fresh):
    _, ours = fresh
    for batch in range(100):    # ~10 MB of values: well past the "empty" floor
        keys_values = [x for i in range(1000) for x in (f"key:{batch}:{i}", "v" * 100)]
        assert ours.call("MSET", *keys_values) == b"+OK\r\n"
    assert parse(ours.call("MEMORY", "DOCTOR")).decode() == memory_cmd.DOCTOR_FINE
