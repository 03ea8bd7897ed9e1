"""What a loaded value must satisfy before pykv stores it, and Redis's sanitize rules.

Redis 7.0 checks a DUMP payload or RDB value in two depths (``sanitize-dump-payload``):
shallow checks always (headers, sizes, duplicates in plain encodings) and, when deep
checks are on, every entry of every packed blob. ``yes`` means deep everywhere; ``clients``
means deep for RESTORE from ordinary clients but not while loading; ``no`` means shallow.
A shallow Redis may store a damaged blob and trip over it later; pykv cannot, because it
reads every entry of every packed blob at load time (a listpack hash or zset is kept as its
buffer only after all its entries passed in ``listpack_adoptable_pairs``), so every check
Redis does deeply runs in pykv always, and what would leave a value that
no longer behaves as its contents say (duplicates, a wrong count, unsorted members, a NaN
score, stream IDs out of order or a PEL entry without its consumer) is refused in every
mode. The mode still decides what Redis's INFO counter ``dump_payload_sanitizations``
counts (one per packed blob checked deeply).

Known differences from Redis 7.0, all in the direction of refusing damage Redis would keep:
a RESTORE object must end exactly where the payload's version and CRC start (Redis ignores
bytes after the object, and lets an object run on into the footer); a packed zset must be
in (score, member) order; a stream's length, entries-added and last ID must agree with its
entries; with ``sanitize-dump-payload no`` pykv still refuses what only Redis's deep checks
catch. Empty keys are refused by RESTORE and skipped (with Redis's warning) in files.
"""
from __future__ import annotations

import re
from typing import Any

from pykv.storage.rdb._rio import RdbFormatError, RdbShortRead

__all__ = ["EmptyKey", "Integrity", "RdbFormatError", "RdbLoadAborted", "RdbShortRead",
           "strtod"]


class EmptyKey(RdbFormatError):
    """A value with no elements: skipped when loading a file, refused by RESTORE."""


class RdbLoadAborted(RdbFormatError):
    """The loader refused a key (a database past ``databases``, a duplicate key): Redis
    logs just the reason and exits."""


class Integrity:
    """One load's sanitization mode (``deep``) and its count of deep blob checks."""

    __slots__ = ("deep", "checks")

    def __init__(self, deep: bool = False) -> None:
        self.deep = deep
        self.checks = 0

    def checked(self) -> None:
        """A packed blob (listpack, intset, stream node) was validated."""
        if self.deep:
            self.checks += 1

    @classmethod
    def for_loading(cls, config: Any) -> Integrity:
        """RDB files and AOF preambles: deep only with ``sanitize-dump-payload yes``."""
        return cls(_mode(config) == "yes")

    @classmethod
    def for_restore(cls, config: Any, loading: bool = False) -> Integrity:
        """RESTORE: deep with ``yes``, and with ``clients`` unless it is replayed while
        loading (an AOF); pykv has no replication link or ACL users that would skip it."""
        mode = _mode(config)
        return cls(mode == "yes" or (mode == "clients" and not loading))


def _mode(config: Any) -> str:
    return str(getattr(config, "sanitize_dump_payload", "no")).lower()


# C's strtod on a NUL-terminated copy of at most 127 bytes: leading white space, then the
# longest prefix that is a decimal or hex float, inf/infinity or nan; nothing parses as 0.
_STRTOD = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    rb"(?:[pP][+-]?[0-9]+)?|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?))")


def strtod(text: bytes) -> float:
    """The score Redis reads from a listpack/ziplist zset entry (``zzlStrtod``)."""
    text = text[:127].split(b"\0", 1)[0]
    m = _STRTOD.match(text)
    if m is None:
        return 0.0
    num = m.group(1)
    body = num.lstrip(b"+-")
    sign = -1.0 if num.startswith(b"-") else 1.0
    if body[:2] in (b"0x", b"0X"):
        digits = body[2:]
        if b"p" not in digits.lower():
            digits += b"p0"
        try:
            return sign * float.fromhex("0x" + digits.decode())
        except OverflowError:
            return sign * float("inf")
    low = body.lower()
    if low.startswith(b"nan"):
        return float("nan")
    return float(num)
