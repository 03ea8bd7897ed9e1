"""String commands compared byte for byte with real redis-server 7.0 (RESP2 and RESP3)."""
from __future__ import annotations

import pytest
from support.resp import encode_command

BIG = "9223372036854775807"
SMALL = "-9223372036854775808"


def make_other_type(diff, key: str) -> None:
    """A hash at ``key`` on both servers (the replies must match)."""
    diff("HSET", key, "f", "v")


def test_get_set_basic(diff):
    diff("GET", "k")
    diff("SET", "k", "v")
    diff("GET", "k")
    diff("SET", "k", "")
    diff("GET", "k")
    diff("SET", b"\x00\xff\r\n", b"bin\x00ary\r\n")
    diff("GET", b"\x00\xff\r\n")
    diff("SET", "k", "x" * 5000)
    diff("GET", "k")


def test_set_options(diff):
    diff("SET", "k", "v", "NX")
    diff("SET", "k", "v2", "NX")
    diff("GET", "k")
    diff("SET", "k", "v3", "XX")
    diff("SET", "missing", "v", "XX")
    diff("GET", "missing")
    diff("SET", "k", "v4", "GET")
    diff("SET", "new", "v", "GET")
    diff("SET", "k", "v5", "NX", "GET")
    diff("SET", "k", "v6", "XX", "GET")
    diff("SET", "nope", "v", "XX", "GET")
    diff("GET", "k")
    diff("SET", "k", "v", "EX", "100")
    diff("TTL", "k")
    diff("SET", "k", "v", "KEEPTTL")
    diff("TTL", "k")
    diff("SET", "k", "v")
    diff("TTL", "k")
    diff("SET", "k", "v", "PX", "100000")
    diff("TTL", "k")
    diff("SET", "k", "v", "EXAT", "99999999999")
    diff("EXPIRETIME", "k")
    diff("SET", "k", "v", "PXAT", "99999999999123")
    diff("PEXPIRETIME", "k")
    diff("SET", "k", "v", "ex", "10", "ex", "20")
    diff("TTL", "k")
    diff("SET", "k", "v", "nx", "nx")
    diff("SET", "k", "v", "xx", "xx", "get", "get")
    diff("SET", "k", "v", b"xx\x00junk")
    diff("SET", "k", "v", b"EX\x00", "100")


@pytest.mark.parametrize("opts", [
    ["NX", "XX"], ["XX", "NX"], ["EX", "10", "PX", "100"], ["PX", "10", "EX", "1"],
    ["EX", "10", "KEEPTTL"], ["KEEPTTL", "EX", "10"], ["KEEPTTL", "PXAT", "10"],
    ["EXAT", "10", "PXAT", "10"], ["EX"], ["PX"], ["EXAT"], ["PXAT"], ["FOO"], ["PERSIST"],
    ["EX", "10", "NX", "XX"], ["GET", "EX"], ["NX", "EX"],
])
def test_set_syntax_errors(diff, opts):
    diff("SET", "k", "v", *opts)
    diff("GET", "k")


@pytest.mark.parametrize("opts", [
    ["EX", "0"], ["EX", "-1"], ["PX", "0"], ["PX", "-5"], ["EXAT", "0"], ["PXAT", "-1"],
    ["EX", "abc"], ["EX", "1.5"], ["EX", BIG], ["EX", "9223372036854775"],
    ["EX", "9223372036854776"], ["PX", BIG], ["EXAT", BIG], ["PXAT", BIG], ["EX", ""],
    ["PX", "9223372036854775806"],
])
def test_set_bad_expire(diff, opts):
    diff("SET", "k", "v", *opts)
    diff("SETEX", "k", opts[1], "v")
    diff("PSETEX", "k", opts[1], "v")
    diff("GET", "k")


def test_set_get_wrongtype(diff):
    make_other_type(diff, "h")
    diff("SET", "h", "v", "GET")
    diff("TYPE", "h")
    diff("SET", "h", "v", "NX", "GET")
    diff("SET", "h", "v")
    diff("GET", "h")


