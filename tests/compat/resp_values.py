"""Decoded RESP replies for semantic comparisons.

Differential tests compare bytes where Redis's output is deterministic; where it is not
(hashtable iteration order, random members) they decode both replies with ``parse`` (the
tests' one RESP decoder, in support/resp.py) and compare what the order cannot change
(``unordered``, ``pairs``, ``as_dict``).
"""
from __future__ import annotations

from typing import Any

from support.resp import NULL_ARRAY, NULL_BULK, Error, Push, RespSet, parse

__all__ = ["NULL_ARRAY", "NULL_BULK", "Error", "Push", "RespSet", "as_dict", "pairs", "parse",
           "unordered"]


def _key(item: Any) -> Any:
    return repr(item)


def unordered(value: Any) -> Any:
    """``value`` with its top-level collection sorted (order-insensitive comparison); the
    collection keeps its kind (array, set, map)."""
    if isinstance(value, tuple) and value and value[0] == "map":
        return ("map", sorted(value[1], key=_key))
    if isinstance(value, list):
        return type(value)(sorted(value, key=_key))
    return value


def pairs(flat: list) -> list[tuple]:
    """A flat [k1, v1, k2, v2…] list as sorted pairs."""
    return sorted(zip(flat[::2], flat[1::2], strict=True), key=_key)


def as_dict(value: Any) -> dict:
    """A RESP2 flat field/value array or a RESP3 map as a dict (each field once)."""
    items = value[1] if isinstance(value, tuple) else list(zip(value[::2], value[1::2],
                                                               strict=True))
    out = dict(items)
    assert len(out) == len(items), f"a field repeats in {value!r}"
    return out
