"""TLS as a connection type, side by side with Debian's redis-server (built with TLS).

Certificates are made at test time (``pykv.testing.certs``, openssl). Each case starts
redis-server and pykv with the same ``tls-*`` settings and compares what clients see:
redis-cli and redis-py replies, handshake failures, CONFIG SET errors, a certificate reload.
"""
from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from support.servers import REDIS_SERVER
from support.tls_certs import needs_openssl

from pykv.testing import Server, ServerError, free_port
from pykv.testing.certs import TestCerts

pytestmark = needs_openssl


def _tls_args(certs: TestCerts, auth: str = "yes") -> list[str]:
    return ["--tls-cert-file", certs.server_cert, "--tls-key-file", certs.server_key,
            "--tls-ca-cert-file", certs.ca_cert, "--tls-auth-clients", auth]


class RealTlsRedis:
    def __init__(self, args: list[str], tmp: str) -> None:
        self.port, self.tls_port = free_port(), free_port()
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--tls-port", str(self.tls_port), "--dir", tmp, *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.tls_port), 1).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def pair(tmp_path) -> Iterator:
    """Start (redis, pykv) with the same TLS arguments: ``pair(args)``."""
    started = []

    def start(args: list[str]):
        real = RealTlsRedis(args, str(tmp_path))
        started.append(real)
        ours = Server(config={}, extra_args=["--tls-port", str(free_port()), *args])
        ours.start()
        started.append(ours)
        ours.tls_port = int(ours.extra_args[1])
        return real, ours

    yield start
    for server in started:
        server.stop()


