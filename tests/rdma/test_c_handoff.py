"""An RDMA client's requests and replies handed over by C calls (pykv.util._byteio): a
server in this process, on uvloop, with a software-fabric RDMA listener.

What must hold: the endpoint gives a client's bytes to its ``read_ready`` and posts the
replies that can leave at once from the client's buffer (``take``), with no call of the
connection's Python ``write``; a reply that cannot (the peer's window full, a reply
queued before it) goes through ``write`` and nothing overtakes it; a reply outside the
client's own completion handling (a message published by another client) is posted and
its fabric output watched; a reply too large to post inline is staged; closing hands the
last replies back to ``write``.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import socket

import pytest
from support.resp import encode_command
from support.uvserver import serve_on_uvloop

uvloop = pytest.importorskip("uvloop")

from pykv.net import rdma as net_rdma  # noqa: E402
from pykv.net._readmux import read_mux  # noqa: E402
from pykv.rdma.client import RdmaSocket  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(scenario, monkeypatch) -> None:
    """``scenario(port, writes, listener)`` against a fresh in-process server; ``writes``
    lists the size of every reply that went through ``RdmaConnection.write``."""
    writes: list[int] = []
    real_write = net_rdma.RdmaConnection.write

    def counted(self, data):
        writes.append(len(data))
        return real_write(self, data)

    monkeypatch.setattr(net_rdma.RdmaConnection, "write", counted)
    port = free_port()

    def args(tmp: str) -> list[str]:
        fabric = os.path.join(tmp, "fabric")
        os.mkdir(fabric)
        monkeypatch.setenv("PYKV_SOFTRDMA_DIR", fabric)
        return ["--port", str(port), "--bind", "127.0.0.1",
                "--listener", f"rdma,bind=127.0.0.1,port={port},backend=soft"]

    async def run(server, tmp):
        listener = next(lst for lst in server.listeners
                        if isinstance(lst, net_rdma.RdmaListener))
        try:
            await scenario(port, writes, listener)
        finally:
            listener.abort_all()

    serve_on_uvloop(args, run)


@contextlib.asynccontextmanager
async def _connected(port: int, **kw):
    sock = await asyncio.to_thread(RdmaSocket, "127.0.0.1", port, timeout=20, backend="soft",
                                   **kw)
    try:
        yield sock
    finally:
        sock.close()


async def _settle(predicate) -> None:
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    assert predicate()


async def _exchange(sock: RdmaSocket, request: bytes, reply_len: int) -> bytes:
    def run() -> bytes:
        sock.sendall(request)
        got = b""
        while len(got) < reply_len:
            got += sock.recv(1 << 20)
        return got
    return await asyncio.to_thread(run)


def test_requests_and_replies_pass_by_c_calls(monkeypatch):
    async def scenario(port, writes, listener):
        async with _connected(port) as sock:
            assert await _exchange(sock, encode_command("SET", "k", "v"), 5) == b"+OK\r\n"
            batch = encode_command("GET", "k") * 200 + encode_command("INCR", "n")
            assert await _exchange(sock, batch, 7 * 200 + 4) == b"$1\r\nv\r\n" * 200 + b":1\r\n"
            (conn,) = listener.conns.values()
            assert conn.endpoint.on_data == conn._drop_data   # the bytes came by read_ready
            assert writes == []
    _run(scenario, monkeypatch)


def test_a_full_window_queues_and_nothing_overtakes(monkeypatch):
    """The client's 64 KiB window cannot hold a 300 KB reply: it goes through write in
    pieces, and the small replies pipelined behind it wait for it."""
    async def scenario(port, writes, listener):
        async with _connected(port, rx_size=65536) as sock:
            value = os.urandom(300_000)
            assert await _exchange(sock, encode_command("SET", "big", value), 5) == b"+OK\r\n"
            batch = (encode_command("GET", "big") + encode_command("PING") * 3
                     + encode_command("GET", "big") + encode_command("PING"))
            big = b"$300000\r\n" + value + b"\r\n"
            want = big + b"+PONG\r\n" * 3 + big + b"+PONG\r\n"
            assert await _exchange(sock, batch, len(want)) == want
            assert writes   # the window ran out: the rest waited in the session
            # and once drained, small replies are posted from C again
            del writes[:]
            assert await _exchange(sock, encode_command("PING"), 7) == b"+PONG\r\n"
            assert writes == []
    _run(scenario, monkeypatch)


def test_a_reply_outside_the_clients_own_events(monkeypatch):
    """A message published by a TCP client reaches an RDMA subscriber, from C."""
    async def scenario(port, writes, listener):
        async with _connected(port) as sub:
            hello = b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
            assert await _exchange(sub, encode_command("SUBSCRIBE", "ch"), len(hello)) == hello
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            message = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n"
            got = asyncio.create_task(_exchange(sub, b"", len(message) * 20))
            for _ in range(20):
                writer.write(encode_command("PUBLISH", "ch", "hello"))
                assert await asyncio.wait_for(reader.readexactly(4), 5) == b":1\r\n"
            assert await asyncio.wait_for(got, 20) == message * 20
            assert writes == []
            writer.close()
    _run(scenario, monkeypatch)


def test_replies_too_large_to_inline_are_staged(monkeypatch):
    async def scenario(port, writes, listener):
        async with _connected(port) as sock:
            (conn,) = listener.conns.values()
            conn.qp.max_inline_data = 16   # as a NIC with a small inline limit
            value = os.urandom(5000)
            assert await _exchange(sock, encode_command("SET", "v", value), 5) == b"+OK\r\n"
            want = (b"$5000\r\n" + value + b"\r\n") * 10
            assert await _exchange(sock, encode_command("GET", "v") * 10, len(want)) == want
            assert conn.endpoint.tx_mr is not None
            assert writes == []
    _run(scenario, monkeypatch)


def test_quit_closes_after_its_reply(monkeypatch):
    async def scenario(port, writes, listener):
        async with _connected(port) as sock:
            assert await _exchange(sock, encode_command("PING") + encode_command("QUIT"),
                                   12) == b"+PONG\r\n+OK\r\n"
            await _settle(lambda: not listener.conns)
    _run(scenario, monkeypatch)


def test_the_loop_reader_watches_the_endpoint_fds_while_connected(monkeypatch):
    async def scenario(port, writes, listener):
        mux = read_mux(asyncio.get_running_loop())
        before = mux.registered()
        async with _connected(port) as a, _connected(port) as b, _connected(port) as c:
            for sock in (a, b, c):
                assert await _exchange(sock, encode_command("PING"), 7) == b"+PONG\r\n"
            fds = [fd for conn in listener.conns.values() for fd in conn._fds]
            assert len(fds) >= 3 and all(fd in conn._mux_fds
                                         for conn in listener.conns.values()
                                         for fd in conn._fds)
            assert mux.registered() == before + len(fds)
        await _settle(lambda: not listener.conns)
        assert mux.registered() == before
    _run(scenario, monkeypatch)


def test_an_exception_in_one_client_drops_that_connection_only(monkeypatch):
    async def scenario(port, writes, listener):
        loop = asyncio.get_running_loop()
        reported = []
        loop.set_exception_handler(lambda lp, ctx: reported.append(ctx))
        async with _connected(port) as good, _connected(port) as bad:
            assert await _exchange(good, encode_command("PING"), 7) == b"+PONG\r\n"
            assert await _exchange(bad, encode_command("PING"), 7) == b"+PONG\r\n"
            victim = max(listener.conns.values(), key=lambda c: c.handler.id)

            def explode():
                raise RuntimeError("boom")

            monkeypatch.setattr(victim.handler, "protocol_error", lambda msg: explode())
            await asyncio.to_thread(bad.sendall, b"*1\r\n$x\r\n")   # a protocol error
            await _settle(lambda: victim.closed)
            assert any(isinstance(ctx.get("exception"), RuntimeError) for ctx in reported)
            assert await _exchange(good, encode_command("PING"), 7) == b"+PONG\r\n"
    _run(scenario, monkeypatch)
