"""The packed small-collection buffers (pykv.storage._listpack) against plain models.

Every operation sequence is replayed on a ``dict`` (hashes) and the packed value must answer
the same, and its buffer must be byte for byte the listpack the RDB codec (checked against
real Redis in tests/compat and tests/integration) writes for the same elements.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykv.storage._listpack import ListpackMap, PackedList, QuickList
from pykv.storage.rdb.encoding import listpack_decode, listpack_encode

# elements that exercise every listpack encoding: small/large integers of each width (and
# strings that look like integers but are not canonical), short and long strings
_INTS = st.sampled_from([0, 1, 127, 128, -1, -4096, 4095, 4096, -32768, 32767, 32768,
                         -(1 << 23), (1 << 23) - 1, 1 << 23, -(1 << 31), (1 << 31) - 1,
                         1 << 31, -(1 << 63), (1 << 63) - 1]) | st.integers(-(1 << 63),
                                                                            (1 << 63) - 1)
ELEMENT = st.one_of(
    _INTS.map(lambda v: b"%d" % v),
    st.sampled_from([b"", b"-0", b"+1", b"01", b" 1", b"1 ", b"9223372036854775808",
                     b"-9223372036854775809", b"1.5"]),
    st.binary(max_size=10),
    st.binary(min_size=60, max_size=70),
    st.binary(min_size=4090, max_size=4100),
)
FIELD = st.one_of(st.sampled_from([b"a", b"b", b"1", b"01", b"-0", b""]), ELEMENT)
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), FIELD, ELEMENT),
    st.tuples(st.just("pop"), FIELD, st.none()),
), max_size=40)


def flat(pairs: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [x for pair in pairs for x in pair]


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_map_matches_a_dict(ops: list) -> None:
    m = ListpackMap()
    model: dict[bytes, bytes] = {}
    for op, field, value in ops:
        if op == "set":
            assert m.set(field, value) is (field not in model)
            model[field] = value
        else:
            assert m.pop(field, None) == model.pop(field, None)
        assert len(m) == len(model)
    assert m.items() == list(model.items())
    assert m.keys() == list(model) and list(m) == list(model)
    assert m.values() == list(model.values())
    for field in model:
        assert field in m and m[field] == model[field] and m.get(field) == model[field]
    assert b"\x00absent" not in m and m.get(b"\x00absent", 7) == 7
    blob = m.blob()
    assert blob == listpack_encode(flat(list(model.items())))
    assert listpack_decode(blob) == flat(list(model.items()))
    assert m.nbytes() == len(blob)
    copy = m.copy()
    assert copy.items() == m.items() and copy == model


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(FIELD, ELEMENT, max_size=20))
def test_built_from_a_dict_or_a_blob(model: dict[bytes, bytes]) -> None:
    m = ListpackMap(model)
    assert m.items() == list(model.items())
    loaded = ListpackMap.from_blob(m.blob(), len(model))
    assert loaded.items() == list(model.items()) and len(loaded) == len(model)
    loaded[b"\x00new"] = b"v"
    assert loaded.items()[-1] == (b"\x00new", b"v")


def test_integers_match_by_value_only_in_canonical_form() -> None:
    m = ListpackMap([(b"12", b"x"), (b"-7", b"y")])
    assert b"12" in m and b"012" not in m and b"+12" not in m and b"-7" in m
    assert m.blob() == listpack_encode([12, b"x", -7, b"y"])
    m[b"012"] = b"z"  # a string entry, distinct from the integer 12
    assert len(m) == 3 and m[b"12"] == b"x" and m[b"012"] == b"z"


def test_missing_and_wrong_types_raise() -> None:
    m = ListpackMap()
    try:
        m[b"nope"]
    except KeyError:
        pass
    else:
        raise AssertionError("KeyError expected")
    try:
        m.set(None, b"v")  # type: ignore[arg-type]
    except TypeError:
        pass
    else:
        raise AssertionError("TypeError expected")
    assert len(m) == 0 and not m


def _cfg(**over):
    from types import SimpleNamespace
    base = dict(hash_max_listpack_entries=128, hash_max_listpack_value=64)
    base.update(over)
    return SimpleNamespace(**base)


def _load(blob: bytes, type_byte: int, cfg):
    from pykv.storage.rdb import encoding as enc
    from pykv.storage.rdb.objects import load_object

    w = enc.RdbWriter(compress=False)
    w.string(blob)
    return load_object(enc.RdbReader(bytes(w.buf)), type_byte, cfg)


def test_rdb_keeps_a_hash_listpack_as_its_buffer() -> None:
    from pykv.storage.hash_type import HashValue
    from pykv.storage.rdb import encoding as enc
    from pykv.storage.rdb.objects import save_object

    cfg = _cfg()
    h = HashValue()
    h.set_pairs(cfg, [b"HSET", b"k", b"f", b"1", b"g", b"text"], 2)
    w = enc.RdbWriter(compress=False)
    save_object(w, h, cfg)
    assert bytes(w.buf) == bytes([enc.TYPE_HASH_LISTPACK]) + bytes(
        _string(h.d.blob()))
    loaded = _load(h.d.blob(), enc.TYPE_HASH_LISTPACK, cfg)
    assert type(loaded.d) is ListpackMap and loaded.d.blob() == h.d.blob()
    assert loaded.encoding(cfg) == b"listpack"
    # too many entries for the config: converted at load, as Redis does
    big = _load(h.d.blob(), enc.TYPE_HASH_LISTPACK, _cfg(hash_max_listpack_entries=1))
    assert big.encoding(cfg) == b"hashtable" and big.d == {b"f": b"1", b"g": b"text"}


def test_rdb_hash_listpack_with_duplicates_or_odd_encoding() -> None:
    import pytest

    from pykv.storage.rdb import encoding as enc
    from pykv.storage.rdb.encoding import RdbFormatError

    with pytest.raises(RdbFormatError, match="Hash listpack integrity"):
        _load(listpack_encode([b"f", b"1", b"f", b"2"]), enc.TYPE_HASH_LISTPACK, _cfg())
    # "7" stored as a string entry (not Redis's integer form) is re-encoded, still found
    odd = bytearray(listpack_encode([b"x", b"v"]))
    odd[6:9] = bytes([0x81, ord("7"), 2])
    loaded = _load(bytes(odd), enc.TYPE_HASH_LISTPACK, _cfg())
    assert loaded.d[b"7"] == b"v" and loaded.d.blob() == listpack_encode([7, b"v"])


def _string(blob: bytes) -> bytes:
    from pykv.storage.rdb import encoding as enc

    w = enc.RdbWriter(compress=False)
    w.string(blob)
    return bytes(w.buf)


# -- sorted sets ------------------------------------------------------------------------------
SCORE = st.sampled_from([0.0, 1.0, -1.0, 2.5, 1e300, -1e-300, float("inf"), float("-inf"),
                         4503599627370496.0, 0.1]) | st.integers(-300, 300).map(float)
MEMBER = st.sampled_from([b"a", b"b", b"ab", b"", b"1", b"10", b"-2", b"\xff", b"a\x00"]) | \
    st.binary(max_size=6)
ZOPS = st.lists(st.one_of(
    st.tuples(st.just("add"), MEMBER, SCORE),
    st.tuples(st.just("del"), MEMBER, st.none()),
    st.tuples(st.just("cut"), st.integers(0, 8), st.integers(0, 8)),
), max_size=40)


@settings(max_examples=150, deadline=None)
@given(ZOPS, st.lists(st.tuples(SCORE, MEMBER), max_size=6))
def test_zset_pack_matches_a_sorted_model(ops: list, probes: list) -> None:
    from bisect import bisect_left, bisect_right

    from pykv.storage._listpack import ListpackZset
    from pykv.storage.zset_type import score_text

    z = ListpackZset()
    model: dict[bytes, float] = {}
    for op, a, b in ops:
        if op == "add":
            if a in model:
                assert z.delete(a)
            z.insert(a, b, score_text(b))
            model[a] = b
        elif op == "del":
            assert z.delete(a) is (model.pop(a, None) is not None)
        else:
            ordered = sorted((s, m) for m, s in model.items())
            z.remove_range(a, b)
            for _, m in ordered[a:b]:
                del model[m]
    ordered = sorted((s, m) for m, s in model.items())
    assert z.pairs() == ordered and len(z) == len(ordered)
    assert z.members_scores() == [(m, s) for s, m in ordered]
    for i, (s, m) in enumerate(ordered):
        assert z.score(m) == s and z.rank(m) == i
        assert z.pairs(i, i + 1) == [(s, m)]
    assert z.score(b"\x00absent") is None and z.rank(b"\x00absent") is None
    for s, m in probes + ordered[:3]:
        for key in ((s,), (s, m)):
            assert z.bisect(key) == bisect_left(ordered, key), key
            assert z.bisect(key, True) == bisect_right(ordered, key), key
    flat = [x for s, m in ordered for x in (m, score_text(s))]
    assert z.blob() == listpack_encode(flat)
    whole = ListpackZset()
    whole.extend_sorted([(m, score_text(s)) for s, m in ordered])
    assert whole.blob() == z.blob()
    view = z.sorted_view()
    assert z == dict(model) and dict(z.items()) == dict(model) and list(view) == ordered
    assert sorted(z) == sorted(model) and all(m in z and z[m] == model[m] for m in model)
    assert list(view.islice(1, 3, reverse=True)) == ordered[1:3][::-1]
    assert view[0:2] == ordered[0:2] and list(reversed(view)) == ordered[::-1]
    if ordered:
        assert view[-1] == ordered[-1]


def test_zset_small_is_two_slots_and_its_listpack() -> None:
    """A small zset carries no view objects: ``scores`` is the listpack, ``sl`` is made per
    use; converting moves the pairs to a dict and a ScoreList."""
    from types import SimpleNamespace

    from pykv.storage._listpack import ListpackZset
    from pykv.storage.zset_type import ZSet

    z = ZSet()
    assert type(z.scores) is ListpackZset and z.packed is z.scores and z.listpack
    z.insert(b"a", 1.0)
    z.check_listpack(1, 1, 64)  # a second member would cross zset-max-listpack-entries=1
    assert z.packed is None and z.encoding(SimpleNamespace()) == b"skiplist"
    z.insert(b"b", 2.0)
    assert z.scores == {b"a": 1.0, b"b": 2.0} and list(z.sl) == [(1.0, b"a"), (2.0, b"b")]
    assert z.sl.bisect_left((2.0,)) == 1


# -- lists ------------------------------------------------------------------------------------
ITEM = st.one_of(ELEMENT, st.sampled_from([b"x", b"7", b"y"]))
LOPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["append", "appendleft"]), ITEM),
    st.tuples(st.sampled_from(["extend", "extendleft"]), st.lists(ITEM, max_size=4)),
    st.tuples(st.sampled_from(["pop", "popleft", "clear"]), st.none()),
    st.tuples(st.just("set"), st.tuples(st.integers(-12, 12), ITEM)),
    st.tuples(st.just("insert"), st.tuples(st.integers(-12, 12), ITEM)),
    st.tuples(st.just("index"), st.tuples(ITEM, st.integers(-3, 12), st.integers(-3, 12))),
), max_size=50)


def _apply(target, op: str, arg):
    try:
        if op in ("pop", "popleft", "clear"):
            return ("ok", getattr(target, op)())
        if op == "set":
            target[arg[0]] = arg[1]
            return ("ok", None)
        if op == "insert":
            return ("ok", target.insert(*arg))
        if op == "index":
            return ("ok", target.index(*arg))
        return ("ok", getattr(target, op)(arg))
    except (IndexError, ValueError) as e:
        return (type(e), None)


@settings(max_examples=150, deadline=None)
@given(LOPS)
def test_packed_list_matches_a_deque(ops: list) -> None:
    from collections import deque

    from pykv.storage._listpack import PackedList

    p = PackedList()
    model: deque[bytes] = deque()
    for op, arg in ops:
        assert _apply(p, op, arg) == _apply(model, op, arg), (op, arg)
        assert len(p) == len(model)
    assert list(p) == list(model) and list(reversed(p)) == list(reversed(model))
    for i in range(-len(model), len(model)):
        assert p[i] == model[i]
    for a in range(len(model) + 1):
        assert p.range(a, len(model)) == list(model)[a:]
        assert p.range(0, a) == list(model)[:a]
    if p.dq is None:
        assert p.blob() == listpack_encode(list(model))
        assert p.nbytes() <= 8192
    else:
        assert p.dq == model  # spilled: the deque took the elements, in order
    assert p.copy() == p


def test_packed_list_spills_past_one_node_and_settles() -> None:
    from pykv.storage._listpack import QuickList
    from pykv.storage.list_type import ListValue

    lv = ListValue([b"a", b"b"])
    assert type(lv.items).__name__ == "PackedList"
    lv.items.extend([b"x" * 100] * 100)  # ~10 KB: more than one 8 KB node
    assert type(lv.items.dq) is QuickList and len(lv.items) == 102
    lv.settle()
    assert type(lv.items) is QuickList and list(lv.items)[:2] == [b"a", b"b"]
    assert lv.items.node_count() >= 2
    assert type(ListValue([b"e"] * 5000).items) is QuickList


# elements of every size class, some past one node on their own, so edits cross nodes
BIG_ITEM = st.one_of(ITEM, st.binary(min_size=500, max_size=3000).map(lambda b: b"b" + b),
                     st.sampled_from([b"z" * 9000, b"1" * 2000]))
QOPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["append", "appendleft"]), BIG_ITEM),
    st.tuples(st.sampled_from(["extend", "extendleft"]), st.lists(BIG_ITEM, max_size=8)),
    st.tuples(st.sampled_from(["pop", "popleft", "clear"]), st.none()),
    st.tuples(st.just("set"), st.tuples(st.integers(-30, 30), BIG_ITEM)),
    st.tuples(st.just("insert"), st.tuples(st.integers(-30, 30), BIG_ITEM)),
    st.tuples(st.just("index"), st.tuples(BIG_ITEM, st.integers(-3, 30), st.integers(-3, 30))),
    st.tuples(st.just("del_range"), st.tuples(st.integers(0, 30), st.integers(0, 30))),
), max_size=60)


def _check_nodes(q) -> None:
    """Every node is a non-empty listpack of at most one node's size unless it holds one
    element."""
    from pykv.storage._listpack import QUICKLIST_NODE_BYTES

    sizes = q.node_sizes()
    assert sum(count for count, _ in sizes) == len(q) and len(sizes) == q.node_count()
    assert all(count > 0 and (nbytes <= QUICKLIST_NODE_BYTES or count == 1)
               for count, nbytes in sizes)
    assert q.nbytes() == sum(nbytes for _, nbytes in sizes)


@settings(max_examples=200, deadline=None)
@given(QOPS)
def test_quicklist_matches_a_deque(ops: list) -> None:
    from collections import deque

    from pykv.storage._listpack import QuickList

    q = QuickList([b"s%d" % i for i in range(1500)])  # ~9 KB of small elements
    assert q.node_count() >= 2
    model: deque[bytes] = deque(q)
    for op, arg in ops:
        if op == "del_range":
            start = min(arg[0], len(model))
            count = min(arg[1], len(model) - start)
            q.del_range(start, count)
            for _ in range(count):
                del model[start]
        else:
            assert _apply(q, op, arg) == _apply(model, op, arg), (op, arg)
        assert len(q) == len(model)
        _check_nodes(q)
    assert list(q) == list(model) and list(reversed(q)) == list(reversed(model))
    for i in range(-len(model), len(model)):
        assert q[i] == model[i]
    elements = list(model)
    for a in range(0, len(model) + 1, 7):
        assert q.range(a, len(model)) == elements[a:]
        assert q.range(0, a) == elements[:a]
        assert q.range(a, a + 3) == elements[a:a + 3]
    twin = q.copy()
    assert twin == q and list(twin) == elements
    twin.append(b"extra")
    assert len(q) == len(model)


def test_past_the_safety_size_values_convert_before_writing() -> None:
    """lpSafeToAdd: a write that would grow a listpack past 1 GB converts the value first
    (here with the limit lowered to 200 bytes)."""
    from pykv.storage import _listpack
    from pykv.storage.hash_type import HashValue
    from pykv.storage.zset_type import ZSet

    cfg = _cfg()
    old = _listpack.set_safety_size(200)
    try:
        h = HashValue()
        h.set_pairs(cfg, [b"HSET", b"k", b"a", b"x" * 60, b"b", b"y" * 60], 2)
        assert h.listpack
        h.set_pairs(cfg, [b"HSET", b"k", b"c", b"z" * 60], 2)
        assert not h.listpack and h.d == {b"a": b"x" * 60, b"b": b"y" * 60, b"c": b"z" * 60}
        z = ZSet()
        for i in range(3):
            z.insert(b"m%d" % i + b"-" * 60, float(i))
        assert z.packed is None and len(z) == 3 and z.rank(b"m2" + b"-" * 60) == 2
        m = ListpackMap()
        m[b"f"] = b"v" * 150
        try:
            m[b"g"] = b"w" * 60
        except _listpack.ListpackFull:
            pass
        else:
            raise AssertionError("ListpackFull expected")
        assert m.items() == [(b"f", b"v" * 150)]  # neither entry of the refused pair written
    finally:
        _listpack.set_safety_size(old)


def test_the_count_lives_in_the_header_and_is_walked_once_saturated() -> None:
    """No count field: the header's 2-byte count, or a walk of the entries while it reads
    65535 (Redis's lpLength), and exact again once the entries fit it."""
    fields = [(b"f%d" % i, b"%d" % i) for i in range(33_000)]  # 66,000 entries
    m = ListpackMap.from_blob(listpack_encode([x for pair in fields for x in pair]),
                              len(fields))
    assert len(m) == 33_000 and m.blob()[4:6] == b"\xff\xff"
    m[b"new"] = b"v"
    assert len(m) == 33_001 and m.blob()[4:6] == b"\xff\xff"
    for i in range(300):
        assert m.pop(b"f%d" % i) == b"%d" % i
    assert len(m) == 32_701 and m.blob()[4:6] == (65_402).to_bytes(2, "little")
    assert m.blob() == listpack_encode([x for pair in m.items() for x in pair])


def test_integer_entries_read_back_as_their_decimal_bytes() -> None:
    from pykv.storage._listpack import PackedList

    edges = [0, 1, -1, 127, 128, -128, 4095, -4096, 4096, 32767, -32768, 8388607, -8388608,
             2147483647, -2147483648, 2**63 - 1, -2**63, 12345678901, -12345678901]
    elements = [b"%d" % v for v in edges]
    packed = PackedList(elements)
    assert list(packed) == elements and packed.blob() == listpack_encode(elements)
    assert [packed[i] for i in range(len(elements))] == elements


def _resp_array(items: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(items) + b"".join(b"$%d\r\n%s\r\n" % (len(e), e) for e in items)


_REPLY_ELEMENT = st.one_of(
    st.integers(min_value=-2**63, max_value=2**63 - 1).map(lambda i: b"%d" % i),
    st.binary(max_size=5000), st.sampled_from([b"", b"-0", b"007", b"12a"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_REPLY_ELEMENT, max_size=400), st.integers(0, 420), st.integers(0, 420))
def test_write_range_is_the_resp_array_of_range(items: list, start: int, stop: int) -> None:
    for cls in (PackedList, QuickList):
        packed = cls(items)
        out = bytearray(b"+earlier\r\n")
        packed.write_range(out, start, stop)
        assert bytes(out) == b"+earlier\r\n" + _resp_array(items[start:max(start, stop)])
