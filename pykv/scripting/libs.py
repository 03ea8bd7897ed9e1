"""The Lua libraries Redis bundles, as Lua-callable Python: ``cjson``, ``bit``, ``struct``,
``cmsgpack``.

lupa's Lua 5.1 ships none of them. Each function here receives Lua values (bytes, numbers,
``LuaTable``) and returns Python values lupa hands back to Lua; a failure raises
``LibError``, which ``guarded`` positions as ``luaL_error`` would (``user_script:N: ``) before
it reaches the script as a Lua error. ``bit`` (LuaBitOp 1.0) and ``struct`` (lua-struct) are
here; ``cjson`` and ``cmsgpack`` have their own modules. ``Libraries`` puts them together
for one Lua state.
"""
from __future__ import annotations

import math
import struct as pystruct
import sys
from collections.abc import Callable
from typing import Any

from pykv.scripting.libbase import (
    LibError,
    arg_type,
    integer_arg,
    number_arg,
    opt_integer,
    string_arg,
    to_number,
)
from pykv.scripting.lua_cjson import CJson
from pykv.scripting.lua_cmsgpack import CMsgpack

__all__ = ["LibError", "Libraries"]



# -- bit (LuaBitOp 1.0) ---------------------------------------------------------------------
def _barg(args: tuple, i: int) -> int:
    """LuaBitOp's barg: the low 32 bits of the number's double after adding 2^52+2^51
    (rounding half to even; big numbers keep their low mantissa bits); a non-number that
    converts to 0 is an error."""
    v = args[i] if i < len(args) else None
    if isinstance(v, bytes):
        n = to_number(v)
        if n is None:
            raise LibError(f"number expected, got {arg_type(args, i)}", arg=i + 1)
        v = n
    elif isinstance(v, bool) or not isinstance(v, (int, float)):
        raise LibError(f"number expected, got {arg_type(args, i)}", arg=i + 1)
    biased = float(v) + 6755399441055744.0
    return int.from_bytes(pystruct.pack("<d", biased)[:4], "little")


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _bit_tohex(*args: Any) -> bytes:
    v = _barg(args, 0)
    n = _s32(_barg(args, 1)) if len(args) > 1 and args[1] is not None else 8
    upper = n < 0
    n = min(abs(n), 8)
    text = f"{v:08x}"[8 - n:] if n else ""
    return (text.upper() if upper else text).encode()


def _fold(op: Callable[[int, int], int]) -> Callable[..., int]:
    def f(*args: Any) -> int:
        acc = _barg(args, 0)
        for i in range(1, len(args)):
            acc = op(acc, _barg(args, i))
        return _s32(acc)
    return f


def _shift(fn: Callable[[int, int], int]) -> Callable[..., int]:
    return lambda *args: _s32(fn(_barg(args, 0), _barg(args, 1) & 31))


BIT = {
    "tobit": lambda *args: _s32(_barg(args, 0)),
    "tohex": _bit_tohex,
    "bnot": lambda *args: _s32(~_barg(args, 0)),
    "band": _fold(lambda a, b: a & b),
    "bor": _fold(lambda a, b: a | b),
    "bxor": _fold(lambda a, b: a ^ b),
    "lshift": _shift(lambda x, n: x << n),
    "rshift": _shift(lambda x, n: x >> n),
    "arshift": _shift(lambda x, n: _s32(x) >> n),
    "rol": _shift(lambda x, n: (x << n) | (x >> (32 - n)) if n else x),
    "ror": _shift(lambda x, n: (x >> n) | (x << (32 - n)) if n else x),
    "bswap": lambda *args: _s32(int.from_bytes(_barg(args, 0).to_bytes(4, "little"), "big")),
}


# -- struct (lua-struct 0.2, as Redis bundles it) ---------------------------------------------
_MAXINTSIZE = 32
_MAXALIGN = 8  # max(offsetof(struct {char c; double d;}, d), sizeof(int)) on x86-64
_FIXED_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": 8, "L": 8, "T": 8, "f": 4, "d": 8, "x": 1}
_INT_CODES = frozenset("bBhHlLTiI")


class _Format:
    """A lua-struct format string read one option at a time (endianness, alignment)."""

    def __init__(self, fmt: bytes) -> None:
        self.text = fmt.decode("latin-1")
        self.i = 0
        self.little = True  # native (x86-64)
        self.align = 1

    def _num(self, default: int) -> int:
        t, i = self.text, self.i
        if i >= len(t) or not t[i].isdigit():
            return default
        a = 0
        while i < len(t) and t[i].isdigit():
            if a > 214748364 or a * 10 > 2147483647 - int(t[i]):
                raise LibError("integral size overflow")
            a = a * 10 + int(t[i])
            i += 1
        self.i = i
        return a

    def next(self) -> tuple[str, int] | None:
        """(option, size) of the next option, or None at the end."""
        if self.i >= len(self.text):
            return None
        opt = self.text[self.i]
        self.i += 1
        if opt in _FIXED_SIZES:
            return opt, _FIXED_SIZES[opt]
        if opt == "c":
            return opt, self._num(1)
        if opt in "iI":
            size = self._num(4)
            if size > _MAXINTSIZE:
                raise LibError(f"integral size {size} is larger than limit of {_MAXINTSIZE}")
            return opt, size
        return opt, 0

    def to_align(self, pos: int, opt: str, size: int) -> int:
        if size == 0 or opt == "c":
            return 0
        size = min(size, self.align)
        return (size - (pos & (size - 1))) & (size - 1)

    def control(self, opt: str) -> None:
        if opt == " ":
            return
        if opt == ">":
            self.little = False
        elif opt == "<":
            self.little = True
        elif opt == "!":
            a = self._num(_MAXALIGN)
            if a <= 0 or a & (a - 1):
                raise LibError(f"alignment {a} is not a power of 2")
            self.align = a
        else:
            raise LibError(f"invalid format option '{opt}'", arg=1)


