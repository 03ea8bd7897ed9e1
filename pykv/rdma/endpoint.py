"""One RDMA connection's driver: verbs completions into the session, its actions onto verbs.

Owns the per-connection buffers (the 64 KiB control MR with 1024 receive and 1024 send
slots, the RX window MR, the TX staging MR sized to the peer's window) and the CQ handler
of Valkey's design: take the channel event, ack it, re-arm, poll until empty, then hand
every unread byte to the upper layer, re-announce the window if it is exhausted, and post
queued output. Used by the server's ``rdma`` connection type (event-loop driven) and by the
Python client (blocking). Errors are returned as a reason string, never raised past here,
so a misbehaving peer costs only its own connection.
"""
from __future__ import annotations

from collections.abc import Callable

from pykv.rdma import verbs as v
from pykv.rdma.messages import KEEPALIVE_BYTES, MSG_SIZE
from pykv.rdma.session import (
    RECV_SLOTS,
    SEND_SLOTS,
    WRITE_WR_ID,
    PostSend,
    ProtocolViolation,
    Session,
)
from pykv.rdma.verbs import (
    WC_RDMA_WRITE,
    WC_RECV,
    WC_RECV_RDMA_WITH_IMM,
    WC_SEND,
    WC_SUCCESS,
)

POLL_BATCH = 64


