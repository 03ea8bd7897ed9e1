"""EVAL & co. and SCRIPT compared byte for byte with real redis-server 7.0.

Covers the Lua <-> RESP conversions (RESP2 and RESP3 callers, redis.setresp), the sandbox's
error texts, redis.call/pcall error reporting (``script: <sha>, on @user_script:N.``), the
bundled libraries' common cases, shebang flags, the script cache, and BUSY + SCRIPT KILL.
"""
from __future__ import annotations

import time

import pytest
from support.resp import RawClient, encode_command

SCRIPTS_RESP2 = [
    "return 1", "return 3.99", "return -3.99", "return -0.5", "return 1e20",
    "return {1e20, -0.5, 2^53}", "return 'str'", "return true", "return false", "return nil",
    "return {1,2,3.7,nil,5}", "return {ok='fine'}", "return {err='My Error'}",
    "return {err='ERR x'}", "return {err='-x'}", "return {err=1}", "return {ok=1}",
    "return {}", "return {1,2,{3,'x',{ok='y'}}}", "return {ok='a\\r\\nb'}",
    "return {double=3.5}", "return {map={a=1}}", "return {set={a=true}}",
    "return {big_number='123'}", "return redis.error_reply('xyz')",
    "return redis.error_reply('My err')", "return redis.error_reply('-xyz abc')",
    "return redis.error_reply()", "return redis.status_reply('FINE')",
    "return redis.status_reply('-x')", "return redis.status_reply()",
    "return redis.sha1hex('')", "return redis.sha1hex('abc')",
    "return KEYS[1]..ARGV[1]", "return {KEYS, ARGV}", "return #ARGV",
    "return redis.REDIS_VERSION", "return redis.REDIS_VERSION_NUM",
    "return redis.LOG_WARNING", "return redis.REPL_ALL", "return redis.breakpoint()",
    "return redis.log(redis.LOG_WARNING, 'hello from a test')", "return _VERSION",
    "return tostring(1/0)", "return loadstring('return 1')()",
    "return loadstring('\\27Lua')", "return {loadstring('x x')}", "return type(_G)",
    "return table.getn({1,2})", "return unpack({1,2})", "return string.format('%d', 5)",
    "return ('abc'):upper()", "return type(coroutine)", "return type(load)",
    "return type(gcinfo)",
    # results the C entry frames itself (strings, numbers, statuses)
    "return 0/0", "return -1/0", "return 1/0", "return 2^63", "return -2^63",
    "return -2^63 - 4096", "return -0", "return 0.9999", "return ''", "return 'a\\0b'",
    "return {ok=''}", "return {ok='x', err=1}", "return {err='e', ok='x'}",
    "return {ok='a\\rb\\n'}", "return setmetatable({}, {__index={ok='x'}})",
]

SANDBOX_ERRORS = [
    "x = 1", "return y", "os.exit()", "return type(io)", "return type(print)",
    "return type(require)", "return type(debug)", "return type(getfenv)",
    "return type(setfenv)", "return type(newproxy)", "return type(module)",
    "return type(dofile)", "return type(python)", "_G.x = 1", "rawset(_G, 'x', 1)",
    "redis = nil", "redis.call = nil", "string.x = 1", "local t = {} setmetatable(_G, t)",
    "error('boom')", "error({err='TBL err'})", "local function f() error('deep') end\nf()",
    "syntax error here", "return redis.setresp(4)", "return redis.set_repl(99)",
    "local x = nil + 1",
]

CALL_ERRORS = [
    "return redis.call('nosuch', 's')", "return redis.call('get')",
    "return redis.call('subscribe', 'x')", "return redis.call('set', 'a')",
    "return redis.call()", "return redis.call(1)", "return redis.call({})",
    "return redis.call('get', {})", "return redis.pcall('nosuch')",
    "local ok, e = pcall(redis.call, 'nosuch') return e",
    "local ok, e = pcall(redis.call, 'nosuch') return type(e)",
    "local e = redis.pcall('nosuch') return e['err']",
    "return redis.call('incr', 'str')", "return redis.pcall('incr', 'str')",
    "local v = redis.call('incr', 'str')\nreturn v",
]


def test_conversions_resp2(diff):
    for script in SCRIPTS_RESP2:
        diff("EVAL", script, "1", "key", "arg1", "arg2")


