"""``python -m pykv.rdma.cli``: a one-shot redis-cli over RDMA for operators.

    python -m pykv.rdma.cli -h 10.0.0.5 -p 6380 PING
    python -m pykv.rdma.cli -h 10.0.0.5 -p 6380 --backend soft SET k v
    echo -e 'PING\\nINFO server' | python -m pykv.rdma.cli -h 10.0.0.5 -p 6380

Replies print like redis-cli: quoted and typed on a terminal, raw otherwise (``--raw`` /
``--no-raw`` force one). Exit status 1 on connection errors, as redis-cli.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

import hiredis

from pykv.rdma import verbs as v
from pykv.rdma.client import RdmaError, RdmaSocket


def format_tty(reply: Any, indent: int = 0) -> str:
    if isinstance(reply, hiredis.ReplyError):
        return f"(error) {reply}"
    if reply is None:
        return "(nil)"
    if isinstance(reply, int):
        return f"(integer) {reply}"
    if isinstance(reply, bytes):
        return '"' + reply.decode("latin-1").encode("unicode_escape").decode().replace(
            '"', '\\"') + '"'
    if isinstance(reply, list):
        if not reply:
            return "(empty array)"
        width = len(str(len(reply)))
        lines = []
        for i, item in enumerate(reply, 1):
            prefix = f"{i:>{width}}) "
            body = format_tty(item, indent + len(prefix))
            lines.append((" " * indent if i > 1 else "") + prefix + body)
        return "\n".join(lines)
    return str(reply)


def format_raw(reply: Any) -> str:
    if isinstance(reply, hiredis.ReplyError):
        return f"{reply}"
    if reply is None:
        return ""
    if isinstance(reply, bytes):
        return reply.decode("utf-8", "replace")
    if isinstance(reply, list):
        return "\n".join(format_raw(x) for x in reply)
    return str(reply)


def run(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pykv.rdma.cli", add_help=False,
                                 description="redis-cli over RDMA (Valkey protocol)")
    ap.add_argument("-h", dest="host", default="127.0.0.1")
    ap.add_argument("-p", dest="port", type=int, default=6379)
    ap.add_argument("-r", dest="repeat", type=int, default=1)
    ap.add_argument("--backend", default=None,
                    help="soft, ibverbs or pyverbs (default: PYKV_RDMA_BACKEND, else ibverbs"
                    " when built, else pyverbs)")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--raw", action="store_true")
    ap.add_argument("--no-raw", action="store_true")
    ap.add_argument("--help", action="help")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args(argv)
    tty = (sys.stdout.isatty() or args.no_raw) and not args.raw
    try:
        sock = RdmaSocket(args.host, args.port, timeout=args.timeout, backend=args.backend)
    except (v.SetupError, OSError, RdmaError) as exc:
        print(f"Could not connect to RDMA server at {args.host}:{args.port}: {exc}",
              file=sys.stderr)
        return 1
    commands = [args.command] if args.command else \
        [shlex.split(line) for line in sys.stdin if line.strip()]
    try:
        for cmd in commands:
            for _ in range(args.repeat):
                raw = sock.call(*cmd)
                if raw[:1] == b"+":   # status replies print bare, as redis-cli does
                    print(raw[1:-2].decode("utf-8", "replace"))
                    continue
                reader = hiredis.Reader()
                reader.feed(raw)
                reply = reader.gets()
                print(format_tty(reply) if tty else format_raw(reply))
    except (RdmaError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    finally:
        sock.close()
    return 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
