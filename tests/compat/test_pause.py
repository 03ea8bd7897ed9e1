"""CLIENT PAUSE with several clients, pykv against real redis-server 7.0.

Each scenario (``support.scenario``) runs the same steps against both servers; held
clients show as blocked (``flags=b``), so steps wait for them deterministically. Pauses are
long and ended by CLIENT UNPAUSE unless a test is about the timeout.
"""
from __future__ import annotations

import time

import pytest
from support.resp import encode_command
from support.scenario import Scenario, run_both

LIB = ("#!lua name=lib\n"
       "redis.register_function('w', function() return redis.call('set', 'fk', '1') end)\n"
       "redis.register_function{function_name='ro', callback=function() return 7 end, "
       "flags={'no-writes'}}")
UNKNOWN_SHA = "0" * 40


def _named(s, *names: str, resp: int = 2) -> None:
    for name in names:
        s.silent(name, "CLIENT", "SETNAME", name)
        if resp == 3:
            s.silent(name, "HELLO", "3")


def _listing(s, *names: str) -> None:
    """Record flags and cmd of the named clients' CLIENT LIST lines, and blocked_clients."""
    listing = s.client("_watch").call("CLIENT", "LIST").decode()
    lines = [dict(f.split("=", 1) for f in line.split() if "=" in f)
             for line in listing.split("\n")]
    for fields in sorted((f for f in lines if f.get("name") in names),
                         key=lambda f: f["name"]):
        s.log.append(("list", f"{fields['name']} flags={fields['flags']} "
                              f"cmd={fields['cmd']}".encode()))
    info = s.client("_watch").call("INFO", "clients").decode()
    s.log.append(("info", [x for x in info.split("\r\n")
                           if x.startswith("blocked_clients")][0].encode()))