def test_conversions_resp3(diff3):
    for script in SCRIPTS_RESP2:
        diff3("EVAL", script, "1", "key", "arg1", "arg2")
    for script in ("redis.setresp(3) return true", "redis.setresp(3) return false",
                   "redis.setresp(3) return redis.call('get', 'nokey')",
                   "redis.setresp(3) return type(redis.call('get', 'nokey'))"):
        diff3("EVAL", script, "0")


def test_setresp_in_resp2_caller(diff):
    for script in ("redis.setresp(3) return true", "redis.setresp(3) return false",
                   "redis.setresp(3) return type(redis.call('get', 'nokey'))",
                   "return type(redis.call('get', 'nokey'))"):
        diff("EVAL", script, "0")


def test_sandbox_errors(diff):
    for script in SANDBOX_ERRORS:
        diff("EVAL", script, "0")


def test_redis_call_errors(diff):
    diff("SET", "str", "text")
    for script in CALL_ERRORS:
        diff("EVAL", script, "0")


def test_redis_call_values(diff):
    diff("SET", "k", "v")
    for script in ("return redis.call('set', 'x', 'y')", "return redis.call('get', 'x')",
                   "return redis.call('get', 'nokey')", "return redis.call('ping')",
                   "return redis.call('echo', 'x')", "return redis.call('incr', 'n')",
                   "return redis.call('incrbyfloat', 'f', '1.5')",
                   "return redis.call('mget', 'k', 'nokey', 'x')",
                   "return redis.call('get', 1.5)", "return redis.call('set', 'num', 42)",
                   "return redis.call('get', 'num')",
                   "return redis.call('select', '1')"):
        diff("EVAL", script, "0")
    diff("GET", "x")


# what redis.call's C entry (pykv.scripting._luacall) reads off the Lua stack and pushes
# back: number formatting, flat and nested arrays, statuses, nil/false by protocol, errors
CALL_CONVERSIONS = [
    "return redis.call('echo', 1e20)", "return redis.call('echo', 0.1)",
    "return redis.call('echo', -0.5)", "return redis.call('echo', 2^53 + 1)",
    "return redis.call('echo', 1/0)", "return redis.call('echo', -1/0)",
    "return redis.call('echo', 0/0)", "return redis.call('echo', 123456789012)",
    "return redis.call('echo', '')", "return redis.call('echo', 'a\\0b')",
    "return redis.call('echo', true)", "return redis.pcall('echo', nil)",
    "return redis.call('rpush', 'cl', 'a', 2, 3.5, '')",
    "return redis.call('lrange', 'cl', 0, -1)", "return #redis.call('lrange', 'cl', 0, -1)",
    "return redis.call('lrange', 'nolist', 0, -1)",
    "return type(redis.call('lrange', 'nolist', 0, -1))",
    "return redis.call('mget', 'cl', 'nokey')", "return {redis.call('mget', 'nokey')[1]}",
    "return redis.call('hset', 'ch', 'f', 'v')", "return redis.call('hgetall', 'ch')",
    "return redis.call('set', 'cs', 'v')", "return redis.call('set', 'cs', 'v')['ok']",
    "return type(redis.call('set', 'cs', 'v'))",
    "return redis.call('set', 'cs', 'v', 'NX')", "return redis.call('time')[3]",
    "return redis.call('zadd', 'cz', 1.5, 'm')",
    "return redis.call('zrange', 'cz', 0, -1, 'WITHSCORES')",
    "return redis.call('type', 'cl')",
    "return redis.call('exists', unpack({'cl', 'ch', 'nokey'}))",
    "local t = {} for i = 1, 7990 do t[i] = 'k' .. i end "
    "return redis.call('exists', unpack(t))",
    "local t = {} for i = 1, 8000 do t[i] = 'k' .. i end "
    "return redis.call('exists', unpack(t))",
    "local r = redis.pcall('lpush', 'cs', 'x') return {type(r), r['err']}",
    "return redis.pcall('lpush', 'cs', 'x')['ignore_error_stats_update']",
    "return redis.pcall()['ignore_error_stats_update']",
    "return redis.pcall('get', {})['err']",
    "local ok, e = pcall(redis.call, 'lpush', 'cs', 'x') return {ok, e}",
    "local ok, e = pcall(redis.call) return e",
    "return redis.call('lpush', 'cs', 'x')",
    "return coroutine.wrap(function() return redis.call('get', 'cs') end)()",
]


