"""Loading damaged AOFs: every case in ``support.aofdirs.CASES`` is run against redis-server
7.0 and pykv side by side; both must start (or refuse to) alike, log the same lines about
it, load the same keys and leave the same files behind, also after one more write."""
from __future__ import annotations

import math
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.aofdirs import CASES, DEFAULT_SLICE, AofCase, run_on_copy
from support.servers import REDIS_SERVER

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")


def _run_all(cases: list[AofCase]) -> dict:
    """Every case on both servers, several at a time (each run is mostly waiting)."""
    with ThreadPoolExecutor(8) as pool:
        futures = {(case.name, server): pool.submit(run_on_copy, case, server)
                   for case in cases for server in ("redis", "pykv")}
        return {key: future.result() for key, future in futures.items()}


_DEFAULT = [c for c in CASES if c.name in DEFAULT_SLICE]
_MORE = [c for c in CASES if c.name not in DEFAULT_SLICE]


@pytest.fixture(scope="module")
def outcomes():
    return _run_all(_DEFAULT)


@pytest.fixture(scope="module")
def more_outcomes():
    return _run_all(_MORE)


def _compare(case: AofCase, outcomes: dict) -> None:
    want, got = outcomes[case.name, "redis"], outcomes[case.name, "pykv"]
    context = f"\n--- redis log:\n{want.log}\n--- pykv log:\n{got.log}"
    assert got.exit_status == want.exit_status, context
    assert got.lines == want.lines, context
    assert got.keys == want.keys
    assert got.files == want.files
    assert got.files_after_write == want.files_after_write


@pytest.mark.parametrize("case", _DEFAULT, ids=[c.name for c in _DEFAULT])
def test_loads_as_redis(case: AofCase, outcomes) -> None:
    _compare(case, outcomes)


@pytest.mark.slow
@pytest.mark.parametrize("case", _MORE, ids=[c.name for c in _MORE])
def test_loads_as_redis_more_cases(case: AofCase, more_outcomes) -> None:
    _compare(case, more_outcomes)


# -- aof-timestamp-enabled, and redis-check-aof --truncate-to-timestamp on pykv's files ----
def _start(server: str, root: str, extra: dict[str, str]):
    import subprocess

    from support.aofdirs import _wait_started, command_line

    from pykv.testing import free_port

    port = free_port()
    log = open(os.path.join(root, "server.log"), "ab")
    proc = subprocess.Popen(command_line(server, port, root, extra), stdout=log,
                            stderr=subprocess.STDOUT, cwd=root)
    client = _wait_started(proc, port, 30)
    assert client is not None, open(os.path.join(root, "server.log")).read()
    return proc, client


