"""Clients' memory totals and client eviction (``maxmemory-clients``), as Redis 7.0 does.

Redis keeps each client's last measured memory (``pykv.server.client_memory``) and their
sum over normal and pub/sub clients (INFO ``mem_clients_normal``; replicas and masters are
``mem_clients_slaves``). The cron measures every client again; while client eviction is on
an evictable client is also measured after each read batch, while a pipeline's replies
grow, and as its replies are handed to its transport. Evictable clients sit in memory buckets by the power of two of their
memory (32 KB and below in the first, 8 GB and above in the last). When the sum reaches
the limit (``maxmemory-clients``: bytes, or ``N%`` of ``maxmemory``), clients are closed
from the biggest bucket down, those in a bucket in the order they entered it, until the sum
is under the limit; each is logged (``Evicting client: <CLIENT LIST line>``) and counted in
INFO ``evicted_clients``. ``CLIENT NO-EVICT on`` exempts a client (it still counts in the
sum), as do being a master or a replica.

Redis checks before every command; pykv after each read batch and each write, and within
a pipeline each time the replies have grown by 16 KB since the last measure, so a client
pipelining big replies is evicted about when Redis would evict it.

The cron also keeps INFO's ``client_recent_max_input_buffer``/``output_buffer``: the
biggest query-buffer and reply-list figures seen in each of the last 8 seconds.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from pykv.server.client_info import client_info_line, client_type
from pykv.server.client_memory import ClientMemory, client_memory
from pykv.server.output_limits import drop_client

if TYPE_CHECKING:
    from pykv.server.server import Server

log = logging.getLogger("pykv")

BUCKET_MIN_LOG = 15  # CLIENT_MEM_USAGE_BUCKET_MIN_LOG: up to 32 KB in the first bucket
BUCKET_MAX_LOG = 33  # CLIENT_MEM_USAGE_BUCKET_MAX_LOG: 8 GB and more in the last
PEAK_SLOTS = 8  # CLIENTS_PEAK_MEM_USAGE_SLOTS: seconds the INFO peaks remember
CRON_MIN_ITERATIONS = 5  # CLIENTS_CRON_MIN_ITERATIONS


def bucket_of(mem: int) -> int:
    """Redis's getMemUsageBucket: the bucket index for ``mem`` bytes."""
    bits = min(max(mem.bit_length(), BUCKET_MIN_LOG), BUCKET_MAX_LOG)
    return bits - BUCKET_MIN_LOG


def counted(c: Any) -> bool:
    """Whether ``c`` is a normal or pub/sub client (what mem_clients_normal sums)."""
    return client_type(c) in ("normal", "pubsub")


def evictable(c: Any) -> bool:
    """Redis's clientEvictionAllowed (given that the limit is on)."""
    return not c.no_evict and c.conn is not None and counted(c)


