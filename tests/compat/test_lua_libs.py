"""Redis's bundled Lua libraries compared byte for byte with real redis-server 7.0 (issue 11,
item 2): cjson (lua-cjson 2.1.0), cmsgpack (lua-cmsgpack 0.4.0), bit, struct and Redis's
math.random.

The cases are generated: numbers at the precision and integer boundaries (so
``9007199254740991`` comes back as Redis prints it), every byte and many escapes through
cjson, seeded random nested values encoded and round-tripped, sparse arrays and depth limits
under every option setting, malformed JSON, MessagePack of every type width (integers at each
boundary, floats, strings and containers at each header size, nesting limits), a sweep of
every first byte through ``cmsgpack.unpack`` with short and long payloads, and
``unpack_one``/``unpack_limit`` offsets. Scripts that change a cjson setting restore it
before they return, so both servers' Lua states stay alike. Each case runs as EVAL in RESP2,
a quarter of them in RESP3 too (all under ``-m slow``), and a third as an FCALL'd function
(Redis keeps a separate Lua state for functions).
"""
from __future__ import annotations

import json
import random

import pytest
from lua_runner import run_eval, run_fcall

# -- value generators ------------------------------------------------------------------------
NUMBERS = ["0", "1", "-1", "0.5", "-0.5", "0.1", "1/3", "100", "1e14", "1e15", "1e16",
           "99999999999999", "123456789012345", "9007199254740991", "2^53", "2^53 + 2",
           "2^63", "-2^63", "2^64", "1e300", "1e-300", "5e-324", "1.7976931348623157e308",
           "3.14159265358979", "-123.456", "2^31", "-2^31", "2^32"]

JSON_NUMBERS = ["9007199254740991", "9007199254740993", "-9007199254740991", "-0", "1e2",
                "1E+2", "0.1e-2", "1.", "01", "+1", "0x1F", "-0x10", "0X1p4", "inf", "-inf",
                "Infinity", "nan", "NaN", "-nan", "1e400", "-1e400",
                "123456789012345678901234567890", ".5", "-", "--1", "1e", "1e+", "0.", "-.5",
                "1.5e300", "12345678901234567890"]

ESCAPES = ["\\\\u0041", "\\\\u00e9", "\\\\u20ac", "\\\\uffff", "\\\\ud83d\\\\ude00",
           "\\\\uD83D\\\\uDE00", "\\\\ud83d", "\\\\ude00", "\\\\ud83dx", "\\\\ud83d\\\\u0041",
           "\\\\u12", "\\\\uGGGG", "\\\\x", "\\\\/", "\\\\b\\\\f\\\\n\\\\r\\\\t", "\\\\u0000",
           "a\\tb", "\\\\", "\\\\\\\\", '\\\\"']

BAD_JSON = ["", " ", "[", "]", "[1,]", "[1 2]", "{", '{"a"}', '{"a":}', '{"a":1,}', "{1:2}",
            '{"a" 1}', "nul", "tru", "[1] x", "[1]]", '"abc', '"\\\\q"', "'x'", "[1,,2]",
            "@", "\\0", "[\\0]", "1 2", "{}{}", '{"a":1 "b":2}', "[true false]", "-x",
            '"\\\\u"', "[[[]]]]", "\\1\\0", "t", "f", "n", "I", "N"]

MSGPACK_INTS = [0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 53,
                -1, -32, -33, -128, -129, -32768, -32769, -2 ** 31, -2 ** 31 - 1, -2 ** 53]
MSGPACK_FLOATS = ["0.5", "-2.5", "0.1", "1e300", "-1e-300", "1/0", "-1/0", "0/0", "2^63",
                  "-2^63", "2^64", "3.4028234663852886e38", "3.5e38", "1.5e-45", "1/3"]
SIZES = [0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536]


