"""SORT / SORT_RO against real redis-server 7.0, byte for byte."""
from __future__ import annotations

import random


def test_sort_lists(diff):
    diff("RPUSH", "l", "3", "1", "2", "10", "-5", "2.5", "1e2", " 7")
    diff("RPUSH", "words", "banana", "apple", "cherry", "apple", "Zed")
    diff("MSET", "w_3", "c", "w_1", "a", "w_2", "b", "w_10", "j", "w_-5", "z")
    diff("HSET", "h_3", "f", "30", "n", "three")
    diff("HSET", "h_1", "f", "10", "n", "one")
    diff("HSET", "h_2", "f", "-2")
    diff.many([
        ("SORT", "l"), ("SORT", "l", "DESC"), ("SORT", "l", "LIMIT", "1", "3"),
        ("SORT", "l", "LIMIT", "-1", "3"), ("SORT", "l", "LIMIT", "2", "-1"),
        ("SORT", "l", "LIMIT", "20", "3"), ("SORT", "l", "LIMIT", "1", "0"),
        ("SORT", "l", "ALPHA"), ("SORT", "l", "ALPHA", "DESC", "LIMIT", "0", "2"),
        ("SORT", "words"), ("SORT", "words", "ALPHA"), ("SORT", "words", "ALPHA", "DESC"),
        ("SORT", "l", "BY", "nosort"), ("SORT", "l", "BY", "nosort", "DESC"),
        ("SORT", "l", "BY", "nosort", "LIMIT", "2", "3"),
        ("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "2", "3"),
        ("SORT", "l", "BY", "w_*", "ALPHA"), ("SORT", "l", "BY", "w_*", "ALPHA", "DESC"),
        ("SORT", "l", "BY", "w_*"), ("SORT", "l", "BY", "h_*->f"),
        ("SORT", "l", "BY", "h_*->f", "GET", "#", "GET", "h_*->n", "GET", "w_*"),
        ("SORT", "l", "BY", "h_*->", "GET", "h_*->"),
        ("SORT", "l", "GET", "#", "GET", "nostar"), ("SORT", "l", "LIMIT", "x", "1"),
        ("SORT", "l", "FOO"), ("SORT", "l", "LIMIT", "1"), ("SORT", "l", "BY"),
        ("SORT", "l", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("SORT", "l", "GET", "w_*", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
        ("SORT", "l", "LIMIT", "0", "0", "STORE", "dst"), ("EXISTS", "dst"),
        ("SORT_RO", "l", "DESC"), ("SORT_RO", "l", "STORE", "dst"),
        ("SORT", "nokey"), ("SORT", "nokey", "STORE", "dst"),
        ("SET", "str", "x"), ("SORT", "str"), ("SORT", "str", "FOO"),
        ("HSET", "hash", "a", "b"), ("SORT", "hash"),
    ])


def test_sort_sets_and_zsets(diff):
    diff("SADD", "ints", "5", "-1", "3", "100", "0")
    diff("SADD", "strs", "pear", "fig", "kiwi")
    diff("ZADD", "z", "1", "c", "2", "a", "3", "b", "0", "d")
    diff("MSET", "k_c", "3", "k_a", "1", "k_b", "2")
    diff.many([
        ("SORT", "ints"), ("SORT", "ints", "DESC", "LIMIT", "1", "2"), ("SORT", "strs", "ALPHA"),
        ("SORT", "strs"), ("SORT", "strs", "BY", "nosort", "STORE", "dst"),
        ("LRANGE", "dst", "0", "-1"), ("SORT", "z", "ALPHA"), ("SORT", "z", "BY", "nosort"),
        ("SORT", "z", "BY", "nosort", "DESC"), ("SORT", "z", "BY", "nosort", "LIMIT", "1", "2"),
        ("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"), ("SORT", "z", "BY", "k_*"),
        ("SORT", "z", "BY", "k_*", "DESC", "GET", "k_*", "GET", "#"),
        ("SORT", "z", "BY", "nosort", "LIMIT", "10", "2"),
    ])


def test_sort_random(diff):
    rng = random.Random(77)
    values = [str(rng.choice([rng.randrange(-50, 50), rng.random() * 100])) for _ in range(60)]
    diff("RPUSH", "r", *values)
    for v in values:
        diff("SET", f"weight_{v}", str(rng.randrange(10)))
    for _ in range(60):
        opts = []
        if rng.random() < 0.5:
            opts += ["LIMIT", rng.randrange(-2, 70), rng.randrange(-2, 70)]
        if rng.random() < 0.5:
            opts += ["DESC"]
        if rng.random() < 0.3:
            opts += ["BY", rng.choice(["weight_*", "nosort"])]
        if rng.random() < 0.3:
            opts += ["GET", "#", "GET", "weight_*"]
        diff("SORT", "r", *opts)


def test_sort_converts_a_listpack_zset_to_skiplist(diff):
    """Redis 7.0 converts a sorted set for SORT (and SORT_RO), for good: OBJECT ENCODING shows
    it afterwards, whatever the options and even when the sort then fails."""
    for key, cmd in (("a", ("SORT", "a", "BY", "nosort")), ("b", ("SORT_RO", "b", "ALPHA")),
                     ("c", ("SORT", "c")), ("d", ("SORT", "d", "LIMIT", "0", "1", "DESC"))):
        diff("ZADD", key, "1", "x", "2", "y" if key != "c" else "1.5x")
        diff("OBJECT", "ENCODING", key)
        diff(*cmd)
        diff("OBJECT", "ENCODING", key)
    diff("SORT", "nokey")
    diff("SORT", "a", "BOGUS")
    diff("ZADD", "e", "1", "x")
    diff("SORT", "e", "BOGUS")   # a syntax error leaves it alone
    diff("OBJECT", "ENCODING", "e")