def _struct_arg(args: tuple, i: int, kind: str) -> Any:
    """An argument of struct.pack: past the last one Lua sees the nil b_pack pushes first,
    then nothing."""
    if i >= len(args):
        got = "nil" if i == len(args) else "no value"
        raise LibError(f"{kind} expected, got {got}", arg=i + 1)
    return number_arg(args, i) if kind == "number" else string_arg(args, i)


def struct_pack(*args: Any) -> bytes:
    fmt = _Format(string_arg(args, 0))
    out = bytearray()
    arg = 1
    while (item := fmt.next()) is not None:
        opt, size = item
        pad = fmt.to_align(len(out), opt, size)
        out += b"\0" * pad
        if opt in _INT_CODES:
            n = _struct_arg(args, arg, "number")
            arg += 1
            value = int(n) & ((1 << 64) - 1) if n == n and abs(n) < 2 ** 64 else 0
            raw = value.to_bytes(max(size, 8), "little")[:size]
            out += raw if fmt.little else raw[::-1]
        elif opt == "x":
            out += b"\0"
        elif opt in "fd":
            n = _struct_arg(args, arg, "number")
            arg += 1
            code = ("<" if fmt.little else ">") + opt
            try:
                out += pystruct.pack(code, n)
            except OverflowError:  # C's float conversion gives inf
                out += pystruct.pack(code, math.copysign(math.inf, n))
        elif opt in "cs":
            data = _struct_arg(args, arg, "string")
            arg += 1
            if size == 0:
                size = len(data)
            if len(data) < size:
                raise LibError("string too short", arg=arg + 1)
            out += data[:size]
            if opt == "s":
                out += b"\0"
        else:
            fmt.control(opt)
    return bytes(out)


def _lua_number(v: int) -> int | float:
    """An integer as a Lua number reaches Python (beyond int64 it is a double)."""
    return v if -(1 << 63) <= v < (1 << 63) else float(v)


def struct_unpack(*args: Any) -> tuple:
    fmt = _Format(string_arg(args, 0))
    data = string_arg(args, 1)
    pos = opt_integer(args, 2, 1)
    if pos <= 0:
        raise LibError("offset must be 1 or greater", arg=3)
    pos -= 1
    ld = len(data)
    values: list[Any] = []
    while (item := fmt.next()) is not None:
        opt, size = item
        pos += fmt.to_align(pos, opt, size)
        if not (size <= ld and pos <= ld - size):
            raise LibError("data string too short", arg=2)
        if opt in _INT_CODES:
            raw = data[pos:pos + size]
            value = int.from_bytes(raw, "little" if fmt.little else "big")
            if opt.islower() and size and value >> (size * 8 - 1):
                value -= 1 << (size * 8)
            if size > 8:  # the C code keeps 64 bits
                value &= (1 << 64) - 1
                if opt.islower() and value >> 63:
                    value -= 1 << 64
            values.append(_lua_number(value))
        elif opt in "fd":
            code = ("<" if fmt.little else ">") + opt
            values.append(pystruct.unpack(code, data[pos:pos + size])[0])
        elif opt == "c":
            if size == 0:
                if not values or not isinstance(values[-1], (int, float)):
                    raise LibError("format 'c0' needs a previous size")
                size = int(values.pop())
                if not (size <= ld and pos <= ld - size):
                    raise LibError("data string too short", arg=2)
            values.append(data[pos:pos + size])
        elif opt == "s":
            end = data.find(b"\0", pos)
            if end < 0:
                raise LibError("unfinished string in data")
            size = end - pos + 1
            values.append(data[pos:end])
        elif opt != "x":
            fmt.control(opt)
        pos += size
    values.append(pos + 1)
    return tuple(values)


def struct_size(*args: Any) -> int:
    fmt = _Format(string_arg(args, 0))
    pos = 0
    while (item := fmt.next()) is not None:
        opt, size = item
        pos += fmt.to_align(pos, opt, size)
        if opt == "s":
            raise LibError("option 's' has no fixed size", arg=1)
        if opt == "c" and size == 0:
            raise LibError("option 'c0' has no fixed size", arg=1)
        if not opt.isalnum():
            fmt.control(opt)
        pos += size
    return pos


