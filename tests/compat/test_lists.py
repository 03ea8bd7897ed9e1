"""Lists against real redis-server 7.0: replies and errors byte for byte, RESP2 and RESP3.

Lists are fully ordered, so every reply (including random command sequences) must be the
same bytes. Blocking behaviour with several clients is in ``test_blocking.py``; here the
blocking commands are exercised where they answer at once (data present, errors, EXEC).
"""
from __future__ import annotations

import random

import pytest

ELEMS = ["a", "b", "c", "1", "2", "", "x" * 70]


def test_push_pop_and_reads(diff):
    diff.many([
        ("RPUSH", "l", "a", "b", "c", "d", "e", "a", "b", "c"),
        ("LPUSH", "l", "z", "y"),
        ("LLEN", "l"),
        ("LRANGE", "l", "0", "-1"),
        ("LRANGE", "l", "-3", "-1"),
        ("LRANGE", "l", "-100", "2"),
        ("LRANGE", "l", "5", "2"),
        ("LRANGE", "l", "8", "100"),
        ("LRANGE", "l", "100", "200"),
        ("LRANGE", "nokey", "0", "-1"),
        ("LINDEX", "l", "0"), ("LINDEX", "l", "-1"), ("LINDEX", "l", "-10"),
        ("LINDEX", "l", "9"), ("LINDEX", "l", "10"), ("LINDEX", "l", "-11"),
        ("LPOP", "l"), ("RPOP", "l"), ("LPOP", "l", "2"), ("RPOP", "l", "3"),
        ("LPOP", "l", "0"), ("RPOP", "l", "100"), ("EXISTS", "l"),
        ("LPOP", "l"), ("LPOP", "l", "1"), ("LPOP", "nokey", "0"),
        ("LPUSHX", "l", "a"), ("RPUSHX", "l", "a"), ("EXISTS", "l"),
        ("RPUSH", "l", "x"), ("LPUSHX", "l", "a", "b"), ("RPUSHX", "l", "c", "d"),
        ("LRANGE", "l", "0", "-1"),
    ])


@pytest.mark.parametrize("proto", [2, 3])
def test_push_reply_paths(diff, diff3, proto):
    """A push's new length is written into the output buffer only when the reply goes out
    as it is: inside MULTI, from a script and under CLIENT REPLY the replies must match."""
    d = diff if proto == 2 else diff3
    d("LPUSHX", "l", "a")
    d("RPUSH", "l", "a")
    d("LPUSH", "l", "b", "c")
    d("RPUSHX", "l", "d")
    d.reply_paths(("LPUSH", "l", "e"), ("RPUSH", "l", "f", "g"))
    d.reply_paths(("LPUSHX", "nokey", "x"), ("RPUSH", "l", "h"))
    d("LRANGE", "l", "0", "-1")
    for n in range(300):  # across the packed list's size into the quicklist
        d("RPUSH" if n % 2 else "LPUSH", "big", "x" * (n % 70))
    d("LRANGE", "big", "0", "-1")


def test_argument_errors(diff):
    diff.many([
        ("RPUSH", "l", "a", "b", "a"),
        ("LPOP", "l", "-1"), ("LPOP", "l", "abc"), ("LPOP", "l", "1", "2"),
        ("RPOP", "nokey", "-1"), ("LPOP",), ("LPUSH", "l"), ("LRANGE", "l", "a", "1"),
        ("LRANGE", "l", "0", "1.5"), ("LRANGE", "nokey", "x", "1"),
        ("LINDEX", "l", "x"), ("LINDEX", "nokey", "x"), ("LINDEX", "l", "99999999999999999999"),
        ("LSET", "l", "x", "v"), ("LSET", "nokey", "0", "v"), ("LSET", "nokey", "x", "v"),
        ("LSET", "l", "5", "v"), ("LSET", "l", "-4", "v"), ("LSET", "l", "-3", "v"),
        ("LTRIM", "l", "x", "1"), ("LTRIM", "nokey", "0", "x"), ("LREM", "l", "x", "a"),
        ("LREM", "nokey", "x", "a"), ("LINSERT", "l", "middle", "a", "b"),
        ("LINSERT", "nokey", "middle", "a", "b"), ("LMOVE", "l", "m", "up", "left"),
        ("LMOVE", "nokey", "m", "left", "down"),
        ("LMPOP", "0", "l", "left"), ("LMPOP", "x", "l", "left"), ("LMPOP", "2", "l", "left"),
        ("LMPOP", "1", "l", "middle"), ("LMPOP", "1", "l", "left", "count", "0"),
        ("LMPOP", "1", "l", "left", "count", "-1"), ("LMPOP", "1", "l", "left", "count"),
        ("LMPOP", "1", "l", "left", "count", "1", "count", "1"),
        ("LMPOP", "1", "l", "left", "foo"), ("LMPOP", "-1", "l", "left"),
        ("LMPOP", "9223372036854775807", "l", "left"),
        ("LMPOP", "1", "l", "right", "COUNT", "9223372036854775807"),
        ("LRANGE", "l", "0", "-1"),
    ])


