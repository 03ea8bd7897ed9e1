"""Protected mode, exercised from another host: pykv and redis-server side by side.

Two network namespaces joined by a veth pair play two hosts: the servers run in ``srv``
(bound to its veth address and to loopback), the remote client in ``cli``. With
``protected-mode yes`` and no password Redis refuses the remote client with its DENIED text
and closes the connection, and still serves loopback clients; with a password, or with
protected mode off, the remote client is served. Each case runs against both servers with
the same configuration and the bytes the remote client receives are compared.

Needs root and ``ip netns`` (CI runs as root); skipped where namespaces cannot be made.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator

import pytest
from support.servers import REDIS_SERVER

SRV_ADDR, CLI_ADDR = "10.231.7.1", "10.231.7.2"  # inside the test's own namespaces only
_PORTS = iter(range(6390, 6490))  # a fresh namespace has every port free


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture(scope="module")
def hosts() -> Iterator[tuple[str, str]]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    tag = f"{os.getpid() % 100000}"
    srv, cli = f"pykv-srv{tag}", f"pykv-cli{tag}"
    try:
        _ip("netns", "add", srv)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot create a network namespace: {exc.stderr.decode().strip()}")
    try:
        _ip("netns", "add", cli)
        _ip("link", "add", f"v{tag}a", "type", "veth", "peer", "name", f"v{tag}b")
        _ip("link", "set", f"v{tag}a", "netns", srv)
        _ip("link", "set", f"v{tag}b", "netns", cli)
        for ns, dev, addr in ((srv, f"v{tag}a", SRV_ADDR), (cli, f"v{tag}b", CLI_ADDR)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield srv, cli
    finally:
        for ns in (srv, cli):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def _in_ns(ns: str, argv: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)


class NsServer:
    """redis-server or pykv in namespace ``ns``, bound to the veth address and loopback."""

    def __init__(self, ns: str, kind: str, extra: list[str]) -> None:
        self.ns = ns
        self.port = next(_PORTS)  # a new one each time: no wait for the last one's sockets
        self.dir = tempfile.mkdtemp(prefix=f"protected-{kind}-")
        exe = [REDIS_SERVER] if kind == "redis" else [sys.executable, "-m", "pykv"]
        self.proc = _in_ns(ns, [*exe, "--port", str(self.port), "--bind", SRV_ADDR, "127.0.0.1",
                                "--save", "", "--dir", self.dir, *extra],
                           stdout=open(os.path.join(self.dir, "log"), "wb"),
                           stderr=subprocess.STDOUT,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        deadline = time.monotonic() + 20
        try:
            while not self.exchange(ns, "127.0.0.1", b"*1\r\n$4\r\nPING\r\n").startswith(
                    (b"+PONG", b"-NOAUTH")):
                assert self.proc.poll() is None, \
                    f"{kind} exited with {self.proc.returncode}: {self.log()}"
                assert time.monotonic() < deadline, f"{kind} did not answer PING in {ns}"
                time.sleep(0.1)
        except BaseException:
            self.stop()  # a server that never became ready is not left running
            raise

    def exchange(self, ns: str, host: str, data: bytes) -> bytes:
        """What a client in ``ns`` receives after sending ``data`` to ``host``."""
        proc = _in_ns(ns, [sys.executable, "-c", _CLIENT, host, str(self.port), data.hex()],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err.decode()
        text = out.decode()
        return text.encode() if text.startswith("connect failed") else bytes.fromhex(text)

    def log(self) -> str:
        with open(os.path.join(self.dir, "log"), errors="replace") as fh:
            return fh.read()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


_CLIENT = textwrap.dedent("""
    import socket, sys, time
    host, port, data = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
    try:
        s = socket.create_connection((host, port), timeout=5)
    except OSError as exc:
        sys.stdout.write("connect failed: %s" % exc.strerror)
        sys.exit(0)
    # a refused client is closed at once; had it sent first, closing over unread input
    # would reset the connection (in Redis too) and might drop the DENIED text
    time.sleep(0.3)
    s.sendall(data)
    out = b""
    try:
        while True:  # read until the server closes, or until it goes quiet
            s.settimeout(1.0 if out else 5)
            chunk = s.recv(65536)
            if not chunk:
                out += b"<closed>"
                break
            out += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        out += b"<reset>"
    sys.stdout.write(out.hex())
""")




CASES = {
    "protected, no password": [],
    "protected, with a password": ["--requirepass", "s3cret"],
    "protected mode off": ["--protected-mode", "no"],
}
PING_THEN_GET = b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"


@pytest.mark.parametrize("case", list(CASES))
def test_remote_and_local_clients_as_redis(hosts, case):
    srv, cli = hosts
    seen = {}
    for kind in ("redis", "pykv"):
        server = NsServer(srv, kind, CASES[case])
        try:
            seen[kind] = (server.exchange(cli, SRV_ADDR, PING_THEN_GET),
                          server.exchange(srv, "127.0.0.1", PING_THEN_GET),
                          server.exchange(srv, SRV_ADDR, PING_THEN_GET))
        finally:
            server.stop()
    assert seen["pykv"] == seen["redis"], f"{case}:\n  redis: {seen['redis']}\n  pykv:  {seen['pykv']}"
    remote = seen["pykv"][0]
    if case == "protected, no password":
        assert remote.startswith(b"-DENIED Redis is running in protected mode") and \
            remote.endswith(b"<closed>"), remote
    else:
        assert not remote.startswith(b"-DENIED"), remote
