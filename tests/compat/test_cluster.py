"""Cluster mode, differential: one redis-server and one pykv node, both ``cluster-enabled
yes`` and alone, given the same commands; replies compared byte for byte (node ids, which
are random, are replaced by a placeholder first), over RESP2 and RESP3."""
from __future__ import annotations

import re
import time

import pytest
from support.cluster_nodes import PykvNode, RedisNode
from support.resp import RawClient, encode_command


@pytest.fixture(scope="module")
def nodes():
    real, ours = RedisNode(), PykvNode()
    started = time.monotonic()
    # a master's first 2 s keep the state it started with (CLUSTER_WRITABLE_DELAY): the
    # comparisons start after that on both nodes
    time.sleep(max(0.0, 2.5 - (time.monotonic() - started)))
    yield real, ours
    real.stop()
    ours.stop()


class ClusterDiff:
    def __init__(self, real, ours, resp3: bool) -> None:
        self.clients = [RawClient(port=real.port), RawClient(port=ours.port)]
        self.ids = [c.call("CLUSTER", "MYID")[-42:-2] for c in self.clients]
        self.ports = [b":%d\r\n" % real.port, b":%d\r\n" % ours.port]
        for c in self.clients:
            if resp3:
                c.call("HELLO", "3")

    def replies(self, *args) -> list[bytes]:
        out = []
        for client, node_id, port in zip(self.clients, self.ids, self.ports, strict=True):
            client.send_raw(encode_command(*args))
            out.append(client.read_reply().replace(node_id, b"<myid>")
                       .replace(port, b":<port>\r\n"))
        return out

    def __call__(self, *args) -> bytes:
        real, ours = self.replies(*args)
        assert ours == real, f"{args!r}:\n  redis: {real!r}\n  pykv:  {ours!r}"
        return real

    def close(self) -> None:
        for c in self.clients:
            c.close()


@pytest.fixture(params=[False, True], ids=["resp2", "resp3"])
def cdiff(nodes, request):
    real, ours = nodes
    d = ClusterDiff(real, ours, request.param)
    for c in d.clients:  # a fresh node each time: no slots, epoch 0, no keys
        c.call("FLUSHALL")
        c.call("CLUSTER", "RESET", "SOFT")
    yield d
    d.close()


def _without_counters(text: bytes) -> bytes:
    return re.sub(rb"(cluster_stats_messages_[a-z_-]+):\d+", rb"\1:N", text)


def test_info_fields_and_order(cdiff):
    real, ours = cdiff.replies("CLUSTER", "INFO")
    assert _without_counters(ours) == _without_counters(real)
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "100", "200", "300")
    real, ours = cdiff.replies("CLUSTER", "INFO")
    assert _without_counters(ours).decode() == _without_counters(real).decode()


def _nodes_line(reply: bytes) -> bytes:
    # the address (port differs) and the pong time are the nodes' own
    return re.sub(rb" [^ ]*:\d+@\d+ ", b" ADDR ", reply)


def test_nodes_format(cdiff):
    cdiff("CLUSTER", "ADDSLOTS", "0", "1", "2", "5", "16383")
    cdiff("CLUSTER", "SET-CONFIG-EPOCH", "7")
    real, ours = cdiff.replies("CLUSTER", "NODES")
    assert _nodes_line(ours) == _nodes_line(real)
    cdiff("CLUSTER", "SETSLOT", "5", "MIGRATING", "<myid>")  # unknown name: the same error


