"""The Lua sandbox compared byte for byte with real redis-server 7.0 (issue 11, items 1 and 3).

Every snippet runs as EVAL, EVALSHA and an FCALL'd function (``lua_runner.everywhere``), over
RESP2 and RESP3: which globals and library entries exist (and their types), read-only
globals/libraries/string metatable and the tricks around them (rawset, setmetatable,
getmetatable, table.insert on protected tables), loadstring/load and binary chunks, Redis's
pcall/xpcall error objects, the error texts and ``script: <sha>, on @user_script:<line>.``
positions of runtime, API, library and redis.call errors, redis.* argument checks, the
conversion of results (raw reads, ok/err/double/map/set/verbatim fields, NaN), and tables
that contain themselves (Redis's "reached lua stack limit"); then random sequences of such
operations under pcall (a slice by default, more under ``-m slow``). Cases that crash or hang
real Redis 7.0.15 (``error({1})``, a ``load`` reader that never ends) are left out, and so
are argument errors of tail-called wrapped builtins (see ``pykv.scripting``).
"""
from __future__ import annotations

import random

import pytest
from lua_runner import deep_replies, everywhere, run_eval

# the names and types of the globals and of every table reachable from them
LISTINGS = [
    "local out = {} for k, v in pairs(_G) do out[#out+1] = k .. '=' .. type(v) end "
    "table.sort(out) return out",
    "local out = {} for name, lib in pairs(_G) do if type(lib) == 'table' and name ~= '_G' "
    "then for k, v in pairs(lib) do out[#out+1] = name .. '.' .. k .. '=' .. type(v) end end "
    "end table.sort(out) return out",
    "local out = {} for k, v in pairs(getmetatable('')) do out[#out+1] = k .. '=' .. type(v) "
    "end return out",
    "local out = {} for k, v in pairs(getmetatable(_G)) do out[#out+1] = k .. '=' .. type(v) "
    "end return out",
    "return {cjson._NAME, cjson._VERSION, cmsgpack._NAME, cmsgpack._VERSION, "
    "cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION, _VERSION}",
]

