"""Server commands against real redis-server: INFO shape, flushes, SWAPDB, SLOWLOG, LATENCY,
DEBUG, MONITOR, SHUTDOWN errors, LOLWUT."""
from __future__ import annotations

import re
import time

import pytest
from support.resp import RawClient


def _bulk(reply: bytes) -> bytes:
    head, body = reply.split(b"\r\n", 1)
    assert head[:1] in (b"$", b"="), reply[:50]
    return body[:-2]


def _info_layout(text: bytes) -> list[tuple[str, list[str]]]:
    sections = []
    for block in text.decode().split("\r\n\r\n"):
        lines = [ln for ln in block.split("\r\n") if ln]
        assert lines[0].startswith("# ")
        sections.append((lines[0], [ln.split(":", 1)[0] for ln in lines[1:]]))
    return sections


STATIC_SECTIONS = ["server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                   "cluster"]


@pytest.mark.parametrize("section", STATIC_SECTIONS)
def test_info_section_fields_in_redis_order(diff, section):
    real, ours = diff.both("INFO", section)
    (r_title, r_fields), = _info_layout(_bulk(real))
    (o_title, o_fields), = _info_layout(_bulk(ours))
    assert o_title == r_title
    extra = [f for f in o_fields if f.startswith("listener")]
    assert [f for f in o_fields if f not in extra] == r_fields
    if section == "server":
        assert extra and all(f"{f}:name=" in _bulk(ours).decode() for f in extra)


@pytest.mark.parametrize("args", [[], ["default"], ["all"], ["everything"], ["server", "cpu"],
                                  ["KEYSPACE", "clients"], ["default", "commandstats"],
                                  ["nosuch"], ["modules"]])
def test_info_section_selection(diff, args):
    diff("SET", "k", "v")
    real, ours = diff.both("INFO", *args)
    titles = [t for t, _ in _info_layout(_bulk(real))] if _bulk(real) else []
    mine = [t for t, _ in _info_layout(_bulk(ours))] if _bulk(ours) else []
    assert mine == titles


def test_info_values(raw, diff, diff3):
    diff("SET", "a", "1")
    diff("SET", "b", "1")
    diff("PEXPIRE", "b", "100000")
    diff("SELECT", "3")
    diff("SET", "c", "1")
    real, ours = diff.both("INFO", "keyspace")
    # avg_ttl is an estimate from the expire cycle's samples (and changes the bulk length)
    strip = re.compile(rb"avg_ttl=\d+")
    assert strip.sub(b"", _bulk(real)) == strip.sub(b"", _bulk(ours))
    diff("GET", "c", "x")
    diff("NOSUCH")
    info = _bulk(diff.ours.call("INFO", "commandstats", "errorstats")).decode()
    assert re.search(r"cmdstat_get:calls=\d+,usec=\d+,usec_per_call=\d+\.\d\d,"
                     r"rejected_calls=[1-9]\d*,failed_calls=\d+\r\n", info), info
    assert "errorstat_ERR:count=" in info
    assert b"redis_version:7.0.15\r\n" in _bulk(diff.ours.call("INFO"))
    assert diff3.ours.call("INFO", "server").startswith(b"=")
    assert diff3.real.call("INFO", "server").startswith(b"=")


def test_dbsize_flush_swapdb(diff):
    diff("MSET", "a", "1", "b", "2")
    diff("DBSIZE")
    diff("DBSIZE", "x")
    for args in (["FLUSHDB", "x"], ["FLUSHDB", "sync", "x"], ["FLUSHALL", "foo"],
                 ["SWAPDB", "a", "1"], ["SWAPDB", "1", "b"], ["SWAPDB", "0", "99"],
                 ["SWAPDB", "-1", "0"], ["SWAPDB", "0", "0"], ["SWAPDB", "0"]):
        diff(*args)
    diff("SWAPDB", "0", "5")
    diff("DBSIZE")
    diff("SELECT", "5")
    diff("MGET", "a", "b")
    diff("FLUSHDB", "ASYNC")
    diff("DBSIZE")
    diff("SELECT", "0")
    diff("SET", "x", "1")
    diff("FLUSHALL", "SYNC")
    diff("DBSIZE")


def test_swapdb_dirties_watch(diff):
    diff("SELECT", "1")
    diff("SET", "w", "1")
    diff("SELECT", "0")
    diff("WATCH", "w")
    diff("SWAPDB", "0", "1")
    diff("MULTI")
    diff("GET", "w")
    diff("EXEC")


def test_role_as_a_standalone_master(diff, diff3):
    for d in (diff, diff3):
        d("ROLE")
        d("ROLE", "extra")


def test_time_lastsave(raw):
    reply = raw.call("TIME")
    m = re.fullmatch(rb"\*2\r\n\$\d+\r\n(\d+)\r\n\$\d+\r\n(\d+)\r\n", reply)
    assert m and abs(int(m.group(1)) - time.time()) < 5 and int(m.group(2)) < 1_000_000
    last = raw.call("LASTSAVE")
    assert last.startswith(b":") and int(last[1:-2]) <= time.time() + 1


@pytest.mark.parametrize("args", [["foo"], ["ABORT"], ["nosave", "save"], ["abort", "now"],
                                  ["save", "foo"]])
def test_shutdown_errors(diff, args):
    diff("SHUTDOWN", *args)


def test_shutdown_inside_multi(diff):
    diff("MULTI")
    diff("SHUTDOWN")
    diff("EXEC")


def test_slowlog(diff):
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("SLOWLOG", "RESET")
    diff("SLOWLOG", "LEN")
    for args in (["GET", "-2"], ["GET", "x"], ["GET", "1", "2"], ["LEN", "x"], ["RESET", "x"]):
        diff("SLOWLOG", *args)
    diff("ECHO", "y" * 200)
    diff("SET", "k", "v")
    diff("SLOWLOG", "GET", "0")
    real, ours = diff.both("SLOWLOG", "GET", "3")
    scrub = re.compile(rb"\*6\r\n:\d+\r\n:\d+\r\n:\d+\r\n")
    addr = re.compile(rb"\$\d+\r\n127\.0\.0\.1:\d+\r\n")
    assert addr.sub(b"A", scrub.sub(b"E", real)) == addr.sub(b"A", scrub.sub(b"E", ours))
    assert b"... (72 more bytes)" in ours
    args = ["RPUSH", "l"] + [str(i) for i in range(40)]
    diff(*args)
    real, ours = diff.both("SLOWLOG", "GET", "1")
    assert b"... (11 more arguments)" in ours
    assert addr.sub(b"A", scrub.sub(b"E", real)) == addr.sub(b"A", scrub.sub(b"E", ours))
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def _slowlog_commands(client: RawClient) -> list[bytes]:
    """The command names in SLOWLOG GET -1 (newest first), lower-cased."""
    entries = client.call("SLOWLOG", "GET", "-1")
    return [n.lower() for n in re.findall(rb"\r\n\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n", entries)]


def test_slowlog_blocked_commands(real_redis, pykv_proc, diff):
    """As Redis 7.0: a blocking command is logged when it is served (with its arguments),
    not when it blocks, and not at all when it times out."""
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("SLOWLOG", "RESET")
    diff("BLPOP", "nokey", "0.05")                      # times out
    for c, port in ((diff.real, real_redis.port), (diff.ours, pykv_proc.port)):
        c.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n5\r\n")
        time.sleep(0.1)
        other = RawClient(port=port)
        assert other.call("LPUSH", "q", "x") == b":1\r\n"
        other.close()
        assert c.read_reply() == b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n"
    real, ours = _slowlog_commands(diff.real), _slowlog_commands(diff.ours)
    # newest first; the served BLPOP was logged after the LPUSH that served it
    assert ours == real, (real, ours)
    assert ours.count(b"blpop") == 1 and ours.index(b"blpop") < ours.index(b"lpush")
    entry = diff.ours.call("SLOWLOG", "GET", "-1")
    assert b"$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n5\r\n" in entry
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_latency_monitor(diff):
    for c in (diff.real, diff.ours):
        c.call("LATENCY", "RESET")
        c.call("CONFIG", "SET", "latency-monitor-threshold", "20")
    diff("LATENCY", "LATEST")
    diff("LATENCY", "HISTORY", "command")
    diff("LATENCY", "GRAPH", "nosuch")
    diff("LATENCY", "HISTORY")
    diff("LATENCY", "FOO")
    diff("DEBUG", "SLEEP", "0.05")
    real, ours = diff.both("LATENCY", "LATEST")
    norm = re.compile(rb":\d{9,}\r\n:(\d+)\r\n:(\d+)\r\n")
    r, o = norm.search(real), norm.search(ours)
    assert r and o and 50 <= int(o.group(1)) < 1000
    assert norm.sub(b"", real).replace(b"$7\r\ncommand", b"") == \
        norm.sub(b"", ours).replace(b"$7\r\ncommand", b"")
    real, ours = diff.both("LATENCY", "HISTORY", "command")
    assert ours.startswith(b"*1\r\n*2\r\n:")
    real, ours = diff.both("LATENCY", "GRAPH", "command")
    assert _bulk(ours).split(b"\n")[:2] == [
        b"command - high %s ms, low %s ms (all time high %s ms)" % ((o.group(1),) * 3),
        b"-" * 80]
    doctor = _bulk(diff.ours.call("LATENCY", "DOCTOR"))
    assert b"command" in doctor
    diff("LATENCY", "RESET", "nosuch", "command")
    diff("LATENCY", "LATEST")
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "SET", "latency-monitor-threshold", "0")


