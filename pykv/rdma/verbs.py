"""The verbs backend interface: what the RDMA drivers need from rdma_cm + libibverbs.

Owns the shape (not the implementation) of the handful of objects a Valkey-protocol
endpoint uses: a CM listener whose event channel has a real fd, connection requests that
are accepted with an external RC queue pair, and per-connection resources (PD, completion
channel with a real fd, CQ, QP, memory regions). Three backends implement it:
``pykv.rdma.softfabric`` (software RC emulation), ``pykv.rdma.ibverbs`` (real verbs through
the libibverbs/librdmacm C API, compiled; optional) and ``pykv.rdma.pyverbs_backend`` (real
verbs through pyverbs, the fallback when the compiled one is not built). Numeric constants are libibverbs'/librdmacm's own values, so completions
and events read the same whichever backend produced them.
"""
from __future__ import annotations

import fcntl
import os
import resource
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

# ibv_wc_status
WC_SUCCESS = 0
WC_LOC_LEN_ERR = 1
WC_LOC_QP_OP_ERR = 2
WC_LOC_PROT_ERR = 4
WC_WR_FLUSH_ERR = 5
WC_REM_INV_REQ_ERR = 9
WC_REM_ACCESS_ERR = 10
WC_RETRY_EXC_ERR = 12
WC_RNR_RETRY_EXC_ERR = 13
WC_FATAL_ERR = 19
WC_STATUS_NAMES = {
    WC_SUCCESS: "success", WC_LOC_LEN_ERR: "local length error",
    WC_LOC_QP_OP_ERR: "local QP operation error", WC_LOC_PROT_ERR: "local protection error",
    WC_WR_FLUSH_ERR: "Work Request Flushed Error", WC_REM_INV_REQ_ERR: "remote invalid request error",
    WC_REM_ACCESS_ERR: "remote access error", WC_RETRY_EXC_ERR: "transport retry counter exceeded",
    WC_RNR_RETRY_EXC_ERR: "RNR retry counter exceeded", WC_FATAL_ERR: "fatal error",
}

# ibv_wc_opcode
WC_SEND = 0
WC_RDMA_WRITE = 1
WC_RECV = 128
WC_RECV_RDMA_WITH_IMM = 129

# rdma_cm_event_type
CM_ADDR_RESOLVED = 0
CM_ADDR_ERROR = 1
CM_ROUTE_RESOLVED = 2
CM_ROUTE_ERROR = 3
CM_CONNECT_REQUEST = 4
CM_CONNECT_RESPONSE = 5
CM_CONNECT_ERROR = 6
CM_UNREACHABLE = 7
CM_REJECTED = 8
CM_ESTABLISHED = 9
CM_DISCONNECTED = 10
CM_DEVICE_REMOVAL = 11
CM_ADDR_CHANGE = 14
CM_TIMEWAIT_EXIT = 15
CM_CLOSING_EVENTS = frozenset({
    CM_UNREACHABLE, CM_ADDR_ERROR, CM_ROUTE_ERROR, CM_CONNECT_ERROR, CM_REJECTED,
    CM_ADDR_CHANGE, CM_DISCONNECTED, CM_TIMEWAIT_EXIT,
})


def wc_status_str(status: int) -> str:
    return WC_STATUS_NAMES.get(status, f"status {status}")


class VerbsError(OSError):
    """A verbs/CM call failed (errno set when the library gave one)."""


class SetupError(OSError):
    """A listener or client cannot start; ``str`` is the one-line advice for the operator."""


@dataclass(slots=True)
class WorkCompletion:
    wr_id: int
    status: int
    opcode: int
    byte_len: int = 0
    imm: int | None = None   # host byte order (drivers never see the raw __be32)


class MemoryRegion(ABC):
    addr: int
    length: int
    lkey: int
    rkey: int

    @abstractmethod
    def read(self, offset: int, n: int) -> bytes: ...

    @abstractmethod
    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None: ...

    def view(self, offset: int, n: int) -> memoryview:
        """``n`` bytes at ``offset`` for the caller to copy out before it returns control
        (a backend that can map its memory returns it without a copy)."""
        return memoryview(self.read(offset, n))


