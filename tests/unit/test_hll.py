"""HLL internals: sparse and dense forms agree; header rules; promotion; corrupt input."""
from __future__ import annotations

import random

import pytest

from pykv.storage import hll


def test_empty_hll_layout_and_count():
    buf = hll.new_hll()
    assert bytes(buf) == b"HYLL\x01" + bytes(11) + b"\x7f\xff"
    assert hll.is_hll(buf) and hll.count(buf) == 0 and hll.cached_count(buf) == 0


def test_sparse_and_dense_agree():
    rng = random.Random(9)
    sparse = hll.new_hll()
    dense = hll.new_hll()
    assert hll.sparse_to_dense(dense) and len(dense) == hll.DENSE_SIZE
    for i in range(3000):
        element = b"%d:%d" % (i, rng.getrandbits(32))
        assert hll.add(sparse, element, 1 << 20) == hll.add(dense, element, 1 << 20)
    assert sparse[4] == hll.SPARSE
    assert hll.count(sparse) == hll.count(dense)
    assert 2800 < hll.count(dense) < 3200
    registers = bytearray(hll.REGISTERS)
    assert hll.merge_into(registers, sparse)
    assert list(registers) == hll.dense_registers(dense)
    assert hll.count_registers(registers) == hll.count(dense)


def test_promotion_past_max_bytes():
    buf = hll.new_hll()
    for i in range(500):
        hll.add(buf, b"e%d" % i, 300)
    assert buf[4] == hll.DENSE and len(buf) == hll.DENSE_SIZE


def test_header_checks_and_corruption():
    assert not hll.is_hll(b"HYLL")
    assert not hll.is_hll(b"HYLX" + bytes(20))
    assert not hll.is_hll(b"HYLL\x00" + bytes(20))  # dense must be exactly sized
    assert not hll.is_hll(b"HYLL\x02" + bytes(20))
    corrupt = bytearray(b"HYLL\x01" + bytes(11) + b"\x7f\xf0")  # covers too few registers
    with pytest.raises(type(hll.CORRUPTED_HLL)):
        hll.count(corrupt)
    assert not hll.merge_into(bytearray(hll.REGISTERS), corrupt)


def test_cached_count_roundtrip():
    buf = hll.new_hll()
    hll.add(buf, b"x", 3000)
    hll.invalidate_cache(buf)
    assert hll.cached_count(buf) is None
    hll.set_cached_count(buf, 12345)
    assert hll.cached_count(buf) == 12345
