"""``tls-cluster yes``: the cluster bus over TLS in a mixed cluster (pykv and redis-server
7.0, which Debian builds with TLS), with certificates made at test time.

Checked against the redis-server nodes of the same cluster: the TLS port is each node's
client port (CLUSTER NODES/SLOTS and MOVED for TLS clients), the plaintext port is its
``pport`` (what clients not on TLS are told), CLUSTER SHARDS shows both; ``redis-cli --tls
-c`` follows redirects across both kinds; a node whose certificate the CA did not sign
cannot join.
"""
from __future__ import annotations

import subprocess
import time

import pytest
import redis
from support.cluster_nodes import PykvNode, RedisNode, cluster_info, myid, wait_for, wait_ok
from support.servers import require_redis
from support.tls_certs import needs_openssl

from pykv.cluster.keyslot import key_hash_slot
from pykv.testing import Server, ServerError, free_port
from pykv.testing.certs import TestCerts

pytestmark = needs_openssl


def tls_settings(certs: TestCerts) -> dict[str, str]:
    """The bus needs a client certificate (the server one is for serverAuth only)."""
    return {"tls-cert-file": certs.server_cert, "tls-key-file": certs.server_key,
            "tls-ca-cert-file": certs.ca_cert, "tls-client-cert-file": certs.client_cert,
            "tls-client-key-file": certs.client_key, "tls-cluster": "yes"}


def redis_node(certs: TestCerts, **extra: str) -> RedisNode:
    tls_port = free_port()
    args = ["--tls-port", str(tls_port)]
    for name, value in {**tls_settings(certs), **extra}.items():
        args += [f"--{name}", value]
    node = RedisNode(extra=args)
    node.tls_port = tls_port
    return node


def pykv_node(certs: TestCerts, **extra: str) -> PykvNode:
    tls_port = free_port()
    node = PykvNode(config={"tls-port": tls_port, **tls_settings(certs), **extra})
    node.tls_port = tls_port
    return node


