"""Per-command latency histograms: where a duration lands, the LATENCY HISTOGRAM levels, the
INFO latencystats percentiles, and the dispatcher's recording under a fake clock.

The expected counters and numbers were read off real redis-server 7.0.15 (for instance a
5 µs call shows as p0=4.992 / p50=5.023, ``DEBUG SLEEP 0.3`` under the 541065 µs level).
"""
from __future__ import annotations

import pytest
from support.inproc import run

from pykv.assemble import build_server
from pykv.commands import latency
from pykv.server import _core, blocking
from pykv.server.client import Client
from pykv.server.server import Server

# every level label LATENCY HISTOGRAM can show, in order
LABELS = [1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
          135266, 270532, 541065, 1073741]


@pytest.fixture
def server():
    return build_server()


@pytest.fixture
def client(server):
    return Client(server, None, 1)


def fresh(server: Server, name: bytes = b"get"):
    cmd = server.commands.get(name)
    cmd.reset_stats()
    return cmd


@pytest.mark.parametrize("usec, counter", [
    (0, (1, 1)),                               # under 1 µs: Redis's 1 ns
    (1, (1000, 1003)),
    (2, (2000, 2007)),
    (3, (2992, 3007)),
    (5, (4992, 5023)),
    (206, (205824, 206847)),
    (300_000, (299892736, 301989887)),
    (600_000, (599785472, 603979775)),
    (1_000_000, (998244352, 1002438655)),      # 1 s, the histogram's top
    (1_200_000, (998244352, 1002438655)),      # clamped to 1 s
    (10**12, (998244352, 1002438655)),
])
def test_duration_lands_in_redis_counter(server, usec, counter):
    cmd = fresh(server)
    cmd.record_latency(usec)
    cmd.record_latency(usec)
    assert cmd.latency_counts() == [(*counter, 2)]
    assert cmd.lat_samples == 2


def test_counters_are_ordered_and_reset(server):
    cmd = fresh(server)
    for usec in (600_000, 5, 0, 5, 206, 1):
        cmd.record_latency(usec)
    assert cmd.latency_counts() == [(1, 1, 1), (1000, 1003, 1), (4992, 5023, 2),
                                    (205824, 206847, 1), (599785472, 603979775, 1)]
    cmd.reset_stats()
    assert cmd.latency_counts() == [] and cmd.lat_samples == 0
    cmd.record_latency(7)
    assert cmd.latency_counts() == [(6976, 7007, 1)]


def test_level_labels():
    assert [latency.level_label(i) for i in range(21)] == LABELS


def test_histogram_levels_are_cumulative_and_skip_flat_levels(server):
    cmd = fresh(server)
    for usec in (0, 1, 2, 3, 4, 5, 32, 33, 34, 206, 300_000, 600_000, 1_200_000):
        cmd.record_latency(usec)
    # 4 µs is 4000 ns, below the 4096 level; 33 µs shares the 32768 level's counter;
    # 34 µs (34000 ns) is past it; nothing between the 8 and 33 levels or 66 and 264
    assert latency.histogram_usec(cmd.latency_counts()) == {
        1: 2, 2: 3, 4: 5, 8: 6, 33: 8, 66: 9, 264: 10, 541065: 11, 1073741: 13}


@pytest.mark.parametrize("percentile, expected_ns", [
    (0.0, 299892736), (25.0, 301989887), (50.0, 603979775), (75.0, 603979775),
    (100.0, 1002438655),
])
def test_percentiles_as_redis(server, percentile, expected_ns):
    cmd = fresh(server, b"debug")
    for usec in (300_000, 600_000, 1_200_000):
        cmd.record_latency(usec)
    assert latency.value_at_percentile(cmd.latency_counts(), 3, percentile) == expected_ns


def test_percentile_rank_rounds_half_up(server):
    cmd = fresh(server)
    for usec in (1, 2, 3, 5):
        cmd.record_latency(usec)
    counts = cmd.latency_counts()
    # rank = int(p/100 * 4 + 0.5): 37.5% -> 2 (2 µs), 37.4% -> 1 (1 µs), 99.9% -> 4
    assert latency.value_at_percentile(counts, 4, 37.5) == 2007
    assert latency.value_at_percentile(counts, 4, 37.4) == 1003
    assert latency.value_at_percentile(counts, 4, 99.9) == 5023
    assert latency.value_at_percentile(counts, 4, 0.0) == 1000


