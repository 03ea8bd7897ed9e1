"""Garbage on many concurrent connections never crashes pykv nor stops it serving others.

A seeded generator (``PYKV_FUZZ_SEED`` to change the seed) produces malformed and random
requests: random bytes, RESP-shaped token soup, valid commands with a byte flipped, absurd
counts, oversize inline lines, truncated bulks; each connection then closes, half-closes,
resets (RST) or reads what comes back. Between batches a well-behaved client must get
correct answers promptly. At the end the server must still run and must not have logged a
traceback. The default run is bounded (~2000 connections); the ``slow`` one is ten times
longer with bigger payloads.
"""
from __future__ import annotations

import asyncio
import os
import random
import socket
import struct
import time

import pytest

from pykv.testing import Server

SEED = int(os.environ.get("PYKV_FUZZ_SEED", "20240607"))

# only commands that cannot stop, reconfigure, block or flood the server
SAFE_COMMANDS = [b"PING", b"ECHO", b"SET", b"GET", b"INCR", b"DEL", b"EXISTS", b"MGET",
                 b"APPEND", b"STRLEN", b"LPUSH", b"LRANGE", b"HSET", b"HGET", b"ZADD",
                 b"ZRANGE", b"TYPE", b"TTL", b"EXPIRE", b"GETRANGE", b"SETRANGE", b"NOSUCH"]
TOKENS = [b"*", b"$", b"\r\n", b"\r", b"\n", b"0", b"1", b"-1", b"3", b"99", b"\x00",
          b"PING", b" ", b'"', b"'", b"\\x", b"+", b":", b"%", b"~", b"_"]


