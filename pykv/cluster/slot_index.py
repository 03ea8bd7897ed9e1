"""The keys of each hash slot, kept by database 0 while cluster mode is on.

``Database.slot_index`` is None on a standalone server (one ``is not None`` test on the
keyspace's add/remove paths); in cluster mode the keyspace calls ``add`` for each new key,
``remove`` for each key that goes and ``clear`` on a flush, so CLUSTER COUNTKEYSINSLOT and
GETKEYSINSLOT (and slot migration) cost the slot's size, not the keyspace's.
"""
from __future__ import annotations

from collections.abc import Iterable

from pykv.cluster.keyslot import CLUSTER_SLOTS, key_hash_slot


class SlotIndex:
    """Slot -> the keys in it (insertion ordered), plus a count per slot."""

    __slots__ = ("keys", "counts")

    def __init__(self) -> None:
        self.keys: dict[int, dict[bytes, None]] = {}
        self.counts = [0] * CLUSTER_SLOTS

    def add(self, key: bytes) -> None:
        slot = key_hash_slot(key)
        members = self.keys.get(slot)
        if members is None:
            members = self.keys[slot] = {}
        if key not in members:
            members[key] = None
            self.counts[slot] += 1

    def remove(self, key: bytes) -> None:
        slot = key_hash_slot(key)
        members = self.keys.get(slot)
        if members is not None and key in members:
            del members[key]
            self.counts[slot] -= 1
            if not members:
                del self.keys[slot]

    def clear(self) -> None:
        self.keys = {}
        self.counts = [0] * CLUSTER_SLOTS

    def rebuild(self, keys: Iterable[bytes]) -> None:
        """Index ``keys`` from scratch (after an RDB/AOF load wrote the dict directly)."""
        self.clear()
        for key in keys:
            self.add(key)

    def count(self, slot: int) -> int:
        return self.counts[slot]

    def get_keys(self, slot: int, limit: int) -> list[bytes]:
        members = self.keys.get(slot)
        if not members:
            return []
        out = []
        for key in members:
            if len(out) >= limit:
                break
            out.append(key)
        return out
