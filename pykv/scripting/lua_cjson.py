"""``cjson`` as Redis bundles it (lua-cjson 2.1.0): encode/decode and the option functions.

Each ``CJson`` holds one configuration, as each lua-cjson module instance does (``cjson.new``
makes another). Settings persist in the Lua state between scripts until SCRIPT FLUSH, as in
Redis. Numbers are written with C's ``%.<precision>g`` (14 digits by default), tables are
arrays when every key is an integer >= 1 (unless excessively sparse), and decoding follows
lua-cjson's tokenizer, its error texts and its ``strtod`` number syntax.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from pykv.scripting.libbase import (
    INT_MAX,
    LibError,
    integer_arg,
    lua_type,
    number_key,
    string_arg,
    tname,
)

_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x09: b"\\t",
            0x0A: b"\\n", 0x0C: b"\\f", 0x0D: b"\\r"}
_ESCAPE_TABLE = [(_ESCAPES.get(c) or (b"\\u%04x" % c if c < 0x20 or c == 0x7F else bytes([c])))
                 for c in range(256)]
_NEEDS_ESCAPE = re.compile(rb'[\x00-\x1f\x7f"\\/]')

_BOOL_OPTIONS = ("off", "on")
_INVALID_NUMBER_OPTIONS = ("off", "on", "null")

# C strtod's syntax (what lua-cjson's number tokens are): hex, inf/nan, decimal
_STRTOD = re.compile(
    rb"[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    rb"|(?i:infinity|inf|nan(?:\([0-9A-Za-z_]*\))?)"
    rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def _strtod(text: bytes) -> float | None:
    """C's strtod of the number at the start of ``text``: (value, length) or None."""
    m = _STRTOD.match(text)
    if not m:
        return None
    s = m.group(0)
    body = s.lstrip(b"+-")
    negative = s.startswith(b"-")
    if body[:2] in (b"0x", b"0X"):
        value = float.fromhex(s.decode())
    elif body[:1] in (b"n", b"N"):
        value = math.nan if not negative else -math.nan
    else:
        value = float(s.split(b"(")[0])
    return value, len(s)


