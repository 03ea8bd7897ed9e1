"""A hand-driven RDMA peer on the software fabric, for feeding a server exact verbs traffic.

Unlike ``pykv.rdma.client`` it follows no rules by itself: tests post whatever SENDs and
WRITE_WITH_IMMs they want (wrong lengths, unknown opcodes, overruns, bad rkeys) and look
at what comes back, including whether the server dropped the connection.
"""
from __future__ import annotations

import select
import time

from pykv.rdma import messages as m
from pykv.rdma import softfabric as sf
from pykv.rdma import verbs as v


def pump(qp: sf.SoftQP, timeout: float) -> None:
    """Move the software fabric's bytes for ``qp`` (both ways) for up to ``timeout`` s."""
    ready, writable, _ = select.select([qp.comp_fd, *qp.aux_fds()], qp.write_fds(), [],
                                       timeout)
    for fd in writable:
        qp.pump_write(fd)
    for fd in ready:
        if fd != qp.comp_fd:
            qp.pump(fd)


def close_qp(qp: sf.SoftQP) -> None:
    """Disconnect (if still connected) and free a peer's queue pair."""
    try:
        qp.disconnect()
    except OSError:
        pass
    qp.events_acked = qp.events_reported
    qp.close()


class RawPeer:
    def __init__(self, host: str, port: int, receives: int = 1024, rx_size: int = 1 << 20,
                 rnr_retry: int = 7) -> None:
        self.receives = receives

        def prepare(qp: v.QueuePair) -> None:
            self.ctrl = qp.reg_mr(2048 * 32, False)
            self.rx = qp.reg_mr(rx_size, True)
            self.tx = qp.reg_mr(1 << 22, False)
            for i in range(receives):
                qp.post_recv(i, self.ctrl, 32 * i, 32)

        self.qp: sf.SoftQP = sf.SoftBackend().connect(host, port, 5.0, prepare,
                                                      rnr_retry=rnr_retry)
        self.messages: list[bytes] = []
        self.data = bytearray()
        self.errors: list[int] = []
        self.written = 0
        self.peer_window: m.RegisterXferMemory | None = None
        self.disconnected = False
        self.repost = True

    def announce(self) -> None:
        self.send_raw(m.RegisterXferMemory(self.rx.addr, self.rx.length, self.rx.rkey).encode())

    def send_raw(self, msg: bytes, slot: int = 1024) -> None:
        self.ctrl.write(32 * slot, msg)
        self.qp.post_send(slot, self.ctrl, 32 * slot, len(msg), True)

    def write_imm(self, data: bytes, imm: int | None = None, offset: int | None = None,
                  rkey: int | None = None) -> None:
        win = self.peer_window
        assert win is not None, "server window unknown"
        off = self.written if offset is None else offset
        self.tx.write(0, data)
        self.qp.post_write_imm(0, self.tx, 0, len(data), win.addr + off,
                               win.rkey if rkey is None else rkey,
                               len(data) if imm is None else imm, True)
        self.written = off + len(data)

    def step(self, timeout: float = 0.2) -> None:
        pump(self.qp, timeout)
        for wc in self.qp.poll(4096):
            if wc.status != v.WC_SUCCESS:
                self.errors.append(wc.status)
            elif wc.opcode == v.WC_RECV:
                msg = self.ctrl.read(32 * wc.wr_id, 32)
                self.messages.append(msg)
                if m.peek_opcode(msg) == m.OP_REGISTER_XFER_MEMORY:
                    self.peer_window = m.decode(msg)
                    self.written = 0
                if self.repost:
                    self.qp.post_recv(wc.wr_id, self.ctrl, 32 * wc.wr_id, 32)
            elif wc.opcode == v.WC_RECV_RDMA_WITH_IMM:
                self.data += self.rx.read(len(self.data) % self.rx.length, wc.imm)
                if self.repost:
                    self.qp.post_recv(wc.wr_id, self.ctrl, 32 * wc.wr_id, 32)
        if self.qp.cm_events():
            self.disconnected = True

    def wait(self, cond, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            self.step()
        return cond()

    def close(self) -> None:
        close_qp(self.qp)
