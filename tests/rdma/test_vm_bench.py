"""bench/rdma_vm in the soft-RoCE VM, a short slice: one boot, pykv (compiled ibverbs and
pyverbs backends) and valkey-server over RDMA and TCP, -P 1 and -P 16 at -c 2, tiny -n.
Checks only that every cell of the table and every ratio came out as a number (timings are
never asserted).

Opt-in (``-m vm`` or ``PYKV_VM_TESTS=1``), root only; needs the image (build-image.sh) and
the Valkey RDMA build (build-valkey.sh; skipped with the reason when it cannot be built for
want of a network).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from rdma_support import vm_build

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.environ.get("WORK", "/var/tmp/pykv-rxevm")
VALKEY_BIN = os.path.join(ROOT, "build", "valkey-rdma", "bin")

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.timeout(1500)]


def test_rdma_vm_bench_prints_the_table(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("booting the VM needs root")
    if not os.path.exists(os.path.join(WORK, "rootfs.ext4")):
        pytest.skip(f"no VM image in {WORK} (tests/rdma/vm/build-image.sh)")
    missing, offline = vm_build("build-valkey.sh", VALKEY_BIN, 1200)
    if missing:
        if offline:
            pytest.skip(f"no Valkey RDMA build: {missing} (no network)")
        pytest.fail(f"no Valkey RDMA build: {missing}", pytrace=False)
    out_json = tmp_path / "rdma_vm.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "rdma_vm"), "-P", "1,16",
                           "-c", "2", "-n", "200", "--repeats", "1", "--timeout", "1200",
                           "--json", str(out_json)],
                          capture_output=True, text=True, timeout=1400,
                          env=dict(os.environ, PYTHONPATH=ROOT, WORK=WORK))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    rows = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith(("set ", "get "))]
    assert sorted((r[0], r[1], r[2]) for r in rows) == [
        ("get", "1", "2"), ("get", "16", "2"), ("set", "1", "2"), ("set", "16", "2")], \
        proc.stdout[-4000:]
    for r in rows:
        # 5 x (rps, p50) then 6 ratios, all finite positive numbers
        nums = [float(x.removesuffix("ms")) for x in r[3:]]
        assert len(nums) == 16 and all(math.isfinite(x) and x > 0 for x in nums), r
    samples = json.loads(out_json.read_text())
    assert {(s["server"], s["transport"]) for s in samples} == {
        ("pykv-ibverbs", "rdma"), ("pykv-pyverbs", "rdma"), ("pykv-ibverbs", "tcp"),
        ("valkey", "rdma"), ("valkey", "tcp")}
