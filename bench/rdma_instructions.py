"""Server instructions per request over RDMA (software fabric) and TCP, same client.

``bench/instructions`` counts what the server executes per request under callgrind, driven
by redis-benchmark over TCP. This does the same for the RDMA transport on this host: pykv
runs under callgrind with a software-fabric RDMA listener beside its TCP one, and one
Python client (``bench/rdma_vs_tcp.py``'s) drives ``--conns`` connections round-robin over
each transport in turn. The figures are instructions per request net of the idle rate; the
RDMA one includes the software fabric's NIC emulation, which a real NIC does in hardware
(or rxe in the kernel), so the RDMA-TCP difference is an upper bound of what the RDMA
path's own layers (endpoint, session, hand-off to the client) cost beyond TCP's.

    .venv/bin/python bench/rdma_instructions.py [-n 4000] [--conns 8] [-P 1,16] [--keep DIR]
        [--connections 20]

``--connections N`` adds the server's instructions per connection (connect, one PING,
close, the teardown included) over each transport: what a client that connects per
request pays, and what ``valkey-benchmark`` pays once per test and connection.

Needs valgrind (vgdb) and pykv's build in this checkout.
"""
from __future__ import annotations

import argparse
import functools
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from importlib.machinery import SourceFileLoader

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path[:0] = [BENCH, REPO]

import rdma_vs_tcp  # noqa: E402

icount = SourceFileLoader("icount", os.path.join(BENCH, "instructions")).load_module()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=4000, help="requests per case and transport")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("-P", default="1,16", help="comma-separated pipeline depths")
    ap.add_argument("-t", default="get,set", help="cases: get, set")
    ap.add_argument("--keep", metavar="DIR", help="keep each dump as DIR/KIND-CASE-P.out")
    ap.add_argument("--connections", type=int, default=0, metavar="N",
                    help="also count N connections set up, used once and closed, per transport")
    opts = ap.parse_args()
    port = icount.free_port()
    with tempfile.TemporaryDirectory(prefix="pykv-rdma-icount-") as work:
        fabric = os.path.join(work, "fabric")
        os.mkdir(fabric)
        os.environ["PYKV_SOFTRDMA_DIR"] = fabric
        out = os.path.join(work, "cg.out")
        server = [sys.executable, "-m", "pykv", "--port", str(port), "--bind", "127.0.0.1",
                  "--save", "", "--appendonly", "no", "--loglevel", "warning", "--dir", work,
                  "--listener", f"rdma,bind=127.0.0.1,port={port},backend=soft"]
        env = dict(os.environ, PYTHONPATH=REPO)
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                                 f"--callgrind-out-file={out}", *server], env=env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        vpid = None
        try:
            icount.wait_ready(port, proc)
            vpid = icount.valgrind_pid(port)

            def measure(run) -> tuple[int, float, str]:
                icount.control(vpid, "zero")
                icount.control(vpid, "instrumentation", "on")
                start = time.monotonic()
                run()
                seconds = time.monotonic() - start
                icount.control(vpid, "instrumentation", "off")
                for old in glob.glob(out + "*"):
                    os.unlink(old)
                icount.control(vpid, "dump")
                dump = sorted(glob.glob(out + "*"), key=os.path.getmtime)[-1]
                return icount.total_ir(dump), seconds, dump

            idle_ir, idle_s, _ = measure(lambda: time.sleep(3))
            idle_rate = idle_ir / idle_s
            print(f"# instructions per request, net of idle ({idle_rate:,.0f}/s); "
                  f"{opts.conns} connections, {opts.n} requests per figure; rdma = "
                  "software fabric (its NIC emulation included)")
            print(f"{'case':<6} {'P':>3} {'tcp':>8} {'rdma':>8} {'rdma-tcp':>9}")
            socks = {kind: [rdma_vs_tcp.connect(kind, port) for _ in range(opts.conns)]
                     for kind in ("tcp", "rdma")}
            for pipeline in [int(x) for x in opts.P.split(",")]:
                for case in opts.t.split(","):
                    net = {}
                    for kind in ("tcp", "rdma"):
                        # warm-up, unmeasured: buffers grown, windows announced
                        rdma_vs_tcp.run_case(socks[kind], proc.pid, case, 3, pipeline,
                                             opts.n // 10)
                        ir, seconds, dump = measure(functools.partial(
                            rdma_vs_tcp.run_case, socks[kind], proc.pid, case, 3, pipeline,
                            opts.n))
                        done = max(1, opts.n // (pipeline * opts.conns)) * pipeline * opts.conns
                        net[kind] = (ir - idle_rate * seconds) / done
                        if opts.keep:
                            os.makedirs(opts.keep, exist_ok=True)
                            shutil.copy(dump, os.path.join(opts.keep,
                                                           f"{kind}-{case}-{pipeline}.out"))
                    print(f"{case:<6} {pipeline:>3} {net['tcp']:8.0f} {net['rdma']:8.0f} "
                          f"{net['rdma'] - net['tcp']:9.0f}", flush=True)
            for s in (s for kind in socks for s in socks[kind]):
                s.close()
            if opts.connections:
                per = {}
                for kind in ("tcp", "rdma"):
                    rdma_vs_tcp.connection_cost(kind, port, proc.pid, 3)   # warm-up
                    ir, seconds, dump = measure(functools.partial(
                        rdma_vs_tcp.connection_cost, kind, port, proc.pid, opts.connections))
                    per[kind] = (ir - idle_rate * seconds) / opts.connections
                    if opts.keep:
                        shutil.copy(dump, os.path.join(opts.keep, f"{kind}-connections.out"))
                print(f"# per connection (connect, PING, close; {opts.connections} of each): "
                      f"tcp {per['tcp']:,.0f}, rdma {per['rdma']:,.0f} instructions")
        finally:
            if vpid is not None:
                os.kill(vpid, signal.SIGTERM)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
