"""Replicas, elections and manual failover in the bus logic (pykv.cluster.bus and
pykv.cluster.failover) driven by messages, no sockets: the slaveof field of PINGs, a master
left without slots following the node that took them, votes (one per epoch, node-timeout*2
per master, FORCEACK, slot epochs), a replica winning an election, MFSTART's pause and
the PAUSED offset; and the wire layout of FAILOVER_AUTH_*, MFSTART and UPDATE."""
from __future__ import annotations

import struct

import pytest

from pykv.cluster import bus_codec as bc
from pykv.cluster.bus import Handler
from pykv.cluster.state import mstime
from unit.test_cluster_bus import FakeLink, _feed, _known, _msg, _name, new_bus


@pytest.fixture
def bus(tmp_path):
    return new_bus(tmp_path)


MFLAGS_AT = 2253  # the header's mflags[0] (after flags u16 and state u8)


def _replica_of(bus, master, name=None):
    node, handler = _known(bus, name or _name())
    node.flags = bc.F_SLAVE
    node.slaveof = master
    bus.state.add_replica(master, node)
    return node, handler


def _three_masters(bus):
    bus.state.add_slot(bus.myself, 0)
    bus.myself.config_epoch = 1
    a, ha = _known(bus, _name(), 2, [1])
    b, hb = _known(bus, _name(), 3, [2])
    bus.update_state()
    return a, ha, b, hb


# -- the wire ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mtype", [bc.FAILOVER_AUTH_REQUEST, bc.FAILOVER_AUTH_ACK, bc.MFSTART])
def test_header_only_messages_on_bytes(mtype):
    msg = bc.Message(mtype, b"r" * 40, port=7001, cport=17001, current_epoch=8,
                     config_epoch=3, offset=4242, slaveof=b"m" * 40,
                     flags=bc.F_SLAVE, mflags=bytes([bc.MF_FORCEACK, 0, 0]))
    data = bc.encode(msg)
    assert len(data) == bc.HEADER_LEN == 2256
    assert data[:4] == b"RCmb" and struct.unpack(">IHHHH", data[4:16]) == (2256, 1, 7001,
                                                                            mtype, 0)
    assert struct.unpack(">QQQ", data[16:40]) == (8, 3, 4242)
    assert data[2128:2168] == b"m" * 40  # slaveof, after sender and the slot bitmap
    assert data[MFLAGS_AT] == bc.MF_FORCEACK
    back = bc.decode(data)
    assert (back.type, back.slaveof, back.offset, back.mflags[0]) == \
        (mtype, b"m" * 40, 4242, bc.MF_FORCEACK)
    with pytest.raises(bc.MalformedMessage):
        bc.decode(data + b"\0" * 8)  # these types carry nothing after the header


def test_update_on_bytes():
    slots = bytearray(bc.SLOT_BYTES)
    slots[0] = 0b101
    msg = bc.Message(bc.UPDATE, b"s" * 40, update_epoch=12, update_name=b"n" * 40,
                     update_slots=bytes(slots))
    data = bc.encode(msg)
    assert len(data) == 2256 + 8 + 40 + 2048
    assert struct.unpack(">Q", data[2256:2264]) == (12,)
    assert data[2264:2304] == b"n" * 40 and data[2304] == 0b101
    back = bc.decode(data)
    assert (back.update_epoch, back.update_name, back.update_slots) == \
        (12, b"n" * 40, bytes(slots))
    with pytest.raises(bc.MalformedMessage):
        bc.decode(data[:-1][:4] + struct.pack(">I", len(data) - 1) + data[8:-1])


# -- roles ------------------------------------------------------------------------------------
def test_a_ping_with_slaveof_makes_the_sender_a_replica_of_that_master(bus):
    master, _hm = _known(bus, _name(), 1, [10])
    sender, hs = _known(bus, _name(), 2, [20])
    _feed(bus, hs, _msg(bc.PING, sender.name, 2, slaveof=master.name.encode()))
    assert sender.is_replica and sender.slaveof is master and sender in master.replicas
    assert sender.numslots == 0 and bus.state.slots[20] is None
    assert f"slave {master.name}" in bus.state.describe(sender)
    _feed(bus, hs, _msg(bc.PING, sender.name, 2))  # no slaveof: a master again
    assert sender.is_master and sender.slaveof is None and sender not in master.replicas


