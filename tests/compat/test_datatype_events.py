"""Keyspace events of the zset/bitmap/HLL/geo/SORT commands equal Redis's, in order."""
from __future__ import annotations

from support.resp import RawClient

COMMANDS = [
    ("ZADD", "z", "1", "a", "2", "b"), ("ZADD", "z", "1", "a"), ("ZINCRBY", "z", "1", "a"),
    ("ZADD", "z", "INCR", "1", "a"), ("ZREM", "z", "a", "nosuch"), ("ZADD", "z", "3", "c"),
    ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "5"), ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
    ("ZREMRANGEBYRANK", "z", "0", "0"), ("ZREMRANGEBYSCORE", "z", "2", "2"),
    ("ZADD", "l", "0", "a", "0", "b"), ("ZREMRANGEBYLEX", "l", "-", "+"),
    ("ZUNIONSTORE", "u", "1", "z"), ("ZINTERSTORE", "u", "2", "z", "nokey"),
    ("ZDIFFSTORE", "d", "1", "z"), ("ZRANGESTORE", "r", "z", "0", "-1"),
    ("ZRANGESTORE", "r", "nokey", "0", "-1"), ("ZMPOP", "1", "z", "MIN", "COUNT", "9"),
    ("SETBIT", "b", "3", "1"), ("SETBIT", "b", "3", "1"), ("BITOP", "NOT", "b2", "b"),
    ("BITOP", "AND", "b2", "nokey"), ("BITFIELD", "bf", "SET", "u8", "0", "5"),
    ("BITFIELD", "bf", "SET", "u8", "0", "5"), ("PFADD", "h", "x"), ("PFADD", "h", "x"),
    ("PFCOUNT", "h"), ("PFMERGE", "h2", "h"),
    ("GEOADD", "g", "1", "1", "p", "2", "2", "q"),
    ("GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "500", "km"),
    ("GEORADIUS", "g", "1", "1", "500", "km", "STORE", "gs2"),
    ("RPUSH", "list", "3", "1", "2"), ("SORT", "list", "STORE", "sorted"),
    ("SORT", "nokey", "STORE", "sorted"),
]


def _events(port: int) -> list[bytes]:
    sub = RawClient(port=port)
    cli = RawClient(port=port)
    try:
        cli.call("FLUSHALL")
        cli.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        sub.call("PSUBSCRIBE", "__keyevent@0__:*")
        for cmd in COMMANDS:
            cli.call(*cmd)
        cli.call("PUBLISH", "__keyevent@0__:end", "end")
        out = []
        while True:
            msg = sub.read_reply()
            if b"__keyevent@0__:end" in msg:
                return out
            out.append(msg)
    finally:
        cli.call("CONFIG", "SET", "notify-keyspace-events", "")
        sub.close()
        cli.close()


def test_events_match_redis(real_redis, pykv_proc):
    expected = _events(real_redis.port)
    got = _events(pykv_proc.port)
    assert len(expected) > 25
    assert got == expected
