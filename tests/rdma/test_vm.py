"""Boot the soft-RoCE VM (tests/rdma/vm) and run the pyverbs-backend suite inside it, then,
in the same boot, the interop tests with the real Valkey RDMA clients, then the pyverbs
suite again on a newer pyverbs.

Opt-in (``-m vm`` or ``PYKV_VM_TESTS=1``): it needs root, qemu and debootstrap (installed
from Debian packages by build-image.sh), builds the image on first use (~3-4 min) and boots
it under TCG (~30 s) — see tests/rdma/vm/README.md. Before the boot, build-valkey.sh builds
valkey-cli/valkey-benchmark/valkey-server with RDMA from Debian's source package (~3 min
the first time, cached in /var/tmp/pykv-valkey) and build-rdma-core.sh builds rdma-core 65
with pyverbs in place from Debian's source package (~3.5 min the first time, cached in
/var/tmp/pykv-rdma-core); the third stage runs ``tests/rdma/verbs`` (not the Valkey file)
with that pyverbs, its libraries and its rxe provider ahead of Debian's (rdma-core 44), so
the pyverbs >= 50 module layout is exercised for real. When a build cannot be done for
want of a network, its test skips with the reason and the other stages still run; any other
build failure fails its test.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

import pytest
from rdma_support import vm_build

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.join(HERE, "vm")
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.environ.get("WORK", "/var/tmp/pykv-rxevm")
VALKEY_BIN = os.path.join(ROOT, "build", "valkey-rdma", "bin")
RDMA_CORE = os.path.join(ROOT, "build", "rdma-core")
VALKEY_MARK = "===== pykv valkey-interop suite ====="
PYVERBS50_MARK = "===== pykv pyverbs-50 suite ====="
OUTPUT = os.path.join(ROOT, "build", "vm-suite.log")   # the whole console of the last run

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3000)]


def _run_vm(cmd: str, timeout: int) -> subprocess.CompletedProcess:
    # a console log of its own: run-vm.sh reads the exit marker back from it, and the
    # default ($WORK/console.log) is shared with any other checkout booting the same image
    with tempfile.TemporaryDirectory(prefix="pykv-vm-") as tmp:
        env = dict(os.environ, WORK=WORK, LOG=os.path.join(tmp, "console.log"))
        for _attempt in range(2):  # qemu TCG occasionally dies at start-up; one retry
            proc = subprocess.run(["bash", os.path.join(VM, "run-vm.sh"), "-p", ROOT, "-t",
                                   str(timeout), cmd], capture_output=True, text=True,
                                  timeout=timeout + 60, env=env)
            if proc.returncode != 125:
                return proc
    return proc


def _stage(mark: str, env: str, args: str, status: str, pytest_cmd: str) -> str:
    # the mark is echoed in pieces: the console also shows the command line, which must
    # not match it
    pieces = '" "'.join(mark.split(" ", 1))
    return f'; echo "{pieces}"; {env} {pytest_cmd} {args} 2>&1; {status}=$?'


@pytest.fixture(scope="module")
def vm_run():
    """One boot: the pyverbs suite, then (when Valkey could be built) the interop suite,
    then (when rdma-core could be built) the pyverbs suite on rdma-core 65's pyverbs."""
    if os.geteuid() != 0:
        pytest.skip("building and booting the VM needs root")
    if not os.path.exists(os.path.join(WORK, "rootfs.ext4")):
        build = subprocess.run(["bash", os.path.join(VM, "build-image.sh")], capture_output=True,
                               text=True, timeout=1200, env=dict(os.environ, WORK=WORK))
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    valkey_missing, valkey_offline = vm_build("build-valkey.sh", VALKEY_BIN, 1200)
    rdma_core_missing, rdma_core_offline = vm_build("build-rdma-core.sh", RDMA_CORE, 1800)
    # paths relative to ROOT (the command starts there): the kernel command line that
    # carries it is limited to 2000 characters
    pytest_cmd = ".venv/bin/python -m pytest -q -p no:cacheprovider -rfEs --color=no"
    rdma_core = os.path.relpath(RDMA_CORE, ROOT)
    ignore = " ".join(f"--ignore=tests/rdma/verbs/{f}"
                      for f in ("test_valkey_interop.py", "test_pyverbs_build.py",
                                "test_two_hosts.py"))
    cmd = (f"cd {ROOT} && {pytest_cmd} tests/rdma/verbs {ignore} tests/rdma/test_messages.py"
           " 2>&1; a=$?; b=0; c=0")
    if valkey_missing is None:
        cmd += _stage(VALKEY_MARK, f"PYKV_VALKEY_BIN={os.path.relpath(VALKEY_BIN, ROOT)}",
                      "tests/rdma/verbs/test_valkey_interop.py", "b", pytest_cmd)
    if rdma_core_missing is None:
        # the build's compiled-in paths (in-place provider and config dirs, under /var/tmp
        # on the host) point at its copy in the shared project; env: LD_LIBRARY_PATH,
        # PYTHONPATH, RDMAV_DRIVERS of that copy
        cmd += (f"; d=$(cat {rdma_core}/BUILD_DIR); mkdir -p ${{d%/*}};"
                f" ln -sfn $PWD/{rdma_core} $d; set -a; . {rdma_core}/env; set +a")
        cmd += _stage(PYVERBS50_MARK, f"PYKV_EXPECT_PYVERBS={rdma_core}",
                      "tests/rdma/verbs --ignore=tests/rdma/verbs/test_valkey_interop.py"
                      " --ignore=tests/rdma/verbs/test_two_hosts.py",
                      "c", pytest_cmd)
    cmd += '; echo "PYKV_STAGES=$a,$b,$c"; exit $((a|b|c))'
    proc = _run_vm(cmd, 2400)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w") as f:
        f.write(out)
    rest, _, pyverbs50_out = proc.stdout.partition(PYVERBS50_MARK)
    pyverbs_out, _, valkey_out = rest.partition(VALKEY_MARK)
    stages = re.findall(r"PYKV_STAGES=(\d+),(\d+),(\d+)", out)
    return {"rc": proc.returncode, "out": out, "pyverbs": pyverbs_out, "valkey": valkey_out,
            "pyverbs50": pyverbs50_out,
            "stages": [int(x) for x in stages[-1]] if stages else None,
            "valkey_missing": valkey_missing, "valkey_offline": valkey_offline,
            "rdma_core_missing": rdma_core_missing, "rdma_core_offline": rdma_core_offline}