def _stop(proc, client) -> None:
    client.send_raw(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
    client.read_until_closed()
    proc.wait(30)


def _next_second(after: float = 0.1) -> None:
    """Sleep until ``after`` seconds past the next whole second (so that a few commands sent
    at once fall into the same second on both servers)."""
    now = time.time()
    time.sleep(math.floor(now) + 1 + after - now)


def _relative_stamps(data: bytes) -> bytes:
    stamps = [int(m) for m in re.findall(rb"#TS:(\d+)\r\n", data)]
    if not stamps:
        return data
    first = stamps[0]
    return re.sub(rb"#TS:(\d+)\r\n", lambda m: b"#TS:+%d\r\n" % (int(m.group(1)) - first),
                  data)


def _timestamped_session(roots: dict[str, str]) -> dict[str, int]:
    """The same writes on both servers, spread over three seconds; returns the first
    second each server stamped."""
    servers = {name: _start(name, root, {"aof-timestamp-enabled": "yes"})
               for name, root in roots.items()}
    try:
        script = [[("SET", "a", "1"), ("SET", "b", "2")],
                  [("MULTI",), ("SET", "c", "3"), ("INCR", "n"), ("EXEC",),
                   ("SELECT", "2"), ("SET", "d", "4")],
                  [("SET", "e", "5")]]
        for batch in script:
            _next_second()
            for _, client in servers.values():
                for command in batch:
                    client.call(*command)
    finally:
        for proc, client in servers.values():
            _stop(proc, client)
    firsts = {}
    for name, root in roots.items():
        data = _incr(root)
        firsts[name] = int(re.search(rb"#TS:(\d+)", data).group(1))
    return firsts


def _incr(root: str) -> bytes:
    aofdir = os.path.join(root, "appendonlydir")
    incr = sorted(n for n in os.listdir(aofdir) if n.endswith(".incr.aof"))[-1]
    with open(os.path.join(aofdir, incr), "rb") as fh:
        return fh.read()


def test_timestamp_annotations_and_truncate_to_timestamp(tmp_path) -> None:
    import subprocess

    roots = {name: str(tmp_path / name) for name in ("redis", "pykv")}
    for root in roots.values():
        os.makedirs(root)
    firsts = _timestamped_session(roots)
    written = {name: _relative_stamps(_incr(root)) for name, root in roots.items()}
    assert written["pykv"] == written["redis"]
    assert written["pykv"].count(b"#TS:") == 3
    # cut both logs after the second second of writes, with Redis's own tool
    outputs = {}
    for name, root in roots.items():
        manifest = os.path.join(root, "appendonlydir", "appendonly.aof.manifest")
        check = subprocess.run(["redis-check-aof", "--truncate-to-timestamp",
                                str(firsts[name] + 1), manifest],
                               capture_output=True, text=True)
        lines = [line for line in check.stdout.splitlines() if "INCR" in line
                 or "runcate" in line or "valid" in line]
        outputs[name] = (check.returncode, [re.sub(r"\d{9,}", "T", x) for x in lines])
    assert outputs["pykv"] == outputs["redis"]
    assert outputs["pykv"][0] == 0
    keys = {}
    for name, root in roots.items():
        proc, client = _start(name, root, {})
        try:
            keys[name] = [client.call("MGET", "a", "b", "c", "n", "e"),
                          client.call("SELECT", "2"), client.call("GET", "d")]
        finally:
            _stop(proc, client)
    assert keys["pykv"] == keys["redis"]
    assert keys["pykv"][0] == b"*5\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n1\r\n$-1\r\n"


def test_rewritten_command_base_starts_with_a_timestamp(tmp_path) -> None:
    from support.servers import wait_while_in_progress

    root = str(tmp_path)
    proc, client = _start("pykv", root, {"aof-timestamp-enabled": "yes",
                                         "aof-use-rdb-preamble": "no"})
    try:
        client.call("SET", "a", "1")
        before = int(time.time())
        assert client.call("BGREWRITEAOF").startswith(b"+Background append only file")
        wait_while_in_progress(client, b"aof_rewrite_in_progress", 30)
    finally:
        _stop(proc, client)
    aofdir = os.path.join(root, "appendonlydir")
    base = [n for n in os.listdir(aofdir) if ".base." in n]
    assert base == ["appendonly.aof.2.base.aof"]
    data = open(os.path.join(aofdir, base[0]), "rb").read()
    stamp = re.match(rb"#TS:(\d+)\r\n\*2\r\n\$6\r\nSELECT\r\n", data)
    assert stamp is not None, data[:60]
    assert int(stamp.group(1)) >= before


# -- while the AOF loads: -LOADING, INFO's loading fields, clients that leave --------------
def _slow_aof(root: str, commands: int) -> None:
    from support.aofdirs import BASE, INCR1, MANIFEST, SELECT0, AofCase, cmd, materialise

    incr = SELECT0 + b"".join(cmd("SET", f"k{i}", "v") for i in range(commands))
    materialise(AofCase("slow", MANIFEST, {BASE: b"", INCR1: incr}), root)


def _during_loading(name: str, root: str) -> dict:
    import socket

    from support.aofdirs import command_line
    from support.resp import RawClient

    from pykv.testing import free_port

    port = free_port()
    log = open(os.path.join(root, "server.log"), "ab")
    import subprocess

    proc = subprocess.Popen(command_line(name, port, root, {"key-load-delay": "500"}),
                            stdout=log, stderr=subprocess.STDOUT, cwd=root)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                leaving = RawClient(port=port, timeout=20)
                break
            except OSError:
                assert time.monotonic() < deadline, "never accepted a connection"
                time.sleep(0.02)
        first = leaving.call("PING")
        staying = RawClient(port=port, timeout=20)
        info = staying.call("INFO", "persistence")
        leaving.sock.shutdown(socket.SHUT_RDWR)
        leaving.close()
        while staying.call("PING") != b"+PONG\r\n":
            assert time.monotonic() < deadline, "still loading"
            time.sleep(0.05)
        clients = staying.call("INFO", "clients")
        listed = staying.call("CLIENT", "LIST")
        after = staying.call("INFO", "persistence")
        return {"first": first, "info": info, "clients": clients, "listed": listed,
                "after": after, "dbsize": staying.call("DBSIZE")}
    finally:
        proc.kill()
        proc.wait(10)


def _names(info: bytes) -> list[bytes]:
    return [line.split(b":", 1)[0] for line in info.split(b"\r\n")[1:] if b":" in line]


def _field(info: bytes, name: bytes) -> bytes:
    return next(line.split(b":", 1)[1] for line in info.split(b"\r\n")
                if line.startswith(name + b":"))


def test_loading_replies_info_and_leaving_clients_as_redis(tmp_path) -> None:
    roots = {name: str(tmp_path / name) for name in ("redis", "pykv")}
    for root in roots.values():
        os.makedirs(root)
        _slow_aof(root, 4000)
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_during_loading, name, root)
                   for name, root in roots.items()}
        results = {name: future.result() for name, future in futures.items()}
    want, got = results["redis"], results["pykv"]
    assert got["first"] == want["first"] == \
        b"-LOADING Redis is loading the dataset in memory\r\n"
    assert _field(want["info"], b"loading") == b"1", want["info"]
    assert _names(got["info"]) == _names(want["info"])
    for info in (want["info"], got["info"]):
        assert _field(info, b"loading_total_bytes") == b"%d" % os.path.getsize(
            os.path.join(str(tmp_path / "pykv"), "appendonlydir", "appendonly.aof.1.incr.aof"))
    assert _names(got["after"]) == _names(want["after"])
    assert _field(got["clients"], b"connected_clients") == b"1"
    assert _field(want["clients"], b"connected_clients") == b"1"
    assert got["listed"].count(b"id=") == want["listed"].count(b"id=") == 1
    assert got["dbsize"] == want["dbsize"] == b":4000\r\n"


