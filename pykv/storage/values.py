"""What every stored value type promises the rest of pykv, and the string type's rules.

Strings are stored as ``bytes`` (``bytearray`` once APPEND/SETRANGE/SETBIT changed them in
place, which Redis reports as the ``raw`` encoding). Every other type is an object that
subclasses ``Value`` (or, as the compiled ``StreamValue`` must, has its methods) and
answers ``type_name`` (what TYPE says), ``encoding(config)`` (what OBJECT ENCODING says,
from the config thresholds), ``copy()`` (COPY), ``len()`` and ``memory_usage()`` (an
estimate for INFO/MEMORY USAGE).
"""
from __future__ import annotations

from typing import Any

from pykv.protocol._parser import string2ll

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


class Bookkeeping:
    """What only a set or hash that was scanned or sampled needs: the random-pick snapshot,
    the SSCAN index and the version that invalidates it (bumped when members are
    added; see ``pykv.storage.scan``)."""

    __slots__ = ("snap", "version", "scan_index")

    def __init__(self) -> None:
        self.snap: Any = None
        self.version = 0
        self.scan_index: Any = None


class ScannedValue(Value):
    """A set or hash: its ``Bookkeeping`` (``aux``) is made on first use, so a value that is
    never scanned or sampled carries one slot for it instead of three (two slots in all:
    16 bytes a value less). Writers that add members reset ``aux.snap`` and bump
    ``aux.version`` when ``aux`` exists (inline: they are on the SADD/HSET path)."""

    __slots__ = ("aux",)

    def bookkeeping(self) -> Bookkeeping:
        aux = self.aux
        if aux is None:
            aux = self.aux = Bookkeeping()
        return aux

    @property
    def version(self) -> int:
        aux = self.aux
        return 0 if aux is None else aux.version

    @property
    def scan_index(self) -> Any:
        aux = self.aux
        return None if aux is None else aux.scan_index

    @scan_index.setter
    def scan_index(self, index: Any) -> None:
        self.bookkeeping().scan_index = index


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
    if len(value) <= 20 and string2ll(value) is not None:
        return b"int"
    return b"embstr" if len(value) <= OBJ_ENCODING_EMBSTR_SIZE_LIMIT else b"raw"


def copy_value(value: Any) -> Any:
    if type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytearray(value)
    return value.copy()
