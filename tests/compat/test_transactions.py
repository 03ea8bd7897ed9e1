"""MULTI/EXEC/DISCARD/WATCH/UNWATCH compared byte for byte with real redis-server 7.0."""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient


@pytest.fixture
def other(diff, real_redis, pykv_proc):
    """A second connection pair (another client) on the same two servers."""
    pair = type(diff)(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    yield pair
    pair.real.close()
    pair.ours.close()


def test_multi_exec_basic(diff):
    diff("MULTI")
    diff("SET", "k", "1")
    diff("INCR", "k")
    diff("GET", "k")
    diff("PING")
    diff("EXEC")
    diff("GET", "k")


def test_multi_exec_resp3(diff3):
    diff3("MULTI")
    diff3("SET", "k", "v")
    diff3("GET", "missing")
    diff3("EXEC")


def test_empty_transaction_and_discard(diff):
    diff("MULTI")
    diff("EXEC")
    diff("MULTI")
    diff("SET", "k", "v")
    diff("DISCARD")
    diff("GET", "k")
    diff("EXEC")
    diff("DISCARD")


def test_state_errors(diff):
    diff("EXEC")
    diff("DISCARD")
    diff("MULTI")
    diff("MULTI")  # nested: an error, but it does not abort the transaction
    diff("WATCH", "k")  # likewise
    diff("SET", "k", "v")
    diff("EXEC")
    diff("GET", "k")


def test_queue_time_errors_abort(diff):
    diff("MULTI")
    diff("SET", "k", "v")
    diff("SET", "k")  # arity
    diff("EXEC")
    diff("GET", "k")
    diff("MULTI")
    diff("NOSUCHCOMMAND", "a", "b")
    diff("SET", "k", "v")
    diff("EXEC")
    diff("EXISTS", "k")
    diff("MULTI")
    diff("CONFIG", "NOSUCHSUB")
    diff("EXEC")


def test_runtime_errors_do_not_roll_back(diff):
    diff("MULTI")
    diff("SET", "a", "1")
    diff("SET", "s", "notanumber")
    diff("INCR", "s")
    diff("INCR", "a")
    diff("EXEC")
    diff("GET", "a")


def test_runtime_wrongtype(diff):
    diff("MULTI")
    diff("SET", "a", "1")
    diff("LPUSH", "a", "x")
    diff("GET", "a")
    diff("EXEC")


def test_no_multi_command_refused(diff):
    diff("MULTI")
    diff("SET", "k", "v")
    diff("SAVE")  # flagged no-multi: refused and the transaction is dirty
    diff("EXEC")
    diff("EXISTS", "k")


def test_watch_untouched_key_executes(diff):
    diff("SET", "k", "1")
    diff("WATCH", "k", "other")
    diff("MULTI")
    diff("INCR", "k")
    diff("EXEC")
    diff("GET", "k")


def test_watch_touched_by_other_client(diff, other):
    diff("SET", "k", "1")
    diff("WATCH", "k")
    other("SET", "k", "2")
    diff("MULTI")
    diff("INCR", "k")
    diff("EXEC")
    diff("GET", "k")
    # the failed EXEC unwatched everything: the next transaction runs
    diff("MULTI")
    diff("INCR", "k")
    diff("EXEC")


def test_watch_touched_resp3_null(diff3, real_redis, pykv_proc):
    diff3("WATCH", "k")
    diff3("SET", "k", "by-myself")  # a change by the watching client counts too
    diff3("MULTI")
    diff3("GET", "k")
    diff3("EXEC")


def test_watch_missing_key_then_created(diff, other):
    diff("WATCH", "k")
    other("SET", "k", "x")
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")


def test_watch_delete_and_noop_delete(diff, other):
    diff("SET", "k", "1")
    diff("WATCH", "k", "nothere")
    other("DEL", "nothere")  # deleting a missing key is no change
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")
    diff("WATCH", "k")
    other("DEL", "k")
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")


def test_unwatch(diff, other):
    diff("SET", "k", "1")
    diff("WATCH", "k")
    other("SET", "k", "2")
    diff("UNWATCH")
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")


def test_discard_unwatches(diff, other):
    diff("WATCH", "k")
    diff("MULTI")
    diff("DISCARD")
    other("SET", "k", "2")
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")


def test_watch_is_per_database(diff, other):
    diff("SET", "k", "1")
    diff("WATCH", "k")
    other("SELECT", "1")
    other("SET", "k", "db1")  # same name, other database: not a change
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")
    diff("SELECT", "1")
    diff("WATCH", "k")  # watch in db 1, then touch from db 1
    other("SET", "k", "again")
    diff("SELECT", "0")
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")
    other("FLUSHALL")


def test_watch_expired_between_watch_and_exec(diff):
    diff("SET", "k", "v", "PX", "60")
    diff("WATCH", "k")
    time.sleep(0.15)
    diff("MULTI")
    diff("PING")
    diff("EXEC")


def test_watch_already_expired_key(diff, other):
    diff("SET", "k", "v", "PX", "10")
    time.sleep(0.05)
    diff("WATCH", "k")  # already logically expired when watched
    other("GET", "k")  # lazy expiry deletes it: logically no change
    diff("MULTI")
    diff("PING")
    diff("EXEC")


def test_watch_already_expired_key_then_recreated(diff, other):
    diff("SET", "k", "v", "PX", "10")
    time.sleep(0.05)
    diff("WATCH", "k")
    other("SET", "k", "new")
    diff("MULTI")
    diff("PING")
    diff("EXEC")


def test_watch_expire_command_touches(diff, other):
    diff("SET", "k", "v")
    diff("WATCH", "k")
    other("EXPIRE", "k", "100")
    diff("MULTI")
    diff("TTL", "k")
    diff("EXEC")


def test_flushall_touches_existing_watched_keys(diff, other):
    diff("SET", "k", "v")
    diff("WATCH", "k")
    other("FLUSHALL")
    diff("MULTI")
    diff("PING")
    diff("EXEC")


def test_flushall_does_not_touch_missing_watched_keys(diff, other):
    other("SET", "unrelated", "v")
    diff("WATCH", "k")
    other("FLUSHALL")
    diff("MULTI")
    diff("PING")
    diff("EXEC")


def test_flushdb_touches(diff, other):
    diff("SET", "k", "v")
    diff("WATCH", "k")
    other("SELECT", "1")
    other("FLUSHDB")  # another database: no change
    diff("MULTI")
    diff("PING")
    diff("EXEC")
    diff("WATCH", "k")
    other("SELECT", "0")
    other("FLUSHDB")
    diff("MULTI")
    diff("PING")
    diff("EXEC")


def test_swapdb_touches(diff, other):
    diff("WATCH", "k")
    other("SELECT", "1")
    other("SET", "k", "in-db1")
    other("SWAPDB", "0", "1")  # k appears in db 0
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")
    other("FLUSHALL")


def test_blocking_command_inside_multi_does_not_block(diff):
    diff("MULTI")
    diff("BLPOP", "list", "0")
    diff("LPUSH", "list", "a")
    diff("BLPOP", "list", "0")
    diff("EXEC")


def test_select_inside_multi(diff):
    diff("MULTI")
    diff("SELECT", "2")
    diff("SET", "k", "in2")
    diff("EXEC")
    diff("GET", "k")
    diff("SELECT", "0")
    diff("GET", "k")
    diff("SELECT", "2")
    diff("FLUSHALL")
    diff("SELECT", "0")


def test_pipelined_transaction(diff):
    from support.resp import encode_command

    data = b"".join(encode_command(*c) for c in (
        ("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("GET", "a"), ("EXEC",)))
    diff.raw(data, replies=5)


def test_subscribe_inside_multi(diff):
    diff("MULTI")
    diff("SUBSCRIBE", "ch")
    diff("EXEC")
    diff("UNSUBSCRIBE")


def test_ssubscribe_inside_multi_refused(diff):
    diff("MULTI")
    diff("SSUBSCRIBE", "ch")
    diff("EXEC")


def test_watch_arity_and_unwatch_in_multi(diff):
    diff("WATCH")
    diff("MULTI")
    diff("UNWATCH")  # queued, like any other command
    diff("EXEC")


def test_exec_stats_errorstats_clean_disconnect(pykv_proc):
    """A client that disconnects while watching and inside MULTI leaves no trace."""
    c = RawClient(port=pykv_proc.port)
    c.call("WATCH", "k1", "k2")
    c.call("MULTI")
    c.call("SET", "k1", "v")
    c.close()
    d = RawClient(port=pykv_proc.port)
    assert d.call("SET", "k1", "v") == b"+OK\r\n"
    assert d.call("DEL", "k1") == b":1\r\n"
    d.close()


# EXEC refused by the dispatcher (arity, NOAUTH...) aborts the transaction, as Redis's
# execCommandAbort: "-EXECABORT Transaction discarded because of: <reason>", MULTI left
EXEC_ARITY_CASES = [
    [("MULTI",), ("SET", "k", "v"), ("EXEC", "blahblah"), ("EXEC",), ("GET", "k")],
    [("EXEC", "blahblah"), ("EXEC",)],
    [("MULTI",), ("EXEC", "a", "b"), ("MULTI",), ("EXEC",)],
    [("WATCH", "k"), ("MULTI",), ("EXEC", "x"), ("SET", "k", "1"), ("MULTI",), ("EXEC",)],
    [("MULTI",), ("DISCARD", "x"), ("PING",), ("EXEC",)],
    [("MULTI",), ("MULTI", "x"), ("WATCH",), ("UNWATCH", "x"), ("EXEC",), ("EXEC",)],
    [("DISCARD", "x"), ("MULTI", "x"), ("WATCH",), ("UNWATCH", "x")],
    [("MULTI",), ("PING",), ("DISCARD", "x"), ("DISCARD",), ("EXEC",)],
]


@pytest.mark.parametrize("steps", EXEC_ARITY_CASES,
                         ids=[" / ".join(" ".join(s) for s in c) for c in EXEC_ARITY_CASES])
def test_transaction_command_arity(diff, diff3, steps):
    for d in (diff, diff3):
        for step in steps:
            d(*step)
        d("DEL", "k")


def test_exec_refused_before_auth_aborts(real_redis, pykv_proc):
    """NOAUTH keeps its code in the EXECABORT text (a shared error in Redis); HELLO before
    AUTH answers 7.0's NOAUTH text."""
    from support.servers import RealRedis

    from pykv.testing import Server

    real = RealRedis(extra=["--requirepass", "pw"])
    try:
        with Server(config={"requirepass": "pw"}) as ours:
            for data in (b"EXEC\r\n", b"EXEC x\r\n", b"MULTI\r\n", b"DISCARD\r\n",
                         b"HELLO 3\r\n", b"HELLO 2 SETNAME x\r\n",
                         b"HELLO 3 AUTH default wrong\r\n"):
                replies = []
                for port in (real.port, ours.port):
                    c = RawClient(port=port)
                    c.send_raw(data)
                    replies.append(c.read_reply())
                    c.close()
                assert replies[1] == replies[0], data
    finally:
        real.stop()


# command names the dispatcher's name cache (ServerCore._name_cache) maps to one slot
# (LPOP/RPOP, INCR/GETSET, MGET/UNLINK), case variants, and names it does not cache
MIXED_NAMES = [
    ("LPUSH", "l", "a", "b", "c"), ("LPOP", "l"), ("RPOP", "l"), ("lpop", "l"),
    ("rPoP", "l"), ("SET", "n", "1"), ("INCR", "n"), ("GETSET", "n", "5"), ("incr", "n"),
    ("MGET", "n", "l"), ("UNLINK", "l"), ("mget", "n"), ("x" * 40,), ("", "a"),
    ("nosuch",), ("GET", "n"), ("get", "n"), ("GeT", "n"),
]


def test_pipelined_mixed_command_names(diff):
    """A pipeline alternating names (each a new name object from the parser), outside and
    inside MULTI: every name reaches its own command, unknown ones are refused."""
    from support.resp import encode_command

    data = b"".join(encode_command(*c) for c in MIXED_NAMES)
    diff.raw(data, replies=len(MIXED_NAMES))
    known = [c for c in MIXED_NAMES if c[0] and c[0] != "nosuch" and len(c[0]) < 40]
    queued = [("MULTI",), *known, ("EXEC",)]
    diff.raw(b"".join(encode_command(*c) for c in queued), replies=len(queued))
    diff.raw(b"".join(encode_command(*c) for c in (("MULTI",), *MIXED_NAMES, ("EXEC",))),
             replies=len(MIXED_NAMES) + 2)


def test_transaction_commandstats_and_errorstats(diff, other):
    """MULTI and EXEC count as calls, queued commands count when EXEC runs them (failed
    ones as failed), refused ones as rejected; EXECABORT and runtime errors in errorstats."""
    from test_script_errorstats import _stats

    for c in (diff.real, diff.ours):
        c.call("CONFIG", "RESETSTAT")
    steps = [("MULTI",), ("SET", "k", "v"), ("INCR", "k"), ("LPUSH", "k", "x"), ("EXEC",),
             ("MULTI",), ("SET", "k"), ("nosuch",), ("GET", "k"), ("EXEC",),
             ("MULTI",), ("GET", "k"), ("DISCARD",), ("EXEC",), ("DISCARD",),
             ("WATCH", "w"), ("MULTI",), ("MULTI",), ("WATCH", "x"), ("GET", "w")]
    for step in steps:
        diff(*step)
    other("SET", "w", "1")
    diff("EXEC")
    assert _stats(diff.ours) == _stats(diff.real)


def test_client_reply_around_transactions(diff):
    """CLIENT REPLY OFF silences QUEUED and EXEC's whole array; SKIP skips MULTI's +OK
    only; the transaction runs either way."""
    from support.resp import encode_command

    def send(*commands):
        return b"".join(encode_command(*c) for c in commands)

    diff.raw(send(("CLIENT", "REPLY", "OFF"), ("MULTI",), ("SET", "a", "1"), ("INCR", "a"),
                  ("EXEC",), ("CLIENT", "REPLY", "ON"), ("GET", "a")), replies=2)
    diff.raw(send(("CLIENT", "REPLY", "SKIP"), ("MULTI",), ("INCR", "a"), ("EXEC",),
                  ("GET", "a")), replies=3)
