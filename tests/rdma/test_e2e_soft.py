"""The full server over its ``rdma`` listener (software fabric), clients in this process.

The server is a separate process with TCP and RDMA on the same port; RDMA replies are
compared byte for byte with TCP replies of the same server.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest
import redis
from rawpeer import RawPeer
from rdma_support import RdmaServer, exchange, resp

from pykv.rdma import messages as m
from pykv.rdma import verbs as v
from pykv.rdma.client import RdmaError, RdmaSocket
from pykv.rdma.redis_py import RdmaConnection


def tcp_call(port: int, payload: bytes, expect_replies: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        return exchange(s, payload, expect_replies)


def rdma_call(sock: RdmaSocket, payload: bytes, expect_replies: int) -> bytes:
    return exchange(sock, payload, expect_replies)


@pytest.fixture
def rsock(rdma_server):
    s = RdmaSocket("127.0.0.1", rdma_server.port, timeout=20)
    yield s
    s.close()


COMPAT = [
    ("PING",), ("ECHO", "hello"), ("SET", "k", "v"), ("GET", "k"), ("GET", "missing"),
    ("INCR", "n"), ("INCRBY", "n", 41), ("APPEND", "k", "xyz"), ("STRLEN", "k"),
    ("MSET", "a", 1, "b", 2), ("MGET", "a", "b", "c"), ("EXISTS", "a", "b", "zz"),
    ("DEL", "a"), ("TYPE", "k"), ("LPUSH", "l", 1, 2, 3), ("LRANGE", "l", 0, -1),
    ("HSET", "h", "f", "v", "g", "w"), ("HGETALL", "h"), ("ZADD", "z", 1, "a", 2, "b"),
    ("ZRANGE", "z", 0, -1, "WITHSCORES"), ("SET", "k"), ("NOSUCHCOMMAND", 1),
    ("INCR", "k"), ("MULTI",), ("SET", "t", 1), ("INCR", "t"), ("EXEC",),
    ("SET", "e", "x", "PX", 100000), ("PTTL", "nokey"), ("DEL", "k", "n", "l", "h", "z", "t", "e"),
]


def test_compat_sequence_matches_tcp_byte_for_byte(rdma_server, rsock):
    payload = b"".join(resp(*c) for c in COMPAT)
    via_rdma = rdma_call(rsock, payload, len(COMPAT))
    via_tcp = tcp_call(rdma_server.port, payload, len(COMPAT))
    assert via_rdma == via_tcp
    assert via_rdma.startswith(b"+PONG\r\n$5\r\nhello\r\n+OK\r\n")


def test_one_command_at_a_time(rsock):
    assert rsock.call("PING") == b"+PONG\r\n"
    assert rsock.call("SET", "solo", "1") == b"+OK\r\n"
    assert rsock.call("GET", "solo") == b"$1\r\n1\r\n"


def test_pipelining_5000(rsock):
    n = 5000
    payload = b"".join(resp("SET", f"p{i}", i) for i in range(n)) + resp("GET", "p4999")
    out = rdma_call(rsock, payload, n + 1)
    assert out == b"+OK\r\n" * n + b"$4\r\n4999\r\n"


@pytest.mark.parametrize("size", [100_000, 1_000_000, 4_000_000])
def test_values_larger_than_the_window(rdma_server, rsock, size):
    """rx-size is 64 KiB: every direction re-announces its window many times."""
    value = os.urandom(size // 2).hex().encode()[:size]
    assert rsock.call("SET", "big", value) == b"+OK\r\n"
    got = rsock.call("GET", "big")
    assert got == b"$%d\r\n%s\r\n" % (size, value)
    # the server announced its 64 KiB window again each time it was filled
    assert rsock.endpoint.session.tx.announced >= size // 65536
    assert rsock.endpoint.session.tx.length == 65536


def test_staging_mr_only_for_writes_too_large_to_inline(rdma_server):
    """Writes that fit IBV_SEND_INLINE never register the staging MR; the first one that
    does not registers it at the peer's window size, and staged writes arrive intact."""
    with RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) as inline, \
            RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) as staged:
        value = os.urandom(150_000)
        assert inline.call("SET", "inl", value) == b"+OK\r\n"
        assert inline.endpoint.tx_mr is None
        assert staged.endpoint.tx_mr is None
        staged.qp.max_inline_data = 0   # as a NIC without inline support
        assert staged.call("SET", "stg", value) == b"+OK\r\n"
        assert staged.endpoint.tx_mr is not None
        assert staged.endpoint.tx_mr.length == staged.endpoint.session.tx.length == 65536
        assert staged.call("GET", "stg") == b"$150000\r\n" + value + b"\r\n"
        assert inline.call("GET", "stg") == b"$150000\r\n" + value + b"\r\n"