@pytest.mark.parametrize("args", [
    ["foo"], ["sleep", "0"], ["sleep", "x"], ["sleep"], ["object", "nokey"], ["object"],
    ["set-active-expire", "1"], ["jmap"], ["quicklist-packed-threshold", "x"],
    ["quicklist-packed-threshold", "10"], ["log", "hello"], ["error", "boom"],
    ["error", "WRONGTYPE custom"], ["digest"], ["digest-value", "nokey"],
    ["change-repl-id", "x"], ["protocol", "foo"],
    ["replybuffer", "resizing", "1"],
] + [["protocol", t] for t in ("string", "integer", "double", "bignum", "null", "array", "set",
                               "map", "attrib", "push", "verbatim", "true", "false")])
def test_debug(diff, diff3, args):
    try:
        diff("DEBUG", *args)
        diff3("DEBUG", *args)
    finally:  # a process-wide setting: later tests (DUMP bytes of lists) need the default
        if args[0] == "quicklist-packed-threshold":
            for c in (diff.real, diff.ours):
                c.call("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0")


def test_debug_object_and_digest(diff, raw):
    diff("SET", "k", "hello")
    real, ours = diff.both("DEBUG", "OBJECT", "k")
    shape = re.compile(rb"\+Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:\d+ "
                       rb"lru:\d+ lru_seconds_idle:\d+\r\n")
    assert shape.fullmatch(real) and shape.fullmatch(ours)
    digest = raw.call("DEBUG", "DIGEST")
    assert re.fullmatch(rb"\+[0-9a-f]{40}\r\n", digest) and b"0" * 40 not in digest
    raw.call("SET", "k2", "x")
    assert raw.call("DEBUG", "DIGEST") != digest


