# cython: language_level=3
"""The sans-IO RDMA connection: control messages and windows in, verbs work requests out.

A ``Session`` is one side of one connection (server or client role). It knows the protocol
rules — announce our window once established, re-announce only when it is exhausted, fill
the peer's remaining room with partial writes, answer GetServerFeature, ignore Keepalive,
close on anything else — plus the send-queue accounting real verbs impose (at most
``sq_depth`` outstanding work requests; unsignaled ones are released only by a later
signaled completion). It never touches verbs, memory or clocks: drivers feed it completions
and the current time, then execute the actions it queues in order:

* ``PostSend(wr_id, msg)`` – a signaled 32-byte SEND from control slot ``wr_id``;
* ``PostWrite(offset, data, remote_addr, rkey, signaled)`` – copy ``data`` into the
  staging buffer at ``offset`` and post RDMA_WRITE_WITH_IMM with ``imm = len(data)``.

Protocol violations raise ``ProtocolViolation`` with the one-line reason to log; the driver
then closes that connection (never the process). A cdef class (``session.pxd``): the
driver's per-request calls (``on_write_imm``, ``consume``, ``write``) are C calls on typed
fields.
"""
from collections import deque

from pykv.rdma import messages as m

from pykv.rdma.window import WindowViolation

from pykv.rdma.window cimport RxWindow, TxWindow

SERVER, CLIENT = "server", "client"

RECV_SLOTS = 1024          # 32-byte receives posted per connection (wr_id 0..1023)
SEND_SLOTS = 1024          # 32-byte control send slots (wr_id 1024..2047)
CQ_SIZE = 2 * RECV_SLOTS   # SQ + RQ completions
SQ_DEPTH = 1024
WRITE_WR_ID = 1 << 32      # wr_id of signaled data writes (never collides with a slot)
KEEPALIVE_INTERVAL = 3.0
CTRL_RESERVE = 16          # SQ entries kept free for control messages
cdef long long _CTRL_RESERVE = 16


class ProtocolViolation(Exception):
    """The peer broke the protocol; the connection must be closed (reason in ``str``)."""


cdef class PostSend:
    def __init__(self, wr_id, bytes msg) -> None:
        self.wr_id = wr_id
        self.msg = msg

    def __repr__(self) -> str:
        return f"PostSend(wr_id={self.wr_id}, msg={self.msg!r})"


cdef class PostWrite:
    def __init__(self, long long offset, data, unsigned long long remote_addr,
                 unsigned int rkey, bint signaled) -> None:
        self.offset = offset
        self.data = data
        self.remote_addr = remote_addr
        self.rkey = rkey
        self.signaled = signaled

    def __repr__(self) -> str:
        return (f"PostWrite(offset={self.offset}, {len(self.data)} bytes, "
                f"remote_addr={self.remote_addr:#x}, rkey={self.rkey:#x}, "
                f"signaled={self.signaled})")


Action = (PostSend, PostWrite)


cdef PostWrite _post_write(long long offset, data, unsigned long long raddr, unsigned int rkey,
                           bint signaled):
    cdef PostWrite act = PostWrite.__new__(PostWrite)
    act.offset = offset
    act.data = data
    act.remote_addr = raddr
    act.rkey = rkey
    act.signaled = signaled
    return act


