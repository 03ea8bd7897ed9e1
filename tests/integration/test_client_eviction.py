"""maxmemory-clients: client eviction side by side with redis-server.

The same scenario on both servers: ``maxmemory-clients 1mb``, a NO-EVICT client that reads
its replies, ten clients that pipeline GETs of 100 KB without reading and ten that hold an
announced 500 KB argument half sent. Redis evicts the big ones until the clients' sum is
under the limit; pykv must evict about as many (not exactly: Redis checks before each
command, pykv after each read batch), keep the NO-EVICT client, count ``evicted_clients``
and log Redis's line for each eviction.
"""
from __future__ import annotations

import socket
import time

import pytest
from support.resp import RawClient, encode_command
from support.servers import server_pair

VALUE = b"v" * 100_000
BIG_ARG = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000\r\n" + b"x" * 250_000


def _info(c: RawClient, section: str) -> dict[str, str]:
    text = c.call("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def _silent(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


def _wait_settled(admin: RawClient, expected_min: int) -> dict[str, str]:
    """INFO once evicted_clients stopped growing (bounded)."""
    deadline = time.monotonic() + 10
    last = None
    while True:
        stats = _info(admin, "stats")
        if last == stats["evicted_clients"] and int(last) >= expected_min:
            return stats
        assert time.monotonic() < deadline, stats["evicted_clients"]
        last = stats["evicted_clients"]
        time.sleep(0.3)


def _scenario(port: int) -> tuple[int, int, bool]:
    admin = RawClient(port=port)
    admin.call("CLIENT", "NO-EVICT", "on")
    admin.call("SET", "big", VALUE)
    keeper = RawClient(port=port)
    assert keeper.call("CLIENT", "NO-EVICT", "on") == b"+OK\r\n"
    assert admin.call("CONFIG", "SET", "maxmemory-clients", "1mb") == b"+OK\r\n"
    socks = []
    try:
        for _ in range(10):
            sock = _silent(port)
            sock.sendall(encode_command("GET", "big") * 30)
            socks.append(sock)
        for _ in range(10):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(BIG_ARG)
            socks.append(sock)
        stats = _wait_settled(admin, 1)
        for _ in range(5):  # the NO-EVICT client takes big replies and stays
            assert keeper.call("GET", "big").endswith(VALUE + b"\r\n")
        clients = int(_info(admin, "clients")["connected_clients"])
        kept = keeper.call("PING") == b"+PONG\r\n"
        return int(stats["evicted_clients"]), clients, kept
    finally:
        for sock in socks:
            sock.close()
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
        admin.call("DEL", "big")
        keeper.close()
        admin.close()


def test_eviction_as_redis(tmp_path):
    with server_pair({}) as (real_port, pykv_port):
        real = _scenario(real_port)
        ours = _scenario(pykv_port)
    print(f"redis evicted {real[0]} left {real[1]} | pykv evicted {ours[0]} left {ours[1]}")
    assert real[2] and ours[2], "the NO-EVICT client was evicted"
    assert real[0] >= 15
    assert abs(ours[0] - real[0]) <= max(3, real[0] // 5), (real, ours)


def test_log_line_and_percent_limit():
    from pykv.testing import Server

    with Server(config={"maxmemory": "100mb"}) as server:
        admin = RawClient(port=server.port)
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("SET", "big", VALUE)
        since = server.log_size()
        # 1% of maxmemory: about 1 MB
        assert admin.call("CONFIG", "SET", "maxmemory-clients", "1%") == b"+OK\r\n"
        assert admin.call("CONFIG", "GET", "maxmemory-clients").endswith(b"$2\r\n1%\r\n")
        sock = _silent(server.port)
        sock.sendall(encode_command("GET", "big") * 40)
        _wait_settled(admin, 1)
        sock.close()
        log = server.log(since=since)
        line = next(x for x in log.splitlines() if "Evicting client: " in x)
        assert " * Evicting client: id=" in line and " cmd=get " in line, line
        admin.call("CONFIG", "RESETSTAT")
        assert _info(admin, "stats")["evicted_clients"] == "0"
        admin.close()


def test_off_by_default_keeps_big_clients():
    from pykv.testing import Server

    with Server() as server:
        admin = RawClient(port=server.port)
        admin.call("SET", "big", VALUE)
        sock = _silent(server.port)
        sock.sendall(encode_command("GET", "big") * 100)  # the kernel holds ~3 MB of them
        time.sleep(0.5)
        info = _info(admin, "stats")
        assert info["evicted_clients"] == "0"
        mem = _info(admin, "memory")
        assert int(mem["mem_clients_normal"]) > 1_000_000  # the unread replies count
        clients = _info(admin, "clients")
        assert int(clients["client_recent_max_output_buffer"]) > 1_000_000
        assert int(clients["client_recent_max_input_buffer"]) >= 20480  # a read's 16 KB room
        listing = admin.call("CLIENT", "LIST").decode()
        tot = sum(int(w[8:]) for w in listing.split() if w.startswith("tot-mem="))
        assert int(mem["mem_clients_normal"]) == pytest.approx(tot, rel=0.1)  # cron-fresh
        assert int(mem["used_memory"]) > int(mem["mem_clients_normal"])
        sock.close()
        admin.close()


def _evicted_omem(port: int, read_log) -> int:
    admin = RawClient(port=port)
    admin.call("CLIENT", "NO-EVICT", "on")
    admin.call("SET", "big", VALUE)
    admin.call("CONFIG", "SET", "maxmemory-clients", "1mb")
    sock = _silent(port)
    sock.sendall(encode_command("GET", "big") * 200)  # one burst: 20 MB of replies
    try:
        deadline = time.monotonic() + 10
        while "Evicting client: " not in (text := read_log()):
            assert time.monotonic() < deadline, "no client evicted"
            time.sleep(0.05)
        line = next(x for x in text.splitlines() if "Evicting client: " in x)
        return int(line.split(" omem=", 1)[1].split(" ", 1)[0])
    finally:
        sock.close()
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
        admin.close()


def test_a_pipelined_burst_is_evicted_early(tmp_path):
    """Redis checks before each command, so a client pipelining big GETs is evicted about
    when its replies pass the limit, not after the whole burst; pykv measures as the
    burst's replies grow."""
    from support.servers import RealRedis

    from pykv.testing import Server

    log = tmp_path / "redis.log"
    real = RealRedis(extra=["--logfile", str(log)])
    try:
        with Server() as ours:
            real_omem = _evicted_omem(real.port, lambda: log.read_text()
                                      if log.exists() else "")
            ours_omem = _evicted_omem(ours.port, ours.log)
    finally:
        real.stop()
    print(f"omem when evicted: redis {real_omem} pykv {ours_omem}")
    assert real_omem < 3 << 20
    assert ours_omem < 2 * real_omem + (256 << 10), (real_omem, ours_omem)
