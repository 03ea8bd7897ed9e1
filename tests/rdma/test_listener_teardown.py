"""Order of teardown between a closing RDMA listener and its last connection.

With pyverbs, closing a listener destroys its device context, which closes every PD, CQ and
QP made from it; a connection torn down after that called ``ibv_modify_qp`` on a NULL QP
(segfault on shutdown with an RDMA client connected, and when the last client of a listener
moved by ``CONFIG SET rdma-port`` left). Fakes here record the order of the calls.
"""
from __future__ import annotations

import asyncio

from pykv.net.base import ListenerSpec
from pykv.net.rdma import RdmaConnection, RdmaListener
from pykv.rdma import verbs as v


class FakeMR(v.MemoryRegion):
    def __init__(self, length: int) -> None:
        self.addr, self.length, self.lkey, self.rkey = 4096, length, 1, 2

    def read(self, offset: int, n: int) -> bytes:
        return bytes(n)

    def write(self, offset: int, data) -> None:
        pass


class FakeQP(v.QueuePair):
    peer_address = "10.0.0.2:5000"
    local_address = "10.0.0.1:6379"
    comp_fd = -1

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self.closed = False

    def fds(self) -> list[int]:
        return []

    def reg_mr(self, length: int, remote_write: bool) -> FakeMR:
        return FakeMR(length)

    def post_recv(self, *args) -> None:
        pass

    def post_send(self, *args) -> None:
        pass

    def post_write_imm(self, *args) -> None:
        pass

    def get_cq_event(self) -> bool:
        assert not self.closed, "CQ used after close"
        return False

    def ack_cq_events(self, n: int) -> None:
        pass

    def req_notify(self) -> None:
        pass

    def poll(self, max_entries: int) -> list[v.WorkCompletion]:
        assert not self.closed, "CQ polled after close"
        return []

    def disconnect(self) -> None:
        assert not self.closed, "QP used after its device context was closed"
        self.calls.append("qp.disconnect")

    def close(self) -> None:
        if not self.closed:
            self.calls.append("qp.close")
        self.closed = True


class FakeCm(v.CmListener):
    """Closing it closes the QPs made from it, as pyverbs does with a device context; its
    event channel must not be read after that (pyverbs: NULL channel, segfault)."""

    def __init__(self, calls: list[str], qps: list[FakeQP]) -> None:
        self.calls, self.qps = calls, qps
        self.events: list[v.CmEvent] = []
        self.closed = False

    def fds(self) -> list[int]:
        return []

    def pump(self, fd: int) -> None:
        pass

    def get_event(self):
        assert not self.closed, "event channel read after the listener was destroyed"
        return self.events.pop(0) if self.events else None

    def stop_listening(self) -> None:
        self.calls.append("cm.stop_listening")

    def close(self) -> None:
        self.calls.append("cm.close")
        self.closed = True
        for qp in self.qps:
            qp.closed = True


def _listener_with_one_connection():
    loop = asyncio.new_event_loop()
    calls: list[str] = []
    qp = FakeQP(calls)
    listener = RdmaListener(ListenerSpec("rdma", binds=["10.0.0.1"], port=6379), None,
                            lambda conn: None, loop, 65536, -1, 0.0)
    listener.cms.append(FakeCm(calls, [qp]))
    conn = RdmaConnection(listener, qp, 65536)
    listener.conns[id(qp)] = conn
    return loop, listener, conn, calls


def test_cm_event_loop_stops_when_the_listener_is_destroyed_under_it():
    # the last client of a listener moved by CONFIG SET rdma-port disconnects: handling its
    # DISCONNECTED event destroys the listener, and the loop must not read the channel again
    loop, listener, conn, calls = _listener_with_one_connection()
    try:
        cm = listener.cms[0]
        listener.close()
        cm.events.append(v.CmEvent(v.CM_DISCONNECTED, qp=conn.qp))
        listener._on_cm(cm, -1)
        assert calls[-1] == "cm.close" and cm.closed and not listener.cms
    finally:
        loop.close()


def test_last_connection_closes_its_qp_before_the_listener_is_destroyed():
    loop, listener, conn, calls = _listener_with_one_connection()
    try:
        listener.close()                 # shutdown / CONFIG SET rdma-port: stop accepting
        assert calls == ["cm.stop_listening"] and listener.cms
        conn.abort()                     # then the client goes (closed, or it disconnected)
        assert calls == ["cm.stop_listening", "qp.disconnect", "qp.close", "cm.close"]
        assert not listener.conns and not listener.cms
    finally:
        loop.close()


def test_cm_disconnect_of_the_last_client_after_the_listener_closed():
    loop, listener, conn, calls = _listener_with_one_connection()
    try:
        listener.close()
        conn.on_cm_closed(v.CM_DISCONNECTED)
        assert calls[-3:] == ["qp.disconnect", "qp.close", "cm.close"]
    finally:
        loop.close()
