"""Run one Lua snippet on real redis-server and pykv every way a script runs, comparing bytes.

``everywhere(d, body)`` sends it as EVAL, as EVALSHA (after SCRIPT LOAD) and as the body of
a function (FUNCTION LOAD REPLACE + FCALL; the body starts on the library's line 2), with one
key and one argument, through the differential pair ``d`` (RESP2 ``diff`` or RESP3
``diff3``). A script that fails to compile is compared at SCRIPT LOAD / FUNCTION LOAD.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

FUNCTION_LIBRARY = "#!lua name=sandboxcase\nredis.register_function('f', function(KEYS, ARGV)\n%s\nend)"


def bulk_text(reply: bytes) -> str | None:
    """The text of a bulk string reply (None for anything else)."""
    if not reply.startswith(b"$") or reply.startswith(b"$-1"):
        return None
    return reply.split(b"\r\n", 2)[1].decode()


def run_eval(d, body: str) -> None:
    d("EVAL", body, "1", "key", "arg")


def run_evalsha(d, body: str) -> None:
    sha = bulk_text(d("SCRIPT", "LOAD", body))
    if sha is not None:
        d("EVALSHA", sha, "1", "key", "arg")


def run_fcall(d, body: str) -> None:
    loaded = d("FUNCTION", "LOAD", "REPLACE", FUNCTION_LIBRARY % body)
    if not loaded.startswith(b"-"):
        d("FCALL", "f", "1", "key", "arg")


def everywhere(d, body: str) -> None:
    run_eval(d, body)
    run_evalsha(d, body)
    run_fcall(d, body)


@contextmanager
def deep_replies():
    """Replies nested ~8000 deep (tables that contain themselves) need a deep parser."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 50000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
