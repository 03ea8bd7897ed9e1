"""Real client tools against pykv: redis-py with its defaults (HELLO 3, CLIENT SETINFO) and
redis-cli (HELLO, INFO, COMMAND DOCS for hints, CLIENT LIST)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

redis = pytest.importorskip("redis")
REDIS_CLI = shutil.which("redis-cli")


@pytest.fixture
def r3(pykv_proc):
    client = redis.Redis(host="127.0.0.1", port=pykv_proc.port, protocol=3)
    yield client
    client.close()


def test_redis_py_resp3_connection_commands(r3):
    assert r3.ping() is True
    assert r3.echo("hi") == b"hi"
    r3.client_setname("py-client")
    assert r3.client_getname() in ("py-client", b"py-client")
    info = r3.client_info()
    assert info["name"] == "py-client" and int(info["resp"]) == 3
    assert isinstance(r3.client_id(), int)
    listing = r3.client_list()
    assert any(c["name"] == "py-client" for c in listing)
    server = r3.info("server")
    assert server["redis_version"] == "7.0.15"
    everything = r3.info("everything")
    assert "connected_clients" in everything and "used_memory" in everything
    assert r3.dbsize() >= 0
    assert r3.time()[0] > 1_600_000_000
    assert r3.lastsave()
    assert r3.command_count() > 50
    assert r3.command_getkeys("MSET", "a", "1", "b", "2") in ([b"a", b"b"], ["a", "b"])
    assert "get" in r3.command()


def test_redis_py_resp2_defaults(pykv_proc):
    client = redis.Redis(host="127.0.0.1", port=pykv_proc.port)
    assert client.ping() is True
    assert client.info()["redis_version"] == "7.0.15"
    slow = client.slowlog_get()
    assert isinstance(slow, list)
    assert client.slowlog_len() >= 0
    assert client.client_trackinginfo()
    client.close()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli not installed")
def test_redis_cli(pykv_proc):
    def cli(*args: str) -> str:
        return subprocess.run([REDIS_CLI, "-p", str(pykv_proc.port), *args], capture_output=True,
                              text=True, timeout=20).stdout

    assert cli("PING").strip() == "PONG"
    assert "redis_version:7.0.15" in cli("INFO", "server")
    assert "listener0:name=tcp" in cli("INFO", "server")
    assert cli("-3", "HELLO").startswith("server")
    assert "cmd=client|list" in cli("CLIENT", "LIST")
    assert cli("COMMAND", "COUNT").strip().isdigit()
    assert cli("SET", "clikey", "v").strip() == "OK"
    assert cli("LOLWUT").strip() == "Redis ver. 7.0.15"
    # interactive-style stdin session: redis-cli reads COMMAND DOCS for its hints
    out = subprocess.run([REDIS_CLI, "-p", str(pykv_proc.port)], input="GET clikey\nDEL clikey\n",
                         capture_output=True, text=True, timeout=20).stdout
    assert out.split() == ["v", "1"]
