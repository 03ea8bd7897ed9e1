# cython: language_level=3
"""Real verbs through the libibverbs/librdmacm C API: the compiled RDMA backend.

Owns the ``ibverbs`` backend of ``pykv.rdma.verbs`` for real devices (RoCE/InfiniBand/iWARP
NICs, soft-RoCE): CM event channels and listeners, connection requests accepted with an
external RC queue pair (created with ``ibv_create_qp`` and moved INIT -> RTR -> RTS with
``rdma_init_qp_attr``, as the pyverbs backend does), PD/MR registration, the completion
channel fd with ``ibv_req_notify_cq``/``ibv_get_cq_event``/``ibv_ack_cq_events``, and
``ibv_post_send``/``ibv_post_recv``/``ibv_poll_cq`` in C. Its QPs and MRs derive from
``cverbs``, so the endpoint calls them through C vtables, and ``poll_wc`` fills the
endpoint's C array of completions: no Python object per work request or completion.

Built only when the rdma-core headers are present (``setup.py``); ``verbs.get_backend``
prefers it and falls back to pyverbs when it is missing. Numeric constants are the
libraries' own, which ``verbs`` mirrors.
"""
import errno as _errno
import os
import select
import socket
import time

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from pykv.rdma import verbs as v

from pykv.rdma.cverbs cimport CMemoryRegion, CQueuePair, wc_t


cdef extern from "<errno.h>" nogil:
    int errno


cdef extern from "Python.h":
    int PyBUF_READ


cdef extern from "<sys/mman.h>" nogil:
    void *mmap(void *addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void *addr, size_t length)
    int PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS
    void *MAP_FAILED


cdef extern from "<fcntl.h>" nogil:
    int fcntl(int fd, int cmd, ...)
    int F_GETFL, F_SETFL, O_NONBLOCK


cdef extern from "<arpa/inet.h>" nogil:
    ctypedef unsigned short sa_family_t
    struct sockaddr:
        sa_family_t sa_family
    struct in_addr:
        uint32_t s_addr
    struct sockaddr_in:
        sa_family_t sin_family
        uint16_t sin_port
        in_addr sin_addr
    struct in6_addr:
        pass
    struct sockaddr_in6:
        sa_family_t sin6_family
        uint16_t sin6_port
        in6_addr sin6_addr
    int AF_INET, AF_INET6
    int inet_pton(int af, const char *src, void *dst)
    const char *inet_ntop(int af, const void *src, char *dst, unsigned int size)
    uint16_t htons(uint16_t)
    uint16_t ntohs(uint16_t)
    uint32_t htonl(uint32_t)
    uint32_t ntohl(uint32_t)


