"""Client-side caching (CLIENT TRACKING): who may have cached which key, and invalidations.

Two modes, as in Redis:

* default: every key a tracking client *reads* (keys of read-only commands, found through
  the command table's key specs) is remembered in ``table`` (key -> client ids; one table
  for all databases, as Redis keeps it). When a key is modified (``Database.signal_modified``,
  which writes, deletions, expiry and eviction all go through) the clients that read it get
  one invalidation and the key is forgotten until read again. OPTIN/OPTOUT with
  ``CLIENT CACHING`` decide per command whether reads are remembered.
* BCAST: clients subscribe to key prefixes; modified keys under a prefix are collected and
  sent once per event-loop iteration, one message per prefix (NOLOOP drops a client's own).

Messages are RESP3 pushes ``>2 invalidate [keys]`` on the tracking connection, or, with
``REDIRECT id``, go to that connection: a push if it speaks RESP3, else a Pub/Sub message on
``__redis__:invalidate`` if it is in subscribed mode. FLUSHDB/FLUSHALL send a null
invalidation to every tracking client.

The dispatcher costs one test per command: ``server.tracking`` is None until some client
turns tracking on. While it is set, ``Client.call`` calls ``enter``/``leave`` around each
command: ``leave`` remembers the keys the command read and sends the running client its own
invalidations *after* its reply, as Redis does. A read-only command a script runs makes
the script's caller remember the keys its EVAL/FCALL declared (Redis 7.0's rule).
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from pykv.protocol import Push, RawReply, RespSet
from pykv.server.keyspecs import keys_from_specs

if TYPE_CHECKING:
    from pykv.server.client import Client
    from pykv.server.command_table import Command
    from pykv.server.server import Server
    from pykv.storage.keyspace import Database

INVALIDATE_CHANNEL = b"__redis__:invalidate"
# read-only commands whose own keys are not tracked (the commands they run are)
_NOT_TRACKED = frozenset({"eval_ro", "evalsha_ro", "fcall_ro"})
_NULL = {2: RawReply(b"$-1\r\n"), 3: RawReply(b"_\r\n")}


class ClientTracking:
    """One client's tracking settings (``client.tracking`` while tracking is on)."""

    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "prefixes",
                 "broken_redirect")

    def __init__(self) -> None:
        self.redirect = 0
        self.bcast = False
        self.optin = False
        self.optout = False
        self.noloop = False
        self.caching = False  # CLIENT CACHING given for the next command
        self.prefixes: set[bytes] = set()
        self.broken_redirect = False

    def flag_names(self) -> list[bytes]:
        flags = [b"on"]
        if self.bcast:
            flags.append(b"bcast")
        if self.optin:
            flags.append(b"optin")
            if self.caching:
                flags.append(b"caching-yes")
        if self.optout:
            flags.append(b"optout")
            if self.caching:
                flags.append(b"caching-no")
        if self.noloop:
            flags.append(b"noloop")
        if self.broken_redirect:
            flags.append(b"broken_redirect")
        return flags

    def describe(self) -> dict:
        """CLIENT TRACKINGINFO."""
        return {b"flags": RespSet(self.flag_names()), b"redirect": self.redirect,
                b"prefixes": sorted(self.prefixes)}


OFF_INFO = {b"flags": RespSet([b"off"]), b"redirect": -1, b"prefixes": []}


class _Prefix:
    """A BCAST prefix: its subscribers and the keys modified since the last broadcast."""

    __slots__ = ("clients", "keys")

    def __init__(self) -> None:
        self.clients: dict[int, Client] = {}
        self.keys: dict[bytes, Client | None] = {}  # key -> the client that changed it last


