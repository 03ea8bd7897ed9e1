"""client-output-buffer-limit, side by side with redis-server: who is disconnected, and when.

A client that pipelines big replies without reading them makes the server hold them. At its
class's hard limit (or after the soft limit's seconds) Redis closes it and logs why; with no
limit (the normal class's default) it keeps it. Each case runs against both servers with the
same limits and the same traffic; the outcome (closed or still connected, the other
connections unharmed) must be the same, and pykv's log must carry Redis's warning.
"""
from __future__ import annotations

import socket
import time

import pytest
from support.resp import RawClient, encode_command

VALUE = b"v" * 100_000
GET = encode_command("GET", "big")
# Redis's default client-output-buffer-limit, restored after each test changes it
DEFAULT_LIMITS = "normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60"


def _silent_client(port: int) -> socket.socket:
    """A connection whose receive buffer stays small and is never read."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(5)
    return sock


def _client_ids(admin: RawClient) -> set[bytes]:
    listing = admin.call("CLIENT", "LIST")
    return {word[3:] for word in listing.split() if word.startswith(b"id=")}


def _send_gets(sock: socket.socket, count: int) -> bool:
    """Pipeline ``count`` GETs of the big value; False once the server has closed us."""
    try:
        sock.sendall(GET * count)
        return True
    except OSError:
        return False


def _closed_by_server(sock: socket.socket, admin: RawClient, before: set[bytes],
                      timeout: float = 15) -> bool:
    """Wait until the silent client is gone from CLIENT LIST (True) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(_client_ids(admin) - before) == 0:
            return True
        time.sleep(0.05)
    return False


def _run(port: int, limit: str, rounds: int, pause: float) -> bool:
    admin = RawClient(port=port)
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", limit) == b"+OK\r\n"
    admin.call("SET", "big", VALUE)
    before = _client_ids(admin)
    sock = _silent_client(port)
    time.sleep(0.1)
    for _ in range(rounds):
        if not _send_gets(sock, 50):
            break
        time.sleep(pause)
    closed = _closed_by_server(sock, admin, before, timeout=3 if "0 0 0" in limit else 15)
    assert admin.call("PING") == b"+PONG\r\n"  # everyone else is still served
    sock.close()
    admin.call("CONFIG", "SET", "client-output-buffer-limit",
               DEFAULT_LIMITS)
    admin.close()
    return closed


CASES = {
    # name: (limit, rounds of 50 GETs, pause between rounds, closed?)
    "hard limit": ("normal 1mb 0 0", 40, 0.0, True),
    "soft limit held past its seconds": ("normal 0 512kb 1", 30, 0.1, True),
    "no limit": ("normal 0 0 0", 4, 0.0, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_normal_class_as_redis(real_redis, pykv_proc, case):
    limit, rounds, pause, expected = CASES[case]
    redis_closed = _run(real_redis.port, limit, rounds, pause)
    pykv_closed = _run(pykv_proc.port, limit, rounds, pause)
    assert redis_closed == expected, f"redis-server: closed={redis_closed} ({case})"
    assert pykv_closed == redis_closed, f"pykv closed={pykv_closed}, redis closed={redis_closed}"


def _limit_log_line(server, since: int, timeout: float = 10) -> str:
    """The output-limit warning pykv logged after ``since`` (waits for it, bounded)."""
    deadline = time.monotonic() + timeout
    while "overcoming of output buffer limits" not in server.log(since=since):
        assert time.monotonic() < deadline, server.log(since=since)
        time.sleep(0.05)
    return next(x for x in server.log(since=since).splitlines()
                if "output buffer limits" in x)


def _logged_omem(line: str) -> int:
    """The omem= field of the output-limit warning's CLIENT LIST part."""
    return int(line.split(" omem=", 1)[1].split(" ", 1)[0])


def test_log_line_names_the_client(pykv_proc):
    since = pykv_proc.log_size()
    assert _run(pykv_proc.port, "normal 1mb 0 0", 40, 0.0)
    line = _limit_log_line(pykv_proc, since)
    # Redis's text with the client's CLIENT LIST line in it
    assert " # Client id=" in line and " addr=127.0.0.1:" in line and " cmd=get " in line, line
    assert line.endswith("scheduled to be closed ASAP for overcoming of output buffer limits.")


def test_pubsub_class_applies_to_subscribers(real_redis, pykv_proc):
    for port in (real_redis.port, pykv_proc.port):
        admin = RawClient(port=port)
        admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0")
        before = _client_ids(admin)
        sub = _silent_client(port)
        sub.sendall(encode_command("SUBSCRIBE", "ch"))
        time.sleep(0.2)
        # the kernel takes up to a few MB of a silent reader's data (tcp_wmem's max, 4 MB
        # by default) before any stays in the server: publish until the subscriber is
        # gone (PUBLISH counts no receiver), at most 12 MB, which the default pubsub
        # limits (32mb 8mb 60) would not close in this time
        for _ in range(120):
            if admin.call("PUBLISH", "ch", VALUE) == b":0\r\n":
                break
        assert _closed_by_server(sub, admin, before), f"subscriber kept on port {port}"
        admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 32mb 8mb 60")
        sub.close()
        admin.close()


def test_a_pipelined_burst_is_closed_at_the_limit(pykv_proc):
    """Redis checks the limit as each reply is added: a 3 KB burst of 200 GETs of 100 KB is
    closed near 1 MB, not after buffering 20 MB of replies."""
    admin = RawClient(port=pykv_proc.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
    admin.call("SET", "big", VALUE)
    since = pykv_proc.log_size()
    sock = _silent_client(pykv_proc.port)
    try:
        _send_gets(sock, 200)
        line = _limit_log_line(pykv_proc, since)
        omem = _logged_omem(line)
        assert omem < 2 << 20, line
    finally:
        sock.close()
        admin.call("CONFIG", "SET", "client-output-buffer-limit",
                   DEFAULT_LIMITS)
        admin.close()


def test_a_subscriber_backlog_in_the_transport_counts_at_each_delivery(pykv_proc):
    """What the transport still holds for a subscriber counts at every delivery, not only
    when its output is written: batches of 9 PUBLISHes of 100 KB (each under the 1 MB limit
    alone) to a subscriber that never reads close it near 1 MB, not at 1 MB plus a batch."""
    admin = RawClient(port=pykv_proc.port)
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0")
    since = pykv_proc.log_size()
    sub = _silent_client(pykv_proc.port)
    batch = encode_command("PUBLISH", "ch", VALUE) * 9
    try:
        sub.sendall(encode_command("SUBSCRIBE", "ch"))
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", pykv_proc.port), timeout=10) as pub:
            for _ in range(200):
                pub.sendall(batch)
                replies = b""
                while replies.count(b"\r\n") < 9:
                    replies += pub.recv(4096)
                if b":0\r\n" in replies:  # the subscriber is gone
                    break
        line = _limit_log_line(pykv_proc, since)
        omem = _logged_omem(line)
        assert omem < 1300 << 10, line
    finally:
        sub.close()
        admin.call("CONFIG", "SET", "client-output-buffer-limit",
                   DEFAULT_LIMITS)
        admin.close()
