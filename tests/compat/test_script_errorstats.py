"""INFO errorstats and commandstats after errors in scripts and functions, against Redis 7.0.

An error is counted once, where it happens: a command's error reply inside the script, a
redis.call Redis refuses (unknown command, arity, read-only script: also a rejected call of
that command), or the script's own error when it reaches the caller. A command's error that
travels up to the caller (redis.call raising it, a returned pcall table) is not counted
again, but the script's command counts as failed.
"""
from __future__ import annotations

import pytest

LIBRARY = """#!lua name=errs
redis.register_function('cerr', function(k) return redis.call('incr', k[1]) end)
redis.register_function('perr', function(k) return redis.pcall('incr', k[1]) end)
redis.register_function('pdrop', function(k) redis.pcall('nosuch') return 1 end)
redis.register_function('ereply', function() return redis.error_reply('MINE x') end)
redis.register_function('boom', function() error('boom') end)
redis.register_function{function_name='ro', callback=function()
    return redis.call('set', 'a', 'b') end, flags={'no-writes'}}
"""

CASES = [
    ("EVAL", "return redis.call('nosuch')", "0"),
    ("EVAL", "return redis.pcall('nosuch')", "0"),
    ("EVAL", "redis.pcall('nosuch') return 1", "0"),
    ("EVAL", "return redis.call('get')", "0"),
    ("EVAL", "redis.pcall('get') return 1", "0"),
    ("EVAL", "return redis.error_reply('X y')", "0"),
    ("EVAL", "return redis.pcall('incr', KEYS[1])", "1", "str"),
    ("EVAL", "return redis.call('incr', KEYS[1])", "1", "str"),
    ("EVAL", "redis.pcall('incr', KEYS[1]) return 1", "1", "str"),
    ("EVAL", "local ok, e = pcall(redis.call, 'incr', KEYS[1]) return e", "1", "str"),
    ("EVAL", "local ok, e = pcall(redis.call, 'nosuch') return 1", "0"),
    ("EVAL", "return {err='TBL z', ignore_error_stats_update=true}", "0"),
    ("EVAL", "return {err='TBL z'}", "0"),
    ("EVAL", "error('boom')", "0"),
    ("EVAL", "error({err='CODE e'})", "0"),
    ("EVAL", "return redis.call('get', {})", "0"),
    ("EVAL", "redis.pcall('get', {}) return 1", "0"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')", "0"),
    ("EVAL", "#!lua flags=no-writes\nredis.pcall('set', 'a', 'b') return 1", "0"),
    ("EVAL_RO", "return redis.call('set', 'a', 'b')", "0"),
    ("EVAL", "return 1 +", "0"),
    ("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"),
    ("FCALL", "cerr", "1", "str"),
    ("FCALL", "perr", "1", "str"),
    ("FCALL", "pdrop", "0"),
    ("FCALL", "ereply", "0"),
    ("FCALL", "boom", "0"),
    ("FCALL", "ro", "0"),
    ("FCALL_RO", "cerr", "1", "str"),
]


def _stats(client) -> list[str]:
    """errorstat_* lines, and cmdstat_* lines without the timings (INFO and CONFIG's own
    calls left out), sorted (Redis lists commands in its hash order)."""
    out = []
    for section in ("errorstats", "commandstats"):
        for line in client.call("INFO", section).decode().split("\r\n"):
            if line.startswith("errorstat_"):
                out.append(line)
            elif line.startswith("cmdstat_") and not line.startswith(
                    ("cmdstat_info:", "cmdstat_config|resetstat:")):
                name, fields = line.split(":", 1)
                kept = [f for f in fields.split(",") if not f.startswith("usec")]
                out.append(name + ":" + ",".join(kept))
    return sorted(out)


@pytest.mark.parametrize("case", CASES, ids=lambda case: " ".join(case)[:60])
def test_errors_counted_once(diff, case):
    for c in (diff.real, diff.ours):
        c.call("FUNCTION", "LOAD", "REPLACE", LIBRARY)
        c.call("SET", "str", "abc")
        c.call("CONFIG", "RESETSTAT")
    replies = [c.call(*case) for c in (diff.real, diff.ours)]
    assert replies[1] == replies[0]
    assert _stats(diff.ours) == _stats(diff.real)
