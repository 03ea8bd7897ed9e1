"""The software fabric behaves like RC verbs where the protocol depends on it (§8)."""
from __future__ import annotations

import errno
import os
import select
import socket
import threading

import pytest

from pykv.rdma import softfabric as sf
from pykv.rdma import verbs as v


def qp_pair(**kw):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    qa, qb = sf.SoftQP(a, **kw), sf.SoftQP(b, **kw)
    qa.state = qb.state = sf.QPS_RTS
    return qa, qb


def link_rings(qa, qb, size=sf.RING_SIZE, ring_min=None):
    """What connection setup does: each side's ring memfd mapped by the other."""
    for src, dst in ((qa, qb), (qb, qa)):
        fd = src.ring_offer(size)
        assert fd >= 0
        try:
            dst.ring_accept(fd)
        finally:
            os.close(fd)
        src.ring_enable()
        if ring_min is not None:
            src.ring_min = ring_min


def ring_pair(size, ring_min=None, **kw):
    qa, qb = qp_pair(**kw)
    link_rings(qa, qb, size, ring_min)
    return qa, qb


def settle(*qps):
    """Run every NIC until no packet is in flight."""
    for _ in range(100):
        wq = [q.wire_fd for q in qps if q.write_fds()]
        ready, writable, _ = select.select([q.wire_fd for q in qps if q.aux_fds()], wq, [], 0.05)
        for q in qps:
            if q.wire_fd in writable:
                q.pump_write(q.wire_fd)
        if not ready and not writable:
            return
        for q in qps:
            if q.wire_fd in ready:
                q.pump(q.wire_fd)


@pytest.fixture(params=["socket", "ring"])
def pair(request):
    """A connected QP pair; "ring": every payload travels through the shared-memory rings."""
    qa, qb = qp_pair()
    if request.param == "ring":
        link_rings(qa, qb, 4 << 20, ring_min=1)
    yield qa, qb
    for q in (qa, qb):
        q.events_acked = q.events_reported
        q.close()


def test_write_with_imm_places_data_and_consumes_a_receive(pair):
    qa, qb = pair
    src = qa.reg_mr(4096, False)
    dst = qb.reg_mr(4096, True)
    ctrl = qb.reg_mr(64, False)
    qb.post_recv(7, ctrl, 0, 32)
    src.write(0, b"hello")
    qa.post_write_imm(0, src, 0, 5, dst.addr + 100, dst.rkey, 5, True)
    settle(qa, qb)
    (wc,) = qb.poll(16)
    assert (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.imm) == \
        (7, v.WC_SUCCESS, v.WC_RECV_RDMA_WITH_IMM, 5, 5)
    assert dst.read(100, 5) == b"hello"
    assert dst.read(105, 4) == bytes([sf.POISON]) * 4   # nothing beyond what was written
    assert ctrl.read(0, 32) == bytes([sf.POISON]) * 32  # the receive buffer is untouched
    (swc,) = qa.poll(16)
    assert (swc.status, swc.opcode) == (v.WC_SUCCESS, v.WC_RDMA_WRITE)


@pytest.mark.parametrize("case", ["rkey", "bounds", "access"])
def test_remote_access_errors(pair, case):
    qa, qb = pair
    src = qa.reg_mr(4096, False)
    dst = qb.reg_mr(4096, case != "access")
    ctrl = qb.reg_mr(64, False)
    qb.post_recv(1, ctrl, 0, 32)
    qb.post_recv(2, ctrl, 32, 32)
    rkey = dst.rkey ^ 1 if case == "rkey" else dst.rkey
    addr = dst.addr + (4000 if case == "bounds" else 0)
    qa.post_write_imm(10, src, 0, 200, addr, rkey, 200, False)
    qa.post_write_imm(11, src, 0, 1, dst.addr, dst.rkey, 1, False)
    settle(qa, qb)
    wcs = qa.poll(16)
    assert [(w.wr_id, w.status) for w in wcs] == \
        [(10, v.WC_REM_ACCESS_ERR), (11, v.WC_WR_FLUSH_ERR)]
    assert qa.state == sf.QPS_ERR and qb.state == sf.QPS_ERR
    assert sorted((w.wr_id, w.status) for w in qb.poll(16)) == \
        [(1, v.WC_WR_FLUSH_ERR), (2, v.WC_WR_FLUSH_ERR)]
    # posting on an errored QP flushes at once
    qa.post_send(12, src, 0, 32, False)
    assert [(w.wr_id, w.status) for w in qa.poll(4)] == [(12, v.WC_WR_FLUSH_ERR)]


