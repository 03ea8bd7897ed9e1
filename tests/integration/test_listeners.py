"""Listeners and connection limits: tcp (IPv4, IPv6), unix sockets with permissions, several
``--listener`` at once, ``client-query-buffer-limit`` and ``maxclients``."""
from __future__ import annotations

import os
import socket
import stat
import time

import pytest
from support.resp import RawClient, encode_command

from pykv.testing import Server, ServerError, free_port


def ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback")


def ping_at(family: int, address: object) -> bytes:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(address)
        sock.sendall(b"PING\r\n")
        return sock.recv(64)


def test_tcp_ipv4():
    with Server() as s:
        assert ping_at(socket.AF_INET, ("127.0.0.1", s.port)) == b"+PONG\r\n"
        c = RawClient(port=s.port)
        assert c.call("SET", "k", "v") == b"+OK\r\n"
        assert c.call("GET", "k") == b"$1\r\nv\r\n"
        c.close()


def _port_free_on_both() -> int:
    """A port free on ::1 that nothing holds on 127.0.0.1 either (another server of the
    session may hold an IPv4 port with the number the kernel hands out for ::1)."""
    while True:
        port = free_port("::1")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


@needs_ipv6
def test_tcp_ipv6():
    with Server(host="::1", port=_port_free_on_both()) as s:
        assert ping_at(socket.AF_INET6, ("::1", s.port)) == b"+PONG\r\n"
        with pytest.raises(OSError):  # bound to ::1 only
            ping_at(socket.AF_INET, ("127.0.0.1", s.port))
        assert s.url == f"redis://[::1]:{s.port}"


@needs_ipv6
def test_bind_ipv4_and_ipv6_together():
    port = free_port()
    with Server(port=port, config={"bind": ["127.0.0.1", "::1"]}) as s:
        assert ping_at(socket.AF_INET, ("127.0.0.1", s.port)) == b"+PONG\r\n"
        assert ping_at(socket.AF_INET6, ("::1", s.port)) == b"+PONG\r\n"


def test_unix_socket_permissions(tmp_path):
    # unixsocket/unixsocketperm, and --listener unix with perm=: one server, three sockets
    extra = {0o770: str(tmp_path / "a.sock"), 0o755: str(tmp_path / "b.sock")}
    with Server(unix_socket=True, unixsocketperm=0o700,
                listeners=[f"unix,path={p},perm={m:o}" for m, p in extra.items()]) as s:
        sockets = {0o700: s.unix_path, **extra}
        for perm, path in sockets.items():
            assert stat.S_ISSOCK(os.stat(path).st_mode)
            assert stat.S_IMODE(os.stat(path).st_mode) == perm
            assert ping_at(socket.AF_UNIX, path) == b"+PONG\r\n"
    for path in sockets.values():
        assert not os.path.exists(path)  # removed at shutdown


def test_several_listeners_share_one_keyspace(tmp_path):
    a, b = free_port(), free_port()
    path = str(tmp_path / "l.sock")
    listeners = [f"tcp,bind=127.0.0.1,port={a}", f"tcp,bind=127.0.0.1,port={b}",
                 f"unix,path={path},perm=700"]
    if ipv6_loopback():
        listeners.append(f"tcp,bind=::1,port={a}")
    with Server(port=0, listeners=listeners) as s:
        assert s.endpoint() == ("tcp", "127.0.0.1", a)
        first = RawClient(port=a)
        assert first.call("SET", "shared", "yes") == b"+OK\r\n"
        for client in (RawClient(port=b), RawClient(unix=path)):
            assert client.call("GET", "shared") == b"$3\r\nyes\r\n"
            client.close()
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
        if ipv6_loopback():
            assert ping_at(socket.AF_INET6, ("::1", a)) == b"+PONG\r\n"
        first.close()
        info = server_info(s)
    lines = [ln for ln in info.splitlines() if ln.startswith("listener")]
    assert any("name=tcp" in ln and f"port={a}" in ln for ln in lines), lines
    assert any("name=tcp" in ln and f"port={b}" in ln for ln in lines), lines
    assert any("name=unix" in ln and path in ln for ln in lines), lines


