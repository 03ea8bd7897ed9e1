"""Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT *, FUNCTION *, FCALL,
FCALL_RO.

Argument parsing, shebang flags and the script cache's commands live here; running Lua
(sandbox, conversions, BUSY handling) is ``pykv.scripting``. Function libraries are
``pykv.scripting.functions``.
"""
from __future__ import annotations

from pykv import errors
from pykv.commands import info
from pykv.commands.args import parse_int
from pykv.commands.registry import command
from pykv.commands.script_cluster import cluster_refusal, script_done
from pykv.protocol import OK, ErrorReply, SimpleString
from pykv.scripting.engine import engine_of, get_engine, new_context

NOTBUSY = ErrorReply(b"NOTBUSY No scripts in execution right now.")
UNKILLABLE = ErrorReply(
    b"UNKILLABLE Sorry the script already executed write commands against the dataset. You "
    b"can either wait the script termination or kill the server in a hard way using the "
    b"SHUTDOWN NOSAVE command.")
_SHEBANG_FLAGS = (b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster",
                  b"allow-cross-slot-keys")
_CROSS_SLOT_ONLY = frozenset((b"allow-cross-slot-keys",))


def numkeys_arg(argv: list[bytes], start: int) -> int:
    """``numkeys`` at ``argv[start]`` (keys and args follow it), with Redis's checks."""
    numkeys = parse_int(argv[start], errors.NOT_INTEGER)  # (_eval reads a single digit)
    if numkeys > len(argv) - start - 1:
        raise ErrorReply(b"ERR Number of keys can't be greater than number of args")
    if numkeys < 0:
        raise ErrorReply(b"ERR Number of keys can't be negative")
    return numkeys


def parse_shebang(body: bytes) -> tuple[set[bytes], bytes] | None:
    """EVAL's ``#!lua flags=...`` first line: (flags, body to compile) or None if absent.

    The shebang line is blanked, not removed, so error line numbers match Redis's.
    """
    if not body.startswith(b"#!"):
        return None
    end = body.find(b"\n")
    if end < 0:
        raise ErrorReply(b"ERR Invalid script shebang")
    parts = body[2:end].split(b" ")
    if parts[0] != b"lua":
        raise ErrorReply(b"ERR Unexpected engine in script shebang: " + body[:end])
    flags: set[bytes] = set()
    for part in parts[1:]:
        if not part:
            continue
        if not part.startswith(b"flags="):
            raise ErrorReply(b"ERR Unknown lua shebang option: " + part)
        for flag in part[6:].split(b","):
            if not flag:
                continue
            if flag not in _SHEBANG_FLAGS:
                raise ErrorReply(b"ERR Unexpected flag in script shebang: " + flag)
            flags.add(flag)
    return flags, body[end:]


def _eval(c, argv: list[bytes], by_sha: bool, read_only: bool, name: bytes):
    if by_sha and len(argv[1]) != 40:  # Redis refuses it before reading numkeys
        return errors.NOSCRIPT
    server = c.server
    if server.monitors:  # before its own commands, as Redis (the table says skip_monitor)
        server.feed_monitors(c, argv)
    engine = engine_of(server)
    raw = argv[2]
    if len(raw) == 1 and 48 <= raw[0] <= 57 and raw[0] - 48 <= len(argv) - 3:
        numkeys = raw[0] - 48  # the usual single digit: no call
    else:
        numkeys = numkeys_arg(argv, 2)
    if by_sha:
        sha = argv[1]
        if sha == engine.last_sha:  # (comparing 40 bytes costs less than hashing a new object)
            sha, entry = engine.last_script
        else:
            written = sha
            entry = engine.scripts.get(sha)
            if entry is None:
                sha = sha.lower()
                entry = engine.scripts.get(sha)
                if entry is None:
                    return errors.NOSCRIPT
            engine.last_sha = written
            engine.last_script = (sha, entry)
    else:
        body = argv[1]
        shebang = parse_shebang(body)
        if shebang is None:
            sha = engine.cache_script(body)
        else:
            sha = engine.cache_script(body, shebang[1], b"no-writes" in shebang[0])
        entry = engine.scripts[sha]
    if (server.replica_read_only or server.replica_deny_stale) and not c.is_master:
        err = _replica_refusal(server, entry[0])
        if err is not None:
            return err
    ctx = new_context(c, sha, read_only or entry[2], False, name)
    if server.cluster is not None:
        shebang = parse_shebang(entry[0])  # None: no flags, any slot (EVAL before 7.0)
        flags = shebang[0] if shebang is not None else _CROSS_SLOT_ONLY
        err = cluster_refusal(c, ctx, b"no-cluster" in flags,
                              b"allow-cross-slot-keys" in flags, numkeys, argv)
        if err is not None:
            return err
        reply = engine.run(ctx, entry[1], numkeys, argv[3:])
        script_done(c, ctx)
        return reply
    return engine.run(ctx, entry[1], numkeys, argv[3:])