def test_our_header_carries_our_master_and_its_slots(bus):
    master, _hm = _known(bus, _name(), 5, [7])
    calls = []
    bus.replicate = lambda host, port: calls.append((host, port))
    bus.set_my_master(master)
    assert calls == [(master.ip, master.port)]
    assert bus.myself.is_replica and bus.myself in master.replicas
    head = bus.header(bc.PING)
    assert head.slaveof == master.name.encode() and head.config_epoch == 5
    assert head.myslots == bytes(master.slots) and head.flags & bc.F_SLAVE


def test_a_master_losing_all_its_slots_follows_the_claimer(bus):
    bus.state.add_slot(bus.myself, 3)
    bus.myself.config_epoch = 1
    winner, hw = _known(bus, _name(), 1)
    calls = []
    bus.replicate = lambda host, port: calls.append((host, port))
    _feed(bus, hw, _msg(bc.PING, winner.name, 9, slots=[3]))
    assert bus.state.slots[3] is winner
    assert bus.myself.is_replica and bus.myself.slaveof is winner
    assert calls == [(winner.ip, winner.port)]


# -- votes ------------------------------------------------------------------------------------
def test_a_master_votes_once_per_epoch_for_a_replica_of_a_failed_master(bus):
    a, _ha, b, _hb = _three_masters(bus)
    r1, hr1 = _replica_of(bus, a)
    r2, hr2 = _replica_of(bus, a)
    request = _msg(bc.FAILOVER_AUTH_REQUEST, r1.name, 2, slots=[1],
                   slaveof=a.name.encode())
    request.current_epoch = bus.state.current_epoch + 1
    request.flags = bc.F_SLAVE
    _feed(bus, hr1, request)
    assert not hr1.link.sent  # its master is not failed: no vote
    a.flags |= bc.F_FAIL
    _feed(bus, hr1, request)
    assert [m.type for m in hr1.link.sent] == [bc.FAILOVER_AUTH_ACK]
    assert bus.state.last_vote_epoch == request.current_epoch
    other = _msg(bc.FAILOVER_AUTH_REQUEST, r2.name, 2, slots=[1], slaveof=a.name.encode())
    other.current_epoch = request.current_epoch
    other.flags = bc.F_SLAVE
    _feed(bus, hr2, other)  # same epoch: already voted
    assert not hr2.link.sent
    other.current_epoch += 1
    _feed(bus, hr2, other)  # a new epoch, but the same master within node-timeout * 2
    assert not hr2.link.sent
    a.voted_time = mstime() - 2 * bus.node_timeout - 1
    other.current_epoch += 1
    _feed(bus, hr2, other)
    assert [m.type for m in hr2.link.sent] == [bc.FAILOVER_AUTH_ACK]


def test_forceack_votes_for_a_live_master_and_stale_slot_epochs_get_no_vote(bus):
    a, _ha, b, _hb = _three_masters(bus)
    r, hr = _replica_of(bus, a)
    request = _msg(bc.FAILOVER_AUTH_REQUEST, r.name, 2, slots=[1, 2],
                   slaveof=a.name.encode(), mflags=bytes([bc.MF_FORCEACK, 0, 0]))
    request.current_epoch = bus.state.current_epoch + 1
    request.flags = bc.F_SLAVE
    _feed(bus, hr, request)  # claims slot 2 of b (epoch 3 > 2): denied
    assert not hr.link.sent
    request.myslots = _msg(bc.PING, r.name, slots=[1]).myslots
    _feed(bus, hr, request)
    assert [m.type for m in hr.link.sent] == [bc.FAILOVER_AUTH_ACK]


