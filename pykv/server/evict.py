"""maxmemory: the memory figure it is checked against, and eviction (Redis's evict.c).

``used_memory(server)`` is pykv's maintained estimate (``pykv.storage.memory``: the keys'
running totals, the databases' tables, the clients' memory as Redis counts it, the AOF buffer
and a fixed base). ``Evictor.perform()`` is Redis's performEvictions, run by the dispatcher
before each command while ``maxmemory`` is set: under the limit it does nothing; over it,
``noeviction`` reports failure (the dispatcher then refuses ``denyoom`` commands with -OOM),
any other policy deletes keys until the estimate is under the limit, within the time
``maxmemory-eviction-tenacity`` allows (the rest continues from the event loop, as Redis's
eviction timer proc).

The LRU/LFU/TTL policies are Redis's approximation: each round samples
``maxmemory-samples`` keys per database into a pool of the 16 best candidates kept across
rounds, and evicts the best one still present. All-keys policies sample the key table
directly (an O(1) random pick); volatile ones sample a per-database snapshot of the keys
with a TTL, rebuilt once the database has seen as many writes as the snapshot holds keys
(a Python dict offers no O(1) random pick; keys newer than the snapshot are recent, the
last an LRU policy would pick). An evicted key fires the ``evicted`` keyspace
event, counts in ``evicted_keys`` and reaches the AOF as a DEL (UNLINK under
``lazyfree-lazy-eviction``).
"""
from __future__ import annotations

import random
import time
from typing import Any

from pykv.server.notify import notify
from pykv.storage import memory
from pykv.storage.keyspace import lfu_counter

POOL_SIZE = 16


def client_buffers(server: Any) -> int:
    """Every client's memory as last measured (pykv.server.client_evict: Redis's
    mem_clients_normal plus mem_clients_slaves)."""
    clients = getattr(server, "client_evictor", None)
    return clients.total + clients.slaves_total if clients is not None else 0


def aof_buffer(server: Any) -> int:
    aof = getattr(server, "aof", None)
    return len(aof.buf) if aof is not None and aof.enabled else 0


def tables(server: Any) -> int:
    """The databases' hash-table overhead (entries and bucket arrays, main and expires)."""
    total = 0
    for db in server.dbs:
        if db.data:
            main, expires = memory.db_overhead(db)
            total += main + expires
    return total


def used_memory(server: Any) -> int:
    """Redis's used_memory, as pykv estimates it."""
    return (memory.BASE + memory.dataset(server.dbs) + tables(server) + client_buffers(server)
            + aof_buffer(server))


def time_limit_us(tenacity: int) -> float:
    """Redis's evictionTimeLimitUs: how long one performEvictions may run."""
    if tenacity <= 10:
        return 50.0 * tenacity
    if tenacity < 100:
        return 500.0 * 1.15 ** (tenacity - 10)
    return float("inf")