@pytest.mark.parametrize("cmd", [
    ("CLUSTER", "KEYSLOT", "foo{bar}"),
    ("CLUSTER", "COUNTKEYSINSLOT", "0"),
    ("CLUSTER", "COUNTKEYSINSLOT", "16384"),
    ("CLUSTER", "COUNTKEYSINSLOT", "-1"),
    ("CLUSTER", "COUNTKEYSINSLOT", "x"),
    ("CLUSTER", "GETKEYSINSLOT", "0", "10"),
    ("CLUSTER", "GETKEYSINSLOT", "0", "-1"),
    ("CLUSTER", "GETKEYSINSLOT", "16384", "1"),
    ("CLUSTER", "GETKEYSINSLOT", "x", "1"),
    ("CLUSTER", "ADDSLOTS", "16384"),
    ("CLUSTER", "ADDSLOTS", "x"),
    ("CLUSTER", "ADDSLOTS", "1", "1"),
    ("CLUSTER", "ADDSLOTSRANGE", "1"),
    ("CLUSTER", "ADDSLOTSRANGE", "5", "1"),
    ("CLUSTER", "ADDSLOTSRANGE", "1", "3", "2", "4"),
    ("CLUSTER", "DELSLOTS", "3"),
    ("CLUSTER", "DELSLOTSRANGE", "3", "4"),
    ("CLUSTER", "SETSLOT", "1", "STABLE"),
    ("CLUSTER", "SETSLOT", "1", "BOGUS"),
    ("CLUSTER", "SETSLOT", "1", "NODE", "nosuchnode"),
    ("CLUSTER", "SETSLOT", "1", "IMPORTING", "nosuchnode"),
    ("CLUSTER", "SETSLOT", "99999", "STABLE"),
    ("CLUSTER", "MEET", "127.0.0.1", "x"),
    ("CLUSTER", "MEET", "127.0.0.1", "1", "x"),
    ("CLUSTER", "MEET", "not-an-ip", "1"),
    ("CLUSTER", "MEET", "127.0.0.1", "1", "2", "3"),
    ("CLUSTER", "FORGET", "nosuchnode"),
    ("CLUSTER", "FORGET", "<myid>"),
    ("CLUSTER", "COUNT-FAILURE-REPORTS", "nosuchnode"),
    ("CLUSTER", "REPLICAS", "nosuchnode"),
    ("CLUSTER", "SET-CONFIG-EPOCH", "-1"),
    ("CLUSTER", "SET-CONFIG-EPOCH", "x"),
    ("CLUSTER", "RESET", "bogus"),
    ("CLUSTER", "BOGUS"),
    ("CLUSTER", "SLOTS"),
    ("CLUSTER", "SHARDS"),
    ("CLUSTER", "LINKS"),
    ("CLUSTER", "FLUSHSLOTS"),
    ("CLUSTER", "SAVECONFIG"),
    ("CLUSTER", "MYID"),
    ("CLUSTER", "COUNT-FAILURE-REPORTS", "<myid>"),
    ("CLUSTER", "REPLICAS", "<myid>"),
    ("CLUSTER", "SLAVES", "<myid>"),
    ("INFO", "cluster"),
    ("SELECT", "1"),
    ("SELECT", "0"),
    ("READONLY",),
    ("READWRITE",),
    ("ASKING",),
    ("MSET", "a", "1", "b", "2"),
    ("GET", "foo"),
    ("PING",),
])
def test_replies_and_error_texts(cdiff, cmd):
    if "<myid>" in cmd:  # each node's own id
        real, ours = [], []
        for client, node_id in zip(cdiff.clients, cdiff.ids, strict=True):
            client.send_raw(encode_command(*[node_id if a == "<myid>" else a for a in cmd]))
            (real if not real else ours).append(client.read_reply())
        assert ours == real
        return
    cdiff("CLUSTER", "ADDSLOTSRANGE", "1", "2")
    cdiff(*cmd)


def test_slot_states(cdiff):
    """-CLUSTERDOWN while the node lacks full coverage; keys once it serves them all."""
    cdiff("SET", "foo", "bar")  # unassigned slot: Hash slot not served
    cdiff("SPUBLISH", "foo", "m")
    cdiff("SSUBSCRIBE", "foo")
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    cdiff("CLUSTER", "DELSLOTS", "12182")
    cdiff("GET", "foo")
    cdiff("GET", "{foo}x")
    cdiff("CLUSTER", "ADDSLOTS", "12182")
    cdiff("CLUSTER", "COUNTKEYSINSLOT", "12182")


