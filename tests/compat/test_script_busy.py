"""Busy scripts against real redis-server: what other clients get while a script runs past
``busy-reply-threshold``, SCRIPT KILL / FUNCTION KILL (final even when the script catches
it with ``pcall``), UNKILLABLE, NOTBUSY and the texts of each, for EVAL and for FCALL.

Each scenario runs on redis-server and then on pykv, the same steps, and the whole
transcript (every reply, raw bytes, RESP2 and RESP3) must be the same.
"""
from __future__ import annotations

import pytest
from support.busy import busy_pair, wait_busy
from support.resp import RawClient, encode_command

SPIN_CALL = "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end"
SPIN_TIGHT = "local f = function() while 1 do end end while 1 do pcall(f) end"
# the loop in a coroutine: Lua threads inherit the count hook (as in Redis), so the kill
# reaches it there, then the script's own thread
SPIN_COROUTINE = ("local co = coroutine.create(function() while 1 do end end) "
                  "while 1 do coroutine.resume(co) end")
LIBRARY = "\n".join([
    "#!lua name=busylib",
    "redis.register_function('spin', function()",
    "  local f = function() while 1 do end end",
    "  while 1 do pcall(f) end",
    "end)",
    "redis.register_function('spincall', function()",
    "  local f = function() while 1 do redis.call('ping') end end",
    "  while 1 do pcall(f) end",
    "end)",
])


def _transcript(port: int, resp: int, command: tuple, steps: list[tuple]) -> list[bytes]:
    """Start ``command`` on one connection, wait until the server is busy, send ``steps``
    from another, then collect the script's own reply and what follows."""
    with busy_pair(port, resp) as (admin, runner):
        admin.call("FUNCTION", "LOAD", "REPLACE", LIBRARY)
        runner.send_raw(encode_command(*command))
        wait_busy(admin)
        out = [admin.call(*step) for step in steps]
        out.append(runner.read_reply())
        out += [admin.call("PING"), runner.call("PING"), admin.call("SCRIPT", "KILL"),
                admin.call("FUNCTION", "KILL")]
        admin.call("FUNCTION", "DELETE", "busylib")
        return out


def _same(real_redis, pykv_proc, resp, command, steps) -> list[bytes]:
    expected = _transcript(real_redis.port, resp, command, steps)
    got = _transcript(pykv_proc.port, resp, command, steps)
    assert got == expected
    return expected


EVAL_STEPS = [("PING",), ("GET", "k"), ("EVAL", "return 1", "0"), ("FUNCTION", "KILL"),
              ("SHUTDOWN",), ("SHUTDOWN", "SAVE"), ("SCRIPT", "KILL")]
FCALL_STEPS = [("PING",), ("SET", "k", "v"), ("FCALL", "spin", "0"), ("SCRIPT", "KILL"),
               ("SHUTDOWN",), ("FUNCTION", "STATS"), ("FUNCTION", "KILL")]


@pytest.mark.parametrize("resp", [2, 3])
@pytest.mark.parametrize("script", [SPIN_CALL, SPIN_TIGHT, "while 1 do end", SPIN_COROUTINE],
                         ids=["pcall-redis-call", "pcall-tight-loop", "plain-loop", "coroutine"])
def test_script_kill_is_final(real_redis, pykv_proc, resp, script):
    out = _same(real_redis, pykv_proc, resp, ("EVAL", script, "0"), EVAL_STEPS)
    assert out[0].startswith(b"-BUSY Redis is busy running a script. You can only call "
                             b"SCRIPT KILL")
    assert out[len(EVAL_STEPS)].startswith(b"-ERR Script killed by user with SCRIPT KILL...")


@pytest.mark.parametrize("resp", [2, 3])
@pytest.mark.parametrize("function", ["spin", "spincall"])
def test_function_kill_is_final(real_redis, pykv_proc, resp, function):
    steps = [s for s in FCALL_STEPS if s[0] != "FUNCTION" or s[1] != "STATS"]
    out = _same(real_redis, pykv_proc, resp, ("FCALL", function, "0"), steps)
    assert out[0].startswith(b"-BUSY Redis is busy running a script. You can only call "
                             b"FUNCTION KILL")
    assert out[len(steps)].startswith(b"-ERR Script killed by user with SCRIPT KILL...")


