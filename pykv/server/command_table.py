"""The command table: Redis's metadata for every command, joined with pykv's handlers.

Metadata (arity, flags, key positions, key specs, ACL categories, docs) is data, loaded from
``command_table.json`` beside this module (generated from Redis 7.0 by
``tools/gen_command_table.py``). The command families fill the table with their handlers
(``pykv.commands.registry.command``); only commands with a handler exist for clients:
``COMMAND`` lists exactly those, and any other name answers ``ERR unknown command``. The
table lives in the server layer because the dispatcher, key-spec lookups (tracking, and
later ACL and cluster checks) and ``rename-command`` read it; the families only write to it.

A handler is ``handler(client, argv) -> reply`` where ``argv`` is the list of ``bytes``
arguments (``argv[0]`` is the command name as sent) and the reply is a value understood by
``pykv.protocol.write_reply``. Raising ``ErrorReply`` is the same as returning it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykv.server._core import MULTI_IMMEDIATE, CommandCore

Handler = Callable[[Any, list], Any]

_TABLE_PATH = Path(__file__).with_name("command_table.json")
METADATA: dict[str, dict] = json.loads(_TABLE_PATH.read_text())


class Command(CommandCore):
    """One command or subcommand: metadata, handler and its ``INFO commandstats`` counters.

    The fields the dispatcher reads for every call (handler, arity, the flags it checks,
    the counters) live in ``CommandCore`` as C fields; the rest is plain Python.
    """

    __slots__ = (
        "name", "flags", "first_key", "last_key", "step", "acl_categories", "tips",
        "key_specs", "docs", "parent", "group", "is_readonly",
        "noscript", "loading", "stale", "fast", "may_replicate", "movablekeys", "get_keys",
    )

    def __init__(self, fullname: str, meta: dict, handler: Handler | None,
                 parent: Command | None = None) -> None:
        self.fullname = fullname
        self.name = fullname.split("|")[-1]
        self.handler = handler
        self.arity: int = meta["arity"]
        self.flags: frozenset[str] = frozenset(meta.get("flags", ()))
        self.first_key: int = meta.get("first_key", 0)
        self.last_key: int = meta.get("last_key", 0)
        self.step: int = meta.get("step", 0)
        self.acl_categories: list[str] = list(meta.get("acl_categories", ()))
        self.tips: list[str] = list(meta.get("tips", ()))
        self.key_specs: list[dict] = list(meta.get("key_specs", ()))
        self.docs: dict = dict(meta.get("docs", {}))
        self.group: str = self.docs.get("group", "generic")
        self.subcommands: dict[bytes, Command] = {}
        self.parent = parent
        self.calls = self.usec = self.rejected_calls = self.failed_calls = 0
        f = self.flags
        self.is_write = "write" in f
        self.is_readonly = "readonly" in f
        self.denyoom = "denyoom" in f
        self.noscript = "noscript" in f
        self.loading = "loading" in f
        self.stale = "stale" in f
        self.no_auth = "no_auth" in f
        self.allow_busy = "allow_busy" in f
        self.pubsub_ok = fullname in _PUBSUB_CONTEXT_OK
        self.no_multi = "no_multi" in f
        self.skip_monitor = "skip_monitor" in f or "admin" in f  # Redis hides admin commands
        self.skip_slowlog = "skip_slowlog" in f
        self.fast = "fast" in f
        self.may_replicate = "may_replicate" in f
        self.movablekeys = "movablekeys" in f
        # commands whose effects are logged one by one (script calls, EXEC's commands)
        # rather than the command itself
        self.no_propagate = fullname in _PROPAGATE_EFFECTS_ONLY
        self.multi_immediate = fullname in MULTI_IMMEDIATE
        self.loading_ok = "loading" in f
        # Redis's CMD_PROTECTED: the config option that must allow this client to run it
        self.protected_by = PROTECTED.get(fullname)
        # for movable-key commands a family may install a function argv -> key indexes
        self.get_keys: Callable[[list], list[int]] | None = None

    def __repr__(self) -> str:
        return f"<Command {self.fullname}>"

    def all_commands(self):
        yield self
        yield from self.subcommands.values()


# Commands a RESP2 client in subscribed mode may still send.
_PUBSUB_CONTEXT_OK = frozenset({
    "ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe",
    "punsubscribe", "quit", "reset",
})


# Redis's CMD_PROTECTED commands (not in COMMAND INFO's flags) and the option allowing each
PROTECTED = {
    "debug": "enable_debug_command",
    "module|load": "enable_module_command",
    "module|loadex": "enable_module_command",
    "module|unload": "enable_module_command",
}


_PROPAGATE_EFFECTS_ONLY = frozenset({
    "exec", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
})


class CommandTable:
    """Name (lower-case bytes) -> Command, for top-level commands."""

    def __init__(self) -> None:
        self.commands: dict[bytes, Command] = {}

    def get(self, name: bytes) -> Command | None:
        return self.commands.get(name)

    def __iter__(self):
        return iter(self.commands.values())

    def __len__(self) -> int:
        return len(self.commands)

    def lookup_path(self, fullname: str) -> Command | None:
        parent, _, sub = fullname.lower().partition("|")
        cmd = self.commands.get(parent.encode())
        if cmd is None or not sub:
            return cmd
        return cmd.subcommands.get(sub.encode())

    def register(self, fullname: str, handler: Handler, meta: dict | None = None) -> Command:
        fullname = fullname.lower()
        parent_name, _, sub_name = fullname.partition("|")
        parent_meta = METADATA.get(parent_name)
        if not sub_name:
            meta = meta or parent_meta
            if meta is None:
                raise KeyError(f"no metadata for command {fullname!r}")
            existing = self.commands.get(fullname.encode())
            cmd = Command(fullname, meta, handler)
            if existing is not None:
                cmd.subcommands = existing.subcommands
                for sub in cmd.subcommands.values():
                    sub.parent = cmd
            self.commands[fullname.encode()] = cmd
            return cmd
        parent = self.commands.get(parent_name.encode())
        if parent is None:
            if parent_meta is None:
                raise KeyError(f"no metadata for container {parent_name!r}")
            # a container's own handler is never called: the dispatcher routes to subcommands
            parent = Command(parent_name, parent_meta, None)
            self.commands[parent_name.encode()] = parent
        if meta is None:
            if parent_meta is None or fullname not in parent_meta.get("subcommands", {}):
                raise KeyError(f"no metadata for subcommand {fullname!r}")
            meta = parent_meta["subcommands"][fullname]
        cmd = Command(fullname, meta, handler, parent)
        parent.subcommands[sub_name.encode()] = cmd
        return cmd


TABLE = CommandTable()