# -- math.random (Redis's replacement: its own lrand48, the same sequence on every platform) --
_LRAND48_MAX = 2147483647


class LuaRandom:
    """Redis's redisLrand48 state, one per server (EVAL and FCALL share it; SCRIPT FLUSH
    keeps it)."""

    def __init__(self) -> None:
        self.x = 0x1234ABCD330E

    def _next(self) -> float:
        self.x = (0x5DEECE66D * self.x + 0xB) & ((1 << 48) - 1)
        return ((self.x >> 17) % _LRAND48_MAX) / _LRAND48_MAX

    def random(self, *args: Any) -> float | int:
        r = self._next()
        if not args:
            return r
        if len(args) == 1:
            u = _c_int(integer_arg(args, 0))
            if u < 1:
                raise LibError("interval is empty", arg=1)
            return math.floor(r * u) + 1
        if len(args) == 2:
            low, high = _c_int(integer_arg(args, 0)), _c_int(integer_arg(args, 1))
            if low > high:
                raise LibError("interval is empty", arg=2)
            return math.floor(r * (high - low + 1)) + low
        raise LibError("wrong number of arguments")

    def randomseed(self, *args: Any) -> None:
        seed = _c_int(integer_arg(args, 0)) & 0xFFFFFFFF
        self.x = (seed << 16) | 0x330E


def _c_int(n: int) -> int:
    """C's int of a lua_Integer (the low 32 bits, signed)."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


# where a library function was called from, as luaL_where(1) and luaL_argerror see it: level
# 2 is the Python function's own (C) frame, level 3 its caller
_WHERE_LUA = r"""
local getinfo = debug.getinfo
return function()
    local fn, caller = getinfo(2, "n"), getinfo(3, "Sl")
    local prefix = ""
    if caller and caller.currentline > 0 then
        prefix = caller.short_src .. ":" .. caller.currentline .. ": "
    end
    return prefix, fn and fn.name, fn and fn.namewhat
end
"""


def _position(err: LibError, where: Any) -> LibError:
    """``err`` as the Lua error text: its calling position, and for an argument error
    luaL_argerror's wording with the function's name as the caller wrote it."""
    prefix, name, namewhat = where()
    text = str(err.args[0])
    if err.arg is not None:
        n = err.arg
        fname = name.decode("utf-8", "replace") if name else "?"
        if namewhat == b"method":
            n -= 1
        if namewhat == b"method" and n == 0:
            text = f"calling '{fname}' on bad self ({text})"
        else:
            text = f"bad argument #{n} to '{fname}' ({text})"
    return LibError(prefix.decode("utf-8", "surrogateescape") + text, positioned=True)


def guarded(fn: Callable[..., Any], where: Any) -> Callable[..., Any]:
    """Report a library's errors as Lua would (LibError, raised into Lua as the script's
    error), with the caller's position."""

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except LibError as exc:
            if exc.positioned:
                raise
            raise _position(exc, where) from None
        except (StopIteration, TypeError, ValueError, OverflowError, IndexError,
                pystruct.error) as exc:
            raise _position(LibError(f"bad argument ({exc})"), where) from None

    return call


class Libraries:
    """The bundled libraries of one Lua state: their function tables and their settings."""

    def __init__(self, lua: Any, null: Any) -> None:
        # cjson recurses once per nesting level, up to 1000 by default (more when a script
        # raises encode_max_depth, bounded by Lua's 8000-slot stack)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
        self.lua = lua
        self.null = null
        self.where = lua.execute(_WHERE_LUA)
        # EVAL and FCALL have separate Lua states in Redis: separate cjson settings
        self.cjson = CJson(lua, null, self._new_cjson)
        self.fn_cjson = CJson(lua, null, self._new_cjson)
        self.msgpack = CMsgpack(lua)
        self.random = LuaRandom()
        wrap = self._wrap
        self.tables: dict[str, dict[bytes, Any]] = {
            "cjson": wrap(self.cjson.functions()),
            "fn_cjson": wrap(self.fn_cjson.functions()),
            "bit": wrap({k.encode(): v for k, v in BIT.items()}),
            "struct": wrap({b"pack": struct_pack, b"unpack": struct_unpack,
                            b"size": struct_size}),
            "cmsgpack": wrap(self.msgpack.functions()),
            "math": wrap({b"random": self.random.random,
                          b"randomseed": self.random.randomseed}),
        }

    def _wrap(self, funcs: dict[bytes, Any]) -> dict[bytes, Any]:
        return {name: guarded(f, self.where) for name, f in funcs.items()}

    def _new_cjson(self) -> Any:
        """cjson.new(): another module table with its own settings."""
        module = self._wrap(CJson(self.lua, self.null, self._new_cjson).functions())
        module.update({b"null": self.null, b"_NAME": b"cjson", b"_VERSION": b"2.1.0"})
        return self.lua.table_from(module)

    def reset(self) -> None:
        """SCRIPT FLUSH: Redis starts a new Lua state for EVAL, with default library
        settings (FCALL's state stays)."""
        self.cjson.reset()