def test_kill_caught_by_pcall_fails_on_the_next_line(real_redis, pykv_proc):
    """The rest of the line that caught the kill still runs (a write, here); the next line
    raises the kill again (Redis's line hook)."""
    script = ("local f = function() while 1 do end end local ok, e = pcall(f) "
              "redis.call('set', 'after', e)\nreturn 'not reached'")
    steps = [("SCRIPT", "KILL")]
    out = _same(real_redis, pykv_proc, 2, ("EVAL", script, "0"), steps)
    assert out[1].startswith(b"-ERR Script killed by user with SCRIPT KILL... script: ")
    assert out[1].endswith(b", on @user_script:2.\r\n")


def test_kill_caught_by_pcall_value(real_redis, pykv_proc):
    """What pcall hands the script after catching the kill, stored before the next line."""
    script = ("local f = function() while 1 do end end local ok, e = pcall(f) "
              "redis.call('set', 'after', tostring(ok) .. ' ' .. e)\nreturn 1")
    for port in (real_redis.port, pykv_proc.port):
        _transcript(port, 2, ("EVAL", script, "0"), [("SCRIPT", "KILL")])
    values = [RawClient(port=p).call("GET", "after") for p in (real_redis.port, pykv_proc.port)]
    assert values[1] == values[0]
    assert values[0].endswith(b"\r\nfalse ERR Script killed by user with SCRIPT KILL...\r\n")


@pytest.mark.parametrize("resp", [2, 3])
def test_function_stats_while_busy(real_redis, pykv_proc, resp):
    def shape(port):
        out = _transcript(port, resp, ("FCALL", "spin", "0"),
                          [("FUNCTION", "STATS"), ("FUNCTION", "KILL")])
        out[0] = out[0].split(b"duration_ms")[0]  # the running time differs
        return out
    assert shape(pykv_proc.port) == shape(real_redis.port)


def test_script_that_wrote_is_unkillable(real_redis, pykv_proc):
    """A script that wrote cannot be killed (UNKILLABLE) even inside pcall; it runs to its
    end (here: 1.5 s after its write)."""
    script = ("redis.call('set', 'w', '1') local t = redis.call('time') "
              "local stop = t[1] * 1000000 + t[2] + 1500000 "
              "local f = function() while true do local n = redis.call('time') "
              "if n[1] * 1000000 + n[2] > stop then error('over') end end end "
              "pcall(f) return 'done'")
    steps = [("SCRIPT", "KILL"), ("FUNCTION", "KILL"), ("SHUTDOWN",), ("GET", "w")]
    out = _same(real_redis, pykv_proc, 2, ("EVAL", script, "0"), steps)
    assert out[0].startswith(b"-UNKILLABLE Sorry the script already executed write commands")
    assert out[len(steps)] == b"$4\r\ndone\r\n"


def test_notbusy(diff, diff3):
    for d in (diff, diff3):
        d("SCRIPT", "KILL")
        d("FUNCTION", "KILL")


OTHER_CLIENT_STEPS = [
    ("AUTH", "x"), ("AUTH", "default", "x"), ("CLIENT", "SETNAME", "n"), ("CLIENT", "ID"),
    ("MULTI",), ("PING",), ("DISCARD",), ("MULTI",), ("GET", "k"), ("EXEC",), ("EXEC",),
    ("WATCH", "k"), ("UNWATCH",), ("INFO", "server"), ("CONFIG", "GET", "port"),
    ("FUNCTION", "STATS"), ("SCRIPT", "EXISTS", "x"), ("SELECT", "1"), ("ECHO", "x"),
    ("SUBSCRIBE", "ch"), ("UNSUBSCRIBE", "ch"), ("RESET",), ("SCRIPT", "KILL"),
]


@pytest.mark.parametrize("resp", [2, 3])
def test_what_other_clients_get_while_busy(real_redis, pykv_proc, resp):
    """Which commands run and which get BUSY; an EXEC refused as BUSY ends the MULTI
    (EXECABORT ... because of: BUSY ..., even without one), as Redis's execCommandAbort."""
    out = _same(real_redis, pykv_proc, resp, ("EVAL", SPIN_TIGHT, "0"), OTHER_CLIENT_STEPS)
    assert out[9].startswith(b"-EXECABORT Transaction discarded because of: BUSY ")
    assert out[11] == b"+OK\r\n"  # WATCH: no MULTI any more