def test_call_conversions_resp2(diff):
    for script in CALL_CONVERSIONS:
        diff("EVAL", script, "0")


def test_call_conversions_resp3(diff3):
    for script in CALL_CONVERSIONS:
        diff3("EVAL", "redis.setresp(3) " + script, "0")
        diff3("EVAL", script, "0")


def test_select_inside_script_does_not_leak(diff):
    diff("EVAL", "redis.call('select', '2') return redis.call('set', 'x', 'z')", "0")
    diff("GET", "x")
    diff("SELECT", "2")
    diff("GET", "x")
    diff("FLUSHALL")
    diff("SELECT", "0")


def test_numkeys_errors(diff):
    diff("EVAL", "return 1", "-1")
    diff("EVAL", "return 1", "5", "a")
    diff("EVAL", "return 1", "x")
    diff("EVAL", "return 1")


def test_evalsha_checks_the_sha_length_before_numkeys(diff):
    """A SHA that is not 40 characters long is NOSCRIPT at once, whatever numkeys says; a
    40-character unknown one is looked up after numkeys is read."""
    diff("SCRIPT", "FLUSH")
    for sha in ("abc", "", "0" * 39, "0" * 41, "0" * 40):
        for tail in (("x",), ("-1",), ("5", "a"), ("0",), ("1.5",)):
            diff("EVALSHA", sha, *tail)
            diff("EVALSHA_RO", sha, *tail)


def test_error_texts_lose_trailing_newlines(diff):
    """Error texts built from arguments drop trailing CR/LF and turn inner ones into spaces
    (Redis's addReplyErrorFormat)."""
    diff("FUNCTION", "FLUSH")
    for code in ("#!python name=x\n", "#!lua name=x\r\n", "a\nb\n\n", "x\r"):
        diff("FUNCTION", "LOAD", code, "extra")
    diff("FUNCTION", "LOAD", "#!lua name=x\nbogus\n")


def test_read_only_scripts(diff):
    diff("EVAL_RO", "return redis.call('set', 'a', 'b')", "0")
    diff("EVAL_RO", "return redis.call('get', 'a')", "0")
    diff("EVAL", "#!lua flags=no-writes\nreturn redis.call('set','a','b')", "0")
    diff("EVAL", "#!lua flags=no-writes\n\nerror('x')", "0")
    diff("EVAL", "#!lua\nreturn redis.call('set','a','b')", "0")
    diff("EVAL", "#!lua flags=bogus\nreturn 1", "0")
    diff("EVAL", "#!lua flags=no-writes,allow-oom\nreturn 1", "0")
    diff("EVAL", "#!lua foo=bar\nreturn 1", "0")
    diff("EVAL", "#!py\nreturn 1", "0")
    diff("EVAL", "#!lua", "0")
    diff("EXISTS", "a")