class QueuePair(ABC):
    """One connection's verbs resources: PD, completion channel, CQ, RC QP, MRs."""

    comp_fd: int = -1
    peer_address: str = ""
    local_address: str = ""
    # the endpoint polls the completions a closing QP flushed before ``close``; False when
    # destroying the QP and its CQ discards them anyway (and polling costs per completion)
    drain_on_close: bool = True

    def aux_fds(self) -> list[int]:
        """Extra fds the event loop must watch and pass to ``pump`` (software fabric)."""
        return []

    def pump(self, fd: int) -> bool:
        """Do the fabric work ``fd`` signalled; False when ``fd`` must not be watched again.

        Completions produced while pumping are not signalled on ``comp_fd``: the caller runs
        its CQ handler right after (``get_cq_event`` still reports them)."""
        return True

    def write_fds(self) -> list[int]:
        """Fabric fds that currently need writability (output queued in the fabric)."""
        return []

    def pump_write(self, fd: int) -> None:
        """``fd`` became writable."""
        return None

    @abstractmethod
    def reg_mr(self, length: int, remote_write: bool) -> MemoryRegion: ...

    @abstractmethod
    def post_recv(self, wr_id: int, mr: MemoryRegion, offset: int, length: int) -> None: ...

    @abstractmethod
    def post_send(self, wr_id: int, mr: MemoryRegion, offset: int, length: int,
                  signaled: bool) -> None: ...

    @abstractmethod
    def post_write_imm(self, wr_id: int, mr: MemoryRegion, offset: int, length: int,
                       remote_addr: int, rkey: int, imm: int, signaled: bool) -> None: ...

    @abstractmethod
    def get_cq_event(self) -> bool:
        """Consume one completion-channel event; False when none is pending (EAGAIN)."""

    @abstractmethod
    def ack_cq_events(self, n: int) -> None: ...

    @abstractmethod
    def req_notify(self) -> None: ...

    @abstractmethod
    def poll(self, max_entries: int) -> list[WorkCompletion]: ...

    def cm_events(self) -> list[int]:
        """Client side: CM events that arrived on this connection's own channel."""
        return []

    @abstractmethod
    def disconnect(self) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """Destroy everything (QP to ERR, drain, QP, CQ, channel, MRs, PD, id)."""


class ConnectRequest(ABC):
    """A CONNECT_REQUEST: create resources, then accept (or reject)."""

    peer_address: str = ""
    local_address: str = ""

    @abstractmethod
    def create_qp(self, comp_vector: int) -> QueuePair: ...

    @abstractmethod
    def accept(self, qp: QueuePair) -> None: ...

    @abstractmethod
    def reject(self) -> None: ...


@dataclass(slots=True)
class CmEvent:
    type: int
    request: ConnectRequest | None = None   # CONNECT_REQUEST only
    qp: QueuePair | None = None              # the connection an event is about
    ack: Callable[[], None] | None = None

    def acknowledge(self) -> None:
        if self.ack is not None:
            ack, self.ack = self.ack, None
            ack()


class CmListener(ABC):
    """A listening CM id with its event channel (child ids report on the same channel)."""

    bind: str = ""
    port: int = 0

    @abstractmethod
    def fds(self) -> list[int]: ...

    def pump(self, fd: int) -> None:
        """Do the fabric work ``fd`` signalled (software fabric); no-op for real verbs."""
        return None

    @abstractmethod
    def get_event(self) -> CmEvent | None:
        """The next CM event, or None (EAGAIN)."""

    def stop_listening(self) -> None:
        """Accept no new connections; accepted ones keep reporting on the channel."""
        return None

    @abstractmethod
    def close(self) -> None: ...


class Backend(ABC):
    name: str = "?"

    def default_binds(self) -> list[str]:
        """Addresses to listen on when none are configured (Valkey: every address)."""
        return ["127.0.0.1"]

    @abstractmethod
    def listen(self, ip: str, port: int, backlog: int) -> CmListener: ...

    @abstractmethod
    def connect(self, host: str, port: int, timeout: float,
                prepare: Callable[[QueuePair], None]) -> QueuePair:
        """Client: resolve, create resources, ``prepare(qp)`` (MRs, receives), connect and
        wait for ESTABLISHED."""