def lua_value(rng: random.Random, depth: int = 0) -> str:
    """A random Lua constructor expression (nested up to 4 levels)."""
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return str(rng.choice([0, 1, -7, 42, 2 ** 40, -(2 ** 33), 10 ** 15]))
    if kind == 1:
        return repr(rng.choice([0.25, -1.5, 1e-7, 3.14159, 6.02e23, 1 / 3]))
    if kind == 2:
        return '"' + rng.choice(["", "x", "hello world", "quote\\\"d", "tab\\t", "\\0nul",
                                 "\\200\\255", "é", "/slash/", "\\\\back"]) + '"'
    if kind == 3:
        return rng.choice(["true", "false"])
    if kind == 4:
        return "cjson.null"
    n = rng.randrange(0, 5)
    if kind in (5, 6):
        return "{" + ", ".join(lua_value(rng, depth + 1) for _ in range(n)) + "}"
    if kind == 7:
        return "{" + ", ".join(f"k{i} = {lua_value(rng, depth + 1)}" for i in range(n)) + "}"
    keys = rng.sample(range(1, 30), n)
    return "{" + ", ".join(f"[{k}] = {lua_value(rng, depth + 1)}" for k in keys) + "}"


def json_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 4 else 4)
    if kind == 0:
        return rng.choice([0, -1, 12345, 2 ** 53 - 1, 1.5, -0.25, 1e100, 6.02e-23])
    if kind == 1:
        return rng.choice(["", "plain", "ünïcödé", "\u20ac\U0001F600", "ctl\u0001\u001f",
                           "q\"b\\s/"])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return rng.randrange(-1000, 1000)
    n = rng.randrange(0, 5)
    if kind in (4, 5):
        return [json_value(rng, depth + 1) for _ in range(n)]
    return {f"key{i}": json_value(rng, depth + 1) for i in range(n)}


def lua_string(text: str) -> str:
    """``text`` as a Lua long string literal."""
    level = "=" * 3
    return f"[{level}[{text}]{level}]"


# a number's value, exactly, whatever the reply protocol does to numbers
SHOW = ("local function show(v) if type(v) == 'number' then return string.format('%.17g', v) "
        "elseif type(v) == 'table' then return cjson.encode(v) else return tostring(v) end end ")


