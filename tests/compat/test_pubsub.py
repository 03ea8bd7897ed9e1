"""Pub/Sub compared byte for byte with real redis-server 7.0, RESP2 and RESP3.

Each test drives two connection pairs: ``diff`` (the subscriber) and ``pub`` (another client
publishing); ``expect`` reads the next out-of-band message from both subscribers and
compares them.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient, encode_command


@pytest.fixture
def pub(diff, real_redis, pykv_proc):
    pair = type(diff)(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    yield pair
    pair.real.close()
    pair.ours.close()


def expect(pair) -> bytes:
    """The next pushed message on both servers' connections: must be the same bytes."""
    real = pair.real.read_reply()
    ours = pair.ours.read_reply()
    assert ours == real, f"\n  redis: {real!r}\n  pykv:  {ours!r}"
    return real


def nothing_pending(pair) -> None:
    """Neither side has anything more to read (checked with a PING round trip)."""
    pair("PING")


def test_subscribe_publish_unsubscribe(diff, pub):
    diff.raw(b"*3\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$1\r\nb\r\n", replies=2)
    pub("PUBLISH", "a", "hello")
    expect(diff)
    pub("PUBLISH", "b", b"bin\x00\r\n")
    expect(diff)
    pub("PUBLISH", "nobody", "x")
    diff("UNSUBSCRIBE", "a")
    pub("PUBLISH", "a", "gone")
    diff("UNSUBSCRIBE", "b")
    diff("UNSUBSCRIBE")  # none left: [unsubscribe, nil, 0]
    diff("GET", "k")  # back to normal mode


def test_subscribe_same_channel_twice(diff, pub):
    diff("SUBSCRIBE", "a")
    diff("SUBSCRIBE", "a")
    pub("PUBLISH", "a", "once")
    expect(diff)
    diff("UNSUBSCRIBE", "a")
    diff("UNSUBSCRIBE", "a")


def test_resp2_subscribed_mode_restrictions(diff):
    diff("SUBSCRIBE", "a")
    diff("GET", "k")
    diff("SET", "k", "v")
    diff("PING")
    diff("PING", "hi")
    diff("PUBLISH", "a", "x")
    diff("UNSUBSCRIBE")
    diff("PING")


def test_psubscribe_patterns(diff, pub):
    diff.raw(b"*3\r\n$10\r\nPSUBSCRIBE\r\n$5\r\nnews*\r\n$5\r\nh?llo\r\n", replies=2)
    diff("SUBSCRIBE", "news.tech")
    pub("PUBLISH", "news.tech", "m1")  # channel and pattern: two deliveries
    expect(diff)
    expect(diff)
    pub("PUBLISH", "hallo", "m2")
    expect(diff)
    pub("PUBLISH", "other", "m3")
    diff("PUNSUBSCRIBE", "news*")
    pub("PUBLISH", "news.tech", "m4")
    expect(diff)
    diff("PUNSUBSCRIBE", "h?llo")
    diff("UNSUBSCRIBE", "news.tech")
    diff("PUNSUBSCRIBE")


