"""List commands, including the blocking ones (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP).

Lists are ``pykv.storage.list_type.ListValue`` (a deque). Each handler follows Redis 7.0's
``t_list.c`` order of checks (which argument is parsed before the key is looked up matters
for which error wins), its keyspace events and its ``dirty`` accounting. An emptied list is
deleted (event ``del``). Blocking variants park the client through
``pykv.server.blocking`` when every key is empty; the ``serve_*`` closures finish the
command when a key is pushed to.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.commands.args import LLONG_MAX, to_int
from pykv.commands.registry import command
from pykv.protocol import NULL_ARRAY, OK, ErrorReply
from pykv.protocol._writer import write_integer_reply
from pykv.server.blocking import block_for_keys, parse_timeout
from pykv.server.client import NO_REPLY
from pykv.server.notify import notify
from pykv.storage.list_type import ListValue

NO_SUCH_KEY = errors.NO_SUCH_KEY
INDEX_OUT_OF_RANGE = ErrorReply(b"ERR index out of range")
NUMKEYS_POSITIVE = ErrorReply(b"ERR numkeys should be greater than 0")
COUNT_POSITIVE = ErrorReply(b"ERR count should be greater than 0")
RANK_ZERO = ErrorReply(
    b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
    b"or use negative to start from the end of the list")
COUNT_NEGATIVE = ErrorReply(b"ERR COUNT can't be negative")
MAXLEN_NEGATIVE = ErrorReply(b"ERR MAXLEN can't be negative")

_WRONGTYPE = errors.WRONGTYPE


# -- helpers ---------------------------------------------------------------------------------
def get_list(db: Any, key: bytes) -> ListValue | None:
    """The list at ``key`` (None if missing); WRONGTYPE for other types."""
    value = db.get(key)
    if value is None or type(value) is ListValue:
        return value
    raise _WRONGTYPE


def _int_arg(arg: bytes) -> int:
    value = to_int(arg)
    if value is None:
        raise errors.NOT_INTEGER
    return value


def _positive(arg: bytes, err: ErrorReply) -> int:
    """``getPositiveLongFromObjectOrReply`` with Redis's message for both failures."""
    value = to_int(arg)
    if value is None or value < 0:
        raise err
    return value


def _where(arg: bytes) -> bool:
    """LEFT -> True, RIGHT -> False; syntax error otherwise."""
    low = arg.lower()
    if low == b"left":
        return True
    if low == b"right":
        return False
    raise errors.SYNTAX


def _removed(c: Any, key: bytes, value: ListValue, left: bool, count: int) -> None:
    """``listElementsRemoved``: events, deletion of an emptied list, dirty."""
    db = c.db
    server = c.server
    notifying = server.keyspace_notifier is not None
    if notifying:
        notify(server, "l", b"lpop" if left else b"rpop", key, db.id)
    if not value.items:
        db.delete(key)
        if notifying:
            notify(server, "g", b"del", key, db.id)
    else:
        db.modified(key)
    server.dirty += count


def _push(c: Any, argv: list[bytes], left: bool, only_existing: bool) -> Any:
    """LPUSH/RPUSH/LPUSHX/RPUSHX of ``argv[2:]``; the new length goes into the output buffer
    as it is when the reply does (not a script's or a CLIENT REPLY one), before the keyspace
    event (a RESP3 client subscribed to it gets them in Redis's order)."""
    key = argv[1]
    db = c.db
    value = db.get(key)
    if value is None:
        if only_existing:
            return 0
        value = ListValue()
        _add(value.items, argv, left)
        value.settle()
        db.set(key, value)
    elif type(value) is ListValue:
        _add(value.items, argv, left)
        value.settle()
        db.modified(key)
    else:
        raise _WRONGTYPE
    server = c.server
    server.dirty += len(argv) - 2
    length = len(value.items)
    reply: Any = length
    if c.reply_mode == 0:
        write_integer_reply(c.out, length)
        reply = NO_REPLY
    if server.keyspace_notifier is not None:  # after the reply, as Redis's pushGenericCommand
        notify(server, "l", b"lpush" if left else b"rpush", key, db.id)
    return reply


def _add(items: Any, argv: list[bytes], left: bool) -> None:
    """Push ``argv[2:]`` (one element without the slice, the benchmarked case)."""
    if len(argv) == 3:
        if left:
            items.appendleft(argv[2])
        else:
            items.append(argv[2])
    elif left:
        items.extendleft(argv[2:])
    else:
        items.extend(argv[2:])


# -- push ------------------------------------------------------------------------------------
@command("lpush")
def lpush(c, argv):
    return _push(c, argv, True, False)