cdef extern from "<infiniband/verbs.h>" nogil:
    struct ibv_context:
        int num_comp_vectors
    struct ibv_pd:
        pass
    struct ibv_comp_channel:
        int fd
    struct ibv_cq:
        pass
    struct ibv_mr:
        void *addr
        size_t length
        uint32_t lkey
        uint32_t rkey
    struct ibv_srq:
        pass
    struct ibv_qp:
        uint32_t qp_num
    enum ibv_qp_type:
        IBV_QPT_RC
    enum ibv_qp_state:
        IBV_QPS_INIT
        IBV_QPS_RTR
        IBV_QPS_RTS
        IBV_QPS_ERR
    struct ibv_qp_cap:
        uint32_t max_send_wr
        uint32_t max_recv_wr
        uint32_t max_send_sge
        uint32_t max_recv_sge
        uint32_t max_inline_data
    struct ibv_qp_init_attr:
        void *qp_context
        ibv_cq *send_cq
        ibv_cq *recv_cq
        ibv_srq *srq
        ibv_qp_cap cap
        ibv_qp_type qp_type
        int sq_sig_all
    struct ibv_qp_attr:
        ibv_qp_state qp_state
        unsigned int qp_access_flags
        uint8_t min_rnr_timer
    struct ibv_sge:
        uint64_t addr
        uint32_t length
        uint32_t lkey
    struct ibv_recv_wr:
        uint64_t wr_id
        ibv_recv_wr *next
        ibv_sge *sg_list
        int num_sge
    struct ibv_send_wr:
        uint64_t wr_id
        ibv_send_wr *next
        ibv_sge *sg_list
        int num_sge
        int opcode
        unsigned int send_flags
        uint32_t imm_data
    struct ibv_wc:
        uint64_t wr_id
        int status
        int opcode
        uint32_t byte_len
        uint32_t imm_data
        unsigned int wc_flags
    int IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ
    int IBV_QP_STATE, IBV_QP_ACCESS_FLAGS, IBV_QP_MIN_RNR_TIMER
    int IBV_WR_SEND, IBV_WR_RDMA_WRITE_WITH_IMM
    int IBV_SEND_SIGNALED, IBV_SEND_INLINE
    int IBV_WC_WITH_IMM

    int ibv_fork_init()
    ibv_pd *ibv_alloc_pd(ibv_context *context)
    int ibv_dealloc_pd(ibv_pd *pd)
    ibv_comp_channel *ibv_create_comp_channel(ibv_context *context)
    int ibv_destroy_comp_channel(ibv_comp_channel *channel)
    ibv_cq *ibv_create_cq(ibv_context *context, int cqe, void *cq_context,
                          ibv_comp_channel *channel, int comp_vector)
    int ibv_destroy_cq(ibv_cq *cq)
    int ibv_req_notify_cq(ibv_cq *cq, int solicited_only)
    int ibv_get_cq_event(ibv_comp_channel *channel, ibv_cq **cq, void **cq_context)
    void ibv_ack_cq_events(ibv_cq *cq, unsigned int nevents)
    int ibv_poll_cq(ibv_cq *cq, int num_entries, ibv_wc *wc)
    ibv_qp *ibv_create_qp(ibv_pd *pd, ibv_qp_init_attr *qp_init_attr)
    int ibv_modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask)
    int ibv_destroy_qp(ibv_qp *qp)
    ibv_mr *ibv_reg_mr(ibv_pd *pd, void *addr, size_t length, int access)
    int ibv_dereg_mr(ibv_mr *mr)
    int ibv_post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr)
    int ibv_post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr)


cdef extern from *:
    """
    #include <infiniband/verbs.h>
    static inline void pykv_wr_rdma(struct ibv_send_wr *wr, uint64_t addr, uint32_t rkey) {
        wr->wr.rdma.remote_addr = addr;
        wr->wr.rdma.rkey = rkey;
    }
    """
    void pykv_wr_rdma(ibv_send_wr *wr, uint64_t addr, uint32_t rkey) nogil


