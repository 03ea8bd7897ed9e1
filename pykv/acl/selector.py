"""One ACL selector: the commands, key patterns and channels it allows (Redis's aclSelector).

A user has a root selector and any number of ``(...)`` selectors; a command runs when one
of them allows it all. Commands are kept as the set of allowed fullnames (Redis's bitmap)
plus the "future commands" bit ``+@all`` sets; ``describe()`` rebuilds the rules from that
set the way Redis 7.0 does (the start, the best-fitting categories, then single commands).
"""
from __future__ import annotations

from pykv.acl.categories import ALL, CATEGORIES, MEMBERS, SUBCOMMANDS, lookup
from pykv.util.glob import stringmatch

READ, WRITE = 1, 2
RW = READ | WRITE

OK, DENIED_CMD, DENIED_KEY, DENIED_CHANNEL = 0, 1, 2, 4

_WRITE_KEY_FLAGS = frozenset({"insert", "delete", "update"})
# channel arguments: fullname -> (first index, only one?, pattern?)
_CHANNEL_ARGS = {
    "publish": (1, True, False), "spublish": (1, True, False),
    "subscribe": (1, False, False), "ssubscribe": (1, False, False),
    "psubscribe": (1, False, True),
}


class RuleError(Exception):
    """A rule Redis refuses; ``args[0]`` is the reason ACL SETUSER reports."""


SYNTAX = "Syntax error"
UNKNOWN = "Unknown command or category name in ACL"
KEYS_AFTER_ALL = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid "
                  "and does not have any effect. Try 'resetkeys' to start with an empty list "
                  "of patterns")
CHANNELS_AFTER_ALL = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not "
                      "valid and does not have any effect. Try 'resetchannels' to start with "
                      "an empty list of channels")
FIRSTARG_OF_SUB = "Allowing first-arg of a subcommand is not supported"


def _targets(fullname: str) -> tuple[str, ...]:
    """What allowing ``fullname`` sets: itself and, for a container, its subcommands."""
    return (fullname,) + SUBCOMMANDS.get(fullname, ())


_CATEGORY_TARGETS: dict[str, frozenset[str]] = {
    cat: frozenset(t for name in MEMBERS[cat] for t in _targets(name)) for cat in CATEGORIES
}
_ALL_SET = frozenset(ALL)
_TOP = [name for name in ALL if "|" not in name]


