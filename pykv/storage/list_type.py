"""The list value type: a ``collections.deque`` of ``bytes`` elements, packed while small.

A new list keeps its elements in a ``PackedList`` (one listpack buffer answering the deque
subset the commands use) until they outgrow one quicklist node of the default size (8 KB);
then they move to a deque, which the PackedList forwards to until ``settle`` puts the
deque itself in ``items`` (the push path calls it), so big lists pay nothing for it.

A deque gives O(1) pushes and pops at both ends (LPUSH/RPOP queues, the blocking
commands) and C-speed iteration; index access costs O(distance from the nearer end), which
is what Redis's quicklist costs too. Redis 7.0 stores every list as a quicklist (the
single-listpack list encoding arrived in 7.2), so ``OBJECT ENCODING`` is always
``quicklist`` whatever ``list-max-listpack-size`` says.

Range helpers take Redis-normalised ``start``/``stop`` (already clamped, inclusive) and walk
from whichever end is closer, so ``LRANGE key -100 -1`` on a long list stays cheap.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import islice
from typing import Any

from pykv.storage._listpack import PackedList
from pykv.storage.values import Value

# per-element overhead estimate: deque slot + bytes object header
_ELEMENT_OVERHEAD = 8 + 33


class ListValue(Value):
    """A Redis list."""

    __slots__ = ("items",)
    type_name = b"list"

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        if type(items) in (list, deque) and len(items) > 4096:  # > 8 KB at 2 bytes each
            self.items: Any = deque(items)
            return
        packed = PackedList()
        packed.extend(items)
        self.items = packed if packed.dq is None else packed.dq

    def settle(self) -> None:
        """After a push: a packed list that moved to a deque is replaced by the deque."""
        items = self.items
        if type(items) is PackedList and items.dq is not None:
            self.items = items.dq

    def encoding(self, config: Any) -> bytes:
        return b"quicklist"

    def copy(self) -> ListValue:
        return ListValue(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def memory_usage(self) -> int:
        return 48 + sum(len(e) for e in self.items) + _ELEMENT_OVERHEAD * len(self.items)

    def normalise_range(self, start: int, stop: int) -> tuple[int, int] | None:
        """Redis's LRANGE/LTRIM index rules: (start, stop) inclusive, or None if empty."""
        n = len(self.items)
        if start < 0:
            start += n
        if stop < 0:
            stop += n
        if start < 0:
            start = 0
        if start > stop or start >= n:
            return None
        if stop >= n:
            stop = n - 1
        return start, stop

    def slice(self, start: int, stop: int) -> list[bytes]:
        """Elements ``start..stop`` inclusive (0 <= start <= stop < len), walking from the
        nearer end."""
        items = self.items
        if type(items) is PackedList:
            return items.range(start, stop + 1)
        n = len(items)
        if start <= n - 1 - stop:
            return list(islice(items, start, stop + 1))
        out = list(islice(reversed(items), n - 1 - stop, n - start))
        out.reverse()
        return out

    def slice_reversed(self, start: int, stop: int) -> list[bytes]:
        """Like ``slice`` but from ``stop`` down to ``start``."""
        out = self.slice(start, stop)
        out.reverse()
        return out

    def pop_many(self, count: int, left: bool) -> list[bytes]:
        """Pop up to ``count`` elements from one end, in pop order."""
        items = self.items
        count = min(count, len(items))
        pop = items.popleft if left else items.pop
        return [pop() for _ in range(count)]

    def trim(self, start: int, stop: int) -> int:
        """Keep only ``start..stop`` (normalised, or an empty range as start > stop);
        returns how many elements were removed."""
        items = self.items
        n = len(items)
        if start > stop:
            items.clear()
            return n
        right = n - 1 - stop
        if start + right == 0:
            return 0
        if start + right > n // 2:
            self.items = ListValue(self.slice(start, stop)).items
        else:
            for _ in range(start):
                items.popleft()
            for _ in range(right):
                items.pop()
        return start + right
