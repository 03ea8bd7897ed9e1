"""ACL LOG: the latest denials (commands, keys, channels, failed AUTH), newest first.

A denial like one of the 10 newest entries (same reason, context, object and user, within
60 seconds) counts into that entry and moves it to the front, as Redis's addACLLogEntry.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GROUPING_MS = 60_000
SCAN = 10


@dataclass
class Entry:
    reason: str  # "command", "key", "channel", "auth"
    context: str  # "toplevel", "multi", "lua"
    object: bytes
    username: bytes
    ctime_ms: int
    client_info: str
    count: int = 1


class AclLog:
    def __init__(self, max_len: Callable[[], int]) -> None:
        self.entries: list[Entry] = []
        self.max_len = max_len

    def add(self, entry: Entry) -> None:
        for i, e in enumerate(self.entries[:SCAN]):
            if (e.reason, e.context, e.object, e.username) == (
                    entry.reason, entry.context, entry.object, entry.username) \
                    and entry.ctime_ms - e.ctime_ms <= GROUPING_MS:
                e.count += 1
                e.ctime_ms, e.client_info = entry.ctime_ms, entry.client_info
                self.entries.insert(0, self.entries.pop(i))
                return
        self.entries.insert(0, entry)
        del self.entries[max(self.max_len(), 0):]

    def reply(self, count: int, now_ms: int) -> list[dict]:
        return [{
            b"count": e.count, b"reason": e.reason.encode(), b"context": e.context.encode(),
            b"object": e.object, b"username": e.username,
            b"age-seconds": (now_ms - e.ctime_ms) / 1000,
            b"client-info": e.client_info.encode("utf-8", "surrogateescape"),
        } for e in self.entries[:max(count, 0)]]

    def reset(self) -> None:
        self.entries.clear()
