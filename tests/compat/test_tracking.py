"""Client-side caching (CLIENT TRACKING & co.) compared with real redis-server 7.0.

Each scenario opens the same connections to both servers (``Twin``) and replays the same
commands; every reply *and* every invalidation push a connection receives must be the same
bytes. Client ids differ between the servers, so REDIRECT uses each server's own id. A
trailing PING on a connection proves that nothing else (an extra push) was sent before it.
"""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient, encode_command


class Twin:
    """One logical connection, opened to real Redis and to pykv."""

    def __init__(self, real_port: int, our_port: int, resp3: bool = True) -> None:
        self.real = RawClient(port=real_port)
        self.ours = RawClient(port=our_port)
        if resp3:
            self.real.call("HELLO", "3")
            self.ours.call("HELLO", "3")

    def __call__(self, *args) -> bytes:
        """Send to both, compare the replies."""
        data = encode_command(*args)
        self.real.send_raw(data)
        self.ours.send_raw(data)
        return self.read(label=args)

    def read(self, label: object = "push") -> bytes:
        expected = self.real.read_reply()
        got = self.ours.read_reply()
        assert got == expected, f"{label!r}:\n  redis: {expected!r}\n  pykv:  {got!r}"
        return expected

    def ids(self) -> tuple[bytes, bytes]:
        return (self.real.call("CLIENT", "ID")[1:-2], self.ours.call("CLIENT", "ID")[1:-2])

    def each(self, make_args) -> bytes:
        """Send per-server arguments (``make_args(client_id_pair_index)``), compare."""
        self.real.send_raw(encode_command(*make_args(0)))
        self.ours.send_raw(encode_command(*make_args(1)))
        return self.read(label=make_args(0))

    def quiet(self) -> None:
        """Nothing is pending: the next reply is PONG's."""
        self("PING")

    def close(self) -> None:
        self.real.close()
        self.ours.close()


@pytest.fixture
def twins(real_redis, pykv_proc):
    opened: list[Twin] = []

    def make(resp3: bool = True) -> Twin:
        t = Twin(real_redis.port, pykv_proc.port, resp3)
        opened.append(t)
        return t

    first = make(False)
    first("FLUSHALL")
    first.close()
    yield make
    for t in opened:
        t.close()


TRACKING_ERRORS = [
    ("CLIENT", "TRACKING"),
    ("CLIENT", "TRACKING", "maybe"),
    ("CLIENT", "TRACKING", "on", "foo"),
    ("CLIENT", "TRACKING", "on", "redirect"),
    ("CLIENT", "TRACKING", "on", "redirect", "x"),
    ("CLIENT", "TRACKING", "on", "redirect", "999999"),
    ("CLIENT", "TRACKING", "on", "prefix"),
    ("CLIENT", "TRACKING", "on", "prefix", "a"),
    ("CLIENT", "TRACKING", "on", "bcast", "optin"),
    ("CLIENT", "TRACKING", "on", "bcast", "optout"),
    ("CLIENT", "TRACKING", "on", "optin", "optout"),
    ("CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix", "ab"),
    ("CLIENT", "TRACKING", "on", "bcast", "prefix", "ab", "prefix", "a"),
    ("CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix", "a"),
    ("CLIENT", "TRACKING", "off", "optin"),
    ("CLIENT", "TRACKING", "off", "bogus"),
    ("CLIENT", "CACHING", "yes"),
    ("CLIENT", "CACHING", "no"),
    ("CLIENT", "CACHING", "maybe"),
    ("CLIENT", "CACHING"),
    ("CLIENT", "GETREDIR", "x"),
    ("CLIENT", "TRACKINGINFO", "x"),
    ("CLIENT", "GETREDIR"),
    ("CLIENT", "TRACKINGINFO"),
]


@pytest.mark.parametrize("resp3", [False, True])
def test_errors_and_info_when_off(twins, resp3):
    a = twins(resp3)
    for args in TRACKING_ERRORS:
        a(*args)


