# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
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

Cost model (the point of this being Cython): the data path is what a socket costs and no
more. A request batch is one ``recv`` into a reusable C buffer, header parsing and the
rkey/bounds checks in C, one ``memcpy`` into the MR, and a completion object from a free
list; a WRITE_WITH_IMM leaves as one ``writev`` of a packed header plus the payload read
straight from the MR's memory. The send and receive queues are C rings (no Python object
per work request). Completions made while pumping never write the eventfd: the caller
runs its CQ handler right after. So the server pays one ``recv`` and one ``writev`` per
batch, as it would for TCP.

Payloads of ``RING_MIN`` (8 KB) and more skip the socket: per QP and direction there is a
shared-memory ring (a memfd of ``PYKV_SOFTRDMA_RING`` bytes, default 2 MiB, after a header
page with the 64-bit producer ``head`` at 0 and consumer ``tail`` at 64), made by the
sending side and passed to the peer with ``SCM_RIGHTS`` during setup (REQ carries the
client's, REP the server's; REP/RTU say whether each side maps the other's, so a peer
without rings — ``PYKV_SOFTRDMA_RING=0`` plays one — gets the socket path). The requester
copies the payload into its ring at post time and sends only the header, flagged
``F_RING``; when the ring lacks room the payload goes on the socket as before. Headers stay
in order on the socket and the ring is FIFO, so the responder takes a flagged request's
payload from its read position in the peer's ring — after the same rkey/access/bounds and
RNR checks, copying into the MR — and advances ``tail`` once the request is placed or
dropped (an RNR wait leaves it in the ring). That replaces the kernel's copy into freshly
allocated socket-buffer pages (plus memcg charging), which cost a unix socket about twice
what TCP loopback pays per byte, with one ``memcpy`` into warm shared pages.

