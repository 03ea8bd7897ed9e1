# cython: language_level=3
"""The two window state machines of the data plane (protocol doc §3.3–§3.4).

``RxWindow`` is the receiver's view of its own registered buffer: how many bytes peers have
written (the sum of immediates since the last announcement) and how many the upper layer
has consumed. ``TxWindow`` is the writer's view of the peer's buffer: where it is, how long,
and the next offset. Both are one-shot linear buffers that never wrap:

* the writer fills the window from offset 0 to exactly ``length`` and then stops;
* the receiver may re-announce only when ``consumed == written == length``;
* a RegisterXferMemory resets the writer's offset to 0.

Pure state, no I/O: the session feeds them numbers, and the tests drive them with random
interleavings. Typed (``window.pxd``) so the session's per-request accounting is C
arithmetic.
"""


class WindowViolation(ValueError):
    """The peer broke a window rule (e.g. wrote past the announced length)."""


cdef class RxWindow:
    """Receiver side: bytes written by the peer versus bytes consumed locally."""

    def __init__(self, long long length) -> None:
        if length <= 0:
            raise ValueError("window length must be positive")
        self.length = length
        self.written = 0
        self.consumed = 0
        self.announcements = 0

    cpdef on_write(self, long long n):
        """A WRITE_WITH_IMM completion announced ``n`` more bytes."""
        if n < 0 or self.written + n > self.length:
            raise WindowViolation(
                f"window overrun: {self.written} + {n} bytes > window of {self.length}")
        self.written += n

    cpdef long long unread(self):
        return self.written - self.consumed

    cpdef consume(self, long long n):
        if n < 0 or self.consumed + n > self.written:
            raise ValueError(f"cannot consume {n} bytes: only {self.unread()} unread")
        self.consumed += n

    cpdef bint exhausted(self):
        """True when the whole window was written and read: the one moment to re-announce."""
        return self.consumed == self.written == self.length

    cpdef reset(self):
        if not self.exhausted():
            raise ValueError("re-announcing a window that is not fully consumed")
        self.written = self.consumed = 0
        self.announcements += 1


cdef class TxWindow:
    """Writer side: the peer's last announced window and our offset in it."""

    def __init__(self) -> None:
        self.addr = 0
        self.length = 0
        self.rkey = 0
        self.offset = 0
        self.announced = 0

    cpdef announce(self, unsigned long long addr, long long length, unsigned int rkey):
        self.addr, self.length, self.rkey = addr, length, rkey
        self.offset = 0
        self.announced += 1

    cpdef long long room(self):
        return self.length - self.offset

    def take(self, long long n) -> tuple:
        """Reserve ``n`` bytes; returns (offset in the window, remote address)."""
        if n <= 0 or n > self.room():
            raise ValueError(f"cannot take {n} bytes with {self.room()} bytes of room")
        off = self.offset
        self.offset += n
        return off, self.addr + off
