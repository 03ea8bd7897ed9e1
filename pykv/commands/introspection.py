"""COMMAND and its subcommands: the command table as clients see it.

Everything comes from the registry (``pykv.commands.registry``): only commands that have a
handler exist, and containers show only their registered subcommands, in Redis's order.
The prose of COMMAND DOCS and the key-spec notes of COMMAND INFO come from
``summaries.py`` (pykv's own words). GETKEYS finds keys the way Redis's key specs say:
a begin-search step (an index, or a keyword searched from a position) then a find-keys step
(a range, or a count read from the arguments); the movable-key commands whose keys the
specs cannot describe (SORT, MIGRATE) have their own finders, and a family may install
``Command.get_keys`` for anything else.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pykv import errors
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import METADATA, Command, command
from pykv.commands.summaries import HISTORY, KEY_SPEC_NOTES, SUMMARIES
from pykv.protocol import ErrorReply, RespSet, SimpleString
from pykv.server.keyspecs import Found, find_keys, has_key_finder
from pykv.util.glob import stringmatch

HELP = [
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Details about every command of this server.",
    "COUNT",
    "    How many commands this server has.",
    "LIST",
    "    The names of all the commands of this server.",
    "INFO [<command-name> ...]",
    "    Details about the named commands.",
    "    With no name at all, the details of every",
    "    command are returned.",
    "DOCS [<command-name> ...]",
    "    Documentation of the named commands.",
    "    With no name at all, the documentation of every",
    "    command is returned.",
    "GETKEYS <full-command>",
    "    The key names found in a whole command line.",
    "GETKEYSANDFLAGS <full-command>",
    "    The key names found in a whole command line, with their access flags.",
    "HELP",
    "    Print this help.",
]

INVALID_COMMAND = ErrorReply(b"ERR Invalid command specified")
NO_KEY_ARGUMENTS = ErrorReply(b"ERR The command has no key arguments")
INVALID_ARG_COUNT = ErrorReply(b"ERR Invalid number of arguments specified for command")
INVALID_ARGUMENTS = ErrorReply(b"ERR Invalid arguments specified for command")


# -- the table ------------------------------------------------------------------------------
def subcommands_in_order(cmd: Command) -> list[Command]:
    """Registered subcommands in Redis's order (extras pykv accepts come last)."""
    meta = METADATA.get(cmd.fullname, {}).get("subcommands", {})
    order = {name: i for i, name in enumerate(meta)}
    return sorted(cmd.subcommands.values(), key=lambda s: order.get(s.fullname, len(order)))


def all_commands(table: Iterable[Command]) -> Iterable[Command]:
    for cmd in table:
        if cmd.handler is not None or cmd.subcommands:
            yield cmd


def _lookup(table: Any, name: bytes) -> Command | None:
    cmd = table.get(name.lower())
    if cmd is None or (cmd.handler is None and not cmd.subcommands):
        return None
    return cmd


def _statuses(items: Iterable[str]) -> RespSet:
    return RespSet([SimpleString(i.encode()) for i in items])


def _key_spec(cmd: Command, index: int, spec: dict) -> dict:
    out: dict = {}
    note = KEY_SPEC_NOTES.get((cmd.fullname, index))
    if note is not None:
        out[b"notes"] = note.encode()
    out[b"flags"] = _statuses(spec.get("flags", ()))
    for step in ("begin_search", "find_keys"):
        part = spec.get(step, {})
        out[step.encode()] = {
            b"type": part.get("type", "unknown").encode(),
            b"spec": {k.encode(): (v.encode() if isinstance(v, str) else v)
                      for k, v in part.get("spec", {}).items()},
        }
    return out


def command_info(cmd: Command) -> list:
    return [
        cmd.fullname.encode(),
        cmd.arity,
        _statuses(_ordered_flags(cmd)),
        cmd.first_key,
        cmd.last_key,
        cmd.step,
        _statuses(cmd.acl_categories),
        RespSet([t.encode() for t in cmd.tips]),
        RespSet([_key_spec(cmd, i, s) for i, s in enumerate(cmd.key_specs)]),
        # an array when there are subcommands, an empty set otherwise (as Redis)
        [command_info(sub) for sub in subs] if (subs := subcommands_in_order(cmd))
        else RespSet(),
    ]


def _ordered_flags(cmd: Command) -> list[str]:
    meta = _meta(cmd)
    return list(meta.get("flags", cmd.flags)) if meta is not None else sorted(cmd.flags)


def _meta(cmd: Command) -> dict | None:
    if cmd.parent is None:
        return METADATA.get(cmd.fullname)
    parent = METADATA.get(cmd.parent.fullname, {})
    return parent.get("subcommands", {}).get(cmd.fullname)


def _argument(arg: dict) -> dict:
    out: dict = {}
    for key, value in arg.items():
        if key == "flags":
            out[b"flags"] = _statuses(value)
        elif key == "arguments":
            out[b"arguments"] = [_argument(a) for a in value]
        elif isinstance(value, str):
            out[key.encode()] = value.encode()
        else:
            out[key.encode()] = value
    return out


