# cython: language_level=3
"""``redis.call`` and ``redis.pcall`` as Lua C functions, as Redis has them.

Without this module a script's ``redis.call`` is a Python function behind lupa: every call
converts its arguments from Lua to Python objects, packs them into a tuple, goes through
two Python call levels, and converts the reply back (a status or an array as RESP bytes
that Lua code parses). Here the Lua function is C: it reads the arguments off the Lua stack
with ``lua_tolstring`` straight into ``bytes`` (numbers with ``%.17g``, as Redis's
``luaArgsToRedisArgv``), calls ``Engine._execute`` at C level and pushes the reply with
``lua_push*`` (bulk, integer, nil/false, status and flat arrays directly; anything else as
RESP through the prelude's ``resp_to_lua``, the same conversion as before). Errors are the
same Lua error tables as the Python path raised or returned.

How it reaches Lua. lupa does not expose the ``lua_State`` of a ``LuaRuntime``, but its
``lupa.lua51`` extension exports the whole Lua C API (``lua_pushcclosure`` & co. are
dynamic symbols) and keeps ``package.loadlib``. So: (1) the API's entry points are looked
up with ``dlopen(lupa.lua51.__file__, RTLD_NOLOAD)`` + ``dlsym`` — the very copy of Lua that
runs the state, never a second Lua linked in (that would corrupt it: two copies of the
allocator/GC-facing code working on one state); (2) the prelude's Lua calls
``package.loadlib(<this file>, "luaopen_pykv_luacall")``, so Lua itself hands this module
its state, and the opener returns the two closures. Both steps fail cleanly (ImportError /
None) and the engine then keeps the Python path.

Each closure has two upvalues: a light userdata pointing at its ``_Binding`` (a weak
reference to the engine, kept alive for the life of the process, a few dozen bytes per
engine) and a table whose ``[1]`` is the prelude's ``resp_to_lua``.

The C functions take the GIL (lupa releases it while Lua runs; the C entry's runs keep
it, the count hook lets other threads have it) only for the part that touches Python, and
raise Lua errors (``lua_error``, a longjmp) only after releasing it, so no Python frame is
ever jumped over.
"""
import weakref

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from libc.limits cimport LLONG_MIN
from libc.stdio cimport snprintf
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

from pykv.protocol._decimal cimport LL_DIGITS_SIZE, ll_digits
from pykv.protocol.types import OK, RawReply, SimpleString

from pykv.scripting.engine cimport Engine, RunContext, reply_to_lua

cdef extern from "Python.h" nogil:
    ctypedef struct PyThreadState
    int PyGILState_Check()
    PyThreadState *PyEval_SaveThread()
    void PyEval_RestoreThread(PyThreadState *tstate)

cdef extern from "Python.h":
    object PyType_GenericAlloc(PyTypeObject *type, Py_ssize_t nitems)

cdef extern from "<sys/mman.h>" nogil:
    void *mmap(void *addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void *addr, size_t length)
    int PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE
    void *MAP_FAILED

cdef extern from "<dlfcn.h>" nogil:
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int RTLD_NOW
    int RTLD_NOLOAD

# Lua 5.1's C API, as lupa's bundled Lua declares it (lua.h, 5.1.x)
cdef extern from *:
    """
    typedef struct lua_State lua_State;
    typedef struct lua_Debug lua_Debug;
    """
    ctypedef struct lua_State
    ctypedef struct lua_Debug

ctypedef int (*lua_CFunction)(lua_State *L) noexcept nogil
ctypedef void (*lua_Hook)(lua_State *L, lua_Debug *ar) noexcept nogil
ctypedef void *(*lua_Alloc)(void *ud, void *ptr, size_t osize, size_t nsize) noexcept nogil

cdef enum:
    LUA_TNIL = 0
    LUA_TBOOLEAN = 1
    LUA_TTABLE = 5
    LUA_REGISTRYINDEX = -10000
    LUA_MULTRET = -1
    LUA_TNUMBER = 3
    LUA_TSTRING = 4
    LUA_GLOBALSINDEX = -10002
    LUA_TFUNCTION = 6
    LUA_MASKCOUNT = 8  # 1 << LUA_HOOKCOUNT
    HOOK_COUNT = 100000  # the count hook's period (Redis's luaMaskCountHook: 100000 too)

