"""WATCH bookkeeping: which clients watch which keys, and what makes their EXEC fail.

A client's EXEC fails (null reply) when any key it watches was touched after WATCH: written
(``Database.signal_modified``), deleted by expiry, emptied by FLUSHDB/FLUSHALL
(``Database.on_flush``) or swapped by SWAPDB (``touch_swapped``). Watches are per database
index, as in Redis, so a watch in db 0 is not touched by the same key name in db 1.

Redis 7.0 also fails EXEC when a watched key's TTL has passed by EXEC time even if nobody
deleted it yet; a key that was *already* expired when watched is not a change when it is
then deleted (``expired`` flag below, Redis's ``watchedKey.expired``).

State: ``Watches.by_db[dbid][key]`` maps each watching client to its ``expired`` flag;
``client.watched`` holds ``(dbid, key)`` pairs so UNWATCH and disconnects are cheap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykv.server.client import Client
    from pykv.server.server import Server
    from pykv.storage.keyspace import Database


class Watches:
    """Every watched key of every database, and the keyspace hooks that dirty watchers."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.by_db: list[dict[bytes, dict[Client, bool]]] = [{} for _ in server.dbs]
        for db, table in zip(server.dbs, self.by_db, strict=True):
            db.signal_modified = self.touch
            db.signal_keys = table  # writes of unwatched keys need not call ``touch``
            db.on_flush = self.touch_flushed
        server.client_close_hooks.append(self.unwatch_all)

    # -- the keyspace hooks -----------------------------------------------------------
    def touch(self, db: Database, key: bytes) -> None:
        """A key was written or deleted: dirty every client watching it."""
        watched = self.by_db[db.id]
        if not watched:
            return
        clients = watched.get(key)
        if not clients:
            return
        for client, expired in clients.items():
            if expired:
                if key not in db.data:
                    # watched while already expired, now deleted: logically unchanged
                    clients[client] = False
                    continue
            client.watch_dirty = True

    def touch_flushed(self, db: Database, replaced_with: Database | None = None) -> None:
        """FLUSHDB/FLUSHALL (or SWAPDB): dirty watchers of keys that existed (or will)."""
        watched = self.by_db[db.id]
        for key, clients in watched.items():
            exists = key in db.data
            incoming = replaced_with is not None and key in replaced_with.data
            if not exists and not incoming:
                continue
            for client, expired in clients.items():
                if expired:
                    if not incoming:
                        clients[client] = False  # an expired key went away: no change
                        continue
                    if _is_expired(replaced_with, key):
                        continue  # still an expired key
                elif not exists and _is_expired(replaced_with, key):
                    clients[client] = True  # nothing replaced by an already expired key
                    continue
                client.watch_dirty = True

    def touch_swapped(self, first: Database, second: Database) -> None:
        """Call before SWAPDB swaps the contents of two databases."""
        self.touch_flushed(first, second)
        self.touch_flushed(second, first)

    # -- WATCH / UNWATCH --------------------------------------------------------------
    def watch(self, client: Client, key: bytes) -> None:
        dbid = client.db_index
        if (dbid, key) in client.watched:
            return
        db = client.db
        expired = key in db.data and _is_expired(db, key)
        self.by_db[dbid].setdefault(key, {})[client] = expired
        client.watched.add((dbid, key))

    def unwatch_all(self, client: Client) -> None:
        if not client.watched:
            return
        by_db = self.by_db
        for dbid, key in client.watched:
            clients = by_db[dbid].get(key)
            if clients is not None:
                clients.pop(client, None)
                if not clients:
                    del by_db[dbid][key]
        client.watched = set()

    def any_expired(self, client: Client) -> bool:
        """Redis's ``isWatchedKeyExpired``: a watched key's TTL passed since WATCH."""
        dbs = self.server.dbs
        for dbid, key in client.watched:
            clients = self.by_db[dbid].get(key)
            if clients is None or clients.get(client):
                continue  # it was already expired when watched
            if _is_expired(dbs[dbid], key):
                return True
        return False

    def watching_clients(self) -> int:
        """Clients with at least one watched key (INFO ``watching_clients`` in later Redis)."""
        seen: set[int] = set()
        for table in self.by_db:
            for clients in table.values():
                seen.update(c.id for c in clients)
        return len(seen)

    def watched_keys(self) -> int:
        return sum(len(table) for table in self.by_db)


def _is_expired(db: Database, key: bytes) -> bool:
    when = db.expires.get(key) if db.expires else None
    return when is not None and when <= db.clock.ms


def install(server: Server) -> Watches:
    """Create the server's ``Watches`` and hook it into every database."""
    watches = Watches(server)
    server.watches = watches
    return watches


def discard_transaction(client: Client) -> None:
    """Leave MULTI state and drop the watches (DISCARD, EXEC, RESET, disconnect):
    ``ClientCore.discard_transaction``, which calls ``Watches.unwatch_all`` only when the
    client watches something."""
    client.discard_transaction()
