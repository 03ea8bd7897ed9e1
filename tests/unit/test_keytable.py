"""The keyspace's key table: dict behaviour, per-key clock and memory, SCAN, sampling."""
from __future__ import annotations

import random

import pytest

from pykv.storage._keytable import AccessView, IntTable, KeyTable


def test_behaves_as_a_dict_under_random_operations():
    rng = random.Random(7)
    table, model = KeyTable(), {}
    for step in range(60_000):
        key = b"k%d" % rng.randrange(3000)
        op = rng.random()
        if op < 0.5:
            table[key] = model[key] = b"v%d" % step
        elif op < 0.8:
            assert table.pop(key, None) == model.pop(key, None)
        else:
            assert table.get(key) == model.get(key)
            assert (key in table) == (key in model)
        if step % 10_000 == 0:
            assert len(table) == len(model)
            assert dict(table.items()) == model
    for key in list(model):  # deleting most keys shrinks the table; the rest survive
        if rng.random() < 0.97:
            del table[key]
            del model[key]
    assert dict(table.items()) == model
    assert sorted(table) == sorted(model) == sorted(table.keys())
    assert sorted(table.values()) == sorted(model.values())
    assert table.stats()[0] < 4096


def test_dict_interface_edges():
    table = KeyTable()
    assert not table and len(table) == 0 and table.random_key() is None
    with pytest.raises(KeyError):
        table[b"x"]
    with pytest.raises(KeyError):
        del table[b"x"]
    with pytest.raises(KeyError):
        table.pop(b"x")
    assert table.setdefault(b"a", b"1") == b"1" and table.setdefault(b"a", b"2") == b"1"
    table[b"".join([b"a"])] = b"3"  # an equal key, another object: an overwrite
    assert len(table) == 1 and table[b"a"] == b"3"
    assert table.copy() == {b"a": b"3"} and table == {b"a": b"3"}
    assert len(table.items()) == 1 and b"a" in table.keys()


def test_iteration_refuses_a_table_that_changes_size():
    table = KeyTable()
    for i in range(10):
        table[b"%d" % i] = i
    with pytest.raises(RuntimeError):
        for key in table:
            table[key + b"x"] = 1


def test_clock_and_memory_live_in_the_entry():
    table = KeyTable()
    table[b"a"] = b"1"
    assert table.get_access(b"a", -1) == -1  # never recorded
    assert table.get_touch(b"a", 1700000000) == b"1"
    assert table.get_access(b"a") == 1700000000
    table.put_touch(b"b", b"2", 42)
    assert AccessView(table)[b"b"] == 42
    assert table.get_touch(b"zz", 5) is None
    table.set_mem(b"a", 100)
    table.set_mem(b"b", 30)
    table.set_mem(b"a", 60)
    assert table.mem_total == 90 and table.get_mem(b"a") == 60
    table.pop(b"a")  # a key's estimate goes with it
    assert table.mem_total == 30
    table[b"b"] = b"3"  # an overwrite keeps both
    assert table.get_access(b"b") == 42 and table.get_mem(b"b") == 30
    with pytest.raises(KeyError):
        table.set_mem(b"nope", 1)
    table.clear()
    assert table.mem_total == 0 and list(table) == []


def test_int_table_keeps_64_bit_values_inline():
    table = IntTable()
    table[b"a"] = -5
    table[b"b"] = (1 << 63) - 1
    table[b"a"] = 1_700_000_000_000
    assert dict(table.items()) == {b"a": 1_700_000_000_000, b"b": (1 << 63) - 1}
    assert table.pop(b"a") == 1_700_000_000_000 and table.get(b"a", -1) == -1
    with pytest.raises(TypeError):
        table[b"c"] = b"not an int"
    assert b"c" not in table and len(table) == 1


def full_scan(table, count, between=None):
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, batch = table.scan(cursor, count)
        seen.extend(batch)
        calls += 1
        if between is not None:
            between(calls)
        if cursor == 0:
            return seen
        assert calls < 100_000


def test_scan_returns_each_key_once_without_changes():
    table = KeyTable()
    for i in range(5000):
        table[b"k%d" % i] = i
    for count in (1, 10, 100000):
        seen = full_scan(table, count)
        assert sorted(seen) == sorted(table) and len(seen) == 5000
    assert KeyTable().scan(0, 10) == (0, [])


def test_scan_guarantee_across_growth_shrinking_and_deletions():
    rng = random.Random(3)
    table = KeyTable()
    for i in range(4000):
        table[b"s%d" % i] = i
    stable = {b"s%d" % i for i in range(0, 4000, 2)}

    def churn(calls):
        for _ in range(20):  # growth: new keys
            table[b"n%d" % rng.randrange(10**9)] = 0
        if calls % 7 == 0:  # shrinking: most of the others go
            for key in [k for k in table if k not in stable]:
                if rng.random() < 0.9:
                    del table[key]
        odd = b"s%d" % (rng.randrange(2000) * 2 + 1)
        table.pop(odd, None)

    seen = full_scan(table, 5, churn)
    assert stable <= set(seen)


def test_random_key_reaches_every_key():
    table = KeyTable()
    for i in range(50):
        table[b"%d" % i] = i
    for i in range(0, 50, 2):
        del table[b"%d" % i]
    picks = {table.random_key() for _ in range(3000)}
    assert picks == set(table)


def test_replace_found_reuses_the_last_lookup_only_while_it_holds_the_key():
    rng = random.Random(11)
    table, model = KeyTable(), {}
    for step in range(20_000):
        op = rng.random()
        if op < 0.3:
            table.get(b"k%d" % rng.randrange(500))  # the hint: often another key, or none
        elif op < 0.45:
            gone = b"k%d" % rng.randrange(500)  # holes; rebuilds move the entries
            table.pop(gone, None)
            model.pop(gone, None)
        key = b"k%d" % rng.randrange(500)
        value = b"v%d" % step
        table.replace_found(key, value)
        model[key] = value
        assert table.get(key) == value
    assert dict(table.items()) == model


def test_replace_found_keeps_the_entry_clock_and_memory():
    table = KeyTable()
    table.put_touch(b"a", b"1", 1234)
    table.set_mem(b"a", 77)
    assert table.get_touch(b"a", 1234) == b"1"
    table.replace_found(b"a", b"2")
    assert (table.get(b"a"), table.get_access(b"a"), table.get_mem(b"a")) == (b"2", 1234, 77)
