"""The append-only file: durability across restarts and kills, rewrites, interop with Redis."""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time

import pytest
from integration.test_rdb_interop import build_dataset, snapshot
from support.resp import RawClient
from support.servers import REDIS_SERVER, RealRedis, wait_while_in_progress

from pykv.testing import Server


@pytest.fixture
def workdir():
    path = tempfile.mkdtemp(prefix="aof-test-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _aof_server(workdir: str, **extra) -> Server:
    config = {"dir": workdir, "save": "", "appendonly": "yes", "appendfsync": "always"}
    config.update(extra)
    return Server(config=config)


def _kill(server: Server) -> None:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    server.process = None


def test_acknowledged_writes_survive_sigkill(workdir):
    server = _aof_server(workdir).start()
    try:
        c = RawClient(port=server.port)
        build_dataset(c)
        c.call("INCR", "counter")
        c.call("LPOP", "list:small")
        c.call("DEL", "str:empty")
        expected = snapshot(c)
    finally:
        _kill(server)
    files = sorted(os.listdir(os.path.join(workdir, "appendonlydir")))
    assert "appendonly.aof.manifest" in files
    assert any(f.endswith(".incr.aof") for f in files)
    with _aof_server(workdir) as again:
        assert snapshot(RawClient(port=again.port)) == expected


def test_rewrite_keeps_writes_made_during_it(workdir):
    with _aof_server(workdir, **{"aof-use-rdb-preamble": "yes"}) as server:
        c = RawClient(port=server.port)
        build_dataset(c)
        assert c.call("BGREWRITEAOF") == b"+Background append only file rewriting started\r\n"
        c.call("SET", "during", "rewrite")
        wait_while_in_progress(c, b"aof_rewrite_in_progress", 30)
        c.call("SET", "after", "rewrite")
        expected = snapshot(c)
        files = sorted(os.listdir(os.path.join(workdir, "appendonlydir")))
        assert [f for f in files if ".base." in f] == ["appendonly.aof.2.base.rdb"]
    with _aof_server(workdir) as again:
        assert snapshot(RawClient(port=again.port)) == expected


def test_command_base_without_preamble(workdir):
    with _aof_server(workdir, **{"aof-use-rdb-preamble": "no"}) as server:
        c = RawClient(port=server.port)
        build_dataset(c)
        c.call("BGREWRITEAOF")
        wait_while_in_progress(c, b"aof_rewrite_in_progress", 30)
        expected = snapshot(c)
    with _aof_server(workdir) as again:
        assert snapshot(RawClient(port=again.port)) == expected


def test_truncated_tail_is_repaired(workdir):
    with _aof_server(workdir) as server:
        c = RawClient(port=server.port)
        c.call("SET", "a", "1")
        c.call("SET", "b", "2")
    incr = [f for f in os.listdir(os.path.join(workdir, "appendonlydir"))
            if f.endswith(".incr.aof")][-1]
    path = os.path.join(workdir, "appendonlydir", incr)
    with open(path, "ab") as fh:
        fh.write(b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$2\r\n3")  # cut mid-command
    with _aof_server(workdir) as again:
        c = RawClient(port=again.port)
        assert c.call("MGET", "a", "b", "c") == b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"
        assert "short read while loading the AOF" in again.log()


def test_corrupt_middle_refuses_to_start(workdir):
    with _aof_server(workdir) as server:
        RawClient(port=server.port).call("SET", "a", "1")
    incr = [f for f in os.listdir(os.path.join(workdir, "appendonlydir"))
            if f.endswith(".incr.aof")][-1]
    path = os.path.join(workdir, "appendonlydir", incr)
    with open(path, "rb") as fh:
        data = fh.read()
    with open(path, "wb") as fh:
        fh.write(b"*2\r\n$3\r\nGET\r\n!!garbage\r\n" + data)
    with pytest.raises(RuntimeError, match="exited with"):
        _aof_server(workdir).start()


@pytest.mark.usefixtures("redis_binary")
def test_redis_aof_loads_into_pykv_and_back(workdir):
    real = RealRedis(["--appendonly", "yes", "--appendfsync", "always"])
    try:
        c = RawClient(port=real.port)
        build_dataset(c)
        c.call("INCRBYFLOAT", "float", "1.5")
        expected = snapshot(c)
        shutil.copytree(os.path.join(real.dir, "appendonlydir"),
                        os.path.join(workdir, "appendonlydir"))
    finally:
        real.stop()
    with _aof_server(workdir) as server:
        c = RawClient(port=server.port)
        assert snapshot(c) == expected
        c.call("SET", "added:by", "pykv")
        expected = snapshot(c)
    back = RealRedis(["--appendonly", "yes", "--dir", workdir])
    try:
        assert snapshot(RawClient(port=back.port)) == expected
    finally:
        back.stop()


def test_config_set_appendonly_at_runtime(workdir):
    with Server(config={"dir": workdir, "save": ""}) as server:
        c = RawClient(port=server.port)
        build_dataset(c)
        assert c.call("CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
        c.call("SET", "while", "enabling")
        wait_while_in_progress(c, b"aof_rewrite_in_progress", 30)
        c.call("SET", "after", "enabling")
        expected = snapshot(c)
    with _aof_server(workdir) as again:
        assert snapshot(RawClient(port=again.port)) == expected


def test_relative_expiries_are_logged_as_absolute_times(workdir):
    with _aof_server(workdir) as server:
        c = RawClient(port=server.port)
        c.call("SET", "a", "1", "EX", "1000")
        c.call("SET", "b", "1")
        c.call("EXPIRE", "b", "2000")
        c.call("SET", "c", "1")
        c.call("PEXPIRE", "c", "-1")  # in the past: deleted, logged as DEL
        c.call("SET", "d", "1")
        c.call("GETEX", "d", "PX", "3000000")
        c.call("INCRBYFLOAT", "f", "0.1")
        c.call("INCRBYFLOAT", "f", "0.2")
        pexpire = {k: int(c.call("PEXPIRETIME", k)[1:-2]) for k in ("a", "b", "d")}
    directory = os.path.join(workdir, "appendonlydir")
    incr = [f for f in os.listdir(directory) if f.endswith(".incr.aof")][-1]
    with open(os.path.join(directory, incr), "rb") as fh:
        log = fh.read()
    assert b"EXPIRE\r\n" not in log.replace(b"PEXPIREAT", b"")
    assert b"$4\r\nPXAT\r\n" in log and b"$3\r\nDEL\r\n$1\r\nc\r\n" in log
    assert b"$7\r\nKEEPTTL\r\n" in log
    time.sleep(0.05)
    with _aof_server(workdir) as again:
        c = RawClient(port=again.port)
        for key, when in pexpire.items():
            assert int(c.call("PEXPIRETIME", key)[1:-2]) == when
        assert c.call("EXISTS", "c") == b":0\r\n"
        assert c.call("GET", "f") == b"$3\r\n0.3\r\n"


def test_random_and_blocking_effects_replay_identically(workdir):
    with _aof_server(workdir) as server:
        c = RawClient(port=server.port)
        c.call("SADD", "s", *[str(i) for i in range(100)])
        c.call("SPOP", "s")
        c.call("SPOP", "s", "10")
        c.call("HINCRBYFLOAT", "h", "f", "0.1")
        c.call("RPUSH", "l", "a", "b", "c")
        c.call("BLPOP", "l", "0")
        c.call("BLMOVE", "l", "l2", "LEFT", "RIGHT", "0")
        waiter = RawClient(port=server.port)
        waiter.send_raw(b"*3\r\n$5\r\nBRPOP\r\n$5\r\nempty\r\n$1\r\n0\r\n")
        time.sleep(0.2)
        c.call("RPUSH", "empty", "x", "y")
        assert waiter.read_reply() == b"*2\r\n$5\r\nempty\r\n$1\r\ny\r\n"
        expected = snapshot(c) | {"s": c.call("SMEMBERS", "s"), "h": c.call("HGETALL", "h")}
    with _aof_server(workdir) as again:
        c = RawClient(port=again.port)
        got = snapshot(c) | {"s": c.call("SMEMBERS", "s"), "h": c.call("HGETALL", "h")}
        assert got == expected


def test_transactions_are_logged_whole(workdir):
    with _aof_server(workdir) as server:
        c = RawClient(port=server.port)
        c.call("MULTI")
        c.call("SET", "a", "1")
        c.call("INCR", "n")
        c.call("GET", "a")
        c.call("EXEC")
        c.call("MULTI")
        c.call("SET", "single", "1")
        c.call("EXEC")
    directory = os.path.join(workdir, "appendonlydir")
    incr = [f for f in os.listdir(directory) if f.endswith(".incr.aof")][-1]
    path = os.path.join(directory, incr)
    log = open(path, "rb").read()
    multi = b"*1\r\n$5\r\nMULTI\r\n"
    assert log.count(multi) == 1  # one write needs no wrapper, two do
    start = log.index(multi)
    assert log[start:].startswith(multi + b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n")
    assert b"*1\r\n$4\r\nEXEC\r\n" in log[start:]
    # cut the log inside the transaction: on load the half transaction is dropped
    cut = log[:start + len(multi) + 20]
    open(path, "wb").write(cut)
    with _aof_server(workdir) as again:
        c = RawClient(port=again.port)
        assert c.call("MGET", "a", "n") == b"*2\r\n$-1\r\n$-1\r\n"


def test_automatic_rewrite_on_growth(workdir):
    config = {"auto-aof-rewrite-min-size": "1mb", "auto-aof-rewrite-percentage": "100",
              "appendfsync": "no"}
    with _aof_server(workdir, **config) as server:
        c = RawClient(port=server.port)
        for i in range(40):
            c.call("SET", f"k{i % 4}", "x" * 100_000)  # the log grows, the dataset doesn't
        deadline = time.monotonic() + 30
        while True:
            info = c.call("INFO", "persistence")
            if b"aof_rewrites:1" in info and b"aof_rewrite_in_progress:0" in info:
                break
            assert time.monotonic() < deadline, info
            time.sleep(0.1)
        expected = snapshot(c)
    files = os.listdir(os.path.join(workdir, "appendonlydir"))
    assert [f for f in files if ".base." in f] == ["appendonly.aof.2.base.rdb"]
    with _aof_server(workdir) as again:
        assert snapshot(RawClient(port=again.port)) == expected


@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")
def test_rewrite_child_reports_its_copy_on_write_as_redis(workdir):
    def rewrite(port: int) -> tuple[bytes, bool]:
        c = RawClient(port=port)
        c.call("SET", "a", "1")
        reply = c.call("BGREWRITEAOF")
        info = wait_while_in_progress(c, b"aof_rewrite_in_progress", 30)
        fields = dict(line.split(b":", 1) for line in info.split(b"\r\n") if b":" in line)
        return reply, int(fields[b"aof_last_cow_size"]) > 0

    real = RealRedis(["--appendonly", "yes"])
    try:
        want = rewrite(real.port)
    finally:
        real.stop()
    with _aof_server(workdir) as server:
        got = rewrite(server.port)
    assert got == want == (b"+Background append only file rewriting started\r\n", True)
