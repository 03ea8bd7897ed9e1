"""RDMA between two hosts: clients here, pykv's rdma listener on another machine.

Runs in the client VM of ``tests/rdma/test_vm_two_hosts.py`` (``tests/rdma/vm/two-hosts.sh``
starts the server VM's pykv and points this file at it with ``PYKV_REMOTE``,
``PYKV_REMOTE_TCP_PORT`` and ``PYKV_REMOTE_RDMA_PORT``); anywhere else it skips. Unlike the
one-VM suite, where both ends share one soft-RoCE device, every byte here crosses an Ethernet
link as RoCE v2 packets. The same server's TCP listener is the oracle.
"""
from __future__ import annotations

import os
import subprocess

import pytest
from rdma_support import exchange, resp

from pykv.rdma.client import RdmaSocket

HOST = os.environ.get("PYKV_REMOTE", "")
TCP_PORT = int(os.environ.get("PYKV_REMOTE_TCP_PORT", "0"))
RDMA_PORT = int(os.environ.get("PYKV_REMOTE_RDMA_PORT", "0"))
LOCAL_IP = os.environ.get("PYKV_LOCAL_IP", "10.77.1.2")   # this host's address on the link
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BIN = os.environ.get("PYKV_VALKEY_BIN", os.path.join(ROOT, "build", "valkey-rdma", "bin"))
VCLI = os.path.join(BIN, "valkey-cli")
VBENCH = os.path.join(BIN, "valkey-benchmark")

pytestmark = [
    pytest.mark.rdma_verbs,
    pytest.mark.skipif(not HOST, reason="needs a pykv on another host (PYKV_REMOTE): "
                                        "tests/rdma/test_vm_two_hosts.py sets one up"),
    pytest.mark.timeout(600),
]
valkey = pytest.mark.skipif(
    not (os.access(VCLI, os.X_OK) and os.access(VBENCH, os.X_OK)
         and os.path.exists("/dev/infiniband/rdma_cm")),
    reason=f"no RDMA device, or no valkey-cli/valkey-benchmark with RDMA in {BIN}")


def rdma() -> RdmaSocket:
    # the compiled backend (else pyverbs) unless PYKV_RDMA_BACKEND says otherwise (soft: a
    # dry run on one host)
    return RdmaSocket(HOST, RDMA_PORT, timeout=120, connect_timeout=60)


def over_tcp(payload: bytes, replies: int) -> bytes:
    import socket
    with socket.create_connection((HOST, TCP_PORT), timeout=120) as s:
        return exchange(s, payload, replies)


def over_rdma(payload: bytes, replies: int) -> bytes:
    with rdma() as s:
        return exchange(s, payload, replies)


SEQUENCE = [("SELECT", 3), ("FLUSHDB",), ("PING",), ("SET", "k", "v"), ("GET", "k"),
            ("GET", "missing"), ("INCR", "n"), ("INCRBY", "n", 41), ("APPEND", "k", "xyz"),
            ("LPUSH", "l", 1, 2, 3), ("LRANGE", "l", 0, -1), ("HSET", "h", "f", "v"),
            ("HGETALL", "h"), ("ZADD", "z", 1, "a", 2, "b"), ("ZRANGE", "z", 0, -1, "WITHSCORES"),
            ("SET", "k"), ("NOSUCHCOMMAND",), ("MULTI",), ("INCR", "t"), ("EXEC",),
            ("DEL", "k", "n", "l", "h", "z", "t")]


def test_command_sequence_matches_tcp_byte_for_byte():
    payload = b"".join(resp(*c) for c in SEQUENCE)
    got = over_rdma(payload, len(SEQUENCE))
    assert got == over_tcp(payload, len(SEQUENCE))
    assert b"+PONG\r\n" in got and b"-ERR unknown command 'NOSUCHCOMMAND'" in got


def test_the_server_sees_the_other_host():
    with rdma() as s:
        listing = s.call("CLIENT", "LIST", "TYPE", "normal")
        me = s.call("CLIENT", "INFO")
    assert f" addr={LOCAL_IP}:".encode() in me and f"laddr={HOST}:".encode() in me, me
    assert f" addr={LOCAL_IP}:".encode() in listing


@pytest.mark.parametrize("size", [100_000, 1_048_576, 4_000_000])
def test_large_values_cross_the_link(size):
    value = os.urandom(size)
    with rdma() as s:
        assert s.call("SET", "big", value) == b"+OK\r\n"
        assert s.call("GET", "big") == b"$%d\r\n%s\r\n" % (size, value)
        assert s.endpoint.session.tx.announced >= 1


def test_pipelined_batch():
    n = 3000
    payload = b"".join(resp("SET", f"p:{i}", i) for i in range(n)) + resp("MGET", "p:0", "p:2999")
    got = over_rdma(payload, n + 1)
    assert got == b"+OK\r\n" * n + b"*2\r\n$1\r\n0\r\n$4\r\n2999\r\n"


@valkey
def test_valkey_cli_session_matches_tcp():
    script = b"SELECT 4\nFLUSHDB\nSET a 1\nINCR a\nGET a\nRPUSH q x y\nLRANGE q 0 -1\nGET nope\n"

    def cli(*transport: str) -> bytes:
        proc = subprocess.run([VCLI, *transport, "-h", HOST], input=script,
                              capture_output=True, timeout=180)
        assert proc.returncode == 0, (transport, proc.stdout, proc.stderr)
        return proc.stdout

    got = cli("--rdma", "-p", str(RDMA_PORT))
    assert got == cli("-p", str(TCP_PORT))
    assert got.splitlines()[-3:] == [b"x", b"y", b""]


@valkey
def test_valkey_benchmark_over_the_link():
    proc = subprocess.run([VBENCH, "--rdma", "-h", HOST, "-p", str(RDMA_PORT), "-n", "20000",
                           "-c", "8", "-P", "16", "--threads", "2", "-t", "set,get", "-d", "512",
                           "-q"], capture_output=True, timeout=600)
    out = proc.stdout.decode()
    assert proc.returncode == 0, (out, proc.stderr)
    assert "SET:" in out and "GET:" in out and "requests per second" in out, out
    with rdma() as s:
        stats = s.call("INFO", "commandstats").decode()
    assert "cmdstat_set:calls=" in stats and "cmdstat_get:calls=" in stats