# -- DEBUG LOADAOF and DEBUG AOF-FLUSH-SLEEP ------------------------------------------------
def _debug_session(name: str, root: str) -> dict:
    proc, c = _start(name, root, {})
    out: dict = {}
    try:
        c.call("SET", "a", "1")
        out["info_names"] = _names(c.call("INFO", "persistence"))
        out["loadaof"] = c.call("DEBUG", "LOADAOF")
        out["after"] = [c.call("GET", "a"), c.call("DBSIZE")]
        out["sleep"] = [c.call("DEBUG", "AOF-FLUSH-SLEEP", "200000"),
                        c.call("DEBUG", "AOF-FLUSH-SLEEP"),
                        c.call("DEBUG", "AOF-FLUSH-SLEEP", "junk")]
        c.call("DEBUG", "AOF-FLUSH-SLEEP", "300000")
        start = time.monotonic()
        out["slow_write"] = c.call("SET", "slow", "1")
        out["slow_enough"] = time.monotonic() - start >= 0.3
        c.call("DEBUG", "AOF-FLUSH-SLEEP", "0")
        # with the AOF off it still replaces the dataset with what the AOF holds
        c.call("CONFIG", "SET", "appendonly", "no")
        c.call("SET", "b", "2")
        out["loadaof_off"] = [c.call("DEBUG", "LOADAOF"), c.call("DBSIZE"), c.call("GET", "b")]
        c.call("CONFIG", "SET", "appendonly", "yes")
        from support.servers import wait_while_in_progress

        wait_while_in_progress(c, b"aof_rewrite_in_progress", 30)
        c.call("SET", "c", "3")
        aofdir = os.path.join(root, "appendonlydir")
        incr = sorted(n for n in os.listdir(aofdir) if n.endswith(".incr.aof"))[-1]
        with open(os.path.join(aofdir, incr), "ab") as fh:
            fh.write(b"*2\r\n$3\r\nGET")  # a torn command: DEBUG LOADAOF ends the server
        c.send_raw(b"*2\r\n$5\r\nDEBUG\r\n$7\r\nLOADAOF\r\n")
        out["torn"] = c.read_until_closed()
        out["exit"] = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    log = open(os.path.join(root, "server.log"), errors="replace").read()
    out["logged"] = log.count("Append Only File loaded by DEBUG LOADAOF")
    return out


def test_debug_loadaof_and_aof_flush_sleep_as_redis(tmp_path) -> None:
    roots = {name: str(tmp_path / name) for name in ("redis", "pykv")}
    for root in roots.values():
        os.makedirs(root)
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_debug_session, name, root)
                   for name, root in roots.items()}
        want, got = (futures[name].result() for name in ("redis", "pykv"))
    assert got == want
    assert got["loadaof"] == b"+OK\r\n" and got["after"] == [b"$1\r\n1\r\n", b":1\r\n"]
    assert got["slow_enough"] and got["logged"] == 2
    assert got["torn"] == b"" and got["exit"] == 1
