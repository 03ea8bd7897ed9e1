"""A busy script meets SHUTDOWN and SIGTERM, pykv and redis-server side by side (a fresh
server each, since they exit): the same steps, the same replies, the same end.

Redis 7.0 answers SHUTDOWN / SHUTDOWN SAVE with BUSY while a script is busy and exits at
once on SHUTDOWN NOSAVE (no reply to anyone). A SIGTERM during a busy script changes
nothing until the script ends (SCRIPT KILL): then the server shuts down, and the script's
caller never gets a reply. Also the log lines of a slow and of a killed script.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time

import pytest
from support.busy import wait_busy
from support.resp import RawClient, encode_command
from support.servers import REDIS_SERVER

from pykv.testing import Server, free_port

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

SCRIPT = "local f = function() while 1 do end end while 1 do pcall(f) end"
LIBRARY = ("#!lua name=lib\nredis.register_function('spin', function()\n"
           "  local f = function() while 1 do end end\n  while 1 do pcall(f) end\nend)")


class _Redis:
    """redis-server with a log file (the oracle)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="real-redis-")
        self.log_path = os.path.join(self.dir, "redis.log")
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--dir", self.dir, "--logfile", self.log_path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_ping(self.port)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as fh:
            return fh.read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class _Pykv:
    def __init__(self) -> None:
        self.server = Server().start()
        self.port = self.server.port
        self.process = self.server.process

    def log(self) -> str:
        return self.server.log()

    def stop(self) -> None:
        self.server.stop()


def _wait_ping(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            RawClient(port=port, timeout=2).call("PING")
            return
        except OSError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)


def _reply(client: RawClient) -> bytes:
    try:
        return client.read_reply()
    except (ConnectionError, OSError):
        return b"<closed>"


def _call(client: RawClient, *args: str) -> bytes:
    try:
        client.send_raw(encode_command(*args))
    except OSError:
        return b"<closed>"
    return _reply(client)


def _exit_status(process: subprocess.Popen) -> int | str:
    try:
        return process.wait(15)
    except subprocess.TimeoutExpired:
        return "still running"


def _start_busy(port: int, command: tuple) -> tuple[RawClient, RawClient]:
    admin = RawClient(port=port)
    runner = RawClient(port=port)
    admin.call("CONFIG", "SET", "busy-reply-threshold", "10")
    admin.call("FUNCTION", "LOAD", LIBRARY)
    runner.send_raw(encode_command(*command))
    wait_busy(admin)
    return admin, runner


def _side_by_side(scenario) -> None:
    results = []
    for make in (_Redis, _Pykv):
        server = make()
        try:
            results.append(scenario(server))
        finally:
            server.stop()
    assert results[1] == results[0]


@pytest.mark.parametrize("command", [("EVAL", SCRIPT, "0"), ("FCALL", "spin", "0")],
                         ids=["eval", "fcall"])
def test_shutdown_nosave_ends_a_busy_script(command):
    def scenario(server):
        admin, runner = _start_busy(server.port, command)
        out = [_call(admin, "SHUTDOWN"), _call(admin, "SHUTDOWN", "SAVE"),
               _call(admin, "SHUTDOWN", "ABORT"), _call(admin, "SHUTDOWN", "NOSAVE"),
               _reply(runner), _exit_status(server.process)]
        return out
    _side_by_side(scenario)


def test_sigterm_waits_for_the_busy_script_to_end():
    def scenario(server):
        admin, runner = _start_busy(server.port, ("EVAL", SCRIPT, "0"))
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        late = RawClient(port=server.port)  # still accepted and answered while busy
        out = [_call(admin, "PING"), _call(late, "GET", "x"), _call(admin, "SCRIPT", "KILL"),
               _reply(runner), _exit_status(server.process)]
        return out
    _side_by_side(scenario)


def _log_lines(text: str) -> list[str]:
    """The script-related log messages, their variable parts masked."""
    out = []
    for line in text.splitlines():
        msg = line.split(" # ", 1)[-1] if " # " in line else None
        if msg and ("script" in msg.lower()) and "Redis" not in msg:
            out.append(re.sub(r"after \d+ milliseconds", "after N milliseconds", msg))
    return out


def test_slow_and_killed_script_log_lines():
    """The slow-script warning names SCRIPT KILL for EVAL and FUNCTION KILL for FCALL,
    and the script's name; a kill is logged each time the hook raises it."""
    def scenario(server):
        for command, kill in ((("EVAL", SCRIPT, "0"), "SCRIPT"), (("FCALL", "spin", "0"),
                                                                     "FUNCTION")):
            admin, runner = _start_busy(server.port, command)
            assert _call(admin, kill, "KILL") == b"+OK\r\n"
            _reply(runner)
            admin.call("FUNCTION", "FLUSH")
        deadline = time.monotonic() + 5
        while len(_log_lines(server.log())) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        return _log_lines(server.log())
    _side_by_side(scenario)


def test_sigterm_during_a_busy_script_that_ends_by_itself():
    """The script finishes on its own; the shutdown comes then, its reply never does."""
    script = ("local t = redis.call('time') local stop = t[1] * 1000000 + t[2] + 1500000 "
              "while true do local n = redis.call('time') "
              "if n[1] * 1000000 + n[2] > stop then return 'done' end end")

    def scenario(server):
        admin, runner = _start_busy(server.port, ("EVAL", script, "0"))
        server.process.send_signal(signal.SIGTERM)
        return [_call(admin, "PING"), _reply(runner), _exit_status(server.process)]
    _side_by_side(scenario)