class ClientsMemory:
    """Per-client memory, the normal clients' total, the INFO peaks and client eviction
    (``server.client_evictor``)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.usage: dict[int, int] = {}  # client id -> last measured memory (counted ones)
        self.total = 0
        self.slaves_total = 0  # replicas and masters (mem_clients_slaves)
        self.slave_usage: dict[int, int] = {}
        # evictable clients: id -> (bucket, order of entering it)
        self.buckets: dict[int, tuple[int, int]] = {}
        self._seq = 0
        self._next = 0  # where the cron's round over the clients continues
        self.peak_in = [0] * PEAK_SLOTS
        self.peak_out = [0] * PEAK_SLOTS
        self._peak_slot = -1
        self.evicting = False
        server.stat_evicted_clients = 0
        server.client_close_hooks.append(self.forget)
        server.add_cron(self.cron)
        for name in ("maxmemory-clients", "maxmemory"):
            server.config.on_change(name, self._on_config)
        self._on_config(None)

    # -- configuration -------------------------------------------------------------------
    def limit(self) -> int:
        """Redis's getClientEvictionLimit: bytes, or a percentage of maxmemory (0: off)."""
        cfg = self.server.config
        value = cfg.maxmemory_clients
        if value < 0:
            return cfg.maxmemory * -value // 100
        return value

    def _on_config(self, _value: Any) -> None:
        on = bool(self.limit())
        self.server.client_evict_on = on
        if not on:
            self.buckets.clear()
            return
        for c in list(self.server.clients.values()):
            self.update(c)
        loop = self.server.loop
        if loop is not None:  # after the reply to CONFIG SET, as Redis's beforeSleep
            loop.call_soon(self.evict)

    # -- measuring -----------------------------------------------------------------------
    def update(self, c: Any, measured: ClientMemory | None = None) -> int:
        """Measure ``c`` again (or take ``measured``); returns its memory."""
        mem = (measured or client_memory(c)).tot_mem
        cid = c.id
        if counted(c):
            self.total += mem - self.usage.get(cid, 0)
            self.usage[cid] = mem
            if cid in self.slave_usage:
                self.slaves_total -= self.slave_usage.pop(cid)
        else:
            self.slaves_total += mem - self.slave_usage.get(cid, 0)
            self.slave_usage[cid] = mem
            if cid in self.usage:
                self.total -= self.usage.pop(cid)
        if self.server.client_evict_on and evictable(c):
            bucket = bucket_of(mem)
            entry = self.buckets.get(cid)
            if entry is None or entry[0] != bucket:
                self._seq += 1
                self.buckets[cid] = (bucket, self._seq)
        else:
            self.buckets.pop(cid, None)
        return mem

    def forget(self, c: Any) -> None:
        cid = c.id
        self.total -= self.usage.pop(cid, 0)
        self.slaves_total -= self.slave_usage.pop(cid, 0)
        self.buckets.pop(cid, None)

    # -- eviction ------------------------------------------------------------------------
    def check(self, c: Any) -> bool:
        """After ``c``'s I/O (the dispatcher calls it while the limit is on): measure it and
        evict if the clients are over the limit; True if ``c`` itself was evicted."""
        if c.closed:
            return True
        self.update(c)
        if self.total >= self.limit():
            self.evict()
        return c.closed

    def evict(self) -> None:
        """Redis's evictClients: biggest buckets first, until under the limit."""
        limit = self.limit()
        if not limit or self.total < limit or self.evicting:
            return
        self.evicting = True
        try:
            clients = self.server.clients
            order = sorted(self.buckets.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
            for cid, _ in order:
                if self.total < limit:
                    return
                c = clients.get(cid)
                if c is None or c.closed or not evictable(c):  # (NO-EVICT since measured)
                    self.buckets.pop(cid, None)
                    continue
                self._evict_one(c)
            if self.total >= limit:
                log.warning("Over client maxmemory after evicting all evictable clients")
        finally:
            self.evicting = False

    def _evict_one(self, c: Any) -> None:
        log.info("Evicting client: %s", client_info_line(c))
        self.server.stat_evicted_clients += 1
        drop_client(self.server, c)

    # -- the cron ------------------------------------------------------------------------
    def cron(self) -> None:
        """Measure a round of clients (all of them each second at most, at least five per
        tick, as Redis's clientsCron), keep the INFO peaks, then evict if over."""
        clients = list(self.server.clients.values())
        if clients:
            hz = max(1, self.server.config.hz)
            count = min(len(clients), max(len(clients) // hz, CRON_MIN_ITERATIONS))
            start = self._next % len(clients)
            slot = int(time.time()) % PEAK_SLOTS
            if slot != self._peak_slot:
                self._peak_slot = slot
                zero = (slot + 1) % PEAK_SLOTS
                self.peak_in[zero] = self.peak_out[zero] = 0
            for i in range(count):
                c = clients[(start + i) % len(clients)]
                if c.closed:
                    continue
                mem = client_memory(c)
                if mem.input_usage > self.peak_in[slot]:
                    self.peak_in[slot] = mem.input_usage
                if mem.omem > self.peak_out[slot]:
                    self.peak_out[slot] = mem.omem
                self.update(c, mem)
            self._next = start + count
        if self.server.client_evict_on:
            self.evict()

    def recent_max_input(self) -> int:
        return max(self.peak_in)

    def recent_max_output(self) -> int:
        return max(self.peak_out)
