"""A connected client and the dispatcher: bytes in, commands checked and run, replies out.

``Client.on_data`` is the hot path: feed the parser, run each complete command through
``execute`` (Redis's ``processCommand`` checks, in Redis's order), encode each reply into one
output buffer, and hand that buffer to the connection once per read batch (pipelining).

Checks before a command runs, as ``processCommand`` orders them: unknown command or
subcommand, arity, authentication, subscribed-mode (RESP2) restrictions, MULTI queueing,
CLIENT PAUSE; then ``call`` runs the handler and does the bookkeeping (commandstats,
errorstats, slowlog, MONITOR).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from pykv import errors
from pykv.commands.registry import Command
from pykv.net.base import Connection
from pykv.protocol import ErrorReply, ProtocolError, RequestParser, write_reply
from pykv.protocol.types import QUEUED

if TYPE_CHECKING:
    from pykv.server.server import Server

log = logging.getLogger("pykv")
_perf_ns = time.perf_counter_ns


class NoReply:
    """Returned by a handler that has written its reply itself (or must send none)."""

    __repr__ = lambda self: "NO_REPLY"  # noqa: E731


NO_REPLY = NoReply()

# Commands that run at once even inside MULTI (the rest are queued).
_MULTI_IMMEDIATE = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})

# CLIENT REPLY modes
REPLY_ON, REPLY_OFF, REPLY_SKIP_NEXT, REPLY_SKIP = 0, 1, 2, 3


class Client:
    """One connection's state: protocol, database, auth, transaction, flags, buffers."""

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
        self.authenticated = not server.config.requirepass
        self.user = "default"
        self.parser.auth_required = not self.authenticated
        now = time.time()
        self.created = now
        self.last_interaction = now
        self.last_cmd: Command | None = None
        self.closing = False  # close once the pending replies are written
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
    def on_data(self, data: bytes) -> None:
        if self.closing:
            return
        self.net_in += len(data)
        self.server.stat_net_input_bytes += len(data)
        self.last_interaction = time.time()
        self.parser.feed(data)
        self.process_input()
        self.flush()

    def on_close(self) -> None:
        self.closed = True
        self.server.remove_client(self)

    # -- processing ---------------------------------------------------------------------
    def process_input(self) -> None:
        """Run every complete command in the query buffer (until blocked or paused)."""
        parser = self.parser
        server = self.server
        clock = server.clock
        # one clock reading per batch: commands of one read see the same "now", as the
        # commands of one event-loop iteration do in Redis for expiry purposes
        clock.update()
        while not self.closing and self.blocked is None and not self.paused:
            try:
                argv = parser.get_command()
            except ProtocolError as exc:
                self.protocol_error(str(exc))
                return
            if argv is None:
                break
            self.execute(argv)
        if parser.buffered() > server.config.client_query_buffer_limit:
            log.warning("Closing client that reached max query buffer length: id=%d", self.id)
            self.closing = True
            self.close_now()
            return
        parser.compact()

    def protocol_error(self, message: str) -> None:
        self.add_reply(ErrorReply(b"ERR " + message.encode("latin-1", "replace")))
        self.server.stat_unexpected_error("ERR")
        log.info("Protocol error (%s) from client: id=%d addr=%s", message, self.id,
                 self.conn.peer_address() if self.conn else "?")
        self.parser.reset()
        self.closing = True

    def execute(self, argv: list[bytes]) -> None:
        """Redis's processCommand: look up, check, queue or run one command."""
        server = self.server
        # the name as sent is tried first (cached per spelling), so "GET" and "get" skip
        # the lower() of every command
        cmd = server.command_lookup.get(argv[0])
        if cmd is None:
            cmd = server.commands.get(argv[0].lower())
            if cmd is None:
                self.reject(errors.unknown_command(argv))
                return
            if len(server.command_lookup) < 4096:
                server.command_lookup[argv[0]] = cmd
        if cmd.subcommands:
            if len(argv) >= 2:
                sub = cmd.subcommands.get(argv[1].lower())
                if sub is None:
                    self.reject(errors.unknown_subcommand(argv[1], argv[0]))
                    return
                cmd = sub
        elif cmd.handler is None:
            self.reject(errors.unknown_command(argv))
            return
        arity = cmd.arity
        if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
            self.reject(errors.wrong_arity(cmd.fullname), cmd)
            return
        if not self.authenticated and not cmd.no_auth:
            self.reject(errors.NOAUTH, cmd)
            return
        if self.resp == 2 and (self.channels or self.patterns or self.shard_channels) \
                and not cmd.pubsub_ok:
            self.reject(errors.pubsub_context(cmd.fullname), cmd)
            return
        if server.busy_script is not None and not cmd.allow_busy:  # a script past its limit
            self.reject(server.busy_script.busy_error, cmd)
            return
        if self.multi is not None and cmd.fullname not in _MULTI_IMMEDIATE:
            if cmd.no_multi:
                self.reject(errors.NOT_IN_MULTI, cmd)
                return
            self.multi.append((cmd, argv))
            self.add_reply(QUEUED)
            return
        if server.pause_active and server.should_pause(self, cmd):
            server.postpone(self, argv)
            return
        self.call(cmd, argv)
        if server.ready_keys:  # keys that blocked clients wait on were written
            server.blocking.handle_ready_keys()

    def reject(self, err: ErrorReply, cmd: Command | None = None) -> None:
        """Refuse a command before it runs (counted as rejected, and dirties a MULTI)."""
        if cmd is not None:
            cmd.rejected_calls += 1
        if self.multi is not None:
            self.multi_dirty = True
        self.server.count_error(err)
        self.add_reply(err)

    def call(self, cmd: Command, argv: list[bytes]) -> Any:
        """Run the handler with the bookkeeping Redis's ``call()`` does."""
        server = self.server
        dirty = server.dirty
        db_id = self.db_index
        tracking = server.tracking  # client-side caching on (pykv.server.tracking), or None
        if tracking is not None:
            tracking.enter(self)
        start = _perf_ns()
        try:
            reply = cmd.handler(self, argv)
        except ErrorReply as exc:
            reply = exc
        except Exception:  # a bug must never take the server down
            log.exception("Internal error running %r", argv[:1])
            reply = ErrorReply(b"ERR internal error while running the command")
        elapsed = _perf_ns() - start
        if server.propagate is not None and server.dirty != dirty and not cmd.no_propagate:
            self.propagate_effects(db_id, argv)
        if server.monitors and not cmd.skip_monitor:  # after the call, as Redis (db of SELECT)
            server.feed_monitors(self, argv)
        cmd.calls += 1
        cmd.usec += elapsed // 1000
        server.stat_numcommands += 1
        self.last_cmd = cmd
        if type(reply) is ErrorReply:
            cmd.failed_calls += 1
            server.count_error(reply)
        if elapsed >= server.slowlog_threshold_ns and not cmd.skip_slowlog:
            server.slowlog_push(self, argv, elapsed // 1000)
        if reply is not NO_REPLY:
            if self.reply_mode == REPLY_ON:
                write_reply(self.out, reply, self.resp)
            else:
                self.add_reply(reply)
        if tracking is not None:  # keys read, and this client's invalidations after its reply
            tracking.leave(self, cmd, argv)
        return reply

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

    def propagate_effects(self, db_id: int, argv: list[bytes]) -> None:
        propagate = self.server.propagate
        override = self.propagate_override
        if override is None:
            propagate(db_id, argv)
            return
        self.propagate_override = None
        for command in override:
            propagate(db_id, command)

    # -- replies ------------------------------------------------------------------------
    def add_reply(self, reply: Any) -> None:
        if self.reply_mode == REPLY_ON:
            write_reply(self.out, reply, self.resp)
        elif self.reply_mode == REPLY_SKIP_NEXT:
            self.reply_mode = REPLY_SKIP
        elif self.reply_mode == REPLY_SKIP:
            self.reply_mode = REPLY_ON

    def add_push(self, reply: Any) -> None:
        """Out-of-band data (pub/sub, invalidations): ignores CLIENT REPLY and flushes."""
        write_reply(self.out, reply, self.resp)

    def flush(self) -> None:
        out = self.out
        if self.server.aof.buf:  # the AOF is written (fsynced under "always") before replies
            self.server.aof.flush_before_replies()
        if out and self.conn is not None and not self.closed:
            self.out = bytearray()
            self.net_out += len(out)
            self.server.stat_net_output_bytes += len(out)
            self.conn.write(out)
        if self.closing and not self.closed:
            self.close_now()

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
