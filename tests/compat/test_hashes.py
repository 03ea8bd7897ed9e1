"""Hashes against real redis-server 7.0: replies and errors byte for byte, RESP2 and RESP3.

Listpack-encoded hashes reply in insertion order on both servers, so they compare as bytes;
once Redis converts a hash to a hashtable its order is its own, and those replies are
compared decoded and sorted. Random replies (HRANDFIELD) are checked for their semantics.
"""
from __future__ import annotations

import random

import pytest
from resp_values import Error, as_dict, parse, unordered

FIELDS = ["a", "b", "c", "d", "1", "-2", "", "f" * 65]
VALUES = ["1", "0", "-7", "10.5", "abc", "", "9223372036854775807", "v" * 65, "3e2"]


def test_basics(diff):
    diff.many([
        ("HSET", "h", "a", "1", "b", "2", "c", "3"), ("HSET", "h", "a", "9", "d", "4"),
        ("HGETALL", "h"), ("HKEYS", "h"), ("HVALS", "h"), ("HLEN", "h"),
        ("HGET", "h", "a"), ("HGET", "h", "zz"), ("HGET", "nokey", "a"),
        ("HMGET", "h", "a", "zz", "b"), ("HMGET", "nokey", "a", "b"),
        ("HSTRLEN", "h", "a"), ("HSTRLEN", "h", "zz"), ("HSTRLEN", "nokey", "a"),
        ("HEXISTS", "h", "a"), ("HEXISTS", "h", "zz"), ("HEXISTS", "nokey", "a"),
        ("HSETNX", "h", "a", "x"), ("HSETNX", "h", "e", "5"), ("HSETNX", "new", "f", "v"),
        ("HMSET", "h", "f", "6", "a", "0"), ("HGETALL", "h"),
        ("HDEL", "h", "a", "zz", "b"), ("HDEL", "nokey", "a"), ("HGETALL", "h"),
        ("HDEL", "h", "c", "d", "e", "f", "g"), ("EXISTS", "h"),
        ("HGETALL", "nokey"), ("HKEYS", "nokey"), ("HVALS", "nokey"), ("HLEN", "nokey"),
    ])


def test_argument_errors_and_wrongtype(diff):
    diff("SET", "s", "x")
    diff("HSET", "h", "f", "v")
    for cmd in [("HSET", "h", "a"), ("HSET", "h", "a", "1", "b"), ("HMSET", "h", "a"),
                ("HSET", "h"), ("HGET", "h"), ("HSETNX", "h", "a"), ("HDEL", "h"),
                ("HINCRBY", "h", "f", "1", "2"), ("HRANDFIELD", "h", "1", "WITHVALUES", "x"),
                ("HRANDFIELD", "h", "1", "WITHVALUE"), ("HRANDFIELD", "h", "x"),
                ("HRANDFIELD", "h", "-9223372036854775808"), ("HRANDFIELD", "h", "1.5"),
                ("HRANDFIELD", "nokey", "x"), ("HRANDFIELD", "nokey", "1", "bad"),
                ("HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"),
                ("HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"),
                ("HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES", "x"),
                ("HSCAN", "h", "x"), ("HSCAN", "h", "-1"), ("HSCAN", "h", "0", "COUNT", "0"),
                ("HSCAN", "h", "0", "COUNT", "x"), ("HSCAN", "h", "0", "MATCH"),
                ("HSCAN", "h", "0", "TYPE", "string"), ("HSCAN", "nokey", "0", "COUNT", "0"),
                ("HSCAN", "nokey", "x"), ("HSCAN", "h", "18446744073709551616")]:
        diff(*cmd)
    for cmd in [("HSET", "s", "a", "1"), ("HMSET", "s", "a", "1"), ("HSETNX", "s", "a", "1"),
                ("HGET", "s", "a"), ("HMGET", "s", "a"), ("HDEL", "s", "a"), ("HLEN", "s"),
                ("HSTRLEN", "s", "a"), ("HEXISTS", "s", "a"), ("HKEYS", "s"), ("HVALS", "s"),
                ("HGETALL", "s"), ("HINCRBY", "s", "a", "1"), ("HINCRBYFLOAT", "s", "a", "1"),
                ("HRANDFIELD", "s"), ("HRANDFIELD", "s", "2"), ("HSCAN", "s", "0"),
                ("HINCRBY", "s", "a", "x"), ("HINCRBYFLOAT", "s", "a", "x")]:
        diff(*cmd)