cdef extern from "<rdma/rdma_cma.h>" nogil:
    struct rdma_event_channel:
        int fd
    struct rdma_cm_id:
        ibv_context *verbs
        rdma_event_channel *channel
        void *context
    struct rdma_conn_param:
        const void *private_data
        uint8_t private_data_len
        uint8_t responder_resources
        uint8_t initiator_depth
        uint8_t flow_control
        uint8_t retry_count
        uint8_t rnr_retry_count
        uint8_t srq
        uint32_t qp_num
    struct rdma_cm_event:
        rdma_cm_id *id
        rdma_cm_id *listen_id
        int event
        int status
    enum rdma_port_space:
        RDMA_PS_TCP
    rdma_event_channel *rdma_create_event_channel()
    void rdma_destroy_event_channel(rdma_event_channel *channel)
    int rdma_create_id(rdma_event_channel *channel, rdma_cm_id **id, void *context,
                       rdma_port_space ps)
    int rdma_destroy_id(rdma_cm_id *id)
    int rdma_bind_addr(rdma_cm_id *id, sockaddr *addr)
    int rdma_listen(rdma_cm_id *id, int backlog)
    int rdma_resolve_addr(rdma_cm_id *id, sockaddr *src_addr, sockaddr *dst_addr,
                          int timeout_ms)
    int rdma_resolve_route(rdma_cm_id *id, int timeout_ms)
    int rdma_connect(rdma_cm_id *id, rdma_conn_param *conn_param)
    int rdma_establish(rdma_cm_id *id)
    int rdma_accept(rdma_cm_id *id, rdma_conn_param *conn_param)
    int rdma_reject(rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
    int rdma_disconnect(rdma_cm_id *id)
    int rdma_get_cm_event(rdma_event_channel *channel, rdma_cm_event **event)
    int rdma_ack_cm_event(rdma_cm_event *event)
    int rdma_init_qp_attr(rdma_cm_id *id, ibv_qp_attr *qp_attr, int *qp_attr_mask)
    sockaddr *rdma_get_local_addr(rdma_cm_id *id)
    sockaddr *rdma_get_peer_addr(rdma_cm_id *id)
    ibv_context **rdma_get_devices(int *num_devices)
    void rdma_free_devices(ibv_context **list)


cdef enum:
    CQ_SIZE = 2048
    MAX_WR = 1024
# IBV_SEND_INLINE sizes tried in turn at QP creation (providers refuse what they cannot do)
INLINE_SIZES = (512, 256, 128, 64, 0)

cdef int _CM_CONNECT_REQUEST = v.CM_CONNECT_REQUEST
cdef int _CM_DISCONNECTED = v.CM_DISCONNECTED
cdef int _CM_TIMEWAIT_EXIT = v.CM_TIMEWAIT_EXIT
cdef int _WC_RECV_IMM = v.WC_RECV_RDMA_WITH_IMM
cdef object _VerbsError = v.VerbsError


cdef _error(str what, int err=0):
    err = err or errno or _errno.EIO
    return _VerbsError(err, f"{what}: {os.strerror(err)}")


cdef int _nonblock(int fd) except -1:
    if fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0:
        raise _error("fcntl")
    return 0


cdef str _format_addr(sockaddr *sa):
    """``ip:port`` of a sockaddr as Redis prints addresses ("" when unknown)."""
    cdef char buf[64]
    if sa == NULL:
        return ""
    if sa.sa_family == AF_INET:
        inet_ntop(AF_INET, &(<sockaddr_in *>sa).sin_addr, buf, sizeof(buf))
        return f"{buf.decode()}:{ntohs((<sockaddr_in *>sa).sin_port)}"
    if sa.sa_family == AF_INET6:
        inet_ntop(AF_INET6, &(<sockaddr_in6 *>sa).sin6_addr, buf, sizeof(buf))
        return f"{buf.decode()}:{ntohs((<sockaddr_in6 *>sa).sin6_port)}"
    return ""


cdef int _sockaddr_of(str ip, int port, sockaddr_in6 *out) except -1:
    """Fill ``out`` (large enough for either family) with ``ip``:``port``."""
    cdef bytes raw = ip.encode()
    memset(out, 0, sizeof(sockaddr_in6))
    cdef sockaddr_in *sin = <sockaddr_in *>out
    if inet_pton(AF_INET, raw, &sin.sin_addr) == 1:
        sin.sin_family = AF_INET
        sin.sin_port = htons(port)
        return 0
    if inet_pton(AF_INET6, raw, &out.sin6_addr) == 1:
        out.sin6_family = AF_INET6
        out.sin6_port = htons(port)
        return 0
    raise v.SetupError(f"RDMA: '{ip}' is not an IP address")


cdef class IbvMR(CMemoryRegion):
    """Memory of its own mapping, registered with ``ibv_reg_mr`` (resident and pinned).

    An anonymous mapping, as Valkey's: page-aligned and zeroed by the kernel (a remote
    reader of the window sees zeros, never old heap bytes), with no pass of our own over
    it; ``ibv_reg_mr`` faults its pages in as it pins them. (A heap block had to be
    cleared first: a 1 MiB memset per connection.)"""

    cdef ibv_mr *mr
    cdef char *base
    cdef size_t mapped   # the mapping's length: ``length`` rounded up to whole pages
    cdef public Py_ssize_t length
    cdef public unsigned long long addr
    cdef public unsigned int lkey, rkey

    cdef int register(self, ibv_pd *pd, Py_ssize_t length, int access) except -1:
        cdef size_t mapped = (<size_t>max(length, 1) + 4095) & ~(<size_t>4095)
        cdef void *mem = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if mem == MAP_FAILED:
            raise MemoryError()
        self.mr = ibv_reg_mr(pd, mem, length, access)
        if self.mr == NULL:
            err = errno
            munmap(mem, mapped)
            if err in (_errno.ENOMEM, _errno.EPERM):
                raise v.SetupError(v.memlock_advice(length))
            raise _error("ibv_reg_mr", err)
        self.base = <char *>mem
        self.mapped = mapped
        self.length = length
        self.addr = <size_t>mem
        self.lkey, self.rkey = self.mr.lkey, self.mr.rkey
        return 0

    cdef void release(self) noexcept:
        if self.mr != NULL:
            ibv_dereg_mr(self.mr)
            self.mr = NULL
        if self.base != NULL:
            munmap(self.base, self.mapped)
            self.base = NULL

    def __dealloc__(self):
        self.release()

    cdef int _check(self, Py_ssize_t offset, Py_ssize_t n) except -1:
        if self.base == NULL:
            raise _VerbsError(_errno.EINVAL, "memory region deregistered")
        if offset < 0 or n < 0 or offset + n > self.length:
            raise _VerbsError(_errno.EINVAL, f"[{offset}, {offset + n}) outside the MR")
        return 0

    cpdef bytes read(self, Py_ssize_t offset, Py_ssize_t n):
        self._check(offset, n)
        return PyBytes_FromStringAndSize(self.base + offset, n)

    cpdef write(self, Py_ssize_t offset, data):
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            self.write_from(offset, <const char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    cdef int write_from(self, Py_ssize_t offset, const char *data, Py_ssize_t n) except -1:
        self._check(offset, n)
        memcpy(self.base + offset, data, n)
        return 0

    cdef char *span(self, Py_ssize_t offset, Py_ssize_t n) except NULL:
        self._check(offset, n)
        return self.base + offset

    cpdef view(self, Py_ssize_t offset, Py_ssize_t n):
        """A read-only view of the region's memory, no copy: valid while the MR is
        registered (the endpoint releases it before the peer may overwrite the bytes)."""
        self._check(offset, n)
        return PyMemoryView_FromMemory(self.base + offset, n, PyBUF_READ)


cdef class IbvQP(CQueuePair):
    """PD + completion channel + CQ + external RC QP of one CM id."""

    drain_on_close = False   # destroying the QP and the CQ discards the flushed receives

    cdef rdma_cm_id *cm_id
    cdef ibv_pd *pd
    cdef ibv_comp_channel *cc
    cdef ibv_cq *cq
    cdef ibv_qp *qp
    cdef rdma_event_channel *own_channel   # client side: the id's channel, destroyed with it
    cdef public int comp_fd
    cdef public str peer_address, local_address
    cdef public bint closed
    cdef public object listener   # the listener whose channel reports on this id
    cdef list mrs
    cdef unsigned int pending_acks

    def __cinit__(self):
        self.comp_fd = -1
        self.peer_address = self.local_address = ""
        self.mrs = []

    cdef int setup(self, rdma_cm_id *cm_id, int comp_vector) except -1:
        cdef ibv_context *ctx = cm_id.verbs
        cdef ibv_qp_init_attr init
        cdef int nvec
        self.cm_id = cm_id
        if ctx == NULL:
            raise _VerbsError(_errno.ENODEV, "the CM id has no device")
        self.pd = ibv_alloc_pd(ctx)
        if self.pd == NULL:
            raise _error("ibv_alloc_pd")
        self.cc = ibv_create_comp_channel(ctx)
        if self.cc == NULL:
            raise _error("ibv_create_comp_channel")
        self.comp_fd = self.cc.fd
        _nonblock(self.comp_fd)
        nvec = max(1, ctx.num_comp_vectors)
        vec = (os.getpid() + id(self)) % nvec if comp_vector < 0 else comp_vector % nvec
        self.cq = ibv_create_cq(ctx, CQ_SIZE, NULL, self.cc, vec)
        if self.cq == NULL:
            raise _error("ibv_create_cq")
        for size in INLINE_SIZES:
            memset(&init, 0, sizeof(init))
            init.send_cq = init.recv_cq = self.cq
            init.qp_type = IBV_QPT_RC
            init.cap.max_send_wr = init.cap.max_recv_wr = MAX_WR
            init.cap.max_send_sge = init.cap.max_recv_sge = 1
            init.cap.max_inline_data = size
            init.sq_sig_all = 0
            self.qp = ibv_create_qp(self.pd, &init)
            if self.qp != NULL:
                self.max_inline_data = init.cap.max_inline_data if size else 0
                break
        else:
            raise _error("ibv_create_qp")
        self._modify(IBV_QPS_INIT, -1)
        return 0

    cdef int _modify(self, int state, int min_rnr_timer) except -1:
        cdef ibv_qp_attr attr
        cdef int mask = 0
        memset(&attr, 0, sizeof(attr))
        attr.qp_state = <ibv_qp_state>state
        if rdma_init_qp_attr(self.cm_id, &attr, &mask) != 0:
            raise _error("rdma_init_qp_attr")
        if state == IBV_QPS_INIT:
            # the active side gets no access flags from rdma_cm before connecting: without
            # REMOTE_WRITE the peer's WRITE_WITH_IMM is NAKed as an invalid request
            attr.qp_access_flags = (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE
                                    | IBV_ACCESS_REMOTE_READ)
            mask |= IBV_QP_ACCESS_FLAGS
        if min_rnr_timer >= 0:
            attr.min_rnr_timer = min_rnr_timer
        err = ibv_modify_qp(self.qp, &attr, mask)
        if err != 0:
            raise _error("ibv_modify_qp", err)
        return 0

    def to_rts(self) -> None:
        # 1 ~ 0.01 ms RNR back-off (as the pyverbs backend)
        self._modify(IBV_QPS_RTR, 1)
        self._modify(IBV_QPS_RTS, -1)

    @property
    def qp_num(self) -> int:
        return self.qp.qp_num if self.qp != NULL else 0

    # -- the QueuePair interface ---------------------------------------------------------
    def aux_fds(self) -> list:
        return []

    def write_fds(self) -> list:
        return []

    def pump_write(self, int fd) -> None:
        return None

    def reg_mr(self, Py_ssize_t length, bint remote_write) -> IbvMR:
        cdef int access = IBV_ACCESS_LOCAL_WRITE
        if self.closed:
            raise _VerbsError(_errno.EINVAL, "QP destroyed")
        if remote_write:
            access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ
        mr = IbvMR.__new__(IbvMR)
        (<IbvMR>mr).register(self.pd, length, access)
        self.mrs.append(mr)
        return mr

    cdef inline IbvMR _mr(self, mr, Py_ssize_t offset, Py_ssize_t length):
        cdef IbvMR m = <IbvMR?>mr
        m._check(offset, length)
        return m

    cpdef post_recv(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length):
        cdef IbvMR m = self._mr(mr, offset, length)
        cdef ibv_sge sge
        cdef ibv_recv_wr wr
        cdef ibv_recv_wr *bad = NULL
        if self.closed:
            raise _VerbsError(_errno.EINVAL, "QP destroyed")
        sge.addr, sge.length, sge.lkey = <uint64_t>m.base + offset, length, m.lkey
        wr.wr_id, wr.next, wr.sg_list, wr.num_sge = wr_id, NULL, &sge, 1
        err = ibv_post_recv(self.qp, &wr, &bad)
        if err != 0:
            raise _error("ibv_post_recv", err)

    cdef int _post(self, unsigned long long wr_id, int opcode, uint64_t addr, uint32_t length,
                   uint32_t lkey, unsigned long long raddr, unsigned int rkey, unsigned int imm,
                   unsigned int flags) except -1:
        cdef ibv_sge sge
        cdef ibv_send_wr wr
        cdef ibv_send_wr *bad = NULL
        if self.closed:
            raise _VerbsError(_errno.EINVAL, "QP destroyed")
        memset(&wr, 0, sizeof(wr))
        sge.addr, sge.length, sge.lkey = addr, length, lkey
        wr.wr_id, wr.sg_list, wr.num_sge, wr.opcode = wr_id, &sge, 1, opcode
        wr.send_flags = flags
        if opcode == IBV_WR_RDMA_WRITE_WITH_IMM:
            wr.imm_data = htonl(imm)
            pykv_wr_rdma(&wr, raddr, rkey)
        err = ibv_post_send(self.qp, &wr, &bad)
        if err != 0:
            raise _error("ibv_post_send", err)
        return 0

    def post_send(self, unsigned long long wr_id, mr, Py_ssize_t offset, Py_ssize_t length,
                  bint signaled) -> None:
        cdef IbvMR m = self._mr(mr, offset, length)
        self._post(wr_id, IBV_WR_SEND, <uint64_t>m.base + offset, length, m.lkey, 0, 0, 0,
                   IBV_SEND_SIGNALED if signaled else 0)

    cpdef post_write_imm(self, unsigned long long wr_id, mr, Py_ssize_t offset,
                         Py_ssize_t length, unsigned long long remote_addr, unsigned int rkey,
                         unsigned int imm, bint signaled):
        cdef IbvMR m = self._mr(mr, offset, length)
        self._post(wr_id, IBV_WR_RDMA_WRITE_WITH_IMM, <uint64_t>m.base + offset, length,
                   m.lkey, remote_addr, rkey, imm, IBV_SEND_SIGNALED if signaled else 0)

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
        # the provider copies an inline payload into the WQE during ibv_post_send
        if n > self.max_inline_data:
            raise _VerbsError(_errno.EINVAL, "inline data larger than max_inline_data")
        self._post(wr_id, IBV_WR_RDMA_WRITE_WITH_IMM, <uint64_t>data, n, 0, remote_addr, rkey,
                   imm, IBV_SEND_INLINE | (IBV_SEND_SIGNALED if signaled else 0))
        return 0

    cpdef bint get_cq_event(self):
        cdef ibv_cq *cq
        cdef void *ctx
        if self.closed or self.cc == NULL:
            return False
        if ibv_get_cq_event(self.cc, &cq, &ctx) != 0:
            if errno in (_errno.EAGAIN, _errno.EWOULDBLOCK):
                return False
            raise _error("ibv_get_cq_event")
        return True

    cpdef ack_cq_events(self, long long n):
        if not self.closed and n > 0:
            ibv_ack_cq_events(self.cq, n)

    cpdef req_notify(self):
        if self.closed:
            return
        err = ibv_req_notify_cq(self.cq, 0)
        if err != 0:
            raise _error("ibv_req_notify_cq", err)

    cdef int poll_wc(self, wc_t *out, int max_entries) except -1:
        cdef ibv_wc wcs[64]
        cdef int n, i
        if self.closed:
            return 0
        if max_entries > 64:
            max_entries = 64
        n = ibv_poll_cq(self.cq, max_entries, wcs)
        if n < 0:
            raise _error("ibv_poll_cq", -n)
        for i in range(n):
            out[i].wr_id = wcs[i].wr_id
            out[i].status = wcs[i].status
            out[i].opcode = wcs[i].opcode
            out[i].byte_len = wcs[i].byte_len
            out[i].imm = ntohl(wcs[i].imm_data) if wcs[i].wc_flags & IBV_WC_WITH_IMM else 0
        return n

    cpdef list poll(self, int max_entries):
        """Completions as ``verbs.WorkCompletion`` (the endpoint uses ``poll_wc``)."""
        cdef wc_t wcs[64]
        cdef int n = self.poll_wc(wcs, max_entries)
        return [v.WorkCompletion(wcs[i].wr_id, wcs[i].status, wcs[i].opcode, wcs[i].byte_len,
                                 wcs[i].imm if wcs[i].opcode == _WC_RECV_IMM else None)
                for i in range(n)]

    def cm_events(self) -> list:
        """Client side: the CM events waiting on this connection's own channel."""
        cdef rdma_cm_event *ev
        out = []
        if self.own_channel == NULL or self.closed:
            return out
        while rdma_get_cm_event(self.own_channel, &ev) == 0:
            out.append(ev.event)
            rdma_ack_cm_event(ev)
        return out

    def disconnect(self) -> None:
        cdef ibv_qp_attr attr
        if self.closed:
            return
        rdma_disconnect(self.cm_id)
        memset(&attr, 0, sizeof(attr))
        attr.qp_state = IBV_QPS_ERR
        ibv_modify_qp(self.qp, &attr, IBV_QP_STATE)

    def close(self) -> None:
        """Destroy QP, CQ, channel, MRs, PD and the CM id (CQ events must be acked)."""
        if self.closed:
            return
        self.closed = True
        if self.listener is not None:
            self.listener.forget_id(<size_t>self.cm_id)
        if self.qp != NULL:
            ibv_destroy_qp(self.qp)
            self.qp = NULL
        if self.cq != NULL:
            ibv_destroy_cq(self.cq)
            self.cq = NULL
        if self.cc != NULL:
            ibv_destroy_comp_channel(self.cc)
            self.cc = NULL
        for mr in self.mrs:
            (<IbvMR>mr).release()
        self.mrs = []
        if self.pd != NULL:
            ibv_dealloc_pd(self.pd)
            self.pd = NULL
        if self.cm_id != NULL:
            rdma_destroy_id(self.cm_id)
            self.cm_id = NULL
        if self.own_channel != NULL:
            rdma_destroy_event_channel(self.own_channel)
            self.own_channel = NULL


cdef class _Request:
    """A CONNECT_REQUEST's child id: ``create_qp``, then ``accept`` or ``reject``."""

    cdef rdma_cm_id *cm_id
    cdef public object listener, qp
    cdef public str peer_address, local_address

    def create_qp(self, int comp_vector) -> IbvQP:
        qp = self.qp = IbvQP.__new__(IbvQP)   # set first: reject() cleans up a partial one
        (<IbvQP>qp).setup(self.cm_id, comp_vector)
        (<IbvQP>qp).peer_address, (<IbvQP>qp).local_address = self.peer_address, self.local_address
        (<IbvQP>qp).listener = self.listener
        self.listener.by_id[<size_t>self.cm_id] = qp
        return qp

    def accept(self, qp) -> None:
        cdef IbvQP q = <IbvQP?>qp
        cdef rdma_conn_param param
        q.to_rts()
        memset(&param, 0, sizeof(param))
        param.responder_resources = param.initiator_depth = 1
        param.retry_count = 5
        param.rnr_retry_count = 7
        param.qp_num = q.qp.qp_num
        if rdma_accept(self.cm_id, &param) != 0:
            raise _error("rdma_accept")

    def reject(self) -> None:
        rdma_reject(self.cm_id, NULL, 0)
        if self.qp is not None:
            self.qp.close()     # destroys the id too
        else:
            rdma_destroy_id(self.cm_id)
        self.cm_id = NULL


class IbvRequest(_Request, v.ConnectRequest):
    pass


cdef class _Listener:
    cdef rdma_event_channel *ch
    cdef rdma_cm_id *lid
    cdef public str bind
    cdef public int port, chan_fd
    cdef public dict by_id     # cm_id pointer -> IbvQP of that connection

    def _open(self, str ip, int port, int backlog) -> None:
        cdef sockaddr_in6 sa
        self.bind, self.port, self.by_id = ip, port, {}
        self.ch = rdma_create_event_channel()
        if self.ch == NULL:
            raise _error("rdma_create_event_channel")
        self.chan_fd = self.ch.fd
        _nonblock(self.chan_fd)
        if rdma_create_id(self.ch, &self.lid, NULL, RDMA_PS_TCP) != 0:
            raise _error("rdma_create_id")
        _sockaddr_of(ip, port, &sa)
        if rdma_bind_addr(self.lid, <sockaddr *>&sa) != 0 or rdma_listen(self.lid, backlog) != 0:
            err = errno
            self.close()
            raise v.SetupError(
                f"RDMA: cannot listen on {ip}:{port} ({os.strerror(err)}); the bind address "
                "must be an IP of an RDMA-capable interface (see 'rdma link show')")

    def fds(self) -> list:
        return [self.chan_fd] if self.ch != NULL else []

    def pump(self, int fd) -> None:
        return None

    def forget_id(self, size_t cm_id) -> None:
        self.by_id.pop(cm_id, None)

    def get_event(self):
        cdef rdma_cm_event *ev
        cdef rdma_cm_id *cid
        if self.ch == NULL:
            return None
        if rdma_get_cm_event(self.ch, &ev) != 0:
            if errno in (_errno.EAGAIN, _errno.EWOULDBLOCK):
                return None
            raise _error("rdma_get_cm_event")
        etype = ev.event
        cid = ev.id
        # acked at once: destroying an id waits for its events to be acked
        rdma_ack_cm_event(ev)
        if etype == _CM_CONNECT_REQUEST:
            req = IbvRequest()
            (<_Request>req).cm_id = cid
            req.listener = self
            req.peer_address = _format_addr(rdma_get_peer_addr(cid)) or "?:0"
            req.local_address = (_format_addr(rdma_get_local_addr(cid))
                                 or f"{self.bind}:{self.port}")
            req.qp = None
            return v.CmEvent(etype, request=req)
        qp = self.by_id.get(<size_t>cid)
        return v.CmEvent(etype, qp=qp)

    def stop_listening(self) -> None:
        if self.lid != NULL:
            rdma_destroy_id(self.lid)
            self.lid = NULL

    def close(self) -> None:
        self.stop_listening()
        if self.ch != NULL:
            rdma_destroy_event_channel(self.ch)
            self.ch = NULL


class IbvListener(_Listener, v.CmListener):
    def __init__(self, ip: str, port: int, backlog: int) -> None:
        self._open(ip, port, backlog)


cdef bint _forked_safe = False


class IbverbsBackend(v.Backend):
    name = "ibverbs"

    def default_binds(self) -> list[str]:
        return v.rdma_ipv4_addresses() or ["127.0.0.1"]

    def listen(self, ip: str, port: int, backlog: int) -> IbvListener:
        v.check_listen(ip)
        return IbvListener(ip, port, backlog)

    def connect(self, host: str, port: int, timeout: float, prepare,
                rnr_retry: int = 7) -> IbvQP:
        return _connect(host, port, timeout, prepare, rnr_retry)


cdef int _wait_event(rdma_event_channel *ch, int want, double deadline, str where) except -1:
    cdef rdma_cm_event *ev
    left = max(0.0, deadline - time.monotonic())
    if not select.select([ch.fd], [], [], left)[0]:
        raise TimeoutError(f"RDMA: connect to {where} timed out")
    if rdma_get_cm_event(ch, &ev) != 0:
        raise _error("rdma_get_cm_event")
    got = ev.event
    rdma_ack_cm_event(ev)
    if got != want:
        raise ConnectionRefusedError(_errno.ECONNREFUSED,
                                     f"RDMA: connect to {where} failed (CM event {got})")
    return 0


cdef object _connect(str host, int port, double timeout, prepare, int rnr_retry):
    cdef rdma_event_channel *ch = rdma_create_event_channel()
    cdef rdma_cm_id *cid = NULL
    cdef sockaddr_in6 sa
    cdef rdma_conn_param param
    cdef IbvQP qp
    where = f"{host}:{port}"
    if ch == NULL:
        raise _error("rdma_create_event_channel")
    if rdma_create_id(ch, &cid, NULL, RDMA_PS_TCP) != 0:
        rdma_destroy_event_channel(ch)
        raise _error("rdma_create_id")
    qp = IbvQP.__new__(IbvQP)
    qp.cm_id, qp.own_channel = cid, ch   # close() destroys both from here on
    deadline = time.monotonic() + timeout
    try:
        try:
            ip = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)[0][4][0]
        except socket.gaierror as exc:
            raise ConnectionRefusedError(_errno.ECONNREFUSED,
                                         f"RDMA: cannot resolve {host}: {exc}") from None
        _sockaddr_of(ip, port, &sa)
        if rdma_resolve_addr(cid, NULL, <sockaddr *>&sa, int(max(1, timeout) * 1000)) != 0:
            raise _error("rdma_resolve_addr")
        _wait_event(ch, v.CM_ADDR_RESOLVED, deadline, where)
        if rdma_resolve_route(cid, 100 if timeout > 0.1 else int(timeout * 1000)) != 0:
            raise _error("rdma_resolve_route")
        _wait_event(ch, v.CM_ROUTE_RESOLVED, deadline, where)
        qp.setup(cid, 0)
        qp.peer_address = where
        qp.local_address = "rdma-client"
        prepare(qp)
        memset(&param, 0, sizeof(param))
        param.responder_resources = param.initiator_depth = 1
        param.retry_count = 7
        param.rnr_retry_count = rnr_retry
        param.qp_num = qp.qp.qp_num
        if rdma_connect(cid, &param) != 0:
            raise _error("rdma_connect")
        _wait_event(ch, v.CM_CONNECT_RESPONSE, deadline, where)
        qp.to_rts()
        if rdma_establish(cid) != 0:
            raise _error("rdma_establish")
        qp.local_address = _format_addr(rdma_get_local_addr(cid)) or qp.local_address
        _nonblock(ch.fd)   # cm_events() reads it without blocking
    except v.VerbsError as exc:
        qp.close()
        raise ConnectionRefusedError(_errno.ECONNREFUSED,
                                     f"RDMA: connect to {where} failed: {exc}") from None
    except BaseException:
        qp.close()
        raise
    return qp


def load_ibverbs_backend() -> IbverbsBackend:
    """The backend, once an RDMA device is known to exist (``SetupError`` says what is
    missing otherwise)."""
    global _forked_safe
    cdef int n = 0
    cdef ibv_context **devs
    v.check_rdma_cm()
    if not _forked_safe:
        # the server forks for BGSAVE: registered memory must stay out of the children
        # (a no-op on kernels that copy pinned pages at fork); before any MR exists
        ibv_fork_init()
        _forked_safe = True
    devs = rdma_get_devices(&n)
    if devs != NULL:
        rdma_free_devices(devs)
    if n <= 0:
        raise v.no_device_error()
    return IbverbsBackend()
