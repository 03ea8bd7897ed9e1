"""Client sockets read from C (pykv.net._readmux): a server in this process, on uvloop, with
its plain TCP and unix clients read by the loop's ReadMux instead of their transports.

What must hold: every such client is read there (and only while it is connected); EOF and
errors still close the connection the way the transport does; a socket number reused by a
new connection reads for the new one; pause/resume holds bytes back and lets them through;
a request bigger than one read arrives whole; an exception out of the client is reported
and drops that connection only.
"""
from __future__ import annotations

import asyncio
import os
import socket

import pytest
from support.resp import encode_command
from support.uvserver import serve_on_uvloop, unix_path

uvloop = pytest.importorskip("uvloop")

from pykv.net._readmux import read_mux  # noqa: E402


def _run(scenario) -> None:
    """Run ``scenario(server, loop, unix_path)`` against a fresh in-process server."""
    serve_on_uvloop(
        lambda tmp: ["--port", "0", "--listener", "tcp,bind=127.0.0.1,port=0",
                     "--unixsocket", unix_path(tmp)],
        lambda server, tmp: scenario(server, asyncio.get_running_loop(), unix_path(tmp)))


def _port(server) -> int:
    return next(lst.spec.port for lst in server.listeners if lst.spec.type == "tcp")


async def _open(server, kind: str, path: str):
    if kind == "unix":
        return await asyncio.open_unix_connection(path)
    return await asyncio.open_connection("127.0.0.1", _port(server))


async def _call(reader, writer, *args, expect: bytes) -> None:
    writer.write(encode_command(*args))
    got = await asyncio.wait_for(reader.readexactly(len(expect)), 5)
    assert got == expect


async def _settle(predicate, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    assert predicate()


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_clients_are_read_by_the_mux_while_connected(kind):
    async def scenario(server, loop, path):
        conns = [await _open(server, kind, path) for _ in range(5)]
        for reader, writer in conns:
            await _call(reader, writer, "PING", expect=b"+PONG\r\n")
        mux = read_mux(loop)
        assert mux.registered() == 5
        assert all(c.conn._mux is mux for c in server.clients.values())
        reader, writer = conns.pop()
        writer.close()  # EOF: the transport takes the socket back and closes it
        await _settle(lambda: len(server.clients) == 4)
        assert mux.registered() == 4
        for reader, writer in conns:
            await _call(reader, writer, "ECHO", "still", expect=b"$5\r\nstill\r\n")
            writer.close()
        await _settle(lambda: not server.clients and mux.registered() == 0)

    _run(scenario)


def test_replies_before_eof_are_delivered():
    """A client that sends its commands and shuts its side gets every reply, then EOF."""
    async def scenario(server, loop, path):
        sock = socket.create_connection(("127.0.0.1", _port(server)))
        sock.setblocking(False)
        await loop.sock_sendall(sock, encode_command("SET", "k", "v") +
                                encode_command("GET", "k") * 3)
        sock.shutdown(socket.SHUT_WR)
        got = bytearray()
        while True:
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 4096), 5)
            if not chunk:
                break
            got += chunk
        assert got == b"+OK\r\n" + b"$1\r\nv\r\n" * 3
        sock.close()
        await _settle(lambda: not server.clients)

    _run(scenario)


