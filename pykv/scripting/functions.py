"""Function libraries (Redis 7 functions): parsing, loading, registry, DUMP/RESTORE payloads.

A library is Lua source that starts with a ``#!lua name=<lib>`` shebang. Loading runs its
body once, in the function engine's Lua state (not EVAL's, as in Redis 7.0), with a reduced ``redis`` table whose
``register_function`` records each function (name, callback, description, flags); the
Lua side of that run lives in ``pykv.scripting.prelude`` (``load_library``), the
``register_function`` argument checks are the small Lua chunk below. Everything else
(metadata, name rules, collisions, REPLACE, joining restored libraries) is Python here,
with Redis's error texts.

``LibrarySet`` is Redis's ``functionsLibCtx``: libraries by exact name, functions by
case-insensitive name (FCALL ``MyFunc`` and ``myfunc`` are the same function, as in Redis).
A FUNCTION RESTORE builds a fresh ``LibrarySet`` from the payload and then joins it into the
live one (APPEND / REPLACE) or swaps it in (FLUSH).

The DUMP payload is Redis's: for each library an ``RDB_OPCODE_FUNCTION2`` byte and the
library source as an RDB string, then the RDB version (2 bytes, little-endian) and the
CRC-64 of everything before it — the same body an RDB file holds for its functions.
"""
from __future__ import annotations

import struct
import time
import weakref
from typing import TYPE_CHECKING, Any

from pykv.protocol import split_args
from pykv.scripting.engine import FunctionCore
from pykv.storage.rdb import encoding as enc
from pykv.storage.rdb._codec import crc64
from pykv.storage.rdb.encoding import RdbFormatError, RdbReader, RdbWriter

if TYPE_CHECKING:
    from pykv.server.server import Server

# flags a function may declare, in the order Redis lists them
FUNCTION_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster",
                  "allow-cross-slot-keys")
ENGINES = {b"lua": b"LUA"}
LOAD_TIMEOUT_S = 0.5  # FUNCTION LOAD gives a library body this long (Redis: 500 ms)

_NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_BAD_NAME = ("Library names can only contain letters, numbers, or underscores(_) and must "
             "be at least one character long")
_U16 = struct.Struct("<H")

# redis.register_function for one library load: returns (register, registered) where
# ``registered`` collects {name, callback, description, flags} tables. Errors are raised as
# {err = "ERR ..."} tables, which the loader reports without a position, as Redis does.
_REGISTER_LUA = r"""
local error, type, pairs, select, tostring = error, type, pairs, select, tostring
local lower, find = string.lower, string.find
local KNOWN = {}
for _, f in pairs({...}) do KNOWN[f] = true end
local function fail(msg) error({err = "ERR " .. msg}) end
local function is_string(v) local t = type(v) return t == "string" or t == "number" end
return function()
    local registered = {}
    local seen = {}
    local function register(...)
        local n = select("#", ...)
        if n < 1 or n > 2 then fail("wrong number of arguments to redis.register_function") end
        local name, callback, desc
        local flags = {}
        if n == 1 then
            local t = ...
            if type(t) ~= "table" then
                fail("calling redis.register_function with a single argument is only "
                     .. "applicable to Lua table (representing named arguments).")
            end
            for k, v in pairs(t) do
                if not is_string(k) then
                    fail("named argument key given to redis.register_function is not a string")
                end
                local key = lower(tostring(k))
                if key == "function_name" then
                    if not is_string(v) then
                        fail("function_name argument given to redis.register_function must "
                             .. "be a string")
                    end
                    name = tostring(v)
                elseif key == "description" then
                    if not is_string(v) then
                        fail("description argument given to redis.register_function must be "
                             .. "a string")
                    end
                    desc = tostring(v)
                elseif key == "callback" then
                    if type(v) ~= "function" then
                        fail("callback argument given to redis.register_function must be a "
                             .. "function")
                    end
                    callback = v
                elseif key == "flags" then
                    if type(v) ~= "table" then
                        fail("flags argument to redis.register_function must be a table "
                             .. "representing function flags")
                    end
                    for _, f in pairs(v) do
                        if not is_string(f) or not KNOWN[lower(tostring(f))] then
                            fail("unknown flag given")
                        end
                        flags[#flags + 1] = lower(tostring(f))
                    end
                else
                    fail("unknown argument given to redis.register_function")
                end
            end
            if not name then fail("redis.register_function must get a function name argument") end
            if not callback then fail("redis.register_function must get a callback argument") end
        else
            local a, b = ...
            if not is_string(a) then
                fail("first argument to redis.register_function must be a string")
            end
            if type(b) ~= "function" then
                fail("second argument to redis.register_function must be a function")
            end
            name, callback = tostring(a), b
        end
        if not find(name, "^[A-Za-z0-9_]+$") then
            fail("Library names can only contain letters, numbers, or underscores(_) and must "
                 .. "be at least one character long")
        end
        if seen[lower(name)] then fail("Function already exists in the library") end
        seen[lower(name)] = true
        registered[#registered + 1] = {name = name, callback = callback, description = desc,
                                       flags = flags}
    end
    return register, registered
end
"""