@command("rpush")
def rpush(c, argv):
    return _push(c, argv, False, False)


@command("lpushx")
def lpushx(c, argv):
    return _push(c, argv, True, True)


@command("rpushx")
def rpushx(c, argv):
    return _push(c, argv, False, True)


# -- pop -------------------------------------------------------------------------------------
def _pop(c: Any, argv: list[bytes], left: bool) -> Any:
    if len(argv) == 2:  # the plain form, kept short
        key = argv[1]
        value = c.db.get(key)
        if value is None:
            return None
        if type(value) is not ListValue:
            raise _WRONGTYPE
        elem = value.items.popleft() if left else value.items.pop()
        _removed(c, key, value, left, 1)
        return elem
    if len(argv) > 3:
        raise errors.wrong_arity("lpop" if left else "rpop")
    has_count = len(argv) == 3
    count = _positive(argv[2], errors.NOT_POSITIVE_COUNT) if has_count else 0
    key = argv[1]
    value = get_list(c.db, key)
    if value is None:
        return NULL_ARRAY if has_count else None
    if has_count and not count:
        return []
    if not has_count:
        elem = value.items.popleft() if left else value.items.pop()
        _removed(c, key, value, left, 1)
        return elem
    out = value.pop_many(count, left)
    _removed(c, key, value, left, len(out))
    return out


@command("lpop")
def lpop(c, argv):
    return _pop(c, argv, True)


@command("rpop")
def rpop(c, argv):
    return _pop(c, argv, False)


# -- reads -----------------------------------------------------------------------------------
@command("llen")
def llen(c, argv):
    value = get_list(c.db, argv[1])
    return 0 if value is None else len(value.items)


@command("lindex")
def lindex(c, argv):
    value = get_list(c.db, argv[1])
    if value is None:
        return None
    index = _int_arg(argv[2])
    items = value.items
    n = len(items)
    if index < 0:
        index += n
    if 0 <= index < n:
        return items[index]
    return None


@command("lrange")
def lrange(c, argv):
    start = _int_arg(argv[2])
    stop = _int_arg(argv[3])
    value = get_list(c.db, argv[1])
    if value is None:
        return []
    bounds = value.normalise_range(start, stop)
    if bounds is None:
        return []
    if c.reply_mode == 0:  # the reply goes to the output buffer as it is (not a script's)
        value.write_slice(c.out, bounds[0], bounds[1])
        return NO_REPLY
    return value.slice(bounds[0], bounds[1])


@command("lpos")
def lpos(c, argv):
    element = argv[2]
    rank, count, maxlen = 1, -1, 0
    i, n = 3, len(argv)
    while i < n:
        opt = argv[i].lower()
        more = i + 1 < n
        if opt == b"rank" and more:
            i += 1
            rank = _int_arg(argv[i])
            if rank == -LLONG_MAX - 1:
                rank = -1  # Redis negates it in place: still negative, every match counts
            if rank == 0:
                raise RANK_ZERO
        elif opt == b"count" and more:
            i += 1
            count = _positive(argv[i], COUNT_NEGATIVE)
        elif opt == b"maxlen" and more:
            i += 1
            maxlen = _positive(argv[i], MAXLEN_NEGATIVE)
        else:
            raise errors.SYNTAX
        i += 1
    value = get_list(c.db, argv[1])
    if value is None:
        return [] if count != -1 else None
    items = value.items
    size = len(items)
    forward = rank > 0
    rank = abs(rank)
    limit = size if maxlen == 0 else min(maxlen, size)
    found: list[int] = []
    want = rank - 1 + (count if count > 0 else size) if count != -1 else rank
    matches = 0
    if forward:
        pos = 0
        while pos < limit:
            try:
                pos = items.index(element, pos, limit)
            except ValueError:
                break
            matches += 1
            if matches >= rank:
                found.append(pos)
                if matches >= want:
                    break
            pos += 1
    else:
        idx = size - 1
        stop = size - limit
        for elem in reversed(items):
            if idx < stop:
                break
            if elem == element:
                matches += 1
                if matches >= rank:
                    found.append(idx)
                    if matches >= want:
                        break
            idx -= 1
    if count != -1:
        return found
    return found[0] if found else None


# -- in-place edits ---------------------------------------------------------------------------
@command("linsert")
def linsert(c, argv):
    where = argv[2].lower()
    if where == b"before":
        after = False
    elif where == b"after":
        after = True
    else:
        raise errors.SYNTAX
    key = argv[1]
    value = get_list(c.db, key)
    if value is None:
        return 0
    items = value.items
    try:
        pos = items.index(argv[3])
    except ValueError:
        return -1
    items.insert(pos + 1 if after else pos, argv[4])
    c.db.modified(key)
    notify(c.server, "l", b"linsert", key, c.db.id)
    c.server.dirty += 1
    return len(items)


