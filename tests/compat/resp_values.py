"""Decode raw RESP2/RESP3 reply bytes into Python values, for semantic comparisons.

Differential tests compare bytes where Redis's output is deterministic; where it is not
(hashtable iteration order, random members) they decode both replies with ``parse`` and
compare what the order cannot change (``unordered``).
"""
from __future__ import annotations

from typing import Any


class Error(str):
    """A decoded error reply."""


def parse(data: bytes) -> Any:
    value, end = _parse(data, 0)
    assert end == len(data), f"trailing bytes in {data!r}"
    return value


def _parse(data: bytes, pos: int) -> tuple[Any, int]:
    t = data[pos:pos + 1]
    end = data.index(b"\r\n", pos)
    head = data[pos + 1:end]
    pos = end + 2
    if t in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return None, pos
        return data[pos:pos + n], pos + n + 2
    if t in (b"*", b"~", b">"):
        n = int(head)
        if n < 0:
            return None, pos
        out = []
        for _ in range(n):
            item, pos = _parse(data, pos)
            out.append(item)
        return out, pos
    if t == b"%":
        out_map = []
        for _ in range(int(head)):
            k, pos = _parse(data, pos)
            v, pos = _parse(data, pos)
            out_map.append((k, v))
        return ("map", out_map), pos
    if t == b":":
        return int(head), pos
    if t == b"_":
        return None, pos
    if t == b"-":
        return Error(head.decode()), pos
    if t == b"+":
        return head, pos
    if t == b",":
        return float(head), pos
    raise AssertionError(f"unknown reply type {t!r}")


def _key(item: Any) -> Any:
    return repr(item)


def unordered(value: Any) -> Any:
    """``value`` with its top-level collection sorted (order-insensitive comparison)."""
    if isinstance(value, tuple) and value and value[0] == "map":
        return ("map", sorted(value[1], key=_key))
    if isinstance(value, list):
        return sorted(value, key=_key)
    return value


def pairs(flat: list) -> list[tuple]:
    """A flat [k1, v1, k2, v2…] list as sorted pairs."""
    return sorted(zip(flat[::2], flat[1::2], strict=True), key=_key)
