"""RDMA (software fabric) versus TCP on the same pykv server, side by side.

One pykv process listens on TCP and RDMA (same port number). For each case — SET and GET,
3-byte and 16 KB values, pipeline depth 1 and 16 — one client process drives 8 connections
round-robin over each transport (connected and warmed up once per case, then alternating
TCP and RDMA ``--runs`` times), and this prints the medians side by side: ops/s, p50/p99
latency per request batch and the server's CPU seconds per 100k requests (user+sys of all
its threads, from /proc/PID/task/*/schedstat, nanosecond resolution), then the RDMA/TCP
ratios (ops/s and CPU per request of the medians, and "paired": the median of the runs'
back-to-back RDMA/TCP CPU ratios, which a shared machine's drifting load moves less). With
two or more CPUs the server runs pinned to the first and this client to the second
(``--no-pin`` to turn off), as ``bench/compare`` does. A last line gives what one connection costs the server to set up and tear down on
each transport (an RDMA connection registers its receive window and control buffers, so it
costs far more than a TCP accept: pool them).

    .venv/bin/python bench/rdma_vs_tcp.py [--requests 40000] [--conns 8] [--runs 7]

The software fabric moves bytes through unix sockets and eventfds, so it measures the
protocol and dispatcher cost of the RDMA path in this process, not an RDMA NIC.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time

import hiredis

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchlib import cpu_seconds  # noqa: E402

from pykv.rdma.client import RdmaSocket  # noqa: E402
from pykv.testing import Server  # noqa: E402


def resp(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def connect(kind: str, port: int):
    if kind == "tcp":
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    return RdmaSocket("127.0.0.1", port, timeout=60, backend="soft")


def run_case(socks: list, pid: int, op: str, size: int, pipeline: int,
             requests: int) -> dict[str, float]:
    """One timed run over already-connected ``socks`` (connection set-up is measured
    apart, by ``connection_cost``)."""
    conns = len(socks)
    value = b"v" * size
    if op == "get":
        socks[0].sendall(resp(b"SET", b"key:bench", value))
        socks[0].recv(64)
        cmd = resp(b"GET", b"key:bench")
    else:
        cmd = resp(b"SET", b"key:bench", value)
    batch = cmd * pipeline
    rounds = max(1, requests // (pipeline * conns))
    lat: list[float] = []
    readers = [hiredis.Reader() for _ in socks]
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    for _ in range(rounds):
        starts = []
        for s in socks:
            starts.append(time.perf_counter())
            s.sendall(batch)
        for s, reader, start in zip(socks, readers, starts, strict=True):
            got = 0
            while got < pipeline:
                reader.feed(s.recv(1 << 20))
                while reader.gets() is not False:
                    got += 1
            lat.append((time.perf_counter() - start) * 1e6)
    elapsed = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    done = rounds * pipeline * conns
    lat.sort()
    return {
        "ops": done / elapsed,
        "p50": statistics.median(lat),
        "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "cpu100k": cpu / done * 100_000,
    }


def connection_cost(kind: str, port: int, pid: int, count: int) -> float:
    """Server CPU microseconds per connection set up, used once (PING) and closed."""
    cpu0 = cpu_seconds(pid)
    for _ in range(count):
        s = connect(kind, port)
        s.sendall(resp(b"PING"))
        s.recv(64)
        s.close()
    time.sleep(0.2)   # the server tears the last ones down after the client has gone
    return (cpu_seconds(pid) - cpu0) / count * 1e6


CASES = [(op, size, pipeline) for op in ("set", "get") for size in (3, 16 * 1024)
         for pipeline in (1, 16)]
FIELDS = ("ops", "p50", "p99", "cpu100k")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--runs", type=int, default=7, help="alternating runs per case (median)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin server and client")
    ap.add_argument("--only", help="run one case, by name (e.g. 'SET 16384B -P 1')")
    args = ap.parse_args()
    fabric = tempfile.mkdtemp(prefix="pykv-bench-fabric-")
    os.environ["PYKV_SOFTRDMA_DIR"] = fabric
    srv = Server(config={"save": ""})
    srv.extra_args += ["--listener", f"rdma,bind=127.0.0.1,port={srv.port},backend=soft"]
    with srv:
        pid = srv.process.pid
        pin = not args.no_pin and (os.cpu_count() or 1) >= 2
        if pin:
            for tid in os.listdir(f"/proc/{pid}/task"):
                os.sched_setaffinity(int(tid), {0})
            os.sched_setaffinity(0, {1})
        print(f"# pin={'server:0,client:1' if pin else 'off'}; pykv pid {pid}, {args.conns} connections, ~{args.requests} requests per "
              f"case (16 KB: a quarter), median of {args.runs} alternating runs; "
              f"cpu = server CPU seconds per 100k requests")
        print(f"{'case':18s} {'tcp ops/s':>10s} {'rdma ops/s':>10s} {'ratio':>6s}  "
              f"{'tcp p50/p99 us':>15s} {'rdma p50/p99 us':>16s}  "
              f"{'tcp cpu':>7s} {'rdma cpu':>8s} {'cpu ratio':>9s} {'paired':>8s}")
        for op, size, pipeline in CASES:
            name = f"{op.upper()} {size}B -P {pipeline}"
            if args.only and args.only.lower() != name.lower():
                continue
            runs: dict[str, list[dict[str, float]]] = {"tcp": [], "rdma": []}
            requests = args.requests if size < 1024 else args.requests // 4
            socks = {kind: [connect(kind, srv.port) for _ in range(args.conns)]
                     for kind in runs}
            for kind in runs:   # warm-up: first touches of buffers, rings, caches
                run_case(socks[kind], pid, op, size, pipeline, requests // 4)
            for i in range(args.runs):
                # alternate which transport goes first, so drift hits both alike
                order = ("tcp", "rdma") if i % 2 == 0 else ("rdma", "tcp")
                for kind in order:
                    runs[kind].append(run_case(socks[kind], pid, op, size, pipeline,
                                               requests))
            for s in (s for kind in socks for s in socks[kind]):
                s.close()
            med = {kind: {f: statistics.median(r[f] for r in rs) for f in FIELDS}
                   for kind, rs in runs.items()}
            t, rd = med["tcp"], med["rdma"]
            # each run's RDMA/TCP pair ran back to back, so a pair sees about the same load
            cpu_ratio = statistics.median(r["cpu100k"] / q["cpu100k"]
                                          for r, q in zip(runs["rdma"], runs["tcp"], strict=True))
            print(f"{name:18s} {t['ops']:10.0f} {rd['ops']:10.0f} {rd['ops'] / t['ops']:6.2f}  "
                  f"{t['p50']:7.0f}/{t['p99']:<7.0f} {rd['p50']:8.0f}/{rd['p99']:<7.0f}  "
                  f"{t['cpu100k']:7.2f} {rd['cpu100k']:8.2f} "
                  f"{rd['cpu100k'] / t['cpu100k']:8.2f}x {cpu_ratio:7.2f}x")
            sys.stdout.flush()
        if not args.only:
            cost = {kind: statistics.median(connection_cost(kind, srv.port, pid, 20)
                                            for _ in range(args.runs))
                    for kind in ("tcp", "rdma")}
            print(f"connection set-up + tear-down, server CPU per connection: "
                  f"tcp {cost['tcp']:.0f} us, rdma {cost['rdma']:.0f} us (not in the figures "
                  f"above: each case connects and warms up before it measures)")


if __name__ == "__main__":
    main()
