"""How Redis's C code turns Lua values into strings: ``lua_tolstring`` (``%.14g`` numbers)
and ``redis.call``'s arguments (``%.17g`` numbers, which keep their precision).

Lua values reach Python through lupa as bytes (strings), int/float (numbers), bool, None or
Lua objects.
"""
from __future__ import annotations

import math
from typing import Any


def lua_tostring(v: Any, digits: int = 14) -> bytes | None:
    """``lua_tolstring``: strings, and numbers as Lua prints them (``%.14g``); None for
    other types."""
    t = type(v)
    if t is bytes:
        return v
    if t is int or t is float:
        return format_number(v, digits)
    return None


def format_number(n: float | int, digits: int) -> bytes:
    """C's ``%.<digits>g`` (NaN keeps its sign, as glibc prints it)."""
    if type(n) is float and math.isnan(n):
        return b"-nan" if math.copysign(1.0, n) < 0 else b"nan"
    return b"%.*g" % (digits, n)


def command_arg(v: Any) -> bytes | None:
    """A ``redis.call`` argument: strings as they are, numbers with ``%.17g`` (Redis keeps
    their precision); None for other types."""
    return lua_tostring(v, 17)
