"""Bitmap commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD(_RO).

Bits are numbered from the most significant bit of byte 0, as in Redis. Writes turn the
stored ``bytes`` into a ``bytearray`` (Redis's "raw" encoding) and edit it in place; reads
accept either. Offsets obey ``proto-max-bulk-len`` the way Redis checks them.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.registry import command
from pykv.protocol import ErrorReply
from pykv.server.notify import notify

ERR_BIT_OFFSET = ErrorReply(b"ERR bit offset is not an integer or out of range")
ERR_BIT_VALUE = ErrorReply(b"ERR bit is not an integer or out of range")
ERR_BITPOS_BIT = ErrorReply(b"ERR The bit argument must be 1 or 0.")
ERR_BITOP_NOT = ErrorReply(b"ERR BITOP NOT must be called with a single source key.")
ERR_BITFIELD_TYPE = ErrorReply(
    b"ERR Invalid bitfield type. Use something like i16 u8. "
    b"Note that u64 is not supported but i64 is.")
ERR_OVERFLOW_TYPE = ErrorReply(b"ERR Invalid OVERFLOW type specified")
ERR_BITFIELD_RO = ErrorReply(b"ERR BITFIELD_RO only supports the GET subcommand")



def _read_string(db: Any, key: bytes) -> bytes | bytearray | None:
    value = db.get(key)
    if value is None or type(value) is bytes or type(value) is bytearray:
        return value
    raise errors.WRONGTYPE


def _bit_offset(c: Any, data: bytes, bits: int = 0) -> int:
    """``getBitOffsetFromArgument``: ``#N`` means N*bits when ``bits`` is given."""
    use_hash = bits > 0 and data[:1] == b"#"
    value = to_int(data[1:] if use_hash else data)
    if value is None:
        raise ERR_BIT_OFFSET
    if use_hash:
        value *= bits
    if value < 0 or (value >> 3) >= c.server.config.proto_max_bulk_len:
        raise ERR_BIT_OFFSET
    return value


def _string_for_write(c: Any, key: bytes, maxbit: int) -> tuple[bytearray, bool]:
    """``lookupStringForBitCommand``: the value as a bytearray grown to hold ``maxbit``."""
    db = c.db
    value = _read_string(db, key)
    need = (maxbit >> 3) + 1
    if value is None:
        buf = bytearray(need)
        db.set(key, buf)
        return buf, True
    if type(value) is bytes:
        value = bytearray(value)
        db.unshare(key, value)
    grown = len(value) < need
    if grown:
        value.extend(bytes(need - len(value)))
    return value, grown


# -- SETBIT / GETBIT ---------------------------------------------------------------------
@command("setbit")
def setbit(c, argv):
    offset = _bit_offset(c, argv[2])
    on = to_int(argv[3])
    if on is None or on & ~1:
        raise ERR_BIT_VALUE
    key = argv[1]
    buf, grown = _string_for_write(c, key, offset)
    byte = offset >> 3
    mask = 1 << (7 - (offset & 7))
    old = buf[byte] & mask
    if grown or bool(old) != bool(on):
        buf[byte] = (buf[byte] | mask) if on else (buf[byte] & ~mask)
        c.db.modified(key)
        notify(c.server, "$", b"setbit", key, c.db.id)
        c.server.dirty += 1
    return 1 if old else 0


@command("getbit")
def getbit(c, argv):
    offset = _bit_offset(c, argv[2])
    value = _read_string(c.db, argv[1])
    if value is None:
        return 0
    byte = offset >> 3
    if byte >= len(value):
        return 0
    return 1 if value[byte] & (1 << (7 - (offset & 7))) else 0


# -- BITCOUNT / BITPOS -------------------------------------------------------------------
def _long_long(data: bytes) -> int:
    value = to_int(data)
    if value is None:
        raise errors.NOT_INTEGER
    return value


def _unit(data: bytes) -> bool:
    """True for BIT, False for BYTE."""
    unit = data.lower()
    if unit == b"bit":
        return True
    if unit == b"byte":
        return False
    raise errors.SYNTAX


def _clamp(start: int, end: int, total: int) -> tuple[int, int]:
    if start < 0:
        start += total
    if end < 0:
        end += total
    start = max(start, 0)
    end = max(end, 0)
    if end >= total:
        end = total - 1
    return start, end


def popcount(data: bytes | bytearray) -> int:
    return int.from_bytes(data, "big").bit_count() if data else 0