def test_a_replica_wins_an_election_and_takes_its_masters_slots(bus):
    a, _ha = _known(bus, _name(), 1, [0])
    b, hb = _known(bus, _name(), 2, [1])
    c, hc = _known(bus, _name(), 3, [2])
    bus.replicate = lambda host, port: None
    stopped = []
    bus.stop_replicating = lambda: stopped.append(True)
    bus.set_my_master(a)
    bus.update_state()
    assert bus.state.size == 3
    a.flags |= bc.F_FAIL
    election = bus.failover
    election.handle_replica_failover()
    assert 500 <= election.auth_time - mstime() <= 1000  # rank 0: 500-1000 ms
    election.auth_time = mstime() - 1
    epoch = bus.state.current_epoch
    election.handle_replica_failover()
    assert election.auth_sent and bus.state.current_epoch == epoch + 1
    assert any(m.type == bc.FAILOVER_AUTH_REQUEST for m in hb.link.sent)
    for node, handler in ((b, hb), (c, hc)):
        ack = _msg(bc.FAILOVER_AUTH_ACK, node.name, node.config_epoch, slots=[1])
        ack.current_epoch = bus.state.current_epoch
        _feed(bus, handler, ack)
    election.handle_replica_failover()
    me = bus.myself
    assert me.is_master and me.config_epoch == epoch + 1 and bus.state.slots[0] is me
    assert stopped == [True] and me not in a.replicas
    assert any(m.type == bc.PONG for m in hc.link.sent)


def test_rank_counts_replicas_with_a_greater_offset(bus):
    a, _ha = _known(bus, _name(), 1, [0])
    bus.replicate = lambda host, port: None
    bus.replica_offset = lambda: 100
    bus.set_my_master(a)
    ahead, _ = _replica_of(bus, a)
    ahead.repl_offset = 150
    behind, _ = _replica_of(bus, a)
    behind.repl_offset = 50
    assert bus.failover.rank() == 1


def test_replica_no_failover_and_stale_data_keep_a_replica_out(bus):
    a, _ha = _known(bus, _name(), 1, [0])
    bus.replicate = lambda host, port: None
    bus.set_my_master(a)
    a.flags |= bc.F_FAIL
    bus.config.cluster_replica_no_failover = True
    bus.failover.handle_replica_failover()
    assert bus.failover.auth_time == 0
    bus.config.cluster_replica_no_failover = False
    bus.master_data_age = lambda: 10 ** 9
    bus.failover.handle_replica_failover()
    assert bus.failover.auth_time == 0


# -- manual failover --------------------------------------------------------------------------
def test_mfstart_pauses_the_master_and_its_ping_carries_the_paused_offset(bus):
    bus.state.add_slot(bus.myself, 0)
    r, hr = _replica_of(bus, bus.myself)
    pauses = []
    bus.pause_writes = lambda on, ms=0: pauses.append(on)
    inbound = Handler(bus, FakeLink(inbound=True), None)
    _feed(bus, inbound, _msg(bc.MFSTART, r.name, 1, slaveof=bus.myself.name.encode()))
    assert pauses == [True] and bus.failover.mf_replica is r
    ping = hr.link.sent[-1]
    assert ping.type == bc.PING and ping.mflags[0] & bc.MF_PAUSED
    bus.failover.mf_end = mstime() - 1
    bus.failover.check_manual_timeout()
    assert pauses == [True, False] and bus.failover.mf_end == 0


def test_a_replica_starts_a_manual_failover_once_it_reached_the_paused_offset(bus):
    a, ha = _known(bus, _name(), 1, [0])
    bus.replicate = lambda host, port: None
    offset = [90]
    bus.replica_offset = lambda: offset[0]
    bus.set_my_master(a)
    bus.failover.start_manual("")
    assert ha.link.sent[-1].type == bc.MFSTART
    paused = _msg(bc.PING, a.name, 1, slots=[0], mflags=bytes([bc.MF_PAUSED, 0, 0]))
    paused.offset = 100
    _feed(bus, ha, paused)
    assert bus.failover.mf_master_offset == 100 and not bus.failover.mf_can_start
    offset[0] = 100
    bus.failover.handle_manual()
    assert bus.failover.mf_can_start
    # a manual failover asks its votes at once, with FORCEACK
    requests = [m for m in ha.link.sent if m.type == bc.FAILOVER_AUTH_REQUEST]
    assert requests and requests[-1].mflags[0] & bc.MF_FORCEACK


