"""Hash slots: pykv's keyHashSlot against real redis-server's CLUSTER KEYSLOT, and the
per-slot key index the keyspace keeps in cluster mode."""
from __future__ import annotations

import random

import pytest
import redis
from support.cluster_nodes import RedisNode

from pykv.cluster.keyslot import key_hash_slot
from pykv.cluster.slot_index import SlotIndex
from pykv.storage.keyspace import Clock, Database


def _keys() -> list[bytes]:
    rnd = random.Random(16)
    keys = [b"", b"{", b"}", b"{}", b"{}x", b"x{}", b"{a}", b"{{a}}", b"a{b}c{d}", b"{a",
            b"a}", b"}{a}", b"{a}{b}", b"foo", b"123456789", b"\x00\xff{\x00}", b"user:{42}:x"]
    alphabet = b"ab{}\x00\xff:"
    for _ in range(400):
        keys.append(bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 12))))
        keys.append(rnd.randbytes(rnd.randint(1, 40)))
    return keys


@pytest.fixture(scope="module")
def real_cluster_node():
    server = RedisNode()
    yield server
    server.stop()


def test_keyslot_matches_redis(real_cluster_node):
    client = redis.Redis(port=real_cluster_node.port)
    keys = _keys()
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.execute_command("CLUSTER", "KEYSLOT", key)
    replies = pipe.execute()
    client.close()
    assert [key_hash_slot(k) for k in keys] == replies


def test_known_vectors():
    assert key_hash_slot(b"123456789") == 0x31C3 & 16383  # CRC16/XMODEM check value
    assert key_hash_slot(b"foo") == 12182
    assert key_hash_slot(b"{user1000}.following") == key_hash_slot(b"user1000")
    assert key_hash_slot(b"foo{}{bar}") == key_hash_slot(b"foo{}{bar}")  # empty tag: all


def test_index_follows_the_keyspace():
    db = Database(0, Clock())
    db.slot_index = index = SlotIndex()
    for i in range(50):
        db.set(b"{t}%d" % i, b"v")
    db.set(b"{t}1", b"again")  # an overwrite is not a new key
    slot = key_hash_slot(b"t")
    assert index.count(slot) == 50
    assert index.get_keys(slot, 3) == [b"{t}0", b"{t}1", b"{t}2"]
    db.delete(b"{t}0")
    db.set_expire(b"{t}1", 1)
    db.get(b"{t}1")  # expired on lookup
    assert index.count(slot) == 48
    db.clear()
    assert index.count(slot) == 0 and index.get_keys(slot, 10) == []


def test_index_off_by_default():
    db = Database(0, Clock())
    assert db.slot_index is None
    db.set(b"k", b"v")
    assert db.delete(b"k")
