"""Writes that change nothing, compared with real redis-server 7.0: no WATCH touch, no event.

Redis signals a key as modified (WATCH, client-side caching) and fires keyspace events only
when a write command really changes it: ``SETBIT k 0 0`` on a bit already 0, ``HDEL`` of a
missing field, ``EXPIRE ... NX`` on a key with a TTL and so on are silent. Each case below
runs its setup, then ``WATCH k``, the command under test, and ``MULTI; PING; EXEC`` on both
servers, in RESP2 and RESP3: EXEC's reply (an array, or a null when the watch was touched)
must be the same bytes, and so must the keyspace events a subscriber saw for the command. The table also has
real changes next to the no-ops, so a server that never signals fails too.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient

# (setup commands, the write under test); the key is always "k"
CASES: list[tuple[list[tuple], tuple]] = [
    # strings and bitmaps
    ([("SET", "k", "0")], ("SETBIT", "k", "0", "0")),
    ([("SET", "k", "0")], ("SETBIT", "k", "2", "1")),
    ([("SET", "k", "a")], ("SETBIT", "k", "100", "0")),  # grows the string: a change
    ([("SET", "k", "abc")], ("SETRANGE", "k", "1", "")),
    ([("SET", "k", "abc")], ("SETRANGE", "k", "1", "b")),  # same byte, still written
    ([], ("SETRANGE", "k", "0", "")),
    ([("SET", "k", "abc")], ("APPEND", "k", "")),
    ([], ("APPEND", "k", "")),
    ([("SET", "k", "v")], ("SET", "k", "v")),
    ([("SET", "k", "v")], ("SET", "k", "w", "NX")),
    ([], ("SET", "k", "w", "XX")),
    ([("SET", "k", "v")], ("SETNX", "k", "w")),
    ([("SET", "k", "v")], ("MSETNX", "k", "w", "other", "x")),
    ([("SET", "k", "5")], ("INCRBY", "k", "0")),
    ([("SET", "k", "5")], ("INCRBYFLOAT", "k", "0")),
    ([("SET", "k", "v")], ("GETDEL", "nokey")),
    ([("SET", "k", "v")], ("GETEX", "k")),
    ([("SET", "k", "v")], ("GETEX", "k", "PERSIST")),
    ([("SET", "k", "v", "EX", "100")], ("GETEX", "k", "PERSIST")),
    ([("SET", "a", "\xff")], ("BITOP", "NOT", "k", "missing")),
    ([("SET", "k", "v")], ("BITOP", "AND", "k", "missing")),  # deletes k
    ([("SET", "k", "\x00")], ("BITFIELD", "k", "SET", "u8", "0", "0")),
    ([("SET", "k", "\x00")], ("BITFIELD", "k", "GET", "u8", "0")),
    ([("SET", "k", "\x00")], ("BITFIELD", "k", "INCRBY", "u8", "0", "0")),
    # keys
    ([("SET", "k", "v")], ("PERSIST", "k")),
    ([("SET", "k", "v", "EX", "100")], ("PERSIST", "k")),
    ([("SET", "k", "v", "EX", "100")], ("EXPIRE", "k", "200", "NX")),
    ([("SET", "k", "v")], ("EXPIRE", "k", "200", "XX")),
    ([("SET", "k", "v", "EX", "100")], ("EXPIRE", "k", "50", "GT")),
    ([("SET", "k", "v", "EX", "100")], ("EXPIRE", "k", "200", "LT")),
    ([("SET", "k", "v")], ("EXPIRE", "k", "200", "LT")),
    ([("SET", "k", "v", "EX", "100")], ("PEXPIRE", "k", "200000", "GT")),
    ([("SET", "k", "v", "EX", "100")], ("EXPIREAT", "k", "1", "NX")),
    ([("SET", "k", "v")], ("EXPIRE", "k", "100")),
    ([("SET", "k", "v")], ("DEL", "nokey")),
    ([("SET", "k", "v")], ("UNLINK", "nokey")),
    ([("SET", "k", "v")], ("RENAME", "k", "k")),
    ([("SET", "k", "v")], ("RENAMENX", "k", "k")),
    ([("SET", "k", "v"), ("SET", "j", "w")], ("RENAMENX", "j", "k")),
    ([("SET", "k", "v")], ("COPY", "nokey", "k")),
    ([("SET", "k", "v"), ("SET", "j", "w")], ("COPY", "j", "k")),
    ([("SET", "k", "v")], ("MOVE", "nokey", "1")),
    # lists
    ([("RPUSH", "k", "a", "b")], ("LREM", "k", "0", "zz")),
    ([("RPUSH", "k", "a", "b")], ("LREM", "k", "0", "a")),
    ([("RPUSH", "k", "a", "b")], ("LTRIM", "k", "0", "-1")),
    ([("RPUSH", "k", "a", "b")], ("LTRIM", "k", "0", "10")),
    ([("RPUSH", "k", "a", "b")], ("LTRIM", "k", "1", "-1")),
    ([("RPUSH", "k", "a", "b")], ("LINSERT", "k", "BEFORE", "zz", "x")),
    ([("RPUSH", "k", "a", "b")], ("LSET", "k", "0", "a")),
    ([], ("LPUSHX", "k", "a")),
    ([], ("RPOP", "k")),
    ([("RPUSH", "k", "a")], ("LMOVE", "k", "k", "LEFT", "LEFT")),
    ([("RPUSH", "k", "a", "b")], ("LMOVE", "k", "k", "LEFT", "RIGHT")),
    ([("RPUSH", "k", "a")], ("LPOP", "k", "0")),
    # hashes
    ([("HSET", "k", "f", "v")], ("HDEL", "k", "nofield")),
    ([("HSET", "k", "f", "v")], ("HSETNX", "k", "f", "w")),
    ([("HSET", "k", "f", "v")], ("HSET", "k", "f", "v")),
    ([("HSET", "k", "f", "1")], ("HINCRBY", "k", "f", "0")),
    # sets
    ([("SADD", "k", "a")], ("SADD", "k", "a")),
    ([("SADD", "k", "a")], ("SREM", "k", "nomember")),
    ([("SADD", "k", "a")], ("SMOVE", "k", "j", "nomember")),
    ([("SADD", "k", "a"), ("SADD", "j", "a")], ("SMOVE", "j", "k", "a")),
    ([("SADD", "k", "a")], ("SPOP", "k", "0")),
    ([("SADD", "a", "x")], ("SINTERSTORE", "k", "a", "missing")),
    ([("SADD", "k", "a")], ("SINTERSTORE", "k", "missing")),  # deletes k
    # sorted sets
    ([("ZADD", "k", "1", "a")], ("ZADD", "k", "1", "a")),
    ([("ZADD", "k", "1", "a")], ("ZADD", "k", "2", "a")),
    ([("ZADD", "k", "1", "a")], ("ZADD", "k", "NX", "2", "a")),
    ([("ZADD", "k", "1", "a")], ("ZADD", "k", "XX", "2", "b")),
    ([("ZADD", "k", "1", "a")], ("ZADD", "k", "GT", "0", "a")),
    ([("ZADD", "k", "1", "a")], ("ZADD", "k", "INCR", "0", "a")),
    ([("ZADD", "k", "1", "a")], ("ZINCRBY", "k", "0", "a")),
    ([("ZADD", "k", "1", "a")], ("ZREM", "k", "nomember")),
    ([("ZADD", "k", "1", "a")], ("ZREMRANGEBYSCORE", "k", "5", "6")),
    ([("ZADD", "k", "1", "a")], ("ZREMRANGEBYRANK", "k", "5", "6")),
    ([("ZADD", "k", "1", "a")], ("ZREMRANGEBYLEX", "k", "[x", "[y")),
    ([("ZADD", "k", "1", "a")], ("ZPOPMIN", "k", "0")),
    ([("ZADD", "k", "1", "a")], ("ZUNIONSTORE", "k", "1", "missing")),  # deletes k
    # hyperloglog, streams, geo
    ([("PFADD", "k", "a")], ("PFADD", "k", "a")),
    ([("PFADD", "k", "a")], ("PFADD", "k")),
    ([("XADD", "k", "1-1", "f", "v")], ("XDEL", "k", "9-9")),
    ([("XADD", "k", "1-1", "f", "v")], ("XTRIM", "k", "MAXLEN", "10")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "0")],
     ("XGROUP", "CREATE", "k", "g2", "$")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "0")],
     ("XGROUP", "SETID", "k", "g", "0")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "0")],
     ("XGROUP", "DELCONSUMER", "k", "g", "nobody")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "0")],
     ("XACK", "k", "g", "1-1")),
    ([("GEOADD", "k", "13.361389", "38.115556", "a")],
     ("GEOADD", "k", "NX", "13.361389", "38.115556", "a")),
    # writes that always signal (the controls), and more store/pop forms
    ([("SET", "k", "5")], ("INCR", "k")),
    ([("SET", "k", "5")], ("DECR", "k")),
    ([("SET", "k", "5")], ("DECRBY", "k", "0")),
    ([("SET", "k", "v")], ("GETSET", "k", "v")),
    ([("SET", "k", "v")], ("MSET", "k", "v")),
    ([("SET", "k", "v")], ("SETEX", "k", "100", "v")),
    ([("SET", "k", "v")], ("PSETEX", "k", "100000", "v")),
    ([("HSET", "k", "f", "v")], ("HMSET", "k", "f", "v")),
    ([("HSET", "k", "f", "1")], ("HINCRBYFLOAT", "k", "f", "0")),
    ([("RPUSH", "k", "a")], ("LPUSH", "k", "a")),
    ([("RPUSH", "k", "a")], ("RPUSH", "k", "a")),
    ([], ("XADD", "k", "NOMKSTREAM", "*", "f", "v")),
    ([("XADD", "k", "1-1", "f", "v")], ("XADD", "k", "MAXLEN", "0", "2-1", "f", "v")),
    ([], ("RPUSHX", "k", "a")),
    ([("RPUSH", "k", "a")], ("RPOPLPUSH", "missing", "k")),
    ([("RPUSH", "k", "a")], ("LMPOP", "1", "missing", "LEFT")),
    ([], ("BLPOP", "k", "0.01")),
    ([], ("BRPOP", "k", "0.01")),
    ([], ("BLMOVE", "k", "j", "LEFT", "LEFT", "0.01")),
    ([], ("BRPOPLPUSH", "k", "j", "0.01")),
    ([], ("BLMPOP", "0.01", "1", "k", "LEFT")),
    ([], ("BZPOPMIN", "k", "0.01")),
    ([], ("BZPOPMAX", "k", "0.01")),
    ([], ("BZMPOP", "0.01", "1", "k", "MIN")),
    ([("ZADD", "k", "1", "a")], ("ZPOPMAX", "k", "0")),
    ([("ZADD", "k", "1", "a")], ("ZMPOP", "1", "missing", "MIN")),
    ([("SET", "k", "v", "EX", "100")], ("PEXPIREAT", "k", "1", "NX")),
    ([("PFADD", "k", "a")], ("PFMERGE", "k")),
    ([("PFADD", "k", "a")], ("PFDEBUG", "GETREG", "k")),
    ([], ("SORT", "missing", "STORE", "k")),
    ([("SET", "k", "v")], ("SORT", "missing", "STORE", "k")),
    ([("RPUSH", "src", "2", "1")], ("SORT", "src", "STORE", "k")),
    ([], ("SDIFFSTORE", "k", "missing")),
    ([], ("SUNIONSTORE", "k", "missing")),
    ([("SADD", "k", "a")], ("SUNIONSTORE", "k", "k")),
    ([], ("ZINTERSTORE", "k", "1", "missing")),
    ([], ("ZDIFFSTORE", "k", "1", "missing")),
    ([], ("ZRANGESTORE", "k", "missing", "0", "-1")),
    ([("ZADD", "k", "1", "a")], ("ZRANGESTORE", "k", "missing", "0", "-1")),
    ([], ("GEOSEARCHSTORE", "k", "missing", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km",
          "ASC")),
    ([], ("GEORADIUS", "missing", "0", "0", "1", "km", "STORE", "k")),
    ([], ("GEORADIUSBYMEMBER", "missing", "m", "1", "km", "STORE", "k")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "$")],
     ("XAUTOCLAIM", "k", "g", "c", "0", "0")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "$")],
     ("XCLAIM", "k", "g", "c", "0", "1-1")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "$")],
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">")),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "$"),
      ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">")],
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">")),
    ([("XADD", "k", "1-1", "f", "v")], ("XSETID", "k", "1-1")),
    ([("XADD", "k", "1-1", "f", "v")], ("XSETID", "k", "5-5")),
    ([], ("FLUSHDB",)),
    ([("SET", "k", "v")], ("FLUSHDB",)),
    ([("SET", "k", "v")], ("SWAPDB", "0", "0")),
    ([("SELECT", "9"), ("SET", "x", "v"), ("SELECT", "0")], ("SWAPDB", "0", "9")),
]

# write commands without a case here, and why
EXEMPT = {
    "restore": "needs a DUMP payload (tests/compat/test_dump_restore.py)",
    "function": "functions are not keys",
    "flushall": "covered by tests/compat/test_transactions.py (FLUSHALL touches watchers)",
    "migrate": "needs a second server",
    "restore-asking": "RESTORE under another name (tests/integration/test_migrate.py, test_cluster_mixed.py)",
}


class Pair:
    """One connection to each server."""

    def __init__(self, real_port: int, ours_port: int) -> None:
        self.real = RawClient(port=real_port)
        self.ours = RawClient(port=ours_port)

    def both(self, *args) -> tuple[bytes, bytes]:
        return self.real.call(*args), self.ours.call(*args)

    def close(self) -> None:
        self.real.close()
        self.ours.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pairs(request, real_redis, pykv_proc):
    main = Pair(real_redis.port, pykv_proc.port)
    if request.param == 3:
        main.both("HELLO", "3")
    main.both("FLUSHALL")
    main.both("CONFIG", "SET", "notify-keyspace-events", "KEA")
    sub = Pair(real_redis.port, pykv_proc.port)
    sub.both("PSUBSCRIBE", "__key*@*__:*")
    yield main, sub
    main.both("CONFIG", "SET", "notify-keyspace-events", "")
    main.close()
    sub.close()


def _events(client: RawClient) -> list[bytes]:
    """Events up to the reply of a PING sent now (subscribed mode: ``*2 pong ""``)."""
    client.send_raw(b"PING\r\n")
    out = []
    while True:
        reply = client.read_reply()
        if reply.startswith(b"*2\r\n$4\r\npong\r\n"):
            return out
        out.append(reply)


@pytest.mark.parametrize("setup,cmd", CASES, ids=[" ".join(c) for _, c in CASES])
def test_write_signals_only_real_changes(pairs, setup, cmd):
    main, sub = pairs
    for step in setup:
        main.both(*step)
    _events(sub.real), _events(sub.ours)  # drop the setup's events
    main.both("WATCH", "k")
    real, ours = main.both(*cmd)
    assert ours == real, f"{cmd}: reply\n  redis: {real!r}\n  pykv:  {ours!r}"
    real_events, our_events = _events(sub.real), _events(sub.ours)
    assert our_events == real_events, f"{cmd}: events\n  redis: {real_events}\n  pykv:  {our_events}"
    main.both("MULTI")
    main.both("PING")
    real, ours = main.both("EXEC")
    assert ours == real, f"{cmd}: EXEC after WATCH\n  redis: {real!r}\n  pykv:  {ours!r}"


def test_every_write_command_has_a_case():
    """The table covers each write command pykv implements (or says why not)."""
    from pykv.commands import load_all_commands
    from pykv.commands.registry import TABLE

    load_all_commands()
    covered = {cmd[0].lower() for _, cmd in CASES} | set(EXEMPT)
    missing = []
    for cmd in TABLE:
        for sub in (cmd.subcommands.values() if cmd.subcommands else [cmd]):
            if sub.handler is not None and "write" in sub.flags:
                if sub.fullname.split("|")[0] not in covered:
                    missing.append(sub.fullname)
    assert not missing, f"write commands with no no-op case: {sorted(missing)}"
