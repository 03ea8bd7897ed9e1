"""A whole RDMA session with pykv, checked byte by byte against /work/shared/RDMA-PROTOCOL.md.

The peer here is deliberately independent of pykv's RDMA code: it uses only the software
fabric's verbs (queue pair, memory regions, completions; moved by rawpeer.pump) and builds and parses every control
message itself from the document's byte layout (§2.2: 32 bytes, big-endian, opcode in bytes
0-1; Feature = select at 2, features at 24; Memory = addr at 16, length at 24, rkey at 28;
reserved bytes zero). So pykv's encoder and this test cannot misread the protocol alike.

The session: the server announces its window, we announce ours, GetServerFeature is answered
(select echoed, no features), SetClientFeature with no features is accepted silently, commands
written with WRITE_WITH_IMM (immediate = byte count, sequential offsets from 0) are answered the
same way into our window, a fully consumed server window is announced again (offset back to
0), and Keepalives arrive as opcode 2 and 30 zero bytes; no other opcode arrives unasked.
"""
from __future__ import annotations

import time

import pytest
from rawpeer import close_qp, pump
from rdma_support import RdmaServer, resp

from pykv.rdma import softfabric as sf
from pykv.rdma import verbs as v

MSG = 32
OP_GET_SERVER_FEATURE, OP_SET_CLIENT_FEATURE, OP_KEEPALIVE, OP_REGISTER_XFER_MEMORY = 0, 1, 2, 3
SERVER_WINDOW = 65536
PEER_WINDOW = 1 << 20
SEND_SLOT = 1024          # control slots 0..1023 receive, 1024.. send (§1.2 layout)


# -- the document's layouts, by offset ------------------------------------------------------
def be(value: int, size: int) -> bytes:
    return value.to_bytes(size, "big")


def feature_msg(opcode: int, select_bytes: bytes, features: int) -> bytes:
    msg = be(opcode, 2) + select_bytes + bytes(20) + be(features, 8)
    assert len(msg) == MSG
    return msg


def memory_msg(addr: int, length: int, rkey: int) -> bytes:
    msg = be(OP_REGISTER_XFER_MEMORY, 2) + bytes(14) + be(addr, 8) + be(length, 4) + be(rkey, 4)
    assert len(msg) == MSG
    return msg


def opcode(msg: bytes) -> int:
    return int.from_bytes(msg[0:2], "big")


def parse_memory(msg: bytes) -> tuple[int, int, int]:
    assert opcode(msg) == OP_REGISTER_XFER_MEMORY and msg[2:16] == bytes(14), msg.hex()
    return (int.from_bytes(msg[16:24], "big"), int.from_bytes(msg[24:28], "big"),
            int.from_bytes(msg[28:32], "big"))