def cjson_cases() -> list[str]:
    cases = []
    for n in NUMBERS:
        cases += [f"return cjson.encode({n})", f"return cjson.encode({{{n}, x = {{{n}}}}})",
                  f"return {{pcall(cjson.encode, {{[{n}] = 'v'}})}}"]
    for text in JSON_NUMBERS:
        cases.append(SHOW + f"local ok, v = pcall(cjson.decode, '{text}') "
                     "return {tostring(ok), show(v)}")
        cases.append(SHOW + "cjson.decode_invalid_numbers(false) "
                     f"local ok, v = pcall(cjson.decode, '[{text}]') "
                     "cjson.decode_invalid_numbers(true) "
                     "return {tostring(ok), show(ok and v[1] or v)}")
    cases += ["return cjson.decode('9007199254740991')",
              "return tostring(cjson.decode('9007199254740991'))",
              "return cjson.encode(cjson.decode('[9007199254740991, 1.5, -0.25]'))"]
    for precision in range(1, 15):
        cases.append(f"cjson.encode_number_precision({precision}) "
                     f"local r = cjson.encode({{{', '.join(NUMBERS[:20])}}}) "
                     "cjson.encode_number_precision(14) return r")
    for mode in ("true", "false", "'null'", "'on'", "'off'", "'bad'", "1"):
        cases.append(f"local set = {{pcall(cjson.encode_invalid_numbers, {mode})}} "
                     "local r = {pcall(cjson.encode, {1/0, -1/0, 0/0, 1})} "
                     "cjson.encode_invalid_numbers(false) return {set, r}")
    cases.append("local out = {} for i = 0, 255 do out[#out + 1] = cjson.encode(string.char(i)) "
                 "end return out")
    cases.append("local out = {} for i = 0, 255 do local ok, v = pcall(cjson.decode, "
                 "'\"' .. string.char(i) .. '\"') out[#out + 1] = tostring(ok) .. ':' .. "
                 "tostring(v) end return out")
    for esc in ESCAPES:
        cases.append(f"local ok, v = pcall(cjson.decode, '\"{esc}\"') return {{tostring(ok), v}}")
    for text in BAD_JSON:
        cases.append(f"return {{pcall(cjson.decode, '{text}')}}")
    rng = random.Random(11)
    for _ in range(60):
        value = lua_value(rng)
        cases.append(f"return {{pcall(cjson.encode, {value})}}")
        cases.append(f"local ok, s = pcall(cjson.encode, {value}) if not ok then return s end "
                     "return cjson.encode(cjson.decode(s))")
    for _ in range(40):
        text = json.dumps(json_value(rng), ensure_ascii=rng.random() < 0.5)
        cases.append(f"return cjson.encode(cjson.decode({lua_string(text)}))")
        cases.append(f"return cmsgpack.pack(cjson.decode({lua_string(text)}))")
    for k in range(1, 26):
        cases.append(f"return {{pcall(cjson.encode, {{[1] = 1, [{k}] = 2}})}}")
        cases.append(f"return {{pcall(cjson.encode, {{[{k}] = 1}})}}")
    for convert, ratio, safe in (("true", 2, 10), ("false", 0, 10), ("false", 1, 3),
                                 ("false", 3, 0), ("true", 1, 0), ("'on'", 5, 20)):
        cases.append(f"local set = {{cjson.encode_sparse_array({convert}, {ratio}, {safe})}} "
                     "local out = {} for k = 1, 30, 3 do out[#out + 1] = {pcall(cjson.encode, "
                     "{[1] = 1, [k] = 2, [k + 1] = 3})} end "
                     "cjson.encode_sparse_array(false, 2, 10) return {set, out}")
    for limit in ("nil", "1", "2", "3", "1000"):
        for depth in (1, 2, 3, 4, 999, 1000, 1001):
            cases.append(f"local set = cjson.encode_max_depth({limit}) local t = 1 "
                         f"for i = 1, {depth} do t = {{t}} end "
                         "local r = {pcall(cjson.encode, t)} cjson.encode_max_depth(1000) "
                         "return {set, r}")
            cases.append(f"local set = cjson.decode_max_depth({limit}) "
                         f"local r = {{pcall(cjson.decode, string.rep('[', {depth}) .. "
                         f"string.rep(']', {depth}))}} cjson.decode_max_depth(1000) "
                         "return {set, tostring(r[1]), type(r[2]) == 'string' and r[2] or ''}")
    cases.append("local t = {} t[1] = t return {pcall(cjson.encode, t)}")
    cases.append("local t = {} t.x = t return {pcall(cjson.encode, t)}")
    for call in ("cjson.encode_max_depth(0)", "cjson.encode_max_depth('x')",
                 "cjson.encode_max_depth(2^31)", "cjson.encode_max_depth(1, 2)",
                 "cjson.decode_max_depth(-1)", "cjson.encode_number_precision(15)",
                 "cjson.encode_number_precision(0)", "cjson.encode_keep_buffer('maybe')",
                 "cjson.encode_keep_buffer(true)", "cjson.encode_sparse_array(1)",
                 "cjson.encode_sparse_array(nil, -1)", "cjson.encode_sparse_array(nil, nil, -1)",
                 "cjson.encode_sparse_array(true, 2, 10, 4)", "cjson.decode_invalid_numbers('x')",
                 "cjson.decode_invalid_numbers(true)", "cjson.encode()", "cjson.encode(1, 2)",
                 "cjson.decode()", "cjson.decode(1, 2)", "cjson.decode({})", "cjson.decode(12)",
                 "cjson.encode(function() end)", "cjson.encode({[true] = 1})",
                 "cjson.encode({[{}] = 1})", "cjson.encode(coroutine.create(print or error))",
                 "cjson.decode('\\0x')", "cjson.decode('x\\0')"):
        cases.append(f"return {{pcall(function() return {call} end)}}")
        cases.append(f"return {call}")
    cases += ["return cjson.encode(cjson.null)", "return cjson.encode({cjson.null})",
              "return cjson.decode('null') == cjson.null",
              "return cjson.new().encode({1, 2, {a = 'b'}})",
              "local c = cjson.new() c.encode_max_depth(1) "
              "return {pcall(c.encode, {{}}), cjson.encode({{}})}"]
    # library functions handed to library functions are functions there too
    cases += ["return {pcall(cjson.encode, cjson.encode)}",
              "return {pcall(cjson.encode, {redis.call})}", "return {pcall(bit.band, redis.call)}",
              "return {pcall(struct.pack, 'i', redis.call)}",
              "return {pcall(cjson.decode, redis.call)}", "return cmsgpack.pack({redis.call})"]
    return cases


