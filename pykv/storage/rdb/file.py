"""Whole RDB files: a snapshot of every database to bytes and back.

``serialize(dbs, config, ...)`` produces what Redis 7.0's ``rdbSaveRio`` produces: the
``REDIS0010`` magic, AUX fields, per database SELECTDB + RESIZEDB, each key with its
EXPIRETIME_MS, the functions when there are any (FUNCTION2), EOF and the CRC-64 (zero when
``rdbchecksum no``). ``parse_steps(data, ...)`` reads files from Redis 7.0 and older
(RDB 1–10), checking the checksum when present, hands each key to a callback, and yields
between batches of keys so that a loader can keep the event loop answering ``-LOADING``.
SAVE serialises in the foreground, BGSAVE in a forked child.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykv.storage.rdb import encoding as enc
from pykv.storage.rdb._codec import crc64
from pykv.storage.rdb.encoding import RdbFormatError, RdbReader, RdbWriter
from pykv.storage.rdb.objects import load_object, save_object

MAGIC = b"REDIS"


def serialize(dbs: list[Any], config: Any, aux: dict[bytes, bytes] | None = None,
              functions: list[bytes] | None = None) -> bytes:
    w = RdbWriter(compress=getattr(config, "rdbcompression", True))
    w.raw(MAGIC + b"%04d" % enc.RDB_VERSION)
    for key, value in (aux or {}).items():
        w.byte(enc.OP_AUX)
        w.string(key)
        w.string(value)
    for code in functions or ():
        w.byte(enc.OP_FUNCTION2)
        w.string(code)
    for db in dbs:
        if not db.data:
            continue
        w.byte(enc.OP_SELECTDB)
        w.length(db.id)
        w.byte(enc.OP_RESIZEDB)
        w.length(len(db.data))
        w.length(len(db.expires))
        expires = db.expires
        for key, value in db.data.items():
            when = expires.get(key) if expires else None
            if when is not None:
                w.byte(enc.OP_EXPIRETIME_MS)
                w.millis(when)
            save_object(w, value, config, key)
    w.byte(enc.OP_EOF)
    checksum = crc64(0, bytes(w.buf)) if getattr(config, "rdbchecksum", True) else 0
    w.raw(checksum.to_bytes(8, "little"))
    return bytes(w.buf)


@dataclass
class RdbContents:
    version: int
    aux: dict[bytes, bytes] = field(default_factory=dict)
    functions: list[bytes] = field(default_factory=list)
    checksum_ok: bool | None = None
    end_offset: int = 0  # where the RDB ends (an AOF base may continue with commands)


LOAD_STEP_KEYS = 1024


def parse_steps(data: bytes, config: Any,
                on_key: Callable[[int, bytes, Any, int, int], None],
                verify_checksum: bool = True):
    """Parse a whole RDB file, calling ``on_key(db, key, value, expire_ms, idle)`` for every
    key (``expire_ms`` and ``idle`` are -1 when absent). Yields the bytes consumed so far
    every ``LOAD_STEP_KEYS`` keys; returns the file's ``RdbContents``."""
    if len(data) < 9 or data[:5] != MAGIC:
        raise RdbFormatError("Wrong signature trying to load DB from file")
    try:
        version = int(data[5:9])
    except ValueError:
        raise RdbFormatError("Wrong signature trying to load DB from file") from None
    if version < 1 or version > enc.RDB_VERSION:
        raise RdbFormatError(f"Can't handle RDB format version {version}")
    contents = RdbContents(version)
    r = RdbReader(memoryview(data), 9)
    db = 0
    expire = -1
    idle = -1
    keys = 0
    while True:
        op = r.byte()
        if op == enc.OP_EOF:
            break
        if op == enc.OP_SELECTDB:
            db = r.length()
        elif op == enc.OP_RESIZEDB:
            r.length()
            r.length()
        elif op == enc.OP_EXPIRETIME_MS:
            expire = r.millis()
        elif op == enc.OP_EXPIRETIME:
            expire = r.seconds() * 1000
        elif op == enc.OP_AUX:
            key = r.string()
            contents.aux[key] = r.string()
        elif op == enc.OP_IDLE:
            idle = r.length()
        elif op == enc.OP_FREQ:
            r.byte()  # an LFU counter: pykv keeps none
        elif op == enc.OP_FUNCTION2:
            contents.functions.append(r.string())
        elif op == enc.OP_FUNCTION_PRE_GA:
            raise RdbFormatError("Pre-release function format not supported")
        elif op == enc.OP_MODULE_AUX:
            raise RdbFormatError("The RDB file contains AUX module data pykv can't load")
        else:
            key = r.string()
            value = load_object(r, op, config)
            on_key(db, key, value, expire, idle)
            expire = -1
            idle = -1
            keys += 1
            if keys % LOAD_STEP_KEYS == 0:
                yield r.pos
    if version >= 5 and r.remaining() >= 8:
        stored = int.from_bytes(r.take(8), "little")
        if stored and verify_checksum:
            computed = crc64(0, bytes(data[:r.pos - 8]))
            contents.checksum_ok = computed == stored
            if not contents.checksum_ok:
                raise RdbFormatError("Wrong RDB checksum")
    contents.end_offset = r.pos
    return contents


def write_file(path: str, data: bytes) -> None:
    """Create or truncate ``path``, write all of ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """Make a rename or a new file in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str, data: bytes) -> None:
    """Write to ``temp-<pid>.rdb`` beside ``path``, fsync, rename over ``path``, fsync dir:
    a crash or a full disk leaves the old file in place, never a partial one."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f"temp-{os.getpid()}.rdb")
    try:
        write_file(tmp, data)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.replace(tmp, path)
    fsync_dir(directory)
