"""nodes.conf is locked (flock) by the node using it, as Redis 7.0's clusterLockConfig: a
second node started on the same file, pykv or redis-server, exits 1 with Redis's message,
and the lock follows the file across saves (pykv replaces it on every save)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest
from support.cluster_nodes import PykvNode, RedisNode
from support.servers import require_redis

from pykv.testing import Server, ServerError, free_port

BUSY = ("Sorry, the cluster configuration file nodes.conf is already used by a different "
        "Redis Cluster node. Please make sure that different nodes use different cluster "
        "configuration files.")


def _pykv_on(directory: str) -> tuple[int | None, str]:
    """Start pykv in cluster mode in ``directory``: (exit status, log)."""
    server = Server(config={"cluster-enabled": "yes", "cluster-port": free_port(),
                            "dir": directory})
    try:
        server.start()
    except ServerError as exc:
        return server.returncode, str(exc)
    try:
        return None, server.log()
    finally:
        server.stop()


def _redis_on(directory: str) -> tuple[int, str]:
    proc = subprocess.run([require_redis(), "--port", str(free_port()), "--cluster-port",
                           str(free_port()), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                           "--save", "", "--dir", directory], capture_output=True, text=True,
                          timeout=20)
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("first", ["pykv", "redis"])
def test_a_second_node_on_the_same_file_exits(first):
    node = PykvNode() if first == "pykv" else RedisNode()
    directory = node.server.workdir if first == "pykv" else node.dir
    try:
        assert os.path.exists(os.path.join(directory, "nodes.conf"))
        code, text = _pykv_on(directory)
        assert code == 1 and BUSY in text
        code, text = _redis_on(directory)
        assert code == 1 and BUSY in text
        with node.client() as c:  # the first one runs on, and saves again
            assert c.execute_command("CLUSTER", "SAVECONFIG") == b"OK"
        code, text = _pykv_on(directory)  # still locked: the lock moved to the new file
        assert code == 1 and BUSY in text
    finally:
        node.stop()


def test_the_lock_goes_with_the_node():
    directory = tempfile.mkdtemp(prefix="pykv-lock-")
    try:
        code, _text = _pykv_on(directory)  # starts, saves, stops
        assert code is None
        code, text = _pykv_on(directory)  # the file is free again
        assert code is None, text
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_file_that_cannot_be_opened(tmp_path):
    server = Server(config={"cluster-enabled": "yes", "cluster-port": free_port(),
                            "cluster-config-file": str(tmp_path / "missing" / "nodes.conf")})
    with pytest.raises(ServerError) as failed:
        server.start()
    assert f"Can't open {tmp_path}/missing/nodes.conf in order to acquire a lock: No such " \
           "file or directory" in str(failed.value)
