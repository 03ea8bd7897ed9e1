"""Redis's glob-style matching (``stringmatchlen``) for KEYS, SCAN MATCH, PSUBSCRIBE, …

Supports ``*``, ``?``, ``[abc]``, ``[^abc]``, ``[a-z]`` and ``\\`` escapes with Redis's
exact edge cases, which are facts of its C implementation:

* bytes are C ``char`` (signed on x86-64), so in a range such as ``[a-\\xff]`` the byte
  ``\\xff`` is -1 and the range is really ``\\xff`` plus ``\\x00``..``a``;
* an unterminated ``[`` set ends at the pattern's end; ``[a-]`` is the range ``]``..``a``;
* inside a set ``\\x`` matches ``x`` exactly, even when matching ignores case;
* a trailing ``\\`` matches a literal ``\\``;
* the empty string matches only the empty pattern (so ``*`` does not match ``""``: KEYS
  and SCAN special-case the pattern ``*`` themselves, as Redis does).

A pattern is compiled once (``matcher``, cached) from segments split at ``*``; each
segment is a fixed-length regex whose character classes were computed by evaluating
Redis's rules for all 256 bytes. With at most one star the segments join into one regex;
with more they are placed greedily left to right, which is linear in the string (Redis
guards its recursive matcher against exponential patterns the same way), so a hostile
``a*a*a*…b`` pattern cannot hang the server.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache


def _signed(b: int) -> int:
    return b - 256 if b >= 128 else b


def _lower(b: int) -> int:
    return b + 32 if 0x41 <= b <= 0x5A else b


def _class(members: list[bool]) -> bytes:
    """A regex matching exactly one byte from ``members`` (a 256-entry table)."""
    count = sum(members)
    if count == 256:
        return rb"[\x00-\xff]"
    if count == 0:
        return rb"(?!)"
    return b"[" + b"".join(re.escape(bytes([b])) for b in range(256) if members[b]) + b"]"


def _parse_set(pattern: bytes, i: int, nocase: bool) -> tuple[bytes, int]:
    """Compile the set starting just after ``[`` at ``i``; return (regex, index after)."""
    n = len(pattern)
    negate = i < n and pattern[i] == 0x5E  # ^
    if negate:
        i += 1
    exact: set[int] = set()             # from \x escapes: compared exactly
    literal: set[int] = set()           # plain bytes: compared with case folding if nocase
    ranges: list[tuple[int, int]] = []  # signed-char bounds, already ordered
    while True:
        if i < n and pattern[i] == 0x5C and n - i >= 2:  # \x
            i += 1
            exact.add(pattern[i])
        elif i < n and pattern[i] == 0x5D:  # ]
            break
        elif i >= n:  # unterminated: the set ends with the pattern
            i = n - 1
            break
        elif n - i >= 3 and pattern[i + 1] == 0x2D:  # a-z
            lo, hi = _signed(pattern[i]), _signed(pattern[i + 2])
            if lo > hi:
                lo, hi = hi, lo
            if nocase:
                lo, hi = _lower(lo & 0xFF), _lower(hi & 0xFF)
                lo, hi = _signed(lo), _signed(hi)
            ranges.append((lo, hi))
            i += 2
        else:
            literal.add(_lower(pattern[i]) if nocase else pattern[i])
        i += 1
    members = []
    for b in range(256):
        c = _lower(b) if nocase else b
        sc = _signed(c)
        hit = b in exact or c in literal or any(lo <= sc <= hi for lo, hi in ranges)
        members.append(hit != negate)
    return _class(members), i + 1


def _literal(b: int, nocase: bool) -> bytes:
    if nocase and (0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A):
        return b"[" + bytes([b | 0x20, b & ~0x20]) + b"]"
    return re.escape(bytes([b]))


def _segments(pattern: bytes, nocase: bool) -> tuple[list[bytes], int]:
    """The pattern's segments between stars (regex sources, each of a fixed width) and the
    width of the last one."""
    segments: list[bytes] = []
    current = bytearray()
    width = 0
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == 0x2A:  # *
            segments.append(bytes(current))
            current = bytearray()
            width = 0
            i += 1
            continue
        width += 1
        if ch == 0x3F:  # ?
            current += rb"[\x00-\xff]"
        elif ch == 0x5B:  # [
            regex, i = _parse_set(pattern, i + 1, nocase)
            current += regex
            continue
        else:
            if ch == 0x5C and n - i >= 2:  # \x
                i += 1
            current += _literal(pattern[i], nocase)
        i += 1
    segments.append(bytes(current))
    return segments, width


@lru_cache(maxsize=1024)
def matcher(pattern: bytes, nocase: bool = False) -> Callable[[bytes], bool]:
    """A compiled test for ``pattern``: use it to match many strings (KEYS, SCAN MATCH)."""
    if not pattern:
        return _is_empty
    sources, last_width = _segments(pattern, nocase)
    if len(sources) <= 2:
        if len(sources) == 2 and not sources[0] and not sources[1]:
            return bool  # "*": anything but the empty string
        # at most one star: one regex, whose backtracking stays linear
        match = re.compile(b".*".join(sources) + rb"\Z", re.DOTALL).match
        return lambda string: match(string) is not None
    first, *middle, last = [re.compile(src) for src in sources]

    def match_segments(string: bytes) -> bool:
        m = first.match(string)
        if m is None or not string:
            return False
        pos = m.end()
        end = len(string) - last_width  # the last segment sits at the very end
        if end < pos:
            return False
        for seg in middle:  # leftmost placement of each middle segment is always best
            m = seg.search(string, pos, end)
            if m is None:
                return False
            pos = m.end()
        return last.fullmatch(string, end) is not None

    return match_segments


def _is_empty(string: bytes) -> bool:
    return not string


def stringmatch(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """True if ``string`` matches the glob ``pattern`` exactly as Redis would match it."""
    return matcher(pattern, nocase)(string)
