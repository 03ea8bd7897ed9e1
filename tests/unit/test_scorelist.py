"""ScoreList (pykv/storage/_scorelist.pyx) against a sorted Python list of (score, member)."""
from __future__ import annotations

import bisect
import random

import pytest

from pykv.storage._scorelist import ScoreList


def _member(rng: random.Random) -> bytes:
    return bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randrange(0, 4)))


def _check(sl: ScoreList, model: list) -> None:
    sl.check()
    assert len(sl) == len(model)
    assert list(sl) == model
    assert list(reversed(sl)) == model[::-1]


@pytest.mark.parametrize("seed", range(4))
def test_random_against_sorted_list(seed: int) -> None:
    rng = random.Random(seed)
    sl, model, present = ScoreList(), [], set()
    for step in range(6000):
        op = rng.random()
        if op < 0.6 or not model:
            pair = (float(rng.randrange(-20, 20)) / rng.choice((1, 2, 3)), _member(rng))
            if pair in present:
                continue
            present.add(pair)
            sl.insert(*pair)
            bisect.insort(model, pair)
        elif op < 0.85:
            pair = model.pop(rng.randrange(len(model)))
            present.discard(pair)
            if rng.random() < 0.5:
                assert sl.discard(*pair) is True
            else:
                sl.remove(pair)
        elif op < 0.9:
            lo = rng.randrange(len(model) + 1)
            hi = lo + rng.randrange(0, 3000)
            for pair in model[lo:hi]:
                present.discard(pair)
            del sl[lo:hi]
            del model[lo:hi]
        else:
            score = float(rng.randrange(-25, 25)) / 2
            member = _member(rng)
            assert sl.bisect_score(score) == bisect.bisect_left(model, (score,))
            assert sl.bisect_left((score,)) == bisect.bisect_left(model, (score,))
            assert sl.bisect_left((score, member)) == bisect.bisect_left(model, (score, member))
            assert sl.bisect_right((score, member)) == \
                bisect.bisect_right(model, (score, member))
        if step % 500 == 0:
            _check(sl, model)
    _check(sl, model)
    for i, pair in enumerate(model):
        assert sl.rank(*pair) == i
        assert sl[i] == pair
        assert sl[i - len(model)] == pair
    assert sl.discard(1e9, b"absent") is False
    with pytest.raises(ValueError):
        sl.remove((1e9, b"absent"))


def test_blocks_split_and_merge() -> None:
    pairs = [(float(i), b"m%d" % i) for i in range(5000)]
    sl = ScoreList(reversed(pairs))
    assert len(sl.block_sizes()) > 4
    _check(sl, pairs)
    for i in range(0, 5000, 2):
        sl.insert(i + 0.5, b"x")
    model = sorted(pairs + [(i + 0.5, b"x") for i in range(0, 5000, 2)])
    _check(sl, model)
    assert max(sl.block_sizes()) <= 1024
    for pair in model[100:7000]:
        sl.discard(*pair)
    del model[100:7000]
    _check(sl, model)
    del sl[:]
    _check(sl, [])
    sl.insert(1.0, b"a")
    _check(sl, [(1.0, b"a")])


def test_slices_islice_and_copy() -> None:
    rng = random.Random(7)
    model = sorted({(float(rng.randrange(100)), _member(rng) + b"%d" % i) for i in range(3000)})
    sl = ScoreList(model)
    for _ in range(200):
        lo, hi = sorted(rng.randrange(-100, len(model) + 100) for _ in range(2))
        assert sl[lo:hi] == model[lo:hi]
        assert sl.items(lo, hi) == model[max(lo, 0):hi]
        clo, chi = max(lo, 0), hi
        assert list(sl.islice(clo, chi)) == model[clo:chi]
        assert list(sl.islice(clo, chi, reverse=True)) == model[clo:chi][::-1]
    assert sl[::7] == model[::7]
    assert list(sl.islice()) == model
    copy = sl.copy()
    del sl[10:2000]
    assert list(copy) == model
    copy.check()
    with pytest.raises(IndexError):
        sl[len(sl)]


def test_iterator_survives_changes() -> None:
    sl = ScoreList((float(i), b"%d" % i) for i in range(3000))
    seen = []
    for score, _ in sl.islice(0, 3000):
        seen.append(score)
        if score == 10.0:
            del sl[0:5]  # positions shift: the walk continues by position, in bounds
    assert len(seen) < 3000 and seen[:11] == [float(i) for i in range(11)]


def test_member_order_is_memcmp_shorter_first() -> None:
    members = [b"", b"\x00", b"\x00\x00", b"a", b"ab", b"b", b"\xff"]
    sl = ScoreList()
    for m in reversed(members):
        sl.insert(0.0, m)
    sl.insert(-0.0, b"z")
    sl.insert(float("-inf"), b"a")
    sl.insert(float("inf"), b"a")
    assert [m for _, m in sl] == [b"a"] + sorted(members + [b"z"]) + [b"a"]
