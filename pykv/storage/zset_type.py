"""The sorted-set value type, and the range rules (score and lex bounds) Redis applies to it.

A ``ZSet`` keeps a dict member -> score (O(1) ZSCORE, membership) and a ``ScoreList``
(pykv/storage/_scorelist.pyx) of (score, member) pairs as 16-byte C structs, ordered exactly
as Redis's skiplist orders them (score, then bytes of the member), so rank, index, score and
lex ranges are O(log n) bisections.

While the encoding is ``listpack`` the pairs live in one packed buffer instead
(``ListpackZset``: Redis's own listpack bytes, member then score text, in (score, member)
order), which is ``scores`` itself (it answers the dict subset the commands read); ``sl`` is
then a read-only view made per use; writes go through ``insert``/``update``/``remove``. ``listpack``
flips to False (the pairs move to the dict and sorted list) when an insert crosses
``zset-max-listpack-entries``/``-value`` and never flips back, except for the store commands
that rebuild a destination (``convert_if_small``), as Redis 7.0 does.
"""
from __future__ import annotations

import math
import re
from typing import Any

from pykv.protocol import format_double
from pykv.storage._listpack import ListpackFull, ListpackZset
from pykv.storage._scorelist import ScoreList
from pykv.storage.values import Value

_INF = math.inf
_nextafter = math.nextafter


