"""pykv as a replica of a real redis-server 7.0 master (the replica side of issue 14).

Full sync from disk and diskless masters, the command stream of every family, partial
resync after a link kill and after a restart, full resync after a backlog overflow, a master
dying mid-transfer, REPLICAOF at runtime and NO ONE, and the replica's refusals and INFO
rows compared byte for byte with a redis-server replica in the same situation.
"""
from __future__ import annotations

import os
import random
import signal
import time

import pytest
import redis
from support.resp import RawClient
from support.servers import RealRedis

from pykv.testing import Server

FAST_SYNC = ["--repl-diskless-sync-delay", "0"]


def wait_until(cond, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.02)


def info(client: redis.Redis, section: str = "replication") -> dict:
    return client.info(section)


def synced(master: redis.Redis, replica: redis.Redis) -> bool:
    rinfo = info(replica)
    return (rinfo.get("master_link_status") == "up"
            and rinfo.get("slave_repl_offset") == info(master)["master_repl_offset"])


def wait_synced(master: redis.Redis, replica: redis.Redis, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not synced(master, replica):
        assert time.monotonic() < deadline, \
            f"the replica did not catch up in {timeout}s: master {info(master)}, " \
            f"replica {info(replica)} {replica.client_list()}"
        time.sleep(0.02)


def client(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=20)


@pytest.fixture
def masters():
    """Start real redis-server masters on demand; all stopped at the end."""
    started: list[RealRedis] = []

    def start(*extra: str) -> RealRedis:
        real = RealRedis(extra=[*FAST_SYNC, *extra])
        started.append(real)
        return real

    yield start
    for real in started:
        if real.proc.poll() is None:
            real.stop()


@pytest.fixture
def replicas():
    """Start pykv servers on demand; all stopped at the end."""
    started: list[Server] = []

    def start(config: dict | None = None, **kwargs) -> Server:
        server = Server(config={"enable-debug-command": "yes", **(config or {})}, **kwargs)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        print(server.log()[-5000:])  # shown when the test failed
        server.stop()


# -- datasets and workloads -----------------------------------------------------------------
def fill_mixed(r: redis.Redis, rng: random.Random, dbs=(0, 1, 3)) -> None:
    """Every type, small and large encodings, some keys with a TTL, in several dbs."""
    for db in dbs:
        c = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=db)
        p = c.pipeline(transaction=False)
        for i in range(60):
            p.set(f"s:{db}:{i}", f"v{i}" * rng.randint(1, 40))
            p.set(f"n:{db}:{i}", rng.randint(-10**12, 10**12))
        p.rpush(f"l:{db}:small", *range(5))
        p.rpush(f"l:{db}:big", *[f"item{i}" * 5 for i in range(300)])
        p.hset(f"h:{db}:small", mapping={"a": 1, "b": "two"})
        p.hset(f"h:{db}:big", mapping={f"f{i}": "x" * i for i in range(200)})
        p.sadd(f"set:{db}:ints", *range(50))
        p.sadd(f"set:{db}:strs", *[f"m{i}" for i in range(200)])
        p.zadd(f"z:{db}:small", {"a": 1, "b": 2.5})
        p.zadd(f"z:{db}:big", {f"m{i}": i / 3 for i in range(300)})
        for i in range(20):
            p.xadd(f"x:{db}", {"f": i, "g": "v" * i}, id=f"{1000 + i}-1")
        p.xgroup_create(f"x:{db}", "grp", id="0")
        p.pfadd(f"hll:{db}", *[f"e{i}" for i in range(100)])
        p.setbit(f"bits:{db}", 1000, 1)
        p.geoadd(f"geo:{db}", (13.361389, 38.115556, "Palermo"))
        p.set(f"ttl:{db}:far", "v", ex=100000)
        p.hset(f"ttl:{db}:hash", "f", "v")
        p.pexpire(f"ttl:{db}:hash", 5000000)
        p.execute()
        c.close()


SCRIPT = ("redis.call('incr', KEYS[1]); redis.call('lpush', KEYS[2], ARGV[1]); "
          "return redis.call('llen', KEYS[2])")