def test_setnx_setex_psetex(diff):
    diff("SETNX", "k", "a")
    diff("SETNX", "k", "b")
    diff("GET", "k")
    diff("SETEX", "k", "100", "c")
    diff("TTL", "k")
    diff("PSETEX", "k", "100000", "d")
    diff("TTL", "k")
    diff("GET", "k")
    diff("SETEX", "k", "100")
    diff("SETNX", "k")


def test_getex(diff):
    diff("GETEX", "missing")
    diff("GETEX", "missing", "EX", "abc")
    diff("GETEX", "missing", "FOO")
    diff("SET", "k", "v")
    diff("GETEX", "k")
    diff("GETEX", "k", "EX", "100")
    diff("TTL", "k")
    diff("GETEX", "k", "PERSIST")
    diff("TTL", "k")
    diff("GETEX", "k", "PX", "100000")
    diff("TTL", "k")
    diff("GETEX", "k", "EXAT", "99999999999")
    diff("EXPIRETIME", "k")
    diff("GETEX", "k", "PXAT", "99999999999999")
    diff("PEXPIRETIME", "k")
    diff("GETEX", "k", "EX", "0")
    diff("GETEX", "k", "EX", "-1")
    diff("GETEX", "k", "EX", BIG)
    diff("GETEX", "k", "EX", "x")
    diff("GETEX", "k", "PERSIST", "EX", "10")
    diff("GETEX", "k", "EX", "10", "PERSIST")
    diff("GETEX", "k", "KEEPTTL")
    diff("GETEX", "k", "NX")
    diff("GETEX", "k", "GET")
    diff("GETEX", "k", "EX")
    diff("GETEX", "k", "PERSIST", "PERSIST")
    diff("GETEX", "k", "EXAT", "1")
    diff("EXISTS", "k")
    diff("SET", "k", "v")
    diff("GETEX", "k", "PXAT", "1")
    diff("GET", "k")
    make_other_type(diff, "l")
    diff("GETEX", "l", "EX", "abc")


def test_getdel_getset(diff):
    diff("GETDEL", "k")
    diff("SET", "k", "v")
    diff("GETDEL", "k")
    diff("GETDEL", "k")
    diff("GETSET", "k", "a")
    diff("SET", "k", "b", "EX", "100")
    diff("GETSET", "k", "c")
    diff("TTL", "k")
    make_other_type(diff, "h")
    diff("GETDEL", "h")
    diff("GETSET", "h", "x")
    diff("TYPE", "h")


def test_mget_mset_msetnx(diff):
    diff("MSET", "a", "1", "b", "2")
    diff("MSET", "a", "1", "b")
    diff("MGET", "a", "b", "c", "a")
    make_other_type(diff, "h")
    diff("MGET", "a", "h")
    diff("MSETNX", "x", "1", "y", "2")
    diff("MSETNX", "x", "1", "z", "2")
    diff("MGET", "x", "y", "z")
    diff("MSETNX", "x", "1", "y")
    diff("MSETNX", "q", "1", "q", "2")
    diff("GET", "q")
    diff("MSET", "a", "3", "a", "4")
    diff("GET", "a")


def test_append_strlen(diff):
    diff("APPEND", "k", "hello")
    diff("APPEND", "k", " world")
    diff("GET", "k")
    diff("STRLEN", "k")
    diff("STRLEN", "missing")
    diff("APPEND", "k", "")
    diff("APPEND", "e", "")
    diff("EXISTS", "e")
    diff("SET", "n", "12")
    diff("APPEND", "n", "34")
    diff("INCR", "n")
    make_other_type(diff, "h")
    diff("APPEND", "h", "x")
    diff("STRLEN", "h")
    diff("SET", "t", "v", "EX", "100")
    diff("APPEND", "t", "x")
    diff("TTL", "t")


