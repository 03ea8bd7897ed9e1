"""The cluster bus codec on bytes captured at test time from real redis-server 7.0 nodes:
every captured message decodes and re-encodes to the same bytes; malformed, truncated and
oversize input gives ``MalformedMessage``, never another exception."""
from __future__ import annotations

import os
import random
import socket
import time

import pytest
import redis
from support.cluster_nodes import RedisNode

from pykv.cluster import bus_codec as bc


def _read_message(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 8:
        chunk = sock.recv(8 - len(head))
        assert chunk, "the redis-server node closed the bus link"
        head += chunk
    total = bc.frame_length(head)
    data = head
    while len(data) < total:
        chunk = sock.recv(total - len(data))
        assert chunk, "the redis-server node closed the bus link"
        data += chunk
    return data


def _wait_known(client: redis.Redis, count: int) -> None:
    deadline = time.monotonic() + 10
    while client.execute_command("CLUSTER", "INFO").count(b"cluster_known_nodes:%d" % count) == 0:
        assert time.monotonic() < deadline, "the redis-server nodes did not meet"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def captured():
    """MEET (with gossip and the hostname extension) and PONG from a real node."""
    a = RedisNode(extra=["--cluster-announce-hostname", "node-a"])
    b = RedisNode()
    listener = socket.socket()
    try:
        ca, cb = redis.Redis(port=a.port), redis.Redis(port=b.port)
        ca.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "100")
        cb.execute_command("CLUSTER", "ADDSLOTS", "5000")
        ca.execute_command("CLUSTER", "MEET", "127.0.0.1", b.port, b.cport)
        _wait_known(ca, 2)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(10)
        bus_port = listener.getsockname()[1]
        ca.execute_command("CLUSTER", "MEET", "127.0.0.1", bus_port - 10000 if bus_port > 10000
                           else bus_port, bus_port)
        conn, _ = listener.accept()
        conn.settimeout(10)
        meet = _read_message(conn)
        conn.close()
        out = socket.create_connection(("127.0.0.1", a.cport), timeout=10)
        ping = bc.Message(bc.PING, os.urandom(20).hex().encode(), port=1, cport=2,
                          mflags=bytes([bc.MF_EXT_DATA, 0, 0]))
        # the gossip entries are chosen at random: ping until a PONG carries one
        pong = b""
        for _ in range(50):
            out.sendall(bc.encode(ping))
            pong = _read_message(out)
            if bc.decode(pong).gossip:
                break
        out.close()
        yield {"meet": meet, "pong": pong, "a": ca.execute_command("CLUSTER", "MYID"),
               "b": cb.execute_command("CLUSTER", "MYID"), "a_port": a.port,
               "a_cport": a.cport}
    finally:
        listener.close()
        a.stop()
        b.stop()


def test_meet_from_redis(captured):
    msg = bc.decode(captured["meet"])
    assert msg.type == bc.MEET and msg.sender == captured["a"]
    assert msg.port == captured["a_port"] and msg.cport == captured["a_cport"]
    assert msg.flags == bc.F_MYSELF | bc.F_MASTER and msg.slaveof is None
    assert msg.hostname == "node-a"
    assert {g.name for g in msg.gossip} <= {captured["b"]}  # random pick: b or nothing
    owned = int.from_bytes(msg.myslots, "little")
    assert owned == (1 << 101) - 1
    assert bc.encode(msg) == captured["meet"]


def test_pong_from_redis(captured):
    msg = bc.decode(captured["pong"])
    assert msg.type == bc.PONG and msg.sender == captured["a"]
    assert [g.name for g in msg.gossip] == [captured["b"]]
    assert msg.gossip[0].ip == "127.0.0.1" and msg.gossip[0].flags & bc.F_MASTER
    assert bc.encode(msg) == captured["pong"]


def _sample(mtype: int) -> bc.Message:
    msg = bc.Message(mtype, b"c" * 40, port=7000, cport=17000, current_epoch=9,
                     config_epoch=4, offset=123, myip="10.0.0.1", flags=bc.F_MASTER)
    msg.fail_name = b"d" * 40
    msg.channel, msg.message = b"chan", b"hello"
    msg.update_epoch, msg.update_name, msg.update_slots = 5, b"e" * 40, b"\x01" * 2048
    msg.module_id, msg.module_type, msg.module_payload = 77, 3, b"xyz"
    return msg


@pytest.mark.parametrize("mtype", range(bc.TYPE_COUNT))
def test_every_type_round_trips(mtype):
    data = bc.encode(_sample(mtype))
    assert bc.encode(bc.decode(data)) == data
    assert bc.frame_length(data[:8]) == len(data)


def test_sizes_are_redis_struct_sizes():
    assert bc.HEADER_LEN == 2256 and bc.GOSSIP_LEN == 104
    assert len(bc.encode(_sample(bc.FAIL))) == 2256 + 40
    assert len(bc.encode(_sample(bc.UPDATE))) == 2256 + 8 + 40 + 2048
    assert len(bc.encode(_sample(bc.PUBLISH))) == 2256 + 8 + 4 + 5


def test_malformed_input_never_raises_anything_else(captured):
    rnd = random.Random(7)
    samples = [captured["meet"], captured["pong"],
               *(bc.encode(_sample(t)) for t in range(bc.TYPE_COUNT))]
    for _ in range(3000):
        data = bytearray(rnd.choice(samples))
        action = rnd.randrange(4)
        if action == 0:  # truncated
            data = data[:rnd.randrange(len(data))]
        elif action == 1:  # flipped bytes, lengths and counts included
            for _ in range(rnd.randint(1, 8)):
                data[rnd.randrange(min(len(data), 2300))] = rnd.randrange(256)
        elif action == 2:  # oversize: trailing garbage
            data += rnd.randbytes(rnd.randint(1, 300))
        else:
            data = bytearray(rnd.randbytes(rnd.randint(0, 3000)))
        try:
            bc.decode(bytes(data))
        except bc.MalformedMessage:
            pass
    with pytest.raises(bc.MalformedMessage):
        bc.frame_length(b"XXXX\0\0\0\0")
    with pytest.raises(bc.MalformedMessage):
        bc.frame_length(b"RCmb\0\0\0\x10")
