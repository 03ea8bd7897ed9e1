"""Replies sent to the socket from C (ClientCore.send_directly, plain TCP and unix sockets):
the byte stream a client reads must be exactly its replies in order, also when a reply only
partly fits in the kernel and its transport holds the rest, and the output counters
(INFO's total_net_output_bytes) must count every byte.
"""
from __future__ import annotations

import socket
import time

import pytest
from support.resp import RawClient, encode_command

from pykv.testing import Server

VALUE = b"x" * 200_000
BULK = b"$%d\r\n%s\r\n" % (len(VALUE), VALUE)


@pytest.fixture(scope="module")
def server():
    with Server(unix_socket=True) as srv:
        yield srv


def _connect(server: Server, kind: str) -> socket.socket:
    if kind == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(server.unix_path)
    else:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
    sock.settimeout(10)
    return sock


def _read_exactly(sock: socket.socket, n: int, got: bytearray) -> None:
    while len(got) < n:
        chunk = sock.recv(1 << 16)
        assert chunk, f"closed after {len(got)} of {n} bytes"
        got += chunk


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_replies_stay_in_order_behind_a_transport_backlog(server, kind):
    """Big replies fill the kernel buffer of a slow reader, so the transport holds the
    rest; PINGs sent while the reader drains a little at a time arrive as the socket also
    becomes writable (the read is handled first): their replies must queue behind the
    held bytes, never jump ahead of them."""
    admin = RawClient(port=server.port)
    assert admin.call("SET", "big", VALUE) == b"+OK\r\n"
    sock = _connect(server, kind)
    sock.sendall(encode_command("GET", "big") * 20)
    time.sleep(0.2)  # the server writes what the kernel takes; its transport holds the rest
    expected = bytearray(BULK * 20)
    got = bytearray()
    for i in range(200):
        sock.sendall(encode_command("PING") if i % 2 else encode_command("GET", "big"))
        expected += b"+PONG\r\n" if i % 2 else BULK
        got += sock.recv(8192)  # a little room at a time
    _read_exactly(sock, len(expected), got)
    assert len(got) == len(expected)
    assert got == expected
    sock.close()
    admin.close()


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_output_counters_count_direct_and_queued_bytes(server, kind):
    admin = RawClient(port=server.port)
    assert admin.call("SET", "big", VALUE) == b"+OK\r\n"
    admin.call("CONFIG", "RESETSTAT")
    sock = _connect(server, kind)
    sock.sendall(encode_command("CLIENT", "SETNAME", "counted"))
    got = bytearray()
    _read_exactly(sock, 5, got)
    requests = encode_command("PING") * 10 + encode_command("GET", "big") * 5
    sock.sendall(requests)
    want = 5 + 10 * len(b"+PONG\r\n") + 5 * len(BULK)
    _read_exactly(sock, want, got)
    info = admin.call("INFO", "stats")
    total = int(info.split(b"total_net_output_bytes:")[1].split(b"\r\n")[0])
    # this client's bytes and RESETSTAT's +OK (the INFO reply is counted as it is written)
    assert total == want + len(b"+OK\r\n"), (total, want)
    sock.close()
    admin.close()


def test_quit_reply_is_sent_before_the_close(server):
    sock = _connect(server, "tcp")
    sock.sendall(encode_command("PING") + encode_command("QUIT") + encode_command("PING"))
    got = bytearray()
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        got += chunk
    assert got == b"+PONG\r\n+OK\r\n"
    sock.close()


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_replies_of_every_size_one_at_a_time(server, kind):
    """Each reply sent whole from a buffer kept (emptied) from the last one, or replaced
    after a big one: what arrives is each reply exactly."""
    admin = RawClient(port=server.port)
    sizes = [1, 100, 20_000, 3, 16_000, 70_000, 0, 5]
    for i, size in enumerate(sizes):
        admin.call("SET", f"k{i}", b"y" * size)
    sock = _connect(server, kind)
    got = bytearray()
    for _ in range(3):
        for i, size in enumerate(sizes):
            sock.sendall(encode_command("GET", f"k{i}"))
            want = b"$%d\r\n%s\r\n" % (size, b"y" * size)
            _read_exactly(sock, len(want), got)
            assert got == want
            del got[:]
            sock.sendall(encode_command("PING"))
            _read_exactly(sock, 7, got)
            assert got == b"+PONG\r\n"
            del got[:]
    sock.close()
    admin.close()
