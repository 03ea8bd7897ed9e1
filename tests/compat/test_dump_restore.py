"""DUMP and RESTORE replies and errors compared with real Redis."""
from __future__ import annotations


def test_restore_errors(diff):
    diff("SET", "k", "v")
    payload = _bulk(diff.real.call("DUMP", "k"))
    diff.ours.call("SET", "k", "v")
    diff("RESTORE", "k", "0", payload)
    diff("RESTORE", "k2", "-1", payload)
    diff("RESTORE", "k2", "abc", payload)
    diff("RESTORE", "k2", "0", payload[:-1] + b"\x00")
    diff("RESTORE", "k2", "0", b"garbage-payload-with-enough-bytes")
    diff("RESTORE", "k2", "0", payload, "IDLETIME", "-1")
    diff("RESTORE", "k2", "0", payload, "FREQ", "300")
    diff("RESTORE", "k2", "0", payload, "IDLETIME", "1", "FREQ", "1")
    diff("RESTORE", "k2", "0", payload, "BOGUS")
    diff("RESTORE", "k2", "1", payload, "ABSTTL")
    diff("EXISTS", "k2")
    diff("RESTORE", "k3", "100000", payload)
    diff("DUMP", "nosuchkey")


def _bulk(reply: bytes) -> bytes:
    assert reply.startswith(b"$"), reply
    head, _, rest = reply.partition(b"\r\n")
    return rest[:int(head[1:])]


def test_persistence_command_argument_errors(diff):
    diff("BGSAVE", "NOW")
    diff("BGSAVE", "SCHEDULE", "extra")
    diff("SAVE", "extra")
    diff("BGREWRITEAOF", "extra")
    diff("DEBUG", "RELOAD", "BOGUS")
    diff("DUMP")
    diff("RESTORE", "k", "0")


# -- corrupt payloads: refused as Redis refuses them ---------------------------------------------
def _fix(type_byte: int, body: bytes) -> bytes:
    """A payload around ``body`` with a correct version and CRC, so the decoder sees it."""
    import struct

    from pykv.storage.rdb._codec import crc64

    data = bytes([type_byte]) + body + struct.pack("<H", 10)
    return data + crc64(0, data).to_bytes(8, "little")


def _blob(blob: bytes) -> bytes:
    from pykv.storage.rdb.encoding import RdbWriter

    w = RdbWriter(compress=False)
    w.string(blob)
    return bytes(w.buf)


def _lp(items) -> bytes:
    from pykv.storage.rdb.encoding import listpack_encode

    return listpack_encode(items)


def _sanitize(diff, mode: str) -> None:
    diff("CONFIG", "SET", "sanitize-dump-payload", mode)


def test_shallow_corruption_is_refused_in_every_mode(diff):
    good = _lp([b"f", b"v", b"g", b"12"])
    header = bytearray(good)
    header[0] += 1  # total-bytes field no longer the blob size
    no_end = good[:-1] + b"\x00"
    empty_set = b"\x00"
    dup_set = b"\x03" + _blob(b"a") + _blob(b"b") + _blob(b"a")
    dup_intset = b"\x03" + _blob(b"1") + _blob(b"2") + _blob(b"1")
    nan_zset = b"\x01" + _blob(b"m") + b"\x00\x00\x00\x00\x00\x00\xf8\x7f"
    dup_zset = b"\x02" + (_blob(b"m") + b"\x00" * 8) * 2
    cases = [(16, _blob(bytes(header))), (16, _blob(no_end)), (2, empty_set), (2, dup_set),
             (2, dup_intset), (5, nan_zset), (5, dup_zset), (1, b"\x00"), (18, b"\x00"),
             (18, b"\x01\x03" + _blob(good)),  # no such quicklist container
             (18, b"\x01\x02\x00"), (18, b"\x01\x02" + _blob(_lp([]))),  # empty nodes
             (16, _blob(_lp([]))), (20, b"\x00"), (8, b"\x00")]  # empty hash, unknown types
    for mode in ("no", "yes", "clients"):
        _sanitize(diff, mode)
        for type_byte, body in cases:
            diff("RESTORE", "k", "0", _fix(type_byte, body), "REPLACE")
            diff("EXISTS", "k")
    _sanitize(diff, "no")


def test_deep_corruption_is_refused_with_sanitize_yes(diff):
    lp = _lp([b"f", b"v", b"g", b"w"])
    backlen = bytearray(lp)
    backlen[8] ^= 0x01  # the first entry's back-length
    count = bytearray(lp)
    count[4] = 3  # header element count
    odd = _lp([b"f", b"v", b"g"])
    dup_fields = _lp([b"f", b"1", b"f", b"2"])
    dup_members = _lp([b"m", b"1", b"m", b"2"])
    unsorted_intset = (2).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"\x05\x00\x01\x00\x09\x00"
    dup_intset = (2).to_bytes(4, "little") + (2).to_bytes(4, "little") + b"\x05\x00\x05\x00"
    many = [x for i in range(130) for x in (_blob(b"f%d" % i), _blob(b"v"))]
    dup_hash = b"\x40\x83" + b"".join(many) + _blob(b"f0") + _blob(b"v")  # 131 pairs
    bad_entry = bytearray(_lp([b"abc", b"x"]))
    bad_entry[6] = 0xF6  # no such listpack encoding
    cases = [(16, _blob(bytes(backlen))), (16, _blob(bytes(count))), (16, _blob(odd)),
             (16, _blob(dup_fields)), (17, _blob(dup_members)), (11, _blob(unsorted_intset)),
             (11, _blob(dup_intset)), (18, b"\x01\x02" + _blob(bytes(bad_entry))),
             (18, b"\x01\x02" + _blob(bytes(backlen))), (4, dup_hash)]
    _sanitize(diff, "yes")
    diff("CONFIG", "RESETSTAT")
    try:
        for type_byte, body in cases:
            diff("RESTORE", "k", "0", _fix(type_byte, body), "REPLACE")
        diff("RESTORE", "k", "0", _fix(16, _blob(lp)), "REPLACE")  # the intact one is kept
        diff("HGETALL", "k")
        real, ours = diff.both("INFO", "stats")
        stat = [line for line in real.split(b"\r\n") if b"dump_payload_san" in line]
        assert stat and stat[0] in ours.split(b"\r\n"), (stat, ours)
    finally:
        _sanitize(diff, "no")


