"""``redis-cli --cluster fix`` and ``--cluster import`` on a mixed cluster (redis-server 7.0
and pykv masters): fix repairs an uncovered slot and an open (migrating) slot on a pykv node;
import moves every key of a standalone server of either kind into the cluster, where MIGRATE
runs from the source to nodes of both kinds."""
from __future__ import annotations

import subprocess

import pytest
import redis
from redis.cluster import RedisCluster
from support.cluster_nodes import (
    REDIS_CLI,
    PykvNode,
    RedisNode,
    addr,
    cli,
    cluster_info,
    created,
    wait_for,
)
from support.servers import RealRedis

from pykv.cluster.keyslot import key_hash_slot
from pykv.testing import Server


@pytest.fixture(scope="module")
def mixed():
    """A redis-server, a pykv and a redis-server master."""
    with created(RedisNode, PykvNode, RedisNode) as nodes:
        yield nodes


def _slot_of(node) -> int:
    """A slot the node serves (the first of its first range in CLUSTER SLOTS)."""
    with node.client() as c:
        for start, _end, master, *_ in c.execute_command("CLUSTER", "SLOTS"):
            if int(master[1]) == node.port:
                return int(start)
    raise AssertionError("the node serves no slot")


def _covered(nodes) -> bool:
    """``--cluster check`` (from the first node) finds every slot covered, and every node
    has all 16384 assigned."""
    return "[OK] All 16384 slots covered." in cli_check_output(nodes[0]) and all(
        cluster_info(n)["cluster_slots_assigned"] == "16384" for n in nodes)


OPEN = "The following slots are open"


def test_fix_assigns_an_uncovered_slot(mixed):
    pykv = mixed[1]
    slot = _slot_of(pykv)
    for node in mixed:
        with node.client() as c:
            c.execute_command("CLUSTER", "DELSLOTS", slot)
    wait_for(lambda: not _covered(mixed), 10, "the slot to be uncovered")
    out = cli_fix(pykv)
    assert "Fixing slots coverage" in out
    wait_for(lambda: _covered(mixed), 20, "the slot covered again everywhere")


def test_fix_closes_an_open_slot_with_keys(mixed):
    pykv, target = mixed[1], mixed[0]
    slot = _slot_of(pykv)
    rc = RedisCluster(host="127.0.0.1", port=pykv.port)
    keys = [k for k in (f"open:{i}" for i in range(200000)) if key_hash_slot(k.encode()) == slot]
    for k in keys[:5]:
        rc.set(k, "v")
    with target.client(decode_responses=True) as t, pykv.client(decode_responses=True) as p:
        target_id = t.execute_command("CLUSTER", "MYID")
        pykv_id = p.execute_command("CLUSTER", "MYID")
        t.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", pykv_id)
        p.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    assert OPEN in cli_check_output(pykv)
    assert f"Moving slot {slot}" in cli_fix(pykv)
    wait_for(lambda: _covered(mixed) and OPEN not in cli_check_output(mixed[0]),
             20, "the slot closed")
    assert [rc.get(k) for k in keys[:5]] == [b"v"] * 5
    with target.client() as t:  # the keys moved with the slot
        assert t.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 5
    rc.close()


def cli_fix(node) -> str:
    """``--cluster fix``, answering its questions with yes (in 7.0 the coverage question
    reads stdin even with ``--cluster-yes``)."""
    proc = subprocess.run([REDIS_CLI, "--cluster", "fix", addr(node), "--cluster-yes"],
                          input="yes\n" * 4, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def cli_check_output(node) -> str:
    """``--cluster check`` output whatever its exit status (it fails on open slots)."""
    proc = subprocess.run([REDIS_CLI, "--cluster", "check", addr(node)], capture_output=True,
                          text=True, timeout=60)
    return proc.stdout + proc.stderr


def _standalone_pykv() -> Server:
    """A plain (non-cluster) pykv as the import source."""
    server = Server()
    server.start()
    return server


@pytest.mark.parametrize("source_kind", [_standalone_pykv, RealRedis],
                         ids=["from-pykv", "from-redis"])
def test_import_moves_every_key(mixed, source_kind):
    source = source_kind()
    prefix = source_kind.__name__
    try:
        with redis.Redis(port=source.port) as c:
            pipe = c.pipeline(transaction=False)
            for i in range(300):
                pipe.set(f"{prefix}:s{i}", i)
            pipe.rpush(f"{prefix}:list", *range(10))
            pipe.hset(f"{prefix}:hash", mapping={"a": 1, "b": 2})
            pipe.set(f"{prefix}:ttl", "v", ex=1000)
            pipe.execute()
        out = cli("import", addr(mixed[0]), "--cluster-from", addr(source), "--cluster-copy")
        assert "Migrating" in out
        rc = RedisCluster(host="127.0.0.1", port=mixed[1].port)
        assert [int(rc.get(f"{prefix}:s{i}")) for i in range(300)] == list(range(300))
        assert rc.lrange(f"{prefix}:list", 0, -1) == [str(i).encode() for i in range(10)]
        assert rc.hgetall(f"{prefix}:hash") == {b"a": b"1", b"b": b"2"}
        assert 0 < rc.ttl(f"{prefix}:ttl") <= 1000
        # keys landed on nodes of both kinds
        owners = {rc.get_node_from_key(f"{prefix}:s{i}").port for i in range(300)}
        assert {n.port for n in mixed} <= owners
        rc.close()
        with redis.Redis(port=source.port) as c:  # --cluster-copy leaves the source as it was
            assert c.dbsize() == 303
    finally:
        source.stop()
