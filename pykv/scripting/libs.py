"""The Lua libraries Redis bundles, as Lua-callable Python: ``cjson``, ``bit``, ``struct``,
``cmsgpack``.

lupa's Lua 5.1 ships none of them. Each function here receives Lua values (bytes, numbers,
``LuaTable``) and returns Python values lupa hands back to Lua; a failure raises
``LibError``, which reaches the script as a Lua error; the prelude's error handler reports
it with the ``user_script:N:`` position, as Redis reports its C libraries' errors.
Behaviour follows Redis's bundled versions for the common cases (lua-cjson 2.1 defaults,
LuaBitOp 1.0, lua-struct, lua-cmsgpack).
"""
from __future__ import annotations

import math
import struct as pystruct
from collections.abc import Callable
from typing import Any

from lupa import lua51

_lua_type = lua51.lua_type


class LibError(Exception):
    pass


def _number_key(k: Any) -> int | None:
    if isinstance(k, bool):
        return None
    if isinstance(k, int) and k >= 1:
        return k
    if isinstance(k, float) and k >= 1 and k == int(k):
        return int(k)
    return None


# -- bit (LuaBitOp) ---------------------------------------------------------------------------
def _tobit(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        if isinstance(x, bytes):
            try:
                x = float(x)
            except ValueError:
                raise LibError("bad argument #1 to '?' (number expected, got string)") from None
        else:
            raise LibError(f"bad argument #1 to '?' (number expected, got {_tname(x)})")
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return 0
        x = round(x)  # LuaBitOp rounds through a 2^52+2^51 bias: half to even
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _tname(x: Any) -> str:
    if x is None:
        return "nil"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, bytes):
        return "string"
    if isinstance(x, (int, float)):
        return "number"
    return _lua_type(x) or "userdata"


def _u32(x: Any) -> int:
    return _tobit(x) & 0xFFFFFFFF


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _bit_tohex(x: Any, n: Any = 8) -> bytes:
    v = _u32(x)
    n = _tobit(n)
    upper = n < 0
    n = min(abs(n), 8)
    text = f"{v:08x}"
    text = text[-n:] if n else ""
    return (text.upper() if upper else text).encode()


def _fold(op: Callable[[int, int], int]) -> Callable[..., int]:
    def f(*args: Any) -> int:
        acc = _u32(args[0])
        for a in args[1:]:
            acc = op(acc, _u32(a))
        return _s32(acc)
    return f


def _shift(fn: Callable[[int, int], int]) -> Callable[[Any, Any], int]:
    return lambda x, n: _s32(fn(_u32(x), _u32(n) & 31))


BIT = {
    "tobit": lambda x: _tobit(x),
    "tohex": _bit_tohex,
    "bnot": lambda x: _s32(~_u32(x)),
    "band": _fold(lambda a, b: a & b),
    "bor": _fold(lambda a, b: a | b),
    "bxor": _fold(lambda a, b: a ^ b),
    "lshift": _shift(lambda x, n: x << n),
    "rshift": _shift(lambda x, n: x >> n),
    "arshift": _shift(lambda x, n: _s32(x) >> n),
    "rol": _shift(lambda x, n: (x << n) | (x >> (32 - n)) if n else x),
    "ror": _shift(lambda x, n: (x >> n) | (x << (32 - n)) if n else x),
    "bswap": lambda x: _s32(int.from_bytes(_u32(x).to_bytes(4, "little"), "big")),
}


# -- cjson ----------------------------------------------------------------------------------
_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x0C: b"\\f",
            0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t"}


def _json_string(s: bytes, out: bytearray) -> None:
    out += b'"'
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out += esc
        elif ch < 0x20 or ch == 0x7F:
            out += b"\\u%04x" % ch
        else:
            out.append(ch)
    out += b'"'


def _fmt_number(x: float) -> bytes:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        raise LibError("Cannot serialise number: must not be NaN or Inf")
    return (b"%.14g" % x)