def test_bumpepoch_and_set_config_epoch(cdiff):
    cdiff("CLUSTER", "BUMPEPOCH")
    cdiff("CLUSTER", "BUMPEPOCH")
    cdiff("CLUSTER", "SET-CONFIG-EPOCH", "3")
    cdiff("CLUSTER", "RESET", "HARD")
    cdiff("CLUSTER", "SET-CONFIG-EPOCH", "3")
    cdiff("CLUSTER", "INFO")


@pytest.mark.parametrize("script", [
    # MULTI/EXEC: a queued command in another slot is refused at once, EXEC aborts
    [("MULTI",), ("SET", "a", "1"), ("SET", "b", "2"), ("EXEC",)],
    [("MULTI",), ("SET", "{t}a", "1"), ("SET", "{t}b", "2"), ("EXEC",), ("MGET", "{t}a",
                                                                         "{t}b")],
    [("MULTI",), ("PING",), ("EXEC",)],
    [("EXEC",)],
    [("EVAL", "return 1", "2", "a", "b")],
    [("EVAL", "return redis.call('get', KEYS[1])", "1", "{t}a")],
    [("EVAL", "return 1", "0")],
    [("FCALL", "nosuch", "2", "a", "b")],
    [("SPUBLISH", "chan", "msg")],
    [("SSUBSCRIBE", "a", "b")],
    [("SSUBSCRIBE", "{t}a", "{t}b"), ("SUNSUBSCRIBE",)],
    [("PUBLISH", "chan", "msg")],
    [("MOVE", "{t}a", "1")],
    [("SWAPDB", "0", "1")],
    [("COPY", "{t}a", "{t}b", "DB", "1")],
    [("COPY", "{t}a", "{t}b")],
    [("OBJECT", "FREQ", "a")],
    [("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2")],
    [("CLUSTER", "HELP")],
    [("DEL", "{t}a", "{t}b", "{t}c")],
    [("RENAME", "a", "b")],
])
def test_transactions_scripts_and_shard_channels(cdiff, script):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    for cmd in script:
        cdiff(*cmd)


@pytest.mark.parametrize("script", [
    "return redis.call('get', 'a')",  # slot 15495: not served here
    "return redis.pcall('get', 'a')",
    "return redis.call('get', 'foo')",  # served, but the cluster is down
    "return redis.call('ping')",
])
def test_scripts_touching_keys_that_are_not_local(cdiff, script):
    cdiff("CLUSTER", "ADDSLOTS", "12182")
    cdiff("EVAL", script, "0")


def test_flushslots_and_reset_refused_with_keys(cdiff):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    cdiff("SET", "{t}a", "1")
    cdiff("CLUSTER", "FLUSHSLOTS")
    cdiff("CLUSTER", "RESET")
    cdiff("DEL", "{t}a")
    cdiff("CLUSTER", "FLUSHSLOTS")
    cdiff("CLUSTER", "INFO")


def test_keys_in_slot_order_and_counts(cdiff):
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    for i in range(20):
        cdiff("SET", f"{{t}}k{i}", "v")
    cdiff("DEL", "{t}k5", "{t}k11")
    cdiff("SET", "{t}k5", "again")
    cdiff("CLUSTER", "COUNTKEYSINSLOT", "15891")
    cdiff("CLUSTER", "GETKEYSINSLOT", "15891", "100")
    cdiff("CLUSTER", "GETKEYSINSLOT", "15891", "3")
    cdiff("CLUSTER", "GETKEYSINSLOT", "15891", "0")


_CROSS = "redis.call('set', 'a', '1') return redis.call('set', 'b', '2')"  # two slots
_LIB = "\n".join([
    "#!lua name=flagslib",
    "redis.register_function{function_name='nc', callback=function() return 1 end, "
    "flags={'no-cluster'}}",
    "redis.register_function{function_name='nc_ro', callback=function() return 1 end, "
    "flags={'no-cluster', 'no-writes'}}",
    f"redis.register_function{{function_name='cross', callback=function() {_CROSS} end}}",
    f"redis.register_function{{function_name='cross_ok', callback=function() {_CROSS} end, "
    "flags={'allow-cross-slot-keys'}}",
    "redis.register_function{function_name='tagged', callback=function(keys) "
    "redis.call('set', keys[1], '1') return redis.call('get', '{' .. keys[1] .. '}x') end}",
])


