"""``cmsgpack`` as Redis bundles it (lua-cmsgpack 0.4.0): pack, unpack, unpack_one,
unpack_limit.

Lua numbers are doubles: one that is an int64 value packs as the smallest MessagePack
integer, any other as a float 32 when that is exact, else a float 64. A table is an array
when its keys are exactly 1..n, else a map; tables nested 16 deep pack as nil (the
library's guard against cycles). Unpacking knows the types lua-cmsgpack 0.4.0 knows (no
bin/ext); ``unpack_one``/``unpack_limit`` return the next offset first (-1 at the end).
"""
from __future__ import annotations

import math
import struct
from typing import Any

from pykv.scripting.libbase import (
    LibError,
    integer_arg,
    lua_type,
    number_key,
    opt_integer,
    string_arg,
)

MAX_NESTING = 16
_F32, _F64 = struct.Struct(">f"), struct.Struct(">d")
_INT_SIZES = {0xCC: (1, False), 0xCD: (2, False), 0xCE: (4, False), 0xCF: (8, False),
              0xD0: (1, True), 0xD1: (2, True), 0xD2: (4, True), 0xD3: (8, True)}
_FIXED = {0xC0: None, 0xC2: False, 0xC3: True}


class _Missing(Exception):
    """The input ended inside a value ("Missing bytes in input.")."""


class _BadFormat(Exception):
    """A byte no type starts with ("Bad data format in input.")."""


def _as_int64(v: float | int) -> int | None:
    """The integer a Lua number packs as (C's ``(int64_t)x == x``), or None."""
    if isinstance(v, int):
        return v if -(1 << 63) <= v < (1 << 63) else None
    if math.isinf(v) or math.isnan(v) or v != int(v):
        return None
    i = int(v)
    return i if -(1 << 63) <= i < (1 << 63) else None


