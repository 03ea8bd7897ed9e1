"""Which pyverbs the verbs suite runs against, when the caller expects a particular build.

``tests/rdma/test_vm.py``'s third stage runs this directory again with an rdma-core built
from source (``tests/rdma/vm/build-rdma-core.sh``: pyverbs >= 50, module layout
``libibverbs_enums``/``librdmacm_enums``) ahead of Debian's, and sets
``PYKV_EXPECT_PYVERBS`` to that build's directory: these tests then prove that ``import
pyverbs``, libibverbs, librdmacm and the rxe provider all come from it. Without the
variable they skip.
"""
from __future__ import annotations

import os

import pytest

WANT = os.environ.get("PYKV_EXPECT_PYVERBS", "")

pytestmark = [
    pytest.mark.rdma_verbs,
    pytest.mark.skipif(not WANT, reason="PYKV_EXPECT_PYVERBS not set (no particular pyverbs "
                                        "build expected)"),
    pytest.mark.skipif(not os.path.exists("/dev/infiniband/rdma_cm"),
                       reason="no RDMA device (runs inside the soft-RoCE VM)"),
]


def _mapped(fragment: str) -> set[str]:
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if fragment in line and "/" in line}


def test_pyverbs_is_the_expected_build_with_the_new_layout():
    import pyverbs
    import pyverbs.libibverbs_enums
    import pyverbs.librdmacm_enums

    root = os.path.realpath(WANT)
    assert os.path.realpath(pyverbs.__file__).startswith(root + "/python/"), pyverbs.__file__
    assert os.path.realpath(pyverbs.libibverbs_enums.__file__).startswith(root + "/python/")
    assert pyverbs.librdmacm_enums.__name__ == "pyverbs.librdmacm_enums"
    with pytest.raises(ImportError):
        import pyverbs.cm_enums  # noqa: F401  (the rdma-core 44 layout: not in this build)


def test_libraries_and_rxe_provider_come_from_the_build():
    from pykv.rdma import pyverbs_backend as pb

    backend = pb.load_pyverbs_backend()
    assert backend is not None
    from pyverbs.device import Context

    with Context(name="rxe0") as ctx:
        assert ctx.query_device() is not None
        root = os.path.realpath(WANT)
        for lib in ("libibverbs.so", "librdmacm.so", "librxe-rdmav"):
            paths = {os.path.realpath(p) for p in _mapped(lib)}
            assert paths and all(p.startswith(root + "/lib/") for p in paths), (lib, paths)


COMPILED = r"""
import os, sys
from pykv.rdma.ibverbs import load_ibverbs_backend
assert "pyverbs" not in sys.modules
load_ibverbs_backend()   # rdma_get_devices: opens every device, loading its provider
with open("/proc/self/maps") as f:
    for line in f:
        if "/" in line and any(n in line for n in ("libibverbs.so", "librdmacm.so", "librxe")):
            print(os.path.realpath(line.split()[-1]))
"""


def test_the_compiled_backend_runs_on_the_build(tmp_path):
    # built against Debian's rdma-core 44 headers, it must run on this build's libraries
    # (same sonames and symbol versions) and rxe provider; a fresh process, without pyverbs
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", COMPILED], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    paths = set(out.stdout.split())
    root = os.path.realpath(WANT)
    for lib in ("libibverbs.so", "librdmacm.so", "librxe-rdmav"):
        found = {p for p in paths if lib in p}
        assert found and all(p.startswith(root + "/lib/") for p in found), (lib, paths)
