"""StreamValue on its own: node layout, listpack sizes, trimming, counters, RDB round trips."""
from __future__ import annotations

import gc
import random

import pytest

from pykv.storage.rdb.encoding import (
    TYPE_STREAM_LISTPACKS,
    TYPE_STREAM_LISTPACKS_2,
    RdbFormatError,
    RdbReader,
    RdbWriter,
    listpack_decode,
)
from pykv.storage.stream_type import (
    INVALID_ENTRIES_READ,
    MAX_ID,
    MIN_ID,
    Group,
    Nack,
    StreamValue,
    _node_listpack,
    decr_id,
    encode_id,
    format_id,
    incr_id,
    load_stream,
    save_stream,
)


def _stream(n: int, per_node: int = 100, max_bytes: int = 4096) -> StreamValue:
    s = StreamValue()
    for i in range(1, n + 1):
        s.append((i, 0), [b"f", b"%d" % i], max_bytes, per_node)
    return s


def test_ids_wrap_at_the_edges():
    assert incr_id((1, 2)) == (1, 3)
    assert incr_id((1, (1 << 64) - 1)) == (2, 0)
    assert incr_id(MAX_ID) is None
    assert decr_id((2, 0)) == (1, (1 << 64) - 1)
    assert decr_id(MIN_ID) is None
    assert encode_id((1, 2)) == b"\0" * 7 + b"\1" + b"\0" * 7 + b"\2"


def test_nodes_split_by_entries_and_bytes():
    s = _stream(10, per_node=4)
    assert [len(node.ids) for node in s.nodes] == [4, 4, 2]
    big = StreamValue()
    for i in range(1, 6):
        big.append((i, 0), [b"f", b"x" * 40], 100, 0)
    assert [len(node.ids) for node in big.nodes] == [1, 1, 1, 1, 1]


def test_packed_nodes_are_redis_listpacks_under_random_histories():
    """Each node's buffer equals the listpack encoded element by element as Redis lays it
    out, and reads agree with a plain model: field sets differing inside a node, integer
    looking fields and values, strings past 4095 bytes, negative and 64-bit wide deltas,
    deletions (the master counts crossing their 1-byte encodings), exact trims, splits by
    bytes and by entries (0: unlimited)."""
    rng = random.Random(11)
    for max_bytes, per_node in ((4096, 100), (300, 0), (1 << 20, 0), (0, 7)):
        s = StreamValue()
        model: dict = {}
        ms = rng.randrange(1 << 45)
        for step in range(900):
            op = rng.random()
            if op < 0.7 or not model:
                ms += rng.choice([0, 0, 1, 3, 200, 70000, 1 << 33])
                sid = (ms, step if rng.random() < 0.5 else rng.randrange(1 << 64))
                if sid <= s.last_id:
                    sid = (s.last_id[0] + 1, rng.choice([0, 5]))
                flat = rng.choice([
                    [b"field", b"value:%d" % step], [b"field", b"%d" % (step - 450)],
                    [b"12", b"-70000", b"c", b"12345678901234"], [b"a", b"x" * 5000],
                    [b"field", b"v", b"other", b"-9223372036854775808"], [b"0", b"007"],
                ])
                last = s.nodes[-1] if s.nodes else None
                full = last is not None and (
                    last.lp_bytes() + sum(map(len, flat)) >= (max_bytes or 1 << 30)
                    or (per_node and last.live + last.dead >= per_node))
                s.append(sid, flat, max_bytes, per_node)
                model[sid] = tuple(flat)
                assert (s.nodes[-1] is not last) == (last is None or full)
            elif op < 0.9:
                sid = rng.choice(list(model))
                assert s.delete(sid)
                del model[sid]
            elif op < 0.93:
                keep = rng.randrange(len(model) + 1)
                assert s.trim(keep, None, False, 0) == len(model) - keep
                for sid in sorted(model)[:len(model) - keep]:
                    del model[sid]
            else:
                sid = rng.choice(list(model))
                assert s.get(sid) == model[sid]
                assert s.get((sid[0], sid[1] ^ 1)) == model.get((sid[0], sid[1] ^ 1))
        assert s.length == len(model)
        assert s.range(MIN_ID, MAX_ID) == sorted(model.items())
        assert s.range(MIN_ID, MAX_ID, rev=True) == sorted(model.items(), reverse=True)
        for node in s.nodes:
            blob = node.blob()
            assert blob == _node_listpack(node) and node.lp_bytes() == len(blob)
            elems = listpack_decode(blob)
            assert (int(elems[0]), int(elems[1])) == (node.live, node.dead)
            if per_node:
                assert node.live + node.dead <= per_node
        assert _roundtrip(s).range(MIN_ID, MAX_ID) == sorted(model.items())


