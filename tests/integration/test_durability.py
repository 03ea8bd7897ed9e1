"""Crash safety: what a kill, a failed child or a full disk may cost, and what it may not."""
from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

import pytest
from support.resp import RawClient, encode_command
from support.servers import wait_while_in_progress

from pykv.testing import Server


@pytest.fixture
def workdir():
    path = tempfile.mkdtemp(prefix="durability-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _writer(port: int, acked: list[int], stop: threading.Event) -> None:
    """SET k:i i for i = 0, 1, …, recording i once the server has acknowledged it."""
    try:
        c = RawClient(port=port, timeout=5)
        i = 0
        while not stop.is_set():
            if c.call("SET", f"k:{i}", str(i)) != b"+OK\r\n":
                return
            acked.append(i)
            i += 1
    except (OSError, ConnectionError):
        return


def _kill_during_writes(workdir: str, fsync: str, seed: int) -> tuple[list[int], Server]:
    server = Server(config={"dir": workdir, "save": "", "appendonly": "yes",
                            "appendfsync": fsync}).start()
    acked: list[int] = []
    stop = threading.Event()
    thread = threading.Thread(target=_writer, args=(server.port, acked, stop))
    thread.start()
    time.sleep(random.Random(seed).uniform(0.3, 1.2))
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    server.process = None
    stop.set()
    thread.join(10)
    return acked, server


def _present(port: int, n: int) -> set[int]:
    c = RawClient(port=port)
    found = set()
    for start in range(0, n, 500):
        keys = [f"k:{i}" for i in range(start, min(n, start + 500))]
        reply = c.call("MGET", *keys)
        values = reply.split(b"\r\n")[1:]
        idx = start
        pos = 0
        while pos < len(values) - 1:
            if values[pos] == b"$-1":
                pos += 1
            else:
                found.add(idx)
                pos += 2
            idx += 1
    return found


@pytest.mark.parametrize("seed", range(3))
def test_always_loses_no_acknowledged_write(workdir, seed):
    acked, _ = _kill_during_writes(workdir, "always", seed)
    assert acked, "the writer never got an acknowledgement"
    with Server(config={"dir": workdir, "save": "", "appendonly": "yes"}) as again:
        present = _present(again.port, len(acked) + 10)
    missing = set(acked) - present
    assert not missing, f"{len(missing)} acknowledged writes lost: {sorted(missing)[:10]}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 30))
def test_always_loses_no_acknowledged_write_many_kill_points(workdir, seed):
    test_always_loses_no_acknowledged_write(workdir, seed)


def test_everysec_loses_at_most_about_a_second(workdir):
    acked, _ = _kill_during_writes(workdir, "everysec", 99)
    with Server(config={"dir": workdir, "save": "", "appendonly": "yes"}) as again:
        present = _present(again.port, len(acked) + 10)
    lost = [i for i in acked if i not in present]
    # writes are strictly ordered: what is lost is a suffix of what was acknowledged
    assert lost == acked[len(acked) - len(lost):]
    # the writer acknowledges a few thousand writes a second here; 2 s worth is the bound
    # (one fsync interval plus one second of writes, as Redis documents)
    rate = len(acked) / 1.2
    assert len(lost) <= max(2 * rate, 50), (len(lost), len(acked))
    sys.stderr.write(f"everysec: {len(lost)} of {len(acked)} acknowledged writes lost\n")


def test_killed_bgsave_child_keeps_the_old_file_and_refuses_writes(workdir):
    with Server(config={"dir": workdir, "save": "3600 1"}) as server:
        c = RawClient(port=server.port)
        c.call("SET", "before", "1")
        assert c.call("SAVE") == b"+OK\r\n"
        good = open(os.path.join(workdir, "dump.rdb"), "rb").read()
        c.call("SET", "big", "x" * 10_000_000)
        c.call("DEBUG", "SLEEP", "0")
        assert c.call("BGSAVE") == b"+Background saving started\r\n"
        # find the child and kill it while it writes
        for pid in _children(server.process.pid):
            os.kill(pid, signal.SIGKILL)
        info = wait_while_in_progress(c, b"rdb_bgsave_in_progress", 10)
        if b"rdb_last_bgsave_status:err" in info:
            time.sleep(0.3)  # the cron publishes the MISCONF state
            assert c.call("SET", "after", "1").startswith(b"-MISCONF ")
            assert c.call("GET", "before") == b"$1\r\n1\r\n"  # reads still work
        assert open(os.path.join(workdir, "dump.rdb"), "rb").read()[:9] == good[:9]
        assert not [f for f in os.listdir(workdir) if f.startswith("temp-")]


def test_full_disk_keeps_the_old_file(workdir):
    """A file-size limit makes SAVE fail with EFBIG: an error, and the good file stays."""
    server = Server(config={"dir": workdir, "save": ""},
                    python="/usr/bin/prlimit")
    server.command_line_orig = server.command_line
    server.command_line = lambda: ["/usr/bin/prlimit", "--fsize=2000000", sys.executable,
                                   *server.command_line_orig()[1:]]
    with server:
        c = RawClient(port=server.port)
        c.call("SET", "small", "1")
        assert c.call("SAVE") == b"+OK\r\n"
        good = open(os.path.join(workdir, "dump.rdb"), "rb").read()
        c.call("SET", "big", os.urandom(3_000_000).hex())
        reply = c.call("SAVE")
        assert reply.startswith(b"-ERR"), reply
        assert open(os.path.join(workdir, "dump.rdb"), "rb").read() == good
        assert c.call("PING") == b"+PONG\r\n"


def test_corrupt_rdb_refuses_to_start(workdir):
    with Server(config={"dir": workdir, "save": ""}) as server:
        c = RawClient(port=server.port)
        c.call("SET", "a", "1" * 100)
        c.call("SAVE")
    path = os.path.join(workdir, "dump.rdb")
    data = bytearray(open(path, "rb").read())
    data[20] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(RuntimeError, match="exited with"):
        Server(config={"dir": workdir, "save": ""}).start()


def test_same_digest_from_rdb_and_from_aof(workdir):
    from integration.test_rdb_interop import build_dataset

    rdb_dir = os.path.join(workdir, "rdb")
    aof_dir = os.path.join(workdir, "aof")
    os.makedirs(rdb_dir)
    os.makedirs(aof_dir)
    with Server(config={"dir": aof_dir, "save": "", "appendonly": "yes",
                        "enable-debug-command": "yes"}) as server:
        c = RawClient(port=server.port)
        build_dataset(c)
        c.call("DEL", "str:ttl")  # a TTL's remaining time differs by load time
        c.call("PERSIST", "hash:small")
        digest = c.call("DEBUG", "DIGEST")
        assert c.call("SAVE") == b"+OK\r\n"
        shutil.copy(os.path.join(aof_dir, "dump.rdb"), rdb_dir)
        assert c.call("DEBUG", "RELOAD") == b"+OK\r\n"
        assert c.call("DEBUG", "DIGEST") == digest
    with Server(config={"dir": aof_dir, "save": "", "appendonly": "yes",
                        "enable-debug-command": "yes"}) as from_aof:
        assert RawClient(port=from_aof.port).call("DEBUG", "DIGEST") == digest
    with Server(config={"dir": rdb_dir, "save": "",
                        "enable-debug-command": "yes"}) as from_rdb:
        assert RawClient(port=from_rdb.port).call("DEBUG", "DIGEST") == digest


def test_clients_get_loading_while_a_large_dataset_loads(workdir):
    """Listeners open before the load; meanwhile commands get -LOADING, INFO says loading:1."""
    with Server(config={"dir": workdir, "save": ""}) as server:
        c = RawClient(port=server.port)
        for start in range(0, 300_000, 10_000):
            c.call("MSET", *[x for i in range(start, start + 10_000)
                             for x in (f"key:{i}", f"value:{i}")])
        assert c.call("SAVE") == b"+OK\r\n"
    port = server.port
    again = Server(port=port, config={"dir": workdir, "save": ""})
    seen_loading = seen_info = False
    import subprocess
    proc = subprocess.Popen(again.command_line(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=workdir)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                c = RawClient(port=port, timeout=5)
            except OSError:
                time.sleep(0.01)
                continue
            reply = c.call("GET", "key:1")
            if reply.startswith(b"-LOADING"):
                assert reply == b"-LOADING Redis is loading the dataset in memory\r\n"
                seen_loading = True
                info = c.call("INFO", "persistence")
                seen_info = seen_info or b"loading:1" in info
            elif reply == b"$7\r\nvalue:1\r\n":
                break
            c.close()
        assert c.call("DBSIZE") == b":300000\r\n"
        assert b"loading:0" in c.call("INFO", "persistence")
    finally:
        proc.terminate()
        proc.wait(10)
    assert seen_loading and seen_info


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


def test_killed_bgrewriteaof_child_loses_nothing(workdir):
    from integration.test_rdb_interop import build_dataset, snapshot

    config = {"dir": workdir, "save": "", "appendonly": "yes", "appendfsync": "always"}
    with Server(config=config) as server:
        c = RawClient(port=server.port)
        build_dataset(c)
        c.call("SET", "big", "x" * 20_000_000)
        assert c.call("BGREWRITEAOF").startswith(b"+Background append only file rewriting")
        for pid in _children(server.process.pid):
            os.kill(pid, signal.SIGKILL)
        c.call("SET", "after", "kill")
        info = wait_while_in_progress(c, b"aof_rewrite_in_progress", 20)
        expected = snapshot(c)
        temp = [f for f in os.listdir(os.path.join(workdir, "appendonlydir"))
                if f.startswith("temp-")]
    if b"aof_last_bgrewrite_status:err" in info:  # the kill landed before the child finished
        assert not temp
    with Server(config=config) as again:
        assert snapshot(RawClient(port=again.port)) == expected


def test_read_only_directory_keeps_the_old_file(workdir):
    """As root only an immutable directory (chattr +i) refuses writes: SAVE and BGSAVE fail
    with Redis's errors, writes get MISCONF, and the last good dump.rdb stays."""
    import shutil as _shutil
    import subprocess

    if _shutil.which("chattr") is None:
        pytest.skip("needs chattr")
    with Server(config={"dir": workdir, "save": "3600 1"}) as server:
        c = RawClient(port=server.port)
        c.call("SET", "before", "1")
        assert c.call("SAVE") == b"+OK\r\n"
        good = open(os.path.join(workdir, "dump.rdb"), "rb").read()
        if subprocess.run(["chattr", "+i", workdir]).returncode != 0:
            pytest.skip("this filesystem has no immutable attribute")
        try:
            c.call("SET", "more", "2")
            assert c.call("SAVE").startswith(b"-ERR")
            assert c.call("BGSAVE") == b"+Background saving started\r\n"
            info = wait_while_in_progress(c, b"rdb_bgsave_in_progress", 10)
            assert b"rdb_last_bgsave_status:err" in info
            time.sleep(0.3)
            assert c.call("SET", "x", "1").startswith(b"-MISCONF Redis is configured to save")
            assert c.call("GET", "before") == b"$1\r\n1\r\n"
            assert open(os.path.join(workdir, "dump.rdb"), "rb").read() == good
            assert "Failed opening the temp RDB file" in server.log() or \
                "Background saving error" in server.log()
        finally:
            subprocess.run(["chattr", "-i", workdir])


def test_sigterm_saves_when_save_points_are_set(workdir):
    server = Server(config={"dir": workdir, "save": "3600 1"}).start()
    c = RawClient(port=server.port)
    c.call("SET", "kept", "by sigterm")
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0
    server.process = None
    assert os.path.exists(os.path.join(workdir, "dump.rdb"))
    with Server(config={"dir": workdir, "save": ""}) as again:
        assert RawClient(port=again.port).call("GET", "kept") == b"$10\r\nby sigterm\r\n"


def test_shutdown_nosave_and_save_override_the_save_points(workdir):
    with Server(config={"dir": workdir, "save": ""}) as server:
        c = RawClient(port=server.port)
        c.call("SET", "a", "1")
        c.send_raw(encode_command("SHUTDOWN", "SAVE"))
        assert c.read_until_closed() == b""
        server.process.wait(30)
    assert os.path.exists(os.path.join(workdir, "dump.rdb"))
    os.unlink(os.path.join(workdir, "dump.rdb"))
    with Server(config={"dir": workdir, "save": "3600 1"}) as server:
        c = RawClient(port=server.port)
        c.call("SET", "a", "1")
        c.send_raw(encode_command("SHUTDOWN", "NOSAVE"))
        c.read_until_closed()
        server.process.wait(30)
    assert not os.path.exists(os.path.join(workdir, "dump.rdb"))


# -- a BGSAVE child that dies, side by side with redis-server 7.0 ------------------------
_DEATHS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGSEGV": signal.SIGSEGV,
           "SIGUSR1": signal.SIGUSR1, "exit-error": None}
_PROGRESS_FIELDS = (b"current_fork_perc", b"current_save_keys_processed",
                    b"current_save_keys_total", b"rdb_bgsave_in_progress",
                    b"rdb_last_bgsave_status")


def _info_fields(info: bytes) -> dict[bytes, bytes]:
    return dict(line.split(b":", 1) for line in info.split(b"\r\n")
                if b":" in line and not line.startswith(b"$"))


def _wait_info(c: RawClient, what, timeout: float = 20) -> dict[bytes, bytes]:
    deadline = time.monotonic() + timeout
    while True:
        fields = _info_fields(c.call("INFO", "persistence"))
        if what(fields):
            return fields
        assert time.monotonic() < deadline, f"INFO persistence never got there: {fields}"
        time.sleep(0.05)


def _bgsave_death(port: int, server_pid: int, how: str, spare_dir: str) -> dict:
    """Start a slow BGSAVE (rdb-key-save-delay), let it die ``how``, report what follows."""
    c = RawClient(port=port)
    c.call("CONFIG", "SET", "save", "3600 1")
    c.call("CONFIG", "SET", "rdb-key-save-delay", "100000")  # 0.1 s per key
    c.call("MSET", *[x for i in range(20) for x in (f"k{i}", f"v{i}")])
    if how == "exit-error":  # the child can't create its temp file: it exits with 1
        shutil.rmtree(spare_dir)
    assert c.call("BGSAVE") == b"+Background saving started\r\n"
    during = {}
    if how != "exit-error":
        fields = _wait_info(c, lambda f: f[b"current_save_keys_processed"] != b"0")
        during = {k: fields[k] for k in _PROGRESS_FIELDS} | {"names": list(fields)}
        children = _children(server_pid)
        assert len(children) == 1, children
        os.kill(children[0], _DEATHS[how])
    after = _wait_info(c, lambda f: f[b"rdb_bgsave_in_progress"] == b"0")
    outcome = {"during": during, "status": after[b"rdb_last_bgsave_status"],
               "progress_after": {k: after[k] for k in _PROGRESS_FIELDS},
               "names_after": list(after),
               "cow_measured": int(after[b"rdb_last_cow_size"]) > 0,  # after a good save
               "write": c.call("SET", "after", "1"), "read": c.call("GET", "k0"),
               "ping": c.call("PING")}
    c.call("CONFIG", "SET", "save", "")  # so that the server can stop without saving
    return outcome


@pytest.mark.parametrize("how", [
    pytest.param(how, marks=pytest.mark.slow) if how in ("SIGTERM", "SIGSEGV") else how
    for how in _DEATHS])
def test_dead_bgsave_child_as_redis(workdir, how):
    from support.servers import REDIS_SERVER, RealRedis

    if REDIS_SERVER is None:
        pytest.skip("needs redis-server")
    redis_log = os.path.join(workdir, "redis.log")
    dirs = {name: os.path.join(workdir, name) for name in ("redis", "pykv")}
    for path in dirs.values():
        os.makedirs(path)
    from concurrent.futures import ThreadPoolExecutor

    real = RealRedis(["--logfile", redis_log, "--dir", dirs["redis"]])
    try:
        with Server(config={"dir": dirs["pykv"], "save": ""}) as server, \
                ThreadPoolExecutor(2) as pool:
            want_f = pool.submit(_bgsave_death, real.port, real.proc.pid, how, dirs["redis"])
            got_f = pool.submit(_bgsave_death, server.port, server.process.pid, how,
                                dirs["pykv"])
            want, got = want_f.result(), got_f.result()
            log = server.log()
    finally:
        real.stop()
    assert got == want
    redis_says = [line for line in _BGSAVE_ENDINGS if line in open(redis_log).read()]
    assert len(redis_says) == 1
    assert redis_says[0] in log


_BGSAVE_ENDINGS = ["Background saving terminated with success", "Background saving error",
                   *[f"Background saving terminated by signal {int(sig)}"
                     for sig in _DEATHS.values() if sig is not None]]


def test_last_load_counts_keys_loaded_and_expired_as_redis(workdir):
    """rdb_last_load_keys_loaded/_expired after loading the same RDB (made by Redis, with
    two keys whose TTL ran out before the load)."""
    from support.servers import REDIS_SERVER, RealRedis

    if REDIS_SERVER is None:
        pytest.skip("needs redis-server")
    real = RealRedis()
    try:
        c = RawClient(port=real.port)
        c.call("MSET", "a", "1", "b", "2", "c", "3")
        c.call("SET", "gone1", "x", "PX", "300")
        c.call("SET", "gone2", "x", "PX", "300")
        assert c.call("SAVE") == b"+OK\r\n"
        shutil.copy(os.path.join(real.dir, "dump.rdb"), os.path.join(workdir, "dump.rdb"))
    finally:
        real.stop()
    time.sleep(0.5)
    counts = {}
    real = RealRedis(["--dir", workdir])
    try:
        counts["redis"] = _load_counts(RawClient(port=real.port))
    finally:
        real.stop()
    with Server(config={"dir": workdir, "save": ""}) as server:
        counts["pykv"] = _load_counts(RawClient(port=server.port))
    assert counts["pykv"] == counts["redis"] == {b"rdb_last_load_keys_expired": b"2",
                                                 b"rdb_last_load_keys_loaded": b"3"}


def _load_counts(c: RawClient) -> dict[bytes, bytes]:
    fields = _info_fields(c.call("INFO", "persistence"))
    return {k: v for k, v in fields.items() if k.startswith(b"rdb_last_load_keys")}