@command("lset")
def lset(c, argv):
    key = argv[1]
    value = c.db.get(key)
    if value is None:
        raise NO_SUCH_KEY
    if type(value) is not ListValue:
        raise _WRONGTYPE
    index = _int_arg(argv[2])
    items = value.items
    n = len(items)
    if index < 0:
        index += n
    if not 0 <= index < n:
        raise INDEX_OUT_OF_RANGE
    items[index] = argv[3]
    c.db.modified(key)
    notify(c.server, "l", b"lset", key, c.db.id)
    c.server.dirty += 1
    return OK


@command("ltrim")
def ltrim(c, argv):
    start = _int_arg(argv[2])
    stop = _int_arg(argv[3])
    key = argv[1]
    db = c.db
    value = get_list(db, key)
    if value is None:
        return OK
    bounds = value.normalise_range(start, stop)
    removed = value.trim(*bounds) if bounds is not None else value.trim(1, 0)
    notify(c.server, "l", b"ltrim", key, db.id)
    if not value.items:
        db.delete(key)
        notify(c.server, "g", b"del", key, db.id)
    else:
        db.modified(key)
    c.server.dirty += removed
    return OK


@command("lrem")
def lrem(c, argv):
    count = _int_arg(argv[2])
    key = argv[1]
    db = c.db
    value = get_list(db, key)
    if value is None:
        return 0
    element = argv[3]
    items = value.items
    n = len(items)
    if count == 0:
        kept = [e for e in items if e != element]
    else:
        kept = []
        budget = abs(count)
        source = items if count > 0 else reversed(items)
        for e in source:
            if budget and e == element:
                budget -= 1
                continue
            kept.append(e)
        if count < 0:
            kept.reverse()
    removed = n - len(kept)
    if removed:
        items.clear()
        items.extend(kept)
        notify(c.server, "l", b"lrem", key, db.id)
        if not items:
            db.delete(key)
            notify(c.server, "g", b"del", key, db.id)
        else:
            db.modified(key)
        c.server.dirty += removed
    return removed


# -- moves -----------------------------------------------------------------------------------
def _move(c: Any, src_key: bytes, src: ListValue, dst_key: bytes, left_from: bool,
          left_to: bool) -> bytes:
    """Pop from ``src`` (non-empty), push to ``dst_key`` (checked to be a list or absent).

    Redis's ``lmoveGenericCommand`` after its checks: the push (and its event) first, then
    the pop's event, then the source's deletion if it emptied.
    """
    db = c.db
    server = c.server
    elem = src.items.popleft() if left_from else src.items.pop()
    dst = db.get(dst_key)
    if dst is None:
        db.set(dst_key, ListValue((elem,)))
    else:
        if left_to:
            dst.items.appendleft(elem)
        else:
            dst.items.append(elem)
        db.modified(dst_key)
    notify(server, "l", b"lpush" if left_to else b"rpush", dst_key, db.id)
    notify(server, "l", b"lpop" if left_from else b"rpop", src_key, db.id)
    if not src.items:
        db.delete(src_key)
        notify(server, "g", b"del", src_key, db.id)
    else:
        db.modified(src_key)
    server.dirty += 1
    return elem


def _lmove(c: Any, src_key: bytes, dst_key: bytes, left_from: bool, left_to: bool) -> Any:
    db = c.db
    src = get_list(db, src_key)
    if src is None:
        return None
    get_list(db, dst_key)  # WRONGTYPE check on the destination
    return _move(c, src_key, src, dst_key, left_from, left_to)


@command("lmove")
def lmove(c, argv):
    left_from = _where(argv[3])
    left_to = _where(argv[4])
    return _lmove(c, argv[1], argv[2], left_from, left_to)


@command("rpoplpush")
def rpoplpush(c, argv):
    return _lmove(c, argv[1], argv[2], False, True)


# -- multi-key pops --------------------------------------------------------------------------
def _parse_mpop(argv: list[bytes], numkeys_idx: int) -> tuple[list[bytes], bool, int]:
    """LMPOP/BLMPOP arguments: (keys, left, count)."""
    numkeys = to_int(argv[numkeys_idx])
    if numkeys is None or numkeys < 1:
        raise NUMKEYS_POSITIVE
    where_idx = numkeys_idx + numkeys + 1
    if where_idx >= len(argv):
        raise errors.SYNTAX
    left = _where(argv[where_idx])
    count = -1
    i = where_idx + 1
    while i < len(argv):
        if count == -1 and argv[i].lower() == b"count" and i + 1 < len(argv):
            i += 1
            count = to_int(argv[i])
            if count is None or count < 1:
                raise COUNT_POSITIVE
        else:
            raise errors.SYNTAX
        i += 1
    return argv[numkeys_idx + 1:where_idx], left, (1 if count == -1 else count)


