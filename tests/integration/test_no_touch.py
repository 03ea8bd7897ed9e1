"""CLIENT NO-TOUCH (a Redis 7.2 command pykv has): reads leave a key's access clock alone.

Redis 7.0.15 has no NO-TOUCH, so these run against pykv alone, following 7.2's rules: a
NO-TOUCH client's reads keep ``OBJECT IDLETIME`` (LRU) and ``OBJECT FREQ`` (LFU) as they
were, ``TOUCH`` still touches, and other clients' reads touch as usual. RESTORE ... IDLETIME
sets a large idle time to start from, so nothing has to wait for the clock.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient


def _idle(c: RawClient, key: str = "k") -> int:
    return int(c.call("OBJECT", "IDLETIME", key)[1:-2])


def _freq(c: RawClient, key: str = "k") -> int:
    return int(c.call("OBJECT", "FREQ", key)[1:-2])


@pytest.fixture
def idle_key(raw):
    raw.call("SET", "src", "v")
    payload = raw.call("DUMP", "src")
    payload = payload[payload.index(b"\r\n") + 2:-2]
    raw.call("RESTORE", "k", "0", payload, "IDLETIME", "1000")
    raw.call("RESTORE", "j", "0", payload, "IDLETIME", "1000")
    yield raw
    raw.call("CLIENT", "NO-TOUCH", "off")


READS = [("GET", "k"), ("STRLEN", "k"), ("GETRANGE", "k", "0", "1"), ("MGET", "k", "x"),
         ("EXISTS", "k"), ("DUMP", "k")]


@pytest.mark.parametrize("cmd", READS, ids=[c[0] for c in READS])
def test_no_touch_read_keeps_idle_time(idle_key, cmd):
    raw = idle_key
    assert raw.call("CLIENT", "NO-TOUCH", "on") == b"+OK\r\n"
    raw.call(*cmd)
    assert _idle(raw) >= 1000
    # a pipelined batch: NO-TOUCH takes effect at once, and off at once too
    raw.send_raw(b"CLIENT NO-TOUCH off\r\nGET j\r\n")
    raw.read_reply(), raw.read_reply()
    assert _idle(raw, "j") == 0


def test_touch_still_touches_and_others_touch(idle_key, pykv_proc):
    raw = idle_key
    raw.call("CLIENT", "NO-TOUCH", "on")
    assert raw.call("TOUCH", "k", "missing") == b":1\r\n"
    assert _idle(raw) == 0
    other = RawClient(port=pykv_proc.port)
    try:
        other.call("GET", "j")  # another client's read touches
        assert _idle(raw, "j") == 0
    finally:
        other.close()


def test_no_touch_under_lfu(raw):
    raw.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    raw.call("CONFIG", "SET", "lfu-log-factor", "0")  # every touch counts: exact counters
    try:
        raw.call("SET", "k", "v")
        assert _freq(raw) == 5
        raw.call("GET", "k")
        assert _freq(raw) == 6
        raw.call("CLIENT", "NO-TOUCH", "on")
        for _ in range(5):
            raw.call("GET", "k")
        assert _freq(raw) == 6
        raw.call("TOUCH", "k")
        assert _freq(raw) == 7
    finally:
        raw.call("CLIENT", "NO-TOUCH", "off")
        raw.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        raw.call("CONFIG", "SET", "lfu-log-factor", "10")
