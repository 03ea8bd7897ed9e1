"""maxmemory under noeviction against real redis-server: which commands get -OOM, byte for byte.

Both servers run with ``maxmemory 1`` (always over the limit) and ``noeviction``: denyoom
commands are refused with Redis's reply, other commands run, MULTI refuses everything but
EXEC/DISCARD/QUIT/RESET, EXEC of a queue holding a denyoom command aborts, and a script's
denyoom call fails until the script has written something. RESP2 and RESP3.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient
from support.servers import server_pair

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"

SEQUENCE = [
    ("SET", "k", "v"),
    ("GET", "k"),
    ("DEL", "k"),
    ("INCR", "n"), ("APPEND", "s", "x"), ("LPUSH", "l", "a"), ("RPUSH", "l", "a"),
    ("HSET", "h", "f", "v"), ("SADD", "s1", "m"), ("ZADD", "z", "1", "m"),
    ("XADD", "x", "*", "f", "v"), ("SETRANGE", "s", "0", "x"), ("PFADD", "hll", "a"),
    ("GEOADD", "g", "1", "1", "m"), ("SETNX", "k", "v"), ("MSET", "a", "1", "b", "2"),
    ("EXISTS", "k"), ("EXPIRE", "k", "10"), ("PING",), ("DBSIZE",), ("FLUSHALL",),
    ("MULTI",), ("SET", "k", "v"), ("GET", "k"), ("PING",), ("EXEC",),
    ("MULTI",), ("GET", "k"), ("DISCARD",),
    ("MULTI",), ("MULTI",), ("DISCARD",),
    ("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k"),
    ("EVAL", "return redis.pcall('set', KEYS[1], 'v')", "1", "k"),
    ("EVAL", "return redis.call('get', KEYS[1])", "1", "k"),
    ("EVAL", "redis.call('del', KEYS[1]); return redis.call('set', KEYS[1], 'v')", "1", "k"),
    ("GET", "k"),
    ("EVAL", "redis.call('set', KEYS[1], 'v'); return redis.call('set', KEYS[1], 'w')",
     "1", "k"),
    ("FCALL", "nosuch", "0"),
]


@pytest.mark.parametrize("resp", [2, 3])
def test_noeviction_refuses_denyoom_commands(resp):
    with server_pair({"maxmemory": "1", "maxmemory-policy": "noeviction"}) as (rp, op):
        real, ours = RawClient(port=rp), RawClient(port=op)
        try:
            if resp == 3:
                real.call("HELLO", "3")
                ours.call("HELLO", "3")
            for args in SEQUENCE:
                assert ours.call(*args) == real.call(*args), args
            assert ours.call("SET", "k", "v") == real.call("SET", "k", "v") == OOM
            for c in (real, ours):
                c.call("CONFIG", "SET", "maxmemory", "0")
            for args in (("SET", "k", "v"), ("GET", "k")):
                assert ours.call(*args) == real.call(*args), args
            stats = [[line for line in c.call("INFO", "errorstats").split(b"\r\n")
                      if b"OOM" in line] for c in (real, ours)]
            assert stats[0] == stats[1] and stats[0]
        finally:
            real.close()
            ours.close()


def test_exec_of_a_queued_denyoom_command_aborts():
    """Queued while under the limit, executed over it: EXEC is refused as a whole."""
    with server_pair({"maxmemory-policy": "noeviction"}) as (rp, op):
        clients = [(RawClient(port=rp), RawClient(port=rp)),
                   (RawClient(port=op), RawClient(port=op))]
        replies = []
        for tx, admin in clients:
            seen = [tx.call("MULTI"), tx.call("SET", "k", "v"), tx.call("GET", "k")]
            seen.append(admin.call("CONFIG", "SET", "maxmemory", "1"))
            seen.append(tx.call("EXEC"))
            seen.append(tx.call("MULTI"))
            seen.append(tx.call("DISCARD"))
            admin.call("CONFIG", "SET", "maxmemory", "0")
            seen.append(tx.call("EXISTS", "k"))
            replies.append(seen)
            tx.close()
            admin.close()
        assert replies[1] == replies[0]
        assert replies[1][4].startswith(b"-EXECABORT") and b"OOM" in replies[1][4]
