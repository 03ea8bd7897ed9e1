"""A Redis Cluster of pykv nodes for tests: ``with Cluster(3, replicas=1) as cluster:``.

Each node is a ``pykv.testing.Server`` (a subprocess) with ``cluster-enabled yes`` and its
own free bus port (``cluster-port``). ``start()`` does what ``redis-cli --cluster create``
does — the 16384 slots split evenly, a distinct config epoch per node, every node MEETs the
first, each replica is given its master with CLUSTER REPLICATE — then waits until every
node knows every other, reports ``cluster_state:ok`` and every replica's link is up.
``client()`` is a ``redis.cluster.RedisCluster`` that follows MOVED/ASK like any cluster
client; ``clients()`` are plain ``redis.Redis`` per node. No redis binary is needed.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pykv.testing.server import Server, ServerError, _redis_module, free_port

__all__ = ["Cluster", "ClusterError"]

SLOTS = 16384


class ClusterError(RuntimeError):
    """The cluster did not form (the message says which node saw what)."""


class Cluster:
    """``masters`` pykv masters on free ports on ``host``, formed into one cluster, with
    ``replicas`` replicas each (``nodes`` lists the masters first, then the replicas: the
    replica ``masters + i`` replicates master ``i % masters``).

    ``node_timeout`` is ``cluster-node-timeout`` (ms); ``config`` is passed to every
    node; ``start_timeout`` bounds the wait for ``cluster_state:ok``.
    """

    def __init__(self, masters: int = 3, host: str = "127.0.0.1",
                 config: Mapping[str, Any] | None = None, node_timeout: int = 2000,
                 start_timeout: float = 30.0, keep_dir: bool = False,
                 replicas: int = 0) -> None:
        if not 1 <= masters <= SLOTS:
            raise ValueError("a cluster needs between 1 and 16384 masters")
        if replicas < 0:
            raise ValueError("replicas must not be negative")
        self.host = host
        self.start_timeout = start_timeout
        self.masters = masters
        self.nodes: list[Server] = []
        for _ in range(masters * (1 + replicas)):
            # replicas sync at once (not after Redis's 5 s diskless delay)
            cfg = {"cluster-enabled": "yes", "cluster-node-timeout": node_timeout,
                   "repl-diskless-sync-delay": 0,
                   "cluster-port": free_port(host), **dict(config or {})}
            self.nodes.append(Server(host=host, config=cfg, keep_dir=keep_dir))

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> Cluster:
        try:
            with ThreadPoolExecutor(len(self.nodes)) as pool:  # the processes start together
                for future in [pool.submit(self._start_node, n) for n in self.nodes]:
                    future.result()
            self._create()
            self.wait_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, node: Server) -> None:
        for attempt in range(3):
            try:
                node.start()
                return
            except ServerError as exc:  # the bus port was taken meanwhile: another one
                if "(cluster)" not in str(exc) or attempt == 2:
                    raise
                node.config["cluster-port"] = free_port(self.host)

    def _create(self) -> None:
        count = self.masters
        clients = self.clients()
        for i, client in enumerate(clients[:count]):
            first, last = i * SLOTS // count, (i + 1) * SLOTS // count - 1
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
        for i, client in enumerate(clients):
            client.execute_command("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
        head = self.nodes[0]
        for client in clients[1:]:
            client.execute_command("CLUSTER", "MEET", self.host, head.port,
                                   head.config["cluster-port"])
        ids = [client.execute_command("CLUSTER", "MYID") for client in clients[:count]]
        deadline = time.monotonic() + self.start_timeout
        for i, client in enumerate(clients[count:]):
            while True:  # the replica must have learnt its master first
                try:
                    client.execute_command("CLUSTER", "REPLICATE", ids[i % count])
                    break
                except _redis_module("redis").ResponseError as exc:
                    if "Unknown node" not in str(exc) or time.monotonic() > deadline:
                        raise ClusterError(f"CLUSTER REPLICATE failed: {exc}") from None
                    time.sleep(0.05)
        for client in clients:
            client.close()

    def wait_ok(self, timeout: float | None = None) -> None:
        """Until every node knows all the others and says ``cluster_state:ok``."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        want = f"cluster_known_nodes:{len(self.nodes)}"
        while True:
            views = {}
            links_up = True
            for node in self.nodes:
                with node.client(decode_responses=True) as client:
                    views[node.port] = client.execute_command("CLUSTER", "INFO")
                    if node in self.replica_nodes:
                        links_up = links_up and \
                            client.info("replication").get("master_link_status") == "up"
            if links_up and all("cluster_state:ok" in v and want in v for v in views.values()):
                return
            if time.monotonic() > deadline:
                summary = "; ".join(f"{port}: {v.splitlines()[0]}, "
                                    f"{[x for x in v.splitlines() if 'known' in x][0]}"
                                    for port, v in views.items())
                raise ClusterError(f"the cluster did not reach cluster_state:ok: {summary}")
            time.sleep(0.05)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------
    def client(self, **kwargs: Any) -> Any:
        """A ``redis.cluster.RedisCluster`` seeded with the first node."""
        cluster = _redis_module("redis.cluster")
        return cluster.RedisCluster(host=self.host, port=self.nodes[0].port, **kwargs)

    def clients(self, **kwargs: Any) -> list[Any]:
        """One ``redis.Redis`` per node, in node order."""
        return [node.client(**kwargs) for node in self.nodes]

    def flush(self) -> None:
        """FLUSHALL on every node (between tests sharing one cluster)."""
        for client in self.clients():
            client.flushall()
            client.close()

    @property
    def master_nodes(self) -> list[Server]:
        return self.nodes[:self.masters]

    @property
    def replica_nodes(self) -> list[Server]:
        return self.nodes[self.masters:]

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]
