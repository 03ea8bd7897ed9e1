"""The server's ``rdma`` listener on real verbs, end to end, with each real-verbs backend:
the compiled one on libibverbs/librdmacm (``ibverbs``) and pyverbs (server and client use
the same backend; the interop tests pit the compiled one against libvalkey).

Needs an RDMA device: these run inside the soft-RoCE VM (``tests/rdma/test_vm.py`` boots it)
or on any host with one (``RXE_IP`` = an IP of an RDMA-capable interface). Elsewhere they
skip. Emulated RDMA under TCG has tail latencies of tens of ms: timeouts are generous.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from pykv.rdma.client import RdmaError, RdmaSocket
from pykv.testing import Server

pytestmark = [
    pytest.mark.rdma_verbs,
    pytest.mark.skipif(not os.path.exists("/dev/infiniband/rdma_cm"),
                       reason="no RDMA device (runs inside the soft-RoCE VM)"),
    pytest.mark.timeout(600),
]

IP = os.environ.get("RXE_IP", "10.77.0.1")


@pytest.fixture(scope="module", params=["ibverbs", "pyverbs"])
def server(request):
    backend = request.param
    srv = Server(start_timeout=120, config={"protected-mode": "no"})
    srv.rdma_backend = backend
    # RDMA shares the TCP port number (different port spaces)
    srv.extra_args += ["--listener",
                       f"rdma,bind={IP},port={srv.port},rx-size=65536,backend={backend},"
                       "keepalive=1"]
    with srv:
        yield srv
        # the VM console is the only place to read it afterwards
        sys.__stdout__.write("----- pykv server log -----\n" + srv.log()[-20000:] + "\n")


def connect(server) -> RdmaSocket:
    return RdmaSocket(IP, server.port, timeout=60, connect_timeout=30,
                      backend=server.rdma_backend)


def test_auto_prefers_the_compiled_backend(server):
    from pykv.rdma import verbs as v

    assert v.get_backend("auto").name == "ibverbs"
    with connect(server) as s:
        want = {"ibverbs": "IbvQP", "pyverbs": "PyverbsQP"}[server.rdma_backend]
        assert type(s.qp).__name__ == want
        assert s.call("CLIENT", "INFO").startswith(b"$")


def test_ping_set_get(server):
    with connect(server) as s:
        assert s.call("PING") == b"+PONG\r\n"
        assert s.call("SET", "k", "v") == b"+OK\r\n"
        assert s.call("GET", "k") == b"$1\r\nv\r\n"


def test_pipelining(server):
    with connect(server) as s:
        n = 500
        s.sendall(b"".join(b"*3\r\n$3\r\nSET\r\n$2\r\nk%d\r\n$1\r\n%d\r\n" % (i % 10, i % 10)
                           for i in range(n)))
        want = b"+OK\r\n" * n
        got = bytearray()
        while len(got) < len(want):
            got += s.recv(1 << 20)
        assert bytes(got) == want


@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_values_crossing_the_64k_window(server, size):
    value = os.urandom(size // 2).hex().encode()
    with connect(server) as s:
        assert s.call("SET", "big", value) == b"+OK\r\n"
        assert s.call("GET", "big") == b"$%d\r\n%s\r\n" % (size, value)
        assert s.endpoint.session.tx.announced >= size // 65536


def test_concurrent_connections(server):
    socks = [connect(server) for _ in range(8)]
    try:
        for i, s in enumerate(socks):
            s.sendall(b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(str(i)), str(i).encode()))
        for i, s in enumerate(socks):
            want = b"$%d\r\n%d\r\n" % (len(str(i)), i)
            got = bytearray()
            while len(got) < len(want):
                got += s.recv(4096)
            assert bytes(got) == want
    finally:
        for s in socks:
            s.close()


def test_keepalives_reach_an_idle_client(server):
    with connect(server) as s:
        time.sleep(3.5)
        assert s.call("PING") == b"+PONG\r\n"
        assert s.endpoint.session.ctrl_received.get(2, 0) >= 1


CRASHER = r"""
import os, sys
from pykv.rdma.client import RdmaSocket
s = RdmaSocket(sys.argv[1], int(sys.argv[2]), timeout=60, connect_timeout=30,
               backend=sys.argv[3])
s.call("SET", "crashed", "1")
os._exit(0)
"""


def test_client_exit_without_disconnect(server):
    subprocess.run([sys.executable, "-c", CRASHER, IP, str(server.port), server.rdma_backend],
                   timeout=180, check=True)
    with connect(server) as s:
        assert s.call("GET", "crashed") == b"$1\r\n1\r\n"


def test_server_drops_unknown_opcode(server):
    bad = connect(server)
    good = connect(server)
    try:
        bad.endpoint.session.actions.append(_raw_send(bad))   # opcode 9: not in the protocol
        bad.endpoint._execute()
        with pytest.raises((RdmaError, TimeoutError)):
            for _ in range(30):
                bad.call("PING")
                time.sleep(0.5)
        assert good.call("PING") == b"+PONG\r\n"
        assert "unknown cmd" in server.log()
    finally:
        bad.close()
        good.close()


def _raw_send(sock: RdmaSocket):
    from pykv.rdma.session import PostSend

    return PostSend(sock.endpoint.session._send_ctrl_slot(), b"\x00\x09" + b"\x00" * 30)


def test_addresses_and_attributed_disconnect(server):
    with connect(server) as s:
        local = s.qp.local_address
        assert local.startswith(IP + ":")
        listing = s.call("CLIENT", "LIST")
        assert f"addr={local} ".encode() in listing
        assert f"laddr={IP}:{server.port} ".encode() in listing
    # the DISCONNECTED event was matched to this connection (event->id; pyverbs: read via
    # ctypes)
    deadline = time.monotonic() + 60
    while f"client {local} disconnected" not in server.log() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert f"client {local} disconnected (CM event 10)" in server.log()
