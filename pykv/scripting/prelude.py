"""The Lua side of the scripting engine: sandbox, ``redis`` API, RESP conversion.

``PRELUDE`` runs once in a fresh Lua 5.1 state with the full standard library. It keeps
what it needs (``debug.sethook``, ``debug.getinfo``, the raw library tables) as upvalues,
then builds Redis's two script environments (EVAL's and FCALL's) beside the state's own
global table:

* only Redis 7.0's globals exist (EVAL: ``KEYS``, ``ARGV`` and ``__redis__err__handler``
  too); reading a missing one raises ``Script attempted to access nonexistent global
  variable``;
* every table reachable from them (the globals, the libraries, the string metatable) is
  read-only. Lua 5.1 has no read-only tables (Redis patches its Lua for them), so each is
  an empty proxy over the real table, and the builtins that bypass metamethods (``next``,
  ``pairs``, ``rawget``, ``rawset``, ``setmetatable``, ``getmetatable``, ``table.insert``…)
  are wrapped to see through (or refuse) proxies;
* bytecode cannot be loaded: Redis's Lua has no undump, so a binary chunk is parsed as text
  and fails with a syntax error, which is reproduced;
* Python functions (lupa userdata) pass for C functions: ``type`` says ``function``, and the
  error handler treats them, and the prelude's own Lua frames, as one C frame.

Errors follow Redis's ``__redis__err__handler``: the error object becomes a table
``{err=..., source=..., line=...}`` taken from the frame that raised it (or its caller when
that is a C function); Redis's ``pcall`` turns ``{err=...}`` tables back into strings.

It returns the internal API the Python engine calls: ``compile``, ``run`` (under that
handler), and the two converters: RESP bytes of a command's reply into Lua values (what
``redis.call`` returns), and a script's return value into RESP bytes for the caller,
following Redis's conversion rules for RESP2 and RESP3 (metamethods included, and Redis's
Lua stack limit for tables that contain themselves).
"""