# reading, writing and escaping the protected environment
GLOBALS = [
    'x = 1',
    'return x',
    "print('a')",
    'return type(print)',
    'return type(dofile)',
    'return type(loadfile)',
    'return type(getfenv)',
    'return type(setfenv)',
    'return type(newproxy)',
    'return type(__redis__err__handler)',
    'return type(debug)',
    'return type(os)',
    'return getmetatable(_G) == nil',
    'return type(getmetatable(_G))',
    'return type(getmetatable(string))',
    'return type(getmetatable(redis))',
    'setmetatable(_G, {})',
    'setmetatable(_G, nil)',
    'setmetatable(string, {})',
    "rawset(_G, 'x', 1)",
    "rawset(string, 'x', 1)",
    "rawset(redis, 'call', 1)",
    "getmetatable('').__index = {}",
    "getmetatable('').__index.upper = 1",
    "getmetatable('').x = 1",
    "return type(getmetatable(''))",
    "return getmetatable('').__index == string",
    'redis = nil',
    '_G.redis = nil',
    '_G._G = nil',
    'KEYS = {}',
    "KEYS[1] = 'x' return KEYS[1]",
    "ARGV[5] = 'x' return #ARGV",
    'cjson.encode = nil',
    'cmsgpack.pack = nil',
    'bit.band = nil',
    'struct.pack = nil',
    'math.pi = 3',
    'table.insert = nil',
    'coroutine.wrap = nil',
    'string.upper = nil',
    "return rawget(_G, 'redis') == redis",
    "return rawget(_G, 'nosuch')",
    "return rawget(string, 'len') == string.len",
    'local n = 0 for k in pairs(_G) do n = n + 1 end return n',
    'local n = 0 for k in pairs(string) do n = n + 1 end return n',
    'return next(_G) ~= nil',
    'return next({})',
    'return rawequal(_G, _G)',
    'return _G == _G._G',
    'return _G.nosuch',
    "return _G['x']",
    'local t = {} setmetatable(t, {__index = _G}) return t.nosuch',
    "return loadstring('return nosuch')()",
    "return loadstring('x = 1')()",
    "local f = loadstring('return _G') return f() == _G",
    'return load(function() return nil end)',
    "return type(load('return 1'))",
    "return load('return 1')()",
    'return string.dump(function() end):sub(1,4)',
    'return loadstring(string.dump(function() return 1 end))',
    'return {loadstring(string.dump(function() return 1 end))}',
    'return {load(string.dump(function() return 1 end))}',
    'return {pcall(loadstring, string.dump(function() return 1 end))}',
    'local f = coroutine.wrap(function() x = 1 end) f()',
    'return {pcall(function() x = 1 end)}',
    'return {pcall(function() return y end)}',
    "return {pcall(rawset, _G, 'a', 1)}",
    'return {pcall(setmetatable, _G, {})}',
    'return {pcall(error)}',
    'return {pcall(error, nil)}',
    'return {pcall(error, {1})}',
    'return {pcall(error, 5)}',
    "return {pcall(error, 'x', 0)}",
    "return {pcall(redis.call, 'nosuch')}",
    'return {pcall(redis.call)}',
    'return {xpcall(function() x = 1 end, function(e) return e end)}',
    "return {xpcall(function() error({err='tbl'}) end, function(e) return type(e) end)}",
    'return _VERSION',
    'return tostring(nil)',
    "return type(collectgarbage('count'))",
    'return gcinfo() > 0',
    'return math.random(10) > 0',
    'return {math.random(1, 1)}',
    "return string.format('%5.1f', 3.14159)",
    "return table.concat({1,2,3}, ',')",
    "return select('#', 1, 2, 3)",
    "return {string.rep('a', 3), string.reverse('abc')}",
    'return tostring(string.gfind ~= nil)',
    'return math.mod(7, 3)',
    'return math.fmod(7, 3)',
    'return table.getn({1,2,3})',
    'return table.maxn({1,2,nil,4})',
    'return coroutine.running()',
    'return {coroutine.resume(coroutine.create(function() return 1 end))}',
    'local co = coroutine.create(function() coroutine.yield(1) end) return coroutine.status(co)',
    'return cjson._NAME',
    'return cjson._VERSION',
    'return cmsgpack._NAME',
    'return cmsgpack._VERSION',
    'return cmsgpack._COPYRIGHT',
    'return cmsgpack._DESCRIPTION',
    'return type(cjson.new)',
    'return type(redis.acl_check_cmd)',
    "return redis.acl_check_cmd('get', 'x')",
    "return redis.acl_check_cmd('nosuch')",
    'return redis.acl_check_cmd()',
    'return _G.KEYS == KEYS',
    "return tostring(getmetatable('').__metatable)\n",
    'return {pcall()}',
    "return select('#', pcall())",
    'local x = pairs() return x',
    'local x = rawget() return x',
    "local l = load l('x')",
    'local x = setmetatable(1, {}) return x',
    'local x = next() return x',
    'local x = rawset({}) return x',
    'local x = setmetatable({}) return x',
    'local x = xpcall() return x',
    'local t = {} local x = t:setmetatable() return x',
    'local x = type() return x',
    'local x = loadstring() return x',
    'local x = getmetatable() return x',
    'local x = rawget(_G) return x',
    'local x = {xpcall(error, 1)} return x',
    'local ok, e = pcall(setmetatable, {}, 5) return {ok, e}',
    'local n = 0 for k, v in next, _G do n = n + 1 end return n',
    'local n = 0 for i, v in ipairs(_G) do n = n + 1 end return {n, #_G, #string}',
    'return {rawequal(string, string), rawequal(_G, getfenv and 1 or _G)}',
    'return tostring(cjson.null)',
    'return tostring(redis.call):sub(1, 10)',
    'return tostring(cjson.encode):sub(1, 10)',
    'return tostring(bit.band):sub(1, 10)',
    'return {pcall(tostring)}',
    'return type(redis.pcall) .. type(cjson.decode) .. type(struct.pack)',
    'return select(2, loadstring(string.dump(function() return 1 end)))',
    'return select(2, load(function() return string.dump(function() end) end))',
    "return select(2, load(function() return string.dump(function() end) end, 'named'))",
    'return {pcall(string.dump(function() return 1 end))}',
    "return select(2, loadstring('\\27Lua'))",
    "return select(2, loadstring('\\27'))",
    "local n = 0 return {load(function() n = n + 1 if n == 1 then return 'return 7' end end)()}",
    "local n = 0 return select(2, load(function() n = n + 1 if n == 1 then return 'x x' end end))",
    'return type(cjson.new().encode)',
    'local c = cjson.new() c.x = 1 return {c.x, type(c.new), c.encode({1})}',
    'return tostring(cjson.new().decode):sub(1, 10)',
]