def test_script_cache(diff):
    diff("SCRIPT", "EXISTS", "a", "b")
    diff("SCRIPT", "LOAD", "return 1")
    diff("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
         "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB")
    diff("EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0")
    diff("EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0")
    diff("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0")
    diff("EVALSHA", "abc", "0")
    diff("EVAL", "return 'cached by eval'", "0")
    diff("SCRIPT", "EXISTS", "a9a4c8e1b1a6d1bbc5e2f7b4ad0a5f5e6d1cd36b")
    diff("SCRIPT", "LOAD", "syntax error")
    diff("SCRIPT", "FLUSH", "bad")
    diff("SCRIPT", "FLUSH", "ASYNC")
    diff("SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
    diff("SCRIPT", "FLUSH")
    diff("SCRIPT", "KILL")
    diff("SCRIPT", "HELP")
    diff("SCRIPT")
    diff("SCRIPT", "NOSUCH")



def test_repeated_scripts_and_calls_take_no_stale_shortcut(diff):
    """EVALSHA remembers the sha it found last and redis.call the command name it ran
    last: a flushed script, another spelling, a noscript command or a bad arity after a
    repeated name must still answer as Redis does."""
    sha = diff("SCRIPT", "LOAD", "return redis.call('get', KEYS[1])")[5:-2].decode()
    diff("SET", "k", "v")
    for written in (sha, sha, sha.upper(), sha, sha.upper()):
        diff("EVALSHA", written, "1", "k")
    diff("SCRIPT", "FLUSH")
    diff("EVALSHA", sha, "1", "k")
    diff("SCRIPT", "LOAD", "return redis.call('get', KEYS[1])")
    diff("EVALSHA", sha, "1", "k")
    diff("SCRIPT", "FLUSH", "ASYNC")
    diff("EVALSHA", sha, "1", "k")
    diff("EVALSHA", sha.upper(), "1", "k")
    for body in (
        "redis.call('set', 'a', '1') redis.call('set', 'a', '2') return redis.call('get', 'a')",
        "return {redis.pcall('subscribe', 'x'), redis.pcall('subscribe', 'x')}",
        "redis.call('get', 'a') return redis.pcall('get')",
        "redis.call('GET', 'a') return {redis.pcall('get', 'a', 'b'), redis.pcall('GET')}",
        "redis.call('get', 'a') return redis.pcall('multi')",
        "redis.call('client', 'id') return redis.pcall('client', 'nosuch')",
    ):
        diff("EVAL", body, "0")
        diff("EVAL", body, "0")


def test_libraries(diff):
    for script in (
        "return cjson.encode({1,2,{a=1}})", "return cjson.decode('[1,2,{\"a\":1.5}]')[3].a",
        "return cjson.encode({a={1,2},b='x'})",
        "return cjson.encode(cjson.decode('{\"a\":[1,2,null],\"b\":true}'))",
        "return cjson.encode({[1]=1,[3]=3})", "return cjson.encode({})",
        "return cjson.encode(3.14159)", "return cjson.encode('a\"b/\\1')",
        "return cjson.decode('[1,2')", "return cjson.decode('{\"a\" 1}')",
        "return cjson.decode('')", "return type(cjson.null)",
        "return cjson.encode({[1]=1,[30]=3})", "return cjson.decode('\"\\\\u00e9\"')",
        "return cmsgpack.unpack(cmsgpack.pack({1,2,{a='b'}}))",
        "return {cmsgpack.unpack(cmsgpack.pack(1,'a',3.5))}",
        "return cmsgpack.pack({a=1})",
        "return cmsgpack.pack(-1, 300, 70000, 1.5, true, false, 'hello')",
        "return cmsgpack.pack(-100, -40000, 2^40, 'x', {})",
        "return bit.tohex(255)", "return bit.tohex(-1, -4)",
        "return {bit.bor(1,2), bit.bxor(5,3), bit.lshift(1,4), bit.rshift(-1,28), "
        "bit.arshift(-16,2), bit.bnot(0), bit.tobit(2^32+5), bit.rol(1,31), bit.ror(1,1), "
        "bit.bswap(1), bit.band(7,3,5)}",
        "return {struct.unpack('>I2', '\\1\\2')}", "return struct.size('>iHb')",
        "return struct.pack('<i4 s', 5, 'ab')", "return {struct.unpack('<hB', '\\255\\255\\7')}",
    ):
        diff("EVAL", script, "0")


def test_scripts_touch_watched_keys(diff, real_redis, pykv_proc):
    other = type(diff)(RawClient(port=real_redis.port), RawClient(port=pykv_proc.port))
    diff("WATCH", "k")
    other("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k")
    diff("MULTI")
    diff("GET", "k")
    diff("EXEC")
    other.real.close()
    other.ours.close()


def test_eval_inside_multi(diff):
    diff("MULTI")
    diff("EVAL", "return redis.call('incr', 'c')", "0")
    diff("EVAL", "return redis.call('nosuch')", "0")
    diff("EXEC")


ALLOCATING_SCRIPT = """
local acc = {}
for round = 1, tonumber(ARGV[1]) do
  local t = {}
  for i = 1, (round % 97) do t[i] = string.rep('x', i % 40) .. i end
  local h = {}
  for i = 1, (round % 53) do h['k' .. i] = {i, tostring(i * 3)} end
  if round % 7 == 0 then acc[#acc + 1] = table.concat(t, ',') end
  if #acc > 50 then acc = {} end
  redis.call('set', 'k' .. (round % 100), t[round % 97] or 'e')
end
collectgarbage()
local s = 0
for i = 1, #acc do s = s + #acc[i] end
return {s, #acc, redis.call('get', 'k5'), redis.call('get', 'k99')}
"""


def test_allocating_script(diff):
    """Many small tables and strings made, grown and collected (the C entry's small-block
    pool: blocks change size classes, are freed and reused across runs)."""
    for rounds in ("10", "1000", "5000"):
        diff("EVAL", ALLOCATING_SCRIPT, "0", rounds)


def test_blocking_command_in_script_does_not_block(diff):
    diff("EVAL", "return redis.call('blpop', 'nolist', 0)", "0")


@pytest.fixture
def short_busy_threshold(diff):
    diff("CONFIG", "SET", "busy-reply-threshold", "100")
    yield
    diff.real.call("CONFIG", "SET", "busy-reply-threshold", "5000")
    diff.ours.call("CONFIG", "SET", "busy-reply-threshold", "5000")


def test_busy_script_and_script_kill(diff, short_busy_threshold, real_redis, pykv_proc):
    runners = [RawClient(port=p) for p in (real_redis.port, pykv_proc.port)]
    for r in runners:
        r.send_raw(encode_command("EVAL", "local i = 0 while true do i = i + 1 end", "0"))
    time.sleep(0.5)
    diff("PING")  # BUSY
    diff("GET", "k")
    diff("FUNCTION", "KILL")  # a script, not a function, is running
    diff("SCRIPT", "KILL")
    replies = [r.read_reply() for r in runners]
    assert replies[1] == replies[0]
    diff("PING")
    diff("SCRIPT", "KILL")  # nothing running any more
    for r in runners:
        r.close()


def test_busy_script_that_wrote_is_unkillable(diff, short_busy_threshold, real_redis,
                                             pykv_proc):
    runners = [RawClient(port=p) for p in (real_redis.port, pykv_proc.port)]
    script = ("redis.call('set', 'w', '1') local t = redis.call('time') "
              "local s = tonumber(t[1]) + 1 while tonumber(redis.call('time')[1]) <= s do end "
              "return 'done'")
    for r in runners:
        r.send_raw(encode_command("EVAL", script, "0"))
    time.sleep(0.4)
    diff("SCRIPT", "KILL")
    replies = [r.read_reply() for r in runners]
    assert replies[1] == replies[0] == b"$4\r\ndone\r\n"
    diff("GET", "w")
    for r in runners:
        r.close()


def test_busy_while_script_runs_pipeline_continues(pykv_proc):
    """The EVAL caller's pipelined commands run after the busy script finishes."""
    c = RawClient(port=pykv_proc.port)
    c.call("CONFIG", "SET", "busy-reply-threshold", "50")
    try:
        script = "local t = redis.call('time') local s = t[1] * 1000000 + t[2] " \
                 "while true do local n = redis.call('time') " \
                 "if n[1] * 1000000 + n[2] - s > 300000 then break end end return 'ok'"
        # (connected and served first: a connection accepted in the very loop iteration
        # that starts the script has its Client made only after the script ends, as
        # uvloop runs connection_made as a later callback)
        other = RawClient(port=pykv_proc.port)
        assert other.call("PING") == b"+PONG\r\n"
        c.send_raw(encode_command("EVAL", script, "0") + encode_command("PING"))
        time.sleep(0.15)
        assert other.call("PING").startswith(b"-BUSY")
        assert c.read_reply() == b"$2\r\nok\r\n"
        assert c.read_reply() == b"+PONG\r\n"
        assert other.call("PING") == b"+PONG\r\n"
        other.close()
    finally:
        c.call("CONFIG", "SET", "busy-reply-threshold", "5000")
        c.close()


def test_connection_opened_during_a_busy_script_can_kill_it(pykv_proc):
    """The script runs on the loop thread; past the threshold new connections are still
    accepted (and handed to the loop afterwards), so an operator can send SCRIPT KILL."""
    c = RawClient(port=pykv_proc.port)
    c.call("CONFIG", "SET", "busy-reply-threshold", "50")
    try:
        c.send_raw(encode_command("EVAL", "while true do end", "0"))
        time.sleep(0.2)
        operator = RawClient(port=pykv_proc.port)
        assert operator.call("GET", "x").startswith(b"-BUSY")
        assert operator.call("SCRIPT", "KILL") == b"+OK\r\n"
        assert c.read_reply().startswith(b"-ERR Script killed by user with SCRIPT KILL")
        assert operator.call("PING") == b"+PONG\r\n"  # now served by the event loop
        assert c.call("PING") == b"+PONG\r\n"
        operator.close()
    finally:
        c.call("CONFIG", "SET", "busy-reply-threshold", "5000")
        c.close()
