"""Scripts as Redis 7.0 runs them, against real redis-server: MONITOR's view of scripts,
expiry seen from a script, SORT inside scripts, huge ``unpack``s, the redis.* helpers'
argument errors, and ``used_memory_lua`` across many rejected scripts."""
from __future__ import annotations

import re
import time

import pytest
from support.busy import busy_pair, wait_busy
from support.resp import RawClient, encode_command


# -- MONITOR --------------------------------------------------------------------------------
def _monitor_stream(port: int) -> list[bytes]:
    mon = RawClient(port=port)
    c = RawClient(port=port)
    try:
        c.call("FLUSHALL")
        c.call("FUNCTION", "FLUSH")
        assert mon.call("MONITOR") == b"+OK\r\n"
        for cmd in [
            ("EVAL", "redis.call('set','k','v') redis.call('select', 3) "
                     "return redis.call('get','k')", "0"),
            ("EVALSHA", "0" * 40, "0"),
            ("EVAL", "return redis.pcall('nosuch')", "0"),
            ("EVAL", "return 1", "5"),
            ("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"),
            ("FUNCTION", "LOAD", "#!lua name=m\nredis.register_function('f', "
                                 "function(k, a) redis.call('set', k[1], a[1]) return 1 end)"),
            ("FCALL", "f", "1", "fk", "a \"quoted\"\n"),
            ("FCALL_RO", "f", "1", "fk", "x"),
            ("SET", "a b", "c\"d"),
            ("ECHO", "monitor-end"),
        ]:
            c.call(*cmd)
        lines = []
        while True:
            line = mon.read_reply()
            # the time and the client's address differ between the two servers
            line = re.sub(rb"^\+\d+\.\d{6} ", b"+T ", line)
            lines.append(re.sub(rb"\[(\d+) 127\.0\.0\.1:\d+\]", rb"[\1 ADDR]", line))
            if b"monitor-end" in line:
                return lines
    finally:
        c.call("FUNCTION", "FLUSH")
        mon.close()
        c.close()


def test_monitor_shows_scripts_and_their_commands(real_redis, pykv_proc):
    expected = _monitor_stream(real_redis.port)
    assert b'+T [0 lua] "set" "k" "v"\r\n' in expected
    assert _monitor_stream(pykv_proc.port) == expected


# -- expiry seen from a script --------------------------------------------------------------
EXPIRY_SCRIPT = """
local before = redis.call('get', KEYS[1])
local t = redis.call('time')
local stop = t[1] * 1000000 + t[2] + 1500000
while true do
  local n = redis.call('time')
  if n[1] * 1000000 + n[2] > stop then break end
end
return {before, redis.call('get', KEYS[1]), redis.call('exists', KEYS[1]),
        redis.call('pttl', KEYS[1]), redis.call('del', KEYS[2]), redis.call('exists', KEYS[2]),
        redis.call('ttl', KEYS[1])}
"""


def _expiry_transcript(port: int) -> list[bytes]:
    """Keys that expire while a (busy) script runs, with other clients served meanwhile."""
    with busy_pair(port) as (admin, runner):
        start = time.monotonic()
        out = [admin.call("SET", "k", "v", "PX", "500"), admin.call("SET", "d", "v", "PX", "500")]
        runner.send_raw(encode_command("EVAL", EXPIRY_SCRIPT, "2", "k", "d"))
        wait_busy(admin)
        time.sleep(max(0.0, start + 0.7 - time.monotonic()))  # the keys' time has come
        for _ in range(3):  # served while the script runs: their time moves on
            assert admin.call("PING").startswith(b"-BUSY")
            time.sleep(0.05)
        out.append(runner.read_reply())
        return out + [admin.call("EXISTS", "k"), admin.call("EXISTS", "d")]


def test_keys_expiring_during_a_script_stay_visible_to_it(real_redis, pykv_proc):
    expected = _expiry_transcript(real_redis.port)
    assert expected[2] == b"*7\r\n$1\r\nv\r\n$1\r\nv\r\n:1\r\n:0\r\n:1\r\n:0\r\n:0\r\n"
    assert _expiry_transcript(pykv_proc.port) == expected


def test_del_of_keys_with_ttl_in_a_script(diff, diff3):
    for d in (diff, diff3):
        d("SET", "t", "v", "EX", "100")
        d("SET", "p", "v", "PX", "1")
        time.sleep(0.01)
        d("EVAL", "return {redis.call('del', KEYS[1]), redis.call('ttl', KEYS[1]), "
                  "redis.call('exists', KEYS[1]), redis.call('del', KEYS[2]), "
                  "redis.call('set', KEYS[1], 'x'), redis.call('ttl', KEYS[1])}", "2", "t", "p")
        d("TTL", "t")
        d("EXISTS", "p")