class CJson:
    """cjson.encode/decode with lua-cjson's default settings."""

    def __init__(self, lua: Any, null: Any) -> None:
        self.lua = lua
        self.null = null

    def encode(self, value: Any) -> bytes:
        out = bytearray()
        self._encode(value, out, 0)
        return bytes(out)

    def _encode(self, v: Any, out: bytearray, depth: int) -> None:
        if v is None or _lua_type(v) == "userdata":  # cjson.null
            out += b"null"
        elif v is True:
            out += b"true"
        elif v is False:
            out += b"false"
        elif isinstance(v, (int, float)):
            out += _fmt_number(v)
        elif isinstance(v, bytes):
            _json_string(v, out)
        elif _lua_type(v) == "table":
            depth += 1
            if depth > 1000:
                raise LibError(f"Cannot serialise, excessive nesting ({depth})")
            items = list(v.items())
            max_index = 0
            is_array = True
            for k, _ in items:
                n = _number_key(k)
                if n is None:
                    is_array = False
                    break
                max_index = max(max_index, n)
            if is_array and items:
                if max_index > len(items) * 2 and max_index > 10:
                    raise LibError("Cannot serialise table: excessively sparse array")
                out += b"["
                for i in range(1, max_index + 1):
                    if i > 1:
                        out += b","
                    self._encode(v[i], out, depth)
                out += b"]"
                return
            out += b"{"
            first = True
            for k, item in items:
                if not first:
                    out += b","
                first = False
                if isinstance(k, bytes):
                    _json_string(k, out)
                elif isinstance(k, (int, float)) and not isinstance(k, bool):
                    _json_string(_fmt_number(k), out)
                else:
                    raise LibError("Cannot serialise table: table key must be a number or "
                                   "string")
                out += b":"
                self._encode(item, out, depth)
            out += b"}"
        else:
            raise LibError(f"Cannot serialise {_lua_type(v) or 'userdata'}: type not supported")

    def decode(self, text: Any) -> Any:
        if not isinstance(text, bytes):
            if isinstance(text, (int, float)):
                text = b"%.14g" % text
            else:
                raise LibError("bad argument #1 to 'decode' (string expected, got "
                               f"{_tname(text)})")
        return _JsonDecoder(text, self).decode()


