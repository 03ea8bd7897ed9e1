"""String commands: GET/SET and their variants, counters, ranges, APPEND, LCS.

Values are ``bytes`` as received (Redis's int/embstr/raw encodings follow from the content,
see ``pykv.storage.values.string_encoding``) and become ``bytearray`` once APPEND or
SETRANGE changed them in place, which Redis reports as ``raw``. Replies never hand out a
stored ``bytearray`` (a queued EXEC reply must not change when the value does later).

Argument handling follows Redis 7.0's ``t_string.c`` order of checks, because the order
decides which error a bad command gets. GET and 3-argument SET are the benchmark hot path:
they stay short and call nothing they do not need.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.commands._counter import counter_add
from pykv.commands.args import LLONG_MAX, LLONG_MIN, to_int
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply
from pykv.protocol._parser import string2ll
from pykv.protocol._writer import write_integer_text
from pykv.server.client import NO_REPLY
from pykv.server.notify import notify
from pykv.storage._numeric import incrbyfloat as _ld_incrbyfloat
from pykv.storage._numeric import lcs as _lcs

_NO_SUCH_KEY_STRING = ErrorReply(b"ERR The specified keys must contain string values")
_LCS_IDX_AND_LEN = ErrorReply(
    b"ERR If you want both the length and indexes, please just use IDX.")
_DECREMENT_OVERFLOW = ErrorReply(b"ERR decrement would overflow")

# option flags of SET / GETEX (Redis's OBJ_* bits)
NX, XX, GET, KEEPTTL, PERSIST, EX, PX, EXAT, PXAT = (1 << i for i in range(9))
_ANY_EXPIRE = EX | PX | EXAT | PXAT


# -- lookups shared with other families ---------------------------------------------------
def lookup_read(c: Any, key: bytes, touch: bool = True, notify_miss: bool = True) -> Any:
    """Redis's ``lookupKeyRead``: the live value or None, counting a keyspace hit or miss.

    A miss also raises the ``keymiss`` keyspace event (class ``m``) unless ``notify_miss``
    is False (Redis's LOOKUP_NONOTIFY, used by OBJECT).
    """
    value = c.db.get(key, touch)
    server = c.server
    if value is None:
        server.stat_keyspace_misses += 1
        if notify_miss and server.keyspace_notifier is not None:
            notify(server, "m", b"keymiss", key, c.db.id)
    else:
        server.stat_keyspace_hits += 1
    return value


def get_string(db: Any, key: bytes) -> bytes | bytearray | None:
    """The string at ``key`` (None if missing); WRONGTYPE for other types. No statistics."""
    value = db.get(key)
    if value is None or type(value) is bytes or type(value) is bytearray:
        return value
    raise errors.WRONGTYPE


def read_string(c: Any, key: bytes) -> bytes | bytearray | None:
    """``get_string`` with Redis's read-lookup statistics (what GET-like commands use)."""
    value = lookup_read(c, key)
    if value is None or type(value) is bytes or type(value) is bytearray:
        return value
    raise errors.WRONGTYPE


def _reply(value: bytes | bytearray) -> bytes:
    return bytes(value) if type(value) is bytearray else value


def _string_or_wrongtype(value: Any) -> None:
    if type(value) is not bytes and type(value) is not bytearray:
        raise errors.WRONGTYPE


def _changed(c: Any, klass: str, event: bytes, key: bytes) -> None:
    server = c.server
    server.dirty += 1
    if server.keyspace_notifier is not None:
        notify(server, klass, event, key, c.db.id)


# -- GET / SET --------------------------------------------------------------------------
@command("get")
def get(c, argv):
    return _get(c, argv[1])


def _get(c: Any, key: bytes) -> Any:
    # typed in strings.pxd: ``db`` is a C-level Database, its ``get`` a C call
    db = c.db
    value = db.get(key)
    server = c.server
    if value is None:
        server.stat_keyspace_misses += 1
        if server.keyspace_notifier is not None:
            notify(server, "m", b"keymiss", key, db.id)
        return None
    server.stat_keyspace_hits += 1
    if type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytes(value)
    raise errors.WRONGTYPE


@command("set")
def set_(c, argv):
    if len(argv) == 3:
        return _set_plain(c, argv[1], argv[2])
    flags, expire = parse_string_options(argv, 3, True)
    reply = set_generic(c, flags, argv[1], argv[2], expire, OK, None)
    if flags & GET and expire is None:  # logged without GET, as Redis 7.0
        c.propagate_as([arg for i, arg in enumerate(argv)
                        if i < 3 or arg.lower() != b"get"])
    return reply


def _set_plain(c: Any, key: bytes, value: bytes) -> Any:
    """SET key value (typed in strings.pxd, like ``_get``)."""
    db = c.db
    db.set(key, value)
    server = c.server
    server.dirty += 1
    if server.keyspace_notifier is not None:
        notify(server, "$", b"set", key, db.id)
    return OK


def _option_name(arg: bytes) -> bytes:
    # Redis compares options as C strings: they end at the first NUL byte
    if b"\0" in arg:
        arg = arg.split(b"\0", 1)[0]
    return arg.lower()


def parse_string_options(argv: list[bytes], start: int,
                         is_set: bool) -> tuple[int, tuple[int, bytes] | None]:
    """SET's (``is_set``) or GETEX's options: ``(flags, (unit_flag, expire_arg) or None)``.

    Mirrors Redis's ``parseExtendedStringArgumentsOrReply``: an option that conflicts with
    one already given, or an expiry with no value after it, is a syntax error.
    """
    flags = 0
    expire: tuple[int, bytes] | None = None
    j = start
    n = len(argv)
    while j < n:
        opt = _option_name(argv[j])
        has_next = j < n - 1
        if opt == b"nx" and is_set and not flags & XX:
            flags |= NX
        elif opt == b"xx" and is_set and not flags & NX:
            flags |= XX
        elif opt == b"get" and is_set:
            flags |= GET
        elif opt == b"keepttl" and is_set and not flags & (PERSIST | _ANY_EXPIRE):
            flags |= KEEPTTL
        elif opt == b"persist" and not is_set and not flags & (KEEPTTL | _ANY_EXPIRE):
            flags |= PERSIST
        elif opt in _EXPIRE_OPTIONS and has_next \
                and not flags & (KEEPTTL | PERSIST | (_ANY_EXPIRE & ~_EXPIRE_OPTIONS[opt])):
            unit = _EXPIRE_OPTIONS[opt]
            flags |= unit
            expire = (unit, argv[j + 1])
            j += 1
        else:
            raise errors.SYNTAX
        j += 1
    return flags, expire


_EXPIRE_OPTIONS = {b"ex": EX, b"px": PX, b"exat": EXAT, b"pxat": PXAT}


def expire_ms(c: Any, unit: int, arg: bytes, name: str) -> int:
    """Redis's ``getExpireMillisecondsOrReply``: the absolute expiry in ms for SET/GETEX."""
    value = to_int(arg)
    if value is None:
        raise errors.NOT_INTEGER
    seconds = unit == EX or unit == EXAT
    if value <= 0 or (seconds and value > LLONG_MAX // 1000):
        raise errors.invalid_expire(name)
    if seconds:
        value *= 1000
    if unit == EX or unit == PX:
        value += c.server.clock.ms
        if value > LLONG_MAX:  # C overflow wraps negative
            value -= 1 << 64
    if value <= 0:
        raise errors.invalid_expire(name)
    return value


def set_generic(c: Any, flags: int, key: bytes, value: bytes,
                expire: tuple[int, bytes] | None, ok_reply: Any, abort_reply: Any,
                name: str = "set") -> Any:
    """Redis's ``setGenericCommand`` (SET with options, SETNX, SETEX, PSETEX)."""
    when = expire_ms(c, expire[0], expire[1], name) if expire is not None else 0
    db = c.db
    old = None
    if flags & GET:
        old = lookup_read(c, key)
        if old is not None:
            _string_or_wrongtype(old)
            old = _reply(old)
    found = db.get(key) is not None
    if (flags & NX and found) or (flags & XX and not found):
        return old if flags & GET else abort_reply
    db.set(key, value, keep_ttl=bool(flags & KEEPTTL))
    _changed(c, "$", b"set", key)
    if expire is not None:
        db.set_expire(key, when)
        if c.server.keyspace_notifier is not None:
            notify(c.server, "g", b"expire", key, db.id)
        # logged with an absolute time so that replaying the AOF gives the same TTL
        c.propagate_as([b"SET", key, value, b"PXAT", b"%d" % when])
    return old if flags & GET else ok_reply


@command("setnx")
def setnx(c, argv):
    return set_generic(c, NX, argv[1], argv[2], None, 1, 0)


@command("setex")
def setex(c, argv):
    return set_generic(c, 0, argv[1], argv[3], (EX, argv[2]), OK, None, "setex")


@command("psetex")
def psetex(c, argv):
    return set_generic(c, 0, argv[1], argv[3], (PX, argv[2]), OK, None, "psetex")


@command("getex")
def getex(c, argv):
    flags, expire = parse_string_options(argv, 2, False)
    key = argv[1]
    value = lookup_read(c, key)
    if value is None:
        return None
    _string_or_wrongtype(value)
    when = expire_ms(c, expire[0], expire[1], "getex") if expire is not None else 0
    db = c.db
    reply = _reply(value)
    if flags & (EXAT | PXAT) and when <= c.server.clock.ms and \
            getattr(c.server, "master_link", None) is None:  # (a replica keeps it)
        db.delete(key)
        _changed(c, "g", b"del", key)
        c.propagate_as([b"UNLINK" if c.server.config.lazyfree_lazy_expire else b"DEL", key])
    elif expire is not None:
        db.set_expire(key, when)
        _changed(c, "g", b"expire", key)
        c.propagate_as([b"PEXPIREAT", key, b"%d" % when])
    elif flags & PERSIST:
        if db.persist(key):
            _changed(c, "g", b"persist", key)
            c.propagate_as([b"PERSIST", key])
    return reply


@command("getdel")
def getdel(c, argv):
    key = argv[1]
    value = read_string(c, key)
    if value is None:
        return None
    c.db.delete(key)
    _changed(c, "g", b"del", key)
    c.propagate_as([b"UNLINK" if c.server.config.lazyfree_lazy_user_del else b"DEL", key])
    return _reply(value)


@command("getset")
def getset(c, argv):
    key = argv[1]
    old = read_string(c, key)
    c.db.set(key, argv[2])
    _changed(c, "$", b"set", key)
    return None if old is None else _reply(old)


@command("mget")
def mget(c, argv):
    out = []
    for key in argv[1:]:
        value = lookup_read(c, key)
        if type(value) is bytes:
            out.append(value)
        elif type(value) is bytearray:
            out.append(bytes(value))
        else:
            out.append(None)
    return out


@command("mset")
def mset(c, argv):
    if len(argv) % 2 == 0:
        raise errors.wrong_arity("mset")
    return _mset(c, argv)


def _mset(c: Any, argv: list[bytes]) -> Any:
    """MSET's stores (typed in strings.pxd, like ``_set_plain``)."""
    db = c.db
    server = c.server
    n = len(argv)
    for i in range(1, n, 2):
        key = argv[i]
        db.set(key, argv[i + 1])
        server.dirty += 1
        if server.keyspace_notifier is not None:
            notify(server, "$", b"set", key, db.id)
    return OK


@command("msetnx")
def msetnx(c, argv):
    if len(argv) % 2 == 0:
        raise errors.wrong_arity("msetnx")
    db = c.db
    for i in range(1, len(argv), 2):
        if db.get(argv[i]) is not None:
            return 0
    for i in range(1, len(argv), 2):
        db.set(argv[i], argv[i + 1])
        _changed(c, "$", b"set", argv[i])
    return 1


# -- length, ranges, APPEND ---------------------------------------------------------------
@command("strlen")
def strlen(c, argv):
    value = read_string(c, argv[1])
    return 0 if value is None else len(value)


def _check_length(c: Any, size: int, extra: int) -> None:
    """Redis's ``checkStringLength``: results over proto-max-bulk-len are refused."""
    if size + extra > c.server.config.proto_max_bulk_len:
        raise errors.STRING_TOO_LONG


@command("append")
def append(c, argv):
    key, extra = argv[1], argv[2]
    db = c.db
    value = db.get(key)
    if value is None:
        db.set(key, extra)
        total = len(extra)
    else:
        _string_or_wrongtype(value)
        _check_length(c, len(value), len(extra))
        if type(value) is bytearray:
            value += extra
            db.modified(key)
        else:
            value = bytearray(value)
            value += extra
            db.unshare(key, value)
            db.modified(key)
        total = len(value)
    _changed(c, "$", b"append", key)
    return total


@command("getrange", "substr")
def getrange(c, argv):
    start = to_int(argv[2])
    end = to_int(argv[3])
    if start is None or end is None:
        raise errors.NOT_INTEGER
    value = read_string(c, argv[1])
    if value is None:
        return b""
    n = len(value)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(n + start, 0)
    if end < 0:
        end = max(n + end, 0)
    if end >= n:
        end = n - 1
    if start > end or n == 0:
        return b""
    return bytes(value[start:end + 1])


@command("setrange")
def setrange(c, argv):
    key, patch = argv[1], argv[3]
    offset = to_int(argv[2])
    if offset is None:
        raise errors.NOT_INTEGER
    if offset < 0:
        raise errors.OFFSET_OUT_OF_RANGE
    db = c.db
    value = db.get(key)
    if value is None:
        if not patch:
            return 0
        _check_length(c, offset, len(patch))
        value = bytearray(offset)
        value += patch
        db.set(key, value)
    else:
        _string_or_wrongtype(value)
        if not patch:
            return len(value)
        _check_length(c, offset, len(patch))
        if type(value) is not bytearray:
            value = bytearray(value)
            db.unshare(key, value)
        db.modified(key)
        if len(value) < offset:
            value += bytes(offset - len(value))
        value[offset:offset + len(patch)] = patch
    _changed(c, "$", b"setrange", key)
    return len(value)


# -- counters ---------------------------------------------------------------------------
def _incr_command(c: Any, key: bytes, delta: int) -> Any:
    """INCR/DECR/INCRBY/DECRBY (Redis's incrDecrCommand), one of the hottest paths: the
    arithmetic is C (``counter_add``) and the reply goes into the output buffer from the
    new value's digits when it is written as it is (not a script's or a CLIENT REPLY one)."""
    db = c.db
    value = db.get(key)
    new = counter_add(value, delta)
    if value is None:
        db.set(key, new)
    elif type(value) is bytes:  # int-encoded before and after: the same memory estimate
        db.replace_counter(key, new)
    else:
        db.replace_value(key, new)
    server = c.server
    server.dirty += 1
    if server.keyspace_notifier is not None:
        notify(server, "$", b"incrby", key, db.id)
    if c.reply_mode == 0:
        write_integer_text(c.out, new)
        return NO_REPLY
    return string2ll(new)


@command("incr")
def incr(c, argv):
    return _incr_command(c, argv[1], 1)


@command("decr")
def decr(c, argv):
    return _incr_command(c, argv[1], -1)


@command("incrby")
def incrby(c, argv):
    delta = to_int(argv[2])
    if delta is None:
        raise errors.NOT_INTEGER
    return _incr_command(c, argv[1], delta)


@command("decrby")
def decrby(c, argv):
    delta = to_int(argv[2])
    if delta is None:
        raise errors.NOT_INTEGER
    if delta == LLONG_MIN:
        raise _DECREMENT_OVERFLOW
    return _incr_command(c, argv[1], -delta)


@command("incrbyfloat")
def incrbyfloat(c, argv):
    key = argv[1]
    db = c.db
    value = db.get(key)
    if value is not None:
        _string_or_wrongtype(value)
    status, text = _ld_incrbyfloat(value, argv[2])
    if status == 1 or status == 2:
        raise errors.NOT_FLOAT
    if status == 3:
        raise errors.INCR_NAN_OR_INF
    if value is None:
        db.set(key, text)
    else:
        db.replace_value(key, text)
    _changed(c, "$", b"incrbyfloat", key)
    # the result, not the increment: float rounding must not differ on replay
    c.propagate_as([b"SET", key, text, b"KEEPTTL"])
    return text


# -- LCS --------------------------------------------------------------------------------
@command("lcs")
def lcs(c, argv):
    a = lookup_read(c, argv[1])
    b = lookup_read(c, argv[2])
    if (a is not None and type(a) is not bytes and type(a) is not bytearray) or \
            (b is not None and type(b) is not bytes and type(b) is not bytearray):
        raise _NO_SUCH_KEY_STRING
    want_idx = want_len = with_len = False
    min_len = 0
    j, n = 3, len(argv)
    while j < n:
        opt = _option_name(argv[j])
        if opt == b"idx":
            want_idx = True
        elif opt == b"len":
            want_len = True
        elif opt == b"withmatchlen":
            with_len = True
        elif opt == b"minmatchlen" and j < n - 1:
            min_len = to_int(argv[j + 1])
            if min_len is None:
                raise errors.NOT_INTEGER
            min_len = max(min_len, 0)
            j += 1
        else:
            raise errors.SYNTAX
        j += 1
    if want_idx and want_len:
        raise _LCS_IDX_AND_LEN
    length, text, ranges = _lcs(a or b"", b or b"", not want_len, want_idx, min_len, with_len)
    if want_idx:
        matches = [[list(ar), list(br), ml] if with_len else [list(ar), list(br)]
                   for ar, br, ml in ranges]
        return {b"matches": matches, b"len": length}
    if want_len:
        return length
    return text