def test_master_counts_change_encoding_size_in_place():
    """Live/dead counts crossing 127 and 4095 take more bytes: the entries after them move
    and stay readable, and the buffer stays Redis's."""
    s = StreamValue()
    for i in range(5000):
        s.append((7, i), [b"f", b"%d" % i], 1 << 30, 0)
    (node,) = s.nodes
    for i in range(0, 5000, 2):
        assert s.delete((7, i))
    assert (node.live, node.dead) == (2500, 2500)
    assert node.blob() == _node_listpack(node)
    assert [sid for sid, _ in s.range((7, 4990), MAX_ID)] == [(7, i) for i in range(4991, 5000, 2)]
    assert s.trim(3, None, False, 0) == 2497 and s.first_id == (7, 4995)
    assert node.blob() == _node_listpack(node) and node.dead == 4997


def test_a_node_past_65535_elements_saturates_its_header_count():
    s = StreamValue()
    for i in range(14000):  # 5 elements an entry
        s.append((3, i), [b"f", b"v%d" % i], 0, 0)
    (node,) = s.nodes
    blob = node.blob()
    assert blob[4:6] == b"\xff\xff" and blob == _node_listpack(node)
    assert s.delete((3, 13999)) and node.blob() == _node_listpack(node)
    assert _roundtrip(s).range((3, 13990), MAX_ID, rev=True)[0] == ((3, 13998), (b"f", b"v13998"))


def test_forward_reads_in_batches_see_every_entry():
    """XREADGROUP's batches (a walk resuming where the previous one stopped) against one
    full range, with entries appended and deleted between batches and starts that go back."""
    from pykv.storage.stream_type import incr_id, range_forward

    rng = random.Random(5)
    s = _stream(50, per_node=0, max_bytes=1 << 20)
    start = MIN_ID
    seen = []
    for step in range(200):
        if rng.random() < 0.3:
            s.append((s.last_id[0] + 1, 0), [b"f", b"%d" % step], 1 << 20, 0)
        if rng.random() < 0.1 and s.length > 1:
            victim = rng.choice(s.range(MIN_ID, MAX_ID))[0]
            if victim < start:
                s.delete(victim)
        batch: list = []
        range_forward(s, start, MAX_ID, 3, batch)
        assert batch == s.range(start, MAX_ID, 3)
        if rng.random() < 0.1:  # a re-read from earlier (XREADGROUP with an ID)
            back = (rng.randrange(1, 60), 0)
            again: list = []
            range_forward(s, back, MAX_ID, 5, again)
            assert again == s.range(back, MAX_ID, 5) and again[0][0] >= back
        seen += batch
        if batch:
            start = incr_id(batch[-1][0])
    assert [sid for sid, _ in seen] == sorted({sid for sid, _ in seen})


def test_loaded_listpacks_are_kept_as_they_are():
    s = _stream(30, per_node=7)
    s.delete((5, 0))
    t = _roundtrip(s)
    assert [n.blob() for n in t.nodes] == [n.blob() for n in s.nodes]
    t.append((31, 0), [b"f", b"31"], 4096, 7)
    assert t.delete((8, 0)) and t.nodes[1].blob() == _node_listpack(t.nodes[1])
    assert t.range((30, 0), MAX_ID) == [((30, 0), (b"f", b"30")), ((31, 0), (b"f", b"31"))]


def test_computed_listpack_size_matches_encoding():
    rng = random.Random(3)
    s = StreamValue()
    for i in range(300):
        fields = rng.choice([[b"a", b"1"], [b"a", b"x" * rng.randrange(200)],
                             [b"b", b"-70000", b"c", b"12345678901234"], [b"a", b"x" * 5000]])
        s.append((1 << rng.randrange(40) if i == 0 else s.last_id[0] + rng.randrange(3),
                  i), fields, 4096, 50)
        if rng.random() < 0.2:
            s.delete(s.last_id)
    for node in s.nodes:
        blob = _node_listpack(node)
        assert node.lp_bytes() == len(blob)
        assert int(listpack_decode(blob)[0]) == node.live


