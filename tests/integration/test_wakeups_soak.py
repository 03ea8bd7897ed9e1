"""Wake-up soak: every parked client is eventually answered, whatever happens around it.

Waiters block (BLPOP, BZPOPMIN, BLMOVE, XREAD, XREADGROUP, WAIT; timeouts of zero or a few
tens of milliseconds) while writers feed and break the keys (pushes, XADD, DEL, type
changes, FLUSHALL, group re-creation) and a controller pauses and unpauses writes, kills
waiters, unblocks them and the test itself drops connections. Invariants, checked against
real redis-server and pykv with the same seeded steps:

* a command with a timeout is answered within its timeout plus a bounded slack once no
  pause holds it (a killed client's answer is its connection closing);
* an XREADGROUP BLOCK 0 sent well before its stream was deleted or overwritten (DEL, SET,
  FLUSHALL) is answered within that slack of the deleting command's reply, and a blocked
  XREADGROUP is never left waiting until a new stream of the same name tells it NOGROUP;
* at the end, after UNPAUSE and CLIENT UNBLOCK of everyone, every pending command is
  answered, ``blocked_clients`` is back to 0 and the server answers PING.

The default suite runs a few seconds; ``-m slow`` runs the long version. CLIENT UNBLOCK is
never sent while a pause may hold clients: Redis 7.0.15 crashes on it (pykv answers 0).
"""
from __future__ import annotations

import random
import select
import time

import pytest
from support.resp import RawClient, encode_command

SLACK = 3.0  # seconds a timed command may be late (loaded 2-core machines)
KEYS_L = ("l1", "l2")


class Actor:
    """One connection with at most one command in flight."""

    def __init__(self, port: int, name: str) -> None:
        self.port = port
        self.name = name
        self.connect()

    def connect(self) -> None:
        self.conn = RawClient(port=self.port, timeout=10)
        self.id = self.conn.call("CLIENT", "ID")[1:-2]
        self.conn.sock.settimeout(0.01)
        self.pending: tuple | None = None  # (command, sent at, timeout in s or None)
        self.killed = False
        self.answer_by: float | None = None  # a deadline set by what others did
        self.last_reply = b""

    def send(self, now: float, *args, timeout: float | None) -> None:
        self.conn.send_raw(encode_command(*args))
        self.pending = (args, now, timeout)
        self.answer_by = None

    def poll(self) -> bool:
        """Read a reply if one is complete; True when the pending command is answered."""
        try:
            reply = self.conn.read_reply()
        except (TimeoutError, BlockingIOError):
            return False
        except (ConnectionError, OSError):
            assert self.killed, f"{self.name}: connection lost while {self.pending!r}"
            self.conn.close()
            self.connect()
            return True
        assert reply[:1] in b"*:$+-_>%~", f"{self.name}: {reply!r}"
        self.last_reply = reply
        if reply[:1] == b">":  # never expected here: no subscriptions, no tracking
            raise AssertionError(f"{self.name}: push {reply!r}")
        # groups only go with their stream here (no XGROUP DESTROY, no TTL on the stream,
        # whose lazy expiry by an XADD gives this in Redis too): a blocked XREADGROUP hears
        # of that at once (-UNBLOCKED), so it never outlives its group to see this
        assert not reply.startswith(b"-NOGROUP the consumer group this client was blocked"), \
            f"{self.name}: {self.pending!r} outlived its stream: {reply!r}"
        self.pending = None
        return True


def _blocking_command(rnd: random.Random, actor: Actor) -> tuple[tuple, float | None]:
    t = rnd.choice([0, 0, 0.02, 0.05])
    secs = f"{t:g}"
    ms = str(int(t * 1000))
    kind = rnd.randrange(6)
    if kind == 0:
        cmd = ("BLPOP", *rnd.sample(KEYS_L, 2), secs)
    elif kind == 1:
        cmd = ("BZPOPMIN", "z", secs)
    elif kind == 2:
        cmd = ("BLMOVE", rnd.choice(KEYS_L), "dst", "LEFT", "RIGHT", secs)
    elif kind == 3:
        cmd = ("XREAD", "BLOCK", ms, "STREAMS", "s", "$")
    elif kind == 4:
        cmd = ("XREADGROUP", "GROUP", "g", actor.name, "BLOCK", ms, "STREAMS", "s", ">")
    else:
        cmd = ("WAIT", "1", ms)
    return cmd, (t or None)


MAKE_GROUP = ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
WRITES = [
    ("RPUSH", "l1", "a"), ("RPUSH", "l2", "b", "c"), ("ZADD", "z", "1", "m"),
    ("XADD", "s", "*", "f", "v"), ("DEL", "s"), MAKE_GROUP, MAKE_GROUP, MAKE_GROUP,
    MAKE_GROUP, ("SET", "l1", "str"), ("DEL", "l1", "z"), ("SET", "s", "str"),
    ("PEXPIRE", "l2", "5"), ("DEL", "s"), ("LPUSH", "dst", "x"), ("FLUSHALL",),
]
STREAM_GONE = {("DEL", "s"), ("SET", "s", "str"), ("FLUSHALL",)}


