"""Whole RDB files: a snapshot of every database to bytes and back.

``serialize(dbs, config, ...)`` produces what Redis 7.0's ``rdbSaveRio`` produces: the
``REDIS0010`` magic, AUX fields, per database SELECTDB + RESIZEDB, each key with its
EXPIRETIME_MS, the functions when there are any (FUNCTION2), EOF and the CRC-64 (zero when
``rdbchecksum no``). ``parse_steps(data, ...)`` reads files from Redis 7.0 and older
(RDB 1–10), checking the checksum when present and every value as ``integrity`` says,
hands each key to a callback, and yields between batches of keys so that a loader can keep
the event loop answering ``-LOADING``. A file it refuses raises an error that
``load_failure_report`` turns into the lines Redis logs before it exits.
SAVE serialises in the foreground, BGSAVE in a forked child.
"""
from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykv.storage.rdb import encoding as enc
from pykv.storage.rdb._codec import crc64
from pykv.storage.rdb._load import parse_body
from pykv.storage.rdb.encoding import RdbFormatError, RdbReader, RdbWriter
from pykv.storage.rdb.integrity import Integrity, RdbLoadAborted, RdbShortRead
from pykv.storage.rdb.objects import save_object

log = logging.getLogger("pykv")

MAGIC = b"REDIS"


class RdbSignatureError(RdbFormatError):
    """Not an RDB file, or a version newer than 10: Redis refuses it before reading on."""


class RdbChecksumError(RdbFormatError):
    """The CRC-64 at the end does not match the file."""

    def __init__(self, expected: int, got: int) -> None:
        super().__init__("RDB CRC error")
        self.expected = expected
        self.got = got


