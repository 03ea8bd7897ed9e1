"""Mixed Redis Clusters: pykv masters and redis-server 7.0 masters in one cluster, made by
``redis-cli --cluster create``, driven by redis-py's RedisCluster through MOVED redirects,
checked and resharded with ``redis-cli --cluster``."""
from __future__ import annotations

import threading

import pytest
import redis
from redis.cluster import RedisCluster
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
from support.resp import RawClient

from pykv.cluster.keyslot import key_hash_slot


def workload(rc: RedisCluster, prefix: str) -> None:
    """Several command families over every node (keys spread over all slots)."""
    for i in range(200):
        rc.set(f"{prefix}:s{i}", i)
    assert [int(rc.get(f"{prefix}:s{i}")) for i in range(200)] == list(range(200))
    assert rc.incrby(f"{prefix}:n", 5) == 5
    rc.mset({f"{{{prefix}}}a": 1, f"{{{prefix}}}b": 2})  # one slot: a hash tag
    assert rc.mget([f"{{{prefix}}}a", f"{{{prefix}}}b"]) == [b"1", b"2"]
    rc.rpush(f"{prefix}:l", *range(5))
    assert rc.lrange(f"{prefix}:l", 0, -1) == [b"0", b"1", b"2", b"3", b"4"]
    rc.hset(f"{prefix}:h", mapping={"f": "v", "g": "w"})
    assert rc.hgetall(f"{prefix}:h") == {b"f": b"v", b"g": b"w"}
    rc.sadd(f"{prefix}:set", "x", "y")
    assert rc.smembers(f"{prefix}:set") == {b"x", b"y"}
    rc.zadd(f"{prefix}:z", {"a": 1, "b": 2})
    assert rc.zrange(f"{prefix}:z", 0, -1, withscores=True) == [(b"a", 1.0), (b"b", 2.0)]
    rc.xadd(f"{prefix}:x", {"k": "v"}, id="1-1")
    assert rc.xrange(f"{prefix}:x") == [(b"1-1", {b"k": b"v"})]
    rc.set(f"{prefix}:ttl", "v", ex=100)
    assert 0 < rc.ttl(f"{prefix}:ttl") <= 100
    pipe = rc.pipeline()
    for i in range(50):
        pipe.get(f"{prefix}:s{i}")
    assert [int(v) for v in pipe.execute()] == list(range(50))


@pytest.fixture(scope="module")
def mixed():
    """2 redis-server masters and 1 pykv master (the pykv node in the middle)."""
    with created(RedisNode, PykvNode, RedisNode) as nodes:
        yield nodes


def test_create_and_check(mixed):
    for node in mixed:
        info = cluster_info(node)
        assert info["cluster_state"] == "ok" and info["cluster_size"] == "3"
        assert info["cluster_slots_assigned"] == "16384"
    out = cli("check", addr(mixed[1]))
    assert "[OK] All nodes agree about slots configuration." in out
    assert "[OK] All 16384 slots covered." in out
    assert "0 keys" in cli("info", addr(mixed[0]))
    # every node sees the same slot owners
    views = []
    for node in mixed:
        with node.client() as c:
            views.append(sorted((s[0], s[1], s[2][2]) for s in c.cluster("slots")))
    assert views[0] == views[1] == views[2]


def test_redis_py_cluster_workload_and_redirects(mixed):
    pykv_node = mixed[1]
    rc = RedisCluster(host="127.0.0.1", port=pykv_node.port)
    try:
        workload(rc, "mix")
    finally:
        rc.close()
    # a key another node serves: pykv answers MOVED with that node's address
    with pykv_node.client() as c:
        slots = c.execute_command("CLUSTER", "SLOTS")
        owner = {}
        for start, end, master, *_ in slots:
            owner.update({s: master for s in range(start, end + 1)})
        key = next(f"k{i}" for i in range(1000)
                   if owner[key_hash_slot(f"k{i}".encode())][1] != pykv_node.port)
        master = owner[key_hash_slot(key.encode())]
        with pytest.raises(redis.exceptions.MovedError) as moved:
            c.get(key)
        # redis-py keeps what follows "MOVED "
        assert str(moved.value) == f"{key_hash_slot(key.encode())} 127.0.0.1:{master[1]}"
        # (the exact bytes are compared with redis-server's in test_cluster_compat.py)
        with pytest.raises(redis.ResponseError, match="Keys in request don't hash to the "
                           "same slot"):
            c.mset({"a": 1, "b": 2, "c": 3})