class Evictor:
    """The maxmemory policies over one server's databases."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.pool: list[tuple[float, int, bytes]] = []   # (score, db id, key), best last
        self.next_db = 0           # where the random policies look next (Redis's next_db)
        self.snapshots: dict[tuple[int, bool], tuple[int, list[bytes]]] = {}
        self.continuing = False    # a continuation is scheduled on the loop

    # -- the check --------------------------------------------------------------------
    def used_for_limit(self) -> int:
        """The figure compared with maxmemory (the AOF buffer is not counted, as Redis)."""
        server = self.server
        return used_memory(server) - aof_buffer(server)

    def perform(self) -> bool:
        """performEvictions; True when memory is over the limit and nothing could be freed
        (EVICT_FAIL: denyoom commands are refused)."""
        server = self.server
        limit = server.config.maxmemory
        if not limit or server.loading or server.busy_script is not None:
            return False
        if getattr(server, "master_link", None) is not None \
                and server.config.replica_ignore_maxmemory:
            return False  # a replica leaves evictions to its master (isSafeToPerformEvictions)
        used = self.used_for_limit()
        if used <= limit:
            return False
        policy = str(server.config.maxmemory_policy)
        if policy == "noeviction":
            return True
        deadline = time.perf_counter() + time_limit_us(
            server.config.maxmemory_eviction_tenacity) / 1e6
        while used > limit:
            if not self.evict_one(policy):
                return True
            used = self.used_for_limit()
            if used > limit and time.perf_counter() > deadline:
                self.continue_later()
                return False
        return False

    def continue_later(self) -> None:
        loop = self.server.loop
        if loop is None or self.continuing:
            return
        self.continuing = True

        def run() -> None:
            self.continuing = False
            self.perform()

        loop.call_soon(run)

    # -- one eviction ------------------------------------------------------------------
    def evict_one(self, policy: str) -> bool:
        """Delete the best candidate under ``policy``; False when there is none."""
        volatile = policy.startswith("volatile")
        if policy.endswith("random"):
            found = self._random_pick(volatile)
        else:
            found = self._pool_pick(policy, volatile)
        if found is None:
            return False
        db, key = found
        self.delete(db, key)
        return True

    def delete(self, db: Any, key: bytes) -> None:
        server = self.server
        db.pop(key)
        memory.refresh(db)
        server.stat_evicted_keys = getattr(server, "stat_evicted_keys", 0) + 1
        notify(server, "e", b"evicted", key, db.id)
        if server.propagate is not None:
            lazy = server.config.lazyfree_lazy_eviction
            server.propagate(db.id, [b"UNLINK" if lazy else b"DEL", key])
        server.dirty += 1

    def _sample(self, db: Any, volatile: bool, count: int) -> list[bytes]:
        """Up to ``count`` random keys of ``db`` (of those with a TTL if ``volatile``)."""
        source = db.expires if volatile else db.data
        if not source:
            return []
        if not volatile:  # the key table samples in O(1)
            return [source.random_key() for _ in range(count)]
        slot = (db.id, volatile)
        snap = self.snapshots.get(slot)
        fresh = False
        if snap is None or db.version - snap[0] > len(snap[1]) or not snap[1]:
            snap = (db.version, list(source))
            self.snapshots[slot] = snap
            fresh = True
        keys = snap[1]
        out = []
        for _ in range(count * 2):
            key = keys[random.randrange(len(keys))]
            if key in source:
                out.append(key)
                if len(out) == count:
                    break
        if not out and not fresh:  # the snapshot has gone stale: take a new one
            self.snapshots.pop(slot)
            return self._sample(db, volatile, count)
        return out

    def _score(self, policy: str, db: Any, key: bytes) -> float:
        """Redis's "idle": the bigger, the better a candidate."""
        clock = db.clock
        if policy.endswith("ttl"):
            return -float(db.expires.get(key, 0))
        packed = db.data.get_access(key, clock.sec)
        if policy.endswith("lfu"):
            now_min = (clock.sec // 60) & 0xFFFF
            return 255 - lfu_counter(packed, now_min, db.lfu_decay_time)
        return float(clock.sec - packed) if not db.lfu else 0.0

    def _pool_pick(self, policy: str, volatile: bool) -> tuple[Any, bytes] | None:
        dbs = self.server.dbs
        samples = self.server.config.maxmemory_samples
        while True:
            pool = self.pool
            seen = {(dbid, key) for _, dbid, key in pool}
            any_keys = False
            for db in dbs:
                source = db.expires if volatile else db.data
                if not source:
                    continue
                any_keys = True
                for key in self._sample(db, volatile, samples):
                    if (db.id, key) not in seen:
                        seen.add((db.id, key))
                        pool.append((self._score(policy, db, key), db.id, key))
            if not any_keys or not pool:
                return None
            pool.sort(key=lambda entry: entry[0])
            del pool[:-POOL_SIZE]
            while pool:
                _, dbid, key = pool.pop()
                db = dbs[dbid]
                if key in (db.expires if volatile else db.data):
                    return db, key

    def _random_pick(self, volatile: bool) -> tuple[Any, bytes] | None:
        dbs = self.server.dbs
        for _ in range(len(dbs)):
            db = dbs[self.next_db % len(dbs)]
            self.next_db += 1
            keys = self._sample(db, volatile, 1)
            if keys:
                return db, keys[0]
        return None
