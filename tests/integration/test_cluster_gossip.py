"""What the gossip settles between pykv and redis-server nodes: distinct config epochs out
of a collision (Redis's clusterHandleConfigEpochCollision, both kinds agreeing)."""
from __future__ import annotations

from support.cluster_nodes import PykvNode, RedisNode, wait_for


def _epochs(node) -> dict[str, int]:
    with node.client(decode_responses=True) as c:
        return {line.split()[0]: int(line.split()[6])
                for line in c.execute_command("CLUSTER", "NODES").splitlines()}


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
