"""Real verbs through pyverbs: rdma_cm listeners and RC queue pairs for the RDMA transport.

Owns everything that touches pyverbs (imported only when this backend is selected), and
the work-arounds its API needs (protocol doc §7):

* pyverbs 44 exposes no fds: the CM event-channel fd and each completion-channel fd are
  found by diffing ``/proc/self/fd`` around their creation (``CompChannel.fd`` is used when
  present, rdma-core >= 57), then made non-blocking for the server's event loop;
* ``CMID`` cannot post WRITE_WITH_IMM, so each connection uses an external RC QP moved
  INIT → RTR → RTS with ``init_qp_attr`` before ``accept(qp_num=…)``, as librdmacm does for
  its own QPs;
* ``CMEvent`` does not say which cm_id an event is for; the ``rdma_cm_event`` behind the
  Python object is located (and validated against the channel fd) with ctypes to read
  ``event->id``. If that validation fails, events stay unattributed and connections fall
  back to announcing their window on the first inbound completion and detecting dead peers
  by a probe SEND;
* both module layouts of pyverbs (``cm_enums``/``enums`` up to v4x, ``librdmacm_enums``/
  ``libibverbs_enums`` from v50) are accepted; when pyverbs was compiled with Cython 3
  (PyPI's wheels, rdma-core >= 50 built today) the enum modules export only the enum
  classes (``ibv_qp_type.IBV_QPT_RC``), not the constants, so ``_Constants`` looks a name
  up in the module first and then among its enum classes.

CM events are acked as soon as they are read (child ids are created first), so destroying an
id never waits on an unacked event.
"""
from __future__ import annotations

import enum
import errno
import fcntl
import os
import select
import socket
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from pykv.rdma import verbs as v

_pv: Any = None  # the imported pyverbs modules (a namespace), set by _import()


class _Constants:
    """``IBV_*``/``RDMA_*`` constants of one pyverbs enum module by name: a module-level
    name (pyverbs 44, or any pyverbs compiled with Cython 0.29), else the member of that
    name of one of the module's enum classes (Cython 3 keeps ``cpdef enum`` members inside
    their class). Found once, then cached as an attribute."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        module = self._module
        try:
            value = getattr(module, name)
        except AttributeError:
            for cls in list(vars(module).values()):
                if isinstance(cls, type) and issubclass(cls, enum.Enum) \
                        and name in cls.__members__:
                    value = cls.__members__[name]
                    break
            else:
                raise AttributeError(f"{module.__name__} has no constant {name}") from None
        setattr(self, name, value)
        return value


def _import() -> Any:
    global _pv
    if _pv is not None:
        return _pv
    try:
        try:
            import pyverbs.libibverbs_enums as e
            import pyverbs.librdmacm_enums as ce
        except ImportError:
            import pyverbs.cm_enums as ce  # type: ignore[no-redef]
            import pyverbs.enums as e  # type: ignore[no-redef]
        from pyverbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam
        from pyverbs.cq import CQ, CompChannel
        from pyverbs.device import Context, get_device_list
        from pyverbs.mr import MR
        from pyverbs.pd import PD
        from pyverbs.pyverbs_error import PyverbsRDMAError
        from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
        from pyverbs.wr import SGE, RecvWR, SendWR
    except ImportError as exc:
        raise v.SetupError(
            f"RDMA: pyverbs is not available ({exc}); on Debian 12 install python3-pyverbs "
            "and use a venv with --system-site-packages, elsewhere pip install 'pykv[rdma]', "
            "or use the software fabric (backend=soft)") from None
    _pv = SimpleNamespace(
        e=_Constants(e), ce=_Constants(ce), CMID=CMID, AddrInfo=AddrInfo, CMEvent=CMEvent,
        CMEventChannel=CMEventChannel, ConnParam=ConnParam, CQ=CQ, CompChannel=CompChannel,
        get_device_list=get_device_list, Context=Context, MR=MR, PD=PD, PyverbsRDMAError=PyverbsRDMAError,
        QP=QP, QPAttr=QPAttr, QPCap=QPCap, QPInitAttr=QPInitAttr, SGE=SGE, RecvWR=RecvWR,
        SendWR=SendWR)
    return _pv


def load_pyverbs_backend() -> PyverbsBackend:
    pv = _import()
    v.check_rdma_cm()
    try:
        devices = pv.get_device_list()
    except Exception:
        devices = []
    if not devices:
        raise v.no_device_error()
    _fork_init()
    return PyverbsBackend(pv)


def _fork_init() -> None:
    """The server forks for BGSAVE/BGREWRITEAOF: make registered memory fork-safe before
    any MR exists (a no-op on kernels that copy pinned pages at fork, Linux >= 5.13).
    Children never touch RDMA objects."""
    try:
        from pyverbs.fork import fork_init

        fork_init()
    except Exception:  # already initialised, or unsupported: nothing more to do
        pass


def _fds() -> dict[int, str]:
    """Open fds and what they point to (the listing's own transient fd drops out: its link
    can no longer be read once the listing is done)."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    return out


