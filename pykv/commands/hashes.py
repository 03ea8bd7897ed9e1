"""Hash commands (HSET … HSCAN) over ``pykv.storage.hash_type.HashValue``.

Handlers follow Redis 7.0's ``t_hash.c``: argument checks before or after the key lookup in
the same order (it decides which error wins), the same keyspace events (``hset`` for
HSET/HMSET/HSETNX, ``hdel``, ``hincrby``, ``hincrbyfloat``, ``del`` when the last field
goes) and ``dirty`` counts. HINCRBYFLOAT uses the ``long double`` kernel shared with
INCRBYFLOAT (``pykv.storage._numeric``). HGETALL is a map in RESP3; HRANDFIELD WITHVALUES
nests pairs in RESP3 and is flat in RESP2, as Redis does.
"""
from __future__ import annotations

import random
from typing import Any

from pykv import errors
from pykv.commands.args import LLONG_MAX, LLONG_MIN, to_int
from pykv.commands.keys import parse_scan_options
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply
from pykv.server.notify import notify
from pykv.storage._numeric import incrbyfloat
from pykv.storage.hash_type import HashValue
from pykv.storage.scan import parse_cursor
from pykv.util.glob import stringmatch

HASH_NOT_INTEGER = ErrorReply(b"ERR hash value is not an integer")
HASH_NOT_FLOAT = ErrorReply(b"ERR hash value is not a float")
NAN_OR_INFINITY = ErrorReply(b"ERR value is NaN or Infinity")
VALUE_OUT_OF_RANGE = ErrorReply(b"ERR value is out of range")
INVALID_CURSOR = ErrorReply(b"ERR invalid cursor")
# Redis would try to build a reply of |count| fields for any negative count (and exhaust
# memory on absurd ones); pykv refuses replies beyond this many repeated picks instead.
MAX_REPEATED_PICKS = 1 << 24

_WRONGTYPE = errors.WRONGTYPE


def get_hash(db: Any, key: bytes) -> HashValue | None:
    """The hash at ``key`` (None if missing); WRONGTYPE for other types."""
    value = db.get(key)
    if value is None or type(value) is HashValue:
        return value
    raise _WRONGTYPE


def _hash_for_write(c: Any, key: bytes) -> tuple[HashValue, bool]:
    """``hashTypeLookupWriteOrCreate``: (hash, is_new); a new hash is not stored yet."""
    value = c.db.get(key)
    if value is None:
        return HashValue(), True
    if type(value) is not HashValue:
        raise _WRONGTYPE
    return value, False


def _store(c: Any, key: bytes, value: HashValue, new: bool) -> None:
    if new:
        c.db.set(key, value)
    else:
        c.db.modified(key)


# -- writes ----------------------------------------------------------------------------------
def _hset(c: Any, argv: list[bytes], name: str) -> int:
    n = len(argv)
    if n % 2:
        raise errors.wrong_arity(name)
    key = argv[1]
    db = c.db
    server = c.server
    value = db.get(key)
    if value is None:
        value = HashValue()
        added = value.set_pairs(server.config, argv, 2)
        db.set(key, value)
    elif type(value) is HashValue:
        added = value.set_pairs(server.config, argv, 2)
        db.modified(key)
    else:
        raise _WRONGTYPE
    if server.keyspace_notifier is not None:
        notify(server, "h", b"hset", key, db.id)
    server.dirty += (n - 2) // 2
    return added


@command("hset")
def hset(c, argv):
    return _hset(c, argv, "hset")


@command("hmset")
def hmset(c, argv):
    _hset(c, argv, "hmset")
    return OK


@command("hsetnx")
def hsetnx(c, argv):
    key = argv[1]
    value, new = _hash_for_write(c, key)
    if argv[2] in value.d:
        return 0
    value.set_pairs(c.server.config, argv, 2)
    _store(c, key, value, new)
    notify(c.server, "h", b"hset", key, c.db.id)
    c.server.dirty += 1
    return 1


@command("hdel")
def hdel(c, argv):
    key = argv[1]
    db = c.db
    value = get_hash(db, key)
    if value is None:
        return 0
    deleted = 0
    for field in argv[2:]:
        if value.delete(field):
            deleted += 1
            if not value.d:
                break
    if deleted:
        server = c.server
        notify(server, "h", b"hdel", key, db.id)
        if not value.d:
            db.delete(key)
            notify(server, "g", b"del", key, db.id)
        else:
            db.modified(key)
        server.dirty += deleted
    return deleted


@command("hincrby")
def hincrby(c, argv):
    incr = to_int(argv[3])
    if incr is None:
        raise errors.NOT_INTEGER
    key, field = argv[1], argv[2]
    value, new = _hash_for_write(c, key)
    current = value.d.get(field)
    if current is None:
        old = 0
    else:
        old = to_int(current)
        if old is None:
            raise HASH_NOT_INTEGER
    result = old + incr
    if result > LLONG_MAX or result < LLONG_MIN:
        raise errors.INCR_OVERFLOW
    value.set_computed(c.server.config, field, b"%d" % result)
    _store(c, key, value, new)
    notify(c.server, "h", b"hincrby", key, c.db.id)
    c.server.dirty += 1
    return result