def command_docs(cmd: Command) -> dict:
    docs = cmd.docs
    summary, complexity = SUMMARIES.get(cmd.fullname, ("", ""))
    out: dict = {b"summary": summary.encode()}
    if "since" in docs:
        out[b"since"] = docs["since"].encode()
    out[b"group"] = docs.get("group", cmd.group).encode()
    if complexity != "-":
        out[b"complexity"] = complexity.encode()
    if "module" in docs:
        out[b"module"] = docs["module"].encode()
    if docs.get("doc_flags"):
        out[b"doc_flags"] = _statuses(docs["doc_flags"])
    for key in ("deprecated_since", "replaced_by"):
        if key in docs:
            out[key.encode()] = docs[key].encode()
    history = HISTORY.get(cmd.fullname)
    if history:
        out[b"history"] = RespSet([[v.encode(), text.encode()] for v, text in history])
    if docs.get("arguments"):
        out[b"arguments"] = [_argument(a) for a in docs["arguments"]]
    subs = subcommands_in_order(cmd)
    if subs:
        out[b"subcommands"] = {s.fullname.encode(): command_docs(s) for s in subs}
    return out


# -- COMMAND and subcommands ----------------------------------------------------------------------
@command("command")
def command_(c, argv):
    if len(argv) > 1:  # the dispatcher routes known subcommands; this is the bare form
        return errors.unknown_subcommand(argv[1], argv[0])
    return [command_info(cmd) for cmd in all_commands(c.server.commands)]


@command("command|help")
def command_help(c, argv):
    return help_reply(HELP)


@command("command|count")
def command_count(c, argv):
    return sum(1 for _ in all_commands(c.server.commands))


@command("command|info")
def command_info_cmd(c, argv):
    table = c.server.commands
    if len(argv) == 2:
        return [command_info(cmd) for cmd in all_commands(table)]
    out = []
    for name in argv[2:]:
        cmd = lookup_full(table, name)
        out.append(command_info(cmd) if cmd is not None else None)
    return out


def lookup_full(table: Any, name: bytes) -> Command | None:
    """``get`` or ``config|get`` (COMMAND INFO/DOCS and LATENCY HISTOGRAM accept
    container|sub names), as Redis's lookup by full name: None when unknown."""
    parent, sep, sub = name.lower().partition(b"|")
    cmd = _lookup(table, parent)
    if cmd is None or not sep:
        return cmd
    return cmd.subcommands.get(sub)


@command("command|docs")
def command_docs_cmd(c, argv):
    table = c.server.commands
    if len(argv) == 2:
        return {cmd.fullname.encode(): command_docs(cmd) for cmd in all_commands(table)}
    out = {}
    for name in argv[2:]:
        cmd = lookup_full(table, name)
        if cmd is not None:
            out[cmd.fullname.encode()] = command_docs(cmd)
    return out


@command("command|list")
def command_list(c, argv):
    table = c.server.commands
    names: list[Command] = []
    for cmd in all_commands(table):
        names.append(cmd)
        names.extend(subcommands_in_order(cmd))
    if len(argv) == 2:
        return [cmd.fullname.encode() for cmd in names]
    if len(argv) != 5 or argv[2].lower() != b"filterby":
        return errors.SYNTAX
    kind, value = argv[3].lower(), argv[4]
    if kind == b"module":
        return []  # pykv has no modules
    if kind == b"aclcat":
        cat = "@" + value.decode("latin-1").lower()
        return [cmd.fullname.encode() for cmd in names if cat in cmd.acl_categories]
    if kind == b"pattern":
        return [cmd.fullname.encode() for cmd in names
                if stringmatch(value, cmd.fullname.encode(), nocase=True)]
    return errors.SYNTAX


@command("command|getkeys")
def command_getkeys(c, argv):
    found = _getkeys(c, argv)
    if isinstance(found, ErrorReply):
        return found
    args = argv[2:]
    return [args[i] for i, _ in found]


@command("command|getkeysandflags")
def command_getkeysandflags(c, argv):
    found = _getkeys(c, argv)
    if isinstance(found, ErrorReply):
        return found
    args = argv[2:]
    return [[args[i], _statuses(flags)] for i, flags in found]


def _getkeys(c, argv: list[bytes]) -> Found | ErrorReply:
    args = argv[2:]
    cmd = _lookup(c.server.commands, args[0])
    if cmd is not None and cmd.subcommands and len(args) >= 2:
        cmd = cmd.subcommands.get(args[1].lower())
    if cmd is None:
        return INVALID_COMMAND
    if not has_key_finder(cmd):
        return NO_KEY_ARGUMENTS
    if (cmd.arity > 0 and cmd.arity != len(args)) or len(args) < -cmd.arity:
        return INVALID_ARG_COUNT
    found = find_keys(cmd, args)
    if not found:
        return [] if "no_mandatory_keys" in cmd.flags else INVALID_ARGUMENTS
    return found