def _new_fd(before: dict[int, str], want: str) -> int:
    new = {fd: link for fd, link in _fds().items() if before.get(fd) != link}
    for fd, link in sorted(new.items()):
        if want in link:
            return fd
    raise v.VerbsError(errno.EBADF, f"cannot identify the new {want} fd among {new}")


def _nonblock(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


_mem_fd = -1


def _peek(addr: int, n: int) -> bytes | None:
    """Read ``n`` bytes of our own memory without risking a fault: ``/proc/self/mem``
    answers EIO for unmapped addresses where a ctypes dereference would crash."""
    global _mem_fd
    if addr < 4096:
        return None
    if _mem_fd < 0:
        _mem_fd = os.open("/proc/self/mem", os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.pread(_mem_fd, n, addr)
    except (OSError, OverflowError):
        return None
    return data if len(data) == n else None


def _word(addr: int) -> int:
    data = _peek(addr, 8)
    return int.from_bytes(data, "little") if data else 0


def _int32(addr: int) -> int | None:
    data = _peek(addr, 4)
    return int.from_bytes(data, "little", signed=True) if data else None


def _event_id(ev: Any, chan_fd: int) -> int:
    """``event->id`` of a pyverbs CMEvent, validated (0 when it cannot be found safely).

    The CMEvent object holds a ``struct rdma_cm_event *`` (``{id, listen_id, event, status,
    …}``); a candidate is accepted only if its event type matches and ``id->channel->fd``
    is our channel's fd. Every read goes through ``_peek``, so a wrong guess cannot crash."""
    base = id(ev)
    etype = ev.event_type
    for off in range(16, 96, 8):
        p = _word(base + off)
        if _int32(p + 16) != etype:
            continue
        cm_id = _word(p)
        chan = _word(cm_id + 8) if cm_id else 0
        if chan and _int32(chan) == chan_fd:
            return cm_id
    return 0


class PyverbsMR(v.MemoryRegion):
    def __init__(self, mr: Any, length: int) -> None:
        self.mr = mr
        self.addr = mr.buf
        self.length = length
        self.lkey = mr.lkey
        self.rkey = mr.rkey

    def read(self, offset: int, n: int) -> bytes:
        return self.mr.read(n, offset)

    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        if not isinstance(data, bytes):
            data = bytes(data)
        self.mr.write(data, len(data), offset)


class PyverbsQP(v.QueuePair):
    """PD + comp channel + CQ(2048) + external RC QP for one CM id."""

    drain_on_close = False   # a WC object per flushed receive (1024) is most of a teardown

    def __init__(self, pv: Any, cmid: Any, comp_vector: int, *, cq_size: int = 2048,
                 max_wr: int = 1024, ctx: Any = None) -> None:
        self.pv = pv
        self.cmid = cmid
        ctx = ctx if ctx is not None else cmid.context
        self.pd = pv.PD(ctx)
        before = _fds()
        self.cc = pv.CompChannel(ctx)
        fd = getattr(self.cc, "fd", None)
        self.comp_fd = fd if isinstance(fd, int) else _new_fd(before, "infiniband")
        _nonblock(self.comp_fd)
        nvec = max(1, getattr(ctx, "num_comp_vectors", 1) or 1)
        vec = (os.getpid() + id(self)) % nvec if comp_vector < 0 else comp_vector % nvec
        self.cq = pv.CQ(ctx, cq_size, None, self.cc, vec)
        cap = pv.QPCap(max_send_wr=max_wr, max_recv_wr=max_wr, max_send_sge=1, max_recv_sge=1)
        init = pv.QPInitAttr(qp_type=pv.e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap,
                             sq_sig_all=0)
        self.qp = pv.QP(self.pd, init)
        self.mrs: list[PyverbsMR] = []
        self._sg: Any = None
        self._recv_wrs: dict[tuple[int, int, int, int], Any] = {}
        self.closed = False
        self.events: list[int] = []
        self._modify(pv.e.IBV_QPS_INIT)

    def _modify(self, state: int, min_rnr_timer: int | None = None) -> None:
        e = self.pv.e
        attr, mask = self.cmid.init_qp_attr(state)
        if state == e.IBV_QPS_INIT:
            # the active side gets no access flags from rdma_cm before connecting: without
            # REMOTE_WRITE the peer's WRITE_WITH_IMM is NAKed as an invalid request
            attr.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                                    | e.IBV_ACCESS_REMOTE_READ)
            mask |= e.IBV_QP_ACCESS_FLAGS
        if min_rnr_timer is not None:
            attr.min_rnr_timer = min_rnr_timer
        self.qp.modify(attr, mask)

    def to_rts(self) -> None:
        # 1 ≈ 0.01 ms RNR back-off: a slow Python reposting path costs little
        self._modify(self.pv.e.IBV_QPS_RTR, min_rnr_timer=1)
        self._modify(self.pv.e.IBV_QPS_RTS)

    def reg_mr(self, length: int, remote_write: bool) -> PyverbsMR:
        e = self.pv.e
        access = e.IBV_ACCESS_LOCAL_WRITE
        if remote_write:
            access |= e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        try:
            mr = PyverbsMR(self.pv.MR(self.pd, length, access), length)
        except self.pv.PyverbsRDMAError as exc:
            if getattr(exc, "error_code", 0) in (errno.ENOMEM, errno.EPERM):
                raise v.SetupError(v.memlock_advice(length)) from None
            raise
        self.mrs.append(mr)
        return mr

    def _sge(self, mr: v.MemoryRegion, offset: int, length: int) -> Any:
        """The QP's one SGE, pointed at ``mr[offset:offset+length]``: a WR copies its
        scatter list when it is made, so one object serves every WR built (every pyverbs
        object made costs a ``logging.getLogger`` call: most of a request's time under
        emulation)."""
        sg = self._sg
        if sg is None:
            sg = self._sg = self.pv.SGE(mr.addr + offset, length, mr.lkey)
        else:
            sg.addr, sg.length, sg.lkey = mr.addr + offset, length, mr.lkey
        return sg

    def post_recv(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int) -> None:
        # a receive slot is reposted with the same WR every time: made once per slot
        key = (wr_id, offset, length, mr.lkey)
        wr = self._recv_wrs.get(key)
        if wr is None:
            wr = self._recv_wrs[key] = self.pv.RecvWR(
                wr_id=wr_id, num_sge=1, sg=[self._sge(mr, offset, length)])
        try:
            self.qp.post_recv(wr)
        except self.pv.PyverbsRDMAError as exc:
            raise v.VerbsError(getattr(exc, "error_code", errno.EIO), str(exc)) from None

    def post_send(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int,
                  signaled: bool) -> None:
        e = self.pv.e
        wr = self.pv.SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[self._sge(mr, offset, length)],
                            send_flags=e.IBV_SEND_SIGNALED if signaled else 0)
        self._call(self.qp.post_send, wr)

    def post_write_imm(self, wr_id: int, mr: v.MemoryRegion, offset: int, length: int,
                       remote_addr: int, rkey: int, imm: int, signaled: bool) -> None:
        e = self.pv.e
        wr = self.pv.SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1,
                            sg=[self._sge(mr, offset, length)], imm_data=socket.htonl(imm),
                            send_flags=e.IBV_SEND_SIGNALED if signaled else 0)
        wr.set_wr_rdma(rkey, remote_addr)
        self._call(self.qp.post_send, wr)

    def _call(self, fn: Callable[[Any], Any], arg: Any) -> None:
        try:
            fn(arg)
        except self.pv.PyverbsRDMAError as exc:
            raise v.VerbsError(getattr(exc, "error_code", errno.EIO), str(exc)) from None

    def get_cq_event(self) -> bool:
        try:
            self.cc.get_cq_event(self.cq)
        except self.pv.PyverbsRDMAError as exc:
            if getattr(exc, "error_code", 0) in (errno.EAGAIN, errno.EWOULDBLOCK):
                return False
            raise v.VerbsError(getattr(exc, "error_code", errno.EIO), str(exc)) from None
        return True

    def ack_cq_events(self, n: int) -> None:
        self.cq.ack_events(n)

    def req_notify(self) -> None:
        self.cq.req_notify()

    def poll(self, max_entries: int) -> list[v.WorkCompletion]:
        n, wcs = self.cq.poll(max_entries)
        out = []
        for wc in wcs[:n] if n > 0 else ():
            imm = socket.ntohl(wc.imm_data) if wc.opcode == v.WC_RECV_RDMA_WITH_IMM else None
            out.append(v.WorkCompletion(wc.wr_id, wc.status, wc.opcode, wc.byte_len, imm))
        return out

    def cm_events(self) -> list[int]:
        out, self.events = self.events, []
        return out

    def disconnect(self) -> None:
        try:
            self.cmid.disconnect()
        except Exception:
            pass
        try:
            attr = self.pv.QPAttr(qp_state=self.pv.e.IBV_QPS_ERR)
            self.qp.modify(attr, self.pv.e.IBV_QP_STATE)
        except Exception:
            pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._recv_wrs.clear()
        for obj in (self.qp, self.cq, self.cc, *[m.mr for m in self.mrs], self.pd, self.cmid):
            try:
                obj.close()
            except Exception:
                pass


