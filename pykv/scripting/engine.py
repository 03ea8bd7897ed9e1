"""The scripting engine: a Lua 5.1 state (lupa) and how scripts run in it.

A server has two engines, as Redis 7.0 has two Lua VMs: one for EVAL scripts
(``get_engine``) and one for function libraries (``get_function_engine``).

Where scripts run. A script runs on the loop thread, and its ``redis.call``s execute
directly, so a script costs no thread hand-offs. Until ``busy-reply-threshold`` passes
nothing else runs, exactly as Redis blocks everything else. After it, the Lua count hook
serves other clients in between (``pykv.net.busy.BusyPoller``: it reads their sockets,
accepts new connections, answers ``BUSY`` to every command that is not ``allow_busy`` — SCRIPT
KILL, FUNCTION KILL, SHUTDOWN…), which is Redis's ``processEventsWhileBlocked``; SCRIPT KILL
then stops a script that has not written yet. A kill is final, as in Redis: the hook then
fires on every line of the script and raises again, so no ``pcall`` can swallow it.
SHUTDOWN NOSAVE ends a busy script the same way, and SIGTERM/SIGINT during one are kept
for when it ends (Redis 7.0 shuts down only then); in both cases its caller gets no reply.

Scripts call commands through ``ScriptClient``, a connection-less client that captures
replies as values; the checks Redis makes for scripts (unknown command, arity, noscript,
writes from read-only scripts) come first, with Redis's texts.

Known differences from Redis 7.0: a SIGTERM/SIGINT during a busy script is logged when the
script ends, not when it arrives; one that arrives before the script is past
``busy-reply-threshold`` lets its reply out before the shutdown (Redis exits first);
``redis.call``/``redis.pcall`` take at most 7997 arguments where they run as Python
(without the compiled ``_luacall``: lupa's call needs stack slots of its own; Redis allows
unpack's 8001); a SHUTDOWN NOSAVE during a busy script logs the kill.
"""
from __future__ import annotations

import hashlib
import logging
import signal
import threading
import time
from time import monotonic
from typing import TYPE_CHECKING, Any

from lupa import lua51

from pykv import errors
from pykv.net.busy import BusyPoller
from pykv.protocol import ErrorReply, RawReply, SimpleString, write_reply
from pykv.scripting.helpers import ApiError, Helpers
from pykv.scripting.libs import LibError, Libraries
from pykv.scripting.prelude import PRELUDE
from pykv.scripting.redis_api import command_arg
from pykv.server.client import NO_REPLY, Client

if TYPE_CHECKING:
    from pykv.server.server import Server

log = logging.getLogger("pykv")

