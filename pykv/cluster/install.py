"""Cluster mode at start-up: nodes.conf loaded (or a new node created and saved), the
per-slot key index on database 0, the bus opened next to the client listeners, and the
dispatcher's router installed as ``server.cluster``.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from pykv.cluster import bus_codec as bc
from pykv.cluster import nodes_conf
from pykv.cluster.bus import ClusterBus
from pykv.cluster.bus_tls import CLIENT_SETTINGS
from pykv.cluster.router import Router
from pykv.cluster.slot_index import SlotIndex
from pykv.cluster.state import ClusterNode, ClusterState, random_name
from pykv.config.runtime import TLS_CONTEXT_SETTINGS
from pykv.replication import role

log = logging.getLogger("pykv")


def load_state(path: str) -> ClusterState:
    """nodes.conf's state, or a new node (``myself,master``) saved at once, as Redis does."""
    state = nodes_conf.load(path)
    if state is not None:
        log.info("Node configuration loaded, I'm %s", state.myself.name)
        return state
    myself = ClusterNode(random_name(), bc.F_MYSELF | bc.F_MASTER)
    log.info("No cluster configuration found, I'm %s", myself.name)
    state = ClusterState(myself)
    nodes_conf.save(state, path)
    return state


def install(server: Any) -> Router | None:
    """Cluster mode for ``server`` when ``cluster-enabled yes``, else None."""
    cfg = server.config
    if not cfg.cluster_enabled:
        return None
    path = os.path.join(cfg.dir, cfg.cluster_config_file) \
        if not os.path.isabs(cfg.cluster_config_file) else cfg.cluster_config_file
    nodes_conf.lock(path, cfg.cluster_config_file)  # NodesConfError: a second node on it
    state = load_state(path)
    bus = ClusterBus(server, state, path)
    db0 = server.dbs[0]
    db0.slot_index = SlotIndex()
    bus.count_keys_in_slot = db0.slot_index.count
    bus.del_keys_in_slot = lambda slot: _del_keys_in_slot(server, slot)
    bus.deliver_publish = lambda channel, message, shard: (
        server.pubsub.spublish if shard else server.pubsub.publish)(channel, message)
    _plug_replication(server, bus)
    bus.refresh_myself()
    for name in (*TLS_CONTEXT_SETTINGS, *CLIENT_SETTINGS, "tls-cluster"):
        cfg.on_change(name, lambda _value: _tls_changed(bus))
    router = Router(bus, db0)
    server.startup_hooks.append(lambda: _start(bus))
    server.shutdown_hooks.append(bus.save_config)
    return router


def _start(bus: ClusterBus) -> None:
    tls = bus.tls.listener_context()  # (tls-cluster yes) a ValueError stops the start-up
    socks = bus.bind()  # a ValueError here stops the start-up with Redis's message
    loop = asyncio.get_running_loop()
    task = loop.create_task(bus.start(socks, tls))

    def done(t: asyncio.Task) -> None:
        if not t.cancelled() and t.exception() is not None:
            log.warning("Could not open the cluster bus port: %s", t.exception())

    task.add_done_callback(done)


def _tls_changed(bus: ClusterBus) -> None:
    """CONFIG SET tls-cluster or a tls-* setting: new bus links (both directions) use the
    new settings, plain or TLS; the links already open stay as they are, as in Redis."""
    bus.tls.forget()
    if bus.listener is None:
        return
    try:
        ctx = bus.tls.listener_context()
    except ValueError:  # logged; CONFIG SET of a tls-* setting refuses it too
        return
    asyncio.get_running_loop().create_task(bus.listener.reload(ctx))


def _del_keys_in_slot(server: Any, slot: int) -> int:
    """delKeysInSlot: the keys of a slot this node lost, deleted and propagated."""
    db0 = server.dbs[0]
    keys = db0.slot_index.get_keys(slot, 1 << 62)
    for key in keys:
        if db0.delete(key) and server.propagate is not None:
            server.propagate(0, [b"DEL", key])
    return len(keys)


def _plug_replication(server: Any, bus: ClusterBus) -> None:
    """The bus reaches replication through these: REPLICAOF ip port for a replica (Redis's
    replicationSetMaster), REPLICAOF NO ONE when elected, the offset and data age an
    election ranks by, and the write pause of a manual failover."""

    def replicate(host: str, port: int) -> None:
        role.set_master(server, host, port)

    def data_age() -> int:
        link = server.master_link
        if link is None:
            return 0
        now = time.time()
        if link.master_client is not None:
            return int((now - link.last_io) * 1000)
        # down since it went down; never up: as Redis (repl_down_since 0), too old to elect
        return int((now - link.down_since) * 1000)

    def pause(on: bool, ms: int = 0) -> None:
        server.pause_for_failover(on)

    bus.replicate = replicate
    bus.stop_replicating = lambda: role.unset_master(server)
    bus.is_replicating = lambda: server.master_link is not None
    bus.replica_offset = lambda: server.repl.master_repl_offset
    bus.master_data_age = data_age
    bus.pause_writes = pause