def test_getrange(diff):
    diff("SET", "k", "Hello World")
    for start, end in [(0, 4), (-5, -1), (0, -1), (5, 2), (-100, 100), (3, 3), (-1, -5),
                       (11, 20), (0, 0), (-3, 2), (20, 30), (-1, 0), (BIG, BIG),
                       (SMALL, SMALL), (SMALL, BIG), (-20, -15), (0, SMALL)]:
        diff("GETRANGE", "k", start, end)
        diff("SUBSTR", "k", start, end)
    diff("GETRANGE", "missing", 0, -1)
    diff("GETRANGE", "k", "a", 1)
    diff("GETRANGE", "k", 0, "1.0")
    diff("GETRANGE", "missing", "a", 1)
    diff("SET", "e", "")
    diff("GETRANGE", "e", 0, -1)
    diff("GETRANGE", "e", -1, 0)
    diff("SET", "i", "12345")
    diff("GETRANGE", "i", 1, 3)
    make_other_type(diff, "h")
    diff("GETRANGE", "h", 0, 1)


def test_setrange(diff):
    diff("SETRANGE", "k", 5, "abc")
    diff("GET", "k")
    diff("SETRANGE", "k", 0, "XY")
    diff("GET", "k")
    diff("SETRANGE", "k", 20, "z")
    diff("GET", "k")
    diff("SETRANGE", "k", 2, "")
    diff("SETRANGE", "missing", 2, "")
    diff("EXISTS", "missing")
    diff("SETRANGE", "k", -1, "x")
    diff("SETRANGE", "k", "x", "x")
    diff("SETRANGE", "k", BIG, "x")
    diff("SETRANGE", "k", 536870912, "x")
    diff("SETRANGE", "k", 536870911, "xx")
    diff("SETRANGE", "missing", 536870912, "x")
    diff("SETRANGE", "missing", 536870912, "")
    diff("SETRANGE", "missing", -1, "")
    diff("SET", "n", "123")
    diff("SETRANGE", "n", 1, "9")
    diff("GET", "n")
    make_other_type(diff, "h")
    diff("SETRANGE", "h", 0, "x")
    diff("SETRANGE", "h", 0, "")


def test_incr_decr(diff):
    diff("INCR", "n")
    diff("INCRBY", "n", 10)
    diff("DECR", "n")
    diff("DECRBY", "n", 5)
    diff("DECRBY", "n", -5)
    diff("INCRBY", "n", "-100")
    diff("GET", "n")
    diff("SET", "n", BIG)
    diff("INCR", "n")
    diff("INCRBY", "n", 0)
    diff("SET", "n", SMALL)
    diff("DECR", "n")
    diff("DECRBY", "n", SMALL)
    diff("DECRBY", "n", BIG)
    diff("SET", "n", "0")
    diff("DECRBY", "n", SMALL)
    diff("INCRBY", "n", SMALL)
    diff("INCRBY", "n", "9223372036854775808")
    diff("INCRBY", "n", "1.5")
    diff("INCRBY", "n", " 1")
    diff("INCRBY", "n", "+1")
    diff("INCRBY", "n", "01")
    for bad in ["abc", "1.5", " 1", "1 ", "", "+1", "0x10", "9223372036854775808", "-0"]:
        diff("SET", "s", bad)
        diff("INCR", "s")
        diff("DECRBY", "s", 1)
    make_other_type(diff, "h")
    diff("INCR", "h")
    diff("SET", "t", "5", "EX", "100")
    diff("INCR", "t")
    diff("TTL", "t")