def test_rnr_without_retry_fails(pair):
    qa, qb = pair
    qb.peer_rnr_retry = 0
    src = qa.reg_mr(64, False)
    qa.post_send(3, src, 0, 32, True)
    settle(qa, qb)
    assert [(w.wr_id, w.status) for w in qa.poll(4)] == [(3, v.WC_RNR_RETRY_EXC_ERR)]


def test_rnr_forever_stalls_in_order_until_a_receive_is_posted(pair):
    qa, qb = pair
    src = qa.reg_mr(64, False)
    ctrl = qb.reg_mr(64, False)
    src.write(0, b"A" * 32)
    qa.post_send(1, src, 0, 32, True)
    src.write(32, b"B" * 32)
    qa.post_send(2, src, 32, 32, True)
    settle(qa, qb)
    assert qa.poll(4) == [] and qb.poll(4) == [] and qb.stats_rnr >= 1
    qb.post_recv(50, ctrl, 0, 32)            # only one receive: the second SEND still waits
    settle(qa, qb)
    assert [w.wr_id for w in qb.poll(4)] == [50]
    assert ctrl.read(0, 32) == b"A" * 32
    assert [w.wr_id for w in qa.poll(4)] == [1]
    qb.post_recv(51, ctrl, 32, 32)
    settle(qa, qb)
    assert [w.wr_id for w in qb.poll(4)] == [51] and [w.wr_id for w in qa.poll(4)] == [2]


def test_send_larger_than_receive(pair):
    qa, qb = pair
    src = qa.reg_mr(64, False)
    ctrl = qb.reg_mr(64, False)
    qb.post_recv(5, ctrl, 0, 16)
    qa.post_send(6, src, 0, 32, True)
    settle(qa, qb)
    assert [(w.wr_id, w.status) for w in qb.poll(4)] == [(5, v.WC_LOC_LEN_ERR)]
    assert [(w.wr_id, w.status) for w in qa.poll(4)] == [(6, v.WC_REM_INV_REQ_ERR)]


def test_queue_limits_and_unsignaled_release():
    qa, qb = qp_pair(max_send_wr=4, max_recv_wr=2)
    src = qa.reg_mr(64, False)
    dst = qb.reg_mr(64, True)
    ctrl = qb.reg_mr(64, False)
    for i in range(2):
        qb.post_recv(i, ctrl, 32 * i, 32)
    with pytest.raises(v.VerbsError) as exc:
        qb.post_recv(9, ctrl, 0, 32)
    assert exc.value.errno == errno.ENOMEM
    for _ in range(4):  # 4 unsignaled plain writes fill the SQ for good
        qa.post_write(0, src, 0, 8, dst.addr, dst.rkey, False)
    with pytest.raises(v.VerbsError):
        qa.post_write(0, src, 0, 8, dst.addr, dst.rkey, True)
    settle(qa, qb)
    assert qa.poll(8) == []                    # acknowledged, but no completion: still full
    with pytest.raises(v.VerbsError):
        qa.post_write(0, src, 0, 8, dst.addr, dst.rkey, True)
    for q in (qa, qb):
        q.close()


def test_signaled_completion_releases_earlier_unsignaled():
    qa, qb = qp_pair(max_send_wr=4)
    src = qa.reg_mr(64, False)
    dst = qb.reg_mr(64, True)
    for _ in range(3):
        qa.post_write(0, src, 0, 8, dst.addr, dst.rkey, False)
    qa.post_write(99, src, 0, 8, dst.addr, dst.rkey, True)
    settle(qa, qb)
    assert qa.sq_used == 4
    assert [w.wr_id for w in qa.poll(4)] == [99]
    assert qa.sq_used == 0
    for q in (qa, qb):
        q.close()


def test_local_sge_is_checked(pair):
    qa, _ = pair
    src = qa.reg_mr(64, False)
    with pytest.raises(v.VerbsError):
        qa.post_send(1, src, 40, 32, True)


