"""Cluster replicas and failover: pykv replicas made by CLUSTER REPLICATE (pykv.testing's
Cluster(replicas=1)) and by ``redis-cli --cluster create --cluster-replicas 1`` /
``add-node --cluster-slave``, next to redis-server 7.0 nodes both ways; a killed master's
replica of the other kind is elected and the cluster returns to ok; the old master rejoins
as a replica; CLUSTER FAILOVER (default, FORCE, TAKEOVER); CLUSTER REPLICATE/FAILOVER
errors against redis-server's. cluster-node-timeout is 1000 ms to keep them short."""
from __future__ import annotations

import time

import pytest
import redis
from support.cluster_nodes import (
    PykvNode,
    RedisNode,
    addr,
    cli,
    cluster_info,
    myid,
    wait_for,
    wait_ok,
)

from pykv.testing.cluster import Cluster

NODE_TIMEOUT = 1000
FAILOVER_WAIT = 30  # seconds: a failover takes ~2-3 s at this node timeout


def _nodes(node) -> list[list[str]]:
    with node.client(decode_responses=True) as c:
        return [line.split() for line in c.execute_command("CLUSTER", "NODES").splitlines()]


def _myself(node) -> list[str]:
    return next(f for f in _nodes(node) if "myself" in f[2])


def _role(node) -> str:
    return "master" if "master" in _myself(node)[2] else "slave"


def _master_of(node) -> str:
    return _myself(node)[3]


def _synced(master, replica) -> bool:
    with master.client(decode_responses=True) as m, replica.client(decode_responses=True) as r:
        info = r.info("replication")
        return info.get("master_link_status") == "up" and \
            info.get("slave_repl_offset") == m.info("replication")["master_repl_offset"]


def _everyone_agrees(nodes) -> bool:
    """Every live node: state ok and the same roles for everyone (no fail flags)."""
    views = []
    for node in nodes:
        if cluster_info(node).get("cluster_state") != "ok":
            return False
        view = sorted((f[0], "master" if "master" in f[2] else "slave", f[3])
                      for f in _nodes(node) if "fail" not in f[2])
        views.append(view)
    return all(v == views[0] for v in views) and len(views[0]) == len(nodes)


def _topology(node) -> str:
    """CLUSTER SLOTS and SHARDS in a node-independent order, offsets left out."""
    with node.client(decode_responses=True) as c:
        slots = sorted(c.execute_command("CLUSTER", "SLOTS"))
        shards = []
        for shard in c.execute_command("CLUSTER", "SHARDS"):
            members = [{k: v for k, v in m.items() if k != "replication-offset"}
                       for m in shard["nodes"]]
            shards.append((shard["slots"], sorted(members, key=lambda m: m["id"])))
    return repr((slots, sorted(shards)))


def _kill_and_wait_promotion(victim, replica, survivors) -> float:
    start = time.monotonic()
    victim.kill()
    wait_for(lambda: _role(replica) == "master" and
             all(cluster_info(n).get("cluster_state") == "ok" for n in survivors),
             FAILOVER_WAIT, "the replica's promotion and cluster_state:ok")
    return time.monotonic() - start


# -- all pykv ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def six():
    with Cluster(3, replicas=1, node_timeout=NODE_TIMEOUT) as cluster:
        yield cluster


def test_replicas_show_in_nodes_slots_shards_and_replicas(six):
    masters, replicas = six.master_nodes, six.replica_nodes
    ids = [myid(n) for n in masters]
    rc = six.client()
    for i in range(30):  # a replica that replicated nothing yet is left out of SLOTS
        rc.set(f"s{i}", i)
    rc.close()
    for master, replica in zip(masters, replicas, strict=True):
        wait_for(lambda m=master, r=replica: _synced(m, r), 10, "the replicas' offsets")
    for i, rep in enumerate(replicas):
        assert _role(rep) == "slave" and _master_of(rep) == ids[i]
    for node in six.nodes:  # everyone sees the same roles
        seen = {f[0]: f[3] for f in _nodes(node)}
        for i, rep in enumerate(replicas):
            assert seen[myid(rep)] == ids[i]
    with masters[0].client(decode_responses=True) as c:
        listed = c.execute_command("CLUSTER", "REPLICAS", ids[0])
        assert [line.split()[0] for line in listed] == [myid(replicas[0])]
        assert c.execute_command("CLUSTER", "SLAVES", ids[0]) == listed
        # the offsets other nodes know come with the replicas' next PINGs
        wait_for(lambda: all(len(e) == 4 for e in c.execute_command("CLUSTER", "SLOTS")), 10,
                 "the replicas in CLUSTER SLOTS")
        slots = c.execute_command("CLUSTER", "SLOTS")
        for entry in slots:
            assert len(entry) == 4  # range, master, its replica
            assert entry[3][1] == replicas[ids.index(entry[2][2])].port
        shards = c.execute_command("CLUSTER", "SHARDS")
        roles = sorted(tuple(sorted(n["role"] for n in s["nodes"])) for s in shards)
        assert roles == [("master", "replica")] * 3
        with pytest.raises(redis.ResponseError, match="not a master"):
            c.execute_command("CLUSTER", "REPLICAS", myid(replicas[0]))


