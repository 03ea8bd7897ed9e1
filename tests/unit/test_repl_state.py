"""The replication backlog and ids (pykv.replication.state)."""
import os
import random

from pykv.replication.state import NO_REPLID, Backlog, ReplicationState


def test_backlog_keeps_the_newest_bytes_across_wraps():
    rng = random.Random(7)
    for size in (1, 7, 64, 1000):
        b = Backlog(size, 1)
        stream = bytearray()
        for _ in range(200):
            chunk = os.urandom(rng.choice((0, 1, 3, size - 1 if size > 1 else 1, size, size + 5)))
            b.feed(chunk)
            stream += chunk
            assert b.histlen == min(size, len(stream))
            assert b.end_offset == len(stream)
            assert b.start_offset == len(stream) - b.histlen + 1
            off = rng.randint(b.start_offset, b.end_offset + 1)
            assert b.read_from(off) == bytes(stream[off - 1:])
        assert not b.holds(b.start_offset - 1) or b.start_offset == 1
        assert not b.holds(b.end_offset + 2)


def test_backlog_resize_keeps_offsets():
    b = Backlog(10, 1)
    b.feed(b"abcdefghijklmno")  # offsets 1..15; holds 6..15
    b.resize(4)
    assert (b.start_offset, b.end_offset, b.read_from(12)) == (12, 15, b"lmno")
    b.resize(100)
    b.feed(b"pq")
    assert b.read_from(12) == b"lmnopq"


def test_state_offsets_and_psync_ids():
    s = ReplicationState()
    s.feed(b"xx")  # no backlog yet: offset moves, nothing kept
    assert s.master_repl_offset == 2 and not s.can_continue(s.replid, 3)
    s.create_backlog(100)
    s.feed(b"hello")
    assert s.can_continue(s.replid, 3) and s.can_continue(s.replid, 8)
    assert not s.can_continue(s.replid, 9) and not s.can_continue("f" * 40, 3)
    old = s.replid
    s.shift_replid()
    assert s.replid2 == old and s.second_repl_offset == 8
    assert s.can_continue(old, 8) and s.can_continue(s.replid, 8)
    s.feed(b"!")
    assert not s.can_continue(old, 9)  # past where the old history ended
    s.clear_replid2()
    assert s.replid2 == NO_REPLID and s.second_repl_offset == -1