def _cli(port: int, certs: TestCerts, *args: str, cert: bool = True,
         ca: str | None = None) -> tuple[int, str]:
    argv = ["redis-cli", "--tls", "--cacert", ca or certs.ca_cert, "-p", str(port)]
    if cert:
        argv += ["--cert", certs.client_cert, "--key", certs.client_key]
    proc = subprocess.run([*argv, *args], capture_output=True, timeout=30, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def test_redis_cli_session_as_redis(pair, certs):
    real, ours = pair(_tls_args(certs))
    for cmd in (["PING"], ["SET", "k", "v"], ["GET", "k"], ["INCR", "k"], ["HELLO", "3"],
                ["DEL", "k"], ["CONFIG", "GET", "tls-auth-clients"]):
        expected = _cli(real.tls_port, certs, *cmd)
        got = _cli(ours.tls_port, certs, *cmd)
        if cmd[0] == "HELLO":  # server-specific fields; the shape must match
            assert got[0] == expected[0] == 0 and "proto" in got[1], got
            continue
        assert got == expected, cmd


@pytest.mark.parametrize("auth", ["yes", "optional", "no"])
def test_client_certificate_policies_as_redis(pair, certs, auth):
    real, ours = pair(_tls_args(certs, auth))
    for with_cert in (True, False):
        expected = _cli(real.tls_port, certs, "PING", cert=with_cert)
        got = _cli(ours.tls_port, certs, "PING", cert=with_cert)
        # refused: redis-cli fails either way (a reset can reach it as SIGPIPE)
        assert (got[0] == 0, "PONG" in got[1]) == (expected[0] == 0, "PONG" in expected[1]), \
            f"auth-clients {auth}, client cert {with_cert}: redis {expected}, pykv {got}"
    # without a client certificate "yes" refuses, the others serve
    assert ("PONG" in _cli(ours.tls_port, certs, "PING", cert=False)[1]) == (auth != "yes")


def test_untrusted_server_and_plain_text_clients(pair, certs, other_certs):
    real, ours = pair(_tls_args(certs))
    for server in (real, ours):
        code, out = _cli(server.tls_port, certs, "PING", ca=other_certs.ca_cert)
        assert "PONG" not in out and "certificate verify failed" in out, out
    for server in (real, ours):  # plain RESP on the TLS port: no reply, connection closed
        with socket.create_connection(("127.0.0.1", server.tls_port), 5) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            sock.settimeout(5)
            data = b""
            try:
                while chunk := sock.recv(4096):
                    data += chunk
            except (TimeoutError, ConnectionResetError):
                pass
            assert b"PONG" not in data


def test_config_set_errors_as_redis(pair, certs):
    real, ours = pair(_tls_args(certs))
    for name, value in (("tls-cert-file", "/nonexistent.crt"), ("tls-protocols", "TLSv9"),
                        ("tls-ca-cert-file", "/nonexistent-ca.crt"),
                        ("tls-ciphers", "NO-SUCH-CIPHER"), ("tls-auth-clients", "maybe")):
        expected = _cli(real.tls_port, certs, "CONFIG", "SET", name, value)
        got = _cli(ours.tls_port, certs, "CONFIG", "SET", name, value)
        assert got == expected, (name, value)
        # the old settings still serve
        assert "PONG" in _cli(ours.tls_port, certs, "PING")[1]


def test_certificate_reload_for_new_connections(pair, certs, other_certs):
    real, ours = pair(_tls_args(certs, "no"))
    for server in (real, ours):
        kept = redis.Redis(port=server.tls_port, ssl=True, ssl_ca_certs=certs.ca_cert)
        assert kept.ping()
        assert _cli(server.tls_port, certs, "CONFIG", "SET",
                    "tls-cert-file", other_certs.server_cert,
                    "tls-key-file", other_certs.server_key)[1].strip() == "OK"
        deadline = time.monotonic() + 10
        while "PONG" not in _cli(server.tls_port, other_certs, "PING", cert=False)[1]:
            assert time.monotonic() < deadline, "new certificate not served"
            time.sleep(0.1)
        assert "PONG" not in _cli(server.tls_port, certs, "PING", cert=False)[1]
        assert kept.ping()  # a connection made before the reload keeps working
        kept.close()


def test_redis_py_with_and_without_client_certificates(certs):
    with Server(tls=True) as server:
        assert server.client(ssl=True).ping()
        r = server.client(ssl=True, ssl_certfile=server.tls_certs.client_cert,
                          ssl_keyfile=server.tls_certs.client_key, decode_responses=True)
        r.set("k", "v" * 100_000)
        assert r.get("k") == "v" * 100_000
        pipe = r.pipeline(transaction=False)
        for _i in range(1000):
            pipe.incr("n")
        assert pipe.execute()[-1] == 1000
        info = r.info("server")
        assert info["redis_version"].startswith("7.0")


def test_tls_port_changed_at_runtime(certs):
    with Server(extra_args=["--tls-port", str(free_port()), *_tls_args(certs, "no")]) as s:
        admin = s.client()
        new_port = free_port()
        assert admin.config_set("tls-port", new_port)
        ctx = ssl.create_default_context(cafile=certs.ca_cert)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", new_port), 2) as raw, \
                        ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"*1\r\n$4\r\nPING\r\n")
                    assert tls.recv(100) == b"+PONG\r\n"
                    break
            except OSError:
                assert time.monotonic() < deadline, "no TLS listener on the new port"
                time.sleep(0.1)
        assert admin.config_get("tls-port") == {"tls-port": str(new_port)}


def test_redis_benchmark_over_tls(certs):
    with Server(extra_args=["--tls-port", str(free_port()), *_tls_args(certs)]) as s:
        port = s.extra_args[1]
        proc = subprocess.run(
            ["redis-benchmark", "--tls", "--cacert", certs.ca_cert, "--cert", certs.client_cert,
             "--key", certs.client_key, "-p", port, "-n", "2000", "-c", "4", "-P", "4",
             "-t", "set,get", "-q"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "SET:" in proc.stdout and "GET:" in proc.stdout, proc.stdout


def test_info_tcp_port_is_the_tls_port_without_a_plain_one(tmp_path, certs):
    tls_port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pykv", "--port", "0", "--save", "",
                             "--tls-port", str(tls_port), "--dir", str(tmp_path),
                             *_tls_args(certs, "no")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while (out := _cli(tls_port, certs, "INFO", "server", cert=False)[1]) and \
                "redis_version" not in out:
            assert time.monotonic() < deadline, out
            time.sleep(0.2)
        assert f"tcp_port:{tls_port}\r" in out or f"tcp_port:{tls_port}\n" in out, out
    finally:
        proc.terminate()
        proc.wait(10)


def test_missing_certificate_is_fatal_as_in_redis(tmp_path, certs):
    args = ["--tls-port", str(free_port()), "--tls-key-file", certs.server_key,
            "--tls-ca-cert-file", certs.ca_cert, "--save", "", "--port", str(free_port())]
    real = subprocess.run([REDIS_SERVER, *args, "--dir", str(tmp_path)], capture_output=True,
                          text=True, timeout=30)
    ours = subprocess.run([sys.executable, "-m", "pykv", *args, "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert real.returncode == ours.returncode == 1
    for line in ("No tls-cert-file configured!",
                 "Failed to configure TLS. Check logs for more info."):
        assert line in real.stdout and line in ours.stdout, (line, real.stdout, ours.stdout)


# -- TLS 1.3 suites, the session cache, handshake failures, listener options ----------------

def _tls13_cipher(port: int, certs: TestCerts) -> str:
    ctx = ssl.create_default_context(cafile=certs.ca_cert)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(certs.client_cert, certs.client_key)
    with socket.create_connection(("127.0.0.1", port), 5) as raw, \
            ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"*1\r\n$4\r\nPING\r\n")
        assert tls.recv(100) == b"+PONG\r\n"
        return tls.cipher()[0]


def test_ciphersuites_as_redis(pair, certs):
    """tls-ciphersuites picks the TLS 1.3 suites (Python's set_ciphers cannot: pykv calls
    OpenSSL's SSL_CTX_set_ciphersuites); a bad list is refused with Redis's error."""
    real, ours = pair(_tls_args(certs))
    for server in (real, ours):
        bad = _cli(server.tls_port, certs, "CONFIG", "SET", "tls-ciphersuites", "NO-SUCH-SUITE")
        assert "Unable to update TLS configuration" in bad[1], bad
    for suite in ("TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"):
        for server in (real, ours):
            assert "OK" in _cli(server.tls_port, certs, "CONFIG", "SET", "tls-ciphersuites",
                                suite)[1]
            # a new connection gets the new context (pykv reloads it in the background)
            deadline = time.monotonic() + 5
            while (got := _tls13_cipher(server.tls_port, certs)) != suite:
                assert time.monotonic() < deadline, (server, suite, got)
                time.sleep(0.1)


def _resumed(port: int, certs: TestCerts, pause: float = 0.0) -> bool:
    """A TLS 1.2 session (no tickets: the server's session cache) resumed by a second
    connection while the first is still open."""
    ctx = ssl.create_default_context(cafile=certs.ca_cert)
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_TICKET
    ctx.load_cert_chain(certs.client_cert, certs.client_key)
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 5),
                         server_hostname="localhost") as first:
        first.sendall(b"*1\r\n$4\r\nPING\r\n")
        first.recv(100)
        time.sleep(pause)
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 5),
                             server_hostname="localhost", session=first.session) as second:
            second.sendall(b"*1\r\n$4\r\nPING\r\n")
            second.recv(100)
            return second.session_reused