def test_readonly_reads_on_a_replica_and_moved_for_writes(six):
    rc = six.client()
    rc.set("{r}k", "v")
    slot = rc.keyslot("{r}k")
    owner = next(i for i, n in enumerate(six.master_nodes)
                 if any(int(r.split("-")[0]) <= slot <= int(r.split("-")[-1])
                        for r in _myself(n)[8:]))
    master, replica = six.master_nodes[owner], six.replica_nodes[owner]
    wait_for(lambda: _synced(master, replica), 10, "the replica's offset")
    with replica.client() as c:
        with pytest.raises(redis.exceptions.MovedError, match=f"^{slot} 127.0.0.1:{master.port}$"):
            c.get("{r}k")
        c.execute_command("READONLY")
        assert c.get("{r}k") == b"v"
        with pytest.raises(redis.exceptions.MovedError, match=f"^{slot} 127.0.0.1:{master.port}$"):
            c.set("{r}k", "w")
        c.execute_command("READWRITE")
        with pytest.raises(redis.exceptions.MovedError):
            c.get("{r}k")
    rc.close()


def test_manual_failover_swaps_roles_without_losing_writes(six):
    master, replica = six.master_nodes[1], six.replica_nodes[1]
    rc = six.client()
    for i in range(50):
        rc.set(f"mf{i}", i)
    with replica.client() as c:
        assert c.execute_command("CLUSTER", "FAILOVER") == b"OK"
    wait_for(lambda: _role(replica) == "master" and _role(master) == "slave",
             FAILOVER_WAIT, "the manual failover")
    assert _master_of(master) == myid(replica)
    wait_for(lambda: _everyone_agrees(six.nodes), FAILOVER_WAIT, "every node's agreement")
    for i in range(50):
        assert rc.get(f"mf{i}") == str(i).encode()
    with master.client() as c:  # and back, forced
        assert c.execute_command("CLUSTER", "FAILOVER", "FORCE") == b"OK"
    wait_for(lambda: _role(master) == "master" and _role(replica) == "slave",
             FAILOVER_WAIT, "the forced failover")
    wait_for(lambda: _everyone_agrees(six.nodes), FAILOVER_WAIT, "every node's agreement")
    rc.close()


def test_killed_master_is_replaced_by_its_replica_and_rejoins_as_replica(six):
    master, replica = six.master_nodes[2], six.replica_nodes[2]
    rc = six.client()
    keys = [f"k{i}" for i in range(300)]
    for key in keys:
        rc.set(key, key)
    wait_for(lambda: _synced(master, replica), 10, "the replica's offset")
    survivors = [n for n in six.nodes if n is not master]
    _kill_and_wait_promotion(master, replica, survivors)
    assert all(rc.get(key) == key.encode() for key in keys)  # nothing acknowledged lost
    with replica.client() as c:  # the keys-per-slot index came along with the data
        mine = [k for k in keys if c.execute_command("CLUSTER", "KEYSLOT", k) in
                range(*_first_range(replica))]
        assert mine
        for key in mine[:20]:
            slot = c.execute_command("CLUSTER", "KEYSLOT", key)
            assert key.encode() in c.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000)
    master.start()  # same directory: its nodes.conf says master of slots it no longer has
    wait_for(lambda: _role(master) == "slave" and _master_of(master) == myid(replica),
             FAILOVER_WAIT, "the old master following its replacement")
    wait_for(lambda: _everyone_agrees(six.nodes), FAILOVER_WAIT, "every node's agreement")
    wait_for(lambda: _synced(replica, master), 20, "the old master's resync")
    rc.set(mine[0], "changed")
    master.kill()  # a replica restarted from its nodes.conf replicates its master again
    master.start()
    wait_for(lambda: _synced(replica, master), 20, "the restarted replica's resync")
    assert _role(master) == "slave" and _master_of(master) == myid(replica)
    with master.client() as c:
        c.execute_command("READONLY")
        assert c.get(mine[0]) == b"changed"
    rc.close()


def _first_range(node) -> tuple[int, int]:
    first, _, last = _myself(node)[8].partition("-")
    return int(first), int(last or first) + 1


# -- mixed ------------------------------------------------------------------------------------
def _created_with_replicas(*factories, replicas: int = 1):
    nodes = [f() for f in factories]
    try:
        cli("create", *map(addr, nodes), "--cluster-replicas", str(replicas), "--cluster-yes")
        wait_ok(nodes)
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return nodes


