"""An RDMA client while a script holds the loop (pykv.net.busy): answered as Redis answers
every client then (-BUSY, SCRIPT KILL), by the endpoint's own CQ handling, never by reading
its completion channel as if it were a socket."""
from __future__ import annotations

import threading
import time

from support.busy import busy_pair, wait_busy

from pykv.rdma.client import RdmaSocket

LOOP = "local i = 0 while true do i = i + 1 end"


def test_rdma_client_gets_busy_and_can_kill_the_script(rdma_server):
    with busy_pair(rdma_server.port) as (admin, runner), \
            RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) as rsock:
        assert rsock.call("PING") == b"+PONG\r\n"
        result: list[bytes] = []
        t = threading.Thread(target=lambda: result.append(runner.call("EVAL", LOOP, "0")))
        t.start()
        try:
            wait_busy(admin)
            for _ in range(3):
                assert rsock.call("PING").startswith(b"-BUSY"), "no -BUSY over RDMA"
            assert rsock.call("GET", "k").startswith(b"-BUSY")
            assert rsock.call("SCRIPT", "KILL") == b"+OK\r\n"
            t.join(10)
            assert not t.is_alive()
            assert result and result[0].startswith(b"-ERR Script killed by user with SCRIPT KILL")
        finally:
            if t.is_alive():
                admin.call("SCRIPT", "KILL")
                t.join(10)
        # the connection is intact afterwards, its completions still signalled
        assert rsock.call("SET", "k", "v") == b"+OK\r\n"
        assert rsock.call("GET", "k") == b"$1\r\nv\r\n"


def test_rdma_request_sent_just_before_the_script_ends(rdma_server):
    """A request that arrives while the script runs but after the last poll is served
    once the loop is back: no lost completion event."""
    with busy_pair(rdma_server.port) as (admin, runner), \
            RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) as rsock:
        body = "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] " \
               "while true do local n = redis.call('TIME') " \
               "if n[1] * 1000000 + n[2] - s > 300000 then break end end return 1"
        t = threading.Thread(target=lambda: runner.call("EVAL", body, "0"))
        t.start()
        try:
            wait_busy(admin)
            rsock.sendall(b"*1\r\n$4\r\nPING\r\n")
            time.sleep(0.05)
            got = b""
            deadline = time.monotonic() + 10
            while not got.endswith(b"\r\n") and time.monotonic() < deadline:
                got += rsock.recv(1 << 16)
            assert got.startswith((b"-BUSY", b"+PONG")), got
        finally:
            t.join(10)
        assert rsock.call("PING") == b"+PONG\r\n"


def test_script_run_by_an_rdma_client(rdma_server):
    """The script's caller is RDMA (its endpoint is mid-delivery, not drained again by the
    poller); another RDMA client gets -BUSY and kills it; the caller gets one reply."""
    with busy_pair(rdma_server.port) as (admin, _), \
            RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) as runner, \
            RdmaSocket("127.0.0.1", rdma_server.port, timeout=20) as other:
        result: list[bytes] = []
        t = threading.Thread(target=lambda: result.append(runner.call("EVAL", LOOP, "0")))
        t.start()
        try:
            wait_busy(admin)
            assert other.call("PING").startswith(b"-BUSY")
            assert other.call("SCRIPT", "KILL") == b"+OK\r\n"
            t.join(10)
            assert result and result[0].startswith(b"-ERR Script killed by user")
        finally:
            if t.is_alive():
                admin.call("SCRIPT", "KILL")
                t.join(10)
        assert runner.call("PING") == b"+PONG\r\n"   # nothing else was queued for it
        assert runner.call("ECHO", "x") == b"$1\r\nx\r\n"