class _Request(v.ConnectRequest):
    def __init__(self, listener: PyverbsListener, cmid: Any, peer: str) -> None:
        self.listener = listener
        self.cmid = cmid
        self.peer_address = peer
        self.local_address = f"{listener.bind}:{listener.port}"
        self.qp: PyverbsQP | None = None

    def create_qp(self, comp_vector: int) -> PyverbsQP:
        self.qp = PyverbsQP(self.listener.pv, self.cmid, comp_vector, ctx=self.listener.ctx)
        self.qp.peer_address, self.qp.local_address = self.peer_address, self.local_address
        return self.qp

    def accept(self, qp: v.QueuePair) -> None:
        assert isinstance(qp, PyverbsQP)
        qp.to_rts()
        pv = self.listener.pv
        self.cmid.accept(pv.ConnParam(resources=1, depth=1, retry=5, rnr_retry=7,
                                      qp_num=qp.qp.qp_num))

    def reject(self) -> None:
        try:
            self.cmid.reject()
        finally:
            if self.qp is not None:
                self.qp.close()
            else:
                self.cmid.close()


class PyverbsListener(v.CmListener):
    def __init__(self, pv: Any, ip: str, port: int, backlog: int) -> None:
        self.pv = pv
        self.bind, self.port = ip, port
        before = _fds()
        self.ch = pv.CMEventChannel()
        self.chan_fd = _new_fd(before, "rdma_cm")
        _nonblock(self.chan_fd)
        self.lid = pv.CMID(creator=self.ch, port_space=pv.ce.RDMA_PS_TCP)
        try:
            ai = pv.AddrInfo(src=ip, src_service=str(port), port_space=pv.ce.RDMA_PS_TCP,
                             flags=pv.ce.RAI_PASSIVE)
            self.lid.bind_addr(ai)
            self.lid.listen(backlog)
        except pv.PyverbsRDMAError as exc:
            self.lid.close()
            self.ch.close()
            raise v.SetupError(
                f"RDMA: cannot listen on {ip}:{port} ({exc}); the bind address must be an IP "
                "of an RDMA-capable interface (see 'rdma link show')") from None
        # pyverbs gives every child CMID the listener's Context and PD objects and NULLs
        # both when a child is closed, so connections use a Context of their own
        # (same device: the kernel CM only needs the QP number)
        self.ctx = pv.Context(name=self.lid.dev_name)
        self.by_id: dict[int, Any] = {}       # cm_id pointer -> QP of that connection
        self.attributed = True

    def fds(self) -> list[int]:
        return [self.chan_fd]

    def get_event(self) -> v.CmEvent | None:
        pv = self.pv
        try:
            ev = pv.CMEvent(self.ch)
        except pv.PyverbsRDMAError as exc:
            if getattr(exc, "error_code", 0) in (errno.EAGAIN, errno.EWOULDBLOCK):
                return None
            raise v.VerbsError(getattr(exc, "error_code", errno.EIO), str(exc)) from None
        etype = ev.event_type
        cm_id = _event_id(ev, self.chan_fd)
        if etype == v.CM_CONNECT_REQUEST:
            child = pv.CMID(creator=ev, listen_id=self.lid)
            ev.ack_cm_event()
            local, peer = _cm_addresses(cm_id)
            req = _Request(self, child, peer or "?:0")
            if local:
                req.local_address = local
            orig_create = req.create_qp

            def create(comp_vector: int) -> PyverbsQP:
                qp = orig_create(comp_vector)
                if cm_id:
                    self.by_id[cm_id] = qp
                    qp._cm_key = cm_id  # type: ignore[attr-defined]
                else:
                    self.attributed = False
                return qp
            req.create_qp = create  # type: ignore[method-assign]
            return v.CmEvent(etype, request=req)
        ev.ack_cm_event()
        qp = self.by_id.get(cm_id) if cm_id else None
        if qp is not None and etype in (v.CM_DISCONNECTED, v.CM_TIMEWAIT_EXIT):
            self.by_id.pop(cm_id, None)
        return v.CmEvent(etype, qp=qp)

    def stop_listening(self) -> None:
        try:
            self.lid.close()
        except Exception:
            pass

    def close(self) -> None:
        for obj in (self.lid, self.ch, self.ctx):
            try:
                obj.close()
            except Exception:
                pass


