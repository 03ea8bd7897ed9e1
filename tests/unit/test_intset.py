"""The packed intset (pykv.storage._intset) against a plain ``set`` model.

Its buffer must be Redis's intset layout: the width of the widest member ever added (an
upgrade is never undone by removals, as in Redis), the count, the members ascending.
"""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykv.storage._intset import IntSet
from pykv.storage.rdb.encoding import intset_decode, intset_encode

_EDGES = [0, 1, -1, 32767, -32768, 32768, -32769, (1 << 31) - 1, -(1 << 31), 1 << 31,
          -(1 << 31) - 1, (1 << 63) - 1, -(1 << 63)]
VALUE = st.sampled_from(_EDGES) | st.integers(-40, 40) | st.integers(-(1 << 63), (1 << 63) - 1)
OPS = st.lists(st.tuples(st.sampled_from(["add", "discard"]), VALUE), max_size=60)


def _width(v: int) -> int:
    return 2 if -(1 << 15) <= v < (1 << 15) else 4 if -(1 << 31) <= v < (1 << 31) else 8


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_intset_matches_a_set(ops: list) -> None:
    s = IntSet()
    model: set[int] = set()
    width = 2
    for op, v in ops:
        member = b"%d" % v
        if op == "add":
            assert s.add(member) is (v not in model)
            model.add(v)
            width = max(width, _width(v))
        else:
            assert s.discard(member) is (v in model)
            model.discard(v)
        assert len(s) == len(model)
    ordered = sorted(model)
    assert s.tolist() == [b"%d" % v for v in ordered] == list(s)
    for v in ordered:
        assert b"%d" % v in s
    assert [s.at(i) for i in range(len(s))] == s.tolist()
    blob = s.blob()
    assert blob == struct.pack("<II", width, len(ordered)) + b"".join(
        v.to_bytes(width, "little", signed=True) for v in ordered)
    assert s.nbytes() == len(blob)
    if ordered:
        assert intset_decode(blob) == s.tolist()
        if width == max(map(_width, ordered)):  # no narrower width was left behind
            assert blob == intset_encode(ordered)
    copy = IntSet.from_blob(blob)
    assert copy.tolist() == s.tolist() and copy.blob() == blob and copy == set(s.tolist())


def test_only_canonical_integers_are_members() -> None:
    s = IntSet([b"5", b"-3"])
    for odd in (b"05", b"+5", b" 5", b"5.0", b"-0", b"", b"9223372036854775808", b"abc"):
        assert odd not in s
        with pytest.raises(ValueError):
            s.add(odd)
    assert not s.discard(b"05") and len(s) == 2
    with pytest.raises(KeyError):
        s.remove(b"7")
    assert 5 not in s  # only bytes members


@pytest.mark.parametrize("width, fits", [(2, 12), (4, 6), (8, 3)])
def test_buffer_moves_between_the_object_and_the_heap(width: int, fits: int) -> None:
    """Up to 32 buffer bytes live inside the 48-byte object; one member more moves the
    buffer to the heap, removing it moves it back; contents and width survive both moves."""
    base = {2: 1, 4: 1 << 20, 8: 1 << 40}[width]
    members = [b"%d" % (base * (i + 1)) for i in range(fits + 1)]
    s = IntSet(members[:fits])
    inline_size = s.__sizeof__()
    assert s.nbytes() == 8 + fits * width <= 32
    s.add(members[fits])
    assert s.__sizeof__() == inline_size + s.nbytes()  # the heap block counts
    assert s.tolist() == members and s.blob()[:4] == struct.pack("<I", width)
    assert s.discard(members[0])
    assert s.__sizeof__() == inline_size and s.tolist() == members[1:]
    for m in members[1:]:
        assert s.discard(m)
    assert len(s) == 0 and s.blob() == struct.pack("<II", width, 0)  # width kept, as Redis


def test_upgrade_across_the_inline_boundary() -> None:
    """10 16-bit members fit inline (28 bytes); one int64 upgrades all to 8 bytes on the heap."""
    s = IntSet([b"%d" % i for i in range(-5, 5)])
    s.add(b"%d" % (-(1 << 63)))
    s.add(b"%d" % ((1 << 63) - 1))
    assert s.nbytes() == 8 + 12 * 8
    assert s.tolist() == [b"%d" % v for v in [-(1 << 63), *range(-5, 5), (1 << 63) - 1]]
    assert IntSet.from_blob(s.blob()).tolist() == s.tolist()