def _replica_refusal(server, body: bytes):
    """What a replica refuses before a script runs, as Redis's processCommand and
    scriptPrepareForRun do: a shebang script without ``no-writes`` on a read-only
    replica, any script without ``allow-stale`` while the link is down and stale
    serving is off."""
    shebang = parse_shebang(body)
    flags = shebang[0] if shebang is not None else None
    if flags is not None and b"no-writes" not in flags and server.replica_read_only:
        return errors.READONLY
    if server.replica_deny_stale and (flags is None or b"allow-stale" not in flags):
        return errors.MASTERDOWN
    return None


@command("eval")
def eval_(c, argv):
    return _eval(c, argv, False, False, b"eval")


@command("eval_ro")
def eval_ro(c, argv):
    return _eval(c, argv, False, True, b"eval_ro")


@command("evalsha")
def evalsha(c, argv):
    return _eval(c, argv, True, False, b"evalsha")


@command("evalsha_ro")
def evalsha_ro(c, argv):
    return _eval(c, argv, True, True, b"evalsha_ro")


# -- SCRIPT ---------------------------------------------------------------------------------
@command("script|load")
def script_load(c, argv):
    engine = get_engine(c.server)
    body = argv[2]
    shebang = parse_shebang(body)
    if shebang is None:
        return engine.cache_script(body)
    return engine.cache_script(body, shebang[1], b"no-writes" in shebang[0])


@command("script|exists")
def script_exists(c, argv):
    scripts = get_engine(c.server).scripts
    return [1 if sha.lower() in scripts else 0 for sha in argv[2:]]


@command("script|flush")
def script_flush(c, argv):
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"sync", b"async")):
        return ErrorReply(b"ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    get_engine(c.server).flush_scripts()
    return OK


def kill_running(c, want_function: bool):
    ctx = c.server.busy_script
    if ctx is None:
        return NOTBUSY
    if ctx.wrote:  # before the EVAL/FUNCTION mismatch, as Redis's scriptKill
        return UNKILLABLE
    if ctx.is_function != want_function:
        return ctx.busy_error
    ctx.killed = True
    return OK


@command("script|kill")
def script_kill(c, argv):
    return kill_running(c, want_function=False)


@command("script|debug")
def script_debug(c, argv):
    mode = argv[2].lower()
    if mode == b"no":
        return OK
    if mode in (b"yes", b"sync"):
        return ErrorReply(b"ERR pykv does not implement the Lua debugger (LDB)")
    return ErrorReply(b"ERR Use SCRIPT DEBUG YES/SYNC/NO")


_SCRIPT_HELP = [
    b"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"DEBUG (YES|SYNC|NO)",
    b"    Set the debug mode for subsequent scripts executed.",
    b"EXISTS <sha1> [<sha1> ...]",
    b"    Return information about the existence of the scripts in the script cache.",
    b"FLUSH [ASYNC|SYNC]",
    b"    Flush the Lua scripts cache. Very dangerous on replicas.",
    b"    When called without the optional mode argument, the behavior is determined by the",
    b"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    b"    * ASYNC: Asynchronously flush the scripts cache.",
    b"    * SYNC: Synchronously flush the scripts cache.",
    b"KILL",
    b"    Kill the currently executing Lua script.",
    b"LOAD <script>",
    b"    Load a script into the scripts cache without executing it.",
    b"HELP",
    b"    Prints this help.",
]


@command("script|help")
def script_help(c, argv):
    return [SimpleString(line) for line in _SCRIPT_HELP]


# -- FUNCTION (the parts that do not need libraries) ------------------------------------------
@command("function|kill")
def function_kill(c, argv):
    return kill_running(c, want_function=True)


# FUNCTION STATS (it counts libraries) is in pykv.commands.functions


# -- INFO memory: the Lua state's own figure ----------------------------------------------------
def _lua_memory(server) -> dict:
    """``used_memory_lua`` and friends: what each Lua state's allocator holds
    (``collectgarbage``), as Redis reports its two VMs: ``used_memory_lua`` is EVAL's
    (``used_memory_vm_eval``), ``used_memory_vm_functions`` the function libraries'. A
    state is made at its first use, so a server that never ran one reports 0 for it."""
    used_eval = _vm_bytes(getattr(server, "scripting", None))
    used_functions = _vm_bytes(getattr(server, "function_engine", None))
    total = used_eval + used_functions
    return {"used_memory_lua": used_eval, "used_memory_vm_eval": used_eval,
            "used_memory_lua_human": info.human_bytes(used_eval),
            "used_memory_vm_functions": used_functions,
            "used_memory_vm_total": total, "used_memory_vm_total_human": info.human_bytes(total)}


def _vm_bytes(engine) -> int:
    return 0 if engine is None else int(engine.lua.eval("collectgarbage('count')") * 1024)


info.add_fields("memory", _lua_memory)