def cmsgpack_cases() -> list[str]:
    cases = []
    for n in MSGPACK_INTS:
        for v in (n - 1, n, n + 1):
            cases.append(SHOW + f"local p = cmsgpack.pack({v}) "
                         "return {p, show(cmsgpack.unpack(p))}")
    for f in MSGPACK_FLOATS:
        cases.append(SHOW + f"local p = cmsgpack.pack({f}) return {{p, show(cmsgpack.unpack(p))}}")
    for n in SIZES:
        cases.append(f"local p = cmsgpack.pack(string.rep('x', {n})) "
                     "return {p:sub(1, 6), #p, #cmsgpack.unpack(p)}")
        cases.append(f"local t = {{}} for i = 1, {n} do t[i] = i % 7 end local p = cmsgpack.pack(t) "
                     "return {p:sub(1, 8), #p, redis.sha1hex(p), #cmsgpack.unpack(p)}")
        cases.append(f"local t = {{}} for i = 1, {n} do t['k' .. i] = i end "
                     "local p = cmsgpack.pack(t) "
                     "return {p:sub(1, 3), #p, redis.sha1hex(p)}")
    for depth in (14, 15, 16, 17, 20):
        cases.append(f"local t = 1 for i = 1, {depth} do t = {{t}} end return cmsgpack.pack(t)")
    cases.append("local t = {} t[1] = t return cmsgpack.pack(t)")
    cases += ["return cmsgpack.pack(true, false, nil, cjson.null, function() end, 'x')",
              "return {pcall(cmsgpack.pack)}", "return cmsgpack.pack()",
              "return cmsgpack.pack({1, 2, nil, 4}, {[2] = 1}, {[1] = 1, [3] = 3}, {a = {b = {}}})",
              "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {2}, nil, true))}",
              "return select('#', cmsgpack.unpack(cmsgpack.pack(1, 'a', {2}, nil, true)))",
              "return {cmsgpack.unpack('')}", "return {pcall(cmsgpack.unpack)}",
              "return {pcall(cmsgpack.unpack, {})}", "return {cmsgpack.unpack(12)}"]
    # every first byte, with no payload, a short one and a long one
    cases.append(SHOW + "local out = {} for b = 0, 255 do for _, tail in ipairs({'', '\\1', "
                 "'\\0\\0\\0\\1\\0\\0\\0\\0abcdefghijklmnop'}) do "
                 "local r = {pcall(cmsgpack.unpack, string.char(b) .. tail)} "
                 "local parts = {tostring(r[1]), tostring(#r)} "
                 "for i = 2, #r do parts[#parts + 1] = type(r[i]) == 'table' and "
                 "cmsgpack.pack(r[i]) or show(r[i]) end "
                 "out[#out + 1] = table.concat(parts, '|') end end return out")
    stream = "cmsgpack.pack(1) .. cmsgpack.pack('two') .. cmsgpack.pack({3}) .. cmsgpack.pack(4)"
    for args in ("", ", 0", ", 1", ", 2", ", 6", ", 8", ", 9", ", 10", ", -1", ", 'x'", ", nil"):
        cases.append(f"local s = {stream} return {{pcall(cmsgpack.unpack_one, s{args})}}")
    for args in (", 0", ", 1", ", 2", ", 10", ", 2, 1", ", 1, 6", ", 3, 9", ", 0, 2",
                 ", -1", ", 1, -1", ", 1, 100", "", ", 'x'"):
        cases.append(f"local s = {stream} return {{pcall(cmsgpack.unpack_limit, s{args})}}")
    cases.append(f"local s = {stream} local out, off = {{}}, 0 "
                 "while off >= 0 do local v off, v = cmsgpack.unpack_one(s, off) "
                 "out[#out + 1] = off end return out")
    return cases


BIT_VALUES = ["0", "1", "-1", "0x7fffffff", "0x80000000", "0xffffffff", "2^32", "2^52",
              "1.5", "2.5", "-1.5", "1e20", "1/0", "0/0", "'12'", "' 0x10 '"]


