"""The bus protocol logic (pykv.cluster.bus) driven by messages, no sockets: handshakes,
gossip, failure reports turning PFAIL into FAIL, slot ownership by config epoch, UPDATE,
epoch collisions, FORGET's blacklist."""
from __future__ import annotations

import os

import pytest

from pykv.cluster import bus_codec as bc
from pykv.cluster.bus import ClusterBus, Handler
from pykv.cluster.state import ClusterNode, ClusterState, mstime
from pykv.config import Config


class FakeLink:
    def __init__(self, inbound: bool, peer: str = "10.0.0.9") -> None:
        self.inbound = inbound
        self.closed = False
        self.peer = (peer, 40000)
        self.sent: list[bc.Message] = []
        self.ctime = mstime()

    def local_ip(self) -> str:
        return "10.0.0.1"

    def write(self, data: bytes) -> None:
        self.sent.append(bc.decode(data))

    def send_buffer_used(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


class FakeServer:
    def __init__(self, tmp_path) -> None:
        self.config = Config()
        self.config.port = 7000
        self.config.cluster_node_timeout = 1000
        self.config.dir = str(tmp_path)
        self.repl = None


def _name() -> str:
    return os.urandom(20).hex()


@pytest.fixture
def bus(tmp_path):
    return new_bus(tmp_path)


def new_bus(tmp_path) -> ClusterBus:
    """A bus for a master ``mmm...`` with no event loop and no sockets."""
    me = ClusterNode("m" * 40, bc.F_MYSELF | bc.F_MASTER)
    me.ip, me.port, me.cport = "10.0.0.1", 7000, 17000
    b = ClusterBus(FakeServer(tmp_path), ClusterState(me), str(tmp_path / "nodes.conf"))
    b.todo_later = lambda flags: None  # no event loop: state updates are called by hand
    b.first_update_call = mstime() - 10_000  # past the 2 s a new master waits
    return b


def _known(bus: ClusterBus, name: str, epoch: int = 0, slots=()) -> tuple[ClusterNode,
                                                                         Handler]:
    node = ClusterNode(name, bc.F_MASTER)
    node.ip, node.port, node.cport, node.config_epoch = "10.0.0.2", 7001, 17001, epoch
    bus.state.add_node(node)
    for slot in slots:
        bus.state.add_slot(node, slot)
    link = FakeLink(inbound=False, peer=node.ip)
    handler = Handler(bus, link, node)
    node.link = handler
    return node, handler


def _msg(mtype: int, sender: str, epoch: int = 0, slots=(), **kw) -> bc.Message:
    bits = bytearray(bc.SLOT_BYTES)
    for slot in slots:
        bits[slot >> 3] |= 1 << (slot & 7)
    return bc.Message(mtype, sender.encode(), port=7001, cport=17001, config_epoch=epoch,
                      current_epoch=epoch, myslots=bytes(bits), flags=bc.F_MASTER, **kw)


def _feed(bus: ClusterBus, handler: Handler, msg: bc.Message) -> None:
    bus.process(handler, bc.encode(msg))


def test_meet_from_a_stranger_adds_a_handshake_node_and_answers_pong(bus):
    link = FakeLink(inbound=True)
    handler = Handler(bus, link, None)
    _feed(bus, handler, _msg(bc.MEET, _name()))
    assert [m.type for m in link.sent] == [bc.PONG]
    handshakes = [n for n in bus.state.nodes.values() if n.in_handshake]
    assert len(handshakes) == 1 and handshakes[0].ip == "10.0.0.9"
    assert bus.myself.ip == "10.0.0.1"  # learnt from the MEET's local address


def test_pong_completes_our_handshake_with_the_real_name(bus):
    assert bus.start_handshake("10.0.0.3", 7003, 17003) == "started"
    assert bus.start_handshake("10.0.0.3", 7003, 17003) == "pending"
    assert bus.start_handshake("nonsense", 7003, 17003) == "invalid"
    node = next(n for n in bus.state.nodes.values() if n.in_handshake)
    link = FakeLink(inbound=False)
    handler = Handler(bus, link, node)
    node.link = handler
    real = _name()
    _feed(bus, handler, _msg(bc.PONG, real, slots=[5]))
    assert bus.state.lookup(real) is node and not node.in_handshake and node.is_master
    assert bus.state.slots[5] is None  # as Redis: the handshake PONG has no known sender
    _feed(bus, handler, _msg(bc.PONG, real, slots=[5]))
    assert bus.state.slots[5] is node


def test_gossip_teaches_new_nodes_only_from_known_senders(bus):
    sender, handler = _known(bus, _name())
    stranger = _name()
    msg = _msg(bc.PING, sender.name)
    msg.gossip.append(bc.Gossip(stranger.encode(), 0, 0, "10.0.0.5", 7005, 17005,
                                bc.F_MASTER))
    unknown = Handler(bus, FakeLink(inbound=True), None)
    bad = _msg(bc.PING, _name())
    bad.gossip = list(msg.gossip)
    _feed(bus, unknown, bad)
    assert bus.state.lookup(stranger) is None
    _feed(bus, handler, msg)
    learnt = bus.state.lookup(stranger)
    assert learnt is not None and learnt.ip == "10.0.0.5" and learnt.cport == 17005
    bus.blacklist_add(stranger)
    bus.del_node(learnt)
    _feed(bus, handler, msg)
    assert bus.state.lookup(stranger) is None  # forgotten: the blacklist holds it off


def test_pfail_becomes_fail_with_a_majority_of_masters_and_is_broadcast(bus):
    a, ha = _known(bus, _name(), 1, [0])
    b, hb = _known(bus, _name(), 2, [1])
    victim, hv = _known(bus, _name(), 3, [2])
    bus.state.add_slot(bus.myself, 3)
    bus.update_state()
    assert bus.state.size == 4  # quorum: 3 of 4 masters
    victim.flags |= bc.F_PFAIL
    report = bc.Gossip(victim.name.encode(), 0, 0, victim.ip, victim.port, victim.cport,
                       bc.F_MASTER | bc.F_PFAIL)
    msg = _msg(bc.PING, a.name, 1, [0])
    msg.gossip.append(report)
    _feed(bus, ha, msg)
    assert not victim.failed and bus.failure_reports(victim) == 1  # me + a = 2 < 3
    msg = _msg(bc.PING, b.name, 2, [1])
    msg.gossip.append(report)
    _feed(bus, hb, msg)
    assert victim.failed and not victim.timed_out
    fails = [m for m in ha.link.sent + hb.link.sent if m.type == bc.FAIL]
    assert {m.fail_name for m in fails} == {victim.name.encode()}


def test_fail_message_from_a_known_node(bus):
    a, ha = _known(bus, _name())
    victim, _ = _known(bus, _name())
    msg = _msg(bc.FAIL, a.name)
    msg.fail_name = victim.name.encode()
    _feed(bus, ha, msg)
    assert victim.failed


def test_slots_move_to_the_greater_config_epoch_and_stale_claims_get_an_update(bus):
    old, h_old = _known(bus, _name(), 1, [10, 11])
    new, h_new = _known(bus, _name(), 5, [])
    _feed(bus, h_new, _msg(bc.PING, new.name, 5, [10]))  # newer epoch: slot 10 moves
    assert bus.state.slots[10] is new and bus.state.slots[11] is old
    h_old.link.sent.clear()
    _feed(bus, h_old, _msg(bc.PING, old.name, 1, [10, 11]))  # old still claims 10
    assert bus.state.slots[10] is new
    updates = [m for m in h_old.link.sent if m.type == bc.UPDATE]
    assert len(updates) == 1 and updates[0].update_name == new.name.encode()
    assert updates[0].update_epoch == 5


def test_update_message_rebinds_slots_and_drops_the_keys_this_node_lost(bus):
    owner, handler = _known(bus, _name(), 2)
    bus.state.add_slot(bus.myself, 20)
    bus.state.add_slot(bus.myself, 21)  # kept: a master left without slots would follow
    bus.myself.config_epoch = 1
    dropped = []
    bus.count_keys_in_slot = lambda slot: 3
    bus.del_keys_in_slot = dropped.append
    msg = _msg(bc.UPDATE, owner.name)
    bits = bytearray(bc.SLOT_BYTES)
    bits[20 >> 3] |= 1 << (20 & 7)
    msg.update_epoch, msg.update_name, msg.update_slots = 7, owner.name.encode(), bytes(bits)
    _feed(bus, handler, msg)
    assert bus.state.slots[20] is owner and owner.config_epoch == 7 and dropped == [20]


def test_an_importing_slot_is_left_alone(bus):
    other, handler = _known(bus, _name(), 9)
    bus.state.importing[30] = other
    _feed(bus, handler, _msg(bc.PING, other.name, 9, [30]))
    assert bus.state.slots[30] is None


def test_epoch_collision_the_smaller_name_bumps(bus):
    bigger, handler = _known(bus, "z" * 40, 0)
    bus.state.current_epoch = 3
    _feed(bus, handler, _msg(bc.PING, bigger.name, 0))
    assert bus.myself.config_epoch == 4 and bus.state.current_epoch == 4
    smaller, h2 = _known(bus, "a" * 40, 4)
    _feed(bus, h2, _msg(bc.PING, smaller.name, 4))
    assert bus.myself.config_epoch == 4  # the other one (smaller name) must bump


def test_malformed_messages_are_counted_and_ignored(bus):
    _, handler = _known(bus, _name())
    data = bytearray(bc.encode(_msg(bc.PING, handler.node.name)))
    data[14:16] = (900).to_bytes(2, "big")  # 900 gossip entries, none there
    bus.process(handler, bytes(data))
    assert bus.state.stats_received[bc.PING] == 1
    assert handler.link.sent == []
