"""Lua <-> RESP conversion of the scripting engine, on values (no server process)."""
from __future__ import annotations

import pytest

from pykv.protocol import NULL_ARRAY, BigNumber, ErrorReply, RespSet, SimpleString
from pykv.scripting.engine import (
    TAG_ERROR,
    TAG_RESP,
    TAG_STATUS,
    TAG_VALUE,
    Engine,
    reply_to_lua,
)


@pytest.fixture(scope="module")
def engine():
    from pykv.assemble import build_server

    return Engine(build_server())


def lua_result(engine, source: str, resp: int = 2, lua_resp: int = 2):
    """Run ``source`` as a script (after redis.setresp(lua_resp)); its (ok, RESP) result
    for a caller speaking ``resp``."""
    fn = engine.compile((f"redis.setresp({lua_resp}) " + source).encode())
    return tuple(engine.api.run(fn, resp, 0)[:2])


@pytest.mark.parametrize("source, resp, expected", [
    ("return 7.9", 2, b":7\r\n"),
    ("return -7.9", 2, b":-7\r\n"),
    ("return -0.2", 2, b":0\r\n"),
    ("return 2^63", 2, b":-9223372036854775808\r\n"),
    ("return 'a'", 2, b"$1\r\na\r\n"),
    ("return nil", 2, b"$-1\r\n"),
    ("return nil", 3, b"_\r\n"),
    ("return true", 2, b":1\r\n"),
    ("return false", 2, b"$-1\r\n"),
    ("return false", 3, b"_\r\n"),
    ("return {1, 'x', nil, 3}", 2, b"*2\r\n:1\r\n$1\r\nx\r\n"),
    ("return {ok='a\\nb'}", 2, b"+a b\r\n"),
    ("return {double=1.5}", 3, b",1.5\r\n"),
    ("return {double=1.5}", 2, b"$3\r\n1.5\r\n"),
    ("return {big_number='12'}", 3, b"(12\r\n"),
    ("return {map={a=1}}", 3, b"%1\r\n$1\r\na\r\n:1\r\n"),
    ("return {set={a=true}}", 2, b"*1\r\n$1\r\na\r\n"),
    ("return {verbatim_string={format='txt', string='hi'}}", 3, b"=6\r\ntxt:hi\r\n"),
])
def test_lua_to_resp(engine, source, resp, expected):
    assert lua_result(engine, source, resp) == (True, expected)


def test_booleans_follow_setresp3(engine):
    assert lua_result(engine, "return true", 3, 3) == (True, b"#t\r\n")
    assert lua_result(engine, "return false", 2, 3) == (True, b":0\r\n")


def test_top_level_error_table(engine):
    assert lua_result(engine, "return {err='CODE text'}") == (False, b"CODE text")


