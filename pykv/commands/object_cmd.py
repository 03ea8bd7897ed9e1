"""OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP: a key's internal details.

Encodings come from the value types (``pykv.storage.values``), so they follow Redis's
rules for the same contents. REFCOUNT reports what Redis's shared-object scheme gives:
integers 0..9999 are shared (refcount INT_MAX) unless maxmemory is on with an LRU/LFU
policy; everything else has refcount 1. IDLETIME and FREQ are mutually exclusive as in
Redis, depending on whether the maxmemory policy is an LFU one.

Under an LFU policy the keyspace keeps Redis's per-key logarithmic counter (see
``Database.lfu_touch``); FREQ reports it decayed by the idle minutes (``lfu-decay-time``).
"""
from __future__ import annotations

from typing import Any

from pykv.commands.registry import command
from pykv.commands.strings import lookup_read
from pykv.protocol import ErrorReply, SimpleString
from pykv.storage.keyspace import LFU_INIT_VAL, lfu_counter
from pykv.storage.values import is_string, string_encoding

OBJ_SHARED_INTEGERS = 10000
OBJ_SHARED_REFCOUNT = (1 << 31) - 1

_LFU_SELECTED = ErrorReply(
    b"ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
    b"switching between policies at runtime LRU and LFU data will take some time to adjust.")
_LFU_NOT_SELECTED = ErrorReply(
    b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    b"that when switching between policies at runtime LRU and LFU data will take some time "
    b"to adjust.")

_HELP = [SimpleString(line) for line in (
    b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"ENCODING <key>",
    b"    Return the kind of internal representation used in order to store the value",
    b"    associated with a <key>.",
    b"FREQ <key>",
    b"    Return the access frequency index of the <key>. The returned integer is",
    b"    proportional to the logarithm of the recent access frequency of the key.",
    b"IDLETIME <key>",
    b"    Return the idle time of the <key>, that is the approximated number of",
    b"    seconds elapsed since the last access to the key.",
    b"REFCOUNT <key>",
    b"    Return the number of references of the value associated with the specified",
    b"    <key>.",
    b"HELP",
    b"    Prints this help.",
)]


def _policy_is_lfu(config: Any) -> bool:
    return "lfu" in str(config.maxmemory_policy)


def _no_shared_integers(config: Any) -> bool:
    policy = str(config.maxmemory_policy)
    return bool(config.maxmemory) and ("lru" in policy or "lfu" in policy)


def encoding_of(value: Any, config: Any) -> bytes:
    """What OBJECT ENCODING says for ``value``."""
    if is_string(value):
        return string_encoding(value)
    return value.encoding(config)


def refcount_of(value: Any, config: Any) -> int:
    """What OBJECT REFCOUNT says for ``value`` (shared small integers, else 1)."""
    if type(value) is bytes and len(value) <= 4 and string_encoding(value) == b"int":
        if 0 <= int(value) < OBJ_SHARED_INTEGERS and not _no_shared_integers(config):
            return OBJ_SHARED_REFCOUNT
    return 1


@command("object|encoding")
def object_encoding(c, argv):
    value = lookup_read(c, argv[2], False, False)
    return None if value is None else encoding_of(value, c.server.config)


@command("object|refcount")
def object_refcount(c, argv):
    value = lookup_read(c, argv[2], False, False)
    return None if value is None else refcount_of(value, c.server.config)


@command("object|idletime")
def object_idletime(c, argv):
    key = argv[2]
    value = lookup_read(c, key, False, False)
    if value is None:
        return None
    if _policy_is_lfu(c.server.config):
        raise _LFU_SELECTED
    since = c.db.access.get(key, c.server.clock.sec)
    return max(c.server.clock.sec - since, 0)


@command("object|freq")
def object_freq(c, argv):
    key = argv[2]
    value = lookup_read(c, key, False, False)
    if value is None:
        return None
    config = c.server.config
    if not _policy_is_lfu(config):
        raise _LFU_NOT_SELECTED
    db = c.db
    packed = db.access.get(key)
    if packed is None:
        return LFU_INIT_VAL
    return lfu_counter(packed, (c.server.clock.sec // 60) & 0xFFFF, db.lfu_decay_time)


@command("object|help")
def object_help(c, argv):
    return _HELP
