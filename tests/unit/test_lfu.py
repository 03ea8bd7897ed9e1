"""The keyspace's LFU counter: Redis's LFUDecrAndReturn and LFULogIncr on pykv's words.

A word is Redis's 24-bit ``lru`` field under an LFU policy: the last decrement time in
minutes (16 bits, wrapping) and the counter (8 bits).
"""
from __future__ import annotations

import pytest

from pykv.storage.keyspace import LFU_INIT_VAL, Clock, Database, lfu_counter

# (counter, minutes since the last decrement, lfu-decay-time, expected counter)
DECAY = [
    (10, 0, 1, 10),
    (10, 3, 1, 7),
    (10, 3, 2, 9),  # one whole period of two minutes
    (10, 30, 1, 0),  # never below zero
    (10, 10, 1, 0),
    (10, 9, 0, 10),  # decay-time 0: no decay
    (255, 100, 10, 245),
]


@pytest.mark.parametrize("counter,elapsed,decay,want", DECAY)
def test_decay(counter, elapsed, decay, want):
    now = 1000
    assert lfu_counter(((now - elapsed) << 8) | counter, now, decay) == want


def test_decay_across_the_16_bit_minute_wrap():
    # last decrement at minute 65530, now minute 4: Redis counts 65535 - 65530 + 4 = 9
    assert lfu_counter((65530 << 8) | 20, 4, 1) == 11


def _db(log_factor: int) -> Database:
    db = Database(0, Clock())
    db.lfu = True
    db.lfu_log_factor = log_factor
    db.set(b"k", b"v")
    return db


def test_new_key_then_certain_first_increment():
    db = _db(10)
    assert db.access[b"k"] & 0xFF == LFU_INIT_VAL
    db.get(b"k")
    assert db.access[b"k"] & 0xFF == LFU_INIT_VAL + 1  # base 0: probability 1


def test_log_factor_zero_counts_every_access_up_to_255():
    db = _db(0)
    for _ in range(300):
        db.get(b"k")
    assert db.access[b"k"] & 0xFF == 255


def test_logarithmic_growth():
    db = _db(10)
    for _ in range(1000):
        db.get(b"k")
    # Redis's curve for factor 10: about 18 after 1k hits (redis.conf's table)
    assert 12 <= db.access[b"k"] & 0xFF <= 24
