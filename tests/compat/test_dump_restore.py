"""DUMP and RESTORE replies and errors compared with real Redis."""
from __future__ import annotations


def test_restore_errors(diff):
    diff("SET", "k", "v")
    payload = _bulk(diff.real.call("DUMP", "k"))
    diff.ours.call("SET", "k", "v")
    diff("RESTORE", "k", "0", payload)
    diff("RESTORE", "k2", "-1", payload)
    diff("RESTORE", "k2", "abc", payload)
    diff("RESTORE", "k2", "0", payload[:-1] + b"\x00")
    diff("RESTORE", "k2", "0", b"garbage-payload-with-enough-bytes")
    diff("RESTORE", "k2", "0", payload, "IDLETIME", "-1")
    diff("RESTORE", "k2", "0", payload, "FREQ", "300")
    diff("RESTORE", "k2", "0", payload, "IDLETIME", "1", "FREQ", "1")
    diff("RESTORE", "k2", "0", payload, "BOGUS")
    diff("RESTORE", "k2", "1", payload, "ABSTTL")
    diff("EXISTS", "k2")
    diff("RESTORE", "k3", "100000", payload)
    diff("DUMP", "nosuchkey")


def _bulk(reply: bytes) -> bytes:
    assert reply.startswith(b"$"), reply
    head, _, rest = reply.partition(b"\r\n")
    return rest[:int(head[1:])]


def test_persistence_command_argument_errors(diff):
    diff("BGSAVE", "NOW")
    diff("BGSAVE", "SCHEDULE", "extra")
    diff("SAVE", "extra")
    diff("BGREWRITEAOF", "extra")
    diff("DEBUG", "RELOAD", "BOGUS")
    diff("DUMP")
    diff("RESTORE", "k", "0")
