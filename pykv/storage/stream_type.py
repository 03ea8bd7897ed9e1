"""The stream value type: entries in listpack-shaped nodes, consumer groups, PELs.

Redis keeps a stream as a radix tree of listpack "macro nodes", each opened by a master
entry (the field names of its first entry) and holding up to ``stream-node-max-entries``
entries or ``stream-node-max-bytes`` bytes. Entries deleted by XDEL/XTRIM stay in their node
flagged as deleted, and approximate trimming (``~``) only drops whole nodes, so what
XTRIM ~, XINFO's ``radix-tree-keys``/``radix-tree-nodes`` and the RDB bytes say depends on
where those node boundaries fall. ``StreamValue`` therefore keeps the same node structure
(with each node's exact listpack byte size computed as Redis lays it out) rather than one
flat sorted list. IDs are ``(ms, seq)`` tuples of unsigned 64-bit integers.

Consumer groups keep the group PEL (id -> ``Nack``), the consumers (each with its own PEL
sharing the same ``Nack`` objects), ``last_id`` and the 7.0 ``entries_read`` counter; the
lag and read-counter estimates follow Redis 7.0's rules (``estimate_distance``).

RDB: ``save_stream``/``load_stream`` write and read RDB_TYPE_STREAM_LISTPACKS_2 (type 19)
exactly as Redis 7.0 does, and load the RDB 9 form (type 15).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from typing import Any

import cython

from pykv.protocol._parser import string2ll
from pykv.storage._stream import StreamNode

U64 = (1 << 64) - 1
MAX_ID = (U64, U64)
MIN_ID = (0, 0)
INVALID_ENTRIES_READ = -1
LISTPACK_MAX_SIZE = 1 << 30

FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2

StreamID = tuple[int, int]


# -- IDs ------------------------------------------------------------------------------------
def format_id(sid: StreamID) -> bytes:
    if cython.compiled:  # digits written in C (stream_type.pxd), no format parsing
        return pykv_format_id(sid[0], sid[1])  # noqa: F821
    return b"%d-%d" % sid


def incr_id(sid: StreamID) -> StreamID | None:
    """The next ID, or None past the last possible one."""
    ms, seq = sid
    if seq == U64:
        if ms == U64:
            return None
        return (ms + 1, 0)
    return (ms, seq + 1)


def decr_id(sid: StreamID) -> StreamID | None:
    ms, seq = sid
    if seq == 0:
        if ms == 0:
            return None
        return (ms - 1, U64)
    return (ms, seq - 1)


def encode_id(sid: StreamID) -> bytes:
    """The 16-byte big-endian key Redis uses in its radix trees."""
    return sid[0].to_bytes(8, "big") + sid[1].to_bytes(8, "big")


def decode_id(raw: bytes) -> StreamID:
    return (int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:16], "big"))


def _signed64(value: int) -> int:
    value &= U64
    return value - (1 << 64) if value >= 1 << 63 else value


# -- structure ------------------------------------------------------------------------------
# A node is a ``StreamNode`` (pykv/storage/_stream.pyx): its master ID and field names, and
# its entries packed in one buffer laid out as Redis's stream listpack.


def stream_append(s: StreamValue, sid: StreamID, flat: tuple[bytes, ...], max_bytes: int,
                  max_entries: int) -> None:
    """``StreamValue.append`` (typed in stream_type.pxd: XADD calls it directly): into the
    last node, or a new one when that is full by bytes or entries."""
    nodes = s.nodes
    node = nodes[-1] if nodes else None
    last = node
    if node is not None:
        if max_bytes == 0 or max_bytes > LISTPACK_MAX_SIZE:
            max_bytes = LISTPACK_MAX_SIZE
        total = 0
        for item in flat:
            total += len(item)
        if node.lp_bytes() + total >= max_bytes:
            node = None
        elif max_entries and node.live + node.dead >= max_entries:
            node = None
    if node is None:
        if last is not None:  # full: its spare room goes
            last.shrink()
        node = StreamNode(sid, tuple(flat[0::2]))
        nodes.append(node)
        s.masters.append(sid)
    node.append(sid, flat)
    length = s.length + 1
    s.length = length
    s.entries_added += 1
    s.last_id = sid
    if length == 1:
        s.first_id = sid


def range_forward(s: StreamValue, start: StreamID, end: StreamID, count: int,
                  out: list, form: int = 0) -> None:
    """``StreamValue.range`` ascending, appending ``(id, fields)`` to ``out``, or with
    ``form`` 1 each entry's reply ``[b"ms-seq", [field, value, ...]]``, 2 ``(id, reply)``
    (typed in stream_type.pxd; XREAD/XREADGROUP call it directly)."""
    nodes = s.nodes
    bounded = end != MAX_ID  # nothing is above the last possible ID: no compare per entry
    sms = start[0]
    sseq = start[1]
    ems = end[0]
    eseq = end[1]
    # (an index walk: slicing the node list would copy all of it per call)
    for i in range(max(0, bisect_right(s.masters, start) - 1), len(nodes)):
        node = nodes[i]
        if bounded and node.master > end:
            return
        if cython.compiled:
            if node.forward(sms, sseq, bounded, ems, eseq, count, out, form):
                return
        elif node.range_into(start, end, count, out, False, form):
            return


class PelMap:
    """A pending-entries list: ID -> Nack, iterated in ID order.

    A dict plus a sorted list of its keys. New deliveries almost always carry the highest
    ID so far, and then an insert is a list append; removals (XACK, mostly of the oldest
    IDs) only leave the key in the list as stale, to be skipped by ordered walks and
    swept out once stale keys are the majority, so neither costs a list shift.
    """

    __slots__ = ("_items", "_order", "_stale")

    def __init__(self) -> None:
        self._items: dict[StreamID, Any] = {}
        self._order: list[StreamID] = []  # every live key, plus the stale ones, sorted
        self._stale: set[StreamID] = set()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __contains__(self, sid: object) -> bool:
        return sid in self._items

    def __getitem__(self, sid: StreamID) -> Any:
        return self._items[sid]

    def get(self, sid: StreamID, default: Any = None) -> Any:
        return self._items.get(sid, default)

    def __setitem__(self, sid: StreamID, nack: Any) -> None:
        pel_put(self, sid, nack)

    def pop(self, sid: StreamID, default: Any = None) -> Any:
        items = self._items
        if sid not in items:
            return default
        nack = items.pop(sid)
        stale = self._stale
        stale.add(sid)
        if len(stale) > 32 and len(stale) > len(items):
            self._order = [k for k in self._order if k not in stale]
            stale.clear()
        return nack

    def __iter__(self) -> Iterator[StreamID]:
        return self.irange()

    def keys(self) -> list[StreamID]:
        return list(self.irange())

    def values(self) -> list[Any]:
        items = self._items
        return [items[k] for k in self.irange()]

    def items(self) -> list[tuple[StreamID, Any]]:
        items = self._items
        return [(k, items[k]) for k in self.irange()]

    def first(self) -> StreamID:
        return next(self.irange())

    def last(self) -> StreamID:
        items = self._items
        order = self._order
        for i in range(len(order) - 1, -1, -1):
            if order[i] in items:
                return order[i]
        raise KeyError("empty PEL")

    def irange(self, minimum: StreamID | None = None,
               maximum: StreamID | None = None) -> Iterator[StreamID]:
        """Live IDs with minimum <= id <= maximum, ascending (a generator: copy with list()
        before changing the map)."""
        order = self._order
        items = self._items
        i = 0 if minimum is None else bisect_left(order, minimum)
        n = len(order)
        while i < n:
            sid = order[i]
            if maximum is not None and sid > maximum:
                return
            if sid in items:
                yield sid
            i += 1


def id_above(a: StreamID, b: StreamID) -> bool:
    """``a > b`` for two IDs (typed in stream_type.pxd: C integer compares instead of a
    tuple comparison)."""
    a_ms = a[0]
    b_ms = b[0]
    if a_ms != b_ms:
        return a_ms > b_ms
    a_seq = a[1]
    b_seq = b[1]
    return a_seq > b_seq


def pel_put(pel: PelMap, sid: StreamID, nack: Any) -> None:
    """``pel[sid] = nack`` (a C call from XREADGROUP's typed delivery loop)."""
    items = pel._items
    size = len(items)
    items.setdefault(sid, nack)  # a new key: inserted with one hash of the ID
    if len(items) == size:  # it was there: replaced
        items[sid] = nack
        return
    stale = pel._stale
    if stale and sid in stale:
        stale.discard(sid)  # its key is still in place in the order
    else:
        order = pel._order
        if not order or id_above(sid, order[-1]):
            order.append(sid)
        else:
            insort(order, sid)


class Nack:
    """A pending entry: who has it, when it was last delivered, how many times."""

    __slots__ = ("consumer", "delivery_time", "delivery_count")

    def __init__(self, consumer: Consumer | None, delivery_time: int,
                 delivery_count: int = 1) -> None:
        self.consumer = consumer
        self.delivery_time = delivery_time
        self.delivery_count = delivery_count


class Consumer:
    __slots__ = ("name", "seen_time", "pel")

    def __init__(self, name: bytes, seen_time: int) -> None:
        self.name = name
        self.seen_time = seen_time
        self.pel = PelMap()  # id -> Nack


class Group:
    __slots__ = ("name", "last_id", "entries_read", "pel", "consumers")

    def __init__(self, name: bytes, last_id: StreamID, entries_read: int) -> None:
        self.name = name
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = PelMap()  # id -> Nack
        self.consumers: dict[bytes, Consumer] = {}

    def sorted_consumers(self) -> list[Consumer]:
        return [self.consumers[k] for k in sorted(self.consumers)]

    def create_consumer(self, name: bytes, now: int) -> Consumer | None:
        if name in self.consumers:
            return None
        consumer = self.consumers[name] = Consumer(name, now)
        return consumer

    def delete_consumer(self, consumer: Consumer) -> None:
        for sid in consumer.pel:
            self.pel.pop(sid, None)
        del self.consumers[consumer.name]

    def ack(self, sid: StreamID) -> bool:
        nack = self.pel.pop(sid, None)
        if nack is None:
            return False
        if nack.consumer is not None:
            nack.consumer.pel.pop(sid, None)
        return True


def pel_deliver(group: Group, consumer: Consumer, sid: StreamID, now: int) -> Nack:
    """``sid`` delivered to ``consumer`` (``streamReplyWithRange``'s PEL update): a new
    pending entry, or the existing one handed over with its delivery count reset."""
    gpel = group.pel
    nack = gpel._items.get(sid)
    if nack is None:
        nack = Nack(consumer, now, 1)
        pel_put(gpel, sid, nack)
    else:
        if nack.consumer is not None:
            nack.consumer.pel.pop(sid, None)
        nack.consumer = consumer
        nack.delivery_time = now
        nack.delivery_count = 1
    pel_put(consumer.pel, sid, nack)
    return nack


class StreamValue:
    """A stream: nodes of entries plus the metadata Redis 7.0 keeps.

    It answers the ``pykv.storage.values.Value`` protocol without subclassing it: compiled,
    it is an extension type (stream_type.pxd) whose fields XADD reads and writes as C
    slots, and an extension type cannot derive from a Python class.
    """

    __slots__ = ("nodes", "masters", "length", "last_id", "first_id", "max_deleted",
                 "entries_added", "groups")
    type_name = b"stream"

    def __init__(self) -> None:
        self.nodes: list[StreamNode] = []
        self.masters: list[StreamID] = []  # nodes[i].master, for bisecting
        self.length = 0
        self.last_id: StreamID = MIN_ID
        self.first_id: StreamID = MIN_ID
        self.max_deleted: StreamID = MIN_ID
        self.entries_added = 0
        self.groups: dict[bytes, Group] = {}

    # -- Value protocol ---------------------------------------------------------------------
    def encoding(self, config: Any) -> bytes:
        return b"stream"

    def __len__(self) -> int:
        return self.length

    def memory_usage(self) -> int:
        return 64 + sum(node.lp_bytes() + 40 for node in self.nodes) + 100 * len(self.groups)

    def copy(self) -> StreamValue:
        new = StreamValue()
        new.nodes = [node.copy() for node in self.nodes]
        new.masters = list(self.masters)
        new.length = self.length
        new.last_id = self.last_id
        new.first_id = self.first_id
        new.max_deleted = self.max_deleted
        new.entries_added = self.entries_added
        for name, group in self.groups.items():
            g = new.groups[name] = Group(name, group.last_id, group.entries_read)
            for cname, consumer in group.consumers.items():
                c = g.consumers[cname] = Consumer(cname, consumer.seen_time)
                for sid, nack in consumer.pel.items():
                    copy = Nack(c, nack.delivery_time, nack.delivery_count)
                    c.pel[sid] = copy
                    g.pel[sid] = copy
            for sid, nack in group.pel.items():
                if sid not in g.pel:
                    g.pel[sid] = Nack(None, nack.delivery_time, nack.delivery_count)
        return new

    # -- adding -----------------------------------------------------------------------------
    def append(self, sid: StreamID, flat: list[bytes], max_bytes: int, max_entries: int) -> None:
        """Add an entry (its ID already checked to be above ``last_id``)."""
        stream_append(self, sid, tuple(flat), max_bytes, max_entries)

    # -- lookups ----------------------------------------------------------------------------
    def _locate(self, sid: StreamID) -> tuple[StreamNode, int] | None:
        """The node holding ``sid`` (live or deleted) and the entry's offset in it."""
        i = bisect_right(self.masters, sid) - 1
        if i < 0:
            return None
        node = self.nodes[i]
        off = node.find(sid)
        if off < 0:
            return None
        return node, off

    def get(self, sid: StreamID) -> tuple[bytes, ...] | None:
        """The fields of a live entry, or None."""
        found = self._locate(sid)
        if found is None:
            return None
        node, off = found
        _, flat, flags = node.entry_at(off)
        if flags & FLAG_DELETED:
            return None
        return flat

    def range(self, start: StreamID, end: StreamID, count: int = 0, rev: bool = False,
              reply: bool = False) -> list:
        """Live entries with start <= id <= end (``count`` 0 means all), as ``(id, flat)``
        or, when ``reply``, as XRANGE replies them (``[b"ms-seq", [field, value, ...]]``)."""
        out: list = []
        if start > end or not self.nodes:
            return out
        if not rev:
            range_forward(self, start, end, count, out, reply)
        else:
            for i in range(bisect_right(self.masters, end) - 1, -1, -1):
                if self.nodes[i].range_into(start, end, count, out, True, reply):
                    break
        return out

    def first_entry_id(self) -> StreamID:
        for node in self.nodes:
            sid = node.edge_id(False)
            if sid is not None:
                return sid
        return MIN_ID

    def last_valid_id(self) -> StreamID:
        nodes = self.nodes
        for i in range(len(nodes) - 1, -1, -1):
            sid = nodes[i].edge_id(True)
            if sid is not None:
                return sid
        return MIN_ID

    # -- deleting ---------------------------------------------------------------------------
    def delete(self, sid: StreamID) -> bool:
        """XDEL of one ID (the caller maintains first_id/max_deleted)."""
        found = self._locate(sid)
        if found is None:
            return False
        node, off = found
        if node.live == 1:
            if node.entry_at(off)[2] & FLAG_DELETED:
                return False
            self._drop_node(node)
        elif not node.mark_deleted(off):
            return False
        self.length -= 1
        return True

    def _drop_node(self, node: StreamNode) -> None:
        i = bisect_left(self.masters, node.master)
        del self.nodes[i]
        del self.masters[i]

    def trim(self, maxlen: int | None, minid: StreamID | None, approx: bool,
             limit: int) -> int:
        """Redis's ``streamTrim``: whole nodes first; inside a node only when exact."""
        deleted = 0
        while self.nodes:
            if maxlen is not None and self.length <= maxlen:
                break
            node = self.nodes[0]
            entries = node.live
            if limit and deleted + entries > limit:
                break
            if maxlen is not None:
                remove = self.length - entries >= maxlen
            else:
                remove = node.edge_id(True, False) < minid
            if remove:
                del self.nodes[0]
                del self.masters[0]
                self.length -= entries
                deleted += entries
                continue
            if approx:
                break
            if maxlen is not None:
                flagged = node.trim_front(self.length - maxlen, None)
            else:
                flagged = node.trim_front(-1, minid)
            self.length -= flagged
            deleted += flagged
            break
        if deleted:
            self.first_id = self.first_entry_id() if self.length else MIN_ID
        return deleted

    # -- consumer-group counters ------------------------------------------------------------
    def estimate_distance(self, sid: StreamID) -> int:
        """``streamEstimateDistanceFromFirstEverEntry`` (Redis 7.0)."""
        if not self.entries_added:
            return 0
        if not self.length and sid <= self.last_id:
            return self.entries_added
        if sid == self.last_id:
            return self.entries_added
        if sid > self.last_id:
            return INVALID_ENTRIES_READ
        if self.max_deleted == MIN_ID or self.max_deleted < self.first_id:
            if sid < self.first_id:
                return self.entries_added - self.length
            if sid == self.first_id:
                return self.entries_added - self.length + 1
        return INVALID_ENTRIES_READ

    def has_tombstones(self, start: StreamID | None) -> bool:
        """``streamRangeHasTombstones(s, start, NULL)``."""
        if not self.length or self.max_deleted == MIN_ID:
            return False
        if self.first_id > self.max_deleted:
            return False
        return (start or MIN_ID) <= self.max_deleted

    def group_lag(self, group: Group) -> int | None:
        if not self.entries_added:
            return 0
        if group.entries_read != INVALID_ENTRIES_READ and \
                not self.has_tombstones(group.last_id):
            return self.entries_added - group.entries_read
        read = self.estimate_distance(group.last_id)
        if read != INVALID_ENTRIES_READ:
            return self.entries_added - read
        return None

    def sorted_groups(self) -> list[Group]:
        return [self.groups[k] for k in sorted(self.groups)]

    # -- radix tree shape -------------------------------------------------------------------
    def rax_nodes(self) -> int:
        """The node count of Redis's radix tree over the 16-byte node keys."""
        keys = [encode_id(m) for m in self.masters]
        if not keys:
            return 1
        return _rax_count(keys, 0, len(keys), 0)


def _rax_count(keys: list[bytes], lo: int, hi: int, depth: int) -> int:
    """Nodes of a compressed radix tree holding sorted ``keys[lo:hi]`` below ``depth``."""
    if hi - lo == 1:
        return 1 if depth == 16 else 2
    first, last = keys[lo], keys[hi - 1]
    common = depth
    while first[common] == last[common]:
        common += 1
    total = 1 if common > depth else 0  # a compressed node leading to the branch
    total += 1  # the branching node
    i = lo
    while i < hi:
        byte = keys[i][common]
        j = i + 1
        while j < hi and keys[j][common] == byte:
            j += 1
        total += _rax_count(keys, i, j, common + 1)
        i = j
    return total


# -- RDB ------------------------------------------------------------------------------------
def _node_listpack(node: StreamNode) -> bytes:
    """The node encoded element by element as Redis lays it out (master entry, then every
    entry): what ``node.blob()`` must equal (the tests check the packed buffer with it)."""
    from pykv.storage.rdb.encoding import listpack_encode

    elems: list[bytes | int] = [node.live, node.dead, len(node.fields), *node.fields, 0]
    for sid, flat, flags in node.entries():
        elems.append(flags)
        elems.append(_signed64(sid[0] - node.master[0]))
        elems.append(_signed64(sid[1] - node.master[1]))
        nfields = len(flat) // 2
        if flags & FLAG_SAMEFIELDS:
            elems.extend(flat[1::2])
            elems.append(nfields + 3)
        else:
            elems.append(nfields)
            elems.extend(flat)
            elems.append(nfields * 2 + 4)
    return listpack_encode(elems)


def _save_pel(w: Any, pel: PelMap, nacks: bool) -> None:
    w.length(len(pel))
    for sid, nack in pel.items():
        w.raw(encode_id(sid))
        if nacks:
            w.millis(nack.delivery_time)
            w.length(nack.delivery_count)


def save_stream(w: Any, value: StreamValue) -> None:
    """The body of an RDB_TYPE_STREAM_LISTPACKS_2 object (after the type byte)."""
    w.length(len(value.nodes))
    for node in value.nodes:
        w.string(encode_id(node.master))
        w.string(node.blob())  # the packed buffer is Redis's listpack as it is
    w.length(value.length)
    for part in (*value.last_id, *value.first_id, *value.max_deleted):
        w.length(part)
    w.length(value.entries_added)
    w.length(len(value.groups))
    for group in value.sorted_groups():
        w.string(group.name)
        w.length(group.last_id[0])
        w.length(group.last_id[1])
        w.length(group.entries_read & U64)
        _save_pel(w, group.pel, True)
        consumers = group.sorted_consumers()
        w.length(len(consumers))
        for consumer in consumers:
            w.string(consumer.name)
            w.millis(consumer.seen_time)
            _save_pel(w, consumer.pel, False)


def _lp_int(item: bytes) -> int:
    """A listpack element the stream format says is an integer (``lpGetIntegerIfValid``)."""
    value = string2ll(item)
    if value is None:
        raise ValueError("not an integer")
    return value


def _parse_node(key: bytes, blob: bytes) -> StreamNode:
    """One node listpack, checked as Redis's deep ``streamValidateListpackIntegrity``:
    the master entry, then exactly ``live + dead`` entries, each closed by its lp-count."""
    from pykv.storage.rdb.encoding import RdbFormatError, listpack_decode

    if len(key) != 16:
        raise RdbFormatError("Stream node key entry is not the size of a stream ID")
    try:
        elems = listpack_decode(blob, False)
    except RdbFormatError:
        raise RdbFormatError("Stream listpack integrity check failed.") from None
    if not elems:
        raise RdbFormatError("Empty listpack inside stream")
    try:
        ints = iter(elems)
        live, dead, nfields = _lp_int(next(ints)), _lp_int(next(ints)), _lp_int(next(ints))
        if live < 0 or dead < 0 or nfields < 0:
            raise ValueError("negative count")
        master = decode_id(key)
        fields = tuple([next(ints) for _ in range(nfields)])
        if _lp_int(next(ints)) != 0:
            raise ValueError("bad master entry terminator")
        entries: list[tuple[StreamID, list[bytes], int]] = []
        for _ in range(live + dead):
            flags = _lp_int(next(ints))
            sid = ((master[0] + _lp_int(next(ints))) & U64,
                   (master[1] + _lp_int(next(ints))) & U64)
            if flags & FLAG_SAMEFIELDS:
                flat: list[bytes] = []
                for f in fields:
                    flat.append(f)
                    flat.append(next(ints))
                extra = 3
            else:
                n = _lp_int(next(ints))
                if n < 0:
                    raise ValueError("negative field count")
                flat = [next(ints) for _ in range(2 * n)]
                extra = 4 + n
            if _lp_int(next(ints)) != len(flat) // 2 + extra:
                raise ValueError("lp-count mismatch")
            entries.append((sid, flat, flags))
        if next(ints, None) is not None:
            raise ValueError("trailing elements")
    except (StopIteration, ValueError):
        raise RdbFormatError("Stream listpack integrity check failed.") from None
    if sum(1 for _, _, flags in entries if not flags & FLAG_DELETED) != live:
        raise RdbFormatError("Stream listpack integrity check failed.")
    # Live entries must ascend from the master ID. A deleted entry's ID is never looked at
    # by Redis, so one out of order is dropped rather than kept (lookups bisect the IDs).
    live_ids = [sid for sid, _, flags in entries if not flags & FLAG_DELETED]
    if any(b <= a for a, b in zip(live_ids, live_ids[1:], strict=False)) or \
            (live_ids and live_ids[0] < master):
        raise RdbFormatError("stream entry IDs out of order")
    following = iter(live_ids)
    upper = next(following, None)
    kept: list[tuple[StreamID, list[bytes], int]] = []
    for entry in entries:
        sid, _, flags = entry
        if not flags & FLAG_DELETED:
            upper = next(following, None)
        elif sid < master or (kept and sid <= kept[-1][0]) or \
                (upper is not None and sid >= upper):
            continue
        kept.append(entry)
    if len(kept) == len(entries):  # the loaded listpack is kept as it is
        return StreamNode.from_blob(master, fields, blob, live, dead)
    node = StreamNode(master, fields)  # rebuilt without the dropped entries
    for sid, flat, flags in kept:
        node.append(sid, tuple(flat), flags)
    node.shrink()
    return node


def _load_pel(r: Any, nacks: bool) -> list[tuple[StreamID, int, int]]:
    out = []
    for _ in range(r.length()):
        sid = decode_id(r.take(16))
        if nacks:
            out.append((sid, r.millis(), _signed64(r.length())))  # Redis's long long
        else:
            out.append((sid, 0, 0))
    return out


def _drop_tombstones_after(s: StreamValue, last_id: StreamID) -> None:
    """Deleted entries above the stream's last ID (invisible in Redis) would sort after
    the next XADD; they go."""
    for i in range(len(s.nodes) - 1, -1, -1):
        node = s.nodes[i]
        if node.edge_id(True, False) <= last_id:
            return
        kept = StreamNode(node.master, node.fields)  # rebuilt: its byte size is recomputed
        for sid, flat, flags in node.entries():
            if sid <= last_id:
                kept.append(sid, flat, flags)
        kept.shrink()
        s.nodes[i] = kept


def load_stream(r: Any, type_byte: int, config: Any, integrity: Any = None) -> StreamValue:
    """Read a type 15 (RDB 9) or type 19 (Redis 7.0) stream body.

    Beyond Redis's own checks, the IDs must make sense as one stream (nodes and entries
    ascending, every entry at or after its node's master ID and before the next node,
    ``last_id`` not behind any entry, the length and entries-added counters agreeing with
    the entries), since pykv's lookups rely on that order as Redis's do."""
    from pykv.storage.rdb.encoding import TYPE_STREAM_LISTPACKS_2, RdbFormatError

    v2 = type_byte == TYPE_STREAM_LISTPACKS_2
    s = StreamValue()
    top: StreamID | None = None  # the highest ID (live or deleted) of the nodes so far
    for _ in range(r.length()):
        key = r.string()
        blob = r.string()
        if integrity is not None:
            integrity.checked()
        node = _parse_node(key, blob)
        if top is not None and node.master <= top:
            raise RdbFormatError("stream nodes out of order")
        top = node.edge_id(True, False) or node.master
        if node.live == 0:
            continue
        s.nodes.append(node)
        s.masters.append(node.master)
    s.length = r.length()
    s.last_id = (r.length(), r.length())
    if v2:
        s.first_id = (r.length(), r.length())
        s.max_deleted = (r.length(), r.length())
        s.entries_added = _signed64(r.length())
    else:
        s.first_id = s.first_entry_id()
        s.entries_added = s.length
    if s.length != sum(node.live for node in s.nodes) or s.entries_added < s.length \
            or (s.nodes and s.last_id < s.last_valid_id()):
        raise RdbFormatError("stream metadata does not match its entries")
    _drop_tombstones_after(s, s.last_id)
    for _ in range(r.length()):
        name = r.string()
        last_id = (r.length(), r.length())
        if v2:
            entries_read = _signed64(r.length())  # U64 reads back as -1: invalid
        else:
            entries_read = s.estimate_distance(last_id)
        if name in s.groups:
            raise RdbFormatError("Duplicated consumer group name")
        group = s.groups[name] = Group(name, last_id, entries_read)
        for sid, when, count in _load_pel(r, True):
            if sid in group.pel:
                raise RdbFormatError("Duplicated global PEL entry loading stream consumer "
                                     "group")
            group.pel[sid] = Nack(None, when, count)
        for _ in range(r.length()):
            cname = r.string()
            consumer = Consumer(cname, r.millis())
            if cname in group.consumers:
                raise RdbFormatError("Duplicate stream consumer detected.")
            group.consumers[cname] = consumer
            for sid, _, _ in _load_pel(r, False):
                nack = group.pel.get(sid)
                if nack is None:
                    raise RdbFormatError("Consumer entry not found in group global PEL")
                if nack.consumer is not None:
                    raise RdbFormatError("Duplicated consumer PEL entry  loading a stream "
                                         "consumer group")
                nack.consumer = consumer
                consumer.pel[sid] = nack
        if any(nack.consumer is None for nack in group.pel.values()):
            raise RdbFormatError("Stream CG PEL entry without consumer")
    return s


# -- AOF ------------------------------------------------------------------------------------
def claim_command(key: bytes, group: Group, sid: StreamID, nack: Nack) -> list[bytes]:
    """The XCLAIM that recreates one pending entry exactly (owner, time, count)."""
    return [b"XCLAIM", key, group.name, nack.consumer.name, b"0", format_id(sid), b"TIME",
            b"%d" % nack.delivery_time, b"RETRYCOUNT", b"%d" % nack.delivery_count,
            b"FORCE", b"JUSTID"]


def setid_command(key: bytes, group: Group) -> list[bytes]:
    return [b"XGROUP", b"SETID", key, group.name, format_id(group.last_id), b"ENTRIESREAD",
            b"%d" % group.entries_read]


def rewrite_commands(key: bytes, s: StreamValue) -> list[list[bytes]]:
    """Commands that rebuild ``s`` (AOF rewrite without an RDB preamble)."""
    cmds: list[list[bytes]] = []
    entries = s.range(MIN_ID, MAX_ID)
    if entries:
        for sid, flat in entries:
            cmds.append([b"XADD", key, format_id(sid), *flat])
    else:  # an empty stream still exists: add one entry and trim it away at once
        cmds.append([b"XADD", key, b"MAXLEN", b"0", format_id(max(s.last_id, (0, 1))),
                     b"x", b"y"])
    cmds.append([b"XSETID", key, format_id(s.last_id), b"ENTRIESADDED",
                 b"%d" % s.entries_added, b"MAXDELETEDID", format_id(s.max_deleted)])
    for group in s.sorted_groups():
        cmds.append([b"XGROUP", b"CREATE", key, group.name, format_id(group.last_id),
                     b"ENTRIESREAD", b"%d" % group.entries_read])
        for consumer in group.sorted_consumers():
            cmds.append([b"XGROUP", b"CREATECONSUMER", key, group.name, consumer.name])
        for sid, nack in group.pel.items():
            if s.get(sid) is not None:
                cmds.append(claim_command(key, group, sid, nack))
    return cmds