class Tracking:
    """The server's tracking table, BCAST prefixes and pending invalidations."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.table: dict[bytes, set[int]] = {}
        self.prefixes: dict[bytes, _Prefix] = {}
        self.clients = 0  # clients with tracking on
        self.current: Client | None = None  # the top-level client running a command
        self.depth = 0
        # (client, command, argv) of each call in progress, outermost first
        self.running: list[tuple[Any, Command, list[bytes]]] = []
        self.pending: list[bytes] = []  # the running client's own invalidations
        self.flush_pending = False
        self._broadcast_scheduled = False
        self._hooked = False
        self._limit_misses = 0  # consecutive limit runs that stayed over the limit
        server.client_close_hooks.append(self.disable)
        server.client_reset_hooks.append(self.disable)
        server.add_cron(self.limit_used_slots)

    # -- enabling ----------------------------------------------------------------------
    def enable(self, client: Client, redirect: int, bcast: bool, optin: bool, optout: bool,
               noloop: bool, prefixes: list[bytes]) -> None:
        state = client.tracking
        if state is None:
            state = client.tracking = ClientTracking()
            self.clients += 1
        state.redirect = redirect
        state.broken_redirect = False
        state.bcast = bcast
        state.optin, state.optout, state.noloop = optin, optout, noloop
        if bcast:
            for prefix in prefixes or [b""]:
                state.prefixes.add(prefix)
                self.prefixes.setdefault(prefix, _Prefix()).clients[client.id] = client
        self._hook_keyspace()
        self.server.tracking = self

    def disable(self, client: Client) -> None:
        state = client.tracking
        if state is None:
            return
        for prefix in state.prefixes:
            entry = self.prefixes.get(prefix)
            if entry is not None:
                entry.clients.pop(client.id, None)
                if not entry.clients:
                    del self.prefixes[prefix]
        client.tracking = None
        self.clients -= 1
        if self.clients <= 0:  # the table stays, as in Redis: a client that turns
            self.clients = 0    # tracking on again still hears of the keys it had read
            self.prefixes.clear()
            if self.depth == 0:
                self.server.tracking = None

    def _hook_keyspace(self) -> None:
        """Chain onto each database's modification and flush hooks (once)."""
        if self._hooked:
            return
        self._hooked = True
        for db in self.server.dbs:
            db.signal_modified = _chain_modified(db.signal_modified, self.key_modified)
            db.on_flush = _chain_flush(db.on_flush, self.flushed)

    # -- around each command (Client.call) ---------------------------------------------
    def enter(self, client: Client, cmd: Command, argv: list[bytes]) -> None:
        if self.depth == 0:
            self.current = client
            if self.table and len(self.table) > self.server.config.tracking_table_max_keys:
                self.limit_used_slots()
        self.depth += 1
        self.running.append((client, cmd, argv))

    def limit_used_slots(self) -> None:
        """Redis's trackingLimitUsedSlots (before each command and from the cron): over
        ``tracking-table-max-keys``, forget random keys, invalidating them for the clients
        that read them, with an effort that grows while the table stays too big."""
        max_keys = self.server.config.tracking_table_max_keys
        table = self.table
        if not max_keys or len(table) <= max_keys:
            self._limit_misses = 0
            return
        effort = 100 * (self._limit_misses + 1)
        victims = random.sample(list(table), min(effort, len(table)))
        for key in victims:
            self._invalidate_readers(key)
            if len(table) <= max_keys:
                self._limit_misses = 0
                return
        self._limit_misses += 1

    def leave(self, client: Client, cmd: Command, argv: list[bytes]) -> None:
        self.depth -= 1
        self.running.pop()
        current = self.current
        if current is not None:
            state = current.tracking
            if state is not None and not state.bcast and cmd.is_readonly \
                    and cmd.fullname not in _NOT_TRACKED:
                if (state.optin and state.caching) or (state.optout and not state.caching) \
                        or not (state.optin or state.optout):
                    self.remember(current, *self._callers_command(current, client, cmd, argv))
        if self.depth > 0:
            return
        self.current = None
        if current is not None:
            state = current.tracking
            if state is not None and state.caching and current.multi is None \
                    and not cmd.fullname.startswith("client|"):
                state.caching = False
            if self.pending:
                pending, self.pending = self.pending, []
                for key in pending:
                    if current.tracking is not None and not current.closed:
                        self.send(current, key)
        if self.flush_pending:
            self._send_flush()
        if self.clients == 0:
            self.server.tracking = None

    def _callers_command(self, current: Client, client: Any, cmd: Command,
                         argv: list[bytes]) -> tuple[Command, list[bytes]]:
        """The command whose keys a read remembers: its own, or, for a read a script
        made, the keys its caller's EVAL/FCALL declared (Redis 7.0 tracks the caller's
        command line, so undeclared keys are not tracked and write-only scripts track
        nothing)."""
        if client is current:
            return cmd, argv
        for runner, outer, outer_argv in reversed(self.running):
            if runner is current:
                return outer, outer_argv
        return cmd, argv

    def remember(self, client: Client, cmd: Command, argv: list[bytes]) -> None:
        table = self.table
        cid = client.id
        for i in keys_read(cmd, argv):
            ids = table.get(argv[i])
            if ids is None:
                table[argv[i]] = {cid}
            else:
                ids.add(cid)

    # -- invalidation ------------------------------------------------------------------
    def key_modified(self, db: Database, key: bytes) -> None:
        current = self.current
        if self.prefixes:
            self._remember_for_broadcast(key, current)
        self._invalidate_readers(key)

    def _invalidate_readers(self, key: bytes) -> None:
        """Forget ``key`` and tell the clients that read it (Redis's trackingInvalidateKey
        without the BCAST part)."""
        current = self.current
        ids = self.table.pop(key, None)
        if not ids:
            return
        clients = self.server.clients
        for cid in ids:
            target = clients.get(cid)
            if target is None:
                continue
            state = target.tracking
            if state is None or state.bcast:
                continue
            if target is current:
                if state.noloop:
                    continue
                if self.depth > 0:
                    self.pending.append(key)
                    continue
            self.send(target, key)

    def flushed(self, db: Database) -> None:
        """FLUSHDB/FLUSHALL: a null invalidation to every tracking client, once per
        command (FLUSHALL empties every database), after the running command's reply."""
        if not self.clients:
            return
        self.table.clear()
        if self.depth > 0:
            self.flush_pending = True
        else:
            self._send_flush()

    def _send_flush(self) -> None:
        self.flush_pending = False
        for client in list(self.server.clients.values()):
            if client.tracking is not None and not client.closed:
                self.send(client, None)

    def send(self, client: Client, key: bytes | list[bytes] | None) -> None:
        """One invalidation message for ``client`` (to it, or to its redirect target)."""
        state = client.tracking
        if state is None:
            return
        if key is None:
            keys: Any = _NULL[3 if client.resp == 3 else 2]
        elif isinstance(key, list):
            keys = key
        else:
            keys = [key]
        dest = client
        if state.redirect:
            dest = self.server.clients.get(state.redirect)
            if dest is None or dest.closed:
                state.broken_redirect = True
                if client.resp > 2:
                    client.add_push(Push([b"tracking-redir-broken", state.redirect]))
                    self._flush(client)
                return
        if dest.resp > 2:
            dest.add_push(Push([b"invalidate", keys]))
        elif state.redirect and dest.subscriptions:
            dest.add_push(Push([b"message", INVALIDATE_CHANNEL, keys]))
        else:
            return  # RESP2 without a subscribed redirect target: nowhere to send it
        self._flush(dest)

    def _flush(self, client: Client) -> None:
        if client is not self.current:
            client.flush()

    # -- BCAST -------------------------------------------------------------------------
    def _remember_for_broadcast(self, key: bytes, modifier: Client | None) -> None:
        for prefix, entry in self.prefixes.items():
            if key.startswith(prefix):
                entry.keys[key] = modifier
                if not self._broadcast_scheduled:
                    self._schedule_broadcast()

    def _schedule_broadcast(self) -> None:
        loop = self.server.loop
        if loop is None:
            return
        self._broadcast_scheduled = True
        loop.call_soon(self.broadcast)

    def broadcast(self) -> None:
        """Send each prefix's modified keys to its subscribers (Redis: in beforeSleep)."""
        self._broadcast_scheduled = False
        for _, entry in sorted(self.prefixes.items()):  # Redis walks its prefixes in order
            if not entry.keys:
                continue
            keys = sorted(entry.keys.items())
            entry.keys = {}
            for client in list(entry.clients.values()):
                state = client.tracking
                if state is None or client.closed:
                    continue
                if state.noloop:
                    mine = [k for k, who in keys if who is not client]
                    if not mine:
                        continue
                    self.send(client, mine)
                else:
                    self.send(client, [k for k, _ in keys])

    # -- INFO --------------------------------------------------------------------------
    def total_items(self) -> int:
        return sum(len(ids) for ids in self.table.values())


def keys_read(cmd: Command, argv: list[bytes]) -> list[int]:
    """Argument positions of the keys ``cmd`` names (Redis's getKeysFromCommand)."""
    if not cmd.movablekeys:
        first = cmd.first_key
        if first <= 0:
            return []
        last = cmd.last_key
        if last < 0:
            last = len(argv) + last
        return list(range(first, min(last, len(argv) - 1) + 1, max(cmd.step, 1)))
    if cmd.get_keys is not None:
        return list(cmd.get_keys(argv))
    found = keys_from_specs(cmd, argv) or []
    return [i for i, _ in found]


def _chain_modified(prev: Any, hook: Any) -> Any:
    def signal_modified(db: Database, key: bytes) -> None:
        prev(db, key)
        hook(db, key)

    return signal_modified


def _chain_flush(prev: Any, hook: Any) -> Any:
    def on_flush(db: Database, *args: Any) -> None:
        prev(db, *args)
        if not args:  # SWAPDB passes the other database: not a flush
            hook(db)

    return on_flush


def get_tracking(server: Server) -> Tracking:
    state = getattr(server, "client_caching", None)
    if state is None:
        state = server.client_caching = Tracking(server)
    return state