def test_a_reset_connection_is_closed():
    async def scenario(server, loop, path):
        sock = socket.create_connection(("127.0.0.1", _port(server)))
        sock.setblocking(False)
        await loop.sock_sendall(sock, encode_command("PING"))
        assert await asyncio.wait_for(loop.sock_recv(sock, 100), 5) == b"+PONG\r\n"
        await _settle(lambda: read_mux(loop).registered() == 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()  # RST
        await _settle(lambda: not server.clients and read_mux(loop).registered() == 0)
        reader, writer = await _open(server, "tcp", path)
        await _call(reader, writer, "PING", expect=b"+PONG\r\n")
        writer.close()

    _run(scenario)


def test_reused_socket_numbers_read_for_the_new_connection():
    async def scenario(server, loop, path):
        fds = set()
        for i in range(30):
            reader, writer = await _open(server, "tcp", path)
            await _call(reader, writer, "ECHO", str(i),
                        expect=b"$%d\r\n%d\r\n" % (len(str(i)), i))
            fds.update(c.conn.fd() for c in server.clients.values())
            writer.close()
            await _settle(lambda: not server.clients)
        assert len(fds) < 30  # the numbers were reused
        assert read_mux(loop).registered() == 0

    _run(scenario)


def test_pause_holds_bytes_back_until_resume():
    async def scenario(server, loop, path):
        reader, writer = await _open(server, "unix", path)
        await _call(reader, writer, "PING", expect=b"+PONG\r\n")
        (client,) = server.clients.values()
        client.conn.pause_reading()
        client.conn.pause_reading()  # (twice: still one resume away)
        writer.write(encode_command("PING"))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(reader.readexactly(7), 0.3)
        assert client.parser.buffered() == 0  # the bytes wait in the kernel
        client.conn.resume_reading()
        assert await asyncio.wait_for(reader.readexactly(7), 5) == b"+PONG\r\n"
        writer.close()

    _run(scenario)


def test_a_pause_before_the_mux_takes_over_holds(monkeypatch):
    """pause_reading at accept, before the callback that moves the socket to the mux: the
    mux must not read it either until resume_reading."""
    from pykv.server.server import Server

    accept = Server.accept

    def accept_paused(self, conn):
        conn.pause_reading()
        return accept(self, conn)

    monkeypatch.setattr(Server, "accept", accept_paused)

    async def scenario(server, loop, path):
        reader, writer = await _open(server, "tcp", path)
        writer.write(encode_command("PING"))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(reader.readexactly(7), 0.3)
        (client,) = server.clients.values()
        assert client.conn._mux is read_mux(loop)
        client.conn.resume_reading()
        assert await asyncio.wait_for(reader.readexactly(7), 5) == b"+PONG\r\n"
        writer.close()

    _run(scenario)


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_a_request_bigger_than_a_read_arrives_whole(kind):
    async def scenario(server, loop, path):
        value = os.urandom(3 << 20)  # twelve reads of 256 KB at the least
        reader, writer = await _open(server, kind, path)
        await _call(reader, writer, "SET", "big", value, expect=b"+OK\r\n")
        await _call(reader, writer, "GET", "big",
                    expect=b"$%d\r\n%s\r\n" % (len(value), value))
        writer.write(encode_command("STRLEN", "big") * 100)
        assert await asyncio.wait_for(reader.readexactly(100 * 10), 5) == \
            b":%d\r\n" % len(value) * 100
        writer.close()

    _run(scenario)


def test_an_exception_in_the_client_drops_that_connection_only():
    class Broken:
        def check(self, client):
            if client.name == b"victim":
                raise RuntimeError("boom")
            return False

    async def scenario(server, loop, path):
        reported = []
        loop.set_exception_handler(lambda lp, ctx: reported.append(ctx))
        victim = await _open(server, "tcp", path)
        other = await _open(server, "tcp", path)
        await _call(*victim, "CLIENT", "SETNAME", "victim", expect=b"+OK\r\n")
        await _call(*other, "PING", expect=b"+PONG\r\n")
        server.client_evictor, server.client_evict_on = Broken(), True
        victim[1].write(encode_command("PING"))
        try:
            assert await asyncio.wait_for(victim[0].read(), 5) in (b"", b"+PONG\r\n")
        except ConnectionResetError:  # (the connection is aborted)
            pass
        await _settle(lambda: len(server.clients) == 1)
        assert [type(ctx["exception"]) for ctx in reported] == [RuntimeError]
        await _call(*other, "PING", expect=b"+PONG\r\n")
        server.client_evict_on = False
        other[1].close()

    _run(scenario)


def test_accepted_tcp_sockets_get_nodelay_and_redis_keepalive():
    """The options set in C at accept (pykv.net._sockopt): TCP_NODELAY, and Redis's
    anetKeepAlive for tcp-keepalive (300 by default: idle 300 s, every 100 s, 3 probes)."""
    async def scenario(server, loop, path):
        reader, writer = await _open(server, "tcp", path)
        await _call(reader, writer, "PING", expect=b"+PONG\r\n")
        (client,) = server.clients.values()
        with socket.socket(fileno=os.dup(client.conn.fd())) as sock:
            opts = [sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
                    sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                    sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)]
        assert [bool(opts[0]), bool(opts[1])] + opts[2:] == [True, True, 300, 100, 3]
        writer.close()

    _run(scenario)


def test_a_socket_the_mux_cannot_watch_stays_with_its_transport(monkeypatch):
    """epoll refusing a socket (its watch limit) must not leave the client unread."""
    import pykv.net.stream as stream

    class Refusing:
        def add(self, *args):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(stream, "read_mux", lambda loop: Refusing())

    async def scenario(server, loop, path):
        reader, writer = await _open(server, "tcp", path)
        for _ in range(3):  # (the first read may come before the switch: later ones after)
            await _call(reader, writer, "PING", expect=b"+PONG\r\n")
            await asyncio.sleep(0.05)
        (client,) = server.clients.values()
        assert client.conn._mux is None
        writer.close()

    _run(scenario)


def test_partial_commands_count_only_the_arguments_received():
    """The argv list is made at its announced size (at most 1024 slots up front): the
    memory figures count the arguments received so far, and a command of more arguments
    than that arrives whole."""
    from pykv.protocol._parser import RequestParser

    parser = RequestParser()
    parser.feed(b"*1000000\r\n$3\r\nabc\r\n$2\r\nde\r\n$4\r\nfg")
    assert parser.get_command() is None
    assert parser.mem_state()[1:] == (4, 2, 5)
    parser.reset()
    args = [b"a%d" % i for i in range(3000)]
    data = b"*3000\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    for i in range(0, len(data), 997):  # (arriving in pieces)
        parser.feed(memoryview(data)[i:i + 997])
        if i + 997 < len(data):
            assert parser.get_command() is None
    assert parser.get_command() == args
    assert parser.mem_state()[1:] == (-1, 0, 0)
