"""MEMORY DOCTOR's analyses and MEMORY STATS's arithmetic over made-up memory figures."""
from __future__ import annotations

import dataclasses

import pytest

from pykv.commands import memory_cmd as m
from pykv.commands.memory_cmd import DbOverhead, MemoryFigures

MB = 1 << 20


def healthy(**changes) -> MemoryFigures:
    """A 200 MB instance (40 MB of it at start-up) with nothing to report."""
    f = MemoryFigures(total_allocated=200 * MB, peak_allocated=210 * MB,
                      startup_allocated=40 * MB, clients=10, clients_normal=10 * 1024,
                      allocator_name="libc")
    return dataclasses.replace(f, **changes)


# finding -> (figures that just trigger it, figures that just miss it)
CASES = {
    "big_peak": (healthy(peak_allocated=301 * MB), healthy(peak_allocated=300 * MB)),
    "high_frag": (healthy(total_frag=1.41, total_frag_bytes=10 * MB + 1),
                  healthy(total_frag=1.4, total_frag_bytes=500 * MB)),
    "high_alloc_frag": (healthy(allocator_frag=1.2, allocator_frag_bytes=11 * MB),
                        healthy(allocator_frag=1.2, allocator_frag_bytes=10 * MB)),
    "high_alloc_rss": (healthy(allocator_rss=1.11, allocator_rss_bytes=11 * MB),
                       healthy(allocator_rss=1.1, allocator_rss_bytes=11 * MB)),
    "high_proc_rss": (healthy(rss_extra=3.0, rss_extra_bytes=11 * MB),
                      healthy(rss_extra=3.0, rss_extra_bytes=10 * MB)),
    "big_replica_buf": (healthy(replicas=2, clients=12, clients_slaves=10 * MB + 1),
                        healthy(replicas=0, clients_slaves=50 * MB)),
    # 10 clients, 2 of them replicas: the average is over the 8 others
    "big_client_buf": (healthy(clients=10, replicas=2, clients_normal=8 * 200 * 1024 + 8),
                       healthy(clients=10, replicas=0, clients_normal=8 * 200 * 1024 + 8)),
    "many_scripts": (healthy(cached_scripts=1001), healthy(cached_scripts=1000)),
}


def test_every_finding_has_a_case_and_a_paragraph():
    assert list(CASES) == list(m.FINDINGS)
    for text in m.FINDINGS.values():
        assert text.startswith(" * ") and text.endswith(".\n\n") and "\n" not in text[:-2]


@pytest.mark.parametrize("name", list(CASES))
def test_each_finding_at_its_threshold(name):
    hit, miss = CASES[name]
    assert m.diagnose(hit) == [name]
    assert m.diagnose(miss) == []
    report = m.doctor_report(hit)
    assert report.startswith(m.DOCTOR_HEAD) and report.endswith(m.DOCTOR_TAIL)
    assert report[len(m.DOCTOR_HEAD):-len(m.DOCTOR_TAIL)] == \
        m.FINDINGS[name].replace("{allocator}", "libc")


def test_no_issue():
    assert m.diagnose(healthy()) == []
    assert m.doctor_report(healthy()) == m.DOCTOR_FINE


@pytest.mark.parametrize("above_startup, empty", [
    (0, True), (5 * MB - 1, True), (5 * MB, False), (-3 * MB, True),
])
def test_empty_means_little_memory_above_startup(above_startup, empty):
    # 45 MB in all is not "empty" by Redis's rule (5 MB in all), but an interpreter's worth
    # of it was there at start-up; the findings are not looked at when empty
    f = healthy(startup_allocated=40 * MB, total_allocated=40 * MB + above_startup,
                peak_allocated=400 * MB, cached_scripts=5000)
    assert (m.doctor_report(f) == m.DOCTOR_EMPTY) is empty
    if not empty:
        assert m.diagnose(f) == ["big_peak", "many_scripts"]


def test_several_findings_in_redis_order_with_the_allocator_named():
    f = healthy(cached_scripts=2000, peak_allocated=1000 * MB, total_frag=2.0,
                total_frag_bytes=200 * MB, allocator_name="libc-x")
    assert m.diagnose(f) == ["big_peak", "high_frag", "many_scripts"]
    report = m.doctor_report(f)
    assert report == (m.DOCTOR_HEAD + m.FINDINGS["big_peak"]
                      + m.FINDINGS["high_frag"].replace("{allocator}", "libc-x")
                      + m.FINDINGS["many_scripts"] + m.DOCTOR_TAIL)
    assert 'Note: The currently used allocator is "libc-x".\n\n' in report


def test_no_clients_no_client_finding():
    assert m.diagnose(healthy(clients=0, clients_normal=100 * MB)) == []


def test_stats_arithmetic():
    f = healthy(total_allocated=100 * MB, peak_allocated=400 * MB, startup_allocated=40 * MB,
                clients_normal=1 * MB, aof_buffer=2 * MB, lua_caches=3 * MB,
                functions_caches=4 * MB,
                dbs=[DbOverhead(0, 4, 5 * MB, 1 * MB), DbOverhead(7, 6, 2 * MB, 0)])
    stats = m.stats_reply(f)
    overhead = (40 + 1 + 2 + 3 + 4 + 5 + 1 + 2) * MB
    assert stats[b"overhead.total"] == overhead
    assert stats[b"dataset.bytes"] == 100 * MB - overhead
    assert stats[b"keys.count"] == 10
    assert stats[b"keys.bytes-per-key"] == (100 * MB - overhead) // 10
    assert stats[b"dataset.percentage"] == pytest.approx(
        (100 * MB - overhead) * 100 / (60 * MB), rel=1e-6)
    assert stats[b"peak.percentage"] == 25.0
    assert stats[b"db.7"] == {b"overhead.hashtable.main": 2 * MB,
                              b"overhead.hashtable.expires": 0,
                              b"overhead.hashtable.slot-to-keys": 0}
    keys = list(stats)
    assert keys.index(b"functions.caches") + 1 == keys.index(b"db.0")
    assert keys.index(b"db.7") + 1 == keys.index(b"overhead.total")


def test_stats_ratios_at_c_float_precision():
    stats = m.stats_reply(healthy(total_frag=1.1))
    assert stats[b"fragmentation"] != 1.1
    assert f"{stats[b'fragmentation']:.17g}" == "1.1000000238418579"


def test_stats_when_memory_fell_below_startup():
    stats = m.stats_reply(healthy(total_allocated=30 * MB, startup_allocated=40 * MB))
    assert stats[b"dataset.bytes"] == 0 and stats[b"dataset.percentage"] == 0.0
    assert stats[b"keys.bytes-per-key"] == 0