def test_range_skips_deleted_and_respects_bounds():
    s = _stream(12, per_node=5)
    assert s.delete((3, 0)) and not s.delete((3, 0)) and not s.delete((99, 0))
    ids = [sid for sid, _ in s.range(MIN_ID, MAX_ID)]
    assert ids == [(i, 0) for i in range(1, 13) if i != 3]
    assert [sid for sid, _ in s.range((4, 0), (7, 0), rev=True)] == [(7, 0), (6, 0), (5, 0),
                                                                      (4, 0)]
    assert [sid for sid, _ in s.range((2, 0), MAX_ID, 2)] == [(2, 0), (4, 0)]
    assert s.range((9, 0), (2, 0)) == []
    assert s.get((3, 0)) is None and s.get((4, 0)) == (b"f", b"4")


def test_deleting_a_node_s_last_live_entry_drops_the_node():
    s = _stream(6, per_node=3)
    for i in (4, 5, 6):
        s.delete((i, 0))
    assert len(s.nodes) == 1 and s.length == 3


def test_approximate_trim_removes_whole_nodes_only():
    s = _stream(10, per_node=4)
    assert s.trim(7, None, True, 0) == 0  # the first node holds 4: removing it leaves 6
    assert s.trim(6, None, True, 0) == 4
    assert s.first_id == (5, 0)
    assert s.trim(1, None, False, 0) == 5
    assert s.length == 1 and s.first_id == (10, 0)
    s = _stream(10, per_node=4)
    assert s.trim(0, None, True, 3) == 0  # LIMIT smaller than a node
    assert s.trim(None, (6, 0), False, 0) == 5 and s.first_id == (6, 0)


def test_read_counters_follow_redis_rules():
    s = _stream(4)
    assert s.estimate_distance((4, 0)) == 4
    assert s.estimate_distance((9, 0)) == INVALID_ENTRIES_READ
    assert s.estimate_distance(MIN_ID) == 0
    assert s.estimate_distance((1, 0)) == 1
    assert s.estimate_distance((2, 0)) == INVALID_ENTRIES_READ
    g = Group(b"g", (2, 0), 2)
    assert s.group_lag(g) == 2
    s.delete((3, 0))
    s.max_deleted = (3, 0)
    assert s.has_tombstones((2, 0)) and not s.has_tombstones((4, 0))
    assert s.group_lag(g) is None
    assert StreamValue().group_lag(g) == 0


def test_rax_node_count():
    assert StreamValue().rax_nodes() == 1
    assert _stream(1).rax_nodes() == 2
    s = _stream(3, per_node=1)  # keys differ only in byte 7: one compressed node, a branch
    assert s.rax_nodes() == 1 + 1 + 3 * 2


def _roundtrip(s: StreamValue, type_byte: int = TYPE_STREAM_LISTPACKS_2) -> StreamValue:
    w = RdbWriter()
    save_stream(w, s)
    r = RdbReader(bytes(w.buf))
    loaded = load_stream(r, type_byte, None)
    assert r.remaining() == 0
    return loaded


def test_rdb_round_trip_keeps_everything():
    s = _stream(30, per_node=7)
    s.delete((5, 0))
    s.max_deleted = (5, 0)
    g = s.groups[b"g"] = Group(b"g", (9, 0), INVALID_ENTRIES_READ)
    alice = g.create_consumer(b"alice", 1234)
    for sid in ((6, 0), (8, 0)):
        nack = g.pel[sid] = Nack(alice, 99, 3)
        alice.pel[sid] = nack
    t = _roundtrip(s)
    assert t.range(MIN_ID, MAX_ID) == s.range(MIN_ID, MAX_ID)
    assert [n.ids for n in t.nodes] == [n.ids for n in s.nodes]
    assert (t.length, t.last_id, t.first_id, t.max_deleted, t.entries_added) == \
        (s.length, s.last_id, s.first_id, s.max_deleted, s.entries_added)
    tg = t.groups[b"g"]
    assert tg.entries_read == INVALID_ENTRIES_READ and tg.last_id == (9, 0)
    assert tg.consumers[b"alice"].seen_time == 1234
    assert list(tg.consumers[b"alice"].pel) == [(6, 0), (8, 0)]
    assert tg.pel[(8, 0)].consumer is tg.consumers[b"alice"]
    copy = s.copy()
    copy.groups[b"g"].ack((6, 0))
    assert (6, 0) in s.groups[b"g"].pel


