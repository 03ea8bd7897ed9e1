"""A connected client: its state, and the dispatcher it inherits from ``ClientCore``.

The dispatcher is the hot path and lives in ``pykv/server/_core.pyx``: ``on_data`` feeds
the parser, runs each complete command through ``execute`` (Redis's ``processCommand``
checks, in Redis's order) and ``call``, encodes each reply into one output buffer, and hands
that buffer to the connection once per read batch (pipelining). This module holds the rest
of a client: its start-up state and the helpers commands use.

Checks before a command runs, as ``processCommand`` orders them: unknown command or
subcommand, arity, authentication, subscribed-mode (RESP2) restrictions, MULTI queueing,
CLIENT PAUSE; then ``call`` runs the handler and does the bookkeeping (commandstats,
errorstats, slowlog, MONITOR).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from pykv.net.base import Connection
from pykv.protocol import ErrorReply, RequestParser, write_reply
from pykv.server._core import (
    MULTI_IMMEDIATE,
    NO_REPLY,
    REPLY_OFF,
    REPLY_ON,
    REPLY_SKIP,
    REPLY_SKIP_NEXT,
    ClientCore,
    NoReply,
)
from pykv.server.command_table import Command
from pykv.server.replybuf import REPLY_CHUNK_BYTES

if TYPE_CHECKING:
    from pykv.server.server import Server

__all__ = [
    "MULTI_IMMEDIATE", "NO_REPLY", "REPLY_OFF", "REPLY_ON", "REPLY_SKIP", "REPLY_SKIP_NEXT",
    "Client", "NoReply",
]

log = logging.getLogger("pykv")
VERBOSE = 15  # Redis's verbose log level (pykv.server.lifecycle.redislog)
# what Redis logs for a protocol error, by the reply text (setProtocolError's errstr)
_PROTOCOL_ERROR_LOG = {
    "invalid multibulk length": "invalid mbulk count",
    "unauthenticated multibulk length": "unauth mbulk count",
    "unauthenticated bulk length": "unauth bulk length",
    "unbalanced quotes in request": "unbalanced quotes in inline request",
}


class Client(ClientCore):
    """One connection's state: protocol, database, auth, transaction, flags, buffers."""

    # the master side of replication sets it on a replica's client (pykv.replication.master);
    # a class default keeps getattr(client, "is_replica", False) off the exception path
    is_replica = False

    def __init__(self, server: Server, conn: Connection | None, client_id: int) -> None:
        self.server = server
        self.conn = conn
        self.id = client_id
        self.parser = RequestParser(server.config.proto_max_bulk_len)
        self.out = bytearray()
        self.resp = 2
        self.db_index = 0
        self.db = server.dbs[0]
        self.name: bytes = b""
        self.lib_name: bytes = b""
        self.lib_ver: bytes = b""
        acl = server.acl
        if acl is None:
            self.authenticated = not server.config.requirepass
        else:  # the default user (pykv.acl), needing a password or not
            self.authenticated = not acl.auth_required()
            self.acl_user = acl.default
            self.acl_restricted = not acl.default.unrestricted
        self.user = "default"
        self.parser.auth_required = not self.authenticated
        now = time.time()
        self.created = now
        self.last_interaction = now
        self.buf_size = REPLY_CHUNK_BYTES
        self.buf_peak_reset_ms = int(now * 1000)
        self.last_cmd: Command | None = None
        self.closing = False  # close once the pending replies are written
        self.obuf_soft_since = 0.0  # since when over the soft output limit (0: not)
        self.closed = False
        self.reply_mode = REPLY_ON
        self.no_evict = False
        self.no_touch = False
        self.flags: set[str] = set()
        # transactions (MULTI/EXEC/WATCH)
        self.multi: list[tuple[Command, list[bytes]]] | None = None
        self.multi_dirty = False
        self.watched: set[tuple[int, bytes]] = set()
        self.watch_dirty = False
        # pub/sub
        self.channels: set[bytes] = set()
        self.patterns: set[bytes] = set()
        self.shard_channels: set[bytes] = set()
        # blocking (BLPOP & co.): set by the blocking machinery
        self.blocked: Any = None
        # True while running inside EXEC or a script: blocking commands must not block
        # there (they answer as if their timeout had expired at once, as Redis does)
        self.deny_blocking = False
        # what the running command is logged as in the AOF, if not its own argv
        self.propagate_override: list[list[bytes]] | None = None
        self.paused = False  # waiting for CLIENT UNPAUSE with a command held back
        self.monitor = False
        self.net_in = 0
        self.net_out = 0
        self.argv_len_sum = 0
        self.tracking: Any = None

    # -- transport callbacks ------------------------------------------------------------
    def on_close(self) -> None:
        self.closed = True
        self.server.remove_client(self)

    # -- processing (the hot path lives in ClientCore, pykv/server/_core.pyx) -----------
    def protocol_error(self, message: str) -> None:
        err = ErrorReply(b"ERR " + message.encode("latin-1", "replace"))
        self.add_reply(err)
        self.server.count_error(err)
        if log.isEnabledFor(VERBOSE):
            text = message.removeprefix("Protocol error: ")
            if text.startswith("expected '$'"):
                text = "expected $ but got something else"
            from pykv.server.client_info import client_info_line

            log.log(VERBOSE, "Protocol error (%s) from client: %s.",
                    _PROTOCOL_ERROR_LOG.get(text, text), client_info_line(self))
        self.parser.reset()
        self.closing = True

    # -- propagation (AOF) ---------------------------------------------------------------
    def propagate_as(self, *commands: list[bytes]) -> None:
        """Log the running command's effect as ``commands`` instead of its own argv (Redis's
        ``rewriteClientCommandVector``/``alsoPropagate``): EXPIRE as PEXPIREAT, SPOP as
        SREM, INCRBYFLOAT as SET … KEEPTTL. Costs nothing while nothing is propagated."""
        if self.server.propagate is not None:
            self.propagate_override = list(commands)

    def propagate_now(self, argv: list[bytes]) -> None:
        """Log a change made outside this client's own command (a blocked pop served
        when another client pushed)."""
        propagate = self.server.propagate
        if propagate is not None:
            propagate(self.db_index, argv)

    # -- replies ------------------------------------------------------------------------
    def add_push(self, reply: Any) -> None:
        """Out-of-band data (pub/sub, invalidations): ignores CLIENT REPLY and flushes."""
        write_reply(self.out, reply, self.resp)

    def end_skipped_command(self) -> None:
        """A command that answered only with pushes is over: under CLIENT REPLY SKIP it
        was the skipped one (Redis skips per command; ``add_reply`` counts replies)."""
        if self.reply_mode == REPLY_SKIP:
            self.reply_mode = REPLY_ON

    def close_now(self) -> None:
        """Flush what is buffered and close the connection."""
        if self.closed:
            return
        self.closing = True
        if self.out and self.conn is not None:
            data, self.out = self.out, bytearray()
            self.conn.write(data)
        self.closed = True
        if self.conn is not None:
            self.conn.close()
        self.server.remove_client(self)

    # -- helpers for commands -----------------------------------------------------------
    def select(self, index: int) -> None:
        self.db_index = index
        self.db = self.server.dbs[index]

    def set_authenticated(self, ok: bool) -> None:
        self.authenticated = ok
        self.parser.auth_required = not ok

    @property
    def addr(self) -> str:
        return self.conn.peer_address() if self.conn else ""

    @property
    def laddr(self) -> str:
        return self.conn.local_address() if self.conn else ""

    @property
    def subscriptions(self) -> int:
        return len(self.channels) + len(self.patterns) + len(self.shard_channels)
