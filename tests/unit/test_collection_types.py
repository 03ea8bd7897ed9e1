"""Unit tests for the list, hash and set value types (pure logic, no server).

Range helpers are checked against a plain-list model of Redis's index rules; encoding
rules against the thresholds Redis 7.0 applies (the same transitions are checked against
real redis-server's OBJECT ENCODING in tests/compat).
"""
from __future__ import annotations

import random
from types import SimpleNamespace

from pykv.storage.hash_type import HashValue
from pykv.storage.list_type import ListValue
from pykv.storage.set_type import SetValue, is_int_member


def config(**over):
    base = dict(hash_max_listpack_entries=128, hash_max_listpack_value=64,
                set_max_intset_entries=512, list_max_listpack_size=-2)
    base.update(over)
    return SimpleNamespace(**base)


def model_range(items, start, stop):
    n = len(items)
    if start < 0:
        start += n
    if stop < 0:
        stop += n
    start = max(start, 0)
    if start > stop or start >= n:
        return []
    return items[start:min(stop, n - 1) + 1]


def test_list_slices_match_the_model():
    rng = random.Random(1)
    for n in (0, 1, 2, 7, 50):
        items = [b"%d" % i for i in range(n)]
        lv = ListValue(items)
        for _ in range(200):
            a, b = rng.randint(-60, 60), rng.randint(-60, 60)
            bounds = lv.normalise_range(a, b)
            got = [] if bounds is None else lv.slice(*bounds)
            assert got == model_range(items, a, b), (n, a, b)
            if bounds is not None:
                assert lv.slice_reversed(*bounds) == got[::-1]


def test_list_trim_matches_the_model():
    rng = random.Random(2)
    for _ in range(300):
        n = rng.randint(0, 40)
        items = [b"%d" % i for i in range(n)]
        a, b = rng.randint(-45, 45), rng.randint(-45, 45)
        lv = ListValue(items)
        bounds = lv.normalise_range(a, b)
        removed = lv.trim(*bounds) if bounds is not None else lv.trim(1, 0)
        expected = model_range(items, a, b)
        assert list(lv.items) == expected
        assert removed == n - len(expected)


def test_list_pop_many_and_copy():
    lv = ListValue([b"a", b"b", b"c"])
    copy = lv.copy()
    assert lv.pop_many(2, left=False) == [b"c", b"b"]
    assert lv.pop_many(5, left=True) == [b"a"]
    assert list(copy.items) == [b"a", b"b", b"c"]
    assert copy.encoding(config()) == b"quicklist"
    assert copy.type_name == b"list" and len(copy) == 3 and copy.memory_usage() > 0


def test_hash_converts_on_value_length_and_size_and_never_back():
    cfg = config(hash_max_listpack_entries=3, hash_max_listpack_value=4)
    h = HashValue()
    assert h.set_pairs(cfg, [b"HSET", b"k", b"a", b"1234", b"b", b"2"], 2) == 2
    assert h.encoding(cfg) == b"listpack"
    h.set_pairs(cfg, [b"HSET", b"k", b"c", b"3"], 2)
    assert h.encoding(cfg) == b"listpack"
    h.set_pairs(cfg, [b"HSET", b"k", b"d", b"4"], 2)
    assert h.encoding(cfg) == b"hashtable"
    for f in (b"a", b"b", b"c"):
        h.delete(f)
    assert h.encoding(cfg) == b"hashtable"
    h2 = HashValue()
    h2.set_pairs(cfg, [b"HSET", b"k", b"a", b"12345"], 2)
    assert h2.encoding(cfg) == b"hashtable"
    h3 = HashValue()
    h3.set_computed(cfg, b"f", b"1.23456")
    assert h3.encoding(cfg) == b"hashtable"
    assert h3.copy().encoding(cfg) == b"hashtable"
    assert HashValue.build([(b"a", b"1")], cfg).encoding(cfg) == b"listpack"
    assert HashValue.build([(b"a", b"12345")], cfg).encoding(cfg) == b"hashtable"


def test_hash_keeps_insertion_order_like_a_listpack():
    cfg = config()
    h = HashValue()
    h.set_pairs(cfg, [b"", b"", b"b", b"1", b"a", b"2"], 2)
    h.set_pairs(cfg, [b"", b"", b"b", b"3", b"c", b"4"], 2)
    assert list(h.d.items()) == [(b"b", b"3"), (b"a", b"2"), (b"c", b"4")]
    assert h.random_field() in h.d


