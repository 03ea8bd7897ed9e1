"""Redis's glob-style matching (``stringmatchlen``) for KEYS, SCAN MATCH, PSUBSCRIBE, …

Supports ``*``, ``?``, ``[abc]``, ``[^abc]``, ``[a-z]`` and ``\\`` escapes with Redis's
exact edge cases (an unterminated ``[`` set ends at the pattern's end; a trailing ``\\``
matches a literal ``\\``). Patterns are compiled once to a regex and cached.
"""
from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1024)
def _compile(pattern: bytes, nocase: bool) -> re.Pattern[bytes]:
    out = bytearray()
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == 0x2A:  # *
            while i + 1 < n and pattern[i + 1] == 0x2A:
                i += 1
            out += b".*"
        elif ch == 0x3F:  # ?
            out += b"."
        elif ch == 0x5B:  # [
            i += 1
            negate = i < n and pattern[i] == 0x5E
            if negate:
                i += 1
            items: list[bytes] = []
            while i < n and pattern[i] != 0x5D:
                c = pattern[i]
                if c == 0x5C and i + 2 <= n - 1 + 1 and i + 1 < n:  # \x inside a set
                    i += 1
                    items.append(re.escape(bytes([pattern[i]])))
                elif i + 2 < n and pattern[i + 1] == 0x2D:  # range a-z
                    lo, hi = c, pattern[i + 2]
                    if lo > hi:
                        lo, hi = hi, lo
                    items.append(b"%s-%s" % (re.escape(bytes([lo])), re.escape(bytes([hi]))))
                    i += 2
                else:
                    items.append(re.escape(bytes([c])))
                i += 1
            # i is at ']' or past the end (unterminated set: Redis stops there)
            body = b"".join(items)
            if negate:
                out += b"[^" + body + b"]" if body else b"[\\s\\S]"
            else:
                out += b"[" + body + b"]" if body else b"(?!)"
        elif ch == 0x5C:  # backslash escapes the next byte
            if i + 1 < n:
                i += 1
            out += re.escape(bytes([pattern[i]]))
        else:
            out += re.escape(bytes([ch]))
        i += 1
    flags = re.DOTALL | (re.IGNORECASE if nocase else 0)
    return re.compile(bytes(out) + rb"\Z", flags)


def stringmatch(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """True if ``string`` matches the glob ``pattern`` as Redis would match it."""
    if pattern == b"*":
        return True
    return _compile(pattern, nocase).match(string) is not None