def test_mode_switch_errors_and_info(twins):
    a = twins()
    a("CLIENT", "TRACKING", "on", "optin", "noloop")
    a("CLIENT", "TRACKINGINFO")
    a("CLIENT", "GETREDIR")
    a("CLIENT", "TRACKING", "on", "optout")
    a("CLIENT", "TRACKING", "on", "bcast")
    a("CLIENT", "CACHING", "no")
    a("CLIENT", "CACHING", "maybe")
    a("CLIENT", "CACHING", "yes")
    a("CLIENT", "TRACKINGINFO")  # caching-yes stays across CLIENT commands
    a("GET", "x")
    a("CLIENT", "TRACKINGINFO")  # ...and is gone after another command
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKINGINFO")
    a("CLIENT", "TRACKING", "on", "optout")
    a("CLIENT", "CACHING", "no")
    a("CLIENT", "TRACKINGINFO")
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKING", "on", "bcast", "prefix", "b", "prefix", "a")
    a("CLIENT", "TRACKING", "on", "bcast", "prefix", "ab")
    a("CLIENT", "TRACKING", "on", "bcast", "prefix", "c")
    a("CLIENT", "TRACKINGINFO")
    a("CLIENT", "TRACKING", "on")
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKINGINFO")
    a("CLIENT", "TRACKING", "on", "bcast")
    a("CLIENT", "TRACKINGINFO")
    a("CLIENT", "TRACKING", "off")


def test_default_mode_invalidation(twins):
    a, b = twins(), twins()
    a("CLIENT", "TRACKING", "on")
    a("SET", "k", "1")  # a write does not track
    b("SET", "k", "2")
    a.quiet()
    a("GET", "k")
    a("MGET", "k", "k2", "k3")
    a("HGETALL", "h")
    b("SET", "k", "3")
    a.read()
    b("SET", "k", "4")  # invalidated once: not tracked any more
    a.quiet()
    b("MSET", "k2", "x", "k3", "y")
    a.read()
    a.read()
    b("HSET", "h", "f", "v")
    a.read()
    a.quiet()
    # the client's own write: the reply first, then its invalidation
    a("GET", "own")
    a("SET", "own", "v")
    a.read()
    a("GET", "own")
    a("DEL", "own")
    a.read()
    a.quiet()
    # expiry counts as a modification
    a("SET", "ttl", "v", "PX", "50")
    a("GET", "ttl")
    time.sleep(0.25)
    b("GET", "ttl")
    a.read()
    a.quiet()


def test_noloop_optin_optout(twins):
    a, b = twins(), twins()
    a("CLIENT", "TRACKING", "on", "noloop")
    a("GET", "n")
    a("SET", "n", "mine")
    a.quiet()
    b("SET", "n", "theirs")
    a.quiet()  # invalidated by its own write already (forgotten)
    a("GET", "n")
    b("SET", "n", "again")
    a.read()
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKING", "on", "optin")
    a("GET", "x")
    b("SET", "x", "1")
    a.quiet()  # not opted in
    a("CLIENT", "CACHING", "yes")
    a("GET", "x")
    a("GET", "y")  # only the next command
    b("SET", "x", "2")
    b("SET", "y", "2")
    a.read()
    a.quiet()
    a("CLIENT", "CACHING", "yes")
    a("MULTI")
    a("GET", "m1")
    a("GET", "m2")
    a("EXEC")
    b("MSET", "m1", "1", "m2", "2")
    a.read()
    a.read()
    a.quiet()
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKING", "on", "optout")
    a("CLIENT", "CACHING", "no")
    a("GET", "o1")
    a("GET", "o2")
    b("SET", "o1", "1")
    b("SET", "o2", "1")
    a.read()
    a.quiet()


def test_flush_sends_null(twins):
    a, b = twins(), twins()
    a("CLIENT", "TRACKING", "on")
    a("GET", "k")
    b("FLUSHDB")  # even an empty database
    a.read()
    a.quiet()
    b("FLUSHALL")
    a.read()
    a.quiet()
    a("FLUSHALL")  # its own flush: the reply, then the null
    a.read()
    a.quiet()
    b("SET", "k", "1")  # the table was emptied by the flush
    a.quiet()


def test_bcast(twins):
    a, b = twins(), twins()
    a("CLIENT", "TRACKING", "on", "bcast", "prefix", "user:", "prefix", "obj:")
    b("SET", "user:1", "x")
    a.read()
    b("MSET", "user:2", "x", "user:3", "y", "other", "z", "obj:1", "w")
    a.read()  # one message per prefix, prefixes in order
    a.read()
    a.quiet()
    a("SET", "user:9", "own")  # no NOLOOP: its own changes too
    a.read()
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKING", "on", "bcast", "noloop")
    a("SET", "mine", "1")
    a.quiet()
    b("SET", "theirs", "1")
    a.read()
    a.quiet()


