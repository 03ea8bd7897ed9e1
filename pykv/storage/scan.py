"""Cursor iteration (SSCAN, ZSCAN) over Python dicts and sets.

(The keyspace's SCAN and a hashtable hash's HSCAN walk their compiled tables' buckets with
Redis's own cursor: see pykv.storage._keytable and pykv.storage._fieldtable.)

Redis's guarantee: a full iteration (cursor 0 back to cursor 0) returns every element that
was present from its start to its end; elements added or removed meanwhile may or may not
be returned, and the cursor is a plain number the server keeps no state for.

A Python dict has no stable buckets to walk, so the cursor here is a position in a fixed
*hash order*: every element ``e`` has position ``p(e) = (hash(e) mod 2**64) >> 1`` (stable
for the life of the process), a batch returns the elements with the smallest positions
``>= cursor - 1``, and the next cursor is the position of the first element not returned,
plus one (so a cursor is never 0 until the end). Elements sharing a position always go out
in the same batch. Because positions never change, every element present throughout an
iteration is reached once the cursor passes its position, whatever else was added or
removed.

Finding "the next elements by position" needs the elements sorted by position: a
``ScanIndex`` is that sorted snapshot, built on demand. A snapshot may hold elements since
deleted (they are skipped: the caller's ``alive`` test) but must hold every element that
existed when an iteration started, so it is rebuilt at cursor 0 whenever the container may
have gained elements since it was taken. Containers that count their additions pass that
count as ``version`` (the value types do); without one the snapshot is rebuilt at every
cursor-0 call, which costs O(n log n) once per iteration. Any snapshot taken after an
iteration began also holds every element present throughout it, so concurrent iterations
may share one index.

``scan(source, cursor, count, ...)`` is the one entry point; the data-type families keep a
``ScanIndex`` on their large containers (small "listpack" ones return everything at once
with cursor 0, as Redis does) and call it with ``match``/``alive`` as needed.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Hashable
from typing import Any

from pykv.util.glob import matcher

_MASK64 = (1 << 64) - 1
MAX_CURSOR = _MASK64  # cursors are unsigned 64-bit numbers, as in Redis


def position(element: Hashable) -> int:
    """An element's fixed place in the scan order, in ``[0, 2**63)``."""
    return (hash(element) & _MASK64) >> 1


class ScanIndex:
    """A snapshot of a container's elements sorted by ``position``."""

    __slots__ = ("positions", "elements", "source", "version", "size")

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.elements: list[Any] = []
        self.source: Any = None
        self.version: int | None = None
        self.size = -1

    def fresh(self, source: Collection, version: int | None) -> bool:
        """True if no element can have been added to ``source`` since the snapshot."""
        return (version is not None and self.source is source and self.version == version
                and self.size == len(source))

    def rebuild(self, source: Collection, version: int | None) -> None:
        pairs = sorted([((hash(e) & _MASK64) >> 1, e) for e in source],
                       key=_first)
        self.positions = [p for p, _ in pairs]
        self.elements = [e for _, e in pairs]
        self.source = source
        self.version = version
        self.size = len(source)


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


def scan(source: Collection, cursor: int, count: int, *, index: ScanIndex | None = None,
         version: int | None = None, match: bytes | None = None,
         alive: Callable[[Any], bool] | None = None) -> tuple[int, list]:
    """One SCAN step over ``source``: ``(next_cursor, elements)``.

    ``count`` is how many snapshot entries to visit (Redis's hint: a batch may hold fewer
    elements, or none, and the iteration still goes on). ``alive(e)`` drops elements that
    are gone (default: ``e in source``); ``match`` is a glob applied last, as Redis does.
    Pass the container's ``index`` (kept by its owner) and ``version`` to reuse snapshots.
    """
    if index is None:
        index = ScanIndex()
    if index.source is not source or (cursor == 0 and not index.fresh(source, version)):
        index.rebuild(source, version)
    positions = index.positions
    n = len(positions)
    start = bisect_left(positions, cursor - 1) if cursor else 0
    end = min(start + max(count, 1), n)
    # never split elements that share a position across two batches
    while end < n and positions[end] == positions[end - 1]:
        end += 1
    batch = index.elements[start:end]
    next_cursor = positions[end] + 1 if end < n else 0
    if alive is None:
        batch = [e for e in batch if e in source]
    else:
        batch = [e for e in batch if alive(e)]
    if match is not None and match != b"*":
        batch = list(filter(matcher(match), batch))
    return next_cursor, batch


def parse_cursor(data: bytes) -> int | None:
    """Redis's ``strtoul`` cursor rule: decimal, optional sign (negatives wrap), no junk.

    The text is a C string (it ends at a NUL byte) and may be empty (cursor 0); a leading
    space is refused. None where Redis answers ``ERR invalid cursor``.
    """
    text = data.split(b"\0", 1)[0]
    if not text:
        return 0
    neg = text[:1] == b"-"
    if neg or text[:1] == b"+":
        text = text[1:]
    if not text.isdigit():
        return None
    value = int(text)
    if value > _MASK64:
        return None
    return (-value) & _MASK64 if neg else value