def test_completion_channel_fires_once_per_arming(pair):
    qa, qb = pair
    src = qa.reg_mr(64, False)
    dst = qb.reg_mr(64, True)
    ctrl = qb.reg_mr(96, False)
    for i in range(3):
        qb.post_recv(i, ctrl, 32 * i, 32)
    qa.post_write_imm(0, src, 0, 1, dst.addr, dst.rkey, 1, False)
    settle(qa, qb)
    assert not qb.get_cq_event()        # not armed: no event, though a completion exists
    qb.req_notify()
    qa.post_write_imm(0, src, 0, 1, dst.addr, dst.rkey, 1, False)
    qa.post_write_imm(0, src, 0, 1, dst.addr, dst.rkey, 1, False)
    settle(qa, qb)
    # two completions, one event; made while pumping, so the pumping caller is told
    # through get_cq_event rather than a second wake-up on the fd
    assert qb.get_cq_event() and not qb.get_cq_event()
    assert len(qb.poll(8)) == 3
    with pytest.raises(v.VerbsError):
        qb.ack_cq_events(2)
    qb.ack_cq_events(1)


def test_completion_outside_pump_signals_the_fd(pair):
    qa, qb = pair
    src = qa.reg_mr(64, False)
    qa.req_notify()
    qa.state = sf.QPS_ERR
    qa.post_send(9, src, 0, 32, True)   # flushed at once, outside any pump
    assert select.select([qa.comp_fd], [], [], 0)[0]
    assert qa.get_cq_event()
    assert not select.select([qa.comp_fd], [], [], 0)[0]
    qa.ack_cq_events(1)
    assert [(w.wr_id, w.status) for w in qa.poll(4)] == [(9, v.WC_WR_FLUSH_ERR)]


def test_wire_never_blocks_and_queues_output(pair):
    qa, qb = pair
    # more than the wire's socket buffer (sized for a whole window in flight) can take
    size = 2 * qa.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) + (1 << 20)
    big = qa.reg_mr(size, False)
    dst = qb.reg_mr(size, True)
    ctrl = qb.reg_mr(64, False)
    qb.post_recv(0, ctrl, 0, 32)
    big.write(0, b"z" * size)
    qa.post_write_imm(0, big, 0, size, dst.addr, dst.rkey, size, True)  # returns at once
    assert qa.write_fds() == [qa.wire_fd]
    settle(qa, qb)
    assert qa.write_fds() == []
    (wc,) = qb.poll(4)
    assert wc.byte_len == size and dst.read(size - 3, 3) == b"zzz"


def test_destroy_with_unacked_cq_event_fails():
    qa, qb = qp_pair()
    qa.req_notify()
    qa._push(v.WorkCompletion(1, 0, v.WC_RECV))
    assert qa.get_cq_event()
    with pytest.raises(v.VerbsError, match="unacked"):
        qa.close()
    qb.close()


def test_cq_overrun_is_fatal():
    qa, qb = qp_pair(cq_size=2)
    for i in range(3):
        qa._push(v.WorkCompletion(i, 0, v.WC_RECV))
    with pytest.raises(v.VerbsError, match="overrun"):
        qa.poll(8)
    qa.close()
    qb.close()


def test_vanished_peer_gives_retry_exceeded(pair):
    qa, qb = pair
    src = qa.reg_mr(64, False)
    qb.sock.close()
    settle(qa)
    qa.post_send(4, src, 0, 32, False)
    wcs = qa.poll(4)
    assert [(w.wr_id, w.status) for w in wcs] == [(4, v.WC_RETRY_EXC_ERR)]
    qb.closed = True
    os.close(qb.comp_fd)


def test_disconnect_reaches_peer_and_flushes_locally(pair):
    qa, qb = pair
    ctrl = qa.reg_mr(64, False)
    qa.post_recv(3, ctrl, 0, 32)
    qa.disconnect()
    assert [(w.wr_id, w.status) for w in qa.poll(4)] == [(3, v.WC_WR_FLUSH_ERR)]
    settle(qb)
    assert qb.cm_events() == [v.CM_DISCONNECTED]