def test_rdb9_stream_derives_the_7_0_fields():
    s = _stream(5)
    s.groups[b"g"] = Group(b"g", (5, 0), 5)
    w = RdbWriter()
    save_stream(w, s)
    # the RDB 9 form has no first id / max deleted id / entries added / entries read
    body = bytes(w.buf)
    r = RdbReader(body)
    v2 = load_stream(r, TYPE_STREAM_LISTPACKS_2, None)
    assert v2.entries_added == 5
    w9 = RdbWriter()
    w9.length(len(s.nodes))
    for node in s.nodes:
        w9.string(encode_id(node.master))
        w9.string(_node_listpack(node))
    for part in (s.length, *s.last_id):
        w9.length(part)
    w9.length(1)
    w9.string(b"g")
    w9.length(5)
    w9.length(0)
    w9.length(0)
    w9.length(0)
    v1 = load_stream(RdbReader(bytes(w9.buf)), TYPE_STREAM_LISTPACKS, None)
    assert v1.first_id == (1, 0) and v1.entries_added == 5
    assert v1.groups[b"g"].entries_read == 5


def test_corrupt_payloads_raise_format_errors():
    s = _stream(3)
    w = RdbWriter(compress=False)
    save_stream(w, s)
    data = bytes(w.buf)
    for cut in (5, 20, len(data) - 3):
        with pytest.raises(RdbFormatError):
            load_stream(RdbReader(data[:cut]), TYPE_STREAM_LISTPACKS_2, None)
    bad = bytearray(data)
    assert bad[-9] == 3  # length, last id, first id, max deleted id, entries added, groups
    bad[-9] = 7  # the stream length no longer matches the nodes
    with pytest.raises(RdbFormatError):
        load_stream(RdbReader(bytes(bad)), TYPE_STREAM_LISTPACKS_2, None)


def test_pel_map_matches_a_sorted_dict_under_random_operations():
    """PelMap (dict + sorted keys with stale removals) against a plain model."""
    import random

    from pykv.storage.stream_type import PelMap

    rng = random.Random(7)
    pel = PelMap()
    model: dict = {}
    for step in range(20000):
        sid = (rng.randrange(300), rng.randrange(3))
        op = rng.random()
        if op < 0.5:
            pel[sid] = model[sid] = step
        elif op < 0.9:
            assert pel.pop(sid, None) == model.pop(sid, None)
        else:
            lo, hi = sorted([(rng.randrange(300), 0), (rng.randrange(300), 2)])
            assert list(pel.irange(lo, hi)) == sorted(k for k in model if lo <= k <= hi)
            assert list(pel.irange(minimum=lo)) == sorted(k for k in model if k >= lo)
        assert len(pel) == len(model) and (sid in pel) == (sid in model)
    assert pel.items() == sorted(model.items())
    if model:
        assert pel.first() == min(model) and pel.last() == max(model)


def test_entries_are_packed_not_kept_as_objects():
    """A node's entries live in its buffer: the caller's list is not kept, and the node
    refers to no more Python objects after a thousand entries than after one."""
    s = StreamValue()
    fields = [b"f", b"v", b"g", b"w"]
    s.append((1, 0), fields, 1 << 20, 0)
    fields.append(b"later")
    (node,) = s.nodes
    held = len(gc.get_referents(node))
    for i in range(1, 1000):
        s.append((1, i), [b"f", b"%d" % i, b"g", b"x" * (i % 50)], 1 << 20, 0)
    assert len(s.nodes) == 1 and len(gc.get_referents(node)) == held
    assert s.range(MIN_ID, MAX_ID, 1) == [((1, 0), (b"f", b"v", b"g", b"w"))]


def test_format_id_writes_both_64_bit_parts():
    assert format_id((0, 0)) == b"0-0"
    assert format_id((1700000000123, 42)) == b"1700000000123-42"
    top = (1 << 64) - 1
    assert format_id((top, top)) == b"%d-%d" % (top, top)


def test_entries_with_the_master_fields_share_its_name_objects():
    """An entry whose field names are the master entry's keeps the master's bytes objects
    (one copy of each name per node, as the listpack's master entry is)."""
    first, second = b"field", b"".join([b"fie", b"ld"])
    assert first == second and first is not second
    s = StreamValue()
    s.append((1, 0), [first, b"1"], 4096, 100)
    s.append((1, 1), [second, b"2"], 4096, 100)
    s.append((1, 2), [b"other", b"3"], 4096, 100)
    (_, a), (_, b), (_, c) = s.range(MIN_ID, MAX_ID)
    assert a == (b"field", b"1") and b == (b"field", b"2") and c == (b"other", b"3")
    assert b[0] is first