def bit_struct_cases() -> list[str]:
    cases = []
    for v in BIT_VALUES:
        cases.append(f"local x = {v} return {{bit.tobit(x), bit.bnot(x), bit.bswap(x), "
                     "bit.tohex(x), bit.tohex(x, -4), bit.tohex(x, 2), bit.lshift(x, 3), "
                     "bit.rshift(x, 33), bit.arshift(x, 31), bit.rol(x, 5), bit.ror(x, -5), "
                     "bit.band(x, 0xff), bit.bor(x, 1, 2), bit.bxor(x, x)}")
    for call in ("bit.band()", "bit.bor({})", "bit.tohex()", "bit.tobit('x')", "bit.tobit(nil)",
                 "bit.lshift(1)", "bit.tohex(1, 'y')"):
        cases.append(f"return {{pcall(function() return {call} end)}}")
        cases.append(f"return {call}")
    formats = ["b", "B", "h", "H", "l", "L", "T", "i", "I", "i1", "I3", "i8", "I8", "i16",
               "f", "d", ">h", "<i4", "!4 b i", "!8bd", "bxh", ">I2 <I2"]
    for fmt in formats:
        cases.append(f"local ok, n = pcall(struct.size, '{fmt}') return {{tostring(ok), n}}")
        for v in ("0", "1", "-1", "300", "-200", "65537", "2^31", "-2^31", "1.9", "-1.9",
                  "2^53", "'7'"):
            cases.append(f"local ok, s = pcall(struct.pack, '{fmt}', {v}, {v}) "
                         f"if not ok then return s end "
                         f"return {{s, {{struct.unpack('{fmt}', s)}}}}")
    for call in ("struct.pack('s', 'abc')", "struct.pack('c5', 'ab')", "struct.pack('c0', 'abc')",
                 "struct.pack('c2', 'abc')", "struct.unpack('s', 'ab\\0cd')",
                 "struct.unpack('s', 'ab')", "struct.unpack('c0', 'ab')",
                 "struct.unpack('bc0', '\\2abc')", "struct.unpack('c2c1', 'abc')",
                 "struct.unpack('i', '\\1\\0\\0\\0\\2\\0\\0\\0', 5)",
                 "struct.unpack('i', '\\1\\0\\0\\0', 0)", "struct.unpack('i', '\\1\\0')",
                 "struct.pack('q', 1)", "struct.pack('i')", "struct.pack('ii', 1)",
                 "struct.size('s')", "struct.size('c0')", "struct.size('q')",
                 "struct.pack('i33', 1)", "struct.pack('!3 i', 1)", "struct.pack('x')",
                 "struct.unpack('>I8', '\\255\\255\\255\\255\\255\\255\\255\\255')",
                 "struct.unpack('<i8', '\\255\\255\\255\\255\\255\\255\\255\\127')",
                 "struct.pack('f', 1e300)", "struct.pack('>d', 0/0)", "struct.pack(1)"):
        cases.append(f"return {{pcall(function() return {call} end)}}")
        cases.append(f"return {call}")
    return cases


# Redis's math.random: its own lrand48, seeded here so both servers are at the same point
MATH = [f"math.randomseed({seed}) local t = {{}} for i = 1, 20 do t[i] = math.random({arg}) end "
        "t[21] = tostring(math.random()) return t"
        for seed in (0, 1, 42, -7, "2^40 + 5", "'12'", 3.9) for arg in ("", "1000", "5, 10",
                                                                        "-3, -3", "2.9")]
MATH += ["return {pcall(math.random, 0)}", "return {pcall(math.random, 5, 1)}",
         "return {pcall(math.random, 1, 2, 3)}", "return {pcall(math.random, 'x')}",
         "return math.random(0)", "return {pcall(math.randomseed)}", "return type(math.random)"]

CJSON, CMSGPACK, BIT_STRUCT = cjson_cases(), cmsgpack_cases(), bit_struct_cases() + MATH


ALL = {"cjson": CJSON, "cmsgpack": CMSGPACK, "bit_struct_math": BIT_STRUCT}


@pytest.mark.parametrize("name", ALL)
def test_eval(diff, name):
    for script in ALL[name]:
        run_eval(diff, script)


@pytest.mark.parametrize("name", ALL)
def test_eval_resp3(diff3, name):
    # the libraries do not see the protocol; a quarter of the cases checks the conversion
    for script in ALL[name][::4]:
        run_eval(diff3, script)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_eval_resp3_all(diff3, name):
    for script in ALL[name]:
        run_eval(diff3, script)