def _sockaddr(ptr: int) -> str:
    """Format a ``struct sockaddr_storage`` at ``ptr`` as Redis prints addresses."""
    raw = _peek(ptr, 24)
    if raw is None:
        return ""
    family = int.from_bytes(raw[:2], "little")
    port = int.from_bytes(raw[2:4], "big")
    if family == socket.AF_INET:
        return f"{socket.inet_ntop(socket.AF_INET, raw[4:8])}:{port}"
    if family == socket.AF_INET6:
        return f"{socket.inet_ntop(socket.AF_INET6, raw[8:24])}:{port}"
    return ""


def _cm_addresses(cm_id: int) -> tuple[str, str]:
    """(local, peer) of an ``rdma_cm_id``: ``route.addr.{src,dst}_storage`` follow the
    four leading pointers (pyverbs 44 has no rdma_get_peer_addr)."""
    if not cm_id:
        return "", ""
    src = cm_id + 32
    return _sockaddr(src), _sockaddr(src + 128)




class PyverbsBackend(v.Backend):
    name = "pyverbs"

    def __init__(self, pv: Any) -> None:
        self.pv = pv

    def default_binds(self) -> list[str]:
        return v.rdma_ipv4_addresses() or ["127.0.0.1"]

    def listen(self, ip: str, port: int, backlog: int) -> PyverbsListener:
        v.check_listen(ip, " with pyverbs")
        return PyverbsListener(self.pv, ip, port, backlog)

    def connect(self, host: str, port: int, timeout: float,
                prepare: Callable[[v.QueuePair], None], rnr_retry: int = 7) -> PyverbsQP:
        pv = self.pv
        before = _fds()
        ch = pv.CMEventChannel()
        chan_fd = _new_fd(before, "rdma_cm")
        cid = pv.CMID(creator=ch, port_space=pv.ce.RDMA_PS_TCP)
        deadline = time.monotonic() + timeout

        ids: list[int] = []

        def wait(want: int) -> None:
            left = max(0.0, deadline - time.monotonic())
            if not select.select([chan_fd], [], [], left)[0]:
                raise TimeoutError(f"RDMA: connect to {host}:{port} timed out")
            ev = pv.CMEvent(ch)
            got = ev.event_type
            ids.append(_event_id(ev, chan_fd))
            ev.ack_cm_event()
            if got != want:
                raise ConnectionRefusedError(
                    errno.ECONNREFUSED, f"RDMA: connect to {host}:{port} failed (CM event {got})")

        qp = None
        try:
            ai = pv.AddrInfo(dst=host, dst_service=str(port), port_space=pv.ce.RDMA_PS_TCP)
            cid.resolve_addr(ai, int(max(1, timeout) * 1000))
            wait(v.CM_ADDR_RESOLVED)
            cid.resolve_route(100 if timeout > 0.1 else int(timeout * 1000))
            wait(v.CM_ROUTE_RESOLVED)
            qp = PyverbsQP(pv, cid, 0)
            qp.peer_address = f"{host}:{port}"
            qp.local_address = "rdma-client"
            qp._channel = ch  # type: ignore[attr-defined]
            prepare(qp)
            cid.connect(pv.ConnParam(resources=1, depth=1, retry=7, rnr_retry=rnr_retry,
                                     qp_num=qp.qp.qp_num))
            wait(v.CM_CONNECT_RESPONSE)
            qp.to_rts()
            cid.establish()
            local, _peer = _cm_addresses(ids[-1])
            if local:
                qp.local_address = local
        except pv.PyverbsRDMAError as exc:
            if qp is not None:
                qp.close()
            raise ConnectionRefusedError(errno.ECONNREFUSED,
                                         f"RDMA: connect to {host}:{port} failed: {exc}") from None
        return qp