class _JsonDecoder:
    _TOKENS = {ord("{"): "T_OBJ_BEGIN", ord("}"): "T_OBJ_END", ord("["): "T_ARR_BEGIN",
               ord("]"): "T_ARR_END", ord(":"): "T_COLON", ord(","): "T_COMMA"}

    def __init__(self, text: bytes, owner: CJson) -> None:
        self.s = text
        self.i = 0
        self.owner = owner
        self.depth = 0

    def _skip_ws(self) -> None:
        s = self.s
        while self.i < len(s) and s[self.i] in b" \t\r\n":
            self.i += 1

    def _token(self) -> tuple[str, Any, int]:
        """(type, value, 1-based start position) of the next token."""
        self._skip_ws()
        s, i = self.s, self.i
        if i >= len(s):
            return "T_END", None, i + 1
        ch = s[i]
        name = self._TOKENS.get(ch)
        if name:
            self.i += 1
            return name, None, i + 1
        if ch == 0x22:
            return "T_STRING", self._string(), i + 1
        if ch in b"-0123456789":
            j = i + 1
            while j < len(s) and s[j] in b"0123456789+-.eE":
                j += 1
            try:
                value = float(s[i:j])
            except ValueError:
                return "T_ERROR", "invalid number", i + 1
            self.i = j
            return "T_NUMBER", value, i + 1
        for word, tok, value in ((b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False),
                                 (b"null", "T_NULL", None)):
            if s.startswith(word, i):
                self.i = i + len(word)
                return tok, value, i + 1
        return "T_ERROR", "invalid token", i + 1

    def _string(self) -> bytes:
        s = self.s
        i = self.i + 1
        out = bytearray()
        while True:
            if i >= len(s):
                raise LibError(f"Expected value but found unexpected end of string at "
                               f"character {i + 1}")
            ch = s[i]
            if ch == 0x22:
                self.i = i + 1
                return bytes(out)
            if ch == 0x5C:
                esc = s[i + 1:i + 2]
                simple = {b'"': b'"', b"\\": b"\\", b"/": b"/", b"b": b"\b", b"f": b"\f",
                          b"n": b"\n", b"r": b"\r", b"t": b"\t"}
                if esc in simple:
                    out += simple[esc]
                    i += 2
                    continue
                if esc == b"u":
                    try:
                        code = int(s[i + 2:i + 6], 16)
                    except ValueError:
                        raise LibError(f"Expected value but found invalid unicode escape code "
                                       f"at character {self.i + 1}") from None
                    i += 6
                    if 0xD800 <= code < 0xDC00 and s[i:i + 2] == b"\\u":
                        low = int(s[i + 2:i + 6], 16)
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
                    out += chr(code).encode("utf-8", "surrogatepass")
                    continue
                raise LibError(f"Expected value but found invalid escape code at character "
                               f"{self.i + 1}")
            out.append(ch)
            i += 1

    def decode(self) -> Any:
        tok, value, pos = self._token()
        result = self._value(tok, value, pos)
        tok, _, pos = self._token()
        if tok != "T_END":
            raise LibError(f"Expected the end but found {tok} at character {pos}")
        return result

    def _describe(self, tok: str, value: Any) -> str:
        return value if tok == "T_ERROR" else tok

    def _value(self, tok: str, value: Any, pos: int) -> Any:
        lua = self.owner.lua
        if tok in ("T_STRING", "T_NUMBER", "T_BOOLEAN"):
            if tok == "T_NUMBER" and value == int(value) and abs(value) < 2 ** 53:
                return int(value)
            return value
        if tok == "T_NULL":
            return self.owner.null
        if tok == "T_OBJ_BEGIN":
            self._nest(pos)
            table = lua.table()
            tok, value, pos = self._token()
            if tok == "T_OBJ_END":
                self.depth -= 1
                return table
            while True:
                if tok != "T_STRING":
                    raise LibError(f"Expected object key string but found "
                                   f"{self._describe(tok, value)} at character {pos}")
                key = value
                tok, value, pos = self._token()
                if tok != "T_COLON":
                    raise LibError(f"Expected colon but found {self._describe(tok, value)} "
                                   f"at character {pos}")
                tok, value, pos = self._token()
                table[key] = self._value(tok, value, pos)
                tok, value, pos = self._token()
                if tok == "T_OBJ_END":
                    self.depth -= 1
                    return table
                if tok != "T_COMMA":
                    raise LibError(f"Expected comma or object end but found "
                                   f"{self._describe(tok, value)} at character {pos}")
                tok, value, pos = self._token()
        if tok == "T_ARR_BEGIN":
            self._nest(pos)
            table = lua.table()
            n = 0
            tok, value, pos = self._token()
            if tok == "T_ARR_END":
                self.depth -= 1
                return table
            while True:
                n += 1
                table[n] = self._value(tok, value, pos)
                tok, value, pos = self._token()
                if tok == "T_ARR_END":
                    self.depth -= 1
                    return table
                if tok != "T_COMMA":
                    raise LibError(f"Expected comma or array end but found "
                                   f"{self._describe(tok, value)} at character {pos}")
                tok, value, pos = self._token()
        raise LibError(f"Expected value but found {self._describe(tok, value)} at character "
                       f"{pos}")

    def _nest(self, pos: int) -> None:
        self.depth += 1
        if self.depth > 1000:
            raise LibError(f"Found too many nested data structures ({self.depth}) at "
                           f"character {pos}")