def random_writes(port: int, count: int, seed: int) -> None:
    """``count`` writes of every family on the master (several dbs, scripts, MULTI,
    expiries, blocking pops that are served, SPOP, SWAPDB, a FLUSHALL)."""
    rng = random.Random(seed)
    conns = {db: redis.Redis(port=port, db=db) for db in (0, 1, 3)}
    for i in range(count):
        db = rng.choice((0, 0, 1, 3))
        c = conns[db]
        k = f"k{rng.randint(0, 40)}"
        op = rng.randint(0, 27)
        try:
            if op == 0:
                c.set(k, rng.randbytes(rng.randint(0, 30)))
            elif op == 1:
                c.set(k, "e", px=rng.choice((150, 10**8)))
            elif op == 2:
                c.incrby(f"cnt{rng.randint(0, 5)}", rng.randint(-5, 5))
            elif op == 3:
                c.append(k + "s", "xyz")
            elif op == 4:
                c.rpush(f"list{rng.randint(0, 5)}", *[rng.randint(0, 99) for _ in range(3)])
            elif op == 5:
                c.lpop(f"list{rng.randint(0, 5)}")
            elif op == 6:
                c.blpop([f"list{rng.randint(0, 5)}"], timeout=0.01)
            elif op == 7:
                c.hset(f"hash{rng.randint(0, 5)}", f"f{rng.randint(0, 9)}", rng.random())
            elif op == 8:
                c.hincrby(f"hash{rng.randint(0, 5)}", "count", 1)
            elif op == 9:
                c.sadd(f"set{rng.randint(0, 5)}", *[rng.randint(0, 30) for _ in range(4)])
            elif op == 10:
                c.spop(f"set{rng.randint(0, 5)}")
            elif op == 11:
                c.zadd(f"zset{rng.randint(0, 5)}", {f"m{rng.randint(0, 20)}": rng.random()})
            elif op == 12:
                c.zpopmin(f"zset{rng.randint(0, 5)}")
            elif op == 13:
                c.xadd(f"stream{rng.randint(0, 2)}", {"i": i}, maxlen=20, approximate=False)
            elif op == 14:
                c.pfadd(f"hll{rng.randint(0, 2)}", *[rng.randint(0, 1000) for _ in range(5)])
            elif op == 15:
                c.setbit(f"bm{rng.randint(0, 2)}", rng.randint(0, 500), rng.randint(0, 1))
            elif op == 16:
                c.expire(f"hash{rng.randint(0, 5)}", rng.randint(1000, 5000))
            elif op == 17:
                c.persist(f"hash{rng.randint(0, 5)}")
            elif op == 18:
                c.eval(SCRIPT, 2, f"cnt{rng.randint(0, 5)}", f"list{rng.randint(0, 5)}", i)
            elif op == 19:
                p = c.pipeline(transaction=True)
                p.incr("txn")
                p.rpush("txnlist", i)
                p.set(k, i)
                p.execute()
            elif op == 20:
                c.delete(k)
            elif op == 21:
                c.rename(f"list{rng.randint(0, 5)}", f"list{rng.randint(0, 5)}")
            elif op == 22:
                c.lmove(f"list{rng.randint(0, 5)}", f"list{rng.randint(0, 5)}")
            elif op == 23:
                c.getex(k, ex=rng.randint(1000, 9000))
            elif op == 24:
                c.geoadd(f"geo{rng.randint(0, 2)}",
                         (rng.uniform(-170, 170), rng.uniform(-80, 80), f"p{rng.randint(0, 9)}"))
            elif op == 25:
                c.copy(k, k + "copy", replace=True)
            elif op == 26:
                if rng.random() < 0.05:
                    c.swapdb(0, 1)
            elif op == 27:
                c.srem(f"set{rng.randint(0, 5)}", rng.randint(0, 30))
        except redis.ResponseError:
            pass  # WRONGTYPE and such: a refused command is not propagated
        if i == count // 2:
            conns[0].flushall()
    for c in conns.values():
        c.close()


def reap_expired(r: redis.Redis) -> None:
    """Touch every key on the master so the expired ones are deleted (and their DELs
    replicated) before datasets are compared."""
    for db in range(16):
        c = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=db)
        for key in list(c.scan_iter(count=1000)):
            c.exists(key)
        c.close()


def assert_same_dataset(master_port: int, replica_port: int) -> None:
    """DEBUG DIGEST, then key by key: type, absolute expiry, DEBUG DIGEST-VALUE, and the
    replica's DUMP restored into a scratch redis-server digests as the master's value
    (pykv's LZF output differs from Redis's, so DUMP bytes are not compared)."""
    m, r = client(master_port), client(replica_port)
    assert m.execute_command("DEBUG", "DIGEST") == r.execute_command("DEBUG", "DIGEST")
    scratch = RealRedis()
    s = client(scratch.port)
    try:
        for db in range(16):
            mc = redis.Redis(port=master_port, db=db)
            rc = redis.Redis(port=replica_port, db=db)
            keys = sorted(mc.scan_iter(count=1000))
            assert keys == sorted(rc.scan_iter(count=1000)), f"db {db}: different key sets"
            for key in keys:
                assert mc.type(key) == rc.type(key), key
                assert mc.pexpiretime(key) == rc.pexpiretime(key), key
                want = mc.execute_command("DEBUG", "DIGEST-VALUE", key)
                assert rc.execute_command("DEBUG", "DIGEST-VALUE", key) == want, key
                when = mc.pexpiretime(key)
                s.restore(key, max(0, when), rc.dump(key), replace=True, absttl=when > 0)
                assert s.execute_command("DEBUG", "DIGEST-VALUE", key) == want, key
            mc.close()
            rc.close()
    finally:
        s.close()
        scratch.stop()


