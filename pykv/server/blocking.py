"""Blocking commands (BLPOP & co.): parked clients, ready keys, timeouts, unblocking.

This is Redis's ``blocked.c`` for pykv. A blocking command that cannot be served at once
parks its client on one or more keys of its database; when a command creates (or signals)
one of those keys, the key goes on a *ready list*, and after that command (or the whole
EXEC / script) has finished, the dispatcher asks this module to serve the clients waiting
on each ready key, in the order they blocked. A served client's pipelined input is then
processed. Nothing here ever blocks the event loop: timeouts are loop timers.

API for command families (lists here; sorted sets BZPOP*/BZMPOP; streams XREAD BLOCK):

``parse_timeout(arg) -> int``
    Redis's ``getTimeoutFromObjectOrReply`` for seconds (a float): the absolute deadline in
    Unix ms, or 0 for "forever". Raises Redis's errors (not a float, negative, overflow).

``block_for_keys(client, keys, deadline_ms, serve, timeout_reply=NULL_ARRAY, gone_reply=None)``
    Park ``client`` on ``keys`` (in ``client.db``); returns ``NO_REPLY``, which the handler
    returns. Callers check ``client.deny_blocking`` first (inside EXEC/scripts a blocking
    command answers as if it had timed out, with the reply Redis gives there). With a
    ``gone_reply`` (XREADGROUP's ``-UNBLOCKED``), the client is answered with it and
    unblocked as soon as a key it waits on is deleted (DEL, expiry, RENAME/MOVE away,
    FLUSHALL, SWAPDB); otherwise a deleted key just leaves it waiting.

``serve(client, key, value) -> bool``
    Called for a ready ``key`` with its live value (any type; None never). Write the reply
    with ``client.add_reply`` (and do the command's hooks: dirty, notify, modified) and
    return True to unblock the client, or return False to leave it waiting (wrong type,
    nothing to take). Clients waiting on a key are offered it in FIFO order until the key
    is gone or every waiter has been offered it once.

``signal_key_as_ready(db, key)``
    The keyspace calls this (through ``db.on_key_ready``) when a key someone waits on is
    written or deleted (or flushed), so families that create keys need do nothing. Call it
    yourself after changing an existing value in place that a client may be waiting on
    (XADD). Keys made ready outside a command (active expiry) are served at the end of the
    loop iteration, as Redis's beforeSleep does.

``scan_database_for_ready_keys(db)``
    Signal every waited-on key (after SWAPDB, which swaps contents but leaves the waiting
    clients on their database number, as Redis does): present keys may serve waiters,
    missing ones unblock the ``gone_reply`` waiters.

The server exposes ``server.unblock_client(client, error)`` (CLIENT UNBLOCK),
``server.blocked_count`` and ``server.blocking.timeout_count`` (INFO clients), and the
dispatcher calls ``handle_ready_keys`` when ``server.ready_keys`` is non-empty.
"""
from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykv.protocol import NULL_ARRAY, ErrorReply
from pykv.storage._numeric import parse_long_double
from pykv.util.limits import LLONG_MAX

if TYPE_CHECKING:
    from pykv.server.client import Client
    from pykv.server.server import Server
    from pykv.storage.keyspace import Database

Serve = Callable[["Client", bytes, Any], bool]

TIMEOUT_NOT_FLOAT = ErrorReply(b"ERR timeout is not a float or out of range")
TIMEOUT_NEGATIVE = ErrorReply(b"ERR timeout is negative")
TIMEOUT_OUT_OF_RANGE = ErrorReply(b"ERR timeout is out of range")
UNBLOCKED_ERROR = ErrorReply(b"UNBLOCKED client unblocked via CLIENT UNBLOCK")
KEY_DELETED_ERROR = ErrorReply(b"UNBLOCKED the stream key no longer exists")
INTERNAL_ERROR = ErrorReply(b"ERR internal error while running the command")
log = logging.getLogger("pykv")

_MAX_LONG_DOUBLE_CHARS = 5 * 1024
_clock_ns = time.perf_counter_ns  # times serving a blocked client (tests may replace it)


def parse_timeout(arg: bytes) -> int:
    """Seconds (a long double) -> absolute deadline in Unix ms; 0 means block forever."""
    if len(arg) > _MAX_LONG_DOUBLE_CHARS or not parse_long_double(arg):
        raise TIMEOUT_NOT_FLOAT
    try:
        value = float(arg)
    except ValueError:  # hexadecimal: strtold reads it, float() does not
        value = float.fromhex(arg.decode())
    ms = value * 1000.0
    if ms >= 9.223372036854775807e18 or ms <= -9.223372036854775808e18:
        # a C cast of an out-of-range long double gives LLONG_MIN on x86-64
        raise TIMEOUT_NEGATIVE
    tval = math.ceil(ms)  # Redis rounds up to whole milliseconds (ceill)
    if tval == 0 and value > 0:
        tval = 1  # below double precision but not zero as a long double
    if tval < 0:
        raise TIMEOUT_NEGATIVE
    if tval > 0:
        now = int(time.time() * 1000)
        if tval > LLONG_MAX - now:
            raise TIMEOUT_OUT_OF_RANGE
        tval += now
    return tval