@command("bitcount")
def bitcount(c, argv):
    value = _read_string(c.db, argv[1])
    if value is None:
        return 0
    argc = len(argv)
    if argc == 2:
        return popcount(value)
    if argc not in (4, 5):
        raise errors.SYNTAX
    start = _long_long(argv[2])
    end = _long_long(argv[3])
    isbit = _unit(argv[4]) if argc == 5 else False
    total = len(value) * (8 if isbit else 1)
    if start < 0 and end < 0 and start > end:
        return 0
    start, end = _clamp(start, end, total)
    if start > end:
        return 0
    if not isbit:
        return popcount(value[start:end + 1])
    chunk = int.from_bytes(value[start >> 3:(end >> 3) + 1], "big")
    width = ((end >> 3) - (start >> 3) + 1) * 8
    lead = start & 7
    trail = 7 - (end & 7)
    chunk &= (1 << (width - lead)) - 1
    return (chunk >> trail).bit_count()


@command("bitpos")
def bitpos(c, argv):
    bit = _long_long(argv[2])
    if bit != 0 and bit != 1:
        raise ERR_BITPOS_BIT
    value = _read_string(c.db, argv[1])
    if value is None:
        return -1 if bit else 0
    argc = len(argv)
    end_given = False
    if argc == 3:
        first_bit, last_bit = 0, len(value) * 8 - 1
    elif argc in (4, 5, 6):
        start = _long_long(argv[3])
        isbit = _unit(argv[5]) if argc == 6 else False
        if argc >= 5:
            end = _long_long(argv[4])
            end_given = True
        else:
            end = len(value) * 8 + 7 if isbit else len(value) - 1
        total = len(value) * (8 if isbit else 1)
        start, end = _clamp(start, end, total)
        if start > end:
            return -1
        if isbit:
            first_bit, last_bit = start, end
        else:
            first_bit, last_bit = start * 8, end * 8 + 7
    else:
        raise errors.SYNTAX
    if first_bit > last_bit:
        return -1
    pos = _find_bit(value, bit, first_bit, last_bit)
    if pos >= 0:
        return pos
    if bit == 1 or end_given:
        return -1
    return last_bit + 1


def _find_bit(value: bytes | bytearray, bit: int, first: int, last: int) -> int:
    """Position of the first bit equal to ``bit`` in [first, last], or -1."""
    lo, hi = first >> 3, last >> 3
    width = (hi - lo + 1) * 8
    chunk = int.from_bytes(value[lo:hi + 1], "big")
    if not bit:
        chunk = ~chunk & ((1 << width) - 1)
    chunk &= (1 << (width - (first & 7))) - 1  # drop bits before ``first``
    chunk >>= 7 - (last & 7)  # drop bits after ``last``
    if not chunk:
        return -1
    span = last - first + 1
    return first + span - chunk.bit_length()


# -- BITOP -------------------------------------------------------------------------------
@command("bitop")
def bitop(c, argv):
    op = argv[1].lower()
    if op not in (b"and", b"or", b"xor", b"not"):
        raise errors.SYNTAX
    if op == b"not" and len(argv) != 4:
        raise ERR_BITOP_NOT
    db = c.db
    sources = [_read_string(db, key) for key in argv[3:]]
    maxlen = max((len(s) for s in sources if s is not None), default=0)
    dst = argv[2]
    if not maxlen:
        if db.delete(dst):
            notify(c.server, "g", b"del", dst, db.id)
            c.server.dirty += 1
        return 0
    nums = [int.from_bytes(bytes(s or b"").ljust(maxlen, b"\0"), "big") for s in sources]
    if op == b"not":
        result = ~nums[0] & ((1 << (maxlen * 8)) - 1)
    else:
        result = nums[0]
        for n in nums[1:]:
            if op == b"and":
                result &= n
            elif op == b"or":
                result |= n
            else:
                result ^= n
    db.set(dst, bytearray(result.to_bytes(maxlen, "big")))
    notify(c.server, "$", b"set", dst, db.id)
    c.server.dirty += 1
    return maxlen


# -- BITFIELD ----------------------------------------------------------------------------
GET, SET, INCRBY = 0, 1, 2
WRAP, SAT, FAIL = 0, 1, 2
_OVERFLOWS = {b"wrap": WRAP, b"sat": SAT, b"fail": FAIL}


