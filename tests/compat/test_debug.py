"""DEBUG subcommands that test tooling uses, compared with real redis-server 7.0.

Both servers run with ``enable-debug-command yes``. DEBUG OBJECT's address and clock fields
differ between two processes by nature, so those two are masked; every other field
(refcount, encoding, serializedlength, lru_seconds_idle, the quicklist fields) must be
Redis's, for every type and encoding.
"""
from __future__ import annotations

import re
import time

import pytest

# (setup commands, key) per type and encoding
OBJECTS = [
    ([("SET", "k", "0")], "int"),
    ([("SET", "k", "12345678")], "int large"),
    ([("SET", "k", "hello")], "embstr"),
    ([("SET", "k", "x" * 60)], "raw, compressible"),
    ([("SET", "k", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ")], "raw, incompressible"),
    ([("APPEND", "k", "ab")], "raw by append"),
    ([("RPUSH", "k", "a", "b", "c")], "list small"),
    ([("RPUSH", "k", *[str(i) for i in range(300)])], "list of integers"),
    ([("RPUSH", "k", *["v" * 100 + str(i) for i in range(200)])], "list of several nodes"),
    ([("HSET", "k", "f", "v", "g", "w")], "hash listpack"),
    ([("HSET", "k", *[x for i in range(200) for x in (f"f{i}", "v")])], "hash hashtable"),
    ([("SADD", "k", "1", "2", "3")], "set intset"),
    ([("SADD", "k", "a", "b")], "set hashtable"),
    ([("ZADD", "k", "1", "a", "2.5", "b")], "zset listpack"),
    ([("ZADD", "k", *[x for i in range(200) for x in (str(i), f"m{i}")])], "zset skiplist"),
    ([("XADD", "k", "1-1", "f", "v"), ("XADD", "k", "2-1", "f", "v", "g", "w")], "stream"),
    ([("XADD", "k", "1-1", "f", "v"), ("XGROUP", "CREATE", "k", "g", "0"),
      ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">")], "stream with group"),
    ([("PFADD", "k", "a", "b", "c")], "hyperloglog"),
    ([("SETRANGE", "k", "0", "abc")], "raw by setrange"),
    ([("SET", "k", "-5")], "negative int"),
]

_MASK = re.compile(rb"Value at:0x[0-9a-f]+|lru:\d+ ")
# Redis keeps one clock per object, and integers 0..9999 share one object (and its clock)
_SHARED_IDLE = re.compile(rb"lru_seconds_idle:\d+")


# the LRU clock ticks once a second: a tick between the write and DEBUG OBJECT makes a key
# touched a few milliseconds ago read 1 second idle, on either server
_JUST_TOUCHED = re.compile(rb"lru_seconds_idle:[01](?=\s)")


def _masked(reply: bytes) -> bytes:
    reply = _MASK.sub(lambda m: m.group().split(b":")[0] + b":* ", reply)
    if b"refcount:2147483647 " in reply:
        reply = _SHARED_IDLE.sub(b"lru_seconds_idle:*", reply)
    return _JUST_TOUCHED.sub(b"lru_seconds_idle:0-1", reply)


@pytest.mark.parametrize("setup,label", OBJECTS, ids=[label for _, label in OBJECTS])
def test_object_fields(diff, setup, label):
    for step in setup:
        diff(*step)
    real, ours = diff.both("DEBUG", "OBJECT", "k")
    assert _masked(ours) == _masked(real), f"{label}:\n  redis: {real!r}\n  pykv:  {ours!r}"
    diff("DEBUG", "LISTPACK", "k")
    diff("DEBUG", "QUICKLIST", "k")
    diff("DEBUG", "QUICKLIST", "k", "1")


def test_object_fields_follow_list_config(diff):
    diff("CONFIG", "SET", "list-max-listpack-size", "5")
    diff("CONFIG", "SET", "list-compress-depth", "1")
    try:
        diff("RPUSH", "k", *[str(i) for i in range(23)])
        real, ours = diff.both("DEBUG", "OBJECT", "k")
        assert _masked(ours) == _masked(real)
    finally:
        for d in (diff.real, diff.ours):
            d.call("CONFIG", "SET", "list-max-listpack-size", "-2")
            d.call("CONFIG", "SET", "list-compress-depth", "0")


def test_object_idle_and_errors(diff):
    diff("SET", "k", "v")
    diff("DEBUG", "OBJECT", "missing")
    diff("DEBUG", "OBJECT")
    diff("DEBUG", "LISTPACK", "missing")
    diff("DEBUG", "QUICKLIST", "missing")
    diff("DEBUG", "QUICKLIST", "k", "1", "2")
    real, ours = diff.both("DEBUG", "OBJECT", "k")
    assert re.search(rb"lru_seconds_idle:0\r", ours) and re.search(rb"lru_seconds_idle:0\r",
                                                                    real)


def test_help(diff, diff3):
    diff("DEBUG", "HELP")
    diff3("DEBUG", "HELP")
    diff("DEBUG", "HELP", "extra")


POPULATE = [
    ("DEBUG", "POPULATE", "10"),
    ("DEBUG", "POPULATE", "3", "pre"),
    ("DEBUG", "POPULATE", "3", "sized", "20"),
    ("DEBUG", "POPULATE", "3", "short", "3"),
    ("DEBUG", "POPULATE", "2", "zero", "0"),
    ("DEBUG", "POPULATE", "0"),
    ("DEBUG", "POPULATE", "-1"),
    ("DEBUG", "POPULATE", "abc"),
    ("DEBUG", "POPULATE", "2", "p", "-5"),
    ("DEBUG", "POPULATE", "2", "p", "x"),
    ("DEBUG", "POPULATE", "1", "p", "1", "extra"),
    ("DEBUG", "POPULATE"),
]


@pytest.mark.parametrize("cmd", POPULATE, ids=[" ".join(c[2:]) or "-" for c in POPULATE])
def test_populate(diff, cmd):
    diff("SET", "key:1", "kept")  # an existing key is left alone
    diff(*cmd)
    diff("DBSIZE")
    for key in ("key:0", "key:1", "key:9", "pre:2", "sized:1", "short:2", "zero:1"):
        diff("GET", key)
        diff("STRLEN", key)
        diff("OBJECT", "ENCODING", key)


def test_populate_signals_watch_but_no_dirty(diff):
    diff("WATCH", "key:0")
    diff("DEBUG", "POPULATE", "1")
    diff("MULTI")
    diff("PING")
    diff("EXEC")


@pytest.mark.parametrize("mode", ["1", "0", "junk", "2x"])
def test_flag_subcommands(diff, mode):
    for sub in ("SET-ACTIVE-EXPIRE", "SET-DISABLE-DENY-SCRIPTS", "PAUSE-CRON"):
        diff("DEBUG", sub, mode)
        diff("DEBUG", sub)
    for sub in ("SET-ACTIVE-EXPIRE", "SET-DISABLE-DENY-SCRIPTS", "PAUSE-CRON"):
        diff("DEBUG", sub, "0" if sub != "SET-ACTIVE-EXPIRE" else "1")


def test_set_disable_deny_scripts(diff):
    script = "return redis.call('config', 'get', 'maxmemory')"
    diff("EVAL", script, "0")
    try:
        diff("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")
        diff("EVAL", script, "0")
    finally:
        diff("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")
    diff("EVAL", script, "0")


def _wait_dbsize(d, want: bytes, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    for client in (d.real, d.ours):
        while client.call("DBSIZE") != want:
            assert time.monotonic() < deadline, f"DBSIZE never became {want!r}"
            time.sleep(0.05)


@pytest.mark.parametrize("sub", ["PAUSE-CRON", "SET-ACTIVE-EXPIRE"])
def test_background_expiry_stops_and_resumes(diff, sub):
    off, on = ("1", "0") if sub == "PAUSE-CRON" else ("0", "1")
    diff("DEBUG", sub, off)
    try:
        diff("SET", "k", "v", "PX", "20")
        time.sleep(0.4)  # several cron ticks: nothing expires the key in the background
        diff("DBSIZE")
    finally:
        diff("DEBUG", sub, on)
    _wait_dbsize(diff, b":0\r\n")


def test_quicklist_packed_threshold(diff):
    for arg in ("100", "1gb", "0", "5gb", "-1", "junk", "4gb"):
        diff("DEBUG", "QUICKLIST-PACKED-THRESHOLD", arg)
    diff("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1gb")


def test_change_repl_id_and_sleep(diff):
    diff("DEBUG", "CHANGE-REPL-ID")
    diff("DEBUG", "CHANGE-REPL-ID", "x")
    diff("DEBUG", "SLEEP", "0")
    diff("DEBUG", "SLEEP", "0.01")
    diff("DEBUG", "SLEEP", "junk")


def test_stringmatch_subcommands(diff):
    diff("DEBUG", "STRINGMATCH-LEN")  # Redis 7.2's, unknown to 7.0
    diff("DEBUG", "STRINGMATCH-LEN", "10")
    diff("DEBUG", "JMAP")


def test_mallctl_as_without_jemalloc(diff):
    """MALLCTL and MALLCTL-STR exist only in a jemalloc build; pykv answers as a Redis
    built without jemalloc: the unknown-subcommand error (compared with Redis's text for
    a subcommand it does not know, since Debian's Redis has jemalloc)."""
    for sub in ("MALLCTL", "MALLCTL-STR"):
        for args in (["x"], ["x", "1"]):
            ours = diff.ours.call("DEBUG", sub, *args)
            real = diff.real.call("DEBUG", "NO-" + sub, *args)
            assert ours == real.replace(b"NO-" + sub.encode(), sub.encode())


def test_unknown_and_refused(diff):
    diff("DEBUG", "NOSUCH")
    diff("DEBUG", "REPLYBUFFER", "NOSUCH", "1")
    diff("DEBUG", "REPLYBUFFER", "RESIZING")


def _rbs(admin, client_id: bytes) -> int:
    line = admin.call("CLIENT", "LIST", "ID", client_id.decode())
    return int(re.search(rb" rbs=(\d+) ", line).group(1))


def _wait_rbs(pairs, check, what: str, poke=None, timeout: float = 10) -> None:
    """Wait (bounded) until ``check(rbs)`` holds for the test client on both servers."""
    deadline = time.monotonic() + timeout
    for admin, client, cid in pairs:
        while True:
            if poke is not None:
                poke(client)
            if check(_rbs(admin, cid)):
                break
            assert time.monotonic() < deadline, f"reply buffer never {what}"
            time.sleep(0.05)


def test_replybuffer_resizing(diff, real_redis, pykv_proc):
    """Redis's reply buffer cron: an idle client's buffer shrinks to 1 KiB, big replies
    grow it back to 16 KiB (while the peak is kept), and RESIZING 0 freezes it."""
    from support.resp import RawClient

    pairs = []
    for admin, port in ((diff.real, real_redis.port), (diff.ours, pykv_proc.port)):
        client = RawClient(port=port)
        pairs.append((admin, client, client.call("CLIENT", "ID")[1:-2]))
    try:
        diff("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100")
        diff("SET", "bigval", "x" * 32768)
        for _, client, _ in pairs:
            client.call("PING")
        _wait_rbs(pairs, lambda n: n == 1024, "shrank to 1024")
        diff("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never")
        _wait_rbs(pairs, lambda n: n == 16384, "grew to 16384",
                  poke=lambda c: c.call("GET", "bigval"))
        diff("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "reset")
        diff("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "junk")
        diff("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100")
        _wait_rbs(pairs, lambda n: n == 1024, "shrank back to 1024")
        diff("DEBUG", "REPLYBUFFER", "RESIZING", "0")
        for _, client, _ in pairs:
            client.call("GET", "bigval")
        time.sleep(0.5)  # several cron ticks: nothing may change now
        sizes = [_rbs(admin, cid) for admin, _, cid in pairs]
        assert sizes == [1024, 1024], sizes
        for admin, _, _ in pairs:
            info = admin.call("INFO", "stats")
            shrinks = int(re.search(rb"reply_buffer_shrinks:(\d+)", info).group(1))
            expands = int(re.search(rb"reply_buffer_expands:(\d+)", info).group(1))
            assert shrinks > 0 and expands > 0, info
    finally:
        for admin, client, _ in pairs:
            admin.call("DEBUG", "REPLYBUFFER", "RESIZING", "1")
            admin.call("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "reset")
            client.close()


def _compressible(seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    out = ["x" * 60, "abc" * 13, "hello world " * 10, "".join(map(chr, range(32, 127))) * 3]
    for _ in range(40):
        alphabet = rng.choice(["ab", "abcdef", "0123456789", "the quick brown fox "])
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(21, 3000))))
    return out


def test_compressed_values_are_redis_bytes(diff):
    """Strings over 20 bytes are LZF-compressed in DUMP payloads (and RDB files, and so in
    DEBUG OBJECT's serializedlength): pykv's compressor makes liblzf's choices, so the
    payloads are the same bytes."""
    for value in _compressible(7):
        diff("SET", "k", value)
        diff("DUMP", "k")
        real, ours = diff.both("DEBUG", "OBJECT", "k")
        assert _masked(ours) == _masked(real)


@pytest.fixture(scope="module")
def debug_disabled_pair():
    from support.servers import REDIS_SERVER, server_pair

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    with server_pair({"enable-debug-command": "no"}) as ports:
        yield ports


def test_debug_refused_when_disabled(diff, debug_disabled_pair):
    """enable-debug-command no: refused before anything else, so inside MULTI the
    transaction fails too (Redis's CMD_PROTECTED check in processCommand)."""
    from support.resp import RawClient

    d = type(diff)(RawClient(port=debug_disabled_pair[0]),
                   RawClient(port=debug_disabled_pair[1]))
    try:
        d("CONFIG", "RESETSTAT")
        d("DEBUG", "SLEEP", "0")
        d("DEBUG", "HELP")
        d("DEBUG")
        d("MULTI")
        d("DEBUG", "OBJECT", "k")
        d("SET", "k", "v")
        d("EXEC")
        d("EXISTS", "k")
        d("INFO", "errorstats")
    finally:
        d.real.close()
        d.ours.close()
