"""RDMA between two hosts: two soft-RoCE VMs on one Ethernet segment, pykv's rdma listener
(compiled ibverbs backend) in one, the clients (the Python client on the same backend,
valkey-cli/valkey-benchmark --rdma) in the other.

The one-VM suite (test_vm.py) has both ends on one rxe device; here every byte crosses a
link as RoCE v2 packets. The VMs (the image of tests/rdma/vm, 1 vCPU and 1 GiB each, TCG)
get a virtio-net card each, joined by a qemu socket netdev on 127.0.0.1: nothing leaves the
host. Inside, ``tests/rdma/vm/two-hosts.sh`` puts an rxe device on that card, starts
pykv-server (server VM, 10.77.1.1) or runs ``tests/rdma/verbs/test_two_hosts.py`` against it
and shuts it down (client VM, 10.77.1.2). The valkey tests use the Valkey build of
test_vm.py (``build-valkey.sh``); they skip only when it cannot be built for want of a
network, and any other build failure fails the test.

Opt-in like test_vm.py (``-m vm`` or ``PYKV_VM_TESTS=1``); ~3 minutes.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time

import pytest
from rdma_support import vm_build

from pykv.testing.server import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.join(HERE, "vm")
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.environ.get("WORK", "/var/tmp/pykv-rxevm")
VALKEY_BIN = os.path.join(ROOT, "build", "valkey-rdma", "bin")
OUTPUT = os.path.join(ROOT, "build", "vm-two-hosts.log")   # both consoles of the last run

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]


def _boot(role: str, netdev: str, mac: str, log: str) -> subprocess.Popen:
    env = dict(os.environ, WORK=WORK, LOG=log, NETDEV=netdev, MAC=mac, SMP="1", MEM="1G")
    return subprocess.Popen(["bash", os.path.join(VM, "run-vm.sh"), "-p", ROOT, "-t", "1500",
                             f"bash tests/rdma/vm/two-hosts.sh {role}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)


def _finish(vm: subprocess.Popen, timeout: float) -> str:
    """The VM's console once it powered off, or after killing it (qemu included)."""
    try:
        return vm.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(vm.pid, signal.SIGKILL)
        return vm.communicate()[0] + "\n[killed: still running]"


def test_rdma_between_two_vms():
    if os.geteuid() != 0:
        pytest.skip("booting the VMs needs root")
    if not os.path.exists(os.path.join(WORK, "rootfs.ext4")):
        build = subprocess.run(["bash", os.path.join(VM, "build-image.sh")],
                               capture_output=True, text=True, timeout=1200,
                               env=dict(os.environ, WORK=WORK))
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    # without a network there are no Valkey clients and their tests skip inside the VM;
    # any other failure to build them fails here
    why, offline = vm_build("build-valkey.sh", VALKEY_BIN, 1200)
    if why and not offline:
        pytest.fail(f"no Valkey RDMA build: {why}", pytrace=False)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="pykv-vm2-") as tmp:
        server = _boot("server", f"socket,listen=127.0.0.1:{port}", "52:54:00:77:01:01",
                       os.path.join(tmp, "server.log"))
        time.sleep(2)   # the listening side of the link first
        client = _boot("client", f"socket,connect=127.0.0.1:{port}", "52:54:00:77:01:02",
                       os.path.join(tmp, "server.log").replace("server", "client"))
        try:
            client_out = _finish(client, 1600)
        finally:
            # the client shut the server down; if it could not, the server VM is killed
            server_out = _finish(server, 120)
    out = re.sub(r"\x1b\[[0-9;]*m", "", f"{client_out}\n===== server VM =====\n{server_out}")
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w") as f:
        f.write(out)
    assert "TWOHOSTS: client on 10.77.1.2" in client_out, out[-4000:]
    summary = re.findall(r"^=* ?(\d+ (?:passed|failed).*?) in [\d.]+s", client_out, re.M)
    assert summary and "failed" not in summary[-1] and "error" not in summary[-1], \
        f"(whole output: {OUTPUT})\n" + client_out[-5000:]
    valkey_built = os.access(os.path.join(VALKEY_BIN, "valkey-cli"), os.X_OK)
    assert "skipped" not in summary[-1] or not valkey_built, summary[-1]
    assert client.returncode == 0, client_out[-5000:]
    # the server VM served until the client's SHUTDOWN and exited cleanly
    assert "TWOHOSTS: server on 10.77.1.1" in server_out, server_out[-4000:]
    assert server.returncode == 0, server_out[-4000:]