def test_wrongtype_everywhere(diff):
    diff("SET", "s", "x")
    diff("RPUSH", "l", "a", "b", "c", "d", "e", "f")
    for cmd in [("LPUSH", "s", "a"), ("RPUSH", "s", "a"), ("LPUSHX", "s", "a"),
                ("RPUSHX", "s", "a"), ("LPOP", "s"), ("RPOP", "s", "1"), ("LLEN", "s"),
                ("LINDEX", "s", "0"), ("LINSERT", "s", "before", "a", "b"),
                ("LRANGE", "s", "0", "1"), ("LREM", "s", "0", "a"), ("LSET", "s", "0", "a"),
                ("LTRIM", "s", "0", "1"), ("LPOS", "s", "a"), ("LMOVE", "s", "l", "left", "left"),
                ("LMOVE", "l", "s", "left", "left"), ("RPOPLPUSH", "s", "l"),
                ("RPOPLPUSH", "l", "s"), ("RPOPLPUSH", "nokey", "s"), ("LMPOP", "2", "s", "l",
                                                                        "left"),
                ("LMPOP", "2", "l", "s", "left"), ("BLPOP", "s", "l", "0"),
                ("BLPOP", "l", "s", "0"), ("BRPOP", "nokey", "s", "0"),
                ("BLMOVE", "s", "l", "left", "left", "0"), ("BLMOVE", "l", "s", "left", "left", "0"),
                ("BRPOPLPUSH", "s", "l", "0"), ("BLMPOP", "0", "2", "s", "l", "left")]:
        diff(*cmd)
    diff("LRANGE", "l", "0", "-1")


def test_linsert_lset_lrem_ltrim(diff):
    diff.many([
        ("RPUSH", "l", "a", "b", "c", "a", "b", "c", "a"),
        ("LINSERT", "l", "BEFORE", "b", "X"), ("LINSERT", "l", "after", "a", "Y"),
        ("LINSERT", "l", "after", "zz", "Y"), ("LINSERT", "nokey", "after", "a", "Y"),
        ("LSET", "l", "0", "first"), ("LSET", "l", "-1", "last"),
        ("LRANGE", "l", "0", "-1"),
        ("LREM", "l", "1", "b"), ("LREM", "l", "-1", "c"), ("LREM", "l", "0", "a"),
        ("LREM", "l", "0", "nothing"), ("LRANGE", "l", "0", "-1"),
        ("LTRIM", "l", "1", "-2"), ("LRANGE", "l", "0", "-1"),
        ("LTRIM", "l", "-100", "100"), ("LRANGE", "l", "0", "-1"),
        ("LTRIM", "l", "5", "1"), ("EXISTS", "l"),
        ("RPUSH", "l", "a", "a", "a"), ("LREM", "l", "0", "a"), ("EXISTS", "l"),
        ("LTRIM", "nokey", "0", "1"),
    ])


def test_lpos(diff):
    diff("RPUSH", "l", "a", "b", "c", "a", "b", "c", "a", "x", "a")
    for opts in [(), ("RANK", "1"), ("RANK", "2"), ("RANK", "-1"), ("RANK", "-3"),
                 ("RANK", "9"), ("COUNT", "0"), ("COUNT", "2"), ("RANK", "2", "COUNT", "2"),
                 ("RANK", "-2", "COUNT", "0"), ("MAXLEN", "4"), ("MAXLEN", "4", "COUNT", "0"),
                 ("RANK", "-1", "MAXLEN", "3", "COUNT", "0"), ("RANK", "0"),
                 ("RANK", "x"), ("COUNT", "-1"), ("COUNT", "x"), ("MAXLEN", "-1"),
                 ("MAXLEN", "x"), ("RANK",), ("FOO", "1"), ("COUNT", "1", "RANK", "-1"),
                 ("RANK", "-9223372036854775808"), ("RANK", "9223372036854775807"),
                 ("rank", "2", "count", "1", "maxlen", "0")]:
        diff("LPOS", "l", "a", *opts)
        diff("LPOS", "l", "zz", *opts)
        diff("LPOS", "nokey", "a", *opts)