class CJson:
    """One lua-cjson module instance: its settings and its functions."""

    def __init__(self, lua: Any, null: Any, make_module: Callable[[], Any]) -> None:
        self.lua = lua
        self.null = null
        self.make_module = make_module  # cjson.new: a fresh module table
        self.reset()

    def reset(self) -> None:
        self.encode_sparse_convert = 0
        self.encode_sparse_ratio = 2
        self.encode_sparse_safe = 10
        self.encode_max_depth = 1000
        self.decode_max_depth = 1000
        self.encode_invalid_numbers = 0
        self.decode_invalid_numbers = 1
        self.encode_keep_buffer = 1
        self.encode_number_precision = 14

    def functions(self) -> dict[bytes, Callable[..., Any]]:
        return {b"encode": self.encode, b"decode": self.decode,
                b"encode_sparse_array": self.cfg_encode_sparse_array,
                b"encode_max_depth": self.cfg_encode_max_depth,
                b"decode_max_depth": self.cfg_decode_max_depth,
                b"encode_number_precision": self.cfg_encode_number_precision,
                b"encode_keep_buffer": self.cfg_encode_keep_buffer,
                b"encode_invalid_numbers": self.cfg_encode_invalid_numbers,
                b"decode_invalid_numbers": self.cfg_decode_invalid_numbers,
                b"new": lambda *args: self.make_module()}

    # -- options --------------------------------------------------------------------------
    @staticmethod
    def _arg_init(args: tuple, n: int) -> tuple:
        if len(args) > n:
            raise LibError("found too many arguments", arg=n + 1)
        return args + (None,) * (n - len(args))

    @staticmethod
    def _enum(args: tuple, i: int, setting: int, options: tuple[str, ...],
              bool_true: int) -> tuple[int, Any]:
        v = args[i]
        if v is not None:
            if bool_true and isinstance(v, bool):
                setting = int(v) * bool_true
            else:
                name = string_arg(args, i).decode("latin-1")
                if name not in options:
                    raise LibError(f"invalid option '{name}'", arg=i + 1)
                setting = options.index(name)
        if bool_true and setting in (0, bool_true):
            return setting, setting != 0
        return setting, options[setting].encode()

    @staticmethod
    def _integer(args: tuple, i: int, setting: int, lo: int, hi: int) -> int:
        if args[i] is not None:
            value = integer_arg(args, i)
            if not lo <= value <= hi:
                # lua-cjson checks the range against argument #1 whichever it was
                raise LibError(f"expected integer between {lo} and {hi}", arg=1)
            setting = value
        return setting

    def cfg_encode_sparse_array(self, *args: Any) -> tuple:
        args = self._arg_init(args, 3)
        self.encode_sparse_convert, convert = self._enum(args, 0, self.encode_sparse_convert,
                                                         _BOOL_OPTIONS, 1)
        self.encode_sparse_ratio = self._integer(args, 1, self.encode_sparse_ratio, 0, INT_MAX)
        self.encode_sparse_safe = self._integer(args, 2, self.encode_sparse_safe, 0, INT_MAX)
        return convert, self.encode_sparse_ratio, self.encode_sparse_safe

    def cfg_encode_max_depth(self, *args: Any) -> int:
        args = self._arg_init(args, 1)
        self.encode_max_depth = self._integer(args, 0, self.encode_max_depth, 1, INT_MAX)
        return self.encode_max_depth

    def cfg_decode_max_depth(self, *args: Any) -> int:
        args = self._arg_init(args, 1)
        self.decode_max_depth = self._integer(args, 0, self.decode_max_depth, 1, INT_MAX)
        return self.decode_max_depth

    def cfg_encode_number_precision(self, *args: Any) -> int:
        args = self._arg_init(args, 1)
        self.encode_number_precision = self._integer(args, 0, self.encode_number_precision,
                                                     1, 14)
        return self.encode_number_precision

    def cfg_encode_keep_buffer(self, *args: Any) -> bool:
        args = self._arg_init(args, 1)
        self.encode_keep_buffer, value = self._enum(args, 0, self.encode_keep_buffer,
                                                    _BOOL_OPTIONS, 1)
        return value

    def cfg_encode_invalid_numbers(self, *args: Any) -> Any:
        args = self._arg_init(args, 1)
        self.encode_invalid_numbers, value = self._enum(args, 0, self.encode_invalid_numbers,
                                                        _INVALID_NUMBER_OPTIONS, 1)
        return value

    def cfg_decode_invalid_numbers(self, *args: Any) -> bool:
        args = self._arg_init(args, 1)
        self.decode_invalid_numbers, value = self._enum(args, 0, self.decode_invalid_numbers,
                                                        _BOOL_OPTIONS, 1)
        return value

    # -- encode ---------------------------------------------------------------------------
    def encode(self, *args: Any) -> bytes:
        if len(args) != 1:
            raise LibError("expected 1 argument", arg=1)
        out = bytearray()
        self._encode(args[0], out, 0, 1)
        return bytes(out)

    def _number(self, x: float | int, out: bytearray, what: str = "number") -> None:
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            mode = self.encode_invalid_numbers
            if mode == 0:
                raise LibError(f"Cannot serialise {what}: must not be NaN or Inf")
            if mode == 2:
                out += b"null"
                return
            if math.isnan(x):
                out += b"nan"
                return
        out += b"%.*g" % (self.encode_number_precision, x)

    def _encode(self, v: Any, out: bytearray, depth: int, slots: int) -> None:
        if v is None:
            out += b"null"
        elif v is True:
            out += b"true"
        elif v is False:
            out += b"false"
        elif isinstance(v, (int, float)):
            self._number(v, out)
        elif isinstance(v, bytes):
            _string(v, out)
        elif lua_type(v) == "table":
            depth += 1
            # lua-cjson also needs 3 free Lua stack slots per level (8000 in all)
            if depth > self.encode_max_depth or slots + 3 > 8000:
                raise LibError(f"Cannot serialise, excessive nesting ({depth})")
            items = list(v.items())
            length = self._array_length(items)
            if length > 0:
                out += b"["
                for i in range(1, length + 1):
                    if i > 1:
                        out += b","
                    self._encode(v[i], out, depth, slots + 1)
                out += b"]"
                return
            out += b"{"
            first = True
            for k, item in items:
                if not first:
                    out += b","
                first = False
                if isinstance(k, bytes):
                    _string(k, out)
                    out += b":"
                elif isinstance(k, (int, float)) and not isinstance(k, bool):
                    out += b'"'
                    self._number(k, out)
                    out += b'":'
                else:
                    raise LibError(f"Cannot serialise {tname(k)}: table key must be a number "
                                   "or string")
                self._encode(item, out, depth, slots + 2)
            out += b"}"
        elif lua_type(v) == "userdata":  # cjson.null, the only userdata scripts can make
            out += b"null"
        else:
            raise LibError(f"Cannot serialise {tname(v)}: type not supported")

    def _array_length(self, items: list) -> int:
        """lua_array_length: the array size, or -1 for an object (0 for an empty table)."""
        highest = 0  # a C int: an index beyond it converts to INT_MIN (x86-64)
        for k, _ in items:
            n = number_key(k)
            if n is None:
                return -1
            if n > highest:
                highest = n if n <= INT_MAX else -INT_MAX - 1
        ratio = self.encode_sparse_ratio
        if ratio > 0 and highest > len(items) * ratio and highest > self.encode_sparse_safe:
            if not self.encode_sparse_convert:
                raise LibError("Cannot serialise table: excessively sparse array")
            return -1
        return highest

    # -- decode ---------------------------------------------------------------------------
    def decode(self, *args: Any) -> Any:
        if len(args) != 1:
            raise LibError("expected 1 argument", arg=1)
        text = string_arg(args, 0)
        if len(text) >= 2 and (text[0] == 0 or text[1] == 0):
            raise LibError("JSON parser does not support UTF-16 or UTF-32")
        return _Decoder(text, self).decode()