def _redis():
    return RedisNode(node_timeout=NODE_TIMEOUT, extra=["--repl-diskless-sync-delay", "0"])


def _pykv():
    return PykvNode(node_timeout=NODE_TIMEOUT, config={"repl-diskless-sync-delay": 0})


@pytest.mark.parametrize("masters,replicas", [(_redis, _pykv), (_pykv, _redis)],
                         ids=["redis-masters-pykv-replicas", "pykv-masters-redis-replicas"])
def test_mixed_failover_promotes_the_other_kind(masters, replicas):
    nodes = _created_with_replicas(masters, masters, masters, replicas, replicas, replicas)
    try:
        head, tail = nodes[:3], nodes[3:]
        assert all(_role(n) == "slave" for n in tail)
        wait_for(lambda: _everyone_agrees(nodes), FAILOVER_WAIT, "every node's agreement")
        check = cli("check", addr(nodes[0]))
        assert "[OK] All 16384 slots covered." in check and check.count("replica(s)") == 3
        victim = head[0]
        replica = next(n for n in tail if _master_of(n) == myid(victim))
        rc = redis.cluster.RedisCluster(host="127.0.0.1", port=nodes[1].port)
        keys = [f"x{i}" for i in range(300)]
        for key in keys:
            rc.set(key, key)
        for rep in tail:
            master = next(n for n in head if myid(n) == _master_of(rep))
            wait_for(lambda m=master, r=rep: _synced(m, r), 10, "the replicas' offsets")
        wait_for(lambda: len({_topology(n) for n in nodes}) == 1, 10,
                 "SLOTS and SHARDS alike on every node")  # as Redis's
        survivors = [n for n in nodes if n is not victim]
        _kill_and_wait_promotion(victim, replica, survivors)
        assert replica.kind != victim.kind
        assert all(rc.get(key) == key.encode() for key in keys)
        victim.start()
        wait_for(lambda: _role(victim) == "slave" and _master_of(victim) == myid(replica),
                 FAILOVER_WAIT, "the old master following its replacement")
        wait_for(lambda: _everyone_agrees(nodes), FAILOVER_WAIT, "every node's agreement")
        rc.close()
    finally:
        for node in nodes:
            node.stop()


def test_mixed_manual_failover_and_takeover():
    nodes = _created_with_replicas(_redis, _pykv, _redis, _pykv, _redis, _pykv)
    try:
        wait_for(lambda: _everyone_agrees(nodes), FAILOVER_WAIT, "every node's agreement")
        for mode in ((), ("TAKEOVER",)):
            for replica in [n for n in nodes if _role(n) == "slave"][:2]:
                master = next(n for n in nodes if myid(n) == _master_of(replica))
                wait_for(lambda m=master, r=replica: _synced(m, r), 10, "offsets")
                with replica.client() as c:
                    assert c.execute_command("CLUSTER", "FAILOVER", *mode) == b"OK"
                wait_for(lambda m=master, r=replica: _role(r) == "master" and
                         _role(m) == "slave", FAILOVER_WAIT, f"failover {mode} of "
                         f"{replica.kind} replacing {master.kind}")
                wait_for(lambda: _everyone_agrees(nodes), FAILOVER_WAIT, "agreement")
    finally:
        for node in nodes:
            node.stop()


def test_add_node_as_slave_and_replicate_errors_match_redis():
    nodes = _created_with_replicas(_pykv, _redis, _pykv, replicas=0)
    extra = []
    try:
        for factory in (_pykv, _redis):
            node = factory()
            extra.append(node)
            cli("add-node", addr(node), addr(nodes[0]), "--cluster-slave", "--cluster-master-id",
                myid(nodes[1] if factory is _pykv else nodes[0]))
        everyone = nodes + extra
        wait_ok(everyone)
        wait_for(lambda: _everyone_agrees(everyone), FAILOVER_WAIT, "agreement")
        assert _master_of(extra[0]) == myid(nodes[1]) and _master_of(extra[1]) == myid(nodes[0])
        # the same mistakes on a pykv and a redis-server node give the same errors
        replies = {}
        for kind_master, kind_replica in ((nodes[0], extra[0]), (nodes[1], extra[1])):
            got = []
            for node, args in ((kind_master, ("REPLICATE", "f" * 40)),
                               (kind_master, ("REPLICATE", myid(kind_master))),
                               (kind_master, ("REPLICATE", myid(kind_replica))),
                               (kind_master, ("REPLICATE", myid(nodes[2]))),
                               (kind_master, ("FAILOVER",)),
                               (kind_replica, ("FAILOVER", "SOFTLY")),
                               (kind_replica, ("FAILOVER", "FORCE", "TAKEOVER")),
                               (kind_replica, ("REPLICATE", myid(kind_replica)))):
                with node.client() as c:
                    try:
                        got.append(c.execute_command("CLUSTER", *args))
                    except redis.ResponseError as exc:
                        got.append(str(exc).replace(myid(node), "<me>"))
            replies[kind_master.kind] = got
        assert replies["pykv"] == replies["redis"]
        assert "To set a master the node must be empty" in replies["pykv"][3]
        with nodes[0].client() as c:
            with pytest.raises(redis.ResponseError, match="REPLICAOF not allowed in cluster"):
                c.execute_command("REPLICAOF", "127.0.0.1", str(nodes[1].port))
    finally:
        for node in nodes + extra:
            node.stop()