# error objects, texts and positions; redis.* argument checks; result conversion
ERRORS = [
    "local t = setmetatable({}, {__index = function(t, k) if k == 'ok' then return 'meta ok' end end}) return t",
    "local t = setmetatable({}, {__index = function(t, k) if k == 'err' then return 'meta err' end end}) return t",
    "local t = setmetatable({}, {__index = function(t, k) if k == 1 then return 'one' end end}) return t",
    "local t = setmetatable({}, {__index = function(t, k) if k == 'ok' then return redis.call('ping') end end}) return t",
    "local t = setmetatable({}, {__index = function(t, k) if k == 'ok' then return redis.call('get', 'x') end end}) return t",
    "local t = setmetatable({}, {__index = function(t, k) if k == 'err' then redis.call('set', 'side', '1') end end}) return t",
    'local t = setmetatable({}, {__index = {double = 3.5}}) return t',
    'local t = setmetatable({}, {__index = {map = {a = 1}}}) return t',
    'return {ok = 1}',
    'return {ok = {}}',
    'return {ok = true}',
    'return {err = 1}',
    'return {err = {}}',
    'return {err = true}',
    "return {err = 'x', ok = 'y'}",
    "return {ok = 'y', 1, 2}",
    "return {double = 'x'}",
    "return {double = '3.5'}",
    'return {double = 1/0}',
    'return {double = 0/0}',
    'return {double = -1/0}',
    'return {double = 1e300}',
    'return {double = 0.1}',
    'return {big_number = 12}',
    'return {map = 1}',
    "return {set = 'x'}",
    "return {verbatim_string = {format = 'txt', string = 'abc'}}",
    "return {verbatim_string = {format = 'txt'}}",
    "return {verbatim_string = 'x'}",
    'redis.setresp()',
    'redis.setresp(2, 3)',
    "redis.setresp('3')",
    "redis.setresp('x')",
    'redis.setresp(3.5)',
    'redis.setresp(2.9)',
    'redis.setresp({})',
    'redis.setresp(nil)',
    'redis.setresp(1)',
    'return redis.call()',
    'return redis.pcall()',
    'return redis.call({})',
    "return redis.call('get', {})",
    "return redis.call('get', true)",
    "return redis.call('get', nil)",
    "return redis.call('get', 'a', nil)",
    "return redis.call(nil, 'a')",
    "return redis.call('echo', 1.5)",
    "return redis.call('echo', 0.1)",
    "return redis.call('echo', 1e20)",
    "return redis.call('echo', 2^53)",
    "return redis.call('echo', 1/0)",
    "return redis.call('echo', 0/0)",
    "return redis.call('echo', 12345678901234567)",
    "return redis.pcall('get', {})",
    'return redis.pcall({})',
    "return redis.pcall('echo', true)",
    "local t = setmetatable({}, {__index = function() return redis.call('ping') end}) return t.x",
    "local t = setmetatable({}, {__tostring = function() return redis.call('ping') end}) return tostring(t)",
    "local t = setmetatable({}, {__index = function() return redis.call('nosuch') end}) return t.x",
    'return loadstring(string.dump(function() return 1 end))',
    'return {loadstring(string.dump(function() return 1 end))}',
    'return {pcall(loadstring(string.dump(function() return 1 end)))}',
    "return {loadstring('\\27Lua')}",
    "return {loadstring('\\27')}",
    "error({err = 'x'})",
    "error({err = 'CODE msg'})",
    'error(nil)',
    'error()',
    'error(12)',
    'error(true)',
    "error('x', 0)",
    "error('x', 2)",
    "error('x\\r\\ny')",
    "local function f() error('deep') end\nlocal function g() f() end\ng()",
    'local function f()\n  local x = nil\n  return x.y\nend\nreturn f()',
    "return redis.error_reply('x')",
    "return redis.error_reply('-x')",
    "return redis.error_reply('')",
    "return redis.error_reply('-')",
    "return redis.error_reply('- x')",
    'return redis.error_reply(1)',
    'return redis.error_reply({})',
    "return redis.error_reply('a', 'b')",
    "error(redis.error_reply('MY code'))",
    "local e = redis.error_reply('MY code') return e.err",
    "return {pcall(error, redis.error_reply('X y'))}",
    "return {pcall(redis.call, 'incr', 'str')}",
    "local ok, e = pcall(redis.call, 'incr', 'str') return type(e)",
    "redis.call('incr', 'str')",
    "redis.call('incr',\n  'str')",
    "local x = 1\n\nredis.call('nosuch')",
    'return {pcall(function() local x = nil return x.y end)}',
    "return {xpcall(function() redis.call('nosuch') end, function(e) return type(e) end)}",
    "return {xpcall(function() redis.call('nosuch') end, function(e) return e.err end)}",
    "return {xpcall(function() error('x') end, function(e) return e end)}",
    'return {xpcall(function() error({}) end, function(e) return type(e) end)}',
    "return {pcall(cjson.decode, '[')}",
    'return {pcall(string.rep)}',
    'return string.rep()',
    "return ('x'):rep()",
    'return cjson.decode()',
    'return cjson.encode()',
    'return cjson.encode(function() end)',
    'return {pcall(cjson.encode, function() end)}',
    'local d = cjson.decode return d(1, 2)',
    'return redis.sha1hex()',
    'return redis.sha1hex({})',
    'return redis.sha1hex(1)',
    'return redis.log()',
    'return math.random(1, 2, 3)',
    'return #KEYS',
    'return tostring(1e15)',
    'return tostring(2^53)',
    'return 2^63',
    'return -2^63',
    'return 2^64',
    'return 1e308 * 10',
    'return -(0/0)',
    'return 3.99999',
    'return {1e15, 1e16, -1e16}\n',
]

