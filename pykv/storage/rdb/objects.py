"""Values to and from their RDB form (the part of the format that knows the value types).

``save_object(w, value, config)`` writes the RDB type byte and the value as Redis 7.0 would
(listpack for small hashes/zsets, quicklist-2 of listpack nodes for lists, intset for small
integer sets, plain encodings for large containers). ``load_object(r, type_byte)`` reads any
type Redis 7.0 loads, including the older ziplist/zipmap forms, and returns the pykv value.
DUMP/RESTORE payloads (``dump_payload``/``restore_payload``) wrap one object with the RDB
version and a CRC-64, exactly like Redis, so payloads move between pykv and Redis.
"""
from __future__ import annotations

import struct
from typing import Any

from pykv.storage.rdb import encoding as enc
from pykv.storage.rdb._codec import crc64
from pykv.storage.rdb.encoding import RdbFormatError, RdbReader, RdbWriter
from pykv.storage.rdb.integrity import EmptyKey, Integrity, strtod
from pykv.storage.values import is_string

_value_types = None


def _types():
    """The value-type adapter (imported on first use: it imports every value type)."""
    global _value_types
    if _value_types is None:
        from pykv.storage import value_types

        _value_types = value_types
    return _value_types


# ---------------------------------------------------------------------------------------
# saving
# ---------------------------------------------------------------------------------------
def object_type(value: Any, config: Any) -> int:
    """The RDB type byte Redis 7.0 writes for ``value`` in its current encoding."""
    if is_string(value):
        return enc.TYPE_STRING
    kind = value.type_name
    if kind == b"list":
        return enc.TYPE_LIST_QUICKLIST_2
    if kind == b"stream":
        return enc.TYPE_STREAM_LISTPACKS_2
    compact = value.encoding(config) in (b"listpack", b"intset")
    if kind == b"set":
        return enc.TYPE_SET_INTSET if compact else enc.TYPE_SET
    if kind == b"hash":
        return enc.TYPE_HASH_LISTPACK if compact else enc.TYPE_HASH
    if kind == b"zset":
        return enc.TYPE_ZSET_LISTPACK if compact else enc.TYPE_ZSET_2
    raise TypeError(f"cannot save value of type {kind!r}")


def save_object(w: RdbWriter, value: Any, config: Any, key: bytes | None = None) -> None:
    """Type byte, then the key (in a file; not in a DUMP payload), then the value."""
    t = object_type(value, config)
    w.byte(t)
    if key is not None:
        w.string(key)
    if t == enc.TYPE_STRING:
        w.string(value)
        return
    vt = _types()
    if t == enc.TYPE_LIST_QUICKLIST_2:
        _save_list(w, vt.list_items(value), config)
    elif t == enc.TYPE_SET_INTSET:
        w.string(vt.set_intset(value))  # the value's own buffer
    elif t == enc.TYPE_SET:
        members = vt.set_members(value)
        w.length(len(members))
        for m in members:
            w.string(m)
    elif t == enc.TYPE_HASH_LISTPACK:
        w.string(vt.hash_listpack(value))  # the value's own buffer
    elif t == enc.TYPE_HASH:
        pairs = vt.hash_items(value)
        w.length(len(pairs))
        for field, val in pairs:
            w.string(field)
            w.string(val)
    elif t == enc.TYPE_ZSET_LISTPACK:
        w.string(vt.zset_listpack(value))  # the value's own buffer
    elif t == enc.TYPE_ZSET_2:
        pairs = vt.zset_items(value)
        w.length(len(pairs))
        for member, score in reversed(pairs):  # Redis saves from the tail
            w.string(member)
            w.binary_double(score)
    else:
        vt.save_stream(w, value)


# Redis 7.0's quicklist node limits for a negative list-max-listpack-size, and the largest
# node a positive (count) limit may build (SIZE_SAFETY_LIMIT); an entry is estimated at its
# length plus 8 bytes when deciding whether it still fits (SIZE_ESTIMATE_OVERHEAD)
_NODE_BYTES = {-1: 4096, -2: 8192, -3: 16384, -4: 32768, -5: 65536}
_SAFETY_LIMIT = 8192
_ENTRY_OVERHEAD = 8
_LISTPACK_EMPTY = 7  # header (6) and end byte


def list_nodes(items: list[bytes], config: Any) -> list[list[bytes]]:
    """The quicklist nodes ``items`` fill, split where Redis splits a list built by
    appending (RPUSH) under ``list-max-listpack-size``, so DUMP and RDB bytes match Redis's."""
    fill = min(getattr(config, "list_max_listpack_size", -2), 32767)  # quicklistSetFill's clamp
    limit = _NODE_BYTES.get(fill, 65536) if fill < 0 else None
    nodes: list[list[bytes]] = []
    node: list[bytes] = []
    size = _LISTPACK_EMPTY
    for item in items:
        if node:
            estimate = size + len(item) + _ENTRY_OVERHEAD
            if limit is not None:
                fits = estimate <= limit
            else:
                fits = estimate <= _SAFETY_LIMIT and len(node) < fill
            if not fits:
                nodes.append(node)
                node, size = [], _LISTPACK_EMPTY
        node.append(item)
        size += enc.listpack_entry_size(item)
    if node:
        nodes.append(node)
    return nodes


