"""MEMORY USAGE: the bytes a key and its value take, as an estimate.

Arguments and errors are Redis 7.0's (``SAMPLES <count>``, 0 = all, a negative count is a
syntax error; a missing key is nil). Like Redis the key is found without expiring it or
touching its access time. The figure is pykv's own estimate, not Redis's allocator
arithmetic: strings are sized like Redis objects (16-byte header; embedded up to 44 bytes,
else a separate buffer; integers in the header) rounded to jemalloc-like size classes,
containers report their type's ``memory_usage()`` (all elements: SAMPLES is checked but pykv
does not sample), plus the key's buffer and a 24-byte dict entry.
"""
from __future__ import annotations

from pykv import errors
from pykv.commands.args import parse_int
from pykv.commands.registry import command
from pykv.storage.values import is_string, string_encoding

_ROBJ = 16
_DICT_ENTRY = 24
_EMBSTR_MAX = 44


def _size_class(n: int) -> int:
    """Round an allocation up the way jemalloc's small and large size classes do."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << (n.bit_length() - 3)      # four classes per doubling
    return (n + step - 1) & ~(step - 1)


def _sds(length: int) -> int:
    header = 3 if length < 1 << 8 else 5 if length < 1 << 16 else 9
    return _size_class(header + length + 1)


def _string_usage(value: bytes | bytearray) -> int:
    if string_encoding(value) == b"int":
        return _ROBJ
    if len(value) <= _EMBSTR_MAX:
        return _size_class(_ROBJ + 3 + len(value) + 1)
    return _ROBJ + _sds(len(value))


@command("memory|usage")
def memory_usage(c, argv):
    i = 3
    while i < len(argv):
        if argv[i].lower() == b"samples" and i + 1 < len(argv):
            if parse_int(argv[i + 1]) < 0:
                return errors.SYNTAX
            i += 2
        else:
            return errors.SYNTAX
    value = c.db.data.get(argv[2])
    if value is None:
        return None
    size = _string_usage(value) if is_string(value) else value.memory_usage()
    return size + _sds(len(argv[2])) + _DICT_ENTRY
