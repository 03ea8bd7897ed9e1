"""RESTORE of mutated DUMP payloads: a value pykv keeps is whole and self-consistent, and
pykv refuses exactly what Redis 7.0 refuses with ``sanitize-dump-payload yes``.

Valid payloads of every type and encoding come from real redis-server's DUMP (plus the
pre-7.0 ziplist/zipmap/quicklist-1 forms built here by hand), then get one mutation each
(flip, set, insert, delete, truncate) with the CRC-64 footer recomputed so the damage
reaches the decoder. For every mutation pykv must either answer ``-ERR Bad data format``
or store a value whose full read, ``OBJECT ENCODING``, ``DEBUG DIGEST-VALUE`` and DUMP
round trip all agree; the server must stay up and never log a traceback. The same payload
goes to redis-server: where both keep it, the two values must read the same (and digest
the same); pykv may refuse what Redis keeps only if Redis's copy then contradicts itself,
or if the object does not end exactly at the footer (the differences
``pykv.storage.rdb.integrity`` documents). The default run is a bounded slice; ``-m slow``
runs the long one.
"""
from __future__ import annotations

import random
import shutil
import struct

import pytest
import redis
from support.servers import REDIS_SERVER, RealRedis

from pykv.config import Config
from pykv.storage.rdb._codec import crc64
from pykv.storage.rdb.encoding import RdbFormatError, RdbReader
from pykv.storage.rdb.integrity import Integrity
from pykv.storage.rdb.objects import load_object
from pykv.testing import Server

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")

BAD = (b"Bad data format", b"DUMP payload version or checksum are wrong")


# -- seeds ------------------------------------------------------------------------------------
def _redis_seeds(r: redis.Redis) -> dict[str, bytes]:
    """DUMP payloads of every type and encoding Redis 7.0 writes."""
    r.flushall()
    r.set("str:int", "12345")
    r.set("str:short", "hello world")
    r.set("str:lzf", "abcdefgh" * 40)
    r.rpush("list:lp", "a", "17", "-300", "x" * 70, "70000", "4294967296")
    r.config_set("list-max-listpack-size", "4")
    r.rpush("list:nodes", *[f"e{i}" for i in range(11)])
    r.config_set("list-max-listpack-size", "-2")
    r.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100")
    r.rpush("list:plain", "small", "p" * 150, "tail")
    r.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0")
    r.sadd("set:intset", "-70000", "-5", "1", "300", "5000000000")
    r.sadd("set:ht", "a", "b", "c", "17")
    r.zadd("zset:lp", {"a": 1, "b": 2.5, "c": -3, "d": float("inf"), "e": 2.5})
    r.zadd("zset:sl", {f"m{i}": i / 3 for i in range(140)})
    r.hset("hash:lp", mapping={"f1": "v1", "f2": "2", "n": "-99999999999"})
    r.hset("hash:ht", mapping={f"f{i}": f"v{i}" for i in range(130)})
    r.xadd("stream", {"a": "1", "b": "2"}, id="1-1")
    r.xadd("stream", {"a": "3", "b": "4"}, id="1-2")
    r.xadd("stream", {"c": "5"}, id="2-0")
    r.xadd("stream", {"a": "6", "b": "7"}, id="3-5")
    r.xdel("stream", "1-2")
    r.xgroup_create("stream", "g1", id="0")
    r.xreadgroup("g1", "alice", {"stream": ">"}, count=2)
    r.xreadgroup("g1", "bob", {"stream": ">"}, count=1)
    r.xgroup_create("stream", "g2", id="2-0")
    return {k.decode(): r.dump(k) for k in r.keys("*")}


def _payload(type_byte: int, body: bytes) -> bytes:
    data = bytes([type_byte]) + body + struct.pack("<H", 10)
    return data + crc64(0, data).to_bytes(8, "little")


def _rdb_string(blob: bytes) -> bytes:
    n = len(blob)
    head = bytes([n]) if n < 64 else bytes([0x40 | (n >> 8), n & 0xFF]) if n < 16384 \
        else b"\x80" + n.to_bytes(4, "big")
    return head + blob