def test_redirect_resp2_pubsub(twins):
    listener = twins(False)
    listener("SUBSCRIBE", "__redis__:invalidate")
    a, b = twins(False), twins(False)
    sub = twins(False)
    ids = sub.ids()
    sub("SUBSCRIBE", "__redis__:invalidate")
    a.each(lambda i: ("CLIENT", "TRACKING", "on", "REDIRECT", ids[i]))
    assert a.real.call("CLIENT", "GETREDIR") == b":" + ids[0] + b"\r\n"
    assert a.ours.call("CLIENT", "GETREDIR") == b":" + ids[1] + b"\r\n"
    a("GET", "r")
    b("SET", "r", "1")
    sub.read()  # the invalidation as a Pub/Sub message on __redis__:invalidate
    listener("PING")  # other subscribers of the channel get nothing
    a("GET", "r")
    b("FLUSHALL")
    sub.read()
    sub("PING")
    # a RESP2 redirect target that is not subscribed gets nothing
    sub("UNSUBSCRIBE")
    a("GET", "r")
    b("SET", "r", "2")
    sub("PING")


def test_redirect_resp3_and_broken(twins):
    a, b = twins(), twins()
    target = twins()
    ids = target.ids()
    a.each(lambda i: ("CLIENT", "TRACKING", "on", "REDIRECT", ids[i]))
    a("GET", "k")
    b("SET", "k", "1")
    target.read()
    a.quiet()
    a.each(lambda i: ("CLIENT", "TRACKING", "on", "REDIRECT", ids[i], "REDIRECT", ids[i]))
    a("GET", "k")
    target.close()
    time.sleep(0.2)
    b("SET", "k", "2")
    for client, cid in ((a.real, ids[0]), (a.ours, ids[1])):
        assert client.read_reply() == (b">2\r\n$21\r\ntracking-redir-broken\r\n:" + cid
                                       + b"\r\n")
    info_real = a.real.call("CLIENT", "TRACKINGINFO")
    info_ours = a.ours.call("CLIENT", "TRACKINGINFO")
    assert info_real.replace(ids[0], b"ID") == info_ours.replace(ids[1], b"ID")
    assert b"broken_redirect" in info_ours
    a.quiet()


def test_scripts_and_transactions_track_their_reads(twins):
    a, b = twins(), twins()
    a("CLIENT", "TRACKING", "on")
    a("EVAL", "return redis.call('get', KEYS[1])", "1", "s1")
    a("MULTI")
    a("GET", "t1")
    a("EXEC")
    b("SET", "s1", "x")
    a.read()
    b("SET", "t1", "x")
    a.read()
    a("MULTI")
    a("GET", "t2")
    a("SET", "t2", "own")
    a("EXEC")
    a.read()  # after the EXEC reply
    a.quiet()


