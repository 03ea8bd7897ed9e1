"""Argument parsing shared by command families, with Redis's exact number rules.

Redis parses integers with ``string2ll`` (no '+', no spaces, no leading zeros) and doubles
with ``strtod`` (leading space rejected, the whole string must be used, NaN rejected, hex
floats and ``inf`` accepted). Python's ``int()``/``float()`` are more lenient, so these
helpers validate first.
"""
from __future__ import annotations

import re

from pykv import errors
from pykv.protocol import ErrorReply
from pykv.protocol._parser import string2ll as _string2ll
from pykv.util.limits import LLONG_MAX, LLONG_MIN  # noqa: F401  (the families import them from here)

_FLOAT_RE = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    rb"|(?i:inf|infinity))\Z"
)


def to_int(data: bytes) -> int | None:
    """``string2ll``: the integer value of ``data`` or None if Redis would reject it."""
    return _string2ll(data)


def parse_int(data: bytes, err: ErrorReply = errors.NOT_INTEGER) -> int:
    value = to_int(data)
    if value is None:
        raise err
    return value


_INF = float("inf")


def _nonzero_mantissa(body: bytes) -> bool:
    if body[:2] in (b"0x", b"0X"):
        return bool(re.search(rb"[1-9a-fA-F]", body[2:].split(b"p")[0].split(b"P")[0]))
    return bool(re.search(rb"[1-9]", re.split(rb"[eE]", body)[0]))


def to_float(data: bytes) -> float | None:
    """``strtod`` as Redis uses it for doubles; None where Redis says "not a valid float"."""
    if not data or not _FLOAT_RE.match(data):
        return None
    body = data.lstrip(b"+-")
    if body[:2] in (b"0x", b"0X"):
        try:
            value = float.fromhex(data.decode())
        except OverflowError:
            return None
    else:
        value = float(data)
    if value in (_INF, -_INF) and b"n" not in body.lower():
        return None  # overflow: strtod sets ERANGE and Redis rejects it
    if value == 0.0 and _nonzero_mantissa(body):
        return None  # underflow to zero: ERANGE as well
    return value


def parse_float(data: bytes, err: ErrorReply = errors.NOT_FLOAT) -> float:
    value = to_float(data)
    if value is None:
        raise err
    return value