# -- cmsgpack -------------------------------------------------------------------------------
class CMsgpack:
    def __init__(self, lua: Any) -> None:
        self.lua = lua

    def pack(self, *values: Any) -> bytes:
        if not values:
            raise LibError("MessagePack pack needs input.")
        out = bytearray()
        for v in values:
            self._pack(v, out, 0)
        return bytes(out)

    def _pack(self, v: Any, out: bytearray, depth: int) -> None:
        if v is None:
            out += b"\xc0"
        elif v is True:
            out += b"\xc3"
        elif v is False:
            out += b"\xc2"
        elif isinstance(v, float) and v == int(v) and not math.isinf(v) and abs(v) < 2 ** 63:
            self._pack(int(v), out, depth)
        elif isinstance(v, int):
            self._int(v, out)
        elif isinstance(v, float):
            if pystruct.unpack(">f", pystruct.pack(">f", v))[0] == v:
                out += b"\xca" + pystruct.pack(">f", v)
            else:
                out += b"\xcb" + pystruct.pack(">d", v)
        elif isinstance(v, bytes):
            n = len(v)
            if n < 32:
                out.append(0xA0 | n)
            elif n < 256:
                out += b"\xd9" + bytes([n])
            elif n < 65536:
                out += b"\xda" + n.to_bytes(2, "big")
            else:
                out += b"\xdb" + n.to_bytes(4, "big")
            out += v
        elif _lua_type(v) == "table":
            if depth >= 16:  # lua-cmsgpack's LUACMSGPACK_MAX_NESTING: deeper is nil
                out += b"\xc0"
                return
            items = list(v.items())
            keys = [_number_key(k) for k, _ in items]
            if not items or (None not in keys and max(keys) == len(items)):
                self._header(len(items), out, 0x90, b"\xdc", b"\xdd")
                for i in range(1, len(items) + 1):
                    self._pack(v[i], out, depth + 1)
            else:
                self._header(len(items), out, 0x80, b"\xde", b"\xdf")
                for k, item in items:
                    self._pack(k, out, depth + 1)
                    self._pack(item, out, depth + 1)
        else:
            out += b"\xc0"

    @staticmethod
    def _header(n: int, out: bytearray, fix: int, m16: bytes, m32: bytes) -> None:
        if n < 16:
            out.append(fix | n)
        elif n < 65536:
            out += m16 + n.to_bytes(2, "big")
        else:
            out += m32 + n.to_bytes(4, "big")

    @staticmethod
    def _int(v: int, out: bytearray) -> None:
        if v >= 0:
            if v < 128:
                out.append(v)
            elif v < 256:
                out += b"\xcc" + bytes([v])
            elif v < 65536:
                out += b"\xcd" + v.to_bytes(2, "big")
            elif v < 1 << 32:
                out += b"\xce" + v.to_bytes(4, "big")
            else:
                out += b"\xcf" + (v & ((1 << 64) - 1)).to_bytes(8, "big")
        else:
            if v >= -32:
                out.append(v & 0xFF)
            elif v >= -128:
                out += b"\xd0" + v.to_bytes(1, "big", signed=True)
            elif v >= -32768:
                out += b"\xd1" + v.to_bytes(2, "big", signed=True)
            elif v >= -(1 << 31):
                out += b"\xd2" + v.to_bytes(4, "big", signed=True)
            else:
                out += b"\xd3" + max(v, -(1 << 63)).to_bytes(8, "big", signed=True)

    def unpack(self, data: Any) -> tuple:
        if not isinstance(data, bytes):
            raise LibError("bad argument #1 to 'unpack' (string expected, got "
                           f"{_tname(data)})")
        values = []
        pos = 0
        while pos < len(data):
            value, pos = self._unpack(data, pos)
            values.append(value)
        return tuple(values)

    def _unpack(self, d: bytes, i: int) -> tuple[Any, int]:
        if i >= len(d):
            raise LibError("Missing bytes in input.")
        b = d[i]
        i += 1
        if b < 0x80:
            return b, i
        if b >= 0xE0:
            return b - 256, i
        if 0xA0 <= b <= 0xBF:
            n = b & 0x1F
            return d[i:i + n], i + n
        if 0x90 <= b <= 0x9F:
            return self._array(d, i, b & 0x0F)
        if 0x80 <= b <= 0x8F:
            return self._map(d, i, b & 0x0F)
        fixed = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in fixed:
            return fixed[b], i
        sizes = {0xCC: (1, False), 0xCD: (2, False), 0xCE: (4, False), 0xCF: (8, False),
                 0xD0: (1, True), 0xD1: (2, True), 0xD2: (4, True), 0xD3: (8, True)}
        if b in sizes:
            n, signed = sizes[b]
            return int.from_bytes(d[i:i + n], "big", signed=signed), i + n
        if b == 0xCA:
            return pystruct.unpack(">f", d[i:i + 4])[0], i + 4
        if b == 0xCB:
            return pystruct.unpack(">d", d[i:i + 8])[0], i + 8
        if b in (0xD9, 0xDA, 0xDB, 0xC4, 0xC5, 0xC6):
            n_len = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4}[b]
            n = int.from_bytes(d[i:i + n_len], "big")
            i += n_len
            return d[i:i + n], i + n
        if b in (0xDC, 0xDD):
            n_len = 2 if b == 0xDC else 4
            return self._array(d, i + n_len, int.from_bytes(d[i:i + n_len], "big"))
        if b in (0xDE, 0xDF):
            n_len = 2 if b == 0xDE else 4
            return self._map(d, i + n_len, int.from_bytes(d[i:i + n_len], "big"))
        raise LibError("Bad data format in input.")

    def _array(self, d: bytes, i: int, n: int) -> tuple[Any, int]:
        table = self.lua.table()
        for k in range(1, n + 1):
            table[k], i = self._unpack(d, i)
        return table, i

    def _map(self, d: bytes, i: int, n: int) -> tuple[Any, int]:
        table = self.lua.table()
        for _ in range(n):
            key, i = self._unpack(d, i)
            table[key], i = self._unpack(d, i)
        return table, i