def test_cm_listen_connect_accept(tmp_path, monkeypatch):
    monkeypatch.setenv("PYKV_SOFTRDMA_DIR", str(tmp_path))
    be = sf.SoftBackend()
    lst = be.listen("127.0.0.1", 7777, 16)
    result = {}

    def client():
        try:
            result["qp"] = be.connect("127.0.0.1", 7777, 5.0, lambda qp: None)
        except Exception as exc:  # pragma: no cover - reported below
            result["err"] = exc

    t = threading.Thread(target=client)
    t.start()
    events = []
    server_qp = None
    while len(events) < 2:
        ready, _, _ = select.select(lst.fds() + ([server_qp.wire_fd] if server_qp else []),
                                    [], [], 5)
        assert ready, f"no CM progress: {events}"
        for fd in ready:
            if server_qp is not None and fd == server_qp.wire_fd:
                server_qp.pump(fd)
            else:
                lst.pump(fd)
        while (ev := lst.get_event()) is not None:
            events.append(ev.type)
            if ev.type == v.CM_CONNECT_REQUEST:
                server_qp = ev.request.create_qp(0)
                assert ev.request.peer_address.startswith("127.0.0.1:")
                ev.request.accept(server_qp)
            ev.acknowledge()
    t.join(5)
    assert events == [v.CM_CONNECT_REQUEST, v.CM_ESTABLISHED]
    assert "qp" in result, result
    result["qp"].disconnect()
    settle(server_qp)
    ev = lst.get_event()
    assert ev.type == v.CM_DISCONNECTED and ev.qp is server_qp
    with pytest.raises(v.VerbsError, match="unacked"):
        lst.close()
    result["qp"].close()
    server_qp.close()


def test_connect_refused_and_bad_bind(tmp_path, monkeypatch):
    monkeypatch.setenv("PYKV_SOFTRDMA_DIR", str(tmp_path))
    be = sf.SoftBackend()
    with pytest.raises(ConnectionRefusedError):
        be.connect("127.0.0.1", 7778, 1.0, lambda qp: None)
    with pytest.raises(v.SetupError, match="not an address of this host"):
        be.listen("192.0.2.77", 7778, 16)
    with pytest.raises(v.SetupError, match="wildcard"):
        be.listen("*", 7778, 16)