class Endpoint:
    """Binds a ``Session`` to a ``QueuePair``."""

    def __init__(self, qp: v.QueuePair, role: str, rx_size: int,
                 on_data: Callable[[bytes], None], *, signal_every: int | None = None,
                 keepalive_interval: float = 3.0) -> None:
        self.qp = qp
        self.on_data = on_data
        self.ctrl_mr = qp.reg_mr((RECV_SLOTS + SEND_SLOTS) * MSG_SIZE, remote_write=False)
        self.rx_mr = qp.reg_mr(rx_size, remote_write=True)
        self.tx_mr: v.MemoryRegion | None = None
        self.session = Session(role, self.rx_mr.addr, rx_size, self.rx_mr.rkey,
                               signal_every=signal_every, keepalive_interval=keepalive_interval)
        self.error: str | None = None
        self.peer_windows = 0
        self.first_inbound = False

    # -- setup ------------------------------------------------------------------------
    def post_receives(self) -> None:
        for slot in range(RECV_SLOTS):
            self.qp.post_recv(slot, self.ctrl_mr, slot * MSG_SIZE, MSG_SIZE)
        self.qp.req_notify()

    def established(self, now: float = 0.0) -> str | None:
        def go() -> None:
            self.session.on_established(now)
            self._execute()   # the RegisterXferMemory leaves now, not with the next batch
        return self._guard(go)

    # -- the CQ handler -----------------------------------------------------------------
    def handle_completions(self) -> str | None:
        """Drain the CQ and everything it made available; returns an error reason or None."""
        return self._guard(self._handle)

    def _handle(self) -> None:
        qp = self.qp
        if qp.get_cq_event():
            qp.ack_cq_events(1)
        qp.req_notify()
        session = self.session
        ctrl = self.ctrl_mr
        while True:
            wcs = qp.poll(POLL_BATCH)
            if not wcs:
                break
            for wc in wcs:
                if wc.status != WC_SUCCESS:
                    raise ProtocolViolation(
                        f"RDMA: CQ handle error status: {v.wc_status_str(wc.status)}"
                        f"[{wc.status:#x}], opcode : {wc.opcode:#x}")
                op = wc.opcode
                if op == WC_RECV_RDMA_WITH_IMM:
                    session.on_write_imm(wc.imm or 0)
                    qp.post_recv(wc.wr_id, ctrl, wc.wr_id * MSG_SIZE, MSG_SIZE)
                    self.first_inbound = True
                elif op == WC_RECV:
                    if wc.byte_len != MSG_SIZE:
                        raise ProtocolViolation(
                            f"RDMA: FATAL error, recv corrupted cmd (length {wc.byte_len})")
                    data = ctrl.read(wc.wr_id * MSG_SIZE, MSG_SIZE)
                    before = session.tx.announced
                    session.on_recv(data)
                    if session.tx.announced != before:
                        self._peer_window()
                    qp.post_recv(wc.wr_id, ctrl, wc.wr_id * MSG_SIZE, MSG_SIZE)
                    self.first_inbound = True
                elif op == WC_RDMA_WRITE or op == WC_SEND:
                    session.on_send_completed(wc.wr_id)
                else:
                    raise ProtocolViolation(f"RDMA: unexpected opcode {op:#x}")
        self._deliver()
        if session.actions:
            self._execute()

    def _deliver(self) -> None:
        session = self.session
        start, end = session.unread()
        if end > start:
            data = self.rx_mr.read(start, end - start)
            session.consume(end - start)   # may queue the re-announcement (after the copy)
            if session.actions:
                self._execute()
            self.on_data(data)

    def _peer_window(self) -> None:
        need = self.session.tx.length
        if self.tx_mr is None or self.tx_mr.length != need:
            # the staging MR mirrors the peer's window (same offsets); re-size on change
            self.tx_mr = self.qp.reg_mr(need, remote_write=False)
        self.peer_windows += 1

    # -- output ---------------------------------------------------------------------------
    def write(self, data: bytes | bytearray | memoryview) -> str | None:
        if self.error is not None:
            return self.error
        try:
            self.session.write(data)
            if self.session.actions:
                self._execute()
        except ProtocolViolation as exc:
            self.error = str(exc)
        except OSError as exc:
            self.error = f"RDMA: verbs error: {exc}"
        return self.error

    def send_fence(self) -> str | None:
        """A signaled Keepalive: its completion proves every earlier write was delivered."""
        def go() -> None:
            self.session.actions.append(PostSend(self.session._send_ctrl_slot(), KEEPALIVE_BYTES))
            self._execute()
        return self._guard(go)

    def tick(self, now: float) -> tuple[float | None, str | None]:
        result: list[float | None] = [None]

        def go() -> None:
            result[0] = self.session.tick(now)
            self._execute()
        err = self._guard(go)
        return result[0], err

    def _execute(self) -> None:
        session = self.session
        actions = session.actions
        qp = self.qp
        while actions:
            act = actions.popleft()
            if isinstance(act, PostSend):
                off = act.wr_id * MSG_SIZE
                self.ctrl_mr.write(off, act.msg)
                qp.post_send(act.wr_id, self.ctrl_mr, off, MSG_SIZE, True)
            else:
                n = len(act.data)
                tx = self.tx_mr
                assert tx is not None
                tx.write(act.offset, act.data)
                qp.post_write_imm(WRITE_WR_ID if act.signaled else 0, tx, act.offset, n,
                                  act.remote_addr, act.rkey, n, act.signaled)

    def _guard(self, fn: Callable[[], None]) -> str | None:
        if self.error is not None:
            return self.error
        try:
            fn()
        except ProtocolViolation as exc:
            self.error = str(exc)
        except v.VerbsError as exc:
            self.error = f"RDMA: verbs error: {exc}"
        except OSError as exc:
            self.error = f"RDMA: {exc}"
        return self.error

    # -- state for the transport ------------------------------------------------------------
    def has_pending(self) -> bool:
        s = self.session
        return s.rx.unread() > 0 or (s.pending_bytes > 0 and s.tx.room() > 0
                                     and s.outstanding() < s.sq_depth - 16)

    def idle(self) -> bool:
        """Nothing queued and nothing outstanding on the send queue."""
        return self.session.pending_bytes == 0 and self.session.outstanding() == 0

    def close(self) -> None:
        try:
            self.qp.disconnect()
        except OSError:
            pass
        finally:
            # drain what the error state flushed, then destroy
            try:
                while self.qp.get_cq_event():
                    self.qp.ack_cq_events(1)
                while self.qp.poll(POLL_BATCH):
                    pass
            except OSError:
                pass
            self.qp.close()