def test_moves(diff):
    diff.many([
        ("RPUSH", "src", "1", "2", "3"),
        ("LMOVE", "src", "dst", "LEFT", "RIGHT"), ("LMOVE", "src", "dst", "right", "left"),
        ("LRANGE", "src", "0", "-1"), ("LRANGE", "dst", "0", "-1"),
        ("LMOVE", "dst", "dst", "left", "right"), ("LRANGE", "dst", "0", "-1"),
        ("RPOPLPUSH", "src", "src"), ("RPOPLPUSH", "src", "dst"), ("EXISTS", "src"),
        ("RPOPLPUSH", "src", "dst"), ("LMOVE", "nokey", "dst", "left", "left"),
        ("LRANGE", "dst", "0", "-1"),
        ("RPUSH", "one", "x"), ("LMOVE", "one", "one", "left", "left"), ("LRANGE", "one", "0", "-1"),
        ("LMPOP", "3", "nokey", "dst", "one", "LEFT", "COUNT", "2"),
        ("LMPOP", "2", "nokey", "one", "RIGHT", "COUNT", "5"), ("EXISTS", "one"),
        ("LMPOP", "1", "nokey", "left"),
    ])


def test_blocking_forms_answer_at_once(diff):
    diff.many([
        ("RPUSH", "a", "1", "2", "3"),
        ("BLPOP", "nokey", "a", "0"), ("BRPOP", "a", "nokey", "0.5"),
        ("BLMPOP", "0", "2", "nokey", "a", "RIGHT", "COUNT", "5"), ("EXISTS", "a"),
        ("RPUSH", "a", "1", "2"), ("BLMOVE", "a", "b", "RIGHT", "LEFT", "0"),
        ("BRPOPLPUSH", "a", "b", "0"), ("LRANGE", "b", "0", "-1"), ("EXISTS", "a"),
    ])


def test_timeout_argument_errors(diff):
    for t in ["-1", "abc", "inf", "-inf", "nan", "1e30", "-1e30", "", " 1", "1 ", "0x",
              "-0.1x", "1e400"]:
        diff("BLPOP", "k", t)
        diff("BRPOP", "k", t)
        diff("BLMOVE", "k", "d", "left", "left", t)
        diff("BRPOPLPUSH", "k", "d", t)
        diff("BLMPOP", t, "1", "k", "left")
    # argument errors of BLMPOP come before the timeout's
    diff("BLMPOP", "-1", "0", "k", "left")
    diff("BLMPOP", "-1", "1", "k", "middle")
    diff("BLMPOP", "-1", "1", "k", "left", "COUNT", "0")
    diff("BLMOVE", "k", "d", "up", "left", "-1")


def test_short_timeouts(diff):
    for args in [("BLPOP", "k", "0.01"), ("BRPOP", "k", "k2", "0.001"),
                 ("BLMOVE", "k", "d", "left", "left", "0.01"), ("BRPOPLPUSH", "k", "d", "0.01"),
                 ("BLMPOP", "0.01", "1", "k", "left"), ("BLPOP", "k", "0.0001"),
                 ("BLPOP", "k", "1e-300"), ("BLPOP", "k", "0x1p-10")]:
        diff(*args)


def test_resp3_shapes(diff3):
    diff3.many([
        ("LPOP", "nokey"), ("LPOP", "nokey", "2"), ("LPOP", "nokey", "0"),
        ("RPUSH", "l", "a", "b"), ("LPOP", "l", "0"), ("LPOP", "l", "1"),
        ("LINDEX", "l", "5"), ("LPOS", "l", "zz"), ("LPOS", "l", "zz", "COUNT", "0"),
        ("LMPOP", "1", "nokey", "left"), ("LMOVE", "nokey", "x", "left", "left"),
        ("BLPOP", "nokey", "0.01"), ("BLMOVE", "nokey", "x", "left", "left", "0.01"),
        ("BLMPOP", "0.01", "1", "nokey", "left"), ("LMPOP", "1", "l", "left"),
    ])