# redis.call and errors from metamethods, sort/gsub callbacks and coroutines; pcall and
# xpcall error objects; multi-line texts; RESP3 replies of redis.call
NESTED = [
    "local t = {3,1,2} table.sort(t, function(a, b) return redis.call('incr', 'str') end) return t",
    "local t = {3,1,2} table.sort(t, function(a, b) error('in sort') end)",
    "local t = {3,1,2} table.sort(t, function(a, b) redis.call('ping') return a < b end) return t",
    "return string.gsub('abc', '%w', function(c) return redis.call('echo', c .. c) end)",
    "return string.gsub('abc', '%w', function(c) return redis.call('nosuch') end)",
    "local t = setmetatable({}, {__index = function(t, k) return redis.call('get', k) end}) return {t.str, t.nokey}",
    "local t = setmetatable({}, {__add = function() return redis.call('nosuch') end}) return t + 1",
    "local mt = {__concat = function(a, b) return redis.call('echo', 'cat') end} return setmetatable({}, mt) .. 'x'",
    "return {pcall(string.gsub, 'a', 'a', error)}",
    "string.gsub('a', 'a', error)",
    "local t = setmetatable({}, {__index = function(t, k) error('idx ' .. k) end}) return t.foo",
    "local t = setmetatable({}, {__call = function(self, x) return redis.call('echo', x) end}) return t('called')",
    "local t = setmetatable({}, {__call = function(self, x) return redis.call() end}) return t('called')",
    "return redis.call('echo', setmetatable({}, {__tostring = function() return 'x' end}))",
    "local co = coroutine.wrap(function() redis.call('nosuch') end) co()",
    "local co = coroutine.wrap(function() error('in co') end) co()",
    "local co = coroutine.wrap(function() return redis.call('echo', 'from co') end) return co()",
    "return {coroutine.resume(coroutine.create(function() error({err='tbl'}) end))}",
    'return {coroutine.resume(coroutine.create(function() local x = nil + 1 end))}',
    "local ok, e = pcall(function() redis.call('nosuch') end) return {ok, e}",
    'local ok, e = pcall(error) return {ok, e}',
    "local ok, e = pcall(error, {err = 'x'}) return {ok, type(e), e}",
    'local ok, e = pcall(error, {err = 5}) return {ok, type(e), e}',
    'local ok, e = pcall(error, {nope = 5}) return {ok, type(e)}',
    "local ok, e = pcall(error, setmetatable({}, {__index = function() return 'meta' end})) return {ok, type(e), e}",
    "local ok, e = xpcall(function() error('x', 2) end, function(m) return m end) return {ok, e}",
    "local ok, e = xpcall(function() redis.call('incr', 'str') end, function(m) return m.err .. '|' .. tostring(m.ignore_error_stats_update) end) return {ok, e}",
    'local ok, e = xpcall(function() redis.setresp() end, function(m) return m end) return {ok, e}',
    'local ok, e = xpcall(function() redis.setresp() end, __redis__err__handler) return {ok, e}',
    "local ok, e = xpcall(function() error('deep') end, __redis__err__handler) return {ok, e.err, e.source, e.line}",
    "local function f() error('nested') end local function g() f() end local ok, e = pcall(g) return e",
    "local function f()\n  error('nested')\nend\nlocal function g()\n  f()\nend\ng()",
    'local function f()\n  local t = nil\n  return t.x\nend\nreturn f()',
    "local function f()\n  redis.call('incr', 'str')\nend\nf()",
    "local function f()\n  return redis.call('incr', 'str')\nend\nreturn f()",
    "local function f()\n  cjson.decode('[')\nend\nf()",
    "return redis.error_reply('ERR x\\r\\n')",
    "return redis.error_reply('x\\ny')",
    "error(redis.error_reply('WRONG mine'))",
    "error('multi\\nline')",
    "error({err = 'multi\\r\\nline'})",
    "return {err = 'multi\\r\\nline'}",
    "return {ok = 'multi\\r\\nline'}",
    "return {{err = 'nested err'}, {ok = 'nested ok'}}",
    "return redis.pcall('incr', 'str')",
    "local r = redis.pcall('incr', 'str') return {r, r.err}",
    "return {redis.pcall('incr', 'str')}",
    "redis.setresp(3) return redis.call('hgetall', 'nokey')",
    "redis.setresp(3) redis.call('hset', 'h', 'a', '1') return redis.call('hgetall', 'h')",
    "redis.setresp(3) return redis.call('ping')",
    'redis.setresp(3) return {double = 1.5}',
    "redis.setresp(3) return redis.call('debug', 'protocol', 'double')",
    "redis.setresp(3) return redis.call('debug', 'protocol', 'bignum')",
    "redis.setresp(3) return redis.call('debug', 'protocol', 'verbatim')",
    "redis.setresp(3) return redis.call('debug', 'protocol', 'true')",
    "redis.setresp(3) return redis.call('debug', 'protocol', 'null')",
    "redis.setresp(3) return redis.call('debug', 'protocol', 'map')",
    "redis.setresp(3) return redis.call('debug', 'protocol', 'set')",
    "return redis.call('debug', 'protocol', 'double')",
    "return redis.call('debug', 'protocol', 'bignum')",
    "return redis.call('debug', 'protocol', 'map')",
    "redis.setresp(3) local v = redis.call('debug', 'protocol', 'double') return {type(v), v.double}",
    "redis.setresp(3) local v = redis.call('debug', 'protocol', 'verbatim') return cjson.encode(v)\n",
    "redis.setresp(3) redis.call('zadd', 'z', 1.5, 'a', 2, 'b') return redis.call('zscore', 'z', 'a')",
    "redis.setresp(3) redis.call('zadd', 'z', 1.5, 'a', 2, 'b') return redis.call('zrange', 'z', 0, -1, 'withscores')",
    "redis.setresp(3) redis.call('sadd', 's', 'x', 'y') local r = redis.call('smembers', 's') return {type(r), type(r.set), r.set.x}",
    "redis.setresp(3) redis.call('sadd', 's', 'x') return redis.call('smembers', 's')",
    "redis.setresp(3) redis.call('hset', 'h', 'f', 'v') local r = redis.call('hgetall', 'h') return {type(r.map), r.map.f}",
    "redis.setresp(3) local r = redis.call('zscore', 'nokey', 'a') return {type(r), tostring(r)}",
    "redis.setresp(3) return redis.call('get', 'nokey')",
    "redis.setresp(3) redis.call('zadd', 'z', 1.5, 'a') local r = redis.call('zscore', 'z', 'a') return {type(r), r.double}",
    'redis.setresp(3) return {double = 1e300, 1}',
    "redis.setresp(3) return {big_number = '123456789012345678901234567890'}",
    "redis.setresp(3) return {verbatim_string = {format = 'txtx', string = 'hello'}}",
    'redis.setresp(3) return {map = {a = {set = {x = true}}}}',
    'redis.setresp(3) return true',
    'redis.setresp(3) return false',
    'redis.setresp(3) return nil',
    "redis.setresp(2) redis.call('zadd', 'z', 1.5, 'a') return redis.call('zscore', 'z', 'a')",
    "redis.setresp(3) redis.call('lpush', 'l', 'a') return redis.call('lpos', 'l', 'zz')",
    "redis.setresp(3) return redis.call('exists', 'nokey')",
    "redis.setresp(3) return redis.call('object', 'freq', 'nokey')\n",
]

