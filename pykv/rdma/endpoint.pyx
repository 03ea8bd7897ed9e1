# cython: language_level=3
"""One RDMA connection's driver: verbs completions into the session, its actions onto verbs.

Owns the per-connection buffers (the 64 KiB control MR with 1024 receive and 1024 send
slots, the RX window MR, the TX staging MR sized to the peer's window) and the CQ handler
of Valkey's design: take the channel event, ack it, re-arm, poll until empty, then hand
every unread byte to the upper layer, re-announce the window if it is exhausted, and post
queued output. Used by the server's ``rdma`` connection type (event-loop driven) and by the
Python client (blocking). Errors are returned as a reason string, never raised past here,
so a misbehaving peer costs only its own connection.

A cdef class over the typed ``Session``: the per-request work (draining completions,
window accounting, the reply write path) runs as C. A backend built on ``cverbs`` (the
software fabric, the libibverbs backend) is called through C vtables and polled into a C
array of completions; any other (pyverbs) through its Python methods, bound once per
connection. The event path's methods return C
ints (no None to count references of) and the class is final (direct calls): per event
it is a few hundred instructions of this module's own (``bench/rdma_instructions.py``).

Driven by an event loop (``pykv.net.rdma``), a request costs no Python frame: the loop's
reader calls ``fd_ready`` (``pykv.net._readmux``; or the loop itself ``comp_ready``), the
unread span goes to the client's ``read_ready`` as a
pointer into the RX window (``attach``), and a reply that can leave at once is posted by
``take`` from the client's output buffer (``pykv.util._byteio``). The driver's Python
``after`` runs only when an event left something to do (the EV_* flags).
"""
cimport cython

from pykv.rdma import verbs as v
from pykv.rdma.messages import KEEPALIVE_BYTES, MSG_SIZE

from pykv.rdma.session import (
    CTRL_RESERVE,
    RECV_SLOTS,
    SEND_SLOTS,
    WRITE_WR_ID,
    ProtocolViolation,
)

from pykv.rdma.cverbs cimport CMemoryRegion, CQueuePair, wc_t
from pykv.rdma.session cimport PostSend, PostWrite, Session
from pykv.rdma.window cimport TxWindow
from pykv.util._byteio cimport FdTarget, ReadTarget, ReplySink

from pykv.rdma.verbs import (
    WC_RDMA_WRITE,
    WC_RECV,
    WC_RECV_RDMA_WITH_IMM,
    WC_SEND,
    WC_SUCCESS,
)

POLL_BATCH = 64
cdef int _POLL_BATCH = POLL_BATCH

# what an event left for an event-loop driver to do (``on_event``/``send``/``status``)
EV_ERROR = 1      # the connection is unusable: ``error`` says why
EV_FD_DONE = 2    # stop watching the fd just pumped (its peer is gone)
EV_EARLY = 4      # the peer talks before ESTABLISHED was seen: treat it as established
EV_PENDING = 8    # work left for the next loop iteration (``has_pending``)
EV_OUTPUT = 16    # the fabric has output queued for a writable fd
cdef int _EV_ERROR = EV_ERROR, _EV_FD_DONE = EV_FD_DONE, _EV_EARLY = EV_EARLY
cdef int _EV_PENDING = EV_PENDING, _EV_OUTPUT = EV_OUTPUT
cdef int _MSG = 32
cdef int _WC_SUCCESS = WC_SUCCESS
cdef int _WC_RECV = WC_RECV
cdef int _WC_RECV_IMM = WC_RECV_RDMA_WITH_IMM
cdef int _WC_SEND = WC_SEND
cdef int _WC_WRITE = WC_RDMA_WRITE
cdef object _WRITE_WR_ID = WRITE_WR_ID
cdef unsigned long long _WRITE_WR_ID_C = WRITE_WR_ID
cdef object _ProtocolViolation = ProtocolViolation
cdef long long _CTRL_RESERVE = CTRL_RESERVE   # SQ entries kept for control messages
cdef object _VerbsError = v.VerbsError


cdef _ignore(data):
    """Input with nobody to read it (``detach``)."""


