"""The RDB load fast path for hash and zset listpacks (``listpack_adoptable_pairs``) takes a
blob as it is exactly when the element-by-element path would have kept it: checked here
against that path's conditions, on canonical blobs and on hand-made non-canonical ones."""
from __future__ import annotations

import random
import struct

import pytest

from pykv.config.loader import load_config
from pykv.storage.rdb import encoding as enc
from pykv.storage.rdb._codec import lzf_compress
from pykv.storage.rdb.integrity import RdbFormatError, strtod
from pykv.storage.rdb.objects import load_object

POOL = [b"0", b"1", b"-1", b"127", b"128", b"-4096", b"4095", b"4096", b"32767", b"-32769",
        b"8388607", b"8388608", b"2147483647", b"-2147483649", b"9223372036854775807",
        b"-9223372036854775808", b"9223372036854775808", b"007", b"-0", b" 1", b"1.5",
        b"0.0", b"-2.5e3", b"inf", b"-inf", b"nan", b"0x10", b"abc", b"", b"a" * 63,
        b"b" * 64, b"c" * 4095, b"d" * 4096, b"f1", b"f2", b"m\x00x", b"zz"]


def reference(blob: bytes, zset: bool, max_pairs: int) -> int:
    """The old path's test for keeping a blob: decode, re-encode, compare, check."""
    try:
        flat = enc.listpack_decode(blob)
    except RdbFormatError:
        return -1
    if not flat or len(flat) % 2 or len(flat) // 2 > min(max_pairs, 512):
        return -1
    if enc.listpack_encode(flat) != blob or len(set(flat[::2])) != len(flat) // 2:
        return -1
    if zset:
        prev = None
        for member, text in zip(flat[::2], flat[1::2], strict=True):
            score = strtod(text)
            if score != score or (prev is not None and (score, member) <= prev):
                return -1
            if score == 0.0 and text != b"0":
                return -1
            prev = (score, member)
    return len(flat) // 2


def _entry(body: bytes) -> bytes:
    """A string entry with a 12-bit length header even when 6 bits would do."""
    if len(body) >= 4096:
        return enc.listpack_encode([body])[6:-1]
    raw = bytes([0xE0 | (len(body) >> 8), len(body) & 0xFF]) + body
    n = len(raw)
    return raw + (bytes([n]) if n <= 127 else bytes([n >> 7, (n & 127) | 128]))


def _blob(entries: list[bytes], count: int) -> bytes:
    body = b"".join(entries) + b"\xff"
    return struct.pack("<IH", 6 + len(body), count) + body


def variants(flat: list[bytes]) -> list[bytes]:
    """The canonical blob of ``flat`` and some non-canonical spellings of it."""
    good = enc.listpack_encode(flat)
    out = [good, good[:4] + b"\xff\xff" + good[6:]]  # count "unknown"
    out.append(_blob([_entry(x) for x in flat], len(flat)))  # long headers, ints as text
    if flat and flat[0] == b"5":
        out.append(_blob([b"\xc0\x05\x02"] + [enc.listpack_encode([x])[6:-1]
                                             for x in flat[1:]], len(flat)))
    return out


@pytest.mark.parametrize("zset", [False, True])
def test_fast_path_agrees_with_the_element_path(zset):
    rng = random.Random(15)
    cases = 0
    for _ in range(3000):
        n = rng.randint(0, 6)
        flat = []
        for _ in range(n):
            flat += [rng.choice(POOL), rng.choice(POOL)]
        if zset and rng.random() < 0.7:  # mostly sorted, as a saved zset is
            pairs = dict(zip(flat[::2], flat[1::2], strict=True))
            ordered = sorted((p for p in pairs.items() if strtod(p[1]) == strtod(p[1])),
                             key=lambda p: (strtod(p[1]), p[0]))
            flat = [x for pair in ordered for x in pair]
        if rng.random() < 0.1:
            flat.append(b"odd")
        if rng.random() < 0.2:
            flat = [b"5"] + flat[1:] if flat else flat
        for blob in variants(flat):
            limit = rng.choice([2, 3, 128])
            assert enc.listpack_adoptable_pairs(blob, zset, limit) == \
                reference(blob, zset, limit), (flat, blob)
            cases += 1
    assert cases > 9000


def test_damaged_blobs_are_not_adopted():
    blob = enc.listpack_encode([b"f", b"v", b"g", b"w"])
    assert enc.listpack_adoptable_pairs(blob, False, 128) == 2
    for cut in range(1, len(blob)):
        assert enc.listpack_adoptable_pairs(blob[:cut], False, 128) == -1
    for i in range(len(blob)):
        for bit in (1, 0x80):
            bad = bytearray(blob)
            bad[i] ^= bit
            assert enc.listpack_adoptable_pairs(bytes(bad), False, 128) == \
                reference(bytes(bad), False, 128)


def test_loaded_values_keep_their_bytes():
    config = load_config([])
    hblob = enc.listpack_encode([b"a", b"1", b"b", b"xyz"])
    zblob = enc.listpack_encode([b"m", b"-1", b"n", b"1.5", b"o", b"1.5"])
    hash_value = load_object(enc.RdbReader(_string(hblob)), enc.TYPE_HASH_LISTPACK, config)
    zset_value = load_object(enc.RdbReader(_string(zblob)), enc.TYPE_ZSET_LISTPACK, config)
    assert hash_value.d.blob() == hblob and len(hash_value) == 2
    assert zset_value.packed.blob() == zblob and len(zset_value) == 3
    dup = enc.listpack_encode([b"a", b"1", b"a", b"2"])
    with pytest.raises(RdbFormatError):
        load_object(enc.RdbReader(_string(dup)), enc.TYPE_HASH_LISTPACK, config)


def _string(data: bytes) -> bytes:
    w = enc.RdbWriter(compress=False)
    w.string(data)
    return bytes(w.buf)


def test_lzf_output_does_not_depend_on_earlier_calls():
    rng = random.Random(7)
    samples = [bytes(rng.choice(b"abcab ") for _ in range(rng.randint(21, 3000)))
               for _ in range(50)]
    first = [lzf_compress(s) for s in samples]
    for s in reversed(samples):
        lzf_compress(s + s)
    assert [lzf_compress(s) for s in samples] == first