def test_debug_set_active_expire(raw):
    raw.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    raw.call("SET", "e", "1", "PX", "1")
    time.sleep(0.3)
    assert raw.call("DBSIZE") == b":1\r\n"  # not expired in the background
    raw.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    deadline = time.monotonic() + 3
    while raw.call("DBSIZE") != b":0\r\n" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert raw.call("DBSIZE") == b":0\r\n"


def test_monitor(pykv_proc, real_redis):
    lines = []
    for port in (real_redis.port, pykv_proc.port):
        mon = RawClient(port=port)
        assert mon.call("MONITOR") == b"+OK\r\n"
        c = RawClient(port=port)
        c.call("SELECT", "2")
        c.call("SET", "k", 'a "q"\n\x01\\')
        first, second = mon.read_reply(), mon.read_reply()
        lines.append((first, second))
        mon.close()
        c.close()
    pattern = re.compile(rb"\+\d+\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\] (.*)\r\n")
    for r, o in zip(lines[0], lines[1], strict=True):
        mr, mo = pattern.fullmatch(r), pattern.fullmatch(o)
        assert mr and mo and mr.groups() == mo.groups(), (r, o)
    assert lines[1][1].endswith(b'"SET" "k" "a \\"q\\"\\n\\x01\\\\"\r\n')


def test_lolwut(diff, diff3):
    diff("LOLWUT")
    diff("LOLWUT", "foo")
    diff("LOLWUT", "VERSION", "x")
    diff("LOLWUT", "VERSION", "5", "x")
    diff("LOLWUT", "VERSION", "1")
    diff3("LOLWUT")
    real, ours = diff.both("LOLWUT", "VERSION", "6", "20", "5")
    assert _bulk(ours).endswith(b"Redis ver. 7.0.15\n")


def test_debug_stringmatch_and_help(raw):
    # real redis runs a long fuzz test here; pykv checks its matcher and says the same thing
    assert raw.call("DEBUG", "STRINGMATCH-TEST") == \
        b"+Apparently Redis did not crash: test passed\r\n"
    help_reply = raw.call("DEBUG", "HELP")
    assert help_reply.startswith(b"*") and b"+SLEEP <seconds>\r\n" in help_reply


@pytest.mark.parametrize("args", [
    ["MEMORY", "USAGE", "nokey"], ["MEMORY", "USAGE", "a", "SAMPLES"],
    ["MEMORY", "USAGE", "a", "SAMPLES", "x"], ["MEMORY", "USAGE", "a", "SAMPLES", "-1"],
    ["MEMORY", "USAGE", "a", "foo", "1"], ["MEMORY", "USAGE", "nokey", "bar"],
    ["MEMORY", "USAGE", "nokey", "SAMPLES", "x"], ["MEMORY", "USAGE"], ["MEMORY", "NOSUCH"],
])
def test_memory_usage_arguments(diff, args):
    diff("SET", "a", "xyz")
    diff(*args)


def test_memory_usage_is_an_integer_that_grows_with_the_value(diff):
    # the figures are pykv's estimate, not Redis's: same reply type, same ordering
    def usage(*key_and_opts):
        real, ours = diff.both("MEMORY", "USAGE", *key_and_opts)
        assert real[:1] == ours[:1] == b":", (real, ours)
        return int(ours[1:-2])
    diff("SET", "small", "xyz")
    diff("SET", "int", "12345")
    diff("SET", "big", "x" * 5000)
    diff("RPUSH", "list", *[str(i) for i in range(200)])
    diff("RPUSH", "short", "1")
    assert usage("int") <= usage("small") < usage("big")
    assert 5000 < usage("big") < 6000
    assert usage("short") < usage("list") == usage("list", "SAMPLES", "0")
