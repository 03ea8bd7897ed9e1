"""A software RDMA fabric: reliable-connected QPs emulated across processes.

Owns a faithful-enough emulation of rdma_cm + RC verbs for tests and for hosts without
RDMA hardware. Every object that the event loop watches is a real fd:

* a listener is a unix stream socket in a rendezvous directory (``PYKV_SOFTRDMA_DIR``,
  default ``/tmp/pykv-softrdma-<uid>``) named after the bound IP and port, plus an eventfd
  as its CM event channel; child connections report ESTABLISHED/DISCONNECTED there too;
* a connection is one unix stream socket per QP pair (the "wire") plus an eventfd as the
  completion channel, signalled only when the CQ is armed, once per arming.

The "NIC" of each process runs when its wire fd is readable (``pump``): it plays the
responder for the peer's requests and the requester for their acknowledgements. Payload
travels with the request and is placed into the responder's MR at the moment the
completion is generated, after the responder checked the rkey (its own PD), the
REMOTE_WRITE access and the bounds — so access errors are caught exactly where hardware
catches them. Reproduced semantics: in-order delivery; WRITE_WITH_IMM and SEND consume a
posted receive (an empty RQ is an RNR stall that blocks later requests; ``rnr_retry`` 7
waits for a repost, lower values fail at once with RNR_RETRY_EXC_ERR — the timed retries
are collapsed); SEND larger than the receive ⇒ LOC_LEN_ERR / REM_INV_REQ_ERR; SQ/RQ depth
limits (ENOMEM); unsignaled SQ entries freed only when a later signaled completion is
polled; CQ overrun; errors move the QP to ERR and flush everything posted; a peer that
vanished without a DISCONNECT produces RETRY_EXC_ERR on the next request; CQ events and CM
events must be acked exactly before destruction. MRs are poisoned (0xA5) at registration
so reading beyond what was written shows up. ``PYKV_SOFTRDMA_ESTABLISHED=late`` delivers the
server's ESTABLISHED only after the client's first message (the CM race of §1.4), and
``PYKV_SOFTRDMA_UNATTRIBUTED=1`` reports child CM events without their connection.

Known difference from hardware: a process's NIC runs only while that process services its
fds, so a peer that stops polling also stops acknowledging (an HCA would keep ACKing until
its receive queue ran dry). The server copes either way (it never piles up keepalives).
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import random
import socket
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from pykv.rdma import verbs as v

POISON = 0xA5

# wire packet types
P_WRITE, P_WRITE_IMM, P_SEND, P_ACK, P_NAK, P_REQ, P_REP, P_REJ, P_RTU, P_DISC = range(1, 11)
# type, status, psn, rkey, imm, remote addr, payload length
_HDR = struct.Struct(">BBxxIIIQI")
HDR = _HDR.size
# REQ/REP payload: rnr_retry, address text
_CONN = struct.Struct(">B47s")

QPS_RESET, QPS_RTS, QPS_ERR = "RESET", "RTS", "ERR"


def fabric_dir() -> str:
    path = os.environ.get("PYKV_SOFTRDMA_DIR") or f"/tmp/pykv-softrdma-{os.getuid()}"
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _listen_path(ip: str, port: int) -> str:
    return os.path.join(fabric_dir(), f"{ip}:{port}")


_used_keys: set[int] = set()


def _new_key() -> int:
    while True:
        key = random.getrandbits(32)
        if key and key not in _used_keys:
            _used_keys.add(key)
            return key


class SoftMR(v.MemoryRegion):
    """A registered region: page-aligned anonymous mmap with a real virtual address."""

    def __init__(self, pd: SoftPD, length: int, access_remote_write: bool) -> None:
        self.pd = pd
        self.length = length
        self._map = mmap.mmap(-1, max(length, 1))
        self._map.write(bytes([POISON]) * length)
        self.view = memoryview(self._map)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        self.lkey = _new_key()
        self.rkey = _new_key()
        self.remote_write = access_remote_write
        self.valid = True

    def read(self, offset: int, n: int) -> bytes:
        return bytes(self.view[offset:offset + n])

    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        self.view[offset:offset + len(data)] = data

    def dereg(self) -> None:
        if self.valid:
            self.valid = False
            self.pd.mrs.pop(self.lkey, None)
            self.pd.by_rkey.pop(self.rkey, None)
            _used_keys.discard(self.lkey)
            _used_keys.discard(self.rkey)
            self.view.release()
            try:
                self._map.close()
            except BufferError:
                pass


class SoftPD:
    def __init__(self) -> None:
        self.mrs: dict[int, SoftMR] = {}
        self.by_rkey: dict[int, SoftMR] = {}

    def reg(self, length: int, remote_write: bool) -> SoftMR:
        mr = SoftMR(self, length, remote_write)
        self.mrs[mr.lkey] = mr
        self.by_rkey[mr.rkey] = mr
        return mr

    def local(self, lkey: int, addr: int, length: int) -> tuple[SoftMR, int]:
        mr = self.mrs.get(lkey)
        if mr is None or not mr.valid:
            raise v.VerbsError(errno.EINVAL, "invalid lkey")
        off = addr - mr.addr
        if off < 0 or off + length > mr.length:
            raise v.VerbsError(errno.EINVAL, "SGE outside its MR")
        return mr, off


@dataclass(slots=True)
class _SendWR:
    psn: int
    wr_id: int
    opcode: int
    signaled: bool


@dataclass(slots=True)
class _CQE:
    wc: v.WorkCompletion
    sq_release: int = 0   # SQ entries freed when this completion is polled


class SoftQP(v.QueuePair):
    """PD + completion channel (eventfd) + CQ + RC QP on one wire socket."""

    def __init__(self, sock: socket.socket, *, cq_size: int = 2048, max_send_wr: int = 1024,
                 max_recv_wr: int = 1024, cm_sink: Callable[[int, SoftQP], None] | None = None,
                 peer_address: str = "", local_address: str = "") -> None:
        self.sock = sock
        sock.setblocking(False)
        self.wire_fd = sock.fileno()
        self.comp_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.pd = SoftPD()
        self.cq_size = cq_size
        self.max_send_wr, self.max_recv_wr = max_send_wr, max_recv_wr
        self.cq: deque[_CQE] = deque()
        self.cq_overrun = False
        self.armed = False
        self.events_pending = 0
        self.events_reported = 0
        self.events_acked = 0
        self.state = QPS_RESET
        self.rq: deque[tuple[int, SoftMR, int, int]] = deque()
        self.sq: deque[_SendWR] = deque()     # posted, not yet acknowledged
        self.sq_used = 0
        self.unsignaled = 0                    # unsignaled WRs since the last signaled one
        self.next_psn = 1
        self.peer_rnr_retry = 7                # the peer's requester rnr_retry (from REQ/REP)
        self.rnr_retry = 7
        self.peer_gone = False                 # wire EOF: the peer vanished
        self.peer_disconnected = False
        self.inbuf = bytearray()
        self.outq = bytearray()
        self.in_pump = False      # completions made while pumping are reported by the caller
        self.fd_signaled = False  # the eventfd holds an unread notification
        self.stalled = False
        self.cm_sink = cm_sink
        self.late_established = False
        self.client_events: deque[int] = deque()
        self.peer_address, self.local_address = peer_address, local_address
        self.closed = False
        self.stats_rnr = 0

    # -- resources -----------------------------------------------------------------------
    def aux_fds(self) -> list[int]:
        return [] if self.peer_gone or self.closed else [self.wire_fd]

    def reg_mr(self, length: int, remote_write: bool) -> SoftMR:
        return self.pd.reg(length, remote_write)

    # -- posting ---------------------------------------------------------------------------
    def post_recv(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int) -> None:
        if len(self.rq) >= self.max_recv_wr:
            raise v.VerbsError(errno.ENOMEM, "receive queue full")
        if self.pd.mrs.get(mr.lkey) is not mr or offset < 0 or offset + length > mr.length:
            raise v.VerbsError(errno.EINVAL, "receive SGE outside a valid MR")
        if self.state == QPS_ERR:
            self._push(v.WorkCompletion(wr_id, v.WC_WR_FLUSH_ERR, v.WC_RECV))
            return
        self.rq.append((wr_id, mr, offset, length))  # type: ignore[arg-type]
        if self.stalled:
            self._process()

    def post_send(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int,
                  signaled: bool) -> None:
        self._post(P_SEND, wr_id, mr, offset, length, 0, 0, 0, signaled)

    def post_write_imm(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int,
                       remote_addr: int, rkey: int, imm: int, signaled: bool) -> None:
        self._post(P_WRITE_IMM, wr_id, mr, offset, length, remote_addr, rkey, imm, signaled)

    def post_write(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int,
                   remote_addr: int, rkey: int, signaled: bool) -> None:
        self._post(P_WRITE, wr_id, mr, offset, length, remote_addr, rkey, 0, signaled)

    def _post(self, ptype: int, wr_id: int, mr: v.MemoryRegion, offset: int, length: int,
              raddr: int, rkey: int, imm: int, signaled: bool) -> None:
        if self.closed:
            raise v.VerbsError(errno.EINVAL, "QP destroyed")
        if self.sq_used >= self.max_send_wr:
            raise v.VerbsError(errno.ENOMEM, "send queue full")
        if self.pd.mrs.get(mr.lkey) is not mr or offset < 0 or offset + length > mr.length:
            raise v.VerbsError(errno.EINVAL, "SGE outside a valid MR")
        opcode = v.WC_SEND if ptype == P_SEND else v.WC_RDMA_WRITE
        self.sq_used += 1
        if self.state == QPS_ERR:
            self._push(v.WorkCompletion(wr_id, v.WC_WR_FLUSH_ERR, opcode), self._release(True))
            return
        if self.state != QPS_RTS:
            raise v.VerbsError(errno.EINVAL, "QP is not in RTS")
        wr = _SendWR(self.next_psn, wr_id, opcode, signaled)
        self.next_psn += 1
        self.sq.append(wr)
        if self.peer_gone:
            self._error(v.WC_RETRY_EXC_ERR)
            return
        # flag bit 0 = AckReq: the responder acknowledges at once (coalesced otherwise)
        hdr = _HDR.pack(ptype, 1 if signaled else 0, wr.psn, rkey, imm, raddr, length)
        self._send(hdr, mr.view[offset:offset + length])

    def _send(self, hdr: bytes, payload: memoryview | bytes = b"") -> None:
        """Put a packet on the wire without ever blocking: what the socket does not take
        now waits in ``outq`` and goes out when the wire is writable (``pump_write``)."""
        if self.peer_gone or self.closed:
            return
        if self.outq:
            self.outq += hdr
            self.outq += payload
            return
        try:
            n = self.sock.sendmsg([hdr, payload]) if payload else self.sock.send(hdr)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self._peer_vanished()
            return
        if n < len(hdr):
            self.outq += hdr[n:]
            self.outq += payload
        elif n < len(hdr) + len(payload):
            self.outq += payload[n - len(hdr):]

    def write_fds(self) -> list[int]:
        return [self.wire_fd] if self.outq and not self.peer_gone and not self.closed else []

    def pump_write(self, fd: int) -> None:
        if not self.outq or self.peer_gone or self.closed:
            return
        try:
            n = self.sock.send(self.outq)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._peer_vanished()
            return
        del self.outq[:n]

    # -- completion channel and CQ -----------------------------------------------------------
    def _release(self, signaled: bool) -> int:
        if signaled:
            n = self.unsignaled + 1
            self.unsignaled = 0
            return n
        self.unsignaled += 1
        return 0

    def _push(self, wc: v.WorkCompletion, sq_release: int = 0) -> None:
        if len(self.cq) >= self.cq_size:
            self.cq_overrun = True
            self.state = QPS_ERR
            return
        self.cq.append(_CQE(wc, sq_release))
        if self.armed:
            self.armed = False
            self.events_pending += 1
            if not self.in_pump and not self.fd_signaled:
                self.fd_signaled = True
                os.eventfd_write(self.comp_fd, 1)

    def req_notify(self) -> None:
        self.armed = True
        if self.cq:  # hardware would not re-signal old entries; we follow it
            pass

    def get_cq_event(self) -> bool:
        if not self.events_pending:
            return False
        self.events_pending -= 1
        self.events_reported += 1
        if not self.events_pending and self.fd_signaled:
            self.fd_signaled = False
            try:
                os.eventfd_read(self.comp_fd)
            except BlockingIOError:
                pass
        return True

    def ack_cq_events(self, n: int) -> None:
        if self.events_acked + n > self.events_reported:
            raise v.VerbsError(errno.EINVAL, "acked more CQ events than were reported")
        self.events_acked += n

    def poll(self, max_entries: int) -> list[v.WorkCompletion]:
        if self.cq_overrun:
            raise v.VerbsError(errno.EIO, "CQ overrun")
        out = []
        cq = self.cq
        while cq and len(out) < max_entries:
            e = cq.popleft()
            self.sq_used -= e.sq_release
            out.append(e.wc)
        return out

    # -- the NIC ------------------------------------------------------------------------------
    def pump(self, fd: int) -> bool:
        if self.closed or self.peer_gone:
            return False
        try:
            data = self.sock.recv(262144)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            data = b""
        if not data:
            self._peer_vanished()
            return False
        self.inbuf += data
        self.in_pump = True
        try:
            self._process()
        finally:
            self.in_pump = False
        if self.outq:
            self.pump_write(fd)
        return not self.peer_gone

    def _process(self) -> None:
        buf = self.inbuf
        pos = 0
        last_psn = 0
        ack_req = False
        self.stalled = False
        try:
            while len(buf) - pos >= HDR:
                ptype, status, psn, rkey, imm, raddr, length = _HDR.unpack_from(buf, pos)
                has_payload = ptype in (P_WRITE, P_WRITE_IMM, P_SEND, P_REQ, P_REP)
                end = pos + HDR + (length if has_payload else 0)
                if len(buf) < end:
                    break
                payload = memoryview(buf)[pos + HDR:end]
                try:
                    if ptype in (P_WRITE, P_WRITE_IMM, P_SEND):
                        done = self._respond(ptype, psn, rkey, imm, raddr, payload)
                        if not done:
                            self.stalled = True
                            break
                        last_psn = psn
                        ack_req = ack_req or bool(status & 1)
                        if self.late_established and self.cm_sink:
                            self.late_established = False
                            self.cm_sink(v.CM_ESTABLISHED, self)
                    else:
                        self._control(ptype, status, psn, payload)
                finally:
                    payload.release()
                pos = end
        finally:
            if pos:
                del buf[:pos]
            if ack_req and not self.peer_gone:
                self._send(_HDR.pack(P_ACK, 0, last_psn, 0, 0, 0, 0))

    def _respond(self, ptype: int, psn: int, rkey: int, imm: int, raddr: int,
                 payload: memoryview) -> bool:
        """Responder: place one request; False when it must wait (RNR)."""
        if self.state != QPS_RTS:
            return True  # an errored responder stays silent; the requester will time out
        n = len(payload)
        if ptype != P_SEND:
            mr = self.pd.by_rkey.get(rkey)
            off = raddr - mr.addr if mr is not None else -1
            if mr is None or not mr.valid or not mr.remote_write or off < 0 or off + n > mr.length:
                self._nak(psn, v.WC_REM_ACCESS_ERR)
                self._error(v.WC_WR_FLUSH_ERR, requester=False)
                return True
            if ptype == P_WRITE:
                mr.view[off:off + n] = payload
                return True
        if not self.rq:
            self.stats_rnr += 1
            if self.peer_rnr_retry < 7:
                self._nak(psn, v.WC_RNR_RETRY_EXC_ERR)
                return True
            return False
        wr_id, rmr, roff, rlen = self.rq.popleft()
        if ptype == P_SEND:
            if n > rlen:
                self._push(v.WorkCompletion(wr_id, v.WC_LOC_LEN_ERR, v.WC_RECV, n))
                self._nak(psn, v.WC_REM_INV_REQ_ERR)
                self._error(v.WC_WR_FLUSH_ERR, requester=False)
                return True
            rmr.view[roff:roff + n] = payload
            self._push(v.WorkCompletion(wr_id, v.WC_SUCCESS, v.WC_RECV, n))
        else:
            mr.view[off:off + n] = payload
            self._push(v.WorkCompletion(wr_id, v.WC_SUCCESS, v.WC_RECV_RDMA_WITH_IMM, n, imm))
        return True

    def _nak(self, psn: int, status: int) -> None:
        self._send(_HDR.pack(P_NAK, status, psn, 0, 0, 0, 0))

    def _control(self, ptype: int, status: int, psn: int, payload: memoryview) -> None:
        if ptype == P_ACK:
            sq = self.sq
            while sq and sq[0].psn <= psn:
                wr = sq.popleft()
                if wr.signaled:
                    self._push(v.WorkCompletion(wr.wr_id, v.WC_SUCCESS, wr.opcode),
                               self._release(True))
                else:
                    self._release(False)
        elif ptype == P_NAK:
            sq = self.sq
            while sq and sq[0].psn < psn:  # everything before the NAKed one succeeded
                wr = sq.popleft()
                if wr.signaled:
                    self._push(v.WorkCompletion(wr.wr_id, v.WC_SUCCESS, wr.opcode),
                               self._release(True))
                else:
                    self._release(False)
            self._error(status)
        elif ptype == P_RTU:
            if self.state == QPS_RESET:
                self.state = QPS_RTS
            if self.cm_sink:
                if os.environ.get("PYKV_SOFTRDMA_ESTABLISHED") == "late":
                    # race injection: the peer's first message overtakes ESTABLISHED
                    self.late_established = True
                else:
                    self.cm_sink(v.CM_ESTABLISHED, self)
        elif ptype == P_DISC:
            self.peer_disconnected = True
            self.peer_gone = True
            if self.cm_sink:
                self.cm_sink(v.CM_DISCONNECTED, self)
                self.cm_sink(v.CM_TIMEWAIT_EXIT, self)
            else:
                self.client_events.append(v.CM_DISCONNECTED)

    def _error(self, status: int, requester: bool = True) -> None:
        """Move to ERR: the head send WR gets ``status``, everything else is flushed."""
        if self.state == QPS_ERR and not self.sq:
            return
        self.state = QPS_ERR
        first = requester
        while self.sq:
            wr = self.sq.popleft()
            self._push(v.WorkCompletion(wr.wr_id, status if first else v.WC_WR_FLUSH_ERR,
                                        wr.opcode), self._release(True))
            first = False
        while self.rq:
            wr_id = self.rq.popleft()[0]
            self._push(v.WorkCompletion(wr_id, v.WC_WR_FLUSH_ERR, v.WC_RECV))

    def _peer_vanished(self) -> None:
        if self.peer_gone:
            return
        self.peer_gone = True
        if self.sq and self.state == QPS_RTS:
            self._error(v.WC_RETRY_EXC_ERR)

    def cm_events(self) -> list[int]:
        out = list(self.client_events)
        self.client_events.clear()
        return out

    # -- teardown ---------------------------------------------------------------------------
    def disconnect(self) -> None:
        if self.closed:
            return
        if not self.peer_gone:
            self._send(_HDR.pack(P_DISC, 0, 0, 0, 0, 0, 0))
        self._error(v.WC_WR_FLUSH_ERR, requester=False)

    def close(self) -> None:
        if self.closed:
            return
        if self.outq and not self.peer_gone:
            try:  # last words (e.g. the DISCONNECT) get a bounded chance to leave
                self.sock.settimeout(1.0)
                self.sock.sendall(self.outq)
            except OSError:
                pass
        self.state = QPS_ERR
        self.closed = True
        self.sq.clear()
        self.rq.clear()
        self.cq.clear()
        try:
            self.sock.close()
        finally:
            os.close(self.comp_fd)
            for mr in list(self.pd.mrs.values()):
                mr.dereg()
        if self.events_acked != self.events_reported:
            raise v.VerbsError(errno.EBUSY, f"CQ destroyed with {self.events_reported - self.events_acked} unacked events")


class _SoftRequest(v.ConnectRequest):
    def __init__(self, listener: SoftListener, sock: socket.socket, rnr_retry: int,
                 peer: str) -> None:
        self.listener = listener
        self.sock = sock
        self.rnr_retry = rnr_retry
        self.peer_address = peer
        self.local_address = f"{listener.bind}:{listener.port}"
        self.qp: SoftQP | None = None

    def create_qp(self, comp_vector: int) -> SoftQP:
        self.qp = SoftQP(self.sock, cm_sink=self.listener._child_event,
                         peer_address=self.peer_address, local_address=self.local_address)
        # RC semantics: the client's QP retries RNR as often as our accept says
        self.qp.rnr_retry = self.listener.accept_rnr_retry
        self.qp.peer_rnr_retry = self.listener.accept_rnr_retry
        return self.qp

    def accept(self, qp: v.QueuePair) -> None:
        assert isinstance(qp, SoftQP)
        qp.state = QPS_RTS
        qp._send(_HDR.pack(P_REP, 0, 0, 0, 0, 0, _CONN.size),
                 _CONN.pack(qp.rnr_retry, self.local_address.encode()))
        self.listener.children.add(qp)

    def reject(self) -> None:
        try:
            self.sock.setblocking(True)
            self.sock.sendall(_HDR.pack(P_REJ, 0, 0, 0, 0, 0, 0))
        except OSError:
            pass
        if self.qp is not None:
            self.qp.close()
        else:
            self.sock.close()


class SoftListener(v.CmListener):
    """Listening socket + event channel (eventfd) shared by the listener and its children."""

    def __init__(self, ip: str, port: int, backlog: int) -> None:
        self.bind, self.port = ip, port
        self.path = _listen_path(ip, port)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if os.path.exists(self.path):
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    probe.connect(self.path)
                    raise v.SetupError(f"RDMA address {ip}:{port} is already in use")
                except (ConnectionRefusedError, FileNotFoundError):
                    os.unlink(self.path)
                finally:
                    probe.close()
            self.sock.bind(self.path)
            self.sock.listen(backlog)
        except BaseException:
            self.sock.close()
            raise
        self.sock.setblocking(False)
        self.chan_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.events: deque[v.CmEvent] = deque()
        self.unacked = 0
        self.children: set[SoftQP] = set()
        self.stopped = False
        self.unattributed = os.environ.get("PYKV_SOFTRDMA_UNATTRIBUTED") == "1"
        # rnr_retry of our accept (the connecting QP's RNR retries); 7 = forever
        self.accept_rnr_retry = int(os.environ.get("PYKV_SOFTRDMA_ACCEPT_RNR_RETRY", "7"))

    def fds(self) -> list[int]:
        return [self.chan_fd] if self.stopped else [self.sock.fileno(), self.chan_fd]

    def stop_listening(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.sock.close()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def pump(self, fd: int) -> None:
        if self.stopped or fd != self.sock.fileno():
            return
        for _ in range(64):
            try:
                conn, _addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            try:
                conn.settimeout(2.0)
                hdr = _recv_exact(conn, HDR)
                ptype, _s, _p, _k, _i, _a, length = _HDR.unpack(hdr)
                body = _recv_exact(conn, length)
                if ptype != P_REQ or length != _CONN.size:
                    raise OSError("bad connect request")
                rnr, addr = _CONN.unpack(body)
            except OSError:
                conn.close()
                continue
            req = _SoftRequest(self, conn, rnr, addr.rstrip(b"\0").decode())
            self._queue(v.CmEvent(v.CM_CONNECT_REQUEST, request=req))

    def _queue(self, ev: v.CmEvent) -> None:
        self.unacked += 1

        def ack() -> None:
            self.unacked -= 1
        ev.ack = ack
        self.events.append(ev)
        os.eventfd_write(self.chan_fd, 1)

    def _child_event(self, etype: int, qp: SoftQP) -> None:
        if etype == v.CM_TIMEWAIT_EXIT:
            self.children.discard(qp)
        # PYKV_SOFTRDMA_UNATTRIBUTED=1 reports child events without their connection, as
        # a pyverbs build would where event->id cannot be read (exercises the fallbacks)
        self._queue(v.CmEvent(etype, qp=None if self.unattributed else qp))

    def get_event(self) -> v.CmEvent | None:
        if not self.events:
            try:
                os.eventfd_read(self.chan_fd)
            except BlockingIOError:
                pass
            return None
        return self.events.popleft()

    def close(self) -> None:
        try:
            self.stop_listening()
            os.close(self.chan_fd)
        finally:
            pending = [e for e in self.events if e.ack is not None]
            self.events.clear()
            if self.unacked - len(pending) > 0:
                raise v.VerbsError(errno.EBUSY, "listener destroyed with unacked CM events")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionResetError("peer closed during connection setup")
        buf += chunk
    return bytes(buf)


def _check_local_ip(ip: str) -> None:
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.bind((ip, 0))
    except OSError as exc:
        raise v.SetupError(
            f"RDMA bind address {ip} is not an address of this host ({exc.strerror}); "
            f"bind an IP of an RDMA-capable interface") from None


class SoftBackend(v.Backend):
    name = "soft"

    def listen(self, ip: str, port: int, backlog: int) -> SoftListener:
        if ip in ("*", "0.0.0.0", "::*", "::"):
            raise v.SetupError("RDMA cannot bind a wildcard address: bind each RDMA-capable IP")
        _check_local_ip(ip)
        return SoftListener(ip, port, backlog)

    def connect(self, host: str, port: int, timeout: float,
                prepare: Callable[[v.QueuePair], None], rnr_retry: int = 7) -> SoftQP:
        path = _listen_path(host, port)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise ConnectionRefusedError(
                errno.ECONNREFUSED, f"RDMA connect to {host}:{port} rejected ({exc.strerror})"
            ) from None
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind((host, 0))
                local = f"{host}:{probe.getsockname()[1]}"
            except OSError:
                local = f"127.0.0.1:{random.randint(32768, 60999)}"
        qp = SoftQP(sock, peer_address=f"{host}:{port}", local_address=local)
        qp.rnr_retry = rnr_retry
        try:
            prepare(qp)
            sock.setblocking(True)
            sock.settimeout(timeout)
            sock.sendall(_HDR.pack(P_REQ, 0, 0, 0, 0, 0, _CONN.size)
                         + _CONN.pack(rnr_retry, local.encode()))
            hdr = _recv_exact(sock, HDR)
            ptype, _s, _p, _k, _i, _a, length = _HDR.unpack(hdr)
            if ptype != P_REP:
                raise ConnectionRefusedError(errno.ECONNREFUSED,
                                             f"RDMA connect to {host}:{port} rejected")
            _CONN.unpack(_recv_exact(sock, length))
            # the server's QP retries RNR as often as our connect parameters say
            qp.peer_rnr_retry = rnr_retry
            qp.state = QPS_RTS
            sock.sendall(_HDR.pack(P_RTU, 0, 0, 0, 0, 0, 0))
            sock.setblocking(False)
        except BaseException:
            qp.close()
            raise
        return qp

