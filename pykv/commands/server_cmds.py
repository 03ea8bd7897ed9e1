"""Server commands: DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, TIME, LASTSAVE, ROLE, SHUTDOWN, LOLWUT.

These act on the server as a whole (all databases, the process). Saving around FLUSHALL
and SHUTDOWN goes through the persistence layer (``server.persistence``,
``server.prepare_for_shutdown``), which runs ``server.shutdown_hooks``.
"""
from __future__ import annotations

import time

from pykv import errors
from pykv.commands.args import parse_int, to_int
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply, Verbatim
from pykv.storage.keyspace import DATASET_FIELDS


@command("dbsize")
def dbsize(c, argv):
    return len(c.db)


def _flush_mode(argv: list[bytes]) -> ErrorReply | None:
    """FLUSHDB/FLUSHALL take nothing, ASYNC or SYNC (pykv always frees at once)."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"async", b"sync")):
        return errors.SYNTAX
    return None


@command("flushdb")
def flushdb(c, argv):
    err = _flush_mode(argv)
    if err is not None:
        return err
    c.server.dirty += c.db.clear()
    return OK


@command("flushall")
def flushall(c, argv):
    err = _flush_mode(argv)
    if err is not None:
        return err
    server = c.server
    removed = sum(db.clear() for db in server.dbs)
    server.dirty += removed
    persistence = getattr(server, "persistence", None)
    if persistence is not None:
        persistence.kill_child()
        if server.config.save:
            persistence.save()  # as Redis: the empty dataset replaces the old snapshot
    server.dirty += 1
    return OK


def _int_index(arg: bytes) -> int | None:
    """A C int, as Redis's getIntFromObjectOrReply reads one; None otherwise."""
    value = to_int(arg)
    return value if value is not None and -(1 << 31) <= value < 1 << 31 else None


@command("swapdb")
def swapdb(c, argv):
    if c.server.cluster is not None:
        return errors.SWAPDB_IN_CLUSTER
    first = _int_index(argv[1])
    if first is None:
        return errors.INVALID_FIRST_DB_INDEX
    second = _int_index(argv[2])
    if second is None:
        return errors.INVALID_SECOND_DB_INDEX
    server = c.server
    count = len(server.dbs)
    if not (0 <= first < count and 0 <= second < count):
        return errors.DB_INDEX_OUT_OF_RANGE
    if first != second:
        a, b = server.dbs[first], server.dbs[second]
        watches = getattr(server, "watches", None)
        if watches is not None:
            watches.touch_swapped(a, b)
        for slot in DATASET_FIELDS:
            if hasattr(a, slot):
                va, vb = getattr(a, slot), getattr(b, slot)
                setattr(a, slot, vb)
                setattr(b, slot, va)
        for db in (a, b):
            if hasattr(db, "version"):
                db.version += 1
        blocking = getattr(server, "blocking", None)
        if blocking is not None:
            blocking.scan_database_for_ready_keys(a)
            blocking.scan_database_for_ready_keys(b)
    server.dirty += 1
    return OK


@command("time")
def time_(c, argv):
    now = time.time_ns() // 1000
    return [b"%d" % (now // 1_000_000), b"%d" % (now % 1_000_000)]


@command("lastsave")
def lastsave(c, argv):
    return c.server.lastsave


_SHUTDOWN_FLAGS = (b"nosave", b"save", b"now", b"force", b"abort")


@command("shutdown")
def shutdown(c, argv):
    flags = set()
    for arg in argv[1:]:
        low = arg.lower()
        if low not in _SHUTDOWN_FLAGS:
            return errors.SYNTAX
        flags.add(low)
    if (b"abort" in flags and len(flags) > 1) or {b"nosave", b"save"} <= flags:
        return errors.SYNTAX
    if b"abort" in flags:
        # pykv never waits for replicas, so a shutdown is never pending
        return ErrorReply(b"ERR No shutdown in progress.")
    if b"now" not in flags and c.deny_blocking:
        return ErrorReply(b"ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING "
                          b"client")
    server = c.server
    busy = server.busy_script  # a script holds the loop: only SHUTDOWN NOSAVE, as Redis
    if busy is not None and b"nosave" not in flags:
        return busy.busy_error
    save = True if b"save" in flags else False if b"nosave" in flags else None
    if not server.prepare_for_shutdown(save=save, force=b"force" in flags):
        return ErrorReply(b"ERR Errors trying to SHUTDOWN. Check logs.")
    if busy is not None:
        busy.abort_for_shutdown()  # it ends at its next hook; the loop then stops
    from pykv.server.client import NO_REPLY

    if server.loop is not None:
        server.loop.call_soon(server.stop)
    else:
        server.stop()
    c.closing = True
    return NO_REPLY


# -- LOLWUT: pykv's own small drawings ------------------------------------------------------------
def _waves(cols: int, rows: int) -> str:
    """Version 5: rows of slanted strokes whose slant grows down the page."""
    lines = []
    for r in range(rows):
        tilt = r % 4
        lines.append("".join("/\\|-"[(x + tilt * (x // 3)) % 4] for x in range(cols)))
    return "\n".join(lines)


def _blocks(cols: int, rows: int) -> str:
    """Version 6: a checkerboard whose squares shrink to the right."""
    lines = []
    for r in range(rows):
        lines.append("".join("#" if ((x * 8) // (x + 8) + r) % 2 else "." for x in range(cols)))
    return "\n".join(lines)


@command("lolwut")
def lolwut(c, argv):
    version = None
    rest: list[int] = []
    i = 1
    while i < len(argv):
        if argv[i].lower() == b"version" and i + 1 < len(argv):
            version = parse_int(argv[i + 1])
            i += 2
            continue
        i += 1
    for arg in argv[3:] if version is not None else []:
        value = to_int(arg)
        if value is None:
            return errors.NOT_INTEGER
        rest.append(value)
    footer = f"Redis ver. {c.server.version}\n"
    if version in (5, 6):
        cols = max(1, min(rest[0] if rest else 40, 1000))
        rows = max(1, min(rest[1] if len(rest) > 1 else 8, 1000))
        art = _waves(cols, rows) if version == 5 else _blocks(cols, rows)
        text = f"{art}\n\npykv's own LOLWUT {version} drawing. {footer}"
    else:
        text = footer
    data = text.encode()
    return Verbatim(data) if c.resp == 3 else data