def test_publish_counts_pattern_and_channel_receivers(diff, pub, real_redis, pykv_proc):
    diff("SUBSCRIBE", "c")
    third = type(diff)(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    third("PSUBSCRIBE", "*")
    third("PSUBSCRIBE", "c*")
    pub("PUBLISH", "c", "x")  # 1 channel + 2 patterns
    expect(diff)
    # Redis walks its pattern table in hash order: compare the two deliveries as a set
    real = sorted(third.real.read_reply() for _ in range(2))
    ours = sorted(third.ours.read_reply() for _ in range(2))
    assert ours == real
    third.real.close()
    third.ours.close()


def test_resp3_push_interleaved_with_replies(diff3, real_redis, pykv_proc):
    diff3("SUBSCRIBE", "a")
    diff3("SET", "k", "v")  # allowed in RESP3
    diff3("GET", "k")
    diff3("PUBLISH", "a", "to-myself")  # the push comes before the PUBLISH reply
    expect(diff3)
    diff3("PSUBSCRIBE", "a*")
    diff3("PUBLISH", "a", "twice")
    expect(diff3)
    expect(diff3)
    diff3("UNSUBSCRIBE")
    diff3("PUNSUBSCRIBE")
    diff3("UNSUBSCRIBE")


def test_shard_channels(diff, pub):
    diff("SSUBSCRIBE", "s1")
    diff("SUBSCRIBE", "c1")  # the counts differ: shard vs classic
    diff("SSUBSCRIBE", "s2")
    pub("SPUBLISH", "s1", "shard-msg")
    expect(diff)
    pub("PUBLISH", "s1", "not-shard")
    pub("SPUBLISH", "c1", "not-classic")
    pub("PUBSUB", "SHARDNUMSUB", "s1", "s2", "c1")
    pub("PUBSUB", "SHARDCHANNELS", "s1")
    pub("PUBSUB", "SHARDCHANNELS", "z*")
    diff("SUNSUBSCRIBE", "s1")
    diff("SUNSUBSCRIBE", "s2")
    diff("SUNSUBSCRIBE")
    diff("UNSUBSCRIBE", "c1")


def test_pubsub_introspection(diff, pub):
    diff("SUBSCRIBE", "chan")
    diff("PSUBSCRIBE", "p*")
    pub("PUBSUB", "CHANNELS")
    pub("PUBSUB", "CHANNELS", "ch*")
    pub("PUBSUB", "CHANNELS", "x*")
    pub("PUBSUB", "NUMSUB")
    pub("PUBSUB", "NUMSUB", "chan", "nochan", "chan")
    pub("PUBSUB", "NUMPAT")
    pub("PUBSUB", "SHARDNUMSUB")
    pub("PUBSUB", "HELP")
    diff("UNSUBSCRIBE")
    diff("PUNSUBSCRIBE")
    pub("PUBSUB", "CHANNELS")
    pub("PUBSUB", "NUMPAT")


def test_pubsub_errors(diff):
    diff("PUBSUB")
    diff("PUBSUB", "FOO")
    diff("PUBSUB", "CHANNELS", "a", "b")
    diff("PUBSUB", "SHARDCHANNELS", "a", "b")
    diff("PUBSUB", "NUMPAT", "x")
    diff("PUBLISH", "a")
    diff("SUBSCRIBE")
    diff("PSUBSCRIBE")
    diff("SSUBSCRIBE")
    diff("SPUBLISH", "a")


def test_pubsub_introspection_resp3(diff3):
    diff3("PUBSUB", "NUMSUB", "a")
    diff3("PUBSUB", "CHANNELS")
    diff3("PUBLISH", "nobody", "x")


def test_unsubscribe_all_many_channels(diff, pub):
    diff.raw(b"*4\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", replies=3)
    # Redis walks its hash table: compare the replies as a set, the counts in order
    for side in (diff.real, diff.ours):
        side.send_raw(b"*1\r\n$11\r\nUNSUBSCRIBE\r\n")
    real = [diff.real.read_reply() for _ in range(3)]
    ours = [diff.ours.read_reply() for _ in range(3)]
    assert sorted(r.split(b"\r\n")[4] for r in ours) == \
        sorted(r.split(b"\r\n")[4] for r in real) == [b"a", b"b", b"c"]
    assert [r.split(b"\r\n")[5] for r in ours] == [r.split(b"\r\n")[5] for r in real]
    pub("PUBLISH", "a", "x")
    diff("PING")


def test_reset_leaves_subscriptions(diff, pub):
    diff("SUBSCRIBE", "a")
    diff("RESET")
    pub("PUBSUB", "NUMSUB", "a")
    diff("GET", "k")


def test_disconnect_drops_subscriptions(pub, real_redis, pykv_proc):
    subs = [RawClient(port=port) for port in (real_redis.port, pykv_proc.port)]
    for s in subs:
        s.call("SUBSCRIBE", "gone")
        s.close()
    # PUBLISH answers 0 once the server has noticed the disconnects
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        real, ours = pub.both("PUBLISH", "gone", "x")
        if real == ours == b":0\r\n":
            return
        time.sleep(0.05)
    raise AssertionError((real, ours))


def test_slow_subscriber_disconnected_at_hard_limit(pub, real_redis, pykv_proc):
    """client-output-buffer-limit pubsub: a subscriber that never reads is dropped."""
    pub("CONFIG", "SET", "client-output-buffer-limit", "pubsub 262144 0 0")
    subs = [RawClient(port=port) for port in (real_redis.port, pykv_proc.port)]
    try:
        for s in subs:
            s.call("SUBSCRIBE", "flood")
            s.sock.setsockopt(__import__("socket").SOL_SOCKET,
                              __import__("socket").SO_RCVBUF, 4096)
        payload = "x" * 16384
        for _ in range(400):  # ~6.5 MB: far beyond what the socket buffers hold
            real, ours = pub.both("PUBLISH", "flood", payload)
            if real == ours == b":0\r\n":
                break
        pub("PUBSUB", "NUMSUB", "flood")
        pub("PUBLISH", "flood", "after")
    finally:
        for s in subs:
            s.close()
        pub("CONFIG", "SET", "client-output-buffer-limit", "pubsub 33554432 8388608 60")


def _send(pair, *commands) -> None:
    """Send commands whose replies CLIENT REPLY may swallow; nothing is read here."""
    data = b"".join(encode_command(*cmd) for cmd in commands)
    pair.real.send_raw(data)
    pair.ours.send_raw(data)


@pytest.mark.parametrize("resp", [2, 3])
def test_reply_off_still_gets_confirmations_and_messages(request, pub, resp):
    """CLIENT REPLY OFF silences replies, never pushes: (un)subscribe confirmations and
    messages arrive in RESP2 and RESP3 alike (a subscriber must not wait forever)."""
    sub = request.getfixturevalue("diff3" if resp == 3 else "diff")
    _send(sub, ("CLIENT", "REPLY", "OFF"), ("SUBSCRIBE", "a", "b"), ("PSUBSCRIBE", "a*"),
          ("PING",))
    for _ in range(3):
        expect(sub)
    pub("PUBLISH", "a", "hi")
    expect(sub)
    expect(sub)
    _send(sub, ("PUNSUBSCRIBE",), ("UNSUBSCRIBE", "b"), ("UNSUBSCRIBE",))
    for _ in range(3):
        expect(sub)
    sub.raw(encode_command("CLIENT", "REPLY", "ON"))
    nothing_pending(sub)


@pytest.mark.parametrize("resp", [2, 3])
def test_reply_skip_skips_the_command_not_its_pushes(request, resp):
    """SKIP applies to the next command: a SUBSCRIBE's confirmations still arrive and
    the command after it is answered again."""
    sub = request.getfixturevalue("diff3" if resp == 3 else "diff")
    _send(sub, ("CLIENT", "REPLY", "SKIP"), ("SUBSCRIBE", "a"), ("PING",))
    expect(sub)
    expect(sub)
    _send(sub, ("CLIENT", "REPLY", "SKIP"), ("UNSUBSCRIBE",), ("PING",))
    expect(sub)
    expect(sub)
    _send(sub, ("CLIENT", "REPLY", "SKIP"), ("PING",), ("SSUBSCRIBE", "s"),
          ("SUNSUBSCRIBE",), ("PING", "last"))
    for _ in range(3):
        expect(sub)


def test_mixed_protocol_subscribers(diff, diff3, pub):
    """One message to RESP2 and RESP3 subscribers of a channel, a pattern and a shard
    channel (encoded once per protocol): each gets its own framing."""
    for pair in (diff, diff3):
        pair("SUBSCRIBE", "mix")
        pair("PSUBSCRIBE", "m*")
        pair("SSUBSCRIBE", "smix")
    for _ in range(2):
        pub("PUBLISH", "mix", "payload")
        for pair in (diff, diff3):
            expect(pair)
            expect(pair)
    pub("SPUBLISH", "smix", "shard")
    for pair in (diff, diff3):
        expect(pair)
    nothing_pending(diff3)


def test_subscriber_dropped_in_the_middle_of_a_fan_out(pub, real_redis, pykv_proc):
    """Of three subscribers, the middle one never reads and is dropped at the pubsub hard
    limit while a message is being fanned out: the one after it still gets that message
    and every later one, byte for byte as from Redis, and PUBLISH counts it until gone."""
    import socket

    pub("CONFIG", "SET", "client-output-buffer-limit", "pubsub 262144 0 0")
    servers = (real_redis.port, pykv_proc.port)
    first, silent, last = ([RawClient(port=port) for port in servers] for _ in range(3))
    try:
        for group in (first, silent, last):
            for s in group:
                s.call("SUBSCRIBE", "mid")
        for s in silent:
            s.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        payload = "x" * 65536
        counts = set()
        for _ in range(400):  # ~26 MB: far beyond what the socket buffers hold
            real, ours = pub.both("PUBLISH", "mid", payload)
            counts.update((real, ours))
            for readers in (first, last):
                got = [s.read_reply() for s in readers]
                assert got[0] == got[1], "a reading subscriber missed a message"
            if real == ours == b":2\r\n":
                break
        assert counts == {b":3\r\n", b":2\r\n"}, counts
        assert pub("PUBLISH", "mid", "after") == b":2\r\n"
        for readers in (first, last):
            got = [s.read_reply() for s in readers]
            assert got[0] == got[1] and got[0].endswith(b"after\r\n"), got
    finally:
        for s in first + silent + last:
            s.close()
        pub("CONFIG", "SET", "client-output-buffer-limit", "pubsub 33554432 8388608 60")