class FakeClock:
    """perf_counter_ns for the dispatcher and the blocking module: every reading is ``step``
    ns after the one before, so each timed call takes ``step`` ns."""

    def __init__(self) -> None:
        self.now = 0
        self.step = 5_000

    def __call__(self) -> int:
        self.now += self.step
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(_core, "_perf_ns", fake)
    monkeypatch.setattr(blocking, "_clock_ns", fake)
    return fake


def test_dispatcher_records_each_call(server, client, clock):
    run(client, "CONFIG", "RESETSTAT")
    clock.step = 5_000
    run(client, "GET", "k")
    clock.step = 206_000
    run(client, "GET", "k")
    assert run(client, "LATENCY", "HISTOGRAM", "get") == (
        b"*2\r\n$3\r\nget\r\n*4\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n"
        b"*4\r\n:8\r\n:1\r\n:264\r\n:2\r\n")
    client.resp = 3
    assert run(client, "LATENCY", "HISTOGRAM", "GET", "nosuch", "get") == (
        b"%2\r\n" + (b"$3\r\nget\r\n%2\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n"
                     b"%2\r\n:8\r\n:1\r\n:264\r\n:2\r\n") * 2)
    info = run(client, "INFO", "latencystats").decode()
    assert "latency_percentiles_usec_get:p50=5.023,p99=206.847,p99.9=206.847\r\n" in info
    run(client, "CONFIG", "SET", "latency-tracking-info-percentiles", "0 12.5 100")
    info = run(client, "INFO", "latencystats").decode()
    assert "latency_percentiles_usec_get:p0=4.992,p12.5=5.023,p100=206.847\r\n" in info
    assert "latency_percentiles_usec_config|resetstat:p0=" in info


def test_tracking_off_and_resetstat(server, client, clock):
    run(client, "CONFIG", "RESETSTAT")
    run(client, "GET", "k")
    run(client, "CONFIG", "SET", "latency-tracking", "no")
    run(client, "GET", "k")
    run(client, "SET", "k", "v")
    get = server.commands.get(b"get")
    assert (get.calls, get.lat_samples) == (2, 1)
    assert server.commands.get(b"set").lat_samples == 0
    # the histograms stay readable; INFO's section is empty while tracking is off
    assert b"$3\r\nget\r\n*4\r\n$5\r\ncalls\r\n:1\r\n" in run(client, "LATENCY", "HISTOGRAM")
    assert run(client, "INFO", "latencystats") == b"$16\r\n# Latencystats\r\n\r\n"
    run(client, "CONFIG", "SET", "latency-tracking", "yes")
    run(client, "GET", "k")
    assert get.lat_samples == 2
    run(client, "CONFIG", "RESETSTAT")
    assert get.lat_samples == 0 and get.latency_counts() == []
    # RESETSTAT itself is recorded once it has run, as in Redis
    assert run(client, "LATENCY", "HISTOGRAM") == (
        b"*2\r\n$16\r\nconfig|resetstat\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n"
        b"*2\r\n:8\r\n:1\r\n")


def test_blocked_command_recorded_when_served_with_its_serving_time(server, client, clock):
    other = Client(server, None, 2)
    run(client, "CONFIG", "RESETSTAT")
    clock.step = 4_000
    assert run(client, "BLPOP", "q", "0") == b""  # blocked
    blpop = server.commands.get(b"blpop")
    assert (blpop.calls, blpop.usec, blpop.lat_samples) == (1, 4, 0)
    clock.step = 30_000  # RPUSH 30 µs; serving the blocked client (timed by blocking) 30 µs
    run(other, "RPUSH", "q", "a")
    assert client.out.endswith(b"*2\r\n$1\r\nq\r\n$1\r\na\r\n")
    assert (blpop.calls, blpop.usec, blpop.lat_samples) == (1, 38, 1)
    assert blpop.latency_counts() == [(33792, 34047, 1)]  # 4 + 30 µs


def test_blocked_command_that_times_out_is_not_recorded(server, client, clock):
    run(client, "CONFIG", "RESETSTAT")
    run(client, "BLPOP", "q", "0")
    assert server.blocking.unblock_client(client)  # answered as a timeout
    blpop = server.commands.get(b"blpop")
    assert (blpop.calls, blpop.lat_samples) == (1, 0)
