"""FAILOVER_AUTH_REQUEST, MFSTART and UPDATE captured from a real redis-server 7.0 node, and
our FAILOVER_AUTH_ACK accepted by it: a raw socket plays a master ("F", slots 0-100) that
the redis-server node meets and then replicates; CLUSTER FAILOVER makes it send MFSTART,
CLUSTER FAILOVER FORCE an AUTH_REQUEST with FORCEACK, our encoded ACK elects it, and F's
stale claim afterwards earns an UPDATE. Every captured message re-encodes to its bytes."""
from __future__ import annotations

import os
import socket
import time

import pytest
import redis
from support.cluster_nodes import RedisNode

from pykv.cluster import bus_codec as bc
from unit.test_cluster_codec import _read_message

SLOTS = range(0, 101)


def _slots_bitmap(slots) -> bytes:
    bits = bytearray(bc.SLOT_BYTES)
    for slot in slots:
        bits[slot >> 3] |= 1 << (slot & 7)
    return bytes(bits)


class FakeMaster:
    """The bus side of a master that only exists as this socket."""

    def __init__(self, conn: socket.socket, port: int, cport: int) -> None:
        self.conn = conn
        self.name = os.urandom(20).hex().encode()
        self.port, self.cport = port, cport
        self.epoch = 1
        self.current_epoch = 1

    def send(self, mtype: int, **kw) -> None:
        msg = bc.Message(mtype, self.name, port=self.port, cport=self.cport,
                         current_epoch=self.current_epoch, config_epoch=self.epoch,
                         myslots=_slots_bitmap(SLOTS), flags=bc.F_MASTER, **kw)
        self.conn.sendall(bc.encode(msg))

    def wait_for(self, mtype: int, timeout: float = 10) -> bytes:
        """The next message of ``mtype`` (PINGs answered meanwhile)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = _read_message(self.conn)
            msg = bc.decode(data)
            if msg.type == mtype:
                return data
            if msg.type == bc.PING:
                self.send(bc.PONG)
        raise AssertionError(f"no message of type {bc.TYPE_NAMES[mtype]} from redis-server")


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def election():
    node = RedisNode(node_timeout=1000)
    listener = socket.socket()
    try:
        client = redis.Redis(port=node.port, decode_responses=True)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(10)
        cport = listener.getsockname()[1]
        port = cport - 10000 if cport > 10000 else cport
        client.execute_command("CLUSTER", "MEET", "127.0.0.1", port, cport)
        conn, _ = listener.accept()
        conn.settimeout(10)
        fake = FakeMaster(conn, port, cport)
        fake.wait_for(bc.MEET)
        fake.send(bc.PONG)  # completes redis-server's handshake: it learns F's name
        fake.send(bc.PING)  # and now F's slots
        fake.wait_for(bc.PONG)
        name = fake.name.decode()
        _until(lambda: f"{name} " in client.execute_command("CLUSTER", "NODES") and
               "0-100" in client.execute_command("CLUSTER", "NODES"), "F's slots")
        assert client.execute_command("CLUSTER", "REPLICATE", name) == "OK"
        assert client.execute_command("CLUSTER", "FAILOVER") == "OK"
        mfstart = fake.wait_for(bc.MFSTART)
        assert client.execute_command("CLUSTER", "FAILOVER", "FORCE") == "OK"
        request = fake.wait_for(bc.FAILOVER_AUTH_REQUEST)
        req = bc.decode(request)
        fake.current_epoch = req.current_epoch
        fake.send(bc.FAILOVER_AUTH_ACK)  # our vote: redis-server must count it
        _until(lambda: "myself,master" in client.execute_command("CLUSTER", "NODES"),
               "the redis-server replica's election")
        fake.send(bc.PING)  # F still claims 0-100 with its old epoch
        update = fake.wait_for(bc.UPDATE)
        yield {"mfstart": mfstart, "request": request, "update": update, "fake": fake,
               "redis": client.execute_command("CLUSTER", "MYID"), "client": client}
    finally:
        listener.close()
        node.stop()


def test_mfstart_from_redis(election):
    data = election["mfstart"]
    msg = bc.decode(data)
    assert len(data) == bc.HEADER_LEN
    assert msg.sender.decode() == election["redis"] and msg.slaveof == election["fake"].name
    assert msg.flags & bc.F_SLAVE and msg.myslots == _slots_bitmap(SLOTS)  # its master's
    assert bc.encode(msg) == data


def test_failover_auth_request_from_redis(election):
    data = election["request"]
    msg = bc.decode(data)
    assert len(data) == bc.HEADER_LEN
    assert msg.mflags[0] & bc.MF_FORCEACK  # a manual failover asks for votes regardless
    assert msg.slaveof == election["fake"].name and msg.config_epoch == 1
    assert msg.current_epoch >= 2  # bumped for the election
    assert bc.encode(msg) == data


def test_our_ack_elected_it_and_its_update_names_it(election):
    data = election["update"]
    msg = bc.decode(data)
    assert msg.update_name.decode() == election["redis"]
    request = bc.decode(election["request"])
    assert msg.update_epoch == request.current_epoch  # the election's epoch
    assert msg.update_slots == _slots_bitmap(SLOTS)
    assert bc.encode(msg) == data
    info = election["client"].execute_command("CLUSTER", "INFO")
    assert f"cluster_my_epoch:{request.current_epoch}" in info