# the prelude's c_entry table: what run_script/run_function read from it
cdef enum:
    E_HIDDEN = 1      # EVAL's globals (the real table): KEYS, ARGV
    E_RUN_STATE = 2   # {protocol of redis.call replies, environment of loadstring}
    E_FINISH = 3      # finish(ok, res, resp)
    E_HANDLER = 4     # Redis's __redis__err__handler
    E_SCRIPTS = 5     # sha -> compiled script
    E_GLOBALS = 6     # EVAL's environment
    E_FUNCTIONS = 7   # slot -> function callback
    E_FN_GLOBALS = 8  # FCALL's environment
    E_HOOK = 9        # the prelude's count hook (busy scripts, SCRIPT KILL)
    E_ERR = 10        # "err" and "ok": the error and status tables' keys
    E_OK = 11

cdef inline int upvalue(int i) noexcept nogil:
    return LUA_GLOBALSINDEX - i


cdef struct LuaApi:
    int (*gettop)(lua_State *L) noexcept nogil
    void (*settop)(lua_State *L, int idx) noexcept nogil
    int (*type)(lua_State *L, int idx) noexcept nogil
    const char *(*tolstring)(lua_State *L, int idx, size_t *len) noexcept nogil
    double (*tonumber)(lua_State *L, int idx) noexcept nogil
    void *(*touserdata)(lua_State *L, int idx) noexcept nogil
    void (*pushlstring)(lua_State *L, const char *s, size_t len) noexcept nogil
    void (*pushstring)(lua_State *L, const char *s) noexcept nogil
    void (*pushnumber)(lua_State *L, double n) noexcept nogil
    void (*pushboolean)(lua_State *L, int b) noexcept nogil
    void (*pushnil)(lua_State *L) noexcept nogil
    void (*pushvalue)(lua_State *L, int idx) noexcept nogil
    void (*pushlightuserdata)(lua_State *L, void *p) noexcept nogil
    void (*pushcclosure)(lua_State *L, lua_CFunction fn, int n) noexcept nogil
    void (*createtable)(lua_State *L, int narr, int nrec) noexcept nogil
    void (*setfield)(lua_State *L, int idx, const char *k) noexcept nogil
    void (*rawgeti)(lua_State *L, int idx, int n) noexcept nogil
    void (*rawseti)(lua_State *L, int idx, int n) noexcept nogil
    int (*checkstack)(lua_State *L, int extra) noexcept nogil
    void (*call)(lua_State *L, int nargs, int nresults) noexcept nogil
    int (*error)(lua_State *L) noexcept nogil
    int (*pcall)(lua_State *L, int nargs, int nresults, int errfunc) noexcept nogil
    void (*rawget)(lua_State *L, int idx) noexcept nogil
    int (*toboolean)(lua_State *L, int idx) noexcept nogil
    int (*ref)(lua_State *L, int t) noexcept nogil
    void (*rawset)(lua_State *L, int idx) noexcept nogil
    int (*sethook)(lua_State *L, lua_Hook func, int mask, int count) noexcept nogil
    lua_Alloc (*getallocf)(lua_State *L, void **ud) noexcept nogil
    void (*setallocf)(lua_State *L, lua_Alloc f, void *ud) noexcept nogil

cdef LuaApi lua

# reply tags of Engine._execute (pykv.scripting.engine)
cdef enum:
    TAG_VALUE = 0
    TAG_RESP = 1
    TAG_ERROR = 2
    TAG_ARG_ERROR = 3
    TAG_STATUS = 4
    TAG_REPLY = 5

# what the Lua side of a call does once the GIL is released
cdef enum:
    DONE = 0          # one value pushed: return it
    RAISE = 1         # an error value pushed: lua_error it
    CONVERT = 2       # resp_to_lua and a RESP string pushed: call it, return its value

cdef const char *ERR_NO_ARGS = b"ERR Please specify at least one argument for this redis lib call"
cdef const char *ERR_ARGS = b"ERR Lua redis lib command arguments must be strings or integers"


cdef void *_symbol(void *handle, const char *name) except NULL:
    cdef void *p = dlsym(handle, name)
    if p == NULL:
        raise ImportError(f"lupa's Lua has no {name.decode()}")
    return p


