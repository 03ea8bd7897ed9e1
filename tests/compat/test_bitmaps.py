"""Bitmaps and bitfields against real redis-server 7.0, byte for byte."""
from __future__ import annotations

import random


def test_setbit_getbit(diff):
    diff.many([
        ("SETBIT", "b", "7", "1"), ("GETBIT", "b", "7"), ("GET", "b"),
        ("SETBIT", "b", "7", "1"), ("SETBIT", "b", "7", "0"), ("SETBIT", "b", "100", "1"),
        ("GET", "b"), ("GETBIT", "b", "100000"), ("GETBIT", "nokey", "3"),
        ("SETBIT", "b", "-1", "1"), ("SETBIT", "b", "x", "1"), ("SETBIT", "b", "1", "2"),
        ("SETBIT", "b", "1", "-1"), ("SETBIT", "b", "1", "x"), ("GETBIT", "b", "-1"),
        ("SETBIT", "b", "4294967296", "1"), ("GETBIT", "b", "4294967296"),
        ("GETBIT", "b", "4294967295"),
        ("SET", "s", "hello"), ("SETBIT", "s", "3", "1"), ("GET", "s"),
        ("ZADD", "z", "1", "a"), ("SETBIT", "z", "1", "1"), ("GETBIT", "z", "1"),
    ])


def test_bitcount_and_bitpos(diff):
    diff("SET", "s", b"\x00\xff\xf0\x0f\x81\x00\x00\x01")
    diff("SET", "ones", b"\xff\xff\xff")
    diff("SET", "zeros", b"\x00\x00")
    diff("SET", "empty", b"")
    diff.many([
        ("BITCOUNT", "s"), ("BITCOUNT", "s", "1", "2"), ("BITCOUNT", "s", "-3", "-1"),
        ("BITCOUNT", "s", "5", "2"), ("BITCOUNT", "s", "-1", "-3"), ("BITCOUNT", "s", "0"),
        ("BITCOUNT", "s", "3", "30", "BIT"), ("BITCOUNT", "s", "-20", "-2", "bit"),
        ("BITCOUNT", "s", "1", "2", "BYTE"), ("BITCOUNT", "s", "1", "2", "NIBBLE"),
        ("BITCOUNT", "s", "x", "2"), ("BITCOUNT", "nokey", "x"), ("BITCOUNT", "nokey"),
        ("BITCOUNT", "empty"), ("BITCOUNT", "empty", "0", "-1"),
        ("BITPOS", "s", "1"), ("BITPOS", "s", "0"), ("BITPOS", "ones", "0"),
        ("BITPOS", "ones", "0", "1"), ("BITPOS", "ones", "0", "0", "-1"),
        ("BITPOS", "ones", "1", "0", "-1", "BIT"), ("BITPOS", "zeros", "1"),
        ("BITPOS", "zeros", "0", "5"), ("BITPOS", "nokey", "0"), ("BITPOS", "nokey", "1"),
        ("BITPOS", "empty", "0"), ("BITPOS", "s", "2"), ("BITPOS", "s", "x"),
        ("BITPOS", "s", "1", "2", "1"), ("BITPOS", "s", "1", "x"),
        ("BITPOS", "s", "1", "3", "30", "BIT"), ("BITPOS", "s", "0", "9", "14", "BIT"),
        ("BITPOS", "s", "1", "0", "-1", "FOO"), ("BITPOS", "ones", "0", "3", "-1", "BIT"),
        ("BITPOS", "ones", "0", "3", "BIT"),
    ])


def test_random_bit_ranges(diff):
    rng = random.Random(99)
    for _ in range(6):
        data = bytes(rng.choice([0, 0xff, rng.randrange(256)]) for _ in range(rng.randrange(1, 9)))
        diff("SET", "r", data)
        n = len(data) * 8
        for _ in range(40):
            a, b = rng.randrange(-n - 3, n + 3), rng.randrange(-n - 3, n + 3)
            unit = rng.choice(["BIT", "BYTE"])
            diff("BITCOUNT", "r", a, b, unit)
            bit = rng.randrange(2)
            diff("BITPOS", "r", bit, a, b, unit)
            diff("BITPOS", "r", bit, a)
            diff("BITPOS", "r", bit, a, b)


