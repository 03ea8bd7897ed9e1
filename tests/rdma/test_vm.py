"""Boot the soft-RoCE VM (tests/rdma/vm) and run the pyverbs-backend suite inside it, then,
in the same boot, the interop tests with the real Valkey RDMA clients.

Opt-in (``-m vm`` or ``PYKV_VM_TESTS=1``): it needs root, qemu and debootstrap (installed
from Debian packages by build-image.sh), builds the image on first use (~3-4 min) and boots
it under TCG (~30 s) — see tests/rdma/vm/README.md. Before the boot, build-valkey.sh builds
valkey-cli/valkey-benchmark/valkey-server with RDMA from Debian's source package (~3 min
the first time, cached in /var/tmp/pykv-valkey); when that cannot be done (no network),
the Valkey test skips with the reason and the pyverbs suite still runs.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.join(HERE, "vm")
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.environ.get("WORK", "/var/tmp/pykv-rxevm")
VALKEY_BIN = os.path.join(ROOT, "build", "valkey-rdma", "bin")
VALKEY_MARK = "===== pykv valkey-interop suite ====="
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


def _build_valkey() -> str | None:
    """Build (or reuse) the Valkey RDMA binaries into VALKEY_BIN; None, or why not."""
    try:
        build = subprocess.run(["bash", os.path.join(VM, "build-valkey.sh"), VALKEY_BIN],
                               capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return "build-valkey.sh timed out"
    if build.returncode != 0:
        lines = [ln for ln in build.stderr.splitlines() if ln.strip()]
        return f"build-valkey.sh exit {build.returncode}: " + " | ".join(lines[-3:])
    return None


@pytest.fixture(scope="module")
def vm_run():
    """One boot: the pyverbs suite, then (when Valkey could be built) the interop suite."""
    if os.geteuid() != 0:
        pytest.skip("building and booting the VM needs root")
    if not os.path.exists(os.path.join(WORK, "rootfs.ext4")):
        build = subprocess.run(["bash", os.path.join(VM, "build-image.sh")], capture_output=True,
                               text=True, timeout=1200, env=dict(os.environ, WORK=WORK))
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    valkey_missing = _build_valkey()
    python = os.path.join(ROOT, ".venv", "bin", "python")
    pytest_cmd = f"{python} -m pytest -q -p no:cacheprovider -rfEs --color=no"
    cmd = (f"cd {ROOT} && {pytest_cmd} tests/rdma/verbs "
           "--ignore=tests/rdma/verbs/test_valkey_interop.py tests/rdma/test_messages.py 2>&1; "
           "a=$?")
    if valkey_missing is None:
        # echoed in pieces: the console also shows the command line, which must not match
        mark = '" "'.join(VALKEY_MARK.split(" ", 1))
        cmd += (f'; echo "{mark}"; PYKV_VALKEY_BIN={VALKEY_BIN} {pytest_cmd} '
                "tests/rdma/verbs/test_valkey_interop.py 2>&1; b=$?; exit $((a|b))")
    else:
        cmd += "; exit $a"
    proc = _run_vm(cmd, 1800)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w") as f:
        f.write(out)
    pyverbs_out, _, valkey_out = proc.stdout.partition(VALKEY_MARK)
    return {"rc": proc.returncode, "out": out, "pyverbs": pyverbs_out, "valkey": valkey_out,
            "valkey_missing": valkey_missing}


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


def test_valkey_rdma_clients_in_soft_roce_vm(vm_run):
    if vm_run["valkey_missing"]:
        pytest.skip(f"no Valkey RDMA build: {vm_run['valkey_missing']}")
    assert vm_run["rc"] not in (124, 125), vm_run["out"][-6000:]
    _check_summary(vm_run["valkey"], vm_run["out"])
    assert vm_run["rc"] == 0, vm_run["out"][-6000:]