# -- SORT ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ("BY", "nosort"), ("BY", "nosort", "ALPHA"), ("BY", "nosort", "DESC"),
    ("BY", "nosort", "LIMIT", "1", "3"), ("BY", "nosort", "GET", "#", "GET", "w_*"),
    ("ALPHA",), ("BY", "w_*"),
])
def test_sort_of_a_set_inside_a_script_is_sorted(diff, diff3, args):
    for d in (diff, diff3):
        d("SADD", "s", "c", "a", "b", "z", "y", "x", "q", "w", "e", "r", "t")
        d("SADD", "n", "3", "10", "1", "22", "5", "-4", "7")
        d("MSET", "w_a", "3", "w_b", "1", "w_c", "2")
        lua_args = ", ".join(f"'{a}'" for a in args)
        for key in ("s", "n"):
            d("EVAL", f"return redis.pcall('sort', KEYS[1], {lua_args})", "1", key)
            d("EVAL", f"return redis.pcall('sort_ro', KEYS[1], {lua_args})", "1", key)
        d("RPUSH", "l", "3", "1", "2")
        d("EVAL", f"return redis.pcall('sort', KEYS[1], {lua_args})", "1", "l")


# -- unpack ----------------------------------------------------------------------------------
@pytest.mark.parametrize("script", [
    "local t = {} for i = 1, 8000 do t[i] = i end return {unpack(t)}",
    "local t = {} for i = 1, 100000 do t[i] = 'a' end return redis.call('rpush', 'l', unpack(t))",
    "local t = {} for i = 1, 1000000 do t[i] = i end return #{unpack(t)}",
    "return unpack({1, 2, 3}, 1, 1e7)",
    "return unpack({1, 2, 3}, -1e7, 1e7)",
    "return {unpack({1, 2, 3}, 2, 1)}",
    "local t = {} for i = 1, 7000 do t[i] = 'a' end return redis.call('rpush', 'l', unpack(t))",
])
def test_unpack_of_huge_lists(diff, diff3, script):
    diff("EVAL", script, "0")
    diff3("EVAL", script, "0")


# -- redis.* helpers -------------------------------------------------------------------------
HELPER_CALLS = [
    "redis.status_reply(123)", "redis.status_reply()", "redis.status_reply('a', 'b')",
    "redis.status_reply({})", "redis.status_reply('fine')",
    "redis.error_reply(123)", "redis.error_reply()", "redis.error_reply('a', 'b')",
    "redis.error_reply('-X y')", "redis.error_reply('')", "redis.error_reply('-')",
    "redis.error_reply('plain')", "redis.error_reply('-E\\r\\n')",
    "redis.log(10, 'x')", "redis.log(-1, 'x')", "redis.log(4, 'x')", "redis.log(3.5, 'x')",
    "redis.log()", "redis.log(1)", "redis.log('a', 'x')", "redis.log('1', 'x')",
    "redis.log(1, {}, nil, 2, true)", "redis.log({}, 'x')",
    "redis.sha1hex()", "redis.sha1hex('a', 'b')", "redis.sha1hex(1.5)", "redis.sha1hex({})",
    "redis.sha1hex(nil)", "redis.sha1hex(true)", "redis.sha1hex('abc')", "redis.sha1hex(12)",
    "redis.set_repl()", "redis.set_repl(1, 2)", "redis.set_repl('a')", "redis.set_repl(-1)",
    "redis.set_repl(4)", "redis.set_repl(1.5)", "redis.set_repl('2')", "redis.set_repl(3)",
    "redis.set_repl({})", "redis.set_repl(1e100)",
    "redis.setresp()", "redis.setresp(4)", "redis.setresp('3')", "redis.setresp(2, 3)",
    "redis.setresp(2.5)", "redis.setresp({})",
    "redis.replicate_commands()", "redis.replicate_commands(1)", "redis.breakpoint()",
    "redis.breakpoint(1)", "redis.debug()", "redis.debug(1, 2)",
]


@pytest.mark.parametrize("call", HELPER_CALLS)
def test_redis_helper_arguments(diff, diff3, call):
    for d in (diff, diff3):
        d("EVAL", f"return {call}", "0")
        d("EVAL", f"local v = {call} return v", "0")
        d("EVAL", f"return {{{call}}}", "0")  # how many values it returns
        d("EVAL", f"local ok, e = pcall(function() return {call} end) "
                  f"return {{tostring(ok), type(e) == 'table' and (e.err or e.ok) or e}}", "0")


def test_redis_helpers_in_functions(diff):
    diff("FUNCTION", "LOAD", "REPLACE", "#!lua name=h\n"
         "redis.register_function('h', function(keys, args)\n"
         "  if args[1] == 'log' then return redis.log(10, 'x') end\n"
         "  if args[1] == 'status' then return redis.status_reply(1) end\n"
         "  return redis.sha1hex()\nend)")
    for what in ("log", "status", "sha"):
        diff("FCALL", "h", "0", what)
    diff("FUNCTION", "FLUSH")