def test_hincrby(diff):
    diff.many([
        ("HINCRBY", "h", "n", "5"), ("HINCRBY", "h", "n", "-10"), ("HINCRBY", "h", "n", "x"),
        ("HINCRBY", "h", "n", "1.5"), ("HINCRBY", "h", "n", " 1"),
        ("HSET", "h", "s", "abc", "big", "9223372036854775807", "neg", "-9223372036854775808",
         "sp", " 1", "plus", "+1", "z", "01"),
        ("HINCRBY", "h", "s", "1"), ("HINCRBY", "h", "big", "1"), ("HINCRBY", "h", "big", "0"),
        ("HINCRBY", "h", "neg", "-1"), ("HINCRBY", "h", "neg", "9223372036854775807"),
        ("HINCRBY", "h", "sp", "1"), ("HINCRBY", "h", "plus", "1"), ("HINCRBY", "h", "z", "1"),
        ("HINCRBY", "new", "f", "9223372036854775807"), ("HGETALL", "h"),
        ("HINCRBY", "h", "n", "99999999999999999999"),
    ])


def test_hincrbyfloat(diff):
    diff.many([
        ("HINCRBYFLOAT", "h", "f", "0.1"), ("HINCRBYFLOAT", "h", "f", "0.2"),
        ("HINCRBYFLOAT", "h", "f", "-0.3"), ("HINCRBYFLOAT", "h", "f", "5.0e3"),
        ("HINCRBYFLOAT", "h", "f", "1e308"), ("HINCRBYFLOAT", "h", "f", "1e308"),
        ("HINCRBYFLOAT", "h", "g", "1.5"), ("HINCRBYFLOAT", "h", "g", "-1.5"),
        ("HINCRBYFLOAT", "h", "g", "abc"), ("HINCRBYFLOAT", "h", "g", "inf"),
        ("HINCRBYFLOAT", "h", "g", "-inf"), ("HINCRBYFLOAT", "h", "g", "nan"),
        ("HINCRBYFLOAT", "h", "g", " 1"), ("HINCRBYFLOAT", "h", "g", "0x10"),
        ("HINCRBYFLOAT", "h", "g", "1e4000"), ("HSET", "h", "s", "abc", "i", "10"),
        ("HINCRBYFLOAT", "h", "s", "1"), ("HINCRBYFLOAT", "h", "i", "0.25"),
        ("HINCRBYFLOAT", "h", "i", "3"), ("HINCRBYFLOAT", "h", "i", "1e-20"),
        ("HINCRBYFLOAT", "h", "big", "1.7976931348623157e308"),
        ("HINCRBYFLOAT", "h", "big", "1.7976931348623157e308"), ("OBJECT", "ENCODING", "h"),
    ])
    real, ours = diff.both("HGETALL", "h")  # a hashtable by now: order is Redis's own
    assert as_dict(parse(real)) == as_dict(parse(ours))


def test_resp3_shapes(diff3):
    diff3.many([
        ("HGETALL", "nokey"), ("HSET", "h", "a", "1", "b", "2"), ("HGETALL", "h"),
        ("HRANDFIELD", "h", "5", "WITHVALUES"), ("HRANDFIELD", "h", "0", "WITHVALUES"),
        ("HRANDFIELD", "nokey"), ("HRANDFIELD", "nokey", "3", "WITHVALUES"),
        ("HMGET", "h", "a", "x"), ("HGET", "h", "x"), ("HSCAN", "h", "0"),
        ("HINCRBYFLOAT", "h", "a", "1.5"), ("HKEYS", "h"), ("HVALS", "h"),
    ])