class Selector:
    """Allowed commands, key patterns (with read/write flags) and channel patterns."""

    __slots__ = ("allowed", "future", "firstargs", "allkeys", "patterns", "allchannels",
                 "channels")

    def __init__(self, allchannels: bool = False) -> None:
        self.allowed: set[str] = set()
        self.future = False  # the "future commands" bit: set by +@all only
        self.firstargs: dict[str, list[bytes]] = {}
        self.allkeys = False
        self.patterns: list[list] = []  # [pattern bytes, READ|WRITE flags]
        self.allchannels = allchannels
        self.channels: list[bytes] = []

    def copy(self) -> Selector:
        s = Selector(self.allchannels)
        s.allowed = set(self.allowed)
        s.future = self.future
        s.firstargs = {k: list(v) for k, v in self.firstargs.items()}
        s.allkeys = self.allkeys
        s.patterns = [list(p) for p in self.patterns]
        s.channels = list(self.channels)
        return s

    # -- rules ------------------------------------------------------------------------
    def apply(self, op: bytes) -> None:
        """Apply one rule (Redis's ACLSetSelector); raises RuleError."""
        low = op.lower()
        if low in (b"allkeys", b"~*"):
            self.allkeys = True
            self.patterns = []
        elif low == b"resetkeys":
            self.allkeys = False
            self.patterns = []
        elif low in (b"allchannels", b"&*"):
            self.allchannels = True
            self.channels = []
        elif low == b"resetchannels":
            self.allchannels = False
            self.channels = []
        elif low in (b"allcommands", b"+@all"):
            self.allowed = set(_ALL_SET)
            self.future = True
            self.firstargs = {}
        elif low in (b"nocommands", b"-@all"):
            self.allowed = set()
            self.future = False
            self.firstargs = {}
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.allchannels:
                raise RuleError(CHANNELS_AFTER_ALL)
            if op[1:] not in self.channels:
                self.channels.append(op[1:])
        elif op[:2] in (b"+@", b"-@"):
            cat = op[2:].lower().decode("utf-8", "replace")
            if cat not in _CATEGORY_TARGETS:
                raise RuleError(UNKNOWN)
            self._set(_CATEGORY_TARGETS[cat], op[:1] == b"+")
        elif op[:1] == b"+":
            self._allow(op[1:])
        elif op[:1] == b"-":
            name = lookup(op[1:].decode("utf-8", "replace"))
            if name is None:
                raise RuleError(UNKNOWN)
            self._change_perm(name, False)
        else:
            raise RuleError(SYNTAX)

    def _add_key_pattern(self, op: bytes) -> None:
        if op[:1] == b"%":
            flags, i = 0, 1
            while i < len(op) and op[i] != ord("~"):  # each of R and W at most once
                bit = {ord("R"): READ, ord("r"): READ, ord("W"): WRITE, ord("w"): WRITE}.get(op[i])
                if bit is None or flags & bit:
                    raise RuleError(SYNTAX)
                flags |= bit
                i += 1
            if not flags:
                raise RuleError(SYNTAX)
            pattern = op[i + 1:]  # no "~" at all: the empty pattern, as Redis
        else:
            flags, pattern = RW, op[1:]
        if self.allkeys:
            raise RuleError(KEYS_AFTER_ALL)
        if pattern == b"*" and flags == RW:
            self.allkeys = True
            self.patterns = []
            return
        for existing in self.patterns:
            if existing[0] == pattern:
                existing[1] |= flags
                return
        self.patterns.append([pattern, flags])

    def _allow(self, spec: bytes) -> None:
        text = spec.decode("utf-8", "replace")
        if "|" not in text:
            name = lookup(text)
            if name is None:
                raise RuleError(UNKNOWN)
            self._change_perm(name, True)
            return
        name = lookup(text)
        if name is not None:  # a real subcommand
            self._change_perm(name, True)
            return
        parent_text, _, sub = text.partition("|")
        parent = lookup(parent_text)
        if parent is None:
            raise RuleError(UNKNOWN)
        if SUBCOMMANDS[parent]:
            raise RuleError(FIRSTARG_OF_SUB if "|" in sub else UNKNOWN)
        if not sub or "|" in sub:
            raise RuleError(SYNTAX)
        arg = spec[spec.index(b"|") + 1:]
        args = self.firstargs.setdefault(parent, [])
        if arg not in args:
            args.append(arg)

    def _change_perm(self, name: str, allow: bool) -> None:
        """Redis's ACLChangeSelectorPerm: the command, its first-args, its subcommands."""
        self._set(_targets(name), allow)

    def _set(self, names, allow: bool) -> None:
        if allow:
            self.allowed.update(names)
        else:
            self.allowed.difference_update(names)
        if self.firstargs:  # Redis resets the first-args of every command it touches
            for name in names:
                self.firstargs.pop(name, None)

    # -- description ------------------------------------------------------------------
    def describe_commands(self) -> str:
        """The command rules as ACL LIST shows them (Redis 7.0's reconstruction)."""
        additive = not self.future
        rules = ["-@all" if additive else "+@all"]
        fake = set() if additive else set(_ALL_SET)
        temp = set(self.allowed)
        applied: set[str] = set()
        while True:  # greedy: the category with the fewest differences, then most alike
            best, min_diff, max_same = None, None, 0
            for cat in CATEGORIES:
                if cat in applied:
                    continue
                members = MEMBERS[cat]
                on = len(members & temp)
                off = len(members) - on
                diff, same = (off, on) if additive else (on, off)
                if same > diff and (min_diff is None or diff < min_diff
                                    or (diff == min_diff and same > max_same)):
                    best, min_diff, max_same = cat, diff, same
            if best is None:
                break
            targets = _CATEGORY_TARGETS[best]
            if additive:
                fake |= targets
                temp -= targets
            else:
                fake -= targets
                temp |= targets
            rules.append(("+@" if additive else "-@") + best)
            applied.add(best)
        allowed = self.allowed
        # Redis walks its command dict (an order that varies run to run); pykv uses the
        # table's order
        for name in _TOP:
            for full in (name,) + SUBCOMMANDS[name]:
                bit = full in allowed
                if bit != (full in fake):
                    rules.append(("+" if bit else "-") + full)
                    targets = _targets(full)
                    if bit:
                        fake.update(targets)
                    else:
                        fake.difference_update(targets)
            if name not in allowed:
                for arg in self.firstargs.get(name, ()):
                    rules.append("+" + name + "|" + arg.decode("utf-8", "surrogateescape"))
        return " ".join(rules)

    def describe_keys(self) -> str:
        if self.allkeys:
            return "~*"
        return " ".join(_pattern_text(p, f) for p, f in self.patterns)

    def describe_channels(self) -> str:
        if self.allchannels:
            return "&*"
        return " ".join("&" + c.decode("utf-8", "surrogateescape") for c in self.channels)

    def describe(self) -> str:
        """Keys, channels, commands: Redis's ACLDescribeSelector."""
        parts = []
        if self.allkeys:
            parts.append("~*")
        else:
            parts.extend(_pattern_text(p, f) for p, f in self.patterns)
        if self.allchannels:
            parts.append("&*")
        else:
            parts.append("resetchannels")
            parts.extend("&" + c.decode("utf-8", "surrogateescape") for c in self.channels)
        parts.append(self.describe_commands())
        return " ".join(parts)

    # -- checks -----------------------------------------------------------------------
    def check(self, cmd, argv: list, keys) -> tuple[int, int]:
        """(OK or the denial, the argument index at fault); ``keys()`` finds the keys."""
        name = cmd.fullname
        if name not in self.allowed and not cmd.no_auth:
            args = self.firstargs.get(name)
            if not args or len(argv) < 2:
                return DENIED_CMD, 0
            first = argv[1].lower()
            if not any(first == a.lower() for a in args):
                return DENIED_CMD, 0
        if not self.allkeys:
            for idx, flags in keys():
                need = READ if "access" in flags else 0
                if _WRITE_KEY_FLAGS.intersection(flags):
                    need |= WRITE
                if not self._key_ok(argv[idx], need):
                    return DENIED_KEY, idx
        if not self.allchannels and name in _CHANNEL_ARGS:
            start, single, is_pattern = _CHANNEL_ARGS[name]
            end = start + 1 if single else len(argv)
            for idx in range(start, min(end, len(argv))):
                if not self._channel_ok(argv[idx], is_pattern):
                    return DENIED_CHANNEL, idx
        return OK, 0

    def _key_ok(self, key: bytes, need: int) -> bool:
        for pattern, flags in self.patterns:
            if flags & need == need and stringmatch(pattern, key):
                return True
        return False

    def _channel_ok(self, channel: bytes, is_pattern: bool) -> bool:
        for pattern in self.channels:
            if (pattern == channel) if is_pattern else stringmatch(pattern, channel):
                return True
        return False


def _pattern_text(pattern: bytes, flags: int) -> str:
    prefix = "~" if flags == RW else ("%R~" if flags == READ else "%W~")
    return prefix + pattern.decode("utf-8", "surrogateescape")