def tls_cli(certs: TestCerts, port: int, *args: str, timeout: float = 60) -> str:
    proc = subprocess.run(["redis-cli", "--tls", "--cacert", certs.ca_cert, "--cert",
                           certs.client_cert, "--key", certs.client_key, "-p", str(port),
                           *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"redis-cli {' '.join(args)} failed:\n{proc.stdout}\n" \
        f"{proc.stderr}"
    return proc.stdout


def tls_client(certs: TestCerts, node) -> redis.Redis:
    return redis.Redis(port=node.tls_port, ssl=True, ssl_ca_certs=certs.ca_cert,
                       ssl_certfile=certs.client_cert, ssl_keyfile=certs.client_key)


@pytest.fixture(scope="module")
def cluster(certs):
    """redis-server, pykv, redis-server, pykv masters made by ``redis-cli --tls --cluster
    create`` on their TLS ports: every bus link is TLS."""
    nodes = []
    try:
        for factory in (redis_node, pykv_node, redis_node, pykv_node):
            nodes.append(factory(certs))
        tls_cli(certs, nodes[0].tls_port, "--cluster", "create",
                *(f"127.0.0.1:{n.tls_port}" for n in nodes), "--cluster-yes")
        wait_ok(nodes, 40)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def _lines(text: str) -> dict[str, str]:
    """CLUSTER NODES: node id -> its address field."""
    return {line.split()[0]: line.split()[1] for line in text.splitlines() if line}


def test_cluster_forms_over_tls_and_ports_are_as_redis(cluster, certs):
    ids = {myid(n): n for n in cluster}
    for node in cluster:
        with node.client(decode_responses=True) as plain:
            assert plain.execute_command("CLUSTER", "INFO").count("cluster_state:ok") == 1
            plain_view = _lines(plain.execute_command("CLUSTER", "NODES"))
        tls_view = _lines(tls_cli(certs, node.tls_port, "CLUSTER", "NODES"))
        for name, other in ids.items():
            # a TLS client sees TLS ports, a plain one the plaintext ports (pport)
            assert plain_view[name] == f"127.0.0.1:{other.port}@{other.cport}", node.kind
            assert tls_view[name] == f"127.0.0.1:{other.tls_port}@{other.cport}", node.kind
        # every link of the node comes up (both directions, TLS); a link whose PING waits
        # over node-timeout/2 is dropped and remade, as Redis does, so on a loaded machine
        # one may be missing for a moment
        wait_for(lambda node=node: len(_links(node)) == 2 * (len(cluster) - 1), 20,
                 f"all bus links of the {node.kind} node")


def _links(node) -> list:
    with node.client() as plain:
        return plain.execute_command("CLUSTER", "LINKS")


def test_cluster_slots_and_shards_per_connection_type(cluster, certs):
    by_id = {myid(n).encode(): n for n in cluster}
    for node in cluster:
        with node.client() as plain, tls_client(certs, node) as tls:
            for client, port_of in ((plain, "port"), (tls, "tls_port")):
                for start, end, *entries in client.execute_command("CLUSTER", "SLOTS"):
                    assert 0 <= start <= end < 16384
                    for entry in entries:
                        assert entry[1] == getattr(by_id[entry[2]], port_of), node.kind
            for client in (plain, tls):
                for shard in client.execute_command("CLUSTER", "SHARDS"):
                    for entry in dict(_pairs(shard))[b"nodes"]:
                        fields = _pairs(entry)
                        other = by_id[fields[0][1]]
                        # the plaintext port, then the TLS port, whatever the connection
                        assert fields[:3] == [(b"id", fields[0][1]), (b"port", other.port),
                                              (b"tls-port", other.tls_port)], node.kind


def _pairs(reply) -> list[tuple]:
    """A map reply's (key, value) pairs, in order (RESP2 flat list or RESP3 map)."""
    if isinstance(reply, dict):
        return list(reply.items())
    return list(zip(reply[::2], reply[1::2], strict=True))


def test_redirects_per_connection_type_and_redis_cli_follows(cluster, certs):
    for node in cluster:
        me = myid(node).encode()
        with node.client() as plain:
            owner = {}
            for start, end, master, *_ in plain.execute_command("CLUSTER", "SLOTS"):
                owner.update(dict.fromkeys(range(start, end + 1), master[2]))
        key = next(f"k{i}" for i in range(10000) if owner[key_hash_slot(f"k{i}".encode())] != me)
        slot = key_hash_slot(key.encode())
        target = {myid(n).encode(): n for n in cluster}[owner[slot]]
        with node.client() as plain, tls_client(certs, node) as tls:
            with pytest.raises(redis.ResponseError) as moved:
                plain.execute_command("GET", key)
            # (redis-py drops the error code from the text)
            assert str(moved.value) == f"{slot} 127.0.0.1:{target.port}"
            with pytest.raises(redis.ResponseError) as moved:
                tls.execute_command("GET", key)
            assert str(moved.value) == f"{slot} 127.0.0.1:{target.tls_port}"
        assert tls_cli(certs, node.tls_port, "-c", "SET", key, node.kind).strip() == "OK"
        assert tls_cli(certs, target.tls_port, "GET", key).strip() == node.kind
    out = tls_cli(certs, cluster[1].tls_port, "--cluster", "check",
                  f"127.0.0.1:{cluster[1].tls_port}")
    assert "[OK] All 16384 slots covered." in out


def test_announced_tls_port_and_pport(cluster, certs):
    """cluster-announce-tls-port replaces the TLS port and makes cluster-announce-port the
    pport; without it cluster-announce-port replaces the TLS port (as redis-server)."""
    ours, real = cluster[1], cluster[0]
    name = myid(ours)

    def seen_by(node, tls: bool) -> str:
        if tls:
            return _lines(tls_cli(certs, node.tls_port, "CLUSTER", "NODES"))[name]
        with node.client(decode_responses=True) as plain:
            return _lines(plain.execute_command("CLUSTER", "NODES"))[name]

    def expect(tls_port: int, pport: int) -> None:
        want = (f"127.0.0.1:{tls_port}@{ours.cport}", f"127.0.0.1:{pport}@{ours.cport}")
        wait_for(lambda: (seen_by(real, True), seen_by(real, False)) == want, 10,
                 f"redis-server to see {want}")
        assert (seen_by(ours, True), seen_by(ours, False)) == want

    with ours.client() as c:
        try:
            c.config_set("cluster-announce-tls-port", 23001)
            c.config_set("cluster-announce-port", 24001)
            expect(23001, 24001)
            c.config_set("cluster-announce-tls-port", 0)
            expect(24001, ours.port)
        finally:
            c.config_set("cluster-announce-port", 0)
            c.config_set("cluster-announce-tls-port", 0)
    expect(ours.tls_port, ours.port)


@pytest.mark.parametrize("kind", ["pykv", "redis"])
def test_a_node_without_a_trusted_certificate_cannot_join(cluster, certs, other_certs, kind):
    """An outsider whose certificates another CA signed: MEET is accepted, but no TLS link
    comes up either way, so the cluster never learns it and it stays alone."""
    outsider = (pykv_node if kind == "pykv" else redis_node)(other_certs)
    try:
        with outsider.client() as c:
            assert c.execute_command("CLUSTER", "MEET", "127.0.0.1",
                                     cluster[1].tls_port, cluster[1].cport) == b"OK"
        with cluster[0].client() as c:
            c.execute_command("CLUSTER", "MEET", "127.0.0.1", outsider.tls_port,
                              outsider.cport)
        time.sleep(3)  # a handshake would have been done by now; the failed ones expire
        wait_for(lambda: cluster_info(outsider)["cluster_known_nodes"] == "1" and all(
            cluster_info(n)["cluster_known_nodes"] == str(len(cluster)) for n in cluster),
            15, "the failed handshakes to expire")
        outsider_id = myid(outsider)
        for node in cluster:
            with node.client(decode_responses=True) as c:
                assert outsider_id not in c.execute_command("CLUSTER", "NODES")
        assert cluster_info(outsider)["cluster_state"] == "fail"
    finally:
        outsider.stop()


def test_bus_port_follows_the_tls_port(tmp_path, certs):
    """Without cluster-port the bus port is tls-port + 10000 under tls-cluster, so a TLS
    port above 55535 aborts the start with Redis's message (a plaintext port would not)."""
    tls_port = next(p for p in iter(free_port, None) if p > 55535)
    settings = {**tls_settings(certs), "cluster-enabled": "yes", "tls-port": tls_port}
    server = Server(config=settings, port=next(p for p in iter(free_port, None) if p < 55535))
    try:  # the client port may answer a PING before the bus is bound, or not
        server.start()
        assert server.process.wait(15) != 0
        text = server.log()
    except ServerError as exc:
        text = str(exc)
    finally:
        server.stop()
    assert "Redis port number too high" in text


def test_tls_cluster_switched_on_at_runtime(certs):
    """CONFIG SET tls-cluster yes (modifiable in Redis 7.0): new bus links are TLS and the
    node announces its TLS port from then on; a redis-server TLS node can then meet it."""
    ours = pykv_node(certs, **{"tls-cluster": "no"})
    real = redis_node(certs)
    try:
        with ours.client() as c:
            assert c.config_set("tls-cluster", "yes")
        with real.client() as c:
            c.execute_command("CLUSTER", "MEET", "127.0.0.1", ours.tls_port, ours.cport)
        wait_for(lambda: cluster_info(ours)["cluster_known_nodes"] == "2" and
                 cluster_info(real)["cluster_known_nodes"] == "2", 20, "the nodes to meet")
        name = myid(ours)
        wait_for(lambda: _lines(tls_cli(certs, real.tls_port, "CLUSTER", "NODES")).get(name)
                 == f"127.0.0.1:{ours.tls_port}@{ours.cport}", 10, "the announced TLS port")

        def links() -> int:
            with real.client() as c:
                return len(c.execute_command("CLUSTER", "LINKS"))

        wait_for(lambda: links() == 2, 10, "a TLS link each way")
    finally:
        ours.stop()
        real.stop()


def _slots_of(node) -> list[int]:
    me = myid(node).encode()
    with node.client() as c:
        return [s for start, end, master, *_ in c.execute_command("CLUSTER", "SLOTS")
                if master[2] == me for s in range(start, end + 1)]


@pytest.mark.parametrize(("source", "target"), [(1, 0), (2, 3)])
def test_reshard_with_keys_over_tls(cluster, certs, source, target):
    """redis-cli --tls --cluster reshard moves slots with keys between the kinds: MIGRATE
    reaches the target's TLS port over TLS (pykv's to redis-server, redis-server's to
    pykv), as Redis does under tls-cluster."""
    src, dst = cluster[source], cluster[target]
    slots = _slots_of(src)[:5]
    keys = [next(f"m{s}:{i}" for i in range(100000) if key_hash_slot(f"m{s}:{i}".encode()) == s)
            for s in slots]
    with tls_client(certs, src) as c:
        for key in keys:
            c.set(key, key)
    tls_cli(certs, src.tls_port, "--cluster", "reshard", f"127.0.0.1:{src.tls_port}",
            "--cluster-from", myid(src), "--cluster-to", myid(dst), "--cluster-slots", "5",
            "--cluster-yes", timeout=120)
    wait_for(lambda: set(slots) <= set(_slots_of(dst)), 20, "the slots to move")
    with tls_client(certs, dst) as c:
        assert [c.get(key) for key in keys] == [key.encode() for key in keys]
    with src.client() as c:  # gone from the source
        assert [c.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) for s in slots] == [0] * 5


def test_migrate_over_tls_outside_cluster_mode(certs):
    """tls-cluster yes makes MIGRATE use TLS even without cluster mode (as Redis): pykv to
    a redis-server TLS port, on the event loop and as a blocking call inside MULTI."""
    tls_port = free_port()
    args = [require_redis(), "--port", str(free_port()), "--bind", "127.0.0.1", "--save", "",
            "--tls-port", str(tls_port)]
    for name, value in tls_settings(certs).items():
        args += [f"--{name}", value]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours = Server(config={"tls-port": free_port(), **tls_settings(certs)})
    ours.start()
    try:
        target = redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca_cert,
                             ssl_certfile=certs.client_cert, ssl_keyfile=certs.client_key)
        wait_for(lambda: _pings(target), 10, "redis-server")
        c = ours.client()
        c.mset({"a": "1", "b": "2"})
        assert c.execute_command("MIGRATE", "127.0.0.1", tls_port, "a", 0, 5000) == b"OK"
        pipe = c.pipeline(transaction=True)
        pipe.execute_command("MIGRATE", "127.0.0.1", tls_port, "b", 0, 5000)
        assert pipe.execute() == [b"OK"]
        assert target.mget("a", "b") == [b"1", b"2"] and c.exists("a", "b") == 0
        # plain TCP to a TLS port fails (a new connection: the cache is by host:port as
        # written, and a cached one stays as it was made, as in Redis)
        c.config_set("tls-cluster", "no")
        c.set("c", "3")
        with pytest.raises(redis.ResponseError, match="IOERR"):
            c.execute_command("MIGRATE", "localhost", tls_port, "c", 0, 1000)
        assert c.execute_command("MIGRATE", "127.0.0.1", tls_port, "c", 0, 1000) == b"OK"
    finally:
        ours.stop()
        proc.terminate()
        proc.wait(10)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
