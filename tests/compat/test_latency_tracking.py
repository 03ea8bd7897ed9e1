"""Per-command latency tracking against real redis-server: LATENCY HISTOGRAM (shapes,
filters, errors, RESP3), INFO latencystats, latency-tracking no, CONFIG RESETSTAT, and
blocked commands.

Durations differ between the two servers, so most replies are compared decoded: the same
commands with the same call counts, and histograms of Redis's shape (level labels from
Redis's set, cumulative counts rising to the call count). A call of at least one second is
clamped to the histogram's top by both, which makes ``DEBUG SLEEP 1`` byte-comparable.
Both servers list commands in their own order (Redis: hash order), so entries are sorted.
"""
from __future__ import annotations

import re
import time
from itertools import pairwise

import pytest
from resp_values import parse
from support.resp import RawClient
from support.servers import RealRedis

from pykv.testing import Server

LABELS = {1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
          135266, 270532, 541065, 1073741}


@pytest.fixture
def fresh(diff):
    """Both servers with their statistics reset, and tracking settings restored after."""
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "RESETSTAT")
    yield diff
    for c in (diff.real, diff.ours):
        c.call("CONFIG", "SET", "latency-tracking", "yes")
        c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9")


def _entries(reply: bytes) -> list[tuple[bytes, int, dict[int, int]]]:
    """LATENCY HISTOGRAM decoded (RESP2 or RESP3): (name, calls, histogram), sorted."""
    value = parse(reply)
    pairs = value[1] if isinstance(value, tuple) else list(zip(value[::2], value[1::2], strict=True))
    out = []
    for name, entry in pairs:
        fields = dict(entry[1] if isinstance(entry, tuple) else zip(entry[::2], entry[1::2], strict=True))
        assert list(fields) == [b"calls", b"histogram_usec"]
        hist = fields[b"histogram_usec"]
        hist = hist[1] if isinstance(hist, tuple) else list(zip(hist[::2], hist[1::2], strict=True))
        out.append((name, fields[b"calls"], dict(hist)))
    return sorted(out)


def _check_histogram(calls: int, hist: dict[int, int]) -> None:
    assert hist and set(hist) <= LABELS
    labels = list(hist)
    counts = list(hist.values())
    assert labels == sorted(labels)
    assert all(a < b for a, b in pairwise(counts))  # only levels where it grew
    assert counts[-1] == calls


def _same_histograms(diff, *args, resp3: bool = False) -> list[tuple[bytes, int]]:
    """Send LATENCY HISTOGRAM *args to both; compare names and calls, check the shapes."""
    real, ours = diff.both("LATENCY", "HISTOGRAM", *args)
    assert ours[:1] == (b"%" if resp3 else b"*") == real[:1]
    r, o = _entries(real), _entries(ours)
    assert [(n, c) for n, c, _ in o] == [(n, c) for n, c, _ in r], (real, ours)
    for _, calls, hist in r + o:
        _check_histogram(calls, hist)
    return [(n, c) for n, c, _ in o]


def _workload(diff) -> None:
    diff("SET", "k", "v")
    diff("GET", "k")
    diff("GET", "k")
    diff("CONFIG", "GET", "maxmemory")
    diff("MULTI")
    diff("INCR", "n")
    diff("EXEC")
    diff("EVAL", "return redis.call('incr', 'n')", "0")


def test_histogram_filters(fresh):
    diff = fresh
    assert _same_histograms(diff) == [(b"config|resetstat", 1)]
    _workload(diff)
    everything = _same_histograms(diff)
    assert (b"incr", 2) in everything and (b"get", 2) in everything
    assert (b"latency|histogram", 1) in everything  # recorded after it has answered
    for args in (["get"], ["GET", "set"], ["config"], ["CONFIG|GET"], ["config|get"],
                 ["nosuch"], ["set|x"], ["config|"], ["|get"], ["config|get|x"],
                 ["get", "get", "nosuch", "get"], ["latency", "exec", "multi", "eval"],
                 ["keys"], [""]):
        _same_histograms(diff, *args)
    assert _same_histograms(diff, "get", "GET") == [(b"get", 2), (b"get", 2)]
    assert _same_histograms(diff, "config") == [(b"config|get", 1), (b"config|resetstat", 1)]
    assert _same_histograms(diff, "nosuch", "keys") == []


