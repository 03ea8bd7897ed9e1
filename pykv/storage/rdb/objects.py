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
        w.string(enc.intset_encode([int(m) for m in vt.set_members(value)]))
    elif t == enc.TYPE_SET:
        members = vt.set_members(value)
        w.length(len(members))
        for m in members:
            w.string(m)
    elif t == enc.TYPE_HASH_LISTPACK:
        w.string(enc.listpack_encode([x for pair in vt.hash_items(value) for x in pair]))
    elif t == enc.TYPE_HASH:
        pairs = vt.hash_items(value)
        w.length(len(pairs))
        for field, val in pairs:
            w.string(field)
            w.string(val)
    elif t == enc.TYPE_ZSET_LISTPACK:
        flat: list[bytes] = []
        for member, score in vt.zset_items(value):  # ascending (member, score)
            flat.append(member)
            flat.append(_score_bytes(score))
        w.string(enc.listpack_encode(flat))
    elif t == enc.TYPE_ZSET_2:
        pairs = vt.zset_items(value)
        w.length(len(pairs))
        for member, score in reversed(pairs):  # Redis saves from the tail
            w.string(member)
            w.binary_double(score)
    else:
        vt.save_stream(w, value)


def _score_bytes(score: float) -> bytes:
    """Scores in a zset listpack are stored the way Redis formats them (%.17g)."""
    if abs(score) < 1 << 53 and score == int(score):
        return b"%d" % int(score)
    from pykv.protocol import format_double

    return format_double(score)


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
def load_object(r: RdbReader, type_byte: int, config: Any) -> Any:
    if type_byte == enc.TYPE_STRING:
        return r.string()
    vt = _types()
    if type_byte == enc.TYPE_LIST:
        return vt.make_list([r.string() for _ in range(r.length())], config)
    if type_byte in (enc.TYPE_LIST_QUICKLIST, enc.TYPE_LIST_QUICKLIST_2):
        items: list[bytes] = []
        for _ in range(r.length()):
            container = enc.QUICKLIST_NODE_PACKED
            if type_byte == enc.TYPE_LIST_QUICKLIST_2:
                container = r.length()
            blob = r.string()
            if container == enc.QUICKLIST_NODE_PLAIN:
                items.append(blob)
            elif type_byte == enc.TYPE_LIST_QUICKLIST:
                items.extend(enc.ziplist_decode(blob))
            else:
                items.extend(enc.listpack_decode(blob))
        return vt.make_list(items, config)
    if type_byte == enc.TYPE_LIST_ZIPLIST:
        return vt.make_list(enc.ziplist_decode(r.string()), config)
    if type_byte == enc.TYPE_SET:
        return vt.make_set([r.string() for _ in range(r.length())], config)
    if type_byte == enc.TYPE_SET_INTSET:
        return vt.make_set(enc.intset_decode(r.string()), config)
    if type_byte == enc.TYPE_HASH:
        n = r.length()
        return vt.make_hash([(r.string(), r.string()) for _ in range(n)], config)
    if type_byte in (enc.TYPE_HASH_LISTPACK, enc.TYPE_HASH_ZIPLIST, enc.TYPE_HASH_ZIPMAP):
        blob = r.string()
        flat = {enc.TYPE_HASH_LISTPACK: enc.listpack_decode,
                enc.TYPE_HASH_ZIPLIST: enc.ziplist_decode,
                enc.TYPE_HASH_ZIPMAP: enc.zipmap_decode}[type_byte](blob)
        return vt.make_hash(list(zip(flat[::2], flat[1::2], strict=True)), config)
    if type_byte in (enc.TYPE_ZSET, enc.TYPE_ZSET_2):
        n = r.length()
        pairs = []
        for _ in range(n):
            member = r.string()
            score = r.binary_double() if type_byte == enc.TYPE_ZSET_2 else r.old_double()
            pairs.append((member, score))
        return vt.make_zset(pairs, config)
    if type_byte in (enc.TYPE_ZSET_LISTPACK, enc.TYPE_ZSET_ZIPLIST):
        decode = enc.listpack_decode if type_byte == enc.TYPE_ZSET_LISTPACK else \
            enc.ziplist_decode
        flat = decode(r.string())
        return vt.make_zset([(m, float(s)) for m, s in zip(flat[::2], flat[1::2], strict=True)], config)
    if type_byte in (enc.TYPE_STREAM_LISTPACKS, enc.TYPE_STREAM_LISTPACKS_2):
        return vt.load_stream(r, type_byte, config)
    raise RdbFormatError(f"unknown RDB value type {type_byte}")


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


def restore_payload(payload: bytes, config: Any) -> Any:
    """The value in a DUMP payload; raises RdbFormatError when it isn't valid."""
    r = RdbReader(payload[:-10])
    type_byte = r.byte()
    value = load_object(r, type_byte, config)
    if r.remaining():
        raise RdbFormatError("trailing bytes after the object")
    return value