cdef bint _loaded = False


def load_api(str lupa_path) -> None:
    """Find the Lua C API of the already loaded ``lupa.lua51`` (never load another)."""
    global _loaded
    if _loaded:
        return
    cdef bytes path = lupa_path.encode()
    cdef void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD)
    if h == NULL:
        raise ImportError("lupa.lua51 is not loaded")
    lua.gettop = <int (*)(lua_State *) noexcept nogil>_symbol(h, "lua_gettop")
    lua.settop = <void (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_settop")
    lua.type = <int (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_type")
    lua.tolstring = <const char *(*)(lua_State *, int, size_t *) noexcept nogil>_symbol(
        h, "lua_tolstring")
    lua.tonumber = <double (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_tonumber")
    lua.touserdata = <void *(*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_touserdata")
    lua.pushlstring = <void (*)(lua_State *, const char *, size_t) noexcept nogil>_symbol(
        h, "lua_pushlstring")
    lua.pushstring = <void (*)(lua_State *, const char *) noexcept nogil>_symbol(
        h, "lua_pushstring")
    lua.pushnumber = <void (*)(lua_State *, double) noexcept nogil>_symbol(h, "lua_pushnumber")
    lua.pushboolean = <void (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_pushboolean")
    lua.pushnil = <void (*)(lua_State *) noexcept nogil>_symbol(h, "lua_pushnil")
    lua.pushvalue = <void (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_pushvalue")
    lua.pushlightuserdata = <void (*)(lua_State *, void *) noexcept nogil>_symbol(
        h, "lua_pushlightuserdata")
    lua.pushcclosure = <void (*)(lua_State *, lua_CFunction, int) noexcept nogil>_symbol(
        h, "lua_pushcclosure")
    lua.createtable = <void (*)(lua_State *, int, int) noexcept nogil>_symbol(
        h, "lua_createtable")
    lua.setfield = <void (*)(lua_State *, int, const char *) noexcept nogil>_symbol(
        h, "lua_setfield")
    lua.rawgeti = <void (*)(lua_State *, int, int) noexcept nogil>_symbol(h, "lua_rawgeti")
    lua.rawseti = <void (*)(lua_State *, int, int) noexcept nogil>_symbol(h, "lua_rawseti")
    lua.checkstack = <int (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_checkstack")
    lua.call = <void (*)(lua_State *, int, int) noexcept nogil>_symbol(h, "lua_call")
    lua.error = <int (*)(lua_State *) noexcept nogil>_symbol(h, "lua_error")
    lua.pcall = <int (*)(lua_State *, int, int, int) noexcept nogil>_symbol(h, "lua_pcall")
    lua.rawget = <void (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_rawget")
    lua.toboolean = <int (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_toboolean")
    lua.ref = <int (*)(lua_State *, int) noexcept nogil>_symbol(h, "luaL_ref")
    lua.rawset = <void (*)(lua_State *, int) noexcept nogil>_symbol(h, "lua_rawset")
    lua.sethook = <int (*)(lua_State *, lua_Hook, int, int) noexcept nogil>_symbol(
        h, "lua_sethook")
    lua.getallocf = <lua_Alloc (*)(lua_State *, void **) noexcept nogil>_symbol(
        h, "lua_getallocf")
    lua.setallocf = <void (*)(lua_State *, lua_Alloc, void *) noexcept nogil>_symbol(
        h, "lua_setallocf")
    _loaded = True


cdef class _Binding:
    """What a pair of closures calls: a weak reference to its engine; and EVAL's entry:
    the main state and a registry reference to the prelude's ``c_entry``."""
    cdef object engine_ref
    cdef lua_State *L
    cdef int entry  # 0 until set_entry ran


cdef _Binding _pending = None  # the binding luaopen_pykv_luacall hands to its closures
cdef object _SimpleString = SimpleString
cdef object _OK = OK
cdef object _RawReply = RawReply


def bind(engine: Engine) -> _Binding:
    """Make the next ``luaopen_pykv_luacall`` (the prelude's loadlib) serve ``engine``."""
    global _pending
    cdef _Binding b = _Binding()
    b.engine_ref = weakref.ref(engine)
    Py_INCREF(b)  # referenced from Lua as a light userdata: it must outlive the state
    _pending = b
    return b


cdef object _lua_value(lua_State *L, int idx):
    """One of ``finish``'s results as lupa would give it (strings as bytes)."""
    cdef int t = lua.type(L, idx)
    cdef size_t size
    cdef const char *s
    cdef double d
    if t == LUA_TSTRING:
        s = lua.tolstring(L, idx, &size)
        return PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
    if t == LUA_TNUMBER:
        d = lua.tonumber(L, idx)
        if -9.2e18 < d < 9.2e18 and d == <double><long long>d:
            return <long long>d
        return d
    if t == LUA_TBOOLEAN:
        return bool(lua.toboolean(L, idx))
    return None


cdef inline void _push_array(lua_State *L, list items, Py_ssize_t start,
                             Py_ssize_t end) noexcept:
    """``items[start:end]`` (all bytes) as a Lua array."""
    cdef Py_ssize_t i
    lua.createtable(L, <int>(end - start), 0)
    for i in range(start, end):
        _push_bytes(L, <object>PyList_GET_ITEM(items, i))
        lua.rawseti(L, -2, <int>(i - start + 1))


def run_script(_Binding b, bytes sha, int resp, Py_ssize_t nkeys, list params) -> object:
    """EVAL's run from C for the cached script ``sha`` with KEYS = the first ``nkeys`` of
    ``params`` (bytes), ARGV the rest: a ``RawReply`` for the usual results, else what the
    prelude's ``run`` returns, (True, RESP) or (False, message[, source, line]). The
    state's stack is left as found."""
    return _run(b, sha, 0, resp, nkeys, params)


def run_function(_Binding b, int slot, int resp, Py_ssize_t nkeys, list params) -> object:
    """FCALL's run from C: the function in the entry's slot table at ``slot`` called with
    (keys, args) tables, as the prelude's ``run_callback`` calls it; results as
    ``run_script``'s."""
    return _run(b, None, slot, resp, nkeys, params)


# -- small blocks: a free list per size class --------------------------------------------
# Each script run allocates a few small blocks (KEYS/ARGV and reply tables, their parts)
# that the GC frees soon after; through lupa's allocator each is a realloc()/free(). Blocks
# of up to POOL_MAX bytes instead come from one region per state (reserved, touched as
# used) and go back to a free list of their 16-byte class: Lua passes every block's size
# when it frees or resizes it, so no header is needed. Everything else, and every block
# that was not the pool's (those from before it, or once the region is used up), stays
# with lupa's allocator.
cdef enum:
    POOL_MAX = 128
    POOL_CLASSES = POOL_MAX // 16
    POOL_REGION = 32 * 1024 * 1024


cdef struct Pool:
    lua_Alloc base  # lupa's allocator, and its argument
    void *base_ud
    char *start
    char *end
    char *next  # the region's unused part starts here
    void *free[POOL_CLASSES]
    void *state  # the main lua_State: lua_close frees its block last


cdef inline int _pool_class(size_t size) noexcept nogil:
    return <int>((size - 1) >> 4)


cdef void *_pool_get(Pool *pool, size_t size) noexcept nogil:
    cdef int c = _pool_class(size)
    cdef void *block = pool.free[c]
    if block != NULL:
        pool.free[c] = (<void **>block)[0]
        return block
    cdef size_t width = (<size_t>c + 1) << 4
    if pool.next + width <= pool.end:
        block = pool.next
        pool.next += width
        return block
    return pool.base(pool.base_ud, NULL, 0, size)


cdef inline void _pool_put(Pool *pool, void *block, size_t size) noexcept nogil:
    cdef int c = _pool_class(size)
    (<void **>block)[0] = pool.free[c]
    pool.free[c] = block


cdef void *_pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize) noexcept nogil:
    """The state's lua_Alloc (see above)."""
    cdef Pool *pool = <Pool *>ud
    cdef void *block
    cdef bint mine = ptr != NULL and pool.start <= <char *>ptr < pool.end
    if not mine:
        if ptr == NULL and 0 < nsize <= POOL_MAX:
            return _pool_get(pool, nsize)
        block = pool.base(pool.base_ud, ptr, osize, nsize)
        if ptr == pool.state and nsize == 0:  # lua_close's last free: the pool goes too
            munmap(pool.start, POOL_REGION)
            free(pool)
        return block
    if nsize == 0:
        _pool_put(pool, ptr, osize)
        return NULL
    if nsize <= POOL_MAX and _pool_class(nsize) == _pool_class(osize):
        return ptr
    if nsize <= POOL_MAX:
        block = _pool_get(pool, nsize)
    else:
        block = pool.base(pool.base_ud, NULL, 0, nsize)
    if block == NULL:
        return NULL  # (Lua keeps the old block and raises its memory error)
    memcpy(block, ptr, osize if osize < nsize else nsize)
    _pool_put(pool, ptr, osize)
    return block


cdef void _use_pool(lua_State *L) noexcept nogil:
    """Put the pool in front of the state's allocator (once; nothing when the region
    cannot be had)."""
    cdef void *ud = NULL
    cdef lua_Alloc base = lua.getallocf(L, &ud)
    if base == _pool_alloc:
        return
    cdef void *region = mmap(NULL, POOL_REGION, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    if region == MAP_FAILED:
        return
    cdef Pool *pool = <Pool *>calloc(1, sizeof(Pool))
    if pool == NULL:
        return
    pool.base = base
    pool.base_ud = ud
    pool.start = pool.next = <char *>region
    pool.end = pool.start + POOL_REGION
    pool.state = <void *>L
    lua.setallocf(L, _pool_alloc, pool)


def pool_used(_Binding b) -> int:
    """How much of the state's small-block region has been handed out (-1: no pool)."""
    cdef void *ud = NULL
    if lua.getallocf(b.L, &ud) != _pool_alloc:
        return -1
    cdef Pool *pool = <Pool *>ud
    return pool.next - pool.start


cdef char _HOOK_KEY = 0  # its address: the registry key of the prelude's count hook


cdef void _count_hook(lua_State *L, lua_Debug *ar) noexcept nogil:
    """The count hook of a run (Redis's luaMaskCountHook): calls the prelude's ``hook``,
    as the debug library's hook would, without a ``debug.sethook`` on each run. (Lua
    threads a script creates inherit it, as in Redis.) A run holds the GIL: here other
    Python threads (the AOF's fsync) get their turn."""
    cdef PyThreadState *ts
    if PyGILState_Check():
        ts = PyEval_SaveThread()
        PyEval_RestoreThread(ts)
    lua.pushlightuserdata(L, <void *>&_HOOK_KEY)
    lua.rawget(L, LUA_REGISTRYINDEX)
    lua.call(L, 0, 0)  # (its error, a kill, propagates to the script as the hook's would)


cdef inline void _set_field(lua_State *L, int table, const char *key, int value) noexcept:
    """``table[key] = <value on the stack at value>`` (raw; ``table`` an absolute index)."""
    lua.pushstring(L, key)
    lua.pushvalue(L, value)
    lua.rawset(L, table)


cdef object _run(_Binding b, bytes sha, int slot, int resp, Py_ssize_t nkeys, list params):
    """A script (``sha``) or a function (``slot``, when ``sha`` is None) run: its setup
    (KEYS/ARGV, the run state, the count hook), the call under Redis's error handler, the
    hook off and the result."""
    cdef lua_State *L = b.L
    cdef int base = lua.gettop(L), status, i, top
    cdef Py_ssize_t n = PyList_GET_SIZE(params)
    for i in range(n):  # (from the request parser they are; anything else is made bytes)
        if type(<object>PyList_GET_ITEM(params, i)) is not bytes:
            params = [bytes(p) for p in params]
            break
    if not lua.checkstack(L, 8):
        return False, b"ERR Lua stack exhausted"
    lua.rawgeti(L, LUA_REGISTRYINDEX, b.entry)  # base+1: c_entry
    lua.rawgeti(L, base + 1, E_HANDLER)  # base+2: the error handler
    if sha is not None:
        lua.rawgeti(L, base + 1, E_SCRIPTS)
        _push_bytes(L, sha)
        lua.rawget(L, -2)  # base+4: the compiled script
    else:
        lua.rawgeti(L, base + 1, E_FUNCTIONS)
        lua.rawgeti(L, -1, slot)  # base+4: the function
    if lua.type(L, -1) != LUA_TFUNCTION:
        lua.settop(L, base)
        return False, b"ERR the script is not compiled"
    lua.rawgeti(L, base + 1, E_RUN_STATE)  # base+5: current protocol, environment
    lua.pushnumber(L, 2)
    lua.rawseti(L, base + 5, 1)
    lua.rawgeti(L, base + 1, E_GLOBALS if sha is not None else E_FN_GLOBALS)
    lua.rawseti(L, base + 5, 2)
    lua.settop(L, base + 4)
    _push_array(L, params, 0, nkeys)  # base+5: KEYS
    _push_array(L, params, nkeys, n)  # base+6: ARGV
    if sha is not None:  # KEYS and ARGV as globals; functions get them as arguments
        lua.rawgeti(L, base + 1, E_HIDDEN)
        _set_field(L, base + 7, "KEYS", base + 5)
        _set_field(L, base + 7, "ARGV", base + 6)
        lua.settop(L, base + 4)
    lua.sethook(L, _count_hook, LUA_MASKCOUNT, HOOK_COUNT)
    # (with the GIL: each redis.call would take it back at once; the hook lets it go)
    status = lua.pcall(L, 2 if sha is None else 0, 1, base + 2)
    lua.sethook(L, NULL, 0, 0)  # (also a killed script's line hook)
    # base+3: the scripts (functions) table, base+4: result or error
    if status == 0:  # the usual results, framed as the prelude's encode would frame them
        out = _simple_result(L, base + 4, base + 1)
        if out is not None:
            lua.settop(L, base)
            # (RawReply's object.__new__ without the call: no arguments, no __init__)
            reply = PyType_GenericAlloc(<PyTypeObject *>_RawReply, 0)
            reply.data = out
            return reply
    lua.rawgeti(L, base + 1, E_FINISH)  # finish(ok, res, resp)
    lua.pushboolean(L, status == 0)
    lua.pushvalue(L, base + 4)
    lua.pushnumber(L, resp)
    top = lua.gettop(L) - 4
    if lua.pcall(L, 3, LUA_MULTRET, 0) != 0:
        return _entry_failure(L, base)
    result = tuple([_lua_value(L, i) for i in range(top + 1, lua.gettop(L) + 1)])
    lua.settop(L, base)
    return result


cdef bytes _framed(char prefix, const char *s, size_t size, bint bulk, bint clean):
    """``$<n>\\r\\n<s>\\r\\n`` (bulk) or ``<prefix><s>\\r\\n`` (a status or
    an integer; ``clean``: CR and LF become spaces, as the prelude's ``clean``)."""
    cdef char head[32]
    cdef char digits[LL_DIGITS_SIZE]
    cdef Py_ssize_t hlen = 1, k
    cdef size_t i
    cdef char *p
    if bulk:
        head[0] = 36  # '$'
        k = ll_digits(digits, <long long>size)
        memcpy(head + 1, digits + LL_DIGITS_SIZE - k, k)
        hlen = 1 + k
        head[hlen] = 13
        head[hlen + 1] = 10
        hlen += 2
    else:
        head[0] = prefix
    cdef bytes out = PyBytes_FromStringAndSize(NULL, hlen + <Py_ssize_t>size + 2)
    p = PyBytes_AS_STRING(out)
    memcpy(p, head, hlen)
    memcpy(p + hlen, s, size)
    if clean:
        for i in range(size):
            if p[hlen + i] == 13 or p[hlen + i] == 10:
                p[hlen + i] = 32
    memcpy(p + hlen + size, b"\r\n", 2)
    return out


cdef object _simple_result(lua_State *L, int idx, int entry):
    """A script's result as RESP when it is a string, a number or a status table (the
    same bytes for every protocol); None for anything else (the prelude encodes it).
    (``entry``: the c_entry table's index, for the "err" and "ok" keys.)"""
    cdef int t = lua.type(L, idx)
    cdef size_t size
    cdef const char *s
    cdef double d
    cdef long long v
    cdef char num[LL_DIGITS_SIZE]
    cdef Py_ssize_t nlen
    if t == LUA_TSTRING:
        s = lua.tolstring(L, idx, &size)
        return _framed(0, s, size, True, False)
    if t == LUA_TNUMBER:  # the prelude's to_integer: truncated, out of range as INT64_MIN
        d = lua.tonumber(L, idx)
        if d != d or d >= 9223372036854775807.0 or d < -9223372036854775808.0:
            v = LLONG_MIN
        else:
            v = <long long>d
        nlen = ll_digits(num, v)
        return _framed(58, num + LL_DIGITS_SIZE - nlen, <size_t>nlen, False, False)  # ':'
    if t != LUA_TTABLE:
        return None
    lua.rawgeti(L, entry, E_ERR)
    lua.rawget(L, idx)
    t = lua.type(L, -1)
    lua.settop(L, -2)
    if t == LUA_TSTRING:  # an error: the prelude's failure path
        return None
    lua.rawgeti(L, entry, E_OK)
    lua.rawget(L, idx)
    if lua.type(L, -1) != LUA_TSTRING:
        lua.settop(L, -2)
        return None
    s = lua.tolstring(L, -1, &size)
    out = _framed(43, s, size, False, True)  # '+'
    lua.settop(L, -2)
    return out


cdef tuple _entry_failure(lua_State *L, int base):
    """The prelude's own code failed (out of memory): its message as an error."""
    msg = _lua_value(L, -1)
    lua.settop(L, base)
    if type(msg) is not bytes:
        msg = b"unknown error"
    return False, b"ERR " + msg


cdef inline void _push_bytes(lua_State *L, object data) noexcept:
    lua.pushlstring(L, PyBytes_AS_STRING(data), <size_t>PyBytes_GET_SIZE(data))


cdef inline void _push_status(lua_State *L, object text) noexcept:
    """A status reply for Lua: ``{ok = text}`` (in a redis.call closure: its upvalue
    table's [2] is "ok")."""
    lua.createtable(L, 0, 1)
    lua.rawgeti(L, upvalue(2), 2)
    _push_bytes(L, text)
    lua.rawset(L, -3)


cdef void _push_error(lua_State *L, object text, bint counted) noexcept:
    """Redis's error table: ``{err = text}``, plus ``ignore_error_stats_update`` for a
    command's own error (the command already counted it)."""
    lua.createtable(L, 0, 2)
    _push_bytes(L, text)
    lua.setfield(L, -2, "err")
    if counted:
        lua.pushboolean(L, 1)
        lua.setfield(L, -2, "ignore_error_stats_update")


cdef bint _push_flat_array(lua_State *L, list items) noexcept:
    """A list of bulk strings and integers as a Lua array; False (nothing pushed) for any
    other element, which the RESP conversion then handles."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(items)
    cdef object item
    for i in range(n):
        item = <object>PyList_GET_ITEM(items, i)
        if type(item) is not bytes and type(item) is not int:
            return False
    if not lua.checkstack(L, 2):
        return False
    lua.createtable(L, <int>n, 0)
    for i in range(n):
        item = <object>PyList_GET_ITEM(items, i)
        if type(item) is bytes:
            _push_bytes(L, item)
        else:
            lua.pushnumber(L, <double>item)
        lua.rawseti(L, -2, <int>(i + 1))
    return True


cdef int _call_with_gil(lua_State *L, bint protected) noexcept with gil:
    """The Python part of a call: arguments, the command, its reply pushed. Returns what
    the caller still has to do (DONE, RAISE, CONVERT)."""
    cdef int n = lua.gettop(L), i, t
    cdef size_t size
    cdef const char *s
    cdef char dbuf[64]
    cdef int dlen
    cdef list argv
    cdef Engine engine
    cdef _Binding binding
    cdef tuple result
    cdef int tag
    cdef RunContext ctx
    try:
        if n == 0:
            _push_error(L, ERR_NO_ARGS, False)
            return RAISE if not protected else DONE
        argv = [None] * n
        for i in range(n):
            t = lua.type(L, i + 1)
            if t == LUA_TNUMBER:
                dlen = snprintf(dbuf, sizeof(dbuf), "%.17g", lua.tonumber(L, i + 1))
                argv[i] = PyBytes_FromStringAndSize(dbuf, dlen)
            elif t == LUA_TSTRING:
                s = lua.tolstring(L, i + 1, &size)
                argv[i] = PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
            else:
                lua.settop(L, 0)
                _push_error(L, ERR_ARGS, False)
                return RAISE if not protected else DONE
        lua.settop(L, 0)
        binding = <_Binding>lua.touserdata(L, upvalue(1))
        engine = binding.engine_ref()
        if engine is None:
            raise RuntimeError("the scripting engine is gone")
        ctx = engine.ctx
        result = engine._run_command(ctx, argv)
        if result[0] == TAG_REPLY:
            value = result[1]
            vtype = type(value)
            if vtype is bytes:  # (the usual replies without reply_to_lua's tuple)
                _push_bytes(L, value)
                return DONE
            if vtype is _SimpleString:  # (+OK, the usual one, without reading .data)
                _push_status(L, b"OK" if value is _OK else value.data)
                return DONE
            if vtype is list and _push_flat_array(L, value):
                return DONE
            result = reply_to_lua(value, ctx.lua_resp)
        tag = result[0]
        value = result[1]
        if tag == TAG_VALUE:
            t = type(value) is bytes
            if t:
                _push_bytes(L, value)
            elif value is None:
                lua.pushnil(L)
            elif value is False:
                lua.pushboolean(L, 0)
            else:
                lua.pushnumber(L, <double>value)
            return DONE
        if tag == TAG_STATUS:
            _push_status(L, value)
            return DONE
        if tag == TAG_RESP:
            lua.rawgeti(L, upvalue(2), 1)  # resp_to_lua
            _push_bytes(L, value)
            return CONVERT
        _push_error(L, value, tag == TAG_ERROR)
        return RAISE if not protected else DONE
    except BaseException as exc:  # as a Python exception raised into Lua by lupa was
        lua.settop(L, 0)
        text = exc.args[0] if exc.args else exc
        if not isinstance(text, str):
            text = str(text)
        _push_error(L, b"ERR " + text.encode("utf-8", "surrogateescape"), False)
        return RAISE


cdef int _finish(lua_State *L, int todo) noexcept nogil:
    if todo == CONVERT:
        lua.call(L, 1, 1)
    elif todo == RAISE:
        return lua.error(L)  # (a longjmp: the GIL is no longer held here)
    return 1


cdef int _redis_call(lua_State *L) noexcept nogil:
    return _finish(L, _call_with_gil(L, False))


cdef int _redis_pcall(lua_State *L) noexcept nogil:
    return _finish(L, _call_with_gil(L, True))


cdef int _open_with_gil(lua_State *L) noexcept with gil:
    global _pending
    cdef _Binding b = _pending
    if b is None:
        return 0
    _pending = None
    # the one argument: the table whose [1] holds resp_to_lua
    lua.pushlightuserdata(L, <void *>b)
    lua.pushvalue(L, 1)
    lua.pushcclosure(L, _redis_call, 2)
    lua.pushlightuserdata(L, <void *>b)
    lua.pushvalue(L, 1)
    lua.pushcclosure(L, _redis_pcall, 2)
    lua.pushlightuserdata(L, <void *>b)
    lua.pushcclosure(L, _set_entry, 1)
    return 3


cdef int _set_entry_with_gil(lua_State *L) noexcept with gil:
    cdef _Binding b = <_Binding>lua.touserdata(L, upvalue(1))
    b.L = L
    lua.pushlightuserdata(L, <void *>&_HOOK_KEY)  # registry[&_HOOK_KEY] = the hook
    lua.rawgeti(L, 1, E_HOOK)
    lua.rawset(L, LUA_REGISTRYINDEX)
    b.entry = lua.ref(L, LUA_REGISTRYINDEX)
    _use_pool(L)
    return 0


cdef int _set_entry(lua_State *L) noexcept nogil:
    """set_entry(c_entry): keep the prelude's entry table for run_script, and the main
    state (lupa calls this from Python, on its main state)."""
    if lua.type(L, 1) != LUA_TTABLE:
        return 0
    lua.settop(L, 1)
    return _set_entry_with_gil(L)


cdef public int luaopen_pykv_luacall(lua_State *L) noexcept nogil:
    """The loadlib entry: (slot table) -> redis.call, redis.pcall for the bound engine."""
    return _open_with_gil(L)
