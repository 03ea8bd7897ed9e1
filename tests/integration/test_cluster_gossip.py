"""What the gossip settles between pykv and redis-server nodes: distinct config epochs out
of a collision (Redis's clusterHandleConfigEpochCollision, both kinds agreeing), slots
taken back from a master that comes back with an old configuration (UPDATE); and a
cluster of pykv masters made by ``redis-cli --cluster create``."""
from __future__ import annotations

import pytest
from support.cluster_nodes import (
    PykvNode,
    RedisNode,
    addr,
    cli,
    cluster_info,
    created,
    myid,
    wait_for,
    wait_ok,
)


def _epochs(node) -> dict[str, int]:
    with node.client(decode_responses=True) as c:
        return {line.split()[0]: int(line.split()[6])
                for line in c.execute_command("CLUSTER", "NODES").splitlines()}


@pytest.mark.slow  # cluster formation takes seconds: the default suite forms two
def test_config_epoch_collision_is_resolved_across_kinds():
    nodes = []
    try:
        nodes = [PykvNode(), RedisNode(), PykvNode()]  # every config epoch is 0
        head = nodes[0]
        with head.client() as c:
            for other in nodes[1:]:
                c.execute_command("CLUSTER", "MEET", "127.0.0.1", other.port, other.cport)

        def settled() -> bool:
            views = [_epochs(n) for n in nodes]
            return all(len(v) == 3 for v in views) and views[0] == views[1] == views[2] \
                and len(set(views[0].values())) == 3

        wait_for(settled, 30, "three distinct config epochs every node agrees on")
        assert sorted(_epochs(head).values()) == [0, 1, 2]
    finally:
        for node in nodes:
            node.stop()


@pytest.mark.slow  # cluster formation takes seconds: the default suite forms two
def test_three_pykv_masters_by_redis_cli_create():
    with created(PykvNode, PykvNode, PykvNode) as nodes:
        for node in nodes:
            assert cluster_info(node)["cluster_size"] == "3"
        assert "[OK] All nodes agree about slots configuration." in cli("check", addr(nodes[2]))


def _owner_view(observer, slot: int) -> str:
    with observer.client() as c:
        for start, end, master, *_ in c.cluster("slots"):
            if start <= slot <= end:
                return master[2].decode()
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("stale_kind", ["pykv", "redis"])
def test_a_restarted_stale_master_yields_its_reassigned_slots(stale_kind):
    """While a master is down its slots go to another node with a newer epoch; back up, it
    still claims them with its old epoch until the others' UPDATE (or the new owner's
    PINGs) correct it, whichever kind it and they are."""
    with created(PykvNode if stale_kind == "pykv" else RedisNode, PykvNode,
                 RedisNode) as nodes:
        stale = nodes[0]
        stale_id, new_owner = myid(stale), nodes[2] if stale_kind == "pykv" else nodes[1]
        new_id = myid(new_owner)
        stale.kill()
        moved = list(range(0, 10))  # redis-cli gave the first node slots 0-5460
        for node in nodes[1:]:
            with node.client() as c:
                for slot in moved:
                    c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", new_id)
        with new_owner.client() as c:  # "BUMPED n", or "STILL n" when already the greatest
            epoch = int(c.execute_command("CLUSTER", "BUMPEPOCH").split()[1])
        assert epoch > 1  # the stale node, created first, has config epoch 1
        stale.start()
        wait_for(lambda: all(_owner_view(stale, s) == new_id for s in moved), 30,
                 "the restarted node to give up the reassigned slots")
        assert _owner_view(stale, 10) == stale_id
        wait_ok(nodes)


@pytest.mark.slow  # thousands of slot moves: ~30 s here
def test_rebalance_onto_an_added_empty_pykv_master():
    with created(PykvNode, RedisNode, PykvNode) as nodes:
        nodes.append(PykvNode())
        cli("add-node", addr(nodes[3]), addr(nodes[0]))
        wait_ok(nodes)
        cli("rebalance", addr(nodes[1]), "--cluster-use-empty-masters", "--cluster-yes",
            timeout=300)
        wait_ok(nodes)
        with nodes[3].client() as c:
            mine = sum(e - s + 1 for s, e, master, *_ in c.cluster("slots")
                       if master[1] == nodes[3].port)
        assert 4000 <= mine <= 4200  # a quarter of the slots
        assert "[OK] All nodes agree about slots configuration." in cli("check", addr(nodes[2]))
