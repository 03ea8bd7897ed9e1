"""Cluster nodes of both kinds for the cluster tests: real redis-server 7.0 and pykv, each
on a free port with a free bus port (``cluster-port``), and ``redis-cli --cluster``."""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time

import redis

from pykv.testing import Server, free_port
from support.servers import require_redis

REDIS_CLI = shutil.which("redis-cli")


class RedisNode:
    """redis-server with ``cluster-enabled yes``."""

    kind = "redis"

    def __init__(self, node_timeout: int = 2000, extra: list[str] | None = None) -> None:
        self.binary = require_redis()
        self.port, self.cport = free_port(), free_port()
        self.dir = tempfile.mkdtemp(prefix="real-cluster-")
        self.args = [self.binary, "--port", str(self.port), "--cluster-port", str(self.cport),
                     "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--save", "",
                     "--cluster-node-timeout", str(node_timeout), "--dir", self.dir,
                     "--appendonly", "no", "--daemonize", "no", *(extra or [])]
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as c:
                    c.ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis(port=self.port, **kwargs)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PykvNode:
    """pykv with ``cluster-enabled yes`` (a ``pykv.testing.Server``)."""

    kind = "pykv"

    def __init__(self, node_timeout: int = 2000, config: dict | None = None) -> None:
        self.cport = free_port()
        self.server = Server(config={"cluster-enabled": "yes", "cluster-port": self.cport,
                                     "cluster-node-timeout": node_timeout, **(config or {})},
                             keep_dir=True)
        self.server.start()
        self.port = self.server.port

    def start(self) -> None:
        self.server.start()

    def client(self, **kwargs) -> redis.Redis:
        return self.server.client(**kwargs)

    def kill(self) -> None:
        self.server.kill()

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.server.workdir, ignore_errors=True)

    def log(self) -> str:
        return self.server.log()


def cli(*args: str, timeout: float = 60) -> str:
    """``redis-cli --cluster ...``: its output (the test fails on a non-zero exit)."""
    assert REDIS_CLI is not None, "redis-cli is not installed"
    proc = subprocess.run([REDIS_CLI, "--cluster", *args], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"redis-cli --cluster {' '.join(args)} failed:\n" \
        f"{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def addr(node) -> str:
    return f"127.0.0.1:{node.port}"


def cluster_info(node) -> dict[str, str]:
    with node.client(decode_responses=True) as c:
        text = c.execute_command("CLUSTER", "INFO")
    return dict(line.split(":", 1) for line in text.split() if ":" in line)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.05)


def wait_ok(nodes, timeout: float = 30) -> None:
    def all_ok() -> bool:
        return all(cluster_info(n).get("cluster_state") == "ok" and
                   cluster_info(n).get("cluster_known_nodes") == str(len(nodes))
                   for n in nodes)

    wait_for(all_ok, timeout, "cluster_state:ok on every node")


def myid(node) -> str:
    with node.client(decode_responses=True) as c:
        return c.execute_command("CLUSTER", "MYID")


@contextlib.contextmanager
def created(*factories):
    """Nodes from ``factories`` (e.g. ``PykvNode, RedisNode``) formed by ``redis-cli
    --cluster create``, ok everywhere; all stopped afterwards."""
    nodes = []
    try:
        for factory in factories:
            nodes.append(factory())
        cli("create", *map(addr, nodes), "--cluster-yes")
        wait_ok(nodes)
        yield nodes
    finally:
        for node in nodes:
            node.stop()