def test_bgsave_fork_with_rdma_clients_connected(rdma_server, rsock):
    """Registered memory is kept out of forked children (MADV_DONTFORK, as ibv_fork_init
    does): the BGSAVE child saves without it and the clients keep working meanwhile."""
    value = os.urandom(200_000)
    assert rsock.call("SET", "forked", value) == b"+OK\r\n"
    assert rsock.call("BGSAVE").startswith(b"+Background saving started")
    deadline = time.monotonic() + 30
    while b"rdb_bgsave_in_progress:1" in rsock.call("INFO", "persistence"):
        assert rsock.call("GET", "forked") == b"$200000\r\n" + value + b"\r\n"
        assert time.monotonic() < deadline, "BGSAVE did not finish"
        time.sleep(0.02)
    assert b"rdb_last_bgsave_status:ok" in rsock.call("INFO", "persistence")
    assert rsock.call("GET", "forked") == b"$200000\r\n" + value + b"\r\n"


def test_redis_py_connection_class(rdma_server):
    pool = redis.ConnectionPool(connection_class=RdmaConnection, host="127.0.0.1",
                                port=rdma_server.port, rdma_backend="soft")
    r = redis.Redis(connection_pool=pool)
    try:
        assert r.ping() is True
        r.set("rp", "x" * 300_000)
        assert r.get("rp") == b"x" * 300_000
        pipe = r.pipeline(transaction=False)
        for _ in range(500):
            pipe.incr("rp-counter")
        assert pipe.execute()[-1] == 500
        assert r.delete("rp", "rp-counter") == 2
    finally:
        pool.disconnect()


def test_many_concurrent_connections(rdma_server):
    socks = [RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) for _ in range(60)]
    try:
        for i, s in enumerate(socks):   # all requests in flight before any reply is read
            s.sendall(resp("SET", f"cc{i}", "v" * (i * 1000)) + resp("GET", f"cc{i}"))
        for i, s in enumerate(socks):
            want = b"+OK\r\n" + b"$%d\r\n%s\r\n" % (i * 1000, b"v" * (i * 1000))
            got = bytearray()
            while len(got) < len(want):
                got += s.recv(1 << 20)
            assert bytes(got) == want
        info = socks[0].call("INFO", "clients")
        match = re.search(rb"connected_clients:(\d+)", info)
        if match:
            assert int(match.group(1)) >= 60
    finally:
        for s in socks:
            s.close()


def test_idle_connection_survives_keepalives(rsock):
    time.sleep(1.8)   # keepalive=0.5 s on this server; this client does not poll meanwhile
    assert rsock.call("PING") == b"+PONG\r\n"
    # on the fabric a non-polling peer does not acknowledge either, so the server sent one
    # keepalive and skipped the rest instead of piling them up
    assert rsock.endpoint.session.ctrl_received.get(m.OP_KEEPALIVE, 0) == 1
    for _ in range(12):  # a polling client sees them keep coming
        time.sleep(0.1)
        rsock.call("PING")
    assert rsock.endpoint.session.ctrl_received.get(m.OP_KEEPALIVE, 0) >= 2


def test_server_closes_connection_on_quit(rsock):
    assert rsock.call("QUIT") == b"+OK\r\n"
    with pytest.raises((RdmaError, TimeoutError)):
        for _ in range(50):
            rsock.call("PING")


def _alive(port: int) -> None:
    with RdmaSocket("127.0.0.1", port, timeout=10) as s:
        assert s.call("PING") == b"+PONG\r\n"


CRASHER = r"""
import os, sys
from pykv.rdma.client import RdmaSocket
s = RdmaSocket("127.0.0.1", int(sys.argv[1]), timeout=10)
s.call("SET", "crash-before", "1")
s.endpoint.write(b"*3\r\n$3\r\nSET\r\n$5\r\ncrash\r\n$2000000\r\n" + b"x" * 300000)
os._exit(0)   # no disconnect, mid-command, writes possibly in flight
"""