def test_histogram_resp3(fresh, diff3):
    _workload(fresh)
    _same_histograms(diff3, resp3=True)
    _same_histograms(diff3, "get", "config", "get", resp3=True)
    diff3("LATENCY", "HISTOGRAM", "nosuch")


def test_histogram_of_a_one_second_call_is_exact(fresh, diff3):
    diff = fresh
    diff("DEBUG", "SLEEP", "1")
    diff("LATENCY", "HISTOGRAM", "debug")
    diff("LATENCY", "HISTOGRAM", "DEBUG", "nosuch", "debug")
    diff3("LATENCY", "HISTOGRAM", "debug")
    diff("CONFIG", "SET", "latency-tracking-info-percentiles", "0 50 99.9 100")
    real, ours = diff.both("INFO", "latencystats")
    line = b"latency_percentiles_usec_debug:p0=998244.352,p50=1002438.655,p99.9=1002438.655," \
           b"p100=1002438.655\r\n"
    assert line in real and line in ours


@pytest.mark.parametrize("args", [["LATENCY"], ["LATENCY", "HISTOGRAMX"],
                                  ["LATENCY", "histogramx", "get"], ["LATENCY", "HELP", "x"]])
def test_errors(diff, diff3, args):
    diff(*args)
    diff3(*args)


def test_help_lists_histogram(diff):
    real, ours = diff.both("LATENCY", "HELP")
    syntax = [ln for ln in parse(real) if not ln.startswith(b" ")]
    assert b"HISTOGRAM [COMMAND ...]" in syntax
    assert [ln for ln in parse(ours) if not ln.startswith(b" ")] == syntax
    assert len(parse(ours)) == len(parse(real))


def test_command_introspection(diff, diff3):
    # (COMMAND DOCS, whose prose is pykv's own, is compared masked for every implemented
    # command in test_command_introspection.py)
    diff("COMMAND", "INFO", "latency|histogram")
    diff3("COMMAND", "INFO", "latency|histogram")
    real, ours = diff.both("COMMAND", "LIST", "FILTERBY", "PATTERN", "latency|h*")
    assert sorted(parse(ours)) == sorted(parse(real)) == [b"latency|help", b"latency|histogram",
                                                          b"latency|history"]


_LINE = re.compile(r"latency_percentiles_usec_([a-z|_-]+):(.*)")


def _latencystats(reply: bytes) -> dict[str, list[tuple[str, float]]]:
    text = parse(reply).decode()
    lines = text.split("\r\n")
    assert lines[0] == "# Latencystats" and lines[-1] == ""
    out = {}
    for line in lines[1:-1]:
        m = _LINE.fullmatch(line)
        assert m, line
        values = []
        for item in filter(None, m.group(2).split(",")):
            name, _, number = item.partition("=")
            assert re.fullmatch(r"p[0-9.]+", name) and re.fullmatch(r"\d+\.\d{3}", number)
            values.append((name, float(number)))
        out[m.group(1)] = values
    return out


def _is_hdr_value(usec: float) -> bool:
    """Whether a percentile is the top (or, for p0, the bottom) of one of Redis's histogram
    counters, or 1 ns (a call under 1 µs)."""
    ns = round(usec * 1000)
    if ns < 256:
        return ns == 1
    width = 1 << (ns.bit_length() - 8)
    return (ns + 1) % width == 0 or ns % width == 0


def _same_latencystats(diff) -> dict[str, list[tuple[str, float]]]:
    real, ours = diff.both("INFO", "latencystats")
    r, o = _latencystats(real), _latencystats(ours)
    assert sorted(o) == sorted(r)
    for name in o:
        assert [p for p, _ in o[name]] == [p for p, _ in r[name]]
        values = [v for _, v in o[name]]
        assert all(_is_hdr_value(v) for v in values), (name, values)
    return o