class FunctionError(Exception):
    """A library could not be created or joined; ``args[0]`` is Redis's text (no ERR)."""


class Function(FunctionCore):
    """One registered function: its Lua callback and what FUNCTION LIST shows (name,
    flags, C-entry slot and no_writes are FunctionCore's, C fields for FCALL)."""

    # (no link back to its Library: without that cycle a replaced library's functions go
    # as soon as it does, and their C-entry slots with them)
    __slots__ = ("callback", "description", "__weakref__")

    def __init__(self, name: bytes, callback: Any, description: bytes | None,
                 flags: frozenset[str], slot: int = 0) -> None:
        self.name = name
        self.callback = callback
        self.description = description
        self.flags = flags
        self.slot = slot  # its place in the engine's C entry (FCALL from C), 0: none
        self.no_writes = "no-writes" in flags  # (read by every FCALL)

    def ordered_flags(self) -> list[str]:
        return [f for f in FUNCTION_FLAGS if f in self.flags]


class Library:
    """A loaded library: name, engine, source code and functions (in registration order)."""

    __slots__ = ("name", "engine", "code", "functions")

    def __init__(self, name: bytes, engine: bytes, code: bytes) -> None:
        self.name = name
        self.engine = engine
        self.code = code
        self.functions: dict[bytes, Function] = {}


class LibrarySet:
    """Redis's functionsLibCtx: libraries by name, functions by lower-cased name."""

    def __init__(self) -> None:
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}

    def link(self, lib: Library) -> None:
        self.libraries[lib.name] = lib
        for fn in lib.functions.values():
            self.functions[fn.name.lower()] = fn

    def unlink(self, lib: Library) -> None:
        self.libraries.pop(lib.name, None)
        for fn in lib.functions.values():
            if self.functions.get(fn.name.lower()) is fn:
                del self.functions[fn.name.lower()]

    def collision(self, lib: Library) -> Function | None:
        for fn in lib.functions.values():
            if fn.name.lower() in self.functions:
                return fn
        return None

    @property
    def function_count(self) -> int:
        return len(self.functions)


def parse_metadata(code: bytes) -> tuple[bytes, bytes, int]:
    """(engine, library name, offset of the body) from the ``#!<engine> name=<lib>`` line."""
    if not code.startswith(b"#!"):
        raise FunctionError("Missing library metadata")
    end = code.find(b"\n")
    if end < 0:
        raise FunctionError("Invalid library metadata")
    parts = split_args(code[:end])
    if not parts:
        raise FunctionError("Invalid library metadata")
    engine = parts[0][2:]
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise FunctionError(
                    "Invalid metadata value, name argument was given multiple times")
            name = part[5:]
            continue
        raise FunctionError("Invalid metadata value given: "
                            + part.split(b"\0", 1)[0].decode("utf-8", "surrogateescape"))
    if name is None:
        raise FunctionError("Library name was not given")
    return engine, name, end


