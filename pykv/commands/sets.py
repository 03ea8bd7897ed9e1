"""Set commands (SADD … SSCAN) over ``pykv.storage.set_type.SetValue``.

Handlers follow Redis 7.0's ``t_set.c``: which argument is checked first, which reply is a
RESP3 set (SMEMBERS, SINTER/SUNION/SDIFF, SPOP with a count) and which an array
(SRANDMEMBER), the keyspace events and ``dirty`` counts. Results that Redis builds as a new
set (the STORE variants, SUNION/SDIFF replies) are built the same way here, so their
encoding, and hence their order (intsets are sorted), matches Redis's. SDIFF picks between
Redis's two algorithms by the same cost estimate because the choice shows in the result's
encoding.
"""
from __future__ import annotations

import random
from typing import Any

from pykv import errors
from pykv.commands.args import LLONG_MIN, to_int
from pykv.commands.keys import parse_scan_options
from pykv.commands.registry import command
from pykv.protocol import ErrorReply, RespSet
from pykv.protocol._writer import write_integer_reply
from pykv.server.client import NO_REPLY
from pykv.server.notify import notify
from pykv.storage.scan import ScanIndex, parse_cursor, scan
from pykv.storage.set_type import SetValue, is_int_member
from pykv.util.glob import stringmatch

NUMKEYS_POSITIVE = ErrorReply(b"ERR numkeys should be greater than 0")
TOO_MANY_KEYS = ErrorReply(b"ERR Number of keys can't be greater than number of args")
LIMIT_NEGATIVE = ErrorReply(b"ERR LIMIT can't be negative")
LONG_RANGE = ErrorReply(
    b"ERR value is out of range, value must between -9223372036854775807 and "
    b"9223372036854775807")
INVALID_CURSOR = ErrorReply(b"ERR invalid cursor")
# Redis would try to build a reply of |count| elements for any negative count (and exhaust
# memory on absurd ones); pykv refuses replies beyond this many repeated picks instead.
MAX_REPEATED_PICKS = 1 << 24
REPLY_TOO_LARGE = ErrorReply(b"ERR value is out of range")

_WRONGTYPE = errors.WRONGTYPE
SPOP_MOVE_STRATEGY_MUL = 5


def get_set(db: Any, key: bytes) -> SetValue | None:
    """The set at ``key`` (None if missing); WRONGTYPE for other types."""
    value = db.get(key)
    if value is None or type(value) is SetValue:
        return value
    raise _WRONGTYPE


def _removed_if_empty(c: Any, key: bytes, value: SetValue) -> None:
    db = c.db
    if not value.s:
        db.delete(key)
        notify(c.server, "g", b"del", key, db.id)
    else:
        db.modified(key)


# -- single-set writes -----------------------------------------------------------------------
@command("sadd")
def sadd(c, argv):
    return _sadd(c, argv)


def _sadd(c: Any, argv: list[bytes]) -> Any:
    # typed in sets.pxd: ``db`` and ``server`` are C-level types
    key = argv[1]
    db = c.db
    server = c.server
    value = db.get(key)
    if value is None:
        value = SetValue(intset=is_int_member(argv[2]))
        added = value.add_many(argv[2:], server.config)
        db.set(key, value)
    elif type(value) is SetValue:
        if len(argv) == 3 and argv[2] in value.s:  # one member already there: no change
            added = 0
        else:
            added = value.add_many(argv[2:], server.config)
        if added:
            db.modified(key)
    else:
        raise _WRONGTYPE
    if added:
        if server.keyspace_notifier is not None:
            notify(server, "s", b"sadd", key, db.id)
        server.dirty += added
    if c.reply_mode == 0:  # the count goes into the output buffer as it is (not a script's)
        write_integer_reply(c.out, added)
        return NO_REPLY
    return added


@command("srem")
def srem(c, argv):
    key = argv[1]
    value = get_set(c.db, key)
    if value is None:
        return 0
    s = value.s
    removed = 0
    for m in argv[2:]:
        if m in s:
            s.remove(m)
            removed += 1
            if not s:
                break
    if removed:
        notify(c.server, "s", b"srem", key, c.db.id)
        _removed_if_empty(c, key, value)
        c.server.dirty += removed
    return removed