def _shape(reply: bytes) -> bytes:
    """An invalidation push with its (randomly chosen) key masked; other replies as sent."""
    if reply.startswith(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\n"):
        return b">2 invalidate [?]"
    return reply


def _replies(client: RawClient, n: int) -> list[bytes]:
    return [client.read_reply() for _ in range(n)]


def test_tracking_table_max_keys_evicts_with_invalidations(twins):
    """Over tracking-table-max-keys, Redis forgets random keys (before the next command or
    from the cron) and sends their readers an invalidation: which key goes is random, so
    the keys are masked; where the pushes land and how many keys stay must be Redis's."""
    admin = twins(False)
    for key in ("a", "b", "c", "d"):
        admin("SET", key, "1")
    admin("CONFIG", "SET", "tracking-table-max-keys", "1")
    try:
        t = twins()
        t("CLIENT", "TRACKING", "on")
        t("GET", "a")
        # one pipelined batch: the limit runs before each command, so a push for a or b
        # comes between GET b's and GET c's replies, and one for the extra key after
        batch = encode_command("GET", "b") + encode_command("GET", "c") + \
            encode_command("PING")
        t.real.send_raw(batch)
        t.ours.send_raw(batch)
        real, ours = _replies(t.real, 5), _replies(t.ours, 5)
        assert [_shape(r) for r in ours] == [_shape(r) for r in real], (real, ours)
        assert _shape(real[1]) == b">2 invalidate [?]"
        real_info = admin.real.call("INFO", "stats")
        our_info = admin.ours.call("INFO", "stats")
        for info in (real_info, our_info):
            assert b"tracking_total_keys:1\r\n" in info, info
        # the cron too: a read leaves two keys; within a few ticks one is gone
        t("GET", "d")
        deadline = time.monotonic() + 5
        for client in (admin.real, admin.ours):
            while b"tracking_total_keys:1\r\n" not in client.call("INFO", "stats"):
                assert time.monotonic() < deadline, "the cron never enforced the limit"
                time.sleep(0.05)
        assert _shape(t.real.read_reply()) == _shape(t.ours.read_reply()) == \
            b">2 invalidate [?]"
        t.quiet()
    finally:
        admin("CONFIG", "SET", "tracking-table-max-keys", "1000000")


def test_invalidations_ignore_client_reply_off(twins):
    """Invalidation pushes (RESP3), redirected messages to a RESP2 subscriber and
    tracking-redir-broken all arrive while the receiver has CLIENT REPLY OFF."""
    a, b, r = twins(), twins(), twins(resp3=False)
    a("CLIENT", "TRACKING", "on")
    a("GET", "k")
    rid = r.ids()
    for t in (a, r):
        t.real.send_raw(encode_command("CLIENT", "REPLY", "OFF"))
        t.ours.send_raw(encode_command("CLIENT", "REPLY", "OFF"))
    r.real.send_raw(encode_command("SUBSCRIBE", "__redis__:invalidate"))
    r.ours.send_raw(encode_command("SUBSCRIBE", "__redis__:invalidate"))
    r.read()
    b.each(lambda i: ("CLIENT", "TRACKING", "on", "REDIRECT", rid[i]))
    b("GET", "k2")
    b("SET", "k", "1")
    a.read()
    b("SET", "k2", "1")
    r.read()
    r.close()
    b("GET", "k2")
    c = twins()
    c("SET", "k2", "2")
    real, ours = b.real.read_reply(), b.ours.read_reply()
    assert real.startswith(b">2\r\n$21\r\ntracking-redir-broken\r\n")
    assert ours.startswith(b">2\r\n$21\r\ntracking-redir-broken\r\n")
    a.real.send_raw(encode_command("CLIENT", "REPLY", "ON"))
    a.ours.send_raw(encode_command("CLIENT", "REPLY", "ON"))
    a.read()


TRACKED_LIB = ("#!lua name=tl\n"
               "redis.register_function('rd', function(k) return redis.call('get', k[1]) end)\n"
               "redis.register_function('wr', function(k) return redis.call('set', k[1], 1) end)")


def test_scripts_track_the_keys_their_caller_declared(twins):
    """A read-only command inside EVAL/FCALL makes the caller track the keys the
    EVAL/FCALL declared (all of them), never undeclared ones; scripts that only write
    track nothing; OPTIN/OPTOUT's CLIENT CACHING applies to the whole script call."""
    a, w = twins(), twins()
    w("FUNCTION", "FLUSH")
    w("FUNCTION", "LOAD", TRACKED_LIB)
    a("CLIENT", "TRACKING", "on")
    get1 = "return redis.call('get', KEYS[1])"
    a("EVAL", get1, "2", "d1", "d2")
    a("EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "w1")
    a("EVAL", "redis.call('set', KEYS[1], 'x'); return redis.call('get', KEYS[1])", "1", "rw")
    a("EVAL_RO", "return redis.call('mget', KEYS[1], KEYS[2])", "2", "ro1", "ro2")
    a("EVAL", "return redis.call('get', 'undeclared')", "0")
    a("EVAL", "return redis.pcall('incr', KEYS[1])", "1", "w2")
    a("FCALL", "rd", "2", "f1", "f2")
    a("FCALL", "wr", "1", "f3")
    a("FCALL_RO", "rd", "1", "f4")
    a("MULTI")
    a("EVAL", get1, "1", "m1")
    a("EXEC")
    keys = ["d1", "d2", "w1", "rw", "ro1", "ro2", "undeclared", "w2", "f1", "f2", "f3",
            "f4", "m1"]
    w("MSET", *[x for k in keys for x in (k, "1")])
    for _ in range(8):  # d1 d2 rw ro1 ro2 f1 f2 m1 (FCALL_RO of rd fails: no no-writes)
        a.read()
    a.quiet()
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKING", "on", "optin")
    a("EVAL", get1, "1", "o1")
    a("CLIENT", "CACHING", "yes")
    a("EVAL", get1, "1", "o2")
    a("EVAL", get1, "1", "o3")
    a("MULTI")
    a("CLIENT", "CACHING", "yes")
    a("EVAL", get1, "1", "o4")
    a("EXEC")
    a("EVAL", "redis.call('client', 'caching', 'yes'); return 1", "0")
    a("CLIENT", "TRACKING", "off")
    a("CLIENT", "TRACKING", "on", "optout")
    a("CLIENT", "CACHING", "no")
    a("EVAL", get1, "1", "x1")
    a("EVAL", get1, "1", "x2")
    w("MSET", "o1", "1", "o2", "1", "o3", "1", "o4", "1", "x1", "1", "x2", "1")
    a.read()
    a.read()
    a.read()
    a.quiet()
    w("FUNCTION", "FLUSH")
