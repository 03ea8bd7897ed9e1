"""ZSet range arithmetic against brute force: score/lex spans, rank, strtod rules."""
from __future__ import annotations

import math
import random

from pykv.storage.zset_type import ZSet, parse_lex_range, parse_score_range, strtod_whole


def _zset(pairs):
    z = ZSet()
    for member, score in pairs:
        z.insert(member, score)
    return z


def test_score_span_matches_brute_force():
    rng = random.Random(1)
    scores = [-math.inf, -2.5, -1, 0, 0.5, 1, 1, 2, 3, math.inf]
    z = _zset([(b"m%d" % i, rng.choice(scores)) for i in range(60)])
    bounds = ["-inf", "+inf", "(-inf", "(inf", "0", "(0", "1", "(1", "2.5", "(3", "-1"]
    ordered = list(z.sl)
    for _ in range(500):
        rng_ = parse_score_range(rng.choice(bounds).encode(), rng.choice(bounds).encode())
        lo, hi = z.score_span(rng_)
        expected = [p for p in ordered if rng_.contains(p[0])] if not rng_.empty else []
        assert ordered[lo:hi] == expected


def test_lex_span_matches_brute_force():
    words = [b"", b"a", b"aa", b"ab", b"b", b"ba", b"c", b"\xff"]
    z = _zset([(w, 0.0) for w in words])
    items = [b"-", b"+"] + [p + w for p in (b"(", b"[") for w in words + [b"abc", b"0"]]
    ordered = [m for _, m in z.sl]
    for lo_arg in items:
        for hi_arg in items:
            r = parse_lex_range(lo_arg, hi_arg)
            lo, hi = z.lex_span(r)
            expected = [] if r.empty else [m for m in ordered if r.contains(m)]
            assert ordered[lo:hi] == expected, (lo_arg, hi_arg)
    assert parse_lex_range(b"a", b"+") is None
    assert parse_lex_range(b"+x", b"+") is None


def test_rank_update_remove():
    z = _zset([(b"a", 3.0), (b"b", 1.0), (b"c", 2.0)])
    assert [z.rank(m) for m in (b"a", b"b", b"c", b"x")] == [2, 0, 1, None]
    z.update(b"a", 3.0, 0.0)
    assert z.rank(b"a") == 0 and z.scores[b"a"] == 0.0
    assert z.remove(b"b") and not z.remove(b"b")
    assert z.remove_index_range(0, 2) == 2 and len(z) == 0 and not z.sl


def test_listpack_rules_and_negative_zero():
    z = ZSet()
    z.insert(b"a", -0.0)
    assert math.copysign(1, z.scores[b"a"]) == 1  # a listpack keeps -0 as 0
    z.check_listpack(65, 128, 64)
    assert not z.listpack
    z.insert(b"b", -0.0)
    assert math.copysign(1, z.scores[b"b"]) == -1
    z.convert_if_small(128, 64)
    assert z.listpack and math.copysign(1, z.scores[b"b"]) == 1


def test_strtod_whole_like_c():
    assert strtod_whole(b"") == 0.0
    assert strtod_whole(b" 1.5") == 1.5
    assert strtod_whole(b"1.5 ") is None
    assert strtod_whole(b"0x10") == 16.0
    assert strtod_whole(b"1e999") == math.inf
    assert strtod_whole(b"-Infinity") == -math.inf
    assert strtod_whole(b"nan") is None
    assert strtod_whole(b"1\x00junk") == 1.0
    assert strtod_whole(b".") is None
