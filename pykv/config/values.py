"""Config value types: text in (redis.conf, command line, CONFIG SET), typed value, text out.

Each type named in the config table (``bool``, ``int``, ``memory``, ``enum``, ``string``,
``multi`` and the special ones such as ``save`` or ``client-output-buffer-limit``) has a
``Codec`` here with three jobs: ``parse`` (with Redis 7.0's exact reason texts, which end up
in ``ERR CONFIG SET failed ... - <reason>`` and in the start-up "FATAL CONFIG FILE ERROR"),
``format`` (the CONFIG GET text) and ``rewrite`` (the lines CONFIG REWRITE writes, and
whether they must be written when the file does not mention the option).

Numbers follow Redis's C parsers rather than Python's: integers are ``string2ll`` (no
spaces, no ``+``, no leading zeros), memory values are ``memtoull`` (digits plus an optional
``b/k/kb/m/mb/g/gb`` unit, an empty string is 0), and results wrap to 64 bits as in C.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykv.config.table import ConfigEntry

ULLONG_MAX = (1 << 64) - 1


class ConfigError(ValueError):
    """A value the entry's type rejects; the message is Redis's reason text."""


# -- C-style number parsing ----------------------------------------------------------------
def string2ll(text: str) -> int | None:
    """Redis's strict ``string2ll``: ``-?[1-9][0-9]*`` or ``0``, within long long."""
    digits = text[1:] if text.startswith("-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    if digits[0] == "0" and text != "0":
        return None
    value = int(text)
    if not -(1 << 63) <= value < (1 << 63):
        return None
    return value


_MEMORY_UNITS = {
    "": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2,
    "g": 1000 ** 3, "gb": 1024 ** 3,
}


def parse_memory(text: str) -> int | None:
    """Redis's ``memtoull``: leading digits plus an optional unit; None if malformed.

    ``""`` and ``"b"`` are 0, as in Redis. The product wraps at 64 bits like C's.
    """
    if text.startswith("-"):
        return None
    i = 0
    while i < len(text) and text[i].isascii() and text[i].isdigit():
        i += 1
    unit = text[i:].lower()
    if unit not in _MEMORY_UNITS or i >= 128:
        return None
    value = min(int(text[:i]), ULLONG_MAX) if i else 0
    return (value * _MEMORY_UNITS[unit]) & ULLONG_MAX


def _strtoll_octal(text: str) -> int | None:
    t = text.lstrip(" \t\n\r\f\v")
    sign = 1
    if t[:1] in ("+", "-"):
        sign = -1 if t[0] == "-" else 1
        t = t[1:]
    if not t or any(ch not in "01234567" for ch in t):
        return None
    value = sign * int(t, 8)
    return value if -(1 << 63) <= value < (1 << 63) else None


def format_memory_rewrite(value: int) -> str:
    """How CONFIG REWRITE writes a byte count: the largest exact gb/mb/kb unit."""
    for unit, size in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if value and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)