# -- struct ---------------------------------------------------------------------------------
_STRUCT_CODES = {"b": "b", "B": "B", "h": "h", "H": "H", "l": "q", "L": "Q", "j": "q",
                 "J": "Q", "T": "Q", "f": "f", "d": "d", "n": "d"}


def _struct_items(fmt: bytes):
    """Yield (endian, code, size) for each directive of a lua-struct format."""
    endian = "<"
    text = fmt.decode("latin-1")
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if ch in " ":
            continue
        if ch in "<>=!":
            endian = {"<": "<", ">": ">", "=": "<", "!": "<"}[ch]
            while i < len(text) and text[i].isdigit():
                i += 1
            continue
        j = i
        while j < len(text) and text[j].isdigit():
            j += 1
        size = int(text[i:j]) if j > i else None
        i = j
        yield endian, ch, size


def struct_pack(fmt: bytes, *args: Any) -> bytes:
    out = bytearray()
    args_iter = iter(args)
    for endian, code, size in _struct_items(fmt):
        if code in "iI":
            n = size or 4
            v = int(next(args_iter))
            out += (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little" if endian == "<" else "big")
        elif code in _STRUCT_CODES:
            v = next(args_iter)
            c = _STRUCT_CODES[code]
            out += pystruct.pack(endian + c, v if c in "fd" else int(v))
        elif code == "s":
            out += bytes(next(args_iter)) + b"\0"
        elif code == "c":
            v = bytes(next(args_iter))
            n = size if size is not None else len(v)
            out += v[:n].ljust(n, b"\0")
        elif code == "x":
            out += b"\0"
        else:
            raise LibError(f"invalid format option '{code}'")
    return bytes(out)


def struct_unpack(fmt: bytes, data: bytes, pos: Any = 1) -> tuple:
    i = int(pos) - 1
    values: list[Any] = []
    for endian, code, size in _struct_items(fmt):
        if code in "iI":
            n = size or 4
            if i + n > len(data):
                raise LibError("data string too short")
            values.append(int.from_bytes(data[i:i + n], "little" if endian == "<" else "big",
                                         signed=code == "i"))
            i += n
        elif code in _STRUCT_CODES:
            c = _STRUCT_CODES[code]
            n = pystruct.calcsize(c)
            if i + n > len(data):
                raise LibError("data string too short")
            values.append(pystruct.unpack(endian + c, data[i:i + n])[0])
            i += n
        elif code == "s":
            end = data.index(b"\0", i)
            values.append(data[i:end])
            i = end + 1
        elif code == "c":
            n = size or 0
            values.append(data[i:i + n])
            i += n
        elif code == "x":
            i += 1
        else:
            raise LibError(f"invalid format option '{code}'")
    values.append(i + 1)
    return tuple(values)


def struct_size(fmt: bytes) -> int:
    total = 0
    for _, code, size in _struct_items(fmt):
        if code in "iI":
            total += size or 4
        elif code in _STRUCT_CODES:
            total += pystruct.calcsize(_STRUCT_CODES[code])
        elif code == "x":
            total += 1
        elif code == "c" and size is not None:
            total += size
        else:
            raise LibError("options 's' and 'c0' have no fixed size")
    return total


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Report argument mistakes as LibError (raised into Lua as the script's error)."""

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except LibError:
            raise
        except (StopIteration, TypeError, ValueError, OverflowError, pystruct.error) as exc:
            raise LibError(f"bad argument ({exc})") from None

    return call


def library_tables(lua: Any, null: Any) -> dict[str, dict[bytes, Any]]:
    """Name -> {function name: Lua-callable}, for the prelude to wrap."""
    cjson = CJson(lua, null)
    msgpack = CMsgpack(lua)
    return {
        "cjson": {b"encode": guarded(cjson.encode), b"decode": guarded(cjson.decode)},
        "bit": {k.encode(): guarded(v) for k, v in BIT.items()},
        "struct": {b"pack": guarded(struct_pack), b"unpack": guarded(struct_unpack),
                   b"size": guarded(struct_size)},
        "cmsgpack": {b"pack": guarded(msgpack.pack), b"unpack": guarded(msgpack.unpack)},
    }
