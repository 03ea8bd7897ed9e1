"""Replication between pykv servers, and chains mixing pykv and redis-server.

The master side (tests/integration/test_repl_master.py) and the replica side
(test_repl_replica.py) are each tested against the real redis-server; here both ends are
pykv, and chains pass the stream through both kinds: pykv → Redis → pykv and
Redis → pykv → Redis, ending with identical datasets. The dataset, workload and comparison
helpers are the replica tests' own.
"""
from __future__ import annotations

import random
import time

import test_repl_replica as replica_tests
from test_repl_replica import (
    assert_same_dataset,
    client,
    fill_mixed,
    info,
    random_writes,
    reap_expired,
    wait_synced,
)

masters = replica_tests.masters  # the fixtures: redis-server and pykv servers on demand
replicas = replica_tests.replicas


def _pykv_master(replicas, **config):
    return replicas({"repl-diskless-sync-delay": 0, **config})


def test_pykv_replica_of_a_pykv_master(replicas):
    """Full sync (diskless, then disk), the stream of every family, partial resync after
    link kills on either end, WAIT."""
    for diskless in ("yes", "no"):
        master = _pykv_master(replicas, **{"repl-diskless-sync": diskless})
        m = client(master.port)
        fill_mixed(m, random.Random(3))
        replica = replicas({"replicaof": ["127.0.0.1", master.port]})
        r = client(replica.port)
        wait_synced(m, r)
        random_writes(master.port, 1500, seed=11)
        time.sleep(0.2)  # the workload's short TTLs pass
        reap_expired(m)
        wait_synced(m, r)
        assert_same_dataset(master.port, replica.port)
        stats = info(m, "stats")
        assert (stats["sync_full"], stats["sync_partial_ok"]) == (1, 0)

        assert r.client_kill_filter(_type="master") == 1
        m.set("after-replica-kill", 1)
        wait_synced(m, r)
        assert m.client_kill_filter(_type="replica") == 1
        m.set("after-master-kill", 2)
        wait_synced(m, r)
        stats = info(m, "stats")
        assert (stats["sync_full"], stats["sync_partial_ok"]) == (1, 2)
        assert r.mget("after-replica-kill", "after-master-kill") == [b"1", b"2"]
        assert m.wait(1, 5000) == 1
        assert info(m)["connected_slaves"] == 1


def test_chain_pykv_redis_pykv(masters, replicas):
    top = _pykv_master(replicas)
    t = client(top.port)
    fill_mixed(t, random.Random(5), dbs=(0, 2))
    middle = masters("--replicaof", "127.0.0.1", str(top.port))
    bottom = replicas({"replicaof": ["127.0.0.1", middle.port]})
    mid, bot = client(middle.port), client(bottom.port)
    wait_synced(t, mid)
    wait_synced(mid, bot)
    random_writes(top.port, 800, seed=7)
    time.sleep(0.2)
    reap_expired(t)
    wait_synced(t, mid)
    wait_synced(mid, bot)
    assert_same_dataset(top.port, middle.port)
    assert_same_dataset(middle.port, bottom.port)


def test_chain_redis_pykv_redis_with_a_promotion(masters, replicas):
    """The pykv link in the middle relays the stream byte for byte; promoting it
    (REPLICAOF NO ONE) gives its Redis sub-replica a partial resync with the new id."""
    top = masters()
    t = client(top.port)
    fill_mixed(t, random.Random(9), dbs=(0,))
    middle = replicas({"replicaof": ["127.0.0.1", top.port]})
    mid = client(middle.port)
    bottom = masters("--replicaof", "127.0.0.1", str(middle.port))
    bot = client(bottom.port)
    wait_synced(t, mid)
    wait_synced(mid, bot)
    random_writes(top.port, 600, seed=13)
    time.sleep(0.2)
    reap_expired(t)
    wait_synced(t, mid)
    wait_synced(mid, bot)
    assert info(bot)["master_repl_offset"] == info(t)["master_repl_offset"]
    assert_same_dataset(top.port, bottom.port)

    mid.replicaof("no", "one")
    mid.set("promoted", "yes")
    wait_synced(mid, bot)
    assert bot.get("promoted") == b"yes"
    assert info(mid, "stats")["sync_partial_ok"] >= 1
    assert info(bot)["master_replid"] == info(mid)["master_replid"]


def test_replicas_continue_after_a_master_restart(masters, replicas):
    """A pykv master restarted from the RDB SHUTDOWN saved keeps its history as replid2:
    its redis-server replica continues with a partial resync (as with a Redis master)."""
    master = _pykv_master(replicas, save="3600 1")
    m = client(master.port)
    fill_mixed(m, random.Random(21), dbs=(0, 4))
    real = masters("--replicaof", "127.0.0.1", str(master.port))
    r = client(real.port)
    wait_synced(m, r)
    old_id = info(m)["master_replid"]
    master.restart()  # SIGTERM: dump.rdb with repl-id/repl-offset
    m = client(master.port)
    assert info(m)["master_replid2"] == old_id
    m.set("after-restart", 1)
    wait_synced(m, r)
    stats = info(m, "stats")
    assert (stats["sync_full"], stats["sync_partial_ok"]) == (0, 1)
    assert r.get("after-restart") == b"1"
    assert_same_dataset(master.port, real.port)