def test_corrupt_stream_consumer_groups_are_refused(diff):
    for c in (diff.real, diff.ours):
        c.call("XADD", "s", "1-1", "a", "1")
        c.call("XADD", "s", "2-1", "b", "2")
        c.call("XGROUP", "CREATE", "s", "g", "0")
        c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    body = _bulk(diff.real.call("DUMP", "s"))[1:-10]
    other = (2).to_bytes(8, "big") + (1).to_bytes(8, "big")
    not_in_group = body[:-16] + other  # the consumer owns an entry the group never delivered
    no_owner = body[:-17] + b"\x00"  # the group's pending entry belongs to no consumer
    _sanitize(diff, "yes")
    try:
        diff("RESTORE", "k", "0", _fix(19, body), "REPLACE")
        diff("XPENDING", "k", "g")
        diff("RESTORE", "k2", "0", _fix(19, not_in_group), "REPLACE")
        diff("RESTORE", "k2", "0", _fix(19, no_owner), "REPLACE")
        diff("EXISTS", "k2")
    finally:
        _sanitize(diff, "no")


def test_pykv_refuses_damage_redis_would_keep(raw):
    """Where Redis 7.0 keeps a payload whose value then contradicts itself, pykv refuses it
    (pykv.storage.rdb.integrity lists these): trailing bytes, IDs out of order."""
    raw.call("SET", "s", "hello")
    good = _bulk(raw.call("DUMP", "s"))
    assert raw.call("RESTORE", "t", "0", _fix(0, good[1:-10] + b"XYZ")) == \
        b"-ERR Bad data format\r\n"
    raw.call("XADD", "x", "5-1", "f", "v")
    body = bytearray(_bulk(raw.call("DUMP", "x"))[1:-10])
    # length 1, last ID 5-1, first ID 5-1, max deleted 0-0, entries added 1, no groups
    assert body.endswith(b"\x01\x05\x01\x05\x01\x00\x00\x01\x00")
    body[-7] = 0  # last ID 5-0: behind the entry the stream holds
    assert raw.call("RESTORE", "y", "0", _fix(19, bytes(body))) == b"-ERR Bad data format\r\n"
    assert raw.call("EXISTS", "t", "y") == b":0\r\n"


def test_rdb_load_sanitizes_deeply_only_with_yes(diff):
    """Loading an RDB file counts deep checks (INFO dump_payload_sanitizations) with
    ``sanitize-dump-payload yes`` only: ``clients`` spares files."""
    diff("RPUSH", "l", "a", "b")
    diff("HSET", "h", "f", "v")
    diff("ZADD", "z", "1", "m")
    diff("SADD", "s", "1", "2")
    diff("XADD", "x", "1-1", "f", "v")
    try:
        for mode in ("clients", "yes"):
            _sanitize(diff, mode)
            diff("CONFIG", "RESETSTAT")
            diff("DEBUG", "RELOAD")
            real, ours = diff.both("INFO", "stats")
            stat = [line for line in real.split(b"\r\n") if b"dump_payload_san" in line]
            assert stat and stat[0] in ours.split(b"\r\n"), (mode, stat, ours)
            assert (stat[0] != b"dump_payload_sanitizations:0") == (mode == "yes"), stat
    finally:
        _sanitize(diff, "no")


# -- packed encodings: the payload is the value's own buffer, byte for byte Redis's ------------
def test_dump_of_edited_packed_values(diff):
    """Listpack hashes and intsets after updates, deletes, integer/string fields and an
    intset upgrade that removals do not undo."""
    diff("HSET", "h", "f", "1", "12", "text", "-5", "x" * 64, "g", "2")
    diff("HSET", "h", "f", "changed", "12", "99999999999")
    diff("HDEL", "h", "g")
    diff("HINCRBY", "h", "n", "-4097")
    diff("DUMP", "h")
    diff("SADD", "s", "1", "-3", "70000", "5")
    diff("SREM", "s", "70000")
    diff("DUMP", "s")
    diff("SADD", "s", "9223372036854775807")
    diff("SREM", "s", "9223372036854775807", "1")
    diff("DUMP", "s")
    diff("OBJECT", "ENCODING", "s")
    diff("OBJECT", "ENCODING", "h")


def test_restore_keeps_redis_packed_buffers(diff):
    """RESTORE of Redis's own payloads, then edits: the packed buffer carries on."""
    diff.real.call("SADD", "src", "7", "100000")
    diff.real.call("SREM", "src", "100000")  # an int32 intset holding a small member
    diff.real.call("HSET", "hsrc", "a", "1", "b", "two")
    for key in ("src", "hsrc"):
        payload = _bulk(diff.real.call("DUMP", key))
        diff("RESTORE", key + "-copy", "0", payload)
        diff("DUMP", key + "-copy")
    diff("SADD", "src-copy", "8")
    diff("HSET", "hsrc-copy", "c", "3")
    diff("DUMP", "src-copy")
    diff("DUMP", "hsrc-copy")
    diff("SMEMBERS", "src-copy")
    diff("HGETALL", "hsrc-copy")
