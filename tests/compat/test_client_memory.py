"""CLIENT LIST's memory fields against redis-server: the same clients in the same states.

Each case puts one connection in a state on both servers (never used, after a command,
watching keys, in MULTI with queued commands, subscribed, idle past the cron's 2 seconds,
holding an announced big argument, not reading big replies) and compares its line.
``qbuf``, ``argv-mem``, ``multi-mem``, ``obl``, ``oll``, ``omem`` and ``tot-mem`` less
``rbs`` (the reply buffer's size follows the cron's resizing, a timing matter) are Redis's
to the byte where Redis's figure is deterministic; a big argument's buffer and unread
replies are allocator-dependent and held to 20%.
"""
from __future__ import annotations

import socket
import time

import pytest
from support.resp import RawClient, encode_command

EXACT = ("qbuf", "qbuf-free", "argv-mem", "multi-mem", "obl", "oll", "omem")


def _fields(line: bytes) -> dict[str, str]:
    return dict(word.split("=", 1) for word in line.decode().split(" "))


def _line(admin: RawClient, client_id: bytes) -> dict[str, str]:
    reply = admin.call("CLIENT", "LIST", "ID", client_id.decode())
    body = reply.split(b"\r\n", 1)[1].rstrip(b"\r\n")
    assert body, f"client {client_id!r} is gone"
    return _fields(body)


def _memory(f: dict[str, str]) -> dict[str, int]:
    out = {k: int(f[k]) for k in EXACT}
    out["tot-mem - rbs"] = int(f["tot-mem"]) - int(f["rbs"])
    return out


