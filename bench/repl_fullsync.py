#!/usr/bin/env python3
"""Full-sync time of a replica of a real redis-server master: redis-server against pykv.

    bench/repl_fullsync.py [--keys 1000000] [--repeats 1]

The master holds ``--keys`` keys, a fifth each of strings, hashes, lists, sets and zsets
(small ones, packed encodings, as most real keys are). For disk-based and diskless masters
(``repl-diskless-sync no|yes``) each replica runs ``REPLICAOF`` and the time until its
``master_link_status`` is ``up`` is taken (the master's BGSAVE included: the same for
both). One line per figure, then pykv/redis (lower is better for times).
"""
from __future__ import annotations

import argparse
import re
import socket
import time

from benchlib import BenchServer, encode_command


def pipeline(port: int, commands: list[tuple[str, ...]]) -> None:
    """Send ``commands`` in one go and read as many replies (all simple: one line each)."""
    with socket.create_connection(("127.0.0.1", port), timeout=600) as s:
        s.sendall(b"".join(encode_command(*c) for c in commands))
        want, seen, buf = len(commands), 0, b""
        while seen < want:
            chunk = s.recv(1 << 20)
            if not chunk:
                raise RuntimeError("master closed the connection")
            buf += chunk
            seen += buf.count(b"\r\n")
            buf = buf[buf.rfind(b"\r\n") + 2:]


def fill(master: BenchServer, keys: int) -> None:
    per_type = keys // 5
    master.call("DEBUG", "POPULATE", str(per_type), "str", "10")
    batch = 10000
    for start in range(0, per_type, batch):
        cmds: list[tuple[str, ...]] = []
        for i in range(start, min(per_type, start + batch)):
            cmds.append(("HSET", f"h:{i}", "a", "1", "b", "22", "c", "333"))
            cmds.append(("RPUSH", f"l:{i}", "x", "y", "z"))
            cmds.append(("SADD", f"s:{i}", "1", "2", "3"))
            cmds.append(("ZADD", f"z:{i}", "1", "a", "2", "b"))
        pipeline(master.port, cmds)


def link_up(server: BenchServer) -> bool:
    return b"master_link_status:up" in server.call("INFO", "replication")


def sync_seconds(kind: str, master: BenchServer) -> float:
    replica = BenchServer(kind, ["--repl-diskless-load", "disabled"])
    try:
        start = time.monotonic()
        replica.call("REPLICAOF", "127.0.0.1", str(master.port))
        while not link_up(replica):
            time.sleep(0.01)
        took = time.monotonic() - start
        info = master.call("DBSIZE")
        theirs = replica.call("DBSIZE")
        if info != theirs:
            raise RuntimeError(f"{kind} replica has {theirs!r} keys, the master {info!r}")
        return took
    finally:
        replica.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    for diskless in ("no", "yes"):
        master = BenchServer("redis", ["--enable-debug-command", "yes",
                                       "--repl-diskless-sync", diskless,
                                       "--repl-diskless-sync-delay", "0"])
        try:
            fill(master, args.keys)
            keys = int(re.findall(rb"\d+", master.call("DBSIZE"))[0])
            times = {}
            for kind in ("redis", "pykv"):
                times[kind] = min(sync_seconds(kind, master) for _ in range(args.repeats))
                print(f"full sync  master=redis diskless={diskless:3} replica={kind:5} "
                      f"keys={keys}  {times[kind]:.2f} s")
            print(f"full sync  diskless={diskless:3} pykv/redis {times['pykv'] / times['redis']:.2f}")
        finally:
            master.stop()


if __name__ == "__main__":
    main()