class CMsgpack:
    def __init__(self, lua: Any) -> None:
        self.lua = lua

    def functions(self) -> dict[bytes, Any]:
        return {b"pack": self.pack, b"unpack": self.unpack, b"unpack_one": self.unpack_one,
                b"unpack_limit": self.unpack_limit}

    # -- pack ------------------------------------------------------------------------------
    def pack(self, *values: Any) -> bytes:
        if not values:
            raise LibError("MessagePack pack needs input.", arg=0)
        out = bytearray()
        for v in values:
            self._pack(v, out, 0)
        return bytes(out)

    def _pack(self, v: Any, out: bytearray, level: int) -> None:
        if v is True:
            out += b"\xc3"
        elif v is False:
            out += b"\xc2"
        elif isinstance(v, (int, float)):
            i = _as_int64(v)
            if i is not None:
                _int(i, out)
            else:
                f = _F32.pack(v) if not math.isfinite(v) or abs(v) < 3.5e38 else None
                if f is not None and (_F32.unpack(f)[0] == v):
                    out += b"\xca" + f
                else:
                    out += b"\xcb" + _F64.pack(v)
        elif isinstance(v, bytes):
            n = len(v)
            if n < 32:
                out.append(0xA0 | n)
            elif n <= 0xFF:
                out += b"\xd9" + bytes([n])
            elif n <= 0xFFFF:
                out += b"\xda" + n.to_bytes(2, "big")
            else:
                out += b"\xdb" + n.to_bytes(4, "big")
            out += v
        elif lua_type(v) == "table" and level < MAX_NESTING:
            items = list(v.items())
            keys = [number_key(k) for k, _ in items]
            if not items or (None not in keys and max(keys) == len(items)):
                _header(len(items), out, 0x90, b"\xdc", b"\xdd")
                for i in range(1, len(items) + 1):
                    self._pack(v[i], out, level + 1)
            else:
                _header(len(items), out, 0x80, b"\xde", b"\xdf")
                for k, item in items:
                    self._pack(k, out, level + 1)
                    self._pack(item, out, level + 1)
        else:
            out += b"\xc0"

    # -- unpack ----------------------------------------------------------------------------
    def unpack(self, *args: Any) -> tuple:
        return self._unpack_full(args, 0, 0)

    def unpack_one(self, *args: Any) -> tuple:
        offset = opt_integer(args, 1, 0)
        return self._unpack_full(args[:1], 1, offset)

    def unpack_limit(self, *args: Any) -> tuple:
        limit = integer_arg(args, 1)
        offset = opt_integer(args, 2, 0)
        return self._unpack_full(args[:1], limit, offset)

    def _unpack_full(self, args: tuple, limit: int, offset: int) -> tuple:
        data = string_arg(args, 0)
        decode_all = not limit and not offset
        if offset < 0 or limit < 0:
            # (sic: lua-cmsgpack prints the input length as the limit)
            raise LibError(f"Invalid request to unpack with offset of {offset} and limit of "
                           f"{len(data)}.")
        if offset > len(data):
            raise LibError(f"Start offset {offset} greater than input length {len(data)}.")
        if decode_all:
            limit = 1 << 62
        values: list[Any] = []
        pos = offset
        while pos < len(data) and len(values) < limit:
            try:
                value, pos = self._value(data, pos)
            except _Missing:
                raise LibError("Missing bytes in input.") from None
            except _BadFormat:
                raise LibError("Bad data format in input.") from None
            values.append(value)
        if not decode_all:
            values.insert(0, -1 if pos >= len(data) else pos)
        return tuple(values)

    def _value(self, d: bytes, i: int) -> tuple[Any, int]:
        b = d[i]
        if b < 0x80:
            return b, i + 1
        if b >= 0xE0:
            return b - 256, i + 1
        if 0xA0 <= b <= 0xBF:
            return _take(d, i + 1, b & 0x1F)
        if 0x90 <= b <= 0x9F:
            return self._array(d, i + 1, b & 0x0F)
        if 0x80 <= b <= 0x8F:
            return self._map(d, i + 1, b & 0x0F)
        if b in _FIXED:
            return _FIXED[b], i + 1
        size = _INT_SIZES.get(b)
        if size is not None:
            raw, end = _take(d, i + 1, size[0])
            value = int.from_bytes(raw, "big", signed=size[1])
            if b == 0xCF and value >= 1 << 63:  # pushed through a signed lua_Integer
                value -= 1 << 64
            return value, end
        if b == 0xCA:
            raw, end = _take(d, i + 1, 4)
            return _F32.unpack(raw)[0], end
        if b == 0xCB:
            raw, end = _take(d, i + 1, 8)
            return _F64.unpack(raw)[0], end
        if b in (0xD9, 0xDA, 0xDB):
            width = {0xD9: 1, 0xDA: 2, 0xDB: 4}[b]
            raw, start = _take(d, i + 1, width)
            return _take(d, start, int.from_bytes(raw, "big"))
        if b in (0xDC, 0xDD, 0xDE, 0xDF):
            width = 2 if b in (0xDC, 0xDE) else 4
            raw, start = _take(d, i + 1, width)
            n = int.from_bytes(raw, "big")
            return (self._array if b <= 0xDD else self._map)(d, start, n)
        raise _BadFormat

    def _array(self, d: bytes, i: int, n: int) -> tuple[Any, int]:
        table = self.lua.table()
        for k in range(1, n + 1):
            if i >= len(d):
                raise _Missing
            table[k], i = self._value(d, i)
        return table, i

    def _map(self, d: bytes, i: int, n: int) -> tuple[Any, int]:
        table = self.lua.table()
        for _ in range(n):
            if i >= len(d):
                raise _Missing
            key, i = self._value(d, i)
            if i >= len(d):
                raise _Missing
            value, i = self._value(d, i)
            # raised by lua_settable inside the C function: Lua adds no position
            if key is None:
                raise LibError("table index is nil", positioned=True)
            if key != key:
                raise LibError("table index is NaN", positioned=True)
            table[key] = value
        return table, i


def _take(d: bytes, i: int, n: int) -> tuple[bytes, int]:
    if i + n > len(d):
        raise _Missing
    return d[i:i + n], i + n


def _header(n: int, out: bytearray, fix: int, m16: bytes, m32: bytes) -> None:
    if n < 16:
        out.append(fix | n)
    elif n <= 0xFFFF:
        out += m16 + n.to_bytes(2, "big")
    else:
        out += m32 + n.to_bytes(4, "big")


def _int(v: int, out: bytearray) -> None:
    if v >= 0:
        if v <= 127:
            out.append(v)
        elif v <= 0xFF:
            out += b"\xcc" + bytes([v])
        elif v <= 0xFFFF:
            out += b"\xcd" + v.to_bytes(2, "big")
        elif v <= 0xFFFFFFFF:
            out += b"\xce" + v.to_bytes(4, "big")
        else:
            out += b"\xcf" + v.to_bytes(8, "big")
    elif v >= -32:
        out.append(v & 0xFF)
    elif v >= -128:
        out += b"\xd0" + v.to_bytes(1, "big", signed=True)
    elif v >= -32768:
        out += b"\xd1" + v.to_bytes(2, "big", signed=True)
    elif v >= -(1 << 31):
        out += b"\xd2" + v.to_bytes(4, "big", signed=True)
    else:
        out += b"\xd3" + v.to_bytes(8, "big", signed=True)
