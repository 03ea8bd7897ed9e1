"""FUNCTION LOAD on the function store (no server process): what a replaced library
leaves behind in the Lua state."""
from __future__ import annotations

import gc

from pykv.assemble import build_server
from pykv.scripting.engine import get_function_engine

# a body whose function keeps the load-time ``redis`` (an upvalue) as well as its
# environment: both routes back to the library's registration table
LIBRARY = (b"#!lua name=lib1\n"
           b"local r = redis\n"
           b"redis.register_function('f1', function(keys, args) return r.REDIS_VERSION end)\n")


def lua_kbytes(engine) -> float:
    gc.collect()  # a replaced Function's Lua references go when Python collects it
    return engine.lua.execute("collectgarbage() collectgarbage() return collectgarbage('count')")


def test_replaced_libraries_are_collected():
    server = build_server()
    engine = get_function_engine(server)
    for _ in range(50):  # warm up: the slot table, interned strings
        server.functions.create(LIBRARY, replace=True)
    before = lua_kbytes(engine)
    for _ in range(1000):
        server.functions.create(LIBRARY, replace=True)
    grown = lua_kbytes(engine) - before
    # a leak keeps every replaced library (over 2 KB each); what may grow is the slot
    # table, tens of bytes a slot
    assert grown < 100, f"Lua state grew {grown:.0f} KB over 1000 FUNCTION LOAD REPLACE"
    assert set(server.functions.live.libraries) == {b"lib1"}