def valid_name(name: bytes) -> bool:
    return bool(name) and all(ch in _NAME_CHARS for ch in name)


class FunctionStore:
    """The server's function libraries and how they are created, joined and dumped."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.live = LibrarySet()
        self._register_factory: Any = None

    @property
    def live(self) -> LibrarySet:
        """The libraries in use (FLUSH and RESTORE FLUSH replace the set)."""
        return self._live

    @live.setter
    def live(self, libraries: LibrarySet) -> None:
        self._live = libraries
        engine = getattr(self.server, "function_engine", None)
        if engine is not None:  # FCALL reads the engine's copy (else it takes it from here)
            engine.function_table = libraries.functions

    # -- creating libraries ------------------------------------------------------------
    def create(self, code: bytes, replace: bool, target: LibrarySet | None = None,
               timeout: float | None = None) -> bytes:
        """Load ``code`` into ``target`` (the live set by default); the library's name.

        Raises FunctionError with Redis's text; on failure ``target`` is unchanged.
        """
        target = self.live if target is None else target
        engine, name, body_at = parse_metadata(code)
        if not valid_name(name):
            raise FunctionError(_BAD_NAME)
        engine_name = ENGINES.get(engine.lower())
        if engine_name is None:
            raise FunctionError("Engine '" + engine.decode("utf-8", "surrogateescape")
                                + "' not found")
        old = target.libraries.get(name)
        if old is not None and not replace:
            raise FunctionError("Library '" + name.decode("utf-8", "surrogateescape")
                                + "' already exists")
        if old is not None:
            target.unlink(old)
        try:
            lib = self._run_library(name, engine_name, code, code[body_at:], timeout)
            clash = target.collision(lib)
            if clash is not None:
                raise FunctionError("Function " + clash.name.decode("utf-8", "surrogateescape")
                                    + " already exists")
        except FunctionError:
            if old is not None:
                target.link(old)
            raise
        target.link(lib)
        return name

    def _run_library(self, name: bytes, engine_name: bytes, code: bytes, body: bytes,
                     timeout: float | None) -> Library:
        from pykv.scripting.engine import get_function_engine

        engine = get_function_engine(self.server)
        if self._register_factory is None:
            self._register_factory = engine.lua.execute(
                _REGISTER_LUA, *(f.encode() for f in FUNCTION_FLAGS))
        register, registered = self._register_factory()
        if timeout is None:
            timed_out = _never
        else:
            deadline = time.monotonic() + timeout
            timed_out = lambda: time.monotonic() > deadline  # noqa: E731
        ok, message = engine.api.load_library(body, register, timed_out)
        if not ok:
            if not isinstance(message, bytes):
                message = str(message).encode()
            if message.startswith(b"Error compiling function: "):
                raise FunctionError(message.decode("utf-8", "surrogateescape"))
            raise FunctionError("Error registering functions: "
                                + message.decode("utf-8", "surrogateescape"))
        lib = Library(name, engine_name, code)
        for i in range(1, len(registered) + 1):
            entry = registered[i]
            fname = entry[b"name"]
            flags_table = entry[b"flags"]
            flags = frozenset(flags_table[j].decode()
                              for j in range(1, len(flags_table) + 1))
            callback = entry[b"callback"]
            slot = engine.function_slot(callback)
            fn = lib.functions[fname] = Function(fname, callback, entry[b"description"],
                                                 flags, slot)
            if slot:
                weakref.finalize(fn, engine.release_slot, slot)
        # ``readonly`` in the prelude maps the body's ``redis`` proxy to a table that holds
        # ``register``, and so ``registered`` and the callbacks: a callback that reaches the
        # proxy (an upvalue, its environment) would make that weak-keyed entry a cycle Lua
        # 5.1 never collects, and each FUNCTION LOAD REPLACE would leak its library
        for i in range(len(registered), 0, -1):
            registered[i] = None
        if not lib.functions:
            raise FunctionError("No functions registered")
        return lib

    # -- whole-set operations ------------------------------------------------------------
    def delete(self, name: bytes) -> bool:
        lib = self.live.libraries.get(name)
        if lib is None:
            return False
        self.live.unlink(lib)
        return True

    def flush(self) -> None:
        self.live = LibrarySet()
        engine = getattr(self.server, "function_engine", None)
        if engine is not None:  # the flushed libraries' Lua memory goes now, as in Redis
            engine.collect()

    def join(self, incoming: LibrarySet, replace: bool) -> None:
        """Add ``incoming``'s libraries to the live set (Redis's libraryJoin)."""
        live = self.live
        replaced: list[Library] = []
        for lib in incoming.libraries.values():
            old = live.libraries.get(lib.name)
            if old is None:
                continue
            if not replace:
                self._relink(replaced)
                raise FunctionError("Library " + lib.name.decode("utf-8", "surrogateescape")
                                    + " already exists")
            live.unlink(old)
            replaced.append(old)
        for lib in incoming.libraries.values():
            clash = live.collision(lib)
            if clash is not None:
                self._relink(replaced)
                raise FunctionError("Function " + clash.name.decode("utf-8", "surrogateescape")
                                    + " already exists")
        for lib in incoming.libraries.values():
            live.link(lib)

    def _relink(self, libs: list[Library]) -> None:
        for lib in libs:
            self.live.link(lib)

    # -- payloads ----------------------------------------------------------------------
    def sources(self) -> list[bytes]:
        return [lib.code for lib in self.live.libraries.values()]

    def dump(self) -> bytes:
        w = RdbWriter(compress=getattr(self.server.config, "rdbcompression", True))
        for code in self.sources():
            w.byte(enc.OP_FUNCTION2)
            w.string(code)
        w.raw(_U16.pack(enc.RDB_VERSION))
        w.raw(crc64(0, bytes(w.buf)).to_bytes(8, "little"))
        return bytes(w.buf)

    def parse_payload(self, payload: bytes) -> LibrarySet:
        """The libraries of a FUNCTION DUMP payload (already verified), as a new set."""
        incoming = LibrarySet()
        r = RdbReader(payload[:-10])
        while r.remaining() > 0:
            try:
                kind = r.byte()
            except RdbFormatError:
                raise FunctionError("can not read data type") from None
            if kind == enc.OP_FUNCTION_PRE_GA:
                # 7.0 release candidates: library name, engine, description, code
                for what in ("library name", "engine name", "library description",
                             "library code"):
                    try:
                        r.string()
                    except RdbFormatError:
                        raise FunctionError("Failed loading " + what) from None
                raise FunctionError("Pre-GA function format not supported")
            if kind != enc.OP_FUNCTION2:
                raise FunctionError("given type is not a function")
            try:
                code = r.string()
            except RdbFormatError:
                raise FunctionError("Failed loading library payload") from None
            self.create(bytes(code), False, incoming)
        return incoming

    def restore_sources(self, sources: list[bytes]) -> None:
        """Load libraries read from an RDB file (replacing same-named ones)."""
        incoming = LibrarySet()
        try:
            for code in sources:
                self.create(bytes(code), True, incoming)
            self.join(incoming, replace=True)
        except FunctionError as exc:
            raise RdbFormatError(f"Failed loading library: {exc.args[0]}") from None


def _never() -> bool:
    return False


def get_store(server: Server) -> FunctionStore:
    store = getattr(server, "functions", None)
    if store is None:
        store = server.functions = FunctionStore(server)
    return store


def install(server: Server) -> FunctionStore:
    """Give the server its function store and the hooks the RDB saver/loader call."""
    store = get_store(server)
    server.function_library_sources = store.sources
    server.restore_function_libraries = store.restore_sources
    return store
