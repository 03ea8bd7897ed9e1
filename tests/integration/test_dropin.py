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
import sysconfig
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
        with open(self.log_path, encoding="utf-8", errors="replace", newline="") as fh:
            return fh.read()  # \r\n kept (INFO in the crash report)

    def wait_log(self, text: str, timeout: float = 20) -> str:
        return self.wait_in(self.log_path, text, timeout, self.proc)

    @staticmethod
    def wait_in(path: Path, text: str, timeout: float,
                proc: subprocess.Popen | None) -> str:
        """Poll ``path`` for ``text``; fail early if ``proc`` exits without logging it."""
        deadline = time.monotonic() + timeout
        while True:
            exited = proc is not None and proc.poll() is not None
            try:
                with open(path, encoding="utf-8", errors="replace", newline="") as fh:
                    content = fh.read()
            except FileNotFoundError:
                content = ""
            if text in content:
                return content
            if exited:
                raise AssertionError(f"exited {proc.returncode} before {text!r}:\n{content}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not in {path} within {timeout}s:\n{content}")
            time.sleep(0.03)

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
@pytest.mark.parametrize("nofile", [200, 10032 + 100])
def test_open_files_limit_is_raised_as_redis_raises_it(tmp_path, nofile):
    """A low ``ulimit -n``: raised to maxclients + 32 (root may) with Redis's line."""
    import resource

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    logs = []
    for name, cmd in (("redis", [REDIS_SERVER]), ("pykv", PYKV)):
        workdir = tmp_path / name
        workdir.mkdir()
        with open(workdir / "out.log", "wb") as out:
            proc = subprocess.Popen([*cmd, *server_args(free_port(), workdir)], cwd=workdir,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    preexec_fn=low_limit)
        try:
            Proc.wait_in(workdir / "out.log", "Ready to accept connections", 20, proc)
            limit = Path(f"/proc/{proc.pid}/limits").read_text()
        finally:
            proc.kill()
            proc.wait()
        open_files = next(line for line in limit.splitlines() if "open files" in line)
        logs.append(([m for m in texts((workdir / "out.log").read_text())
                      if "open files" in m or "file descriptors" in m],
                     open_files.split()[3]))
    assert logs[1] == logs[0]  # raised, or (without CAP_SYS_RESOURCE) maxclients reduced
    assert bool(logs[1][0]) == (nofile < 10032)


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
            deadline = time.monotonic() + 30
            while proc.log().count("Errors trying to shut down the server") < 2:
                assert time.monotonic() < deadline, proc.log()
                time.sleep(0.03)
            # still running (ECHO: PING may get -MISCONF after a failed save)
            assert proc.proc.poll() is None
            assert client.call("ECHO", "alive") == b"$5\r\nalive\r\n"
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


# -- daemon, supervision, logfile, syslog -------------------------------------------------
def _wait_file(path: Path, text: str, timeout: float = 20) -> str:
    """Wait until ``path`` (a logfile, maybe not created yet) contains ``text``."""
    return Proc.wait_in(path, text, timeout, None)


def _gone(pid: int, timeout: float = 20) -> None:
    """Wait for a process that is not our child (a daemon) to disappear."""
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/{pid}"):
        assert time.monotonic() < deadline, f"process {pid} still running"
        time.sleep(0.03)


def test_daemonize_double_forks_writes_pidfile_and_logs_to_logfile(tmp_path):
    port = free_port()
    done = subprocess.run([*PYKV, *server_args(port, tmp_path, "--daemonize", "yes",
                                                "--pidfile", str(tmp_path / "d.pid"),
                                                "--logfile", "d.log")],
                          cwd=tmp_path, capture_output=True, timeout=30)
    # the launcher returns at once and nothing kept its pipes open
    assert done.returncode == 0 and done.stdout == done.stderr == b""
    log = _wait_file(tmp_path / "d.log", "Ready to accept connections")
    pid = int((tmp_path / "d.pid").read_text())
    try:
        assert f"pid={pid}, just started" in log  # the daemon logs as itself
        assert os.getsid(pid) != pid  # second fork: not a session leader, no terminal
        assert os.getsid(pid) != os.getsid(0)  # but in a session of its own
        assert all(os.readlink(f"/proc/{pid}/fd/{fd}") == os.devnull for fd in (0, 1, 2))
        assert RawClient(port=port).call("PING") == b"+PONG\r\n"
    finally:
        os.kill(pid, signal.SIGTERM)
    _gone(pid)
    lines = texts((tmp_path / "d.log").read_text())
    assert lines[-3:] == ["User requested shutdown...", "Removing the pid file.",
                          "Redis is now ready to exit, bye bye..."]
    assert not (tmp_path / "d.pid").exists()


