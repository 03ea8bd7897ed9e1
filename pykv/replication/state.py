"""What master and replica roles share: the replication ids, the offset, the backlog.

Redis's model (``replication.c``): every byte of the effects stream a server produces (as
master) or receives (as replica) advances ``master_repl_offset`` and is kept in a circular
backlog of ``repl-backlog-size`` bytes, so a replica that reconnects with
``PSYNC <replid> <offset>`` can continue from the backlog instead of a full resync.
``replid2``/``second_repl_offset`` remember the previous history after a promotion
(PSYNC2), so the former master's other replicas can continue too.
"""
from __future__ import annotations

import os


def new_replid() -> str:
    """A fresh 40-hex-digit replication id."""
    return os.urandom(20).hex()


NO_REPLID = "0" * 40


class Backlog:
    """A circular buffer of the last ``size`` bytes of the stream.

    ``start_offset`` is the replication offset of the oldest byte held (Redis's
    ``repl_backlog_off``); offsets count from 1, as Redis's do: the byte fed when
    ``master_repl_offset`` goes from 0 to 1 has offset 1.
    """

    __slots__ = ("size", "buf", "histlen", "idx", "start_offset")

    def __init__(self, size: int, next_offset: int) -> None:
        self.size = max(1, size)
        self.buf = bytearray(self.size)
        self.histlen = 0          # bytes held
        self.idx = 0              # where the next byte goes
        self.start_offset = next_offset

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        size = self.size
        view = memoryview(data)
        n = len(view)
        if n >= size:  # only the tail fits
            self.buf[:] = view[n - size:]
            self.idx = 0
        else:
            first = min(n, size - self.idx)
            self.buf[self.idx:self.idx + first] = view[:first]
            if first < n:
                self.buf[:n - first] = view[first:]
            self.idx = (self.idx + n) % size
        dropped = max(0, self.histlen + n - size)
        self.histlen = min(size, self.histlen + n)
        self.start_offset += dropped

    @property
    def end_offset(self) -> int:
        """The offset of the newest byte held (``start_offset - 1`` when empty)."""
        return self.start_offset + self.histlen - 1

    def holds(self, offset: int) -> bool:
        """Whether a replica whose next byte is ``offset`` can continue from here."""
        return self.start_offset <= offset <= self.end_offset + 1

    def read_from(self, offset: int) -> bytes:
        """The bytes from ``offset`` (inclusive) to the newest; ``holds(offset)`` first."""
        if not self.holds(offset):
            raise ValueError(f"offset {offset} is not in the backlog")
        skip = offset - self.start_offset
        count = self.histlen - skip
        if count == 0:
            return b""
        first = (self.idx - self.histlen + skip) % self.size
        if first + count <= self.size:
            return bytes(self.buf[first:first + count])
        return bytes(self.buf[first:]) + bytes(self.buf[:count - (self.size - first)])

    def resize(self, size: int) -> None:
        """``CONFIG SET repl-backlog-size``: keep the newest bytes that still fit."""
        data = self.read_from(self.start_offset)
        end = self.end_offset
        self.size = max(1, size)
        self.buf = bytearray(self.size)
        self.histlen = 0
        self.idx = 0
        keep = data[-self.size:]
        self.start_offset = end + 1 - len(keep)
        self.feed(keep)


class ReplicationState:
    """The ids and offset of this server's history, and its backlog (None until a
    replica first attaches, as in Redis, or while a replica is connected to a master)."""

    def __init__(self) -> None:
        self.replid = new_replid()
        self.replid2 = NO_REPLID
        self.master_repl_offset = 0
        self.second_repl_offset = -1
        self.backlog: Backlog | None = None

    def create_backlog(self, size: int) -> Backlog:
        """Start keeping history from the next byte (Redis's createReplicationBacklog)."""
        self.backlog = Backlog(size, self.master_repl_offset + 1)
        return self.backlog

    def free_backlog(self) -> None:
        self.backlog = None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Account ``data`` as the next bytes of the stream."""
        self.master_repl_offset += len(data)
        if self.backlog is not None:
            self.backlog.feed(data)

    def change_replid(self) -> None:
        """A new history (DEBUG CHANGE-REPL-ID, a replica starting a full sync...)."""
        self.replid = new_replid()

    def clear_replid2(self) -> None:
        self.replid2 = NO_REPLID
        self.second_repl_offset = -1

    def shift_replid(self) -> None:
        """On promotion: the old history becomes ``replid2`` up to the current offset, so
        replicas of the old master can PSYNC to us (Redis's shiftReplicationId)."""
        self.replid2 = self.replid
        self.second_repl_offset = self.master_repl_offset + 1
        self.replid = new_replid()

    def can_continue(self, replid: str, offset: int) -> bool:
        """Whether ``PSYNC replid offset`` can be served from the backlog."""
        if self.backlog is None:
            return False
        if replid != self.replid:
            if replid != self.replid2 or offset > self.second_repl_offset:
                return False
        return self.backlog.holds(offset)