def _mpop_reply(c: Any, key: bytes, value: ListValue, left: bool, count: int) -> list:
    out = value.pop_many(count, left)
    _removed(c, key, value, left, len(out))
    return [key, out]


@command("lmpop")
def lmpop(c, argv):
    keys, left, count = _parse_mpop(argv, 1)
    db = c.db
    for key in keys:
        value = get_list(db, key)
        if value is not None and value.items:
            return _mpop_reply(c, key, value, left, count)
    return NULL_ARRAY


# -- blocking --------------------------------------------------------------------------------
def _serve_pop(left: bool, count: int | None):
    """Finish a parked BLPOP/BRPOP (count None) or BLMPOP when a key gets elements."""

    def serve(c: Any, key: bytes, value: Any) -> bool:
        if type(value) is not ListValue or not value.items:
            return False
        if count is None:
            elem = value.items.popleft() if left else value.items.pop()
            c.add_reply([key, elem])
            _removed(c, key, value, left, 1)
        else:
            c.add_reply(_mpop_reply(c, key, value, left, count))
        c.propagate_now(_pop_effect(key, left, count))
        return True

    return serve


def _pop_effect(key: bytes, left: bool, count: int | None) -> list[bytes]:
    """What a blocking pop is logged as in the AOF: the plain pop it performed."""
    cmd = [b"LPOP" if left else b"RPOP", key]
    return cmd if count is None else cmd + [b"%d" % count]


def _move_effect(src: bytes, dst: bytes, left_from: bool, left_to: bool) -> list[bytes]:
    return [b"LMOVE", src, dst, b"LEFT" if left_from else b"RIGHT",
            b"LEFT" if left_to else b"RIGHT"]


def _serve_move(dst_key: bytes, left_from: bool, left_to: bool):
    """Finish a parked BLMOVE/BRPOPLPUSH."""

    def serve(c: Any, key: bytes, value: Any) -> bool:
        if type(value) is not ListValue or not value.items:
            return False
        dst = c.db.get(dst_key)
        if dst is not None and type(dst) is not ListValue:
            c.add_reply(_WRONGTYPE)
            c.server.count_error(_WRONGTYPE)
            return True
        c.add_reply(_move(c, key, value, dst_key, left_from, left_to))
        c.propagate_now(_move_effect(key, dst_key, left_from, left_to))
        return True

    return serve


def _blocking_pop(c: Any, keys: list[bytes], left: bool, timeout_arg: bytes,
                  count: int | None) -> Any:
    deadline = parse_timeout(timeout_arg)
    db = c.db
    for key in keys:
        value = get_list(db, key)
        if value is None or not value.items:
            continue
        c.propagate_as(_pop_effect(key, left, count))
        if count is not None:
            return _mpop_reply(c, key, value, left, count)
        elem = value.items.popleft() if left else value.items.pop()
        _removed(c, key, value, left, 1)
        return [key, elem]
    if c.deny_blocking:
        return NULL_ARRAY
    return block_for_keys(c, keys, deadline, _serve_pop(left, count))


@command("blpop")
def blpop(c, argv):
    return _blocking_pop(c, argv[1:-1], True, argv[-1], None)


@command("brpop")
def brpop(c, argv):
    return _blocking_pop(c, argv[1:-1], False, argv[-1], None)


@command("blmpop")
def blmpop(c, argv):
    keys, left, count = _parse_mpop(argv, 2)
    return _blocking_pop(c, keys, left, argv[1], count)


def _blmove(c: Any, src_key: bytes, dst_key: bytes, left_from: bool, left_to: bool,
            timeout_arg: bytes) -> Any:
    deadline = parse_timeout(timeout_arg)
    src = get_list(c.db, src_key)
    if src is not None:
        c.propagate_as(_move_effect(src_key, dst_key, left_from, left_to))
        return _lmove(c, src_key, dst_key, left_from, left_to)
    if c.deny_blocking:
        return None
    return block_for_keys(c, [src_key], deadline, _serve_move(dst_key, left_from, left_to))


@command("blmove")
def blmove(c, argv):
    left_from = _where(argv[3])
    left_to = _where(argv[4])
    return _blmove(c, argv[1], argv[2], left_from, left_to, argv[5])


@command("brpoplpush")
def brpoplpush(c, argv):
    return _blmove(c, argv[1], argv[2], False, True, argv[3])