BUSY_EVAL = ErrorReply(
    b"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
BUSY_FUNCTION = ErrorReply(
    b"BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN "
    b"NOSAVE.")

# reply tags of Engine._lua_call; TAG_ARG_ERROR is redis.call's own argument check (its
# error table has no ignore_error_stats_update field); TAG_STATUS a status reply ({ok=...});
# TAG_REPLY (Engine._run_command only) a command's reply as the handler gave it
TAG_VALUE, TAG_RESP, TAG_ERROR, TAG_ARG_ERROR, TAG_STATUS, TAG_REPLY = 0, 1, 2, 3, 4, 5

_ERR_ARGS = b"ERR Lua redis lib command arguments must be strings or integers"
_ERR_UNKNOWN = b"ERR Unknown Redis command called from script"
_ERR_ARITY = b"ERR Wrong number of args calling Redis command from script"
_ERR_NOSCRIPT = b"ERR This Redis command is not allowed from script"
_ERR_RO = b"ERR Write commands are not allowed from read-only scripts."
_ERR_NO_WRITES = b"ERR Write commands are not allowed from read-only scripts."


# a reply mode of the script client only: ClientCore.call leaves a handler's returned reply
# to its caller (Engine._run_command); replies handlers add themselves are captured here
REPLY_CAPTURE = 4


class ScriptClient(Client):
    """The connection-less client scripts run commands as; replies are kept as values."""

    is_script_client = True  # MONITOR shows its commands as "lua"; SORT sorts for scripts

    def __init__(self, server: Server) -> None:
        super().__init__(server, None, 0)
        self.captured: list[Any] = []
        self.deny_blocking = True
        # not REPLY_ON: replies go through add_reply (captured), never into an out buffer
        self.reply_mode = REPLY_CAPTURE

    def add_reply(self, reply: Any) -> None:
        self.captured.append(reply)

    def add_push(self, reply: Any) -> None:
        pass

    def flush(self) -> None:
        pass


SLOT_ANY = -2
_NO_USER = object()  # (Engine._user_of before any run: no ACL user, not even None)


class FunctionCore:
    """What FCALL reads of a registered function on every call (``pykv.scripting.functions``'
    Function adds the rest); compiled, C fields (engine.pxd) instead of attribute lookups."""

    __slots__ = ("name", "flags", "slot", "no_writes")


class RunContext:
    """One running script or function: who called, what it may do, how it is going."""

    # (compiled, the fields are declared in engine.pxd)
    __slots__ = ("caller", "name", "command", "read_only", "is_function", "lua_resp", "wrote",
                 "killed", "start", "busy_error", "argv", "drop_reply", "slot", "may_yield")

    def __init__(self, caller: Client, name: bytes, read_only: bool, is_function: bool,
                 command: bytes) -> None:
        _init_context(self, caller, name, read_only, is_function, command)

    def abort_for_shutdown(self) -> None:
        """SHUTDOWN NOSAVE while this script is busy: end it at its next hook; its caller
        gets no reply (Redis exits there and then)."""
        self.killed = True
        self.drop_reply = True


def _init_context(ctx: RunContext, caller: Client, name: bytes, read_only: bool,
                  is_function: bool, command: bytes) -> None:
    ctx.caller = caller
    ctx.name = name  # sha (EVAL) or function name (FCALL)
    ctx.command = command
    ctx.read_only = read_only
    ctx.is_function = is_function
    ctx.lua_resp = 2
    ctx.wrote = False
    ctx.killed = False
    ctx.start = monotonic()
    ctx.busy_error = BUSY_FUNCTION if is_function else BUSY_EVAL
    ctx.argv = None  # FCALL's command line, for FUNCTION STATS
    ctx.drop_reply = False  # the server goes down after it: no reply, close the caller
    # cluster mode: the one slot its keys must hash to (-1: not known yet, SLOT_ANY: no
    # such rule, as with allow-cross-slot-keys or an EVAL without a shebang)
    ctx.slot = SLOT_ANY
    # past busy-reply-threshold it serves other clients (Engine.run: its caller has a
    # connection)
    ctx.may_yield = False


def new_context(caller: Client, name: bytes, read_only: bool, is_function: bool,
                command: bytes) -> RunContext:
    """``RunContext(caller, name, read_only, is_function, command)``; compiled, a C call
    without the constructor's Python call and argument parsing (one per EVALSHA/FCALL)."""
    ctx = RunContext.__new__(RunContext)
    _init_context(ctx, caller, name, read_only, is_function, command)
    return ctx


class CommandError(Exception):
    """redis.call's failure: the command's error text, reported as it is."""

    def __init__(self, text: str, arg_error: bool = False) -> None:
        super().__init__(text)
        self.arg_error = arg_error


class _Host:
    """What the prelude reads from Python (attributes, as lupa exposes objects)."""

    def __init__(self, engine: Engine, lua: Any) -> None:
        self.call_raise = engine._lua_call_raise
        self.call_protected = engine._lua_call_protected
        helpers = self.helpers = Helpers(lua, engine._set_resp)
        self.log = helpers.log
        self.sha1hex = helpers.sha1hex
        self.setresp = helpers.setresp
        self.set_repl = helpers.set_repl
        self.status_reply = helpers.status_reply
        self.error_reply = helpers.error_reply
        self.acl_check_cmd = engine._lua_acl_check_cmd
        self.hook = engine._lua_hook
        self.killed = engine._lua_killed
        self.classify = _classify
        version = engine.server.version
        self.version = version.encode()
        major, minor, patch = (int(x) for x in version.split("."))
        self.version_num = (major << 16) | (minor << 8) | patch
        self.null = lua.eval("newproxy()")
        self.libraries = Libraries(lua, self.null)
        for name, funcs in self.libraries.tables.items():
            setattr(self, name, lua.table_from(funcs))


def _classify(err: Any) -> tuple[int, bytes]:
    """(kind, text) of an exception raised into Lua: 0 a command's error, 3 redis.call's
    argument error (both as they are), 1 ERR text, 2 a library's positioned message."""
    text = str(err.args[0] if getattr(err, "args", None) else err)
    data = text.encode("utf-8", "surrogateescape")
    if isinstance(err, CommandError):
        return (3 if err.arg_error else 0), data
    if isinstance(err, LibError):
        return 2, data
    return 1, data


class Engine:
    """The server's Lua state, script cache and running-script state."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.lua = lua51.LuaRuntime(encoding=None, register_eval=False,
                                    register_builtins=False, unpack_returned_tuples=True)
        host = _Host(self, self.lua)
        c_calls = lua_c_calls(self, self.lua)
        if c_calls is not None:  # redis.call/pcall as Lua C functions (see _luacall)
            host.call_raise, host.call_protected, resp_slot, set_entry = c_calls[:4]
        self.libraries = host.libraries
        self.api = self.lua.execute(PRELUDE, host)
        self._c_binding = None  # EVAL's C entry (_luacall.run_script), when there is one
        self._slots_free: list[int] = []  # function slots whose Function is gone
        self._slots_used = 0
        if c_calls is not None:
            resp_slot[1] = self.api.resp_to_lua
            resp_slot[2] = b"ok"  # (the status table's key, kept for the C calls)
            c_entry = self.api.c_entry
            set_entry(c_entry)
            self._c_binding = c_calls[4]
            self._c_scripts = c_entry[5]  # sha -> compiled script, for run_script
            self._c_functions = c_entry[7]  # slot -> function callback, for run_function
            from pykv.scripting._luacall import run_function, run_script
            self._c_run = run_script
            self._c_run_function = run_function
        host.helpers.error_table = self.api.error_table
        # a lookup on a Lua table from Python crosses into Lua: fetch the hot entries once
        self._api_run = self.api.run
        self._api_run_callback = self.api.run_callback
        self._api_resp_to_lua = self.api.resp_to_lua
        self.scripts: dict[bytes, tuple[bytes, Any, bool]] = {}
        # the sha EVALSHA last found, as written, and (its lower-cased sha, its entry)
        self.last_sha: bytes | None = None
        self.last_script: tuple[bytes, tuple[bytes, Any, bool]] | None = None
        self._commands: dict[bytes, Any] = {}  # redis.call's command names as written
        # the last name redis.call looked up there and its command: a script's calls mostly
        # repeat one spelling, and comparing bytes costs less than hashing a new object
        self._last_name: bytes | None = None
        self._last_cmd: Any = None
        # the live functions by lower-cased name, once FCALL asked (the FunctionStore keeps
        # it current when its set of libraries is replaced)
        self.function_table: dict[bytes, Any] | None = None
        self._user_of: Any = _NO_USER  # the ACL user whose name self.client.user holds
        self.client = ScriptClient(server)
        self._captured = self.client.captured  # (cleared in place, never replaced)
        self.ctx: RunContext | None = None   # the running script, if any
        self._poller: BusyPoller | None = None
        self._saved_signals: dict[int, Any] | None = None  # handlers replaced while busy

    # -- compiling -------------------------------------------------------------------
    def compile(self, body: bytes, chunkname: bytes = b"@user_script") -> Any:
        fn, err = self.api.compile(body, chunkname)
        if fn is None:
            raise ErrorReply(b"ERR Error compiling script (new function): " + err)
        return fn

    def cache_script(self, body: bytes, compile_body: bytes | None = None,
                     no_writes: bool = False) -> bytes:
        """Compile and cache ``body`` under its SHA1; entries are (body, function,
        no-writes flag of its shebang)."""
        sha = hashlib.sha1(body).hexdigest().encode()
        if sha not in self.scripts:
            fn = self.compile(compile_body if compile_body is not None else body)
            self.scripts[sha] = (body, fn, no_writes)
            if self._c_binding is not None:
                self._c_scripts[sha] = fn
        return sha

    def flush_scripts(self) -> None:
        self.scripts.clear()
        self.last_sha = self.last_script = None
        if self._c_binding is not None:
            self.lua.eval("function(t) for k in pairs(t) do t[k] = nil end end")(
                self._c_scripts)
        self.libraries.reset()
        self.lua.execute("collectgarbage()")

    def function_slot(self, callback: Any) -> int:
        """A slot for a function's Lua ``callback`` in the C entry's table (0: there is no
        C entry); ``release_slot`` gives it back."""
        if self._c_binding is None:
            return 0
        if self._slots_free:
            for slot in self._slots_free:  # (their callbacks become garbage now)
                self._c_functions[slot] = None
            slot = self._slots_free.pop()
        else:
            self._slots_used += 1
            slot = self._slots_used
        self._c_functions[slot] = callback
        return slot

    def release_slot(self, slot: int) -> None:
        """The function in ``slot`` is gone (called when its ``Function`` is collected:
        its table entry is cleared by the next ``function_slot``, not from a finaliser,
        which may run while Lua does)."""
        self._slots_free.append(slot)

    def collect(self) -> None:
        """Drop the callbacks of released function slots and run a full Lua collection
        (FUNCTION FLUSH: the libraries' memory is given back at once)."""
        if self._c_binding is not None:
            for slot in self._slots_free:
                self._c_functions[slot] = None
        self.lua.execute("collectgarbage()")

    # -- running ---------------------------------------------------------------------
    def run(self, ctx: RunContext, fn: Any, nkeys: int, params: list[bytes],
            as_callback: bool = False) -> Any:
        """Run ``fn`` for ``ctx.caller`` with ``params`` (its first ``nkeys`` are KEYS, the
        rest ARGV) here on the loop thread, and return its reply. Past
        ``busy-reply-threshold`` the Lua hook serves other clients in between
        (``_serve_while_busy``: BUSY replies, SCRIPT/FUNCTION KILL, SHUTDOWN NOSAVE), as
        Redis's processEventsWhileBlocked does; a caller without a connection (a script
        started by the server itself) never yields."""
        caller = ctx.caller
        client = self.client
        server = self.server
        db_index = caller.db_index
        if client.db_index != db_index:
            client.select(db_index)
        # commands run as the caller's user: its name, copied when the caller's ACL user
        # (a C field; pykv.commands.acl.login sets both) differs from the last caller's
        acl_user = caller.acl_user
        if acl_user is not self._user_of:
            client.user = caller.user
            self._user_of = acl_user
        ctx.may_yield = caller.conn is not None
        self.ctx = ctx
        # several writes reach the AOF and the replicas inside MULTI ... EXEC, as in Redis;
        # without a sink (no AOF, no replica) begin/end_effects would only count the
        # nesting, which nothing reads then, and none can be added while a script runs
        sinks = server.effect_sinks
        marks = server.begin_effects(db_index) if sinks else None
        try:
            if as_callback:  # (fn: a pykv.scripting.functions.Function)
                function = fn
                slot = function.slot
                if slot:
                    result = self._c_run_function(self._c_binding, slot, caller.resp, nkeys,
                                                  params)
                else:
                    result = self._api_run_callback(fn.callback, caller.resp, nkeys, *params)
            elif self._c_binding is not None:
                result = self._c_run(self._c_binding, ctx.name, caller.resp, nkeys, params)
            else:
                result = self._api_run(fn, caller.resp, nkeys, *params)
        except Exception as exc:  # a lupa/Python failure must still end the script
            log.exception("script failed")
            result = (False, b"ERR " + str(exc).encode(), None, None)
        finally:
            if sinks:
                server.end_effects(marks)
            if marks is not None:
                caller.woff = server.repl_offset  # what WAIT waits for
            self.ctx = None
            if server.busy_script is ctx:
                server.busy_script = None
            if self._poller is not None:
                self._poller.finish()
                self._poller = None
            if self._saved_signals is not None:
                for sig, handler in self._saved_signals.items():
                    signal.signal(sig, handler)
                self._saved_signals = None
        if ctx.drop_reply:  # shut down during the script: Redis exits before replying
            caller.closing = True
            return NO_REPLY
        if type(result) is RawReply:  # (the C entry's usual results)
            return result
        if result[0]:
            return RawReply(result[1])
        return self._final_reply(ctx, result)

    def _serve_while_busy(self, ctx: RunContext) -> None:
        """Answer other clients (mostly ``-BUSY``) while a slow script holds the loop."""
        server = self.server
        if server.busy_script is not ctx:
            log.warning("Slow script detected: still in execution after %d milliseconds. "
                        "You can try killing the script using the %s command. "
                        "Script name is: %s.",
                        int((time.monotonic() - ctx.start) * 1000),
                        "FUNCTION KILL" if ctx.is_function else "SCRIPT KILL",
                        ctx.name.decode("utf-8", "replace"))
            server.busy_script = ctx
            self._poller = BusyPoller(server)
            self._catch_shutdown_signals()
        self._poller.poll(ctx.caller)

    def _catch_shutdown_signals(self) -> None:
        """While a script is busy, SIGTERM/SIGINT still reach the event loop's handlers
        (which run once the script ends, as Redis shuts down only then); note them so the
        script's caller gets no reply, as with Redis."""
        saved = self._saved_signals = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)

            def on_signal(signum: int, frame: Any, previous: Any = previous) -> None:
                if self.ctx is not None:
                    self.ctx.drop_reply = True
                if callable(previous):
                    previous(signum, frame)

            try:
                signal.signal(sig, on_signal)
            except ValueError:  # not the main thread (an embedded server): nothing to catch
                return
            saved[sig] = previous

    def _final_reply(self, ctx: RunContext, result: tuple) -> Any:
        if result[0]:
            return RawReply(result[1])
        msg = result[1]
        if not isinstance(msg, bytes):
            msg = str(msg).encode()
        if len(result) >= 4 and result[2] is not None:
            msg += b" script: " + ctx.name + b", on " + result[2] + b":" \
                + str(result[3]).encode() + b"."
        if result[0] is None:
            # counted in INFO errorstats where it happened (a command's error, a refused
            # redis.call): written as it is, the script's command only counts as failed,
            # as Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE
            cmd = self.server.commands.get(ctx.command)
            if cmd is not None:
                cmd.failed_calls += 1
            return RawReply(b"-" + ErrorReply(msg).data + b"\r\n")
        return ErrorReply(msg)

    # -- callbacks from Lua ------------------------------------------------------------
    def _lua_call(self, args: tuple) -> tuple[int, Any]:
        argv = self._argv(args)
        if type(argv) is not list:
            return TAG_ARG_ERROR, argv
        return self._execute(self.ctx, argv)

    @staticmethod
    def _argv(args: tuple) -> list[bytes] | bytes:
        """redis.call's arguments as a command line, or the error text."""
        if not args:
            return b"ERR Please specify at least one argument for this redis lib call"
        argv: list[bytes] = []
        for a in args:
            t = type(a)
            if t is bytes:
                argv.append(a)
            else:
                a = command_arg(a)
                if a is None:
                    return _ERR_ARGS
                argv.append(a)
        return argv

    def _lua_call_raise(self, *args: Any) -> Any:
        tag, value = self._lua_call(args)
        if tag == TAG_VALUE:
            return value
        if tag == TAG_RESP:
            return self._api_resp_to_lua(value)
        if tag == TAG_STATUS:
            return self.lua.table_from({b"ok": value})
        raise CommandError(value.decode("utf-8", "surrogateescape"), tag == TAG_ARG_ERROR)

    def _lua_call_protected(self, *args: Any) -> Any:
        tag, value = self._lua_call(args)
        if tag == TAG_VALUE:
            return value
        if tag == TAG_RESP:
            return self._api_resp_to_lua(value)
        if tag == TAG_STATUS:
            return self.lua.table_from({b"ok": value})
        if tag == TAG_ARG_ERROR:
            return self.lua.table_from({b"err": value})
        return self.lua.table_from({b"err": value, b"ignore_error_stats_update": True})

    def _lua_acl_check_cmd(self, *args: Any) -> bool:
        """redis.acl_check_cmd(): may the script's caller run this command line?"""
        argv = self._argv(args)
        if type(argv) is not list:
            raise CommandError(argv.decode(), True)
        cmd = self.server.commands.get(argv[0].lower())
        if cmd is not None and cmd.subcommands:
            if len(argv) > 1:
                cmd = cmd.subcommands.get(argv[1].lower())
        elif cmd is not None and cmd.handler is None:
            cmd = None
        if cmd is None:
            raise ApiError(errors.LUA_ACL_CHECK_UNKNOWN)
        caller = self.ctx.caller if self.ctx is not None else None
        if caller is None or not caller.acl_restricted:
            return True
        return caller.acl_user.may_run(cmd, argv)

    def _set_resp(self, resp: int) -> None:
        """redis.setresp(resp): how this run's later redis.call replies reach Lua."""
        if self.ctx is not None:
            self.ctx.lua_resp = resp
        self.api.set_resp(resp)

    def _lua_hook(self) -> bool:
        ctx = self.ctx
        if ctx is None:
            return False
        if ctx.may_yield and monotonic() - ctx.start \
                >= self.server.config.busy_reply_threshold / 1000.0:
            self._serve_while_busy(ctx)
        return ctx.killed

    def _lua_killed(self) -> None:
        """The hook of a killed script (every line from the kill on): raise the kill."""
        log.warning("Lua script killed by user with SCRIPT KILL.")
        # (an error table without ignore_error_stats_update, as Redis's luaPushError)
        raise CommandError("ERR Script killed by user with SCRIPT KILL...", True)

    # -- a command from a script (loop thread) ---------------------------------------
    def _execute(self, ctx: RunContext, argv: list[bytes]) -> tuple[int, Any]:
        result = self._run_command(ctx, argv)
        if result[0] == TAG_REPLY:
            return reply_to_lua(result[1], ctx.lua_resp)
        return result

    def _run_command(self, ctx: RunContext, argv: list[bytes]) -> tuple[int, Any]:
        """Redis's checks for a command from a script, then the command: (TAG_ERROR, text)
        or (TAG_REPLY, its reply)."""
        if ctx is None:  # (a compiled RunContext argument may be None)
            raise RuntimeError("no script is running")
        server = self.server
        name = argv[0]
        # (kept as the last one only without subcommands and noscript, so that a repeated
        # name also skips the noscript check, a Python attribute of the command)
        cached = name == self._last_name
        if cached:
            cmd = self._last_cmd
        else:
            cmd = self._commands.get(name)  # the name as written (an entry per spelling)
            if cmd is None:
                cmd = server.commands.get(name.lower())
                if cmd is not None and len(self._commands) < 1024:
                    self._commands[name] = cmd
            if (cmd is not None and not cmd.subcommands and cmd.handler is not None
                    and not cmd.noscript):
                self._last_name = name
                self._last_cmd = cmd
        if cmd is not None and cmd.subcommands:
            if len(argv) >= 2:
                cmd = cmd.subcommands.get(argv[1].lower())
        elif cmd is not None and cmd.handler is None:
            cmd = None
        if cmd is None:
            return self._refuse(None, _ERR_UNKNOWN)
        arity = cmd.arity
        if (arity > 0 and len(argv) != arity) or len(argv) < -arity:
            return self._refuse(cmd, _ERR_ARITY)
        if not cached and cmd.noscript and not self.client.server.script_disable_deny_script:
            return self._refuse(cmd, _ERR_NOSCRIPT)
        caller = ctx.caller  # commands run as the caller's ACL user (pykv.acl)
        if caller is not None and caller.acl_restricted:
            denied = caller.acl_user.deny_in_script(caller, cmd, argv, ctx.command)
            if denied is not None:
                return self._refuse(cmd, denied)
        if cmd.denyoom and not ctx.wrote and server.maxmemory and server.pre_command_oom:
            return self._refuse(cmd, errors.OOM.data)  # Redis's scriptVerifyOOM
        if server.cluster is not None and caller is not None:  # scriptVerifyClusterState
            refused = server.cluster.script_check(caller, cmd, argv, ctx)
            if refused is not None:
                return self._refuse(cmd, refused)
        if cmd.is_write:
            if ctx.read_only:
                return self._refuse(cmd, _ERR_RO)
            if server.replica_read_only and not (caller is not None and caller.is_master):
                return self._refuse(cmd, errors.READONLY.data)  # a read-only replica
            if server.noreplicas_error is not None:  # min-replicas-to-write not met
                return self._refuse(cmd, server.noreplicas_error.data)
            ctx.wrote = True
        client = self.client
        lua_resp = ctx.lua_resp
        if client.resp != lua_resp:
            client.resp = lua_resp  # handlers shape replies by protocol (redis.setresp)
        # (ClientCore.call hands a REPLY_CAPTURE client the handler's reply as its result;
        # only what handlers add themselves is captured)
        reply = client.call(cmd, argv)
        captured = self._captured
        if reply is NO_REPLY:
            reply = captured[0] if captured else None
            captured.clear()
        elif captured:  # a handler that added a reply of its own and returned one
            captured.clear()
        return TAG_REPLY, reply

    def _refuse(self, cmd: Any, text: bytes) -> tuple[int, bytes]:
        """A redis.call refused: counted in INFO errorstats (and as a rejected call of
        ``cmd``) there and then, as Redis's scriptCall, even if pcall drops it."""
        self.server.count_error(ErrorReply(text))
        if cmd is not None:
            cmd.rejected_calls += 1
        return TAG_ERROR, text


def reply_to_lua(reply: Any, lua_resp: int) -> tuple[int, Any]:
    """A command's reply for redis.call: (TAG_VALUE, value), (TAG_RESP, RESP bytes to
    convert in Lua) or (TAG_ERROR, error text)."""
    t = type(reply)
    if t is bytes or t is int:
        return TAG_VALUE, reply
    if t is bytearray:
        return TAG_VALUE, bytes(reply)
    if reply is None:
        return TAG_VALUE, (False if lua_resp == 2 else None)
    if t is ErrorReply:
        return TAG_ERROR, reply.data
    if t is SimpleString:
        return TAG_STATUS, reply.data
    out = bytearray()
    write_reply(out, reply, lua_resp)
    return TAG_RESP, bytes(out)


_OPEN_LOCK = threading.Lock()  # one engine's binding at a time for luaopen_pykv_luacall


def lua_c_calls(engine: Engine, lua: Any) -> tuple[Any, ...] | None:
    """redis.call and redis.pcall as Lua C functions for ``engine``, the table whose
    ``[1]`` must then hold the prelude's ``resp_to_lua``, ``set_entry`` (to be given the
    prelude's ``c_entry``) and the binding ``_luacall.run_script`` takes; None where they cannot be had
    (no compiled ``_luacall``, a lupa without the Lua C API or ``package.loadlib``)."""
    try:
        from pykv.scripting import _luacall
        _luacall.load_api(lua51.__file__)
    except ImportError:
        return None
    loadlib = lua.eval("package and package.loadlib")
    if not loadlib:
        return None
    opener = loadlib(_luacall.__file__.encode(), b"luaopen_pykv_luacall")
    if type(opener) is tuple or not opener:  # (nil, message, where)
        log.warning("redis.call stays in Python: %r", opener)
        return None
    slot = lua.table()
    with _OPEN_LOCK:  # (lupa lets other threads run while Lua runs the opener)
        binding = _luacall.bind(engine)
        calls = opener(slot)
    if type(calls) is not tuple or len(calls) != 3:
        return None
    return calls[0], calls[1], slot, calls[2], binding


def get_engine(server: Server) -> Engine:
    """The server's EVAL engine (made at the first script)."""
    engine = getattr(server, "scripting", None)
    if engine is None:
        engine = server.scripting = Engine(server)
    return engine


def get_function_engine(server: Server) -> Engine:
    """The server's function engine: a Lua state of its own, as Redis 7.0 runs function
    libraries in a second VM (``used_memory_vm_functions``; SCRIPT FLUSH leaves it alone).
    Made at the first library load or FCALL."""
    engine = getattr(server, "function_engine", None)
    if engine is None:
        engine = server.function_engine = Engine(server)
    return engine


_last_engine: Engine | None = None
_last_function_engine: Engine | None = None


def engine_of(server: Server) -> Engine:
    """``get_engine(server)``; compiled, the last server's engine comes without an
    attribute lookup on the server (EVALSHA wants it on every call)."""
    global _last_engine
    engine = _last_engine
    if engine is not None and engine.server is server:
        return engine
    engine = _last_engine = get_engine(server)
    return engine


def function_engine_of(server: Server) -> Engine:
    """``get_function_engine(server)``, the last server's without an attribute lookup
    (FCALL's)."""
    global _last_function_engine
    engine = _last_function_engine
    if engine is None or engine.server is not server:
        engine = _last_function_engine = get_function_engine(server)
    return engine