class ZSet(Value):
    """A sorted set: member -> score dict plus a sorted list of (score, member), or one
    packed listpack (``packed``) while small."""

    # two slots (the 48-byte allocation class): ``scores`` is the dict, or while the
    # encoding is listpack the ListpackZset itself (it answers the dict subset); ``_sl`` is
    # the ScoreList, None while packed
    __slots__ = ("scores", "_sl")
    type_name = b"zset"

    def __init__(self, listpack: bool = True, packed: ListpackZset | None = None) -> None:
        if listpack:
            self.scores: Any = packed if packed is not None else ListpackZset()
            self._sl: Any = None
        else:
            self.scores = {}
            self._sl = ScoreList()

    @property
    def listpack(self) -> bool:
        """True while the encoding is listpack."""
        return self._sl is None

    @property
    def packed(self) -> ListpackZset | None:
        """The listpack holding the pairs, or None once the set left it."""
        return self.scores if self._sl is None else None

    @property
    def sl(self) -> Any:
        """The ScoreList of (score, member), or while packed a read-only view over the
        listpack (made per use)."""
        sl = self._sl
        return self.scores.sorted_view() if sl is None else sl

    def encoding(self, config: Any) -> bytes:
        return b"listpack" if self._sl is None else b"skiplist"

    def __len__(self) -> int:
        return len(self.scores)

    def copy(self) -> ZSet:
        if self._sl is None:
            return ZSet(True, self.scores.copy())
        z = ZSet(False)
        z.scores = dict(self.scores)
        z._sl = self._sl.copy()
        return z

    def memory_usage(self) -> int:
        return 64 + sum(len(m) + 48 for m in self.scores)

    # -- encoding ------------------------------------------------------------------------
    def to_skiplist(self) -> None:
        """``zsetConvert``: the pairs move to the dict and sorted list, for good. A
        ``scores.get`` or ``sl`` a command took before stays on the old listpack: take them
        again after an insert (ZADD does)."""
        if self._sl is None:
            pairs = self.scores.pairs()
            self.scores = {member: score for score, member in pairs}
            self._sl = ScoreList(pairs)

    # -- updates -------------------------------------------------------------------------
    def insert(self, member: bytes, score: float) -> None:
        """Add a member known to be absent (encoding checks are the caller's job).

        A listpack keeps scores as text where ``-0`` reads back as ``0``; so do we.
        """
        if self._sl is None:
            if score == 0.0:
                score = 0.0
            try:
                self.scores.insert(member, score, score_text(score))
                return
            except ListpackFull:  # lpSafeToAdd: past 1 GB the set converts first
                self.to_skiplist()
        self.scores[member] = score
        self._sl.insert(score, member)

    def update(self, member: bytes, old: float, new: float) -> None:
        sl = self._sl
        if sl is None:  # zsetAdd's listpack path: delete, then insert again
            self.scores.delete(member)
            self.insert(member, new)
            return
        self.scores[member] = new
        sl.discard(old, member)
        sl.insert(new, member)

    def remove(self, member: bytes) -> bool:
        sl = self._sl
        if sl is None:
            return self.scores.delete(member)
        score = self.scores.pop(member, None)
        if score is None:
            return False
        sl.discard(score, member)
        return True

    def check_listpack(self, member_len: int, max_entries: int, max_value: int) -> None:
        """Before inserting one new member: leave listpack if it would cross a limit."""
        if self._sl is None and (len(self.scores) + 1 > max_entries or member_len > max_value):
            self.to_skiplist()

    def convert_if_small(self, max_entries: int, max_value: int) -> None:
        """Store commands (ZUNIONSTORE, GEOSEARCHSTORE…) pick listpack for small results."""
        small = len(self.scores) <= max_entries and all(
            len(m) <= max_value for m in self.scores)
        if not small:
            self.to_skiplist()
        elif self._sl is not None:
            packed = ListpackZset()
            # in order already; a listpack keeps scores as text, where -0 reads back as 0
            # (and -0 == 0 sorts with the zeros, so the order holds)
            try:
                packed.extend_sorted([(member, score_text(0.0 if score == 0.0 else score))
                                      for score, member in self._sl])
            except ListpackFull:  # past 1 GB: stays a skiplist (zsetTypeCreate's rule)
                return
            self.scores = packed
            self._sl = None

    def remove_index_range(self, lo: int, hi: int) -> int:
        """Remove the elements at sorted positions [lo, hi); returns how many."""
        if hi <= lo:
            return 0
        sl = self._sl
        if sl is None:
            self.scores.remove_range(lo, hi)
            return hi - lo
        scores = self.scores
        for _, member in sl.items(lo, hi):
            del scores[member]
        del sl[lo:hi]
        return hi - lo

    # -- queries -------------------------------------------------------------------------
    def rank(self, member: bytes) -> int | None:
        sl = self._sl
        if sl is None:
            return self.scores.rank(member)
        score = self.scores.get(member)
        if score is None:
            return None
        return sl.rank(score, member)

    def score_span(self, rng: ScoreRange) -> tuple[int, int]:
        """Sorted positions [lo, hi) of the elements whose score is inside ``rng``."""
        if rng.empty:
            return 0, 0
        sl = self._sl
        n = len(self.scores)
        if sl is None:
            packed_bisect = self.scores.bisect

            def bisect(score: float) -> int:
                return packed_bisect((score,))
        else:
            bisect = sl.bisect_score
        mn, mx = rng.min, rng.max
        if rng.minex:
            lo = bisect(_nextafter(mn, _INF)) if mn != _INF else n
        else:
            lo = bisect(mn)
        if rng.maxex:
            hi = bisect(mx)
        else:
            hi = bisect(_nextafter(mx, _INF)) if mx != _INF else n
        return lo, max(lo, hi)

    def items(self, lo: int, hi: int) -> list[tuple[float, bytes]]:
        """The (score, member) pairs at sorted positions [lo, hi)."""
        sl = self._sl
        if sl is None:
            return self.scores.pairs(lo, max(lo, hi))
        return sl.items(lo, hi)

    def lex_span(self, rng: LexRange) -> tuple[int, int]:
        """Sorted positions [lo, hi) of the members inside ``rng``.

        Like Redis, this assumes the members are ordered by bytes along the set (all scores
        equal); the search compares members only.
        """
        if rng.empty:
            return 0, 0
        sl = self.sl
        n = len(sl)
        if n == 0:
            return 0, 0
        lo = 0 if rng.min is None else _first_lex(sl, rng.min, rng.minex)
        hi = n if rng.max is None else _first_lex(sl, rng.max, not rng.maxex)
        return lo, max(lo, hi)


def score_text(score: float) -> bytes:
    """A score as a zset listpack stores it: integers within 2**53 as integers, the rest
    as ``%.17g`` text (Redis's ``d2string``)."""
    if abs(score) < 1 << 53 and score == int(score):
        return b"%d" % int(score)
    return format_double(score)


def _first_lex(sl: Any, value: bytes, after: bool) -> int:
    """First position whose member is > ``value`` (after) or >= ``value``."""
    first_score = sl[0][0]
    if sl[-1][0] == first_score:  # the usual case: one score, bisect natively
        return sl.bisect_right((first_score, value)) if after else \
            sl.bisect_left((first_score, value))
    lo, hi = 0, len(sl)
    while lo < hi:
        mid = (lo + hi) // 2
        member = sl[mid][1]
        if member > value or (not after and member == value):
            hi = mid
        else:
            lo = mid + 1
    return lo


