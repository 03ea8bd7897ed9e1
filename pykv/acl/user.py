"""An ACL user: flags, password hashes and selectors, with Redis 7.0's rule language."""
from __future__ import annotations

import hashlib

from pykv.acl import check
from pykv.acl.categories import ALL
from pykv.acl.selector import DENIED_CMD, OK, RuleError, Selector

_ALL_COUNT = len(ALL)

NO_SUCH_PASSWORD = "The password you are trying to remove from the user does not exist"
BAD_HASH = ("The password hash must be exactly 64 characters and contain only lowercase "
            "hexadecimal characters")
_HEX = frozenset(b"0123456789abcdef")


def password_hash(password: bytes) -> str:
    return hashlib.sha256(password).hexdigest()


def _valid_hash(h: bytes) -> str:
    if len(h) != 64 or not _HEX.issuperset(h):
        raise RuleError(BAD_HASH)
    return h.decode()


def merge_selector_args(args: list[bytes]) -> tuple[list[bytes] | None, int]:
    """Join ``(`` ... ``)`` spread over several arguments (Redis's ACLMergeSelectorArguments);
    (None, index of the opening argument) when a parenthesis is left open."""
    merged: list[bytes] = []
    selector: list[bytes] | None = None
    start = 0
    for i, arg in enumerate(args):
        if selector is not None:
            selector.append(arg)
            if arg.endswith(b")"):
                merged.append(b" ".join(selector))
                selector = None
        elif arg.startswith(b"(") and not arg.endswith(b")"):
            selector, start = [arg], i
        else:
            merged.append(arg)
    if selector is not None:
        return None, start
    return merged, 0


class User:
    """One user. ``selectors[0]`` is the root selector."""

    def __init__(self, name: bytes, allchannels: bool = False) -> None:
        self.name = name
        self.enabled = False
        self.nopass = False
        self.sanitize: str | None = None  # "sanitize-payload" / "skip-sanitize-payload"
        self.passwords: list[str] = []
        self.selectors: list[Selector] = [Selector(allchannels)]
        self.allchannels_default = allchannels

    def copy(self, name: bytes | None = None) -> User:
        u = User(self.name if name is None else name, self.allchannels_default)
        u.assign(self)
        return u

    def assign(self, other: User) -> None:
        """Take over ``other``'s rules (Redis's ACLCopyUser)."""
        self.enabled, self.nopass, self.sanitize = other.enabled, other.nopass, other.sanitize
        self.passwords = list(other.passwords)
        self.selectors = [s.copy() for s in other.selectors]

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    @property
    def unrestricted(self) -> bool:
        """One selector allowing everything: the dispatcher may skip the check."""
        r = self.root
        return r.future and r.allkeys and r.allchannels and len(r.allowed) == _ALL_COUNT

    # -- rules ------------------------------------------------------------------------
    def apply(self, op: bytes) -> None:
        """Apply one rule (Redis's ACLSetUser); raises RuleError."""
        low = op.lower()
        if low == b"on":
            self.enabled = True
        elif low == b"off":
            self.enabled = False
        elif low in (b"skip-sanitize-payload", b"sanitize-payload"):
            self.sanitize = low.decode()
        elif low == b"nopass":
            self.nopass = True
            self.passwords = []
        elif low == b"resetpass":
            self.nopass = False
            self.passwords = []
        elif op[:1] in (b">", b"#"):
            h = password_hash(op[1:]) if op[:1] == b">" else _valid_hash(op[1:])
            if h not in self.passwords:
                self.passwords.append(h)
            self.nopass = False
        elif op[:1] in (b"<", b"!"):
            h = password_hash(op[1:]) if op[:1] == b"<" else _valid_hash(op[1:])
            if h not in self.passwords:
                raise RuleError(NO_SUCH_PASSWORD)
            self.passwords.remove(h)
        elif low == b"reset":
            for rule in (b"resetpass", b"resetkeys", b"resetchannels"):
                self.apply(rule)
            if self.allchannels_default:
                self.apply(b"allchannels")
            for rule in (b"off", b"clearselectors", b"-@all"):
                self.apply(rule)
            self.sanitize = "sanitize-payload"
        elif low == b"clearselectors":
            del self.selectors[1:]
        elif op[:1] == b"(" and op[-1:] == b")":
            selector = Selector(self.allchannels_default)
            for rule in op[1:-1].split():
                selector.apply(rule)
            self.selectors.append(selector)
        else:
            self.root.apply(op)

    # -- authentication ---------------------------------------------------------------
    def password_ok(self, password: bytes) -> bool:
        if not self.enabled:
            return False
        if self.nopass:
            return True
        return password_hash(password) in self.passwords

    # -- description ------------------------------------------------------------------
    def flag_names(self) -> list[str]:
        flags = ["on" if self.enabled else "off"]
        if self.nopass:
            flags.append("nopass")
        if self.sanitize == "skip-sanitize-payload":
            flags.append("skip-sanitize-payload")
        elif self.sanitize == "sanitize-payload":
            flags.append("sanitize-payload")
        return flags

    def describe(self) -> str:
        """What ACL LIST shows after the name (Redis's ACLDescribeUser)."""
        parts = self.flag_names() + ["#" + h for h in self.passwords]
        parts.append(self.root.describe())
        parts.extend("(" + s.describe() + ")" for s in self.selectors[1:])
        return " ".join(parts)

    # -- checks -----------------------------------------------------------------------
    def check(self, cmd, argv: list, find_keys) -> tuple[int, int]:
        """Redis's ACLCheckAllUserCommandPerm: OK if one selector allows it all, else the
        most relevant denial (a command beats nothing, a key or channel beats a command,
        the latest argument wins among equals)."""
        if len(self.selectors) == 1:
            return self.root.check(cmd, argv, lambda: find_keys(cmd, argv))
        cache: list = []

        def keys():
            if not cache:
                cache.append(find_keys(cmd, argv) or ())
            return cache[0]

        worst, worst_idx = DENIED_CMD, 0
        for selector in self.selectors:
            code, idx = selector.check(cmd, argv, keys)
            if code == OK:
                return OK, 0
            if code > worst or (code == worst and idx > worst_idx):
                worst, worst_idx = code, idx
        return worst, worst_idx


    def may_run(self, cmd, argv: list) -> bool:
        """Whether ``argv`` is allowed, nothing logged (redis.acl_check_cmd)."""
        return self.check(cmd, argv, check.acl_keys)[0] == OK

    def deny(self, client, cmd, argv: list):
        """The dispatcher's entry: the ``-NOPERM`` error, or None (pykv.acl.check)."""
        return check.deny(self, client, cmd, argv)

    def deny_in_script(self, caller, cmd, argv: list, running: bytes):
        """The scripting engine's entry: the error for ``redis.call``, or None."""
        return check.deny_in_script(self, caller, cmd, argv, running)

    def deny_in_exec(self, client, cmd, argv: list, exec_cmd):
        """EXEC's entry for each queued command: its error, or None."""
        return check.deny_in_exec(self, client, cmd, argv, exec_cmd)
