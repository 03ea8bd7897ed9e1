"""Server commands: DBSIZE, FLUSHDB, FLUSHALL, TIME, …"""
from __future__ import annotations

from pykv import errors
from pykv.commands.registry import command
from pykv.protocol import OK


@command("dbsize")
def dbsize(c, argv):
    return len(c.db)


@command("flushall")
def flushall(c, argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"async", b"sync")):
        return errors.SYNTAX
    for db in c.server.dbs:
        db.clear()
    return OK