@command("hincrbyfloat")
def hincrbyfloat(c, argv):
    incr = argv[3]
    code, _ = incrbyfloat(None, incr)
    if code == 2:
        raise errors.NOT_FLOAT
    if code == 3:
        raise NAN_OR_INFINITY
    key, field = argv[1], argv[2]
    value, new = _hash_for_write(c, key)
    code, text = incrbyfloat(value.d.get(field), incr)
    if code == 1:
        raise HASH_NOT_FLOAT
    if code:
        raise errors.INCR_NAN_OR_INF
    value.set_computed(c.server.config, field, text)
    _store(c, key, value, new)
    notify(c.server, "h", b"hincrbyfloat", key, c.db.id)
    c.server.dirty += 1
    c.propagate_as([b"HSET", key, field, text])  # the result: replay can't round differently
    return text


# -- reads -----------------------------------------------------------------------------------
@command("hget")
def hget(c, argv):
    value = get_hash(c.db, argv[1])
    return None if value is None else value.d.get(argv[2])


@command("hmget")
def hmget(c, argv):
    value = get_hash(c.db, argv[1])
    if value is None:
        return [None] * (len(argv) - 2)
    get = value.d.get
    return [get(f) for f in argv[2:]]


@command("hlen")
def hlen(c, argv):
    value = get_hash(c.db, argv[1])
    return 0 if value is None else len(value.d)


@command("hstrlen")
def hstrlen(c, argv):
    value = get_hash(c.db, argv[1])
    if value is None:
        return 0
    v = value.d.get(argv[2])
    return 0 if v is None else len(v)


@command("hexists")
def hexists(c, argv):
    value = get_hash(c.db, argv[1])
    return 1 if value is not None and argv[2] in value.d else 0


@command("hkeys")
def hkeys(c, argv):
    value = get_hash(c.db, argv[1])
    return [] if value is None else list(value.d)


@command("hvals")
def hvals(c, argv):
    value = get_hash(c.db, argv[1])
    return [] if value is None else list(value.d.values())


@command("hgetall")
def hgetall(c, argv):
    value = get_hash(c.db, argv[1])
    if value is None:
        return {} if c.resp > 2 else []
    if c.resp > 2:
        return dict(value.d.items())
    out = []
    for item in value.d.items():
        out += item
    return out


# -- HRANDFIELD ------------------------------------------------------------------------------
@command("hrandfield")
def hrandfield(c, argv):
    if len(argv) >= 3:
        count = to_int(argv[2])
        if count is None:
            raise errors.NOT_INTEGER
        if count == LLONG_MIN:
            raise ErrorReply(b"ERR value is out of range, value must between "
                             b"-9223372036854775807 and 9223372036854775807")
        if len(argv) > 4 or (len(argv) == 4 and argv[3].lower() != b"withvalues"):
            raise errors.SYNTAX
        withvalues = len(argv) == 4
        if withvalues and not -(LLONG_MAX // 2) <= count <= LLONG_MAX // 2:
            raise VALUE_OUT_OF_RANGE
        return _hrandfield_count(c, argv[1], count, withvalues)
    value = get_hash(c.db, argv[1])
    if value is None:
        return None
    return value.random_field()


def _hrandfield_count(c: Any, key: bytes, count: int, withvalues: bool) -> list:
    value = get_hash(c.db, key)
    if value is None or count == 0:
        return []
    d = value.d
    nested = withvalues and c.resp > 2
    if not value.listpack:
        return _table_picks(d, count, withvalues, nested)
    if count < 0 or count == 1:
        if -count > MAX_REPEATED_PICKS:
            raise VALUE_OUT_OF_RANGE
        keys = value.keys_snapshot()
        fields = random.choices(keys, k=-count if count < 0 else 1)
    elif count >= len(d):
        fields = list(d)
    else:
        fields = random.sample(value.keys_snapshot(), count)
    if not withvalues:
        return fields
    if nested:
        return [[f, d[f]] for f in fields]
    out = []
    for f in fields:
        out.append(f)
        out.append(d[f])
    return out


def _table_picks(table: Any, count: int, withvalues: bool, nested: bool) -> list:
    """HRANDFIELD with a count on a hashtable hash: the table picks (uniformly)."""
    if count < 0 or count == 1:
        if -count > MAX_REPEATED_PICKS:
            raise VALUE_OUT_OF_RANGE
        flat = table.picks(-count if count < 0 else 1, False, withvalues)
    elif count >= len(table):
        flat = [x for item in table.items() for x in item] if withvalues else list(table)
    else:
        flat = table.picks(count, True, withvalues)
    if nested:
        return [[flat[i], flat[i + 1]] for i in range(0, len(flat), 2)]
    return flat


# -- HSCAN -----------------------------------------------------------------------------------
@command("hscan")
def hscan(c, argv):
    cursor = parse_cursor(argv[2])
    if cursor is None:
        raise INVALID_CURSOR
    value = get_hash(c.db, argv[1])
    if value is None:
        return [b"0", []]
    count, pattern, _ = parse_scan_options(argv, 3)
    d = value.d
    if value.listpack:
        flat = [x for item in d.items() for x in item]
        next_cursor = 0
    else:
        next_cursor, flat = d.scan(cursor, count)
    if pattern is None:
        return [b"%d" % next_cursor, flat]
    out = []
    for i in range(0, len(flat), 2):
        if stringmatch(pattern, flat[i]):
            out.append(flat[i])
            out.append(flat[i + 1])
    return [b"%d" % next_cursor, out]
