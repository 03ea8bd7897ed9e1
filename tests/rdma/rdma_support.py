"""Test helpers for the RDMA suites (kept out of conftest.py so tests can import them)."""
from __future__ import annotations

import os
import socket
import subprocess

from pykv.testing import Server

VM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vm")


def resp(*args: bytes | str | int) -> bytes:
    """A command as a RESP array of bulk strings."""
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def exchange(sock, payload: bytes, replies: int) -> bytes:
    """Send ``payload`` on ``sock`` (a socket or an RdmaSocket) and read until ``replies``
    complete replies arrived; the raw bytes."""
    import hiredis
    sock.sendall(payload)
    reader, raw, n = hiredis.Reader(), bytearray(), 0
    while n < replies:
        chunk = sock.recv(1 << 20)
        assert chunk, f"connection closed ({type(sock).__name__})"
        raw += chunk
        reader.feed(chunk)
        while reader.gets() is not False:
            n += 1
    return bytes(raw)


class RdmaServer(Server):
    """A pykv subprocess listening on TCP and RDMA (soft fabric) on the same port."""

    def __init__(self, fabric_dir: str, rx_size: int = 65536, keepalive: float = 0.5,
                 **kw) -> None:
        super().__init__(**kw)
        self.fabric_dir = fabric_dir
        self.extra_args += ["--listener", f"rdma,bind=127.0.0.1,port={self.port},"
                            f"rx-size={rx_size},keepalive={keepalive},backend=soft"]

    def start(self):
        os.environ["PYKV_SOFTRDMA_DIR"] = self.fabric_dir
        return super().start()


def network_up(host: str | None = None, timeout: float = 5.0) -> bool:
    """Whether the Debian archive the VM builds download from can be reached at all."""
    mirror = host or os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
    name = mirror.split("://", 1)[-1].split("/", 1)[0]
    try:
        socket.create_connection((name, 80), timeout=timeout).close()
        return True
    except OSError:
        return False


def vm_build(script: str, dest: str, timeout: int) -> tuple[str | None, bool]:
    """Run tests/rdma/vm/SCRIPT DEST (a build, or the reuse of a cached one).

    Returns (None, True) when it is there, else (why, offline): ``offline`` says the failure
    is explained by having no network, the one reason the VM tests may skip a stage for;
    any other failure (checksums, dependencies, the build itself) must fail the tests.
    """
    try:
        build = subprocess.run(["bash", os.path.join(VM_DIR, script), dest],
                               capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{script} timed out", not network_up()
    if build.returncode == 0:
        return None, True
    lines = [ln for ln in build.stderr.splitlines() if ln.strip()]
    why = f"{script} exit {build.returncode}: " + " | ".join(lines[-3:])
    # 3: a download failed; 4: apt-get could not install the build dependencies; both are
    # what no network looks like, and then only if the archive is really out of reach
    return why, build.returncode in (3, 4) and not network_up()
