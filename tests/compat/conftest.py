"""The differential harness: the same commands to real redis-server and to pykv.

``diff(*args)`` sends one command to both servers and asserts the two replies are the same
bytes; ``diff3`` does the same over RESP3. Both start each test with empty databases.
"""
from __future__ import annotations

import pytest
from support.resp import RawClient, encode_command


class Diff:
    def __init__(self, real: RawClient, ours: RawClient) -> None:
        self.real = real
        self.ours = ours

    def __call__(self, *args) -> bytes:
        return self.raw(encode_command(*args), label=args)

    def raw(self, data: bytes, replies: int = 1, label: object = None) -> bytes:
        """Send raw bytes to both; compare the next ``replies`` replies."""
        self.real.send_raw(data)
        self.ours.send_raw(data)
        out = b""
        for _ in range(replies):
            expected = self.real.read_reply()
            got = self.ours.read_reply()
            assert got == expected, f"{label or data!r}:\n  redis: {expected!r}\n  pykv:  {got!r}"
            out += expected
        return out

    def both(self, *args) -> tuple[bytes, bytes]:
        """Send to both and return (redis, pykv) replies without comparing."""
        data = encode_command(*args)
        self.real.send_raw(data)
        self.ours.send_raw(data)
        return self.real.read_reply(), self.ours.read_reply()

    def until_closed(self, data: bytes) -> None:
        """Send raw bytes to both and compare everything up to the connection closing."""
        self.real.send_raw(data)
        self.ours.send_raw(data)
        expected = self.real.read_until_closed()
        got = self.ours.read_until_closed()
        assert got == expected, f"{data!r}:\n  redis: {expected!r}\n  pykv:  {got!r}"

    def many(self, commands) -> None:
        for cmd in commands:
            self(*cmd)

    def reply_paths(self, first: tuple, second: tuple) -> None:
        """Two commands where a reply is not written to the client as it goes: inside
        MULTI/EXEC, both from one script, and under CLIENT REPLY SKIP (the first skipped);
        for handlers that write their reply into the output buffer themselves."""
        self("MULTI")
        self(*first)
        self(*second)
        self("EXEC")
        calls = ", ".join(f"redis.call({', '.join(repr(str(a)) for a in cmd)})"
                          for cmd in (first, second))
        self("EVAL", f"return {{{calls}}}", 0)
        self.raw(encode_command("CLIENT", "REPLY", "SKIP") + encode_command(*first)
                 + encode_command(*second))


def _pair(real_redis, pykv_proc, resp3: bool):
    real = RawClient(port=real_redis.port)
    ours = RawClient(port=pykv_proc.port)
    for c in (real, ours):
        c.call("FLUSHALL")
        if resp3:
            c.call("HELLO", "3")
    return Diff(real, ours)


@pytest.fixture
def diff(real_redis, pykv_proc):
    d = _pair(real_redis, pykv_proc, resp3=False)
    yield d
    d.real.close()
    d.ours.close()


@pytest.fixture
def diff3(real_redis, pykv_proc):
    d = _pair(real_redis, pykv_proc, resp3=True)
    yield d
    d.real.close()
    d.ours.close()
