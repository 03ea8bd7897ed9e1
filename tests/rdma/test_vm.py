"""Boot the soft-RoCE VM (tests/rdma/vm) and run the pyverbs-backend suite inside it.

Opt-in (``-m vm`` or ``PYKV_VM_TESTS=1``): it needs root, qemu and debootstrap (installed
from Debian packages by build-image.sh), builds the image on first use (~3-4 min) and boots
it under TCG (~30 s) — see tests/rdma/vm/README.md.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.join(HERE, "vm")
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.environ.get("WORK", "/var/tmp/pykv-rxevm")

pytestmark = [pytest.mark.vm, pytest.mark.timeout(1800)]


def _run_vm(cmd: str, timeout: int) -> subprocess.CompletedProcess:
    for _attempt in range(2):  # qemu TCG occasionally dies at start-up; one retry
        proc = subprocess.run(["bash", os.path.join(VM, "run-vm.sh"), "-p", ROOT, "-t",
                               str(timeout), cmd], capture_output=True, text=True,
                              timeout=timeout + 60, env=dict(os.environ, WORK=WORK))
        if proc.returncode != 125:
            return proc
    return proc


def test_pyverbs_backend_in_soft_roce_vm():
    if os.geteuid() != 0:
        pytest.skip("building and booting the VM needs root")
    if not os.path.exists(os.path.join(WORK, "rootfs.ext4")):
        build = subprocess.run(["bash", os.path.join(VM, "build-image.sh")], capture_output=True,
                               text=True, timeout=1200, env=dict(os.environ, WORK=WORK))
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    python = os.path.join(ROOT, ".venv", "bin", "python")
    cmd = (f"cd {ROOT} && {python} -m pytest -q -p no:cacheprovider -rs --color=no "
           "tests/rdma/verbs tests/rdma/test_messages.py 2>&1")
    proc = _run_vm(cmd, 1200)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == 0, out[-6000:]
    # the inner pytest summary: everything ran (nothing skipped for want of a device)
    summary = re.findall(r"^=* ?(\d+ passed.*?|\d+ failed.*?) in [\d.]+s", out, re.M)
    assert summary and "passed" in summary[-1], out[-3000:]
    assert not re.search(r"failed|skipped|error", summary[-1]), summary[-1]
