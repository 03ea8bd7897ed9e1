"""The list value type: elements packed in listpacks, as Redis's quicklist.

A new list keeps its elements in a ``PackedList`` (one listpack buffer answering the deque
subset the commands use) until they outgrow one quicklist node of the default size (8 KB);
then they move to a ``QuickList`` (a sequence of such nodes answering the same subset),
which the PackedList forwards to until ``settle`` puts the QuickList itself in ``items``
(the push path calls it), so big lists pay nothing for it.

The QuickList gives O(1) pushes and pops at both ends (LPUSH/RPOP queues, the blocking
commands) at about the bytes per element Redis's listpacks take; index access costs
O(nodes from the nearer end) plus one node, what Redis's quicklist costs too. Redis 7.0
stores every list as a quicklist (the single-listpack list encoding arrived in 7.2), so
``OBJECT ENCODING`` is always ``quicklist`` whatever ``list-max-listpack-size`` says.

Range helpers take Redis-normalised ``start``/``stop`` (already clamped, inclusive) and walk
from whichever end is closer, so ``LRANGE key -100 -1`` on a long list stays cheap.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pykv.storage._listpack import PackedList, QuickList
from pykv.storage.values import Value

# per-node overhead estimate: the node object, its list slot and its allocation header
_NODE_OVERHEAD = 40 + 8 + 16


class ListValue(Value):
    """A Redis list."""

    __slots__ = ("items",)
    type_name = b"list"

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        if type(items) in (list, QuickList) and len(items) > 4096:  # > 8 KB at 2 bytes each
            self.items: Any = QuickList(items)
            return
        packed = PackedList()
        packed.extend(items)
        self.items = packed if packed.dq is None else packed.dq

    def settle(self) -> None:
        """After a push: a packed list that moved to a QuickList is replaced by it."""
        items = self.items
        if type(items) is PackedList and items.dq is not None:
            self.items = items.dq

    def encoding(self, config: Any) -> bytes:
        return b"quicklist"

    def copy(self) -> ListValue:
        items = self.items
        if type(items) is QuickList:
            value = ListValue.__new__(ListValue)
            value.items = items.copy()
            return value
        return ListValue(items)

    def __len__(self) -> int:
        return len(self.items)

    def memory_usage(self) -> int:
        items = self.items
        if type(items) is PackedList and items.dq is not None:
            items = items.dq
        if type(items) is QuickList:
            return 48 + 56 + items.nbytes() + _NODE_OVERHEAD * items.node_count()
        return 48 + _NODE_OVERHEAD + items.nbytes()

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
        return self.items.range(start, stop + 1)

    def write_slice(self, out: bytearray, start: int, stop: int) -> None:
        """``slice(start, stop)`` as a RESP array appended to ``out`` (the same bytes in
        RESP2 and RESP3), written from the packed entries without element objects."""
        self.items.write_range(out, start, stop + 1)

    def slice_reversed(self, start: int, stop: int) -> list[bytes]:
        """Like ``slice`` but from ``stop`` down to ``start``."""
        out = self.slice(start, stop)
        out.reverse()
        return out

    def pop_many(self, count: int, left: bool) -> list[bytes]:
        """Pop up to ``count`` elements from one end, in pop order."""
        items = self.items
        n = len(items)
        count = min(count, n)
        if type(items) is QuickList and count > 1:
            start = 0 if left else n - count
            out = items.range(start, start + count)
            items.del_range(start, count)
            if not left:
                out.reverse()
            return out
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
        if type(items) is QuickList:
            items.del_range(stop + 1, right)
            items.del_range(0, start)
        elif start + right > n // 2:
            self.items = ListValue(self.slice(start, stop)).items
        else:
            for _ in range(start):
                items.popleft()
            for _ in range(right):
                items.pop()
        return start + right
