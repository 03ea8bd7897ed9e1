"""The reply writer: every reply value type in RESP2 and RESP3, byte for byte."""
from __future__ import annotations

import enum
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykv.protocol import (
    NULL_ARRAY,
    OK,
    PONG,
    QUEUED,
    BigNumber,
    ErrorReply,
    Push,
    RawReply,
    RespSet,
    SimpleString,
    Verbatim,
    encode_reply,
    format_double,
    write_reply,
)
from pykv.protocol._writer import write_integer_reply, write_integer_text


class Color(enum.IntEnum):
    RED = 7


# value, RESP2 bytes, RESP3 bytes
CASES = [
    (b"abc", b"$3\r\nabc\r\n", b"$3\r\nabc\r\n"),
    (b"", b"$0\r\n\r\n", b"$0\r\n\r\n"),
    (b"a\r\nb\x00", b"$5\r\na\r\nb\x00\r\n", b"$5\r\na\r\nb\x00\r\n"),
    (bytearray(b"xy"), b"$2\r\nxy\r\n", b"$2\r\nxy\r\n"),
    (memoryview(b"mv"), b"$2\r\nmv\r\n", b"$2\r\nmv\r\n"),
    (0, b":0\r\n", b":0\r\n"),
    (-1, b":-1\r\n", b":-1\r\n"),
    (-2, b":-2\r\n", b":-2\r\n"),
    (1023, b":1023\r\n", b":1023\r\n"),
    (1024, b":1024\r\n", b":1024\r\n"),
    (2**63 - 1, b":9223372036854775807\r\n", b":9223372036854775807\r\n"),
    (-(2**63), b":-9223372036854775808\r\n", b":-9223372036854775808\r\n"),
    (Color.RED, b":7\r\n", b":7\r\n"),
    (None, b"$-1\r\n", b"_\r\n"),
    (NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
    ([], b"*0\r\n", b"*0\r\n"),
    ([b"a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", b"*3\r\n$1\r\na\r\n:1\r\n_\r\n"),
    ((b"t",), b"*1\r\n$1\r\nt\r\n", b"*1\r\n$1\r\nt\r\n"),
    ([[b"x"], []], b"*2\r\n*1\r\n$1\r\nx\r\n*0\r\n", b"*2\r\n*1\r\n$1\r\nx\r\n*0\r\n"),
    ({}, b"*0\r\n", b"%0\r\n"),
    ({b"k": 1, b"j": [b"v"]}, b"*4\r\n$1\r\nk\r\n:1\r\n$1\r\nj\r\n*1\r\n$1\r\nv\r\n",
     b"%2\r\n$1\r\nk\r\n:1\r\n$1\r\nj\r\n*1\r\n$1\r\nv\r\n"),
    (RespSet([b"m"]), b"*1\r\n$1\r\nm\r\n", b"~1\r\n$1\r\nm\r\n"),
    (RespSet(), b"*0\r\n", b"~0\r\n"),
    (Push([b"message", b"ch", b"hi"]),
     b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
     b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"),
    (1.5, b"$3\r\n1.5\r\n", b",1.5\r\n"),
    (0.1, b"$19\r\n0.10000000000000001\r\n", b",0.10000000000000001\r\n"),
    (-0.0, b"$2\r\n-0\r\n", b",-0\r\n"),
    (1e300, b"$23\r\n1.0000000000000001e+300\r\n", b",1.0000000000000001e+300\r\n"),
    (math.inf, b"$3\r\ninf\r\n", b",inf\r\n"),
    (-math.inf, b"$4\r\n-inf\r\n", b",-inf\r\n"),
    (math.nan, b"$3\r\nnan\r\n", b",nan\r\n"),
    (True, b":1\r\n", b"#t\r\n"),
    (False, b":0\r\n", b"#f\r\n"),
    (OK, b"+OK\r\n", b"+OK\r\n"),
    (PONG, b"+PONG\r\n", b"+PONG\r\n"),
    (QUEUED, b"+QUEUED\r\n", b"+QUEUED\r\n"),
    (SimpleString(b""), b"+\r\n", b"+\r\n"),
    (ErrorReply(b"ERR syntax error"), b"-ERR syntax error\r\n", b"-ERR syntax error\r\n"),
    (ErrorReply("WRONGTYPE x"), b"-WRONGTYPE x\r\n", b"-WRONGTYPE x\r\n"),
    (ErrorReply(b"ERR a\r\nb\nc"), b"-ERR a  b c\r\n", b"-ERR a  b c\r\n"),
    (Verbatim(b"# Server\r\n"), b"$10\r\n# Server\r\n\r\n", b"=14\r\ntxt:# Server\r\n\r\n"),
    (Verbatim(b"x", b"mkd"), b"$1\r\nx\r\n", b"=5\r\nmkd:x\r\n"),
    (BigNumber(b"12345678901234567890"), b"$20\r\n12345678901234567890\r\n",
     b"(12345678901234567890\r\n"),
    (RawReply(b"+raw\r\n"), b"+raw\r\n", b"+raw\r\n"),
    ([RespSet([1.5]), {b"n": None}, True],
     b"*3\r\n*1\r\n$3\r\n1.5\r\n*2\r\n$1\r\nn\r\n$-1\r\n:1\r\n",
     b"*3\r\n~1\r\n,1.5\r\n%1\r\n$1\r\nn\r\n_\r\n#t\r\n"),
]


@pytest.mark.parametrize("value, resp2, resp3", CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_reply(value, resp2, resp3):
    assert encode_reply(value) == resp2
    assert encode_reply(value, 2) == resp2
    assert encode_reply(value, 3) == resp3


def test_write_reply_appends_to_the_buffer():
    out = bytearray(b"+prefix\r\n")
    write_reply(out, b"x", 2)
    write_reply(out, None, 3)
    assert out == b"+prefix\r\n$1\r\nx\r\n_\r\n"


def test_every_cached_small_integer():
    for i in range(-5, 1100):
        assert encode_reply(i) == b":%d\r\n" % i


def test_unknown_type_is_a_type_error():
    with pytest.raises(TypeError, match="cannot encode reply of type object"):
        encode_reply(object())
    with pytest.raises(TypeError):
        encode_reply([b"ok", {1, 2}])


def test_error_reply_code():
    assert ErrorReply(b"WRONGTYPE Operation against a key").code == b"WRONGTYPE"


@pytest.mark.parametrize("value, text", [
    (0.0, b"0"), (1.0, b"1"), (3.0e-5, b"3.0000000000000001e-05"),
    (123456789012345678.0, b"1.2345678901234568e+17"), (-2.5, b"-2.5"),
    (math.inf, b"inf"), (-math.inf, b"-inf"), (math.nan, b"nan"),
])
def test_format_double(value, text):
    assert format_double(value) == text


# -- property: a small RESP decoder reads back what the writer wrote -------------------------

def decode(data: bytes, pos: int = 0):
    """Decode one RESP2/RESP3 reply (test helper): (value, next position)."""
    t = data[pos:pos + 1]
    end = data.index(b"\r\n", pos)
    head = data[pos + 1:end]
    pos = end + 2
    if t == b"$":
        n = int(head)
        if n < 0:
            return None, pos
        return data[pos:pos + n], pos + n + 2
    if t == b":":
        return int(head), pos
    if t in (b"*", b"~", b">"):
        items = []
        for _ in range(int(head)):
            item, pos = decode(data, pos)
            items.append(item)
        return items, pos
    if t == b"%":
        d = {}
        for _ in range(int(head)):
            k, pos = decode(data, pos)
            d[k], pos = decode(data, pos)
        return d, pos
    if t == b"_":
        return None, pos
    if t == b"#":
        return head == b"t", pos
    if t == b",":
        return float(head), pos
    raise AssertionError(f"unexpected type byte {t!r}")


values_st = st.recursive(
    st.none() | st.binary(max_size=30) | st.integers(-(2**63), 2**63 - 1)
    | st.booleans() | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.binary(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def as_resp2(v):
    """What a RESP2 reader sees for ``v``: maps flattened, floats as bulks, bools as ints."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        return format_double(v)
    if isinstance(v, list):
        return [as_resp2(x) for x in v]
    if isinstance(v, dict):
        flat = []
        for k, x in v.items():
            flat += [k, as_resp2(x)]
        return flat
    return v


@settings(max_examples=200, deadline=None, database=None)
@given(values_st)
def test_round_trip(value):
    wire3 = encode_reply(value, 3)
    got3, end3 = decode(wire3)
    assert end3 == len(wire3)
    assert got3 == value
    wire2 = encode_reply(value, 2)
    got2, end2 = decode(wire2)
    assert end2 == len(wire2)
    assert got2 == as_resp2(value)


def test_integer_replies_written_in_place():
    """The in-place integer replies are the bytes write_reply gives the same integer."""
    for value in [0, 1, -1, 9, 10, 12345, -99999, (1 << 63) - 1, -(1 << 63)]:
        out = bytearray(b"+OK\r\n")
        write_integer_reply(out, value)
        write_integer_text(out, b"%d" % value)
        assert bytes(out) == b"+OK\r\n" + encode_reply(value, 2) * 2 == \
            b"+OK\r\n" + encode_reply(value, 3) * 2
