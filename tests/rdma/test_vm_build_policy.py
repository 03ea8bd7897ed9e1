"""The VM suites skip a build stage only for want of a network (rdma_support.vm_build)."""
from __future__ import annotations

import pytest
import rdma_support


@pytest.fixture
def fake_vm(tmp_path, monkeypatch):
    """tests/rdma/vm replaced by build scripts that exit with the status given in $1."""
    (tmp_path / "build.sh").write_text('echo "ERROR: what went wrong" >&2; exit "$1"\n')
    monkeypatch.setattr(rdma_support, "VM_DIR", str(tmp_path))
    return monkeypatch


@pytest.mark.parametrize("status,online,expect_offline", [
    (3, False, True),    # a download failed and the archive is out of reach: skip
    (4, False, True),    # apt-get could not fetch the build dependencies: skip
    (3, True, False),    # a download or checksum failure with the network up: fail
    (4, True, False),
    (5, False, False),   # the build itself failed: always fail
    (2, False, False),
])
def test_only_no_network_excuses_a_failed_build(fake_vm, status, online, expect_offline):
    fake_vm.setattr(rdma_support, "network_up", lambda *a, **k: online)
    why, offline = rdma_support.vm_build("build.sh", str(status), 30)
    assert why.startswith(f"build.sh exit {status}: ") and "what went wrong" in why
    assert offline is expect_offline


def test_a_finished_build_is_not_missing(fake_vm):
    assert rdma_support.vm_build("build.sh", "0", 30) == (None, True)