@pytest.mark.parametrize("cmd", [
    ("EVAL", "#!lua flags=no-cluster\nreturn 1", "0"),
    ("EVAL", "#!lua flags=no-cluster,no-writes\nreturn 1", "0"),
    ("EVAL_RO", "#!lua flags=no-cluster\nreturn 1", "0"),
    ("EVAL", "#!lua flags=no-cluster\nreturn 1", "2", "a", "b"),  # CROSSSLOT comes first
    ("EVAL", "#!lua flags=no-cluster\nreturn redis.call('get', KEYS[1])", "1", "a"),
    ("EVAL", f"#!lua\n{_CROSS}", "0"),
    ("EVAL", f"#!lua\n{_CROSS}", "1", "a"),
    ("EVAL", f"#!lua\n{_CROSS}", "1", "b"),
    ("EVAL", f"#!lua\n{_CROSS}", "1", "c"),
    ("EVAL", "#!lua\nredis.call('set', 'a', '1') return redis.pcall('get', 'b')", "0"),
    ("EVAL", "#!lua\nreturn redis.call('get', '{a}x')", "1", "a"),
    ("EVAL", "#!lua\nredis.call('ping') return redis.call('get', 'b')", "1", "b"),
    ("EVAL", f"#!lua flags=allow-cross-slot-keys\n{_CROSS}", "0"),
    ("EVAL", f"#!lua flags=allow-cross-slot-keys\n{_CROSS}", "1", "c"),
    ("EVAL", f"#!lua flags=allow-cross-slot-keys\n{_CROSS}", "2", "a", "b"),
    ("EVAL", "#!lua flags=allow-cross-slot-keys\nreturn redis.call('mset', 'a', 1, 'b', 2)",
     "0"),
    ("EVAL", _CROSS, "0"),  # no shebang: any slot of this node, as before 7.0
    ("EVAL", _CROSS, "1", "c"),
    ("FCALL", "nc", "0"),
    ("FCALL_RO", "nc", "0"),
    ("FCALL_RO", "nc_ro", "0"),
    ("FCALL", "cross", "0"),
    ("FCALL", "cross", "1", "a"),
    ("FCALL", "cross_ok", "0"),
    ("FCALL", "cross_ok", "1", "c"),
    ("FCALL", "tagged", "1", "k"),
])
def test_script_flags_in_cluster_mode(cdiff, cmd):
    """no-cluster refuses the script; without allow-cross-slot-keys its keys stay in one
    slot (the declared keys' slot, else the first key used), as Redis 7.0."""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    cdiff("FUNCTION", "LOAD", "REPLACE", _LIB)
    cdiff(*cmd)
    cdiff("MGET", "a")
    cdiff("MGET", "b")


@pytest.mark.parametrize("queued", [
    [("EVAL", "#!lua\nreturn redis.call('set', 'a', '1')", "0"),
     ("EVAL", "#!lua\nreturn redis.call('set', 'b', '1')", "0")],
    [("EVAL", "#!lua\nreturn redis.call('set', 'a', '1')", "0"),
     ("EVAL", "#!lua\nreturn redis.call('set', 'b', '1')", "1", "b")],
    [("SET", "b", "1"), ("EVAL", "#!lua\nreturn redis.call('set', 'a', '1')", "0")],
    [("EVAL", "#!lua flags=allow-cross-slot-keys\nreturn redis.call('set', 'a', '1')", "0"),
     ("EVAL", "#!lua\nreturn redis.call('set', 'b', '1')", "0")],
    [("EVAL", "return redis.call('set', 'a', '1')", "0"),
     ("EVAL", "#!lua\nreturn redis.call('set', 'b', '1')", "0")],
])
def test_script_slot_is_the_transactions_inside_exec(cdiff, queued):
    """Inside EXEC the scripts share one slot: the first key of the queued commands, else
    the first one a script uses (Redis keeps it on the client for the whole EXEC)."""
    cdiff("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    cdiff("MULTI")
    for cmd in queued:
        cdiff(*cmd)
    cdiff("EXEC")
