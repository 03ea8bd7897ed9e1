"""Redis's ACL categories and the commands in each, read from the command table.

The universe is Redis 7.0's whole table (``command_table.json``), implemented or not, so
category counts (and so the ``ACL LIST`` form of a user) are Redis's own.
"""
from __future__ import annotations

from pykv.server.command_table import METADATA

# Redis's order (ACL CAT, and the order ACL LIST tries categories in)
CATEGORIES: tuple[str, ...] = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting",
)

# fullname -> its subcommands' fullnames (empty for plain commands); top-level first
SUBCOMMANDS: dict[str, tuple[str, ...]] = {}
# every command and subcommand, in table order (parents before their subcommands)
ALL: list[str] = []
MEMBERS: dict[str, frozenset[str]] = {}


def _build() -> None:
    members: dict[str, set[str]] = {c: set() for c in CATEGORIES}
    for name, meta in METADATA.items():
        subs = tuple(meta.get("subcommands", {}))
        SUBCOMMANDS[name] = subs
        for full, m in [(name, meta)] + [(s, meta["subcommands"][s]) for s in subs]:
            ALL.append(full)
            SUBCOMMANDS.setdefault(full, ())
            for cat in m.get("acl_categories", ()):
                members[cat.lstrip("@")].add(full)
    MEMBERS.update({c: frozenset(s) for c, s in members.items()})


_build()


def lookup(name: str) -> str | None:
    """The fullname of a command (``get``, ``config|get``) in the table, or None."""
    name = name.lower()
    parent, bar, sub = name.partition("|")
    if parent not in METADATA:
        return None
    if not bar:
        return parent
    return name if name in SUBCOMMANDS.get(parent, ()) else None