class BlockedState:
    """What a parked client waits for (``client.blocked`` while it is blocked)."""

    __slots__ = ("client", "db", "keys", "serve", "timeout_reply", "gone_reply", "timer",
                 "deadline", "call_usec", "argv")

    def __init__(self, client: Client, db: Database, keys: list[bytes], serve: Serve,
                 timeout_reply: Any, deadline: int, gone_reply: Any = None) -> None:
        self.client = client
        self.db = db
        self.keys = keys
        self.serve = serve
        self.timeout_reply = timeout_reply
        self.gone_reply = gone_reply  # the answer when a waited key is deleted, or None
        self.deadline = deadline
        self.timer: Any = None
        # the blocking call's own duration and command line (the dispatcher sets them once
        # the handler returns)
        self.call_usec = 0
        self.argv: list[bytes] = []


class Blocking:
    """The server's blocked clients and ready keys."""

    def __init__(self, server: Server) -> None:
        self.server = server
        # (db id, key) -> db, in signal order; the dispatcher tests its truthiness
        self.ready: dict[tuple[int, bytes], Database] = {}
        self.count = 0  # blocked clients (INFO blocked_clients)
        self.timeout_count = 0  # of which have a timeout (INFO clients_in_timeout_table)
        self._handling = False
        self._unblocked: list[Client] = []
        self._drain_scheduled = False
        self._ready_scheduled = False
        for db in server.dbs:
            db.on_key_ready = self.signal_key_as_ready
        server.client_close_hooks.append(self._on_client_close)

    # -- blocking ------------------------------------------------------------------------
    def block_for_keys(self, client: Client, keys: list[bytes], deadline_ms: int,
                       serve: Serve, timeout_reply: Any = NULL_ARRAY,
                       gone_reply: Any = None) -> Any:
        from pykv.server.client import NO_REPLY

        db = client.db
        state = BlockedState(client, db, [], serve, timeout_reply, deadline_ms, gone_reply)
        waiting = db.blocking_keys
        for key in keys:
            if key in state.keys:
                continue
            state.keys.append(key)
            queue = waiting.get(key)
            if queue is None:
                queue = waiting[key] = deque()
            queue.append(state)
        client.blocked = state
        self.count += 1
        if deadline_ms:
            self.timeout_count += 1
            loop = self.server.loop
            if loop is not None:
                delay = max(0.0, (deadline_ms - time.time() * 1000) / 1000.0)
                state.timer = loop.call_later(delay, self._on_timeout, state)
        return NO_REPLY

    def _detach(self, state: BlockedState) -> None:
        """Forget a parked client (it is no longer blocked after this)."""
        waiting = state.db.blocking_keys
        for key in state.keys:
            queue = waiting.get(key)
            if queue is None:
                continue
            try:
                queue.remove(state)
            except ValueError:
                pass
            if not queue:
                del waiting[key]
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        if state.deadline:
            self.timeout_count -= 1
        self.count -= 1
        if state.client.blocked is state:
            state.client.blocked = None

    # -- unblocking ----------------------------------------------------------------------
    def _on_timeout(self, state: BlockedState) -> None:
        client = state.client
        if client.blocked is not state:
            return
        state.timer = None
        client.server.clock.update()
        client.add_reply(state.timeout_reply)
        self._detach(state)
        self._resume(client)

    def unblock_client(self, client: Client, error: bool | ErrorReply = False) -> bool:
        """CLIENT UNBLOCK: answer as a timeout (or with the UNBLOCKED error, or the error
        given); False if the client was not blocked on keys."""
        state = client.blocked
        if not isinstance(state, BlockedState):
            return False
        if error:
            err = error if isinstance(error, ErrorReply) else UNBLOCKED_ERROR
            client.add_reply(err)
            self.server.count_error(err)
        else:
            client.add_reply(state.timeout_reply)
        self._detach(state)
        self._resume(client)
        return True

    def resume_parked(self, client: Client, state: Any, elapsed_ns: int) -> None:
        """Hand back a client parked by something other than keys (``client.blocked`` set
        to ``state`` by MIGRATE while it waits on its target) once its reply is written:
        the statistics of a served blocked command, then its pending input."""
        if client.blocked is state:
            client.blocked = None
        self._account_served(client, state, elapsed_ns)
        self._resume(client)

    def _resume(self, client: Client) -> None:
        """An unblocked client's pending input runs once the current work is done (Redis
        does it before the event loop sleeps again): its reply goes out now."""
        client.flush()
        self._unblocked.append(client)
        if not self._drain_scheduled:
            loop = self.server.loop
            if loop is None:
                return
            self._drain_scheduled = True
            loop.call_soon(self._drain_unblocked)

    def _drain_unblocked(self) -> None:
        self._drain_scheduled = False
        while self._unblocked:
            pending, self._unblocked = self._unblocked, []
            for client in pending:
                if client.closed:
                    continue
                client.flush()
                if client.blocked is None and not client.closing:
                    client.process_input()
                    client.flush()
            if self.ready:
                self.handle_ready_keys()

    def _on_client_close(self, client: Client) -> None:
        state = client.blocked
        if isinstance(state, BlockedState):
            self._detach(state)
        if client.paused:  # held back by CLIENT PAUSE: its command is dropped
            client.paused = False
            server = self.server
            server.postponed = deque(e for e in server.postponed if e[0] is not client)

    # -- ready keys ----------------------------------------------------------------------
    def signal_key_as_ready(self, db: Database, key: bytes) -> None:
        if key in db.blocking_keys:
            self.ready[(db.id, key)] = db
            if not self._ready_scheduled and self.server.loop is not None:
                # a command's ready keys are served right after it by the dispatcher; this
                # serves those made ready by anything else (the expire cycle, a timer)
                self._ready_scheduled = True
                self.server.loop.call_soon(self._serve_ready_later)

    def _serve_ready_later(self) -> None:
        self._ready_scheduled = False
        if self.ready:
            self.handle_ready_keys()

    def scan_database_for_ready_keys(self, db: Database) -> None:
        # a waiter with a gone_reply waits on a key that exists, so a missing one went
        for key in list(db.blocking_keys):
            self.signal_key_as_ready(db, key)

    def handle_ready_keys(self) -> None:
        """Serve clients waiting on the keys made ready by the command that just ran."""
        if self._handling:
            return
        self._handling = True
        ready = self.ready
        try:
            while ready:
                batch = list(ready.items())
                ready.clear()
                for (_, key), db in batch:
                    self._serve_key(db, key)
        finally:
            self._handling = False

    def _serve_key(self, db: Database, key: bytes) -> None:
        queue = db.blocking_keys.get(key)
        if not queue:
            return
        self.server.clock.update()
        if db.get(key, touch=False) is None:
            self._unblock_gone(queue)
            return
        for state in list(queue):
            client = state.client
            if client.blocked is not state or client.closed:
                continue
            value = db.get(key, touch=False)
            if value is None:
                break
            start = _clock_ns()
            try:
                served = state.serve(client, key, value)
            except Exception:  # a bug must not take the writer's connection down
                log.exception("Internal error serving a blocked client")
                client.add_reply(INTERNAL_ERROR)
                served = True
            if served:
                self._account_served(client, state, _clock_ns() - start)
                self._detach(state)
                self._resume(client)

    def _unblock_gone(self, queue: deque) -> None:
        """The key went: answer the waiters that must hear it (Redis's
        ``unblockDeletedStreamReadgroupClients``), in the order they blocked."""
        for state in list(queue):
            client = state.client
            if state.gone_reply is None or client.blocked is not state or client.closed:
                continue
            answer_failed(client, state.gone_reply)
            self._account_served(client, state, 0)
            self._detach(state)
            self._resume(client)

    def _account_served(self, client: Client, state: BlockedState, serve_ns: int) -> None:
        """Redis 7.0's statistics for a served blocked command: its calls were counted when
        it blocked; now the time of the blocking call plus the time to serve it is added to
        its usec and, with latency-tracking on, recorded in its latency histogram, and it
        goes to the slowlog with that time (a command that times out or is unblocked gets
        none of these)."""
        cmd = client.last_cmd
        if cmd is None:
            return
        usec = state.call_usec + serve_ns // 1000
        cmd.usec += usec
        if self.server.latency_tracking:
            cmd.record_latency(usec)
        if usec * 1000 >= self.server.slowlog_threshold_ns and not cmd.skip_slowlog:
            self.server.slowlog_push(client, state.argv, usec)


def answer_failed(client: Client, err: ErrorReply) -> bool:
    """Answer a parked client with an error as Redis's updateStatsOnUnblock with errors
    does (errorstats, and the served call counts as failed); True, as ``serve`` returns
    for a client it unblocked."""
    client.add_reply(err)
    client.server.count_error(err)
    if client.last_cmd is not None:
        client.last_cmd.failed_calls += 1
    return True


def block_for_keys(client: Client, keys: list[bytes], deadline_ms: int, serve: Serve,
                   timeout_reply: Any = NULL_ARRAY, gone_reply: Any = None) -> Any:
    """Park ``client`` on ``keys`` (see the module docstring); returns ``NO_REPLY``."""
    return client.server.blocking.block_for_keys(client, keys, deadline_ms, serve,
                                                 timeout_reply, gone_reply)
