"""Host-side checks of the pyverbs backend's helpers (no RDMA device needed)."""
from __future__ import annotations

import ctypes
import enum
import socket
import sys
import types

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
    monkeypatch.setattr(v.resource, "getrlimit", lambda r: (64 * 1024, 64 * 1024))
    with pytest.raises(v.SetupError, match=r"locked-memory limit is 64 KiB.*ulimit -l"):
        v.check_memlock(1 << 20)


# -- the two pyverbs module layouts, with fake modules -----------------------------------

_MODULES = {"cmid": ["CMID", "AddrInfo", "CMEvent", "CMEventChannel", "ConnParam"],
            "cq": ["CQ", "CompChannel"], "device": ["Context", "get_device_list"],
            "mr": ["MR"], "pd": ["PD"], "pyverbs_error": ["PyverbsRDMAError"],
            "qp": ["QP", "QPAttr", "QPCap", "QPInitAttr"], "wr": ["SGE", "RecvWR", "SendWR"]}


def _fake_pyverbs(monkeypatch, enum_modules: dict[str, types.ModuleType]) -> None:
    """A ``pyverbs`` package in sys.modules: the classes the backend imports as
    placeholders, ``enum_modules`` as given, the other layout's enum modules missing."""
    pkg = types.ModuleType("pyverbs")
    pkg.__path__ = []
    monkeypatch.setitem(sys.modules, "pyverbs", pkg)
    for name, attrs in _MODULES.items():
        mod = types.ModuleType(f"pyverbs.{name}")
        for attr in attrs:
            setattr(mod, attr, type(attr, (), {}))
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
        setattr(pkg, name, mod)
    for name in ("enums", "cm_enums", "libibverbs_enums", "librdmacm_enums"):
        mod = enum_modules.get(name)
        monkeypatch.setitem(sys.modules, f"pyverbs.{name}", mod)  # None: ImportError
        if mod is not None:
            setattr(pkg, name, mod)
    monkeypatch.setattr(pb, "_pv", None)


def _enum_module(name: str, classes: dict[str, dict[str, int]], **flat: int) -> types.ModuleType:
    mod = types.ModuleType(f"pyverbs.{name}")
    for cls_name, members in classes.items():
        setattr(mod, cls_name, enum.IntEnum(cls_name, members))
    for k, value in flat.items():
        setattr(mod, k, value)
    return mod


def test_pyverbs_50_layout_with_constants_only_inside_enum_classes(monkeypatch):
    # rdma-core >= 50 compiled with Cython 3 (PyPI's pyverbs, rdma-core 65 from source):
    # libibverbs_enums.IBV_QPT_RC does not exist, libibverbs_enums.ibv_qp_type.IBV_QPT_RC does
    _fake_pyverbs(monkeypatch, {
        "libibverbs_enums": _enum_module("libibverbs_enums", {
            "ibv_qp_type": {"IBV_QPT_RC": 2, "IBV_QPT_UC": 3},
            "ibv_access_flags": {"IBV_ACCESS_LOCAL_WRITE": 1, "IBV_ACCESS_REMOTE_WRITE": 2}}),
        "librdmacm_enums": _enum_module("librdmacm_enums",
                                        {"rdma_port_space": {"RDMA_PS_TCP": 262}},
                                        RAI_PASSIVE=1)})
    pv = pb._import()
    assert pv.e.IBV_QPT_RC == 2 and pv.e.IBV_QPT_UC == 3
    assert pv.e.IBV_ACCESS_LOCAL_WRITE | pv.e.IBV_ACCESS_REMOTE_WRITE == 3
    assert pv.ce.RDMA_PS_TCP == 262 and pv.ce.RAI_PASSIVE == 1
    assert "IBV_QPT_RC" in vars(pv.e)                    # looked up once, then cached
    with pytest.raises(AttributeError, match="no constant IBV_NOPE"):
        _ = pv.e.IBV_NOPE
    assert pv.CMID is sys.modules["pyverbs.cmid"].CMID


def test_pyverbs_44_layout_with_module_level_constants(monkeypatch):
    _fake_pyverbs(monkeypatch, {
        "enums": _enum_module("enums", {"ibv_qp_type": {"IBV_QPT_RC": 2}}, IBV_QPT_RC=2,
                              IBV_QPS_RTS=3),
        "cm_enums": _enum_module("cm_enums", {}, RDMA_PS_TCP=262, RAI_PASSIVE=1)})
    pv = pb._import()
    assert (pv.e.IBV_QPT_RC, pv.e.IBV_QPS_RTS, pv.ce.RDMA_PS_TCP) == (2, 3, 262)
    assert type(pv.e.IBV_QPT_RC) is int                  # the module's own value


def test_pyverbs_without_enum_modules_is_a_setup_error(monkeypatch):
    _fake_pyverbs(monkeypatch, {})
    with pytest.raises(v.SetupError, match="pyverbs is not available"):
        pb._import()
