"""DEBUG DIGEST and DEBUG DIGEST-VALUE give Redis's own hex for the same data, every type."""
from __future__ import annotations

from integration.test_rdb_interop import build_dataset


def _streams(c) -> None:
    c.call("XADD", "stream:small", "1-1", "a", "1", "b", "two")
    c.call("XADD", "stream:small", "1-2", "a", "3", "b", "four")
    c.call("XADD", "stream:small", "5-0", "other", "fields", "n", "-12")
    c.call("XDEL", "stream:small", "1-2")
    for i in range(250):
        c.call("XADD", "stream:big", f"{i + 1}-{i % 3}", "f", str(i), "g", "x" * (i % 40))
    c.call("XGROUP", "CREATE", "stream:big", "grp", "0")
    c.call("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "5", "STREAMS", "stream:big", ">")
    c.call("XADD", "stream:empty", "MAXLEN", "0", "7-7", "k", "v")


def _both(diff, setup) -> None:
    setup(diff.real)
    setup(diff.ours)


def test_dataset_digest_matches_redis(diff):
    diff("DEBUG", "DIGEST")  # empty: forty zeros
    _both(diff, build_dataset)
    _both(diff, _streams)
    diff("DEBUG", "DIGEST")
    diff("SELECT", "3")
    diff("DEBUG", "DIGEST")


def test_digest_value_of_every_type_and_encoding(diff):
    _both(diff, build_dataset)
    _both(diff, _streams)
    keys = sorted(k for k in diff.real.call("KEYS", "*").split(b"\r\n")[2::2] if k)
    assert len(keys) > 15
    for key in keys:
        diff("OBJECT", "ENCODING", key)
        diff("DEBUG", "DIGEST-VALUE", key)
    diff("DEBUG", "DIGEST-VALUE", *keys[:5], "no-such-key")


def test_digest_sees_ttl_order_and_scores(diff):
    diff("RPUSH", "l", "a", "b")
    diff("RPUSH", "l2", "b", "a")
    diff("ZADD", "z", "0.1", "m", "-inf", "n", "1e300", "o", "-0", "p")
    diff("HSET", "h", "f", "1", "g", "12345678901234567890")
    diff("SADD", "s", "-1", "7", "x")
    diff("DEBUG", "DIGEST-VALUE", "l", "l2", "z", "h", "s")
    diff("DEBUG", "DIGEST")
    diff("EXPIRE", "l", "1000")
    diff("DEBUG", "DIGEST-VALUE", "l")
    diff("DEBUG", "DIGEST")
