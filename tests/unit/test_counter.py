"""INCR's C arithmetic (pykv/commands/_counter.pyx) against Python integers and string2ll."""
from __future__ import annotations

import random

import pytest

from pykv import errors
from pykv.commands._counter import counter_add
from pykv.protocol._parser import string2ll

LLONG_MAX = (1 << 63) - 1
LLONG_MIN = -(1 << 63)


def _expected(value: bytes | bytearray | None, delta: int) -> bytes | object:
    current = 0 if value is None else string2ll(bytes(value))
    if current is None:
        return errors.NOT_INTEGER
    if not LLONG_MIN <= current + delta <= LLONG_MAX:
        return errors.INCR_OVERFLOW
    return b"%d" % (current + delta)


def _got(value: bytes | bytearray | None, delta: int) -> bytes | object:
    try:
        return counter_add(value, delta)
    except errors.ErrorReply as exc:
        return exc


def _texts(rng: random.Random) -> list[bytes]:
    edge = [b"0", b"1", b"-1", b"9", b"10", b"99", b"-0", b"00", b"01", b"", b"+1", b" 1",
            b"1 ", b"1a", b"-", b"123456789012345678", b"999999999999999999",
            b"1000000000000000000", b"%d" % LLONG_MAX, b"%d" % LLONG_MIN,
            b"%d" % (LLONG_MAX + 1), b"%d" % (LLONG_MIN - 1), b"1" * 25]
    return edge + [b"%d" % rng.randrange(-10 ** rng.randrange(1, 20), 10 ** rng.randrange(1, 20))
                   for _ in range(300)]


def test_counter_add_matches_python_integers():
    rng = random.Random(7)
    deltas = [1, -1, 0, 1000, -1000, LLONG_MAX, LLONG_MIN, LLONG_MAX - 5, LLONG_MIN + 5]
    for text in _texts(rng):
        for delta in deltas + [rng.randrange(LLONG_MIN, LLONG_MAX) for _ in range(3)]:
            for value in (text, bytearray(text)):
                assert _got(value, delta) == _expected(value, delta), (value, delta)
    for delta in deltas:
        assert _got(None, delta) == b"%d" % delta


def test_counter_add_refuses_other_types():
    with pytest.raises(errors.ErrorReply) as exc:
        counter_add([b"1"], 1)
    assert exc.value == errors.WRONGTYPE