def _set_and_wait(server, certs: TestCerts, name: str, value: str) -> None:
    assert "OK" in _cli(server.tls_port, certs, "CONFIG", "SET", name, value)[1]
    time.sleep(0.3)  # pykv serves new connections with the new context once it is reloaded


def test_session_cache_as_redis(pair, certs):
    real, ours = pair(_tls_args(certs))
    for server in (real, ours):
        assert _resumed(server.tls_port, certs), server
        _set_and_wait(server, certs, "tls-session-caching", "no")
        assert not _resumed(server.tls_port, certs), server
        _set_and_wait(server, certs, "tls-session-caching", "yes")
        _set_and_wait(server, certs, "tls-session-cache-timeout", "1")
        assert not _resumed(server.tls_port, certs, pause=2.2), server  # expired


def test_handshake_failure_logged_as_redis(tmp_path, certs):
    """A client speaking plain RESP to the TLS port: Redis logs OpenSSL's error."""
    log_file = tmp_path / "redis.log"
    real = RealTlsRedis([*_tls_args(certs), "--logfile", str(log_file)], str(tmp_path))
    ours = Server(extra_args=["--tls-port", str(free_port()), *_tls_args(certs)])
    ours.start()
    try:
        texts = []
        for port, read in ((real.tls_port, log_file.read_text),
                           (int(ours.extra_args[1]), ours.log)):
            before = len(read())  # (Redis's start-up probe closed a connection unshaken)
            with socket.create_connection(("127.0.0.1", port), 5) as sock:
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                sock.settimeout(5)
                try:
                    assert sock.recv(100) == b""
                except ConnectionResetError:
                    pass
            deadline = time.monotonic() + 5
            while "Error accepting a client connection: " not in (text := read()[before:]):
                assert time.monotonic() < deadline, text
                time.sleep(0.05)
            line = next(x for x in text.splitlines() if "Error accepting a client" in x)
            assert " # Error accepting a client connection: " in line, line
            # Redis adds " (conn: fd=N)" when the handshake fails at accept time already
            texts.append(line.split("connection: ", 1)[1].split(" (conn: ")[0])
        assert texts[0] == texts[1] == "error:0A00010B:SSL routines::wrong version number"
    finally:
        real.stop()
        ours.stop()