PRELUDE = r"""
local host = ...
local host_hook, host_classify = host.hook, host.classify
local sethook, getinfo = debug.sethook, debug.getinfo
local error, type, tostring, tonumber, pairs, next, select, rawget =
    error, type, tostring, tonumber, pairs, next, select, rawget
local real_type, real_rawset, real_setmetatable, real_getmetatable =
    type, rawset, setmetatable, getmetatable
local real_loadstring, real_load, xpcall, real_pcall = loadstring, load, xpcall, pcall
local sfind, ssub, sbyte, sformat, sgsub = string.find, string.sub, string.byte,
    string.format, string.gsub
local tconcat, tinsert, tremove, tsort = table.concat, table.insert, table.remove, table.sort
local floor, ceil, huge = math.floor, math.ceil, math.huge
local setfenv_, raw_getmetatable = setfenv, debug.getmetatable
local INTERNAL = debug.getinfo(1, "S").source  -- the source of lupa-compiled chunks

-- read-only tables: proxy -> the real table it shows ------------------------------------
local readonly = real_setmetatable({}, {__mode = "k"})
local RO = "Attempt to modify a readonly table"

local function ro_error()
    error(RO, 2)
end

-- a read-only proxy showing ``real`` (or looking keys up in ``mt_index``), and the proxy's
-- metatable (for a caller that changes its __index later)
local function protect(real, mt_index)
    local mt = {__index = mt_index or real, __newindex = ro_error, __metatable = false}
    local proxy = real_setmetatable({}, mt)
    readonly[proxy] = real
    return proxy, mt
end

-- Python callables: lupa userdata that scripts must see as (C) functions
local pyfuncs = real_setmetatable({}, {__mode = "k"})

local function typename(n, v)
    if n == 0 then return "no value" end
    local t = real_type(v)
    if t == "userdata" and pyfuncs[v] then return "function" end
    return t
end

-- "bad argument #n to 'f' (msg)" for the wrapper ``depth`` frames above this one (named
-- as its caller wrote it, else ``fname``), positioned at its caller, as luaL_argerror
-- words it. (A wrapper the script tail-called has lost that frame: no position then.)
local function argerror(n, msg, fname, depth)
    depth = depth or 0
    local info = getinfo(2 + depth, "n")
    local name = info and info.name
    if not name then  -- called from C (pcall…): '?'; lost to a tail call: our best guess
        local caller = getinfo(3 + depth, "S")
        name = (caller and caller.what == "tail") and fname or "?"
    end
    if info and info.namewhat == "method" then
        n = n - 1
        if n == 0 then
            error(sformat("calling '%s' on bad self (%s)", name, msg), 3 + depth)
        end
    end
    error(sformat("bad argument #%d to '%s' (%s)", n, name, msg), 3 + depth)
end

local function check_table(fname, n, count, v)
    if real_type(v) ~= "table" then
        argerror(n, "table expected, got " .. typename(count >= n and 1 or 0, v), fname, 1)
    end
end

local function guarded_type(...)
    if select("#", ...) == 0 then argerror(1, "value expected", "type") end
    local v = ...
    local t = real_type(v)
    if t == "userdata" and pyfuncs[v] then return "function" end
    return t
end

-- what tostring shows for values that are not what Redis has there: Python callables
-- (C functions in Redis) and cjson.null (a NULL light userdata in Redis)
local shown_as = real_setmetatable({}, {__mode = "k"})
local real_tostring = tostring
local function guarded_tostring(...)
    if select("#", ...) == 0 then argerror(1, "value expected", "tostring") end
    local v = ...
    return shown_as[v] or real_tostring(v)
end

local function guarded_next(...)
    local t, k = ...
    check_table("next", 1, select("#", ...), t)
    return next(readonly[t] or t, k)
end

local function guarded_pairs(...)
    local t = ...
    check_table("pairs", 1, select("#", ...), t)
    return next, readonly[t] or t, nil
end

local function guarded_rawget(...)
    local n, t, k = select("#", ...), ...
    check_table("rawget", 1, n, t)
    if n < 2 then argerror(2, "value expected", "rawget") end
    return rawget(readonly[t] or t, k)
end

local function guarded_rawset(...)
    local n, t, k, v = select("#", ...), ...
    check_table("rawset", 1, n, t)
    if n < 2 then argerror(2, "value expected", "rawset") end
    if n < 3 then argerror(3, "value expected", "rawset") end
    if readonly[t] then error(RO, 0) end
    return real_rawset(t, k, v)
end

local function guarded_setmetatable(...)
    local n, t, mt = select("#", ...), ...
    check_table("setmetatable", 1, n, t)
    if (mt ~= nil and real_type(mt) ~= "table") or n < 2 then
        argerror(2, "nil or table expected", "setmetatable")
    end
    if readonly[t] then error(RO, 0) end
    local old = raw_getmetatable(t)
    if old and rawget(old, "__metatable") ~= nil then
        error("cannot change a protected metatable", 2)
    end
    return real_setmetatable(t, mt)
end

-- what getmetatable shows for proxies and strings (filled below); weak-keyed, so that a
-- replaced library's environment (FUNCTION LOAD REPLACE) is collected with it
local metatables = real_setmetatable({}, {__mode = "k"})
local function guarded_getmetatable(...)
    if select("#", ...) == 0 then argerror(1, "value expected", "getmetatable") end
    local v = ...
    if readonly[v] or pyfuncs[v] then return metatables[v] end
    if real_type(v) == "string" then return metatables[""] end
    return real_getmetatable(v)
end

local function guard_table_write(f)
    return function(...)
        if readonly[(...)] then error(RO, 0) end
        return f(...)
    end
end

-- Redis's Lua cannot undump: a binary chunk goes to the parser, which stops at its first
-- byte. A leading space gets lupa's Lua to parse it as text too, with the same message.
local globals, fn_globals  -- the two script environments (filled below)
-- the running script's state: [1] the protocol redis.call replies are converted from
-- (redis.setresp), [2] its environment (what loadstring/load give their chunks); a table,
-- so that EVAL's and FCALL's C entry (pykv.scripting._luacall) sets them without a call
local run_state = {2, nil}

local function guarded_loadstring(...)
    local n, chunk, name = select("#", ...), ...
    local tc = real_type(chunk)
    if tc ~= "string" and tc ~= "number" then
        argerror(1, "string expected, got " .. typename(n, chunk), "loadstring")
    end
    if name ~= nil and real_type(name) ~= "string" and real_type(name) ~= "number" then
        argerror(2, "string expected, got " .. typename(n >= 2 and 1 or 0, name), "loadstring")
    end
    chunk = tostring(chunk)
    if name == nil then name = chunk end
    if sbyte(chunk, 1) == 27 then chunk = " " .. chunk end
    local fn, err = real_loadstring(chunk, name)
    if fn then setfenv_(fn, run_state[2]) end
    return fn, err
end

local function guarded_load(...)
    local n, reader, name = select("#", ...), ...
    if real_type(reader) ~= "function" then
        argerror(1, "function expected, got " .. typename(n, reader), "load")
    end
    local first = true
    local function read()
        local piece = reader()
        if first then
            first = false
            if real_type(piece) == "string" and sbyte(piece, 1) == 27 then
                piece = " " .. piece
            end
        end
        return piece
    end
    local fn, err = real_load(read, name)
    if fn then setfenv_(fn, run_state[2]) end
    return fn, err
end

-- errors ---------------------------------------------------------------------------------
-- A Python exception raised into Lua becomes what Redis's C code raises there: a command's
-- error table, an ``ERR`` table for API misuse, or a library's (already positioned) text.
local function lua_error_value(e)
    if real_type(e) ~= "userdata" or pyfuncs[e] then return e end
    local kind, text = host_classify(e)
    if kind == 0 then return {err = text, ignore_error_stats_update = true} end
    if kind == 3 then return {err = text} end
    if kind == 2 then return text end
    return {err = "ERR " .. text}
end

local C_FRAME = {what = "C", source = "=[C]", currentline = -1}

-- the first two frames from ``level`` up, the prelude's own frames (and the C functions
-- they call) folded into one C frame, as Redis's C implementations would be
local function user_frames(level)
    local out, in_internal = {}, false
    while #out < 2 do
        local info = getinfo(level, "Sl")
        if not info then break end
        local internal = info.source == INTERNAL
        if not internal and info.what == "C" then
            local caller = getinfo(level + 1, "S")
            internal = caller ~= nil and caller.source == INTERNAL
        end
        if not internal then
            out[#out + 1] = info
            in_internal = false
        elseif not in_internal then
            out[#out + 1] = C_FRAME
            in_internal = true
        end
        level = level + 1
    end
    return out
end

-- Redis's __redis__err__handler: where the error happened (the caller of a C function)
local function error_handler(err)
    local frames = user_frames(3)
    local i = frames[1]
    if i and i.what == "C" then i = frames[2] end
    err = lua_error_value(err)
    if real_type(err) ~= "table" then err = {err = "ERR " .. tostring(err)} end
    if i then
        err.source = i.source
        err.line = i.currentline
    end
    return err
end

-- Redis's pcall: an error table with an ``err`` string comes back as that string
local function pcall_result(ok, ...)
    if ok then return ok, ... end
    local e = lua_error_value((...))
    if real_type(e) == "table" then
        local s = e.err
        if real_type(s) == "string" or real_type(s) == "number" then e = s end
    end
    return false, e
end

local function guarded_pcall(...)
    -- Redis's pcall with nothing to call calls its own result placeholder
    if select("#", ...) == 0 then return false, "attempt to call a boolean value" end
    return pcall_result(real_pcall(...))
end

local function guarded_xpcall(...)
    local n, f, h = select("#", ...), ...
    if n < 2 then argerror(2, "value expected", "xpcall") end
    -- (Redis's own handler needs the stack as the error left it: no wrapper around it)
    if real_type(h) ~= "function" or h == error_handler then return xpcall(f, h) end
    return xpcall(f, function(e) return h(lua_error_value(e)) end)
end

local real_resume = coroutine.resume
local function resume_result(ok, ...)
    if ok then return ok, ... end
    return false, lua_error_value((...))
end
local function guarded_resume(...)
    return resume_result(real_resume(...))
end

-- the redis library ---------------------------------------------------------------------

local redis = {}
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
-- Python functions (C functions in Redis, see pykv.scripting.helpers): a tail call to one
-- keeps the script's frame, which error positions need
redis.error_reply = host.error_reply
redis.status_reply = host.status_reply
redis.sha1hex = host.sha1hex
redis.log = host.log
redis.setresp = host.setresp
redis.set_repl = host.set_repl
redis.acl_check_cmd = host.acl_check_cmd
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL =
    0, 1, 2, 2, 3
redis.REDIS_VERSION = host.version
redis.REDIS_VERSION_NUM = host.version_num
-- FCALL's redis table has no debugger entries; EVAL's has them
local fn_redis = {}
for k, v in pairs(redis) do fn_redis[k] = v end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end

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
    if d == huge then return "inf" end
    if d == -huge then return "-inf" end
    return sformat("%.17g", d)  -- NaN prints as C prints it ("-nan" for 0/0), as in Redis
end

local encode

local function encode_bulk(out, s)
    out[#out + 1] = "$" .. #s .. "\r\n" .. s .. "\r\n"
end

-- Redis converts with a C function that needs 4 free slots of Lua stack per value; ``h`` is
-- how deep the value sits in that stack (8000 slots, the top-level value at 2), so a table
-- that contains itself ends in the same "reached lua stack limit" errors at the same depth
local STACK_LIMIT = 7996
local STACK_ERROR = "-ERR reached lua stack limit\r\n"

-- fields are read raw: Redis 7.0.15 converts with lua_rawget (no metamethods)
encode = function(v, out, resp, lua_resp, h)
    if h > STACK_LIMIT then
        out[#out + 1] = STACK_ERROR
        return
    end
    local tv = real_type(v)
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
        if real_type(f) == "string" then
            out[#out + 1] = "-" .. clean(f) .. "\r\n"
            return
        end
        f = rawget(v, "ok")
        if real_type(f) == "string" then
            out[#out + 1] = "+" .. clean(f) .. "\r\n"
            return
        end
        f = rawget(v, "double")
        if real_type(f) == "number" then
            if resp == 3 then out[#out + 1] = "," .. fmt_double(f) .. "\r\n"
            else encode_bulk(out, fmt_double(f)) end
            return
        end
        f = rawget(v, "big_number")
        if real_type(f) == "string" then
            if resp == 3 then out[#out + 1] = "(" .. clean(f) .. "\r\n"
            else encode_bulk(out, f) end
            return
        end
        f = rawget(v, "verbatim_string")
        if real_type(f) == "table" then
            local fmt = rawget(f, "format")
            if real_type(fmt) == "string" then
                local body = rawget(f, "string")
                if real_type(body) == "string" then
                    if resp == 3 then
                        out[#out + 1] = "=" .. (#body + 4) .. "\r\n" .. ssub(fmt, 1, 3) .. ":"
                            .. body .. "\r\n"
                    else
                        encode_bulk(out, body)
                    end
                    return
                end
            end
        end
        f = rawget(v, "map")
        if real_type(f) == "table" then
            local idx = #out + 1
            out[idx] = ""
            local n = 0
            for k, item in next, f do
                encode(k, out, resp, lua_resp, h + 4)
                encode(item, out, resp, lua_resp, h + 3)
                n = n + 1
            end
            out[idx] = resp == 3 and ("%" .. n .. "\r\n") or ("*" .. (2 * n) .. "\r\n")
            return
        end
        f = rawget(v, "set")
        if real_type(f) == "table" then
            local idx = #out + 1
            out[idx] = ""
            local n = 0
            for k in next, f do
                encode(k, out, resp, lua_resp, h + 3)
                n = n + 1
            end
            out[idx] = (resp == 3 and "~" or "*") .. n .. "\r\n"
            return
        end
        local idx = #out + 1
        out[idx] = ""
        local n = 0
        while true do
            local item = rawget(v, n + 1)
            if item == nil then break end
            n = n + 1
            encode(item, out, resp, lua_resp, h + 1)
        end
        out[idx] = "*" .. n .. "\r\n"
    else
        out[#out + 1] = resp == 3 and "_\r\n" or "$-1\r\n"
    end
end

-- the result of a script: (true, resp) or (false, error message) for a top-level error
local function encode_result(v, resp, lua_resp)
    local tv = real_type(v)
    if tv == "string" then  -- the usual results need no buffer table
        return true, "$" .. #v .. "\r\n" .. v .. "\r\n"
    elseif tv == "table" then
        local e = rawget(v, "err")
        if real_type(e) == "string" then
            -- nil: an error INFO errorstats already counted (ignore_error_stats_update)
            if rawget(v, "ignore_error_stats_update") == true then return nil, clean(e) end
            return false, clean(e)
        end
    end
    local out = {}
    encode(v, out, resp, lua_resp, 2)
    return true, tconcat(out)
end

-- running scripts -------------------------------------------------------------------------
-- A kill is final (as in Redis): from then on the hook runs on every line of Lua code
-- (not of this prelude, whose frames stand for Redis's C functions) and raises again, so
-- a pcall that caught it cannot keep the script alive.
local host_killed = host.killed
local function killed_hook()
    if getinfo(2, "S").source ~= INTERNAL then host_killed() end
end

local function hook()
    if host_hook() then
        sethook(killed_hook, "l")
        host_killed()
    end
end

-- a failed run: (false, message[, source, line]) from the handler's error table; nil
-- instead of false for an error already counted (ignore_error_stats_update, as Redis's
-- luaCallFunction reads it)
local function failure(err)
    local is_table = real_type(err) == "table"
    local msg = is_table and err.err
    if real_type(msg) == "number" then msg = tostring(msg) end
    if real_type(msg) ~= "string" then msg = "ERR unknown error" end
    local counted = false
    if is_table and err.ignore_error_stats_update == true then counted = nil end
    local source, line = err.source, err.line
    if real_type(source) ~= "string" or (real_type(line) ~= "number"
                                         and real_type(line) ~= "string") then
        return counted, msg
    end
    return counted, msg, source, line
end

local function finish(ok, res, resp)
    if ok then return encode_result(res, resp, run_state[1]) end
    return failure(res)
end

local function split_args(nkeys, ...)
    local all = {...}
    local keys, argv = {}, {}
    for i = 1, nkeys do keys[i] = all[i] end
    for i = nkeys + 1, #all do argv[i - nkeys] = all[i] end
    return keys, argv
end

local hidden  -- EVAL's globals (the real table behind ``globals``), filled below

-- One entry per script run: (true, RESP bytes for a caller speaking ``resp``) or
-- (false, message[, source, line]). Crossing between Python and Lua costs more than the
-- whole prelude, so the run and the encoding of its result are one call.
local function run(fn, resp, nkeys, ...)
    hidden.KEYS, hidden.ARGV = split_args(nkeys, ...)
    run_state[1], run_state[2] = 2, globals
    sethook(hook, "", 100000)
    local ok, res = xpcall(fn, error_handler)
    sethook()
    return finish(ok, res, resp)
end

local function run_callback(fn, resp, nkeys, ...)
    -- FCALL: the callback gets (keys, args) as arguments instead of globals
    local keys, argv = split_args(nkeys, ...)
    run_state[1], run_state[2] = 2, fn_globals
    sethook(hook, "", 100000)
    local ok, res = xpcall(function() return fn(keys, argv) end, error_handler)
    sethook()
    return finish(ok, res, resp)
end

local function compile(body, chunkname)
    if sbyte(body, 1) == 27 then body = " " .. body end  -- see guarded_loadstring
    local fn, err = real_loadstring(body, chunkname)
    if not fn then return nil, err end
    setfenv_(fn, globals)
    return fn, nil
end

-- the script environments -------------------------------------------------------------------
local function missing_global(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end

-- a read-only environment over ``entries``: (proxy, the real table); its metatable, as
-- getmetatable shows it, is a read-only table whose __index raises the missing-global error
local env_mt = protect({__index = missing_global})
local function make_env(entries)
    local real = real_setmetatable({}, {__index = missing_global})
    for k, v in pairs(entries) do real[k] = v end
    local proxy = protect(real)
    real._G = proxy
    metatables[proxy] = env_mt
    return proxy, real
end

-- FUNCTION LOAD: run the library body with only the registration API -----------------------
-- While a library body runs, its globals hold nothing but a reduced ``redis`` table (as in
-- Redis: no string/math/error… at load time); once loaded, the functions it registered
-- see FCALL's environment (no KEYS/ARGV: functions get them as arguments).
-- the reduced ``redis`` of the library body that is running (false between loads): held
-- here, not by the library's environment, so that nothing a library keeps after its load
-- reaches it (see load_library)
local loading = false
local fn_hidden  -- FCALL's globals (filled below)

local function load_library(body, register, timed_out)
    local fn, err = real_loadstring(body, "@user_function")
    if not fn then return false, "Error compiling function: " .. err end
    local load_redis = protect(real_setmetatable({
        register_function = register,
        log = redis.log,
        LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
        REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
    }, {__index = missing_global}))
    -- (its metatable kept: once the library is loaded, its __index is FCALL's globals
    -- themselves, whose own __index raises the missing-global error at the same level, so
    -- that a global a function reads is no Lua call per access)
    local load_env, load_mt = protect({}, function(_, k)
        if loading then
            if k == "redis" then return loading end
        else
            local v = rawget(fn_hidden, k)
            if v ~= nil then return v end
        end
        error("Script attempted to access nonexistent global variable '"
              .. tostring(k) .. "'", 2)
    end)
    metatables[load_env] = env_mt
    setfenv_(fn, load_env)
    local function load_hook()
        if timed_out() then
            sethook()
            error({err = "ERR FUNCTION LOAD timeout"})
        end
    end
    loading = load_redis
    sethook(load_hook, "", 100000)
    local ok, res = xpcall(fn, error_handler)
    sethook()
    loading = false
    if not ok then
        local _, msg = failure(res)
        return false, msg
    end
    load_mt.__index = fn_hidden
    return true, nil
end

-- build the sandboxes ----------------------------------------------------------------------
local function copy_lib(pylib, extra)
    local lib = {}
    for name, f in pairs(pylib) do
        lib[name] = f
        pyfuncs[f] = true
    end
    for name, v in pairs(extra or {}) do lib[name] = v end
    return lib
end

local null = host.null
local cjson_fields = {null = null, _NAME = "cjson", _VERSION = "2.1.0"}
-- cjson.new(): a plain (writable) module table with its own settings
local new_count = 0
local function cjson_new(new)
    return function()
        local module = new()
        for _, f in next, module do
            if real_type(f) == "userdata" and f ~= null then
                pyfuncs[f] = true
                new_count = new_count + 1
                shown_as[f] = sformat("function: 0x%08x", 0x42000000 + new_count * 64)
            end
        end
        return module
    end
end
local cjson = copy_lib(host.cjson, cjson_fields)
cjson.new = cjson_new(host.cjson.new)
local cmsgpack = copy_lib(host.cmsgpack, {
    _NAME = "cmsgpack", _VERSION = "lua-cmsgpack 0.4.0",
    _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
    _DESCRIPTION = "MessagePack C implementation for Lua"})
for _, f in pairs(redis) do if real_type(f) == "userdata" then pyfuncs[f] = true end end
shown_as[null] = "userdata: (nil)"

local coroutine_lib = {}
for k, v in pairs(coroutine) do coroutine_lib[k] = v end
coroutine_lib.resume = guarded_resume
local table_lib = {}
for k, v in pairs(table) do table_lib[k] = v end
table_lib.insert = guard_table_write(tinsert)
table_lib.remove = guard_table_write(tremove)
table_lib.sort = guard_table_write(tsort)

local math_lib = copy_lib(host.math)  -- Redis's math.random/randomseed
for k, v in pairs(math) do if math_lib[k] == nil then math_lib[k] = v end end

local libs = {
    string = protect(string), math = protect(math_lib), table = protect(table_lib),
    coroutine = protect(coroutine_lib), cjson = protect(cjson),
    bit = protect(copy_lib(host.bit)), struct = protect(copy_lib(host.struct)),
    cmsgpack = protect(cmsgpack),
}
local string_mt = real_getmetatable("")
string_mt.__index = libs.string
metatables[""] = protect(string_mt)

local common = {
    assert = assert, collectgarbage = collectgarbage, error = error, gcinfo = gcinfo,
    getmetatable = guarded_getmetatable, ipairs = ipairs, load = guarded_load,
    loadstring = guarded_loadstring, next = guarded_next, pairs = guarded_pairs,
    rawequal = rawequal, rawget = guarded_rawget, rawset = guarded_rawset, select = select,
    pcall = guarded_pcall, setmetatable = guarded_setmetatable, tonumber = tonumber,
    tostring = guarded_tostring, type = guarded_type, unpack = unpack, xpcall = guarded_xpcall,
    _VERSION = _VERSION,
}
for k, v in pairs(libs) do common[k] = v end

common.redis = protect(redis)
common.__redis__err__handler = error_handler
globals, hidden = make_env(common)
common.__redis__err__handler = nil
common.redis = protect(fn_redis)
local fn_cjson = copy_lib(host.fn_cjson, cjson_fields)
fn_cjson.new = cjson_new(host.fn_cjson.new)
common.cjson = protect(fn_cjson)
local count = 0
for f in pairs(pyfuncs) do  -- a made-up address for each
    count = count + 1
    shown_as[f] = sformat("function: 0x%08x", 0x41000000 + count * 64)
end
fn_globals, fn_hidden = make_env(common)

return {
    compile = compile, run = run, run_callback = run_callback,
    -- EVAL's and FCALL's C entry (pykv.scripting._luacall) sets KEYS/ARGV in ``hidden``,
    -- ``run_state`` and the count hook (which calls ``hook``) itself, runs the script or
    -- function under Redis's handler (no xpcall frame: the script is the bottom of the
    -- stack, as in Redis) and calls ``finish`` for a result it does not encode itself
    c_entry = {hidden, run_state, finish, error_handler, {}, globals, {}, fn_globals, hook,
               "err", "ok"},
    encode_result = encode_result, load_library = load_library, hidden = hidden,
    resp_to_lua = resp_to_lua, error_table = error_table,
    set_resp = function(resp) run_state[1] = resp end,
}
"""