def _ziplist(items: list[bytes]) -> bytes:
    entries, prev, tail = [], 0, 10
    for item in items:
        if item.isdigit() and len(item) < 5:
            body = b"\xc0" + int(item).to_bytes(2, "little", signed=True)
        else:
            body = bytes([len(item)]) + item
        entry = bytes([prev]) + body
        tail = 10 + sum(map(len, entries))
        entries.append(entry)
        prev = len(entry)
    data = b"".join(entries)
    total = 10 + len(data) + 1
    return (total.to_bytes(4, "little") + tail.to_bytes(4, "little")
            + len(items).to_bytes(2, "little") + data + b"\xff")


def _zipmap(pairs: list[tuple[bytes, bytes]]) -> bytes:
    out = bytes([len(pairs)])
    for field, value in pairs:
        out += bytes([len(field)]) + field + bytes([len(value), 0]) + value
    return out + b"\xff"


def _legacy_seeds() -> dict[str, bytes]:
    """The encodings Redis < 7 wrote, which Redis 7.0 still restores."""
    items = [b"a", b"17", b"hello", b"300"]
    return {
        "legacy:list-ziplist": _payload(10, _rdb_string(_ziplist(items))),
        "legacy:quicklist-1": _payload(14, b"\x02" + _rdb_string(_ziplist(items[:2]))
                                       + _rdb_string(_ziplist(items[2:]))),
        "legacy:hash-ziplist": _payload(13, _rdb_string(_ziplist(items))),
        "legacy:zset-ziplist": _payload(12, _rdb_string(_ziplist([b"m1", b"1", b"m2", b"25"]))),
        "legacy:hash-zipmap": _payload(9, _rdb_string(_zipmap([(b"f", b"v"), (b"g", b"12")]))),
    }


# -- mutations --------------------------------------------------------------------------------
def mutate(payload: bytes, rnd: random.Random) -> bytes:
    """One random byte-level change to the object bytes, with a recomputed footer (now and
    then a stale one, which must fail the checksum)."""
    body = bytearray(payload[:-10])
    pos = rnd.randrange(len(body))
    kind = rnd.randrange(5)
    if kind == 0:
        body[pos] ^= 1 << rnd.randrange(8)
    elif kind == 1:
        body[pos] = rnd.choice((0, 1, 0x7F, 0x80, 0xFE, 0xFF, rnd.randrange(256)))
    elif kind == 2:
        body.insert(pos, rnd.randrange(256))
    elif kind == 3:
        del body[pos]
    else:
        del body[max(1, pos):]
    data = bytes(body) + payload[-10:-8]
    if rnd.random() < 0.02:
        return data + payload[-8:]
    return data + crc64(0, data).to_bytes(8, "little")


# -- reading a value whole ----------------------------------------------------------------------
def read_value(r: redis.Redis, key: str) -> tuple[tuple, list[str]]:
    """(normalised contents, self-contradictions) of ``key`` through every read command."""
    t = r.type(key).decode()
    problems: list[str] = []
    if t == "string":
        value = r.get(key)
        if r.strlen(key) != len(value):
            problems.append("STRLEN")
        return (t, value), problems
    if t == "list":
        items = r.lrange(key, 0, -1)
        n = len(items)
        if r.llen(key) != n:
            problems.append("LLEN")
        if r.lrange(key, -n, -1) != items or (n and r.lindex(key, -1) != items[-1]):
            problems.append("reverse walk")
        return (t, tuple(items)), problems
    if t == "set":
        members = r.smembers(key)
        if r.scard(key) != len(members) or not all(r.sismember(key, m) for m in members) \
                or not set(r.srandmember(key, 5)) <= members:
            problems.append("SCARD/SISMEMBER/SRANDMEMBER")
        return (t, tuple(sorted(members))), problems
    if t == "hash":
        flat = r.execute_command("HGETALL", key)
        pairs = list(zip(flat[::2], flat[1::2], strict=True)) if isinstance(flat, list) \
            else list(flat.items())
        fields = {f for f, _ in pairs}
        if r.hlen(key) != len(pairs) or len(fields) != len(pairs) \
                or any(r.hget(key, f) != v for f, v in pairs) \
                or r.hkeys(key) != [f for f, _ in pairs] or r.hvals(key) != [v for _, v in pairs]:
            problems.append("HLEN/HGET/HKEYS/HVALS")
        return (t, tuple(sorted(pairs))), problems
    if t == "zset":
        pairs = r.zrange(key, 0, -1, withscores=True)
        if r.zcard(key) != len(pairs) or any(s != s for _, s in pairs) \
                or [(s, m) for m, s in pairs] != sorted((s, m) for m, s in pairs) \
                or any(r.zscore(key, m) != s for m, s in pairs) \
                or any(r.zrank(key, m) != i for i, (m, _) in enumerate(pairs)) \
                or r.zrangebyscore(key, "-inf", "+inf") != [m for m, _ in pairs] \
                or r.zrevrange(key, 0, -1) != [m for m, _ in reversed(pairs)]:
            problems.append("ZSET order/scores/ranks")
        return (t, tuple(pairs)), problems
    if t == "stream":
        return _read_stream(r, key, problems), problems
    return (t,), problems