def _save_list(w: RdbWriter, items: list[bytes], config: Any) -> None:
    """Quicklist 2: nodes of listpacks (``list_nodes``)."""
    nodes = list_nodes(items, config)
    w.length(len(nodes))
    for node in nodes:
        w.length(enc.QUICKLIST_NODE_PACKED)
        w.string(enc.listpack_encode(node))


# ---------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------
def load_object(r: RdbReader, type_byte: int, config: Any,
                integrity: Integrity | None = None) -> Any:
    """Read one value of RDB type ``type_byte``; raises RdbFormatError (EmptyKey for a
    value without elements) when it is not one Redis 7.0 would load (see ``integrity``)."""
    if integrity is None:
        integrity = Integrity()
    if type_byte == enc.TYPE_STRING:
        return r.string()
    vt = _types()
    if type_byte == enc.TYPE_LIST:
        items = [r.string() for _ in range(_count(r))]
        return vt.make_list(items, config)
    if type_byte in (enc.TYPE_LIST_QUICKLIST, enc.TYPE_LIST_QUICKLIST_2):
        return vt.make_list(_load_quicklist(r, type_byte, integrity), config)
    if type_byte == enc.TYPE_LIST_ZIPLIST:
        items = _decoded(enc.ziplist_decode, r.string(), "List ziplist integrity check failed.")
        return vt.make_list(_nonempty(items), config)
    if type_byte == enc.TYPE_SET:
        members = [r.string() for _ in range(_count(r))]
        return _whole(vt.make_set(members, config), members, "Duplicate set members detected")
    if type_byte == enc.TYPE_SET_INTSET:
        blob = r.string()
        integrity.checked()
        return vt.make_set_from_intset(blob, enc.intset_decode(blob), config)
    if type_byte == enc.TYPE_HASH:
        n = _count(r)
        pairs = [(r.string(), r.string()) for _ in range(n)]
        return _whole(vt.make_hash(pairs, config), pairs, "Duplicate hash fields detected")
    if type_byte in _PACKED_HASHES:
        decode, what = _PACKED_HASHES[type_byte]
        blob = r.string()
        if type_byte == enc.TYPE_HASH_LISTPACK:
            integrity.checked()
            n = enc.listpack_adoptable_pairs(blob, False, config.hash_max_listpack_entries)
            if n > 0:  # Redis's own bytes, staying a listpack: kept without decoding
                return vt.adopt_hash_listpack(blob, n)
        flat = _decoded(decode, blob, what)
        pairs = _pairs(flat, what)
        if type_byte == enc.TYPE_HASH_LISTPACK and enc.listpack_encode(flat) == blob:
            # Redis's own bytes (canonical entries, exact count): kept as the buffer
            if len(set(flat[::2])) != len(pairs):
                raise RdbFormatError(what)
            return vt.make_hash_from_listpack(blob, pairs, config)
        value = vt.make_hash(pairs, config, packed=type_byte != enc.TYPE_HASH_ZIPMAP)
        return _whole(value, pairs, what)
    if type_byte in (enc.TYPE_ZSET, enc.TYPE_ZSET_2):
        n = _count(r)
        pairs = []
        for _ in range(n):
            member = r.string()
            score = r.binary_double() if type_byte == enc.TYPE_ZSET_2 else r.old_double()
            if score != score:
                raise RdbFormatError("Zset with NAN score detected")
            pairs.append((member, score))
        return _whole(vt.make_zset(pairs, config), pairs, "Duplicate zset fields detected")
    if type_byte in (enc.TYPE_ZSET_LISTPACK, enc.TYPE_ZSET_ZIPLIST):
        listpack = type_byte == enc.TYPE_ZSET_LISTPACK
        what = "Zset listpack integrity check failed." if listpack else \
            "Zset ziplist integrity check failed."
        blob = r.string()
        if listpack:
            integrity.checked()
            n = enc.listpack_adoptable_pairs(blob, True, config.zset_max_listpack_entries)
            if n > 0:  # Redis's own bytes, staying a listpack: kept without decoding
                return vt.adopt_zset_listpack(blob, n)
        flat = _decoded(enc.listpack_decode if listpack else enc.ziplist_decode, blob, what)
        pairs = _pairs(flat, what)
        scored = _sorted_scores(pairs)
        if listpack and enc.listpack_encode(flat) == blob and len(set(flat[::2])) == len(pairs) \
                and all(score != 0.0 or text == b"0" for (_, score), (_, text)
                        in zip(scored, pairs, strict=True)):
            # Redis's own bytes (canonical entries, exact count): kept as the buffer
            return vt.make_zset_from_listpack(blob, scored, config)
        return _whole(vt.make_zset(scored, config, packed=True), pairs, what)
    if type_byte in (enc.TYPE_STREAM_LISTPACKS, enc.TYPE_STREAM_LISTPACKS_2):
        return vt.load_stream(r, type_byte, config, integrity)
    raise RdbFormatError(f"Unknown RDB encoding type {type_byte}")