def encode(args: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def safe_command(r: random.Random) -> list[bytes]:
    args = [r.choice(SAFE_COMMANDS)]
    for _ in range(r.randint(0, 4)):
        kind = r.random()
        if kind < 0.4:
            args.append(b"k%d" % r.randint(0, 20))
        elif kind < 0.7:
            args.append(str(r.randint(-(2**64), 2**64)).encode())
        else:
            args.append(r.randbytes(r.randint(0, 40)))
    return args


def garbage(r: random.Random, scale: int = 1) -> bytes:
    kind = r.randrange(11)
    if kind == 0:
        return r.randbytes(r.randint(0, 2000 * scale))
    if kind == 1:
        return b"".join(r.choice(TOKENS) for _ in range(r.randint(1, 80)))
    if kind == 2:
        return b"".join(encode(safe_command(r)) for _ in range(r.randint(1, 20)))
    if kind == 3:
        data = bytearray(encode(safe_command(r)) * r.randint(1, 5))
        for _ in range(r.randint(1, 3)):
            data[r.randrange(len(data))] = r.randrange(256)
        return bytes(data)
    if kind == 4:
        n = r.choice([b"2147483648", b"-0", b"01", b"+3", b"9" * 30, b"-9223372036854775809",
                      b"2147483647", b"", b"\x00"])
        return r.choice([b"*", b"*1\r\n$"]) + n + b"\r\n" + r.randbytes(r.randint(0, 50))
    if kind == 5:
        # oversize line: too big inline / count string (rare-ish, costs server memory briefly)
        return r.choice([b"", b"*", b"*1\r\n$"]) + b"A" * (65 * 1024 + r.randint(0, 4096))
    if kind == 6:
        # a large bulk announced, then only part of it
        n = r.randint(10_000, 1_000_000)
        return b"*2\r\n$3\r\nSET\r\n$%d\r\n" % n + r.randbytes(r.randint(0, 5000))
    if kind == 7:
        # inline with quotes, escapes and control bytes
        parts = [r.choice([b'"', b"'", b"\\", b"\\x4", b"\\x41", b"a", b" ", b"\t", b"\x00",
                           b"GET", b"ECHO"]) for _ in range(r.randint(1, 30))]
        return b"".join(parts) + r.choice([b"\r\n", b"\n", b""])
    if kind == 8:
        return b"\r\n" * r.randint(1, 200) + b"*0\r\n*-1\r\n" * r.randint(0, 50)
    if kind == 9:
        # many arguments (auth-free server: allowed), some of them empty
        return encode([b"MGET"] + [b"" if r.random() < 0.3 else b"k"] * r.randint(1, 3000))
    # mixed: good command, garbage, good command
    return encode(safe_command(r)) + r.randbytes(r.randint(1, 200)) + encode([b"PING"])


def note(seen: dict[str, int], reply: bytes) -> None:
    """Count what the garbage provoked, to prove it reached the parser and the commands."""
    if b"-ERR Protocol error" in reply:
        seen["protocol_error"] += 1
    if reply[:1] in (b"+", b":", b"$", b"*"):
        seen["reply"] += 1


async def abuse(port: int, r: random.Random, scale: int, seen: dict[str, int]) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    try:
        for _ in range(r.randint(1, 3)):
            data = garbage(r, scale)
            cut = r.randint(0, len(data))
            writer.write(data[:cut])
            writer.write(data[cut:])
            await asyncio.wait_for(writer.drain(), 5)
        ending = r.randrange(4)
        if ending == 0:  # read a little of whatever comes back
            try:
                note(seen, await asyncio.wait_for(reader.read(65536), 0.05))
            except TimeoutError:
                pass
        elif ending == 1:  # half-close: the server sees EOF while it may still reply
            writer.write_eof()
            try:
                note(seen, await asyncio.wait_for(reader.read(), 0.1))
            except TimeoutError:
                pass
        elif ending == 2:  # reset: SO_LINGER 0 makes close() send RST
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # ending 3: plain close right away
    except (TimeoutError, OSError):
        pass  # the server may close on us mid-write: that is allowed
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


async def health_check(port: int, token: int) -> None:
    """A well-behaved client gets exact answers quickly."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        key = b"health:%d" % token
        writer.write(encode([b"SET", key, b"v%d" % token]) + encode([b"GET", key])
                     + encode([b"DEL", key]) + b"PING\r\n")
        expected = b"+OK\r\n$%d\r\nv%d\r\n:1\r\n+PONG\r\n" % (len(b"v%d" % token), token)
        got = await asyncio.wait_for(reader.readexactly(len(expected)), 10)
        assert got == expected
    finally:
        writer.close()


async def campaign(port: int, connections: int, concurrency: int, scale: int,
                   seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    seen = {"protocol_error": 0, "reply": 0}
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await abuse(port, random.Random(rng.getrandbits(64) ^ i), scale, seen)

    async def keep_checking(done: asyncio.Event) -> None:
        """A good client served all along, not only between batches."""
        token = 10**9
        while not done.is_set():
            await health_check(port, token)
            seen["health_during"] += 1
            token += 1
            await asyncio.sleep(0.1)

    seen["health_during"] = 0
    done = asyncio.Event()
    checker = asyncio.create_task(keep_checking(done))
    batch = 250
    try:
        for start in range(0, connections, batch):
            await asyncio.gather(*(one(i) for i in range(start, min(start + batch,
                                                                      connections))))
            await health_check(port, start)
            if checker.done():
                break
    finally:
        done.set()
    await checker  # re-raises a failed check
    return seen


def run_campaign(connections: int, concurrency: int, scale: int, budget: float) -> None:
    with Server(loglevel="warning") as server:
        began = time.monotonic()
        try:
            seen = asyncio.run(campaign(server.port, connections, concurrency, scale, SEED))
        except AssertionError as exc:
            raise AssertionError(f"seed {SEED}: {exc}\n{server.log()[-5000:]}") from exc
        elapsed = time.monotonic() - began
        assert server.running, f"seed {SEED}: server died\n{server.log()[-5000:]}"
        asyncio.run(health_check(server.port, -1))
        log = server.log()
        assert "Traceback" not in log, f"seed {SEED}:\n{log[-5000:]}"
        # the garbage did reach the parser and the commands (a test that can fail)
        assert seen["protocol_error"] > connections // 20, seen
        assert seen["reply"] > connections // 20, seen
        assert seen["health_during"] >= 1, seen
        assert elapsed < budget, f"{connections} connections took {elapsed:.1f}s"


def test_garbage_on_many_connections():
    run_campaign(connections=2000, concurrency=100, scale=1, budget=60)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_garbage_soak():
    run_campaign(connections=20000, concurrency=200, scale=8, budget=800)