# -- used_memory_lua -------------------------------------------------------------------------
REJECTED = [
    ("EVAL", "return +", "0"),                               # does not compile
    ("EVAL", "error('x')", "0"),                             # fails
    ("EVAL", "return redis.call('nosuch')", "0"),            # a command error
    ("EVAL", "return 1", "3", "a"),                          # wrong number of keys
    ("EVALSHA", "f" * 40, "0"),                              # no such script
    ("EVAL_RO", "return redis.call('set', 'k', 'v')", "0"),  # a write from a read-only script
    ("EVAL", "#!lua flags=bogus\nreturn 1", "0"),            # a bad shebang
    ("EVAL", "local t = {} for i = 1, 9000 do t[i] = i end return {unpack(t)}", "0"),
    ("EVAL", "return redis.call({})", "0"),                  # a bad argument to redis.call
    ("EVAL", "return redis.call()", "0"),
    ("EVAL", "return redis.pcall('set')", "0"),              # a command refused (arity)
    ("EVAL", "return redis.status_reply(1)", "0"),           # a helper's argument error
    ("EVAL", "return redis.setresp(9)", "0"),
    ("FCALL", "nosuch", "0"),
]


def _lua_memory(client: RawClient) -> int:
    info = client.call("INFO", "memory").decode()
    return int(re.search(r"used_memory_lua:(\d+)", info).group(1))


def _rejected_growth(port: int) -> int:
    c = RawClient(port=port, timeout=60)
    try:
        c.call("EVAL", "return 1", "0")
        batch = b"".join(encode_command(*cmd) for cmd in REJECTED)

        def run(times: int) -> None:
            c.send_raw(batch * times)
            for _ in range(times * len(REJECTED)):
                assert c.read_reply().startswith(b"-")
            c.call("EVAL", "collectgarbage('collect') collectgarbage('collect') return 1", "0")

        run(20)
        before = _lua_memory(c)
        run(715)  # 10,010 rejected scripts
        return _lua_memory(c) - before
    finally:
        c.close()


def test_rejected_scripts_leave_no_lua_memory_behind(real_redis, pykv_proc):
    assert _rejected_growth(real_redis.port) < 64 * 1024
    assert _rejected_growth(pykv_proc.port) < 64 * 1024


def test_used_memory_lua_is_the_lua_state(pykv_proc):
    c = RawClient(port=pykv_proc.port)
    try:
        c.call("EVAL", "return 1", "0")
        base = _lua_memory(c)
        assert base > 0
        c.call("SCRIPT", "LOAD", "local t = {} " + "t[#t + 1] = 'pad' " * 2000 + "return t")
        assert _lua_memory(c) > base
        info = c.call("INFO", "memory").decode()
        used = int(re.search(r"used_memory_lua:(\d+)", info).group(1))
        assert f"used_memory_vm_eval:{used}\r\n" in info
        functions = int(re.search(r"used_memory_vm_functions:(\d+)", info).group(1))
        assert f"used_memory_vm_total:{used + functions}\r\n" in info
    finally:
        c.close()


def _vm_memory(c) -> dict[str, int]:
    info = c.call("INFO", "memory").decode()
    return {k: int(v) for k, v in re.findall(r"(used_memory_vm_\w+|used_memory_lua):(\d+)",
                                            info)}


def test_function_libraries_have_a_lua_state_of_their_own(pykv_proc):
    """As Redis 7.0's two VMs: libraries grow ``used_memory_vm_functions``, not EVAL's
    state, and SCRIPT FLUSH (which empties EVAL's) leaves them alone."""
    c = RawClient(port=pykv_proc.port)
    try:
        c.call("EVAL", "return 1", "0")
        c.call("FUNCTION", "LOAD", "#!lua name=small\n"
               "redis.register_function('f', function() return 1 end)")
        before = _vm_memory(c)
        assert before["used_memory_vm_functions"] > 0
        padding = "local t = {} " + "t[#t + 1] = 'pad' " * 2000
        c.call("FUNCTION", "LOAD", "#!lua name=big\n" + padding
               + "\nredis.register_function('g', function() return #t end)")
        after = _vm_memory(c)
        assert after["used_memory_vm_functions"] > before["used_memory_vm_functions"] + 10000
        assert after["used_memory_vm_eval"] < before["used_memory_vm_eval"] + 4096
        assert after["used_memory_lua"] == after["used_memory_vm_eval"]
        assert after["used_memory_vm_total"] == (after["used_memory_vm_eval"]
                                                 + after["used_memory_vm_functions"])
        assert c.call("FCALL", "g", "0") == b":2000\r\n"
        c.call("SCRIPT", "FLUSH")
        assert c.call("FCALL", "g", "0") == b":2000\r\n"
        assert _vm_memory(c)["used_memory_vm_functions"] >= after["used_memory_vm_functions"] - 4096
        c.call("FUNCTION", "FLUSH")
        assert _vm_memory(c)["used_memory_vm_functions"] < after["used_memory_vm_functions"] - 10000
    finally:
        c.close()
