"""Generic keyspace commands: DEL, EXISTS, TYPE, KEYS, SCAN, RENAME, COPY, MOVE, the
EXPIRE/TTL family, PERSIST, TOUCH, RANDOMKEY and WAIT.

They work on any value type through ``pykv.storage.values`` (``type_name``,
``copy_value``). Each follows Redis 7.0's ``db.c``/``expire.c`` order of checks (which error
wins) and its bookkeeping: ``server.dirty``, keyspace events, and read-lookup statistics
(``lookup_read``) exactly where Redis counts them.
"""
from __future__ import annotations

import random
from typing import Any

from pykv import errors
from pykv.commands.args import LLONG_MAX, LLONG_MIN, to_int
from pykv.commands.registry import command
from pykv.commands.strings import lookup_read
from pykv.protocol import OK, ErrorReply, SimpleString
from pykv.server.notify import notify
from pykv.storage.keyspace import now_ms
from pykv.storage.scan import parse_cursor
from pykv.storage.values import copy_value, type_name
from pykv.util.glob import matcher

_INVALID_CURSOR = ErrorReply(b"ERR invalid cursor")
_GT_AND_LT = ErrorReply(b"ERR GT and LT options at the same time are not compatible")

_TYPE_REPLIES: dict[bytes, SimpleString] = {}
INT_MAX = (1 << 31) - 1
INT_MIN = -(1 << 31)


def _event(c: Any, klass: str, event: bytes, key: bytes, dbid: int | None = None) -> None:
    server = c.server
    if server.keyspace_notifier is not None:
        notify(server, klass, event, key, c.db.id if dbid is None else dbid)


def _c_string(arg: bytes) -> bytes:
    """What C code sees of an argument: the bytes before the first NUL."""
    return arg.split(b"\0", 1)[0] if b"\0" in arg else arg


# -- existence and deletion ---------------------------------------------------------------
@command("del", "unlink")
def del_(c, argv):
    db = c.db
    deleted = 0
    for key in argv[1:]:
        if db.delete(key):
            deleted += 1
            c.server.dirty += 1
            _event(c, "g", b"del", key)
    return deleted


@command("exists")
def exists(c, argv):
    return sum(1 for key in argv[1:] if lookup_read(c, key, False) is not None)


@command("touch")
def touch(c, argv):
    db = c.db
    touched = 0
    for key in argv[1:]:
        if lookup_read(c, key, False) is not None:
            db.touch(key)  # even under CLIENT NO-TOUCH
            touched += 1
    return touched


@command("type")
def type_(c, argv):
    value = lookup_read(c, argv[1], False)
    name = b"none" if value is None else type_name(value)
    reply = _TYPE_REPLIES.get(name)
    if reply is None:
        reply = _TYPE_REPLIES[name] = SimpleString(name)
    return reply


# -- KEYS, SCAN, RANDOMKEY ----------------------------------------------------------------
@command("keys")
def keys(c, argv):
    pattern = argv[1]
    db = c.db
    expires = db.expires
    now = c.server.clock.ms
    if pattern == b"*":
        found = list(db.data)
    else:
        found = list(filter(matcher(pattern), db.data))
    if expires:
        found = [k for k in found if expires.get(k, now + 1) > now]
    return found


@command("scan")
def scan_(c, argv):
    cursor = parse_cursor(argv[1])
    if cursor is None:
        raise _INVALID_CURSOR
    count, pattern, type_filter = parse_scan_options(argv, 2, allow_type=True)
    # the key table walks its own buckets with Redis's reverse-binary cursor
    db = c.db
    next_cursor, batch = db.data.scan(cursor, count)
    if pattern is not None:
        batch = list(filter(matcher(pattern), batch))
    if type_filter is not None:
        wanted = type_filter.lower()
        kept = []
        for key in batch:
            value = lookup_read(c, key, False)
            name = b"none" if value is None else type_name(value)
            if name == wanted:
                kept.append(key)
        batch = kept
    if db.expires:
        batch = [k for k in batch if not db.expire_if_needed(k)]
    return [b"%d" % next_cursor, batch]