def quote_repr(text: str) -> str:
    """Redis's ``sdscatrepr``: a double-quoted string with C escapes for the unprintable."""
    out = ['"']
    for byte in text.encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch in _REPR_ESCAPES:
            out.append(_REPR_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    out.append('"')
    return "".join(out)


_REPR_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\a": "\\a", "\b": "\\b"}


# -- codecs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rewrite:
    """What CONFIG REWRITE does for one option: ``lines`` to write (None: write nothing and
    drop the option's old lines) and ``force`` (write even if the file lacks the option)."""

    lines: list[str] | None
    force: bool = False


@dataclass(frozen=True)
class Codec:
    parse: Callable[[ConfigEntry, list[str], Any], Any]
    format: Callable[[ConfigEntry, Any], str]
    rewrite: Callable[[ConfigEntry, str, Any], Rewrite]
    multi_arg: bool = False  # takes several arguments (CONFIG SET splits its value on " ")


def _line(name: str, text: str, force: bool) -> Rewrite:
    return Rewrite([f"{name} {text}"], force)


# bool
def _parse_bool(entry: ConfigEntry, args: list[str], current: Any) -> bool:
    low = args[0].lower()
    if low not in ("yes", "no"):
        raise ConfigError("argument must be 'yes' or 'no'")
    value = low == "yes"
    if value and entry.reject_true:
        raise ConfigError(entry.reject_true)
    return value


def _format_bool(entry: ConfigEntry, value: Any) -> str:
    return "yes" if value else "no"


def _rewrite_bool(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, _format_bool(entry, value), value != entry.default)


# int and memory (numeric)
def _check_bounds(entry: ConfigEntry, value: int) -> int:
    if "percent" in entry.flags and value < 0:
        if value < entry.min:
            raise ConfigError(f"percentage argument must be less or equal to {-entry.min}")
        return value
    if not entry.min <= value <= entry.max:
        if "octal" in entry.flags:
            raise ConfigError(
                f"argument must be between {entry.min:o} and {entry.max:o} inclusive")
        raise ConfigError(f"argument must be between {entry.min} and {entry.max} inclusive")
    return value


def _parse_int(entry: ConfigEntry, args: list[str], current: Any) -> int:
    text = args[0]
    if "octal" in entry.flags:
        value = _strtoll_octal(text)
        if value is None:
            raise ConfigError("argument couldn't be parsed as an octal number")
    else:
        value = string2ll(text)
        if value is None:
            raise ConfigError("argument couldn't be parsed into an integer")
    return _check_bounds(entry, value)


def _parse_memory_value(entry: ConfigEntry, args: list[str], current: Any) -> int:
    text = args[0]
    value = parse_memory(text)
    if value is not None:
        if "unsigned" not in entry.flags and value >= 1 << 63:
            value -= 1 << 64  # stored in a signed C type
        return _check_bounds(entry, value)
    if "percent" in entry.flags:
        pct = string2ll(text[:-1]) if len(text) > 1 and text.endswith("%") else None
        if pct is not None and pct >= 0:
            return _check_bounds(entry, -pct)
        raise ConfigError("argument must be a memory or percent value")
    raise ConfigError("argument must be a memory value")


def _format_int(entry: ConfigEntry, value: Any) -> str:
    if "octal" in entry.flags:
        return f"{value:o}"
    if "percent" in entry.flags and value < 0:
        return f"{-value}%"
    return str(value)


def _rewrite_int(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, _format_int(entry, value), value != entry.default)


def _rewrite_memory(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    if "percent" in entry.flags and value < 0:
        return _line(name, f"{-value}%", True)
    return _line(name, format_memory_rewrite(value), value != entry.default)


# enum
def _parse_enum(entry: ConfigEntry, args: list[str], current: Any) -> str:
    low = args[0].lower()
    if low not in entry.choices:
        raise ConfigError(
            f"argument(s) must be one of the following: {', '.join(entry.choices)}")
    return entry.enum_synonyms.get(low, low)


def _format_str(entry: ConfigEntry, value: Any) -> str:
    return value


def _rewrite_enum(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, value, value != entry.default)


# string: ``nullable`` strings (Redis's EMPTY_STRING_IS_NULL) are left out of a rewritten
# file when empty and always written when set
def _parse_string(entry: ConfigEntry, args: list[str], current: Any) -> str:
    text = args[0]
    if entry.validate is not None:
        reason = entry.validate(text)
        if reason:
            raise ConfigError(reason)
    return text


def _rewrite_string(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    if "nullable" in entry.flags:
        if not value:
            return Rewrite(None)
        return _line(name, quote_repr(value), True)
    return _line(name, quote_repr(value), value != entry.default)


# multi: a list of words (bind)
def _parse_words(entry: ConfigEntry, args: list[str], current: Any) -> list[str]:
    if len(args) == 1 and args[0] == "":
        return []
    if entry.max_args and len(args) > entry.max_args:
        raise ConfigError(entry.too_many_args)
    return list(args)


def _format_words(entry: ConfigEntry, value: Any) -> str:
    return " ".join(value)


def _rewrite_bind(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    if value == entry.default:
        return Rewrite(None)
    return _line(name, " ".join(value) if value else '""', True)


# save: [(seconds, changes), ...]
def _parse_save(entry: ConfigEntry, args: list[str], current: Any) -> list[tuple[int, int]]:
    if len(args) == 1:
        args = args[0].split()  # one quoted argument holds all points: --save "3600 1"
    if len(args) % 2:
        raise ConfigError("Invalid save parameters")
    numbers = []
    for i, arg in enumerate(args):
        value = _strtol_prefix(arg)
        if value is None or value < (1 if i % 2 == 0 else 0):
            raise ConfigError("Invalid save parameters")
        numbers.append(value)
    return list(zip(numbers[::2], numbers[1::2], strict=True))


def _strtol_prefix(text: str) -> int | None:
    """``strtoll(text, &end, 10)`` that must consume everything (spaces and sign allowed)."""
    t = text.lstrip(" \t\n\r\f\v")
    body = t[1:] if t[:1] in ("+", "-") else t
    if not body:
        return 0 if not text else None  # strtoll("") is 0 with nothing left over
    if not body.isascii() or not body.isdigit():
        return None
    return max(min(int(t), (1 << 63) - 1), -(1 << 63))


def _format_save(entry: ConfigEntry, value: Any) -> str:
    return " ".join(f"{s} {c}" for s, c in value)


def _rewrite_save(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    if not value:
        return Rewrite([f'{name} ""'], True)
    return Rewrite([f"{name} {s} {c}" for s, c in value], True)


# client-output-buffer-limit: {"normal": (hard, soft, seconds), "replica": ..., "pubsub": ...}
_OBUF_CLASSES = {"normal": "normal", "slave": "replica", "replica": "replica",
                 "pubsub": "pubsub"}


def _parse_obuf(entry: ConfigEntry, args: list[str], current: Any) -> dict:
    if len(args) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits = dict(current if current is not None else entry.default)
    for i in range(0, len(args), 4):
        cls = _OBUF_CLASSES.get(args[i].lower())
        if cls is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        hard, soft = parse_memory(args[i + 1]), parse_memory(args[i + 2])
        seconds = _strtol_prefix(args[i + 3])
        if hard is None or soft is None or seconds is None or seconds < 0:
            raise ConfigError(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        limits[cls] = (hard, soft, seconds)
    return limits


def _format_obuf(entry: ConfigEntry, value: Any) -> str:
    return " ".join(
        f"{'slave' if cls == 'replica' else cls} {h} {s} {sec}"
        for cls, (h, s, sec) in value.items())


def _rewrite_obuf(entry: ConfigEntry, name: str, value: Any) -> list[Rewrite]:
    return [Rewrite([f"{name} {cls} {format_memory_rewrite(h)} {format_memory_rewrite(s)} "
                     f"{sec}"], (h, s, sec) != entry.default[cls])
            for cls, (h, s, sec) in value.items()]


# oom-score-adj-values: three ints
def _parse_oom_values(entry: ConfigEntry, args: list[str], current: Any) -> list[int]:
    if len(args) != 3:
        raise ConfigError("wrong number of arguments")
    values = []
    for arg in args:
        value = _strtol_prefix(arg)
        if value is None or not -2000 <= value <= 2000:
            raise ConfigError(
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
        values.append(value)
    return values


def _format_ints(entry: ConfigEntry, value: Any) -> str:
    return " ".join(str(v) for v in value)


def _rewrite_oom_values(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, _format_ints(entry, value), value != entry.default)


# latency-tracking-info-percentiles: floats in [0, 100]
def _parse_percentiles(entry: ConfigEntry, args: list[str], current: Any) -> list[float]:
    if len(args) == 1 and args[0] == "":
        return []
    values = []
    for arg in args:
        try:
            if arg != arg.strip() or not arg:
                raise ValueError
            value = float(arg)
        except ValueError:
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters") from None
        if not 0.0 <= value <= 100.0:
            raise ConfigError(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        values.append(value)
    return values


def format_percentile(value: float) -> str:
    """A percentile as Redis prints it: ``%f`` without trailing zeros (99.9, 50, 12.5)."""
    text = f"{value:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _format_percentiles(entry: ConfigEntry, value: Any) -> str:
    return " ".join(format_percentile(v) for v in value)


def _rewrite_percentiles(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, _format_percentiles(entry, value) if value else '""', True)


# replicaof: "host port" or empty
def _parse_replicaof(entry: ConfigEntry, args: list[str], current: Any) -> str:
    if len(args) != 2:
        raise ConfigError("wrong number of arguments")
    if args[0].lower() == "no" and args[1].lower() == "one":
        return ""
    port = _strtol_prefix(args[1])
    if port is None or not 0 <= port <= 65535:
        raise ConfigError("Invalid master port")
    return f"{args[0]} {port}"


def _rewrite_replicaof(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return Rewrite([f"{name} {value}"], True) if value else Rewrite(None)


# dir: an absolute path to an existing directory (the server chdir()s there)
def _parse_dir(entry: ConfigEntry, args: list[str], current: Any) -> str:
    if len(args) != 1:
        raise ConfigError("wrong number of arguments")
    path = os.path.join(current or os.getcwd(), args[0])
    try:
        if not os.path.isdir(path):
            os.stat(path)
            raise ConfigError(os.strerror(20))  # ENOTDIR
        if not os.access(path, os.X_OK):
            raise ConfigError(os.strerror(13))  # EACCES
    except OSError as exc:
        raise ConfigError(exc.strerror or str(exc)) from None
    return os.path.normpath(path)


def _rewrite_dir(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, quote_repr(value), True)


# flags: several names from a set, OR-ed (shutdown-on-sigint/sigterm)
def _parse_flags(entry: ConfigEntry, args: list[str], current: Any) -> tuple[str, ...]:
    words = [a.lower() for a in args]
    if not words or any(w not in entry.choices for w in words):
        raise ConfigError(
            f"argument(s) must be one of the following: {', '.join(entry.choices)}")
    if entry.validate is not None:
        reason = entry.validate(" ".join(words))
        if reason:
            raise ConfigError(reason)
    chosen = {w for w in words if w != entry.choices[0]}
    return tuple(c for c in entry.choices if c in chosen)


def _format_flags(entry: ConfigEntry, value: Any) -> str:
    return " ".join(value) if value else entry.choices[0]


def _rewrite_flags(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, _format_flags(entry, value), tuple(value) != tuple(entry.default))


# notify-keyspace-events: Redis's class letters, kept in canonical order
_KEYSPACE_ALL = "g$lshzxetd"  # what 'A' stands for (7.0: 'm' and 'n' are not in 'A')


def _keyspace_flags(text: str) -> set[str] | None:
    flags: set[str] = set()
    for ch in text:
        if ch == "A":
            flags.update(_KEYSPACE_ALL)
        elif ch in "g$lshzxeKEtmdn":
            flags.add(ch)
        else:
            return None
    return flags


def _parse_keyspace_events(entry: ConfigEntry, args: list[str], current: Any) -> str:
    if len(args) != 1:
        raise ConfigError("wrong number of arguments")
    flags = _keyspace_flags(args[0])
    if flags is None:
        raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    # Redis's order; with every class set it prints "A" (and then drops 'n', as 7.0 does)
    if set(_KEYSPACE_ALL) <= flags:
        text = "A"
    else:
        text = "".join(c for c in "g$lshzxetdn" if c in flags)
    return text + "".join(c for c in "KEm" if c in flags)


def _rewrite_keyspace_events(entry: ConfigEntry, name: str, value: Any) -> Rewrite:
    return _line(name, quote_repr(value), bool(value))


CODECS: dict[str, Codec] = {
    "bool": Codec(_parse_bool, _format_bool, _rewrite_bool),
    "int": Codec(_parse_int, _format_int, _rewrite_int),
    "memory": Codec(_parse_memory_value, _format_int, _rewrite_memory),
    "enum": Codec(_parse_enum, _format_str, _rewrite_enum),
    "string": Codec(_parse_string, _format_str, _rewrite_string),
    "multi": Codec(_parse_words, _format_words, _rewrite_bind, multi_arg=True),
    "save": Codec(_parse_save, _format_save, _rewrite_save, multi_arg=True),
    "client-output-buffer-limit": Codec(_parse_obuf, _format_obuf, _rewrite_obuf,
                                        multi_arg=True),
    "oom-score-adj-values": Codec(_parse_oom_values, _format_ints, _rewrite_oom_values,
                                  multi_arg=True),
    "percentiles": Codec(_parse_percentiles, _format_percentiles, _rewrite_percentiles,
                         multi_arg=True),
    "replicaof": Codec(_parse_replicaof, _format_str, _rewrite_replicaof, multi_arg=True),
    "dir": Codec(_parse_dir, _format_str, _rewrite_dir),
    "flags": Codec(_parse_flags, _format_flags, _rewrite_flags, multi_arg=True),
    "keyspace-events": Codec(_parse_keyspace_events, _format_str, _rewrite_keyspace_events),
}


def codec_for(entry: ConfigEntry) -> Codec:
    try:
        return CODECS[entry.type]
    except KeyError:
        raise ConfigError(f"unsupported config type {entry.type}") from None