def test_counter_reply_paths(diff):
    """INCR's reply is written straight into the output buffer only when it goes out as it
    is: inside MULTI/EXEC, pipelined, from a script and under CLIENT REPLY it must match."""
    diff("APPEND", "a", "41")  # a bytearray value (raw): INCR stores bytes again
    diff("INCR", "a")
    diff("OBJECT", "ENCODING", "a")
    diff("SETRANGE", "a", 0, "-9")
    diff("DECRBY", "a", 1000)
    diff("GET", "a")
    batch = b"".join(encode_command(*cmd) for cmd in (
        ("INCR", "p"), ("INCRBY", "p", 254), ("INCR", "p"), ("DECRBY", "p", 10000),
        ("INCRBY", "p", BIG), ("INCR", "p"), ("GET", "p")))
    diff.raw(batch, replies=7)
    diff("SET", "m2", "x")
    diff.reply_paths(("INCR", "m"), ("INCRBY", "m", 99999))
    diff.reply_paths(("INCR", "m2"), ("DECR", "m"))
    diff("EVAL", "return redis.pcall('INCR', KEYS[1])", 1, "a")
    diff.raw(encode_command("CLIENT", "REPLY", "OFF") + encode_command("INCRBY", "r", 7)
             + encode_command("CLIENT", "REPLY", "ON"))
    diff("GET", "r")


def test_counter_reply_resp3(diff3):
    diff3("INCR", "n")
    diff3("DECRBY", "n", 1000)
    diff3("MULTI")
    diff3("INCR", "n")
    diff3("EXEC")
    diff3("EVAL", "return redis.call('INCR', KEYS[1])", 1, "n")


@pytest.mark.parametrize("start,incr", [
    (None, "10.5"), ("10.50", "0.1"), ("5.0e3", "2.0e2"), ("3", "1.1"), ("0", "0"),
    (None, "-0"), ("1", "-1"), ("0.1", "0.2"), ("1e308", "1e308"), (None, "1e4000"),
    (None, "inf"), (None, "-inf"), (None, "nan"), ("inf", "1"), ("abc", "1"), (None, "abc"),
    (None, ""), (None, " 1"), (None, "1 "), (None, "0x10"), (None, "1e-4000"), (None, "+1.5"),
    ("-1.5", "1.5"), (None, "3.0000000000000000001"), ("17179869184", "1.5"),
    (None, "1.23456789012345678901234567890"), (None, "-0.00000000000000000001"),
    ("123456789012345678", "0.5"), (None, "1" + "0" * 5200), (None, "1" * 60),
    (None, "1e-400"), (None, "4.9e-4951"), ("1.1", "2.2"),
])
def test_incrbyfloat(diff, start, incr):
    if start is not None:
        diff("SET", "f", start)
    diff("INCRBYFLOAT", "f", incr)
    diff("GET", "f")
    diff("INCRBYFLOAT", "f", incr)


def test_incrbyfloat_wrongtype_and_ttl(diff):
    make_other_type(diff, "h")
    diff("INCRBYFLOAT", "h", "1")
    diff("SET", "t", "1.5", "EX", "100")
    diff("INCRBYFLOAT", "t", "1")
    diff("TTL", "t")
    diff("SET", "b", b"1\x002")
    diff("INCRBYFLOAT", "b", "1")
    diff("INCRBYFLOAT", "b2", b"1\x002")


def test_lcs(diff):
    diff("MSET", "a", "ohmytext", "b", "mynewtext")
    diff("LCS", "a", "b")
    diff("LCS", "a", "b", "LEN")
    diff("LCS", "a", "b", "IDX")
    diff("LCS", "a", "b", "IDX", "WITHMATCHLEN")
    diff("LCS", "a", "b", "IDX", "MINMATCHLEN", "4")
    diff("LCS", "a", "b", "IDX", "MINMATCHLEN", "-4", "WITHMATCHLEN")
    diff("LCS", "a", "b", "IDX", "LEN")
    diff("LCS", "a", "b", "LEN", "IDX")
    diff("LCS", "a", "b", "FOO")
    diff("LCS", "a", "b", "MINMATCHLEN")
    diff("LCS", "a", "b", "MINMATCHLEN", "x")
    diff("LCS", "a", "missing")
    diff("LCS", "missing", "missing2", "IDX")
    diff("LCS", "a", "a", "IDX", "WITHMATCHLEN")
    diff("MSET", "c", "GTAGGCTAGCATTAGACCGTAGATTACCA", "d", "ACCGTTGACCTTAGACCATTGCAGGTAGA")
    diff("LCS", "c", "d", "IDX", "WITHMATCHLEN")
    diff("LCS", "d", "c", "IDX", "MINMATCHLEN", "2")
    diff("LCS", "c", "d")
    make_other_type(diff, "h")
    diff("LCS", "a", "h")
    diff("LCS", "h", "a", "FOO")