def test_info_latencystats(fresh):
    diff = fresh
    _workload(diff)
    stats = _same_latencystats(diff)
    assert {"get", "set", "incr", "multi", "exec", "eval", "config|get"} <= set(stats)
    for values in stats.values():
        assert [p for p, _ in values] == ["p50", "p99", "p99.9"]
        assert [v for _, v in values] == sorted(v for _, v in values)
    diff("CONFIG", "SET", "latency-tracking-info-percentiles", "0 12.5 100 99.99 33.333333")
    stats = _same_latencystats(diff)
    assert [p for p, _ in stats["get"]] == ["p0", "p12.5", "p100", "p99.99", "p33.333333"]
    diff("CONFIG", "SET", "latency-tracking-info-percentiles", "")
    stats = _same_latencystats(diff)
    assert stats["get"] == []
    real, ours = diff.both("INFO", "everything")
    assert b"# Latencystats\r\nlatency_percentiles_usec_" in real
    assert b"# Latencystats\r\nlatency_percentiles_usec_" in ours
    real, ours = diff.both("INFO")
    assert b"Latencystats" not in real and b"Latencystats" not in ours


def test_tracking_off(fresh):
    diff = fresh
    diff("GET", "k")
    diff("CONFIG", "SET", "latency-tracking", "no")
    diff("GET", "k")
    diff("SET", "k", "v")
    diff("INFO", "latencystats")  # the section is empty
    assert _same_histograms(diff, "get", "set") == [(b"get", 1)]  # still readable
    diff("CONFIG", "SET", "latency-tracking", "yes")
    diff("GET", "k")
    assert _same_histograms(diff, "get", "set") == [(b"get", 2)]


def test_resetstat_clears_histograms(fresh):
    diff = fresh
    _workload(diff)
    diff("CONFIG", "RESETSTAT")
    assert _same_histograms(diff) == [(b"config|resetstat", 1)]
    diff("LATENCY", "HISTOGRAM", "get", "incr", "exec")
    assert set(_same_latencystats(diff)) == {"config|resetstat", "latency|histogram"}


def _wait_blocked(client: RawClient, n: int) -> None:
    deadline = time.monotonic() + 10
    while b"blocked_clients:%d\r\n" % n not in client.call("INFO", "clients"):
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_blocked_commands(fresh, real_redis, pykv_proc):
    diff = fresh
    diff("BLPOP", "nokey", "0.05")  # times out: counted as a call, not in the histogram
    diff("LATENCY", "HISTOGRAM", "blpop")
    real, ours = diff.both("INFO", "commandstats")
    assert b"cmdstat_blpop:calls=1," in real and b"cmdstat_blpop:calls=1," in ours
    waiters = [RawClient(port=real_redis.port), RawClient(port=pykv_proc.port)]
    for w in waiters:
        w.send_raw(b"*3\r\n$5\r\nBRPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
    _wait_blocked(diff.real, 1)
    _wait_blocked(diff.ours, 1)
    diff("LATENCY", "HISTOGRAM", "brpop")  # not while blocked
    diff("LPUSH", "q", "a")
    for w in waiters:
        assert w.read_reply() == b"*2\r\n$1\r\nq\r\n$1\r\na\r\n"
        w.close()
    assert _same_histograms(diff, "brpop", "blpop") == [(b"brpop", 1)]  # served



def _written_then_reloaded(port: int, reload) -> RawClient:
    c = RawClient(port=port)
    for args in (["SET", "a", "1"], ["MULTI"], ["INCR", "n"], ["EXEC"]):
        c.call(*args)
    c.call("CONFIG", "RESETSTAT")
    if reload is None:
        assert c.call("DEBUG", "LOADAOF") == b"+OK\r\n"
        return c
    c.close()
    reload()
    return RawClient(port=port)


def test_aof_replay_keeps_no_statistics(tmp_path):
    """Commands loaded from the AOF are neither calls nor latency samples (Redis: DEBUG
    LOADAOF; pykv: a restart)."""
    real = RealRedis(extra=["--appendonly", "yes"])
    try:
        with Server(config={"appendonly": "yes", "dir": str(tmp_path)}) as ours:
            for c in (_written_then_reloaded(real.port, None),
                      _written_then_reloaded(ours.port, ours.restart)):
                assert c.call("GET", "n") == b"$1\r\n1\r\n"
                assert c.call("LATENCY", "HISTOGRAM", "set", "incr", "multi", "exec") == \
                    b"*0\r\n"
                stats = c.call("INFO", "commandstats")
                assert b"cmdstat_set" not in stats and b"cmdstat_incr" not in stats, stats
                # this test's own commands since the reload (the replay would add 5 more)
                processed = re.search(rb"total_commands_processed:(\d+)", c.call("INFO", "stats"))
                assert int(processed.group(1)) <= 5
                c.close()
    finally:
        real.stop()