class RdbCorruptAt(RdbFormatError):
    """A failure while reading, with how far loading had got (Redis's loaded-bytes
    counter, which moves in steps of ``loading-process-events-interval-bytes``)."""

    def __init__(self, cause: RdbFormatError, offset: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.offset = offset


_PROGRESS_STEP = 2 * 1024 * 1024
# the rdb.c line Redis 7.0.15 names in its "Internal error" log line, per reason (measured
# on damaged files); pykv prints 0 for reasons Redis does not have
_REDIS_LINES = {
    "RDB CRC error": 3225, "Unexpected EOF reading RDB file": 3249,
    "Duplicate set members detected": 1829, "Zset with NAN score detected": 1882,
    "Duplicate zset fields detected": 1894, "Quicklist integrity check failed.": 2048,
    "Listpack integrity check failed.": 2071, "Ziplist integrity check failed.": 2081,
    "Zipmap integrity check failed.": 2130, "List ziplist integrity check failed.": 2189,
    "Intset integrity check failed.": 2214, "Zset ziplist integrity check failed.": 2229,
    "Zset listpack integrity check failed.": 2255, "Hash ziplist integrity check failed.": 2275,
    "Hash listpack integrity check failed.": 2301,
    "Stream node key entry is not the size of a stream ID": 2343,
    "Stream listpack integrity check failed.": 2362, "Unknown RDB encoding type": 2681,
}


def load_failure_report(exc: RdbFormatError) -> list[str]:
    """The warning lines Redis 7.0 logs when loading an RDB file fails this way (it then
    exits with status 1)."""
    offset = exc.offset if isinstance(exc, RdbCorruptAt) else 0
    cause = exc.cause if isinstance(exc, RdbCorruptAt) else exc
    if isinstance(cause, RdbSignatureError):
        return [str(cause), "Fatal error loading the DB: Invalid argument. Exiting."]
    if isinstance(cause, RdbLoadAborted):
        return [str(cause)]
    lines = []
    if isinstance(cause, RdbChecksumError):
        lines.append(f"Wrong RDB checksum expected: ({cause.expected:x}) but got "
                     f"({cause.got:x}). Aborting now.")
        reason = "RDB CRC error"
    elif isinstance(cause, RdbShortRead):
        lines.append("Short read or OOM loading DB. Unrecoverable error, aborting now.")
        reason = "Unexpected EOF reading RDB file"
    else:
        reason = str(cause)
    lines.append(internal_error(reason, offset))
    return lines


def internal_error(reason: str, offset: int = 0) -> str:
    """Redis's ``rdbReportError`` line for ``reason`` (RESTORE logs it too, at verbose)."""
    line = _REDIS_LINES.get(reason.rstrip("0123456789 ") if reason.startswith("Unknown RDB")
                            else reason, 0)
    return f"Internal error in RDB reading offset {offset}, function at rdb.c:{line} -> {reason}"


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
    checksum = crc64(0, w.buf) if getattr(config, "rdbchecksum", True) else 0
    w.raw(checksum.to_bytes(8, "little"))
    return bytes(w.buf)


@dataclass
class RdbContents:
    version: int
    aux: dict[bytes, bytes] = field(default_factory=dict)
    functions: list[bytes] = field(default_factory=list)
    checksum_ok: bool | None = None
    end_offset: int = 0  # where the RDB ends (an AOF base may continue with commands)
    empty_keys: int = 0  # keys without elements, skipped as Redis skips them
    sanitized: int = 0  # packed blobs checked deeply (sanitize-dump-payload yes)


def parse_steps(data: bytes, config: Any,
                on_key: Callable[[int, bytes, Any, int, int], None],
                verify_checksum: bool = True):
    """Parse a whole RDB file, calling ``on_key(db, key, value, expire_ms, idle)`` for every
    key (``expire_ms`` and ``idle`` are -1 when absent). Yields the bytes consumed so far
    every ``LOAD_STEP_KEYS`` keys; returns the file's ``RdbContents``. A bad signature or
    version raises RdbSignatureError; any other failure RdbCorruptAt (wrapping a short
    read, a checksum mismatch or the corruption found)."""
    if len(data) < 9:
        raise RdbCorruptAt(RdbShortRead("unexpected end of RDB data"), 0)
    if data[:5] != MAGIC:
        raise RdbSignatureError("Wrong signature trying to load DB from file")
    version = _atoi(data[5:9])
    if version < 1 or version > enc.RDB_VERSION:
        raise RdbSignatureError(f"Can't handle RDB format version {version}")
    contents = RdbContents(version)
    integrity = Integrity.for_loading(config)
    r = RdbReader(memoryview(data), 9)
    try:
        yield from parse_body(r, contents, config, integrity, on_key, _log_aux)
        if version >= 5:
            stored = int.from_bytes(r.take(8), "little")
            if verify_checksum:
                if stored == 0:
                    log.warning("RDB file was saved with checksum disabled: no check "
                                "performed.")
                else:
                    computed = crc64(0, memoryview(data)[:r.pos - 8])
                    contents.checksum_ok = computed == stored
                    if not contents.checksum_ok:
                        raise RdbChecksumError(computed, stored)
    except (RdbCorruptAt, RdbLoadAborted):
        raise
    except RdbFormatError as exc:
        raise RdbCorruptAt(exc, r.pos // _PROGRESS_STEP * _PROGRESS_STEP) from None
    contents.end_offset = r.pos
    contents.sanitized = integrity.checks
    return contents


_ATOI = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _atoi(text: bytes) -> int:
    """C's atoi: optional white space and sign, then the leading digits; 0 when none."""
    m = _ATOI.match(text)
    return int(m.group(1)) if m else 0


def _log_aux(key: bytes, value: bytes) -> None:
    """The AUX fields Redis reports while loading."""
    text = value.decode("utf-8", "replace")
    name = key.lower()
    if key.startswith(b"%"):
        log.info("RDB '%s': %s", key.decode("utf-8", "replace"), text)
    elif name == b"redis-ver":
        log.info("Loading RDB produced by version %s", text)
    elif name == b"ctime":
        log.info("RDB age %d seconds", max(0, int(time.time()) - _atoi(value)))
    elif name == b"used-mem":
        log.info("RDB memory usage when created %.2f Mb", _atoi(value) / (1024 * 1024))
    elif name == b"aof-preamble" and _atoi(value):
        log.info("RDB has an AOF tail")
    elif name == b"aof-base" and _atoi(value):
        log.info("RDB is base AOF")


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
