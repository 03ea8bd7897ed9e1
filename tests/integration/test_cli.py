"""``python -m pykv`` start-up: bad options and files fail like redis-server, good ones run.

Each failing case runs both redis-server 7.0 and pykv with the same arguments and compares
the exit status and the message (the FATAL block byte for byte on stderr; log lines without
their ``pid:role date time`` prefix).
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import time

import pytest
from support.resp import RawClient

from pykv.testing import free_port

REDIS_SERVER = shutil.which("redis-server")
PYKV = [sys.executable, "-m", "pykv"]
_LOG_PREFIX = re.compile(r"^\d+:[CM] \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} [.*#-] ", re.M)

needs_redis = pytest.mark.usefixtures("redis_binary")


def run(cmd: list[str], cwd, stdin: str = "") -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, input=stdin.encode(), capture_output=True, timeout=20)
    assert proc.returncode != 0 or "-v" in cmd or "--version" in cmd, proc
    return proc


def both(args: list[str], cwd, stdin: str = ""):
    return run([REDIS_SERVER, *args], cwd, stdin), run([*PYKV, *args], cwd, stdin)


BAD_ARGUMENTS = [
    ["--port", "abc"],
    ["--foo", "bar"],
    ["--port"],
    ["--port", "1", "2"],
    ["--port 1 2"],
    ["--port", "--bind", "x"],
    ["--save", "--port", "x"],
    ["--hz", 'a"b\\c'],
    ["--maxmemory", "1.5gb"],
    ["--loglevel", "nothing"],
    ["--timeout", "-1"],
    ["--protected-mode", "maybe"],
    ["--save", "100"],
    ["--client-output-buffer-limit", "master", "1", "1", "1"],
    ["--logfile", "/nonexistent/dir/x.log"],
    ["--dir", "/nonexistent/dir"],
    ["--rename-command", "NOSUCHCMD", "x"],
]


@needs_redis
@pytest.mark.parametrize("args", BAD_ARGUMENTS, ids=lambda a: " ".join(a))
def test_bad_arguments_fail_like_redis(args, tmp_path):
    real, ours = both(args, tmp_path)
    assert ours.returncode == real.returncode == 1
    assert ours.stderr == real.stderr
    assert real.stderr.startswith(b"\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n")


@needs_redis
def test_bad_config_file_and_stdin(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text('port 7000\n\n# comment\nbind "127.0.0.1\nhz 5\n')
    real, ours = both(["bad.conf"], tmp_path)
    assert ours.returncode == real.returncode == 1
    assert ours.stderr == real.stderr
    assert b"at line 4\n>>> 'bind \"127.0.0.1'" in ours.stderr
    # file, then stdin, then arguments: one text, one line count
    conf.write_text("hz 5\n")
    real, ours = both(["bad.conf", "--port", "abc", "-"], tmp_path, stdin="timeout 3\n")
    assert ours.stderr == real.stderr
    assert b"at line 4\n>>> 'port \"abc\"'" in ours.stderr
    real, ours = both(["-", "--port", "7"], tmp_path, stdin="hz x\n")
    assert ours.stderr == real.stderr
    assert _LOG_PREFIX.sub("", ours.stdout.decode()) == "Reading config from stdin\n"


@needs_redis
def test_missing_config_file_is_a_log_line(tmp_path):
    real, ours = both(["missing.conf"], tmp_path)
    assert ours.returncode == real.returncode == 1
    assert _LOG_PREFIX.sub("", ours.stdout.decode()) == _LOG_PREFIX.sub(
        "", real.stdout.decode())
    assert _LOG_PREFIX.match(ours.stdout.decode())


@needs_redis
def test_not_listening_anywhere(tmp_path):
    real, ours = both(["--port", "0", "--save", ""], tmp_path)
    assert ours.returncode == real.returncode == 1
    last = [line for line in _LOG_PREFIX.sub("", ours.stdout.decode()).split("\n") if line]
    assert last[-1] == "Configured to not listen anywhere, exiting."


@needs_redis
def test_failed_bind_at_start(tmp_path):
    port = free_port()
    real, ours = both(["--port", str(port), "--bind", "192.0.2.1", "--save", ""], tmp_path)
    assert ours.returncode == real.returncode == 1
    want = f"Failed listening on port {port} (TCP), aborting."
    for proc in (real, ours):
        assert want in _LOG_PREFIX.sub("", proc.stdout.decode()).split("\n")


def test_version_and_help(tmp_path):
    out = run([*PYKV, "--version"], tmp_path)
    assert out.returncode == 0 and out.stdout.startswith(b"Redis server v=7.0.15 ")
    helped = run([*PYKV, "-h"], tmp_path)
    assert helped.returncode == 1 and helped.stderr.startswith(b"Usage: pykv-server")


def _wait_for(path: str, text: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as fh:
                content = fh.read()
            if text in content:
                return content
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in {path}")


def test_config_file_listeners_logfile_and_loglevel(tmp_path):
    port = free_port()
    sock = tmp_path / "pykv.sock"
    conf = tmp_path / "pykv.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\nsave \"\"\nlogfile pykv.log\n"
                    f"dir {tmp_path}\nloglevel warning\n")
    proc = subprocess.Popen([*PYKV, str(conf), "--loglevel", "notice",
                             "--listener", f"unix,path={sock},perm=700"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        log_path = str(tmp_path / "pykv.log")
        content = _wait_for(log_path, "Ready to accept connections")
        lines = _LOG_PREFIX.sub("", content).split("\n")
        assert "Configuration loaded" in lines
        assert f"Running mode=standalone, port={port}." in lines
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o700
        unix = RawClient(unix=str(sock))
        assert unix.call("PING") == b"+PONG\r\n"
        tcp = RawClient(port=port)
        assert tcp.call("CONFIG", "GET", "loglevel") == (
            b"*2\r\n$8\r\nloglevel\r\n$6\r\nnotice\r\n")
        # loglevel changes take effect at once: warnings only, then notices again
        assert tcp.call("CONFIG", "SET", "loglevel", "warning") == b"+OK\r\n"
        assert tcp.call("CONFIG", "REWRITE") == b"+OK\r\n"
        _wait_for(log_path, "CONFIG REWRITE executed with success.")
        assert "loglevel notice" not in conf.read_text()  # rewritten in place
        assert "loglevel warning" in conf.read_text()
        assert "listener unix,path=" in conf.read_text()
        unix.close()
        tcp.close()
        assert proc.stdout.read(0) == b""
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.stdout.read() == b""  # everything went to the logfile


def test_daemonize_and_pidfile(tmp_path):
    port = free_port()
    pidfile = tmp_path / "pykv.pid"
    done = subprocess.run(
        [*PYKV, "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "yes",
         "--pidfile", str(pidfile), "--logfile", "pykv.log", "--dir", str(tmp_path),
         "--save", ""], cwd=tmp_path, capture_output=True, timeout=20)
    assert done.returncode == 0 and done.stdout == b""  # the parent returns at once
    _wait_for(str(tmp_path / "pykv.log"), "Ready to accept connections")
    pid = int(pidfile.read_text())
    try:
        assert RawClient(port=port).call("PING") == b"+PONG\r\n"
    finally:
        os.kill(pid, 15)
    deadline = time.monotonic() + 10
    while pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pidfile.exists()  # removed on exit


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_tcp_keepalive_is_set_on_accepted_sockets(tmp_path):
    from pykv.testing import Server

    with Server(config={"tcp-keepalive": 60}) as server:
        client = RawClient(port=server.port)
        assert client.call("PING") == b"+PONG\r\n"
        out = subprocess.run(["ss", "-tno", "state", "established",
                              f"( sport = :{server.port} )"], capture_output=True,
                             text=True, timeout=10).stdout
        assert "timer:(keepalive," in out
        client.close()
