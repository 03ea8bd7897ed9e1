"""A client as CLIENT LIST / CLIENT INFO describe it, and as Redis's log lines name it.

The line is an interface fact (tools parse it): the fields and their order are Redis
7.0's. It lives in the server layer because the server logs it too (a client closed for
its output buffer limit, for its query buffer).
"""
from __future__ import annotations

import time
from typing import Any

from pykv.server.client_memory import client_memory


def client_type(c: Any) -> str:
    """Redis's getClientType: ``master``, ``slave`` (a replica, unless it is a MONITOR),
    ``pubsub`` or ``normal`` (CLIENT LIST TYPE, CLIENT KILL TYPE, the output-limit classes,
    what client memory is summed as)."""
    if getattr(c, "is_master", False):
        return "master"
    if getattr(c, "is_replica", False) and not c.monitor:
        return "slave"
    if c.subscriptions:
        return "pubsub"
    return "normal"


def client_flags(c: Any) -> str:
    flags = ""
    if c.monitor:
        flags += "O"
    elif getattr(c, "is_replica", False):
        flags += "S"
    if getattr(c, "is_master", False):
        flags += "M"
    if c.subscriptions:
        flags += "P"
    if c.multi is not None:
        flags += "x"
    if c.blocked is not None or (c.paused and c.server.pause_active):
        flags += "b"  # (held by CLIENT PAUSE; after UNPAUSE it only waits for its turn)
    tracking = c.tracking
    if tracking:
        flags += "t"
        if getattr(tracking, "broken_redirect", False):
            flags += "R"
        if getattr(tracking, "bcast", False):
            flags += "B"
    if c.watch_dirty:
        flags += "d"
    if c.closing:
        flags += "c"
    if c.conn is not None and c.conn.type_name == "unix":
        flags += "U"
    if c.no_evict:
        flags += "e"
    if c.no_touch:
        flags += "T"
    return flags or "N"


def client_info_line(c: Any, current_cmd: Any = None,
                     argv: list[bytes] | None = None) -> str:
    """One CLIENT LIST line (no newline), fields in Redis 7.0's order; ``current_cmd`` and
    ``argv`` are what ``c`` is running (the CLIENT LIST/INFO asking, for its own line)."""
    now = time.time()
    mem = client_memory(c, argv)
    cmd = current_cmd if current_cmd is not None else c.last_cmd
    tracking = c.tracking
    redir = getattr(tracking, "redirect", -1) if tracking else -1
    events = "rw" if (mem.obl or mem.oll) else "r"
    fd = c.conn.fd() if c.conn is not None else -1
    return (
        f"id={c.id} addr={c.addr} laddr={c.laddr} fd={fd} "
        f"name={c.name.decode('latin-1')} age={int(now - c.created)} "
        f"idle={int(now - c.last_interaction)} flags={client_flags(c)} db={c.db_index} "
        f"sub={len(c.channels)} psub={len(c.patterns)} ssub={len(c.shard_channels)} "
        f"multi={len(c.multi) if c.multi is not None else -1} qbuf={mem.qbuf} "
        f"qbuf-free={mem.qbuf_free} argv-mem={mem.argv_mem} "
        f"multi-mem={mem.multi_mem} rbs={c.buf_size} rbp={c.buf_peak} obl={mem.obl} "
        f"oll={mem.oll} omem={mem.omem} "
        f"tot-mem={mem.tot_mem} events={events} cmd={cmd.fullname if cmd else 'NULL'} "
        f"user={c.user} redir={redir} resp={c.resp}"
    )
