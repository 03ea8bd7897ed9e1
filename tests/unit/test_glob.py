"""Glob matching: pykv's compiled matcher against a direct model of Redis's C matcher.

``redis_model`` below interprets a pattern the way Redis's ``stringmatchlen`` does (signed
chars, set edge cases, the empty-string rule); the compiled matcher must agree with it on
hand-picked and on seeded random patterns. (KEYS in tests/compat checks both against real
redis-server.)
"""
from __future__ import annotations

import random
import time

import pytest

from pykv.util.glob import stringmatch


def _sc(b: int) -> int:
    return b - 256 if b >= 128 else b


def _low(b: int) -> int:
    """C ``tolower`` on a (possibly negative) char value in the C locale."""
    return b + 32 if 65 <= b <= 90 else b


def redis_model(p: bytes, s: bytes, nocase: bool = False) -> bool:
    """A slow, literal model of Redis's matcher (exponential on purpose-built patterns)."""
    if not s:
        return not p
    return _match(p, 0, s, 0, nocase)


def _match(p: bytes, pi: int, s: bytes, si: int, nocase: bool) -> bool:
    while pi < len(p) and si < len(s):
        ch = p[pi]
        if ch == 0x2A:
            while pi + 1 < len(p) and p[pi + 1] == 0x2A:
                pi += 1
            if pi == len(p) - 1:
                return True
            return any(_match(p, pi + 1, s, k, nocase) for k in range(si, len(s)))
        if ch == 0x3F:
            si += 1
        elif ch == 0x5B:
            pi += 1
            neg = pi < len(p) and p[pi] == 0x5E
            if neg:
                pi += 1
            hit = False
            c = s[si]
            while True:
                left = len(p) - pi
                if left >= 2 and p[pi] == 0x5C:
                    pi += 1
                    hit |= p[pi] == c
                elif left > 0 and p[pi] == 0x5D:
                    break
                elif left == 0:
                    pi -= 1
                    break
                elif left >= 3 and p[pi + 1] == 0x2D:
                    lo, hi, cc = _sc(p[pi]), _sc(p[pi + 2]), _sc(c)
                    if lo > hi:
                        lo, hi = hi, lo
                    if nocase:
                        lo, hi, cc = _low(lo), _low(hi), _low(cc)
                    pi += 2
                    hit |= lo <= cc <= hi
                else:
                    hit |= (_low(p[pi]) == _low(c)) if nocase else p[pi] == c
                pi += 1
            if hit == neg:
                return False
            si += 1
        else:
            if ch == 0x5C and len(p) - pi >= 2:
                pi += 1
            a, b = p[pi], s[si]
            if (_low(a) != _low(b)) if nocase else a != b:
                return False
            si += 1
        pi += 1
        if si == len(s):
            while pi < len(p) and p[pi] == 0x2A:
                pi += 1
            break
    return pi == len(p) and si == len(s)


CASES = [
    (b"*", b"", False), (b"", b"", True), (b"", b"a", False), (b"**", b"", False),
    (b"a*", b"a", True), (b"*a", b"a", True), (b"h?llo", b"hello", True),
    (b"h?llo", b"hllo", False), (b"h*llo", b"hllo", True), (b"h[ae]llo", b"hallo", True),
    (b"h[^e]llo", b"hello", False), (b"h[a-b]llo", b"hbllo", True),
    (b"h[b-a]llo", b"hbllo", True), (b"[a-]", b"]", True), (b"[a-]", b"-", False),
    (b"\\", b"\\", True), (b"a\\", b"a\\", True), (b"[", b"a", False), (b"[^", b"a", True),
    (b"[a-\xff]", b"\xff", True), (b"[a-\xff]", b"b", False), (b"[a-\xff]", b"\x00", True),
    (b"[\\]]", b"]", True), (b"[]]", b"]", False), (b"a[\\", b"a\\", True),
    (b"\\*", b"*", True), (b"\\*", b"a", False), (b"*\\", b"x\\", True),
    (b"a*b*c", b"axxbyyc", True), (b"a*b*c", b"axxbyy", False), (b"*b*", b"b", True),
    (b"a?*", b"a", False), (b"a?*", b"ab", True), (b"[^]", b"x", True),
]


@pytest.mark.parametrize("pattern,string,expected", CASES)
def test_known_cases(pattern, string, expected):
    assert stringmatch(pattern, string) is expected
    assert redis_model(pattern, string) is expected


@pytest.mark.parametrize("nocase", [False, True])
def test_random_against_model(nocase):
    rng = random.Random(4242 + nocase)
    pat_alphabet = b"ab*?[]^-\\A\xff\x80"
    str_alphabet = b"abAB-]^\\*\xff\x80\x00"
    for _ in range(3000):
        p = bytes(rng.choice(pat_alphabet) for _ in range(rng.randrange(0, 8)))
        s = bytes(rng.choice(str_alphabet) for _ in range(rng.randrange(0, 7)))
        assert stringmatch(p, s, nocase) == redis_model(p, s, nocase), (p, s, nocase)


def test_nocase():
    assert stringmatch(b"HeLLo", b"hello", nocase=True)
    assert not stringmatch(b"HeLLo", b"hello")
    assert stringmatch(b"h[A-Z]llo", b"hello", nocase=True)
    # an escaped byte inside a set is compared exactly, even ignoring case
    assert not stringmatch(b"[\\A]", b"a", nocase=True)
    assert stringmatch(b"[A]", b"a", nocase=True)


def test_hostile_pattern_is_fast():
    pattern = b"a*" * 40 + b"b"
    start = time.monotonic()
    assert not stringmatch(pattern, b"a" * 5000)
    assert stringmatch(pattern, b"a" * 5000 + b"b")
    assert time.monotonic() - start < 1.0
