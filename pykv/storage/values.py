"""What every stored value type promises the rest of pykv, and the string type's rules.

Strings are stored as ``bytes`` (``bytearray`` once APPEND/SETRANGE/SETBIT changed them in
place, which Redis reports as the ``raw`` encoding). Every other type is an object that
subclasses ``Value`` and answers ``type_name`` (what TYPE says), ``encoding(config)`` (what
OBJECT ENCODING says, from the config thresholds), ``copy()`` (COPY), ``len()`` and
``memory_usage()`` (an estimate for INFO/MEMORY USAGE).
"""
from __future__ import annotations

from typing import Any

OBJ_ENCODING_EMBSTR_SIZE_LIMIT = 44


class Value:
    """Base class for non-string values."""

    __slots__ = ()
    type_name: bytes = b"none"

    def encoding(self, config: Any) -> bytes:
        raise NotImplementedError

    def copy(self) -> Value:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def memory_usage(self) -> int:
        return 64


def is_string(value: Any) -> bool:
    return type(value) is bytes or type(value) is bytearray


def type_name(value: Any) -> bytes:
    if type(value) is bytes or type(value) is bytearray:
        return b"string"
    return value.type_name


def string_encoding(value: bytes | bytearray) -> bytes:
    """``int`` for canonical 64-bit integers, ``embstr`` up to 44 bytes, else ``raw``."""
    if type(value) is bytearray:
        return b"raw"
    if len(value) <= 20:
        from pykv.protocol._parser import string2ll as to_int

        if to_int(value) is not None:
            return b"int"
    return b"embstr" if len(value) <= OBJ_ENCODING_EMBSTR_SIZE_LIMIT else b"raw"


def copy_value(value: Any) -> Any:
    if type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytearray(value)
    return value.copy()