def test_peer_crash_mid_transfer(rdma_server):
    bystander = RdmaSocket("127.0.0.1", rdma_server.port, timeout=20)
    try:
        bystander.call("SET", "bystander", "ok")
        proc = subprocess.run([sys.executable, "-c", CRASHER, str(rdma_server.port)],
                              timeout=60, env=dict(os.environ))
        assert proc.returncode == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "transport retry counter exceeded" \
                not in rdma_server.log():
            time.sleep(0.2)
        assert "transport retry counter exceeded" in rdma_server.log()
        assert bystander.call("GET", "bystander") == b"$2\r\nok\r\n"
        assert bystander.call("GET", "crash") == b"$-1\r\n"
        _alive(rdma_server.port)
    finally:
        bystander.close()


def _violation(rdma_server, act, expect_log: str) -> None:
    bystander = RdmaSocket("127.0.0.1", rdma_server.port, timeout=20)
    peer = RawPeer("127.0.0.1", rdma_server.port)
    try:
        peer.announce()
        assert peer.wait(lambda: peer.peer_window is not None)
        act(peer)
        assert peer.wait(lambda: peer.disconnected), "server did not drop the peer"
        deadline = time.monotonic() + 5
        while expect_log not in rdma_server.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert expect_log in rdma_server.log()
        assert bystander.call("PING") == b"+PONG\r\n"
    finally:
        peer.close()
        bystander.close()
    _alive(rdma_server.port)


def test_violation_short_control_message(rdma_server):
    _violation(rdma_server, lambda p: p.send_raw(b"\0\3" + b"\0" * 14), "recv corrupted cmd")


def test_violation_unknown_opcode(rdma_server):
    _violation(rdma_server, lambda p: p.send_raw(b"\0\x07" + b"\0" * 30), "unknown cmd (opcode 7)")


def test_violation_window_overrun(rdma_server):
    # ten bytes written, but the immediate claims more than the whole window
    _violation(rdma_server, lambda p: p.write_imm(b"*1\r\n$4\r\nPI", imm=70000), "window overrun")


def test_violation_bad_rkey(rdma_server):
    def act(p):
        p.write_imm(b"PING\r\n", rkey=p.peer_window.rkey ^ 0x5A5A)
        assert p.wait(lambda: v.WC_REM_ACCESS_ERR in p.errors)
    _violation(rdma_server, act, "CQ handle error status: Work Request Flushed Error")


def test_violation_set_client_feature_nonzero(rdma_server):
    _violation(rdma_server,
               lambda p: p.send_raw(m.Feature(m.OP_SET_CLIENT_FEATURE, b"\0\0", 1).encode()),
               "unsupported features")


def test_feature_negotiation(rdma_server):
    peer = RawPeer("127.0.0.1", rdma_server.port)
    try:
        peer.announce()
        assert peer.wait(lambda: peer.peer_window is not None)
        peer.send_raw(m.Feature(m.OP_GET_SERVER_FEATURE, b"\x01\x02", 0xFFFF).encode())
        assert peer.wait(lambda: any(x[:2] == b"\0\0" for x in peer.messages))
        reply = next(x for x in peer.messages if x[:2] == b"\0\0")
        assert reply == m.Feature(m.OP_GET_SERVER_FEATURE, b"\x01\x02", 0).encode()
        peer.send_raw(m.Feature(m.OP_SET_CLIENT_FEATURE, b"\0\0", 0).encode(), slot=1025)
        peer.write_imm(b"*1\r\n$4\r\nPING\r\n")
        assert peer.wait(lambda: peer.data == b"+PONG\r\n")
        assert not peer.disconnected
    finally:
        peer.close()


def test_rnr_pressure_server_waits_for_reposts(rdma_server):
    """The peer keeps only 4 receives posted and reposts late: the server's writes hit RNR
    and are retried (its QP retries forever) until receives come back; nothing is lost."""
    peer = RawPeer("127.0.0.1", rdma_server.port, receives=4)
    try:
        peer.announce()
        assert peer.wait(lambda: peer.peer_window is not None)
        n = 40
        peer.repost = False
        for i in range(n):  # one command at a time: each reply is a separate server write
            peer.write_imm(resp("ECHO", f"r{i:03d}"))
            peer.step(0.02)
        want = b"".join(b"$4\r\nr%03d\r\n" % i for i in range(n))
        time.sleep(0.3)
        peer.step()
        assert len(peer.data) < len(want)          # stalled behind the empty receive queue
        peer.repost = True
        for i in range(4):
            peer.qp.post_recv(i, peer.ctrl, 32 * i, 32)
        assert peer.wait(lambda: len(peer.data) >= len(want), 20)
        assert bytes(peer.data) == want
        assert not peer.errors
    finally:
        peer.close()