def test_cli_call_and_pubsub_across_kinds(mixed):
    out = cli("call", addr(mixed[1]), "PING")
    assert out.count("PONG") == 3
    # PUBLISH on redis-server reaches a subscriber on pykv, and the reverse
    for source, target in ((mixed[0], mixed[1]), (mixed[1], mixed[2])):
        with target.client() as sub_client:
            sub = sub_client.pubsub()
            sub.subscribe("news")
            assert sub.get_message(timeout=5)["type"] == "subscribe"
            big = b"x" * (3 << 20)  # a message larger than any socket buffer
            with source.client() as pub:
                pub.publish("news", "hello")
                pub.publish("news", big)
            msg = sub.get_message(timeout=10)
            assert msg is not None and msg["data"] == b"hello", msg
            msg = sub.get_message(timeout=10)
            assert msg is not None and msg["data"] == big
            sub.close()


@pytest.mark.slow  # the default suite keeps create, workload, ASK and one keyed reshard
def test_hostnames_propagate_and_redirect_by_hostname(mixed):
    for i, node in enumerate(mixed):
        with node.client() as c:
            c.config_set("cluster-announce-hostname", f"host-{i}.test")

    def everyone_knows() -> bool:
        for node in mixed:
            with node.client(decode_responses=True) as c:
                text = c.execute_command("CLUSTER", "NODES")
            if any(f",host-{i}.test " not in text for i in range(3)):
                return False
        return True

    try:
        wait_for(everyone_knows, 20, "every hostname in every node's CLUSTER NODES")
        pykv_node = mixed[1]
        with pykv_node.client() as c:
            c.config_set("cluster-preferred-endpoint-type", "hostname")
            try:
                entry = next(s for s in c.cluster("slots") if s[2][1] == mixed[0].port)
                assert entry[2][0] == b"host-0.test" and entry[2][3] == {b"ip": b"127.0.0.1"}
                key = next(f"h{i}" for i in range(10000)
                           if entry[0] <= key_hash_slot(f"h{i}".encode()) <= entry[1])
                with pytest.raises(redis.exceptions.MovedError) as moved:
                    c.get(key)
                assert str(moved.value).endswith(f" host-0.test:{mixed[0].port}")
            finally:
                c.config_set("cluster-preferred-endpoint-type", "ip")
    finally:
        for node in mixed:
            with node.client() as c:
                c.config_set("cluster-announce-hostname", "")


def _slot_of(node) -> int:
    with node.client() as c:
        return next(start for start, _end, master, *_ in c.cluster("slots")
                    if master[1] == node.port)


def _raw(node, *args) -> bytes:
    """The raw reply to the last of ``args`` (the commands before it on the same link)."""
    client = RawClient(port=node.port)
    try:
        for cmd in args[:-1]:
            client.call(*cmd)
        return client.call(*args[-1])
    finally:
        client.close()


@pytest.mark.parametrize("source_kind", ["pykv", "redis"])
def test_ask_and_tryagain_during_a_migration(mixed, source_kind):
    """One slot open from a pykv node to a redis-server node (or the reverse): the source
    ASKs for keys it lacks, the target serves ASKING clients and MOVEs the others, and a
    multi-key request over partly-moved keys gets TRYAGAIN there."""
    pykv_node, redis_node = mixed[1], mixed[0]
    source, target = (pykv_node, redis_node) if source_kind == "pykv" else \
        (redis_node, pykv_node)
    slot = _slot_of(source)
    tag = next(f"t{i}" for i in range(100000) if key_hash_slot(f"t{i}".encode()) == slot)
    here, gone = f"{{{tag}}}here", f"{{{tag}}}gone"
    with source.client() as c:
        c.set(here, "1")
    with target.client() as t:
        t.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", myid(source))
    with source.client() as c:
        c.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", myid(target))
    try:
        assert _raw(source, ("GET", here)) == b"$1\r\n1\r\n"
        assert _raw(source, ("GET", gone)) == \
            f"-ASK {slot} 127.0.0.1:{target.port}\r\n".encode()
        assert _raw(target, ("GET", gone)) == \
            f"-MOVED {slot} 127.0.0.1:{source.port}\r\n".encode()
        assert _raw(target, ("ASKING",), ("GET", gone)) == b"$-1\r\n"
        assert _raw(target, ("ASKING",), ("SET", gone, "2")) == b"+OK\r\n"
        assert _raw(target, ("ASKING",), ("MGET", gone, here)) == \
            b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
        assert _raw(target, ("ASKING",), ("GET", gone), ("GET", gone)) == \
            f"-MOVED {slot} 127.0.0.1:{source.port}\r\n".encode()  # ASKING lasts one command
    finally:
        for node in (source, target):
            with node.client() as c:
                c.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
        with source.client() as c:
            c.delete(here)
    # the target still holds "gone" in a slot it does not own: clean it the way Redis can
    with target.client() as t:
        assert t.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
        t.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", myid(source))
    assert _raw(target, ("ASKING",), ("DEL", gone)) == b":1\r\n"
    with target.client() as t:
        t.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
    wait_ok(mixed)


