"""The hash value type: field -> value (both ``bytes``), a listpack or a ``FieldTable``.

Encoding follows Redis 7.0: a new hash is a ``listpack`` and becomes a ``hashtable`` when a
field or value longer than ``hash-max-listpack-value`` is written (HSET/HMSET check every
argument before writing, even values equal to the stored ones) or when it holds more than
``hash-max-listpack-entries`` fields. It never converts back. The encoding is state (which
structure ``d`` is), not a function of the contents, because Redis's depends on history too.

While it is a listpack the fields live in one packed buffer (``ListpackMap``, Redis's own
listpack bytes: field, value, field, value... in insertion order, so small hashes reply in
Redis's order and RDB/DUMP write the buffer as it is); at conversion they move to a
``FieldTable`` (pykv.storage._fieldtable: one raw blob per field, no Python object per
field; it replies in its own hash order, as Redis's hashtable does in its). ``d`` is
either, and answers the same dict subset; a hashtable hash scans (HSCAN) and picks random
fields (HRANDFIELD) through the table itself.
"""
from __future__ import annotations

import random
from typing import Any

from pykv.storage._fieldtable import FieldTable
from pykv.storage._listpack import ListpackFull, ListpackMap
from pykv.storage.values import ScannedValue

_ENTRY_OVERHEAD = 2 * 33 + 24


class HashValue(ScannedValue):
    """A Redis hash."""

    __slots__ = ("d",)  # and ``aux``: 2 slots, the 48-byte allocation class
    type_name = b"hash"

    def __init__(self, d: Any = None, listpack: bool = True) -> None:
        """``d``: a mapping or (field, value) pairs; a ``ListpackMap`` (taken as it is) for a
        listpack hash, a ``FieldTable`` (taken as it is) for a hashtable one."""
        if listpack:
            if type(d) is not ListpackMap:
                try:
                    d = ListpackMap(d)
                except ListpackFull:  # past 1 GB (lpSafeToAdd): a hashtable
                    listpack = False
        if not listpack and type(d) is not FieldTable:
            d = FieldTable(d)
        self.d: Any = d
        self.aux = None  # random-pick snapshot (a list of fields), HSCAN index, version

    @classmethod
    def build(cls, pairs: Any, config: Any) -> HashValue:
        """A hash created whole (RDB load, RESTORE): a listpack if it fits the limits."""
        if len(pairs) > config.hash_max_listpack_entries:
            return cls(FieldTable(pairs), False)  # duplicates are dropped as a dict would
        d = dict(pairs)
        limit = config.hash_max_listpack_value
        listpack = len(d) <= config.hash_max_listpack_entries and all(
            len(k) <= limit and len(v) <= limit for k, v in d.items())
        return cls(d, listpack)

    @property
    def listpack(self) -> bool:
        """True while the encoding is listpack (the fields are in a ListpackMap)."""
        return type(self.d) is ListpackMap

    def encoding(self, config: Any) -> bytes:
        return b"listpack" if type(self.d) is ListpackMap else b"hashtable"

    def copy(self) -> HashValue:
        return HashValue(self.d.copy(), self.listpack)

    def __len__(self) -> int:
        return len(self.d)

    def memory_usage(self) -> int:
        d = self.d
        return 64 + sum(len(k) + len(v) for k, v in d.items()) + _ENTRY_OVERHEAD * len(d)

    # -- encoding rules ------------------------------------------------------------------
    def check_size(self, config: Any) -> None:
        if self.listpack and len(self.d) > config.hash_max_listpack_entries:
            self.to_hashtable()

    def to_hashtable(self) -> None:
        """``hashTypeConvert``: the pairs move to a ``FieldTable``."""
        if type(self.d) is ListpackMap:
            self.d = FieldTable(self.d.items())

    # -- writes --------------------------------------------------------------------------
    def set_pairs(self, config: Any, argv: list[bytes], start: int) -> int:
        """HSET's work: set ``argv[start:]`` field/value pairs; returns how many are new."""
        d = self.d
        before = len(d)
        n = len(argv)
        if n == start + 2:  # the usual single pair: no iterator machinery
            field = argv[start]
            value = argv[start + 1]
            if type(d) is ListpackMap:
                limit = config.hash_max_listpack_value
                if len(field) > limit or len(value) > limit:
                    self.to_hashtable()
                    d = self.d
            try:
                d[field] = value
            except ListpackFull:  # lpSafeToAdd: past 1 GB the hash converts first
                self.to_hashtable()
                d = self.d
                d[field] = value
        else:
            if self.listpack:
                limit = config.hash_max_listpack_value
                for i in range(start, n):
                    if len(argv[i]) > limit:
                        self.to_hashtable()
                        d = self.d
                        break
            for i in range(start, n, 2):
                try:
                    d[argv[i]] = argv[i + 1]
                except ListpackFull:
                    self.to_hashtable()
                    d = self.d
                    d[argv[i]] = argv[i + 1]
        added = len(d) - before
        if added:
            self.fields_added()
            if type(d) is ListpackMap and len(d) > config.hash_max_listpack_entries:
                self.to_hashtable()
        return added

    def set_computed(self, config: Any, field: bytes, value: bytes) -> None:
        """``hashTypeSet`` for values the server made (HINCRBY*): length rules, then size."""
        d = self.d
        if type(d) is ListpackMap:
            limit = config.hash_max_listpack_value
            if len(field) > limit or len(value) > limit:
                self.to_hashtable()
                d = self.d
        if type(d) is ListpackMap:
            try:
                new = d.set(field, value)  # one search for both questions
            except ListpackFull:
                self.to_hashtable()
                new = self.d.set(field, value)
        else:
            new = d.set(field, value)
        if new:
            self.fields_added()
            self.check_size(config)

    def delete(self, field: bytes) -> bool:
        if self.d.pop(field, None) is None:
            return False
        aux = self.aux
        if aux is not None:
            aux.snap = None
        return True

    def fields_added(self) -> None:
        """The random-pick snapshot is stale; a scan in progress sees the new version."""
        aux = self.aux
        if aux is not None:
            aux.snap = None
            aux.version += 1

    # -- random access -------------------------------------------------------------------
    def keys_snapshot(self) -> list[bytes]:
        """A listpack hash's fields, kept for repeated random picks until it changes."""
        aux = self.bookkeeping()
        keys = aux.snap
        if keys is None:
            keys = aux.snap = list(self.d)
        return keys

    def random_field(self) -> bytes:
        d = self.d
        if type(d) is FieldTable:
            return d.random_field()
        return random.choice(self.keys_snapshot())