@pytest.mark.parametrize("options, message", [
    ("foo=bar", "unknown tls listener option 'foo'"),
    ("auth-clients=maybe", "auth-clients must be one of yes, no, optional"),
    ("cert=/nonexistent.crt", "Failed to configure TLS"),
])
def test_tls_listener_with_bad_options_fails_start(certs, options, message):
    spec = (f"tls,bind=127.0.0.1,port={free_port()},cert={certs.server_cert},"
            f"key={certs.server_key},ca={certs.ca_cert},{options}")
    bad = Server(listeners=[spec], start_timeout=20)
    try:
        with pytest.raises(ServerError) as info:
            bad.start()
    finally:
        bad.stop()
    assert message in str(info.value)
    with Server(listeners=[spec + ",optional"]) as ok:  # an optional one is skipped
        assert ok.ping()


def _wait_for(cond, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _replica_tls_args(certs: TestCerts) -> list[str]:
    """TLS for a replica's link: its client certificate (the server one is for serverAuth
    only, so a master refuses it as Redis's would)."""
    return [*_tls_args(certs), "--tls-replication", "yes",
            "--tls-client-cert-file", certs.client_cert,
            "--tls-client-key-file", certs.client_key]


def test_tls_replication_both_ways(tmp_path, certs):
    """tls-replication yes: a pykv replica of a redis-server master's TLS port, and a
    redis-server replica of a pykv master's TLS port (client certificates required)."""
    real = RealTlsRedis(_tls_args(certs), str(tmp_path))
    ours = Server(config={}, extra_args=[
        "--tls-port", str(free_port()), *_replica_tls_args(certs),
        "--replicaof", "127.0.0.1", str(real.tls_port)])
    ours.start()
    sub = None
    try:
        plain_master = redis.Redis(port=real.port)
        plain_master.set("over", "tls")
        replica = ours.client()
        _wait_for(lambda: replica.get("over") == b"tls", "the pykv replica over TLS")
        assert replica.info("replication")["master_link_status"] == "up"
        # and a redis-server below it, through pykv's TLS port
        sub = RealTlsRedis([*_replica_tls_args(certs), "--replicaof", "127.0.0.1",
                            ours.extra_args[1]], str(tmp_path))
        below = redis.Redis(port=sub.port)
        plain_master.set("chain", "tls")
        _wait_for(lambda: below.get("chain") == b"tls", "the redis-server sub-replica")
        assert below.info("replication")["master_link_status"] == "up"
    finally:
        if sub is not None:
            sub.stop()
        ours.stop()
        real.stop()


def test_tls_replication_refused_without_a_trusted_master(tmp_path, certs, other_certs):
    """A master whose certificate our CA did not sign: the link never comes up."""
    real = RealTlsRedis(_tls_args(other_certs, auth="no"), str(tmp_path))
    ours = Server(config={}, extra_args=[
        "--tls-port", str(free_port()), *_replica_tls_args(certs),
        "--replicaof", "127.0.0.1", str(real.tls_port)])
    ours.start()
    try:
        time.sleep(1.5)
        assert ours.client().info("replication")["master_link_status"] == "down"
        assert "Error condition on socket for SYNC" in ours.log()
    finally:
        ours.stop()
        real.stop()


def test_tls_replication_with_an_unreadable_client_certificate(tmp_path, certs):
    """A client certificate that cannot be loaded: the link reports it and stays down."""
    real = RealTlsRedis(_tls_args(certs), str(tmp_path))
    missing = str(tmp_path / "missing.crt")
    ours = Server(config={}, extra_args=[
        "--tls-port", str(free_port()), *_tls_args(certs), "--tls-replication", "yes",
        "--tls-client-cert-file", missing, "--tls-client-key-file", certs.client_key,
        "--replicaof", "127.0.0.1", str(real.tls_port)])
    ours.start()
    try:
        _wait_for(lambda: f"Failed to load certificate: {missing}" in ours.log(),
                  "the link's certificate error")
        assert ours.client().info("replication")["master_link_status"] == "down"
    finally:
        ours.stop()
        real.stop()


@contextmanager
def _runaway_script(admin, runner) -> Iterator[None]:
    """``while true do end`` run by ``runner`` (in a thread) until the body of the
    ``with`` has killed it; it must end killed by SCRIPT KILL."""
    import threading

    from support.busy import wait_busy

    done: list[bytes] = []
    t = threading.Thread(target=lambda: done.append(
        runner.call("EVAL", "while true do end", "0")))
    t.start()
    try:
        wait_busy(admin)
        yield
    finally:
        t.join(10)
        if t.is_alive():   # (the kill did not land: end the script for the other tests)
            admin.call("SCRIPT", "KILL")
            t.join(10)
    assert done and done[0].startswith(b"-ERR Script killed by user with SCRIPT KILL")


def _kill_over(tls: ssl.SSLSocket) -> None:
    """During a busy script: -BUSY for a PING, then SCRIPT KILL, over ``tls``."""
    tls.sendall(b"PING\r\n")
    assert tls.recv(256).startswith(b"-BUSY Redis is busy running a script.")
    tls.sendall(b"SCRIPT KILL\r\n")
    assert tls.recv(64) == b"+OK\r\n"


def test_tls_client_while_a_script_is_busy(certs):
    """A TLS client is served during a busy script as a TCP one is: ``-BUSY``, then
    ``SCRIPT KILL``, which ends the script, on an intact TLS stream (before, the poller fed
    the ciphertext to the parser, and then it left TLS clients waiting for the script)."""
    from support.busy import busy_pair

    with Server(tls=True) as server, busy_pair(server.port) as (admin, runner):
        ctx = ssl.create_default_context(cafile=server.tls_certs.ca_cert)
        ctx.load_cert_chain(server.tls_certs.client_cert, server.tls_certs.client_key)
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", server.tls_port), 10),
                             server_hostname="localhost") as tls:
            tls.sendall(b"PING\r\n")
            assert tls.recv(64) == b"+PONG\r\n"
            with _runaway_script(admin, runner):
                tls.settimeout(10)
                _kill_over(tls)
            tls.sendall(b"ECHO hello\r\n")
            assert tls.recv(64) == b"$5\r\nhello\r\n"