def parse_scan_options(argv: list[bytes], start: int,
                       allow_type: bool = False) -> tuple[int, bytes | None, bytes | None]:
    """SCAN-family options: ``(count, pattern or None, type or None)``, Redis's rules.

    MATCH ``*`` is no filter at all; COUNT must be a positive integer (else syntax error);
    TYPE is only for SCAN itself. Shared with HSCAN/SSCAN/ZSCAN (``allow_type=False``).
    """
    count = 10
    pattern: bytes | None = None
    type_filter: bytes | None = None
    i, n = start, len(argv)
    while i < n:
        opt = _c_string(argv[i]).lower()
        more = n - i >= 2
        if opt == b"count" and more:
            value = to_int(argv[i + 1])
            if value is None:
                raise errors.NOT_INTEGER
            if value < 1:
                raise errors.SYNTAX
            count = value
        elif opt == b"match" and more:
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        elif opt == b"type" and allow_type and more:
            type_filter = _c_string(argv[i + 1])
        else:
            raise errors.SYNTAX
        i += 2
    return count, pattern, type_filter


@command("randomkey")
def randomkey(c, argv):
    db = c.db
    data = db.data
    expires = db.expires
    for _ in range(100):  # the table samples in O(1); an expired pick is deleted, retried
        if not data:
            return None
        key = data.random_key()
        if not (expires and key in expires and db.expire_if_needed(key)):
            return key
    # mostly expired keys that cannot be deleted now (CLIENT PAUSE, a replica): look for a
    # live one among all of them
    candidates = list(data)
    while candidates:
        i = random.randrange(len(candidates))
        key = candidates[i]
        if expires and key in expires and db.expire_if_needed(key):
            candidates[i] = candidates[-1]
            candidates.pop()
            continue
        return key
    return None


# -- RENAME, MOVE, COPY -------------------------------------------------------------------
def _rename(c: Any, argv: list[bytes], nx: bool) -> Any:
    src, dst = argv[1], argv[2]
    db = c.db
    value = db.get(src)
    if value is None:
        raise errors.NO_SUCH_KEY
    if src == dst:
        return 0 if nx else OK
    expire = db.get_expire(src)
    if db.get(dst) is not None:
        if nx:
            return 0
        db.delete(dst)
    db.set(dst, value)  # the write lookup of src above touched it: idle time 0, as Redis
    if expire != -1:
        db.set_expire(dst, expire)
    db.delete(src)
    _event(c, "g", b"rename_from", src)
    _event(c, "g", b"rename_to", dst)
    c.server.dirty += 1
    return 1 if nx else OK


@command("rename")
def rename(c, argv):
    return _rename(c, argv, False)


@command("renamenx")
def renamenx(c, argv):
    return _rename(c, argv, True)


def _db_index(c: Any, arg: bytes) -> Any:
    """A database number argument: an int (else NOT_INTEGER) naming an existing db."""
    index = to_int(arg)
    if index is None:
        raise errors.NOT_INTEGER
    if not INT_MIN <= index <= INT_MAX:
        raise errors.INT_OUT_OF_RANGE
    if not 0 <= index < len(c.server.dbs):
        raise errors.DB_INDEX_OUT_OF_RANGE
    return c.server.dbs[index]


@command("move")
def move(c, argv):
    key = argv[1]
    src = c.db
    dst = _db_index(c, argv[2])
    if dst is src:
        raise errors.SAME_OBJECT
    value = src.get(key)
    if value is None:
        return 0
    expire = src.get_expire(key)
    if dst.get(key) is not None:
        return 0
    dst.set(key, value)
    if expire != -1:
        dst.set_expire(key, expire)
    src.delete(key)
    _event(c, "g", b"move_from", key, src.id)
    _event(c, "g", b"move_to", key, dst.id)
    c.server.dirty += 1
    return 1


@command("copy")
def copy(c, argv):
    src_key, dst_key = argv[1], argv[2]
    src = dst = c.db
    replace = False
    j, n = 3, len(argv)
    while j < n:
        opt = _c_string(argv[j]).lower()
        if opt == b"replace":
            replace = True
        elif opt == b"db" and n - j - 1 >= 1:
            dst = _db_index(c, argv[j + 1])
            j += 1
        else:
            raise errors.SYNTAX
        j += 1
    if src is dst and src_key == dst_key:
        raise errors.SAME_OBJECT
    value = lookup_read(c, src_key)
    if value is None:
        return 0
    expire = src.get_expire(src_key)
    if dst.get(dst_key) is not None:
        if not replace:
            return 0
        dst.delete(dst_key)
    dst.set(dst_key, copy_value(value))
    if expire != -1:
        dst.set_expire(dst_key, expire)
    _event(c, "g", b"copy_to", dst_key, dst.id)
    c.server.dirty += 1
    return 1