_PACKED_HASHES = {
    enc.TYPE_HASH_LISTPACK: (enc.listpack_decode, "Hash listpack integrity check failed."),
    enc.TYPE_HASH_ZIPLIST: (enc.ziplist_decode, "Hash ziplist integrity check failed."),
    enc.TYPE_HASH_ZIPMAP: (enc.zipmap_decode, "Zipmap integrity check failed."),
}


def _count(r: RdbReader) -> int:
    """An element count that opens a plain list/set/zset/hash: 0 is an empty key."""
    n = r.length()
    if n == 0:
        raise EmptyKey("empty key")
    return n


def _nonempty(items: list) -> list:
    if not items:
        raise EmptyKey("empty key")
    return items


def _decoded(decode: Any, blob: bytes, what: str) -> list[bytes]:
    """``decode(blob)``, every decoding failure reported as Redis's integrity message."""
    try:
        return decode(blob)
    except RdbFormatError:
        raise RdbFormatError(what) from None


def _pairs(flat: list[bytes], what: str) -> list[tuple[bytes, bytes]]:
    """Field/value (or member/score) pairs of a packed blob: an even number of them."""
    if len(flat) % 2:
        raise RdbFormatError(what)
    return _nonempty(list(zip(flat[::2], flat[1::2], strict=True)))


def _whole(value: Any, elements: list, what: str) -> Any:
    """``value`` built from ``elements``; it lost some if two were duplicates."""
    if len(value) != len(elements):
        raise RdbFormatError(what)
    return value


def _sorted_scores(pairs: list[tuple[bytes, bytes]]) -> list[tuple[bytes, float]]:
    """Scores read as Redis reads them (strtod); a packed zset must already be in
    (score, member) order, and a NaN score could never be ordered."""
    out = [(member, strtod(text)) for member, text in pairs]
    prev = None
    for member, score in out:
        if score != score or (prev is not None and (score, member) <= prev):
            raise RdbFormatError("zset listpack entries out of order")
        prev = (score, member)
    return out


def _load_quicklist(r: RdbReader, type_byte: int, integrity: Integrity) -> list[bytes]:
    """The items of a quicklist (v2: listpack or plain nodes; v1: ziplist nodes)."""
    items: list[bytes] = []
    v2 = type_byte == enc.TYPE_LIST_QUICKLIST_2
    for _ in range(_count(r)):
        container = r.length() if v2 else enc.QUICKLIST_NODE_PACKED
        if container not in (enc.QUICKLIST_NODE_PACKED, enc.QUICKLIST_NODE_PLAIN):
            raise RdbFormatError("Quicklist integrity check failed.")
        blob = r.string()
        if not blob:
            raise RdbFormatError("empty quicklist node")
        if container == enc.QUICKLIST_NODE_PLAIN:
            items.append(blob)
        elif v2:
            integrity.checked()
            items.extend(_decoded(enc.listpack_decode, blob, "Listpack integrity check failed."))
        else:
            items.extend(_decoded(enc.ziplist_decode, blob, "Ziplist integrity check failed."))
    return _nonempty(items)  # empty nodes are skipped, but not a list left with none


# ---------------------------------------------------------------------------------------
# DUMP / RESTORE payloads
# ---------------------------------------------------------------------------------------
_U16 = struct.Struct("<H")


def dump_payload(value: Any, config: Any) -> bytes:
    w = RdbWriter(compress=getattr(config, "rdbcompression", True))
    save_object(w, value, config)
    w.raw(_U16.pack(enc.RDB_VERSION))
    w.raw(crc64(0, bytes(w.buf)).to_bytes(8, "little"))
    return bytes(w.buf)


def verify_payload(payload: bytes) -> bool:
    """Redis's ``verifyDumpPayload``: version not newer than ours and a matching CRC."""
    if len(payload) < 10:
        return False
    version = _U16.unpack(payload[-10:-8])[0]
    if version > enc.RDB_VERSION:
        return False
    return crc64(0, payload[:-8]) == int.from_bytes(payload[-8:], "little")


def restore_payload(payload: bytes, config: Any, integrity: Integrity | None = None) -> Any:
    """The value in a DUMP payload; raises RdbFormatError when it isn't valid."""
    r = RdbReader(payload[:-10])
    type_byte = r.byte()
    value = load_object(r, type_byte, config, integrity)
    if r.remaining():
        raise RdbFormatError("trailing bytes after the object")
    return value
