"""Sets against real redis-server 7.0: replies and errors byte for byte, RESP2 and RESP3.

Intset-encoded sets (and results Redis builds as intsets) reply in ascending order on both
servers and compare as bytes; hashtable order is Redis's own, so those replies are decoded
and compared sorted. SPOP/SRANDMEMBER are checked for their semantics.
"""
from __future__ import annotations

import random

import pytest
from resp_values import parse, unordered

MEMBERS = ["1", "2", "3", "10", "-5", "a", "b", "c", "01", "", "9223372036854775808"]
INTS = ["1", "2", "3", "10", "-5", "7", "100"]


def _encodings(diff, *keys) -> set[bytes]:
    out = set()
    for k in keys:
        real, ours = diff.both("OBJECT", "ENCODING", k)
        assert real == ours, (k, real, ours)
        out.add(real)
    return out


def diff_set_reply(diff, *cmd, keys=()) -> None:
    """Bytes when every set involved is an intset, sorted members otherwise."""
    real, ours = diff.both(*cmd)
    involved = [k for k in keys if diff.both("EXISTS", k)[0] == b":1\r\n"]
    if involved and _encodings(diff, *involved) <= {b"$6\r\nintset\r\n"}:
        assert real == ours, (cmd, real, ours)
    else:
        assert unordered(parse(real)) == unordered(parse(ours)), (cmd, real, ours)


def test_basics(diff):
    diff.many([
        ("SADD", "s", "3", "1", "2", "1"), ("SMEMBERS", "s"), ("SCARD", "s"),
        ("SISMEMBER", "s", "1"), ("SISMEMBER", "s", "9"), ("SISMEMBER", "nokey", "1"),
        ("SMISMEMBER", "s", "1", "9", "2"), ("SMISMEMBER", "nokey", "1", "2"),
        ("SADD", "s", "-100", "50", "9223372036854775807", "-9223372036854775808"),
        ("SMEMBERS", "s"), ("OBJECT", "ENCODING", "s"), ("SREM", "s", "1", "zz", "2"),
        ("SMEMBERS", "s"), ("SREM", "nokey", "a"), ("SMEMBERS", "nokey"), ("SCARD", "nokey"),
        ("SREM", "s", "3", "-100", "50", "9223372036854775807", "-9223372036854775808"),
        ("EXISTS", "s"), ("SADD", "s", "1"), ("SSCAN", "s", "0"), ("SSCAN", "nokey", "0"),
    ])


def test_argument_errors_and_wrongtype(diff):
    diff("SET", "str", "x")
    diff("SADD", "s", "1", "2")
    for cmd in [("SADD", "s"), ("SPOP", "s", "1", "2"), ("SPOP", "s", "-1"), ("SPOP", "s", "x"),
                ("SPOP", "nokey", "-1"), ("SRANDMEMBER", "s", "1", "2"),
                ("SRANDMEMBER", "s", "x"), ("SRANDMEMBER", "s", "-9223372036854775808"),
                ("SRANDMEMBER", "nokey", "x"), ("SINTERCARD", "0", "s"),
                ("SINTERCARD", "x", "s"), ("SINTERCARD", "2", "s"),
                ("SINTERCARD", "1", "s", "LIMIT", "-1"), ("SINTERCARD", "1", "s", "LIMIT", "x"),
                ("SINTERCARD", "1", "s", "LIMIT"), ("SINTERCARD", "1", "s", "FOO", "1"),
                ("SINTERCARD", "1", "s", "LIMIT", "1", "LIMIT", "0"),
                ("SINTERCARD", "-1", "s"), ("SSCAN", "s", "x"), ("SSCAN", "s", "0", "COUNT", "0"),
                ("SSCAN", "s", "0", "MATCH"), ("SSCAN", "s", "0", "TYPE", "set"),
                ("SMOVE", "s", "d"), ("SINTERSTORE", "d")]:
        diff(*cmd)
    for cmd in [("SADD", "str", "a"), ("SREM", "str", "a"), ("SCARD", "str"),
                ("SISMEMBER", "str", "a"), ("SMISMEMBER", "str", "a"), ("SMEMBERS", "str"),
                ("SPOP", "str"), ("SPOP", "str", "2"), ("SRANDMEMBER", "str"),
                ("SRANDMEMBER", "str", "2"), ("SMOVE", "str", "s", "1"),
                ("SMOVE", "s", "str", "1"), ("SMOVE", "nokey", "str", "1"),
                ("SINTER", "s", "str"), ("SINTER", "nokey", "str"), ("SINTER", "str", "nokey"),
                ("SINTERCARD", "2", "nokey", "str"), ("SUNION", "s", "str"),
                ("SDIFF", "nokey", "str"), ("SDIFF", "s", "str"),
                ("SINTERSTORE", "d", "s", "str"), ("SUNIONSTORE", "d", "str"),
                ("SDIFFSTORE", "d", "s", "str"), ("SSCAN", "str", "0"), ("SPOP", "str", "-1"),
                ("SRANDMEMBER", "str", "x")]:
        diff(*cmd)
    diff("SMEMBERS", "s")


