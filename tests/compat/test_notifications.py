"""Keyspace notifications (notify-keyspace-events) compared with real redis-server 7.0.

A subscriber pair listens with PSUBSCRIBE on ``__key*@*__:*``; ``cmd`` runs a command on
another pair, and ``events`` reads the next messages from both subscribers and compares.
"""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient, encode_command

from pykv.commands import load_all_commands

load_all_commands()


@pytest.fixture
def events_cfg(diff):
    """``set_events(flags)`` on both servers; restored to empty afterwards."""

    def set_events(flags: str) -> None:
        diff("CONFIG", "SET", "notify-keyspace-events", flags)

    yield set_events
    diff.real.call("CONFIG", "SET", "notify-keyspace-events", "")
    diff.ours.call("CONFIG", "SET", "notify-keyspace-events", "")


@pytest.fixture
def sub(diff, real_redis, pykv_proc):
    pair = type(diff)(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    pair("PSUBSCRIBE", "__key*@*__:*")
    yield pair
    pair.real.close()
    pair.ours.close()


def events(pair, n: int) -> list[bytes]:
    real = [pair.real.read_reply() for _ in range(n)]
    ours = [pair.ours.read_reply() for _ in range(n)]
    assert ours == real
    return real


def quiet(pair) -> None:
    """No more events on either side: the next thing on the wire is our PING's reply."""
    pair("PING")


def test_config_normalisation(diff, events_cfg):
    for flags in ("KEA", "AKE", "gKE$", "Ex", "KA", "Elm", "KEn", "ghzK", "E$lshzxetd", "",
                  "KEAmn", "tdE", "xxx", "gg"):
        events_cfg(flags)
        diff("CONFIG", "GET", "notify-keyspace-events")


def test_config_invalid(diff, events_cfg):
    events_cfg("KEA")
    diff("CONFIG", "SET", "notify-keyspace-events", "KEQ")
    diff("CONFIG", "SET", "notify-keyspace-events", "a")
    diff("CONFIG", "GET", "notify-keyspace-events")


def test_string_events_both_channels(diff, sub, events_cfg):
    events_cfg("KEA")
    diff("SET", "k", "v")
    events(sub, 2)
    diff("INCR", "n")
    events(sub, 2)
    diff("DEL", "k", "n", "missing")
    events(sub, 4)
    quiet(sub)


def test_keyevent_only_with_class_filter(diff, sub, events_cfg):
    events_cfg("Eg")
    diff("SET", "k", "v")  # a string event: not selected
    diff("EXPIRE", "k", "100")
    events(sub, 1)
    diff("PERSIST", "k")
    events(sub, 1)
    diff("DEL", "k")
    events(sub, 1)
    quiet(sub)


def test_keyspace_only(diff, sub, events_cfg):
    events_cfg("K$")
    diff("SET", "k", "v")
    diff("APPEND", "k", "w")
    events(sub, 2)
    diff("DEL", "k")  # generic: not selected
    quiet(sub)


def test_flags_without_channel_kind_deliver_nothing(diff, sub, events_cfg):
    events_cfg("A")
    diff("SET", "k", "v")
    quiet(sub)
    events_cfg("KE")
    diff("SET", "k", "v")
    quiet(sub)


def test_other_databases_in_channel_names(diff, sub, events_cfg):
    events_cfg("KE$")
    diff("SELECT", "3")
    diff("SET", "k", "v")
    events(sub, 2)
    diff("FLUSHALL")
    diff("SELECT", "0")


def test_expired_events(diff, sub, events_cfg):
    events_cfg("Ex")
    diff("SET", "k", "v", "PX", "20")
    time.sleep(0.1)
    diff("GET", "k")  # lazily expired at the latest here
    events(sub, 1)
    quiet(sub)


def test_expired_by_active_cycle(diff, sub, events_cfg):
    events_cfg("KEx")
    diff("SET", "k", "v", "PX", "20")
    # nobody touches k: the active expire cycle must delete it and announce it
    events(sub, 2)


def test_keymiss_events(diff, sub, events_cfg):
    events_cfg("Em")
    diff("GET", "nothere")
    events(sub, 1)
    diff("SET", "k", "v")
    diff("GET", "k")
    quiet(sub)


def test_list_and_hash_events(diff, sub, events_cfg):
    events_cfg("KElhg")
    diff("LPUSH", "l", "a", "b")
    events(sub, 2)
    diff("LPOP", "l", "2")  # lpop, then del of the emptied key
    events(sub, 4)
    diff("HSET", "h", "f", "v")
    events(sub, 2)
    quiet(sub)


def test_resp3_subscriber_gets_pushes(diff, diff3, events_cfg, real_redis, pykv_proc):
    events_cfg("E$")
    diff3("SUBSCRIBE", "__keyevent@0__:set")
    diff3("SET", "k", "v")  # its own write: the push, then the +OK
    events(diff3, 1)
    diff3("UNSUBSCRIBE")


def test_new_key_events(diff, sub, events_cfg):
    """Class n: "new" as a key is added (before the command's own event), not on updates."""
    events_cfg("KEn$lh")
    diff("SET", "k", "v")
    events(sub, 4)  # new (keyspace, keyevent), then set (keyspace, keyevent)
    diff("SET", "k", "w")
    events(sub, 2)  # an overwrite is not new
    diff("RPUSH", "l", "a")
    events(sub, 4)
    diff("RPUSH", "l", "b")
    events(sub, 2)
    diff("HSET", "h", "f", "v")
    events(sub, 4)
    quiet(sub)


def test_reply_and_own_event_order_resp3(diff3):
    """A RESP3 client subscribed to its own keyspace events: INCR's event comes before its
    reply, LPUSH/RPUSH's and ZADD's after it (Redis's order, reply for reply)."""
    diff3("CONFIG", "SET", "notify-keyspace-events", "KEA")
    try:
        diff3("SUBSCRIBE", "__keyspace@0__:l", "__keyspace@0__:n", "__keyspace@0__:z")
        diff3.raw(b"", replies=2)  # the other two subscribe confirmations
        for cmd in (("LPUSH", "l", "a"), ("RPUSH", "l", "b", "c"), ("INCR", "n"),
                    ("ZADD", "z", "1", "a"), ("ZADD", "z", "2", "a")):
            diff3.raw(encode_command(*cmd), replies=2, label=cmd)
        diff3("ZADD", "z", "2", "a")  # no change: no event
        diff3("UNSUBSCRIBE", "__keyspace@0__:l", "__keyspace@0__:n", "__keyspace@0__:z")
        diff3.raw(b"", replies=2)
    finally:
        diff3.real.call("CONFIG", "SET", "notify-keyspace-events", "")
        diff3.ours.call("CONFIG", "SET", "notify-keyspace-events", "")
