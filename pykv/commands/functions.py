"""FUNCTION * and FCALL / FCALL_RO: the commands over Redis 7 function libraries.

Argument parsing and replies live here; libraries themselves (metadata, loading, the
registry, DUMP payloads) are ``pykv.scripting.functions``, and running a function is the
function engine's ``run`` (the same BUSY handling and FUNCTION KILL as EVAL, in a Lua state
of its own). FUNCTION KILL stays with the scripting commands (``pykv.commands.scripting``).
"""
from __future__ import annotations

import time
from typing import Any

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command
from pykv.commands.script_cluster import cluster_refusal, script_done
from pykv.protocol import OK, ErrorReply, RespSet, SimpleString
from pykv.scripting.engine import function_engine_of, new_context
from pykv.scripting.functions import FunctionError, Library, get_store
from pykv.storage.rdb.objects import verify_payload
from pykv.util.glob import stringmatch

FUNCTION_NOT_FOUND = ErrorReply(b"ERR Function not found")
BAD_NUMKEYS = ErrorReply(b"ERR Bad number of keys provided")
TOO_MANY_KEYS = ErrorReply(b"ERR Number of keys can't be greater than number of args")
NEGATIVE_KEYS = ErrorReply(b"ERR Number of keys can't be negative")
WRITE_FLAG_WITH_RO = ErrorReply(
    b"ERR Can not execute a script with write flag using *_ro command.")
