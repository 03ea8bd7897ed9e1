"""Per-request CPU of the RDMA server path alone, in one process (no event loop, no peer
process): a client QP posts one 28-byte GET-sized request per round, the server side runs
pump → CQ handler → deliver → reply write, exactly as ``pykv.net.rdma`` does.

    .venv/bin/python bench/rdma_micro.py [--rounds 20000] [--profile]

Prints the server-side microseconds per request (process CPU time) — the cost of the
software fabric's NIC emulation plus the protocol layers, without the dispatcher.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pykv.rdma import softfabric as sf  # noqa: E402
from pykv.rdma.endpoint import Endpoint  # noqa: E402
from pykv.rdma.session import CLIENT, SERVER  # noqa: E402

REQ = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
REPLY = b"$3\r\nabc\r\n"


def setup():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    qs, qc = sf.SoftQP(a), sf.SoftQP(b)
    qs.state = qc.state = sf.QPS_RTS
    got = bytearray()
    server: list[Endpoint] = []
    srv = Endpoint(qs, SERVER, 1 << 20, lambda d: server[0].write(REPLY))
    server.append(srv)
    cli = Endpoint(qc, CLIENT, 1 << 20, got.extend)
    srv.post_receives()
    cli.post_receives()
    srv.established()
    cli.established()
    for _ in range(3):
        qc.pump(qc.wire_fd)
        cli.handle_completions()
        qs.pump(qs.wire_fd)
        srv.handle_completions()
    return qs, qc, srv, cli, got


def run(rounds: int) -> float:
    qs, qc, srv, cli, got = setup()
    server_cpu = 0.0
    for _ in range(rounds):
        cli.write(REQ)
        t0 = time.process_time()
        qs.pump(qs.wire_fd)           # the server's wire fd is readable
        srv.handle_completions()      # CQ handler: parse → "dispatcher" → reply write
        server_cpu += time.process_time() - t0
        qc.pump(qc.wire_fd)
        cli.handle_completions()
    assert got.count(REPLY) == rounds, (len(got), rounds)
    return server_cpu / rounds * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run(args.rounds)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
        return
    best = min(run(args.rounds) for _ in range(3))
    print(f"rdma server path (soft fabric) cpu_us_per_request={best:.1f}")


if __name__ == "__main__":
    main()