def server_info(s: Server) -> str:
    """``INFO server`` as text."""
    kind, where, port = s.endpoint()
    client = RawClient(port=port) if kind == "tcp" else RawClient(unix=where)
    try:
        reply = client.call("INFO", "server")
    finally:
        client.close()
    assert reply.startswith(b"$"), reply
    return reply.split(b"\r\n", 1)[1].decode()


def test_info_server_listener_lines():
    with Server(unix_socket=True) as s:
        info = server_info(s)
        lines = [ln for ln in info.splitlines() if ln.startswith("listener")]
        assert lines[0].startswith("listener0:name=tcp,")
        assert f"port={s.port}" in lines[0]
        assert any(ln.startswith("listener1:name=unix,") and s.unix_path in ln for ln in lines)


def test_bad_listener_fails_start():
    bad = Server(listeners=["nosuchtype,port=1"], start_timeout=20)
    try:
        with pytest.raises(ServerError) as info:
            bad.start()
    finally:
        bad.stop()
    assert "nosuchtype" in str(info.value)


def test_optional_listener_may_fail(tmp_path):
    listeners = [f"unix,path={tmp_path}/missing-dir/x.sock,optional"]
    with Server(listeners=listeners) as s:
        assert s.ping()


# -- limits --------------------------------------------------------------------------------

def closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True once the server closes the connection (EOF or reset) within ``timeout``."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def test_client_query_buffer_limit_closes_the_client():
    limit = 1024 * 1024  # the smallest value Redis accepts
    with Server(config={"client-query-buffer-limit": "1mb"}) as s:
        # under the limit: fine
        ok = RawClient(port=s.port)
        assert ok.call("SET", "big", "x" * (limit // 2)) == b"+OK\r\n"
        assert ok.call("STRLEN", "big") == b":%d\r\n" % (limit // 2)
        # a bulk announced bigger than the limit, sent past it: the server hangs up
        greedy = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        greedy.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (3 * limit))
        try:
            chunk = b"y" * 65536
            for _ in range((limit + limit // 2) // len(chunk)):
                greedy.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_by_server(greedy)
        greedy.close()
        # an unterminated inline line is capped at 64 KiB long before that
        inline = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        inline.sendall(b"z" * (70 * 1024))
        assert inline.recv(100).startswith(b"-ERR Protocol error: too big inline request")
        inline.close()
        # the others are unaffected and the big SET never happened
        assert ok.call("EXISTS", "k") == b":0\r\n"
        assert ok.call("PING") == b"+PONG\r\n"
        ok.close()


def test_maxclients():
    with Server(config={"maxclients": 3}) as s:
        clients: list[RawClient] = []
        deadline = time.monotonic() + 10
        while len(clients) < 3 and time.monotonic() < deadline:
            c = RawClient(port=s.port)
            # the startup probe's connection may not be reaped yet: retry briefly
            c.send_raw(encode_command("PING"))
            reply = c.read_reply()
            if reply == b"+PONG\r\n":
                clients.append(c)
            else:
                assert reply == b"-ERR max number of clients reached\r\n"
                c.close()
                time.sleep(0.05)
        assert len(clients) == 3
        extra = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        assert extra.recv(100) == b"-ERR max number of clients reached\r\n"
        assert closed_by_server(extra)
        extra.close()
        # freeing a slot lets a new client in
        clients.pop().close()
        deadline = time.monotonic() + 10
        while True:
            c = RawClient(port=s.port)
            c.send_raw(encode_command("PING"))
            reply = c.read_reply()
            if reply == b"+PONG\r\n" or time.monotonic() > deadline:
                break
            c.close()
            time.sleep(0.05)
        assert reply == b"+PONG\r\n"
        clients.append(c)
        for c in clients:
            assert c.call("PING") == b"+PONG\r\n"
            c.close()
