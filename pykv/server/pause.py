"""CLIENT PAUSE rules: which commands a pause holds back, as Redis 7.0 decides.

Under ``PAUSE ALL`` every command of a normal client waits. Under ``PAUSE WRITE`` the
commands Redis calls "may replicate" wait: writes, the ``may_replicate`` commands (PUBLISH,
SPUBLISH, PFCOUNT, EVAL, EVALSHA, FCALL: ``COMMAND`` does not show that flag, so the set is
kept here) and an EXEC whose queue holds one. Scripts are judged by their declared flags,
as Redis's ``getCommandFlags`` does: EVAL/EVALSHA of a script whose shebang says
``no-writes``, or FCALL of a ``no-writes`` function, pass; EVAL_RO/FCALL_RO always pass.
The check runs before MULTI queueing, so a write sent inside MULTI is held back rather
than queued.

While any pause lasts, keys are not expired, lazily or actively (``Database.expire_paused``):
they read as missing but stay, so nothing is deleted behind the pause's back.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from pykv.protocol import ErrorReply

if TYPE_CHECKING:
    from pykv.commands.registry import Command
    from pykv.server.client import Client
    from pykv.server.server import Server

# Redis 7.0's CMD_MAY_REPLICATE commands (src/commands/*.json)
MAY_REPLICATE = frozenset({"publish", "spublish", "pfcount", "eval", "evalsha", "fcall"})


def should_pause(server: Server, client: Client, cmd: Command, argv: list[bytes],
                 write_only: bool = False) -> bool:
    """Whether the active pause (or, ``write_only``, a WRITE pause) holds this command back
    (replicas are never paused)."""
    if getattr(client, "is_replica", False) or getattr(client, "is_master", False):
        return False
    if not (write_only or server.pause_write_only):
        return True
    if cmd.fullname == "exec":
        return bool(client.multi) and any(may_replicate(server, q, qargv)
                                          for q, qargv in client.multi)
    return may_replicate(server, cmd, argv)


def may_replicate(server: Server, cmd: Any, argv: list[bytes]) -> bool:
    """Redis's ``is_may_replicate_command`` for one command line."""
    if cmd.is_write:
        return True
    if cmd.fullname not in MAY_REPLICATE:
        return False
    if cmd.fullname in ("eval", "evalsha", "fcall"):
        return not _declares_no_writes(server, cmd.fullname, argv)
    return True


def _declares_no_writes(server: Server, name: str, argv: list[bytes]) -> bool:
    """Whether the script or function ``argv`` runs is flagged ``no-writes`` (unknown
    scripts and functions, and scripts without a shebang, may write)."""
    if len(argv) < 2:
        return False
    if name == "fcall":
        store = getattr(server, "functions", None)
        fn = store.live.functions.get(argv[1].lower()) if store is not None else None
        return fn is not None and fn.no_writes
    engine = getattr(server, "scripting", None)
    scripts = engine.scripts if engine is not None else {}
    if name == "evalsha":
        entry = scripts.get(argv[1].lower()) if len(argv[1]) == 40 else None
        return entry is not None and entry[2]
    entry = scripts.get(hashlib.sha1(argv[1]).hexdigest().encode())
    if entry is not None:
        return entry[2]
    parse_shebang = server.parse_shebang  # the scripting family's (pykv.assemble)
    if parse_shebang is None:
        return False
    try:
        shebang = parse_shebang(argv[1])
    except ErrorReply:
        return False
    return shebang is not None and b"no-writes" in shebang[0]


def set_expiry_paused(server: Server, paused: bool) -> None:
    """Stop (or resume) deleting expired keys in every database."""
    paused = paused or getattr(server, "master_link", None) is not None  # replica rule
    paused = paused or getattr(server, "pause_failover", False)
    for db in server.dbs:
        db.expire_paused = paused
