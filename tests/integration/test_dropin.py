"""pykv-server as a drop-in redis-server: start-up and shutdown logs, daemon, supervision,
process title, OOM score, signals, crash report, start-up errors.

Every test spawns real processes; where redis-server 7.0 can run the same case, both run
and their log lines (without the ``pid:role date time`` prefix) are compared.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.resp import RawClient

from pykv.testing import free_port

REDIS_SERVER = shutil.which("redis-server")
PYKV = [sys.executable, "-m", "pykv"]
LINE = re.compile(r"^(\d+):([CM]) (\d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3}) ([.*#-]) (.*)$")
SIGNAL_LINE = re.compile(r"^\d+:signal-handler \(\d+\) (.*)$")

needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")


class Proc:
    """One server process writing its log to ``<dir>/out.log``."""

    def __init__(self, cmd: list[str], workdir: Path, env: dict | None = None,
                 name: str = "out.log") -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / name
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         env={**os.environ, **(env or {})})

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, text: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            content = self.log()
            if text in content:
                return content
            if self.proc.poll() is not None:
                content = self.log()
                if text in content:
                    return content
                raise AssertionError(f"exited {self.proc.returncode} before {text!r}:\n{content}")
            time.sleep(0.03)
        raise AssertionError(f"{text!r} not logged within {timeout}s:\n{self.log()}")

    def wait(self, timeout: float = 20) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"did not exit within {timeout}s:\n{self.log()}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def texts(log: str) -> list[str]:
    """The log's messages: prefixes dropped, logo and blank lines kept out."""
    out = []
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            out.append(m.group(5))
            continue
        m = SIGNAL_LINE.match(line)
        if m:
            out.append("signal-handler: " + m.group(1))
    return out


def server_args(port: int, workdir: Path, *extra: str) -> list[str]:
    return ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir),
            *extra]


def pair(tmp_path: Path, *extra: str, env: dict | None = None) -> tuple[Proc, Proc]:
    """redis-server and pykv with the same arguments, each in its own directory."""
    real = Proc([REDIS_SERVER, *server_args(free_port(), tmp_path / "redis", *extra)],
                tmp_path / "redis", env)
    ours = Proc([*PYKV, *server_args(free_port(), tmp_path / "pykv", *extra)],
                tmp_path / "pykv", env)
    return real, ours


def port_of(proc: Proc) -> int:
    args = proc.proc.args
    return int(args[args.index("--port") + 1])