# -- expiry ----------------------------------------------------------------------------
_EXPIRE_NX, _EXPIRE_XX, _EXPIRE_GT, _EXPIRE_LT = 1, 2, 4, 8
_EXPIRE_FLAGS = {b"nx": _EXPIRE_NX, b"xx": _EXPIRE_XX, b"gt": _EXPIRE_GT, b"lt": _EXPIRE_LT}


def _expire_generic(c: Any, argv: list[bytes], basetime: int, seconds: bool) -> int:
    """Redis's ``expireGenericCommand`` for EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT."""
    flags = 0
    for arg in argv[3:]:
        text = _c_string(arg)
        flag = _EXPIRE_FLAGS.get(text.lower())
        if flag is None:
            raise ErrorReply(b"ERR Unsupported option " + text)
        flags |= flag
    if flags & _EXPIRE_NX and flags & (_EXPIRE_XX | _EXPIRE_GT | _EXPIRE_LT):
        raise errors.NX_XX_GT_LT
    if flags & _EXPIRE_GT and flags & _EXPIRE_LT:
        raise _GT_AND_LT
    when = to_int(argv[2])
    if when is None:
        raise errors.NOT_INTEGER
    name = argv[0].lower().decode("latin-1")
    if seconds:
        if when > LLONG_MAX // 1000 or when < -(-LLONG_MIN // 1000):
            raise errors.invalid_expire(name)
        when *= 1000
    if when > LLONG_MAX - basetime:
        raise errors.invalid_expire(name)
    when += basetime
    key = argv[1]
    db = c.db
    if db.get(key) is None:
        return 0
    if flags:
        current = db.get_expire(key)
        if flags & _EXPIRE_NX and current != -1:
            return 0
        if flags & _EXPIRE_XX and current == -1:
            return 0
        if flags & _EXPIRE_GT and (current == -1 or when <= current):
            return 0
        if flags & _EXPIRE_LT and current != -1 and when >= current:
            return 0
    c.server.dirty += 1
    if when <= c.server.clock.ms and getattr(c.server, "master_link", None) is None:
        db.delete(key)  # already expired (never on a replica: its master's DEL follows)
        _event(c, "g", b"del", key)
        c.propagate_as([b"UNLINK" if c.server.config.lazyfree_lazy_expire else b"DEL", key])
    else:
        db.set_expire(key, when)
        _event(c, "g", b"expire", key)
        if basetime or seconds:  # absolute: replays the same; NX/XX/GT/LT kept, as Redis
            c.propagate_as([b"PEXPIREAT", key, b"%d" % when, *argv[3:]])
    return 1


@command("expire")
def expire(c, argv):
    return _expire_generic(c, argv, c.server.clock.ms, True)


@command("pexpire")
def pexpire(c, argv):
    return _expire_generic(c, argv, c.server.clock.ms, False)


@command("expireat")
def expireat(c, argv):
    return _expire_generic(c, argv, 0, True)


@command("pexpireat")
def pexpireat(c, argv):
    return _expire_generic(c, argv, 0, False)


def _ttl_generic(c: Any, key: bytes, ms: bool, absolute: bool) -> int:
    """Redis's ``ttlGenericCommand``: -2 missing, -1 no TTL, else the (rounded) TTL."""
    if lookup_read(c, key, False) is None:
        return -2
    when = c.db.get_expire(key)
    if when == -1:
        return -1
    # a script keeps its start time for expiry, but Redis counts a TTL from the time now
    # (mstime()): a key the script still sees after its time has come has a TTL of 0
    now = now_ms() if getattr(c, "is_script_client", False) else c.server.clock.ms
    ttl = when if absolute else max(when - now, 0)
    return ttl if ms else (ttl + 500) // 1000


@command("ttl")
def ttl(c, argv):
    return _ttl_generic(c, argv[1], False, False)


@command("pttl")
def pttl(c, argv):
    return _ttl_generic(c, argv[1], True, False)


@command("expiretime")
def expiretime(c, argv):
    return _ttl_generic(c, argv[1], False, True)


@command("pexpiretime")
def pexpiretime(c, argv):
    return _ttl_generic(c, argv[1], True, True)


@command("persist")
def persist(c, argv):
    key = argv[1]
    db = c.db
    if db.get(key) is None or not db.persist(key):
        return 0
    _event(c, "g", b"persist", key)
    c.server.dirty += 1
    return 1


