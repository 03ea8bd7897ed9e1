"""nodes.conf: Redis 7.0's format, read back exactly as written; the file Redis itself
writes loads."""
from __future__ import annotations

import os
import time

import pytest
import redis
from support.cluster_nodes import RedisNode

from pykv.cluster import bus_codec as bc
from pykv.cluster import nodes_conf
from pykv.cluster.state import ClusterNode, ClusterState


def _state() -> ClusterState:
    me = ClusterNode("a" * 40, bc.F_MYSELF | bc.F_MASTER)
    me.ip, me.port, me.cport, me.config_epoch = "127.0.0.1", 7000, 17000, 3
    me.hostname = "node-a.example"
    state = ClusterState(me)
    other = ClusterNode("b" * 40, bc.F_MASTER | bc.F_PFAIL)
    other.ip, other.port, other.cport, other.config_epoch = "::1", 7001, 17001, 2
    other.pong_received = 1700000000000
    state.add_node(other)
    for slot in (*range(0, 100), 200, 16383):
        state.add_slot(me, slot)
    for slot in range(100, 200):
        state.add_slot(other, slot)
    state.migrating[5] = other
    state.importing[150] = other
    state.current_epoch, state.last_vote_epoch = 7, 4
    return state


def test_render_is_redis_format():
    text = nodes_conf.render(_state())
    assert text.splitlines() == [
        f"{'a' * 40} 127.0.0.1:7000@17000,node-a.example myself,master - 0 0 3 connected "
        f"0-99 200 16383 [5->-{'b' * 40}] [150-<-{'b' * 40}]",
        f"{'b' * 40} ::1:7001@17001 master,fail? - 0 1700000000000 2 disconnected 100-199",
        "vars currentEpoch 7 lastVoteEpoch 4",
    ]


def test_round_trip(tmp_path):
    path = str(tmp_path / "nodes.conf")
    nodes_conf.save(_state(), path)
    loaded = nodes_conf.load(path)
    again = nodes_conf.render(loaded)
    # ping/pong times are reloaded as "now" when non-zero, as Redis does
    assert again.split("\n")[0] == nodes_conf.render(_state()).split("\n")[0]
    assert loaded.myself.name == "a" * 40 and loaded.slots[150].name == "b" * 40
    assert loaded.current_epoch == 7 and loaded.last_vote_epoch == 4
    assert not [p for p in os.listdir(tmp_path) if p.startswith("temp-")]


def test_missing_or_empty_file(tmp_path):
    assert nodes_conf.load(str(tmp_path / "none.conf")) is None
    (tmp_path / "empty.conf").write_text("")
    assert nodes_conf.load(str(tmp_path / "empty.conf")) is None


@pytest.mark.parametrize("text", ["garbage\n", "x" * 40 + " 1.2.3.4 master\n",
                                  "a" * 40 + " 1.2.3.4:1@2 master - 0 0 0 connected\n"])
def test_bad_files_raise_a_clear_error(text):
    with pytest.raises(nodes_conf.NodesConfError):
        nodes_conf.parse(text)


def test_loads_the_file_redis_writes():
    real = RedisNode(extra=["--cluster-announce-hostname", "h1"])
    try:
        client = redis.Redis(port=real.port, decode_responses=True)
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "99")
        client.execute_command("CLUSTER", "SET-CONFIG-EPOCH", "5")
        deadline = time.monotonic() + 10
        path = os.path.join(real.dir, "nodes.conf")
        # both changes saved (each command's save happens before its reply, but check)
        while not all(part in open(path, "rb").read() for part in (b" 5 connected 0-99",
                                                                      b"h1 myself")):
            assert time.monotonic() < deadline, "redis-server never saved its nodes.conf"
            time.sleep(0.05)
        myid = client.execute_command("CLUSTER", "MYID")
        client.close()
        state = nodes_conf.load(path)
        assert state.myself.name == myid and state.myself.config_epoch == 5
        assert state.myself.hostname == "h1"
        assert [n is state.myself for n in state.slots[:100]] == [True] * 100
        assert state.slots[100] is None
    finally:
        real.stop()

