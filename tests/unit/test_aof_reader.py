"""The AOF command reader: the fast path (the compiled request parser) must read every
input exactly as the line-by-line reader that mirrors Redis's loadSingleAppendOnlyFile."""
from __future__ import annotations

import random

import pytest

from pykv.storage.aof_load import _BadFormat, _ShortRead, commands, read_command

_PIECES = [b"*", b"2", b"3", b"\r\n", b"$", b"1", b"GET", b"#TS:1\r\n", b"\n", b"\r", b"0",
           b"-1", b"x", b" ", b"+", b"*1\r\n$4\r\nPING\r\n", b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"]


def _exact(data: bytes):
    out, pos = [], 0
    try:
        while True:
            argv, pos = read_command(data, pos)
            if argv is None:
                return out, "end"
            out.append((argv, pos))
    except (_BadFormat, _ShortRead) as exc:
        return out, type(exc).__name__


def _fast(data: bytes):
    out = []
    try:
        for argv, pos in commands(data, 0):
            out.append((argv, pos))
        return out, "end"
    except (_BadFormat, _ShortRead) as exc:
        return out, type(exc).__name__


def _check(seed: int, cases: int) -> None:
    rnd = random.Random(seed)
    for _ in range(cases):
        data = b"".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 14)))
        assert _fast(data) == _exact(data), data


def test_fast_reader_reads_as_redis_does() -> None:
    _check(0, 20_000)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 6))
def test_fast_reader_reads_as_redis_does_more(seed: int) -> None:
    _check(seed, 200_000)


@pytest.mark.parametrize("data, want", [
    (b"*1\r\n$4\r\nPING\r\n", ([([b"PING"], 14)], "end")),
    (b"#TS:1\r\n*1\r\n$4\r\nPING\r\n", ([([b"PING"], 21)], "end")),
    (b"*1\r\n$4\r\nPINGxy", ([([b"PING"], 14)], "end")),  # the CRLF is not checked
    (b"*1\r\n$4\r\nPIN", ([], "_ShortRead")),
    (b"*", ([], "_ShortRead")),
    (b"*0\r\n", ([], "_BadFormat")),
    (b"PING\r\n", ([], "_BadFormat")),
    (b"*1\r\n:1\r\n", ([], "_BadFormat")),
])
def test_reader_cases(data: bytes, want) -> None:
    assert _exact(data) == want
    assert _fast(data) == want


def test_commands_across_chunks() -> None:
    big = b"x" * 200_000
    data = b"*2\r\n$3\r\nGET\r\n$200000\r\n" + big + b"\r\n" + b"*1\r\n$4\r\nPING\r\n" * 30_000
    got = list(commands(data, 0))
    assert got[0][0] == [b"GET", big] and len(got) == 30_001 and got[-1][1] == len(data)
