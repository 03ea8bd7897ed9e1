"""Argument rules of Redis's C implementations of the ``redis.*`` Lua API.

Lua values reach Python through lupa as bytes (strings), int/float (numbers), bool, None or
Lua objects. Redis's C functions read them with ``lua_tonumber``/``lua_tolstring``, whose
conversions (strings that look like numbers, numbers printed with ``%.14g``) these helpers
reproduce, so ``redis.setresp('3')`` or ``redis.sha1hex(1)`` behave as in Redis.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any


def lua_tonumber(v: Any) -> float | int:
    """``lua_tonumber``: numbers as they are, numeric strings converted, anything else 0."""
    t = type(v)
    if t is int or t is float:
        return v
    if t is bytes:
        text = v.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            return int(text, 16) if text[:2].lower() == b"0x" else 0
        except ValueError:
            return 0
    return 0


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


def sha1hex(args: tuple) -> bytes | None:
    """redis.sha1hex's digest, or None for a wrong argument count (a non-string hashes as
    the empty string: Redis hashes what lua_tolstring gives, NULL)."""
    if len(args) != 1:
        return None
    return hashlib.sha1(lua_tostring(args[0]) or b"").hexdigest().encode()
