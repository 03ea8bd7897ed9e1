"""Generic keyspace commands (DEL, EXISTS, EXPIRE, SCAN, …)."""
from __future__ import annotations

from pykv.commands.registry import command


@command("del", "unlink")
def del_(c, argv):
    db = c.db
    return sum(1 for key in argv[1:] if db.delete(key))


@command("exists")
def exists(c, argv):
    db = c.db
    return sum(1 for key in argv[1:] if db.get(key, touch=False) is not None)