def test_inside_multi_blocking_commands_do_not_block(diff, diff3):
    for d in (diff, diff3):
        d.raw(b"MULTI\r\n", 1)
        for cmd in [b"BLPOP nokey 0", b"BRPOP nokey 0", b"BLMOVE nokey d left left 0",
                    b"BRPOPLPUSH nokey d 0", b"BLMPOP 0 1 nokey left", b"RPUSH k v",
                    b"BLPOP nokey k 0"]:
            d.raw(cmd + b"\r\n", 1)
        d.raw(b"EXEC\r\n", 1)


def test_long_list_ranges(diff):
    rng = random.Random(7)
    diff("RPUSH", "big", *[str(i) for i in range(1500)])
    for _ in range(60):
        a, b = rng.randint(-1600, 1600), rng.randint(-1600, 1600)
        diff("LRANGE", "big", str(a), str(b))
        diff("LINDEX", "big", str(a))
    diff("LSET", "big", "1000", "changed")
    diff("LINSERT", "big", "before", "1200", "ins")
    diff("LPOS", "big", "1400", "RANK", "-1")
    diff("LPOS", "big", "changed", "MAXLEN", "900")
    diff("LTRIM", "big", "100", "-100")
    diff("LRANGE", "big", "-5", "-1")
    diff("LREM", "big", "-2", "500")
    diff("LLEN", "big")
    diff("OBJECT", "ENCODING", "big")


BIG_ELEMS = ["a", "b", "7", "-12", "y" * 70, "z" * 3000, "w" * 9000, "12345678901"]


