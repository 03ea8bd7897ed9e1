"""Live configuration: typed values from the config table, parsed and formatted by type.

``Config`` holds one attribute per entry (``config.hz``, ``config.proto_max_bulk_len``) so
the hot path reads a plain attribute. ``parse_value``/``format_value`` turn the text forms
used by redis.conf, the command line and CONFIG SET/GET into values and back, with Redis's
error texts. Listeners that react to changes register with ``on_change``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykv.config.table import (
    BOOL,
    BY_NAME,
    ENTRIES,
    ENUM,
    INT,
    MEMORY,
    MULTI,
    STRING,
    ConfigEntry,
)


class ConfigError(ValueError):
    """A value the entry's type rejects; the message is Redis's reason text."""


_MEMORY_UNITS = {
    "": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2,
    "g": 1000 ** 3, "gb": 1024 ** 3,
}


def parse_memory(text: str) -> int | None:
    """Redis's ``memtoull``: a number with an optional k/kb/m/mb/g/gb unit; None if bad."""
    t = text.strip().lower()
    i = len(t)
    while i and t[i - 1].isalpha():
        i -= 1
    num, unit = t[:i], t[i:]
    if unit not in _MEMORY_UNITS or not num:
        return None
    try:
        value = int(num)
    except ValueError:
        return None
    return value * _MEMORY_UNITS[unit]


def parse_value(entry: ConfigEntry, args: list[str]) -> Any:
    """The typed value of ``args`` for ``entry`` (one string unless the entry is multi)."""
    t = entry.type
    if t == MULTI:
        return [a for arg in args for a in arg.split(" ") if a]
    text = args[0] if args else ""
    if t == BOOL:
        low = text.lower()
        if low == "yes":
            return True
        if low == "no":
            return False
        raise ConfigError("argument must be 'yes' or 'no'")
    if t == INT or t == MEMORY:
        if t == INT and "octal" in entry.flags:
            try:
                value = int(text, 8)
            except ValueError:
                raise ConfigError("argument couldn't be parsed into an integer") from None
        elif t == INT:
            try:
                value = int(text)
            except ValueError:
                mem = parse_memory(text)
                if mem is None:
                    raise ConfigError("argument couldn't be parsed into an integer") from None
                value = mem
        else:
            mem = parse_memory(text)
            if mem is None:
                raise ConfigError("argument must be a memory value")
            value = mem
        if not entry.min <= value <= entry.max:
            raise ConfigError(f"argument must be between {entry.min} and {entry.max} inclusive")
        return value
    if t == ENUM:
        low = text.lower()
        if low not in entry.choices:
            raise ConfigError(
                f"argument(s) must be one of the following: {', '.join(entry.choices)}"
            )
        return low
    if t == STRING:
        return text
    raise ConfigError(f"unsupported config type {t}")


def format_value(entry: ConfigEntry, value: Any) -> str:
    t = entry.type
    if t == BOOL:
        return "yes" if value else "no"
    if t == MULTI:
        return " ".join(value)
    if t == INT and "octal" in entry.flags:
        return oct(value)[2:] if value else "0"
    return str(value)


class Config:
    """The server's configuration values, one attribute per entry."""

    def __init__(self) -> None:
        for entry in ENTRIES:
            setattr(self, entry.attr, _copy(entry.default))
        self.listeners: list[str] = []  # --listener specs, in order
        self.config_file: str = ""
        self._hooks: dict[str, list[Callable[[Any], None]]] = {}

    def entry(self, name: str) -> ConfigEntry | None:
        return BY_NAME.get(name.lower())

    def get(self, name: str) -> Any:
        entry = BY_NAME[name.lower()]
        return getattr(self, entry.attr)

    def set(self, name: str, args: list[str] | str) -> Any:
        """Parse and store one value (used at start-up and by CONFIG SET)."""
        entry = BY_NAME[name.lower()]
        if isinstance(args, str):
            args = [args]
        value = parse_value(entry, args)
        setattr(self, entry.attr, value)
        for hook in self._hooks.get(entry.name, ()):
            hook(value)
        return value

    def get_text(self, name: str) -> str:
        entry = BY_NAME[name.lower()]
        return format_value(entry, getattr(self, entry.attr))

    def on_change(self, name: str, hook: Callable[[Any], None]) -> None:
        self._hooks.setdefault(BY_NAME[name].name, []).append(hook)


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value
