"""FAILOVER: a master hands its role to a replica (Redis 7.0's coordinated failover).

pykv → pykv, pykv master → redis-server replica and redis-server master → pykv replica
(Redis drives it; pykv's master side answers ``PSYNC ... FAILOVER``): the roles swap, the
data and the writes go on, the old master continues with a partial resync. Then the paths
that stop short: TIMEOUT without FORCE (abort), TIMEOUT with FORCE (hand over anyway),
ABORT, the ``master_failover_state`` transitions and the error replies, compared with a
redis-server master in the same situation. A replica that cannot catch up is a stopped
process (SIGSTOP): its link stays, its ACKs stop.
"""
from __future__ import annotations

import os
import random
import signal

import test_repl_replica as replica_tests
from support.resp import RawClient, encode_command
from test_repl_replica import (
    assert_same_dataset,
    client,
    fill_mixed,
    info,
    wait_synced,
    wait_until,
)

from pykv.testing.server import free_port

masters = replica_tests.masters  # fixtures: redis-server and pykv servers on demand
replicas = replica_tests.replicas


def _state(port: int) -> str:
    return info(client(port))["master_failover_state"]


def _swapped(old_port: int, new_port: int) -> bool:
    old, new = info(client(old_port)), info(client(new_port))
    return (new["role"] == "master" and old["role"] == "slave"
            and old.get("master_link_status") == "up"
            and old["master_failover_state"] == "no-failover")


def _failover(port: int, *args) -> RawClient:
    """Send FAILOVER, then a write that the pause holds (or the new replica refuses)."""
    raw = RawClient(port=port)
    assert raw.call("FAILOVER", *args) == b"+OK\r\n"
    raw.send_raw(encode_command("SET", "during-failover", "1"))
    return raw


def _check_handover(old_port: int, new_port: int, held: RawClient) -> None:
    """After FAILOVER: roles swapped, the old master PSYNCed partially, writes go on (the
    write held meanwhile ends refused: it runs on a replica)."""
    wait_until(lambda: _swapped(old_port, new_port), what="the roles to swap")
    assert held.read_reply() == b"-READONLY You can't write against a read only replica.\r\n"
    held.close()
    old, new = client(old_port), client(new_port)
    assert info(new, "stats")["sync_partial_ok"] == 1
    assert info(new)["master_replid2"] == info(old)["master_replid2"]
    new.set("after-failover", "yes")
    new.rpush("after-list", *range(50))
    wait_synced(new, old)
    assert old.get("after-failover") == b"yes"
    assert_same_dataset(new_port, old_port)
    raw = RawClient(port=old_port)
    assert raw.call("SET", "x", "1") == b"-READONLY You can't write against a read only " \
                                         b"replica.\r\n"
    raw.close()


def _pykv_master(replicas):
    return replicas({"repl-diskless-sync-delay": 0})


def test_failover_pykv_to_pykv(replicas):
    master = _pykv_master(replicas)
    m = client(master.port)
    fill_mixed(m, random.Random(14))
    replica = replicas({"replicaof": ["127.0.0.1", master.port]})
    wait_synced(m, client(replica.port))
    _check_handover(master.port, replica.port, _failover(master.port))


def test_failover_pykv_master_to_redis_replica(masters, replicas):
    master = _pykv_master(replicas)
    m = client(master.port)
    fill_mixed(m, random.Random(15))
    replica = masters("--replicaof", "127.0.0.1", str(master.port))
    wait_synced(m, client(replica.port))
    held = _failover(master.port, "TO", "127.0.0.1", replica.port)
    _check_handover(master.port, replica.port, held)


def test_failover_redis_master_to_pykv_replica(masters, replicas):
    master = masters()
    m = client(master.port)
    fill_mixed(m, random.Random(16))
    replica = replicas({"replicaof": ["127.0.0.1", master.port]})
    wait_synced(m, client(replica.port))
    _check_handover(master.port, replica.port, _failover(master.port, "TIMEOUT", 20000))


