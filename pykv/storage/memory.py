"""Memory accounting: the estimate behind ``used_memory``, in Redis's terms.

Each database keeps a running total of per-key estimates (the key table ``Database.data``
keeps each key's figure in its entry, their sum in ``mem_total``, and drops a key's figure
with the key). Writes only note the key in
``Database.mem_dirty`` (one set insertion on the hot path); ``refresh(db)`` re-estimates the
noted keys and adjusts the total, and runs before every command while ``maxmemory`` is on,
from the cron, and when INFO/MEMORY asks. A key's estimate is what Redis would allocate for
it: its dict entry, the key's sds, the value object (strings sized inline like Redis's
``int``/``embstr``/``raw`` objects, rounded to jemalloc size classes), and an expires entry
if it has a TTL. Containers are sized by their Redis encoding (listpack entry by entry,
intset by width, quicklist nodes of 8 KB, hashtable/skiplist entries); a big hashtable,
skiplist or list is measured on ``SAMPLES`` elements and scaled (Redis samples too), so a
write to it costs O(SAMPLES), not O(length).
"""
from __future__ import annotations

from itertools import islice
from typing import Any

from pykv.protocol._parser import string2ll

ROBJ = 16
DICT_ENTRY = 24
EMBSTR_MAX = 44
# elements measured of a big container (the rest are estimated from them)
SAMPLES = 64
# Redis 7.0's used_memory of an empty server (its start-up allocations), pykv's fixed base
BASE = 876_000


def size_class(n: int) -> int:
    """Round an allocation up the way jemalloc's small and large size classes do."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << (n.bit_length() - 3)      # four classes per doubling
    return (n + step - 1) & ~(step - 1)


def sds(length: int) -> int:
    header = 3 if length < 1 << 8 else 5 if length < 1 << 16 else 9
    return size_class(header + length + 1)


def string_usage(value: bytes | bytearray) -> int:
    n = len(value)
    # values.string_encoding's "int" test, inline: this runs for every key written
    # (through the Python-level call it was ~7k instructions a key)
    if n <= 20 and type(value) is bytes and string2ll(value) is not None:
        return ROBJ
    if n <= EMBSTR_MAX:
        return size_class(ROBJ + 3 + n + 1)
    return ROBJ + sds(n)


def _table(n: int) -> int:
    """A Redis dict's bucket array for ``n`` entries (power-of-two slots of 8 bytes)."""
    return 8 << (n - 1).bit_length() if n else 0


def _int_width(element: bytes) -> int:
    """Bytes of a listpack integer entry (0 if ``element`` is not a canonical integer)."""
    if len(element) > 20 or type(element) is not bytes:
        return 0
    n = string2ll(element)  # values.string_encoding's "int" test, inline (as string_usage)
    if n is None:
        return 0
    for width, bits in ((1, 7), (2, 13), (3, 16), (4, 24), (5, 32)):
        if -(1 << (bits - 1)) <= n < 1 << (bits - 1) or (width == 1 and 0 <= n < 128):
            return width
    return 9


def _lp_entry(element: bytes) -> int:
    """One listpack entry: encoding, data and back-length bytes."""
    size = _int_width(element)
    if not size:
        n = len(element)
        size = (1 if n < 64 else 2 if n < 4096 else 5) + n
    return size + (1 if size < 128 else 2)


def _sampled(items: Any, n: int, per_item: Any) -> int:
    """The sum of ``per_item`` over ``n`` items, sampled beyond ``SAMPLES`` of them."""
    if n <= SAMPLES:
        return sum(per_item(x) for x in items)
    return sum(per_item(x) for x in islice(items, SAMPLES)) * n // SAMPLES


def _hash_entry(item: tuple[bytes, bytes]) -> int:
    return DICT_ENTRY + sds(len(item[0])) + sds(len(item[1]))


def _set_entry(member: bytes) -> int:
    return DICT_ENTRY + sds(len(member))


def _zset_entry(member: bytes) -> int:
    # dict entry, the member's sds (shared with the skiplist node), a node of ~1.33 levels
    return DICT_ENTRY + sds(len(member)) + size_class(24 + 16 * 4 // 3 + 8)


def value_usage(value: Any) -> int:
    """Redis's allocation for a value (what MEMORY USAGE estimates, less the key)."""
    t = type(value)
    if t is bytes or t is bytearray:
        return string_usage(value)
    kind = value.type_name
    n = len(value)
    if kind == b"hash":
        d = value.d
        if value.listpack:
            return ROBJ + size_class(d.nbytes())  # the value's buffer is Redis's listpack
        return ROBJ + 96 + _table(n) + _sampled(iter(d.items()), n, _hash_entry)
    if kind == b"list":
        lp = 7 + _sampled(iter(value.items), n, _lp_entry)
        nodes = max(1, -(-lp // 8192))
        return ROBJ + 40 + nodes * (32 + size_class(min(lp, 8192)))
    if kind == b"set":
        members = value.s
        if value.intset:
            return ROBJ + size_class(members.nbytes())  # the value's buffer is the intset
        return ROBJ + 96 + _table(n) + _sampled(iter(members), n, _set_entry)
    if kind == b"zset":
        scores = value.scores
        if value.packed is not None:
            return ROBJ + size_class(value.packed.nbytes())  # the value's own listpack
        return ROBJ + 96 + 64 + _table(n) + _sampled(iter(scores), n, _zset_entry)
    if kind == b"stream":
        # Redis preallocates each node's listpack at stream-node-max-bytes' default 4 KB
        nodes = sum(size_class(max(node.lp_bytes(), 4096)) + 48 for node in value.nodes)
        return ROBJ + 72 + nodes + 128 * len(value.groups)
    return value.memory_usage()


def key_usage(db: Any, key: bytes, value: Any) -> int:
    """The estimate for one key (its value, key buffer and table entries)."""
    size = value_usage(value) + sds(len(key)) + DICT_ENTRY
    if key in db.expires:
        size += DICT_ENTRY
    return size


def refresh(db: Any) -> int:
    """Re-estimate the keys written since the last refresh; returns the database's total."""
    dirty = db.mem_dirty
    if dirty:
        db.mem_dirty = set()
        data = db.data
        for key in dirty:
            value = data.get(key)
            if value is not None:
                data.set_mem(key, key_usage(db, key, value))
    return db.data.mem_total


def db_overhead(db: Any) -> tuple[int, int]:
    """The main and expires bucket arrays of ``db`` (MEMORY STATS ``db.N``)."""
    return _table(len(db.data)), _table(len(db.expires))


def dataset(dbs: Any) -> int:
    """The keys' estimates over all databases (refreshing them first)."""
    return sum(refresh(db) for db in dbs)


def rebuild(db: Any) -> None:
    """Account for every key again (after keys were stored without the keyspace's API)."""
    db.mem_dirty.update(db.data)