def test_int_members_follow_string2ll():
    for m in (b"0", b"1", b"-1", b"9223372036854775807", b"-9223372036854775808"):
        assert is_int_member(m)
    for m in (b"01", b"-0", b"+1", b" 1", b"1 ", b"", b"9223372036854775808", b"1.0", b"a"):
        assert not is_int_member(m)


def test_set_encoding_rules():
    cfg = config(set_max_intset_entries=3)
    s = SetValue()
    assert s.add_many([b"3", b"1", b"2"], cfg) == 3
    assert s.encoding(cfg) == b"intset"
    assert list(s.ordered()) == [b"1", b"2", b"3"]
    s.add(b"4", cfg)
    assert s.encoding(cfg) == b"hashtable"
    s.remove(b"4")
    assert s.encoding(cfg) == b"hashtable"
    t = SetValue()
    t.add_many([b"1", b"x"], cfg)
    t.remove(b"x")
    assert t.encoding(cfg) == b"hashtable"
    assert SetValue.build([b"5", b"-1"], cfg).encoding(cfg) == b"intset"
    assert SetValue.build([b"5", b"a"], cfg).encoding(cfg) == b"hashtable"
    assert SetValue.build([b"1", b"2", b"3", b"4"], cfg).encoding(cfg) == b"hashtable"


def test_set_random_picks_are_live_and_fair_enough():
    cfg = config()
    s = SetValue()
    s.add_many([b"m%d" % i for i in range(1000)], cfg)
    for i in range(900):
        s.remove(b"m%d" % i)
    seen = {s.random_member() for _ in range(2000)}
    assert seen == {b"m%d" % i for i in range(900, 1000)}
    picks = s.random_distinct(10)
    assert len(set(picks)) == 10 and set(picks) <= set(s.s)
    many = s.random_distinct(90)
    assert len(set(many)) == 90 and set(many) <= set(s.s)


def test_set_and_hash_bookkeeping_is_made_on_first_use():
    cfg = config(set_max_intset_entries=2)
    s = SetValue()
    s.add_many([b"a", b"b", b"c"], cfg)
    assert s.aux is None and s.version == 0 and s.scan_index is None
    first = s.random_member()  # the snapshot makes the bookkeeping
    assert first in {b"a", b"b", b"c"} and s.aux.snap is not None
    s.scan_index = "index"
    s.add_many([b"d"], cfg)
    assert s.aux.snap is None and s.version == 1 and s.scan_index == "index"
    s.add_many([b"d"], cfg)  # nothing added: the version stays
    assert s.version == 1
    assert {s.random_member() for _ in range(200)} == {b"a", b"b", b"c", b"d"}
    assert s.copy().aux is None

    h = HashValue()
    h.set_pairs(config(), [b"HSET", b"k", b"f", b"1", b"g", b"2"], 2)
    assert h.aux is None and h.version == 0
    assert sorted(h.keys_snapshot()) == [b"f", b"g"]
    h.set_pairs(config(), [b"HSET", b"k", b"e", b"3"], 2)
    assert h.version == 1 and sorted(h.keys_snapshot()) == [b"e", b"f", b"g"]
    assert h.delete(b"e") and sorted(h.keys_snapshot()) == [b"f", b"g"]
    assert h.version == 1  # removals leave a scan's version alone


def test_hashtable_set_members_are_a_dict_then_a_set_past_big_set():
    from pykv.storage.set_type import BIG_SET, Members

    cfg = config()
    s = SetValue()
    assert s.add_many([b"x", b"y", b"x"], cfg) == 2
    assert type(s.s) is Members and s.encoding(cfg) == b"hashtable"
    assert s.remove(b"x") and not s.remove(b"x") and list(s.ordered()) == [b"y"]
    assert type(s.copy().s) is Members and set(s.copy().s) == {b"y"}
    assert s.add_many([b"m%d" % i for i in range(BIG_SET)], cfg) == BIG_SET
    assert type(s.s) is set and len(s) == BIG_SET + 1 and b"m7" in s.s
    assert s.add_many([b"m7", b"new"], cfg) == 1 and s.remove(b"new")
    assert type(s.copy().s) is set and type(SetValue.build(s.s, cfg).s) is set
    small = SetValue.build({b"a", b"b"}, cfg)
    assert type(small.s) is Members and set(small.s) == {b"a", b"b"}
