"""Cluster failure detection and bus robustness: a killed master is flagged PFAIL then FAIL
by the majority of masters (pykv and redis-server alike), a restarted pykv node rejoins from
its nodes.conf, and malformed, truncated and oversize bus messages from a raw socket never
take a node down."""
from __future__ import annotations

import os
import random
import socket
import struct

import pytest
from support.cluster_nodes import (
    PykvNode,
    RedisNode,
    cluster_info,
    created,
    myid,
    wait_for,
)

from pykv.cluster import bus_codec as bc

NODE_TIMEOUT = 1000


def _flags_of(observer, node_id: str) -> set[str]:
    with observer.client(decode_responses=True) as c:
        for line in c.execute_command("CLUSTER", "NODES").splitlines():
            fields = line.split()
            if fields[0] == node_id:
                return set(fields[2].split(","))
    return set()


@pytest.fixture
def trio(pykv_cluster):
    """The testing plugin's session cluster (three pykv masters), ok before and after."""
    pykv_cluster.wait_ok()
    yield pykv_cluster
    pykv_cluster.wait_ok()


def _bus_port(node) -> int:
    return int(node.config["cluster-port"])


def test_garbage_on_the_bus_never_crashes_a_node(trio):
    target = trio.nodes[0]
    port = _bus_port(target)
    rnd = random.Random(1)
    valid_ping = bc.encode(bc.Message(bc.PING, os.urandom(20).hex().encode(), port=1, cport=2))
    payloads = [
        b"GET / HTTP/1.1\r\n\r\n",  # wrong signature: the link is closed
        b"RCmb" + struct.pack(">I", 100),  # below the header length
        b"RCmb" + struct.pack(">I", 0xFFFFFFF0),  # oversize
        valid_ping[:1000],  # truncated, then the peer goes away
        valid_ping[:12] + struct.pack(">H", bc.PING) + struct.pack(">H", 500)
        + valid_ping[16:],  # 500 gossip entries announced, none there
        valid_ping[:8] + struct.pack(">H", 9) + valid_ping[10:],  # unknown version
        valid_ping[:12] + struct.pack(">H", 4000) + valid_ping[14:],  # unknown type
        valid_ping[:12] + struct.pack(">H", bc.UPDATE) + valid_ping[14:],  # wrong length
        rnd.randbytes(5000),
    ]
    for _ in range(20):
        data = bytearray(valid_ping)
        for _ in range(10):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        payloads.append(bytes(data))
    for payload in payloads:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            try:
                sock.sendall(payload)
            except OSError:
                pass
    # a well-formed PING from a stranger still gets its PONG
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(valid_ping)
        head = sock.recv(8, socket.MSG_WAITALL)
        total = bc.frame_length(head)
        pong = bc.decode(head + sock.recv(total - 8, socket.MSG_WAITALL))
        assert pong.type == bc.PONG
    assert target.ping()
    trio.wait_ok(timeout=10)
    for node in trio.nodes:
        assert cluster_info(node)["cluster_known_nodes"] == "3"
    assert "Traceback" not in target.log()


def test_killed_master_fails_and_restarted_node_rejoins(trio):
    victim = trio.nodes[2]
    victim_id = myid(victim)
    victim.kill()
    observers = trio.nodes[:2]
    wait_for(lambda: all("fail" in _flags_of(n, victim_id) for n in observers), 30,
             "the killed master to be flagged FAIL by both other masters")
    for node in observers:
        assert cluster_info(node)["cluster_state"] == "fail"  # its slots are not served
    victim.start()  # same port and directory: it loads its nodes.conf
    assert myid(victim) == victim_id
    trio.wait_ok(timeout=30)
    for node in observers:
        assert "fail" not in _flags_of(node, victim_id)


@pytest.mark.slow  # the default suite kills a master of the pykv cluster
def test_pykv_flags_a_killed_redis_master_and_the_reverse():
    pykv, real = (lambda: PykvNode(NODE_TIMEOUT)), (lambda: RedisNode(NODE_TIMEOUT))
    with created(pykv, real, pykv, real) as nodes:
        redis_victim, pykv_victim = nodes[1], nodes[2]
        ids = myid(redis_victim), myid(pykv_victim)
        redis_victim.kill()
        wait_for(lambda: all("fail" in _flags_of(n, ids[0]) for n in (nodes[0], nodes[2],
                                                                        nodes[3])),
                 20, "the killed redis-server master to be FAIL everywhere")
        pykv_victim.kill()  # now 2 of 4 masters are down: no majority, it stays PFAIL
        wait_for(lambda: "fail?" in _flags_of(nodes[3], ids[1]), 20,
                 "redis-server to see the killed pykv master as PFAIL")
        assert cluster_info(nodes[0])["cluster_state"] == "fail"


def test_pykv_cluster_client_fixture(pykv_cluster_client):
    """The plugin's RedisCluster client: keys land on every node, MOVED is followed."""
    rc = pykv_cluster_client
    for i in range(100):
        rc.set(f"fixture{i}", i)
    assert [int(rc.get(f"fixture{i}")) for i in range(100)] == list(range(100))
    sizes = [n.dbsize() for n in rc.get_primaries() for n in [rc.get_redis_connection(n)]]
    assert len(sizes) == 3 and all(sizes) and sum(sizes) == 100