def soak(port: int, seconds: float, seed: int) -> dict:
    rnd = random.Random(seed)
    ctl = RawClient(port=port, timeout=10)
    ctl.call("FLUSHALL")
    ctl.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    waiters = [Actor(port, f"w{i}") for i in range(10)]
    writers = [Actor(port, f"p{i}") for i in range(2)]
    everyone = waiters + writers
    stats = {"answered": 0, "kills": 0, "drops": 0, "pauses": 0, "unblocks": 0,
             "woken_by_deletion": 0}
    paused_until = 0.0  # while a pause may hold clients: no CLIENT UNBLOCK (see docstring)
    pause_open = False
    last_unpause = time.monotonic()
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            now = time.monotonic()
            for a in waiters:
                if a.pending is None:
                    cmd, t = _blocking_command(rnd, a)
                    a.send(now, *cmd, timeout=t)
            for p in writers:
                if p.pending is None and rnd.random() < 0.15:
                    p.send(now, *rnd.choice(WRITES), timeout=0.0)
            roll = rnd.random()
            if roll < 0.04 and not pause_open:
                ctl.call("CLIENT", "PAUSE", str(rnd.choice([30, 100000])), "WRITE")
                pause_open, paused_until = True, now + rnd.uniform(0.02, 0.15)
                stats["pauses"] += 1
            elif pause_open and now >= paused_until:
                assert ctl.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
                pause_open, last_unpause = False, time.monotonic()
            elif roll < 0.07:
                victim = rnd.choice(_spared(waiters))
                victim.killed = True
                ctl.call("CLIENT", "KILL", "ID", victim.id)
                stats["kills"] += 1
            elif roll < 0.09:
                victim = rnd.choice(_spared(waiters))
                victim.conn.close()
                victim.connect()
                stats["drops"] += 1
            elif roll < 0.14 and not pause_open:
                victim = rnd.choice(_spared(waiters))
                args = ["CLIENT", "UNBLOCK", victim.id] + (["ERROR"] if roll < 0.11 else [])
                ctl.call(*args)
                stats["unblocks"] += 1
            _poll(everyone, 0.005, stats, waiters)
            _check_overdue(everyone, pause_open, last_unpause)
    finally:
        ctl.call("CLIENT", "UNPAUSE")
    # drain: unblock everyone until every pending command has its answer
    deadline = time.monotonic() + 20
    while any(a.pending is not None for a in everyone):
        assert time.monotonic() < deadline, \
            [(a.name, a.pending) for a in everyone if a.pending is not None]
        for a in waiters:
            if a.pending is not None:
                ctl.call("CLIENT", "UNBLOCK", a.id)
        _poll(everyone, 0.05, stats, waiters)
    info = ctl.call("INFO", "clients")
    assert b"blocked_clients:0\r\n" in info, info
    assert ctl.call("PING") == b"+PONG\r\n"
    for a in everyone:
        a.conn.close()
    ctl.close()
    return stats


def _spared(waiters: list[Actor]) -> list[Actor]:
    """Victims for kills, drops and unblocks: not those owed a wake-up (that would hide a
    missing one)."""
    return [a for a in waiters if a.answer_by is None] or waiters


def _poll(actors: list[Actor], wait: float, stats: dict, waiters: list[Actor]) -> None:
    socks = {a.conn.sock: a for a in actors if a.pending is not None}
    if not socks:
        return
    try:
        ready, _, _ = select.select(list(socks), [], [], wait)
    except (ValueError, OSError):
        return
    for sock in ready:
        actor = socks[sock]
        while actor.pending is not None:
            args, sent, _ = actor.pending
            if not actor.poll():
                break
            stats["answered"] += 1
            if args in STREAM_GONE:
                _stream_went(waiters, sent)
            if actor.last_reply.startswith(b"-UNBLOCKED the stream"):
                stats["woken_by_deletion"] += 1
            if actor.conn.sock is not sock:  # reconnected after a kill
                break
            try:  # more already buffered? (pipelined answers never happen: one in flight)
                if not actor.conn.buf and not select.select([sock], [], [], 0)[0]:
                    break
            except (ValueError, OSError):
                break


def _stream_went(waiters: list[Actor], deleted_at: float) -> None:
    """Waiters parked in XREADGROUP BLOCK 0 since well before the deletion must hear."""
    answer_by = time.monotonic() + SLACK
    for a in waiters:
        if a.pending is not None and a.pending[0][0] == "XREADGROUP" \
                and a.pending[2] is None and a.pending[1] < deleted_at - 0.02:
            a.answer_by = answer_by if a.answer_by is None else min(a.answer_by, answer_by)


def _check_overdue(actors: list[Actor], pause_open: bool, last_unpause: float) -> None:
    if pause_open:
        return
    now = time.monotonic()
    for a in actors:
        if a.pending is None or a.killed:
            continue
        if a.answer_by is not None:
            assert now < a.answer_by, f"{a.name}: {a.pending!r} not woken by its stream going"
        if a.pending[2] is None:
            continue
        args, sent, timeout = a.pending
        late = now - max(sent, last_unpause) - timeout
        assert late < SLACK, f"{a.name}: {args!r} unanswered {late:.1f}s past its timeout"


@pytest.fixture(params=["redis", "pykv"])
def port(request):
    if request.param == "redis":
        return request.getfixturevalue("real_redis").port
    return request.getfixturevalue("pykv_proc").port


def test_every_parked_client_is_answered(port):
    stats = soak(port, seconds=3.0, seed=7)
    assert stats["answered"] > 50 and stats["kills"] and stats["pauses"], stats
    assert stats["woken_by_deletion"], stats  # the stream-deletion wake-up was exercised


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_every_parked_client_is_answered_long(port, seed):
    stats = soak(port, seconds=60.0, seed=seed)
    assert stats["answered"] > 1000, stats

