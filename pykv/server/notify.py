"""Keyspace notifications: the one call every command family makes after a change.

``notify(server, klass, event, key, dbid)`` mirrors Redis's ``notifyKeyspaceEvent``:
``klass`` is the class letter (``g`` generic, ``$`` string, ``l`` list, ``s`` set, ``h``
hash, ``z`` zset, ``x`` expired, ``e`` evicted, ``t`` stream, ``m`` key-miss, ``d`` module,
``n`` new key). Delivery over pub/sub (``__keyspace@N__:key`` / ``__keyevent@N__:event``)
is installed by the pub/sub family as ``server.keyspace_notifier``; until then, and whenever
``notify-keyspace-events`` is empty, this is one attribute test.
"""
from __future__ import annotations

from typing import Any


def notify(server: Any, klass: str, event: bytes, key: bytes, dbid: int) -> None:
    notifier = server.keyspace_notifier
    if notifier is not None:
        notifier(klass, event, key, dbid)