def test_smove(diff):
    diff.many([
        ("SADD", "a", "1", "2", "x"), ("SADD", "b", "3"),
        ("SMOVE", "a", "b", "1"), ("SMOVE", "a", "b", "1"), ("SMOVE", "a", "a", "2"),
        ("SMOVE", "a", "a", "9"), ("SMOVE", "nokey", "b", "1"), ("SMOVE", "a", "new", "2"),
        ("OBJECT", "ENCODING", "new"), ("SMOVE", "a", "new2", "x"),
        ("OBJECT", "ENCODING", "new2"), ("EXISTS", "a"), ("SMEMBERS", "b"),
        ("SMEMBERS", "new"), ("SADD", "c", "3"), ("SMOVE", "c", "b", "3"), ("EXISTS", "c"),
        ("SMEMBERS", "b"),
    ])


def test_algebra(diff, diff3):
    for d in (diff, diff3):
        d.many([
            ("SADD", "i1", "1", "2", "3", "4", "5"), ("SADD", "i2", "4", "5", "6"),
            ("SADD", "i3", "5", "7"), ("SADD", "h1", "a", "b", "5", "4"),
            ("SADD", "h2", "b", "c", "4"),
        ])
        for cmd, keys in [
            (("SINTER", "i1", "i2"), ("i1", "i2")), (("SINTER", "i1", "i2", "i3"), ("i1",)),
            (("SINTER", "i1", "nokey"), ()), (("SUNION", "i1", "i2", "nokey"), ("i1", "i2")),
            (("SDIFF", "i1", "i2", "i3"), ("i1", "i2", "i3")), (("SDIFF", "i1", "i1"), ()),
            (("SDIFF", "nokey", "i1"), ()), (("SINTER", "h1", "h2"), ("h1", "h2")),
            (("SINTER", "h1", "i2"), ("h1", "i2")), (("SUNION", "h1", "h2"), ("h1",)),
            (("SUNION", "h1", "i1"), ("h1",)), (("SDIFF", "h1", "h2"), ("h1",)),
            (("SDIFF", "i1", "h1"), ("h1",)), (("SMEMBERS", "h1"), ("h1",)),
        ]:
            diff_set_reply(d, *cmd, keys=keys)
        d.many([
            ("SINTERCARD", "2", "i1", "i2"), ("SINTERCARD", "2", "i1", "i2", "LIMIT", "1"),
            ("SINTERCARD", "2", "h1", "h2", "LIMIT", "0"), ("SINTERCARD", "2", "i1", "nokey"),
            ("SINTERSTORE", "d", "i1", "i2"), ("SMEMBERS", "d"), ("OBJECT", "ENCODING", "d"),
            ("SINTERSTORE", "d", "h1", "h2"), ("OBJECT", "ENCODING", "d"),
            ("SUNIONSTORE", "d", "i1", "i2"), ("SMEMBERS", "d"), ("OBJECT", "ENCODING", "d"),
            ("SDIFFSTORE", "d", "h1", "h2"), ("OBJECT", "ENCODING", "d"), ("SCARD", "d"),
            ("SINTERSTORE", "d", "i1", "nokey"), ("EXISTS", "d"), ("SET", "d", "str"),
            ("SUNIONSTORE", "d", "i3"), ("TYPE", "d"), ("SDIFFSTORE", "d", "i3", "i3"),
            ("EXISTS", "d"), ("SDIFFSTORE", "d", "nokey"), ("FLUSHALL",),
        ])


