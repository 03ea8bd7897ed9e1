"""RDMA (software fabric) versus TCP on the same pykv server, side by side.

One pykv process listens on TCP and RDMA (same port number). For each case — SET and GET,
3-byte and 16 KB values, pipeline depth 1 and 16 — one client process drives 8 connections
round-robin over each transport and this prints ops/s, p50/p99 latency per request batch
and the server's CPU seconds per 100k requests (from /proc/PID/stat), one line per figure,
then the RDMA/TCP ratios.

    .venv/bin/python bench/rdma_vs_tcp.py [--requests 40000] [--conns 8]

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

from pykv.rdma.client import RdmaSocket  # noqa: E402
from pykv.testing import Server  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def resp(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def connect(kind: str, port: int):
    if kind == "tcp":
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    return RdmaSocket("127.0.0.1", port, timeout=60, backend="soft")


def run_case(kind: str, port: int, pid: int, op: str, size: int, pipeline: int,
             requests: int, conns: int) -> dict[str, float]:
    socks = [connect(kind, port) for _ in range(conns)]
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
    for s in socks:
        s.close()
    done = rounds * pipeline * conns
    lat.sort()
    return {
        "ops": done / elapsed,
        "p50": statistics.median(lat),
        "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "cpu100k": cpu / done * 100_000,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--conns", type=int, default=8)
    args = ap.parse_args()
    fabric = tempfile.mkdtemp(prefix="pykv-bench-fabric-")
    os.environ["PYKV_SOFTRDMA_DIR"] = fabric
    srv = Server(config={"save": ""})
    srv.extra_args += ["--listener", f"rdma,bind=127.0.0.1,port={srv.port},backend=soft"]
    with srv:
        pid = srv.process.pid
        print(f"# pykv pid {pid}, {args.conns} connections, ~{args.requests} requests per case")
        for op in ("set", "get"):
            for size in (3, 16 * 1024):
                for pipeline in (1, 16):
                    res = {}
                    for kind in ("tcp", "rdma"):
                        r = run_case(kind, srv.port, pid, op, size, pipeline,
                                     args.requests if size < 1024 else args.requests // 4,
                                     args.conns)
                        res[kind] = r
                        name = f"{op.upper()} {size}B -P {pipeline} {kind}"
                        print(f"{name:28s} ops/s={r['ops']:9.0f}  p50={r['p50']:8.0f}us  "
                              f"p99={r['p99']:8.0f}us  server_cpu_s/100k={r['cpu100k']:6.2f}")
                    t, rd = res["tcp"], res["rdma"]
                    print(f"{op.upper()} {size}B -P {pipeline} ratio rdma/tcp: "
                          f"ops/s={rd['ops'] / t['ops']:.2f}  "
                          f"cpu/req={rd['cpu100k'] / t['cpu100k']:.2f}")
                    sys.stdout.flush()


if __name__ == "__main__":
    main()
