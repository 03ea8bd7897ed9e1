"""Sorted sets against real redis-server 7.0: replies and errors byte for byte."""
from __future__ import annotations

import random

import pytest
from support.resp import encode_command

SCORES = ["0", "1", "-1", "1.5", "2.25", "-0", "inf", "-inf", "+inf", "1e3", "0x10",
          "3.0000000000000004", "1.1", "100", "7", "42.42", "1e-5"]
MEMBERS = [b"a", b"b", b"c", b"d", b"e", b"aa", b"ab", b"ba", b"x" * 70, b"", b"\x00\xff"]


def test_zadd_flags_and_errors(diff):
    diff.many([
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("ZADD", "z", "NX", "5", "a", "4", "d"),
        ("ZADD", "z", "XX", "CH", "5", "a", "4", "e"),
        ("ZADD", "z", "GT", "CH", "1", "a", "9", "b"),
        ("ZADD", "z", "LT", "CH", "1", "a", "9", "c"),
        ("ZADD", "z", "INCR", "2.5", "a"),
        ("ZADD", "z", "INCR", "GT", "-1", "a"),
        ("ZADD", "z", "INCR", "LT", "-1", "a"),
        ("ZADD", "z", "INCR", "NX", "1", "a"),
        ("ZADD", "z", "INCR", "XX", "1", "nosuch"),
        ("ZADD", "z", "NX", "XX", "1", "a"),
        ("ZADD", "z", "GT", "LT", "1", "a"),
        ("ZADD", "z", "GT", "NX", "1", "a"),
        ("ZADD", "z", "INCR", "1", "a", "2", "b"),
        ("ZADD", "z", "1"),
        ("ZADD", "z", "1", "a", "2"),
        ("ZADD", "z", "nan", "a"),
        ("ZADD", "z", "abc", "a"),
        ("ZADD", "z", " 1", "a"),
        ("ZADD", "z", "1e400", "a"),
        ("ZADD", "z", "CH"),
        ("ZADD", "z"),
        ("ZADD", "z", "inf", "i"),
        ("ZADD", "z", "INCR", "-inf", "i"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZADD", "newkey", "XX", "1", "a"),
        ("ZADD", "newkey", "XX", "INCR", "1", "a"),
        ("EXISTS", "newkey"),
        ("ZINCRBY", "z", "1.5", "a"),
        ("ZINCRBY", "z", "x", "a"),
        ("ZINCRBY", "z", "nx", "a"),
        ("ZINCRBY", "z2", "-inf", "q"),
        ("ZINCRBY", "z2", "inf", "q"),
        ("ZSCORE", "z2", "q"),
        ("SET", "s", "v"),
        ("ZADD", "s", "1", "a"),
        ("ZINCRBY", "s", "1", "a"),
        ("ZSCORE", "s", "a"),
        ("ZCARD", "s"),
    ])


@pytest.mark.parametrize("proto", [2, 3])
def test_score_formatting(diff, diff3, proto):
    d = diff if proto == 2 else diff3
    for i, s in enumerate(SCORES):
        d("ZADD", "z", s, f"m{i}")
    d("ZADD", "z", "0.1", "p", "0.2", "q", "1.7976931348623157e308", "big",
      "4.9e-324", "tiny", "123456789012345678", "huge")
    d("ZINCRBY", "z", "0.2", "p")
    d("ZRANGE", "z", "0", "-1", "WITHSCORES")
    d("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES")
    d("ZSCORE", "z", "p")
    d("ZSCORE", "z", "nosuch")
    d("ZSCORE", "nokey", "a")
    d("ZMSCORE", "z", "p", "nosuch", "m6")
    d("ZMSCORE", "nokey", "a", "b")
    d("ZPOPMIN", "z", "2")
    d("ZPOPMAX", "z")
    d("ZPOPMIN", "z", "0")
    d("ZPOPMIN", "nokey")
    d("ZPOPMIN", "nokey", "3")
    d("ZMPOP", "2", "nokey", "z", "MIN", "COUNT", "2")
    d("ZMPOP", "1", "nokey", "MAX")
    d("ZUNION", "1", "z", "WITHSCORES")
    d("ZADD", "small", "1", "a")
    d("ZRANDMEMBER", "small", "-3", "WITHSCORES")
    d("ZRANDMEMBER", "small", "5", "WITHSCORES")
    d("ZSCAN", "small", "0")


def test_ranges_by_index_score_lex(diff):
    diff("ZADD", "z", *sum(([str(i % 7), f"m{i:02d}"] for i in range(30)), []))
    diff("ZADD", "lex", *sum((["0", m] for m in ["a", "b", "c", "d", "e", "f", "g"]), []))
    cases = [
        ("ZRANGE", "z", "0", "-1"), ("ZRANGE", "z", "-5", "-2", "WITHSCORES"),
        ("ZRANGE", "z", "5", "2"), ("ZRANGE", "z", "100", "200"), ("ZRANGE", "z", "-100", "3"),
        ("ZRANGE", "z", "0", "3", "REV", "WITHSCORES"), ("ZREVRANGE", "z", "0", "4"),
        ("ZRANGE", "z", "a", "2"), ("ZRANGE", "z", "0", "1", "LIMIT", "0", "1"),
        ("ZRANGE", "z", "(1", "3", "BYSCORE"), ("ZRANGE", "z", "3", "(1", "BYSCORE", "REV"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "3", "4", "WITHSCORES"),
        ("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "2", "5"),
        ("ZRANGE", "z", "0", "6", "BYSCORE", "LIMIT", "-1", "5"),
        ("ZRANGE", "z", "0", "6", "BYSCORE", "LIMIT", "1", "-1"),
        ("ZRANGE", "z", "0", "6", "BYSCORE", "LIMIT", "30", "1"),
        ("ZRANGE", "z", "0", "6", "BYSCORE", "LIMIT", "1", "0"),
        ("ZRANGE", "z", "(2", "(2", "BYSCORE"), ("ZRANGE", "z", "2", "2", "BYSCORE"),
        ("ZRANGE", "z", "x", "2", "BYSCORE"), ("ZRANGE", "z", "nan", "2", "BYSCORE"),
        ("ZRANGE", "z", "", "(", "BYSCORE"), ("ZRANGE", "z", " 1", "2 ", "BYSCORE"),
        ("ZRANGE", "z", "0x1", "1e0", "BYSCORE"), ("ZRANGE", "z", "(-inf", "(inf", "BYSCORE"),
        ("ZRANGE", "lex", "[b", "(e", "BYLEX"), ("ZRANGE", "lex", "-", "+", "BYLEX"),
        ("ZRANGE", "lex", "+", "-", "BYLEX", "REV", "LIMIT", "1", "2"),
        ("ZRANGE", "lex", "b", "e", "BYLEX"), ("ZRANGE", "lex", "[b", "[b", "BYLEX"),
        ("ZRANGE", "lex", "(b", "(b", "BYLEX"), ("ZRANGE", "lex", "+", "+", "BYLEX"),
        ("ZRANGE", "lex", "-", "-", "BYLEX"), ("ZRANGE", "lex", "+a", "-", "BYLEX"),
        ("ZRANGE", "lex", "-", "+", "BYLEX", "WITHSCORES"),
        ("ZRANGE", "lex", "-", "+", "BYLEX", "BYSCORE"),
        ("ZRANGE", "z", "0", "1", "REV", "REV"), ("ZRANGE", "z", "0", "1", "FOO"),
        ("ZRANGE", "z", "0", "1", "LIMIT", "1"), ("ZRANGE", "z", "0", "1", "LIMIT", "x", "1"),
        ("ZRANGEBYSCORE", "z", "1", "3", "WITHSCORES", "LIMIT", "1", "3"),
        ("ZRANGEBYSCORE", "z", "1", "3", "REV"), ("ZRANGEBYSCORE", "z", "1", "3", "BYSCORE"),
        ("ZREVRANGEBYSCORE", "z", "3", "1", "LIMIT", "0", "2", "WITHSCORES"),
        ("ZRANGEBYLEX", "lex", "(a", "[c"), ("ZREVRANGEBYLEX", "lex", "[c", "(a"),
        ("ZRANGEBYLEX", "lex", "-", "+", "LIMIT", "2", "2"),
        ("ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"),
        ("ZCOUNT", "z", "1", "(3"), ("ZCOUNT", "z", "-inf", "inf"), ("ZCOUNT", "z", "a", "1"),
        ("ZLEXCOUNT", "lex", "[b", "+"), ("ZLEXCOUNT", "lex", "x", "+"),
        ("ZRANK", "z", "m07"), ("ZREVRANK", "z", "m07"), ("ZRANK", "z", "nosuch"),
        ("ZRANK", "nokey", "a"), ("ZRANGE", "nokey", "0", "-1"),
        ("ZRANGESTORE", "dst", "z", "0", "4"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "z", "(1", "2", "BYSCORE", "LIMIT", "1", "2"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "lex", "[c", "-", "BYLEX", "REV"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "z", "0", "1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "nokey", "0", "-1"), ("EXISTS", "dst"),
        ("ZRANGESTORE", "dst", "z", "5", "1"),
    ]
    diff.many(cases)


@pytest.mark.parametrize("proto", [2, 3])
def test_withscores_protocols(diff, diff3, proto):
    d = diff if proto == 2 else diff3
    d("ZADD", "z", "1", "a", "2.5", "b", "-inf", "c")
    d("ZADD", "z2", "3", "a", "4", "x")
    for cmd in [
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES"),
        ("ZPOPMIN", "z2", "1"), ("ZADD", "z2", "3", "a"), ("ZPOPMAX", "z2"),
        ("ZUNION", "2", "z", "z2", "WITHSCORES"), ("ZINTER", "2", "z", "z2", "WITHSCORES"),
        ("ZDIFF", "2", "z", "z2", "WITHSCORES"), ("ZINCRBY", "z", "1", "a"),
        ("ZADD", "z", "INCR", "1", "a"), ("ZMPOP", "1", "z", "MAX", "COUNT", "10"),
    ]:
        d(*cmd)


def test_remove_and_remrange(diff):
    diff("ZADD", "z", *sum(([str(i), f"m{i}"] for i in range(20)), []))
    diff.many([
        ("ZREM", "z", "m1", "m2", "nosuch"), ("ZREM", "z", "nosuch"), ("ZREM", "nokey", "a"),
        ("ZREMRANGEBYRANK", "z", "0", "1"), ("ZREMRANGEBYRANK", "z", "-2", "-1"),
        ("ZREMRANGEBYRANK", "z", "5", "1"), ("ZREMRANGEBYRANK", "z", "a", "1"),
        ("ZREMRANGEBYSCORE", "z", "(5", "7"), ("ZREMRANGEBYSCORE", "z", "x", "7"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d"),
        ("ZREMRANGEBYLEX", "lex", "(a", "[c"), ("ZREMRANGEBYLEX", "lex", "a", "[c"),
        ("ZRANGE", "lex", "0", "-1"),
        ("ZREMRANGEBYLEX", "lex", "-", "+"), ("EXISTS", "lex"),
        ("ZREMRANGEBYSCORE", "z", "-inf", "+inf"), ("EXISTS", "z"),
        ("ZREMRANGEBYRANK", "nokey", "0", "-1"),
        ("ZADD", "one", "1", "a"), ("ZREM", "one", "a", "b"), ("EXISTS", "one"),
        ("SET", "s", "x"), ("ZREM", "s", "a"), ("ZREMRANGEBYRANK", "s", "0", "1"),
        ("ZREMRANGEBYRANK", "s", "x", "1"), ("ZCOUNT", "s", "0", "1"),
    ])


def test_pops_and_mpop_errors(diff):
    diff("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    diff.many([
        ("ZPOPMIN", "z", "-1"), ("ZPOPMIN", "z", "x"), ("ZPOPMIN", "z", "1", "2"),
        ("ZPOPMAX", "z", "2"), ("ZPOPMIN", "z", "10"), ("EXISTS", "z"),
        ("ZADD", "z", "1", "a", "2", "b"),
        ("ZMPOP", "0", "z", "MIN"), ("ZMPOP", "x", "z", "MIN"), ("ZMPOP", "1", "z"),
        ("ZMPOP", "2", "z", "MIN"), ("ZMPOP", "1", "z", "MIDDLE"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "0"), ("ZMPOP", "1", "z", "MIN", "COUNT"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"),
        ("ZMPOP", "1", "z", "MIN", "FOO"), ("ZMPOP", "1", "z", "min", "count", "1"),
        ("SET", "s", "x"), ("ZMPOP", "2", "s", "z", "MIN"), ("ZPOPMIN", "s"),
        ("ZPOPMIN", "s", "0"), ("ZMPOP", "2", "nokey", "z", "MAX", "COUNT", "5"),
    ])


@pytest.mark.parametrize("proto", [2, 3])
def test_set_operations(diff, diff3, proto):
    d = diff if proto == 2 else diff3
    d("ZADD", "a", "1", "x", "2", "y", "3", "z", "inf", "w")
    d("ZADD", "b", "10", "y", "20", "z", "30", "q", "-inf", "w")
    d("ZADD", "c", "0.1", "x", "0.2", "z")
    cases = [
        ("ZUNION", "3", "a", "b", "c", "WITHSCORES"),
        ("ZUNION", "2", "a", "b", "WEIGHTS", "2", "0.5", "WITHSCORES"),
        ("ZUNION", "2", "a", "b", "WEIGHTS", "0", "1", "WITHSCORES"),
        ("ZUNION", "2", "a", "b", "AGGREGATE", "MIN", "WITHSCORES"),
        ("ZUNION", "2", "a", "b", "AGGREGATE", "max", "WITHSCORES"),
        ("ZUNION", "2", "a", "b", "AGGREGATE", "avg"),
        ("ZUNION", "2", "a", "b", "WEIGHTS", "1", "x"),
        ("ZUNION", "2", "a", "b", "WEIGHTS", "1"),
        ("ZUNION", "3", "a", "b"), ("ZUNION", "0", "a"), ("ZUNION", "-1", "a"),
        ("ZUNION", "x", "a"),
        ("ZINTER", "2", "a", "b", "WITHSCORES"), ("ZINTER", "3", "a", "b", "c"),
        ("ZINTER", "2", "a", "nokey"), ("ZINTER", "2", "a", "a", "WITHSCORES"),
        ("ZINTER", "2", "a", "b", "AGGREGATE", "MAX", "WEIGHTS", "1", "-1", "WITHSCORES"),
        ("ZDIFF", "2", "a", "b", "WITHSCORES"), ("ZDIFF", "3", "a", "b", "c"),
        ("ZDIFF", "1", "nokey"), ("ZDIFF", "2", "a", "b", "WEIGHTS", "1", "2"),
        ("ZINTERCARD", "2", "a", "b"), ("ZINTERCARD", "2", "a", "b", "LIMIT", "1"),
        ("ZINTERCARD", "2", "a", "b", "LIMIT", "0"), ("ZINTERCARD", "2", "a", "b", "LIMIT", "-1"),
        ("ZINTERCARD", "2", "a", "b", "LIMIT", "x"), ("ZINTERCARD", "0", "a"),
        ("ZINTERCARD", "2", "a", "b", "WITHSCORES"), ("ZINTERCARD", "3", "a"),
        ("ZUNIONSTORE", "dst", "2", "a", "b"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", "dst", "2", "a", "b", "WEIGHTS", "2", "3"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZDIFFSTORE", "dst", "2", "a", "b"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", "dst", "2", "a", "nokey"), ("EXISTS", "dst"),
        ("ZUNIONSTORE", "dst", "2", "a", "b", "WITHSCORES"),
        ("SET", "str", "v"), ("ZUNION", "2", "a", "str"), ("ZUNION", "2", "a", "str", "FOO"),
        ("ZINTERSTORE", "dst", "1", "str"), ("ZINTERCARD", "1", "str"),
    ]
    for cmd in cases:
        d(*cmd)


def test_setops_accept_plain_sets(diff):
    diff.many([
        ("SADD", "s", "x", "y", "k"), ("ZADD", "z", "5", "x", "6", "y", "7", "m"),
        ("ZUNION", "2", "s", "z", "WITHSCORES"), ("ZINTER", "2", "z", "s", "WITHSCORES"),
        ("ZINTERSTORE", "d", "2", "s", "z", "WEIGHTS", "3", "1"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"), ("ZDIFF", "2", "s", "z", "WITHSCORES"),
        ("ZINTERCARD", "2", "s", "z"),
    ])


def test_random_sequences(diff):
    rng = random.Random(20240607)
    members = [f"m{i}".encode() for i in range(25)]
    scores = ["1", "2", "2.5", "-3", "0", "7", "1e2", "(1", "inf", "-inf", "0.1"]
    for _ in range(400):
        key = rng.choice(["z1", "z2"])
        op = rng.randrange(12)
        m = rng.choice(members)
        s = rng.choice(scores[:7] + ["inf", "-inf", "0.1"])
        if op == 0:
            flags = rng.sample(["NX", "XX", "GT", "LT", "CH"], rng.randrange(3))
            pairs = []
            for _ in range(rng.randrange(1, 4)):
                pairs += [rng.choice(scores[:7]), rng.choice(members)]
            diff("ZADD", key, *flags, *pairs)
        elif op == 1:
            diff("ZINCRBY", key, s, m)
        elif op == 2:
            diff("ZREM", key, m, rng.choice(members))
        elif op == 3:
            a, b = rng.randrange(-10, 10), rng.randrange(-10, 10)
            diff("ZRANGE", key, a, b, *rng.sample(["WITHSCORES", "REV"], rng.randrange(3)))
        elif op == 4:
            lo, hi = rng.choice(scores), rng.choice(scores)
            extra = ["LIMIT", rng.randrange(-1, 5), rng.randrange(-1, 5)] \
                if rng.random() < 0.5 else []
            diff("ZRANGE", key, lo, hi, "BYSCORE", *extra,
                 *rng.sample(["WITHSCORES", "REV"], rng.randrange(3)))
        elif op == 5:
            diff("ZRANK", key, m)
            diff("ZREVRANK", key, m)
            diff("ZSCORE", key, m)
        elif op == 6:
            diff("ZCOUNT", key, rng.choice(scores), rng.choice(scores))
        elif op == 7:
            diff("ZREMRANGEBYSCORE", key, rng.choice(scores), rng.choice(scores))
        elif op == 8:
            diff("ZPOPMIN" if rng.random() < 0.5 else "ZPOPMAX", key, rng.randrange(0, 3))
        elif op == 9:
            diff("ZUNIONSTORE", "z3", "2", "z1", "z2", "AGGREGATE",
                 rng.choice(["SUM", "MIN", "MAX"]))
            diff("ZRANGE", "z3", "0", "-1", "WITHSCORES")
        elif op == 10:
            diff("ZINTER", "2", "z1", "z2", "WEIGHTS", "0.5", "3", "WITHSCORES")
        else:
            diff("ZREMRANGEBYRANK", key, rng.randrange(-5, 5), rng.randrange(-5, 5))
    diff("ZRANGE", "z1", "0", "-1", "WITHSCORES")
    diff("ZRANGE", "z2", "0", "-1", "WITHSCORES")
    for key in ("z1", "z2", "z3"):  # small: listpacks, whose bytes DUMP shows
        diff("OBJECT", "ENCODING", key)
        diff("DUMP", key)


def test_random_lex(diff):
    rng = random.Random(7)
    words = ["", "a", "aa", "ab", "b", "ba", "bb", "c", "\xff", "a\x00"]
    diff("ZADD", "l", *sum((["0", w] for w in words), []))
    items = ["-", "+"] + [p + w for p in "([" for w in words] + ["x", "+x"]
    for _ in range(150):
        lo, hi = rng.choice(items), rng.choice(items)
        diff("ZRANGEBYLEX", "l", lo, hi)
        diff("ZREVRANGEBYLEX", "l", hi, lo, "LIMIT", rng.randrange(0, 3), rng.randrange(-1, 4))
        diff("ZLEXCOUNT", "l", lo, hi)


def test_zrandmember_semantics(diff):
    diff("ZADD", "z", *sum(([str(i), f"m{i}"] for i in range(10)), []))
    diff.many([
        ("ZRANDMEMBER", "nokey"), ("ZRANDMEMBER", "nokey", "5"), ("ZRANDMEMBER", "z", "0"),
        ("ZRANDMEMBER", "z", "10", "WITHSCORES"), ("ZRANDMEMBER", "z", "20"),
        ("ZRANDMEMBER", "z", "x"), ("ZRANDMEMBER", "z", "1", "foo"),
        ("ZRANDMEMBER", "z", "1", "withscores", "x"),
        ("ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "-9223372036854775808"),
    ])
    members = {f"m{i}".encode() for i in range(10)}
    ours = diff.ours
    one = ours.call("ZRANDMEMBER", "z")
    assert one.split(b"\r\n")[1] in members
    reply = ours.call("ZRANDMEMBER", "z", "5").split(b"\r\n")
    picked = reply[2::2][:5]
    assert reply[0] == b"*5" and len(set(picked)) == 5 and set(picked) <= members
    reply = ours.call("ZRANDMEMBER", "z", "-30").split(b"\r\n")
    assert reply[0] == b"*30" and set(reply[2::2][:30]) <= members


def test_zscan(diff):
    diff("ZADD", "small", "1", "a", "2.5", "b", "inf", "c")
    diff("ZSCAN", "small", "0")
    diff("ZSCAN", "small", "0", "MATCH", "[ab]", "COUNT", "100")
    diff("ZSCAN", "small", "x")
    diff("ZSCAN", "small", "0", "COUNT", "0")
    diff("ZSCAN", "small", "0", "FOO", "1")
    diff("ZSCAN", "nokey", "0")
    members = {f"m{i}".encode(): i for i in range(300)}
    diff("ZADD", "big", *sum(([str(i * 1.5), m] for m, i in members.items()), []))
    seen: dict[bytes, bytes] = {}
    cursor = b"0"
    for _ in range(1000):
        reply = diff.ours.call("ZSCAN", "big", cursor, "COUNT", "20").split(b"\r\n")
        cursor = reply[2]
        elems = reply[5::2][: int(reply[3][1:])]
        for m, s in zip(elems[::2], elems[1::2], strict=True):
            seen[m] = s
        if cursor == b"0":
            break
    assert set(seen) == set(members)
    for m in members:
        assert seen[m] == diff.real.call("ZSCORE", "big", m).split(b"\r\n")[1]


def test_encodings_follow_config(diff):
    diff.many([
        ("ZADD", "z", *sum(([str(i), f"m{i}"] for i in range(128)), [])),
        ("OBJECT", "ENCODING", "z"), ("ZADD", "z", "1", "one-more"), ("OBJECT", "ENCODING", "z"),
        ("ZREMRANGEBYRANK", "z", "0", "-3"), ("OBJECT", "ENCODING", "z"),
        ("ZADD", "long", "1", "x" * 65), ("OBJECT", "ENCODING", "long"),
        ("ZADD", "short", "1", "x" * 64), ("OBJECT", "ENCODING", "short"),
        ("ZUNIONSTORE", "u", "1", "z"), ("OBJECT", "ENCODING", "u"),
        ("ZRANGESTORE", "r", "long", "0", "-1"), ("OBJECT", "ENCODING", "r"),
    ])


@pytest.mark.parametrize("proto", [2, 3])
def test_blocking_pops(diff, diff3, real_redis, pykv_proc, proto):
    from support.resp import RawClient

    d = diff if proto == 2 else diff3
    d.many([
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("BZPOPMIN", "nokey", "z", "0"), ("BZPOPMAX", "z", "0"),
        ("BZMPOP", "0", "2", "nokey", "z", "MIN", "COUNT", "5"), ("EXISTS", "z"),
        ("BZPOPMIN", "nokey", "0.01"), ("BZMPOP", "0.01", "1", "nokey", "MAX"),
        ("BZPOPMIN", "nokey", "-1"), ("BZPOPMIN", "nokey", "x"),
        ("BZMPOP", "x", "0", "nokey", "MAX"), ("BZMPOP", "0", "1", "nokey", "MIDDLE"),
        ("SET", "s", "v"), ("BZPOPMIN", "s", "0"), ("BZMPOP", "0", "1", "s", "MIN"),
    ])
    waiters = []
    for port in (real_redis.port, pykv_proc.port):
        w = RawClient(port=port)
        if proto == 3:
            w.call("HELLO", "3")
        w.send_raw(encode_command("BZPOPMAX", "k1", "k2", "0"))
        w2 = RawClient(port=port)
        if proto == 3:
            w2.call("HELLO", "3")
        w2.send_raw(encode_command("BZMPOP", "0", "1", "k2", "MIN", "COUNT", "2"))
        waiters.append((w, w2))
    import time
    time.sleep(0.2)
    d("ZADD", "k2", "1.5", "x", "2.5", "y", "3.5", "z")
    replies = [(w.read_reply(), w2.read_reply()) for w, w2 in waiters]
    assert replies[0] == replies[1]
    for w, w2 in waiters:
        w.close()
        w2.close()
    d("ZRANGE", "k2", "0", "-1", "WITHSCORES")


def test_blocking_inside_multi(diff):
    diff("MULTI")
    diff("BZPOPMIN", "nokey", "0")
    diff("BZMPOP", "0", "1", "nokey", "MIN")
    diff("EXEC")


def test_single_pair_zadd_scores(diff):
    """ZADD key score member reads plain digits itself: every other shape takes the full
    rules, and the stored score must print the same."""
    for score in ["0", "7", "0015", "000", "123456789012345", "1234567890123456",
                  "99999999999999999999", "1e3", "", "-0", "+5", " 5", "5 ", "5.", ".5",
                  "1.000000000000001", "nan", "NX", "xx", "12a"]:
        diff("ZADD", "z", score, "m")
        diff("ZSCORE", "z", "m")
        diff("ZADD", "z", score, "m")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("SET", "s", "x")
    diff("ZADD", "s", "1", "m")
    diff("ZADD", "s", "x", "m")


@pytest.mark.parametrize("proto", [2, 3])
def test_pop_reply_paths(diff, diff3, proto):
    """ZPOPMIN/ZPOPMAX on a missing key write a ready-made empty array when the reply goes
    out as it is: inside MULTI, from a script and under CLIENT REPLY the replies match."""
    d = diff if proto == 2 else diff3
    d("ZADD", "z", "1", "a", "2", "b", "3", "c")
    d.reply_paths(("ZPOPMIN", "nokey"), ("ZPOPMAX", "z"))
    d.reply_paths(("ZPOPMIN", "z", "0"), ("ZPOPMIN", "nokey", "2"))
    d.reply_paths(("ZPOPMAX", "z", "5"), ("ZPOPMIN", "nokey", "1"))
    d("EXISTS", "z")


def test_conversion_inside_one_zadd(diff):
    """A ZADD that crosses zset-max-listpack-entries in the middle and repeats members after
    the crossing; then the packed layout of small sets in DUMP payloads."""
    diff("CONFIG", "SET", "zset-max-listpack-entries", "3")
    diff("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "a", "6", "d", "0", "e")
    diff("ZCARD", "z")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("OBJECT", "ENCODING", "z")
    diff("CONFIG", "SET", "zset-max-listpack-entries", "128")
    diff("ZADD", "p", "1.5", "x", "-0", "zero", "3", "10", "1e20", "big", "-inf", "low")
    diff("ZINCRBY", "p", "2", "x")
    diff("ZREM", "p", "10")
    diff("DUMP", "p")
    diff("ZRANGE", "p", "(0", "+inf", "BYSCORE", "WITHSCORES")
    diff("ZUNIONSTORE", "u", "2", "p", "z", "WEIGHTS", "1", "0.5")
    diff("DUMP", "u")


def test_big_zsets_across_blocks(diff):
    """A skiplist zset of a few thousand members (several ScoreList blocks) under random
    adds, score updates, removals and range reads, reply for reply."""
    rng = random.Random(15)
    names = [f"m{i:05d}".encode() for i in range(5000)]
    for start in range(0, 5000, 500):
        diff("ZADD", "big", *sum(([str(rng.randrange(-300, 300) / 4), m]
                                  for m in names[start:start + 500]), []))
    for _ in range(300):
        op = rng.randrange(9)
        a, b = sorted(rng.randrange(-6000, 6000) for _ in range(2))
        lo, hi = sorted(rng.randrange(-80, 80) for _ in range(2))
        if op == 0:
            diff("ZADD", "big", str(rng.randrange(-300, 300) / 4), rng.choice(names))
        elif op == 1:
            diff("ZINCRBY", "big", str(rng.randrange(-20, 20)), rng.choice(names))
        elif op == 2:
            diff("ZREM", "big", *rng.sample(names, 5))
        elif op == 3:
            diff("ZRANGE", "big", a, b, "WITHSCORES")
        elif op == 4:
            diff("ZREVRANGEBYSCORE", "big", hi, f"({lo}", "WITHSCORES", "LIMIT", "3", "40")
        elif op == 5:
            diff("ZRANK", "big", rng.choice(names))
            diff("ZREVRANK", "big", rng.choice(names))
        elif op == 6:
            diff("ZCOUNT", "big", lo, f"({hi}")
        elif op == 7:
            diff("ZPOPMIN" if rng.random() < 0.5 else "ZPOPMAX", "big", rng.randrange(0, 30))
        else:
            diff("ZREMRANGEBYRANK", "big", a // 10, a // 10 + rng.randrange(0, 1500))
        diff("ZCARD", "big")
    diff("ZRANGE", "big", "0", "-1", "WITHSCORES")
    diff("ZRANGEBYSCORE", "big", "-inf", "+inf")
    diff("OBJECT", "ENCODING", "big")
