"""Sorted-set commands (Z*), reply for reply as Redis 7.0 answers them.

The value type and its range arithmetic live in ``pykv.storage.zset_type``; this module
parses arguments in Redis's order (so the same bad input earns the same error), applies the
change, and calls the hooks (dirty counter, keyspace events) where Redis does. Blocking pops
(BZPOPMIN/BZPOPMAX/BZMPOP) park through ``pykv.server.blocking``.
"""
from __future__ import annotations

import math
import random
import re
from typing import Any

from pykv import errors
from pykv.commands.args import LLONG_MAX, parse_int, to_float, to_int
from pykv.commands.registry import TABLE, command
from pykv.protocol import NULL_ARRAY, ErrorReply, RawReply, format_double
from pykv.protocol._writer import write_integer_reply
from pykv.server.blocking import block_for_keys, parse_timeout
from pykv.server.client import NO_REPLY
from pykv.server.notify import notify
from pykv.storage.scan import ScanIndex, parse_cursor, scan
from pykv.storage.zset_type import ZSet, parse_lex_range, parse_score_range
from pykv.util.glob import stringmatch

_isnan = math.isnan

# -- error texts that only this family sends (kept with their family) -------------------
ERR_XX_NX = ErrorReply(b"ERR XX and NX options at the same time are not compatible")
ERR_INCR_PAIR = ErrorReply(b"ERR INCR option supports a single increment-element pair")
ERR_NAN_SCORE = ErrorReply(b"ERR resulting score is not a number (NaN)")
ERR_MINMAX_FLOAT = ErrorReply(b"ERR min or max is not a float")
ERR_MINMAX_LEX = ErrorReply(b"ERR min or max not valid string range item")
ERR_LIMIT_RANK = ErrorReply(
    b"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
ERR_WITHSCORES_LEX = ErrorReply(
    b"ERR syntax error, WITHSCORES not supported in combination with BYLEX")
ERR_WEIGHT_FLOAT = ErrorReply(b"ERR weight value is not a float")
ERR_NUMKEYS = ErrorReply(b"ERR numkeys should be greater than 0")
ERR_COUNT_POSITIVE = ErrorReply(b"ERR count should be greater than 0")
ERR_LIMIT_NEGATIVE = ErrorReply(b"ERR LIMIT can't be negative")
ERR_OUT_OF_RANGE = ErrorReply(b"ERR value is out of range")
LONG_MAX = LLONG_MAX
# an empty array reply as bytes (RESP2 and RESP3), for replies written as they are
_EMPTY_ARRAY = RawReply(b"*0\r\n")


def _at_least_one_key(name: str) -> ErrorReply:
    return ErrorReply(f"ERR at least 1 input key is needed for '{name}' command".encode())


def _range_error(lo: int, hi: int) -> ErrorReply:
    return ErrorReply(b"ERR value is out of range, value must between %d and %d" % (lo, hi))


# -- helpers ------------------------------------------------------------------------------
def get_zset(db: Any, key: bytes) -> ZSet | None:
    """The zset at ``key`` (None if missing); WRONGTYPE for other types."""
    value = db.get(key)
    if value is None or type(value) is ZSet:
        return value
    raise errors.WRONGTYPE


def new_zset(c: Any, size_hint: int, first_member_len: int = 0) -> ZSet:
    cfg = c.server.config
    return ZSet(cfg.zset_max_listpack_entries != 0
                and size_hint <= cfg.zset_max_listpack_entries
                and first_member_len <= cfg.zset_max_listpack_value)


def zset_add_new(c: Any, z: ZSet, member: bytes, score: float) -> None:
    """Insert an absent member, leaving listpack encoding when a limit is crossed."""
    if z.listpack:
        cfg = c.server.config
        z.check_listpack(len(member), cfg.zset_max_listpack_entries,
                         cfg.zset_max_listpack_value)
    z.insert(member, score)


def items_reply(items: Any, withscores: bool, resp: int) -> list:
    """(score, member) pairs as Redis replies them: flat in RESP2, pairs in RESP3."""
    if not withscores:
        return [m for _, m in items]
    out: list = []
    if resp == 2:
        append = out.append
        for s, m in items:
            append(m)
            append(s)
        return out
    return [[m, s] for s, m in items]


def _long(data: bytes) -> int:
    value = to_int(data)
    if value is None:
        raise errors.NOT_INTEGER
    return value


def _range_long(data: bytes, lo: int, hi: int, msg: ErrorReply | None) -> int:
    """``getRangeLongFromObjectOrReply``."""
    value = to_int(data)
    if value is None:
        raise msg or errors.NOT_INTEGER
    if value < lo or value > hi:
        raise msg or _range_error(lo, hi)
    return value


def _delete_if_empty(c: Any, key: bytes, z: ZSet) -> bool:
    if not z.scores:
        c.db.delete(key)
        notify(c.server, "g", b"del", key, c.db.id)
        return True
    return False


def _store_result(c: Any, dst: bytes, z: ZSet, event: bytes) -> int:
    """setKey + event when ``z`` has elements, else delete ``dst`` (as the STORE forms do)."""
    db = c.db
    if z.scores:
        db.set(dst, z)
        notify(c.server, "z", event, dst, db.id)
        c.server.dirty += 1
        return len(z.scores)
    if db.delete(dst):
        notify(c.server, "g", b"del", dst, db.id)
        c.server.dirty += 1
    return 0


# -- ZADD / ZINCRBY -----------------------------------------------------------------------
_ZADD_FLAGS = frozenset((b"nx", b"xx", b"ch", b"incr", b"gt", b"lt"))


def parse_score(data: bytes) -> float | None:
    """A ZADD score: up to 15 plain digits are read here (exact in a double), decimals
    with up to 15 digits each side by ``float``, the rest by Redis's full rules."""
    n = len(data)
    if 0 < n < 16:
        v = 0
        for ch in data:
            if ch < 48 or ch > 57:
                break
            v = v * 10 + (ch - 48)
        else:
            return float(v)
    if _SIMPLE_SCORE.match(data) is not None:
        return float(data)
    return to_float(data)


_SIMPLE_SCORE = re.compile(rb"-?[0-9]{1,15}(?:\.[0-9]{1,15})?\Z")


@command("zadd")
def zadd(c, argv):
    if len(argv) != 4:
        return _zadd(c, argv, False)
    return _zadd_one(c, argv)


def _zadd_one(c: Any, argv: list[bytes]) -> Any:
    """ZADD key score member, the single-pair form without flags (benchmarked): typed in
    zsets.pxd, like ``_zpop``."""
    score = parse_score(argv[2])
    if score is None:
        if argv[2].lower() in _ZADD_FLAGS:
            raise errors.SYNTAX
        raise errors.NOT_FLOAT
    key = argv[1]
    member = argv[3]
    db = c.db
    z = db.get(key)
    if z is None:
        z = new_zset(c, 0, len(member))
        db.set(key, z)
    elif type(z) is not ZSet:
        raise errors.WRONGTYPE
    cur = z.scores.get(member)
    if cur is None:
        if z.listpack:
            cfg = c.server.config
            z.check_listpack(len(member), cfg.zset_max_listpack_entries,
                             cfg.zset_max_listpack_value)
        z.insert(member, score)
        added = 1
    elif cur != score:
        z.update(member, cur, score)
        added = 0
    else:
        return 0
    db.modified(key)
    server = c.server
    server.dirty += 1
    if server.keyspace_notifier is None:
        return added
    reply: Any = added
    if c.reply_mode == 0:  # the reply before the event, as Redis's zaddGenericCommand
        write_integer_reply(c.out, added)
        reply = NO_REPLY
    notify(server, "z", b"zadd", key, db.id)
    return reply


@command("zincrby")
def zincrby(c, argv):
    return _zadd(c, argv, True)


def _zadd(c: Any, argv: list[bytes], incr: bool) -> Any:
    nx = xx = ch = gt = lt = False
    idx = 2
    argc = len(argv)
    while idx < argc:
        flag = argv[idx].lower()
        if flag not in _ZADD_FLAGS:
            break
        if flag == b"nx":
            nx = True
        elif flag == b"xx":
            xx = True
        elif flag == b"ch":
            ch = True
        elif flag == b"incr":
            incr = True
        elif flag == b"gt":
            gt = True
        else:
            lt = True
        idx += 1
    elements = argc - idx
    if elements % 2 or not elements:
        raise errors.SYNTAX
    elements //= 2
    if nx and xx:
        raise ERR_XX_NX
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise errors.GT_LT_NX
    if incr and elements > 1:
        raise ERR_INCR_PAIR
    scores = []
    for j in range(idx, argc, 2):
        score = parse_score(argv[j])
        if score is None:
            raise errors.NOT_FLOAT
        scores.append(score)
    key = argv[1]
    db = c.db
    z = db.get(key)
    if z is None:
        if xx:
            return None if incr else 0
        z = new_zset(c, 0, len(argv[idx + 1]))
        db.set(key, z)
    elif type(z) is not ZSet:
        raise errors.WRONGTYPE
    added = updated = processed = 0
    score = 0.0
    cfg = c.server.config
    dict_get = z.scores.get
    try:
        for n in range(elements):
            score = scores[n]
            member = argv[idx + 1 + 2 * n]
            cur = dict_get(member)
            if cur is not None:
                if nx:
                    continue
                if incr:
                    score += cur
                    if _isnan(score):
                        raise ERR_NAN_SCORE
                if (lt and score >= cur) or (gt and score <= cur):
                    continue
                processed += 1
                if score != cur:
                    z.update(member, cur, score)
                    updated += 1
            elif not xx:
                if z.listpack:
                    z.check_listpack(len(member), cfg.zset_max_listpack_entries,
                                     cfg.zset_max_listpack_value)
                    z.insert(member, score)
                    dict_get = z.scores.get  # the insert may have converted the set
                else:
                    z.insert(member, score)
                added += 1
                processed += 1
    finally:
        if added or updated:
            db.modified(key)
            notify(c.server, "z", b"zincr" if incr else b"zadd", key, db.id)
        c.server.dirty += added + updated
    if incr:
        return score if processed else None
    return added + updated if ch else added


# -- simple reads and removal -------------------------------------------------------------
@command("zcard")
def zcard(c, argv):
    z = get_zset(c.db, argv[1])
    return 0 if z is None else len(z.scores)


@command("zscore")
def zscore(c, argv):
    z = get_zset(c.db, argv[1])
    return None if z is None else z.scores.get(argv[2])


@command("zmscore")
def zmscore(c, argv):
    z = get_zset(c.db, argv[1])
    if z is None:
        return [None] * (len(argv) - 2)
    get = z.scores.get
    return [get(m) for m in argv[2:]]


@command("zrank")
def zrank(c, argv):
    z = get_zset(c.db, argv[1])
    if z is None:
        return None
    return z.rank(argv[2])


@command("zrevrank")
def zrevrank(c, argv):
    z = get_zset(c.db, argv[1])
    if z is None:
        return None
    rank = z.rank(argv[2])
    return None if rank is None else len(z.scores) - 1 - rank


@command("zrem")
def zrem(c, argv):
    key = argv[1]
    z = get_zset(c.db, key)
    if z is None:
        return 0
    deleted = 0
    for member in argv[2:]:
        if z.remove(member):
            deleted += 1
            if not z.scores:
                break
    if deleted:
        notify(c.server, "z", b"zrem", key, c.db.id)
        if not _delete_if_empty(c, key, z):
            c.db.modified(key)
        c.server.dirty += deleted
    return deleted


@command("zcount")
def zcount(c, argv):
    rng = parse_score_range(argv[2], argv[3])
    if rng is None:
        raise ERR_MINMAX_FLOAT
    z = get_zset(c.db, argv[1])
    if z is None:
        return 0
    lo, hi = z.score_span(rng)
    return hi - lo


@command("zlexcount")
def zlexcount(c, argv):
    rng = parse_lex_range(argv[2], argv[3])
    if rng is None:
        raise ERR_MINMAX_LEX
    z = get_zset(c.db, argv[1])
    if z is None:
        return 0
    lo, hi = z.lex_span(rng)
    return hi - lo


# -- ZRANGE and friends -------------------------------------------------------------------
RANK, SCORE, LEX = 0, 1, 2


@command("zrange")
def zrange(c, argv):
    return _zrange(c, argv, 1, None, None, None)


@command("zrangestore")
def zrangestore(c, argv):
    return _zrange(c, argv, 2, argv[1], None, None)


@command("zrevrange")
def zrevrange(c, argv):
    return _zrange(c, argv, 1, None, RANK, True)


@command("zrangebyscore")
def zrangebyscore(c, argv):
    if len(argv) != 4:
        return _zrange(c, argv, 1, None, SCORE, False)
    # the plain form, kept lean (benchmarked)
    rng = parse_score_range(argv[2], argv[3])
    if rng is None:
        raise ERR_MINMAX_FLOAT
    z = get_zset(c.db, argv[1])
    if z is None:
        return []
    lo, hi = z.score_span(rng)
    return [m for _, m in z.items(lo, hi)] if hi > lo else []


@command("zrevrangebyscore")
def zrevrangebyscore(c, argv):
    return _zrange(c, argv, 1, None, SCORE, True)


@command("zrangebylex")
def zrangebylex(c, argv):
    return _zrange(c, argv, 1, None, LEX, False)


@command("zrevrangebylex")
def zrevrangebylex(c, argv):
    return _zrange(c, argv, 1, None, LEX, True)


def _zrange(c: Any, argv: list[bytes], start: int, dst: bytes | None,
            rangetype: int | None, reverse: bool | None) -> Any:
    """Redis's ``zrangeGenericCommand``: options, checks, range, reply or store."""
    withscores = False
    offset, limit = 0, -1
    argc = len(argv)
    j = start + 3
    while j < argc:
        opt = argv[j].lower()
        left = argc - j - 1
        if dst is None and opt == b"withscores":
            withscores = True
        elif opt == b"limit" and left >= 2:
            offset = _long(argv[j + 1])
            limit = _long(argv[j + 2])
            j += 2
        elif reverse is None and opt == b"rev":
            reverse = True
        elif rangetype is None and opt == b"bylex":
            rangetype = LEX
        elif rangetype is None and opt == b"byscore":
            rangetype = SCORE
        else:
            raise errors.SYNTAX
        j += 1
    if reverse is None:
        reverse = False
    if rangetype is None:
        rangetype = RANK
    if limit != -1 and rangetype == RANK:
        raise ERR_LIMIT_RANK
    if withscores and rangetype == LEX:
        raise ERR_WITHSCORES_LEX
    lo_arg, hi_arg = argv[start + 1], argv[start + 2]
    if reverse and rangetype != RANK:
        lo_arg, hi_arg = hi_arg, lo_arg
    if rangetype == RANK:
        first, last = _long(lo_arg), _long(hi_arg)
    elif rangetype == SCORE:
        rng = parse_score_range(lo_arg, hi_arg)
        if rng is None:
            raise ERR_MINMAX_FLOAT
    else:
        rng = parse_lex_range(lo_arg, hi_arg)
        if rng is None:
            raise ERR_MINMAX_LEX
    z = get_zset(c.db, argv[start])
    if z is None:
        items: list = []
    elif rangetype == RANK:
        items = rank_items(z, first, last, reverse)
    else:
        span = z.score_span(rng) if rangetype == SCORE else z.lex_span(rng)
        items = span_items(z, span, reverse, offset, limit)
    if dst is None:
        return items_reply(items, withscores, c.resp)
    out = new_zset(c, len(items))
    for score, member in items:
        zset_add_new(c, out, member, score)
    if out.scores:
        c.db.set(dst, out)
        notify(c.server, "z", b"zrangestore", dst, c.db.id)
        c.server.dirty += 1
        return len(items)
    if c.db.delete(dst):
        notify(c.server, "g", b"del", dst, c.db.id)
        c.server.dirty += 1
    return 0


def rank_bounds(length: int, first: int, last: int) -> tuple[int, int] | None:
    """Redis's index sanitising: inclusive [first, last] or None when empty."""
    if first < 0:
        first += length
    if last < 0:
        last += length
    if first < 0:
        first = 0
    if first > last or first >= length:
        return None
    if last >= length:
        last = length - 1
    return first, last


def rank_items(z: ZSet, first: int, last: int, reverse: bool) -> list:
    n = len(z.scores)
    bounds = rank_bounds(n, first, last)
    if bounds is None:
        return []
    first, last = bounds
    if reverse:
        return list(z.sl.islice(n - 1 - last, n - first, reverse=True))
    return list(z.sl.islice(first, last + 1))


def span_items(z: ZSet, span: tuple[int, int], reverse: bool, offset: int,
               limit: int) -> list:
    lo, hi = span
    if offset < 0 or (offset > 0 and offset >= len(z.scores)):
        return []
    if reverse:
        top = hi - offset
        if top <= lo:
            return []
        bottom = lo if limit < 0 else max(lo, top - limit)
        return list(z.sl.islice(bottom, top, reverse=True))
    lo += offset
    if lo >= hi:
        return []
    if limit >= 0:
        hi = min(hi, lo + limit)
    return list(z.sl.islice(lo, hi))


# -- ZREMRANGEBY* -------------------------------------------------------------------------
@command("zremrangebyrank")
def zremrangebyrank(c, argv):
    first, last = _long(argv[2]), _long(argv[3])
    return _zremrange(c, argv[1], b"zremrangebyrank",
                      lambda z: _rank_span(z, first, last))


@command("zremrangebyscore")
def zremrangebyscore(c, argv):
    rng = parse_score_range(argv[2], argv[3])
    if rng is None:
        raise ERR_MINMAX_FLOAT
    return _zremrange(c, argv[1], b"zremrangebyscore", lambda z: z.score_span(rng))


@command("zremrangebylex")
def zremrangebylex(c, argv):
    rng = parse_lex_range(argv[2], argv[3])
    if rng is None:
        raise ERR_MINMAX_LEX
    return _zremrange(c, argv[1], b"zremrangebylex", lambda z: z.lex_span(rng))


def _rank_span(z: ZSet, first: int, last: int) -> tuple[int, int]:
    bounds = rank_bounds(len(z.scores), first, last)
    return (0, 0) if bounds is None else (bounds[0], bounds[1] + 1)


def _zremrange(c: Any, key: bytes, event: bytes, span_of: Any) -> int:
    z = get_zset(c.db, key)
    if z is None:
        return 0
    lo, hi = span_of(z)
    deleted = z.remove_index_range(lo, hi)
    if deleted:
        c.db.modified(key)
        notify(c.server, "z", event, key, c.db.id)
        _delete_if_empty(c, key, z)
    c.server.dirty += deleted
    return deleted


# -- pops ---------------------------------------------------------------------------------
def pop_items(c: Any, key: bytes, z: ZSet, count: int, pop_max: bool) -> list:
    """Remove and return up to ``count`` (score, member) pairs; events and dirty included."""
    n = min(count, len(z.scores))
    if pop_max:
        size = len(z.scores)
        items = z.items(size - n, size)
        items.reverse()
        z.remove_index_range(size - n, size)
    else:
        items = z.items(0, n)
        z.remove_index_range(0, n)
    server = c.server
    db = c.db
    server.dirty += n
    if server.keyspace_notifier is not None:
        notify(server, "z", b"zpopmax" if pop_max else b"zpopmin", key, db.id)
    if not _delete_if_empty(c, key, z):
        db.modified(key)
    return items


def first_nonempty_zset(c: Any, keys: list[bytes]) -> tuple[bytes, ZSet] | None:
    """The first key holding a zset (WRONGTYPE stops the search, as in Redis)."""
    for key in keys:
        z = get_zset(c.db, key)
        if z is not None:
            return key, z
    return None


@command("zpopmin")
def zpopmin(c, argv):
    return _zpop(c, argv, False)


@command("zpopmax")
def zpopmax(c, argv):
    return _zpop(c, argv, True)


def _zpop(c: Any, argv: list[bytes], pop_max: bool) -> Any:
    """ZPOPMIN/ZPOPMAX (typed in zsets.pxd: the client and its database are C types)."""
    n = len(argv)
    if n > 3:
        raise errors.SYNTAX
    count = 1
    if n == 3:
        count = _range_long(argv[2], 0, LONG_MAX, errors.NOT_POSITIVE_COUNT)
    key = argv[1]
    db = c.db
    z = db.get(key)
    if z is None:
        return _EMPTY_ARRAY if c.reply_mode == 0 else []
    if type(z) is not ZSet:
        raise errors.WRONGTYPE
    if count == 0:
        return _EMPTY_ARRAY if c.reply_mode == 0 else []
    items = pop_items(c, key, z, count, pop_max)
    if c.resp > 2 and n == 3:
        return [[m, s] for s, m in items]
    return items_reply(items, True, 2)


def parse_mpop(argv: list[bytes], numkeys_idx: int) -> tuple[list[bytes], bool, int]:
    """ZMPOP/BZMPOP arguments: (keys, pop_max, count)."""
    numkeys = _range_long(argv[numkeys_idx], 1, LONG_MAX, ERR_NUMKEYS)
    where_idx = numkeys_idx + numkeys + 1
    if where_idx >= len(argv):
        raise errors.SYNTAX
    where = argv[where_idx].lower()
    if where not in (b"min", b"max"):
        raise errors.SYNTAX
    count = -1
    j = where_idx + 1
    while j < len(argv):
        if count == -1 and argv[j].lower() == b"count" and j + 1 < len(argv):
            j += 1
            count = _range_long(argv[j], 1, LONG_MAX, ERR_COUNT_POSITIVE)
        else:
            raise errors.SYNTAX
        j += 1
    return argv[numkeys_idx + 1:where_idx], where == b"max", (1 if count == -1 else count)


_POP_EFFECT = {False: b"ZPOPMIN", True: b"ZPOPMAX"}  # what (B)ZMPOP/BZPOP* are logged as


def mpop_reply(key: bytes, items: list) -> list:
    return [key, [[m, s] for s, m in items]]


@command("zmpop")
def zmpop(c, argv):
    keys, pop_max, count = parse_mpop(argv, 1)
    found = first_nonempty_zset(c, keys)
    if found is None:
        return NULL_ARRAY
    items = pop_items(c, found[0], found[1], count, pop_max)
    c.propagate_as([_POP_EFFECT[pop_max], found[0], b"%d" % len(items)])
    return mpop_reply(found[0], items)


# -- ZRANDMEMBER --------------------------------------------------------------------------
@command("zrandmember")
def zrandmember(c, argv):
    argc = len(argv)
    if argc >= 3:
        count = _range_long(argv[2], -LONG_MAX, LONG_MAX, None)
        withscores = False
        if argc > 4 or (argc == 4 and argv[3].lower() != b"withscores"):
            raise errors.SYNTAX
        if argc == 4:
            withscores = True
            if count < -LONG_MAX // 2 or count > LONG_MAX // 2:
                raise ERR_OUT_OF_RANGE
        z = get_zset(c.db, argv[1])
        if z is None or count == 0:
            return []
        return items_reply(_random_items(z, count), withscores, c.resp)
    z = get_zset(c.db, argv[1])
    if z is None:
        return None
    return z.sl[random.randrange(len(z.sl))][1]


def _random_items(z: ZSet, count: int) -> list:
    sl = z.sl
    n = len(sl)
    if count < 0:
        return [sl[random.randrange(n)] for _ in range(-count)]
    if count >= n:
        return list(reversed(sl))  # Redis answers the whole set highest first
    picks = random.sample(range(n), count)
    return [sl[i] for i in picks]


# -- ZUNION / ZINTER / ZDIFF --------------------------------------------------------------
UNION, INTER, DIFF = 0, 1, 2
_AGGREGATES = {b"sum": 0, b"min": 1, b"max": 2}


def _source_pairs(value: Any) -> dict[bytes, float]:
    """member -> score of a zset, or member -> 1.0 of a plain set."""
    if type(value) is ZSet:
        return value.scores
    return dict.fromkeys(value.s, 1.0)


@command("zunion")
def zunion(c, argv):
    return _zsetop(c, argv, None, 1, UNION, False)


@command("zinter")
def zinter(c, argv):
    return _zsetop(c, argv, None, 1, INTER, False)


@command("zdiff")
def zdiff(c, argv):
    return _zsetop(c, argv, None, 1, DIFF, False)


@command("zunionstore")
def zunionstore(c, argv):
    return _zsetop(c, argv, argv[1], 2, UNION, False)


@command("zinterstore")
def zinterstore(c, argv):
    return _zsetop(c, argv, argv[1], 2, INTER, False)


@command("zdiffstore")
def zdiffstore(c, argv):
    return _zsetop(c, argv, argv[1], 2, DIFF, False)


@command("zintercard")
def zintercard(c, argv):
    return _zsetop(c, argv, None, 1, INTER, True)


def _zsetop(c: Any, argv: list[bytes], dst: bytes | None, numkeys_idx: int, op: int,
            card_only: bool) -> Any:
    """Redis's ``zunionInterDiffGenericCommand``."""
    setnum = _long(argv[numkeys_idx])
    if setnum < 1:
        raise _at_least_one_key(argv[0].lower().decode("latin-1"))
    argc = len(argv)
    if setnum > argc - numkeys_idx - 1:
        raise errors.SYNTAX
    db = c.db
    sources: list[Any] = []
    j = numkeys_idx + 1
    for _ in range(setnum):
        value = db.get(argv[j])
        if value is not None and type(value) is not ZSet and \
                getattr(value, "type_name", b"string") != b"set":
            raise errors.WRONGTYPE
        sources.append(value)
        j += 1
    weights = [1.0] * setnum
    aggregate = 0
    withscores = False
    limit = 0
    while j < argc:
        remaining = argc - j
        opt = argv[j].lower()
        if op != DIFF and not card_only and remaining >= setnum + 1 and opt == b"weights":
            j += 1
            for i in range(setnum):
                w = to_float(argv[j])
                if w is None:
                    raise ERR_WEIGHT_FLOAT
                weights[i] = w
                j += 1
        elif op != DIFF and not card_only and remaining >= 2 and opt == b"aggregate":
            agg = _AGGREGATES.get(argv[j + 1].lower())
            if agg is None:
                raise errors.SYNTAX
            aggregate = agg
            j += 2
        elif remaining >= 1 and dst is None and not card_only and opt == b"withscores":
            withscores = True
            j += 1
        elif card_only and remaining >= 2 and opt == b"limit":
            limit = _range_long(argv[j + 1], 0, LONG_MAX, ERR_LIMIT_NEGATIVE)
            j += 2
        else:
            raise errors.SYNTAX
    srcs = [(_source_pairs(v) if v is not None else {}, w) for v, w in zip(sources, weights, strict=True)]
    if op != DIFF:
        srcs.sort(key=lambda sw: len(sw[0]))  # smallest first (stable), as Redis does
    if op == INTER:
        result = _inter(srcs, aggregate, card_only, limit)
        if card_only:
            return result
    elif op == UNION:
        result = _union(srcs, aggregate)
    else:
        result = _diff(srcs)
    if dst is None:
        items = sorted([(s, m) for m, s in result.items()])
        return items_reply(items, withscores, c.resp)
    out = ZSet(False)
    for member, score in result.items():
        out.insert(member, score)
    cfg = c.server.config
    out.convert_if_small(cfg.zset_max_listpack_entries, cfg.zset_max_listpack_value)
    event = (b"zunionstore", b"zinterstore", b"zdiffstore")[op]
    return _store_result(c, dst, out, event)


def _aggregate(target: float, value: float, how: int) -> float:
    if how == 0:
        target = target + value
        return 0.0 if _isnan(target) else target
    if how == 1:
        return value if value < target else target
    return value if value > target else target


def _inter(srcs: list, how: int, card_only: bool, limit: int) -> Any:
    first, w0 = srcs[0]
    result: dict[bytes, float] = {}
    card = 0
    if not first:
        return 0 if card_only else result
    others = srcs[1:]
    for member, base in list(first.items()):
        score = w0 * base
        if _isnan(score):
            score = 0.0
        for pairs, w in others:
            value = pairs.get(member)
            if value is None:
                break
            score = _aggregate(score, value * w, how)
        else:
            if card_only:
                card += 1
                if limit and card >= limit:
                    break
            else:
                result[member] = score
    return card if card_only else result


def _union(srcs: list, how: int) -> dict[bytes, float]:
    acc: dict[bytes, float] = {}
    for pairs, w in srcs:
        for member, base in pairs.items():
            score = w * base
            if _isnan(score):
                score = 0.0
            cur = acc.get(member)
            acc[member] = score if cur is None else _aggregate(cur, score, how)
    return acc


def _diff(srcs: list) -> dict[bytes, float]:
    first = srcs[0][0]
    others = [pairs for pairs, _ in srcs[1:] if pairs]
    return {m: s for m, s in first.items() if not any(m in p for p in others)}


# -- ZSCAN --------------------------------------------------------------------------------
_scan_indexes: dict[int, ScanIndex] = {}


@command("zscan")
def zscan(c, argv):
    cursor = parse_cursor(argv[2])
    if cursor is None:
        raise ErrorReply(b"ERR invalid cursor")
    z = get_zset(c.db, argv[1])
    if z is None:
        return [b"0", []]
    count = 10
    match = None
    j = 3
    argc = len(argv)
    while j < argc:
        opt = argv[j].lower()
        if opt == b"count" and j + 1 < argc:
            count = parse_int(argv[j + 1])
            if count < 1:
                raise errors.SYNTAX
        elif opt == b"match" and j + 1 < argc:
            match = argv[j + 1]
        else:
            raise errors.SYNTAX
        j += 2
    if z.listpack:
        out: list = []
        for score, member in z.sl:
            if match is None or match == b"*" or stringmatch(match, member):
                out.append(member)
                out.append(format_double(score))
        return [b"0", out]
    index = _scan_indexes.get(id(z))
    if index is None or index.source is not z.scores:
        if len(_scan_indexes) > 64:
            _scan_indexes.clear()
        index = _scan_indexes[id(z)] = ScanIndex()
    scores = z.scores
    nxt, members = scan(scores, cursor, count, index=index, match=match)
    out = []
    for m in members:
        out.append(m)
        out.append(format_double(scores[m]))
    return [b"%d" % nxt, out]


# -- movable keys -------------------------------------------------------------------------
def _numkeys_keys(first: int, with_dst: bool):
    def keys(argv: list[bytes]) -> list[int]:
        n = to_int(argv[first]) if len(argv) > first else None
        if n is None or n < 1:
            return []
        idx = list(range(first + 1, min(len(argv), first + 1 + n)))
        return ([1] + idx) if with_dst else idx
    return keys


for _name in ("zunion", "zinter", "zdiff", "zintercard", "zmpop"):
    _cmd = TABLE.lookup_path(_name)
    if _cmd is not None:
        _cmd.get_keys = _numkeys_keys(1, False)
for _name in ("zunionstore", "zinterstore", "zdiffstore"):
    _cmd = TABLE.lookup_path(_name)
    if _cmd is not None:
        _cmd.get_keys = _numkeys_keys(2, True)


# -- blocking pops ------------------------------------------------------------------------
def _serve_zpop(pop_max: bool, count: int | None):
    """Finish a parked BZPOPMIN/BZPOPMAX (count None) or BZMPOP when a zset appears."""

    def serve(c: Any, key: bytes, value: Any) -> bool:
        if type(value) is not ZSet or not value.scores:
            return False
        c.add_reply(_zpop_reply(c, key, value, pop_max, count, True))
        return True

    return serve


def _zpop_reply(c: Any, key: bytes, z: ZSet, pop_max: bool, count: int | None,
                served: bool = False) -> list:
    """Pop for BZPOPMIN/BZPOPMAX/BZMPOP, logged as the non-blocking pop Redis 7.0 logs."""
    if count is None:
        score, member = pop_items(c, key, z, 1, pop_max)[0]
        effect = [_POP_EFFECT[pop_max], key]
        reply = [key, member, score]
    else:
        items = pop_items(c, key, z, count, pop_max)
        effect = [_POP_EFFECT[pop_max], key, b"%d" % len(items)]
        reply = mpop_reply(key, items)
    if served:
        c.propagate_now(effect)
    else:
        c.propagate_as(effect)
    return reply


def _blocking_zpop(c: Any, keys: list[bytes], pop_max: bool, timeout_arg: bytes,
                   count: int | None) -> Any:
    deadline = parse_timeout(timeout_arg)
    found = first_nonempty_zset(c, keys)
    if found is not None:
        return _zpop_reply(c, found[0], found[1], pop_max, count)
    if c.deny_blocking:
        return NULL_ARRAY
    return block_for_keys(c, keys, deadline, _serve_zpop(pop_max, count))


@command("bzpopmin")
def bzpopmin(c, argv):
    return _blocking_zpop(c, argv[1:-1], False, argv[-1], None)


@command("bzpopmax")
def bzpopmax(c, argv):
    return _blocking_zpop(c, argv[1:-1], True, argv[-1], None)


@command("bzmpop")
def bzmpop(c, argv):
    keys, pop_max, count = parse_mpop(argv, 2)
    return _blocking_zpop(c, keys, pop_max, argv[1], count)


_cmd = TABLE.lookup_path("bzmpop")
if _cmd is not None:
    _cmd.get_keys = _numkeys_keys(2, False)
