"""Window state machines (§3.4 invariants), including random interleavings."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykv.rdma.window import RxWindow, TxWindow, WindowViolation


def test_rx_overrun_is_a_violation():
    rx = RxWindow(100)
    rx.on_write(60)
    with pytest.raises(WindowViolation):
        rx.on_write(41)
    rx.on_write(40)
    assert rx.written == 100


def test_rx_reannounce_only_when_exhausted():
    rx = RxWindow(10)
    rx.on_write(10)
    rx.consume(9)
    assert not rx.exhausted()
    with pytest.raises(ValueError):
        rx.reset()
    rx.consume(1)
    assert rx.exhausted()
    rx.reset()
    assert (rx.written, rx.consumed, rx.announcements) == (0, 0, 1)


def test_rx_cannot_consume_unwritten():
    rx = RxWindow(10)
    rx.on_write(3)
    with pytest.raises(ValueError):
        rx.consume(4)


def test_tx_room_and_reset_on_announce():
    tx = TxWindow()
    assert tx.room() == 0
    tx.announce(0x1000, 100, 7)
    assert tx.take(30) == (0, 0x1000)
    assert tx.take(70) == (30, 0x1000 + 30)
    assert tx.room() == 0
    with pytest.raises(ValueError):
        tx.take(1)
    tx.announce(0x1000, 100, 7)
    assert tx.room() == 100 and tx.offset == 0


@settings(max_examples=150, deadline=None)
@given(length=st.integers(1, 64),
       ops=st.lists(st.tuples(st.sampled_from(["write", "read"]), st.integers(1, 80)),
                    max_size=200))
def test_random_interleavings_keep_invariants(length, ops):
    """A writer and a reader sharing one window through the protocol's rules only."""
    rx, tx = RxWindow(length), TxWindow()
    tx.announce(0, length, 1)
    sent = received = 0
    for op, n in ops:
        if op == "write":
            k = min(n, tx.room())
            if k:
                tx.take(k)
                rx.on_write(k)
                sent += k
        else:
            k = min(n, rx.unread())
            if k:
                rx.consume(k)
                received += k
            if rx.exhausted():
                rx.reset()
                tx.announce(0, length, 1)
        # invariants: never past the window; reader never ahead of writer; offsets agree
        assert 0 <= rx.consumed <= rx.written <= length
        assert tx.offset == rx.written
        assert received <= sent
    assert sent - received == rx.unread()
