"""Blocking commands with several clients, pykv against real redis-server 7.0.

Each scenario (``support.scenario``) runs the same steps against both servers and records
every reply each client receives; the two transcripts must be identical bytes.
"""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient, encode_command
from support.scenario import Scenario, run_both


def test_fifo_order_and_partial_service(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "q", "0", total=1)
        s.block("c2", "BRPOP", "q", "0", total=2)
        s.block("c3", "BLPOP", "other", "q", "0", total=3)
        s("w", "RPUSH", "q", "a", "b")
        s.read("c1")
        s.read("c2")
        s.wait_blocked(1)
        s("w", "LLEN", "q")
        s("w", "LPUSH", "other", "z")
        s.read("c3")
        s.wait_blocked(0)
        s("w", "EXISTS", "q", "other")

    run_both(real_redis, pykv_proc, steps)


def test_first_ready_key_in_push_order(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k1", "k2", "k3", "0", total=1)
        s("w", "RPUSH", "k3", "x")
        s.read("c1")
        s.block("c1", "BLMPOP", "0", "2", "k1", "k2", "RIGHT", "COUNT", "3", total=1)
        s("w", "RPUSH", "k2", "a", "b", "c", "d")
        s.read("c1")
        s("w", "LRANGE", "k2", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_timeouts(real_redis, pykv_proc):
    def steps(s):
        for cmd in [("BLPOP", "k", "0.05"), ("BRPOP", "k", "k2", "0.05"),
                    ("BLMOVE", "k", "d", "LEFT", "RIGHT", "0.05"),
                    ("BRPOPLPUSH", "k", "d", "0.05"), ("BLMPOP", "0.05", "1", "k", "LEFT")]:
            s("c1", *cmd)
        s.silent("c3", "HELLO", "3")
        s("c3", "BLPOP", "k", "0.05")
        s("c3", "BLMOVE", "k", "d", "LEFT", "RIGHT", "0.05")
        s.wait_blocked(0)

    run_both(real_redis, pykv_proc, steps)


def test_timeout_is_not_early(pykv_proc):
    c = RawClient(port=pykv_proc.port)
    start = time.monotonic()
    assert c.call("BLPOP", "nokey", "0.3") == b"*-1\r\n"
    elapsed = time.monotonic() - start
    assert 0.29 <= elapsed < 3
    c.close()


def test_exec_makes_keys_ready_after_the_transaction(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "MULTI")
        s("w", "RPUSH", "k", "a")
        s("w", "RPUSH", "k", "b")
        s("w", "LPOP", "k")
        s("w", "EXEC")
        s.read("c1")
        s.block("c2", "BLPOP", "k2", "0", total=1)
        s("w", "MULTI")
        s("w", "RPUSH", "k2", "a")
        s("w", "DEL", "k2")
        s("w", "EXEC")
        s("w", "LLEN", "k2")
        s.wait_blocked(1)
        s("w", "RPUSH", "k2", "c")
        s.read("c2")

    run_both(real_redis, pykv_proc, steps)


def test_lmove_chain_serves_every_client(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BRPOP", "k3", "0", total=1)
        s.block("c2", "BLMOVE", "k2", "k3", "RIGHT", "LEFT", "0", total=2)
        s.block("c3", "BRPOPLPUSH", "k1", "k2", "0", total=3)
        s("w", "LPUSH", "k1", "v")
        s.read("c3")
        s.read("c2")
        s.read("c1")
        s.wait_blocked(0)
        s("w", "EXISTS", "k1", "k2", "k3")
        # rotating a list onto itself serves the client and keeps the key
        s.block("c1", "BLMOVE", "r", "r", "LEFT", "RIGHT", "0", total=1)
        s("w", "RPUSH", "r", "1", "2")
        s.read("c1")
        s("w", "LRANGE", "r", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_pipelined_commands_run_after_unblocking(real_redis, pykv_proc):
    def steps(s):
        s.client("c1").send_raw(encode_command("BLPOP", "k", "0")
                                + encode_command("RPUSH", "after", "x")
                                + encode_command("LLEN", "k"))
        s.wait_blocked(1)
        s("w", "LLEN", "after")
        s("w", "RPUSH", "k", "a", "b")
        s.read("c1")
        s.read("c1")
        s.read("c1")
        s("w", "LRANGE", "after", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_wrong_type_keeps_waiting_and_wrong_destination_errors(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "SET", "k", "string")
        s("w", "DEL", "k")
        s.wait_blocked(1)
        s("w", "RPUSH", "k", "v")
        s.read("c1")
        s("w", "SET", "dst", "string")
        s.block("c2", "BLMOVE", "src", "dst", "LEFT", "LEFT", "0", total=1)
        s("w", "RPUSH", "src", "a")
        s.read("c2")
        s.wait_blocked(0)
        s("w", "LRANGE", "src", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_client_unblock(real_redis, pykv_proc):
    def steps(s):
        cid = s.silent("c1", "CLIENT", "ID")[1:-2]
        s("w", "CLIENT", "UNBLOCK", cid)
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "CLIENT", "UNBLOCK", cid)
        s.read("c1")
        s.block("c1", "BLMOVE", "k", "d", "LEFT", "LEFT", "0", total=1)
        s("w", "CLIENT", "UNBLOCK", cid, "TIMEOUT")
        s.read("c1")
        s.block("c1", "BLMPOP", "0", "1", "k", "LEFT", total=1)
        s("w", "CLIENT", "UNBLOCK", cid, "ERROR")
        s.read("c1")
        s.wait_blocked(0)
        s("w", "CLIENT", "UNBLOCK", cid, "ERROR")
        s("w", "RPUSH", "k", "a")
        s("c1", "LPOP", "k")

    run_both(real_redis, pykv_proc, steps)


def test_disconnected_client_is_forgotten(real_redis, pykv_proc):
    def steps(s):
        s.block("gone", "BLPOP", "k", "0", total=1)
        s.clients.pop("gone").close()
        s.wait_blocked(0)
        s.block("c2", "BLPOP", "k", "0", total=1)
        s("w", "RPUSH", "k", "a", "b")
        s.read("c2")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_key_created_by_rename_wakes_clients(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BRPOP", "k", "0", total=1)
        s("w", "RPUSH", "tmp", "a", "b")
        s("w", "RENAME", "tmp", "k")
        s.read("c1")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_blocked_on_several_databases(real_redis, pykv_proc):
    def steps(s):
        s("c1", "SELECT", "1")
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "RPUSH", "k", "db0")
        s("w", "SELECT", "1")
        s("w", "RPUSH", "k", "db1")
        s.read("c1")
        s("w", "SELECT", "0")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_blocked_clients_in_info(pykv_proc):
    s = Scenario(pykv_proc.port)
    try:
        s.block("c1", "BLPOP", "k", "0", total=1)
        s.block("c2", "BLPOP", "k", "1000", total=2)
        info = s("w", "INFO", "clients")
        assert b"blocked_clients:2\r\n" in info
        s("w", "RPUSH", "k", "a", "b")
        s.read("c1")
        s.read("c2")
        assert b"blocked_clients:0\r\n" in s("w", "INFO", "clients")
    finally:
        s.close()


def test_list_and_zset_waiters_on_one_key(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s.block("c2", "BZPOPMIN", "k", "0", total=2)
        s("w", "MULTI")
        s("w", "ZADD", "k", "1", "a", "2", "b")
        s("w", "EXEC")
        s.read("c2")
        s.wait_blocked(1)
        s("w", "ZRANGE", "k", "0", "-1")
        s("w", "DEL", "k")
        s("w", "RPUSH", "k", "x")
        s.read("c1")
        s.wait_blocked(0)

    run_both(real_redis, pykv_proc, steps)


def test_blocked_client_queue_survives_a_served_peer_closing(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s.block("c2", "BLPOP", "k", "0", total=2)
        s.clients.pop("c1").close()
        s.wait_blocked(1)
        s("w", "RPUSH", "k", "a", "b")
        s.read("c2")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def _stats(s, *commands: str) -> None:
    """Record calls, rejected_calls and failed_calls of ``commands`` (not their times)."""
    info = s.client("_watch").call("INFO", "commandstats").decode()
    for line in sorted(info.split("\r\n")):  # in Redis's hash order: sort
        name, _, fields = line.partition(":")
        if name.removeprefix("cmdstat_") in commands:
            kept = [f for f in fields.split(",") if not f.startswith("usec")]
            s.log.append(("stats", f"{name}:{','.join(kept)}".encode()))


@pytest.mark.parametrize("resp", [2, 3])
def test_xreadgroup_woken_when_its_stream_goes_away(real_redis, pykv_proc, resp):
    """XREADGROUP BLOCK is answered -UNBLOCKED at once when its stream is deleted,
    overwritten by another type, flushed, renamed, moved or swapped away, or expires
    (lazily or by the expire cycle); a destroyed group gives NOGROUP. A plain XREAD keeps
    waiting and is served when the key is a stream again."""
    def park(s, *extra_keys):
        s.block("c1", "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s",
                *extra_keys, ">", *([">"] * len(extra_keys)), total=2)

    def steps(s):
        for name in ("c1", "c2"):
            s.silent(name, "HELLO", str(resp))
        s("w", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        s.block("c2", "XREAD", "BLOCK", "0", "STREAMS", "s", "$", total=1)
        park(s)
        s("w", "DEL", "s")
        s.read("c1")
        s.wait_blocked(1)
        s("w", "XADD", "s", "1-0", "f", "v")
        s.read("c2")
        s.block("c2", "XREAD", "BLOCK", "0", "STREAMS", "s", "$", total=1)
        for breaker in (("SET", "s", "str"), ("FLUSHALL",), ("RENAME", "s", "s2"),
                        ("MOVE", "s", "1"), ("SWAPDB", "0", "1"),
                        ("XGROUP", "DESTROY", "s", "g")):
            s("w", "FLUSHALL")
            s("w", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
            park(s)
            s("w", *breaker)
            s.read("c1")
            s.wait_blocked(1)
        s("w", "FLUSHALL")
        s("w", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        s("w", "XGROUP", "CREATE", "o", "g", "$", "MKSTREAM")
        park(s, "o")  # one of two streams deleted inside a transaction, then recreated
        s("w", "MULTI")
        s("w", "DEL", "o")
        s("w", "XADD", "o", "5-0", "f", "v")
        s("w", "EXEC")
        s.read("c1")
        s.wait_blocked(1)
        s("w", "DEBUG", "SET-ACTIVE-EXPIRE", "0")
        park(s)
        s("w", "PEXPIRE", "s", "1")
        time.sleep(0.05)
        s.wait_blocked(2)  # still parked: nothing looked at the key
        s("w", "EXISTS", "s")  # the lazy expiry deletes it
        s.read("c1")
        s("w", "DEBUG", "SET-ACTIVE-EXPIRE", "1")
        s("w", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        park(s)
        s("w", "PEXPIRE", "s", "1")
        s.read("c1")  # the expire cycle deletes it: no command needed
        s.wait_blocked(1)
        # lazy expiry and a new stream in one XADD: the key is a stream again, without the
        # group, when the waiters are served: NOGROUP, as in Redis (and XREAD is served)
        s("w", "DEBUG", "SET-ACTIVE-EXPIRE", "0")
        s("w", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        park(s)
        s("w", "PEXPIRE", "s", "1")
        time.sleep(0.05)
        s("w", "XADD", "s", "9-0", "f", "v")
        s.read("c1")
        s.read("c2")
        s("w", "DEBUG", "SET-ACTIVE-EXPIRE", "1")
        _stats(s, "xreadgroup", "xread")

    run_both(real_redis, pykv_proc, steps)


def test_list_and_zset_waiters_ignore_deletion_and_type_change(real_redis, pykv_proc):
    """BLPOP/BZPOPMIN/BLMOVE wait on through DEL, a type change, FLUSHALL and SWAPDB; they
    are served once a value of their type is there."""
    def steps(s):
        s.block("c1", "BLPOP", "l", "0", total=1)
        s.block("c2", "BZPOPMIN", "z", "0", total=2)
        s.block("c3", "BLMOVE", "m", "d", "LEFT", "LEFT", "0", total=3)
        for cmd in (("RPUSH", "x", "1"), ("SET", "l", "s"), ("SADD", "z", "a"),
                    ("HSET", "m", "f", "v"), ("DEL", "l", "z", "m"), ("SET", "m", "1"),
                    ("FLUSHALL",), ("SWAPDB", "0", "1"), ("PEXPIRE", "m", "1")):
            s("w", *cmd)
        time.sleep(0.05)
        s("w", "DEL", "l", "z", "m")
        s.wait_blocked(3)
        s("w", "ZADD", "l", "1", "a")
        s("w", "RPUSH", "z", "a")
        s.wait_blocked(3)
        s("w", "DEL", "l", "z")
        s("w", "RPUSH", "l", "a")
        s("w", "ZADD", "z", "1", "a")
        s("w", "RPUSH", "m", "b")
        s.read("c1")
        s.read("c2")
        s.read("c3")
        s.wait_blocked(0)

    run_both(real_redis, pykv_proc, steps)
