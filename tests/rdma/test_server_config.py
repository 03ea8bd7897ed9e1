"""Start-up errors, the rdma-* configs, CONFIG SET rdma-port at runtime, INFO listeners."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from pykv.rdma.client import RdmaSocket
from pykv.testing import Server, free_port


def run_server(args, env_extra=None, timeout=30):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "pykv", "--port", str(free_port()), *args],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=os.environ.get("TMPDIR", "/tmp"))


@pytest.mark.skipif(os.path.exists("/dev/infiniband/rdma_cm"), reason="host has RDMA")
def test_no_rdma_device_is_one_line_and_nonzero(tmp_path):
    p = run_server(["--dir", str(tmp_path), "--listener", "rdma,bind=127.0.0.1,port=7001"],
                   {"PYKV_RDMA_BACKEND": "pyverbs"})
    assert p.returncode != 0
    lines = [ln for ln in p.stdout.splitlines() if "RDMA" in ln]
    assert len(lines) == 1 and "no RDMA device" in lines[0] and "rdma link add" in lines[0]
    assert "Traceback" not in p.stdout + p.stderr


def test_wrong_bind_address_is_one_line(tmp_path, fabric_dir):
    p = run_server(["--dir", str(tmp_path), "--listener",
                    "rdma,bind=192.0.2.55,port=7002,backend=soft"])
    assert p.returncode != 0
    assert "192.0.2.55 is not an address of this host" in p.stdout
    assert "Traceback" not in p.stdout + p.stderr


def test_optional_listener_keeps_the_others(tmp_path, fabric_dir):
    with Server(config={"dir": str(tmp_path)},
                extra_args=["--listener", "rdma,bind=192.0.2.55,port=7003,backend=soft,"
                            "optional"]) as srv:
        assert srv.ping()
        assert "not started" in srv.log() and "192.0.2.55" in srv.log()


def test_rx_size_bounds(tmp_path, fabric_dir):
    p = run_server(["--dir", str(tmp_path), "--rdma-rx-size", "1000"])
    assert p.returncode != 0
    p = run_server(["--dir", str(tmp_path), "--listener",
                    "rdma,bind=127.0.0.1,port=7004,rx-size=1000,backend=soft"])
    assert p.returncode != 0 and "rx-size 1000 must be between" in p.stdout


def test_rdma_port_config_and_runtime_config_set(tmp_path, fabric_dir):
    port = free_port()
    with Server(config={"dir": str(tmp_path), "rdma-port": port, "rdma-bind": "127.0.0.1",
                        "rdma-rx-size": 65536}):
        with RdmaSocket("127.0.0.1", port, timeout=10) as s:
            assert s.call("PING") == b"+PONG\r\n"
            assert s.endpoint.session.tx.length == 65536
            info = s.call("INFO", "server")
            m = re.search(rb"listener\d+:name=rdma,bind=127\.0\.0\.1,port=(\d+)", info)
            assert m and int(m.group(1)) == port, info
            new_port = free_port()
            reply = s.call("CONFIG", "SET", "rdma-port", new_port)
            assert reply == b"+OK\r\n"
            # the connected client stays connected; the new port accepts, the old is closed
            assert s.call("PING") == b"+PONG\r\n"
            with RdmaSocket("127.0.0.1", new_port, timeout=10) as s2:
                assert s2.call("PING") == b"+PONG\r\n"
            with pytest.raises(ConnectionRefusedError):
                RdmaSocket("127.0.0.1", port, timeout=5)
            assert s.call("CONFIG", "SET", "rdma-port", 0) == b"+OK\r\n"
            time.sleep(0.1)
            with pytest.raises(ConnectionRefusedError):
                RdmaSocket("127.0.0.1", new_port, timeout=5)
            assert s.call("CONFIG", "GET", "rdma-port") == b"*2\r\n$9\r\nrdma-port\r\n$1\r\n0\r\n"


def test_importing_pykv_never_needs_pyverbs():
    code = ("import sys, pykv.net, pykv.server.server, pykv.rdma.client, pykv.rdma.cli; "
            "assert 'pyverbs' not in sys.modules, 'pyverbs imported'; "
            "from pykv.net import get_connection_type; print(get_connection_type('rdma').name)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "rdma"
