"""pykv.storage._fieldtable.FieldTable against a dict model: growth, shrinking,
delete-heavy churn, HSCAN coverage while the table resizes, and random picks."""
from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace

import pytest

from pykv.storage._fieldtable import FieldTable
from pykv.storage.hash_type import HashValue


def _full_scan(table: FieldTable, count: int, between=None) -> list[bytes]:
    """Every field a full HSCAN returns (``between(step)`` runs after each call)."""
    cursor, fields, step = 0, [], 0
    while True:
        cursor, flat = table.scan(cursor, count)
        assert len(flat) % 2 == 0
        fields += flat[::2]
        if between is not None:
            between(step)
        step += 1
        if cursor == 0:
            return fields


def test_dict_interface_matches_a_dict():
    t, model = FieldTable(), {}
    assert len(t) == 0 and not t and t.get(b"x") is None and t.random_field() is None
    t[b"a"] = b"1"
    model[b"a"] = b"1"
    assert t.set(b"b", b"") and not t.set(b"b", b"22")  # new, then an update
    model[b"b"] = b"22"
    t[b""] = b"empty field"
    model[b""] = b"empty field"
    assert t == model and dict(t.items()) == model and len(t) == 3
    assert sorted(t) == sorted(model) and sorted(t.values()) == sorted(model.values())
    assert t[b"b"] == b"22" and b"b" in t and b"zz" not in t and (b"a", b"1") in t.items()
    with pytest.raises(KeyError):
        t[b"zz"]
    assert t.pop(b"a") == b"1" and t.pop(b"a", None) is None
    with pytest.raises(KeyError):
        t.pop(b"a")
    del t[b"b"]
    with pytest.raises(KeyError):
        del t[b"b"]
    assert t == {b"": b"empty field"}
    assert FieldTable({b"x": b"1"}) == {b"x": b"1"}
    assert FieldTable([(b"x", b"1"), (b"x", b"2")]) == {b"x": b"2"}  # last one wins


def test_values_change_length_in_place_and_reads_are_copies():
    t = FieldTable()
    for size in (0, 1, 5, 100, 3, 1000, 0):
        t[b"f"] = b"v" * size
        assert t[b"f"] == b"v" * size and len(t) == 1
    value = t.get(b"f")
    t[b"f"] = b"other"
    assert value == b"" and t[b"f"] == b"other"
    t[b"binary\x00field"] = b"\x00\xff" * 40
    assert t[b"binary\x00field"] == b"\x00\xff" * 40


