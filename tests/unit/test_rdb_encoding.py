"""RDB building blocks on hand-built bytes: lengths, strings, listpack, intset, and the older
ziplist and zipmap blobs that files from Redis < 7 contain (laid out as the format defines)."""
from __future__ import annotations

import struct

import pytest

from pykv.storage.rdb import encoding as enc
from pykv.storage.rdb._codec import crc64, lzf_compress, lzf_decompress
from pykv.storage.rdb.encoding import (
    RdbFormatError,
    RdbReader,
    RdbWriter,
    intset_decode,
    intset_encode,
    listpack_decode,
    listpack_encode,
    ziplist_decode,
    zipmap_decode,
)


def test_crc64_check_value():
    assert crc64(0, b"123456789") == 0xE9C6D914C4B8D9CA


def test_crc64_eight_bytes_at_a_time_is_the_bitwise_crc():
    def bitwise(crc: int, data: bytes) -> int:
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
        return crc

    data = bytes((i * 37 + 11) & 0xFF for i in range(45))
    for n in range(len(data)):
        assert crc64(7, data[:n]) == bitwise(7, data[:n])
        assert crc64(crc64(0, data[:n]), data[n:]) == bitwise(0, data)


@pytest.mark.parametrize("data", [b"", b"a", b"abc" * 1000, bytes(range(256)) * 20])
def test_lzf_round_trip(data):
    packed = lzf_compress(data)
    assert lzf_decompress(packed, len(data)) == data


def test_lzf_refuses_to_grow():
    assert lzf_compress(bytes(range(100)), 96) is None


@pytest.mark.parametrize("n", [0, 63, 64, 16383, 16384, 2**32 - 1, 2**32, 2**40])
def test_length_encodings(n):
    w = RdbWriter()
    w.length(n)
    first = w.buf[0]
    if n < 64:
        assert first >> 6 == 0
    elif n < 16384:
        assert first >> 6 == 1
    elif n <= 0xFFFFFFFF:
        assert first == 0x80
    else:
        assert first == 0x81
    assert RdbReader(bytes(w.buf)).length() == n


@pytest.mark.parametrize("value,encoded", [
    (b"12", b"\xc0\x0c"), (b"-1", b"\xc0\xff"), (b"300", b"\xc1\x2c\x01"),
    (b"70000", b"\xc2\x70\x11\x01\x00"), (b"012", b"\x03012"), (b"", b"\x00"),
])
def test_string_integer_encodings(value, encoded):
    w = RdbWriter()
    w.string(value)
    assert bytes(w.buf) == encoded
    assert RdbReader(encoded).string() == value


def test_compressed_string():
    w = RdbWriter()
    w.string(b"x" * 500)
    assert w.buf[0] == 0xC3
    assert RdbReader(bytes(w.buf)).string() == b"x" * 500


def test_truncated_input_is_a_format_error():
    with pytest.raises(RdbFormatError):
        RdbReader(b"\x05ab").string()


def test_listpack_layout():
    blob = listpack_encode([b"a", b"5", b"-1"])
    # header: total bytes, count; entries: 0x81 'a' backlen 2 | 5 backlen 1 | 13-bit -1
    assert blob == (struct.pack("<IH", len(blob), 3) + b"\x81a\x02" + b"\x05\x01"
                    + b"\xdf\xff\x02" + b"\xff")
    assert listpack_decode(blob) == [b"a", b"5", b"-1"]


def test_intset():
    blob = intset_encode([3, -2, 70000])
    assert blob[:8] == struct.pack("<II", 4, 3)
    assert intset_decode(blob) == [b"-2", b"3", b"70000"]


def _ziplist(entries: list[bytes]) -> bytes:
    body = b""
    prev = 0
    tail = 10
    for e in entries:
        header = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
        entry = header + e
        tail = 10 + len(body)  # the offset of the last entry, as Redis checks
        body += entry
        prev = len(entry)
    total = 10 + len(body) + 1
    return struct.pack("<IIH", total, tail, len(entries)) + body + b"\xff"


def test_ziplist_entries():
    blob = _ziplist([
        b"\x03abc",                      # 6-bit string length
        b"\x40\x05hello",                # 14-bit string length
        b"\xc0" + struct.pack("<h", -300),   # int16
        b"\xd0" + struct.pack("<i", 100000),  # int32
        b"\xe0" + struct.pack("<q", 2**40),   # int64
        b"\xf0" + (70000).to_bytes(3, "little", signed=True),  # int24
        b"\xfe" + struct.pack("<b", -5),  # int8
        b"\xf1",                          # immediate 0
        b"\xfd",                          # immediate 12
    ])
    assert ziplist_decode(blob) == [b"abc", b"hello", b"-300", b"100000", b"%d" % 2**40,
                                    b"70000", b"-5", b"0", b"12"]


