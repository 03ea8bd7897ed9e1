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
    listpack_adoptable_pairs,
    listpack_decode,
    listpack_encode,
    listpack_entry_size,
)

__all__ = ["RdbFormatError", "RdbReader", "RdbWriter", "listpack_adoptable_pairs",
           "listpack_decode", "listpack_encode",
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
    """Members of an intset, validated as Redis's deep ``intsetValidateIntegrity``: a
    known width, a size that matches the count, not empty, strictly ascending."""
    if len(blob) < 8:
        raise RdbFormatError("Intset integrity check failed.")
    width = int.from_bytes(blob[:4], "little")
    count = int.from_bytes(blob[4:8], "little")
    if width not in (2, 4, 8) or len(blob) != 8 + width * count or count == 0:
        raise RdbFormatError("Intset integrity check failed.")
    values = [int.from_bytes(blob[i:i + width], "little", signed=True)
              for i in range(8, len(blob), width)]
    for prev, cur in zip(values, values[1:], strict=False):
        if cur <= prev:
            raise RdbFormatError("Intset integrity check failed.")
    return [b"%d" % v for v in values]


_ZIP_INT_WIDTHS = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}


def ziplist_decode(blob: bytes) -> list[bytes]:
    """Entries of a ziplist (Redis < 7 lists, hashes and zsets), validated as Redis's
    ``ziplistValidateIntegrity`` (always deep for ziplists): header size, tail offset and
    count, every entry's prevlen, encoding and bounds, the terminator."""
    size = len(blob)
    if size < 11 or int.from_bytes(blob[:4], "little") != size or blob[-1] != 0xFF:
        raise RdbFormatError("invalid ziplist header")
    tail = int.from_bytes(blob[4:8], "little")
    header_count = int.from_bytes(blob[8:10], "little")
    if tail > size - 1:
        raise RdbFormatError("invalid ziplist tail offset")
    last = size - 1  # the terminator: no entry may reach past it
    pos = 10
    prev_start = -1
    prev_size = 0
    out: list[bytes] = []
    while blob[pos] != 0xFF:
        start = pos
        if blob[pos] < 0xFE:
            prevlen, pos = blob[pos], pos + 1
        else:
            if pos + 5 > last:
                raise RdbFormatError("truncated ziplist entry")
            prevlen, pos = int.from_bytes(blob[pos + 1:pos + 5], "little"), pos + 5
        if prevlen != prev_size or start - prevlen < 10:
            raise RdbFormatError("ziplist prevlen mismatch")
        b = blob[pos]
        kind = b >> 6
        if kind < 3:
            head = (1, 2, 5)[kind]
            if pos + head > last:
                raise RdbFormatError("truncated ziplist entry")
            if kind == 0:
                n = b & 0x3F
            elif kind == 1:
                n = ((b & 0x3F) << 8) | blob[pos + 1]
            else:  # any 0b10xxxxxx byte is the 32-bit form (Redis masks the low bits)
                n = int.from_bytes(blob[pos + 1:pos + 5], "big")
            if pos + head + n > last:
                raise RdbFormatError("truncated ziplist entry")
            out.append(blob[pos + head:pos + head + n])
            pos += head + n
        else:
            if b in _ZIP_INT_WIDTHS:
                w = _ZIP_INT_WIDTHS[b]
                if pos + 1 + w > last:
                    raise RdbFormatError("truncated ziplist entry")
                value = int.from_bytes(blob[pos + 1:pos + 1 + w], "little", signed=True)
            elif 0xF1 <= b <= 0xFD:
                w = 0
                value = (b & 0x0F) - 1
            else:
                raise RdbFormatError(f"invalid ziplist entry encoding {b:#x}")
            out.append(b"%d" % value)
            pos += 1 + w
        prev_size = pos - start
        prev_start = start
        if pos > last:
            raise RdbFormatError("truncated ziplist entry")
    if pos != last or (prev_start >= 0 and prev_start != tail):
        raise RdbFormatError("invalid ziplist tail offset")
    if header_count != 0xFFFF and header_count != len(out):
        raise RdbFormatError("ziplist element count does not match its header")
    return out


def zipmap_decode(blob: bytes) -> list[bytes]:
    """Field/value pairs of a zipmap (hashes in RDB files from Redis < 2.6), validated as
    Redis's ``zipmapValidateIntegrity``: bounds, not empty, count, terminator."""
    size = len(blob)
    if size < 2 or blob[-1] != 0xFF:
        raise RdbFormatError("Zipmap integrity check failed.")
    last = size - 1
    pos = 1
    out: list[bytes] = []

    def read_len() -> int:
        nonlocal pos
        width = 1 if blob[pos] < 254 else 5
        if pos + width > last:
            raise RdbFormatError("Zipmap integrity check failed.")
        n = blob[pos] if width == 1 else int.from_bytes(blob[pos + 1:pos + 5], "little")
        pos += width
        return n

    while blob[pos] != 0xFF:
        klen = read_len()
        if pos + klen > last:
            raise RdbFormatError("Zipmap integrity check failed.")
        out.append(blob[pos:pos + klen])
        pos += klen
        vlen = read_len()
        free = blob[pos]
        pos += 1
        if pos + vlen + free > last:
            raise RdbFormatError("Zipmap integrity check failed.")
        out.append(blob[pos:pos + vlen])
        pos += vlen + free
    pairs = len(out) // 2
    if pairs == 0 or (blob[0] != 254 and blob[0] != pairs):
        raise RdbFormatError("Zipmap integrity check failed.")
    return out
