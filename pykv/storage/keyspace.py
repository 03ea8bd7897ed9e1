"""The keyspace: numbered databases of keys, their expiry times and access clocks.

A ``Database`` owns two tables keyed by the key's bytes:

* ``data``    a ``KeyTable`` (pykv.storage._keytable): key -> value (``bytes``/``bytearray``
  for strings, a value-type object otherwise), and per key its access clock (the last
  access second, or the LFU word; ``access`` is a mapping view of it for ``OBJECT``) and
  its memory estimate (pykv.storage.memory), all in one entry
* ``expires`` an ``IntTable`` (the same table with the int inline in the entry): key ->
  absolute expiry time in Unix milliseconds (only keys with a TTL)

Expiry is lazy (a lookup of an expired key deletes it first) and active (``active_expire``
walks the keys with a TTL a slice at a time from a timer, like Redis's expire cycle).
Hooks let other layers hear about changes without the keyspace knowing them: every write
calls ``signal_modified`` (WATCH, client-side caching) and deletions by expiry call
``on_expired`` (keyspace notifications, replication of DELs).
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import cython

from pykv.storage._keytable import AccessView, IntTable, KeyTable


def now_ms() -> int:
    return int(time.time() * 1000)


if not cython.compiled:  # compiled, the clock is read in C (keyspace.pxd's inline _wall_ms)
    _wall_ms = now_ms


class Clock:
    """The cached time for one batch of commands, like Redis's ``server.mstime``.

    The dispatcher refreshes it before each command; everything that asks "is this key
    expired" during that command sees the same instant (as Redis does within a command).
    """

    __slots__ = ("ms", "sec", "no_touch", "master_view")

    def __init__(self) -> None:
        self.ms = now_ms()
        self.sec = self.ms // 1000
        # set while a CLIENT NO-TOUCH client runs its commands: reads leave the access
        # clocks alone (TOUCH still touches, through ``Database.touch``)
        self.no_touch = False
        # set while a replica applies its master's stream: no key is expired for the master
        # (only its DELs remove keys; Redis's expireIfNeeded for the master client)
        self.master_view = False

    def update(self) -> int:
        self.ms = ms = _wall_ms()
        self.sec = ms // 1000
        return ms


class Database:
    """One numbered database (``SELECT n``)."""

    __slots__ = (
        "id", "data", "expires", "clock", "_signal_hook", "on_expired", "on_flush",
        "_expire_snapshot", "_expire_pos", "avg_ttl", "expired_count", "version",
        "blocking_keys", "on_key_ready", "lfu", "lfu_log_factor",
        "lfu_decay_time", "on_new_key", "expire_paused", "mem_dirty",
        "slot_index", "signal_keys",
    )

    def __init__(self, db_id: int, clock: Clock) -> None:
        self.id = db_id
        self.data = KeyTable()
        self.expires = IntTable()
        self.clock = clock
        # hooks installed by the server; no-ops until something listens
        self._signal_hook: Callable[[Database, bytes], None] = _noop
        # None: every change calls signal_modified; a dict: only changes of its keys do
        # (WATCH's table of this database, while WATCH is the only listener); installing
        # a hook resets it to None
        self.signal_keys: dict | None = None
        self.on_expired: Callable[[Database, bytes], None] = _noop
        # called by ``clear`` before the keys go (WATCH: FLUSHDB/FLUSHALL dirty watchers)
        self.on_flush: Callable[[Database], None] = _noop_flush
        self._expire_snapshot: list[bytes] = []
        self._expire_pos = 0
        self.avg_ttl = 0
        self.expired_count = 0
        # bumped by every ``set``: eviction's snapshot of the keys with a TTL is rebuilt
        # once enough keys may have been added (SCAN walks ``data`` itself)
        self.version = 0
        # clients parked on keys by blocking commands (key -> FIFO of waiters) and the
        # hook ``set`` calls when one of those keys is written (see pykv.server.blocking)
        self.blocking_keys: dict[bytes, Any] = {}
        self.on_key_ready: Callable[[Database, bytes], None] = _noop
        # an LFU maxmemory-policy: ``access`` holds Redis's packed LFU word per key instead
        # of the last access second (Redis keeps one or the other in the same field)
        self.lfu = False
        # set while keyspace events of class "n" (new key) are on: called as a key is added
        self.on_new_key: Callable[[Database, bytes], None] | None = None
        self.lfu_log_factor = 10
        self.lfu_decay_time = 1
        # CLIENT PAUSE: expired keys read as missing but are not deleted (Redis 7.0)
        self.expire_paused = False
        # memory accounting (pykv.storage.memory): keys written since the last refresh and
        # the sum of the estimates at the last refresh (the table keeps one per key)
        self.mem_dirty: set[bytes] = set()
        # cluster mode, database 0: the keys per hash slot (pykv.cluster.slot_index)
        self.slot_index: Any = None

    @property
    def signal_modified(self) -> Callable[[Database, bytes], None]:
        """The hook every change of a key calls (WATCH, client-side caching)."""
        return self._signal_hook

    @signal_modified.setter
    def signal_modified(self, hook: Callable[[Database, bytes], None]) -> None:
        self._signal_hook = hook
        self.signal_keys = None

    @property
    def access(self) -> AccessView:
        """The keys' access clocks as a mapping (LRU second or LFU word)."""
        return AccessView(self.data)

    def __len__(self) -> int:
        return len(self.data)

    # -- lookups -----------------------------------------------------------------------
    def get(self, key: bytes, touch: bool = True) -> Any:
        """The live value of ``key`` or None (expiring it first if its time has come)."""
        if self.expires:
            when = self.expires.get(key)
            if when is not None and when <= self.clock.ms and not self.clock.master_view:
                if key in self.data and not self.expire_paused:
                    self.expire_now(key)
                return None
        if touch and not self.clock.no_touch:
            if self.lfu:
                value = self.data.get(key)
                if value is not None:
                    self.lfu_touch(key)
                return value
            return self.data.get_touch(key, self.clock.sec)  # one probe: value and clock
        return self.data.get(key)

    def touch(self, key: bytes) -> None:
        """TOUCH on a live key: an access even for a NO-TOUCH client."""
        if self.lfu:
            self.lfu_touch(key)
        else:
            self.data.set_access(key, self.clock.sec)

    def restore_access(self, key: bytes, freq: int, idle: int) -> None:
        """Redis's objectSetLRUOrLFU for RESTORE: FREQ counts only under an LFU policy,
        IDLETIME (seconds) only under an LRU one, on Redis's 24-bit LRU clock."""
        if self.lfu:
            if freq >= 0:
                self.data.set_access(key, (((self.clock.sec // 60) & 0xFFFF) << 8) | freq)
            return
        if idle < 0:
            return
        now = self.clock.sec & LRU_CLOCK_MAX
        lru = now - idle
        if lru < 0:  # before the clock's zero: Redis adds one wrap, then keeps 24 bits
            lru += LRU_CLOCK_MAX
        lru &= LRU_CLOCK_MAX
        seen = now - lru if now >= lru else now + (LRU_CLOCK_MAX - lru)
        self.data.set_access(key, self.clock.sec - seen)

    def lfu_touch(self, key: bytes) -> None:
        """Redis's updateLFU: decay the counter by the idle periods, then the logarithmic
        increment (always from 5 to 6; ever less likely as the counter grows)."""
        now_min = (self.clock.sec // 60) & 0xFFFF
        packed = self.data.get_access(key)
        counter = LFU_INIT_VAL if packed is None else \
            lfu_counter(packed, now_min, self.lfu_decay_time)
        if counter < 255:
            base = counter - LFU_INIT_VAL
            if base <= 0 or random.random() < 1.0 / (base * self.lfu_log_factor + 1):
                counter += 1
        self.data.set_access(key, (now_min << 8) | counter)

    def contains(self, key: bytes) -> bool:
        return self.get(key, touch=False) is not None

    def expire_if_needed(self, key: bytes) -> bool:
        when = self.expires.get(key)
        if when is not None and when <= self.clock.ms and not self.clock.master_view:
            if not self.expire_paused:
                self.expire_now(key)
            return True
        return False

    def expire_now(self, key: bytes) -> None:
        self._remove(key)
        self.expired_count += 1
        self.on_expired(self, key)
        self._signal(key)

    # -- writes ------------------------------------------------------------------------
    def _signal(self, key: bytes) -> None:
        """Tell ``signal_modified`` that ``key`` changed, unless ``signal_keys`` says it
        does not care: the WATCH table alone listens and nobody watches ``key``."""
        keys = self.signal_keys
        if keys is None or (keys and key in keys):
            self._signal_hook(self, key)

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Store ``value`` at ``key``; a plain set clears any TTL (``SET`` semantics)."""
        if self.on_new_key is not None and key not in self.data:
            self.on_new_key(self, key)  # Redis fires "new" inside dbAdd, before the command's
        if self.slot_index is not None and key not in self.data:
            self.slot_index.add(key)
        if not self.lfu:
            self.data.put_touch(key, value, self.clock.sec)
        elif self.data.get_access(key) is not None:  # an overwrite is an access (lookupKeyWrite)
            self.data.store(key, value)
            self.lfu_touch(key)
        else:
            self.data.put_touch(key, value, ((self.clock.sec // 60) & 0xFFFF) << 8 | LFU_INIT_VAL)
        self.version += 1
        self.mem_dirty.add(key)
        if not keep_ttl and self.expires:
            self.expires.discard(key)
        self._signal(key)
        if self.blocking_keys and key in self.blocking_keys:
            self.on_key_ready(self, key)

    def modified(self, key: bytes) -> None:
        """Call after changing a stored value in place (LPUSH on an existing list, …)."""
        self.mem_dirty.add(key)
        self._signal(key)

    def unshare(self, key: bytes, value: Any) -> None:
        """Store a new representation of the same value (bytes -> bytearray before an
        in-place edit, Redis's dbUnshareStringValue): no change is signalled; the caller
        signals if it then really changes something."""
        self.data.store(key, value)
        self.mem_dirty.add(key)

    def replace_value(self, key: bytes, value: Any) -> None:
        """Update the value of an existing key in place, keeping its TTL."""
        self.data.store(key, value)
        self.mem_dirty.add(key)
        self._signal(key)

    def replace_counter(self, key: bytes, value: bytes) -> None:
        """INCR's store over the canonical integer ``get`` just returned: the entry that
        lookup found, and no memory re-estimate (an int-encoded string stays one robj)."""
        self.data.replace_found(key, value)
        self._signal(key)

    def delete(self, key: bytes) -> bool:
        """Delete a live key; False if it did not exist (or had already expired)."""
        if self.get(key, touch=False) is None:
            return False
        self._remove(key)
        self._signal(key)
        return True

    def pop(self, key: bytes) -> Any:
        """Remove and return the live value of ``key`` (None if absent)."""
        value = self.get(key, touch=False)
        if value is not None:
            self._remove(key)
            self._signal(key)
        return value

    def _remove(self, key: bytes) -> None:
        self.data.discard(key)
        if self.slot_index is not None:
            self.slot_index.remove(key)
        if self.blocking_keys and key in self.blocking_keys:
            self.on_key_ready(self, key)  # a waiter may have to hear it went (XREADGROUP)
        self.mem_dirty.add(key)
        if self.expires:
            self.expires.discard(key)

    def clear(self) -> int:
        n = len(self.data)
        self.on_flush(self)  # even when empty: FLUSHDB still invalidates client caches
        for key in self.blocking_keys:
            if key in self.data:
                self.on_key_ready(self, key)
        self.data = KeyTable()
        if self.slot_index is not None:
            self.slot_index.clear()
        self.expires = IntTable()
        self._expire_snapshot = []
        self._expire_pos = 0
        self.avg_ttl = 0
        self.mem_dirty = set()
        return n

    # -- expiry ------------------------------------------------------------------------
    def set_expire(self, key: bytes, when_ms: int) -> None:
        self.expires.store(key, when_ms)
        self.mem_dirty.add(key)
        self._signal(key)

    def get_expire(self, key: bytes) -> int:
        """Absolute expiry in ms, or -1 if the key has no TTL."""
        return self.expires.get(key, -1)

    def persist(self, key: bytes) -> bool:
        if self.expires.discard(key) is None:
            return False
        self.mem_dirty.add(key)
        self._signal(key)
        return True

    def active_expire(self, deadline_ns: int, batch: int = 20) -> int:
        """Expire keys whose time has passed until ``deadline_ns`` (monotonic) or no more.

        Walks a snapshot of the keys with a TTL ``batch`` keys at a time and keeps going
        while more than a quarter of a batch was expired (Redis's heuristic), so a database
        full of stale keys is cleaned quickly and a healthy one costs one batch per tick.
        """
        expired = 0
        expires = self.expires
        while expires and not self.expire_paused:
            if self._expire_pos >= len(self._expire_snapshot):
                self._expire_snapshot = list(expires)
                self._expire_pos = 0
            start = self._expire_pos
            chunk = self._expire_snapshot[start:start + batch]
            self._expire_pos = start + len(chunk)
            now = self.clock.update()
            found = 0
            ttl_sum = 0
            ttl_n = 0
            for key in chunk:
                when = expires.get(key)
                if when is None:
                    continue
                if when <= now:
                    self.expire_now(key)
                    found += 1
                else:
                    ttl_sum += when - now
                    ttl_n += 1
            if ttl_n:
                avg = ttl_sum // ttl_n
                self.avg_ttl = avg if not self.avg_ttl else (self.avg_ttl * 49 + avg) // 50
            expired += found
            if found * 4 <= len(chunk) or time.monotonic_ns() >= deadline_ns:
                break
        if not expires:
            self._expire_snapshot = []
            self._expire_pos = 0
        return expired

    def keys(self) -> Iterator[bytes]:
        return iter(list(self.data))


LFU_INIT_VAL = 5
# what a database's dataset is made of: the fields SWAPDB exchanges between two databases
# and a swapdb diskless load sets aside (the hooks, clock and listeners stay with the db)
DATASET_FIELDS = ("data", "expires", "avg_ttl", "_expire_snapshot", "_expire_pos",
                  "mem_dirty")

LRU_CLOCK_MAX = (1 << 24) - 1  # Redis's 24-bit object clock, in seconds


def lfu_counter(packed: int, now_min: int, decay_time: int) -> int:
    """Redis's LFUDecrAndReturn: the counter less one per ``decay_time`` idle minutes."""
    counter = packed & 0xFF
    ldt = packed >> 8
    elapsed = now_min - ldt if now_min >= ldt else 65535 - ldt + now_min
    periods = elapsed // decay_time if decay_time else 0
    return 0 if periods > counter else counter - periods


def _noop(db: Database, key: bytes) -> None:
    return None


def _noop_flush(db: Database) -> None:
    return None