def _notify_socket(tmp_path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.settimeout(20)
    return sock


def _messages(sock: socket.socket, until: bytes) -> list[bytes]:
    got = []
    while until not in got:
        got.append(sock.recv(4096))
    return got


@pytest.mark.parametrize("mode", ["systemd", "auto"])
def test_supervised_systemd_notifies_readiness(tmp_path, mode):
    notify = _notify_socket(tmp_path)
    env = {"NOTIFY_SOCKET": str(tmp_path / "notify.sock")}
    env.pop("UPSTART_JOB", None)
    proc = Proc([*PYKV, *server_args(free_port(), tmp_path, "--supervised", mode,
                                     "--daemonize", "yes", "--save", "3600 1",
                                     "--loglevel", "verbose")], tmp_path, env)
    try:
        assert _messages(notify, b"READY=1\n") == [
            b"STATUS=Redis is loading...\n", b"STATUS=Ready to accept connections\n",
            b"READY=1\n"]
        lines = texts(proc.wait_log("Ready to accept connections"))
        # supervised: no daemonizing (the process is still the one started)
        assert proc.proc.poll() is None
        assert ("Supervised by systemd. Please make sure you set appropriate values for "
                "TimeoutStartSec and TimeoutStopSec in your service unit.") in lines
        assert ("Systemd supervision detected." in lines) == (mode == "auto")
        proc.proc.send_signal(signal.SIGTERM)
        assert _messages(notify, b"STATUS=Saving the final RDB snapshot\n")
        assert proc.wait() == 0
    finally:
        proc.stop()
        notify.close()


def test_supervised_upstart_stops_itself_when_ready_to_be_watched(tmp_path):
    proc = Proc([*PYKV, *server_args(free_port(), tmp_path, "--supervised", "upstart")],
                tmp_path, {"UPSTART_JOB": "pykv"})
    try:
        proc.wait_log("supervised by upstart, will stop to signal readiness.")
        deadline = time.monotonic() + 20
        while Path(f"/proc/{proc.proc.pid}/stat").read_text().split(") ")[1][0] != "T":
            assert time.monotonic() < deadline, "never stopped"
            time.sleep(0.03)
        os.kill(proc.proc.pid, signal.SIGCONT)
        proc.wait_log("Ready to accept connections")
    finally:
        proc.stop()
    missing = Proc([*PYKV, *server_args(free_port(), tmp_path / "m", "--supervised",
                                        "upstart")], tmp_path / "m")
    try:
        lines = texts(missing.wait_log("Ready to accept connections"))
        assert "upstart supervision requested, but UPSTART_JOB not found!" in lines
    finally:
        missing.stop()


def test_logfile_is_reopened_per_line_and_sighup_is_ignored(tmp_path):
    port = free_port()
    proc = Proc([*PYKV, *server_args(port, tmp_path, "--logfile", "srv.log",
                                     "--enable-debug-command", "yes")], tmp_path)
    try:
        _wait_file(tmp_path / "srv.log", "Ready to accept connections")
        (tmp_path / "srv.log").rename(tmp_path / "srv.log.1")  # logrotate
        proc.proc.send_signal(signal.SIGHUP)
        client = RawClient(port=port)
        assert client.call("DEBUG", "LOG", "after rotation") == b"+OK\r\n"
        assert texts(_wait_file(tmp_path / "srv.log", "after rotation")) == [
            "DEBUG LOG: after rotation"]  # a new file, created by the next line
        assert proc.proc.poll() is None and client.call("PING") == b"+PONG\r\n"
    finally:
        proc.stop()
    assert proc.log() == ""  # nothing on stdout


_SYSLOG_SCRIPT = r"""
import os, socket, subprocess, sys
for name, major, minor in (("null", 1, 3), ("zero", 1, 5), ("urandom", 1, 9)):
    os.mknod("/dev/" + name, 0o20666, os.makedev(major, minor))
os.symlink("/proc/self/fd", "/dev/fd")
log = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
log.bind("/dev/log")
log.settimeout(20)
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
try:
    while True:
        data = log.recv(4096).decode()
        print(data, flush=True)
        if "Ready to accept connections" in data:
            break
finally:
    proc.kill()
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_syslog_gets_every_line_with_ident_and_facility(tmp_path):
    """In a private mount namespace, /dev/log is this test's socket."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespaces here")
    script = tmp_path / "syslog_server.py"
    script.write_text(_SYSLOG_SCRIPT)
    cmd = [*PYKV, *server_args(free_port(), tmp_path, "--syslog-enabled", "yes",
                               "--syslog-ident", "pykvtest", "--syslog-facility", "local3")]
    done = subprocess.run(["unshare", "-m", "sh", "-c",
                           'mount -t tmpfs none /dev && exec "$@"', "sh",
                           sys.executable, str(script), *cmd],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    messages = [m for m in done.stdout.splitlines() if m]
    assert messages, done.stderr
    # <facility local3 (19) * 8 + severity>: warning 4, notice 5
    assert re.match(r"<156>.*pykvtest\[\d+\]: oO0OoO0OoO0Oo Redis is starting", messages[0])
    assert re.match(r"<157>.*pykvtest\[\d+\]: Ready to accept connections", messages[-1])


# -- process title, OOM score -----------------------------------------------------------
def test_proc_title_falls_back_to_prctl_without_setproctitle(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "setproctitle.py").write_text("raise ImportError('blocked for the test')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(blocker), *sys.path])}
    port = free_port()
    proc = Proc([*PYKV, *server_args(port, tmp_path / "a", "--proc-title-template",
                                     "kv {port} {server-mode}")], tmp_path / "a", env)
    untitled = Proc([*PYKV, *server_args(free_port(), tmp_path / "b", "--set-proc-title",
                                         "no")], tmp_path / "b", env)
    try:
        proc.wait_log("Ready to accept connections")
        comm = Path(f"/proc/{proc.proc.pid}/comm")
        assert comm.read_text() == f"kv {port}\n"
        client = RawClient(port=port)
        assert client.call("CONFIG", "SET", "proc-title-template",
                           "{title} {listen-addr}") == b"+OK\r\n"
        assert comm.read_text() == "pykv-server 127.0.0.1"[:15] + "\n"
        untitled.wait_log("Ready to accept connections")
        assert Path(f"/proc/{untitled.proc.pid}/comm").read_text().startswith("python")
    finally:
        proc.stop()
        untitled.stop()


def test_oom_score_adj_is_written_as_redis_writes_it(tmp_path):
    base = int(Path("/proc/self/oom_score_adj").read_text())
    port = free_port()
    proc = Proc([*PYKV, *server_args(port, tmp_path, "--oom-score-adj", "relative",
                                     "--oom-score-adj-values", "100", "200", "300")], tmp_path)
    try:
        proc.wait_log("Ready to accept connections")
        score = Path(f"/proc/{proc.proc.pid}/oom_score_adj")
        assert int(score.read_text()) == min(1000, base + 100)
        client = RawClient(port=port)
        assert client.call("CONFIG", "SET", "oom-score-adj", "absolute") == b"+OK\r\n"
        assert int(score.read_text()) == 100
        assert client.call("CONFIG", "SET", "oom-score-adj-values", "250 300 400") == b"+OK\r\n"
        assert int(score.read_text()) == 250
        # a BGSAVE child takes the background-child value
        pairs = [arg for i in range(200000) for arg in (b"key:%d" % i, b"value")]
        assert client.call("MSET", *pairs) == b"+OK\r\n"
        assert client.call("BGSAVE").startswith(b"+Background saving started")
        children = Path(f"/proc/{proc.proc.pid}/task/{proc.proc.pid}/children")
        deadline = time.monotonic() + 20
        while not children.read_text().split():
            assert time.monotonic() < deadline, "never saw the BGSAVE child"
            time.sleep(0.001)
        child_score = Path(f"/proc/{children.read_text().split()[0]}/oom_score_adj")
        seen = set()
        try:  # the child sets its score right after the fork: read until it has
            while 400 not in seen and time.monotonic() < deadline:
                seen.add(int(child_score.read_text()))
        except (FileNotFoundError, ProcessLookupError):
            pass
        assert 400 in seen, seen
        assert client.call("CONFIG", "SET", "oom-score-adj", "no") == b"+OK\r\n"
        assert int(score.read_text()) == base  # back to where it started
    finally:
        proc.stop()


# -- crash report ---------------------------------------------------------------------------
def _crash_report(log: str) -> str:
    start = log.index("=== REDIS BUG REPORT START: Cut & paste starting from here ===")
    end = log.index("=== REDIS BUG REPORT END. Make sure to include from START to END. ===")
    return log[start:end]


def test_debug_segfault_logs_redis_crash_report(tmp_path):
    port = free_port()
    proc = Proc([*PYKV, *server_args(port, tmp_path, "--enable-debug-command", "yes")],
                tmp_path)
    try:
        proc.wait_log("Ready to accept connections")
        client = RawClient(port=port)
        client.call("SET", "k", "v")
        client.send_raw(b"*2\r\n$5\r\nDEBUG\r\n$8\r\nSEGFAULT\r\n")
        assert proc.wait() == -signal.SIGSEGV
    finally:
        proc.stop()
    report = _crash_report(proc.log())
    lines = texts(report)
    assert lines[0] == "Redis 7.0.15 crashed by signal: 11, si_code: 2"  # SEGV_ACCERR
    assert lines[1].startswith("Accessing address: 0x")
    assert "------ STACK TRACE ------" in report
    assert re.search(r'File ".*crash\.py", line \d+ in segfault', report)  # Python stack
    assert "Backtrace:\n" in report and "python" in report.split("Backtrace:\n")[1]
    info = report.split("------ INFO OUTPUT ------\n")[1]
    assert info.startswith("# Server\r\nredis_version:7.0.15\r\n")
    assert "db0:keys=1,expires=0" in info
    assert "------ CLIENT LIST OUTPUT ------" in report
    assert "argv[0]: '\"DEBUG\"'\nargv[1]: '\"SEGFAULT\"'" in report


@pytest.mark.parametrize("signum", [signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE,
                                    signal.SIGILL, signal.SIGABRT])
def test_fatal_signals_log_the_report_and_keep_their_exit_status(tmp_path, signum):
    proc = Proc([*PYKV, *server_args(free_port(), tmp_path, "--logfile", "crash.log")],
                tmp_path)
    try:
        _wait_file(tmp_path / "crash.log", "Ready to accept connections")
        os.kill(proc.proc.pid, signum)
        assert proc.wait() == -signum
    finally:
        proc.stop()
    report = _crash_report((tmp_path / "crash.log").read_text())
    assert texts(report)[0] == f"Redis 7.0.15 crashed by signal: {int(signum)}, si_code: 0"
    assert "------ INFO OUTPUT ------" in report


def test_crash_log_disabled_leaves_the_default_action(tmp_path):
    port = free_port()
    proc = Proc([*PYKV, *server_args(port, tmp_path, "--crash-log-enabled", "no")], tmp_path)
    try:
        proc.wait_log("Ready to accept connections")
        client = RawClient(port=port)
        assert client.call("CONFIG", "SET", "crash-log-enabled", "yes") == b"+OK\r\n"
        assert client.call("CONFIG", "SET", "crash-log-enabled", "no") == b"+OK\r\n"
        os.kill(proc.proc.pid, signal.SIGSEGV)
        assert proc.wait() == -signal.SIGSEGV
    finally:
        proc.stop()
    assert "REDIS BUG REPORT" not in proc.log()


# -- packaging ------------------------------------------------------------------------------
# measured: 3.6 MB wheel, 10.8 MB installed (before: 22.5 MB and 84 MB, with the generated
# C sources and the extensions' debug information)
WHEEL_LIMIT, INSTALLED_LIMIT = 6 << 20, 20 << 20


def _reuse_compiled(root: Path, src: Path, modules: list[str]) -> None:
    """Seed the copy with this tree's Cython output and compiled extensions (as an
    incremental build would have them), so pip packages instead of compiling again."""
    lib = src / "build" / f"lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for module in modules:
        for generated, target in ((root / f"{module}.c", src / f"{module}.c"),
                                  (root / f"{module}{suffix}", lib / f"{module}{suffix}")):
            if generated.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(generated, target)


@pytest.mark.slow  # a packaging check; with a stale or missing build it compiles for minutes
@pytest.mark.timeout(3600)
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to list the sources")
def test_wheel_ships_extensions_not_c_sources_and_sdist_keeps_pyx(tmp_path):
    import tarfile
    import zipfile

    root = Path(__file__).resolve().parents[2]
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split()
    src = tmp_path / "src"
    for name in files:
        if (root / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, src / name)
    modules = re.findall(r'^    "(pykv/[\w/]+)\.pyx?",', (root / "setup.py").read_text(), re.M)
    assert len(modules) > 20
    _reuse_compiled(root, src, modules)
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(out)], cwd=src, check=True,
                   capture_output=True, timeout=3400)
    wheel = next(out.glob("pykv-*.whl"))
    assert wheel.stat().st_size < WHEEL_LIMIT, wheel.stat().st_size
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert not [n for n in names if n.endswith((".c", ".pyx", ".pxd"))]
    for module in modules:  # every extension is there, compiled
        assert any(n.startswith(module + ".") and n.endswith(".so") for n in names), module
    assert "pykv/server/lifecycle/logo.txt" in names
    assert "pykv/server/command_table.json" in names
    assert b"Provides-Extra: testing" in metadata
    assert re.search(rb"Requires-Dist: redis>=5; extra == \"testing\"", metadata)
    assert re.search(rb"Requires-Dist: pytest>=7; extra == \"testing\"", metadata)
    assert re.search(rb"Requires-Dist: setproctitle>=1.3\r?\n", metadata)
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=600)
    installed = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    assert installed < INSTALLED_LIMIT, installed
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(out)], cwd=src,
                   check=True, capture_output=True, timeout=600)
    with tarfile.open(next(out.glob("pykv-*.tar.gz"))) as tf:
        members = tf.getnames()
    assert any(m.endswith("pykv/protocol/_parser.pyx") for m in members)
    assert any(m.endswith("pykv/protocol/_parser.pxd") for m in members)
    assert not [m for m in members if m.endswith((".c", ".so"))]