def _bitfield_type(data: bytes) -> tuple[bool, int]:
    """(signed, bits) from ``i8``/``u16``…; i1..i64 and u1..u63."""
    kind = data[:1]
    if kind != b"i" and kind != b"u":
        raise ERR_BITFIELD_TYPE
    digits = data[1:].split(b"\0", 1)[0]
    bits = to_int(digits)
    if bits is None or bits < 1 or (kind == b"i" and bits > 64) or (kind == b"u" and bits > 63):
        raise ERR_BITFIELD_TYPE
    return kind == b"i", bits


def get_field(buf: bytes | bytearray, offset: int, bits: int, signed: bool) -> int:
    """The ``bits``-wide field at bit ``offset`` (zero past the end of ``buf``)."""
    lo = offset >> 3
    hi = (offset + bits - 1) >> 3
    raw = bytes(buf[lo:hi + 1]).ljust(hi - lo + 1, b"\0")
    width = (hi - lo + 1) * 8
    value = (int.from_bytes(raw, "big") >> (width - (offset & 7) - bits)) & ((1 << bits) - 1)
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def set_field(buf: bytearray, offset: int, bits: int, value: int) -> None:
    lo = offset >> 3
    hi = (offset + bits - 1) >> 3
    width = (hi - lo + 1) * 8
    shift = width - (offset & 7) - bits
    mask = ((1 << bits) - 1) << shift
    cur = int.from_bytes(buf[lo:hi + 1], "big")
    cur = (cur & ~mask) | ((value << shift) & mask)
    buf[lo:hi + 1] = cur.to_bytes(hi - lo + 1, "big")


def _overflow(value: int, incr: int, bits: int, signed: bool, how: int) -> tuple[bool, int]:
    """(overflowed, value to store) following Redis's WRAP/SAT rules."""
    if signed:
        hi = (1 << (bits - 1)) - 1
        lo = -hi - 1
    else:
        hi = (1 << bits) - 1
        lo = 0
        value &= (1 << 64) - 1
    total = value + incr
    if lo <= total <= hi:
        return False, total
    if how == SAT:
        return True, hi if total > hi else lo
    wrapped = total & ((1 << bits) - 1)
    if signed and wrapped >> (bits - 1):
        wrapped -= 1 << bits
    return True, wrapped


@command("bitfield")
def bitfield(c, argv):
    return _bitfield(c, argv, False)


@command("bitfield_ro")
def bitfield_ro(c, argv):
    return _bitfield(c, argv, True)


def _bitfield(c: Any, argv: list[bytes], ro_command: bool) -> list:
    ops = []
    how = WRAP
    readonly = True
    highest = 0
    argc = len(argv)
    j = 2
    while j < argc:
        remaining = argc - j - 1
        sub = argv[j].lower()
        if sub == b"get" and remaining >= 2:
            opcode = GET
        elif sub == b"set" and remaining >= 3:
            opcode = SET
        elif sub == b"incrby" and remaining >= 3:
            opcode = INCRBY
        elif sub == b"overflow" and remaining >= 1:
            how = _OVERFLOWS.get(argv[j + 1].lower(), -1)
            if how < 0:
                raise ERR_OVERFLOW_TYPE
            j += 2
            continue
        else:
            raise errors.SYNTAX
        signed, bits = _bitfield_type(argv[j + 1])
        offset = _bit_offset(c, argv[j + 2], bits)
        number = 0
        if opcode != GET:
            readonly = False
            highest = max(highest, offset + bits - 1)
            number = _long_long(argv[j + 3])
        ops.append((opcode, signed, bits, offset, number, how))
        j += 4 if opcode != GET else 3
    key = argv[1]
    if readonly:
        buf = _read_string(c.db, key) or b""
        grown = False
    else:
        if ro_command:
            raise ERR_BITFIELD_RO
        buf, grown = _string_for_write(c, key, highest)
    replies: list = []
    changes = 0
    for opcode, signed, bits, offset, number, how in ops:
        old = get_field(buf, offset, bits, signed)
        if opcode == GET:
            replies.append(old)
            continue
        if opcode == INCRBY:
            overflow, new = _overflow(old, number, bits, signed, how)
            result = new
        else:
            overflow, new = _overflow(number, 0, bits, signed, how)
            result = old
        if overflow and how == FAIL:
            replies.append(None)
            continue
        replies.append(result)
        set_field(buf, offset, bits, new)
        if grown or old != new:
            changes += 1
    if changes:
        c.db.modified(key)
        notify(c.server, "$", b"setbit", key, c.db.id)
        c.server.dirty += changes
    return replies
