"""HyperLogLog values: Redis's exact string format, so PFADD/PFCOUNT/PFMERGE interoperate.

An HLL is an ordinary string value (``bytes``, or a ``bytearray`` once PFADD edits it in
place). This module checks the header the way Redis's ``isHLLObjectOrReply`` does and wraps
the register math in ``pykv.storage._hll`` (Cython: MurmurHash64A, sparse opcode editing,
dense registers, Ertl's estimator). See that module for the byte layout.
"""
from __future__ import annotations

from pykv.protocol import ErrorReply
from pykv.storage import _hll

HEADER_SIZE = _hll.HEADER_SIZE
DENSE_SIZE = _hll.DENSE_SIZE
REGISTERS = _hll.NUM_REGISTERS
SPARSE, DENSE = 1, 0

INVALID_HLL = ErrorReply(b"WRONGTYPE Key is not a valid HyperLogLog string value.")
CORRUPTED_HLL = ErrorReply(b"INVALIDOBJ Corrupted HLL object detected")

murmurhash64a = _hll.murmurhash64a
pat_len = _hll.pat_len
count_registers = _hll.count_registers
merge_into = _hll.merge_into
store_registers = _hll.store_registers
decode_sparse = _hll.decode_sparse
dense_registers = _hll.dense_registers
sparse_to_dense = _hll.sparse_to_dense


def new_hll() -> bytearray:
    """An empty sparse HLL: header then one XZERO run covering all 16384 registers."""
    buf = bytearray(b"HYLL\x01" + bytes(11))
    buf += b"\x7f\xff"
    return buf


def is_hll(value: bytes | bytearray) -> bool:
    """Redis's header checks: size, ``HYLL`` magic, known encoding, exact dense size."""
    if len(value) < HEADER_SIZE or value[:4] != b"HYLL" or value[4] > 1:
        return False
    return not (value[4] == DENSE and len(value) != DENSE_SIZE)


def add(buf: bytearray, element: bytes, max_bytes: int) -> int:
    """Add one element: 1 if a register changed, 0 if not; raises for a corrupt HLL."""
    index, count = pat_len(element)
    if buf[4] == DENSE:
        result = _hll.dense_set_if_greater(buf, index, count)
    else:
        result = _hll.sparse_set(buf, index, count, max_bytes)
    if result < 0:
        raise CORRUPTED_HLL
    return result


def invalidate_cache(buf: bytearray) -> None:
    buf[15] |= 0x80


def cached_count(buf: bytes | bytearray) -> int | None:
    """The cardinality in the header, or None when the stale bit is set."""
    if buf[15] & 0x80:
        return None
    return int.from_bytes(buf[8:16], "little")


def set_cached_count(buf: bytearray, card: int) -> None:
    buf[8:16] = card.to_bytes(8, "little")


def count(buf: bytes | bytearray) -> int:
    """Estimate from the registers; raises for a corrupt sparse HLL."""
    card, invalid = _hll.count(buf)
    if invalid:
        raise CORRUPTED_HLL
    return card