def _recv_exactly(sock: ssl.SSLSocket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"closed after {len(data)} of {n} bytes"
        data += chunk
    return data


def _tls_client(server, certs_of_server) -> tuple[ssl.SSLContext, socket.socket]:
    ctx = ssl.create_default_context(cafile=certs_of_server.ca_cert)
    ctx.load_cert_chain(certs_of_server.client_cert, certs_of_server.client_key)
    return ctx, socket.create_connection(("127.0.0.1", server.tls_port), 10)


def test_tls_connections_opened_while_a_script_is_busy(certs):
    """As in Redis, the TLS port accepts during a busy script: a new connection's handshake
    is done by the busy poller, it gets -BUSY and may SCRIPT KILL; one whose client starts
    the handshake only after the script ends is handshaken by the loop; a plain-text
    client is refused and logged; the TLS clients then work under the loop (a 4 MB reply
    that cannot leave in one send, QUIT)."""
    from support.busy import busy_pair

    with Server(tls=True) as server, busy_pair(server.port) as (admin, runner):
        with _runaway_script(admin, runner):
            ctx, raw = _tls_client(server, server.tls_certs)
            late_ctx, late_raw = _tls_client(server, server.tls_certs)  # handshake later
            with socket.create_connection(("127.0.0.1", server.tls_port), 10) as plain:
                plain.sendall(b"PING\r\n")   # no TLS: refused at the handshake
                plain.settimeout(10)
                try:
                    assert plain.recv(64) == b""
                except ConnectionResetError:
                    pass
            tls = ctx.wrap_socket(raw, server_hostname="localhost")   # handshakes now
            tls.settimeout(10)
            _kill_over(tls)
        assert "Error accepting a client connection: " in server.log()
        with tls, late_ctx.wrap_socket(late_raw, server_hostname="localhost") as late:
            late.settimeout(10)
            late.sendall(b"PING\r\n")
            assert late.recv(64) == b"+PONG\r\n"
            big = b"x" * (4 << 20)
            tls.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n%s\r\n" % (len(big), big))
            assert tls.recv(64) == b"+OK\r\n"
            tls.sendall(b"GET big\r\nECHO after\r\n")
            head = b"$%d\r\n" % len(big)
            assert _recv_exactly(tls, len(head) + len(big) + 2) == head + big + b"\r\n"
            assert _recv_exactly(tls, 11) == b"$5\r\nafter\r\n"
            assert admin.call("CLIENT", "LIST").count(b" addr=") == 4  # admin, runner, 2 TLS
            tls.sendall(b"QUIT\r\n")
            assert tls.recv(64) == b"+OK\r\n"
            assert tls.recv(64) == b""
        deadline = time.monotonic() + 10
        while admin.call("CLIENT", "LIST").count(b" addr=") != 2:
            assert time.monotonic() < deadline, admin.call("CLIENT", "LIST")
            time.sleep(0.05)


def test_tls_client_that_leaves_during_a_busy_script(certs):
    """A TLS connection handshaken by the busy poller whose client leaves before the script
    ends (EOF while busy) is dropped once the loop is back; the server serves on."""
    from support.busy import busy_pair

    with Server(tls=True) as server, busy_pair(server.port) as (admin, runner):
        with _runaway_script(admin, runner):
            ctx, raw = _tls_client(server, server.tls_certs)
            tls = ctx.wrap_socket(raw, server_hostname="localhost")   # handshaken now
            tls.settimeout(10)
            tls.sendall(b"PING\r\n")
            assert tls.recv(256).startswith(b"-BUSY")
            tls.close()   # gone while the script still runs
            time.sleep(0.1)   # several polls see its EOF
            assert admin.call("SCRIPT", "KILL") == b"+OK\r\n"
        deadline = time.monotonic() + 10
        while admin.call("CLIENT", "LIST").count(b" addr=") != 2:   # admin and runner
            assert time.monotonic() < deadline, admin.call("CLIENT", "LIST")
            time.sleep(0.05)
        assert admin.call("PING") == b"+PONG\r\n"