# -- full sync and the stream -----------------------------------------------------------------
def full_sync_then_stream(masters, replicas, diskless: str, writes: int, seed: int) -> None:
    real = masters("--repl-diskless-sync", diskless)
    m = client(real.port)
    fill_mixed(m, random.Random(seed))
    ours = replicas({"replicaof": ["127.0.0.1", real.port]})
    r = client(ours.port)
    wait_synced(m, r)
    assert r.dbsize() == m.dbsize()
    random_writes(real.port, writes, seed=seed)
    time.sleep(0.2)  # the short TTLs of the workload pass
    reap_expired(m)
    wait_synced(m, r)
    assert_same_dataset(real.port, ours.port)
    assert info(m, "stats")["sync_full"] == 1
    # repl-diskless-load disabled: the payload went through a temp file, now dump.rdb
    assert os.path.exists(os.path.join(ours.workdir, "dump.rdb"))
    assert not [f for f in os.listdir(ours.workdir) if f.startswith("temp-")]


def test_full_sync_then_stream_of_every_family(masters, replicas):
    full_sync_then_stream(masters, replicas, "no", 500, seed=7)


@pytest.mark.slow
def test_full_sync_from_a_diskless_master_then_the_stream(masters, replicas):
    full_sync_then_stream(masters, replicas, "yes", 1500, seed=8)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("diskless", ["no", "yes"], ids=["disk-master", "diskless-master"])
def test_full_sync_then_10k_writes(masters, replicas, diskless, seed):
    full_sync_then_stream(masters, replicas, diskless, 10000, seed=100 + seed)


def test_diskless_load_and_eviction_dels(masters, replicas):
    real = masters("--repl-diskless-sync", "yes")
    m = client(real.port)
    fill_mixed(m, random.Random(2), dbs=(0,))
    ours = replicas({"replicaof": ["127.0.0.1", real.port], "repl-diskless-load": "swapdb"})
    r = client(ours.port)
    wait_synced(m, r)
    m.config_set("maxmemory-policy", "allkeys-random")
    m.config_set("maxmemory", m.info("memory")["used_memory"] - 20000)
    for i in range(50):
        m.set(f"evict{i}", "x" * 500)
    m.config_set("maxmemory", 0)
    assert info(m, "stats")["evicted_keys"] > 0
    wait_synced(m, r)
    assert_same_dataset(real.port, ours.port)
    assert not os.path.exists(os.path.join(ours.workdir, "dump.rdb"))


def test_replica_expiry_is_the_masters(masters, replicas):
    """Expired keys read as missing on the replica but stay until the master's DEL."""
    real = masters()
    m = client(real.port)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    ours = replicas({"replicaof": ["127.0.0.1", real.port]})
    r = client(ours.port)
    wait_synced(m, r)
    m.set("gone", "v", px=100)
    m.set("kept", "v")
    wait_synced(m, r)
    time.sleep(0.25)
    assert r.get("gone") is None and r.exists("gone") == 0
    assert r.dbsize() == 2  # still there: only the master deletes
    m.get("gone")  # the master expires it and replicates a DEL
    wait_synced(m, r)
    assert r.dbsize() == 1
    # times in the stream are the master's (XCLAIM ... TIME): the PEL idle time is real
    m.xadd("s", {"f": "v"})
    m.xgroup_create("s", "g", id="0")
    m.xreadgroup("g", "c1", {"s": ">"})
    wait_synced(m, r)
    pending = r.xpending_range("s", "g", "-", "+", 10)
    assert len(pending) == 1 and 0 <= pending[0]["time_since_delivered"] < 60000