def _sid(raw: bytes) -> tuple[int, int]:
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


def _read_stream(r: redis.Redis, key: str, problems: list[str]) -> tuple:
    entries = r.xrange(key)
    ids = [_sid(i) for i, _ in entries]
    if r.xlen(key) != len(entries) or ids != sorted(set(ids)):
        problems.append("XLEN/XRANGE order")
    if r.xrevrange(key) != list(reversed(entries)):
        problems.append("XREVRANGE")
    info = r.xinfo_stream(key)
    r.execute_command("XINFO", "STREAM", key, "FULL")  # must answer, whatever it holds
    if ids and _sid(info["last-generated-id"]) < ids[-1]:
        problems.append("last-generated-id")
    if info["entries-added"] < len(entries):
        problems.append("entries-added")
    groups = []
    for g in r.xinfo_groups(key):
        name = g["name"]
        consumers = r.xinfo_consumers(key, name)
        pending = r.xpending_range(key, name, "-", "+", 10_000)
        owners = {c["name"]: c["pending"] for c in consumers}
        if g["pending"] != len(pending) or sum(owners.values()) != len(pending) \
                or any(p["consumer"] not in owners for p in pending):
            problems.append("PEL")
        groups.append((name, g["last-delivered-id"], g["entries-read"],
                       tuple(sorted(owners.items())),
                       tuple((p["message_id"], p["consumer"], p["times_delivered"])
                             for p in pending)))
    return ("stream", tuple((i, tuple(sorted(f.items()))) for i, f in entries),
            info["last-generated-id"], info["entries-added"], info["max-deleted-entry-id"],
            tuple(groups))


def only_framing_differs(payload: bytes) -> bool:
    """Redis 7.0 reads a RESTORE object from the whole argument, footer included, and
    ignores what follows it: bytes after the object, or an object that runs on into the
    version and CRC, pass there. pykv refuses both (the object must end where the footer
    starts); True if that is the only reason pykv refused ``payload``."""
    r = RdbReader(payload)
    try:
        load_object(r, r.byte(), Config(), Integrity(True))
    except (RdbFormatError, ValueError, IndexError):
        return False
    return r.pos != len(payload) - 10


def why_refused(payload: bytes) -> str:
    """pykv's reason for refusing ``payload`` (for failure messages)."""
    from pykv.storage.rdb.objects import restore_payload, verify_payload

    if not verify_payload(payload):
        return "version or checksum"
    try:
        restore_payload(payload, Config(), Integrity(True))
    except (RdbFormatError, ValueError, IndexError) as exc:
        return repr(exc)
    return "accepted"


def restore(r: redis.Redis, key: str, payload: bytes) -> bool:
    """True if RESTORE kept the payload; False if refused as bad data."""
    try:
        r.restore(key, 0, payload, replace=True)
        return True
    except redis.ResponseError as exc:
        assert any(b.decode() in str(exc) for b in BAD), exc
        r.delete(key)
        return False


def check_kept(r: redis.Redis, key: str) -> tuple:
    """A kept value must agree with itself: reads, encoding, digest and a DUMP round trip."""
    contents, problems = read_value(r, key)
    assert not problems, (key, problems, contents)
    encoding = r.object("encoding", key)
    digest = r.execute_command("DEBUG", "DIGEST-VALUE", key)
    again = r.dump(key)
    assert restore(r, key + ":again", again), "pykv refused its own DUMP"
    assert read_value(r, key + ":again")[0] == contents
    assert r.object("encoding", key + ":again") == encoding
    assert r.execute_command("DEBUG", "DIGEST-VALUE", key + ":again") == digest
    r.delete(key + ":again")
    return contents, encoding, digest