class WirePeer:
    """Posts and polls raw verbs; keeps every control message and data write it received."""

    def __init__(self, port: int) -> None:
        def prepare(qp: v.QueuePair) -> None:
            self.ctrl = qp.reg_mr(2 * 1024 * MSG, False)
            self.rx = qp.reg_mr(PEER_WINDOW, True)
            self.tx = qp.reg_mr(SERVER_WINDOW, False)
            for slot in range(1024):
                qp.post_recv(slot, self.ctrl, MSG * slot, MSG)

        self.qp = sf.SoftBackend().connect("127.0.0.1", port, 5.0, prepare, rnr_retry=7)
        self.messages: list[bytes] = []
        self.sent: list[bytes] = []
        self.writes: list[tuple[int, bytes]] = []   # (offset in our window, bytes)
        self.received = 0                            # our window's read offset
        self.errors: list[int] = []
        self.server_window: tuple[int, int, int] | None = None
        self.written = 0                             # our write offset in the server window

    def send(self, msg: bytes) -> None:
        slot = SEND_SLOT + len(self.sent) % 1024
        self.sent.append(msg)
        self.ctrl.write(MSG * slot, msg)
        self.qp.post_send(slot, self.ctrl, MSG * slot, MSG, True)

    def write_imm(self, data: bytes) -> None:
        assert self.server_window is not None
        addr, length, rkey = self.server_window
        assert self.written + len(data) <= length, "would overrun the server window"
        self.tx.write(0, data)
        self.qp.post_write_imm(0, self.tx, 0, len(data), addr + self.written, rkey, len(data),
                               True)
        self.written += len(data)

    def step(self, timeout: float = 0.05) -> None:
        pump(self.qp, timeout)
        for wc in self.qp.poll(4096):
            if wc.status != v.WC_SUCCESS:
                self.errors.append(wc.status)
            elif wc.opcode == v.WC_RECV:
                assert wc.byte_len == MSG, f"a control message of {wc.byte_len} bytes"
                msg = self.ctrl.read(MSG * wc.wr_id, MSG)
                self.messages.append(msg)
                if opcode(msg) == OP_REGISTER_XFER_MEMORY:
                    self.server_window = parse_memory(msg)
                    self.written = 0
                self.qp.post_recv(wc.wr_id, self.ctrl, MSG * wc.wr_id, MSG)
            elif wc.opcode == v.WC_RECV_RDMA_WITH_IMM:
                # the immediate is the byte count; data lands at the next sequential offset
                self.writes.append((self.received, self.rx.read(self.received, wc.imm)))
                self.received += wc.imm
                self.qp.post_recv(wc.wr_id, self.ctrl, MSG * wc.wr_id, MSG)

    def wait(self, cond, what: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            assert not self.errors, f"completion errors {self.errors}"
            self.step()

    def data(self) -> bytes:
        return b"".join(chunk for _, chunk in self.writes)

    def of(self, op: int) -> list[bytes]:
        return [msg for msg in self.messages if opcode(msg) == op]

    def close(self) -> None:
        close_qp(self.qp)


@pytest.fixture
def wire_server(fabric_dir):
    with RdmaServer(fabric_dir, rx_size=SERVER_WINDOW, keepalive=0.3) as server:
        yield server


def test_session_bytes_follow_the_protocol_document(wire_server):
    peer = WirePeer(wire_server.port)
    try:
        # the server announces its RX window after establishment (§1.4)
        peer.wait(lambda: peer.server_window is not None, "the server's RegisterXferMemory")
        addr, length, rkey = peer.server_window
        assert length == SERVER_WINDOW and addr and rkey
        peer.send(memory_msg(peer.rx.addr, peer.rx.length, peer.rx.rkey))

        # feature negotiation (§2.3): select echoed verbatim, no features; set 0 is silent
        peer.send(feature_msg(OP_GET_SERVER_FEATURE, b"\x12\x34", 0))
        peer.wait(lambda: peer.of(OP_GET_SERVER_FEATURE), "the GetServerFeature answer")
        assert peer.of(OP_GET_SERVER_FEATURE) == [feature_msg(OP_GET_SERVER_FEATURE,
                                                              b"\x12\x34", 0)]
        peer.send(feature_msg(OP_SET_CLIENT_FEATURE, b"\x00\x00", 0))

        # commands written with immediate data; replies come back the same way (§3)
        peer.write_imm(resp("PING"))
        peer.wait(lambda: peer.data() == b"+PONG\r\n", "PONG")
        assert peer.writes == [(0, b"+PONG\r\n")]
        peer.write_imm(resp("SET", "k", "v") + resp("GET", "k"))
        peer.wait(lambda: len(peer.data()) >= 16, "the SET and GET replies")
        assert peer.data() == b"+PONG\r\n+OK\r\n$1\r\nv\r\n"
        assert [off for off, _ in peer.writes][:2] == [0, 7]   # sequential, from offset 0

        # filling the server window exactly makes it announce the window again (§3)
        room = SERVER_WINDOW - peer.written
        n = next(n for n in range(room - 40, room) if len(resp("ECHO", "x" * n)) == room)
        filler = resp("ECHO", "x" * n)
        announced = len(peer.of(OP_REGISTER_XFER_MEMORY))
        expected = peer.data() + b"$%d\r\n" % n + b"x" * n + b"\r\n" + b"+PONG\r\n"
        peer.write_imm(filler)
        peer.wait(lambda: len(peer.of(OP_REGISTER_XFER_MEMORY)) > announced,
                  "the server's second RegisterXferMemory")
        assert peer.of(OP_REGISTER_XFER_MEMORY)[-1] == memory_msg(addr, length, rkey)
        assert peer.written == 0
        peer.write_imm(resp("PING"))
        peer.wait(lambda: len(peer.data()) >= len(expected), "PONG after the new announcement")
        assert peer.data() == expected

        # keepalives: opcode 2 and 30 zero bytes (§2.2), every interval while connected
        peer.wait(lambda: len(peer.of(OP_KEEPALIVE)) >= 2, "two Keepalives")
        assert set(peer.of(OP_KEEPALIVE)) == {be(OP_KEEPALIVE, 2) + bytes(30)}

        # nothing unsolicited beyond Keepalive and RegisterXferMemory; one feature answer
        assert {opcode(msg) for msg in peer.messages} == {
            OP_GET_SERVER_FEATURE, OP_KEEPALIVE, OP_REGISTER_XFER_MEMORY}
        assert len(peer.of(OP_GET_SERVER_FEATURE)) == 1
        assert not peer.errors
    finally:
        peer.close()