def test_encoding_transitions(diff):
    diff("CONFIG", "SET", "hash-max-listpack-entries", "4")
    diff("CONFIG", "SET", "hash-max-listpack-value", "8")
    try:
        steps = [
            ("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"),
            ("HSET", "h", "a", "x"), ("HSET", "h", "e", "5"), ("HDEL", "h", "e", "d", "c"),
            ("HSET", "v", "f", "12345678"), ("HSET", "v", "f", "123456789"),
            ("HSET", "w", "123456789", "x"), ("HSETNX", "x", "f", "1"),
            ("HSETNX", "x", "f", "1234567890"), ("HSET", "y", "f", "1"),
            ("HINCRBYFLOAT", "y", "f", "0.000001"), ("HINCRBYFLOAT", "y", "f", "0.1"),
            ("HINCRBY", "z", "f", "123456789"), ("HINCRBY", "z2", "f", "12345678"),
            ("HINCRBY", "z3", "longfieldname", "1"),
            ("HMSET", "m", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"),
        ]
        for step in steps:
            diff(*step)
            diff("OBJECT", "ENCODING", step[1])
        diff("HGETALL", "v")
        diff("CONFIG", "SET", "hash-max-listpack-entries", "0")
        diff("HSET", "zero", "a", "1")
        diff("OBJECT", "ENCODING", "zero")
    finally:
        diff("CONFIG", "SET", "hash-max-listpack-entries", "128")
        diff("CONFIG", "SET", "hash-max-listpack-value", "64")


def _check_hrandfield(diff, key: str) -> None:
    real_all, ours_all = diff.both("HGETALL", key)
    content = as_dict(parse(ours_all))
    assert content == as_dict(parse(real_all))
    n = len(content)
    for count in (1, 2, n, n + 3, -1, -5, 0):
        real, ours = diff.both("HRANDFIELD", key, str(count))
        r, o = parse(real), parse(ours)
        assert len(r) == len(o), (count, r, o)
        assert set(o) <= set(content)
        if count > 0:
            assert len(set(o)) == len(o) == min(count, n)
        real, ours = diff.both("HRANDFIELD", key, str(count), "WITHVALUES")
        o = parse(ours)
        assert len(parse(real)) == len(o)
        for f, v in zip(o[::2], o[1::2], strict=True):
            assert content[f] == v
    real, ours = diff.both("HRANDFIELD", key)
    assert (parse(ours) in content) == (parse(real) is not None)


def _scan_dict(client, key: str, *options: str) -> tuple[dict, int]:
    """A full HSCAN (cursor 0 until 0): field -> value, and how many fields came back."""
    cursor, seen, count = b"0", {}, 0
    while True:
        cursor, items = parse(client.call("HSCAN", key, cursor, *options))
        seen.update(as_dict(items))
        count += len(items) // 2
        if cursor == b"0":
            return seen, count


def _scan_all(diff, key: str, *options: str) -> None:
    """A full HSCAN returns the same fields and values from Redis and pykv, and pykv returns
    each field once (the hash does not change during the scan)."""
    real, _ = _scan_dict(diff.real, key, *options)
    ours, count = _scan_dict(diff.ours, key, *options)
    assert count == len(ours), f"pykv's HSCAN {key} returned a field twice"
    assert ours == real


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences(diff, seed):
    rng = random.Random(seed)
    diff("SET", "str", "v")
    keys = ["h1", "h2", "str"]
    unordered_cmds = {"HGETALL", "HKEYS", "HVALS", "HSCAN"}
    for _ in range(250):
        k = rng.choice(keys)
        f = rng.choice(FIELDS)
        v = rng.choice(VALUES)
        cmd = rng.choice([
            ("HSET", k, f, v, rng.choice(FIELDS), rng.choice(VALUES)), ("HSET", k, f, v),
            ("HSETNX", k, f, v), ("HMSET", k, f, v), ("HGET", k, f), ("HMGET", k, f, "a"),
            ("HDEL", k, f, rng.choice(FIELDS)), ("HLEN", k), ("HSTRLEN", k, f),
            ("HEXISTS", k, f), ("HKEYS", k), ("HVALS", k), ("HGETALL", k),
            ("HINCRBY", k, f, str(rng.randint(-5, 5))),
            ("HINCRBYFLOAT", k, f, rng.choice(["1.5", "-0.25", "3", "1e2"])),
            ("HSCAN", k, "0"), ("HSCAN", k, "0", "MATCH", rng.choice(["a*", "*", "[ab]"])),
            ("OBJECT", "ENCODING", k), ("EXISTS", k),
        ])
        if cmd[0] in unordered_cmds:
            real, ours = diff.both(*cmd)
            enc, _ = diff.both("OBJECT", "ENCODING", k)
            if enc == b"$9\r\nhashtable\r\n":
                r, o = parse(real), parse(ours)
                if cmd[0] == "HSCAN":  # batches follow each server's table: compare a full scan
                    _scan_all(diff, k, *cmd[3:])
                elif cmd[0] == "HGETALL":
                    assert as_dict(r) == as_dict(o), cmd
                else:
                    assert unordered(r) == unordered(o), cmd
            else:
                assert real == ours, (cmd, real, ours)
        else:
            diff(*cmd)
    for k in ("h1", "h2"):
        _check_hrandfield(diff, k)
        _scan_all(diff, k, "COUNT", "3")
        if diff.both("OBJECT", "ENCODING", k)[0] == b"$8\r\nlistpack\r\n":
            diff("DUMP", k)  # the packed buffer after the whole sequence: Redis's bytes


def test_large_hash_scan_and_random(diff):
    diff("HSET", "big", *[x for i in range(300) for x in (f"f{i}", str(i))])
    diff("OBJECT", "ENCODING", "big")
    _scan_all(diff, "big", "COUNT", "3")
    _check_hrandfield(diff, "big")
    real, ours = diff.both("HGETALL", "big")
    assert as_dict(parse(real)) == as_dict(parse(ours))
    real, ours = diff.both("HSCAN", "big", "0", "MATCH", "f1*", "COUNT", "1000")
    assert as_dict(parse(real)[1]) == as_dict(parse(ours)[1])
    assert not isinstance(parse(ours), Error)


def test_absurd_negative_counts_do_not_hurt_the_server(raw):
    raw.call("HSET", "h", "a", "1")
    assert raw.call("HRANDFIELD", "h", "-9223372036854775807").startswith(b"-ERR")
    assert raw.call("HRANDFIELD", "h", "-3").startswith(b"*3\r\n")
    assert raw.call("PING") == b"+PONG\r\n"


def test_hashtable_through_the_subsystems(diff):
    """A hashtable hash (the compiled field table) through COPY, DUMP/RESTORE, DEBUG
    DIGEST-VALUE, SORT BY/GET, deletes down to a few fields and HINCRBY*: the same
    contents and order-free replies as Redis."""
    fields = [x for i in range(400) for x in (f"f{i}", str(i * 7 % 400))]
    diff("HSET", "big", *fields, "long", "v" * 200)
    diff("RPUSH", "ids", *[str(i) for i in range(0, 400, 37)])
    for i in range(0, 400, 37):
        diff("HSET", f"w{i}", "weight", str(-i), "name", f"n{i}")
    diff.many([("OBJECT", "ENCODING", "big"), ("HLEN", "big"), ("HSTRLEN", "big", "long"),
               ("HINCRBY", "big", "f3", "5"), ("HINCRBYFLOAT", "big", "f4", "0.5"),
               ("HINCRBY", "big", "long", "1"), ("HMGET", "big", "f1", "nope", "f399"),
               ("COPY", "big", "copied"), ("DEBUG", "DIGEST-VALUE", "big", "copied"),
               ("SORT", "ids", "BY", "w*->weight", "GET", "#", "GET", "w*->name"),
               ("SORT", "ids", "BY", "big->f*"), ("HSETNX", "big", "f5", "x")])
    real_dump, ours_dump = diff.both("DUMP", "big")
    for dump, target in ((real_dump, diff.ours), (ours_dump, diff.real)):  # crossed
        payload = parse(dump)
        assert target.call("RESTORE", "restored", "0", payload) == b"+OK\r\n"
    diff.many([("DEBUG", "DIGEST-VALUE", "restored"), ("OBJECT", "ENCODING", "restored")])
    diff("HDEL", "big", *[f"f{i}" for i in range(399)], "long")
    diff.many([("HGETALL", "big"), ("OBJECT", "ENCODING", "big"), ("HLEN", "copied"),
               ("DEBUG", "DIGEST-VALUE", "big", "copied", "restored")])
    real, ours = diff.both("HGETALL", "copied")
    assert as_dict(parse(real)) == as_dict(parse(ours))
