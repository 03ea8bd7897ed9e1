"""RDMA control messages: the fixed 32-byte, big-endian records of the Valkey protocol.

Owns the wire format of the control plane and nothing else (no verbs, no state). Every
message is exactly 32 bytes; the opcode is the big-endian ``uint16`` at offset 0 whatever
layout follows. Reserved bytes are written as zero and ignored when read. Encoding and
decoding live together so the byte-vector tests pin both directions.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

MSG_SIZE = 32

OP_GET_SERVER_FEATURE = 0
OP_SET_CLIENT_FEATURE = 1
OP_KEEPALIVE = 2
OP_REGISTER_XFER_MEMORY = 3

OPCODE_NAMES = {
    OP_GET_SERVER_FEATURE: "GetServerFeature",
    OP_SET_CLIENT_FEATURE: "SetClientFeature",
    OP_KEEPALIVE: "Keepalive",
    OP_REGISTER_XFER_MEMORY: "RegisterXferMemory",
}

_OPCODE = struct.Struct(">H")
# opcode, select (kept as the raw 2 bytes: the server echoes them without swapping), features
_FEATURE = struct.Struct(">H2s20xQ")
_KEEPALIVE = struct.Struct(">H30x")
_MEMORY = struct.Struct(">H14xQII")
assert _FEATURE.size == _KEEPALIVE.size == _MEMORY.size == MSG_SIZE


class MessageError(ValueError):
    """A received control message that the protocol does not allow."""


@dataclass(frozen=True, slots=True)
class Feature:
    """GetServerFeature (opcode 0) or SetClientFeature (opcode 1)."""

    opcode: int
    select: bytes = b"\0\0"
    features: int = 0

    def encode(self) -> bytes:
        return _FEATURE.pack(self.opcode, self.select, self.features)


@dataclass(frozen=True, slots=True)
class Keepalive:
    opcode: int = OP_KEEPALIVE

    def encode(self) -> bytes:
        return _KEEPALIVE.pack(OP_KEEPALIVE)


@dataclass(frozen=True, slots=True)
class RegisterXferMemory:
    """Announces the sender's RX window: virtual address, length and rkey."""

    addr: int
    length: int
    rkey: int
    opcode: int = OP_REGISTER_XFER_MEMORY

    def encode(self) -> bytes:
        return _MEMORY.pack(OP_REGISTER_XFER_MEMORY, self.addr, self.length, self.rkey)


Message = Feature | Keepalive | RegisterXferMemory

KEEPALIVE_BYTES = Keepalive().encode()


def peek_opcode(data: bytes | memoryview) -> int:
    return _OPCODE.unpack_from(data, 0)[0]


def decode(data: bytes | memoryview) -> Message:
    """Decode one received control message; ``MessageError`` for a bad length or opcode."""
    if len(data) != MSG_SIZE:
        raise MessageError(f"recv corrupted cmd (length {len(data)}, expected {MSG_SIZE})")
    op = peek_opcode(data)
    if op in (OP_GET_SERVER_FEATURE, OP_SET_CLIENT_FEATURE):
        _, select, features = _FEATURE.unpack(data)
        return Feature(op, select, features)
    if op == OP_KEEPALIVE:
        return Keepalive()
    if op == OP_REGISTER_XFER_MEMORY:
        _, addr, length, rkey = _MEMORY.unpack(data)
        return RegisterXferMemory(addr, length, rkey)
    raise MessageError(f"unknown cmd (opcode {op})")