def test_zipmap_pairs():
    # zmlen, then (klen key vlen free value)*, 0xff
    blob = b"\x02" + b"\x01a\x03\x00one" + b"\x02bb\x01\x02x\x00\x00" + b"\xff"
    assert zipmap_decode(blob) == [b"a", b"one", b"bb", b"x"]


def test_older_types_load_as_values():
    from pykv.config import Config
    from pykv.storage.rdb.objects import load_object

    config = Config()
    hash_blob = _ziplist([b"\x01f", b"\x01v", b"\x01g", b"\xf2"])
    w = RdbWriter(compress=False)
    w.string(hash_blob)
    value = load_object(RdbReader(bytes(w.buf)), enc.TYPE_HASH_ZIPLIST, config)
    assert value.type_name == b"hash" and dict(value.d) == {b"f": b"v", b"g": b"1"}
    zset_blob = _ziplist([b"\x01m", b"\x031.5"])
    w = RdbWriter(compress=False)
    w.string(zset_blob)
    z = load_object(RdbReader(bytes(w.buf)), enc.TYPE_ZSET_ZIPLIST, config)
    assert z.scores == {b"m": 1.5}
    w = RdbWriter(compress=False)
    w.length(1)
    w.string(_ziplist([b"\x01a", b"\x01b"]))
    lst = load_object(RdbReader(bytes(w.buf)), enc.TYPE_LIST_QUICKLIST, config)
    assert list(lst.items) == [b"a", b"b"]
    w = RdbWriter(compress=False)
    w.string(b"\x01" + b"\x01k\x01\x00v" + b"\xff")
    zm = load_object(RdbReader(bytes(w.buf)), enc.TYPE_HASH_ZIPMAP, config)
    assert dict(zm.d) == {b"k": b"v"}


def test_listpack_entry_size_matches_the_encoder():
    from pykv.storage.rdb.encoding import listpack_encode, listpack_entry_size

    items = [b"", b"a", b"x" * 63, b"x" * 64, b"x" * 127, b"x" * 128, b"x" * 4095, b"x" * 4096,
             b"x" * 20000, b"0", b"127", b"128", b"-1", b"-4096", b"4095", b"4096", b"-32769",
             b"32767", b"8388607", b"8388608", b"2147483647", b"2147483648",
             b"9223372036854775807", b"9223372036854775808", b"007", b" 1", b"1.5", 5, -70000]
    for item in items:
        assert listpack_entry_size(item) == len(listpack_encode([item])) - 7, item


def test_listpack_is_validated_entry_by_entry():
    good = listpack_encode([b"f", b"v", 300, b"x" * 70])
    assert listpack_decode(good) == [b"f", b"v", b"300", b"x" * 70]
    backlen = bytearray(good)
    backlen[8] ^= 1  # the first entry's back-length
    count = bytearray(good)
    count[4] = 3
    unknown = bytearray(good)
    unknown[6] = 0xF5
    early_end = bytearray(good)
    early_end[6] = 0xFF
    for bad in (backlen, count, unknown, early_end, good[:-1], good + b"\xff"):
        with pytest.raises(RdbFormatError):
            listpack_decode(bytes(bad))
    count[4:6] = b"\xff\xff"  # 65535: "unknown", never checked
    assert listpack_decode(bytes(count)) == listpack_decode(good)
    count[4:6] = b"\x03\x00"
    assert listpack_decode(bytes(count), False) == listpack_decode(good)  # stream nodes


def test_ziplist_and_intset_are_validated():
    good = _ziplist([b"\x01a", b"\x01b"])
    assert ziplist_decode(good) == [b"a", b"b"]
    tail = bytearray(good)
    tail[4] += 1
    prevlen = bytearray(good)
    prevlen[13] = 7
    count = bytearray(good)
    count[8] = 3
    for bad in (tail, prevlen, count):
        with pytest.raises(RdbFormatError):
            ziplist_decode(bytes(bad))
    head = (2).to_bytes(4, "little")
    assert intset_decode(head + b"\x02\x00\x00\x00\x01\x00\x05\x00") == [b"1", b"5"]
    for body in (b"\x02\x00\x00\x00\x05\x00\x01\x00", b"\x02\x00\x00\x00\x05\x00\x05\x00",
                 b"\x00\x00\x00\x00", b"\x02\x00\x00\x00\x05\x00"):
        with pytest.raises(RdbFormatError):
            intset_decode(head + body)


def test_packed_zset_scores_read_like_strtod():
    from pykv.storage.rdb.integrity import strtod

    cases = {b"1.5": 1.5, b"1,5": 1.0, b" -2e3x": -2000.0, b"inf": float("inf"),
             b"-Infinity": float("-inf"), b"0x1p3": 8.0, b"0x": 0.0, b"": 0.0, b"abc": 0.0,
             b"1e": 1.0, b".5": 0.5, b"7\x009": 7.0}
    for text, value in cases.items():
        assert strtod(text) == value, text
    assert strtod(b"nan") != strtod(b"nan")
