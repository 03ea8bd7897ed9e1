"""The embedded testing server (``pykv.testing.Server``) and its pytest plugin."""
from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time

import pytest
import redis

from pykv.testing import Server, ServerError, config_args, free_port

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def shared():
    """One server for the tests that do not stop it (server starts are the slow part)."""
    with Server(unix_socket=True, unixsocketperm=0o700, loglevel="verbose") as s:
        yield s


def raw_call(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(1000)


def test_context_manager_starts_restarts_and_stops():
    with Server() as s:
        assert s.running and s.ping()
        pid, port = s.pid, s.port
        workdir = s.workdir
        assert os.path.isdir(workdir)
        r = s.client()
        assert r.set("k", "v") is True
        assert r.get("k") == b"v"
        r.close()
        s.restart()
        assert s.pid != pid and s.port == port and s.workdir == workdir and s.ping()
        pid = s.pid
    assert not s.running
    assert s.returncode == 0  # SIGTERM is a clean shutdown
    assert not os.path.exists(workdir)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_unix_socket_and_resp3_client(shared):
    s = shared
    assert s.unix_path and os.path.exists(s.unix_path)
    assert stat.S_IMODE(os.stat(s.unix_path).st_mode) == 0o700
    assert s.unix_url == f"unix://{s.unix_path}"
    ru = s.client(unix=True, decode_responses=True)
    ru.set("via", "unix")
    r3 = s.client(protocol=3, decode_responses=True)
    assert r3.get("via") == "unix"
    # RESP3 really is in use: a map comes back from HELLO as a dict over RESP3
    hello = r3.execute_command("HELLO", "3")
    assert hello["proto"] == 3
    ru.close()
    r3.close()


def test_flush(shared):
    r = shared.client()
    r.mset({"a": 1, "b": 2})
    r.execute_command("SELECT", 5)
    r.set("c", 3)
    shared.flush()
    assert r.dbsize() == 0
    r.execute_command("SELECT", 0)
    assert r.dbsize() == 0
    r.close()


def test_log_capture(shared):
    mark = shared.log_size()
    # a protocol error is logged at verbose level
    assert raw_call(shared.port, b"*1\r\n$abc\r\n").startswith(b"-ERR Protocol error")
    deadline = time.monotonic() + 5
    while "Protocol error" not in shared.log(since=mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Protocol error" in shared.log(since=mark)
    assert len(shared.log(since=mark)) < len(shared.log())


def test_port_in_use_raises_with_log(shared):
    intruder = Server(port=shared.port, start_timeout=20)
    try:
        with pytest.raises(ServerError) as info:
            intruder.start()
    finally:
        intruder.stop()
    assert "exited" in str(info.value)
    assert shared.ping()


def test_client_without_unix_socket_is_an_error():
    with pytest.raises(ValueError):
        Server().client(unix=True)  # refused before any connection is made


def test_unix_only_server():
    with Server(port=0, unix_socket=True) as s:
        assert s.endpoint() == ("unix", s.unix_path, 0)
        assert s.ping()
        s.flush()
        r = s.client()  # follows endpoint(): the unix socket
        assert r.ping() is True
        r.close()


def test_config_is_passed_and_password_is_used():
    with Server(config={"databases": 4, "requirepass": "sekret"}) as s:
        r = s.client()  # picks up requirepass
        r.set("a", 1)
        r2 = s.client(db=3)
        r2.set("b", 2)
        s.flush()
        assert r.dbsize() == 0 and r2.dbsize() == 0
        with pytest.raises(redis.ResponseError):
            r.select(4)
        assert raw_call(s.port, b"GET a\r\n").startswith(b"-NOAUTH")
        r.close()
        r2.close()


def test_config_args_formatting():
    assert config_args({"save": "", "appendonly": True, "bind": ["a", "b"],
                        "proto_max_bulk_len": "1mb"}) == [
        "--save", "", "--appendonly", "yes", "--bind", "a", "b",
        "--proto-max-bulk-len", "1mb"]


def test_bad_config_raises_with_log():
    bad = Server(config={"no-such-option": "1"}, start_timeout=20)
    try:
        with pytest.raises(ServerError) as info:
            bad.start()
    finally:
        bad.stop()
    assert "Bad directive" in str(info.value)


def test_stop_kills_a_server_that_ignores_sigterm():
    with Server() as s:
        # a stopped (SIGSTOP) process cannot handle SIGTERM: stop() must fall back to SIGKILL
        os.kill(s.pid, signal.SIGSTOP)
        assert s.stop(timeout=0.5) == -signal.SIGKILL
        assert not s.running
        # stop() again, after the process is gone, is harmless
        assert s.stop() == -signal.SIGKILL


def test_kill_simulates_a_crash():
    s = Server().start()
    assert s.kill() == -signal.SIGKILL
    assert not s.running
    assert s.stop() == -signal.SIGKILL


def test_free_port_is_bindable():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_leftover_server_is_stopped_at_interpreter_exit(tmp_path):
    # a script that starts a server and "forgets" it: atexit must stop it
    script = tmp_path / "forget.py"
    # one server still referenced at exit, one whose object was dropped and collected
    script.write_text(textwrap.dedent("""
        import gc
        from pykv.testing import Server
        kept = Server().start()
        print(kept.pid, Server().start().pid, flush=True)
        gc.collect()
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60, check=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# -- the pytest plugin ----------------------------------------------------------------------

PLUGIN_TESTS = """
import pytest

def test_one(pykv_client):
    assert pykv_client.dbsize() == 0
    pykv_client.set("left", "behind")

def test_two_sees_a_flushed_server(pykv_client, pykv_server):
    assert pykv_client.dbsize() == 0
    assert pykv_server.port > 0

def test_config_option(pykv_client):
    import redis
    pykv_client.execute_command("SELECT", 2)
    with pytest.raises(redis.ResponseError):
        pykv_client.execute_command("SELECT", 3)

def test_factory(pykv_server_factory, pykv_server):
    other = pykv_server_factory(config={"databases": 2})
    assert other.port != pykv_server.port
    r = other.client()
    r.select(1)
    r.close()

def test_failure_shows_server_log(pykv_client):
    import socket
    from pykv.testing import Server
    s = socket.create_connection(("127.0.0.1", pykv_client.connection_pool.connection_kwargs["port"]))
    s.sendall(b"*1\\r\\n$zz\\r\\n")
    s.recv(100)
    s.close()
    assert False, "deliberate"
"""


def test_pytest_plugin(pytester):
    pytester.makepyfile(test_plugin_use=PLUGIN_TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--pykv-config", "databases=3",
        "-o", "pykv_config=loglevel verbose", "-q")
    result.assert_outcomes(passed=4, failed=1)
    text = result.stdout.str()
    assert "pykv server log" in text
    assert "Protocol error" in text


# -- clients without redis-py, async client, config files, parallel runs ----------------------
def _blocked_redis(tmp_path) -> dict:
    """An environment in which ``import redis`` fails (as if redis-py were not installed)."""
    blocker = tmp_path / "blocker"
    (blocker / "redis").mkdir(parents=True, exist_ok=True)
    (blocker / "redis" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'redis'\", name='redis')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), *sys.path])}


def test_client_without_redis_py_says_what_to_install(tmp_path):
    script = "from pykv.testing import Server\nwith Server() as s:\n    s.client()\n"
    for method in ("client", "async_client"):
        out = subprocess.run([sys.executable, "-c", script.replace("client", method)],
                             capture_output=True, text=True, timeout=60,
                             env=_blocked_redis(tmp_path))
        assert out.returncode == 1
        last = out.stderr.strip().splitlines()[-1]
        assert last == ("pykv.testing.server.MissingDependency: pykv.testing clients need "
                        "redis-py (>= 5): pip install 'pykv[testing]'"), out.stderr
        assert "ModuleNotFoundError" not in out.stderr


def test_plugin_without_redis_py_says_what_to_install(pytester, tmp_path, monkeypatch):
    pytester.makepyfile(test_needs_client="def test_x(pykv_client):\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", _blocked_redis(tmp_path)["PYTHONPATH"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert ("MissingDependency: pykv.testing clients need redis-py (>= 5): "
            "pip install 'pykv[testing]'") in text
    assert "ModuleNotFoundError" not in text


def test_async_client(shared):
    import asyncio

    async def use() -> tuple:
        r = shared.async_client(decode_responses=True)
        await r.set("async", "yes")
        got = await r.get("async"), await r.incr("async-n")
        r3 = shared.async_client(protocol=3, unix=True)
        hello = await r3.execute_command("HELLO", "3")
        await r.aclose()
        await r3.aclose()
        return got, hello

    (value, n), hello = asyncio.run(use())
    assert (value, n) == ("yes", 1)
    assert hello[b"proto"] == 3


def test_from_config_file(tmp_path):
    conf = tmp_path / "redis.conf"
    conf.write_text("port 7\nrequirepass sesame\nmaxclients 77\ndatabases 4\n")
    with Server.from_config_file(conf) as s:
        assert s.port != 7 and s.password == "sesame"
        r = s.client(decode_responses=True)
        assert r.config_get("maxclients") == {"maxclients": "77"}
        assert r.config_get("databases") == {"databases": "4"}
        r.close()
    with Server.from_config_file(str(conf), config={"maxclients": 5}) as s:
        r = s.client(decode_responses=True)
        assert r.config_get("maxclients") == {"maxclients": "5"}
        r.close()


def test_auto_port_lost_to_another_process_is_retried(monkeypatch):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    taken = holder.getsockname()[1]
    ports = iter([taken])
    real_free_port = free_port

    def racing_free_port(host: str = "127.0.0.1") -> int:
        return next(ports, None) or real_free_port(host)

    import pykv.testing.server as server_module

    monkeypatch.setattr(server_module, "free_port", racing_free_port)
    with Server() as s:  # picked the taken port first, then another one
        assert s.port != taken and s.ping()
    with pytest.raises(ServerError) as info:
        Server(port=taken).start()  # a port the caller chose is not changed
    holder.close()
    assert "Address already in use" in str(info.value)


PER_TEST_DB = """
def test_a(pykv_db, pykv_server):
    assert pykv_db.connection_pool.connection_kwargs["db"] == 1
    pykv_db.set("mine", "1")
    plain = pykv_server.client()
    assert plain.dbsize() == 0  # db 0 does not see it
    plain.close()

def test_b(pykv_db):
    assert pykv_db.connection_pool.connection_kwargs["db"] == 1  # given back, reused
    assert pykv_db.dbsize() == 0  # and flushed
"""


def test_pykv_db_fixture(pytester):
    pytester.makepyfile(test_dbs=PER_TEST_DB)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "-p", "no:randomly")
    result.assert_outcomes(passed=2)


XDIST_TESTS = """
import os

def _record(pykv_server, pykv_client, name):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    pykv_client.set(name, worker)
    with open(os.path.join(os.environ["XD_OUT"], name), "w") as fh:
        fh.write(f"{worker} {pykv_server.port}")

def test_a(pykv_server, pykv_client): _record(pykv_server, pykv_client, "a")
def test_b(pykv_server, pykv_client): _record(pykv_server, pykv_client, "b")
def test_c(pykv_server, pykv_client): _record(pykv_server, pykv_client, "c")
def test_d(pykv_server, pykv_client): _record(pykv_server, pykv_client, "d")
"""


def test_pytest_xdist_workers_get_their_own_servers(tmp_path):
    """Under ``pytest -n 2`` each worker starts its own session server (no shared state
    between parallel tests): two workers, two ports."""
    pytest.importorskip("xdist")
    (tmp_path / "test_parallel.py").write_text(XDIST_TESTS)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p",
                           "no:cacheprovider", "test_parallel.py"], cwd=tmp_path,
                          env={**os.environ, "XD_OUT": str(out)}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = dict(p.read_text().split() for p in out.iterdir())
    assert set(seen) == {"gw0", "gw1"}, seen  # both workers ran tests
    assert len(set(seen.values())) == 2, seen  # on two different servers
