"""The replication stream: the effects stream encoded as Redis sends it to replicas.

Like Redis's ``replicationFeedSlaves``: the feed keeps the database the stream is in
(``slaveseldb``) and emits a ``SELECT`` when a command runs in another one. Several effects
of one EXEC or script are wrapped in ``MULTI``/``EXEC``, after the ``SELECT`` of the first
one, as Redis 7.0 does. Commands are encoded into one buffer (the Cython reply writer: a
list of bulk strings is a RESP command) that the master hands to the backlog and the
replicas once per event-loop iteration (``schedule`` is called when the buffer fills).
``server.repl_offset`` follows every byte fed: the offset a client's write ends at (WAIT).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykv.protocol import write_reply

_MULTI = b"*1\r\n$5\r\nMULTI\r\n"
_EXEC = b"*1\r\n$4\r\nEXEC\r\n"


class StreamFeed:
    """An effects-stream sink (``Server.add_effect_sink``) writing into ``buf``."""

    def __init__(self, server: Any, schedule: Callable[[], None]) -> None:
        self.server = server
        self.base = 0  # the replication offset before ``buf``
        self.buf = bytearray()
        self.schedule = schedule
        self.scheduled = False
        self.seldb = -1  # the database the stream is in (-1: a SELECT comes first)
        self.in_tx = False  # an EXEC or a script is running
        self._tx_count = 0
        self._tx_insert = 0  # where its MULTI goes (after the SELECT of its first effect)

    def feed(self, db_id: int, argv: list[bytes]) -> None:
        buf = self.buf
        if db_id != self.seldb and db_id >= 0:
            write_reply(buf, [b"SELECT", b"%d" % db_id], 2)
            self.seldb = db_id
        if self.in_tx:
            if self._tx_count == 0:
                self._tx_insert = len(buf)
            self._tx_count += 1
        write_reply(buf, argv, 2)
        self.server.repl_offset = self.base + len(buf)
        if not self.scheduled:
            self.scheduled = True
            self.schedule()

    def feed_raw(self, data: bytes) -> None:
        self.buf += data
        self.server.repl_offset = self.base + len(self.buf)
        if not self.scheduled:
            self.scheduled = True
            self.schedule()

    def begin_transaction(self, db_id: int) -> None:
        self.in_tx = True
        self._tx_count = 0

    def end_transaction(self, _mark: None) -> None:
        self.in_tx = False
        if self._tx_count >= 2:
            pos = self._tx_insert
            self.buf[pos:pos] = _MULTI
            self.buf += _EXEC
            self.server.repl_offset = self.base + len(self.buf)

    def take(self) -> bytes:
        """The bytes fed since the last call (not during a transaction)."""
        data = bytes(self.buf)
        self.buf.clear()
        self.scheduled = False
        return data
