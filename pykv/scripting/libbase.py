"""What the Python implementations of Redis's bundled Lua libraries share: the error they
raise into Lua and how they read Lua arguments the way Lua's C API does.

``LibError`` is a library's ``luaL_error``; with ``arg`` set it is a ``luaL_argerror``
(``bad argument #n to 'name' (...)``). The position (``user_script:1: ``) and the function's
name are filled in where the error is raised (``libs.guarded``), from the calling frame, as
``luaL_where`` does in C.
"""
from __future__ import annotations

from typing import Any

from lupa import lua51

lua_type = lua51.lua_type

INT_MAX = 2147483647


class LibError(Exception):
    def __init__(self, message: str, arg: int | None = None, positioned: bool = False) -> None:
        super().__init__(message)
        self.arg = arg
        self.positioned = positioned


def tname(x: Any) -> str:
    """Lua's type name of a value received from Lua."""
    if x is None:
        return "nil"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, bytes):
        return "string"
    if isinstance(x, (int, float)):
        return "number"
    t = lua_type(x)
    if t is None and callable(x):  # a library function (a C function in Redis)
        return "function"
    return t or "userdata"


def arg_type(args: tuple, i: int) -> str:
    """luaL_typename of argument ``i`` (0-based): "no value" past the last one."""
    return tname(args[i]) if i < len(args) else "no value"


def number_arg(args: tuple, i: int, name: str = "number") -> float | int:
    """luaL_checknumber: numbers, or strings that convert (Lua's tonumber)."""
    v = args[i] if i < len(args) else None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, bytes):
        n = to_number(v)
        if n is not None:
            return n
    raise LibError(f"{name} expected, got {arg_type(args, i)}", arg=i + 1)


def integer_arg(args: tuple, i: int) -> int:
    """luaL_checkinteger: a number truncated toward zero (C's cast)."""
    n = number_arg(args, i)
    if n != n or n in (float("inf"), float("-inf")):
        return -(1 << 63)
    return int(n)


def opt_integer(args: tuple, i: int, default: int) -> int:
    if i >= len(args) or args[i] is None:
        return default
    return integer_arg(args, i)


def string_arg(args: tuple, i: int) -> bytes:
    """luaL_checklstring: strings, and numbers as Lua prints them."""
    v = args[i] if i < len(args) else None
    if isinstance(v, bytes):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return b"%.14g" % v
    raise LibError(f"string expected, got {arg_type(args, i)}", arg=i + 1)


def to_number(text: bytes) -> float | int | None:
    """Lua 5.1's string-to-number conversion (decimal or hex, surrounding spaces)."""
    s = text.strip(b" \t\n\r\v\f")
    if not s:
        return None
    try:
        if s[:2].lower() in (b"0x",) or s[:3].lower() in (b"-0x", b"+0x"):
            return int(s, 16)
        if s.lower().lstrip(b"+-") in (b"inf", b"infinity", b"nan"):
            return float(s)
        return float(s)
    except ValueError:
        return None


def number_key(k: Any) -> int | None:
    """The array index a table key stands for (an integral number >= 1), else None."""
    if isinstance(k, bool):
        return None
    if isinstance(k, int) and k >= 1:
        return k
    if isinstance(k, float) and k >= 1 and k == int(k):
        return int(k)
    return None