@pytest.mark.parametrize("resp", [2, 3])
def test_pause_write_holds_writes_and_may_replicate_commands(real_redis, pykv_proc, resp):
    """Reads, read-only transactions, EVAL_RO/FCALL_RO and no-writes scripts pass a WRITE
    pause; writes (also when sent inside MULTI), EVAL/EVALSHA/FCALL that may write,
    PUBLISH and PFCOUNT are held and run in arrival order at UNPAUSE."""
    def steps(s):
        s("w", "FUNCTION", "FLUSH")
        s("w", "FUNCTION", "LOAD", LIB)
        s("w", "SET", "k", "1")
        _named(s, "tx", "ev", "fc", "pub", "pf", "sheb", "sha", "ro", resp=resp)
        s("w", "CLIENT", "PAUSE", "100000", "WRITE")
        s("ro", "GET", "k")
        s("ro", "MULTI")
        s("ro", "GET", "k")
        s("ro", "PING")
        s("ro", "EXEC")
        s("ro", "EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k")
        s("ro", "EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "k")
        s("ro", "FCALL", "ro", "0")
        s("ro", "FCALL_RO", "ro", "0")
        s("ro", "SCRIPT", "LOAD", "return 5")
        s("ro", "FUNCTION", "LIST", "LIBRARYNAME", "nolib")
        s("tx", "MULTI")
        s("tx", "GET", "k")
        s.block("tx", "INCR", "k", total=1)  # held, not QUEUED
        s.block("ev", "EVAL", "return 1", "0", total=2)
        s.block("fc", "FCALL", "w", "0", total=3)
        s.block("pub", "PUBLISH", "ch", "m", total=4)
        s.block("pf", "PFCOUNT", "h", total=5)
        s.block("sheb", "EVAL", "#!lua\nreturn 2", "0", total=6)
        s.block("sha", "EVALSHA", UNKNOWN_SHA, "0", total=7)
        _listing(s, "tx", "ev", "fc", "pub", "pf", "sheb", "sha", "ro")
        s("w", "GET", "k")
        s("w", "CLIENT", "UNPAUSE")
        s.read("tx")
        s("tx", "EXEC")
        for name in ("ev", "fc", "pub", "pf", "sheb", "sha"):
            s.read(name)
        s.wait_blocked(0)
        s("w", "MGET", "k", "fk")

    run_both(real_redis, pykv_proc, steps)


def test_exec_with_writes_queued_before_the_pause_is_held(real_redis, pykv_proc):
    def steps(s):
        _named(s, "a", "b")
        s("a", "MULTI")
        s("a", "SET", "k", "a")
        s("b", "MULTI")
        s("b", "GET", "k")
        s("w", "CLIENT", "PAUSE", "100000", "WRITE")
        s.block("a", "EXEC", total=1)
        s("b", "EXEC")
        _listing(s, "a", "b")
        s("w", "CLIENT", "UNPAUSE")
        s.read("a")
        s("b", "GET", "k")

    run_both(real_redis, pykv_proc, steps)


@pytest.mark.parametrize("resp", [2, 3])
def test_no_expiry_while_paused(real_redis, pykv_proc, resp):
    """While paused, expired keys read as missing but are not deleted (neither lazily nor
    by the expire cycle), so a blocked XREADGROUP on an expired stream is not woken;
    after UNPAUSE they go, and it is."""
    def steps(s):
        _named(s, "w", "x", "b", resp=resp)
        s("w", "SET", "e", "v", "PX", "30")
        s("w", "XGROUP", "CREATE", "st", "g", "$", "MKSTREAM")
        s("w", "PEXPIRE", "st", "30")
        s.block("x", "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "st", ">",
                total=1)
        s.block("b", "BLPOP", "q", "0.2", total=2)
        s("w", "CLIENT", "PAUSE", "100000", "WRITE")
        time.sleep(0.2)  # both keys are past their time: the expire cycle had its chances
        s("w", "GET", "e")
        s("w", "EXISTS", "e", "st")
        s("w", "TTL", "e")
        s("w", "DBSIZE")
        s.read("b")  # a blocked client's timeout still fires
        s.wait_blocked(1)
        s("w", "CLIENT", "UNPAUSE")
        s("w", "EXISTS", "st")
        s.read("x")
        s("w", "GET", "e")
        s("w", "DBSIZE")

    run_both(real_redis, pykv_proc, steps)


def test_held_clients_that_disconnect_or_are_killed_are_dropped(real_redis, pykv_proc):
    def steps(s):
        _named(s, "a", "b", "c", "d")
        s("w", "CLIENT", "PAUSE", "100000", "WRITE")
        s.block("a", "SET", "k", "a", total=1)
        s.block("b", "SET", "k", "b", total=2)
        s.block("c", "RPUSH", "l", "c", total=3)
        s.clients.pop("a").close()
        s.wait_blocked(2)
        d_id = s.silent("d", "CLIENT", "ID")[1:-2]
        s.block("d", "SET", "k", "d", total=3)
        s("w", "CLIENT", "KILL", "ID", d_id)
        s.wait_blocked(2)
        _listing(s, "b", "c")
        s("w", "CLIENT", "UNPAUSE")
        s.read("b")
        s.read("c")
        s("w", "GET", "k")
        # a pause that ends by its timeout releases the held clients in order
        s("w", "CLIENT", "PAUSE", "100", "WRITE")
        s.block("b", "SET", "k", "b2", total=1)
        s.block("c", "SET", "k", "c2", total=2)
        s.read("b")
        s.read("c")
        s("w", "GET", "k")

    run_both(real_redis, pykv_proc, steps)


def test_client_unblock_of_a_held_client_leaves_it_held(pykv_proc):
    """pykv only: Redis 7.0.15 crashes on this (replyToBlockedClientTimedOut with an
    unknown btype); pykv answers 0 and the client runs its command at UNPAUSE."""
    s = Scenario(pykv_proc.port)
    try:
        held_id = s.silent("a", "CLIENT", "ID")[1:-2]
        s("w", "CLIENT", "PAUSE", "100000", "WRITE")
        s.block("a", "SET", "k", "v", total=1)
        assert s("w", "CLIENT", "UNBLOCK", held_id) == b":0\r\n"
        assert s("w", "CLIENT", "UNBLOCK", held_id, "ERROR") == b":0\r\n"
        s.wait_blocked(1)
        s("w", "CLIENT", "UNPAUSE")
        assert s.read("a") == b"+OK\r\n"
    finally:
        s.client("w").call("CLIENT", "UNPAUSE")
        s.close()


def test_held_commands_run_after_the_unpausing_pipeline(real_redis, pykv_proc):
    """Held commands run once the current work is done: the commands pipelined after
    CLIENT UNPAUSE on the same connection go first."""
    def steps(s):
        s("w", "SET", "k", "old")
        s("w", "CLIENT", "PAUSE", "100000", "WRITE")
        s.block("a", "SET", "k", "new", total=1)
        s.client("w").send_raw(encode_command("CLIENT", "UNPAUSE") + encode_command("GET", "k"))
        s.read("w")
        s.read("w")
        s.read("a")
        s("w", "GET", "k")

    run_both(real_redis, pykv_proc, steps)