@pytest.mark.parametrize("cases", [CJSON, CMSGPACK, MATH], ids=["cjson", "cmsgpack", "math"])
def test_fcall(diff, cases):
    try:
        for script in cases[::3]:  # FCALL's own Lua state; a third of the cases suffices
            run_fcall(diff, script)
    finally:
        for c in (diff.real, diff.ours):
            c.call("FUNCTION", "FLUSH")


def test_settings_live_in_each_lua_state(diff):
    """cjson settings persist between scripts, separately for EVAL and FCALL (two Lua states
    in Redis), until SCRIPT FLUSH gives EVAL a fresh state."""
    try:
        run_eval(diff, "return cjson.encode_max_depth(5)")
        run_eval(diff, "return {cjson.encode_max_depth(), cjson.encode_sparse_array(true)}")
        run_fcall(diff, "return {cjson.encode_max_depth(), cjson.encode_sparse_array()}")
        diff("SCRIPT", "FLUSH")
        run_eval(diff, "return {cjson.encode_max_depth(), cjson.encode_sparse_array()}")
    finally:
        for c in (diff.real, diff.ours):
            c.call("EVAL", "cjson.encode_max_depth(1000) cjson.encode_sparse_array(false, 2, 10)",
                   "0")
            c.call("FUNCTION", "FLUSH")


# -- fuzz: mutated JSON texts and random MessagePack bytes (a bounded slice by default) ------
JSON_ATOMS = ["1", "-1", "0", "1.5", "1e5", '"a"', '"\\\\u00e9"', "true", "false", "null", "[]",
              "{}", '"\\\\n"', "-0.0", "1E-3", '"x\\\\"y"', "0x1", "nan", "inf", "+2", "01",
              '"\\\\ud800\\\\udc00"']
SHOW_PACKED = ("local function show(v) if type(v) == 'number' then "
               "return string.format('%.17g', v) elseif type(v) == 'table' then "
               "return cmsgpack.pack(v) else return tostring(v) end end ")


def fuzz_json(rng: random.Random) -> str:
    def gen(depth: int = 0) -> str:
        r = rng.random()
        if depth > 3 or r < 0.4:
            return rng.choice(JSON_ATOMS)
        if r < 0.7:
            return "[" + ",".join(gen(depth + 1) for _ in range(rng.randrange(4))) + "]"
        return "{" + ",".join(f'"k{i}":{gen(depth + 1)}' for i in range(rng.randrange(4))) + "}"

    chars = list(gen())
    for _ in range(rng.randrange(3)):
        i = rng.randrange(len(chars) + 1)
        if rng.random() < 0.5 and chars:
            del chars[min(i, len(chars) - 1)]
        else:
            chars.insert(i, rng.choice('[]{},:"\\ 0a-e.'))
    text = "".join(chars).replace("\\", "\\\\").replace("'", "\\'")
    return SHOW_PACKED + f"local ok, v = pcall(cjson.decode, '{text}') return {{tostring(ok), show(v)}}"


def fuzz_msgpack(rng: random.Random) -> str:
    data = bytes(rng.choice([rng.randrange(256), 0x90 | rng.randrange(16), 0x80 | rng.randrange(16),
                             0xA0 | rng.randrange(32), 0xC0 + rng.randrange(0x20),
                             rng.randrange(128)]) for _ in range(rng.randrange(1, 24)))
    lua = "".join(f"\\{b}" for b in data)
    call = rng.choice(["cmsgpack.unpack(s)", "cmsgpack.unpack_one(s)", "cmsgpack.unpack_limit(s, 2)",
                       "cmsgpack.unpack_one(s, 1)"])
    return (SHOW_PACKED + f"local s = '{lua}' local r = {{pcall(function() return {call} end)}} "
            "local out = {tostring(r[1]), tostring(#r)} "
            "for i = 2, #r do out[#out + 1] = show(r[i]) end return out")


def run_fuzz(diff, count: int) -> None:
    rng = random.Random(20261201)
    for _ in range(count):
        run_eval(diff, fuzz_json(rng))
        run_eval(diff, fuzz_msgpack(rng))


def test_fuzz_slice(diff):
    run_fuzz(diff, 60)


@pytest.mark.slow
def test_fuzz(diff):
    run_fuzz(diff, 2000)
