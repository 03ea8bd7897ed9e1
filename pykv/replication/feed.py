"""The replication stream: the effects stream encoded as Redis sends it to replicas.

Like Redis's ``replicationFeedSlaves``: the feed keeps the database the stream is in
(``slaveseldb``) and emits a ``SELECT`` when a command runs in another one; the encoded
bytes advance the replication offset, go into the backlog and to every attached replica
(``Master.feed_raw``). Several effects of one EXEC or script are wrapped in
``MULTI``/``EXEC``, the ``SELECT`` of the first one before the ``MULTI``, as Redis 7.0 does.
"""
from __future__ import annotations

from collections.abc import Callable

from pykv.protocol import write_reply

_MULTI = b"*1\r\n$5\r\nMULTI\r\n"
_EXEC = b"*1\r\n$4\r\nEXEC\r\n"


class StreamFeed:
    """An effects-stream sink (``Server.add_effect_sink``) that hands encoded bytes on."""

    def __init__(self, emit: Callable[[bytes], None]) -> None:
        self.emit = emit
        self.seldb = -1  # the database the stream is in (-1: a SELECT comes first)
        self._tx: bytearray | None = None  # the effects of the running EXEC or script
        self._tx_count = 0
        self._tx_select = 0  # length of the SELECT that opens the transaction, if any

    def feed(self, db_id: int, argv: list[bytes]) -> None:
        tx = self._tx
        buf = bytearray() if tx is None else tx
        if db_id != self.seldb and db_id >= 0:
            write_reply(buf, [b"SELECT", b"%d" % db_id], 2)
            self.seldb = db_id
            if tx is not None and self._tx_count == 0:
                self._tx_select = len(buf)
        write_reply(buf, argv, 2)
        if tx is None:
            self.emit(bytes(buf))
        else:
            self._tx_count += 1

    def begin_transaction(self, db_id: int) -> None:
        self._tx = bytearray()
        self._tx_count = 0
        self._tx_select = 0

    def end_transaction(self, _mark: None) -> None:
        tx, self._tx = self._tx, None
        if not tx:
            return
        if self._tx_count >= 2:
            sel = self._tx_select
            tx[sel:sel] = _MULTI
            tx += _EXEC
        self.emit(bytes(tx))