NO_DEVICE_HINT = "create one with 'rdma link add rxe0 type rxe netdev eth0' or use backend=soft"


def check_rdma_cm() -> None:
    """``SetupError`` unless the kernel's RDMA CM is there (a real-verbs backend needs it)."""
    if not os.path.exists("/dev/infiniband/rdma_cm"):
        raise SetupError(
            "RDMA: no RDMA device (/dev/infiniband/rdma_cm is missing): load the NIC driver "
            "and rdma_ucm, or create a soft-RoCE device with "
            "'rdma link add rxe0 type rxe netdev eth0'; or use backend=soft")


def no_device_error() -> SetupError:
    return SetupError(f"RDMA: no RDMA device found (ibv_devices lists none): {NO_DEVICE_HINT}")


def memlock_advice(need: int) -> str:
    """The SetupError text for a locked-memory limit under ``need`` bytes."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    have = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"
    return (f"RDMA: cannot register {need} bytes of memory: the locked-memory limit is {have}; "
            "raise it (ulimit -l unlimited, or LimitMEMLOCK=infinity for systemd)")


def check_memlock(need: int) -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft != resource.RLIM_INFINITY and soft < need:
        raise SetupError(memlock_advice(need))


def check_listen(ip: str, via: str = "") -> None:
    """What a real-verbs backend checks before listening on ``ip`` (``via``: the backend,
    as its error names it): no wildcard address, and room to pin one connection's memory
    (its RX window, a staging buffer of the peer's window and the control slots)."""
    if ip in ("*", "0.0.0.0", "::*", "::"):
        raise SetupError(f"RDMA cannot bind a wildcard address{via}: bind each RDMA-capable "
                         "IP (rdma-bind / bind=)")
    check_memlock(2 * (1 << 20) + 2 * 65536)


def rdma_ipv4_addresses() -> list[str]:
    """IPv4 addresses of netdevs that carry an RDMA device (from sysfs + SIOCGIFADDR)."""
    import struct

    names = set()
    base = "/sys/class/infiniband"
    try:
        for dev in os.listdir(base):
            ports = os.path.join(base, dev, "ports")
            for port in os.listdir(ports):
                ndevs = os.path.join(ports, port, "gid_attrs", "ndevs")
                for g in os.listdir(ndevs):
                    try:
                        with open(os.path.join(ndevs, g)) as fh:
                            names.add(fh.read().strip())
                    except OSError:
                        continue
    except OSError:
        return []
    out = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in sorted(n for n in names if n):
            try:
                res = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
                out.append(socket.inet_ntoa(res[20:24]))
            except OSError:
                continue
    return out


def get_backend(name: str | None = None) -> Backend:
    """``soft`` (software fabric), ``ibverbs`` (real verbs, compiled on libibverbs),
    ``pyverbs`` (real verbs through pyverbs) or ``auto`` (ibverbs when that extension was
    built, else pyverbs; either needs an RDMA device, else an error naming the fix).
    Default from ``PYKV_RDMA_BACKEND``."""
    name = (name or os.environ.get("PYKV_RDMA_BACKEND") or "auto").lower()
    if name in ("soft", "softfabric", "software"):
        from pykv.rdma.softfabric import SoftBackend

        return SoftBackend()
    if name in ("ibverbs", "auto", "verbs"):
        try:
            from pykv.rdma.ibverbs import load_ibverbs_backend
        except ImportError as exc:
            if name == "ibverbs":
                raise SetupError(
                    f"RDMA: the compiled ibverbs backend is not available ({exc}): build pykv "
                    "with rdma-core's headers (Debian: libibverbs-dev librdmacm-dev), or use "
                    "backend=pyverbs") from None
        else:
            return load_ibverbs_backend()
    if name in ("pyverbs", "auto", "verbs"):
        from pykv.rdma.pyverbs_backend import load_pyverbs_backend

        return load_pyverbs_backend()
    raise SetupError(f"unknown RDMA backend '{name}' (use soft, ibverbs or pyverbs)")