def test_client_list_and_info_show_rdma(rdma_server, rsock):
    local = rsock.qp.local_address
    listing = rsock.call("CLIENT", "LIST")
    assert f"addr={local} ".encode() in listing
    assert f"laddr=127.0.0.1:{rdma_server.port} ".encode() in listing
    info = rsock.call("INFO", "server")
    assert f"name=rdma,bind=127.0.0.1,port={rdma_server.port}".encode() in info


def test_cli_one_shot(rdma_server):
    def cli(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "pykv.rdma.cli", "-h", "127.0.0.1", "-p",
                               str(rdma_server.port), "--backend", "soft", *args],
                              capture_output=True, text=True, input=stdin, timeout=60)

    assert cli("PING").stdout == "PONG\n"
    assert cli("--no-raw", "INCRBY", "cli-n", "5").stdout == "(integer) 5\n"
    out = cli("--no-raw", stdin="RPUSH cli-l a b\nLRANGE cli-l 0 -1\nGET nope\n").stdout
    assert out == '(integer) 2\n1) "a"\n2) "b"\n(nil)\n'
    bad = subprocess.run([sys.executable, "-m", "pykv.rdma.cli", "-h", "127.0.0.1", "-p", "1",
                          "--backend", "soft", "PING"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.startswith("Could not connect")


def test_unattributed_cm_events_fallbacks(fabric_dir, monkeypatch):
    """Without event->id (some pyverbs builds) the server announces on the client's first
    message and finds a disconnected peer by probing all connections."""
    monkeypatch.setenv("PYKV_SOFTRDMA_UNATTRIBUTED", "1")
    with RdmaServer(fabric_dir, keepalive=30) as srv:
        keep = RdmaSocket("127.0.0.1", srv.port, timeout=20)
        gone = RdmaSocket("127.0.0.1", srv.port, timeout=20)
        assert keep.call("PING") == b"+PONG\r\n" and gone.call("PING") == b"+PONG\r\n"
        gone.close()   # DISCONNECTED arrives without its connection
        deadline = time.monotonic() + 10
        while "transport retry counter exceeded" not in srv.log() \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "transport retry counter exceeded" in srv.log()   # the probe found it
        assert keep.call("PING") == b"+PONG\r\n"
        keep.close()


def test_server_announces_on_established_without_waiting(rdma_server):
    """The server's RegisterXferMemory follows ESTABLISHED at once, whatever the client does
    (a client that waits for it before announcing its own window must not hang)."""
    peer = RawPeer("127.0.0.1", rdma_server.port)
    try:
        assert peer.wait(lambda: peer.peer_window is not None, 5)
        assert peer.peer_window.length == 65536
        assert peer.messages[0] == m.RegisterXferMemory(
            peer.peer_window.addr, 65536, peer.peer_window.rkey).encode()
    finally:
        peer.close()


def test_client_message_overtakes_established(fabric_dir, monkeypatch):
    """ESTABLISHED reaches the server after the client's RegisterXferMemory (a real race
    on RDMA CM): the server announces once, on whichever comes first."""
    monkeypatch.setenv("PYKV_SOFTRDMA_ESTABLISHED", "late")
    with RdmaServer(fabric_dir) as srv:
        with RdmaSocket("127.0.0.1", srv.port, timeout=20) as s:
            assert s.call("PING") == b"+PONG\r\n"
            value = b"w" * 200_000
            assert s.call("SET", "late", value) == b"+OK\r\n"
            assert s.call("GET", "late") == b"$200000\r\n" + value + b"\r\n"
            # one announcement at the start, then one per exhausted 64 KiB window: the late
            # ESTABLISHED did not produce a second (offset-resetting) announcement
            sent = s.endpoint.session.bytes_sent
            assert s.endpoint.session.tx.announced == 1 + sent // 65536
