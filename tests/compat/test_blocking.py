"""Blocking commands with several clients, pykv against real redis-server 7.0.

Each scenario runs against both servers with the same steps and records every reply each
client receives; the two transcripts must be identical bytes. Steps wait until the server
reports the expected number of blocked clients (CLIENT LIST ``flags=b``) so that the order
of blocking is the order of the steps, not of thread scheduling.
"""
from __future__ import annotations

import time

from support.resp import RawClient, encode_command


class Scenario:
    """Named raw clients on one server plus a transcript of what they read."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.clients: dict[str, RawClient] = {}
        self.log: list[tuple[str, bytes]] = []
        self("admin", "FLUSHALL")

    def client(self, name: str) -> RawClient:
        c = self.clients.get(name)
        if c is None:
            c = self.clients[name] = RawClient(port=self.port, timeout=10)
        return c

    def send(self, name: str, *args) -> None:
        self.client(name).send_raw(encode_command(*args))

    def read(self, name: str) -> bytes:
        reply = self.client(name).read_reply()
        self.log.append((name, reply))
        return reply

    def __call__(self, name: str, *args) -> bytes:
        self.send(name, *args)
        return self.read(name)

    def silent(self, name: str, *args) -> bytes:
        """A call whose reply differs between servers by nature (ids): not recorded."""
        return self.client(name).call(*args)

    def blocked(self) -> int:
        listing = self.client("_watch").call("CLIENT", "LIST")
        return listing.count(b" flags=b ")

    def wait_blocked(self, n: int) -> None:
        deadline = time.monotonic() + 10
        while self.blocked() != n:
            assert time.monotonic() < deadline, f"expected {n} blocked clients"
            time.sleep(0.005)

    def block(self, name: str, *args, total: int) -> None:
        """Send a blocking command and wait until ``total`` clients are blocked."""
        self.send(name, *args)
        self.wait_blocked(total)

    def close(self) -> None:
        for c in self.clients.values():
            c.close()


def run_both(real_redis, pykv_proc, steps) -> None:
    logs = []
    for port in (real_redis.port, pykv_proc.port):
        s = Scenario(port)
        try:
            steps(s)
        finally:
            s.close()
        logs.append(s.log)
    assert logs[1] == logs[0]


def test_fifo_order_and_partial_service(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "q", "0", total=1)
        s.block("c2", "BRPOP", "q", "0", total=2)
        s.block("c3", "BLPOP", "other", "q", "0", total=3)
        s("w", "RPUSH", "q", "a", "b")
        s.read("c1")
        s.read("c2")
        s.wait_blocked(1)
        s("w", "LLEN", "q")
        s("w", "LPUSH", "other", "z")
        s.read("c3")
        s.wait_blocked(0)
        s("w", "EXISTS", "q", "other")

    run_both(real_redis, pykv_proc, steps)


def test_first_ready_key_in_push_order(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k1", "k2", "k3", "0", total=1)
        s("w", "RPUSH", "k3", "x")
        s.read("c1")
        s.block("c1", "BLMPOP", "0", "2", "k1", "k2", "RIGHT", "COUNT", "3", total=1)
        s("w", "RPUSH", "k2", "a", "b", "c", "d")
        s.read("c1")
        s("w", "LRANGE", "k2", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_timeouts(real_redis, pykv_proc):
    def steps(s):
        for cmd in [("BLPOP", "k", "0.05"), ("BRPOP", "k", "k2", "0.05"),
                    ("BLMOVE", "k", "d", "LEFT", "RIGHT", "0.05"),
                    ("BRPOPLPUSH", "k", "d", "0.05"), ("BLMPOP", "0.05", "1", "k", "LEFT")]:
            s("c1", *cmd)
        s.silent("c3", "HELLO", "3")
        s("c3", "BLPOP", "k", "0.05")
        s("c3", "BLMOVE", "k", "d", "LEFT", "RIGHT", "0.05")
        s.wait_blocked(0)

    run_both(real_redis, pykv_proc, steps)


def test_timeout_is_not_early(pykv_proc):
    c = RawClient(port=pykv_proc.port)
    start = time.monotonic()
    assert c.call("BLPOP", "nokey", "0.3") == b"*-1\r\n"
    elapsed = time.monotonic() - start
    assert 0.29 <= elapsed < 3
    c.close()


def test_exec_makes_keys_ready_after_the_transaction(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "MULTI")
        s("w", "RPUSH", "k", "a")
        s("w", "RPUSH", "k", "b")
        s("w", "LPOP", "k")
        s("w", "EXEC")
        s.read("c1")
        s.block("c2", "BLPOP", "k2", "0", total=1)
        s("w", "MULTI")
        s("w", "RPUSH", "k2", "a")
        s("w", "DEL", "k2")
        s("w", "EXEC")
        s("w", "LLEN", "k2")
        s.wait_blocked(1)
        s("w", "RPUSH", "k2", "c")
        s.read("c2")

    run_both(real_redis, pykv_proc, steps)


def test_lmove_chain_serves_every_client(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BRPOP", "k3", "0", total=1)
        s.block("c2", "BLMOVE", "k2", "k3", "RIGHT", "LEFT", "0", total=2)
        s.block("c3", "BRPOPLPUSH", "k1", "k2", "0", total=3)
        s("w", "LPUSH", "k1", "v")
        s.read("c3")
        s.read("c2")
        s.read("c1")
        s.wait_blocked(0)
        s("w", "EXISTS", "k1", "k2", "k3")
        # rotating a list onto itself serves the client and keeps the key
        s.block("c1", "BLMOVE", "r", "r", "LEFT", "RIGHT", "0", total=1)
        s("w", "RPUSH", "r", "1", "2")
        s.read("c1")
        s("w", "LRANGE", "r", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_pipelined_commands_run_after_unblocking(real_redis, pykv_proc):
    def steps(s):
        s.client("c1").send_raw(encode_command("BLPOP", "k", "0")
                                + encode_command("RPUSH", "after", "x")
                                + encode_command("LLEN", "k"))
        s.wait_blocked(1)
        s("w", "LLEN", "after")
        s("w", "RPUSH", "k", "a", "b")
        s.read("c1")
        s.read("c1")
        s.read("c1")
        s("w", "LRANGE", "after", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_wrong_type_keeps_waiting_and_wrong_destination_errors(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "SET", "k", "string")
        s("w", "DEL", "k")
        s.wait_blocked(1)
        s("w", "RPUSH", "k", "v")
        s.read("c1")
        s("w", "SET", "dst", "string")
        s.block("c2", "BLMOVE", "src", "dst", "LEFT", "LEFT", "0", total=1)
        s("w", "RPUSH", "src", "a")
        s.read("c2")
        s.wait_blocked(0)
        s("w", "LRANGE", "src", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_client_unblock(real_redis, pykv_proc):
    def steps(s):
        cid = s.silent("c1", "CLIENT", "ID")[1:-2]
        s("w", "CLIENT", "UNBLOCK", cid)
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "CLIENT", "UNBLOCK", cid)
        s.read("c1")
        s.block("c1", "BLMOVE", "k", "d", "LEFT", "LEFT", "0", total=1)
        s("w", "CLIENT", "UNBLOCK", cid, "TIMEOUT")
        s.read("c1")
        s.block("c1", "BLMPOP", "0", "1", "k", "LEFT", total=1)
        s("w", "CLIENT", "UNBLOCK", cid, "ERROR")
        s.read("c1")
        s.wait_blocked(0)
        s("w", "CLIENT", "UNBLOCK", cid, "ERROR")
        s("w", "RPUSH", "k", "a")
        s("c1", "LPOP", "k")

    run_both(real_redis, pykv_proc, steps)


def test_disconnected_client_is_forgotten(real_redis, pykv_proc):
    def steps(s):
        s.block("gone", "BLPOP", "k", "0", total=1)
        s.clients.pop("gone").close()
        s.wait_blocked(0)
        s.block("c2", "BLPOP", "k", "0", total=1)
        s("w", "RPUSH", "k", "a", "b")
        s.read("c2")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_key_created_by_rename_wakes_clients(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BRPOP", "k", "0", total=1)
        s("w", "RPUSH", "tmp", "a", "b")
        s("w", "RENAME", "tmp", "k")
        s.read("c1")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_blocked_on_several_databases(real_redis, pykv_proc):
    def steps(s):
        s("c1", "SELECT", "1")
        s.block("c1", "BLPOP", "k", "0", total=1)
        s("w", "RPUSH", "k", "db0")
        s("w", "SELECT", "1")
        s("w", "RPUSH", "k", "db1")
        s.read("c1")
        s("w", "SELECT", "0")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)


def test_blocked_clients_in_info(pykv_proc):
    s = Scenario(pykv_proc.port)
    try:
        s.block("c1", "BLPOP", "k", "0", total=1)
        s.block("c2", "BLPOP", "k", "1000", total=2)
        info = s("w", "INFO", "clients")
        assert b"blocked_clients:2\r\n" in info
        s("w", "RPUSH", "k", "a", "b")
        s.read("c1")
        s.read("c2")
        assert b"blocked_clients:0\r\n" in s("w", "INFO", "clients")
    finally:
        s.close()


def test_list_and_zset_waiters_on_one_key(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s.block("c2", "BZPOPMIN", "k", "0", total=2)
        s("w", "MULTI")
        s("w", "ZADD", "k", "1", "a", "2", "b")
        s("w", "EXEC")
        s.read("c2")
        s.wait_blocked(1)
        s("w", "ZRANGE", "k", "0", "-1")
        s("w", "DEL", "k")
        s("w", "RPUSH", "k", "x")
        s.read("c1")
        s.wait_blocked(0)

    run_both(real_redis, pykv_proc, steps)


def test_blocked_client_queue_survives_a_served_peer_closing(real_redis, pykv_proc):
    def steps(s):
        s.block("c1", "BLPOP", "k", "0", total=1)
        s.block("c2", "BLPOP", "k", "0", total=2)
        s.clients.pop("c1").close()
        s.wait_blocked(1)
        s("w", "RPUSH", "k", "a", "b")
        s.read("c2")
        s("w", "LRANGE", "k", "0", "-1")

    run_both(real_redis, pykv_proc, steps)
