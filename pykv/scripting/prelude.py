"""The Lua side of the scripting engine: sandbox, ``redis`` API, RESP conversion.

``PRELUDE`` runs once in a fresh Lua 5.1 state with the full standard library. It keeps
what it needs (``debug.sethook``, ``debug.getinfo``, the raw library tables) as upvalues,
then turns the state's global table into Redis's sandbox:

* only Redis's allow-list of globals remains (no ``os``, ``io``, ``debug``, ``require``,
  ``print``, ``python``…); reading a missing global raises Redis's
  ``Script attempted to access nonexistent global variable`` error;
* the global table and the library tables are read-only (``Attempt to modify a readonly
  table``), through proxies, and ``rawset``/``setmetatable`` refuse them too;
* ``loadstring``/``load`` refuse binary chunks.

It returns the internal API the Python engine calls: ``compile``, ``run`` (under an error
handler that records where a script failed), and the two converters: RESP bytes of a
command's reply into Lua values (what ``redis.call`` returns), and a script's return value
into RESP bytes for the caller, following Redis's conversion rules for RESP2 and RESP3.
"""

PRELUDE = r"""
local host = ...
local host_sha1hex, host_hook, host_classify = host.sha1hex, host.hook, host.classify
local sethook, getinfo = debug.sethook, debug.getinfo
local error, type, tostring, tonumber, pairs, next, select, rawget =
    error, type, tostring, tonumber, pairs, next, select, rawget
local real_rawset, real_setmetatable = rawset, setmetatable
local real_loadstring, real_load, xpcall = loadstring, load, xpcall
local sfind, ssub, sbyte, sformat, sgsub = string.find, string.sub, string.byte,
    string.format, string.gsub
local tconcat, floor, ceil, huge = table.concat, math.floor, math.ceil, math.huge
local setfenv_ = setfenv

-- read-only tables --------------------------------------------------------------------
local readonly = real_setmetatable({}, {__mode = "k"})

local function ro_error()
    error("Attempt to modify a readonly table", 2)
end

local function protect(lib)
    local proxy = real_setmetatable({}, {__index = lib, __newindex = ro_error,
                                         __metatable = false})
    readonly[proxy] = true
    return proxy
end

local function guarded_rawset(t, k, v)
    if readonly[t] then error("Attempt to modify a readonly table", 0) end
    return real_rawset(t, k, v)
end

local function guarded_setmetatable(t, mt)
    if readonly[t] then error("Attempt to modify a readonly table", 0) end
    return real_setmetatable(t, mt)
end

local function is_binary(chunk)
    return type(chunk) == "string" and sbyte(chunk, 1) == 27
end

local globals, hidden  -- the sandboxed global table and what it reads (filled below)

local function guarded_loadstring(chunk, name)
    if is_binary(chunk) then return nil, "attempt to load a binary chunk" end
    local fn, err = real_loadstring(chunk, name)
    if fn then setfenv_(fn, globals) end
    return fn, err
end

local function guarded_load(chunk, name)
    if type(chunk) == "string" then return guarded_loadstring(chunk, name) end
    if type(chunk) ~= "function" then return real_load(chunk, name) end
    local parts = {}
    while true do
        local piece = chunk()
        if piece == nil or piece == "" then break end
        parts[#parts + 1] = piece
    end
    return guarded_loadstring(tconcat(parts), name)
end

-- the redis library ---------------------------------------------------------------------

local redis = {}
-- the protocol redis.call replies are converted from (redis.setresp), per run
local current_resp = 2
redis.call = host.call_raise
redis.pcall = host.call_protected
-- "-CODE msg" keeps its code, anything else gets ERR (a code alone is "ERR code")
local function error_table(msg)
    if sbyte(msg, 1) == 45 then
        local sp = sfind(msg, " ", 1, true)
        if sp then
            msg = ssub(msg, 2, sp - 1) .. " " .. ssub(msg, sp + 1)
        else
            msg = "ERR " .. ssub(msg, 2)
        end
    else
        msg = "ERR " .. msg
    end
    return {err = (sgsub(msg, "[\r\n]+$", ""))}
end
-- Python functions (C functions to Lua, as in Redis): see pykv.scripting.helpers
redis.error_reply = host.error_reply
redis.status_reply = host.status_reply
redis.sha1hex = host.sha1hex
redis.log = host.log
-- a C function (not a Lua wrapper): a tail call to it keeps the script's frame, which
-- error positions need. It checks the argument and tells us through set_resp below.
redis.setresp = host.setresp
redis.set_repl = host.set_repl
redis.acl_check_cmd = host.acl_check_cmd
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL =
    0, 1, 2, 2, 3
redis.REDIS_VERSION = host.version
redis.REDIS_VERSION_NUM = host.version_num

-- RESP (a command's reply) -> Lua ----------------------------------------------------------
local parse

local function line_at(s, pos)
    local e = sfind(s, "\r\n", pos, true)
    return ssub(s, pos + 1, e - 1), e + 2
end

parse = function(s, pos)
    local t = ssub(s, pos, pos)
    local head, nxt = line_at(s, pos)
    if t == ":" then return tonumber(head), nxt end
    if t == "$" then
        local n = tonumber(head)
        if n < 0 then return false, nxt end
        return ssub(s, nxt, nxt + n - 1), nxt + n + 2
    end
    if t == "+" then return {ok = head}, nxt end
    if t == "-" then return {err = head}, nxt end
    if t == "*" then
        local n = tonumber(head)
        if n < 0 then return false, nxt end
        local out = {}
        for i = 1, n do out[i], nxt = parse(s, nxt) end
        return out, nxt
    end
    if t == "_" then return nil, nxt end
    if t == "," then
        local d = head
        if d == "inf" then d = huge elseif d == "-inf" then d = -huge
        elseif d == "nan" then d = 0 / 0 else d = tonumber(d) end
        return {double = d}, nxt
    end
    if t == "#" then return head == "t", nxt end
    if t == "(" then return {big_number = head}, nxt end
    if t == "%" then
        local n = tonumber(head)
        local map = {}
        for _ = 1, n do
            local k, v
            k, nxt = parse(s, nxt)
            v, nxt = parse(s, nxt)
            map[k] = v
        end
        return {map = map}, nxt
    end
    if t == "~" then
        local n = tonumber(head)
        local set = {}
        for _ = 1, n do
            local k
            k, nxt = parse(s, nxt)
            set[k] = true
        end
        return {set = set}, nxt
    end
    if t == "=" then
        local n = tonumber(head)
        local body = ssub(s, nxt, nxt + n - 1)
        return {verbatim_string = {format = ssub(body, 1, 3), string = ssub(body, 5)}},
            nxt + n + 2
    end
    error("ERR unexpected reply type from command: " .. t, 0)
end

local function resp_to_lua(s)
    local v = parse(s, 1)
    return v
end

-- Lua (a script's result) -> RESP --------------------------------------------------------
local function to_integer(n)
    if n ~= n or n >= 9223372036854775807 or n < -9223372036854775808 then
        return "-9223372036854775808"
    end
    if n >= 0 then n = floor(n) else n = ceil(n) end
    if n == 0 then n = 0 end  -- no "-0"
    return sformat("%.0f", n)
end

local function clean(s)
    return (sgsub(s, "[\r\n]", " "))
end

local function fmt_double(d)
    if d ~= d then return "nan" end
    if d == huge then return "inf" end
    if d == -huge then return "-inf" end
    return sformat("%.17g", d)
end

local encode

local function encode_bulk(out, s)
    out[#out + 1] = "$" .. #s .. "\r\n" .. s .. "\r\n"
end

encode = function(v, out, resp, lua_resp)
    local tv = type(v)
    if tv == "string" then
        encode_bulk(out, v)
    elseif tv == "number" then
        out[#out + 1] = ":" .. to_integer(v) .. "\r\n"
    elseif tv == "boolean" then
        if lua_resp == 2 then
            if v then out[#out + 1] = ":1\r\n"
            else out[#out + 1] = resp == 3 and "_\r\n" or "$-1\r\n" end
        elseif resp == 3 then
            out[#out + 1] = v and "#t\r\n" or "#f\r\n"
        else
            out[#out + 1] = v and ":1\r\n" or ":0\r\n"
        end
    elseif tv == "table" then
        local f = rawget(v, "err")
        if type(f) == "string" then
            out[#out + 1] = "-" .. clean(f) .. "\r\n"
            return
        end
        f = rawget(v, "ok")
        if type(f) == "string" then
            out[#out + 1] = "+" .. clean(f) .. "\r\n"
            return
        end
        f = rawget(v, "double")
        if type(f) == "number" then
            if resp == 3 then out[#out + 1] = "," .. fmt_double(f) .. "\r\n"
            else encode_bulk(out, fmt_double(f)) end
            return
        end
        f = rawget(v, "big_number")
        if type(f) == "string" then
            if resp == 3 then out[#out + 1] = "(" .. clean(f) .. "\r\n"
            else encode_bulk(out, f) end
            return
        end
        f = rawget(v, "map")
        if type(f) == "table" then
            local idx = #out + 1
            out[idx] = ""
            local n = 0
            for k, item in pairs(f) do
                encode(k, out, resp, lua_resp)
                encode(item, out, resp, lua_resp)
                n = n + 1
            end
            out[idx] = resp == 3 and ("%" .. n .. "\r\n") or ("*" .. (2 * n) .. "\r\n")
            return
        end
        f = rawget(v, "set")
        if type(f) == "table" then
            local idx = #out + 1
            out[idx] = ""
            local n = 0
            for k in pairs(f) do
                encode(k, out, resp, lua_resp)
                n = n + 1
            end
            out[idx] = (resp == 3 and "~" or "*") .. n .. "\r\n"
            return
        end
        f = rawget(v, "verbatim_string")
        if type(f) == "table" and type(rawget(f, "string")) == "string"
                and type(rawget(f, "format")) == "string" then
            local body = rawget(f, "string")
            if resp == 3 then
                local fmt = rawget(f, "format")
                out[#out + 1] = "=" .. (#body + 4) .. "\r\n" .. fmt .. ":" .. body .. "\r\n"
            else
                encode_bulk(out, body)
            end
            return
        end
        local idx = #out + 1
        out[idx] = ""
        local n = 0
        while true do
            local item = rawget(v, n + 1)
            if item == nil then break end
            n = n + 1
            encode(item, out, resp, lua_resp)
        end
        out[idx] = "*" .. n .. "\r\n"
    else
        out[#out + 1] = resp == 3 and "_\r\n" or "$-1\r\n"
    end
end

-- the result of a script: (true, resp) or (false, error message) for a top-level error
local function encode_result(v, resp, lua_resp)
    local tv = type(v)
    if tv == "string" then  -- the usual results need no buffer table
        return true, "$" .. #v .. "\r\n" .. v .. "\r\n"
    elseif tv == "table" then
        local e = rawget(v, "err")
        if type(e) == "string" then return false, clean(e) end
    end
    local out = {}
    encode(v, out, resp, lua_resp)
    return true, tconcat(out)
end

-- running scripts -------------------------------------------------------------------------
local function error_info(err)
    local source, line
    local level = 2
    while true do
        local info = getinfo(level, "Sl")
        if not info then break end
        local src = info.source
        if src == "@user_script" or src == "@user_function" then
            source, line = src, info.currentline
            break
        end
        level = level + 1
    end
    local msg
    if type(err) == "table" and type(rawget(err, "err")) == "string" then
        msg = rawget(err, "err")
    elseif type(err) == "userdata" then
        -- raised by Python: 0 a command's error (kept as is), 1 plain, 2 with position
        local kind, text = host_classify(err)
        if kind == 0 then msg = text
        elseif kind == 2 and source then
            msg = "ERR " .. ssub(source, 2) .. ":" .. line .. ": " .. text
        else msg = "ERR " .. text end
    else
        msg = "ERR " .. tostring(err)
    end
    return {msg = msg, source = source, line = line}
end

-- A kill is final (as in Redis): from then on the hook runs on every line of Lua code
-- (not of this prelude, whose frames stand for Redis's C functions) and raises again, so
-- a pcall that caught it cannot keep the script alive.
local prelude_source = getinfo(1, "S").source
local host_killed = host.killed
local function killed_hook()
    if getinfo(2, "S").source ~= prelude_source then host_killed() end
end

local function hook()
    if host_hook() then
        sethook(killed_hook, "l")
        host_killed()
    end
end

local function finish(ok, res, resp)
    if ok then return encode_result(res, resp, current_resp) end
    return false, res.msg, res.source, res.line
end

-- One entry per script run: (true, RESP bytes for a caller speaking ``resp``) or
-- (false, message[, source, line]). Crossing between Python and Lua costs more than the
-- whole prelude, so the run and the encoding of its result are one call.
local function run(fn, resp, nkeys, ...)
    local all = {...}
    local keys, argv = {}, {}
    for i = 1, nkeys do keys[i] = all[i] end
    for i = nkeys + 1, #all do argv[i - nkeys] = all[i] end
    hidden.KEYS = keys
    hidden.ARGV = argv
    current_resp = 2
    sethook(hook, "", 100000)
    local ok, res = xpcall(fn, error_info)
    sethook()
    return finish(ok, res, resp)
end

local function run_callback(fn, resp, nkeys, ...)
    -- FCALL: the callback gets (keys, args) as arguments instead of globals
    local all = {...}
    local keys, argv = {}, {}
    for i = 1, nkeys do keys[i] = all[i] end
    for i = nkeys + 1, #all do argv[i - nkeys] = all[i] end
    current_resp = 2
    sethook(hook, "", 100000)
    local ok, res = xpcall(function() return fn(keys, argv) end, error_info)
    sethook()
    return finish(ok, res, resp)
end

local function compile(body, chunkname)
    local fn, err = real_loadstring(body, chunkname)
    if not fn then return nil, err end
    setfenv_(fn, globals)
    return fn, nil
end

-- FUNCTION LOAD: run the library body with only the registration API -----------------------
-- While a library body runs, its globals hold nothing but a reduced ``redis`` table (as in
-- Redis: no string/math/error… at load time); once loaded, the functions it registered
-- see the normal sandbox (minus KEYS/ARGV, which functions get as arguments).
local loading = false

local function missing_global(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end

local function load_library(body, register, timed_out)
    local fn, err = real_loadstring(body, "@user_function")
    if not fn then return false, "Error compiling function: " .. err end
    local load_redis = real_setmetatable({}, {
        __index = real_setmetatable({
            register_function = register,
            log = redis.log,
            LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
            REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
        }, {__index = missing_global}),
        __newindex = function() error("Attempt to modify a readonly table", 2) end,
        __metatable = false,
    })
    local load_env = real_setmetatable({}, {
        __index = function(_, k)
            if loading then
                if k == "redis" then return load_redis end
            elseif k ~= "KEYS" and k ~= "ARGV" then
                local v = rawget(hidden, k)
                if v ~= nil then return v end
            end
            error("Script attempted to access nonexistent global variable '"
                  .. tostring(k) .. "'", 2)
        end,
        __newindex = function(_, k) error("Attempt to modify a readonly table", 2) end,
        __metatable = false,
    })
    readonly[load_env] = true
    readonly[load_redis] = true
    setfenv_(fn, load_env)
    local function load_hook()
        if timed_out() then
            sethook()
            error({err = "ERR FUNCTION LOAD timeout"})
        end
    end
    loading = true
    sethook(load_hook, "", 100000)
    local ok, res = xpcall(fn, error_info)
    sethook()
    loading = false
    if not ok then return false, res.msg end
    return true, nil
end

-- build the sandboxed global table --------------------------------------------------------
local function copy_lib(pylib)
    local lib = {}
    for name, f in pairs(pylib) do lib[name] = f end
    return lib
end

local cjson = copy_lib(host.cjson)
local null = host.null
cjson.null = null
local real_pcall = pcall
local function as_string_error(ok, ...)
    if not ok then
        local err = ...
        if type(err) == "userdata" then
            local _, text = host_classify(err)
            return false, text
        end
    end
    return ok, ...
end
local function guarded_pcall(f, ...)
    return as_string_error(real_pcall(f, ...))
end

local libs = {
    string = protect(string), math = protect(math), table = protect(table),
    coroutine = protect(coroutine), redis = protect(redis),
    cjson = protect(cjson), bit = protect(copy_lib(host.bit)),
    struct = protect(copy_lib(host.struct)), cmsgpack = protect(copy_lib(host.cmsgpack)),
}
local allowed = {
    assert = assert, collectgarbage = collectgarbage, error = error, gcinfo = gcinfo,
    getmetatable = getmetatable, ipairs = ipairs, load = guarded_load,
    loadstring = guarded_loadstring, next = next, pairs = pairs,
    rawequal = rawequal, rawget = rawget, rawset = guarded_rawset, select = select,
    pcall = guarded_pcall,
    setmetatable = guarded_setmetatable, tonumber = tonumber, tostring = tostring,
    type = type, unpack = unpack, xpcall = xpcall, _VERSION = _VERSION,
}
for k, v in pairs(libs) do allowed[k] = v end
getmetatable("").__index = libs.string

-- the scripts' global table is an empty proxy: reads go to ``hidden`` (or fail like Redis),
-- writes always fail. It is the environment of every script and of what scripts compile
-- (loadstring/load); closures inherit it. The state's real global table stays as lupa
-- needs it, unreachable from scripts (no getfenv, no debug, no bytecode loading).
hidden = {}
for k, v in pairs(allowed) do hidden[k] = v end
-- a missing global is Redis's error; present ones are found by table lookups alone (no
-- Lua function call per global read)
real_setmetatable(hidden, {__index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end})
globals = real_setmetatable({}, {
    __index = hidden,
    __newindex = function() error("Attempt to modify a readonly table", 2) end,
    __metatable = false,
})
hidden._G = globals
readonly[globals] = true

return {
    compile = compile, run = run, run_callback = run_callback,
    encode_result = encode_result, load_library = load_library, hidden = hidden,
    resp_to_lua = resp_to_lua, error_table = error_table,
    set_resp = function(resp) current_resp = resp end,
}
"""
