"""Host-side checks of the pyverbs backend's helpers (no RDMA device needed)."""
from __future__ import annotations

import ctypes
import socket

import pytest

from pykv.rdma import pyverbs_backend as pb
from pykv.rdma import verbs as v


def test_peek_never_faults():
    buf = ctypes.create_string_buffer(b"0123456789abcdef")
    assert pb._peek(ctypes.addressof(buf), 4) == b"0123"
    assert pb._peek(16, 8) is None                 # page zero
    assert pb._peek(0x7FFF_FFFF_0000_0000, 8) is None  # unmapped


class _Channel(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int)]


class _CmId(ctypes.Structure):
    _fields_ = [("verbs", ctypes.c_void_p), ("channel", ctypes.c_void_p),
                ("context", ctypes.c_void_p), ("qp", ctypes.c_void_p),
                ("src", ctypes.c_char * 128), ("dst", ctypes.c_char * 128)]


class _Event(ctypes.Structure):
    """Stands in for pyverbs' CMEvent: a Python object whose memory holds a pointer to a
    ``struct rdma_cm_event`` (ctypes keeps its buffer pointer right after the header)."""

    _fields_ = [("id", ctypes.c_void_p), ("listen_id", ctypes.c_void_p),
                ("event", ctypes.c_int), ("status", ctypes.c_int)]

    @property
    def event_type(self) -> int:
        return self.event


def _sockaddr_in(ip: str, port: int) -> bytes:
    return (socket.AF_INET.to_bytes(2, "little") + port.to_bytes(2, "big")
            + socket.inet_aton(ip)).ljust(128, b"\0")


def test_event_id_is_found_and_validated():
    chan = _Channel(fd=42)
    cm_id = _CmId(channel=ctypes.addressof(chan))
    ctypes.memmove(ctypes.addressof(cm_id) + _CmId.src.offset, _sockaddr_in("10.0.0.5", 6380), 128)
    ctypes.memmove(ctypes.addressof(cm_id) + _CmId.dst.offset, _sockaddr_in("10.0.0.9", 50123),
                   128)
    ev = _Event(id=ctypes.addressof(cm_id), listen_id=0, event=v.CM_ESTABLISHED)
    assert pb._event_id(ev, 42) == ctypes.addressof(cm_id)
    assert pb._event_id(ev, 43) == 0            # another channel's event: not ours
    assert pb._cm_addresses(ctypes.addressof(cm_id)) == ("10.0.0.5:6380", "10.0.0.9:50123")
    ev.id = 0x10                                  # garbage pointer: no crash, no match
    assert pb._event_id(ev, 42) == 0


def test_missing_pyverbs_or_device_is_a_setup_error(monkeypatch):
    monkeypatch.setattr(pb.os.path, "exists", lambda p: False)
    try:
        pb._import()
    except v.SetupError as exc:  # pyverbs not installed at all
        assert "pyverbs is not available" in str(exc)
        return
    with pytest.raises(v.SetupError, match="no RDMA device"):
        pb.load_pyverbs_backend()


def test_memlock_advice(monkeypatch):
    monkeypatch.setattr(pb.resource, "getrlimit", lambda r: (64 * 1024, 64 * 1024))
    with pytest.raises(v.SetupError, match=r"locked-memory limit is 64 KiB.*ulimit -l"):
        pb.check_memlock(1 << 20)