def test_bitop(diff):
    diff("SET", "a", b"\x0f\xf0\xaa")
    diff("SET", "b", b"\xff\x01")
    diff.many([
        ("BITOP", "AND", "d", "a", "b"), ("GET", "d"), ("BITOP", "or", "d", "a", "b", "nokey"),
        ("GET", "d"), ("BITOP", "XOR", "d", "a", "b"), ("GET", "d"),
        ("BITOP", "NOT", "d", "a"), ("GET", "d"), ("BITOP", "NOT", "d", "a", "b"),
        ("BITOP", "NAND", "d", "a"), ("BITOP", "AND", "d", "nokey"), ("EXISTS", "d"),
        ("ZADD", "z", "1", "a"), ("BITOP", "AND", "d", "a", "z"),
        ("BITOP", "AND", "a", "a", "b"), ("GET", "a"),
    ])


def test_bitfield(diff):
    diff.many([
        ("BITFIELD", "f", "SET", "i8", "0", "-100", "GET", "i8", "0", "GET", "u8", "0"),
        ("BITFIELD", "f", "INCRBY", "i8", "0", "-100"),
        ("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-100"),
        ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "-100", "GET", "i8", "0"),
        ("BITFIELD", "f", "SET", "u5", "#3", "31", "INCRBY", "u5", "#3", "1"),
        ("BITFIELD", "f", "OVERFLOW", "SAT", "SET", "u8", "100", "-5", "GET", "u8", "100"),
        ("BITFIELD", "f", "OVERFLOW", "WRAP", "SET", "u8", "100", "-5"),
        ("BITFIELD", "f", "SET", "i64", "3", "-9223372036854775808", "INCRBY", "i64", "3", "-1"),
        ("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i64", "3", "-1"),
        ("BITFIELD", "f", "SET", "u63", "5", "9223372036854775807", "GET", "u63", "5"),
        ("BITFIELD", "f", "INCRBY", "u63", "5", "10"),
        ("GET", "f"),
        ("BITFIELD", "f", "GET", "u64", "0"), ("BITFIELD", "f", "GET", "i65", "0"),
        ("BITFIELD", "f", "GET", "I8", "0"), ("BITFIELD", "f", "GET", "u0", "0"),
        ("BITFIELD", "f", "GET", "i8", "-1"), ("BITFIELD", "f", "GET", "i8", "#x"),
        ("BITFIELD", "f", "GET", "i8", "#-1"), ("BITFIELD", "f", "GET", "i8"),
        ("BITFIELD", "f", "SET", "i8", "0"), ("BITFIELD", "f", "SET", "i8", "0", "x"),
        ("BITFIELD", "f", "OVERFLOW", "BOGUS", "GET", "i8", "0"), ("BITFIELD", "f", "FOO"),
        ("BITFIELD", "f"), ("BITFIELD", "nokey", "GET", "u4", "100"), ("EXISTS", "nokey"),
        ("BITFIELD_RO", "f", "GET", "i8", "0", "GET", "u3", "#2"),
        ("BITFIELD_RO", "f", "SET", "i8", "0", "1"), ("BITFIELD_RO", "f", "INCRBY", "i8", "0", "1"),
        ("BITFIELD", "newkey", "OVERFLOW", "FAIL", "SET", "u2", "0", "7"), ("GET", "newkey"),
        ("ZADD", "z", "1", "a"), ("BITFIELD", "z", "GET", "i8", "0"),
        ("BITFIELD_RO", "z", "GET", "i8", "0"),
    ])


def test_bitfield_random(diff):
    rng = random.Random(4242)
    for _ in range(250):
        signed = rng.random() < 0.5
        bits = rng.randrange(1, 65 if signed else 64)
        typ = ("i" if signed else "u") + str(bits)
        offset = rng.choice([str(rng.randrange(0, 80)), f"#{rng.randrange(0, 6)}"])
        value = rng.choice([0, 1, -1, rng.randrange(-2 ** 63, 2 ** 63), rng.randrange(-300, 300)])
        ops = [rng.choice([["OVERFLOW", rng.choice(["WRAP", "SAT", "FAIL"])], []])]
        ops.append(rng.choice([["GET", typ, offset], ["SET", typ, offset, value],
                               ["INCRBY", typ, offset, value]]))
        diff("BITFIELD", "bf", *sum(ops, []))
    diff("GET", "bf")