def test_the_plugin_fixture_with_replicas(pykv_cluster_replicas):
    cluster = pykv_cluster_replicas
    assert [_role(n) for n in cluster.nodes] == ["master"] * 3 + ["slave"] * 3
    rc = cluster.client()
    rc.set("fixture", "yes")
    slot = rc.keyslot("fixture")
    replica = next(r for r, m in zip(cluster.replica_nodes, cluster.master_nodes, strict=True)
                   if any(int(x.split("-")[0]) <= slot <= int(x.split("-")[-1])
                          for x in _myself(m)[8:]))
    with replica.client() as c:
        c.execute_command("READONLY")
        wait_for(lambda: c.get("fixture") == b"yes", 10, "the write on the replica")
    rc.close()


@pytest.mark.slow
@pytest.mark.parametrize("masters,replicas", [(_redis, _pykv), (_pykv, _redis), (_pykv, _pykv)],
                         ids=["redis-masters", "pykv-masters", "all-pykv"])
def test_soak_writes_acknowledged_by_a_replica_survive_repeated_failovers(masters, replicas):
    """A writer (SET, then WAIT 1) runs while masters are killed and restarted, four times:
    every write a replica acknowledged is there at the end, served by the new masters."""
    import threading

    nodes = _created_with_replicas(masters, masters, masters, replicas, replicas, replicas)
    acknowledged: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        rc = redis.cluster.RedisCluster(host="127.0.0.1", port=nodes[1].port)
        i = 0
        while not stop.is_set():
            key = f"soak:{{{i % 50}}}:{i}"
            try:
                rc.set(key, key)
                if rc.execute_command("WAIT", 1, 200, target_nodes=rc.get_node_from_key(key)) \
                        >= 1:
                    acknowledged.append(key)
            except (redis.RedisError, OSError):
                time.sleep(0.1)
            i += 1
        rc.close()

    thread = threading.Thread(target=writer, daemon=True)
    try:
        wait_for(lambda: _everyone_agrees(nodes), FAILOVER_WAIT, "agreement")
        thread.start()
        for _round in range(4):
            time.sleep(2)
            victim = next(n for n in nodes if _role(n) == "master")
            replica = next(n for n in nodes if _role(n) == "slave" and
                           _master_of(n) == myid(victim))
            _kill_and_wait_promotion(victim, replica, [n for n in nodes if n is not victim])
            victim.start()
            wait_for(lambda: _everyone_agrees(nodes), FAILOVER_WAIT, "agreement")
        stop.set()
        thread.join(30)
        assert len(acknowledged) > 100
        rc = redis.cluster.RedisCluster(host="127.0.0.1", port=nodes[1].port)
        missing = [k for k in acknowledged if rc.get(k) != k.encode()]
        rc.close()
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
    finally:
        stop.set()
        for node in nodes:
            node.stop()




def _read_until(sock, needle: bytes) -> bytes:
    data = b""
    deadline = time.monotonic() + 5
    while needle not in data:
        assert time.monotonic() < deadline, f"no {needle!r} in {data!r}"
        data += sock.recv(4096)
    return data


def test_spublish_reaches_the_subscribers_of_the_whole_shard(six):
    import socket

    master, replica = six.master_nodes[0], six.replica_nodes[0]
    rc = six.client()
    channel = next(f"ch{i}" for i in range(1000)
                   if rc.keyslot(f"ch{i}") in range(*_first_range(master))).encode()
    rc.close()
    for publisher, listener in ((master, replica), (replica, master)):
        with socket.create_connection(("127.0.0.1", listener.port), timeout=5) as sub, \
                socket.create_connection(("127.0.0.1", publisher.port), timeout=5) as pub:
            sub.sendall(b"SSUBSCRIBE " + channel + b"\r\n")
            _read_until(sub, b"ssubscribe")
            pub.sendall(b"SPUBLISH " + channel + b" hello\r\n")
            _read_until(pub, b"\r\n")
            assert _read_until(sub, b"hello").endswith(b"$5\r\nhello\r\n")