def test_grow_shrink_and_delete_heavy_churn_against_a_dict():
    rng = random.Random(7)
    t, model = FieldTable(), {}
    for round_ in range(6):
        for _ in range(3000):
            f = b"f%d" % rng.randrange(5000)
            v = b"v%d" % rng.randrange(10 ** rng.randrange(1, 12))
            t[f] = v
            model[f] = v
        size_full = t.stats()[0]
        victims = rng.sample(sorted(model), len(model) * 9 // 10)
        for f in victims:
            assert t.pop(f) == model.pop(f)
        assert t == model, round_
        size, fill, used = t.stats()
        assert used == len(model) and fill * 4 <= size * 3
        assert size < size_full  # the deletes shrank the index
    for f in list(model):
        del t[f]
    assert len(t) == 0 and t.stats()[0] == 8 and list(t) == []


def test_copy_is_independent():
    t = FieldTable((b"f%d" % i, b"v%d" % i) for i in range(100))
    c = t.copy()
    c[b"f1"] = b"changed"
    del c[b"f2"]
    t[b"new"] = b"x"
    assert t[b"f1"] == b"v1" and b"f2" in t and b"new" not in c and len(c) == 99


def test_iteration_refuses_a_resize_meanwhile():
    t = FieldTable((b"f%d" % i, b"v") for i in range(10))
    it = iter(t)
    next(it)
    for i in range(100):
        t[b"g%d" % i] = b"v"
    with pytest.raises(RuntimeError):
        next(it)


def test_full_scan_returns_every_field_once_without_changes():
    t = FieldTable((b"f%d" % i, b"v%d" % i) for i in range(1000))
    for count in (1, 10, 1000):
        fields = _full_scan(t, count)
        assert sorted(fields) == sorted(t) and len(fields) == len(t)
    _, flat = t.scan(0, 10 ** 6)
    assert dict(zip(flat[::2], flat[1::2], strict=True)) == t


@pytest.mark.parametrize("seed", range(3))
def test_scan_returns_fields_present_throughout_while_resizing(seed):
    """Redis's guarantee across growth and shrinking between the calls."""
    rng = random.Random(seed)
    t = FieldTable((b"keep%d" % i, b"v") for i in range(300))
    keep = set(t)
    churn: list[bytes] = []

    def between(step: int) -> None:
        if step % 7 < 4:  # grow: add many new fields
            for _ in range(rng.randrange(50, 400)):
                f = b"new%d" % rng.randrange(10 ** 9)
                t[f] = b"x"
                churn.append(f)
        else:  # shrink: drop most of the added ones
            rng.shuffle(churn)
            while len(churn) > 20:
                t.pop(churn.pop(), None)

    sizes = set()
    fields = _full_scan(t, 5, lambda step: (between(step), sizes.add(t.stats()[0])))
    assert keep <= set(fields)
    assert len(sizes) > 2  # the index really resized during the iteration


def test_random_field_is_uniform():
    rng_state = random.getstate()
    random.seed(1234)
    try:
        t = FieldTable((b"f%d" % i, b"v") for i in range(50))
        for i in range(50, 400):  # holes: the picks must still be uniform over live fields
            t[b"f%d" % i] = b"v"
        for i in range(50, 400):
            del t[b"f%d" % i]
        counts = Counter(t.random_field() for _ in range(20000))
        assert set(counts) == set(t)
        assert min(counts.values()) > 300 and max(counts.values()) < 500  # mean 400
        picks = Counter(t.picks(20000, False, False))
        assert set(picks) == set(t) and min(picks.values()) > 300
    finally:
        random.setstate(rng_state)


def test_picks_distinct_and_with_values():
    t = FieldTable((b"f%d" % i, b"v%d" % i) for i in range(300))
    for count in (1, 5, 99, 101, 250, 299):  # both of Redis's distinct strategies
        fields = t.picks(count, True, False)
        assert len(fields) == len(set(fields)) == count and set(fields) <= set(t)
        flat = t.picks(count, True, True)
        assert len(flat) == 2 * count and len(set(flat[::2])) == count
        assert all(t[f] == v for f, v in zip(flat[::2], flat[1::2], strict=True))
    flat = t.picks(1000, False, True)
    assert len(flat) == 2000 and all(t[f] == v for f, v in zip(flat[::2], flat[1::2], strict=True))
    assert FieldTable().picks(5, False, True) == []


def test_hash_value_converts_to_a_field_table_at_the_thresholds():
    cfg = SimpleNamespace(hash_max_listpack_entries=128, hash_max_listpack_value=64)
    h = HashValue()
    for i in range(cfg.hash_max_listpack_entries):
        h.set_pairs(cfg, [b"", b"", b"f%d" % i, b"v"], 2)
    assert h.encoding(cfg) == b"listpack"
    h.set_pairs(cfg, [b"", b"", b"one more", b"v"], 2)
    assert h.encoding(cfg) == b"hashtable" and type(h.d) is FieldTable
    assert len(h) == cfg.hash_max_listpack_entries + 1 and h.d[b"f0"] == b"v"
    long = HashValue()
    long.set_computed(cfg, b"f", b"1" * (cfg.hash_max_listpack_value + 1))
    assert type(long.d) is FieldTable and long.copy().d == long.d
    assert long.random_field() == b"f" and long.delete(b"f") and not long.delete(b"f")
