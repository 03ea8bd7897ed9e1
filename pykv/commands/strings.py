"""String commands. Values are ``bytes`` (``bytearray`` once modified in place: "raw")."""
from __future__ import annotations

from pykv import errors
from pykv.commands.args import LLONG_MAX, LLONG_MIN, to_int
from pykv.commands.registry import command
from pykv.protocol import OK


def get_string(db, key: bytes):
    """The string at ``key`` (None if missing); WRONGTYPE for other types."""
    value = db.get(key)
    if value is None or type(value) is bytes or type(value) is bytearray:
        return value
    raise errors.WRONGTYPE


@command("get")
def get(c, argv):
    return get_string(c.db, argv[1])


@command("set")
def set_(c, argv):
    if len(argv) == 3:
        c.db.set(argv[1], argv[2])
        return OK
    raise errors.SYNTAX


@command("incr")
def incr(c, argv):
    return incr_by(c.db, argv[1], 1)


def incr_by(db, key: bytes, delta: int) -> int:
    value = get_string(db, key)
    if value is None:
        current = 0
    else:
        current = to_int(bytes(value))
        if current is None:
            raise errors.NOT_INTEGER
    new = current + delta
    if new > LLONG_MAX or new < LLONG_MIN:
        raise errors.INCR_OVERFLOW
    if value is None:
        db.set(key, b"%d" % new)
    else:
        db.replace_value(key, b"%d" % new)
    return new


@command("mset")
def mset(c, argv):
    if len(argv) % 2 == 0:
        raise errors.wrong_arity("mset")
    db = c.db
    for i in range(1, len(argv), 2):
        db.set(argv[i], argv[i + 1])
    return OK
