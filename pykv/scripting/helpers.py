"""The ``redis.*`` helpers besides ``redis.call``: status_reply, error_reply, sha1hex, log,
setresp and set_repl, with the argument checks and texts of Redis's C functions.

They are Python functions, so Lua sees C functions as in Redis: ``return redis.log(...)``
is then no Lua tail call and keeps the script's frame, which error positions need
(``script: <sha>, on @user_script:1.``). Arguments arrive as lupa hands them over: Lua
strings as ``bytes``, numbers as ``int``/``float``, one value per argument (so ``len(args)``
is Lua's ``lua_gettop``). Returning ``()`` gives Lua no value at all, as ``return 0`` in C.
"""
from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable
from typing import Any

log = logging.getLogger("pykv")

# redis.LOG_DEBUG .. redis.LOG_WARNING onto the server's logging levels
_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.INFO, 3: logging.WARNING}
_WRONG_ARGS = b"ERR wrong number or type of arguments"  # returned as an error table
_INT_MIN = -2 ** 31


class ApiError(Exception):
    """A redis.* misuse: raised into Lua as ``ERR <text>`` (what a pcall sees, too)."""


def _c_int(number: float | int | None) -> int:
    """C's ``(int)`` of ``lua_tonumber``'s result: 0 for a non-number, truncated towards
    zero, INT_MIN (what x86 gives) when out of range."""
    if number is None:
        return 0
    if isinstance(number, float):
        if not math.isfinite(number):
            return _INT_MIN
        number = int(number)
    return number if _INT_MIN <= number < 2 ** 31 else _INT_MIN


def _lua_string(value: Any) -> bytes | None:
    """``lua_tolstring``: strings as they are, numbers as Lua prints them, else nothing."""
    t = type(value)
    if t is bytes:
        return value
    if t is int or t is float:
        return b"%.14g" % value
    return None


class Helpers:
    """The helpers for one Lua state; ``set_resp(n)`` is told about ``redis.setresp``."""

    def __init__(self, lua: Any, set_resp: Callable[[int], None]) -> None:
        self._table = lua.table_from
        self._tonumber = lua.eval("tonumber")  # Lua's own reading of numeric strings
        self._set_resp = set_resp
        self.error_table: Any = None  # the prelude's error_table, plugged in once it runs

    def _number(self, value: Any) -> float | int | None:
        t = type(value)
        if t is int or t is float:
            return value
        return self._tonumber(value) if t is bytes else None

    def status_reply(self, *args: Any) -> Any:
        if len(args) != 1 or type(args[0]) is not bytes:
            return self._table({b"err": _WRONG_ARGS})
        return self._table({b"ok": args[0]})

    def error_reply(self, *args: Any) -> Any:
        if len(args) != 1 or type(args[0]) is not bytes:
            return self._table({b"err": _WRONG_ARGS})
        msg = args[0]
        return self.error_table(msg if msg.startswith(b"-") else b"-" + msg)

    def sha1hex(self, *args: Any) -> bytes:
        if len(args) != 1:
            raise ApiError("wrong number of arguments")
        return hashlib.sha1(_lua_string(args[0]) or b"").hexdigest().encode()

    def log(self, *args: Any) -> tuple:
        if len(args) < 2:
            raise ApiError("redis.log() requires two arguments or more.")
        level = self._number(args[0])
        if level is None:
            raise ApiError("First argument must be a number (log level).")
        level = _c_int(level)
        if not 0 <= level <= 3:
            raise ApiError("Invalid debug level.")
        py_level = _LOG_LEVELS[level]
        if log.isEnabledFor(py_level):
            out = bytearray()
            for j, arg in enumerate(args[1:]):
                text = _lua_string(arg)
                if text is not None:  # other values are left out (a space stays)
                    if j:
                        out += b" "
                    out += text
            log.log(py_level, "%s", out.decode("utf-8", "replace"))
        return ()

    def setresp(self, *args: Any) -> tuple:
        if len(args) != 1:
            raise ApiError("redis.setresp() requires one argument.")
        resp = _c_int(self._number(args[0]))
        if resp != 2 and resp != 3:
            raise ApiError("RESP version must be 2 or 3.")
        self._set_resp(resp)
        return ()

    def set_repl(self, *args: Any) -> tuple:
        if len(args) != 1:
            raise ApiError("redis.set_repl() requires two arguments.")
        if _c_int(self._number(args[0])) & ~3:  # REPL_AOF | REPL_REPLICA
            raise ApiError("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL "
                           "or REPL_NONE.")
        return ()