# -- ranges ------------------------------------------------------------------------------
class ScoreRange:
    """A parsed score interval ``min``/``max`` with exclusive flags (``(`` prefix)."""

    __slots__ = ("min", "max", "minex", "maxex", "empty")

    def __init__(self, mn: float, minex: bool, mx: float, maxex: bool) -> None:
        self.min, self.minex, self.max, self.maxex = mn, minex, mx, maxex
        self.empty = mn > mx or (mn == mx and (minex or maxex))

    def contains(self, score: float) -> bool:
        if self.minex:
            if score <= self.min:
                return False
        elif score < self.min:
            return False
        if self.maxex:
            return score < self.max
        return score <= self.max


class LexRange:
    """A parsed lex interval; ``None`` stands for ``-`` (as min) and ``+`` (as max).

    The odd spellings ``+`` as min and ``-`` as max make the range ``empty``, as in Redis.
    """

    __slots__ = ("min", "max", "minex", "maxex", "empty")

    def __init__(self, mn: bytes | None, minex: bool, mx: bytes | None, maxex: bool,
                 empty: bool) -> None:
        self.min, self.minex, self.max, self.maxex = mn, minex, mx, maxex
        self.empty = empty

    def contains(self, member: bytes) -> bool:
        if self.min is not None:
            if self.minex:
                if member <= self.min:
                    return False
            elif member < self.min:
                return False
        if self.max is not None:
            if self.maxex:
                return member < self.max
            return member <= self.max
        return True


# strtod as zslParseRange uses it: leading whitespace allowed, the rest must be a number
_RANGE_FLOAT_RE = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|(?i:inf|infinity)))\Z")
_RANGE_HEX_RE = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    rb"(?:[pP][+-]?[0-9]+)?)\Z")


_SPECIAL = {b"-inf": -_INF, b"+inf": _INF, b"inf": _INF}


def strtod_whole(data: bytes) -> float | None:
    """The value of ``data`` read by C ``strtod`` if it consumes everything (NaN → None)."""
    if len(data) < 16 and data.isdigit():
        return float(data)
    special = _SPECIAL.get(data)
    if special is not None:
        return special
    nul = data.find(b"\0")
    if nul >= 0:
        data = data[:nul]
    if not data:
        return 0.0
    m = _RANGE_FLOAT_RE.match(data)
    if m is not None:
        return float(m.group(1))
    m = _RANGE_HEX_RE.match(data)
    if m is not None:
        text = m.group(1).decode()
        try:
            return float.fromhex(text)
        except OverflowError:
            return -_INF if text.startswith("-") else _INF
    return None


def parse_score_range(mn: bytes, mx: bytes) -> ScoreRange | None:
    """``zslParseRange``: None where Redis answers "min or max is not a float"."""
    minex = mn[:1] == b"("
    maxex = mx[:1] == b"("
    lo = strtod_whole(mn[1:] if minex else mn)
    hi = strtod_whole(mx[1:] if maxex else mx)
    if lo is None or hi is None:
        return None
    return ScoreRange(lo, minex, hi, maxex)


_LEX_MIN = object()  # '-'
_LEX_MAX = object()  # '+'


def _lex_item(item: bytes) -> tuple[Any, bool] | None:
    first = item[:1]
    if first == b"+" or first == b"-":
        if len(item) > 1 and item[1] != 0:
            return None
        return (_LEX_MAX if first == b"+" else _LEX_MIN), True
    if first == b"(":
        return item[1:], True
    if first == b"[":
        return item[1:], False
    return None


def _lex_cmp(a: Any, b: Any) -> int:
    if a is b:
        return 0
    if a is _LEX_MIN or b is _LEX_MAX:
        return -1
    if a is _LEX_MAX or b is _LEX_MIN:
        return 1
    return (a > b) - (a < b)


def parse_lex_range(mn: bytes, mx: bytes) -> LexRange | None:
    """``zslParseLexRange``: None where Redis answers "not valid string range item"."""
    lo = _lex_item(mn)
    hi = _lex_item(mx)
    if lo is None or hi is None:
        return None
    cmp = _lex_cmp(lo[0], hi[0])
    empty = cmp > 0 or (cmp == 0 and (lo[1] or hi[1]))
    if not empty and (lo[0] is _LEX_MAX or hi[0] is _LEX_MIN):
        empty = True
    lo_v = None if lo[0] is _LEX_MIN else lo[0]
    hi_v = None if hi[0] is _LEX_MAX else hi[0]
    return LexRange(lo_v, lo[1], hi_v, hi[1], empty)