def test_lcs_resp3(diff3):
    diff3("MSET", "a", "ohmytext", "b", "mynewtext")
    diff3("LCS", "a", "b", "IDX", "WITHMATCHLEN")
    diff3("LCS", "a", "b", "IDX")
    diff3("LCS", "x", "y", "IDX")


def test_lcs_random(diff):
    import random

    rng = random.Random(7)
    for _ in range(20):
        a = "".join(rng.choice("ACGT") for _ in range(rng.randrange(0, 60)))
        b = "".join(rng.choice("ACGT") for _ in range(rng.randrange(0, 60)))
        diff("MSET", "a", a, "b", b)
        diff("LCS", "a", "b", "IDX", "WITHMATCHLEN", "MINMATCHLEN", rng.randrange(0, 3))
        diff("LCS", "a", "b")


def test_string_resp3_shapes(diff3):
    diff3("GET", "missing")
    diff3("SET", "k", "v")
    diff3("SET", "k", "v", "NX")
    diff3("SET", "k", "w", "GET")
    diff3("SET", "z", "w", "GET")
    diff3("GETEX", "missing")
    diff3("GETDEL", "missing")
    diff3("MGET", "k", "missing")
    diff3("INCRBYFLOAT", "f", "1.5")
    diff3("GETRANGE", "missing", 0, 1)


def test_object_encoding_of_strings(diff):
    for value in ["1", "-1", "12345", BIG, "9223372036854775808", "-0", "01", "abc",
                  "x" * 44, "x" * 45, "", " 1", "1.5"]:
        diff("SET", "k", value)
        diff("OBJECT", "ENCODING", "k")
        diff("OBJECT", "REFCOUNT", "k")
    diff("SET", "k", "x")
    diff("APPEND", "k", "y")
    diff("OBJECT", "ENCODING", "k")
    diff("APPEND", "new", "12")
    diff("OBJECT", "ENCODING", "new")
    diff("SETRANGE", "sr", 0, "1")
    diff("OBJECT", "ENCODING", "sr")
    diff("SET", "sr2", "abc")
    diff("SETRANGE", "sr2", 0, "")
    diff("OBJECT", "ENCODING", "sr2")
    diff("SETRANGE", "sr2", 0, "x")
    diff("OBJECT", "ENCODING", "sr2")
    diff("INCR", "c")
    diff("OBJECT", "ENCODING", "c")
    diff("OBJECT", "REFCOUNT", "c")
    diff("INCRBY", "c", 100000)
    diff("OBJECT", "REFCOUNT", "c")
    diff("INCRBYFLOAT", "fl", "1.5")
    diff("OBJECT", "ENCODING", "fl")
    diff("SET", "big", "y" * 100)
    diff("COPY", "k", "k2")
    diff("OBJECT", "ENCODING", "k2")


def test_string_size_limit(diff):
    """APPEND/SETRANGE refuse results over proto-max-bulk-len (set low on both servers)."""
    try:
        diff("CONFIG", "SET", "proto-max-bulk-len", "1mb")
        limit = 1024 * 1024
        diff("SETRANGE", "k", limit - 1, "x")
        diff("STRLEN", "k")
        diff("SETRANGE", "k", limit - 1, "xy")
        diff("SETRANGE", "k", limit, "x")
        diff("APPEND", "k", "z")
        diff("SET", "a", "x" * 1000)
        diff("APPEND", "a", "y" * (limit - 1000))
        diff("APPEND", "a", "y")
        diff("APPEND", "a", "")
        diff("STRLEN", "a")
        diff("SETRANGE", "n", limit, "x")
    finally:
        diff.real.call("CONFIG", "SET", "proto-max-bulk-len", "512mb")
        diff.ours.call("CONFIG", "SET", "proto-max-bulk-len", "512mb")