SELFREF = [
    'local t = {} t[1] = t return t',
    'local t = {1} t[2] = t return t',
    'local t = {} t.map = t return t',
    'local t = {} t.set = t return t',
]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def d(request):
    pair = request.getfixturevalue("diff" if request.param == 2 else "diff3")
    pair("SET", "str", "text")
    yield pair
    for c in (pair.real, pair.ours):
        c.call("FUNCTION", "FLUSH")


def test_global_and_library_names(d):
    for script in LISTINGS:
        everywhere(d, script)


def test_globals_are_protected(d):
    for script in GLOBALS:
        everywhere(d, script)


def test_protection_holds_after_attempts(d):
    """What a refused write tried to change is unchanged for the next script."""
    for script in ("getmetatable('').__index.upper = 1", "getmetatable('').__index = {}",
                   "string.upper = nil", "rawset(string, 'upper', 1)",
                   "table.insert(string, 1)", "setmetatable(_G, {__index = {}})"):
        everywhere(d, script)
        everywhere(d, "return {('x'):upper(), string.upper('y'), #string, type(next(_G))}")


def test_errors_and_conversions(d):
    for script in ERRORS:
        everywhere(d, script)


def test_nested_calls_and_error_objects(d):
    for script in NESTED:
        everywhere(d, script)