def _stalled_pair(replicas):
    """A pykv master whose one pykv replica is stopped and behind by a write."""
    master = _pykv_master(replicas)
    m = client(master.port)
    replica = replicas({"replicaof": ["127.0.0.1", master.port]})
    m.set("before", 1)
    wait_synced(m, client(replica.port))
    os.kill(replica.pid, signal.SIGSTOP)
    m.set("behind", 1)
    return master, replica


def test_timeout_without_force_aborts_and_writes_resume(replicas):
    master, replica = _stalled_pair(replicas)
    try:
        m = client(master.port)
        assert m.execute_command("FAILOVER", "TIMEOUT", 500) == b"OK"
        assert _state(master.port) == "waiting-for-sync"
        held = RawClient(port=master.port)
        held.send_raw(encode_command("SET", "held", "v"))  # held until the failover ends
        assert m.get("held") is None  # reads are not paused
        wait_until(lambda: _state(master.port) == "no-failover", what="the timeout abort")
        assert held.read_reply() == b"+OK\r\n"
        assert m.get("held") == b"v"
        assert info(m)["role"] == "master"
        held.close()
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    wait_synced(client(master.port), client(replica.port))


def test_timeout_with_force_hands_over_anyway(replicas):
    master, replica = _stalled_pair(replicas)
    try:
        m = client(master.port)
        assert m.execute_command("FAILOVER", "TO", "127.0.0.1", replica.port, "FORCE",
                                 "TIMEOUT", 300) == b"OK"
        wait_until(lambda: _state(master.port) == "failover-in-progress",
                   what="the forced hand-over")
        assert info(m)["role"] == "slave"
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    # the target takes over as it is (the write it had not read may or may not be applied
    # by then) and the old master follows it
    wait_until(lambda: _swapped(master.port, replica.port), what="the roles to swap")
    r = client(replica.port)
    assert r.get("before") == b"1"
    r.set("after", 1)
    wait_synced(r, client(master.port))
    assert_same_dataset(replica.port, master.port)


def test_abort_resumes_writes(replicas):
    master, replica = _stalled_pair(replicas)
    try:
        raw = RawClient(port=master.port)
        assert raw.call("FAILOVER") == b"+OK\r\n"
        assert _state(master.port) == "waiting-for-sync"
        held = RawClient(port=master.port)
        held.send_raw(encode_command("INCR", "held"))
        # a CLIENT PAUSE of its own ending leaves FAILOVER's pause in place
        assert raw.call("CLIENT", "PAUSE", "50", "WRITE") == b"+OK\r\n"
        assert raw.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
        assert raw.call("PING") == b"+PONG\r\n"
        assert raw.call("EXISTS", "held") == b":0\r\n"
        assert _state(master.port) == "waiting-for-sync"
        assert raw.call("FAILOVER", "ABORT") == b"+OK\r\n"
        assert held.read_reply() == b":1\r\n"
        assert _state(master.port) == "no-failover"
        assert raw.call("FAILOVER", "ABORT") == b"-ERR No failover in progress.\r\n"
        raw.close()
        held.close()
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    wait_synced(client(master.port), client(replica.port))


def _failover_transcript(master_port: int, replica_port: int, stop, cont) -> list[bytes]:
    """FAILOVER's replies on a master whose replica is stopped and behind, as a list."""
    raw = RawClient(port=master_port)
    out = [raw.call("FAILOVER", "TO", "127.0.0.1", "1"),
           raw.call("FAILOVER", "TO", "127.0.0.1", "x"),
           raw.call("FAILOVER", "TO", "127.0.0.1", replica_port, "FORCE"),
           raw.call("FAILOVER", "FORCE", "TIMEOUT", "10"),
           raw.call("FAILOVER", "ABORT", "ABORT"),
           raw.call("FAILOVER", "ABORT", "TIMEOUT", "5")]
    stop()
    try:
        raw.call("SET", "behind", "1")
        out.append(raw.call("FAILOVER", "TIMEOUT", "100000"))
        out.append(info(client(master_port))["master_failover_state"].encode())
        out.append(raw.call("FAILOVER"))
        out.append(raw.call("FAILOVER", "TO", "127.0.0.1", replica_port))
        out.append(raw.call("REPLICAOF", "NO", "ONE"))
        out.append(raw.call("SLAVEOF", "127.0.0.1", replica_port))
        sync = RawClient(port=master_port)
        out.append(sync.call("PSYNC", "?", "-1"))
        sync.close()
        out.append(raw.call("FAILOVER", "ABORT", "TIMEOUT", "5"))
        out.append(raw.call("FAILOVER", "ABORT"))
        out.append(info(client(master_port))["master_failover_state"].encode())
        out.append(raw.call("FAILOVER", "ABORT"))
    finally:
        cont()
    raw.close()
    return out


