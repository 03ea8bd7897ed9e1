"""Replies over RDMA, whichever path each takes, equal the same server's TCP replies.

A reply is posted from C when nothing is queued before it and the peer's window has room
(``Endpoint`` via ``ReplySink.take``), else queued by ``conn.write`` until a window comes
back. Generated pipelines mix tiny and window-sized replies over a small client window so
that both paths, and the switches between them, happen in every batch; the replies must be
the bytes TCP gives for the same commands, in the same order."""
from __future__ import annotations

import random
import socket

import pytest
from rdma_support import exchange, resp

from pykv.rdma.client import RdmaSocket

SIZES = [1, 3, 100, 1000, 20_000, 60_000, 70_000, 200_000]


def _batches(seed: int) -> list[list[tuple]]:
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(12)]
    out = []
    for _ in range(12):
        batch = []
        for _ in range(rng.randint(1, 40)):
            key = rng.choice(keys)
            op = rng.random()
            if op < 0.25:
                batch.append(("SET", key, rng.randbytes(rng.choice(SIZES))))
            elif op < 0.55:
                batch.append(("GET", key))
            elif op < 0.65:
                batch.append(("APPEND", key, rng.randbytes(rng.choice(SIZES[:5]))))
            elif op < 0.75:
                batch.append(("GETRANGE", key, str(rng.randint(0, 5000)),
                              str(rng.randint(-1, 90_000))))
            elif op < 0.85:
                batch.append(("MGET", *rng.sample(keys, 4)))
            elif op < 0.95:
                batch.append(("PING",))
            else:
                batch.append(("ECHO", rng.randbytes(rng.choice(SIZES))))
        out.append(batch)
    return out


def _run(sock, batches) -> list[bytes]:
    return [exchange(sock, b"".join(resp(*c) for c in batch), len(batch)) for batch in batches]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rx_size", [65536, 1 << 20])
def test_generated_pipelines_match_tcp(rdma_server, seed, rx_size):
    batches = _batches(seed)
    with socket.create_connection(("127.0.0.1", rdma_server.port), timeout=20) as tcp:
        tcp.sendall(resp("FLUSHALL"))
        tcp.recv(16)
        via_tcp = _run(tcp, batches)
        tcp.sendall(resp("FLUSHALL"))
        tcp.recv(16)
    with RdmaSocket("127.0.0.1", rdma_server.port, timeout=30, rx_size=rx_size) as rsock:
        via_rdma = _run(rsock, batches)
    for i, (a, b) in enumerate(zip(via_rdma, via_tcp, strict=True)):
        assert a == b, f"batch {i}: {len(a)} bytes over RDMA, {len(b)} over TCP"