def test_encoding_transitions(diff):
    diff("CONFIG", "SET", "set-max-intset-entries", "4")
    try:
        steps = [
            ("SADD", "s", "1", "2", "3", "4"), ("SADD", "s", "5"), ("SREM", "s", "5", "4"),
            ("SADD", "t", "1", "a"), ("SREM", "t", "a"), ("SADD", "u", "a"), ("SADD", "v", "01"),
            ("SADD", "w", "-0"), ("SADD", "x", "9223372036854775807"),
            ("SADD", "y", "9223372036854775808"), ("SADD", "z", " 1"),
            ("SADD", "big", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"),
        ]
        for step in steps:
            diff(*step)
            diff("OBJECT", "ENCODING", step[1])
        diff("SMEMBERS", "t")
        # the few survivors of a big SPOP are moved to a fresh set: an intset again
        real, ours = diff.both("SPOP", "big", "9")
        assert len(parse(real)) == len(parse(ours)) == 9
        diff("SCARD", "big")
        diff("OBJECT", "ENCODING", "big")
        diff("SADD", "mixed", "a", "1", "2", "3", "4", "5", "6", "7", "8", "9")
        diff("SREM", "mixed", "a")
        real, ours = diff.both("SPOP", "mixed", "1")
        assert len(parse(real)) == len(parse(ours)) == 1
        diff("OBJECT", "ENCODING", "mixed")
        diff("SUNIONSTORE", "copy", "s")
        diff("OBJECT", "ENCODING", "copy")
        diff("SADD", "h", "1", "2", "3", "4", "5", "x")
        diff("SREM", "h", "x")
        for cmd in [("SDIFFSTORE", "d", "h", "nokey"), ("SDIFFSTORE", "d2", "h", "s"),
                    ("SINTERSTORE", "d3", "h", "h"), ("SUNIONSTORE", "d4", "h", "s")]:
            diff(*cmd)
            diff("OBJECT", "ENCODING", cmd[1])
        diff_set_reply(diff, "SDIFF", "h", "s", keys=("h",))
        # Redis's second SDIFF algorithm copies the first set (a hashtable here) whole
        diff.many([("SADD", "six", "1", "2", "3", "4", "5", "6"), ("SADD", "o1", "1"),
                   ("SADD", "o2", "2"), ("SADD", "o3", "3"),
                   ("SDIFFSTORE", "d5", "six", "o1", "o2", "o3"), ("OBJECT", "ENCODING", "d5"),
                   ("SDIFFSTORE", "d6", "six", "o1", "o2"), ("OBJECT", "ENCODING", "d6")])
        diff_set_reply(diff, "SDIFF", "h", "nokey", keys=("h",))
        diff("CONFIG", "SET", "set-max-intset-entries", "0")
        diff("SADD", "zero", "1")
        diff("OBJECT", "ENCODING", "zero")
    finally:
        diff("CONFIG", "SET", "set-max-intset-entries", "512")


def _check_random(diff, key: str) -> None:
    real, ours = diff.both("SMEMBERS", key)
    members = set(parse(ours))
    assert members == set(parse(real))
    n = len(members)
    for count in (1, 2, n - 1, n, n + 5, -1, -7, 0):
        real, ours = diff.both("SRANDMEMBER", key, str(count))
        r, o = parse(real), parse(ours)
        assert len(r) == len(o) and set(o) <= members
        if count > 0:
            assert len(set(o)) == len(o) == min(count, n)
        if count >= n > 0:
            diff_set_reply(diff, "SRANDMEMBER", key, str(count), keys=(key,))
    real, ours = diff.both("SRANDMEMBER", key)
    assert parse(ours) in members and parse(real) in members


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences(diff, seed):
    rng = random.Random(seed)
    diff("SET", "str", "v")
    keys = ["s1", "s2", "s3", "str"]
    set_reply = {"SMEMBERS", "SINTER", "SUNION", "SDIFF"}
    for _ in range(250):
        k, k2, k3 = rng.choice(keys), rng.choice(keys), rng.choice(keys)
        pool = INTS if rng.random() < 0.6 else MEMBERS
        m = rng.choice(pool)
        cmd = rng.choice([
            ("SADD", k, *rng.choices(pool, k=rng.randint(1, 4))), ("SREM", k, m, rng.choice(pool)),
            ("SCARD", k), ("SISMEMBER", k, m), ("SMISMEMBER", k, m, "1"), ("SMEMBERS", k),
            ("SMOVE", k, k2, m), ("SINTER", k, k2), ("SUNION", k, k2, k3), ("SDIFF", k, k2, k3),
            ("SINTERCARD", "2", k, k2, "LIMIT", str(rng.randint(0, 3))),
            ("SINTERSTORE", k3, k, k2), ("SUNIONSTORE", k3, k, k2), ("SDIFFSTORE", k3, k, k2),
            ("OBJECT", "ENCODING", k), ("SSCAN", k, "0"), ("EXISTS", k),
        ])
        if cmd[0] in set_reply:
            diff_set_reply(diff, *cmd, keys=[a for a in cmd[1:] if a != "str"])
        elif cmd[0] == "SSCAN":
            real, ours = diff.both(*cmd)
            assert unordered(parse(real)[1]) == unordered(parse(ours)[1])
        else:
            diff(*cmd)
    for k in ("s1", "s2", "s3"):
        if diff.both("EXISTS", k)[0] == b":1\r\n":
            _check_random(diff, k)
        if diff.both("OBJECT", "ENCODING", k)[0] == b"$6\r\nintset\r\n":
            diff("DUMP", k)  # the packed buffer after the whole sequence: Redis's bytes


def test_spop_semantics(diff, diff3):
    for d, resp in ((diff, 2), (diff3, 3)):
        d("SADD", "s", *[str(i) for i in range(40)], "x")
        d("SADD", "small", "3", "1", "2")
        d("SPOP", "small", "5")  # whole set: intset order, then gone
        d("EXISTS", "small")
        d("SPOP", "nokey")
        d("SPOP", "nokey", "3")
        d("SPOP", "s", "0")
        seen: set = set()
        for count in (1, 3, 20):
            real, ours = d.both("SPOP", "s", str(count))
            assert real[:1] == ours[:1] == (b"~" if resp == 3 else b"*")
            o = parse(ours)
            assert len(o) == len(parse(real)) == count
            assert not (set(o) & seen)
            seen |= set(o)
        real, ours = d.both("SPOP", "s")
        seen.add(parse(ours))
        real, ours = d.both("SMEMBERS", "s")
        rest = set(parse(ours))
        assert len(rest) == len(parse(real)) == 41 - 25
        assert rest.isdisjoint(seen) and len(rest | seen) == 41
        d("FLUSHALL")


def test_large_sets_scan(diff):
    diff("SADD", "big", *[f"m{i}" for i in range(700)])
    diff("SADD", "ints", *[str(i) for i in range(700)])
    for key in ("big", "ints"):
        diff("OBJECT", "ENCODING", key)
        results = []
        for client in (diff.real, diff.ours):
            cursor, seen = b"0", []
            while True:
                cursor, items = parse(client.call("SSCAN", key, cursor, "COUNT", "50"))
                seen += items
                if cursor == b"0":
                    break
            results.append(seen)
        assert sorted(results[0]) == sorted(results[1])
        assert len(set(results[1])) == 700
        _check_random(diff, key)


def test_absurd_negative_counts_do_not_hurt_the_server(raw):
    raw.call("SADD", "s", "a", "b")
    assert raw.call("SRANDMEMBER", "s", "-9223372036854775807").startswith(b"-ERR")
    assert raw.call("SRANDMEMBER", "s", "-3").startswith(b"*3\r\n")
    assert raw.call("PING") == b"+PONG\r\n"


@pytest.mark.parametrize("values", [
    [str(i) for i in range(-6, 7)],  # 16-bit: 12 members fit inside the IntSet object
    [str(i * 100000) for i in range(-3, 4)],  # 32-bit: 6 fit
    [str(v) for v in (-(1 << 63), -(1 << 40), 0, 1 << 40, (1 << 63) - 1)],  # 64-bit: 3 fit
])
def test_intsets_across_the_inline_boundary(diff, values):
    """Growing one member at a time past the inline buffer and removing back to empty:
    replies, the intset's DUMP bytes (Redis's width and layout) and digests as Redis's."""
    for i, v in enumerate(values):
        diff("SADD", "s", v)
        diff.many([("SMEMBERS", "s"), ("SCARD", "s"), ("OBJECT", "ENCODING", "s"),
                   ("DUMP", "s"), ("DEBUG", "DIGEST-VALUE", "s"),
                   ("SISMEMBER", "s", values[i // 2]), ("SINTERCARD", "1", "s")])
    diff.many([("SADD", "s", "1", "32768", "-2147483649"), ("DUMP", "s"), ("SMEMBERS", "s"),
               ("COPY", "s", "c"), ("DUMP", "c"), ("SUNIONSTORE", "u", "s"), ("DUMP", "u"),
               ("SORT", "s"), ("SSCAN", "s", "0", "COUNT", "100")])
    for v in [*values, "1", "32768", "-2147483649"]:
        diff.many([("SREM", "s", v), ("DUMP", "s"), ("SMEMBERS", "s")])
    diff("EXISTS", "s")
    diff("RESTORE", "r", "0", parse(diff.both("DUMP", "c")[1]))
    diff.many([("SMEMBERS", "r"), ("DUMP", "r"), ("OBJECT", "ENCODING", "r")])


@pytest.mark.parametrize("proto", [2, 3])
def test_sadd_reply_paths(diff, diff3, proto):
    """SADD of one member already there changes nothing (no event, no dirty); its count is
    written in place only when the reply goes out as it is."""
    d = diff if proto == 2 else diff3
    for key, members in (("ints", ["1", "2", "3"]), ("strs", ["a", "b"]),
                         ("mixed", ["1", "x"])):
        d("SADD", key, *members)
        d("SADD", key, members[0])
        d("SADD", key, "new")
        d("SADD", key, "new", members[0], "newer")
        d("OBJECT", "ENCODING", key)
    d("SADD", "ints", "18446744073709551616")
    d("OBJECT", "ENCODING", "ints")
    d.reply_paths(("SADD", "strs", "a"), ("SADD", "strs", "c"))
    d.reply_paths(("SADD", "strs", "z"), ("SADD", "strs", "y"))
    d("SCARD", "strs")
