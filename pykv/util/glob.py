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

A pattern is compiled once (cached) into segments split at ``*``; each segment is a
fixed-length regex whose character classes were computed by evaluating Redis's rules for
all 256 bytes. Segments are then placed greedily left to right, which is linear in the
string (Redis guards its recursive matcher against exponential patterns the same way), so
a hostile ``a*a*a*…b`` pattern cannot hang the server.
"""
from __future__ import annotations

import re
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


@lru_cache(maxsize=1024)
def _compile(pattern: bytes, nocase: bool) -> tuple[list[re.Pattern[bytes]], int]:
    """The pattern's segments between stars (each a fixed-length regex) and the last's width."""
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
    return [re.compile(s) for s in segments], width


def stringmatch(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """True if ``string`` matches the glob ``pattern`` exactly as Redis would match it."""
    if not string:
        return not pattern
    if pattern == b"*":
        return True
    segments, last_width = _compile(pattern, nocase)
    first = segments[0]
    if len(segments) == 1:
        return first.fullmatch(string) is not None
    m = first.match(string)
    if m is None:
        return False
    pos = m.end()
    # the last segment has a fixed width: it must sit at the very end
    end = len(string) - last_width
    if end < pos:
        return False
    for seg in segments[1:-1]:
        m = seg.search(string, pos, end)
        if m is None:
            return False
        pos = m.end()
    return segments[-1].fullmatch(string, end) is not None


def match_all(pattern: bytes) -> bool:
    """True for the pattern ``*``, which KEYS and SCAN treat as "no filter" (empty keys too)."""
    return pattern == b"*"
