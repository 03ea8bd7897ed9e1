"""The warning logged when a client passes client-query-buffer-limit, against Redis 7.0's.

Redis logs the client's CLIENT LIST line and the first 64 bytes of its query buffer
(quoted like sdscatrepr) before closing it. Both servers get the same oversized request;
their log lines must have the same text with the per-process values (ids, ports, ages,
memory figures) masked.
"""
from __future__ import annotations

import re
import socket
import tempfile
import time
from pathlib import Path

import pytest
from support.servers import REDIS_SERVER, RealRedis

from pykv.testing import Server

PREFIX = "Closing client that reached max query buffer length: "
# values that differ between two processes; the field names and the rest stay
_VOLATILE = re.compile(r"\b(id|addr|laddr|fd|age|idle|qbuf|qbuf-free|argv-mem|multi-mem|"
                       r"rbs|rbp|obl|oll|omem|tot-mem)=\S*")


def _overflow(port: int) -> None:
    s = socket.create_connection(("127.0.0.1", port))
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n" + b"\x01ab\"" * 400000)
        s.settimeout(10)
        while s.recv(65536):
            pass
    except OSError:
        pass  # reset by the server: what we expect
    finally:
        s.close()


def _log_line(path: Path, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        for line in text.splitlines():
            if PREFIX in line:
                return line[line.index(PREFIX):]
        assert time.monotonic() < deadline, f"no query buffer warning in {path}"
        time.sleep(0.05)


def test_query_buffer_limit_warning_matches_redis():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="qbuf-log-"))
    real_log, our_log = tmp / "redis.log", tmp / "pykv.log"
    real = RealRedis(extra=["--client-query-buffer-limit", "1mb", "--logfile", str(real_log)])
    try:
        with Server(config={"client-query-buffer-limit": "1mb", "logfile": str(our_log)}) \
                as ours:
            _overflow(real.port)
            _overflow(ours.port)
            expected = _VOLATILE.sub(r"\1=*", _log_line(real_log))
            got = _VOLATILE.sub(r"\1=*", _log_line(our_log))
            assert got == expected
    finally:
        real.stop()