@cython.final   # nothing derives from it: its C methods are direct calls gcc can inline
cdef class Endpoint(FdTarget):
    """Binds a ``Session`` to a ``QueuePair``."""

    cdef public object qp, on_data, ctrl_mr, rx_mr, tx_mr, error
    # an event-loop driver's callback for what an event left to do: ``after(flags, fd)``
    # with the EV_* flags, called when they are not 0, or always while ``always_after``
    cdef public object after
    cdef public bint always_after
    cdef ReadTarget _target   # the reader, when it takes the bytes by a C call (attach)
    cdef object _replies      # its _ReplyPort (attach), or None
    cdef int _comp_fd         # the completion channel's fd (fd_ready: on_event(-1))
    cdef public Session session
    cdef public long long peer_windows
    cdef public bint first_inbound
    cdef bint _delivering   # the unread span is being handed to on_data right now
    cdef bint _closed       # close() ran (possibly from inside on_data)
    # the QP's methods, bound once
    cdef object _poll, _post_recv, _post_write_imm, _get_cq_event, _req_notify
    cdef object _rx_view
    # the same objects when their backend implements cverbs (else None)
    cdef CQueuePair _cqp
    cdef CMemoryRegion _cctrl, _crx

    def __init__(self, qp, str role, long long rx_size, on_data, *, signal_every=None,
                 double keepalive_interval=3.0) -> None:
        self.qp = qp
        self.on_data = on_data
        self.ctrl_mr = qp.reg_mr((RECV_SLOTS + SEND_SLOTS) * MSG_SIZE, remote_write=False)
        self.rx_mr = qp.reg_mr(rx_size, remote_write=True)
        self.tx_mr = None
        self.session = Session(role, self.rx_mr.addr, rx_size, self.rx_mr.rkey,
                               signal_every=signal_every, keepalive_interval=keepalive_interval)
        self.error = None
        self.peer_windows = 0
        self.first_inbound = False
        self._poll = qp.poll
        self._post_recv = qp.post_recv
        self._post_write_imm = qp.post_write_imm
        self._get_cq_event = qp.get_cq_event
        self._req_notify = qp.req_notify
        self._rx_view = self.rx_mr.view
        self._comp_fd = getattr(qp, "comp_fd", -1)
        if isinstance(qp, CQueuePair) and isinstance(self.ctrl_mr, CMemoryRegion) \
                and isinstance(self.rx_mr, CMemoryRegion):
            self._cqp = <CQueuePair>qp
            self._cctrl = <CMemoryRegion>self.ctrl_mr
            self._crx = <CMemoryRegion>self.rx_mr

    # -- setup ------------------------------------------------------------------------
    def attach(self, reader):
        """Deliver input to ``reader``: by a C call of its ``read_ready`` when it is a
        ``ReadTarget`` and the RX window is C memory, else through ``reader.on_data``.
        Returns the ``ReplySink`` its replies may be given to by C calls when the backend
        posts from C, else None (they come through ``write``)."""
        if isinstance(reader, ReadTarget) and self._crx is not None:
            self._target = <ReadTarget>reader
        else:
            self._target = None
            self.on_data = reader.on_data
        if self._cqp is not None and self._replies is None:
            self._replies = _ReplyPort(self)
        return self._replies

    @property
    def delivering(self) -> bool:
        """Input is being handed to the reader right now (this endpoint is on the stack)."""
        return self._delivering

    def detach(self) -> None:
        """Nobody reads from now on: what arrives is consumed and dropped."""
        self._target = None
        self.on_data = _ignore
        self._replies = None

    def post_receives(self) -> None:
        """Fill the RQ: one receive per control slot (a C loop when the backend is
        ``cverbs``: 1024 Python calls were most of what accepting a connection cost)."""
        cdef unsigned long long slot
        if self._cqp is not None:
            for slot in range(RECV_SLOTS):
                self._cqp.post_recv(slot, self._cctrl, slot * _MSG, _MSG)
            self._cqp.req_notify()
            return
        for slot in range(RECV_SLOTS):
            self.qp.post_recv(slot, self.ctrl_mr, slot * MSG_SIZE, MSG_SIZE)
        self.qp.req_notify()

    def established(self, double now=0.0):
        if self.error is not None:
            return self.error
        try:
            self.session.on_established(now)
            self._execute()   # the RegisterXferMemory leaves now, not with the next batch
        except BaseException as exc:
            self._failed(exc)
        return self.error

    # -- the CQ handler -----------------------------------------------------------------
    cpdef handle_completions(self):
        """Drain the CQ and everything it made available; returns an error reason or None."""
        if self.error is not None:
            return self.error
        try:
            self._handle()
        except BaseException as exc:
            self._failed(exc)
        return self.error

    cpdef int on_event(self, int fd):
        """One readiness event for an event-loop driver: ``fd`` is a fabric fd to pump
        first (software fabric), -1 the completion channel. Drains the CQ as
        ``handle_completions`` does and returns the EV_* flags of what is left to do — 0 in
        the common case, so the driver's whole check is one test."""
        cdef int flags = 0
        if self.error is None:
            # one try for the pump and the drain: what fails in either ends the event
            try:
                if fd >= 0 and not (self._cqp.pump(fd) if self._cqp is not None
                                    else self.qp.pump(fd)):
                    flags = _EV_FD_DONE
                self._handle()
            except BaseException as exc:
                self._failed(exc)
        return flags | self.status()

    def comp_ready(self) -> None:
        """The loop's reader callback for the completion channel: ``on_event(-1)``, then
        ``after`` if there is something left to do."""
        self._event(-1)

    def aux_ready(self, int fd) -> None:
        """The loop's reader callback for a fabric fd (``aux_fds``)."""
        self._event(fd)

    cdef int fd_ready(self, int fd) except -1:
        """The loop's reader (pykv.net._readmux) saw ``fd`` readable."""
        return self._event(-1 if fd == self._comp_fd else fd)

    cdef int _event(self, int fd) except -1:
        cdef int flags
        if self._closed:
            return 0
        flags = self.on_event(fd)
        if (flags or self.always_after) and self.after is not None:
            self.after(flags, fd)
        return 0

    cpdef int send(self, data):
        """``write`` for an event-loop driver: returns EV_* flags as ``on_event``."""
        self.write(data)
        return self.status()

    cpdef int status(self):
        """The EV_* flags of the connection's state (EV_FD_DONE aside)."""
        cdef Session s = self.session
        cdef int flags = 0
        if self.error is not None:
            return _EV_ERROR
        if not s.established and self.first_inbound:
            flags = _EV_EARLY
        if self._has_pending():
            flags |= _EV_PENDING
        if self._cqp.has_output() if self._cqp is not None else self.qp.write_fds():
            flags |= _EV_OUTPUT
        return flags

    cdef _failed(self, exc):
        """Record why the connection is unusable (re-raises what is not ours to handle)."""
        if isinstance(exc, _ProtocolViolation):
            self.error = str(exc)
        elif isinstance(exc, _VerbsError):
            self.error = f"RDMA: verbs error: {exc}"
        elif isinstance(exc, OSError):
            self.error = f"RDMA: {exc}"
        else:
            raise exc

    cdef int _handle(self) except -1:
        cdef Session session = self.session
        cdef CQueuePair cqp = self._cqp
        cdef list wcs
        cdef wc_t cwcs[64]
        cdef int i, n
        qp = self.qp
        if cqp is not None:
            if cqp.get_cq_event():
                cqp.ack_cq_events(1)
            cqp.req_notify()
        else:
            if self._get_cq_event():
                qp.ack_cq_events(1)
            self._req_notify()
        while True:
            if cqp is not None:   # completions as C structs
                n = cqp.poll_wc(cwcs, _POLL_BATCH)
                for i in range(n):
                    self._completion(cwcs[i].status, cwcs[i].opcode, cwcs[i].wr_id,
                                     cwcs[i].byte_len, cwcs[i].imm)
            else:
                wcs = self._poll(_POLL_BATCH)
                n = len(wcs)
                for wc in wcs:
                    self._completion(wc.status, wc.opcode, wc.wr_id, wc.byte_len,
                                     wc.imm or 0)
            # a short batch emptied the CQ: what completes from now on raises a new CQ event
            # (it was re-armed above), so no second poll just to see nothing
            if n < _POLL_BATCH:
                break
        self._deliver()
        if not self._closed and session.actions:
            self._execute()
        return 0

    cdef int _completion(self, int status, int op, unsigned long long wr_id,
                         unsigned int byte_len, long long imm) except -1:
        """One work completion into the session (its receive slot reposted)."""
        cdef Session session = self.session
        if status != _WC_SUCCESS:
            raise _ProtocolViolation(
                f"RDMA: CQ handle error status: {v.wc_status_str(status)}"
                f"[{status:#x}], opcode : {op:#x}")
        if op == _WC_RECV_IMM:
            session.on_write_imm(imm)
            self._repost(wr_id)
            self.first_inbound = True
        elif op == _WC_RECV:
            if byte_len != _MSG:
                raise _ProtocolViolation(
                    f"RDMA: FATAL error, recv corrupted cmd (length {byte_len})")
            if self._cctrl is not None:
                data = self._cctrl.read(wr_id * _MSG, _MSG)
            else:
                data = self.ctrl_mr.read(wr_id * _MSG, _MSG)
            before = session.tx.announced
            session.on_recv(data)
            if session.tx.announced != before:
                self.peer_windows += 1
            self._repost(wr_id)
            self.first_inbound = True
        elif op == _WC_WRITE or op == _WC_SEND:
            session.on_send_completed(wr_id)
        else:
            raise _ProtocolViolation(f"RDMA: unexpected opcode {op:#x}")
        return 0

    cdef int _repost(self, unsigned long long slot) except -1:
        """Give receive slot ``slot`` back to the RQ (every inbound message consumed one)."""
        if self._cqp is not None:
            self._cqp.post_recv(slot, self._cctrl, slot * _MSG, _MSG)
        else:
            self._post_recv(slot, self.ctrl_mr, slot * _MSG, _MSG)
        return 0

    cdef int _deliver(self) except -1:
        """Hand the unread span to the upper layer as a view of the RX window (it copies
        what it keeps: the parser appends it to its buffer, as it does a socket's bytes),
        then consume it, which may re-announce the window: the peer may overwrite it only
        after that RegisterXferMemory, so the view is released before it can leave."""
        cdef Session session = self.session
        cdef long long start = session.rx.consumed, end = session.rx.written
        if end > start and self._target is not None:
            self._delivering = True
            try:
                self._target.read_ready(self._crx.span(start, end - start), end - start)
            finally:
                self._delivering = False
            if self._closed:
                return 0
            session.consume(end - start)
            if session.actions:
                self._execute()
        elif end > start:
            if self._crx is not None:
                data = self._crx.view(start, end - start)
            else:
                data = self._rx_view(start, end - start)
            self._delivering = True
            try:
                self.on_data(data)
            finally:
                self._delivering = False
                try:
                    data.release()   # a caller that kept it gets an error, not stale bytes
                except (AttributeError, BufferError):
                    pass
            if self._closed:   # the upper layer closed the connection while handling it
                return 0
            session.consume(end - start)
            if session.actions:
                self._execute()
        return 0

    cdef _staging(self):
        """The staging MR: it mirrors the peer's window (same offsets), so it is
        (re-)registered when the window's size changes. Registered at the first write too
        large to post inline, never when every write is inline (soft fabric): registration
        makes memory resident, which is most of what an RDMA connection costs to set up."""
        need = self.session.tx.length
        if self.tx_mr is None or self.tx_mr.length != need:
            self.tx_mr = self.qp.reg_mr(need, remote_write=False)
        return self.tx_mr

    # -- output ---------------------------------------------------------------------------
    cpdef write(self, data):
        if self.error is not None:
            return self.error
        try:
            self.session.write(data)
            if self.session.actions:
                self._execute()
        except BaseException as exc:
            self._failed(exc)
        return self.error

    cdef Py_ssize_t _take(self, const char *data, Py_ssize_t n) except -1:
        """A reply posted from C when it can leave at once (``Session.fits_now``, and no
        action of the session's waiting to be executed before it). Anything else (0) goes
        through ``write``."""
        cdef Session s = self.session
        cdef TxWindow tx = s.tx
        cdef CQueuePair cqp = self._cqp
        cdef long long offset = tx.offset
        if (cqp is None or self._closed or self.error is not None or not s.fits_now(n)
                or s.actions):
            return 0
        try:
            if n <= cqp.max_inline_data:
                cqp.post_inline(0, data, n, tx.addr + offset, tx.rkey, <unsigned int>n, False)
            else:
                tx_mr = self._staging()
                if not isinstance(tx_mr, CMemoryRegion):
                    return 0
                (<CMemoryRegion>tx_mr).write_from(offset, data, n)
                cqp.post_write_imm(0, tx_mr, offset, n, tx.addr + offset, tx.rkey,
                                   <unsigned int>n, False)
        except BaseException as exc:
            self._failed(exc)
            return 0   # write() now reports the error to its driver
        s.claim_unsignaled(n)
        # inside a CQ drain the driver sees the flags when it ends; outside one (a reply
        # to a client woken by another's command, a publish) the fabric may have queued
        # output that needs its fd watched
        if not self._delivering and self.after is not None and (
                self.always_after or cqp.has_output()):
            self.after(self.status(), -1)
        return n

    def send_fence(self):
        """A signaled Keepalive: its completion proves every earlier write was delivered."""
        if self.error is not None:
            return self.error
        try:
            self.session.actions.append(PostSend(self.session._send_ctrl_slot(),
                                                 KEEPALIVE_BYTES))
            self._execute()
        except BaseException as exc:
            self._failed(exc)
        return self.error

    def tick(self, double now) -> tuple:
        nxt = None
        if self.error is not None:
            return None, self.error
        try:
            nxt = self.session.tick(now)
            self._execute()
        except BaseException as exc:
            self._failed(exc)
        return nxt, self.error

    cpdef _execute(self):
        cdef list actions = self.session.actions
        cdef Py_ssize_t done = 0
        try:
            while done < len(actions):
                act = actions[done]
                done += 1
                self._act(act)
        finally:
            del actions[:done]   # (one that failed is dropped too: the error ends the connection)

    cdef int _act(self, act) except -1:
        """Execute one session action on the QP."""
        cdef PostWrite w
        cdef PostSend s
        cdef long long n
        if type(act) is PostWrite:
            w = <PostWrite>act
            n = len(w.data)
            if self._cqp is not None and n <= self._cqp.max_inline_data:
                # inline: the payload leaves from the reply buffer, no staging copy
                self._cqp.post_write_imm_inline(_WRITE_WR_ID_C if w.signaled else 0,
                                                w.data, w.remote_addr, w.rkey, n, w.signaled)
                return 0
            tx = self._staging()
            if self._cqp is not None and isinstance(tx, CMemoryRegion):
                (<CMemoryRegion>tx).write(w.offset, w.data)
                self._cqp.post_write_imm(_WRITE_WR_ID_C if w.signaled else 0, tx, w.offset, n,
                                         w.remote_addr, w.rkey, n, w.signaled)
            else:
                tx.write(w.offset, w.data)
                self._post_write_imm(_WRITE_WR_ID if w.signaled else 0, tx, w.offset, n,
                                     w.remote_addr, w.rkey, n, w.signaled)
        else:
            s = <PostSend>act
            off = s.wr_id * _MSG
            self.ctrl_mr.write(off, s.msg)
            self.qp.post_send(s.wr_id, self.ctrl_mr, off, _MSG, True)
        return 0

    # -- state for the transport ------------------------------------------------------------
    cpdef bint has_pending(self):
        return self._has_pending()

    cdef inline bint _has_pending(self) noexcept:
        cdef Session s = self.session
        # unread input (not mid-delivery), or queued output that the window and SQ now admit
        return ((s.rx.written > s.rx.consumed and not self._delivering)
                or (s.pending_bytes > 0 and s.tx.length > s.tx.offset
                    and s.posted - s.released < s.sq_depth - _CTRL_RESERVE))

    cpdef bint idle(self):
        """Nothing queued and nothing outstanding on the send queue."""
        return self.session.pending_bytes == 0 and self.session.posted == self.session.released

    def close(self) -> None:
        self._closed = True
        try:
            self.qp.disconnect()
        except OSError:
            pass
        finally:
            # ack every CQ event (destroying a CQ waits for that), drain what the error
            # state flushed unless destroying the CQ discards it (pyverbs: 1024 flushed
            # receives are 1024 WC objects made for nothing), then destroy
            try:
                while self.qp.get_cq_event():
                    self.qp.ack_cq_events(1)
                if getattr(self.qp, "drain_on_close", True):
                    while self.qp.poll(POLL_BATCH):
                        pass
            except OSError:
                pass
            self.qp.close()


cdef class _ReplyPort(ReplySink):
    """An endpoint's ``ReplySink``: what a client's replies are handed to from C (the
    endpoint's own base class is the loop reader's ``FdTarget``)."""

    cdef Endpoint endpoint

    def __cinit__(self, Endpoint endpoint):
        self.endpoint = endpoint

    cdef Py_ssize_t take(self, const char *data, Py_ssize_t n) except -1:
        return self.endpoint._take(data, n)
