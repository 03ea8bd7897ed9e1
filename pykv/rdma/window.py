"""The two window state machines of the data plane (protocol doc §3.3–§3.4).

``RxWindow`` is the receiver's view of its own registered buffer: how many bytes peers have
written (the sum of immediates since the last announcement) and how many the upper layer
has consumed. ``TxWindow`` is the writer's view of the peer's buffer: where it is, how long,
and the next offset. Both are one-shot linear buffers that never wrap:

* the writer fills the window from offset 0 to exactly ``length`` and then stops;
* the receiver may re-announce only when ``consumed == written == length``;
* a RegisterXferMemory resets the writer's offset to 0.

Pure state, no I/O: the session feeds them numbers, and the tests drive them with random
interleavings.
"""
from __future__ import annotations


class WindowViolation(ValueError):
    """The peer broke a window rule (e.g. wrote past the announced length)."""


class RxWindow:
    """Receiver side: bytes written by the peer versus bytes consumed locally."""

    __slots__ = ("length", "written", "consumed", "announcements")

    def __init__(self, length: int) -> None:
        if length <= 0:
            raise ValueError("window length must be positive")
        self.length = length
        self.written = 0
        self.consumed = 0
        self.announcements = 0

    def on_write(self, n: int) -> None:
        """A WRITE_WITH_IMM completion announced ``n`` more bytes."""
        if n < 0 or self.written + n > self.length:
            raise WindowViolation(
                f"window overrun: {self.written} + {n} bytes > window of {self.length}")
        self.written += n

    def unread(self) -> int:
        return self.written - self.consumed

    def consume(self, n: int) -> None:
        if n < 0 or self.consumed + n > self.written:
            raise ValueError(f"cannot consume {n} bytes: only {self.unread()} unread")
        self.consumed += n

    def exhausted(self) -> bool:
        """True when the whole window was written and read: the one moment to re-announce."""
        return self.consumed == self.written == self.length

    def reset(self) -> None:
        if not self.exhausted():
            raise ValueError("re-announcing a window that is not fully consumed")
        self.written = self.consumed = 0
        self.announcements += 1


class TxWindow:
    """Writer side: the peer's last announced window and our offset in it."""

    __slots__ = ("addr", "length", "rkey", "offset", "announced")

    def __init__(self) -> None:
        self.addr = 0
        self.length = 0
        self.rkey = 0
        self.offset = 0
        self.announced = 0

    def announce(self, addr: int, length: int, rkey: int) -> None:
        self.addr, self.length, self.rkey = addr, length, rkey
        self.offset = 0
        self.announced += 1

    def room(self) -> int:
        return self.length - self.offset

    def take(self, n: int) -> tuple[int, int]:
        """Reserve ``n`` bytes; returns (offset in the window, remote address)."""
        if n <= 0 or n > self.room():
            raise ValueError(f"cannot take {n} bytes with {self.room()} bytes of room")
        off = self.offset
        self.offset += n
        return off, self.addr + off
