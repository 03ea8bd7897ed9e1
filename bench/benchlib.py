"""What the stand-alone bench scripts share: starting pykv or redis-server on a free port,
pinning to a CPU, raw RESP encoding and /proc readings. Standard library only."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
TWO_CPUS = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
SERVER_CPU, CLIENT_CPU = 1, 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pinned(cpu: int, argv: list[str]) -> list[str]:
    """Run ``argv`` on one CPU when the machine has two (server and client apart)."""
    return ["taskset", "-c", str(cpu), *argv] if TWO_CPUS else argv


def encode_command(*args: bytes | str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else arg
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` (schedstat's first field is run time in ns)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that just ended
    return total / 1e9


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class BenchServer:
    """pykv (``kind="pykv"``) or redis-server on a free 127.0.0.1 port, persistence off,
    in ``workdir`` (a fresh temporary one by default), pinned to the server CPU."""

    def __init__(self, kind: str, extra: list[str] | None = None, workdir: str | None = None,
                 logfile: bool = False, start_timeout: float = 300,
                 while_starting: Callable[[BenchServer], None] | None = None) -> None:
        self.kind = kind
        self.port = free_port()
        self.own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"bench-{kind}-")
        self.log = os.path.join(self.workdir, f"{kind}.log") if logfile else None
        common = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                  "--dir", self.workdir]
        if self.log:
            common += ["--logfile", self.log]
        if kind == "redis":
            argv = ["redis-server", *common]
        else:
            python = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable
            argv = [python, "-m", "pykv", *common]
            if not self.log:
                argv += ["--loglevel", "warning"]
        self.proc = subprocess.Popen(pinned(SERVER_CPU, argv + list(extra or [])),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd=self.workdir)
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if while_starting is not None:  # e.g. a reading taken while the data loads
                while_starting(self)
            try:
                if self.call("PING", timeout=1).startswith(b"+PONG"):
                    return
            except OSError:
                pass
            time.sleep(0.05)  # not up yet, or -LOADING: don't load the server with pings
        self.stop()
        raise RuntimeError(f"{kind} did not start")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def call(self, *args: str, timeout: float = 600) -> bytes:
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(encode_command(*args))
            return s.recv(1 << 16)

    def stop(self, remove_dir: bool = True) -> None:
        self.proc.terminate()
        self.proc.wait(60)
        if remove_dir and self.own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)