# -- the runs ---------------------------------------------------------------------------------------
def _sanitizing_redis() -> RealRedis:
    return RealRedis(["--sanitize-dump-payload", "yes"])


def _kill(real: RealRedis) -> None:
    """Stop a redis-server that may be stuck in a payload (SIGKILL, it may not get to
    SIGTERM)."""
    real.proc.kill()
    real.proc.wait(10)
    shutil.rmtree(real.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def servers():
    """{"real": redis-server, "ours": pykv}, both with sanitize-dump-payload yes (the
    fuzzer replaces "real" when a payload crashes or hangs it)."""
    ours = Server(config={"enable-debug-command": "yes", "sanitize-dump-payload": "yes"})
    held = {"real": _sanitizing_redis(), "ours": ours.start()}
    try:
        yield held
    finally:
        ours.stop()
        _kill(held["real"])


def _fuzz(servers, rounds: int, seed: int, compare: bool) -> dict[str, int]:
    real, ours = servers["real"], servers["ours"]
    rc = redis.Redis(port=real.port, socket_timeout=30)
    pc = redis.Redis(port=ours.port)
    seeds = {**_redis_seeds(rc), **_legacy_seeds()}
    rc.flushall()
    pc.flushall()
    stats = {"kept": 0, "refused": 0, "stricter": 0, "redis-crashed": 0}
    rnd = random.Random(seed)
    names = sorted(seeds)
    for i in range(rounds):
        name = names[i % len(names)]
        bad = mutate(seeds[name], rnd)
        kept = restore(pc, "k", bad)
        ours_read = check_kept(pc, "k") if kept else None
        stats["kept" if kept else "refused"] += 1
        if not compare:
            continue
        try:
            redis_kept = restore(rc, "k", bad)
            redis_read = read_value(rc, "k") if redis_kept else None
            redis_digest = rc.execute_command("DEBUG", "DIGEST-VALUE", "k")
        except (redis.ConnectionError, redis.TimeoutError):  # Redis 7.0 crashed or hung
            stats["redis-crashed"] += 1
            _kill(real)
            real = servers["real"] = _sanitizing_redis()
            rc = redis.Redis(port=real.port, socket_timeout=30)
            continue
        context = (name, bad.hex())
        if kept:
            assert redis_kept, ("pykv kept what Redis refuses", context)
            assert ours_read[0] == redis_read[0], ("contents differ", context)
            assert ours_read[1] == rc.object("encoding", "k"), ("encoding differs", context)
            assert ours_read[2] == redis_digest, ("digest differs", context)
        elif redis_kept:
            assert redis_read[1] or only_framing_differs(bad), \
                ("pykv refused a payload Redis keeps whole", why_refused(bad), redis_read[0],
                 context)
            stats["stricter"] += 1
    assert pc.ping()
    assert "Traceback" not in ours.log()
    return stats


def test_fuzz_mutated_payloads_bounded_slice(servers):
    stats = _fuzz(servers, rounds=2500, seed=11, compare=True)
    assert stats["kept"] and stats["refused"], stats


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_fuzz_mutated_payloads_long_run(servers):
    for seed in range(20):
        _fuzz(servers, rounds=2000, seed=1000 + seed, compare=True)


def test_fuzz_without_sanitization_keeps_only_whole_values():
    """``sanitize-dump-payload no`` (the default): pykv still never keeps a damaged value."""
    real = RealRedis()
    try:
        seeds = {**_redis_seeds(redis.Redis(port=real.port)), **_legacy_seeds()}
    finally:
        real.stop()
    with Server(config={"enable-debug-command": "yes"}) as ours:
        pc = redis.Redis(port=ours.port)
        rnd = random.Random(5)
        names = sorted(seeds)
        for i in range(300):
            if restore(pc, "k", mutate(seeds[names[i % len(names)]], rnd)):
                check_kept(pc, "k")
        assert pc.ping()
        assert "Traceback" not in ours.log()