def _connect(port: int) -> tuple[socket.socket, bytes]:
    """A raw connection and its client id (read with CLIENT ID, one command)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(5)
    sock.sendall(encode_command("CLIENT", "ID"))
    reply = sock.recv(100)
    return sock, reply[1:-2]


def _run(sock: socket.socket, *commands: tuple) -> None:
    sock.sendall(b"".join(encode_command(*cmd) for cmd in commands))
    time.sleep(0.1)
    sock.recv(1 << 16)


STATES = {
    "after a command": [("SET", "k", "v")],
    "watching": [("WATCH", "a", "b", "c")],
    "in multi": [("MULTI",), ("SET", "a", "b"), ("SET", "c", "dddd"), ("INCR", "n")],
    "patterns": [("PSUBSCRIBE", "a*", "b*", "c*")],
    "channels": [("SUBSCRIBE", "x", "y")],
    "shard channels": [("SSUBSCRIBE", "s1", "s2", "s3")],
}


def _states(port: int) -> dict[str, dict[str, int]]:
    admin = RawClient(port=port)
    socks = []
    try:
        out = {}
        for name, commands in STATES.items():
            sock, cid = _connect(port)
            socks.append(sock)
            _run(sock, *commands)
            out[name] = _memory(_line(admin, cid))
        return out
    finally:
        for sock in socks:
            sock.close()
        admin.close()


def test_memory_fields_per_state(real_redis, pykv_proc):
    real, ours = _states(real_redis.port), _states(pykv_proc.port)
    for name in STATES:
        assert ours[name] == real[name], (name, real[name], ours[name])


def test_own_line_counts_the_running_command(real_redis, pykv_proc):
    got = []
    for port in (real_redis.port, pykv_proc.port):
        c = RawClient(port=port)
        f = _fields(c.call("CLIENT", "INFO").split(b"\r\n", 1)[1].rstrip(b"\r\n"))
        got.append(_memory(f))
        c.close()
    assert got[1] == got[0]
    assert got[0]["qbuf"] == 26 and got[0]["argv-mem"] == 10  # *2 $6 CLIENT $4 INFO


def test_unused_and_idle_clients(real_redis, pykv_proc):
    """A connection that never sent anything, and one idle past the cron's 2 seconds (its
    query buffer's room freed): Redis's figures exactly, tot-mem included."""
    socks, ids = [], []
    for port in (real_redis.port, pykv_proc.port):
        unused = socket.create_connection(("127.0.0.1", port))
        idle, cid = _connect(port)
        _run(idle, ("SET", "k", "v"))
        socks += [unused, idle]
        ids.append(cid)
    try:
        for port in (real_redis.port, pykv_proc.port):
            admin = RawClient(port=port)
            unused_lines = [ln for ln in admin.call("CLIENT", "LIST").split(b"\n")
                            if b" cmd=NULL " in ln]
            assert unused_lines, port
            f = _fields(unused_lines[-1].rstrip(b"\r"))
            assert (f["qbuf"], f["qbuf-free"], f["omem"]) == ("0", "4", "0"), f
            assert int(f["tot-mem"]) - int(f["rbs"]) == 768 + 8, f  # struct + empty sds
            admin.close()
        time.sleep(3.5)
        got = []
        for port, cid in zip((real_redis.port, pykv_proc.port), ids, strict=True):
            admin = RawClient(port=port)
            f = _fields_after_idle(admin, cid)
            got.append(_memory(f))
            admin.close()
        assert got[1] == got[0]
        assert got[0]["qbuf-free"] == 0 and got[0]["tot-mem - rbs"] == 768 + 8
    finally:
        for sock in socks:
            sock.close()


def _fields_after_idle(admin: RawClient, cid: bytes) -> dict[str, str]:
    """The idle client's line once the cron has freed its query buffer's room."""
    deadline = time.monotonic() + 5
    while True:
        f = _line(admin, cid)
        if f["qbuf-free"] == "0" or time.monotonic() > deadline:
            return f
        time.sleep(0.1)


def test_announced_big_argument(real_redis, pykv_proc):
    """A bulk of 32 KB or more gets a buffer of its whole size once its length is read."""
    got = []
    for port in (real_redis.port, pykv_proc.port):
        admin = RawClient(port=port)
        sock, cid = _connect(port)
        sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$300000\r\n" + b"x" * 5000)
        time.sleep(0.2)
        got.append(_line(admin, cid))
        sock.close()
        admin.close()
    real, ours = got
    assert (ours["qbuf"], ours["argv-mem"]) == (real["qbuf"], real["argv-mem"]) == ("5000", "4")
    assert int(ours["tot-mem"]) == pytest.approx(int(real["tot-mem"]), rel=0.2)


@pytest.mark.parametrize("gets", [200])
def test_unread_replies_omem(real_redis, pykv_proc, gets):
    """A client that pipelines GETs of 100 KB and reads nothing: the reply list Redis holds
    (omem) and pykv's figure for the same unread replies are within 20%."""
    got = []
    value = b"v" * 100_000
    for port in (real_redis.port, pykv_proc.port):
        admin = RawClient(port=port)
        admin.call("SET", "memtest:big", value)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(encode_command("CLIENT", "ID"))
        time.sleep(0.1)
        cid = sock.recv(100)[1:-2]
        sock.sendall(encode_command("GET", "memtest:big") * gets)
        f = _stable_line(admin, cid)
        got.append(f)
        sock.close()
        admin.call("DEL", "memtest:big")
        admin.close()
    real, ours = got
    print("redis", {k: real[k] for k in EXACT}, "pykv", {k: ours[k] for k in EXACT})
    assert int(real["omem"]) > 10_000_000
    assert int(ours["omem"]) == pytest.approx(int(real["omem"]), rel=0.2)
    assert int(ours["tot-mem"]) == pytest.approx(int(real["tot-mem"]), rel=0.2)


def _stable_line(admin: RawClient, cid: bytes) -> dict[str, str]:
    """The client's line once its omem stopped changing (every GET answered)."""
    deadline = time.monotonic() + 10
    last = None
    while True:
        f = _line(admin, cid)
        if last is not None and f["omem"] == last["omem"] and f["omem"] != "0":
            return f
        assert time.monotonic() < deadline, f"omem still moving: {f}"
        last = f
        time.sleep(0.3)
