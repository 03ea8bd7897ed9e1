"""The hash-order SCAN cursor: full coverage, the guarantee under changes, cursor parsing."""
from __future__ import annotations

import random

from pykv.storage.scan import ScanIndex, parse_cursor, position, scan


def iterate(source, count=10, index=None, version=None, between=None, **kw):
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, batch = scan(source, cursor, count, index=index, version=version, **kw)
        seen.extend(batch)
        calls += 1
        if between is not None:
            between(calls)
        if cursor == 0:
            return seen, calls
        assert calls < 100_000


def test_full_iteration_returns_each_element_once():
    source = {f"k{i}".encode(): i for i in range(1000)}
    for count in (1, 3, 10, 5000):
        seen, calls = iterate(source, count)
        assert sorted(seen) == sorted(source)
        assert len(seen) == len(source)
        assert calls == max(1, -(-1000 // count)) or count == 5000


def test_empty_and_single():
    assert scan({}, 0, 10) == (0, [])
    assert scan({b"a": 1}, 0, 10) == (0, [b"a"])
    assert scan(set(), 12345, 10) == (0, [])


def test_cursor_positions_are_increasing_and_nonzero():
    source = {i.to_bytes(4, "big") for i in range(500)}
    index = ScanIndex()
    cursor, last = 0, -1
    while True:
        cursor, batch = scan(source, cursor, 7, index=index)
        for e in batch:
            assert position(e) >= last
            last = position(e)
        if cursor == 0:
            break
        assert cursor - 1 > last


def test_colliding_positions_stay_in_one_batch():
    # hash(-1) == hash(-2) in CPython: the two share a position
    source = {-1, -2, 5, 7, 9}
    assert position(-1) == position(-2)
    index = ScanIndex()
    cursor = 0
    batches = []
    while True:
        cursor, batch = scan(source, cursor, 1, index=index)
        batches.append(batch)
        if cursor == 0:
            break
    together = [b for b in batches if -1 in b or -2 in b]
    assert len(together) == 1 and {-1, -2} <= set(together[0])
    assert sorted(x for b in batches for x in b) == sorted(source)


def test_guarantee_with_additions_and_deletions():
    rng = random.Random(5)
    source = {f"s{i}".encode(): 1 for i in range(2000)}
    stable = set(source)
    doomed = [f"s{i}".encode() for i in range(0, 2000, 3)]
    stable -= set(doomed)
    index = ScanIndex()
    version = [0]

    def churn(calls):
        for _ in range(10):
            key = f"new{rng.randrange(10**6)}".encode()
            source[key] = 1
            version[0] += 1
        if doomed:
            source.pop(doomed.pop(), None)
        if calls % 7 == 0:  # a concurrent iteration starts: may rebuild the snapshot
            scan(source, 0, 5, index=index, version=version[0])

    cursor, seen, calls = 0, set(), 0
    while True:
        cursor, batch = scan(source, cursor, 13, index=index, version=version[0])
        seen.update(batch)
        assert all(k in source for k in batch)
        calls += 1
        churn(calls)
        if cursor == 0:
            break
    assert stable <= seen


def test_stale_snapshot_rebuilt_at_cursor_zero():
    source = {b"a": 1}
    index = ScanIndex()
    assert scan(source, 0, 10, index=index, version=1)[1] == [b"a"]
    source[b"b"] = 2
    # same version claimed: the size check still notices the addition
    assert sorted(scan(source, 0, 10, index=index, version=1)[1]) == [b"a", b"b"]
    del source[b"a"]
    source[b"c"] = 3
    assert sorted(scan(source, 0, 10, index=index, version=2)[1]) == [b"b", b"c"]
    # a different container is never served from another's snapshot
    other = {b"z": 1}
    assert scan(other, 0, 10, index=index, version=2)[1] == [b"z"]


def test_match_and_alive_filters():
    source = {b"user:1", b"user:2", b"order:1"}
    seen, _ = iterate(source, 100, match=b"user:*")
    assert sorted(seen) == [b"user:1", b"user:2"]
    seen, _ = iterate(source, 100, alive=lambda e: e != b"user:2")
    assert sorted(seen) == [b"order:1", b"user:1"]


def test_parse_cursor():
    assert parse_cursor(b"0") == 0
    assert parse_cursor(b"") == 0
    assert parse_cursor(b"123") == 123
    assert parse_cursor(b"+5") == 5
    assert parse_cursor(b"-1") == (1 << 64) - 1
    assert parse_cursor(b"18446744073709551615") == (1 << 64) - 1
    assert parse_cursor(b"7\x00junk") == 7
    for bad in (b"18446744073709551616", b" 1", b"1 ", b"abc", b"-", b"+", b"0x1", b"1.0"):
        assert parse_cursor(bad) is None, bad
