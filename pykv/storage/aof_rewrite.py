"""An AOF base written as commands (``aof-use-rdb-preamble no``): the dataset rebuilt.

Each key becomes the shortest commands that recreate it (SET, RPUSH, SADD, HSET, ZADD in
batches of 64 elements, like Redis's AOF_REWRITE_ITEMS_PER_CMD), then PEXPIREAT for keys
with a TTL; SELECT precedes each database.
"""
from __future__ import annotations

from typing import Any

from pykv.protocol import format_double
from pykv.storage import value_types as vt
from pykv.storage.aof import encode_command
from pykv.storage.values import is_string

ITEMS_PER_COMMAND = 64


def _batched(head: list[bytes], items: list[bytes], width: int) -> list[list[bytes]]:
    per = ITEMS_PER_COMMAND * width
    return [head + items[i:i + per] for i in range(0, len(items), per)]


def key_commands(key: bytes, value: Any) -> list[list[bytes]]:
    if is_string(value):
        return [[b"SET", key, bytes(value)]]
    kind = value.type_name
    if kind == b"list":
        return _batched([b"RPUSH", key], vt.list_items(value), 1)
    if kind == b"set":
        return _batched([b"SADD", key], vt.set_members(value), 1)
    if kind == b"hash":
        flat = [x for pair in vt.hash_items(value) for x in pair]
        return _batched([b"HSET", key], flat, 2)
    if kind == b"zset":
        flat = [x for member, score in vt.zset_items(value)
                for x in (format_double(score), member)]
        return _batched([b"ZADD", key], flat, 2)
    if kind == b"stream":
        from pykv.storage.stream_type import rewrite_commands

        return rewrite_commands(key, value)
    raise TypeError(f"cannot rewrite a value of type {kind!r} as commands")


def dataset_as_commands(server: Any) -> bytes:
    out = bytearray()
    for db in server.dbs:
        if not db.data:
            continue
        out += encode_command([b"SELECT", b"%d" % db.id])
        for key, value in db.data.items():
            for cmd in key_commands(key, value):
                out += encode_command(cmd)
            when = db.expires.get(key) if db.expires else None
            if when is not None:
                out += encode_command([b"PEXPIREAT", key, b"%d" % when])
    return bytes(out)
