"""The RDB format's building blocks (version 10, as Redis 7.0 writes it), sans I/O.

``RdbWriter`` appends lengths, strings (raw, integer-encoded or LZF-compressed), doubles
and millisecond times to a bytearray; ``RdbReader`` reads them back from a buffer. The
compact container blobs Redis stores as strings have their own codecs here: listpack
(hashes, zsets, list nodes in 7.0), intset (integer sets), and the older ziplist and
zipmap forms that appear when loading files written by earlier Redis versions.
"""
from __future__ import annotations

import struct

from pykv.storage.rdb._codec import LzfError, lzf_compress, lzf_decompress

RDB_VERSION = 10

# value types
TYPE_STRING = 0
TYPE_LIST = 1
TYPE_SET = 2
TYPE_ZSET = 3
TYPE_HASH = 4
TYPE_ZSET_2 = 5
TYPE_MODULE = 6
TYPE_MODULE_2 = 7
TYPE_HASH_ZIPMAP = 9
TYPE_LIST_ZIPLIST = 10
TYPE_SET_INTSET = 11
TYPE_ZSET_ZIPLIST = 12
TYPE_HASH_ZIPLIST = 13
TYPE_LIST_QUICKLIST = 14
TYPE_STREAM_LISTPACKS = 15
TYPE_HASH_LISTPACK = 16
TYPE_ZSET_LISTPACK = 17
TYPE_LIST_QUICKLIST_2 = 18
TYPE_STREAM_LISTPACKS_2 = 19

# opcodes
OP_FUNCTION2 = 245
OP_FUNCTION_PRE_GA = 246
OP_MODULE_AUX = 247
OP_IDLE = 248
OP_FREQ = 249
OP_AUX = 250
OP_RESIZEDB = 251
OP_EXPIRETIME_MS = 252
OP_EXPIRETIME = 253
OP_SELECTDB = 254
OP_EOF = 255

# length encodings
LEN_6BIT, LEN_14BIT, LEN_32BIT, LEN_64BIT, LEN_ENCVAL = 0, 1, 0x80, 0x81, 3
ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3

QUICKLIST_NODE_PLAIN = 1
QUICKLIST_NODE_PACKED = 2

_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_DBL = struct.Struct("<d")


class RdbFormatError(ValueError):
    """The bytes are not a valid RDB stream (or use a feature pykv can't load)."""


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------
class RdbWriter:
    """Appends RDB primitives to ``self.buf``."""

    __slots__ = ("buf", "compress")

    def __init__(self, compress: bool = True) -> None:
        self.buf = bytearray()
        self.compress = compress

    def byte(self, value: int) -> None:
        self.buf.append(value)

    def length(self, n: int) -> None:
        buf = self.buf
        if n < 64:
            buf.append(n)
        elif n < 16384:
            buf += bytes(((n >> 8) | 0x40, n & 0xFF))
        elif n <= 0xFFFFFFFF:
            buf.append(LEN_32BIT)
            buf += n.to_bytes(4, "big")
        else:
            buf.append(LEN_64BIT)
            buf += n.to_bytes(8, "big")

    def string(self, data: bytes | bytearray) -> None:
        n = len(data)
        if n <= 11 and n:
            value = _int_encodable(data)
            if value is not None:
                self._int_string(value)
                return
        if self.compress and n > 20:
            packed = lzf_compress(data, n - 4)
            if packed is not None:
                self.buf.append(0xC0 | ENC_LZF)
                self.length(len(packed))
                self.length(n)
                self.buf += packed
                return
        self.length(n)
        self.buf += data

    def _int_string(self, value: int) -> None:
        buf = self.buf
        if -128 <= value <= 127:
            buf.append(0xC0 | ENC_INT8)
            buf += value.to_bytes(1, "little", signed=True)
        elif -32768 <= value <= 32767:
            buf.append(0xC0 | ENC_INT16)
            buf += value.to_bytes(2, "little", signed=True)
        else:
            buf.append(0xC0 | ENC_INT32)
            buf += value.to_bytes(4, "little", signed=True)

    def int_string(self, value: int) -> None:
        """An integer saved as a string (integer encoding when it fits in 32 bits)."""
        if -(1 << 31) <= value < (1 << 31):
            self._int_string(value)
        else:
            self.string(b"%d" % value)

    def binary_double(self, value: float) -> None:
        self.buf += _DBL.pack(value)

    def millis(self, ms: int) -> None:
        self.buf += _I64.pack(ms)

    def raw(self, data: bytes) -> None:
        self.buf += data


