"""Keyspace events of the list, hash, set and blocking commands against redis-server 7.0.

Both servers publish every event (``KEA``); after each command the subscriber pair sends
PING and everything received before the PONG (the command's events, in order) must be
identical.
"""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient, encode_command


@pytest.fixture
def watch(diff, real_redis, pykv_proc):
    diff("CONFIG", "SET", "notify-keyspace-events", "KEA")
    subs = [RawClient(port=real_redis.port), RawClient(port=pykv_proc.port)]
    for s in subs:
        s.call("PSUBSCRIBE", "__key*@*__:*")

    def check(*cmd, random_reply: bool = False) -> None:
        if random_reply:
            real, ours = diff.both(*cmd)
            assert len(real) == len(ours)
        else:
            diff(*cmd)
        seen = []
        for s in subs:
            s.send_raw(encode_command("PING"))
            got = []
            while True:
                reply = s.read_reply()
                if reply.startswith(b"*2\r\n$4\r\npong"):
                    break
                got.append(reply)
            seen.append(got)
        assert seen[1] == seen[0], cmd

    yield check
    for s in subs:
        s.close()
    diff.real.call("CONFIG", "SET", "notify-keyspace-events", "")
    diff.ours.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_list_events(watch):
    for cmd in [("RPUSH", "l", "a", "b", "c"), ("LPUSH", "l", "z"), ("LPUSHX", "nokey", "a"),
                ("RPUSHX", "l", "d"), ("LPOP", "l"), ("RPOP", "l", "2"), ("LPOP", "l", "0"),
                ("LINSERT", "l", "BEFORE", "b", "x"), ("LINSERT", "l", "BEFORE", "q", "x"),
                ("LSET", "l", "0", "y"), ("LREM", "l", "0", "nothing"), ("LREM", "l", "1", "y"),
                ("LTRIM", "l", "0", "-1"), ("RPUSH", "m", "1", "2"),
                ("LMOVE", "m", "l", "LEFT", "RIGHT"), ("RPOPLPUSH", "m", "m2"),
                ("LMPOP", "1", "l", "LEFT", "COUNT", "10"), ("RPUSH", "t", "1", "2"),
                ("LTRIM", "t", "5", "10"), ("RPUSH", "b", "1"), ("BLPOP", "b", "0"),
                ("RPUSH", "b", "1"), ("BLMOVE", "b", "b2", "LEFT", "LEFT", "0"),
                ("BLMPOP", "0", "1", "b2", "RIGHT")]:
        watch(*cmd)


def test_hash_events(watch):
    for cmd in [("HSET", "h", "a", "1", "b", "2"), ("HSET", "h", "a", "1"), ("HMSET", "h", "c", "3"),
                ("HSETNX", "h", "a", "1"), ("HSETNX", "h", "d", "4"), ("HDEL", "h", "zz"),
                ("HDEL", "h", "a", "b"), ("HINCRBY", "h", "n", "1"),
                ("HINCRBYFLOAT", "h", "f", "1.5"), ("HINCRBY", "h", "c", "x"),
                ("HDEL", "h", "c", "d", "n", "f")]:
        watch(*cmd)


def test_set_events(watch):
    for cmd in [("SADD", "s", "1", "2", "3"), ("SADD", "s", "1"), ("SREM", "s", "9"),
                ("SREM", "s", "1"), ("SMOVE", "s", "t", "2"), ("SMOVE", "s", "t", "9"),
                ("SMOVE", "s", "s", "3"), ("SADD", "u", "1", "2"), ("SINTERSTORE", "d", "t", "u"),
                ("SUNIONSTORE", "d", "t", "u"), ("SDIFFSTORE", "d", "t", "t"),
                ("SDIFFSTORE", "d", "t", "t"), ("SPOP", "s"), ("SADD", "p", "1", "2", "3"),
                ("SPOP", "p", "0"), ("SPOP", "p", "5"), ("SMOVE", "u", "s", "1"),
                ("SMOVE", "u", "s", "2")]:
        watch(*cmd)
    watch("SADD", "r", "1", "2", "3", "4")
    watch("SPOP", "r", "1", random_reply=True)
    watch("SPOP", "r", random_reply=True)


def test_served_blocked_client_events(diff, watch, real_redis, pykv_proc):
    waiters = [RawClient(port=real_redis.port), RawClient(port=pykv_proc.port)]
    for w in waiters:
        w.send_raw(encode_command("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"))
    deadline = time.monotonic() + 10
    while True:
        counts = [c.call("CLIENT", "LIST").count(b" flags=b ") for c in (diff.real, diff.ours)]
        if counts == [1, 1]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    watch("RPUSH", "src", "v")
    assert waiters[0].read_reply() == waiters[1].read_reply() == b"$1\r\nv\r\n"
    watch("LRANGE", "dst", "0", "-1")
    for w in waiters:
        w.close()
