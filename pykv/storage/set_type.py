"""The set value type: ``bytes`` members in an intset, or the keys of a ``Members`` dict.

Encoding follows Redis 7.0 (which has no set listpack): ``intset`` while every member is a
canonical 64-bit integer (Redis's ``string2ll``) and there are at most
``set-max-intset-entries`` of them, ``hashtable`` after that, never back. Redis builds some
sets afresh (SINTERSTORE/SUNIONSTORE/SDIFFSTORE results, SMOVE's new destination, the
survivors of a large SPOP with count), and a fresh set is an intset again if its members
allow it: ``SetValue.build`` follows that rule.

While it is an intset the members live in one packed ``IntSet`` (Redis's own intset bytes,
which RDB/DUMP write as they are); at conversion they move to ``Members``, the keys of a
dict (a dict of 10 keys takes 352 bytes where a ``set`` takes 728); past ``BIG_SET``
members, where a set's table is the smaller, to a plain ``set``. ``s`` is any of the three,
and answers the same set subset (membership, len, iteration, add/remove/discard).

An intset is sorted, so intset-encoded sets reply in ascending numeric order, as Redis's do;
hashtable sets reply in insertion order (Redis's is its own hash order: callers and tests
must treat it as unordered).

Random picks (SPOP, SRANDMEMBER) use a snapshot tuple of the members that survives removals
(stale entries are skipped by rejection) and is rebuilt after an add or when more than half
of it is stale, so draining a large set with SPOP costs O(1) amortised per pop.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

import cython

from pykv.protocol._parser import string2ll as to_int
from pykv.storage._intset import IntSet
from pykv.storage.values import ScannedValue

_MEMBER_OVERHEAD = 33 + 24
# past this many members a hashtable set's members are a ``set`` (16 bytes a slot, 2x
# growth) rather than ``Members`` (a 24-byte entry and a 4-byte index slot)
BIG_SET = 1 << 16


def is_int_member(member: bytes) -> bool:
    """True if Redis would store ``member`` in an intset."""
    return len(member) <= 20 and to_int(member) is not None


class Members(dict):
    """A hashtable set's members as the keys of a dict (values None), with the ``set``
    methods the commands call. Built with ``Members.fromkeys(members)``."""

    __slots__ = ()

    def add(self, member: bytes) -> None:
        self[member] = None

    def remove(self, member: bytes) -> None:
        del self[member]

    def discard(self, member: bytes) -> None:
        self.pop(member, None)

    def copy(self) -> Members:
        return Members(self)


@cython.no_gc
@cython.cclass
class SetValue:
    """A Redis set (a ``ScannedValue`` in all but its base class).

    Compiled it is an extension type without a GC header (it can hold no reference cycle:
    ``s`` holds ``bytes`` members, ``aux`` snapshots of them): 16 bytes and two fields, the
    32-byte allocation class, where a ``ScannedValue`` subclass takes 48."""

    s = cython.declare(object, visibility="public")
    aux = cython.declare(object, visibility="public")
    type_name = b"set"
    bookkeeping = ScannedValue.bookkeeping
    version = ScannedValue.version
    scan_index = ScannedValue.scan_index

    def __init__(self, s: Any = None, intset: bool = True) -> None:
        """``s``: members (a ``Members`` is taken as it is), or an ``IntSet`` (taken as it
        is) for an intset."""
        if intset:
            if type(s) is not IntSet:
                s = IntSet(s)
        elif s is None:
            s = Members()
        elif type(s) is not Members and not (type(s) is set and len(s) > BIG_SET):
            s = Members.fromkeys(s)
        self.s = s
        self.aux = None  # random-pick snapshot (a tuple), SSCAN index, version

    @classmethod
    def build(cls, members: Iterable[bytes], config: Any) -> SetValue:
        """A freshly created set holding ``members`` (encoding decided from scratch)."""
        s = members if type(members) is set else set(members)
        intset = len(s) <= config.set_max_intset_entries and all(map(is_int_member, s))
        return cls(s, intset)

    @property
    def intset(self) -> bool:
        """True while the encoding is intset (the members are in an IntSet)."""
        return type(self.s) is IntSet

    def encoding(self, config: Any) -> bytes:
        return b"intset" if type(self.s) is IntSet else b"hashtable"

    def copy(self) -> SetValue:
        return SetValue(self.s.copy(), self.intset)

    def __len__(self) -> int:
        return len(self.s)

    def memory_usage(self) -> int:
        return 64 + sum(len(m) for m in self.s) + _MEMBER_OVERHEAD * len(self.s)

    # -- writes --------------------------------------------------------------------------
    def add_many(self, members: Iterable[bytes], config: Any) -> int:
        """Add members; returns how many were new (converting to hashtable as Redis does)."""
        s = self.s
        before = len(s)
        if type(s) is IntSet:
            packed = True
            for m in members:
                if packed:
                    if is_int_member(m):
                        s.add(m)
                        continue
                    self.to_hashtable()
                    s = self.s
                    packed = False
                s.add(m)
            if packed and len(s) > config.set_max_intset_entries:
                self.to_hashtable()
        elif type(s) is Members:
            for m in members:
                s[m] = None
            if len(s) > BIG_SET:
                self.s = set(s)
        else:
            s.update(members)
        added = len(s) - before
        if added:
            self.members_added()
        return added

    def members_added(self) -> None:
        """The random-pick snapshot is stale; a scan in progress sees the new version."""
        aux = self.aux
        if aux is not None:
            aux.snap = None
            aux.version += 1

    def to_hashtable(self) -> None:
        """``setTypeConvert``: the members move to a ``Members`` dict, for good."""
        if type(self.s) is IntSet:
            self.s = Members.fromkeys(self.s)

    def add(self, member: bytes, config: Any) -> bool:
        return self.add_many((member,), config) == 1

    def remove(self, member: bytes) -> bool:
        s = self.s
        if type(s) is IntSet:
            return s.discard(member)
        if member in s:
            s.remove(member)
            return True
        return False

    # -- reads ---------------------------------------------------------------------------
    def ordered(self) -> Iterator[bytes] | list[bytes]:
        """Members in the order Redis would reply with for this encoding."""
        if type(self.s) is IntSet:
            return self.s.tolist()
        return iter(self.s)

    def random_member(self) -> bytes:
        s = self.s
        if type(s) is IntSet:
            return s.at(random.randrange(len(s)))
        aux = self.bookkeeping()
        snap = aux.snap
        if snap is None or len(snap) > 2 * len(s) + 8:
            snap = aux.snap = tuple(s)
        choice = random.choice
        while True:
            m = choice(snap)
            if m in s:
                return m

    def random_distinct(self, count: int) -> list[bytes]:
        """``count`` distinct random members (count < len)."""
        if count * 3 > len(self.s) or self.intset:
            return random.sample(list(self.s), count)
        seen: dict[bytes, None] = {}
        pick = self.random_member
        while len(seen) < count:
            seen[pick()] = None
        return list(seen)
