"""Hash slots: Redis Cluster's CRC16 of a key (or of its ``{hash tag}``) modulo 16384.

Redis's crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no reflection), which
is exactly what the standard library's ``binascii.crc_hqx(data, 0)`` computes in C: the
per-command slot computation needs no extension of its own.
"""
from __future__ import annotations

from binascii import crc_hqx

CLUSTER_SLOTS = 16384
_MASK = CLUSTER_SLOTS - 1


def key_hash_slot(key: bytes) -> int:
    """Redis's keyHashSlot: the slot of ``key``; only the part between the first ``{`` and
    the first ``}`` after it is hashed when that part is not empty."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return crc_hqx(key[start + 1:end], 0) & _MASK
    return crc_hqx(key, 0) & _MASK