@pytest.mark.slow  # the default suite keeps create, workload, ASK and one keyed reshard
def test_reshard_empty_slots_both_ways(mixed):
    redis_node, pykv_node = mixed[0], mixed[1]
    for src, dst in ((redis_node, pykv_node), (pykv_node, redis_node)):
        out = cli("reshard", addr(pykv_node), "--cluster-from", myid(src), "--cluster-to",
                  myid(dst), "--cluster-slots", "20", "--cluster-yes")
        assert "Moving slot" in out
        wait_ok(mixed)
    assert "[OK] All nodes agree about slots configuration." in cli("check", addr(mixed[2]))


@pytest.mark.parametrize("direction", ["redis-to-pykv", "pykv-to-redis"])
def test_reshard_with_keys_while_writing(mixed, direction):
    """300 slots with keys move under a writer: redis-server MIGRATEs into pykv
    (RESTORE-ASKING, ASK redirects), then pykv MIGRATEs into redis-server; no acknowledged
    write is lost and no key is in two places."""
    redis_node, pykv_node = mixed[2], mixed[1]
    source, target = (redis_node, pykv_node) if direction == "redis-to-pykv" \
        else (pykv_node, redis_node)
    rc = RedisCluster(host="127.0.0.1", port=source.port)
    acked: dict[str, int] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        i = 0
        try:
            while not stop.is_set():
                key = f"{direction}:w{i}"
                rc.set(key, i)
                acked[key] = i
                i += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    for i in range(300):
        rc.set(f"{direction}:pre{i}", i)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        out = cli("reshard", addr(source), "--cluster-from", myid(source),
                  "--cluster-to", myid(target), "--cluster-slots", "300",
                  "--cluster-yes", timeout=120)
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    assert "Moving slot" in out
    wait_ok(mixed)
    for i in range(300):
        assert rc.get(f"{direction}:pre{i}") == str(i).encode()
    assert acked
    for key, value in acked.items():
        assert rc.get(key) == str(value).encode(), key
    # no key in two places
    seen: dict[bytes, int] = {}
    for node in mixed:
        with node.client() as c:
            for key in c.scan_iter(count=1000):
                assert key not in seen, f"{key!r} on {seen[key]} and {node.port}"
                seen[key] = node.port
    rc.close()


@pytest.mark.slow  # the default suite keeps create, workload, ASK and one keyed reshard
def test_add_node_and_del_node(mixed):
    extra = PykvNode()
    try:
        cli("add-node", addr(extra), addr(mixed[0]))
        wait_ok([*mixed, extra])
        assert cluster_info(extra)["cluster_known_nodes"] == "4"
        cli("del-node", addr(mixed[0]), myid(extra))
        wait_for(lambda: all(cluster_info(n)["cluster_known_nodes"] == "3" for n in mixed),
                 20, "the deleted node to be forgotten everywhere")
        wait_ok(mixed)
    finally:
        extra.stop()


@pytest.mark.slow  # the default suite has the 2 redis-server + 1 pykv mix
def test_reverse_mix_two_pykv_one_redis():
    with created(PykvNode, RedisNode, PykvNode) as nodes:
        rc = RedisCluster(host="127.0.0.1", port=nodes[1].port)
        workload(rc, "rev")
        rc.close()
        assert "[OK] All 16384 slots covered." in cli("check", addr(nodes[0]))
