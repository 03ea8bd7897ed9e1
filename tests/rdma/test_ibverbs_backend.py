"""Choosing the real-verbs backend (host side: no RDMA device needed).

``verbs.get_backend`` prefers the compiled libibverbs backend (``pykv.rdma.ibverbs``) and
falls back to pyverbs when the extension was not built (no rdma-core headers at build
time); asking for ``ibverbs`` by name without it is a one-line setup error. The backend
itself runs on real verbs in the soft-RoCE VM (tests/rdma/verbs, with both backends).
"""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from pykv.rdma import pyverbs_backend
from pykv.rdma import verbs as v

BUILT = importlib.util.find_spec("pykv.rdma.ibverbs") is not None
NO_DEVICE = not os.path.exists("/dev/infiniband/rdma_cm")


def _no_extension(monkeypatch):
    # a None entry makes the import raise ImportError, as for a build without the headers
    monkeypatch.setitem(sys.modules, "pykv.rdma.ibverbs", None)


@pytest.mark.parametrize("name", ["auto", "verbs", None])
def test_auto_falls_back_to_pyverbs_without_the_extension(monkeypatch, name):
    _no_extension(monkeypatch)
    monkeypatch.delenv("PYKV_RDMA_BACKEND", raising=False)
    sentinel = object()
    monkeypatch.setattr(pyverbs_backend, "load_pyverbs_backend", lambda: sentinel)
    assert v.get_backend(name) is sentinel


def test_ibverbs_by_name_without_the_extension_is_a_setup_error(monkeypatch):
    _no_extension(monkeypatch)
    with pytest.raises(v.SetupError, match="compiled ibverbs backend is not available.*"
                                           "libibverbs-dev librdmacm-dev"):
        v.get_backend("ibverbs")


@pytest.mark.skipif(not BUILT, reason="pykv.rdma.ibverbs not built (no rdma-core headers)")
def test_auto_prefers_the_extension(monkeypatch):
    import pykv.rdma.ibverbs as ib

    sentinel = object()
    monkeypatch.setattr(ib, "load_ibverbs_backend", lambda: sentinel)
    monkeypatch.setattr(pyverbs_backend, "load_pyverbs_backend",
                        lambda: pytest.fail("pyverbs chosen over the compiled backend"))
    monkeypatch.setenv("PYKV_RDMA_BACKEND", "auto")
    assert v.get_backend() is sentinel
    assert v.get_backend("ibverbs") is sentinel
    assert v.get_backend("soft").name == "soft"


@pytest.mark.skipif(not (BUILT and NO_DEVICE), reason="needs the extension and no RDMA device")
def test_no_device_is_a_setup_error_naming_the_fix():
    with pytest.raises(v.SetupError, match="rdma link add rxe0 type rxe"):
        v.get_backend("ibverbs")


@pytest.mark.skipif(not BUILT, reason="pykv.rdma.ibverbs not built (no rdma-core headers)")
def test_the_extension_implements_the_interface():
    import pykv.rdma.ibverbs as ib
    from pykv.rdma.cverbs import CMemoryRegion, CQueuePair

    assert issubclass(ib.IbvQP, CQueuePair) and issubclass(ib.IbvMR, CMemoryRegion)
    assert issubclass(ib.IbvListener, v.CmListener)
    assert issubclass(ib.IbvRequest, v.ConnectRequest)
    assert issubclass(ib.IbverbsBackend, v.Backend) and ib.IbverbsBackend.name == "ibverbs"
    # a QP that never got resources: every call is refused or a no-op, nothing crashes
    qp = ib.IbvQP.__new__(ib.IbvQP)
    qp.closed = True
    assert qp.get_cq_event() is False and qp.poll(64) == [] and qp.cm_events() == []
    with pytest.raises(v.VerbsError):
        qp.reg_mr(4096, True)
    qp.close()
    with pytest.raises(v.SetupError, match="wildcard"):
        ib.IbverbsBackend().listen("0.0.0.0", 6380, 16)
