"""Client memory figures, eviction buckets and output-limit classes, on fake clients."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from pykv.config import Config
from pykv.protocol import RequestParser
from pykv.server.client_evict import ClientsMemory, bucket_of, counted, evictable
from pykv.server.client_memory import (
    CLIENT_STRUCT,
    EMPTY_SDS,
    REPLY_BLOCK,
    client_memory,
    output_list,
    query_buffer_alloc,
)
from pykv.server.output_limits import OutputLimits, client_class


class FakeConn:
    type_name = "tcp"

    def __init__(self, pending: int = 0) -> None:
        self.pending = pending

    def fd(self) -> int:
        return 7

    def pending_write_bytes(self) -> int:
        return self.pending


def fake_client(**kw) -> SimpleNamespace:
    now = time.time()
    c = SimpleNamespace(
        parser=RequestParser(), out=bytearray(), conn=FakeConn(), buf_size=16384,
        net_in=0, last_interaction=now, multi=None, watched=set(), channels=set(),
        patterns=set(), shard_channels=set(), blocked=None, monitor=False, no_evict=False,
        id=1, obuf_soft_since=0.0, last_cmd=None, tracking=None, name=b"", created=now,
        addr="127.0.0.1:1", laddr="127.0.0.1:2", db_index=0, user="default", resp=2,
        buf_peak=0, closing=False, closed=False, paused=False, watch_dirty=False,
        no_touch=False, server=SimpleNamespace(pause_active=False))
    for k, v in kw.items():
        setattr(c, k, v)
    c.subscriptions = len(c.channels) + len(c.patterns) + len(c.shard_channels)
    return c


def test_query_buffer_follows_redis_reads():
    now = time.time()
    fresh = fake_client()
    assert query_buffer_alloc(fresh, 0, -1, now) == (EMPTY_SDS, 4)
    used = fake_client(net_in=10)
    assert query_buffer_alloc(used, 0, -1, now) == (20480, 20474)
    assert query_buffer_alloc(used, 26, -1, now) == (20480, 20448)
    idle = fake_client(net_in=10, last_interaction=now - 3)
    assert query_buffer_alloc(idle, 0, -1, now) == (EMPTY_SDS, 0)
    total, free = query_buffer_alloc(used, 5000, 300_000, now)  # a big bulk announced
    assert total >= 300_002 and free == total - 10 - 5000
    total, _ = query_buffer_alloc(used, 100_000, -1, now)  # greedy growth past 16 KB
    assert total >= 2 * (100_000 + 16384)


def test_parser_reports_a_partial_command():
    p = RequestParser()
    p.feed(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nxxxx")
    assert p.get_command() is None
    assert p.mem_state() == (len(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nxxxx"),
                             100000, 2, 4)


def test_output_list_blocks():
    c = fake_client()
    assert output_list(c) == (0, 0, 0)
    c.out = bytearray(100)
    assert output_list(c) == (100, 0, 0)  # fits the reply buffer
    c.out = bytearray(16384 + 1)
    assert output_list(c) == (16384, 1, REPLY_BLOCK + 40)
    c.out, c.conn = bytearray(), FakeConn(pending=3 * REPLY_BLOCK)
    assert output_list(c) == (0, 3, 3 * (REPLY_BLOCK + 40))


def test_total_adds_multi_watch_and_pubsub():
    base = client_memory(fake_client(net_in=1)).tot_mem
    assert base == CLIENT_STRUCT + 20480 + 16384
    c = fake_client(net_in=1, multi=[(None, [b"SET", b"a", b"b"])] * 3)
    assert client_memory(c).multi_mem == 3 * (5 + 24)
    assert client_memory(c).tot_mem == base + 3 * 29 + 4 * 24  # queue array grew to 4
    c = fake_client(net_in=1, watched={(0, b"a"), (0, b"b")}, channels={b"x", b"y"},
                    patterns={b"p*"})
    assert client_memory(c).tot_mem == base + 2 * 56 + (2 * 24 + 4 * 8) + 24
    running = client_memory(fake_client(net_in=1), [b"CLIENT", b"LIST"])
    assert (running.argv_mem, running.tot_mem) == (10, base + 10 + 16)


@pytest.mark.parametrize("mem, bucket", [(0, 0), (1000, 0), (32767, 0), (32768, 1),
                                         (1 << 20, 6), (1 << 40, 18)])
def test_buckets(mem, bucket):
    assert bucket_of(mem) == bucket


def test_who_may_be_evicted():
    assert evictable(fake_client())
    assert not evictable(fake_client(no_evict=True))
    assert evictable(fake_client(channels={b"x"}))  # pub/sub clients too
    replica, master = fake_client(is_replica=True), fake_client(is_master=True)
    assert not counted(replica) and not evictable(replica)
    assert not counted(master) and not evictable(master)
    assert evictable(fake_client(is_replica=True, monitor=True))  # MONITOR is normal


def test_output_limit_class_comes_from_the_client_type():
    assert client_class(fake_client()) == "normal"
    assert client_class(fake_client(channels={b"x"})) == "pubsub"
    assert client_class(fake_client(is_replica=True)) == "replica"
    assert client_class(fake_client(is_replica=True, monitor=True)) == "normal"
    assert client_class(fake_client(is_master=True)) == "normal"  # as Redis limits a master


def test_replica_clients_get_the_replica_limit():
    config = Config()
    config.set("client-output-buffer-limit", ["slave", "1mb", "0", "0"])
    assert config.client_output_buffer_limit["replica"] == (1 << 20, 0, 0)
    server = SimpleNamespace(config=config, obuf_limits_on=False)
    limits = OutputLimits(server)
    assert server.obuf_limits_on
    big = 2 << 20
    replica = fake_client(is_replica=True, conn=FakeConn(pending=big))
    normal = fake_client(conn=FakeConn(pending=big))
    assert limits.over_limit(replica)
    assert not limits.over_limit(normal)  # the normal class has no limit by default


def test_min_limit_is_the_smallest_limit_of_any_class():
    config = Config()
    server = SimpleNamespace(config=config, obuf_limits_on=False)
    limits = OutputLimits(server)
    assert limits.min_limit == 8 << 20  # Redis's defaults: pubsub 32mb 8mb, replica 256mb 64mb
    config.set("client-output-buffer-limit", ["normal", "0", "3mb", "0"])
    limits._on_config(None)
    assert limits.min_limit == 3 << 20
    config.set("client-output-buffer-limit",
               ["normal", "0", "0", "0", "pubsub", "0", "0", "0", "slave", "0", "0", "0"])
    limits._on_config(None)
    assert (server.obuf_limits_on, limits.min_limit) == (False, 0)


class FakeServer(SimpleNamespace):
    def remove_client(self, c) -> None:
        self.clients.pop(c.id, None)
        for hook in self.client_close_hooks:
            hook(c)


def _evicting_server(limit: str) -> tuple[FakeServer, ClientsMemory]:
    config = Config()
    config.set("maxmemory-clients", limit)
    server = FakeServer(config=config, clients={}, client_close_hooks=[], loop=None,
                        client_evict_on=False, add_cron=lambda hook: None)
    return server, ClientsMemory(server)


class AbortConn(FakeConn):
    aborted = False

    def abort(self) -> None:
        self.aborted = True


def _add(server: FakeServer, mem: ClientsMemory, cid: int, pending: int,
         no_evict: bool = False) -> None:
    c = fake_client(id=cid, net_in=1, conn=AbortConn(pending=pending), no_evict=no_evict,
                    closing=False, closed=False)
    server.clients[cid] = c
    mem.update(c)


def test_eviction_takes_the_biggest_first():
    server, mem = _evicting_server("300000")
    assert server.client_evict_on and mem.limit() == 300_000
    for cid, pending in {1: 10_000, 2: 150_000, 3: 60_000, 4: 20_000}.items():
        _add(server, mem, cid, pending)
    assert mem.total == sum(client_memory(c).tot_mem for c in server.clients.values())
    mem.evict()
    assert sorted(server.clients) == [1, 3, 4]  # the biggest alone brought it under
    assert server.stat_evicted_clients == 1 and server.client_close_hooks
    assert mem.total == sum(client_memory(c).tot_mem for c in server.clients.values())


def test_eviction_spares_no_evict_clients():
    server, mem = _evicting_server("200kb")
    for cid, pending in {1: 10_000, 2: 150_000, 3: 60_000}.items():
        _add(server, mem, cid, pending)
    _add(server, mem, 4, 300_000, no_evict=True)  # over the limit by itself
    mem.evict()
    assert sorted(server.clients) == [4]
    assert server.stat_evicted_clients == 3


def test_percent_limit_follows_maxmemory():
    server, mem = _evicting_server("10%")
    assert mem.limit() == 0 and not server.client_evict_on  # no maxmemory: off
    server.config.set("maxmemory", "10mb")
    mem._on_config(None)
    assert mem.limit() == (10 << 20) // 10 and server.client_evict_on


def test_turning_limits_on_reads_every_transport_backlog():
    """While nothing is limited write_out saves no backlog (conn_pending): the limits'
    fast test must not start from a stale one."""
    config = Config()
    config.set("client-output-buffer-limit",
               ["normal", "0", "0", "0", "pubsub", "0", "0", "0", "slave", "0", "0", "0"])
    client = fake_client(conn=FakeConn(pending=5 << 20))
    client.conn_pending = 0
    server = SimpleNamespace(config=config, obuf_limits_on=False, clients={1: client})
    OutputLimits(server)
    assert not server.obuf_limits_on and client.conn_pending == 0
    config.set("client-output-buffer-limit", ["pubsub", "1mb", "0", "0"])
    assert server.obuf_limits_on and client.conn_pending == 5 << 20