@command("smove")
def smove(c, argv):
    src_key, dst_key, member = argv[1], argv[2], argv[3]
    db = c.db
    src = db.get(src_key)
    dst = db.get(dst_key)
    if src is None:
        return 0
    if type(src) is not SetValue or (dst is not None and type(dst) is not SetValue):
        raise _WRONGTYPE
    if src is dst:
        return 1 if member in src.s else 0
    if not src.remove(member):
        return 0
    server = c.server
    notify(server, "s", b"srem", src_key, db.id)
    _removed_if_empty(c, src_key, src)
    server.dirty += 1
    if dst is None:
        db.set(dst_key, SetValue.build((member,), server.config))
        added = True
    else:
        added = dst.add(member, server.config)
        if added:
            db.modified(dst_key)
    if added:
        server.dirty += 1
        notify(server, "s", b"sadd", dst_key, db.id)
    return 1


# -- single-set reads ------------------------------------------------------------------------
@command("scard")
def scard(c, argv):
    value = get_set(c.db, argv[1])
    return 0 if value is None else len(value.s)


@command("sismember")
def sismember(c, argv):
    value = get_set(c.db, argv[1])
    return 1 if value is not None and argv[2] in value.s else 0


@command("smismember")
def smismember(c, argv):
    value = get_set(c.db, argv[1])
    if value is None:
        return [0] * (len(argv) - 2)
    s = value.s
    return [1 if m in s else 0 for m in argv[2:]]


@command("smembers")
def smembers(c, argv):
    value = get_set(c.db, argv[1])
    if value is None:
        return RespSet()
    return RespSet(value.ordered())


# -- random members --------------------------------------------------------------------------
@command("spop")
def spop(c, argv):
    if len(argv) == 3:
        return _spop_count(c, argv)
    if len(argv) > 3:
        raise errors.SYNTAX
    return _spop_one(c, argv[1])


def _spop_one(c: Any, key: bytes) -> Any:
    # typed in sets.pxd
    db = c.db
    value = get_set(db, key)
    if value is None:
        return None
    member = value.random_member()
    value.s.remove(member)
    server = c.server
    notify(server, "s", b"spop", key, db.id)
    _removed_if_empty(c, key, value)
    server.dirty += 1
    c.propagate_as([b"SREM", key, member])  # the random choice, made deterministic
    return member


def _spop_count(c: Any, argv: list[bytes]) -> Any:
    count = to_int(argv[2])
    if count is None or count < 0:
        raise errors.NOT_POSITIVE_COUNT
    key = argv[1]
    db = c.db
    value = get_set(db, key)
    if value is None or count == 0:
        return RespSet()
    server = c.server
    size = len(value.s)
    notify(server, "s", b"spop", key, db.id)
    server.dirty += count
    if count >= size:
        out = RespSet(value.ordered())
        db.delete(key)
        notify(server, "g", b"del", key, db.id)
        c.propagate_as([b"DEL", key])
        return out
    remaining = size - count
    if remaining * SPOP_MOVE_STRATEGY_MUL > count:
        s = value.s
        pick = value.random_member
        popped = []
        for _ in range(count):
            m = pick()
            s.remove(m)
            popped.append(m)
    else:
        # Redis moves the few survivors into a brand-new set (fresh encoding rules)
        members = list(value.s)
        random.shuffle(members)
        popped = members[:count]
        rebuilt = SetValue.build(members[count:], server.config)
        value.s = rebuilt.s  # and with it the encoding
        value.members_added()
    db.modified(key)
    c.propagate_as(*[[b"SREM", key, m] for m in popped])  # one SREM each, as Redis 7.0
    return RespSet(popped)


@command("srandmember")
def srandmember(c, argv):
    if len(argv) == 3:
        return _srandmember_count(c, argv)
    if len(argv) > 3:
        raise errors.SYNTAX
    value = get_set(c.db, argv[1])
    if value is None:
        return None
    return value.random_member()


def _srandmember_count(c: Any, argv: list[bytes]) -> list:
    count = to_int(argv[2])
    if count is None:
        raise errors.NOT_INTEGER
    if count == LLONG_MIN:
        raise LONG_RANGE
    value = get_set(c.db, argv[1])
    if value is None or count == 0:
        return []
    if count < 0 or count == 1:
        if -count > MAX_REPEATED_PICKS:
            raise REPLY_TOO_LARGE
        pick = value.random_member
        return [pick() for _ in range(-count if count < 0 else 1)]
    if count >= len(value.s):
        return list(value.ordered())
    return value.random_distinct(count)


# -- multi-set operations --------------------------------------------------------------------
def _lookup_sets(c: Any, keys: list[bytes]) -> list[SetValue | None]:
    """Every key's set (None when missing), WRONGTYPE if any key holds another type."""
    db = c.db
    return [get_set(db, k) for k in keys]


