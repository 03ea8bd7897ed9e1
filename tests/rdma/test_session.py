"""The sans-IO session: handshake, control messages, partial writes, SQ accounting, keepalive."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykv.rdma import messages as m
from pykv.rdma.session import (
    CLIENT,
    SERVER,
    WRITE_WR_ID,
    PostSend,
    PostWrite,
    ProtocolViolation,
    Session,
)


class Pair:
    """Two sessions wired back to back: SENDs delivered, WRITEs placed into RX memory."""

    def __init__(self, server_rx=1 << 20, client_rx=1 << 20, **kw):
        self.s = Session(SERVER, 0x10000, server_rx, 0xAAAA, **kw)
        self.c = Session(CLIENT, 0x20000, client_rx, 0xBBBB)
        self.mem = {id(self.s): bytearray(server_rx), id(self.c): bytearray(client_rx)}
        self.got = {id(self.s): bytearray(), id(self.c): bytearray()}

    def other(self, sess):
        return self.c if sess is self.s else self.s

    def pump(self, consume=None):
        """Deliver every queued action until quiet; readers consume per ``consume``."""
        busy = True
        while busy:
            busy = False
            for sess in (self.s, self.c):
                peer = self.other(sess)
                for act in sess.take_actions():
                    busy = True
                    if isinstance(act, PostSend):
                        peer.on_recv(act.msg)
                        sess.on_send_completed(act.wr_id)
                    else:
                        assert act.rkey == peer.rx_rkey
                        off = act.remote_addr - peer.rx_addr
                        assert off == act.offset and off + len(act.data) <= peer.rx.length
                        self.mem[id(peer)][off:off + len(act.data)] = act.data
                        peer.on_write_imm(len(act.data))
                        if act.signaled:
                            sess.on_send_completed(WRITE_WR_ID)
            for sess in (self.s, self.c):
                start, end = sess.unread()
                if end > start:
                    n = end - start if consume is None else min(end - start, consume())
                    self.got[id(sess)] += self.mem[id(sess)][start:start + n]
                    sess.consume(n)
                    busy = True

    def establish(self):
        self.s.on_established()
        self.c.on_established()
        self.pump()


def test_established_announces_own_window_once():
    s = Session(SERVER, 0x7F1234567000, 1 << 20, 0x1A2B)
    s.on_established()
    s.on_established()
    acts = s.take_actions()
    assert len(acts) == 1 and isinstance(acts[0], PostSend)
    assert acts[0].msg == bytes.fromhex("0003" + "00" * 14 + "00007f1234567000"
                                        "00100000" "00001a2b")


def test_no_payload_before_peer_window():
    c = Session(CLIENT, 0, 1 << 20, 1)
    c.write(b"*1\r\n$4\r\nPING\r\n")
    assert c.take_actions() == [] and c.pending_bytes == 14 and c.wants_window()
    c.on_recv(m.RegisterXferMemory(0x5000, 1 << 20, 9).encode())
    (act,) = c.take_actions()
    assert isinstance(act, PostWrite)
    assert (act.offset, act.remote_addr, act.rkey, bytes(act.data)) == \
        (0, 0x5000, 9, b"*1\r\n$4\r\nPING\r\n")


def test_worked_example_ping():
    p = Pair()
    p.establish()
    p.c.write(b"*1\r\n$4\r\nPING\r\n")
    p.pump()
    assert bytes(p.got[id(p.s)]) == b"*1\r\n$4\r\nPING\r\n"
    p.s.write(b"+PONG\r\n")
    p.pump()
    assert bytes(p.got[id(p.c)]) == b"+PONG\r\n"
    assert (p.s.rx.written, p.s.rx.consumed, p.s.tx.offset) == (14, 14, 7)


def test_partial_write_fills_remaining_room_then_resumes():
    p = Pair(server_rx=64 * 1024)
    p.establish()
    p.c.write(b"a" * 60_000)
    p.pump()
    data = b"b" * 10_000
    p.c.write(data)
    acts = list(p.c.actions)
    # the first write of the second message is exactly the room left (4,000+ bytes)
    assert len(acts[0].data) == 64 * 1024 - 60_000
    p.pump()
    assert bytes(p.got[id(p.s)]) == b"a" * 60_000 + data
    assert p.s.rx.announcements == 1


def test_client_rejects_feature_opcodes():
    c = Session(CLIENT, 0, 1 << 20, 1)
    for op in (m.OP_GET_SERVER_FEATURE, m.OP_SET_CLIENT_FEATURE):
        with pytest.raises(ProtocolViolation, match="unknown cmd"):
            c.on_recv(m.Feature(op).encode())


def test_server_answers_get_server_feature():
    s = Session(SERVER, 0, 1 << 20, 1)
    s.on_recv(m.Feature(m.OP_GET_SERVER_FEATURE, b"\x00\x07", 0xFF).encode())
    (act,) = s.take_actions()
    assert act.msg == m.Feature(m.OP_GET_SERVER_FEATURE, b"\x00\x07", 0).encode()


def test_server_set_client_feature():
    s = Session(SERVER, 0, 1 << 20, 1)
    s.on_recv(m.Feature(m.OP_SET_CLIENT_FEATURE, b"\0\0", 0).encode())
    assert s.take_actions() == []
    with pytest.raises(ProtocolViolation, match="unsupported features"):
        s.on_recv(m.Feature(m.OP_SET_CLIENT_FEATURE, b"\0\0", 4).encode())


@pytest.mark.parametrize("role", [SERVER, CLIENT])
def test_keepalive_ignored_and_bad_messages_fatal(role):
    s = Session(role, 0, 1 << 20, 1)
    s.on_recv(m.KEEPALIVE_BYTES)
    assert s.take_actions() == []
    with pytest.raises(ProtocolViolation, match="recv corrupted"):
        s.on_recv(b"\0\2" + b"\0" * 20)
    with pytest.raises(ProtocolViolation, match="unknown cmd"):
        s.on_recv(b"\0\x09" + b"\0" * 30)


def test_window_overrun_is_violation():
    s = Session(SERVER, 0, 64 * 1024, 1)
    s.on_write_imm(64 * 1024)
    with pytest.raises(ProtocolViolation, match="overrun"):
        s.on_write_imm(1)


def test_keepalive_schedule_and_no_pile_up():
    s = Session(SERVER, 0, 1 << 20, 1)
    s.on_established(now=100.0)
    (announce,) = s.take_actions()
    s.on_send_completed(announce.wr_id)
    assert s.tick(101.0) == 103.0 and s.take_actions() == []
    assert s.tick(103.0) == 106.0
    (ka,) = s.take_actions()
    assert ka.msg == m.KEEPALIVE_BYTES
    # not completed yet (idle client not reposting): the next one is skipped
    assert s.tick(106.5) == 109.0
    assert s.take_actions() == [] and s.keepalives_skipped == 1
    s.on_send_completed(ka.wr_id)
    s.tick(109.0)
    assert len(s.take_actions()) == 1 and s.keepalives_sent == 2
    # a long stall does not produce a burst
    s.on_send_completed(s._signaled[0][0])
    assert s.tick(200.0) == 202.0 and len(s.take_actions()) == 1


def test_client_never_sends_keepalive():
    c = Session(CLIENT, 0, 1 << 20, 1)
    c.on_established(now=0.0)
    assert c.tick(1000.0) is None


def test_signal_every_512_and_sq_bound():
    s = Session(SERVER, 0, 1 << 20, 1)
    s.on_recv(m.RegisterXferMemory(0, 1 << 30, 2).encode())
    for _ in range(2000):
        s.write(b"x")
    acts = s.take_actions()
    flags = [a.signaled for a in acts]
    # stalls short of the SQ depth, signalling every 512th and the last one before the cap
    assert len(acts) == 1024 - 16
    assert [i for i, f in enumerate(flags) if f] == [511, 1007]
    assert s.outstanding() == 1008 and s.pending_bytes == 2000 - 1008
    s.on_send_completed(WRITE_WR_ID)
    assert s.outstanding() == 1008 - 512 + len(s.take_actions())


def test_out_of_order_completion_is_detected():
    s = Session(SERVER, 0, 1 << 20, 1)
    s.on_established()
    with pytest.raises(ProtocolViolation):
        s.on_send_completed(WRITE_WR_ID)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), win=st.sampled_from([64, 100, 4096, 65536]),
       sizes=st.lists(st.integers(1, 20_000), min_size=1, max_size=30))
def test_random_traffic_is_delivered_in_order(seed, win, sizes):
    rnd = random.Random(seed)
    p = Pair(server_rx=win, client_rx=win)
    p.establish()
    want_s, want_c = bytearray(), bytearray()
    for i, n in enumerate(sizes):
        chunk = bytes([i % 251]) * n
        if rnd.random() < 0.5:
            p.c.write(chunk)
            want_s += chunk
        else:
            p.s.write(chunk)
            want_c += chunk
        if rnd.random() < 0.3:
            p.pump(consume=lambda: rnd.randint(1, win))
    p.pump(consume=lambda: rnd.randint(1, win))
    assert p.got[id(p.s)] == want_s and p.got[id(p.c)] == want_c
    # every announcement after the first happened only when the window was exhausted
    assert p.s.rx.announcements == p.c.tx.announced - 1