cdef class Session:
    """Protocol state of one RDMA connection (either role)."""

    def __init__(self, str role, unsigned long long rx_addr, long long rx_length,
                 unsigned int rx_rkey, *, long long sq_depth=SQ_DEPTH, signal_every=None,
                 double keepalive_interval=KEEPALIVE_INTERVAL) -> None:
        if role not in (SERVER, CLIENT):
            raise ValueError(role)
        self.role = role
        self.rx = RxWindow(rx_length)
        self.rx_addr, self.rx_rkey = rx_addr, rx_rkey
        self.tx = TxWindow()
        self.actions = []
        self.established = False
        self.announced = False
        # outgoing bytes waiting for room in the peer's window
        self.pending = deque()
        self.pending_bytes = 0
        # send-queue accounting
        self.sq_depth = sq_depth
        self.signal_every = signal_every or (512 if role == SERVER else 1024)
        self.posted = 0              # work requests ever posted
        self.released = 0            # work requests whose SQ entries are free again
        self.unsignaled_run = 0
        self._signaled = deque()     # (wr_id, posted count at post) of signaled requests
        self._free_slots = list(range(RECV_SLOTS + SEND_SLOTS - 1, RECV_SLOTS - 1, -1))
        # keepalive (server role only)
        self.keepalive_interval = keepalive_interval
        self.next_keepalive = None
        self.keepalive_slot = None
        self.keepalives_sent = 0
        self.keepalives_skipped = 0
        # statistics
        self.writes_posted = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self.ctrl_received = {}   # opcode -> count

    # -- events from the driver ---------------------------------------------------------
    def on_established(self, double now=0.0) -> None:
        """CM ESTABLISHED (or first inbound completion): announce our window once."""
        if self.established:
            return
        self.established = True
        self._announce()
        if self.role == SERVER and self.keepalive_interval > 0:
            self.next_keepalive = now + self.keepalive_interval

    def on_recv(self, data) -> None:
        """An ``IBV_WC_RECV`` completion: one control message (``byte_len`` bytes)."""
        try:
            msg = m.decode(data)
        except m.MessageError as exc:
            raise ProtocolViolation(f"RDMA: FATAL error, {exc}") from None
        self.ctrl_received[msg.opcode] = self.ctrl_received.get(msg.opcode, 0) + 1
        if isinstance(msg, m.RegisterXferMemory):
            if msg.length == 0:
                raise ProtocolViolation("RDMA: peer announced an empty window")
            self.tx.announce(msg.addr, msg.length, msg.rkey)
            self.flush()
        elif isinstance(msg, m.Keepalive):
            pass
        elif self.role == CLIENT:
            raise ProtocolViolation(f"RDMA: FATAL error, unknown cmd (opcode {msg.opcode})")
        elif msg.opcode == m.OP_GET_SERVER_FEATURE:
            # no feature bits are defined: answer with the same select and no features
            self._send_ctrl(m.Feature(m.OP_GET_SERVER_FEATURE, msg.select, 0).encode())
        elif msg.features != 0:
            raise ProtocolViolation(
                f"RDMA: SetClientFeature asks for unsupported features {msg.features:#x}")

    cpdef int on_write_imm(self, long long n) except -1:
        """An ``IBV_WC_RECV_RDMA_WITH_IMM`` completion; ``n`` is the host-order immediate."""
        cdef RxWindow rx = self.rx
        if n < 0 or rx.written + n > rx.length:   # RxWindow.on_write's check, inlined
            try:
                rx.on_write(n)
            except WindowViolation as exc:
                raise ProtocolViolation(f"RDMA: {exc}") from None
        rx.written += n
        self.bytes_received += n
        return 0

    cpdef on_send_completed(self, wr_id):
        """A successful signaled SEND or WRITE completion: frees SQ entries (and a slot)."""
        if not self._signaled:
            raise ProtocolViolation(f"RDMA: unexpected send completion wr_id={wr_id}")
        want, count = self._signaled.popleft()
        if want != wr_id:
            raise ProtocolViolation(
                f"RDMA: send completion out of order (wr_id {wr_id}, expected {want})")
        self.released = count
        if wr_id != WRITE_WR_ID:
            self._free_slots.append(wr_id)
            if wr_id == self.keepalive_slot:
                self.keepalive_slot = None
        self.flush()

    # -- receive side ---------------------------------------------------------------------
    def unread(self) -> tuple:
        """The span ``[start, end)`` of the RX window that holds unread bytes."""
        return self.rx.consumed, self.rx.written

    cpdef int consume(self, long long n) except -1:
        """The driver copied ``n`` bytes out; re-announce if the window is now exhausted."""
        cdef RxWindow rx = self.rx
        if 0 <= n <= rx.written - rx.consumed:   # RxWindow.consume, inlined
            rx.consumed += n
        else:
            rx.consume(n)   # raises
        if rx.consumed == rx.written == rx.length:
            rx.reset()
            self._announce()
        return 0

    # -- send side ------------------------------------------------------------------------
    cpdef write(self, data):
        """Queue reply/request bytes and post what the peer's window and the SQ allow."""
        cdef long long n = len(data)
        cdef TxWindow tx = self.tx
        cdef long long offset
        if not n:
            return
        if self.fits_now(n):
            offset = self.claim_unsignaled(n)
            self.actions.append(_post_write(offset, data, tx.addr + offset, tx.rkey, False))
            return
        self.pending.append(memoryview(data))
        self.pending_bytes += n
        self.flush()

    cdef bint fits_now(self, long long n) noexcept:
        """``n`` bytes can be posted at once as one unsignaled write: nothing is queued
        before them, they fit the peer's window and the send queue has room, and no
        signaled write is due. ``write``'s common case, and the endpoint's test for posting
        a reply straight from the client's buffer."""
        cdef TxWindow tx = self.tx
        return (self.pending_bytes == 0 and n <= tx.length - tx.offset
                and self.unsignaled_run + 1 < self.signal_every
                and self.posted + 1 - self.released < self.sq_depth - _CTRL_RESERVE)

    cdef long long claim_unsignaled(self, long long n) noexcept:
        """Account for one unsignaled write of ``n`` bytes that ``fits_now``; returns its
        offset in the peer's window (the caller posts it there)."""
        cdef TxWindow tx = self.tx
        cdef long long offset = tx.offset
        tx.offset = offset + n
        self.unsignaled_run += 1
        self.posted += 1
        self.writes_posted += 1
        self.bytes_sent += n
        return offset

    cpdef flush(self):
        cdef TxWindow tx = self.tx
        cdef long long limit = self.sq_depth - _CTRL_RESERVE
        cdef long long room, n, offset
        cdef bint signaled
        pending = self.pending
        while pending:
            room = tx.length - tx.offset
            if room <= 0 or self.posted - self.released >= limit:
                return
            head = pending[0]
            n = min(room, len(head))
            if n == len(head):
                pending.popleft()
                chunk = head
            else:
                chunk, pending[0] = head[:n], head[n:]
            self.pending_bytes -= n
            offset = tx.offset
            tx.offset = offset + n
            self.unsignaled_run += 1
            signaled = (self.unsignaled_run >= self.signal_every
                        or self.posted + 1 - self.released >= limit)
            self._post(WRITE_WR_ID if signaled else None)
            if signaled:
                self.unsignaled_run = 0
            self.writes_posted += 1
            self.bytes_sent += n
            self.actions.append(_post_write(offset, chunk, tx.addr + offset, tx.rkey, signaled))

    def wants_window(self) -> bool:
        """Bytes are queued but the peer's window is full (waiting for RegisterXferMemory)."""
        return self.pending_bytes > 0 and self.tx.room() == 0

    cpdef long long outstanding(self):
        return self.posted - self.released

    # -- keepalive ------------------------------------------------------------------------
    def tick(self, double now):
        """Send a Keepalive if one is due; returns when to call again (None: never)."""
        if self.next_keepalive is None:
            return None
        if now >= self.next_keepalive:
            if self.keepalive_slot is not None:
                # the previous one has not completed (idle peer not reposting): don't pile up
                self.keepalives_skipped += 1
            else:
                self.keepalive_slot = self._send_ctrl(m.KEEPALIVE_BYTES)
                self.keepalives_sent += 1
            while self.next_keepalive <= now:
                self.next_keepalive += self.keepalive_interval
        return self.next_keepalive

    # -- internals ------------------------------------------------------------------------
    cdef _announce(self):
        self._send_ctrl(m.RegisterXferMemory(self.rx_addr, self.rx.length, self.rx_rkey).encode())
        self.announced = True

    def _send_ctrl(self, bytes msg):
        slot = self._send_ctrl_slot()
        self.actions.append(PostSend(slot, msg))
        return slot

    def _send_ctrl_slot(self):
        """Reserve a control slot and an SQ entry for one signaled SEND."""
        if not self._free_slots:
            raise ProtocolViolation("RDMA: no empty command buffers (peer stopped receiving)")
        if self.posted - self.released >= self.sq_depth:
            raise ProtocolViolation("RDMA: send queue full (peer stopped acknowledging)")
        slot = self._free_slots.pop()
        self._post(slot)
        return slot

    cdef _post(self, signaled_wr_id):
        self.posted += 1
        if signaled_wr_id is not None:
            self._signaled.append((signaled_wr_id, self.posted))

    def take_actions(self) -> list:
        out = self.actions
        self.actions = []
        return out