@pytest.mark.parametrize("reply, lua_resp, expected", [
    (5, 2, (TAG_VALUE, 5)),
    (b"x", 2, (TAG_VALUE, b"x")),
    (None, 2, (TAG_VALUE, False)),
    (None, 3, (TAG_VALUE, None)),
    (ErrorReply(b"ERR bad"), 2, (TAG_ERROR, b"ERR bad")),
    (SimpleString(b"OK"), 2, (TAG_STATUS, b"OK")),
    (SimpleString(b"OK"), 3, (TAG_STATUS, b"OK")),
    (NULL_ARRAY, 2, (TAG_RESP, b"*-1\r\n")),
    ({b"f": b"v"}, 2, (TAG_RESP, b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n")),
    ({b"f": b"v"}, 3, (TAG_RESP, b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n")),
    (RespSet([b"a"]), 3, (TAG_RESP, b"~1\r\n$1\r\na\r\n")),
    (1.5, 3, (TAG_RESP, b",1.5\r\n")),
    (BigNumber(b"9"), 2, (TAG_RESP, b"$1\r\n9\r\n")),
])
def test_reply_to_lua_tags(reply, lua_resp, expected):
    assert reply_to_lua(reply, lua_resp) == expected


def test_resp_parsed_into_lua_values(engine):
    to_lua = engine.api.resp_to_lua
    assert to_lua(b"+OK\r\n")[b"ok"] == b"OK"
    assert to_lua(b"-ERR x\r\n")[b"err"] == b"ERR x"
    arr = to_lua(b"*3\r\n:1\r\n$1\r\na\r\n$-1\r\n")
    assert (arr[1], arr[2], arr[3]) == (1, b"a", False)
    assert to_lua(b"*-1\r\n") is False
    assert to_lua(b"%1\r\n$1\r\nk\r\n:2\r\n")[b"map"][b"k"] == 2
    assert to_lua(b"~1\r\n$1\r\nm\r\n")[b"set"][b"m"] is True
    assert to_lua(b",2.5\r\n")[b"double"] == 2.5
    assert to_lua(b"#t\r\n") is True
    assert to_lua(b"_\r\n") is None


# the same scripts through the C entry (pykv.scripting._luacall) and through lupa's Python
# callables: the replies must not differ
PATH_SCRIPTS = [
    "return redis.call('set', KEYS[1], ARGV[1])", "return redis.call('get', KEYS[1])",
    "return redis.call('get', 'nokey')", "return {redis.call('get', 'nokey')}",
    "return redis.call('incr', 'n')", "return redis.call('rpush', 'l', 1, 2.5, 'x')",
    "return redis.call('lrange', 'l', 0, -1)", "return redis.call('echo', 1e20)",
    "return redis.call('hset', 'h', 'f', 'v')", "return redis.call('hgetall', 'h')",
    "redis.setresp(3) return redis.call('hgetall', 'h')",
    "redis.setresp(3) return {redis.call('get', 'nokey')}",
    "return redis.call('ping')", "return redis.pcall('lpush', KEYS[1], 'x')",
    "return redis.call('lpush', KEYS[1], 'x')", "return redis.call()",
    "return redis.pcall({})", "return redis.call('nosuch')", "return 1.5", "return -2^63",
    "return {ok='a\\nb'}", "return {err='x'}", "return nil", "return {1, {2, 'x'}}",
    "local ok, e = pcall(redis.call, 'incr', KEYS[1]) return e",
]


def _scripting(monkeypatch, c_path: bool, functions: bool = False) -> tuple:
    """A fresh server's EVAL (or function) engine, with or without the Lua C entry, and a
    caller."""
    from pykv.assemble import build_server
    from pykv.scripting import engine as engine_module
    from pykv.server.client import Client

    if not c_path:
        monkeypatch.setattr(engine_module, "lua_c_calls", lambda engine, lua: None)
    get = engine_module.get_function_engine if functions else engine_module.get_engine
    engine = get(build_server())
    assert (engine._c_binding is not None) == c_path
    return engine, Client(engine.server, None, 0)


def _replies(monkeypatch, c_path: bool) -> list:
    from pykv.scripting import engine as engine_module

    engine, caller = _scripting(monkeypatch, c_path)
    out = []
    for source in PATH_SCRIPTS:
        sha = engine.cache_script(source.encode())
        ctx = engine_module.RunContext(caller, sha, False, False, b"evalsha")
        for resp in (2, 3):
            caller.resp = resp
            reply = engine.run(ctx, engine.scripts[sha][1], 1, [b"k", b"v"])
            out.append((source, resp, type(reply).__name__, reply.data))
    return out


def test_c_entry_and_python_callables_agree(monkeypatch):
    pytest.importorskip("pykv.scripting._luacall")
    with_c = _replies(monkeypatch, True)
    assert with_c == _replies(monkeypatch, False)


FUNCTION_LIBRARY = b"""#!lua name=paths
redis.register_function('set', function(k, a) return redis.call('set', k[1], a[1]) end)
redis.register_function('args', function(k, a) return {k, a} end)
redis.register_function('perr', function(k) return redis.pcall('nosuch') end)
redis.register_function('err', function(k) return redis.call('incr', k[1]) end)
redis.register_function('boom', function() error('boom') end)
redis.register_function('resp3', function(k) redis.setresp(3) return redis.call('hgetall', 'h') end)
redis.register_function('loaded', function() return loadstring('return type(KEYS)')() end)
"""


def _function_replies(monkeypatch, c_path: bool) -> list:
    from pykv.scripting import engine as engine_module
    from pykv.scripting.functions import get_store

    engine, caller = _scripting(monkeypatch, c_path, functions=True)
    store = get_store(engine.server)
    store.create(FUNCTION_LIBRARY, False)
    out = []
    for name, fn in store.live.functions.items():
        assert (fn.slot != 0) == c_path
        ctx = engine_module.RunContext(caller, fn.name, False, True, b"fcall")
        for resp in (2, 3):
            caller.resp = resp
            reply = engine.run(ctx, fn, 1, [b"k", b"v"], as_callback=True)
            out.append((name, resp, type(reply).__name__, reply.data))
    return out


def test_fcall_c_entry_and_python_callback_agree(monkeypatch):
    pytest.importorskip("pykv.scripting._luacall")
    with_c = _function_replies(monkeypatch, True)
    assert with_c == _function_replies(monkeypatch, False)


def test_small_block_pool_is_reused(monkeypatch):
    """The C entry's small-block pool hands freed blocks out again: thousands of runs,
    each making KEYS/ARGV and reply tables, leave its region's use where it was."""
    luacall = pytest.importorskip("pykv.scripting._luacall")
    from pykv.scripting import engine as engine_module

    engine, caller = _scripting(monkeypatch, True)
    sha = engine.cache_script(b"return {redis.call('set', KEYS[1], ARGV[1]), {ARGV[1]}}")

    def runs(n):
        for _ in range(n):
            ctx = engine_module.RunContext(caller, sha, False, False, b"evalsha")
            engine.run(ctx, engine.scripts[sha][1], 1, [b"k", b"v"])
        engine.lua.execute("collectgarbage()")
        return luacall.pool_used(engine._c_binding)

    first = runs(2000)
    assert first > 0
    assert runs(20000) <= first + 64 * 1024