def _intersection(sets: list[SetValue], limit: int = 0) -> tuple[SetValue, list[bytes]]:
    """Iterate the smallest set in its reply order, keep members in every other set."""
    ordered = sorted(sets, key=len)
    first, others = ordered[0], [s.s for s in ordered[1:]]
    out = []
    for m in first.ordered():
        for other in others:
            if m not in other:
                break
        else:
            out.append(m)
            if limit and len(out) >= limit:
                break
    return first, out


@command("sinter")
def sinter(c, argv):
    sets = _lookup_sets(c, argv[1:])
    if any(s is None for s in sets):
        return RespSet()
    return RespSet(_intersection(sets)[1])


@command("sintercard")
def sintercard(c, argv):
    numkeys = to_int(argv[1])
    if numkeys is None or numkeys < 1:
        raise NUMKEYS_POSITIVE
    if numkeys > len(argv) - 2:
        raise TOO_MANY_KEYS
    limit = 0
    i = 2 + numkeys
    while i < len(argv):
        if argv[i].lower() == b"limit" and i + 1 < len(argv):
            i += 1
            limit = to_int(argv[i])
            if limit is None or limit < 0:
                raise LIMIT_NEGATIVE
        else:
            raise errors.SYNTAX
        i += 1
    sets = _lookup_sets(c, argv[2:2 + numkeys])
    if any(s is None for s in sets):
        return 0
    return len(_intersection(sets, limit)[1])


def _union(c: Any, sets: list[SetValue | None]) -> SetValue:
    members: set[bytes] = set()
    for s in sets:
        if s is not None:
            members.update(s.s)  # s.s may be an IntSet
    return SetValue.build(members, c.server.config)


def _diff(c: Any, sets: list[SetValue | None]) -> SetValue:
    config = c.server.config
    first = sets[0]
    if first is None:
        return SetValue()
    rest = [s for s in sets[1:] if s is not None]
    if any(s is first for s in rest):
        return SetValue()
    result = set(first.s)
    for s in rest:
        result.difference_update(s.s)
    # Redis's algorithm 2 copies the whole first set and then removes: the result keeps
    # the encoding the copy had. Algorithm 1 only adds the survivors.
    work_one = len(first.s) * (1 + len(rest)) // 2
    work_two = len(first.s) + sum(len(s.s) for s in rest)
    if work_one > work_two:
        copy = SetValue.build(first.s, config)
        return SetValue(result, copy.intset)
    return SetValue.build(result, config)


@command("sunion")
def sunion(c, argv):
    return RespSet(_union(c, _lookup_sets(c, argv[1:])).ordered())


@command("sdiff")
def sdiff(c, argv):
    return RespSet(_diff(c, _lookup_sets(c, argv[1:])).ordered())


def _store(c: Any, dst_key: bytes, result: SetValue, event: bytes) -> int:
    db = c.db
    server = c.server
    if result.s:
        db.set(dst_key, result)
        notify(server, "s", event, dst_key, db.id)
        server.dirty += 1
        return len(result.s)
    if db.delete(dst_key):
        server.dirty += 1
        notify(server, "g", b"del", dst_key, db.id)
    return 0


@command("sinterstore")
def sinterstore(c, argv):
    sets = _lookup_sets(c, argv[2:])
    if any(s is None for s in sets):
        return _store(c, argv[1], SetValue(), b"sinterstore")
    members = _intersection(sets)[1]
    return _store(c, argv[1], SetValue.build(members, c.server.config), b"sinterstore")


@command("sunionstore")
def sunionstore(c, argv):
    return _store(c, argv[1], _union(c, _lookup_sets(c, argv[2:])), b"sunionstore")


@command("sdiffstore")
def sdiffstore(c, argv):
    return _store(c, argv[1], _diff(c, _lookup_sets(c, argv[2:])), b"sdiffstore")


# -- SSCAN -----------------------------------------------------------------------------------
@command("sscan")
def sscan(c, argv):
    cursor = parse_cursor(argv[2])
    if cursor is None:
        raise INVALID_CURSOR
    value = get_set(c.db, argv[1])
    if value is None:
        return [b"0", []]
    count, pattern, _ = parse_scan_options(argv, 3)
    if value.intset:
        members = value.ordered()
        next_cursor = 0
    else:
        if value.scan_index is None:
            value.scan_index = ScanIndex()
        next_cursor, members = scan(value.s, cursor, count, index=value.scan_index,
                                    version=value.version)
    if pattern is not None:
        members = [m for m in members if stringmatch(pattern, m)]
    return [b"%d" % next_cursor, list(members)]
