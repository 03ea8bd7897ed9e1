"""Byte vectors for every control message of the Valkey RDMA protocol (§2)."""
from __future__ import annotations

import pytest

from pykv.rdma import messages as m


def test_register_xfer_memory_vector():
    msg = m.RegisterXferMemory(addr=0x00007F1234567000, length=1 << 20, rkey=0x1A2B)
    want = bytes.fromhex("0003" + "00" * 14 + "00007f1234567000" + "00100000" + "00001a2b")
    assert msg.encode() == want
    assert len(want) == 32
    assert m.decode(want) == msg


def test_keepalive_vector():
    assert m.Keepalive().encode() == b"\x00\x02" + b"\x00" * 30
    assert m.decode(m.KEEPALIVE_BYTES) == m.Keepalive()


def test_keepalive_ignores_reserved_bytes():
    assert isinstance(m.decode(b"\x00\x02" + b"\xff" * 30), m.Keepalive)


@pytest.mark.parametrize("opcode", [m.OP_GET_SERVER_FEATURE, m.OP_SET_CLIENT_FEATURE])
def test_feature_vectors(opcode):
    msg = m.Feature(opcode, b"\x12\x34", 0x0102030405060708)
    want = bytes([0, opcode]) + b"\x12\x34" + b"\0" * 20 + bytes.fromhex("0102030405060708")
    assert msg.encode() == want
    assert m.decode(want) == msg


def test_feature_select_is_echoed_verbatim():
    # select travels as raw bytes (the server echoes it without a byte swap)
    raw = bytes([0, 0, 0xAB, 0xCD]) + b"\0" * 28
    assert m.decode(raw).select == b"\xab\xcd"


def test_memory_ignores_reserved_bytes():
    raw = bytearray(m.RegisterXferMemory(5, 6, 7).encode())
    raw[2:16] = b"\xee" * 14
    assert m.decode(bytes(raw)) == m.RegisterXferMemory(5, 6, 7)


@pytest.mark.parametrize("length", [0, 1, 31, 33, 64])
def test_wrong_length_is_rejected(length):
    with pytest.raises(m.MessageError, match="recv corrupted cmd"):
        m.decode(b"\x00\x03" + b"\0" * (length - 2) if length >= 2 else b"\0" * length)


@pytest.mark.parametrize("opcode", [4, 0x52, 0xFFFF])
def test_unknown_opcode_is_rejected(opcode):
    with pytest.raises(m.MessageError, match="unknown cmd"):
        m.decode(opcode.to_bytes(2, "big") + b"\0" * 30)


def test_legacy_magic_r_protocol_is_unknown():
    # pizhenwei's fork starts with magic 'R': a Valkey peer reads that as opcode 0x52xx
    legacy = b"R\x01\x00\x00" + b"\0" * 28
    with pytest.raises(m.MessageError):
        m.decode(legacy)
    assert m.peek_opcode(legacy) == 0x5201