def test_failover_replies_match_redis(masters, replicas):
    theirs = masters()
    their_replica = masters("--replicaof", "127.0.0.1", str(theirs.port))
    wait_synced(client(theirs.port), client(their_replica.port))
    ours, our_replica = _stalled_pair(replicas)
    os.kill(our_replica.pid, signal.SIGCONT)
    wait_synced(client(ours.port), client(our_replica.port))

    def signals(pid: int):
        return (lambda: os.kill(pid, signal.SIGSTOP)), (lambda: os.kill(pid, signal.SIGCONT))

    expected = _failover_transcript(theirs.port, their_replica.port,
                                    *signals(their_replica.proc.pid))
    got = _failover_transcript(ours.port, our_replica.port, *signals(our_replica.pid))
    assert got == expected
    assert expected[6:8] == [b"+OK\r\n", b"waiting-for-sync"]


def test_psync_failover_with_another_replid_is_refused_as_redis(masters, replicas):
    theirs = masters()
    their_replica = masters("--replicaof", "127.0.0.1", str(theirs.port))
    ours = _pykv_master(replicas)
    our_replica = replicas({"replicaof": ["127.0.0.1", ours.port]})
    wait_synced(client(theirs.port), client(their_replica.port))
    wait_synced(client(ours.port), client(our_replica.port))

    def reply(port: int) -> bytes:
        raw = RawClient(port=port)
        out = raw.call("PSYNC", "0" * 40, "1", "FAILOVER")
        raw.close()
        return out

    assert reply(our_replica.port) == reply(their_replica.port) == \
        b"-ERR PSYNC FAILOVER replid must match my replid.\r\n"
    assert info(client(our_replica.port))["role"] == "slave"


def test_failover_in_cluster_mode_is_refused_as_redis(masters, replicas):
    # the bus port must exist (port + 10000 may not)
    theirs = masters("--cluster-enabled", "yes", "--cluster-port", str(free_port()))
    ours = replicas({"cluster-enabled": "yes", "cluster-port": free_port()})

    def replies(port: int) -> list[bytes]:
        raw = RawClient(port=port)
        out = [raw.call("FAILOVER"), raw.call("FAILOVER", "ABORT"), raw.call("FAILOVER", "X")]
        raw.close()
        return out

    assert replies(ours.port) == replies(theirs.port)


def test_target_still_syncing_is_refused_as_redis(masters, replicas):
    """A replica that waits for its snapshot (diskless sync delay) is not online yet."""
    delay = {"repl-diskless-sync": "yes", "repl-diskless-sync-delay": 30}
    theirs = masters("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "30")
    ours = replicas(delay)

    def reply(port: int) -> list[bytes]:
        replica = masters("--replicaof", "127.0.0.1", str(port))
        wait_until(lambda: info(client(port)).get("slave0", {}).get("state") == "wait_bgsave",
                   what="the replica to wait for its snapshot")
        raw = RawClient(port=port)
        out = [raw.call("FAILOVER", "TO", "127.0.0.1", replica.port),
               raw.call("FAILOVER", "TO", "127.0.0.2", replica.port)]
        raw.close()
        return out

    assert reply(ours.port) == reply(theirs.port)
