"""The RDB format's building blocks (version 10, as Redis 7.0 writes it), sans I/O.

``RdbWriter`` appends lengths, strings (raw, integer-encoded or LZF-compressed), doubles
and millisecond times to a bytearray; ``RdbReader`` reads them back from a buffer; both, and
the listpack codec (hashes, zsets, list nodes in 7.0), are compiled (``_rio.pyx``) because
they run for every key. The rarer blobs have Python codecs here: intset (integer sets), and
the older ziplist and zipmap forms that appear in files written by earlier Redis versions.
"""
from __future__ import annotations

from pykv.storage.rdb._rio import (
    RdbFormatError,
    RdbReader,
    RdbWriter,
    listpack_decode,
    listpack_encode,
    listpack_entry_size,
)

__all__ = ["RdbFormatError", "RdbReader", "RdbWriter", "listpack_decode", "listpack_encode",
           "listpack_entry_size"]

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

QUICKLIST_NODE_PLAIN = 1
QUICKLIST_NODE_PACKED = 2



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
