"""The server's users (Redis's ``Users`` rax and ``DefaultUser``) and authentication."""
from __future__ import annotations

import os
from collections.abc import Callable

from pykv.acl.log import AclLog
from pykv.acl.user import User

ROOT_RULES = (b"on", b"nopass", b"~*", b"&*", b"+@all")


class Acl:
    """Users by name; ``default`` always exists and follows ``requirepass``."""

    def __init__(self, pubsub_default: str = "resetchannels",
                 log_max_len: Callable[[], int] = lambda: 128) -> None:
        self.users: dict[bytes, User] = {}
        self.log = AclLog(log_max_len)
        self.pubsub_default = pubsub_default
        self.default = self.create(b"default")
        for rule in ROOT_RULES:
            self.default.apply(rule)

    def new_user(self, name: bytes) -> User:
        """A user not yet registered, with a new user's rules (off, -@all)."""
        return User(name, allchannels=self.pubsub_default == "allchannels")

    def create(self, name: bytes) -> User:
        user = self.users[name] = self.new_user(name)
        return user

    def get(self, name: bytes) -> User | None:
        return self.users.get(name)

    def get_user(self, name: str) -> User | None:
        """By name as text (CLIENT KILL USER's lookup)."""
        return self.users.get(name.encode("utf-8", "surrogateescape"))

    def authenticate(self, name: bytes, password: bytes) -> User | None:
        """The user if ``password`` opens it (it exists and is on), else None."""
        user = self.users.get(name)
        if user is None or not user.password_ok(password):
            return None
        return user

    def set_requirepass(self, password: str) -> None:
        """Redis's ACLUpdateDefaultUserPassword."""
        user = self.default
        user.apply(b"resetpass")
        if password:
            user.apply(b">" + password.encode("utf-8", "surrogateescape"))
        else:
            user.apply(b"nopass")

    def auth_required(self) -> bool:
        """Whether a new connection must authenticate (the default user needs a password
        or is off)."""
        return not (self.default.nopass and self.default.enabled)

    def sorted_users(self) -> list[User]:
        return [self.users[name] for name in sorted(self.users)]


def genpass(bits: int) -> bytes:
    """``bits`` random bits as lower-case hex, rounded up to whole hex digits."""
    chars = (bits + 3) // 4
    return os.urandom((chars + 1) // 2).hex()[:chars].encode()