def shutdown(port: int, *flags: bytes) -> None:
    """SHUTDOWN: no reply, the connection just closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"*%d\r\n$8\r\nSHUTDOWN\r\n" % (1 + len(flags))
                     + b"".join(b"$%d\r\n%s\r\n" % (len(f), f) for f in flags))
        assert sock.recv(100) == b""


def normalised(proc: Proc, lines: list[str] | None = None) -> list[str]:
    """The log's messages with this process's pid, port and directory as placeholders."""
    out = []
    for line in texts(proc.log()) if lines is None else lines:
        line = line.replace(str(proc.dir), "DIR").replace(f"pid={proc.proc.pid}", "pid=PID")
        out.append(line.replace(str(port_of(proc)), "PORT"))
    return out


# -- start-up ---------------------------------------------------------------------------
@needs_redis
def test_startup_and_shutdown_lines_are_redis_lines(tmp_path):
    real, ours = pair(tmp_path)
    try:
        logs = []
        for proc in (real, ours):
            proc.wait_log("Ready to accept connections")
            shutdown(port_of(proc))
            assert proc.wait() == 0
            logs.append(normalised(proc))
    finally:
        real.stop()
        ours.stop()
    assert logs[1] == logs[0]
    assert logs[0][0] == "oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo"
    assert logs[0][-1] == "Redis is now ready to exit, bye bye..."
    assert logs[1].count("Redis is now ready to exit, bye bye...") == 1
    # every line in Redis's format, roles C then M, as Redis
    raw = [line for line in ours.log().splitlines() if line]
    matches = [LINE.match(line) for line in raw]
    assert all(matches), raw
    assert [m.group(2) for m in matches[:3]] == ["C", "C", "C"]
    assert {m.group(2) for m in matches[3:]} == {"M"}
    assert {int(m.group(1)) for m in matches} == {ours.proc.pid}
    version = next(m.group(5) for m in matches if m.group(5).startswith("Redis version="))
    assert version == (f"Redis version=7.0.15, bits=64, commit=00000000, modified=0, "
                       f"pid={ours.proc.pid}, just started")


@needs_redis
def test_always_show_logo_prints_redis_logo(tmp_path):
    real, ours = pair(tmp_path, "--always-show-logo", "yes")
    blocks = []
    try:
        for proc in (real, ours):
            log = proc.wait_log("Ready to accept connections")
            assert "Running mode=" not in log
            start = log.index("                _._")
            block = log[start:log.index("\n\n", start)]
            blocks.append(block.replace(str(port_of(proc)), "PORT")
                          .replace(f"PID: {proc.proc.pid}", "PID: N"))
    finally:
        real.stop()
        ours.stop()
    assert blocks[1] == blocks[0]
    assert "Port: PORT" in blocks[1] and "PID: N" in blocks[1]


def test_no_config_file_warning_and_pykv_lines_at_verbose(tmp_path):
    bare = Proc([*PYKV], tmp_path / "bare")
    try:
        log = bare.wait_log("Warning: no config file specified")
        assert ("Warning: no config file specified, using the default config. In order to "
                "specify a config file use pykv-server /path/to/redis.conf") in texts(log)
    finally:
        bare.stop()
    port = free_port()
    verbose = Proc([*PYKV, *server_args(port, tmp_path / "v", "--loglevel", "verbose")],
                   tmp_path / "v")
    notice = Proc([*PYKV, *server_args(free_port(), tmp_path / "n")], tmp_path / "n")
    try:
        lines = texts(verbose.wait_log("Ready to accept connections"))
        own = [line for line in lines if line.startswith("pykv ")]
        assert len(own) == 1 and "event loop:" in own[0]
        assert f"- {own[0]}" in verbose.log()  # at verbose level
        assert "Configuration loaded" in lines and lines.index(own[0]) > lines.index(
            "Configuration loaded")
        assert not any(line.startswith("pykv ") for line in
                       texts(notice.wait_log("Ready to accept connections")))
    finally:
        verbose.stop()
        notice.stop()


@needs_redis
def test_version_help_and_test_memory(tmp_path):
    def run(cmd):
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=30)

    ours, real = run([*PYKV, "--version"]), run([REDIS_SERVER, "--version"])
    assert ours.returncode == real.returncode == 0
    assert re.fullmatch(rb"Redis server v=7\.0\.15 sha=00000000:0 malloc=\S+ bits=64 "
                        rb"build=[0-9a-f]+ pykv=\S+\n", ours.stdout), ours.stdout
    assert run([*PYKV, "-v"]).stdout == ours.stdout
    ours, real = run([*PYKV, "--help"]), run([REDIS_SERVER, "--help"])
    assert ours.returncode == real.returncode == 1
    ours_lines = ours.stderr.decode().splitlines()
    real_lines = real.stderr.decode().splitlines()
    assert ours_lines[0] == real_lines[0].replace("./redis-server", "pykv-server")
    for usage in ("-v or --version", "-h or --help", "--test-memory <megabytes>",
                  "- (read config from stdin)"):
        assert any(usage in line for line in ours_lines)
    assert "Examples:" in ours_lines
    ours, real = run([*PYKV, "--test-memory"]), run([REDIS_SERVER, "--test-memory"])
    assert ours.returncode == real.returncode == 1
    assert ours.stderr == real.stderr
    sized = run([*PYKV, "--test-memory", "64"])
    assert sized.returncode == 1 and b"memtester" in sized.stderr


# -- start-up errors --------------------------------------------------------------------
@needs_redis
def test_port_in_use_is_logged_in_redis_words(tmp_path):
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        results = []
        for cmd in ([REDIS_SERVER], PYKV):
            proc = Proc([*cmd, *server_args(port, tmp_path / cmd[0].split("/")[-1])],
                        tmp_path / cmd[0].split("/")[-1])
            assert proc.wait() == 1
            results.append(normalised(proc))
    finally:
        holder.close()
    want = ["Warning: Could not create server TCP listening socket 127.0.0.1:PORT: bind: "
            "Address already in use", "Failed listening on port PORT (TCP), aborting."]
    assert results[0][-2:] == results[1][-2:] == want
    assert results[1] == results[0]


@needs_redis
def test_protocol_errors_are_logged_at_verbose(tmp_path):
    real, ours = pair(tmp_path, "--loglevel", "verbose")
    quiet = Proc([*PYKV, *server_args(free_port(), tmp_path / "quiet")], tmp_path / "quiet")
    try:
        found = []
        for proc in (real, ours, quiet):
            proc.wait_log("Ready to accept connections")
            for request in (b"*1\r\n$x\r\n", b"*abc\r\n", b"*1\r\n:1\r\n"):
                with socket.create_connection(("127.0.0.1", port_of(proc)), timeout=5) as s:
                    s.sendall(request)
                    assert s.recv(200).startswith(b"-ERR Protocol error")
            RawClient(port=port_of(proc)).call("PING")  # the errors are logged by now
            found.append([re.sub(r" from client: id=.*", "", line) for line in
                          proc.log().splitlines() if "Protocol error" in line])
    finally:
        for proc in (real, ours, quiet):
            proc.stop()
    assert [line.split(" - ", 1)[1] for line in found[1]] == [
        line.split(" - ", 1)[1] for line in found[0]] == [
        "Protocol error (invalid bulk length)", "Protocol error (invalid mbulk count)",
        "Protocol error (expected $ but got something else)"]
    assert found[2] == []  # not at notice


# -- shutdown ---------------------------------------------------------------------------
def _after_ready(proc: Proc) -> list[str]:
    lines = normalised(proc)
    return lines[lines.index("Ready to accept connections") + 1:]


SHUTDOWN_CASES = [
    # (extra arguments, signal, key written first, dump.rdb expected)
    (["--save", "3600 1"], signal.SIGTERM, True),
    (["--save", "3600 1", "--shutdown-on-sigterm", "nosave"], signal.SIGTERM, False),
    (["--shutdown-on-sigint", "save", "now"], signal.SIGINT, True),
    (["--save", "3600 1", "--shutdown-on-sigint", "nosave", "force"], signal.SIGINT, False),
]


@needs_redis
@pytest.mark.parametrize("extra,signum,saved", SHUTDOWN_CASES,
                         ids=["sigterm-save", "sigterm-nosave", "sigint-save", "sigint-nosave"])
def test_signal_shutdown_flags_and_lines(tmp_path, extra, signum, saved):
    logs = []
    for name, cmd in (("redis", [REDIS_SERVER]), ("pykv", PYKV)):
        workdir = tmp_path / name
        sock = workdir / "s.sock"
        proc = Proc([*cmd, *server_args(free_port(), workdir, *extra, "--unixsocket", str(sock),
                                        "--pidfile", str(workdir / "s.pid"))], workdir)
        try:
            proc.wait_log("Ready to accept connections")
            assert (workdir / "s.pid").read_text() == f"{proc.proc.pid}\n"
            assert RawClient(port=port_of(proc)).call("SET", "k", "v") == b"+OK\r\n"
            proc.proc.send_signal(signum)
            assert proc.wait() == 0
        finally:
            proc.stop()
        assert (workdir / "dump.rdb").exists() == saved, name
        assert not sock.exists() and not (workdir / "s.pid").exists()
        logs.append(_after_ready(proc))
    assert logs[1] == logs[0]
    assert logs[0][-1] == "Redis is now ready to exit, bye bye..."


@needs_redis
def test_failed_save_keeps_running_until_forced(tmp_path):
    logs = []
    for name, cmd in (("redis", [REDIS_SERVER]), ("pykv", PYKV)):
        proc = Proc([*cmd, *server_args(free_port(), tmp_path / name, "--save", "3600 1")],
                    tmp_path / name)
        try:
            proc.wait_log("Ready to accept connections")
            # the final save cannot open its temp file: a directory is in the way
            (tmp_path / name / f"temp-{proc.proc.pid}.rdb").mkdir()
            client = RawClient(port=port_of(proc))
            client.call("SET", "k", "v")
            assert client.call("SHUTDOWN") == b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
            proc.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            while proc.log().count("Errors trying to shut down the server") < 2:
                assert time.monotonic() < deadline, proc.log()
                time.sleep(0.03)
            assert client.call("PING") == b"+PONG\r\n"  # still running
            shutdown(port_of(proc), b"FORCE")
            assert proc.wait() == 0
        finally:
            proc.stop()
        logs.append([line.replace(f"temp-{proc.proc.pid}", "temp-PID")
                     for line in _after_ready(proc)])
    assert logs[1] == logs[0]
    assert logs[0].count("Error trying to save the DB, can't exit.") == 2
    assert logs[0][-2:] == ["Error trying to save the DB. Exit anyway.",
                            "Redis is now ready to exit, bye bye..."]