def test_compile_errors_and_binary_chunks(d):
    for script in ("return 1 +", "x x", "return 'unfinished", "\n\nlocal = 3", "end",
                   "\x1bLuaQ\x00\x01\x04\x08", "\x1b", " \x1bLua", "\x1b\nreturn 1"):
        everywhere(d, script)


def test_tables_that_contain_themselves(d):
    with deep_replies():
        for script in SELFREF:
            everywhere(d, script)
        run_eval(d, "local t = {} t[1] = {t} return t")
        run_eval(d, "local t = {} t[1] = {map = {x = t}} return t")


# -- fuzz: random sequences of sandbox operations, each under pcall -------------------------
STATEMENTS = [
    "x = 1", "return y", "rawset(_G, 'a', 1)", "string.x = 1", "setmetatable(_G, {})",
    "getmetatable('').__index = 1", "table.insert(redis, 1)",
    "return rawget(_G, 'string') == string", "return type(next(string))",
    "return loadstring('return 1')()", "return loadstring(1)",
    "return load(function() return nil end)", "return redis.call('ping')", "return redis.call()",
    "return redis.pcall('nosuch')", "return redis.error_reply('x')", "return cjson.encode({1})",
    "error({err='e'})", "error('s')", "error()", "return #ARGV", "KEYS[1] = 'k'",
    "return getmetatable(_G).__index", "return select('#', pcall(error))",
    "return tostring(rawequal(_G, _G._G))",
    "return coroutine.resume(coroutine.create(function() x = 1 end))", "return unpack({1, 2})",
    "return redis.sha1hex(1)", "return redis.setresp(2)", "return math.huge",
    "return bit.tohex(-1)", "return struct.pack('>I2', 7)",
    "return cmsgpack.unpack(cmsgpack.pack({1}))[1]",
    "return xpcall(error, function(e) return e end)",
    "local t = setmetatable({}, {__index = _G}) return t.redis == redis", "return _G['nosuch']",
    "local f = string.len return f('abc')", "return redis.call('incr', 'str')",
    "return redis.call('get', {})", "local a = pairs(nil) return a",
    "local a = next(_G, 'nosuchkey') return a",
]


def fuzz_script(rng) -> str:
    parts = []
    for statement in rng.sample(STATEMENTS, rng.randrange(2, 6)):
        parts.append(f"do local r = {{pcall(function() {statement} end)}} local v = r[2] "
                     "if type(v) == 'table' or type(v) == 'function' then v = 'obj' end "
                     "out[#out + 1] = tostring(r[1]) .. ':' .. tostring(v) .. ':' .. type(r[2]) "
                     "end")
    return "local out = {} " + " ".join(parts) + " return out"


def run_fuzz(d, count: int) -> None:
    rng = random.Random(11)
    for _ in range(count):
        everywhere(d, fuzz_script(rng))


def test_fuzz_slice(d):
    run_fuzz(d, 15)


@pytest.mark.slow
def test_fuzz(d):
    run_fuzz(d, 400)
