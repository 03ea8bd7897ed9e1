"""Switching roles: becoming a replica of ``host:port`` or a master again.

Redis's ``replicationSetMaster`` and ``replicationUnsetMaster``, the ``replicaof`` config
at start-up (the link starts once the dataset is loaded, PSYNCing with the history the RDB
recorded in its ``repl-id``/``repl-offset``/``repl-stream-db`` AUX fields), the AUX fields a
replica writes into its own RDBs, and the CONFIG SET effects of the replica settings.
"""
from __future__ import annotations

import logging
from typing import Any

from pykv import errors
from pykv.replication.replica import MasterLink, apply_flags

log = logging.getLogger("pykv")


def install(server: Any) -> None:
    """Give ``server`` its replica slots; a configured ``replicaof`` starts after the load."""
    server.master_link = None
    server.rdb_repl_aux = lambda: rdb_aux(server)
    for name in ("replica-read-only", "replica-serve-stale-data"):
        server.config.on_change(name, lambda _value: apply_flags(server))
    server.add_cron(lambda: _cron(server))
    server.shutdown_hooks.append(lambda: _stop_link(server))
    target = parse_replicaof(server.config.replicaof)
    if target is not None:
        server.master_link = MasterLink(server, *target)
        _relay(server, True)
        server.startup_hooks.append(lambda: _start_after_load(server))


def _relay(server: Any, on: bool) -> None:
    """A replica's own replicas get its master's stream, not its own effects (the master
    side's ``set_proxying``); a master again feeds them its effects."""
    replicas = getattr(server, "replicas", None)
    if replicas is not None:
        replicas.set_proxying(on)


def parse_replicaof(value: str) -> tuple[str, int] | None:
    words = (value or "").split()
    if len(words) != 2 or words[0].lower() == "no" and words[1].lower() == "one":
        return None
    try:
        return words[0], int(words[1])
    except ValueError:
        return None


def _start_after_load(server: Any) -> None:
    async def start() -> None:
        import asyncio

        while server.loading:
            await asyncio.sleep(0.01)
        link = server.master_link
        if link is None or link.task is not None:
            return
        aux = getattr(server.persistence, "last_aux", None) or {}
        replid = aux.get(b"repl-id", b"").decode("latin-1")
        if len(replid) == 40:
            try:
                offset = int(aux.get(b"repl-offset", b"-1"))
                stream_db = int(aux.get(b"repl-stream-db", b"0"))
            except ValueError:
                offset = -1
                stream_db = 0
            if offset >= 0:
                repl = server.repl
                repl.replid = replid
                repl.master_repl_offset = offset
                if repl.backlog is None:
                    repl.create_backlog(server.config.repl_backlog_size)
                link.has_history = True
                link.stream_db = stream_db if 0 <= stream_db < len(server.dbs) else 0
                log.info("Before turning into a replica, using my own master parameters "
                         "to synthesize a cached master: I may be able to synchronize with "
                         "the new master with just a partial transfer.")
        link.start()

    server.loop.create_task(start())


def set_master(server: Any, host: str, port: int) -> bool:
    """REPLICAOF host port; False when already replicating exactly that master."""
    link = server.master_link
    if link is not None and link.host == host and link.port == port:
        return False
    has_history = True
    stream_db = 0
    if link is not None:
        stream_db = link.master_client.db_index if link.master_client else link.stream_db
        has_history = link.has_history
        link.stop()
    elif server.repl.backlog is None:
        server.repl.create_backlog(server.config.repl_backlog_size)
    for client in list(server.clients.values()):  # Redis's disconnectAllBlockedClients
        if client.blocked is not None:
            server.unblock_client(client, errors.UNBLOCKED_TO_REPLICA)
    new = MasterLink(server, host, port)
    # as Redis: a master turning replica PSYNCs with its own history (cached master made of
    # itself); a replica changing master keeps the cached one it has
    new.has_history = has_history
    new.stream_db = stream_db
    server.master_link = new
    _relay(server, True)
    server.config.replicaof = f"{host} {port}"
    new.start()
    return True


def unset_master(server: Any) -> None:
    """REPLICAOF NO ONE: keep the data, start a new history (the old one as replid2)."""
    link = server.master_link
    if link is None:
        return
    link.stop()
    server.master_link = None
    server.config.replicaof = ""
    server.repl.shift_replid()
    _relay(server, False)
    replicas = getattr(server, "replicas", None)
    drop = getattr(replicas, "disconnect_all", None)
    if drop is not None:  # they learn the new id by PSYNCing again
        drop()
    apply_flags(server)
    aof = server.aof
    if server.config.appendonly and not aof.enabled:
        aof.enable_at_runtime()
    log.info("MASTER MODE enabled")


def rdb_aux(server: Any) -> dict[bytes, bytes]:
    """The replication AUX fields of an RDB this server saves (Redis's rsi): a replica's
    master history, so that a restart can PSYNC."""
    link = server.master_link
    if link is None:
        return {}
    client = link.master_client
    db = client.db_index if client is not None else link.stream_db
    repl = server.repl
    return {b"repl-stream-db": b"%d" % db, b"repl-id": repl.replid.encode(),
            b"repl-offset": b"%d" % repl.master_repl_offset}


def _stop_link(server: Any) -> None:
    """At shutdown: no reconnecting while the process exits."""
    link = server.master_link
    if link is not None:
        link.stop()


def _cron(server: Any) -> None:
    link = server.master_link
    if link is not None:
        link.cron()