def test_large_requests_are_placed_directly_and_complete_in_order(pair):
    """A request whose payload arrives in pieces goes straight to its target MR; what
    follows it on the wire (here a small WRITE_IMM, then a large SEND) is not disturbed."""
    qa, qb = pair
    size = 3 << 20
    src = qa.reg_mr(size + 64, False)
    dst = qb.reg_mr(size + 64, True)
    ctrl = qb.reg_mr(size, False)
    for i in range(3):
        qb.post_recv(i, ctrl, 0 if i == 2 else 32 * i, size if i == 2 else 32)
    pattern = bytes(range(256)) * (size // 256)
    src.write(0, pattern)
    src.write(size, b"tail")
    qa.post_write_imm(1, src, 0, size, dst.addr, dst.rkey, size, False)
    qa.post_write_imm(2, src, size, 4, dst.addr + size, dst.rkey, 4, False)
    qa.post_send(3, src, 0, size, True)
    settle(qa, qb)
    wcs = qb.poll(8)
    assert [(w.wr_id, w.status, w.byte_len) for w in wcs] == \
        [(0, v.WC_SUCCESS, size), (1, v.WC_SUCCESS, 4), (2, v.WC_SUCCESS, size)]
    assert [w.imm for w in wcs] == [size, 4, None]
    assert dst.read(0, size) == pattern and dst.read(size, 4) == b"tail"
    assert ctrl.read(0, size) == pattern
    assert [(w.wr_id, w.status) for w in qa.poll(8)] == [(3, v.WC_SUCCESS)]
    if qa.ring[0]:   # the first write went through the ring; the SEND did not fit
        assert qa.stats_ring == 2 and qa.stats_ring_full == 1 and qb.stats_direct >= 1
    else:
        assert qb.stats_direct >= 2


def test_inline_write_needs_no_mr_and_has_a_limit(pair):
    qa, qb = pair
    dst = qb.reg_mr(4096, True)
    ctrl = qb.reg_mr(64, False)
    qb.post_recv(4, ctrl, 0, 32)
    reply = bytearray(b"+OK\r\n")
    qa.post_write_imm_inline(0, reply, dst.addr + 8, dst.rkey, 5, True)
    reply[:] = b"-ERR\r"                      # the payload was taken at post time
    settle(qa, qb)
    (wc,) = qb.poll(4)
    assert (wc.wr_id, wc.opcode, wc.imm) == (4, v.WC_RECV_RDMA_WITH_IMM, 5)
    assert dst.read(8, 5) == b"+OK\r\n"
    assert [(w.status, w.opcode) for w in qa.poll(4)] == [(v.WC_SUCCESS, v.WC_RDMA_WRITE)]
    with pytest.raises(v.VerbsError):
        qa.post_write_imm_inline(0, b"x" * (qa.max_inline_data + 1), dst.addr, dst.rkey, 1,
                                 False)


def _post_writes(qa, src, dst, sizes, start=0):
    """WRITE_WITH_IMM of distinct patterns, back to back into ``dst``; imm = index."""
    off, expect = 0, []
    for i, n in enumerate(sizes, start):
        data = bytes([(i * 7 + k) & 0xFF for k in range(251)]) * (n // 251 + 1)
        src.write(off, data[:n])
        qa.post_write_imm(i, src, off, n, dst.addr + off, dst.rkey, i, False)
        expect.append((off, data[:n]))
        off += n
    return expect


@pytest.fixture
def ring64k():
    """QPs linked by 64 KiB rings, a 1 MiB source MR on qa, a 1 MiB remote-writable target
    and a control MR for receives on qb: (qa, qb, src, dst, ctrl)."""
    qa, qb = ring_pair(1 << 16)
    yield qa, qb, qa.reg_mr(1 << 20, False), qb.reg_mr(1 << 20, True), qb.reg_mr(64, False)
    for q in (qa, qb):
        q.close()


def _assert_placed(dst, expect) -> None:
    for off, data in expect:
        assert dst.read(off, len(data)) == data


def test_ring_wraps_around(ring64k):
    qa, qb, src, dst, ctrl = ring64k
    n, sent = 20000, 0
    for round_ in range(8):               # 8 x 2 x 20000 B through a 64 KiB ring
        for i in range(2):
            qb.post_recv(i, ctrl, 0, 32)
        expect = _post_writes(qa, src, dst, [n, n + 1], start=2 * round_)
        sent += 2 * n + 1
        settle(qa, qb)
        wcs = qb.poll(8)
        assert [(w.status, w.imm, w.byte_len) for w in wcs] == \
            [(v.WC_SUCCESS, 2 * round_, n), (v.WC_SUCCESS, 2 * round_ + 1, n + 1)]
        _assert_placed(dst, expect)
    assert qa.stats_ring == 16 and qa.stats_ring_full == 0 and sent > 4 * (1 << 16)
    assert qa.ring_pending == 0


def test_ring_full_falls_back_to_the_socket_in_order(ring64k):
    qa, qb, src, dst, ctrl = ring64k
    # nothing is consumed before all are posted: 3 fit in the ring, the rest take the socket
    # (and one more fits again once the ring has room: the order still holds)
    sizes = [20000, 20000, 20000, 20000, 9000, 30000]
    expect = _post_writes(qa, src, dst, sizes)
    assert qa.stats_ring == 3 and qa.stats_ring_full == 3 and qa.ring_pending == 60000
    settle(qa)                            # headers and socket payloads in flight, no receive
    for i in range(len(sizes)):
        qb.post_recv(i, ctrl, 0, 32)
    settle(qa, qb)
    assert [(w.status, w.imm) for w in qb.poll(16)] == [(v.WC_SUCCESS, i) for i in range(6)]
    _assert_placed(dst, expect)
    assert qa.ring_pending == 0
    # the ring is in use again afterwards
    qb.post_recv(9, ctrl, 0, 32)
    _post_writes(qa, src, dst, [40000], start=9)
    settle(qa, qb)
    assert [w.imm for w in qb.poll(4)] == [9] and qa.stats_ring == 4


def test_rnr_stall_keeps_ring_payloads_until_a_receive_is_posted(ring64k):
    qa, qb, src, dst, ctrl = ring64k
    expect = _post_writes(qa, src, dst, [20000, 20000])
    settle(qa, qb)
    assert qb.poll(4) == [] and qb.stats_rnr >= 1 and qa.ring_pending == 40000
    assert dst.read(0, 4) == bytes([sf.POISON]) * 4
    qb.post_recv(0, ctrl, 0, 32)
    settle(qa, qb)
    assert [w.imm for w in qb.poll(4)] == [0] and qa.ring_pending == 20000
    qb.post_recv(1, ctrl, 0, 32)
    settle(qa, qb)
    assert [w.imm for w in qb.poll(4)] == [1] and qa.ring_pending == 0
    _assert_placed(dst, expect)


@pytest.mark.parametrize("case", ["rkey", "bounds", "access"])
def test_access_error_on_a_ring_write_drops_and_consumes_it(case):
    qa, qb = ring_pair(1 << 16)
    src = qa.reg_mr(1 << 16, False)
    dst = qb.reg_mr(1 << 16, case != "access")
    ctrl = qb.reg_mr(64, False)
    qb.post_recv(1, ctrl, 0, 32)
    src.write(0, b"q" * 20000)
    rkey = dst.rkey ^ 1 if case == "rkey" else dst.rkey
    addr = dst.addr + (50000 if case == "bounds" else 0)
    qa.post_write(10, src, 0, 20000, addr, rkey, False)
    qa.post_write_imm(11, src, 0, 20000, dst.addr, dst.rkey, 1, False)
    assert qa.stats_ring == 2
    settle(qa, qb)
    assert [(w.wr_id, w.status) for w in qa.poll(16)] == \
        [(10, v.WC_REM_ACCESS_ERR), (11, v.WC_WR_FLUSH_ERR)]
    assert [(w.wr_id, w.status) for w in qb.poll(16)] == [(1, v.WC_WR_FLUSH_ERR)]
    assert qa.state == sf.QPS_ERR and qb.state == sf.QPS_ERR
    assert dst.read(0, dst.length) == bytes([sf.POISON]) * dst.length   # nothing placed
    assert qa.ring_pending == 0           # both dropped, both consumed
    for q in (qa, qb):
        q.events_acked = q.events_reported
        q.close()


def _connect_pair(tmp_path, monkeypatch, port, server_ring, client_ring):
    """Listener + connect in this process; ``*_ring``: PYKV_SOFTRDMA_RING of each side."""
    monkeypatch.setenv("PYKV_SOFTRDMA_DIR", str(tmp_path))
    main = threading.current_thread()
    monkeypatch.setattr(sf, "ring_size", lambda: server_ring if threading.current_thread()
                        is main else client_ring)
    be = sf.SoftBackend()
    lst = be.listen("127.0.0.1", port, 16)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault(
        "qp", be.connect("127.0.0.1", port, 5.0, lambda qp: None)))
    t.start()
    server_qp = None
    established = False
    while not established:
        ready, _, _ = select.select(lst.fds() + ([server_qp.wire_fd] if server_qp else []),
                                    [], [], 5)
        assert ready
        for fd in ready:
            if server_qp is not None and fd == server_qp.wire_fd:
                server_qp.pump(fd)
            else:
                lst.pump(fd)
        while (ev := lst.get_event()) is not None:
            if ev.type == v.CM_CONNECT_REQUEST:
                server_qp = ev.request.create_qp(0)
                ev.request.accept(server_qp)
            established = established or ev.type == v.CM_ESTABLISHED
            ev.acknowledge()
    t.join(5)
    return lst, server_qp, result["qp"]


@pytest.mark.parametrize("server_ring,client_ring", [
    (1 << 22, 1 << 22), (1 << 22, 1 << 16), (0, 1 << 22), (1 << 22, 0)])
def test_connection_setup_agrees_on_rings(tmp_path, monkeypatch, server_ring, client_ring):
    lst, sq, cq = _connect_pair(tmp_path, monkeypatch, 7790, server_ring, client_ring)
    both = server_ring and client_ring
    assert cq.ring == ((client_ring, server_ring) if both else (0, 0))
    assert sq.ring == ((server_ring, client_ring) if both else (0, 0))
    # data flows either way, through the rings when both have them
    for a, b in ((cq, sq), (sq, cq)):
        src = a.reg_mr(1 << 16, False)
        dst = b.reg_mr(1 << 16, True)
        ctrl = b.reg_mr(64, False)
        b.post_recv(1, ctrl, 0, 32)
        src.write(0, b"r" * 30000)
        a.post_write_imm(2, src, 0, 30000, dst.addr, dst.rkey, 30000, True)
        settle(a, b)
        assert [(w.status, w.imm) for w in b.poll(4)] == [(v.WC_SUCCESS, 30000)]
        assert [(w.status, w.opcode) for w in a.poll(4)] == [(v.WC_SUCCESS, v.WC_RDMA_WRITE)]
        assert dst.read(0, 30000) == b"r" * 30000
        assert a.stats_ring == (1 if both else 0)
    cq.close()
    sq.close()
    lst.close()
