"""CONFIG GET/SET/RESETSTAT/REWRITE/HELP compared with real redis-server 7.0.

Tests on the shared session servers put back every value they change. Tests that change
listeners, passwords or config files start their own pair of servers.

Redis answers several matches of CONFIG GET in hash-table order, which differs from run
to run, so multi-match replies are compared as maps; single matches byte for byte.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
from support.resp import RawClient
from support.servers import require_redis

from pykv.config.table import ENTRIES
from pykv.testing import Server, free_port


def decode(reply: bytes) -> object:
    """A small RESP decoder for comparing replies structurally (arrays, maps, bulks)."""
    value, rest = _decode(reply)
    assert rest == b""
    return value


def _decode(data: bytes):
    line, rest = data.split(b"\r\n", 1)
    kind, head = line[:1], line[1:]
    if kind in b"$":
        n = int(head)
        return (None, rest) if n < 0 else (rest[:n], rest[n + 2:])
    if kind in (b"*", b"%"):
        items = []
        for _ in range(int(head) * (2 if kind == b"%" else 1)):
            item, rest = _decode(rest)
            items.append(item)
        return items, rest
    return line, rest


def as_map(reply: bytes) -> dict:
    items = decode(reply)
    return dict(zip(items[::2], items[1::2], strict=True))


def diff_map(diff, *args) -> dict:
    """Same names, same values (except values the two servers were started with)."""
    real, ours = diff.both(*args)
    real_map, our_map = as_map(real), as_map(ours)
    extensions = {e.name.encode() for e in ENTRIES if "extension" in e.flags}
    assert set(our_map) - extensions == set(real_map), args
    for name in set(real_map) - _STARTUP_DIFFERENCES:
        assert our_map[name] == real_map[name], (args, name)
    return real_map


@pytest.fixture
def restore(diff):
    """Records values to put back on both servers after the test."""
    saved: list[tuple[str, bytes]] = []

    def remember(*names: str) -> None:
        for name in names:
            value = decode(diff.real.call("CONFIG", "GET", name))[1]
            saved.append((name, value))

    yield remember
    for name, value in reversed(saved):
        diff.real.call("CONFIG", "SET", name, value)
        diff.ours.call("CONFIG", "SET", name, value)


# -- CONFIG GET ----------------------------------------------------------------------------
# set on the command line differently for the two session servers
_STARTUP_DIFFERENCES = {b"port", b"dir", b"save", b"enable-debug-command", b"appendonly"}


def test_get_all_names_and_defaults(diff):
    assert len(diff_map(diff, "CONFIG", "GET", "*")) == 192


def test_get_single_names(diff, diff3):
    for d in (diff, diff3):
        for name in ("maxmemory", "HZ", "slave-read-only", "client-output-buffer-limit",
                     "bind", "key-load-delay", "latency-tracking-info-percentiles",
                     "notify-keyspace-events", "unixsocketperm", "nosuchoption", "lua*limit",
                     "oom-score-adj-values", "shutdown-on-sigint", "requirepass"):
            d("CONFIG", "GET", name)


def test_get_patterns_and_several_at_once(diff, diff3):
    for d in (diff, diff3):
        for args in (["*max*"], ["*slave*"], ["port", "PORT", "po*"], ["hz", "timeout"],
                     ["slaveof", "replicaof"], ["[hm]a*"], ["key-load*"], ["maxmemory*", "*"],
                     ["nope", "nope*"]):
            diff_map(d, "CONFIG", "GET", *args)


def test_get_arity(diff):
    diff("CONFIG", "GET")
    diff("CONFIG")
    diff("CONFIG", "NOSUCH")


# -- CONFIG SET ----------------------------------------------------------------------------
def test_set_errors(diff):
    for args in (
        ["port"], ["port", "1", "hz"], ["foo", "bar"], ["unknown-x", "1", "port", "1"],
        ["daemonize", "yes"], ["daemonize", "yes", "unknown", "1"], ["hz", "x"],
        ["HZ", "5k"], ["timeout", "-1"], ["timeout", "010"], ["timeout", "+1"],
        ["maxmemory", "abc"], ["maxmemory", "1.5gb"], ["maxmemory", "-1"],
        ["proto-max-bulk-len", "1"], ["loglevel", "foo"], ["loglevel", "nothing"],
        ["maxmemory-policy", "bad"], ["save", "abc"], ["save", "100"], ["save", "0 1"],
        ["slaveof", "x"], ["replicaof", "x"], ["unixsocketperm", "700"], ["dir", "/tmp"],
        ["dbfilename", "a/b"], ["appendfilename", "x"], ["notify-keyspace-events", "Q"],
        ["maxmemory-clients", "101%"], ["maxmemory-clients", "x%"], ["maxclients", "0"],
        ["client-output-buffer-limit", "master 1 1 1"],
        ["client-output-buffer-limit", "normal 1"],
        ["client-output-buffer-limit", "normal x 1 1"],
        ["oom-score-adj-values", "1 2"], ["oom-score-adj-values", "1 2 x"],
        ["latency-tracking-info-percentiles", "101"], ["latency-tracking-info-percentiles", "x"],
        ["shutdown-on-sigint", "bad"], ["shutdown-on-sigint", "save nosave"],
        ["shutdown-on-sigint", ""], ["activedefrag", "yes"], ["protected-mode", "1"],
        ["cluster-announce-hostname", "a_b"], ["proc-title-template", "{x}"],
        ["port", "1", "port", "2"], ["port", "1", "PORT", "2"], ["slowlog-max-len", "-1"],
        ["list-max-listpack-size", "5k"], ["socket-mark-id", "1"],
        ["enable-protected-configs", "yes"], ["propagation-error-behavior", "x"],
    ):
        diff("CONFIG", "SET", *args)


def test_set_then_get_round_trips(diff, diff3, restore):
    cases = [
        ("maxmemory", "1GB"), ("maxmemory", "5k"), ("maxmemory", ""), ("hz", "1000"),
        ("hz", "0"), ("loglevel", "WARNING"), ("maxmemory-policy", "ALLKEYS-LRU"),
        ("save", "10 1 20 2"), ("save", ""), ("maxmemory-clients", "10%"),
        ("client-output-buffer-limit", "normal 1mb 2mb 3"),
        ("client-output-buffer-limit", "normal 0 0 0 replica 1 2 3 pubsub 1kb 2gb 4"),
        ("notify-keyspace-events", "KEA"), ("notify-keyspace-events", "Kgx"),
        ("notify-keyspace-events", "nA"), ("notify-keyspace-events", "E$gm"),
        ("notify-keyspace-events", ""), ("oom-score-adj", "relative"),
        ("shutdown-on-sigint", "default now"), ("shutdown-on-sigint", "save force"),
        ("latency-tracking-info-percentiles", "1.5 99 0"),
        ("latency-tracking-info-percentiles", ""), ("hash-max-listpack-value", "5k"),
        ("lua-time-limit", "100"), ("slave-priority", "7"), ("requirepass", ""),
        ("proc-title-template", "{{x}} {title}"), ("slowlog-log-slower-than", "-1"),
    ]
    restore(*{name for name, _ in cases})
    for name, value in cases:
        diff("CONFIG", "SET", name, value)
        diff("CONFIG", "GET", name)
        diff3("CONFIG", "GET", name)


def test_set_several_at_once_is_atomic(diff, restore):
    restore("hz", "maxmemory", "timeout")
    diff("CONFIG", "SET", "hz", "20", "maxmemory", "3mb", "maxmemory-policy", "bad")
    diff_map(diff, "CONFIG", "GET", "hz", "maxmemory", "maxmemory-policy")
    diff("CONFIG", "SET", "hz", "20", "maxmemory", "3mb", "timeout", "7")
    diff_map(diff, "CONFIG", "GET", "hz", "maxmemory", "timeout")


def test_resetstat_and_help(diff):
    diff("CONFIG", "HELP")
    diff("CONFIG", "HELP", "extra")
    diff("CONFIG", "RESETSTAT")
    diff("CONFIG", "RESETSTAT", "extra")
    diff("CONFIG", "REWRITE")  # neither session server has a config file
    diff("CONFIG", "REWRITE", "extra")


def test_resetstat_clears_counters(diff):
    diff.ours.call("GET", "x")
    diff.ours.call("CONFIG", "RESETSTAT")
    stats = diff.ours.call("INFO", "commandstats")
    assert b"cmdstat_get:" not in stats


# -- own servers: listeners, auth, limits, rewrite -----------------------------------------
REDIS_SERVER = shutil.which("redis-server")


class ConfRedis:
    """redis-server started with a config file (for CONFIG REWRITE)."""

    def __init__(self, conf: str, port: int) -> None:
        self.port = port
        self.proc = subprocess.Popen([REDIS_SERVER, conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                RawClient(port=port).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def conf_pair(tmp_path):
    """(real, ours, real_conf, our_conf) started from the same config file text."""
    require_redis()
    template = ("# a comment that stays\nport {port}\nsave 900 1\nsave 300 10\n"
                "slave-read-only yes\n\n# another\nhz 20\n\n\n\nmaxmemory 100mb\n"
                "dir {dir}\nbind 127.0.0.1\nlist-max-ziplist-entries 5\nport {port}\n"
                'requirepass "a b"\n')
    made = []
    for side in ("real", "ours"):
        d = tmp_path / side
        d.mkdir()
        port = free_port()
        conf = d / "server.conf"
        conf.write_text(template.format(port=port, dir=d))
        made.append((conf, port))
    real = ConfRedis(str(made[0][0]), made[0][1])
    ours = Server(port=made[1][1], extra_args=[str(made[1][0])])
    ours.command_line = lambda: [ours.python, "-m", "pykv", str(made[1][0])]
    ours.start()
    try:
        yield real, ours, made[0][0], made[1][0]
    finally:
        real.stop()
        ours.stop()


def _client(port: int, password: str | None = None) -> RawClient:
    c = RawClient(port=port)
    if password is not None:
        assert c.call("AUTH", password) == b"+OK\r\n"
    return c


def test_rewrite_like_redis(conf_pair):
    real, ours, real_conf, our_conf = conf_pair
    changes = ["hz", "30", "maxmemory", "3mb", "save", "60 5", "timeout", "7",
               "replica-read-only", "no", "notify-keyspace-events", "KEA",
               "client-output-buffer-limit", "pubsub 1 2 3", "maxmemory-clients", "5%",
               "loglevel", "verbose", "latency-tracking-info-percentiles", "1.5 99",
               "oom-score-adj-values", "0 100 900", "lua-time-limit", "100"]
    for port in (real.port, ours.port):
        c = _client(port, "a b")
        assert c.call("CONFIG", "SET", *changes) == b"+OK\r\n"
        assert c.call("CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
        assert c.call("CONFIG", "REWRITE") == b"+OK\r\n"
        c.close()
    real_lines = _normalise(real_conf.read_text(), real.port, real_conf.parent)
    our_lines = _normalise(our_conf.read_text(), ours.port, our_conf.parent)
    split_real = real_lines.index("# Generated by CONFIG REWRITE")
    split_ours = our_lines.index("# Generated by CONFIG REWRITE")
    assert our_lines[:split_ours] == real_lines[:split_real]  # the old file's layout
    assert sorted(our_lines[split_ours:]) == sorted(real_lines[split_real:])  # appended


def _normalise(text: str, port: int, directory) -> list[str]:
    return text.replace(str(port), "PORT").replace(str(directory), "DIR").split("\n")


def _wait_refused(port: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            RawClient(port=port).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_port_and_bind_change_at_runtime():
    with Server() as server:
        c = RawClient(port=server.port)
        new_port = free_port()
        assert c.call("CONFIG", "SET", "port", str(new_port)) == b"+OK\r\n"
        assert RawClient(port=new_port).call("PING") == b"+PONG\r\n"
        assert c.call("PING") == b"+PONG\r\n"  # connected clients stay
        assert _wait_refused(server.port)
        # a failed bind is refused and the old listener keeps working
        err = c.call("CONFIG", "SET", "bind", "192.0.2.1")
        assert err == (b"-ERR CONFIG SET failed (possibly related to argument 'bind') - "
                       b"Failed to bind to specified addresses.\r\n")
        assert c.call("CONFIG", "GET", "bind") == b"*2\r\n$4\r\nbind\r\n$9\r\n127.0.0.1\r\n"
        assert RawClient(port=new_port).call("PING") == b"+PONG\r\n"
        # a port that is taken fails the same way Redis fails it
        busy = RawClient(port=new_port)
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        try:
            err = c.call("CONFIG", "SET", "port", str(taken))
            assert err == (b"-ERR CONFIG SET failed (possibly related to argument 'port') - "
                           b"Unable to listen on this port. Check server logs.\r\n")
        finally:
            blocker.close()
        assert busy.call("CONFIG", "GET", "port") == (
            b"*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n" % (len(str(new_port)), new_port))
        c.close()
        busy.close()


def test_requirepass_and_proto_max_bulk_len_apply_to_connected_clients():
    with Server() as server:
        admin = RawClient(port=server.port)
        assert admin.call("CONFIG", "SET", "requirepass", "pw") == b"+OK\r\n"
        newcomer = RawClient(port=server.port)
        assert newcomer.call("PING").startswith(b"-NOAUTH")
        assert admin.call("PING") == b"+PONG\r\n"  # already in
        assert admin.call("CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
        assert newcomer.call("PING") == b"+PONG\r\n"
        assert admin.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == b"+OK\r\n"
        newcomer.send_raw(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n")
        assert newcomer.read_until_closed().startswith(b"-ERR Protocol error: invalid bulk")
        admin.close()


def test_timeout_closes_idle_clients():
    with Server(config={"timeout": 1, "hz": 100}) as server:
        idle = RawClient(port=server.port)
        assert idle.call("PING") == b"+PONG\r\n"
        idle.sock.settimeout(5)
        start = time.monotonic()
        assert idle.read_until_closed() == b""
        assert 0.9 < time.monotonic() - start < 4


def _outbound_ip() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for UDP connect
        except OSError:
            return None
        ip = probe.getsockname()[0]
    return None if ip.startswith("127.") else ip


def test_protected_mode_denies_remote_clients_like_redis(tmp_path):
    ip = _outbound_ip()
    require_redis()
    if ip is None:
        pytest.skip("needs a non-loopback address")
    real_port = free_port()
    real = subprocess.Popen([REDIS_SERVER, "--port", str(real_port), "--bind", "127.0.0.1", ip,
                             "--save", "", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with Server(config={"bind": ["127.0.0.1", ip]}) as ours:
            deadline = time.monotonic() + 10
            while True:
                try:
                    expected = RawClient(host=ip, port=real_port).read_until_closed()
                    break
                except OSError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            assert expected.startswith(b"-DENIED Redis is running in protected mode")
            assert RawClient(host=ip, port=ours.port).read_until_closed() == expected
            local = RawClient(port=ours.port)
            assert local.call("CONFIG", "SET", "protected-mode", "no") == b"+OK\r\n"
            assert RawClient(host=ip, port=ours.port).call("PING") == b"+PONG\r\n"
            assert local.call("CONFIG", "SET", "protected-mode", "yes",
                              "requirepass", "pw") == b"+OK\r\n"
            assert RawClient(host=ip, port=ours.port).call("PING").startswith(b"-NOAUTH")
    finally:
        real.terminate()
        real.wait(10)
