"""The permission check a restricted user's commands go through, and its replies."""
from __future__ import annotations

from pykv import errors
from pykv.acl.selector import DENIED_CHANNEL, DENIED_CMD, DENIED_KEY, OK
from pykv.protocol import ErrorReply
from pykv.server.keyspecs import find_keys


def acl_keys(cmd, argv: list) -> list:
    """The command's keys with their flags, not counting not-key specs (shard channels)."""
    specs = cmd.key_specs
    if specs and all("not_key" in s.get("flags", ()) for s in specs):
        return []
    if not specs and cmd.get_keys is None:
        return []
    return find_keys(cmd, argv) or []


def deny(user, cmd, argv: list) -> ErrorReply | None:
    """The ``-NOPERM`` error for ``argv`` as ``user``, or None when it may run."""
    code, _ = user.check(cmd, argv, acl_keys)
    if code == OK:
        return None
    if code == DENIED_CMD:
        return errors.noperm_command(cmd.fullname)
    return errors.NOPERM_KEY if code == DENIED_KEY else errors.NOPERM_CHANNEL


def dryrun(user, cmd, argv: list) -> bytes | None:
    """ACL DRYRUN's text for a denial, or None when allowed."""
    code, idx = user.check(cmd, argv, acl_keys)
    if code == OK:
        return None
    if code == DENIED_CMD:
        return errors.acl_dryrun_denied("command", cmd.fullname.encode())
    return errors.acl_dryrun_denied("key" if code == DENIED_KEY else "channel", argv[idx])


__all__ = ["DENIED_CHANNEL", "acl_keys", "deny", "dryrun"]
