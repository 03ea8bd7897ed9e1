"""Protocol-level behaviour compared with real redis-server: framing, inline, errors."""
from __future__ import annotations

import pytest


def test_ping_echo(diff):
    diff("PING")
    diff("PING", "hello")
    diff("ECHO", "x" * 1000)
    diff("PING", "a", "b")


def test_unknown_command_and_arity(diff):
    diff("NOSUCHCOMMAND")
    diff("NOSUCHCOMMAND", "a", "b" * 200, "c")
    diff("nosuch", "x" * 100, "y" * 100)
    diff("GET")
    diff("GET", "a", "b")
    diff("ECHO")


def test_inline_commands(diff):
    diff.raw(b"PING\r\n")
    diff.raw(b"ECHO \"a b\\x41\\n\"\r\n")
    diff.raw(b"ECHO 'it\\'s'\n")
    diff.raw(b"\r\n\r\nPING\n")
    diff.raw(b"   ECHO    spaced    \r\n")


@pytest.mark.parametrize("data", [
    b"*abc\r\n",
    b"*1\r\n+foo\r\n",
    b"*1\r\n$abc\r\n",
    b"*1\r\n$-5\r\n",
    b"*3000000000\r\n",
    b"*01\r\n$4\r\nPING\r\n",
    b"*1\r\n$04\r\nPING\r\n",
    b"ECHO \"unbalanced\r\n",
    b"ECHO 'x'y\r\n",
    b"*1\r\n$4\r\nPING\r\n*x\r\n",
    b"*2\r\n$4\r\nECHO\r\n:5\r\n",
])
def test_protocol_errors_close(diff, data):
    diff.until_closed(data)


def test_pipelined_batch(diff):
    batch = b"".join(b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(str(i)), str(i).encode())
                     for i in range(200))
    diff.raw(batch, replies=200)
