"""ACL LOAD / ACL SAVE and ``aclfile`` against real redis-server, each with its own file
(error texts name the file: they are compared with the path replaced)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
from conftest import Diff
from support.resp import RawClient
from support.servers import REDIS_SERVER, RealRedis

from pykv.testing import Server

START = b"user default on nopass ~* &* +@all\nuser alice on >pw ~a* +get\n"


@pytest.fixture(scope="module")
def files():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    tmp = tempfile.mkdtemp(prefix="aclfile-")
    paths = [os.path.join(tmp, "real.acl"), os.path.join(tmp, "ours.acl")]
    for p in paths:
        with open(p, "wb") as fh:
            fh.write(START)
    real = RealRedis(extra=["--aclfile", paths[0]])
    with Server(config={"aclfile": paths[1]}) as ours:
        yield real, ours, paths
    real.stop()


@pytest.fixture
def fdiff(files):
    real, ours, paths = files
    d = Diff(RawClient(port=real.port), RawClient(port=ours.port))
    yield d, paths
    d.real.close()
    d.ours.close()


def _write(paths, data: bytes) -> None:
    for p in paths:
        with open(p, "wb") as fh:
            fh.write(data)


def _same(d: Diff, paths, *args) -> None:
    real, ours = d.both(*args)
    assert ours.replace(paths[1].encode(), b"FILE") == real.replace(paths[0].encode(), b"FILE"), \
        (args, real, ours)


def test_users_from_the_file_at_startup(fdiff):
    d, paths = fdiff
    d("ACL", "LIST")
    d("AUTH", "alice", "pw")
    d("GET", "b")


@pytest.mark.parametrize("text", [
    b"bogus line\n", b"user bob +nosuch\n", b"user alice on\nuser alice off\n", b"user a b\n",
    b"# c\n\nuser bob on nopass +@all ~*\n  \nuser carl \"on\"  \n", b"user carl on  \n",
    b"user x (on\n", b"user x bogus +nosuch bad2 +nosuch2\n", b"user x on\r\nuser y\n",
    b"\n\nuser z\n", b"user\n", b"user default on nopass ~* &* +@all -debug\nuser q on nopass (~x +get) &c\n",
    b"user w on  nopass\n", b"user v %R~a %R~a ~b\n",
])
def test_load(fdiff, text):
    d, paths = fdiff
    _write(paths, START)
    d("ACL", "LOAD")
    _write(paths, text)
    _same(d, paths, "ACL", "LOAD")
    d("ACL", "LIST")
    _write(paths, START)
    d("ACL", "LOAD")


def test_load_disconnects_the_old_users_clients(fdiff, files):
    d, paths = fdiff
    real, ours, _ = files
    _write(paths, START)
    d("ACL", "LOAD")
    alice = Diff(RawClient(port=real.port), RawClient(port=ours.port))
    assert alice("AUTH", "alice", "pw") == b"+OK\r\n"
    d("ACL", "LOAD")
    alice.until_closed(b"GET a\r\n")
    for c in (alice.real, alice.ours):
        assert c.read_until_closed() == b""


def test_save_then_load(fdiff):
    d, paths = fdiff
    _write(paths, START)
    d("ACL", "LOAD")
    d("ACL", "SETUSER", "zed", "(+get ~x)", ">p", "&c*", "%W~w")
    d("ACL", "SAVE")
    texts = [open(p, "rb").read() for p in paths]
    assert texts[1] == texts[0]
    d("ACL", "SETUSER", "zed", "reset")
    d("ACL", "LOAD")
    d("ACL", "LIST")


def test_load_missing_file(fdiff):
    d, paths = fdiff
    for p in paths:
        os.unlink(p)
    try:
        _same(d, paths, "ACL", "LOAD")
    finally:
        _write(paths, START)


def test_without_aclfile(diff):
    diff("ACL", "LOAD")
    diff("ACL", "SAVE")


@pytest.mark.parametrize("args, message", [
    (["--aclfile", "/nonexistent/x.acl"], "Aborting Redis startup because of ACL errors: "
     "Error loading ACLs, opening file '/nonexistent/x.acl': No such file or directory"),
    (["--aclfile", "/dev/null", "--user", "alice"], "Configuring Redis with users defined"),
])
def test_startup_refusals(args, message):
    proc = subprocess.run([sys.executable, "-m", "pykv", "--port", "0", *args],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert message in proc.stdout + proc.stderr
