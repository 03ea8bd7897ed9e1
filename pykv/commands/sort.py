"""SORT and SORT_RO over lists, sets and sorted sets, with Redis 7.0's exact rules.

Options parse left to right as Redis does; ``BY`` without ``*`` means "don't sort" (native
order, with LIMIT taken straight from the source); ``BY``/``GET`` patterns substitute the
element for the first ``*`` and may read a hash field after ``->``; numeric sorting breaks
ties by comparing the elements' bytes so results are deterministic; STORE writes a list.
"""
from __future__ import annotations

import re
from typing import Any

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.registry import TABLE, command
from pykv.protocol import ErrorReply
from pykv.server.notify import notify
from pykv.storage.zset_type import ZSet, strtod_whole

ERR_SCORES = ErrorReply(b"ERR One or more scores can't be converted into double")

_NONZERO_MANTISSA = re.compile(rb"[1-9]")


def _sort_score(data: bytes) -> float | None:
    """``strtod`` as SORT checks it: the whole string, no NaN, no overflow/underflow."""
    value = strtod_whole(data)
    if value is None or value != value:
        return None
    if value in (float("inf"), float("-inf")) and b"inf" not in data.lower():
        return None
    if abs(value) < 2.2250738585072014e-308:
        body = data.split(b"\0", 1)[0].lower()
        if body.startswith((b"0x", b"-0x", b"+0x")):
            mant = body.split(b"p")[0].split(b"x", 1)[1]
            if re.search(rb"[1-9a-f]", mant):
                return None
        elif _NONZERO_MANTISSA.search(body.split(b"e")[0]):
            return None
    return value


def lookup_by_pattern(db: Any, pattern: bytes, subst: bytes) -> bytes | None:
    """``lookupKeyByPattern``: ``#`` is the element; ``pre*post`` or ``pre*post->field``."""
    if pattern == b"#":
        return subst
    star = pattern.find(b"*")
    if star < 0:
        return None
    arrow = pattern.find(b"->", star + 1)
    field = None
    if arrow >= 0 and arrow + 2 < len(pattern):
        field = pattern[arrow + 2:]
        key = pattern[:star] + subst + pattern[star + 1:arrow]
    else:
        key = pattern[:star] + subst + pattern[star + 1:]
    value = db.get(key)
    if value is None:
        return None
    if field is not None:
        if getattr(value, "type_name", None) != b"hash":
            return None
        found = value.d.get(field)
        return None if found is None else bytes(found)
    if type(value) is bytes or type(value) is bytearray:
        return bytes(value)
    return None


@command("sort")
def sort(c, argv):
    return _sort(c, argv, False)


@command("sort_ro")
def sort_ro(c, argv):
    return _sort(c, argv, True)


def _sort(c: Any, argv: list[bytes], readonly: bool) -> Any:
    desc = alpha = dontsort = False
    limit_start, limit_count = 0, -1
    sortby: bytes | None = None
    store: bytes | None = None
    gets: list[bytes] = []
    argc = len(argv)
    j = 2
    while j < argc:
        opt = argv[j].lower()
        left = argc - j - 1
        if opt == b"asc":
            desc = False
        elif opt == b"desc":
            desc = True
        elif opt == b"alpha":
            alpha = True
        elif opt == b"limit" and left >= 2:
            limit_start = to_int(argv[j + 1])
            limit_count = to_int(argv[j + 2])
            if limit_start is None or limit_count is None:
                raise errors.NOT_INTEGER
            j += 2
        elif not readonly and opt == b"store" and left >= 1:
            store = argv[j + 1]
            j += 1
        elif opt == b"by" and left >= 1:
            sortby = argv[j + 1]
            dontsort = b"*" not in sortby.split(b"\0", 1)[0]
            j += 1
        elif opt == b"get" and left >= 1:
            gets.append(argv[j + 1])
            j += 1
        else:
            raise errors.SYNTAX
        j += 1
    db = c.db
    source = db.get(argv[1])
    kind = None if source is None else getattr(source, "type_name", b"string")
    if kind is not None and kind not in (b"list", b"set", b"zset"):
        raise errors.WRONGTYPE
    # a set's order is arbitrary: sorted when stored or returned to a script, as Redis
    if dontsort and kind == b"set" and (
            store is not None or getattr(c, "is_script_client", False)):
        dontsort, alpha, sortby = False, True, None
    if kind == b"zset":
        source.to_skiplist()  # Redis 7.0 converts a sorted set it sorts, for good
    length = 0 if source is None else len(source)
    start = max(limit_start, 0)
    end = length - 1 if limit_count < 0 else start + limit_count - 1
    if start >= length:
        start, end = length - 1, length - 2
    if end >= length:
        end = length - 1
    elements = _load(source, kind, dontsort, desc, start, end)
    if dontsort and kind in (b"list", b"zset"):
        end -= start
        start = 0
    conversion_error = False
    if not dontsort:
        keyed = []
        for elem in elements:
            byval = lookup_by_pattern(db, sortby, elem) if sortby is not None else elem
            if alpha:
                if sortby is None:
                    keyed.append((elem, elem))
                else:
                    keyed.append(((0, b"") if byval is None else (1, byval), elem))
                continue
            score = 0.0
            if byval is not None:
                parsed = _sort_score(byval)
                if parsed is None:
                    conversion_error = True
                else:
                    score = parsed
            keyed.append(((score, elem), elem))
        keyed.sort(key=lambda pair: pair[0], reverse=desc)
        elements = [elem for _, elem in keyed]
    if conversion_error:
        raise ERR_SCORES
    picked = elements[start:end + 1] if end >= start else []
    if store is None:
        if not gets:
            return picked
        out: list = []
        for elem in picked:
            for pattern in gets:
                out.append(lookup_by_pattern(db, pattern, elem))
        return out
    from pykv.storage.list_type import ListValue

    if gets:
        items = [lookup_by_pattern(db, p, e) or b"" for e in picked for p in gets]
    else:
        items = picked
    if items:
        db.set(store, ListValue(items))
        notify(c.server, "l", b"sortstore", store, db.id)
        c.server.dirty += len(items)
    elif db.delete(store):
        notify(c.server, "g", b"del", store, db.id)
        c.server.dirty += 1
    return len(items)


def _load(source: Any, kind: bytes | None, dontsort: bool, desc: bool, start: int,
          end: int) -> list[bytes]:
    """The elements to sort, in the order Redis loads them (ranges for "don't sort")."""
    if source is None:
        return []
    if kind == b"list":
        items = source.items
        if not dontsort:
            return list(items)
        if end < start:
            return []
        if desc:
            n = len(items)
            return [items[i] for i in range(n - 1 - start, n - 2 - end, -1)]
        return [items[i] for i in range(start, end + 1)]
    if kind == b"set":
        return list(source.ordered())
    z: ZSet = source
    if not dontsort:
        return list(z.scores)
    if end < start:
        return []
    n = len(z.sl)
    if desc:
        return [m for _, m in z.sl.islice(n - 1 - end, n - start, reverse=True)]
    return [m for _, m in z.sl.islice(start, end + 1)]


def _sort_keys(argv: list[bytes]) -> list[int]:
    keys = [1]
    for i in range(2, len(argv) - 1):
        if argv[i].lower() == b"store":
            keys.append(i + 1)
    return keys


_cmd = TABLE.lookup_path("sort")
if _cmd is not None:
    _cmd.get_keys = _sort_keys
