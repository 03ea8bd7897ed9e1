"""A key's contents as comparable Python values, read through ordinary commands.

Hashes become dicts (field -> value), sets frozensets, sorted sets (member, score) lists in
Redis's order, lists and streams lists, so two servers' keyspaces compare by value whatever
order their hash tables iterate in.
"""
from __future__ import annotations

from support.resp import RawClient, parse


def key_value(c: RawClient, key: bytes | str) -> tuple[bytes, object]:
    """(type, contents) of ``key`` on the server behind ``c``."""
    kind = parse(c.call("TYPE", key))
    if kind == b"string":
        return kind, parse(c.call("GET", key))
    if kind == b"list":
        return kind, parse(c.call("LRANGE", key, "0", "-1"))
    if kind == b"hash":
        flat = parse(c.call("HGETALL", key))
        value = dict(zip(flat[::2], flat[1::2], strict=True))
        assert len(value) * 2 == len(flat), f"HGETALL {key!r} repeats a field"
        return kind, value
    if kind == b"set":
        members = parse(c.call("SMEMBERS", key))
        assert len(set(members)) == len(members), f"SMEMBERS {key!r} repeats a member"
        return kind, frozenset(members)
    if kind == b"zset":
        flat = parse(c.call("ZRANGE", key, "0", "-1", "WITHSCORES"))
        return kind, list(zip(flat[::2], flat[1::2], strict=True))
    if kind == b"stream":
        return kind, parse(c.call("XRANGE", key, "-", "+"))
    return kind, None


def keyspace(c: RawClient, dbs: tuple[int, ...] = (0,)) -> dict:
    """Every key of ``dbs``: (db, key) -> (type, contents, has a TTL, OBJECT ENCODING)."""
    out = {}
    for db in dbs:
        c.call("SELECT", str(db))
        for key in parse(c.call("KEYS", "*")):
            kind, value = key_value(c, key)
            has_ttl = parse(c.call("PTTL", key)) >= 0
            out[(db, key)] = (kind, value, has_ttl, parse(c.call("OBJECT", "ENCODING", key)))
    c.call("SELECT", "0")
    return out