Known difference from hardware: a process's NIC runs only while that process services its
fds, so a peer that stops polling also stops acknowledging (an HCA would keep ACKing until
its receive queue ran dry). The server copes either way (it never piles up keepalives).
"""
import array
import ctypes
import errno as _errno
import mmap
import os
import random
import socket
import struct
from collections import deque

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove, memset

from pykv.rdma import verbs as v

from pykv.rdma.cverbs cimport WC, CMemoryRegion, CQueuePair, wc_t


cdef extern from "<errno.h>" nogil:
    int errno
    enum:
        EAGAIN
        EINTR


cdef extern from "<sys/uio.h>" nogil:
    struct iovec:
        void *iov_base
        size_t iov_len
    ssize_t writev(int fd, const iovec *iov, int iovcnt)
    ssize_t readv(int fd, const iovec *iov, int iovcnt)


cdef extern from "<sys/socket.h>" nogil:
    ssize_t c_recv "recv"(int fd, void *buf, size_t n, int flags)


cdef extern from "<unistd.h>" nogil:
    ssize_t c_read "read"(int fd, void *buf, size_t n)
    ssize_t c_write "write"(int fd, const void *buf, size_t n)


cdef extern from "<sys/mman.h>" nogil:
    void *c_mmap "mmap"(void *addr, size_t length, int prot, int flags, int fd, long offset)
    int c_munmap "munmap"(void *addr, size_t length)
    int PROT_READ, PROT_WRITE, MAP_SHARED
    void *MAP_FAILED


# the ring counters are shared with another process: acquire/release accesses (the wire
# syscalls order them too, but this does not depend on it)
cdef extern from *:
    """
    #include <stdint.h>
    static inline uint64_t pykv_ring_load(const uint64_t *p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline void pykv_ring_store(uint64_t *p, uint64_t v) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
    }
    """
    uint64_t pykv_ring_load(const uint64_t *p) nogil
    void pykv_ring_store(uint64_t *p, uint64_t v) nogil


POISON = 0xA5

# C-level values: packet types, libibverbs status/opcodes (pykv.rdma.verbs), QP states
cdef enum:
    C_WRITE = 1
    C_WRITE_IMM = 2
    C_SEND = 3
    C_ACK = 4
    C_NAK = 5
    C_REQ = 6
    C_REP = 7
    C_REJ = 8
    C_RTU = 9
    C_DISC = 10
    WC_SUCCESS = 0
    WC_LOC_LEN_ERR = 1
    WC_WR_FLUSH_ERR = 5
    WC_REM_INV_REQ_ERR = 9
    WC_REM_ACCESS_ERR = 10
    WC_RETRY_EXC_ERR = 12
    WC_RNR_RETRY_EXC_ERR = 13
    WC_SEND = 0
    WC_RDMA_WRITE = 1
    WC_RECV = 128
    WC_RECV_RDMA_WITH_IMM = 129
    S_RESET = 0
    S_RTS = 1
    S_ERR = 2
    INBUF_MIN = 262144
    DIRECT_MIN = 32768
    # request header flag (status bit 1): the payload is in the sender's shared ring
    F_RING = 2
    RING_HDR = 4096      # header page of a ring: producer head at 0, consumer tail at 64

# wire packet types
P_WRITE, P_WRITE_IMM, P_SEND, P_ACK, P_NAK, P_REQ, P_REP, P_REJ, P_RTU, P_DISC = range(1, 11)

# libibverbs values (pykv.rdma.verbs) used on the C path

# Both ends of a wire are this module on one host, so the header is a packed native-order
# struct: type, status (bit 0 of a request = AckReq), psn, rkey, imm, remote addr, length.
cdef packed struct Hdr:
    uint8_t ptype
    uint8_t status
    uint16_t pad
    uint32_t psn
    uint32_t rkey
    uint32_t imm
    uint64_t raddr
    uint32_t length

_HDR = struct.Struct("=BBxxIIIQI")
HDR = _HDR.size
assert HDR == sizeof(Hdr)
# REQ/REP payload: rnr_retry, address text
_CONN = struct.Struct(">B47s")

QPS_RESET, QPS_RTS, QPS_ERR = "RESET", "RTS", "ERR"
WIRE_BUFFER = 4 << 20
# IBV_SEND_INLINE limit: payloads are read at post time anyway, so any write fits (1 MiB:
# the client window; a server window is at most 16 MiB and larger writes are staged)
INLINE_MAX = 1 << 20
_STATE_NAMES = (QPS_RESET, QPS_RTS, QPS_ERR)
# payload ring per QP and direction (memfd shared with the peer, see SoftQP.ring_offer):
# default size, and the smallest payload carried through it rather than the socket
RING_SIZE = 2 << 20
RING_MIN = 8192
# setup flags: REQ status F_RING = "my ring's fd is attached"; REP status F_RING = "I read
# your ring", REP_RING_FD = "my ring's fd is attached"; RTU status F_RING = "I read yours"
REP_RING_FD = 4


def ring_size() -> int:
    """Ring size for new connections: ``PYKV_SOFTRDMA_RING`` bytes (a power of two, at least
    4096; 0 = no ring, payloads use the socket as before), default 2 MiB."""
    size = int(os.environ.get("PYKV_SOFTRDMA_RING", RING_SIZE))
    if size <= 0:
        return 0
    return max(4096, 1 << (size - 1).bit_length())



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


cdef class SoftMR(CMemoryRegion):
    """A registered region: page-aligned anonymous mmap with a real virtual address.

    Like ``ibv_reg_mr``, registration makes the memory resident (``MAP_POPULATE``: no page
    faults on the data path) and, like ``ibv_fork_init``, keeps it out of forked children
    (``MADV_DONTFORK``: no copy-on-write while a BGSAVE child runs). The fill with
    ``POISON`` makes a read of never-written bytes visible in tests."""

    cdef public object pd
    cdef public Py_ssize_t length
    cdef public unsigned long long addr
    cdef public unsigned int lkey, rkey
    cdef public bint remote_write, valid
    cdef object _map, _mv
    cdef Py_buffer _buf
    cdef char *base

    def __init__(self, pd, Py_ssize_t length, bint access_remote_write):
        self.pd = pd
        self.length = length
        self._map = mmap.mmap(-1, max(length, 1),
                              flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
        self._map.madvise(mmap.MADV_DONTFORK)
        self._mv = memoryview(self._map)
        PyObject_GetBuffer(self._map, &self._buf, PyBUF_WRITABLE)
        self.base = <char *>self._buf.buf
        memset(self.base, POISON, length)
        self.addr = <size_t>self.base
        self.lkey = _new_key()
        self.rkey = _new_key()
        self.remote_write = access_remote_write
        self.valid = True

    cpdef bytes read(self, Py_ssize_t offset, Py_ssize_t n):
        if not self.valid or offset < 0 or n < 0 or offset + n > self.length:
            raise ValueError(f"read of {n} bytes at {offset} outside the MR")
        return PyBytes_FromStringAndSize(self.base + offset, n)

    cpdef view(self, Py_ssize_t offset, Py_ssize_t n):
        """The MR's memory itself, no copy (a view holds the mapping alive)."""
        if not self.valid or offset < 0 or n < 0 or offset + n > self.length:
            raise ValueError(f"view of {n} bytes at {offset} outside the MR")
        return self._mv[offset:offset + n]

    cpdef write(self, Py_ssize_t offset, data):
        cdef Py_buffer view
        if type(data) is bytes:
            self.write_from(offset, PyBytes_AS_STRING(data), len(<bytes>data))
            return
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            self.write_from(offset, <const char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    cdef int write_from(self, Py_ssize_t offset, const char *data, Py_ssize_t n) except -1:
        if not self.valid:
            raise ValueError("write to a deregistered MR")
        if offset < 0 or n < 0 or offset + n > self.length:
            raise ValueError("write outside the MR")
        memcpy(self.base + offset, data, n)
        return 0

    cdef char *span(self, Py_ssize_t offset, Py_ssize_t n) except NULL:
        if not self.valid or offset < 0 or n < 0 or offset + n > self.length:
            raise ValueError(f"span of {n} bytes at {offset} outside the MR")
        return self.base + offset

    def dereg(self) -> None:
        if self.valid:
            self.valid = False
            self.pd.mrs.pop(self.lkey, None)
            self.pd.by_rkey.pop(self.rkey, None)
            _used_keys.discard(self.lkey)
            _used_keys.discard(self.rkey)
            PyBuffer_Release(&self._buf)
            self.base = NULL
            try:
                self._mv.release()
                self._map.close()   # fails while a caller still holds a view: it stays mapped
            except BufferError:
                pass

    def __dealloc__(self):
        if self.valid and self.base != NULL:
            PyBuffer_Release(&self._buf)


v.MemoryRegion.register(SoftMR)


cdef class SoftPD:
    cdef public dict mrs, by_rkey

    def __init__(self) -> None:
        self.mrs = {}
        self.by_rkey = {}

    def reg(self, Py_ssize_t length, bint remote_write) -> SoftMR:
        mr = SoftMR(self, length, remote_write)
        self.mrs[mr.lkey] = mr
        self.by_rkey[mr.rkey] = mr
        return mr


# completions are cverbs.WC objects (from its free list); sq_release counts the SQ entries
# freed when one is polled
cdef inline WC _wc(unsigned long long wr_id, int status, int opcode,
                       unsigned int byte_len=0, unsigned int imm=0, bint has_imm=False):
    cdef WC wc = WC.__new__(WC)
    wc.wr_id = wr_id
    wc.status = status
    wc.opcode = opcode
    wc.byte_len = byte_len
    wc._imm = imm
    wc._has_imm = has_imm
    return wc


cdef class SoftQP(CQueuePair):
    """PD + completion channel (eventfd) + CQ + RC QP on one wire socket."""

    cdef public object sock, pd, cm_sink, client_events
    cdef public bytearray outq
    cdef public int wire_fd, comp_fd
    cdef public int cq_size, max_send_wr, max_recv_wr
    cdef public bint cq_overrun, armed, peer_gone, peer_disconnected, in_pump, fd_signaled
    cdef public bint stalled, late_established, closed
    cdef public long long events_pending, events_reported, events_acked
    cdef public int sq_used, unsignaled, peer_rnr_retry, rnr_retry
    cdef public unsigned int next_psn
    cdef public long long stats_rnr, stats_direct
    cdef public str peer_address, local_address
    cdef int _state
    cdef bint _processing
    # completion queue: a ring of WC in a Python list
    cdef list _cq
    cdef int _cq_head, _cq_count
    # receive queue: C ring (+ the MRs in a parallel list)
    cdef unsigned long long *_rq_wr
    cdef Py_ssize_t *_rq_off
    cdef Py_ssize_t *_rq_len
    cdef list _rq_mr
    cdef int _rq_head, _rq_count
    # send queue (posted, not yet acknowledged): C ring, consecutive PSNs from _sq_psn
    cdef unsigned long long *_sq_wr
    cdef uint8_t *_sq_op
    cdef uint8_t *_sq_sig
    cdef int _sq_head, _sq_count
    cdef unsigned int _sq_psn
    # wire input buffer
    cdef char *_in
    cdef Py_ssize_t _in_cap, _in_r, _in_w
    # direct placement of a large request's payload (see _direct_start)
    cdef Hdr _dhdr
    cdef char *_ddst          # where its next bytes go (NULL: its target vanished, drop them)
    cdef Py_ssize_t _dleft    # payload bytes still to come
    cdef object _dmr          # the MR they go to (kept alive while bytes arrive)
    cdef object _rkey_mr      # the MR the last remote write's rkey named
    # payload rings (shared memory): ours, which we fill (tx), and the peer's (rx)
    cdef char *_tx_map
    cdef uint64_t _tx_size, _tx_head
    cdef bint _tx_on          # the peer agreed to read it
    cdef char *_rx_map
    cdef uint64_t _rx_size, _rx_tail
    cdef public long long stats_ring, stats_ring_full
    cdef public Py_ssize_t ring_min   # smallest payload sent through the ring

    def __init__(self, sock, *, int cq_size=2048, int max_send_wr=1024,
                 int max_recv_wr=1024, cm_sink=None, str peer_address="",
                 str local_address="") -> None:
        self.sock = sock
        sock.setblocking(False)
        # a NIC does not stall a 1 MiB window write on a 200 KB socket buffer: ask for
        # room for a whole window in flight (the kernel caps it at net.core.wmem_max), so
        # large replies leave in one writev instead of a writability round trip
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, WIRE_BUFFER)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, WIRE_BUFFER)
        except OSError:
            pass
        self.wire_fd = sock.fileno()
        self.comp_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.pd = SoftPD()
        self.cq_size = cq_size
        self.max_send_wr, self.max_recv_wr = max_send_wr, max_recv_wr
        self._cq = [None] * cq_size
        self._rq_wr = <unsigned long long *>malloc(max_recv_wr * sizeof(unsigned long long))
        self._rq_off = <Py_ssize_t *>malloc(max_recv_wr * sizeof(Py_ssize_t))
        self._rq_len = <Py_ssize_t *>malloc(max_recv_wr * sizeof(Py_ssize_t))
        self._rq_mr = [None] * max_recv_wr
        self._sq_wr = <unsigned long long *>malloc(max_send_wr * sizeof(unsigned long long))
        self._sq_op = <uint8_t *>malloc(max_send_wr)
        self._sq_sig = <uint8_t *>malloc(max_send_wr)
        self._in = <char *>malloc(INBUF_MIN)
        self._in_cap = INBUF_MIN
        if (self._rq_wr == NULL or self._rq_off == NULL or self._rq_len == NULL
                or self._sq_wr == NULL or self._sq_op == NULL or self._sq_sig == NULL
                or self._in == NULL):
            raise MemoryError()
        self._state = S_RESET
        self._sq_psn = 1
        self.next_psn = 1
        self.max_inline_data = INLINE_MAX
        self.ring_min = RING_MIN
        self.peer_rnr_retry = 7                # the peer's requester rnr_retry (from REQ/REP)
        self.rnr_retry = 7
        self.outq = bytearray()
        self.cm_sink = cm_sink
        self.client_events = deque()
        self.peer_address, self.local_address = peer_address, local_address

    def __dealloc__(self):
        self._ring_unmap()
        free(self._rq_wr)
        free(self._rq_off)
        free(self._rq_len)
        free(self._sq_wr)
        free(self._sq_op)
        free(self._sq_sig)
        free(self._in)

    @property
    def state(self) -> str:
        return _STATE_NAMES[self._state]

    @state.setter
    def state(self, value: str) -> None:
        self._state = _STATE_NAMES.index(value)

    # -- resources -----------------------------------------------------------------------
    def aux_fds(self) -> list:
        return [] if self.peer_gone or self.closed else [self.wire_fd]

    def reg_mr(self, Py_ssize_t length, bint remote_write) -> SoftMR:
        return self.pd.reg(length, remote_write)

    # -- payload rings -------------------------------------------------------------------------
    def ring_offer(self, Py_ssize_t size) -> int:
        """Create this side's payload ring (``size`` bytes, a power of two, after a header
        page) and return its memfd for the peer (the caller sends and closes it; -1 when
        ``size`` is 0 or it cannot be made). It is used once the peer agreed (``ring_enable``)."""
        cdef void *p
        if size <= 0 or size & (size - 1) or self._tx_map != NULL:
            return -1
        fd = os.memfd_create("pykv-softrdma-ring", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, RING_HDR + size)
            # not populated: its pages come in as large payloads first reach them (a
            # connection that only ever carries small ones never pays for them)
            p = c_mmap(NULL, RING_HDR + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            if p == MAP_FAILED:
                raise OSError(errno, "mmap of the payload ring failed")
        except OSError:
            os.close(fd)
            return -1
        self._tx_map = <char *>p
        self._tx_size = size
        self._tx_head = 0
        return fd

    def ring_enable(self) -> None:
        """The peer maps our ring and reads it: large payloads go through it from now on."""
        self._tx_on = self._tx_map != NULL

    def ring_drop(self) -> None:
        """The peer does not read our ring (it has none): keep using the socket."""
        self._tx_on = False
        if self._tx_map != NULL:
            c_munmap(self._tx_map, RING_HDR + self._tx_size)
            self._tx_map = NULL
            self._tx_size = 0

    def ring_accept(self, int fd) -> None:
        """Map the peer's ring from its memfd (the caller closes ``fd``); OSError when it is
        not a ring this module made."""
        cdef void *p
        cdef Py_ssize_t total = os.fstat(fd).st_size
        cdef Py_ssize_t size = total - RING_HDR
        if self._rx_map != NULL or size < 4096 or size & (size - 1):
            raise OSError(_errno.EINVAL, "not a payload ring")
        p = c_mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        if p == MAP_FAILED:
            raise OSError(errno, "mmap of the peer's payload ring failed")
        self._rx_map = <char *>p
        self._rx_size = size
        self._rx_tail = pykv_ring_load(<uint64_t *>(self._rx_map + 64))

    @property
    def ring(self) -> tuple:
        """(tx ring size if in use else 0, rx ring size or 0)."""
        return (self._tx_size if self._tx_on else 0, self._rx_size)

    @property
    def ring_pending(self) -> int:
        """Bytes of our ring the peer has not consumed yet."""
        if self._tx_map == NULL:
            return 0
        return self._tx_head - pykv_ring_load(<uint64_t *>(self._tx_map + 64))

    cdef void _ring_unmap(self):
        self._tx_on = False
        if self._tx_map != NULL:
            c_munmap(self._tx_map, RING_HDR + self._tx_size)
            self._tx_map = NULL
        if self._rx_map != NULL:
            c_munmap(self._rx_map, RING_HDR + self._rx_size)
            self._rx_map = NULL

    cdef bint _ring_put(self, const char *payload, Py_ssize_t n):
        """Copy a payload into our ring if it has room (False: it goes on the socket)."""
        cdef uint64_t size = self._tx_size
        cdef uint64_t tail = pykv_ring_load(<uint64_t *>(self._tx_map + 64))
        cdef uint64_t pos
        cdef Py_ssize_t first
        cdef char *data = self._tx_map + RING_HDR
        if size - (self._tx_head - tail) < <uint64_t>n:
            self.stats_ring_full += 1
            return False
        pos = self._tx_head & (size - 1)
        first = <Py_ssize_t>min(<uint64_t>n, size - pos)
        memcpy(data + pos, payload, first)
        if n > first:
            memcpy(data, payload + first, n - first)
        self._tx_head += n
        pykv_ring_store(<uint64_t *>self._tx_map, self._tx_head)
        self.stats_ring += 1
        return True

    cdef inline bint _ring_has(self, Py_ssize_t n):
        """The peer's ring holds ``n`` unread bytes (a ring-flagged header is valid)."""
        return (self._rx_map != NULL and
                pykv_ring_load(<uint64_t *>self._rx_map) - self._rx_tail >= <uint64_t>n)

    cdef void _ring_get(self, char *dst, Py_ssize_t n):
        """Copy the next ``n`` bytes of the peer's ring to ``dst`` (not consumed yet)."""
        cdef uint64_t size = self._rx_size
        cdef uint64_t pos = self._rx_tail & (size - 1)
        cdef Py_ssize_t first = <Py_ssize_t>min(<uint64_t>n, size - pos)
        cdef char *data = self._rx_map + RING_HDR
        memcpy(dst, data + pos, first)
        if n > first:
            memcpy(dst + first, data, n - first)

    cdef inline void _ring_consume(self, Py_ssize_t n):
        self._rx_tail += n
        pykv_ring_store(<uint64_t *>(self._rx_map + 64), self._rx_tail)

    # -- posting ---------------------------------------------------------------------------
    cdef SoftMR _local_mr(self, mr, Py_ssize_t offset, Py_ssize_t length):
        """The MR of a local SGE after the lkey and bounds checks (EINVAL otherwise): an
        MR of this QP's PD that is still registered (``dereg`` clears ``valid``)."""
        if type(mr) is not SoftMR:
            raise v.VerbsError(_errno.EINVAL, "SGE outside a valid MR")
        cdef SoftMR m = <SoftMR>mr
        if not m.valid or m.pd is not self.pd or offset < 0 or length < 0 \
                or offset + length > m.length:
            raise v.VerbsError(_errno.EINVAL, "SGE outside a valid MR")
        return m

    cpdef post_recv(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length):
        if self._rq_count >= self.max_recv_wr:
            raise v.VerbsError(_errno.ENOMEM, "receive queue full")
        cdef SoftMR m = self._local_mr(mr, offset, length)
        if self._state == S_ERR:
            self._cpush(_wc(wr_id, WC_WR_FLUSH_ERR, WC_RECV))
            return
        cdef int i = (self._rq_head + self._rq_count) % self.max_recv_wr
        self._rq_wr[i] = wr_id
        self._rq_off[i] = offset
        self._rq_len[i] = length
        self._rq_mr[i] = m
        self._rq_count += 1
        if self.stalled:
            self._process()

    cpdef post_send(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length,
                    bint signaled):
        self._post(C_SEND, wr_id, mr, offset, length, 0, 0, 0, signaled)

    cpdef post_write_imm(self, unsigned long long wr_id, mr, Py_ssize_t offset,
                         Py_ssize_t length, unsigned long long remote_addr, unsigned int rkey,
                         unsigned int imm, bint signaled):
        self._post(C_WRITE_IMM, wr_id, mr, offset, length, remote_addr, rkey, imm, signaled)

    cpdef post_write_imm_inline(self, unsigned long long wr_id, data,
                                unsigned long long remote_addr, unsigned int rkey,
                                unsigned int imm, bint signaled):
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            self.post_inline(wr_id, <const char *>view.buf, view.len, remote_addr, rkey, imm,
                             signaled)
        finally:
            PyBuffer_Release(&view)

    cdef int post_inline(self, unsigned long long wr_id, const char *data, Py_ssize_t n,
                         unsigned long long remote_addr, unsigned int rkey, unsigned int imm,
                         bint signaled) except -1:
        # this NIC reads a payload when the request is posted (it goes onto the wire at
        # once or into outq), so inline data is the same operation without the MR
        if n > self.max_inline_data:
            raise v.VerbsError(_errno.EINVAL, "inline data larger than max_inline_data")
        self._post(C_WRITE_IMM, wr_id, None, 0, n, remote_addr, rkey, imm, signaled, data)
        return 0

    cpdef post_write(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length,
                     unsigned long long remote_addr, unsigned int rkey, bint signaled):
        self._post(C_WRITE, wr_id, mr, offset, length, remote_addr, rkey, 0, signaled)

    cdef _post(self, int ptype, unsigned long long wr_id, mr, Py_ssize_t offset,
               Py_ssize_t length, unsigned long long raddr, unsigned int rkey, unsigned int imm,
               bint signaled, const char *inline_data=NULL):
        cdef Hdr hdr
        cdef const char *payload
        if self.closed:
            raise v.VerbsError(_errno.EINVAL, "QP destroyed")
        if self.sq_used >= self.max_send_wr:
            raise v.VerbsError(_errno.ENOMEM, "send queue full")
        cdef SoftMR m
        if inline_data != NULL:
            payload = inline_data
        else:
            m = self._local_mr(mr, offset, length)
            payload = m.base + offset
        cdef int opcode = WC_SEND if ptype == C_SEND else WC_RDMA_WRITE
        self.sq_used += 1
        if self._state == S_ERR:
            self._cpush(_wc(wr_id, WC_WR_FLUSH_ERR, opcode), self._release(True))
            return
        if self._state != S_RTS:
            raise v.VerbsError(_errno.EINVAL, "QP is not in RTS")
        cdef int i = (self._sq_head + self._sq_count) % self.max_send_wr
        self._sq_wr[i] = wr_id
        self._sq_op[i] = opcode
        self._sq_sig[i] = signaled
        if self._sq_count == 0:
            self._sq_psn = self.next_psn
        self._sq_count += 1
        hdr.psn = self.next_psn
        self.next_psn += 1
        if self.peer_gone:
            self._error(WC_RETRY_EXC_ERR, True)
            return
        # flag bit 0 = AckReq: the responder acknowledges at once (coalesced otherwise)
        hdr.ptype = ptype
        hdr.status = 1 if signaled else 0
        hdr.pad = 0
        hdr.rkey = rkey
        hdr.imm = imm
        hdr.raddr = raddr
        hdr.length = <uint32_t>length
        if self._tx_on and length >= self.ring_min and self._ring_put(payload, length):
            hdr.status |= F_RING   # only the header travels on the socket
            self._send(&hdr, NULL, 0)
        else:
            self._send(&hdr, payload, length)

    cdef void _send(self, Hdr *hdr, const char *payload, Py_ssize_t n) except *:
        """Put a packet on the wire without ever blocking: what the socket does not take
        now waits in ``outq`` and goes out when the wire is writable (``pump_write``)."""
        cdef iovec iov[2]
        cdef ssize_t sent
        cdef Py_ssize_t total = sizeof(Hdr) + n
        if self.peer_gone or self.closed:
            return
        if len(self.outq):
            self.outq += PyBytes_FromStringAndSize(<char *>hdr, sizeof(Hdr))
            if n:
                self.outq += PyBytes_FromStringAndSize(payload, n)
            return
        iov[0].iov_base = hdr
        iov[0].iov_len = sizeof(Hdr)
        iov[1].iov_base = <void *>payload
        iov[1].iov_len = n
        sent = writev(self.wire_fd, iov, 2 if n else 1)
        if sent < 0:
            if errno == EAGAIN or errno == EINTR:
                sent = 0
            else:
                self._peer_vanished()
                return
        if sent < <ssize_t>sizeof(Hdr):
            self.outq += PyBytes_FromStringAndSize(<char *>hdr + sent, sizeof(Hdr) - sent)
            if n:
                self.outq += PyBytes_FromStringAndSize(payload, n)
        elif sent < total:
            self.outq += PyBytes_FromStringAndSize(payload + (sent - sizeof(Hdr)),
                                                   total - sent)

    cdef void _send_ctl(self, int ptype, int status, unsigned int psn) except *:
        cdef Hdr hdr
        memset(&hdr, 0, sizeof(Hdr))
        hdr.ptype = ptype
        hdr.status = status
        hdr.psn = psn
        self._send(&hdr, NULL, 0)

    def _send_bytes(self, bytes hdr, bytes payload=b"") -> None:
        """Connection setup: a packet built in Python (REP)."""
        cdef Hdr h
        memcpy(&h, PyBytes_AS_STRING(hdr), sizeof(Hdr))
        self._send(&h, PyBytes_AS_STRING(payload), len(payload))

    def write_fds(self) -> list:
        return [self.wire_fd] if self.has_output() else []

    cpdef bint has_output(self):
        return len(self.outq) and not self.peer_gone and not self.closed

    def pump_write(self, int fd) -> None:
        if not len(self.outq) or self.peer_gone or self.closed:
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
    cdef inline int _release(self, bint signaled):
        cdef int n
        if signaled:
            n = self.unsignaled + 1
            self.unsignaled = 0
            return n
        self.unsignaled += 1
        return 0

    def _push(self, wc, int sq_release=0) -> None:
        """Queue a completion given as any ``WorkCompletion``-like object (tests)."""
        imm = wc.imm
        self._cpush(_wc(wc.wr_id, wc.status, wc.opcode, wc.byte_len or 0, imm or 0,
                        imm is not None), sq_release)

    cdef void _cpush(self, WC wc, int sq_release=0) except *:
        cdef uint64_t one = 1
        if self._cq_count >= self.cq_size:
            self.cq_overrun = True
            self._state = S_ERR
            return
        wc.sq_release = sq_release
        self._cq[(self._cq_head + self._cq_count) % self.cq_size] = wc
        self._cq_count += 1
        if self.armed:
            self.armed = False
            self.events_pending += 1
            if not self.in_pump and not self.fd_signaled:
                self.fd_signaled = True
                c_write(self.comp_fd, &one, 8)

    cpdef req_notify(self):
        # hardware would not re-signal old entries; we follow it
        self.armed = True

    cpdef bint get_cq_event(self):
        cdef uint64_t value
        if not self.events_pending:
            return False
        self.events_pending -= 1
        self.events_reported += 1
        if not self.events_pending and self.fd_signaled:
            self.fd_signaled = False
            c_read(self.comp_fd, &value, 8)
        return True

    cpdef ack_cq_events(self, long long n):
        if self.events_acked + n > self.events_reported:
            raise v.VerbsError(_errno.EINVAL, "acked more CQ events than were reported")
        self.events_acked += n

    cdef WC _pop(self):
        """The CQ's oldest completion, taken off it (its SQ entries released)."""
        cdef WC wc = <WC>self._cq[self._cq_head]
        self._cq[self._cq_head] = None
        self._cq_head = (self._cq_head + 1) % self.cq_size
        self._cq_count -= 1
        self.sq_used -= wc.sq_release
        return wc

    cpdef list poll(self, int max_entries):
        cdef list out = []
        if self.cq_overrun:
            raise v.VerbsError(_errno.EIO, "CQ overrun")
        while self._cq_count and len(out) < max_entries:
            out.append(self._pop())
        return out

    cdef int poll_wc(self, wc_t *out, int max_entries) except -1:
        """``poll`` into C structs (the endpoint's path, as with libibverbs)."""
        cdef WC wc
        cdef int n = 0
        if self.cq_overrun:
            raise v.VerbsError(_errno.EIO, "CQ overrun")
        while self._cq_count and n < max_entries:
            wc = self._pop()
            out[n].wr_id = wc.wr_id
            out[n].status = wc.status
            out[n].opcode = wc.opcode
            out[n].byte_len = wc.byte_len
            out[n].imm = wc._imm if wc._has_imm else 0
            n += 1
        return n

    # -- the NIC ------------------------------------------------------------------------------
    cpdef bint pump(self, int fd):
        cdef ssize_t got
        cdef Py_ssize_t room
        if self.closed or self.peer_gone:
            return False
        if self._dleft:
            return self._pump_direct(fd)
        # buffer policy: restart at 0 whenever everything was processed; _process moves a
        # partial packet to the front only when its rest would not fit behind it, so a
        # large packet is copied within the buffer at most once
        if self._in_r == self._in_w:
            self._in_r = self._in_w = 0
        room = self._in_cap - self._in_w
        if room < 4096:   # full of unprocessed bytes (an RNR stall) or a short tail
            if self._in_r:
                memmove(self._in, self._in + self._in_r, self._in_w - self._in_r)
                self._in_w -= self._in_r
                self._in_r = 0
            if self._in_cap - self._in_w < 4096:
                self._grow(self._in_cap * 2)
            room = self._in_cap - self._in_w
        got = self._read_result(c_recv(self.wire_fd, self._in + self._in_w, room, 0))
        if got <= 0:
            return got < 0
        self._in_w += got
        self.in_pump = True
        try:
            self._process()
        finally:
            self.in_pump = False
        if len(self.outq):
            self.pump_write(fd)
        return not self.peer_gone

    cdef inline ssize_t _read_result(self, ssize_t got) except? -2:
        """What a wire read returned: the byte count; -1 when nothing is there yet (try
        again on the next readiness); 0 when the peer is gone (recorded here)."""
        if got < 0:
            if errno == EAGAIN or errno == EINTR:
                return -1
            got = 0
        if got == 0:
            self._peer_vanished()
        return got

    cdef bint _pump_direct(self, int fd) except *:
        """Receive the rest of a large request straight into its target MR (one readv that
        also takes whatever follows it into the wire buffer), as a NIC DMAs each packet of
        a message where it belongs: no second copy of the payload through the buffer."""
        cdef iovec iov[2]
        cdef ssize_t got
        cdef Py_ssize_t extra
        cdef bint drop = self._ddst == NULL or not (<SoftMR>self._dmr).valid
        self._in_r = self._in_w = 0          # everything before it was processed
        iov[0].iov_base = self._in if drop else self._ddst
        iov[0].iov_len = min(self._dleft, self._in_cap) if drop else self._dleft
        iov[1].iov_base = self._in + iov[0].iov_len if drop else self._in
        iov[1].iov_len = self._in_cap - iov[0].iov_len if drop else self._in_cap
        got = self._read_result(readv(self.wire_fd, iov, 2 if iov[1].iov_len else 1))
        if got <= 0:
            return got < 0
        if got < self._dleft:
            self._dleft -= got
            if not drop:
                self._ddst += got
            return True
        extra = got - self._dleft
        if extra and drop:
            memmove(self._in, self._in + self._dleft, extra)
        self._in_w = extra
        self._dleft = 0
        self.in_pump = True
        try:
            self._direct_finish(drop)
            self._process()
        finally:
            self.in_pump = False
        if len(self.outq):
            self.pump_write(fd)
        return not self.peer_gone

    cdef bint _direct_start(self, Hdr *hdr, Py_ssize_t pos) except *:
        """``hdr`` (at ``pos``) starts a request whose payload has only partly arrived. If
        it is large and will be accepted — RTS, the rkey/access/bounds checks pass, a
        receive is posted when it needs one — copy what arrived to its target and receive
        the rest there directly (``_pump_direct``); its completion is made when the last
        byte is in, exactly as for a buffered request. False: leave it to the buffer."""
        cdef SoftMR mr
        cdef char *dst
        cdef Py_ssize_t have = self._in_w - pos - sizeof(Hdr)
        cdef Py_ssize_t n = hdr.length
        cdef long long off
        cdef int i
        if n - have < DIRECT_MIN or self._state != S_RTS:
            return False
        if hdr.ptype == C_SEND:
            if not self._rq_count:
                return False
            i = self._rq_head
            mr = <SoftMR>self._rq_mr[i]
            if n > self._rq_len[i] or not mr.valid:
                return False
            dst = mr.base + self._rq_off[i]
        else:
            found = (<SoftPD>self.pd).by_rkey.get(hdr.rkey)
            if found is None:
                return False
            mr = <SoftMR>found
            off = <long long>(hdr.raddr - mr.addr)
            if (not mr.valid or not mr.remote_write or hdr.raddr < mr.addr
                    or off + n > mr.length):
                return False
            if hdr.ptype == C_WRITE_IMM and not self._rq_count:
                return False   # RNR: the buffered path waits or NAKs
            dst = mr.base + off
        memcpy(dst, self._in + pos + sizeof(Hdr), have)
        self._dhdr = hdr[0]
        self._ddst = dst + have
        self._dleft = n - have
        self._dmr = mr
        self.stats_direct += 1
        return True

    cdef void _direct_finish(self, bint dropped) except *:
        """The last byte of a directly placed request arrived: complete it as _process
        completes a buffered one (its checks are repeated: they still hold unless the QP
        failed meanwhile, in which case it is dropped as any request to an errored QP)."""
        cdef Hdr hdr = self._dhdr
        self._dmr = None
        self._ddst = NULL
        if dropped:
            self._send_ctl(C_NAK, WC_REM_ACCESS_ERR, hdr.psn)
            self._error(WC_WR_FLUSH_ERR, False)
            return
        self._respond(hdr.ptype, hdr.psn, hdr.rkey, hdr.imm, hdr.raddr, NULL, hdr.length)
        if hdr.status & 1 and not self.peer_gone:
            self._send_ctl(C_ACK, 0, hdr.psn)
        if self.late_established and self.cm_sink is not None:
            self.late_established = False
            self.cm_sink(v.CM_ESTABLISHED, self)

    cdef void _grow(self, Py_ssize_t cap) except *:
        cdef char *p = <char *>realloc(self._in, cap)
        if p == NULL:
            raise MemoryError()
        self._in = p
        self._in_cap = cap

    cdef void _process(self) except *:
        cdef Hdr hdr
        cdef Py_ssize_t pos, end, need
        cdef unsigned int last_psn = 0
        cdef bint ack_req = False, has_payload, ring
        cdef int done
        if self._processing:
            return
        self._processing = True
        self.stalled = False
        pos = self._in_r
        try:
            while self._in_w - pos >= <Py_ssize_t>sizeof(Hdr):
                memcpy(&hdr, self._in + pos, sizeof(Hdr))
                has_payload = (hdr.ptype == C_WRITE or hdr.ptype == C_WRITE_IMM
                               or hdr.ptype == C_SEND or hdr.ptype == C_REQ
                               or hdr.ptype == C_REP)
                ring = (hdr.status & F_RING) != 0 and (
                    hdr.ptype == C_WRITE or hdr.ptype == C_WRITE_IMM or hdr.ptype == C_SEND)
                need = sizeof(Hdr) + (hdr.length if has_payload and not ring else 0)
                end = pos + need
                if self._in_w < end:
                    if ((hdr.ptype == C_WRITE or hdr.ptype == C_WRITE_IMM
                         or hdr.ptype == C_SEND) and self._direct_start(&hdr, pos)):
                        pos = self._in_w   # taken over by _pump_direct
                        break
                    if end > self._in_cap:   # its rest would not fit: move it to the front
                        memmove(self._in, self._in + pos, self._in_w - pos)
                        self._in_w -= pos
                        pos = 0
                        if need > self._in_cap:
                            self._grow(need)
                    break
                if ring and not self._ring_has(hdr.length):
                    # a ring-flagged header without its payload in our mapping of the
                    # peer's ring: a broken requester (never this module)
                    if self._state == S_RTS:
                        self._send_ctl(C_NAK, WC_REM_INV_REQ_ERR, hdr.psn)
                        self._error(WC_WR_FLUSH_ERR, False)
                elif ring or hdr.ptype == C_WRITE or hdr.ptype == C_WRITE_IMM or hdr.ptype == C_SEND:
                    done = self._respond(hdr.ptype, hdr.psn, hdr.rkey, hdr.imm, hdr.raddr,
                                         self._in + pos + sizeof(Hdr), hdr.length, ring)
                    if not done:
                        self.stalled = True
                        break
                    if ring:   # placed or dropped: either way it is consumed
                        self._ring_consume(hdr.length)
                    last_psn = hdr.psn
                    if hdr.status & 1:
                        ack_req = True
                    if self.late_established and self.cm_sink is not None:
                        self.late_established = False
                        self.cm_sink(v.CM_ESTABLISHED, self)
                else:
                    self._control(hdr.ptype, hdr.status, hdr.psn)
                pos = end
        finally:
            self._in_r = pos
            self._processing = False
            if ack_req and not self.peer_gone:
                self._send_ctl(C_ACK, 0, last_psn)

    cdef inline void _place(self, char *dst, const char *payload, Py_ssize_t n, bint ring):
        if ring:
            self._ring_get(dst, n)
        elif payload != NULL:
            memcpy(dst, payload, n)

    cdef int _respond(self, int ptype, unsigned int psn, unsigned int rkey, unsigned int imm,
                      unsigned long long raddr, const char *payload, Py_ssize_t n,
                      bint ring=False) except -1:
        """Responder: place one request; 0 when it must wait (RNR). ``payload`` NULL: it
        was placed already (``_direct_start``), only the completion is left to make.
        ``ring``: the payload is the next ``n`` bytes of the peer's ring (the caller
        consumes them unless 0 is returned)."""
        cdef SoftMR mr = None
        cdef SoftMR rmr
        cdef long long off = -1
        cdef unsigned long long wr_id
        cdef Py_ssize_t roff, rlen
        if self._state != S_RTS:
            return 1  # an errored responder stays silent; the requester will time out
        if ptype != C_SEND:
            # the last rkey's MR (one peer writes into one window): no dict lookup per write
            if self._rkey_mr is not None and (<SoftMR>self._rkey_mr).rkey == rkey \
                    and (<SoftMR>self._rkey_mr).valid:   # (a new MR may reuse a freed key)
                mr = <SoftMR>self._rkey_mr
            else:
                found = (<SoftPD>self.pd).by_rkey.get(rkey)
                if found is not None:
                    mr = self._rkey_mr = <SoftMR>found
            if mr is not None:
                off = <long long>(raddr - mr.addr)
            if (mr is None or not mr.valid or not mr.remote_write or raddr < mr.addr
                    or off + n > mr.length):
                self._send_ctl(C_NAK, WC_REM_ACCESS_ERR, psn)
                self._error(WC_WR_FLUSH_ERR, False)
                return 1
            if ptype == C_WRITE:
                self._place(mr.base + off, payload, n, ring)
                return 1
        if not self._rq_count:
            self.stats_rnr += 1
            if self.peer_rnr_retry < 7:
                self._send_ctl(C_NAK, WC_RNR_RETRY_EXC_ERR, psn)
                return 1
            return 0
        cdef int i = self._rq_head
        wr_id, roff, rlen = self._rq_wr[i], self._rq_off[i], self._rq_len[i]
        rmr = <SoftMR>self._rq_mr[i]
        self._rq_mr[i] = None
        self._rq_head = (i + 1) % self.max_recv_wr
        self._rq_count -= 1
        if ptype == C_SEND:
            if n > rlen:
                self._cpush(_wc(wr_id, WC_LOC_LEN_ERR, WC_RECV, n))
                self._send_ctl(C_NAK, WC_REM_INV_REQ_ERR, psn)
                self._error(WC_WR_FLUSH_ERR, False)
                return 1
            if rmr.valid:
                self._place(rmr.base + roff, payload, n, ring)
            self._cpush(_wc(wr_id, WC_SUCCESS, WC_RECV, n))
        else:
            self._place(mr.base + off, payload, n, ring)
            self._cpush(_wc(wr_id, WC_SUCCESS, WC_RECV_RDMA_WITH_IMM, n, imm, True))
        return 1

    cdef void _complete_head(self, int status) except *:
        """Retire the oldest unacknowledged send WR (a completion if it was signaled)."""
        cdef int i = self._sq_head
        self._sq_head = (i + 1) % self.max_send_wr
        self._sq_count -= 1
        self._sq_psn += 1
        if self._sq_sig[i] or status != WC_SUCCESS:
            self._cpush(_wc(self._sq_wr[i], status, self._sq_op[i]), self._release(True))
        else:
            self._release(False)

    cdef void _control(self, int ptype, int status, unsigned int psn) except *:
        if ptype == C_ACK:
            while self._sq_count and self._sq_psn <= psn:
                self._complete_head(WC_SUCCESS)
        elif ptype == C_NAK:
            while self._sq_count and self._sq_psn < psn:  # everything before it succeeded
                self._complete_head(WC_SUCCESS)
            self._error(status, True)
        elif ptype == C_RTU:
            if self._state == S_RESET:
                self._state = S_RTS
            if status & F_RING:      # the client maps our ring: use it
                self.ring_enable()
            else:
                self.ring_drop()
            if self.cm_sink is not None:
                if os.environ.get("PYKV_SOFTRDMA_ESTABLISHED") == "late":
                    # race injection: the peer's first message overtakes ESTABLISHED
                    self.late_established = True
                else:
                    self.cm_sink(v.CM_ESTABLISHED, self)
        elif ptype == C_DISC:
            self.peer_disconnected = True
            self.peer_gone = True
            if self.cm_sink is not None:
                self.cm_sink(v.CM_DISCONNECTED, self)
                self.cm_sink(v.CM_TIMEWAIT_EXIT, self)
            else:
                self.client_events.append(v.CM_DISCONNECTED)

    cdef void _error(self, int status, bint requester) except *:
        """Move to ERR: the head send WR gets ``status``, everything else is flushed."""
        cdef bint first = requester
        cdef int i
        if self._state == S_ERR and not self._sq_count:
            return
        self._state = S_ERR
        while self._sq_count:
            self._complete_head(status if first else WC_WR_FLUSH_ERR)
            first = False
        while self._rq_count:
            i = self._rq_head
            self._rq_mr[i] = None
            self._rq_head = (i + 1) % self.max_recv_wr
            self._rq_count -= 1
            self._cpush(_wc(self._rq_wr[i], WC_WR_FLUSH_ERR, WC_RECV))

    cdef void _peer_vanished(self) except *:
        if self.peer_gone:
            return
        self.peer_gone = True
        if self._sq_count and self._state == S_RTS:
            self._error(WC_RETRY_EXC_ERR, True)

    def cm_events(self) -> list:
        out = list(self.client_events)
        self.client_events.clear()
        return out

    # -- teardown ---------------------------------------------------------------------------
    def disconnect(self) -> None:
        if self.closed:
            return
        if not self.peer_gone:
            self._send_ctl(C_DISC, 0, 0)
        self._error(WC_WR_FLUSH_ERR, False)

    def close(self) -> None:
        if self.closed:
            return
        if len(self.outq) and not self.peer_gone:
            try:  # last words (e.g. the DISCONNECT) get a bounded chance to leave
                self.sock.settimeout(1.0)
                self.sock.sendall(self.outq)
            except OSError:
                pass
        self._state = S_ERR
        self.closed = True
        self._sq_count = 0
        self._rq_count = 0
        self._rq_mr = [None] * self.max_recv_wr
        self._cq_count = 0
        self._cq = [None] * self.cq_size
        self._ring_unmap()
        try:
            self.sock.close()
        finally:
            os.close(self.comp_fd)
            for mr in list(self.pd.mrs.values()):
                mr.dereg()
        if self.events_acked != self.events_reported:
            raise v.VerbsError(_errno.EBUSY, f"CQ destroyed with {self.events_reported - self.events_acked} unacked events")


v.QueuePair.register(SoftQP)


def _send_with_fd(sock: socket.socket, data: bytes, fd: int) -> None:
    """Send ``data`` (setup messages: blocking or with a timeout) with ``fd`` attached."""
    if fd < 0:
        sock.sendall(data)
        return
    sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    if sent < len(data):
        sock.sendall(data[sent:])


class _SoftRequest(v.ConnectRequest):
    def __init__(self, listener: SoftListener, sock: socket.socket, rnr_retry: int,
                 peer: str, ring_fd: int = -1) -> None:
        self.listener = listener
        self.sock = sock
        self.rnr_retry = rnr_retry
        self.peer_address = peer
        self.local_address = f"{listener.bind}:{listener.port}"
        self.qp: SoftQP | None = None
        self.ring_fd = ring_fd          # the client's payload ring (memfd), if it has one
        self.ring_accepted = False

    def _close_ring_fd(self) -> None:
        if self.ring_fd >= 0:
            os.close(self.ring_fd)
            self.ring_fd = -1

    def create_qp(self, comp_vector: int) -> SoftQP:
        self.qp = SoftQP(self.sock, cm_sink=self.listener._child_event,
                         peer_address=self.peer_address, local_address=self.local_address)
        # RC semantics: the client's QP retries RNR as often as our accept says
        self.qp.rnr_retry = self.listener.accept_rnr_retry
        self.qp.peer_rnr_retry = self.listener.accept_rnr_retry
        if self.ring_fd >= 0:
            try:
                if ring_size():   # PYKV_SOFTRDMA_RING=0 plays a peer without rings
                    self.qp.ring_accept(self.ring_fd)
                    self.ring_accepted = True
            except OSError:
                pass
            finally:
                self._close_ring_fd()
        return self.qp

    def accept(self, qp: v.QueuePair) -> None:
        assert isinstance(qp, SoftQP)
        qp.state = QPS_RTS
        status, fd = 0, -1
        if self.ring_accepted and qp is self.qp:
            # a ring-capable client: offer ours too (used once its RTU says it maps it)
            status = F_RING
            fd = qp.ring_offer(ring_size())
            if fd >= 0:
                status |= REP_RING_FD
        rep = (_HDR.pack(P_REP, status, 0, 0, 0, 0, _CONN.size)
               + _CONN.pack(qp.rnr_retry, self.local_address.encode()))
        try:
            self.sock.settimeout(1.0)   # a fresh socket: the few bytes fit at once
            _send_with_fd(self.sock, rep, fd)
        except OSError:
            pass                        # the client is gone: its QP finds out on the wire
        finally:
            self.sock.setblocking(False)
            if fd >= 0:
                os.close(fd)
        self.listener.children.add(qp)

    def reject(self) -> None:
        self._close_ring_fd()
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
            fds: list[int] = []
            try:
                conn.settimeout(2.0)
                hdr = _recv_exact(conn, HDR, fds)
                ptype, status, _p, _k, _i, _a, length = _HDR.unpack(hdr)
                body = _recv_exact(conn, length, fds)
                if ptype != P_REQ or length != _CONN.size:
                    raise OSError("bad connect request")
                rnr, addr = _CONN.unpack(body)
            except OSError:
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            ring_fd = fds.pop(0) if status & F_RING and fds else -1
            for fd in fds:
                os.close(fd)
            req = _SoftRequest(self, conn, rnr, addr.rstrip(b"\0").decode(), ring_fd)
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
                raise v.VerbsError(_errno.EBUSY, "listener destroyed with unacked CM events")


def _recv_exact(sock: socket.socket, n: int, fds: list | None = None) -> bytes:
    """``n`` bytes of a setup message; file descriptors sent with them go to ``fds``."""
    buf = bytearray()
    anc = socket.CMSG_SPACE(4 * array.array("i").itemsize)
    while len(buf) < n:
        chunk, ancdata, _flags, _addr = sock.recvmsg(n - len(buf), anc)
        for level, ctype, data in ancdata:
            if level == socket.SOL_SOCKET and ctype == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(data[:len(data) - len(data) % got.itemsize])
                if fds is None:
                    for fd in got:
                        os.close(fd)
                else:
                    fds.extend(got)
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
                prepare, rnr_retry: int = 7) -> SoftQP:
        path = _listen_path(host, port)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise ConnectionRefusedError(
                _errno.ECONNREFUSED, f"RDMA connect to {host}:{port} rejected ({exc.strerror})"
            ) from None
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind((host, 0))
                local = f"{host}:{probe.getsockname()[1]}"
            except OSError:
                local = f"127.0.0.1:{random.randint(32768, 60999)}"
        qp = SoftQP(sock, peer_address=f"{host}:{port}", local_address=local)
        qp.rnr_retry = rnr_retry
        fds: list[int] = []
        ring_fd = -1
        try:
            prepare(qp)
            sock.setblocking(True)
            sock.settimeout(timeout)
            # offer our payload ring (its memfd rides along with the REQ)
            ring_fd = qp.ring_offer(ring_size())
            _send_with_fd(sock, _HDR.pack(P_REQ, F_RING if ring_fd >= 0 else 0, 0, 0, 0, 0,
                                          _CONN.size) + _CONN.pack(rnr_retry, local.encode()),
                          ring_fd)
            hdr = _recv_exact(sock, HDR, fds)
            ptype, status, _p, _k, _i, _a, length = _HDR.unpack(hdr)
            if ptype != P_REP:
                raise ConnectionRefusedError(_errno.ECONNREFUSED,
                                             f"RDMA connect to {host}:{port} rejected")
            _CONN.unpack(_recv_exact(sock, length, fds))
            if status & F_RING:       # the server maps our ring
                qp.ring_enable()
            else:                     # a server without rings: the socket carries all
                qp.ring_drop()
            mapped = False
            if status & REP_RING_FD and fds:
                try:
                    qp.ring_accept(fds[0])
                    mapped = True
                except OSError:
                    pass
            # the server's QP retries RNR as often as our connect parameters say
            qp.peer_rnr_retry = rnr_retry
            qp.state = QPS_RTS
            sock.sendall(_HDR.pack(P_RTU, F_RING if mapped else 0, 0, 0, 0, 0, 0))
            sock.setblocking(False)
        except BaseException:
            qp.close()
            raise
        finally:
            for fd in fds + ([ring_fd] if ring_fd >= 0 else []):
                os.close(fd)
        return qp
