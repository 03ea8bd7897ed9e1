"""MODULE compared with a real redis-server 7.0 that has no modules loaded.

The session's servers keep ``enable-module-command no`` (the default): LIST and HELP answer,
LOAD/LOADEX/UNLOAD are refused with Redis's text. A second pair runs with ``local`` (the
tests connect over loopback, so allowed) where every load fails as Redis's does for a file
it cannot load.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient
from support.servers import REDIS_SERVER, server_pair

COMMANDS = [
    ("MODULE", "LIST"),
    ("MODULE", "HELP"),
    ("MODULE", "LOAD", "/nonexistent/module.so"),
    ("MODULE", "LOAD", "/nonexistent/module.so", "arg1", "arg2"),
    ("MODULE", "LOADEX", "/nonexistent/module.so"),
    ("MODULE", "LOADEX", "/nonexistent/module.so", "CONFIG", "name", "value"),
    ("MODULE", "LOADEX", "/nonexistent/module.so", "CONFIG", "name"),
    ("MODULE", "LOADEX", "/nonexistent/module.so", "ARGS", "a", "b"),
    ("MODULE", "LOADEX", "/nonexistent/module.so", "junk"),
    ("MODULE", "LOAD", "/etc/hostname"),
    ("MODULE", "UNLOAD", "nosuchmodule"),
    ("MODULE", "LIST", "extra"),
    ("MODULE", "HELP", "extra"),
    ("MODULE", "UNLOAD"),
    ("MODULE", "LOAD"),
    ("MODULE", "NOSUCH"),
    ("MODULE",),
]
IDS = [" ".join(c[1:]) or "-" for c in COMMANDS]


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_module_disabled(diff, diff3, cmd):
    diff(*cmd)
    diff3(*cmd)


@pytest.fixture(scope="module")
def module_pair():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    with server_pair({"enable-module-command": "local"}) as ports:
        yield ports


@pytest.mark.parametrize("resp", [2, 3])
@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_module_enabled(diff, module_pair, cmd, resp):
    d = type(diff)(RawClient(port=module_pair[0]), RawClient(port=module_pair[1]))
    try:
        if resp == 3:
            d.real.call("HELLO", "3")
            d.ours.call("HELLO", "3")
        d(*cmd)
        d("MODULE", "LIST")  # nothing was loaded
    finally:
        d.real.close()
        d.ours.close()


def test_module_in_multi_and_hello(diff):
    diff("MULTI")
    diff("MODULE", "LIST")
    diff("MODULE", "HELP")
    diff("EXEC")
    diff("MULTI")
    diff("MODULE", "LOAD", "/nonexistent/module.so")  # refused before queueing
    diff("PING")
    diff("EXEC")
    real, ours = diff.both("HELLO", "2")
    assert ours.endswith(b"$7\r\nmodules\r\n*0\r\n") and real.endswith(b"$7\r\nmodules\r\n*0\r\n")
