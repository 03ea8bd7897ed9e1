"""MONITOR: the command feed, formatted as Redis's replicationFeedMonitors does.

Each line is ``<unix time>.<usec> [<db> <source>] "arg" "arg" ...`` where the source is
``ip:port``, ``unix:<path>`` for unix-socket clients, or ``lua`` for commands a script runs
(the scripting family marks its script client with ``is_script_client = True``).
"""
from __future__ import annotations

import time

from pykv.commands.registry import command
from pykv.protocol import OK, SimpleString


def _repr_arg(arg: bytes) -> bytes:
    out = bytearray(b'"')
    for ch in arg:
        if ch == 0x5C:
            out += b"\\\\"
        elif ch == 0x22:
            out += b'\\"'
        elif ch == 0x0A:
            out += b"\\n"
        elif ch == 0x0D:
            out += b"\\r"
        elif ch == 0x09:
            out += b"\\t"
        elif ch == 0x07:
            out += b"\\a"
        elif ch == 0x08:
            out += b"\\b"
        elif 32 <= ch < 127:
            out.append(ch)
        else:
            out += b"\\x%02x" % ch
    out += b'"'
    return bytes(out)


def format_monitor_line(client, argv: list[bytes]) -> SimpleString:
    now = time.time()
    if getattr(client, "is_script_client", False):
        source = b"lua"
    elif client.conn is not None and client.conn.type_name == "unix":
        source = b"unix:" + client.addr[:-2].encode()
    else:
        source = client.addr.encode()
    head = b"%d.%06d [%d %s]" % (int(now), int((now % 1) * 1e6), client.db_index, source)
    return SimpleString(head + b" " + b" ".join(_repr_arg(a) for a in argv))


@command("monitor")
def monitor(c, argv):
    if c.monitor:
        return OK
    c.monitor = True
    c.server.monitors.append(c)
    return OK