def _check_summary(out: str, whole: str) -> None:
    """The inner pytest summary: everything ran and passed (nothing skipped for want of a
    device or of binaries)."""
    summary = re.findall(r"^=* ?(\d+ (?:passed|failed).*?) in [\d.]+s", out, re.M)
    assert summary, f"no pytest summary (whole output: {OUTPUT})\n" + whole[-3000:]
    # the failing tests' names and first lines (-rfE), then the tail
    short = out[out.rfind("short test summary info"):] if "short test summary" in out else ""
    assert "passed" in summary[-1] and not re.search(r"failed|skipped|error", summary[-1]), \
        f"{summary[-1]} (whole output: {OUTPUT})\n{short[-4000:]}\n{out[-2000:]}"


def test_pyverbs_backend_in_soft_roce_vm(vm_run):
    assert vm_run["rc"] not in (124, 125), vm_run["out"][-6000:]
    _check_summary(vm_run["pyverbs"], vm_run["out"])


def _check_stage(vm_run, name: str, index: int, missing: str | None, offline: bool) -> None:
    if missing and offline:
        pytest.skip(f"{missing} (no network)")
    if missing:
        pytest.fail(missing, pytrace=False)
    assert vm_run["rc"] not in (124, 125), vm_run["out"][-6000:]
    _check_summary(vm_run[name], vm_run["out"])
    assert vm_run["stages"] and vm_run["stages"][index] == 0, vm_run["out"][-6000:]


def test_valkey_rdma_clients_in_soft_roce_vm(vm_run):
    why = vm_run["valkey_missing"]
    _check_stage(vm_run, "valkey", 1, why and f"no Valkey RDMA build: {why}",
                 vm_run["valkey_offline"])


def test_pyverbs_50_backend_in_soft_roce_vm(vm_run):
    why = vm_run["rdma_core_missing"]
    _check_stage(vm_run, "pyverbs50", 2, why and f"no rdma-core build: {why}",
                 vm_run["rdma_core_offline"])
