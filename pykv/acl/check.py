"""The permission check a restricted user's commands go through, and its replies."""
from __future__ import annotations

import time

from pykv import errors
from pykv.acl.log import Entry
from pykv.acl.selector import DENIED_CHANNEL, DENIED_CMD, DENIED_KEY, OK
from pykv.protocol import ErrorReply
from pykv.server.client_info import client_info_line
from pykv.server.keyspecs import find_keys

_KEYLESS: dict[str, bool] = {}  # fullname -> no keys to check (none, or only not-key specs)
# fullname -> whether its keys' places and flags follow from the argument count alone
_BY_ARGC: dict[str, bool] = {}
_POSITIONS: dict[tuple[str, int], list] = {}  # (fullname, argc) -> find_keys' answer


def _fixed_by_argc(cmd) -> bool:
    return not cmd.movablekeys and cmd.get_keys is None and all(
        s["begin_search"]["type"] == "index" and s["find_keys"]["type"] == "range"
        and "variable_flags" not in s.get("flags", ()) for s in cmd.key_specs)


def acl_keys(cmd, argv: list) -> list:
    """The command's keys with their flags, not counting not-key specs (shard channels)."""
    name = cmd.fullname
    keyless = _KEYLESS.get(name)
    if keyless is None:
        specs = cmd.key_specs
        keyless = _KEYLESS[name] = (
            (not specs and cmd.get_keys is None)
            or bool(specs) and all("not_key" in s.get("flags", ()) for s in specs))
        _BY_ARGC[name] = _fixed_by_argc(cmd)
    if keyless:
        return []
    if not _BY_ARGC[name]:
        return find_keys(cmd, argv) or []
    found = _POSITIONS.get((name, len(argv)))
    if found is None:
        found = find_keys(cmd, argv) or []
        if len(_POSITIONS) < 4096:
            _POSITIONS[(name, len(argv))] = found
    return found


_REASONS = {DENIED_CMD: "command", DENIED_KEY: "key", DENIED_CHANNEL: "channel"}


def deny(user, client, cmd, argv: list) -> ErrorReply | None:
    """The ``-NOPERM`` error for ``argv`` as ``user`` (logged in ACL LOG), or None when it
    may run."""
    code, idx = user.check(cmd, argv, acl_keys)
    if code == OK:
        return None
    log_denial(client, _REASONS[code], cmd.fullname.encode() if code == DENIED_CMD
               else argv[idx], user.name, cmd)
    if code == DENIED_CMD:
        return errors.noperm_command(cmd.fullname)
    return errors.NOPERM_KEY if code == DENIED_KEY else errors.NOPERM_CHANNEL


def deny_in_script(user, caller, cmd, argv: list, running: bytes) -> bytes | None:
    """The error a script's ``redis.call`` gets when ``caller``'s user may not run it
    (logged with context ``lua``; ``running`` is EVAL's or FCALL's name), or None."""
    code, idx = user.check(cmd, argv, acl_keys)
    if code == OK:
        return None
    reason = _REASONS[code]
    log_denial(caller, reason, cmd.fullname.encode() if code == DENIED_CMD else argv[idx],
               user.name, caller.server.commands.get(running), context="lua")
    return errors.ACL_SCRIPT_DENIED[reason]


def deny_in_exec(user, client, cmd, argv: list, exec_cmd) -> ErrorReply | None:
    """The error EXEC answers for a queued command the user may no longer run (logged
    with context ``multi``), or None."""
    code, idx = user.check(cmd, argv, acl_keys)
    if code == OK:
        return None
    reason = _REASONS[code]
    log_denial(client, reason, cmd.fullname.encode() if code == DENIED_CMD else argv[idx],
               user.name, exec_cmd, context="multi")
    return errors.ACL_EXEC_DENIED[reason]


def log_denial(client, reason: str, obj: bytes, username: bytes, cmd=None,
               context: str | None = None) -> None:
    """An ACL LOG entry for ``client`` (pykv.acl.log)."""
    acl = client.server.acl
    if acl is None:
        return
    if context is None:
        context = "multi" if client.multi is not None else "toplevel"
    acl.log.add(Entry(reason, context, obj, username, int(time.time() * 1000),
                      client_info_line(client, cmd)))


def dryrun(user, cmd, argv: list) -> bytes | None:
    """ACL DRYRUN's text for a denial, or None when allowed."""
    code, idx = user.check(cmd, argv, acl_keys)
    if code == OK:
        return None
    if code == DENIED_CMD:
        return errors.acl_dryrun_denied("command", cmd.fullname.encode())
    return errors.acl_dryrun_denied("key" if code == DENIED_KEY else "channel", argv[idx])


__all__ = ["acl_keys", "deny", "deny_in_exec", "deny_in_script", "dryrun", "log_denial"]