def _int_encodable(data: bytes | bytearray) -> int | None:
    """Redis saves a string as an integer if it round-trips exactly and fits in 32 bits."""
    try:
        text = bytes(data)
        value = int(text)
    except ValueError:
        return None
    if b"%d" % value != text or not -(1 << 31) <= value < (1 << 31):
        return None
    return value


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------
class RdbReader:
    """Reads RDB primitives from a bytes-like buffer, advancing ``pos``."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise RdbFormatError("unexpected end of RDB data")
        chunk = bytes(self.data[self.pos:end])
        self.pos = end
        return chunk

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise RdbFormatError("unexpected end of RDB data")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def length_or_encoding(self) -> tuple[int, bool]:
        """(length, False) or (encoding type, True) for specially encoded strings."""
        first = self.byte()
        kind = first >> 6
        if kind == 0:
            return first & 0x3F, False
        if kind == 1:
            return ((first & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return first & 0x3F, True
        if first == LEN_32BIT:
            return int.from_bytes(self.take(4), "big"), False
        if first == LEN_64BIT:
            return int.from_bytes(self.take(8), "big"), False
        raise RdbFormatError(f"unknown length encoding {first:#x}")

    def length(self) -> int:
        n, encoded = self.length_or_encoding()
        if encoded:
            raise RdbFormatError("expected a length, found an encoded string")
        return n

    def string(self) -> bytes:
        n, encoded = self.length_or_encoding()
        if not encoded:
            return self.take(n)
        if n == ENC_INT8:
            return b"%d" % int.from_bytes(self.take(1), "little", signed=True)
        if n == ENC_INT16:
            return b"%d" % int.from_bytes(self.take(2), "little", signed=True)
        if n == ENC_INT32:
            return b"%d" % int.from_bytes(self.take(4), "little", signed=True)
        if n == ENC_LZF:
            clen = self.length()
            ulen = self.length()
            try:
                return lzf_decompress(self.take(clen), ulen)
            except LzfError as exc:
                raise RdbFormatError(str(exc)) from None
        raise RdbFormatError(f"unknown string encoding {n}")

    def binary_double(self) -> float:
        return _DBL.unpack(self.take(8))[0]

    def old_double(self) -> float:
        """The pre-RDB-8 string double: a length byte (253 nan, 254 +inf, 255 -inf)."""
        n = self.byte()
        if n == 253:
            return float("nan")
        if n == 254:
            return float("inf")
        if n == 255:
            return float("-inf")
        return float(self.take(n))

    def millis(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def seconds(self) -> int:
        return int.from_bytes(self.take(4), "little", signed=True)

    def u64(self) -> int:
        return _U64.unpack(self.take(8))[0]


# ---------------------------------------------------------------------------------------
# listpack
# ---------------------------------------------------------------------------------------
def _backlen(n: int) -> bytes:
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128,
                      (n & 127) | 128))
    return bytes((n >> 28, ((n >> 21) & 127) | 128, ((n >> 14) & 127) | 128,
                  ((n >> 7) & 127) | 128, (n & 127) | 128))


def _listpack_entry(item: bytes | int) -> bytes:
    value: int | None
    if isinstance(item, int):
        value = item
    elif len(item) <= 20:
        from pykv.commands.args import to_int

        value = to_int(bytes(item))
    else:
        value = None
    if value is not None:
        if 0 <= value <= 127:
            enc = bytes((value,))
        elif -4096 <= value <= 4095:
            v = value & 0x1FFF
            enc = bytes((0xC0 | (v >> 8), v & 0xFF))
        elif -32768 <= value <= 32767:
            enc = b"\xf1" + value.to_bytes(2, "little", signed=True)
        elif -(1 << 23) <= value < (1 << 23):
            enc = b"\xf2" + value.to_bytes(3, "little", signed=True)
        elif -(1 << 31) <= value < (1 << 31):
            enc = b"\xf3" + value.to_bytes(4, "little", signed=True)
        else:
            enc = b"\xf4" + value.to_bytes(8, "little", signed=True)
    else:
        n = len(item)
        if n < 64:
            enc = bytes((0x80 | n,)) + item
        elif n < 4096:
            enc = bytes((0xE0 | (n >> 8), n & 0xFF)) + item
        else:
            enc = b"\xf0" + n.to_bytes(4, "little") + item
    return enc + _backlen(len(enc))


def listpack_encode(items) -> bytes:
    """A listpack blob holding ``items`` (bytes, or ints), as Redis 7.0 lays it out."""
    items = list(items)
    body = b"".join(_listpack_entry(item) for item in items)
    count = len(items)
    total = 6 + len(body) + 1
    return (total.to_bytes(4, "little") + min(count, 65535).to_bytes(2, "little") + body
            + b"\xff")


def listpack_decode(blob: bytes) -> list[bytes]:
    """Every element of a listpack blob, integers rendered as decimal bytes."""
    if len(blob) < 7 or int.from_bytes(blob[:4], "little") != len(blob) or blob[-1] != 0xFF:
        raise RdbFormatError("invalid listpack header")
    out: list[bytes] = []
    pos = 6
    end = len(blob) - 1
    while pos < end:
        b = blob[pos]
        if b < 0x80:
            value: bytes | int = b
            size = 1
        elif b < 0xC0:
            n = b & 0x3F
            value = blob[pos + 1:pos + 1 + n]
            size = 1 + n
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | blob[pos + 1]
            value = v - 8192 if v >= 4096 else v
            size = 2
        elif b < 0xF0:
            n = ((b & 0x0F) << 8) | blob[pos + 1]
            value = blob[pos + 2:pos + 2 + n]
            size = 2 + n
        elif b == 0xF0:
            n = int.from_bytes(blob[pos + 1:pos + 5], "little")
            value = blob[pos + 5:pos + 5 + n]
            size = 5 + n
        elif 0xF1 <= b <= 0xF4:
            width = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[b]
            value = int.from_bytes(blob[pos + 1:pos + 1 + width], "little", signed=True)
            size = 1 + width
        else:
            raise RdbFormatError(f"invalid listpack entry encoding {b:#x}")
        if isinstance(value, int):
            value = b"%d" % value
        elif pos + size > end:
            raise RdbFormatError("truncated listpack entry")
        out.append(bytes(value))
        pos += size + len(_backlen(size))
    if pos != end:
        raise RdbFormatError("listpack entries overrun the blob")
    return out


# ---------------------------------------------------------------------------------------
# intset, ziplist, zipmap
# ---------------------------------------------------------------------------------------
def intset_encode(values) -> bytes:
    ordered = sorted(values)
    width = 2
    for v in (ordered[0], ordered[-1]) if ordered else ():
        if not -(1 << 15) <= v < (1 << 15):
            width = max(width, 4)
        if not -(1 << 31) <= v < (1 << 31):
            width = 8
    return (width.to_bytes(4, "little") + len(ordered).to_bytes(4, "little")
            + b"".join(v.to_bytes(width, "little", signed=True) for v in ordered))


def intset_decode(blob: bytes) -> list[bytes]:
    if len(blob) < 8:
        raise RdbFormatError("invalid intset")
    width = int.from_bytes(blob[:4], "little")
    count = int.from_bytes(blob[4:8], "little")
    if width not in (2, 4, 8) or len(blob) != 8 + width * count:
        raise RdbFormatError("invalid intset")
    return [b"%d" % int.from_bytes(blob[8 + i * width:8 + (i + 1) * width], "little",
                                   signed=True) for i in range(count)]


def ziplist_decode(blob: bytes) -> list[bytes]:
    """Entries of a ziplist (Redis < 7 lists, hashes and zsets)."""
    if len(blob) < 11 or blob[-1] != 0xFF:
        raise RdbFormatError("invalid ziplist")
    pos = 10
    out: list[bytes] = []
    end = len(blob) - 1
    while pos < end:
        pos += 5 if blob[pos] == 0xFE else 1  # prevlen
        b = blob[pos]
        kind = b >> 6
        if kind == 0:
            n = b & 0x3F
            out.append(blob[pos + 1:pos + 1 + n])
            pos += 1 + n
        elif kind == 1:
            n = ((b & 0x3F) << 8) | blob[pos + 1]
            out.append(blob[pos + 2:pos + 2 + n])
            pos += 2 + n
        elif kind == 2:
            n = int.from_bytes(blob[pos + 1:pos + 5], "big")
            out.append(blob[pos + 5:pos + 5 + n])
            pos += 5 + n
        else:
            widths = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}
            if b in widths:
                w = widths[b]
                value = int.from_bytes(blob[pos + 1:pos + 1 + w], "little", signed=True)
                pos += 1 + w
            elif 0xF1 <= b <= 0xFD:
                value = (b & 0x0F) - 1
                pos += 1
            else:
                raise RdbFormatError(f"invalid ziplist entry encoding {b:#x}")
            out.append(b"%d" % value)
    return out


def zipmap_decode(blob: bytes) -> list[bytes]:
    """Field/value pairs of a zipmap (hashes in RDB files from Redis < 2.6)."""
    pos = 1
    out: list[bytes] = []

    def read_len() -> int:
        nonlocal pos
        b = blob[pos]
        if b < 254:
            pos += 1
            return b
        if b == 254:
            n = int.from_bytes(blob[pos + 1:pos + 5], "little")
            pos += 5
            return n
        raise StopIteration

    try:
        while pos < len(blob) and blob[pos] != 0xFF:
            klen = read_len()
            out.append(blob[pos:pos + klen])
            pos += klen
            vlen = read_len()
            free = blob[pos]
            pos += 1
            out.append(blob[pos:pos + vlen])
            pos += vlen + free
    except (StopIteration, IndexError):
        raise RdbFormatError("invalid zipmap") from None
    return out
