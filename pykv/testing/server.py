"""The embedded testing server: a real pykv in a subprocess, for a user's own tests.

``with Server() as s:`` starts ``python -m pykv`` on a free 127.0.0.1 port (and optionally
a unix socket), waits until it answers PING, and stops it on exit. A subprocess (rather than
a thread) keeps the server's event loop, signal handling and fork-based persistence apart
from the test process, and costs ~0.3 s to start.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class Server:
    """A pykv server process for tests.

    ``config`` entries are passed as ``--name value`` arguments (lists give several
    values). ``unix_socket=True`` also listens on a socket in a temporary directory.
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1",
                 unix_socket: bool = False, config: dict[str, Any] | None = None,
                 extra_args: list[str] | None = None, start_timeout: float = 15.0,
                 python: str | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.config = dict(config or {})
        self.extra_args = list(extra_args or [])
        self.start_timeout = start_timeout
        self.python = python or sys.executable
        self._tmpdir: tempfile.TemporaryDirectory | None = None
        self.unix_path: str | None = None
        self._want_unix = unix_socket
        self.process: subprocess.Popen | None = None
        self.log_path: str | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def command_line(self) -> list[str]:
        args = [self.python, "-m", "pykv", "--port", str(self.port), "--bind", self.host]
        if self.unix_path:
            args += ["--unixsocket", self.unix_path]
        if "dir" not in self.config:
            args += ["--dir", self.workdir]
        for name, value in self.config.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            args += ["--" + name] + [str(v) for v in values]
        return args + self.extra_args

    @property
    def workdir(self) -> str:
        if self._tmpdir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="pykv-test-")
        return self._tmpdir.name

    def start(self) -> Server:
        if self._want_unix:
            self.unix_path = os.path.join(self.workdir, "pykv.sock")
        self.log_path = os.path.join(self.workdir, "pykv.log")
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            self.command_line(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=self.workdir,
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pykv exited with {self.process.returncode}:\n{self.log()}")
            if self.ping():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pykv did not start within {self.start_timeout}s:\n{self.log()}")

    def ping(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1) as sock:
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))
        except OSError:
            return False

    def stop(self, timeout: float = 10.0) -> int | None:
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.process = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None
        return proc.returncode

    def log(self) -> str:
        try:
            with open(self.log_path or "", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def client(self, **kwargs: Any):
        """A ``redis.Redis`` connected to this server (needs the ``redis`` package)."""
        import redis

        return redis.Redis(host=self.host, port=self.port, **kwargs)