# -- replica migration ------------------------------------------------------------------------
def test_the_smallest_named_spare_replica_migrates_to_an_orphaned_master(bus):
    a, _ha, b, _hb = _three_masters(bus)
    bus.state.del_slot(0)  # myself: a replica of a, which has two more (names above "m...")
    bus.config.cluster_require_full_coverage = False
    bus.replicate = lambda host, port: None
    bus.myself.flags = bc.F_MYSELF | bc.F_MASTER
    bus.set_my_master(a)
    _replica_of(bus, a, "x" * 40)
    _replica_of(bus, a, "y" * 40)
    old, _ = _replica_of(bus, b, "z" * 40)
    bus.update_state()
    assert bus.state.state == 0  # ok
    bus.failover.migrate_if_needed()  # b has a working replica: nobody moves
    assert bus.myself.slaveof is a
    old.flags |= bc.F_FAIL  # b is orphaned (it had a replica: MIGRATE_TO)
    bus.failover.migrate_if_needed()
    assert bus.myself.slaveof is a and b.orphaned_time  # the 5 s delay first
    b.orphaned_time -= 5001
    bus.config.cluster_migration_barrier = 2  # a keeps 3 > 2 replicas: allowed
    bus.failover.migrate_if_needed()
    assert bus.myself.slaveof is b and bus.myself in b.replicas


def test_the_migration_barrier_keeps_replicas_home(bus):
    a, _ha, b, _hb = _three_masters(bus)
    bus.state.del_slot(0)
    bus.config.cluster_require_full_coverage = False
    bus.replicate = lambda host, port: None
    bus.set_my_master(a)
    _replica_of(bus, a, "x" * 40)
    gone, _ = _replica_of(bus, b, "z" * 40)
    gone.flags |= bc.F_FAIL
    bus.update_state()
    b.orphaned_time = mstime() - 6000
    bus.config.cluster_migration_barrier = 2  # a has 2 working replicas: not more than 2
    bus.failover.migrate_if_needed()
    assert bus.myself.slaveof is a
    bus.config.cluster_migration_barrier = 1
    bus.failover.migrate_if_needed()
    assert bus.myself.slaveof is b


def test_replica_no_failover_is_announced_as_the_nofailover_flag(bus):
    bus.config.cluster_replica_no_failover = True
    bus.refresh_myself()
    assert "nofailover" in bus.state.describe(bus.myself).split()[2]
    assert bus.header(bc.PING).flags & bc.F_NOFAILOVER
    bus.config.cluster_replica_no_failover = False
    bus.refresh_myself()
    assert not bus.myself.flags & bc.F_NOFAILOVER


def test_config_rewrite_drops_replicaof_in_cluster_mode(tmp_path):
    from pykv.config.loader import load_config
    from pykv.config.rewrite import rewrite_config

    for cluster, expected in (("no", ["replicaof 10.0.0.2 7001"]), ("yes", [])):
        conf = tmp_path / f"{cluster}.conf"
        conf.write_text(f"cluster-enabled {cluster}\n")
        config = load_config([str(conf)])
        config.dir = str(tmp_path)
        config.replicaof = "10.0.0.2 7001"  # what CLUSTER REPLICATE / REPLICAOF set
        rewrite_config(config)
        lines = conf.read_text().split("\n")
        assert [x for x in lines if x.startswith(("replicaof", "slaveof"))] == expected


def test_a_replicaof_line_is_fatal_in_cluster_mode(tmp_path):
    from pykv.config.loader import ConfigLoadError, load_config

    conf = tmp_path / "c.conf"
    conf.write_text("port 7000\nslaveof 10.0.0.9 7009\ncluster-enabled yes\n")
    with pytest.raises(ConfigLoadError) as info:
        load_config([str(conf)])
    assert str(info.value) == "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n" \
        "replicaof directive not allowed in cluster mode\n"  # as redis-server prints it
    conf.write_text("slaveof 10.0.0.9 7009\n")
    assert load_config([str(conf)]).replicaof == "10.0.0.9 7009"