def test_many_node_lists_under_random_edits(diff):
    """Lists of many quicklist nodes (past one 8 KB listpack): every edit lands in some
    node in the middle. DUMP splits a pushed list's nodes as Redis does (after edits
    Redis's node boundaries depend on its history, which pykv does not replay)."""
    rng = random.Random(11)
    for key in ("b1", "b2"):
        diff("RPUSH", key, *[rng.choice(BIG_ELEMS) + str(i % 50) for i in range(4000)])
        diff("DUMP", key)
    for _ in range(300):
        k, k2 = rng.choice(["b1", "b2"]), rng.choice(["b1", "b2"])
        n = 4500
        i, j = str(rng.randint(-n, n)), str(rng.randint(-n, n))
        e = rng.choice(BIG_ELEMS) + str(rng.randint(0, 49))
        cmd = rng.choice([
            ("LINDEX", k, i), ("LRANGE", k, i, j), ("LSET", k, i, e),
            ("LINSERT", k, rng.choice(["BEFORE", "AFTER"]), e, rng.choice(BIG_ELEMS)),
            ("LREM", k, str(rng.randint(-3, 3)), e), ("LPOS", k, e, "RANK", "-2", "COUNT", "3"),
            ("LPOS", k, e, "MAXLEN", str(rng.randint(0, 3000))),
            ("LPUSH", k, e, e), ("RPUSH", k, e), ("LPOP", k, str(rng.randint(1, 300))),
            ("RPOP", k, str(rng.randint(1, 300))), ("LPOP", k), ("RPOP", k),
            ("LMOVE", k, k2, rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"])),
            ("LLEN", k),
        ])
        if cmd[0] == "LPOP" and len(cmd) == 3 and rng.random() < 0.3:
            cmd = ("LTRIM", k, str(rng.randint(0, 200)), str(rng.randint(-200, -1)))
        diff(*cmd)
        if rng.random() < 0.05:
            diff("RPUSH", k, *[rng.choice(BIG_ELEMS) for _ in range(500)])
    for key in ("b1", "b2"):
        diff("LRANGE", key, "0", "-1")
        diff("OBJECT", "ENCODING", key)


def test_encoding_is_always_quicklist(diff):
    diff("RPUSH", "l", "a")
    diff("OBJECT", "ENCODING", "l")
    diff("CONFIG", "SET", "list-max-listpack-size", "1")
    try:
        diff("RPUSH", "l2", "a", "b", "c")
        diff("OBJECT", "ENCODING", "l2")
    finally:
        diff("CONFIG", "SET", "list-max-listpack-size", "-2")


def _random_command(rng: random.Random) -> tuple:
    keys = ["l1", "l2", "l3", "str"]
    k = rng.choice(keys)
    k2 = rng.choice(keys)
    e = rng.choice(ELEMS)
    i = str(rng.randint(-6, 6))
    j = str(rng.randint(-6, 6))
    side = rng.choice(["LEFT", "RIGHT"])
    side2 = rng.choice(["left", "right"])
    choices = [
        lambda: ("LPUSH", k, *rng.choices(ELEMS, k=rng.randint(1, 3))),
        lambda: ("RPUSH", k, *rng.choices(ELEMS, k=rng.randint(1, 3))),
        lambda: ("LPUSHX", k, e), lambda: ("RPUSHX", k, e, e),
        lambda: ("LPOP", k), lambda: ("RPOP", k), lambda: ("LPOP", k, str(rng.randint(0, 4))),
        lambda: ("RPOP", k, str(rng.randint(0, 4))), lambda: ("LLEN", k),
        lambda: ("LINDEX", k, i), lambda: ("LRANGE", k, i, j), lambda: ("LTRIM", k, i, j),
        lambda: ("LSET", k, i, e), lambda: ("LREM", k, str(rng.randint(-2, 2)), e),
        lambda: ("LINSERT", k, rng.choice(["BEFORE", "AFTER"]), e, rng.choice(ELEMS)),
        lambda: ("LPOS", k, e, "RANK", rng.choice(["1", "-1", "2", "-2"]), "COUNT",
                 str(rng.randint(0, 3)), "MAXLEN", str(rng.randint(0, 5))),
        lambda: ("LPOS", k, e), lambda: ("LMOVE", k, k2, side, side2),
        lambda: ("RPOPLPUSH", k, k2),
        lambda: ("LMPOP", "2", k, k2, side, "COUNT", str(rng.randint(1, 3))),
        lambda: ("BLPOP", k, k2, "0.001"), lambda: ("BRPOP", k, "0.001"),
        lambda: ("BLMOVE", k, k2, side, side2, "0.001"),
        lambda: ("BLMPOP", "0.001", "2", k, k2, side),
        lambda: ("EXISTS", k), lambda: ("TYPE", k),
    ]
    return rng.choice(choices)()


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences(diff, seed):
    rng = random.Random(seed)
    diff("SET", "str", "v")
    blocking = {"BLPOP", "BRPOP", "BLMOVE", "BLMPOP"}
    for _ in range(250):
        cmd = _random_command(rng)
        if cmd[0] in blocking:
            # only when something can be served at once (a real timeout costs ~100 ms)
            real, _ = diff.both("LLEN", cmd[1])
            if real in (b":0\r\n",) or real.startswith(b"-"):
                continue
        diff(*cmd)
    for k in ("l1", "l2", "l3"):
        diff("LRANGE", k, "0", "-1")


def _quicklist_elements() -> list[str]:
    # packed integers of every width, and strings of every entry header size
    ints = [0, 1, -1, 127, 128, -4096, 4095, 32767, -32768, 8388607, -8388608, 2**31 - 1,
            -2**31, 2**63 - 1, -2**63]
    strs = ["", "a", "x" * 63, "y" * 64, "z" * 4095, "w" * 4096, "007", "-0", "1.5",
            "9223372036854775808"]
    rng = random.Random(15)
    return [str(rng.choice(ints)) if rng.random() < 0.5 else rng.choice(strs)
            for _ in range(3000)]


def test_lrange_over_quicklist_nodes_resp2_resp3_scripts_and_multi(diff, diff3):
    """LRANGE writes a quicklist's entries straight into the reply buffer: the same bytes
    as Redis in RESP2 and RESP3, and the same values for scripts, EXEC and CLIENT REPLY."""
    elems = _quicklist_elements()
    ranges = [("0", "-1"), ("0", "99"), ("-600", "-1"), ("1000", "1599"), ("2999", "5000"),
              ("3000", "4000"), ("-5000", "0"), ("17", "17"), ("5", "2")]
    for d in (diff, diff3):
        for i in range(0, len(elems), 500):
            d("RPUSH", "ql", *elems[i:i + 500])
        d("OBJECT", "ENCODING", "ql")
        for start, stop in ranges:
            d("LRANGE", "ql", start, stop)
        for resp in ("2", "3"):
            d("EVAL", f"redis.setresp({resp}); return redis.call('LRANGE', KEYS[1], 10, 400)",
              "1", "ql")
        d("MULTI")
        d("LRANGE", "ql", "0", "50")
        d("LRANGE", "ql", "-50", "-1")
        d("EXEC")
        d("RPUSH", "small", "1", "a", "-7")
        d("LRANGE", "small", "0", "-1")
        d("LRANGE", "small", "1", "1")
    for d in (diff, diff3):  # CLIENT REPLY SKIP drops exactly the LRANGE's reply
        d.raw(b"CLIENT REPLY SKIP\r\nLRANGE ql 0 10\r\nPING\r\n", replies=1)