LIBRARY_NOT_FOUND = ErrorReply(b"ERR Library not found")
BAD_PAYLOAD = ErrorReply(b"ERR DUMP payload version or checksum are wrong")
BAD_RESTORE_POLICY = ErrorReply(
    b"ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
BAD_FLUSH_MODE = ErrorReply(b"ERR FUNCTION FLUSH only supports SYNC|ASYNC option")

HELP = [
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Load a library (its code starts with '#!lua name=<library>').",
    "    REPLACE lets it take the place of a library with the same name.",
    "DELETE <LIBRARY NAME>",
    "    Remove a library and its functions.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Describe the libraries (those whose name matches PATTERN), their functions",
    "    and, with WITHCODE, their source code.",
    "FLUSH [ASYNC|SYNC]",
    "    Remove every library.",
    "DUMP",
    "    A serialized payload of all libraries, for FUNCTION RESTORE.",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Load the libraries of a FUNCTION DUMP payload. APPEND (the default) fails on",
    "    a library name already in use, REPLACE replaces such libraries, FLUSH first",
    "    removes every existing library.",
    "STATS",
    "    The running function (if any) and how many libraries and functions exist.",
    "KILL",
    "    Stop the running function if it has not written yet.",
    "HELP",
    "    Print this help.",
]


def _error(exc: FunctionError) -> ErrorReply:
    return ErrorReply(b"ERR " + exc.args[0].encode("utf-8", "surrogateescape"))


# -- FCALL -----------------------------------------------------------------------------------
def _fcall(c, argv: list[bytes], read_only_cmd: bool) -> Any:
    server = c.server
    if server.monitors:  # before the function's commands, as Redis (table: skip_monitor)
        server.feed_monitors(c, argv)
    engine = function_engine_of(server)
    functions = engine.function_table  # (by lower-cased name: most calls spell it so)
    if functions is None:  # (a C field, kept current by the store: no attribute lookups)
        functions = engine.function_table = get_store(server).live.functions
    fn = functions.get(argv[1])
    if fn is None:
        fn = functions.get(argv[1].lower())
        if fn is None:
            return FUNCTION_NOT_FOUND
    no_writes = fn.no_writes
    if (server.replica_read_only or server.replica_deny_stale) and not c.is_master:
        # a replica, as Redis's processCommand judges FCALL by the function's flags
        if server.replica_read_only and not no_writes:
            return errors.READONLY
        if server.replica_deny_stale and "allow-stale" not in fn.flags:
            return errors.MASTERDOWN
    raw = argv[2]
    if len(raw) == 1 and 48 <= raw[0] <= 57:
        numkeys = raw[0] - 48  # the usual single digit: no call
    else:
        value = to_int(raw)
        if value is None:
            return BAD_NUMKEYS
        numkeys = value
    if numkeys > len(argv) - 3:
        return TOO_MANY_KEYS
    if numkeys < 0:
        return NEGATIVE_KEYS
    # (argv[0] lower-cased: the command is FCALL or FCALL_RO)
    ctx = new_context(c, fn.name, no_writes, True, b"fcall_ro" if read_only_cmd else b"fcall")
    clustered = server.cluster is not None
    if clustered:  # the first of scriptPrepareForRun's checks
        err = cluster_refusal(c, ctx, "no-cluster" in fn.flags,
                              "allow-cross-slot-keys" in fn.flags, numkeys, argv)
        if err is not None:
            return err
    if read_only_cmd and not no_writes:
        return WRITE_FLAG_WITH_RO
    ctx.argv = argv  # FUNCTION STATS shows the running command line
    reply = engine.run(ctx, fn, numkeys, argv[3:], True)
    if clustered:
        script_done(c, ctx)
    return reply


@command("fcall")
def fcall(c, argv):
    return _fcall(c, argv, read_only_cmd=False)


@command("fcall_ro")
def fcall_ro(c, argv):
    return _fcall(c, argv, read_only_cmd=True)


# -- FUNCTION ----------------------------------------------------------------------------------
@command("function|load")
def function_load(c, argv):
    replace = False
    pos = 2
    while pos < len(argv) - 1:
        arg = argv[pos]
        pos += 1
        if arg.lower() == b"replace":
            replace = True
            continue
        return ErrorReply(b"ERR Unknown option given: " + arg.split(b"\0", 1)[0])
    store = get_store(c.server)
    try:
        from pykv.scripting.functions import LOAD_TIMEOUT_S

        name = store.create(argv[pos], replace, timeout=LOAD_TIMEOUT_S)
    except FunctionError as exc:
        return _error(exc)
    c.server.dirty += 1
    return name


@command("function|delete")
def function_delete(c, argv):
    if not get_store(c.server).delete(argv[2]):
        return LIBRARY_NOT_FOUND
    c.server.dirty += 1
    return OK


@command("function|flush")
def function_flush(c, argv):
    if len(argv) > 3:
        return errors.subcommand_syntax(argv[1], b"function")
    if len(argv) == 3 and argv[2].lower() not in (b"sync", b"async"):
        return BAD_FLUSH_MODE
    get_store(c.server).flush()
    c.server.dirty += 1
    return OK


def _describe(lib: Library, with_code: bool) -> dict:
    functions = [
        {b"name": fn.name, b"description": fn.description,
         b"flags": RespSet([SimpleString(f.encode()) for f in fn.ordered_flags()])}
        for fn in lib.functions.values()
    ]
    out = {b"library_name": lib.name, b"engine": lib.engine, b"functions": functions}
    if with_code:
        out[b"library_code"] = lib.code
    return out


@command("function|list")
def function_list(c, argv):
    with_code = False
    pattern = None
    i = 2
    while i < len(argv):
        arg = argv[i]
        low = arg.lower()
        if not with_code and low == b"withcode":
            with_code = True
        elif pattern is None and low == b"libraryname":
            if i >= len(argv) - 1:
                return ErrorReply(b"ERR library name argument was not given")
            i += 1
            pattern = argv[i]
        else:
            return ErrorReply(b"ERR Unknown argument " + arg.split(b"\0", 1)[0])
        i += 1
    libraries = get_store(c.server).live.libraries.values()
    return [_describe(lib, with_code) for lib in libraries
            if pattern is None or stringmatch(pattern, lib.name, nocase=True)]


@command("function|dump")
def function_dump(c, argv):
    return get_store(c.server).dump()


@command("function|restore")
def function_restore(c, argv):
    if len(argv) > 4:
        return errors.subcommand_syntax(argv[1], b"function")
    policy = b"append"
    if len(argv) == 4:
        policy = argv[3].lower()
        if policy not in (b"append", b"replace", b"flush"):
            return BAD_RESTORE_POLICY
    payload = argv[2]
    if not verify_payload(payload):
        return BAD_PAYLOAD
    store = get_store(c.server)
    try:
        incoming = store.parse_payload(payload)
        if policy == b"flush":
            store.live = incoming
        else:
            store.join(incoming, replace=policy == b"replace")
    except FunctionError as exc:
        return _error(exc)
    c.server.dirty += 1
    return OK


@command("function|stats")
def function_stats(c, argv):
    ctx = c.server.busy_script
    if ctx is not None and not ctx.is_function:  # Redis: only a busy function is described
        return ctx.busy_error
    running = None
    if ctx is not None:
        running = {b"name": ctx.name,
                   b"command": list(getattr(ctx, "argv", None) or [ctx.command]),
                   b"duration_ms": int((time.monotonic() - ctx.start) * 1000)}
    live = get_store(c.server).live
    return {b"running_script": running,
            b"engines": {b"LUA": {b"libraries_count": len(live.libraries),
                                  b"functions_count": live.function_count}}}


@command("function|help")
def function_help(c, argv):
    return help_reply(HELP)