def _string(s: bytes, out: bytearray) -> None:
    out += b'"'
    if _NEEDS_ESCAPE.search(s):
        table = _ESCAPE_TABLE
        out += b"".join(table[c] for c in s)
    else:
        out += s
    out += b'"'


_SIMPLE_ESCAPES = {0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x74: 0x09, 0x6E: 0x0A,
                   0x66: 0x0C, 0x72: 0x0D}
_SINGLE = {ord("{"): "T_OBJ_BEGIN", ord("}"): "T_OBJ_END", ord("["): "T_ARR_BEGIN",
           ord("]"): "T_ARR_END", ord(","): "T_COMMA", ord(":"): "T_COLON", 0: "T_END"}
_UNKNOWN = frozenset(b'fiInNt"+-0123456789')
_WHITESPACE = frozenset(b" \t\n\r")
_HEX4 = re.compile(rb"[0-9a-fA-F]{4}")


class _Token:
    __slots__ = ("type", "value", "index")

    def __init__(self, type_: str, value: Any, index: int) -> None:
        self.type = type_
        self.value = value  # the value, or the error text of a T_ERROR
        self.index = index  # 0-based position


class _Decoder:
    def __init__(self, text: bytes, cfg: CJson) -> None:
        self.s = text + b"\0"  # lua-cjson reads a NUL-terminated string
        self.i = 0
        self.cfg = cfg
        self.depth = 0

    def _invalid_number(self) -> bool:
        """json_is_invalid_number: +, hex, leading zeros, inf, nan."""
        s, p = self.s, self.i
        if s[p] == 0x2B:
            return True
        if s[p] == 0x2D:
            p += 1
        if s[p] == 0x30:
            nxt = s[p + 1]
            return (nxt | 0x20) == 0x78 or 0x30 <= nxt <= 0x39
        if s[p] <= 0x39:
            return False
        word = s[p:p + 3].lower()
        return word in (b"inf", b"nan")

    def _number_token(self, start: int) -> _Token:
        parsed = _strtod(self.s[self.i:])
        if parsed is None:
            return _Token("T_ERROR", "invalid number", self.i)
        value, n = parsed
        self.i += n
        return _Token("T_NUMBER", value, start)

    def next_token(self) -> _Token:
        s = self.s
        while s[self.i] in _WHITESPACE:
            self.i += 1
        start = self.i
        ch = s[start]
        single = _SINGLE.get(ch)
        if single is not None:
            if single != "T_END":
                self.i += 1
            return _Token(single, None, start)
        if ch not in _UNKNOWN:
            return _Token("T_ERROR", "invalid token", start)
        if ch == 0x22:
            return self._string_token(start)
        if ch == 0x2D or 0x30 <= ch <= 0x39:
            if not self.cfg.decode_invalid_numbers and self._invalid_number():
                return _Token("T_ERROR", "invalid number", start)
            return self._number_token(start)
        for word, tok, value in ((b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False),
                                 (b"null", "T_NULL", None)):
            if s.startswith(word, start):
                self.i += len(word)
                return _Token(tok, value, start)
        if self.cfg.decode_invalid_numbers and self._invalid_number():
            return self._number_token(start)
        return _Token("T_ERROR", "invalid token", start)

    def _string_token(self, start: int) -> _Token:
        s = self.s
        i = start + 1
        out = bytearray()
        while True:
            ch = s[i]
            if ch == 0x22:
                self.i = i + 1
                return _Token("T_STRING", bytes(out), start)
            if ch == 0:
                self.i = i
                return _Token("T_ERROR", "unexpected end of string", i)
            if ch == 0x5C:
                esc = s[i + 1]
                if esc == 0x75:  # \u
                    n = self._unicode_escape(i, out)
                    if n < 0:
                        self.i = i
                        return _Token("T_ERROR", "invalid unicode escape code", i)
                    i += n
                    continue
                mapped = _SIMPLE_ESCAPES.get(esc)
                if mapped is None:
                    self.i = i
                    return _Token("T_ERROR", "invalid escape code", i)
                out.append(mapped)
                i += 2
                continue
            out.append(ch)
            i += 1

    def _unicode_escape(self, i: int, out: bytearray) -> int:
        """Decode ``\\uXXXX`` (or a surrogate pair) at ``i``; its length, or -1."""
        s = self.s
        if not _HEX4.fullmatch(s[i + 2:i + 6]):
            return -1
        code = int(s[i + 2:i + 6], 16)
        length = 6
        if code & 0xF800 == 0xD800:
            if code & 0x400 or s[i + 6:i + 8] != b"\\u" \
                    or not _HEX4.fullmatch(s[i + 8:i + 12]):
                return -1
            low = int(s[i + 8:i + 12], 16)
            if low & 0xFC00 != 0xDC00:
                return -1
            code = (((code & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000
            length = 12
        out += chr(code).encode("utf-8", "surrogatepass")
        return length

    def fail(self, expected: str, tok: _Token) -> LibError:
        found = tok.value if tok.type == "T_ERROR" else tok.type
        return LibError(f"Expected {expected} but found {found} at character {tok.index + 1}")

    def decode(self) -> Any:
        value = self.value(self.next_token())
        tok = self.next_token()
        if tok.type != "T_END":
            raise self.fail("the end", tok)
        return value

    def descend(self) -> None:
        self.depth += 1
        if self.depth > self.cfg.decode_max_depth:
            raise LibError(f"Found too many nested data structures ({self.depth}) at "
                           f"character {self.i}")

    def value(self, tok: _Token) -> Any:
        t = tok.type
        if t == "T_STRING" or t == "T_BOOLEAN":
            return tok.value
        if t == "T_NUMBER":
            v = tok.value
            if v and v == v and not math.isinf(v) and v == int(v) and abs(v) < 2 ** 63:
                return int(v)  # the same Lua number (-0.0 stays a float: its sign counts)
            return v
        if t == "T_NULL":
            return self.cfg.null
        if t == "T_OBJ_BEGIN":
            return self.object()
        if t == "T_ARR_BEGIN":
            return self.array()
        raise self.fail("value", tok)

    def object(self) -> Any:
        self.descend()
        table = self.cfg.lua.table()
        tok = self.next_token()
        if tok.type == "T_OBJ_END":
            self.depth -= 1
            return table
        while True:
            if tok.type != "T_STRING":
                raise self.fail("object key string", tok)
            key = tok.value
            tok = self.next_token()
            if tok.type != "T_COLON":
                raise self.fail("colon", tok)
            table[key] = self.value(self.next_token())
            tok = self.next_token()
            if tok.type == "T_OBJ_END":
                self.depth -= 1
                return table
            if tok.type != "T_COMMA":
                raise self.fail("comma or object end", tok)
            tok = self.next_token()

    def array(self) -> Any:
        self.descend()
        table = self.cfg.lua.table()
        tok = self.next_token()
        if tok.type == "T_ARR_END":
            self.depth -= 1
            return table
        n = 0
        while True:
            n += 1
            table[n] = self.value(tok)
            tok = self.next_token()
            if tok.type == "T_ARR_END":
                self.depth -= 1
                return table
            if tok.type != "T_COMMA":
                raise self.fail("comma or array end", tok)
            tok = self.next_token()