# -- runtime REPLICAOF and promotion ----------------------------------------------------------
def test_runtime_replicaof_and_no_one(masters, replicas):
    real = masters()
    m = client(real.port)
    m.set("from-master", "1")
    ours = replicas()
    r = client(ours.port)
    r.set("mine", "x")
    raw = RawClient(port=ours.port)
    assert raw.call("REPLICAOF", "127.0.0.1", str(real.port)) == b"+OK\r\n"
    assert raw.call("REPLICAOF", "127.0.0.1", str(real.port)) == \
        b"+OK Already connected to specified master\r\n"
    assert raw.call("REPLICAOF", "127.0.0.1", "x") == b"-ERR Invalid master port\r\n"
    assert raw.call("SLAVEOF", "127.0.0.1", "70000") == b"-ERR Invalid master port\r\n"
    wait_synced(m, r)
    assert r.get("mine") is None and r.get("from-master") == b"1"
    assert r.config_get("replicaof") == {"replicaof": f"127.0.0.1 {real.port}"}
    assert r.execute_command("ROLE")[:4] == [b"slave", b"127.0.0.1", real.port, b"connected"]
    old_id = info(r)["master_replid"]
    assert old_id == info(m)["master_replid"]
    offset = info(r)["master_repl_offset"]
    assert raw.call("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
    assert raw.call("REPLICAOF", "no", "one") == b"+OK\r\n"
    rinfo = info(r)
    assert rinfo["role"] == "master"
    assert rinfo["master_replid2"] == old_id and rinfo["master_replid"] != old_id
    assert rinfo["second_repl_offset"] == offset + 1
    assert r.set("after", "1") and r.get("after") == b"1"
    assert r.config_get("replicaof") == {"replicaof": ""}
    raw.close()


# -- link failures ----------------------------------------------------------------------------
def test_partial_resync_after_link_kills(masters, replicas):
    real = masters()
    m = client(real.port)
    ours = replicas({"replicaof": ["127.0.0.1", real.port]})
    r = client(ours.port)
    wait_synced(m, r)
    assert [line for line in r.client_list() if "M" in line["flags"]]
    m.set("a", 1)
    assert r.client_kill_filter(_type="master") == 1
    m.set("b", 2)
    wait_synced(m, r)
    assert info(m, "stats")["sync_partial_ok"] == 1
    m.client_kill_filter(_type="replica")
    m.set("c", 3)
    wait_synced(m, r)
    assert info(m, "stats")["sync_partial_ok"] == 2
    assert info(m, "stats")["sync_full"] == 1
    assert r.mget("a", "b", "c") == [b"1", b"2", b"3"]
    assert m.wait(1, 5000) == 1  # REPLCONF GETACK answered with our offset


def test_psync_continues_after_a_replica_restart(masters, replicas):
    real = masters()
    m = client(real.port)
    m.set("before", 1)
    ours = replicas({"replicaof": ["127.0.0.1", real.port], "save": "3600 1"})
    r = client(ours.port)
    wait_synced(m, r)
    redis.Redis(port=real.port, db=2).set("in-db-2", 1)  # the stream's db is now 2
    wait_synced(m, r)
    ours.restart()  # SIGTERM: saves dump.rdb with the repl-id/repl-offset AUX fields
    r = client(ours.port)
    wait_synced(m, r)
    assert info(m, "stats")["sync_partial_ok"] == 1
    assert info(m, "stats")["sync_full"] == 1
    redis.Redis(port=real.port, db=2).set("after", 2)  # no SELECT: db 2 from the RDB
    wait_synced(m, r)
    assert redis.Redis(port=ours.port, db=2).get("after") == b"2"


def test_backlog_overflow_means_full_resync(masters, replicas):
    real = masters("--repl-backlog-size", "16384")
    m = client(real.port)
    ours = replicas({"replicaof": ["127.0.0.1", real.port]})
    r = client(ours.port)
    wait_synced(m, r)
    dead = RealRedis()  # a master that will be gone: the link stays down meanwhile
    dead_port = dead.port
    dead.stop()
    r.execute_command("REPLICAOF", "127.0.0.1", dead_port)
    for i in range(100):
        m.set(f"fill{i}", "x" * 1000)
    r.execute_command("REPLICAOF", "127.0.0.1", real.port)
    wait_synced(m, r)
    assert info(m, "stats")["sync_full"] == 2
    assert r.dbsize() == 100


def test_master_killed_during_transfer_keeps_stale_data(masters, replicas):
    real = masters("--repl-diskless-sync", "no", "--rdb-key-save-delay", "20000")
    m = client(real.port)
    for i in range(80):
        m.set(f"k{i}", i)
    ours = replicas()
    r = client(ours.port)
    r.set("stale", "old")
    r.execute_command("REPLICAOF", "127.0.0.1", real.port)
    wait_until(lambda: info(r)["master_sync_in_progress"] == 1, what="the transfer")
    real.proc.send_signal(signal.SIGKILL)
    real.proc.wait()
    wait_until(lambda: info(r)["master_sync_in_progress"] == 0, what="the link to fail")
    assert r.get("stale") == b"old"  # replica-serve-stale-data yes
    wait_until(lambda: r.execute_command("ROLE")[3] in (b"connect", b"connecting"),
               what="the reconnect attempts")
    r.config_set("replica-serve-stale-data", "no")
    with pytest.raises(redis.ResponseError, match="Link with MASTER is down"):
        r.get("stale")
    r.config_set("replica-serve-stale-data", "yes")
    assert r.get("stale") == b"old"


# -- differential: refusals and INFO rows as a redis-server replica gives them -----------------
REFUSED = [
    ("SET", "k", "v"),
    ("EVAL", "return redis.call('set', 'k', 'v')", "0"),
    ("EVAL", "return 1", "0"),
    ("EVAL", "#!lua\nreturn redis.call('set', 'k', 'v')", "0"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", "0"),
    ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn 1", "0"),
    ("GET", "k"),
    ("INFO", "server-no-such-section"),
    ("PING",),
]


def _calls(port: int, commands) -> list[bytes]:
    """The raw replies to ``commands`` sent one by one on one connection."""
    raw = RawClient(port=port)
    out = [raw.call(*cmd) for cmd in commands]
    raw.close()
    return out


def _transcript(port: int, commands) -> list[bytes]:
    return _calls(port, [*commands, ("MULTI",), ("SET", "k", "v"), ("GET", "k"), ("EXEC",)])


def test_refusals_match_a_redis_replica(masters, replicas):
    dead = RealRedis()
    dead_port = dead.port
    dead.stop()  # nothing listens there: both replicas stay with the link down
    theirs = masters("--replicaof", "127.0.0.1", str(dead_port))
    ours = replicas({"replicaof": ["127.0.0.1", dead_port]})
    for stale in ("yes", "no"):
        for port in (ours.port, theirs.port):  # (set once up: "no" refuses PING itself)
            client(port).config_set("replica-serve-stale-data", stale)
        assert _transcript(ours.port, REFUSED) == _transcript(theirs.port, REFUSED), stale


def two_replicas(masters, replicas):
    """A redis-server master with a redis-server replica and a pykv replica, both synced:
    (master, its client, theirs, ours)."""
    real = masters()
    m = client(real.port)
    theirs = masters("--replicaof", "127.0.0.1", str(real.port))
    ours = replicas({"replicaof": ["127.0.0.1", real.port]})
    wait_synced(m, client(theirs.port))
    wait_synced(m, client(ours.port))
    return real, m, theirs, ours


def test_info_replication_rows_match_a_redis_replica(masters, replicas):
    real, m, theirs, ours = two_replicas(masters, replicas)

    def names(port: int) -> list[str]:
        raw = RawClient(port=port)
        text = raw.call("INFO", "replication").decode()
        raw.close()
        return [line.split(":")[0] for line in text.splitlines() if ":" in line]

    assert names(ours.port) == names(theirs.port)
    assert client(ours.port).execute_command("ROLE")[:4] == \
        client(theirs.port).execute_command("ROLE")[:4]
    real.stop()  # the link goes down on both: master_link_down_since_seconds appears
    wait_until(lambda: info(client(theirs.port))["master_link_status"] == "down")
    wait_until(lambda: info(client(ours.port))["master_link_status"] == "down")
    assert names(ours.port) == names(theirs.port)
    # a full sync under way (the master's BGSAVE is slow): the master_sync_* rows
    slow = masters("--repl-diskless-sync", "no", "--rdb-key-save-delay", "20000")
    for i in range(60):
        client(slow.port).set(f"k{i}", i)
    for port in (ours.port, theirs.port):
        client(port).replicaof("127.0.0.1", slow.port)
    for port in (ours.port, theirs.port):
        wait_until(lambda p=port: info(client(p))["master_sync_in_progress"] == 1,
                   what="the transfer")
    assert names(ours.port) == names(theirs.port)


# -- a chain: Redis master -> pykv replica -> Redis sub-replica --------------------------------
def test_chain_through_a_pykv_replica(masters, replicas):
    real = masters()
    m = client(real.port)
    ours = replicas({"replicaof": ["127.0.0.1", real.port]})
    probe = RawClient(port=ours.port)
    answer = probe.call("REPLCONF", "listening-port", "1")
    probe.close()
    if answer.startswith(b"-ERR unknown command"):
        pytest.skip("pykv's master side (PSYNC, server.replicas) is not merged yet")
    wait_synced(m, client(ours.port))
    sub = masters("--replicaof", "127.0.0.1", str(ours.port))
    m.set("through", "the chain")
    wait_synced(m, client(ours.port))
    wait_synced(client(ours.port), client(sub.port))
    assert client(sub.port).get("through") == b"the chain"


# -- handshake options, PSYNC2 after a failover, loading, AOF ---------------------------------
def test_masterauth_masteruser_and_announced_address(masters, replicas):
    real = masters("--requirepass", "secret")
    m = redis.Redis(port=real.port, password="secret")
    m.acl_setuser("repl", enabled=True, passwords=["+replpw"], commands=["+@all"], keys=["*"])
    m.set("k", "v")
    ours = replicas({"replicaof": ["127.0.0.1", real.port], "masteruser": "repl",
                     "masterauth": "replpw", "replica-announce-port": 12345,
                     "replica-announce-ip": "10.1.2.3"})
    r = client(ours.port)
    wait_synced(m, r)
    assert r.get("k") == b"v"
    assert info(m)["slave0"]["ip"] == "10.1.2.3" and info(m)["slave0"]["port"] == 12345
    r.config_set("masterauth", "wrong")
    r.client_kill_filter(_type="master")  # the next handshake fails: the link stays down
    wait_until(lambda: "Unable to AUTH to MASTER" in ours.log(), what="the failed AUTH")
    assert info(r)["master_link_status"] == "down"


def test_psync2_continues_with_a_promoted_replica(masters, replicas):
    """Master A with replicas B (redis-server) and pykv; B is promoted and pykv moves to
    it: +CONTINUE with B's new id, A's id becomes pykv's replid2."""
    a = masters()
    am = client(a.port)
    b = masters("--replicaof", "127.0.0.1", str(a.port))
    ours = replicas({"replicaof": ["127.0.0.1", a.port]})
    r = client(ours.port)
    am.set("x", 1)
    wait_synced(am, client(b.port))
    wait_synced(am, r)
    old_id = info(am)["master_replid"]
    bm = client(b.port)
    bm.replicaof("no", "one")
    r.replicaof("127.0.0.1", b.port)
    bm.set("y", 2)
    wait_synced(bm, r)
    assert info(bm, "stats")["sync_partial_ok"] == 1 and info(bm, "stats")["sync_full"] == 0
    rinfo = info(r)
    assert rinfo["master_replid"] == info(bm)["master_replid"]
    assert rinfo["master_replid2"] == old_id
    assert rinfo["second_repl_offset"] == info(bm)["second_repl_offset"]
    assert r.get("y") == b"2"


def test_clients_get_loading_while_the_sync_loads(masters, replicas):
    real = masters()
    m = client(real.port)
    p = m.pipeline(transaction=False)
    for i in range(2500):
        p.set(f"k{i}", i)
    p.execute()
    ours = replicas({"key-load-delay": 300})  # ~0.75 s of loading, the loop served between
    raw = RawClient(port=ours.port)
    raw.call("REPLICAOF", "127.0.0.1", str(real.port))
    wait_until(lambda: b"loading:1" in raw.call("INFO", "persistence"), what="the load")
    assert raw.call("GET", "k1") == b"-LOADING Redis is loading the dataset in memory\r\n"
    wait_synced(m, client(ours.port))
    assert client(ours.port).dbsize() == 2500
    raw.close()


def test_writable_replica_aof_and_ignored_maxmemory(masters, replicas):
    """replica-read-only no lets clients write; the master's stream goes to the replica's
    AOF (a restart as a master keeps it); a replica under maxmemory evicts nothing."""
    real = masters()
    m = client(real.port)
    ours = replicas({"replicaof": ["127.0.0.1", real.port], "appendonly": "yes",
                     "replica-read-only": "no", "maxmemory": "1mb",
                     "maxmemory-policy": "allkeys-lru"})
    r = client(ours.port)
    wait_synced(m, r)
    r.set("local", "write")
    p = m.pipeline(transaction=False)
    for i in range(400):
        p.set(f"big{i}", "x" * 5000)  # 2 MB: over the replica's maxmemory
    p.execute()
    wait_synced(m, r)
    assert r.dbsize() == 401
    assert info(r, "stats")["evicted_keys"] == 0
    r.config_set("maxmemory", 0)  # a master would now evict
    r.replicaof("no", "one")
    wait_until(lambda: info(r, "persistence")["aof_rewrite_in_progress"] == 0,
               what="the AOF rewrite after the sync")
    r.set("after", "promotion")
    ours.config.pop("replicaof")
    ours.config.pop("maxmemory")
    ours.restart()
    r = client(ours.port)
    assert r.dbsize() == 402 and r.get("big7") == b"x" * 5000


# -- a scripted master: the answers real Redis 7.0 never gives ---------------------------------
class ScriptedMaster:
    """A master on a socket that answers the handshake with +OK and PSYNC with whatever
    ``on_psync(sock)`` sends (old masters' errors, corrupt payloads)."""

    def __init__(self, on_psync) -> None:
        import socket
        import threading

        self.on_psync = on_psync
        self.commands: list[list[bytes]] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            try:
                self._session(sock)
            except OSError:
                pass
            finally:
                sock.close()

    def _session(self, sock) -> None:
        reader = sock.makefile("rb")
        while True:
            header = reader.readline()
            if not header:
                return
            argv = []
            for _ in range(int(header[1:])):
                size = int(reader.readline()[1:])
                argv.append(reader.read(size + 2)[:-2])
            self.commands.append(argv)
            name = argv[0].upper()
            if name == b"PING":
                sock.sendall(b"+PONG\r\n")
            elif name in (b"PSYNC", b"SYNC"):
                self.on_psync(sock, argv)
            elif name == b"REPLCONF" and argv[1].upper() == b"ACK":
                continue
            else:
                sock.sendall(b"+OK\r\n")

    def close(self) -> None:
        self.listener.close()


# an RDB with a="1", b="2" in db 0, saved without a checksum (an old master's)
TINY_RDB = b"REDIS0009\xfe\x00\x00\x01a\x011\x00\x01b\x012\xff" + bytes(8)


def test_sync_fallback_for_a_master_without_psync(replicas):
    rdb = TINY_RDB

    def answer(sock, argv):
        if argv[0].upper() == b"PSYNC":
            sock.sendall(b"-ERR unknown command 'PSYNC'\r\n")
        else:  # SYNC: the payload, then the stream
            sock.sendall(b"$%d\r\n%s" % (len(rdb), rdb))
            sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1\r\n3\r\n"
                         b"*3\r\n$9\r\nPEXPIREAT\r\n$1\r\na\r\n$1\r\n1\r\n"
                         b"*3\r\n$3\r\nSET\r\n$1\r\nd\r\n$1\r\n4\r\n")

    master = ScriptedMaster(answer)
    try:
        ours = replicas({"replicaof": ["127.0.0.1", master.port]})
        r = client(ours.port)
        wait_until(lambda: r.get("d") == b"4", what="the SYNC payload and stream")
        assert r.mget("a", "b", "c") == [None, b"2", b"3"]
        assert r.dbsize() == 4  # an expiry in the past: "a" reads as gone, but stays
        names = [argv[0].upper() for argv in master.commands]
        assert names[:2] == [b"PING", b"REPLCONF"] and b"SYNC" in names
        assert [b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"] in master.commands
        assert [b"PSYNC", b"?", b"-1"] in master.commands
    finally:
        master.close()


def test_swapdb_load_keeps_the_old_data_when_the_payload_is_bad(replicas):
    mark = b"m" * 40

    def answer(sock, argv):
        sock.sendall(b"+FULLRESYNC %s 0\r\n" % (b"1" * 40))
        sock.sendall(b"$EOF:" + mark + b"\r\nREDIS0010\xfa\x09redis-ver\x05" + mark)
        sock.shutdown(1)

    master = ScriptedMaster(answer)
    try:
        ours = replicas({"repl-diskless-load": "swapdb"})
        r = client(ours.port)
        r.set("old", "data")
        r.replicaof("127.0.0.1", master.port)
        wait_until(lambda: "restoring the old dataset" in ours.log(), what="the failed load")
        assert r.get("old") == b"data"
    finally:
        master.close()


FAILOVERS = [
    ("FAILOVER",), ("FAILOVER", "ABORT"), ("FAILOVER", "TIMEOUT", "0"),
    ("FAILOVER", "TIMEOUT", "x"), ("FAILOVER", "TO", "127.0.0.1"), ("FAILOVER", "FORCE"),
    ("FAILOVER", "TO", "127.0.0.1", "port"), ("FAILOVER", "BOGUS"),
    ("FAILOVER", "TIMEOUT", "10", "TIMEOUT", "10"), ("FAILOVER", "FORCE", "TIMEOUT", "5"),
    ("FAILOVER", "ABORT", "NOW"),
]


def test_failover_errors_match_redis(masters, replicas):
    theirs = masters()
    ours = replicas()

    def transcript(port: int) -> list[bytes]:
        raw = RawClient(port=port)
        out = [raw.call(*cmd) for cmd in FAILOVERS]
        raw.call("REPLICAOF", "127.0.0.1", "1")  # a replica (of nothing reachable)
        out += [raw.call("FAILOVER"), raw.call("FAILOVER", "ABORT")]
        raw.call("REPLICAOF", "NO", "ONE")
        raw.close()
        return out

    assert transcript(ours.port) == transcript(theirs.port)
    assert info(client(ours.port))["master_failover_state"] == "no-failover"


def test_replicaof_unblocks_blocked_clients_as_redis(masters, replicas):
    dead = RealRedis()
    dead_port = dead.port
    dead.stop()
    theirs = masters()
    ours = replicas()

    def blocked_reply(port: int) -> bytes:
        blocked = RawClient(port=port)
        blocked.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$4\r\nlist\r\n$1\r\n0\r\n")
        admin = RawClient(port=port)
        wait_until(lambda: b"blocked_clients:1" in admin.call("INFO", "clients"),
                   what="the BLPOP to block")
        admin.call("REPLICAOF", "127.0.0.1", str(dead_port))
        reply = blocked.read_reply()
        admin.call("REPLICAOF", "NO", "ONE")
        blocked.close()
        admin.close()
        return reply

    assert blocked_reply(ours.port) == blocked_reply(theirs.port)


def test_replica_killed_while_loading_resumes_from_the_masters_rdb(masters, replicas):
    """The disk load left the master's RDB as dump.rdb (with the master's repl-id and
    offset): after a crash mid-load the restarted replica loads it and PSYNCs on."""
    real = masters("--repl-diskless-sync", "no")
    m = client(real.port)
    p = m.pipeline(transaction=False)
    for i in range(1500):
        p.set(f"k{i}", i)
    p.execute()
    ours = replicas({"key-load-delay": 500, "save": "3600 1"})
    raw = RawClient(port=ours.port)
    raw.call("REPLICAOF", "127.0.0.1", str(real.port))
    wait_until(lambda: b"loading:1" in raw.call("INFO", "persistence"), what="the load")
    raw.close()
    ours.kill()
    m.set("after", "crash")
    ours.config.update({"replicaof": ["127.0.0.1", real.port], "key-load-delay": 0})
    ours.start()
    r = client(ours.port)
    wait_synced(m, r)
    assert r.dbsize() == 1501 and r.get("after") == b"crash"
    assert info(m, "stats")["sync_full"] == 1 and info(m, "stats")["sync_partial_ok"] == 1


# -- a fault soak: link kills and replica crashes under a writer that waits for the ACK --------
def link_fault_soak(masters, replicas, seconds: float, seed: int) -> None:
    """A writer sets keys and asks ``WAIT 1`` after each; meanwhile links are killed on
    both ends and the replica is SIGKILLed and restarted now and then. At the end every
    write the replica acknowledged is on it, and the datasets are the same."""
    rng = random.Random(seed)
    real = masters("--repl-backlog-size", "65536")
    m = client(real.port)
    ours = replicas({"replicaof": ["127.0.0.1", real.port], "save": "1 1"})
    wait_synced(m, client(ours.port))
    acked: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        i += 1
        key = f"k{rng.randint(0, 200)}"
        m.set(key, i)
        if m.wait(1, 200) == 1:
            acked[key] = i
        else:
            acked.pop(key, None)  # not known to be there (an older value may be)
        fault = rng.random()
        try:
            if fault < 0.03:
                client(ours.port).client_kill_filter(_type="master")
            elif fault < 0.06:
                m.client_kill_filter(_type="replica")
            elif fault < 0.07:
                ours.kill()
                ours.start()
        except redis.ConnectionError:
            pass
    r = client(ours.port)
    wait_synced(m, r)
    for key, value in acked.items():
        assert r.get(key) == str(value).encode(), key
    assert m.execute_command("DEBUG", "DIGEST") == r.execute_command("DEBUG", "DIGEST")
    assert info(m, "stats")["sync_partial_ok"] > 0


def test_link_fault_soak_slice(masters, replicas):
    link_fault_soak(masters, replicas, 2.5, seed=1)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_link_fault_soak(masters, replicas):
    link_fault_soak(masters, replicas, 180.0, seed=2)


LIBRARY = """#!lua name=replib
redis.register_function('w', function(keys, args) return redis.call('set', keys[1], 'v') end)
redis.register_function{function_name='r', callback=function(keys, args) return 1 end,
                        flags={'no-writes'}}
redis.register_function{function_name='s', callback=function(keys, args) return 2 end,
                        flags={'no-writes', 'allow-stale'}}
"""
FCALLS = [("FCALL", "w", "1", "k"), ("FCALL", "r", "0"), ("FCALL", "s", "0"),
          ("FCALL", "nosuch", "0"), ("FCALL_RO", "w", "1", "k")]


def test_fcall_refusals_match_a_redis_replica(masters, replicas):
    """Functions from the master, judged by their flags on a read-only, then stale,
    replica."""
    real, m, theirs, ours = two_replicas(masters, replicas)
    m.function_load(LIBRARY)
    wait_synced(m, client(theirs.port))
    wait_synced(m, client(ours.port))
    assert _calls(ours.port, FCALLS) == _calls(theirs.port, FCALLS)
    real.stop()
    for port in (ours.port, theirs.port):
        wait_until(lambda p=port: info(client(p))["master_link_status"] == "down")
        client(port).config_set("replica-serve-stale-data", "no")
    assert _calls(ours.port, FCALLS) == _calls(theirs.port, FCALLS)
