"""The RESP request parser on raw bytes (sans-IO): framing, Redis's quirks, errors, limits.

Every expectation here is Redis 7.0's ``processMultibulkBuffer``/``processInlineBuffer``
behaviour; ``tests/compat/test_protocol.py`` checks a sample of it against real redis-server.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykv.protocol import ProtocolError, RequestParser, split_args

INLINE_MAX = 64 * 1024


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def parse_all(data: bytes, parser: RequestParser | None = None) -> list[list[bytes]]:
    """Every complete command in ``data`` (raises ProtocolError like the server sees it)."""
    p = parser or RequestParser()
    p.feed(data)
    out = []
    while (cmd := p.get_command()) is not None:
        out.append(cmd)
    return out


def outcome(chunks: list[bytes]) -> tuple[list[list[bytes]], str | None]:
    """Feed chunks one by one: the commands produced and the first protocol error, if any."""
    p = RequestParser()
    cmds: list[list[bytes]] = []
    for chunk in chunks:
        p.feed(chunk)
        try:
            while (cmd := p.get_command()) is not None:
                cmds.append(cmd)
        except ProtocolError as exc:
            return cmds, str(exc)
    return cmds, None


def error_of(data: bytes, **attrs: object) -> str:
    p = RequestParser()
    for name, value in attrs.items():
        setattr(p, name, value)
    with pytest.raises(ProtocolError) as info:
        parse_all(data, p)
    return str(info.value)


# -- framing -------------------------------------------------------------------------------

STREAM = b"".join([
    encode(b"SET", b"key", b"value"),
    b"PING\r\n",
    encode(b"ECHO", b""),
    b"ECHO \"a b\\x41\\n\" 'it\\'s'\n",
    b"*0\r\n",
    b"*-1\r\n",
    encode(b"GET", b"bin\r\n\x00\xff" * 10),
    b"\r\n\n   \r\n",
    encode(b"MSET", *[b"k%d" % i for i in range(20)]),
    b"  INCR   counter  \r\n",
    encode(b"X" * 70000),  # a bulk longer than the inline limit is fine
])
STREAM_COMMANDS = [
    [b"SET", b"key", b"value"],
    [b"PING"],
    [b"ECHO", b""],
    [b"ECHO", b"a bA\n", b"it's"],
    [b"GET", b"bin\r\n\x00\xff" * 10],
    [b"MSET", *[b"k%d" % i for i in range(20)]],
    [b"INCR", b"counter"],
    [b"X" * 70000],
]


def test_stream_parses_whole():
    assert parse_all(STREAM) == STREAM_COMMANDS


def test_every_split_point_gives_the_same_commands():
    small = STREAM[: STREAM.index(b"*1\r\n$70000")]
    expected = STREAM_COMMANDS[:-1]
    for i in range(len(small) + 1):
        p = RequestParser()
        got = parse_all(small[:i], p)
        got += parse_all(small[i:], p)
        assert got == expected, i
        assert p.buffered() == 0


def test_byte_at_a_time():
    p = RequestParser()
    got = []
    for i in range(len(STREAM)):
        p.feed(STREAM[i:i + 1])
        while (cmd := p.get_command()) is not None:
            got.append(cmd)
    assert got == STREAM_COMMANDS


def test_one_command_at_a_time_and_buffered():
    p = RequestParser()
    p.feed(encode(b"A") + encode(b"B", b"xy") + b"*2\r\n$1\r\nC")
    assert p.get_command() == [b"A"]
    assert p.buffered() == len(encode(b"B", b"xy") + b"*2\r\n$1\r\nC")
    assert p.get_command() == [b"B", b"xy"]
    assert p.get_command() is None
    p.compact()
    assert 0 < p.buffered() <= len(b"*2\r\n$1\r\nC")  # count lines may be consumed
    p.feed(b"\r\n$1\r\nD\r\n")
    assert p.get_command() == [b"C", b"D"]
    assert p.buffered() == 0


def test_reset_drops_partial_command():
    p = RequestParser()
    p.feed(b"*3\r\n$3\r\nSET\r\n$1\r\nk")
    assert p.get_command() is None
    p.reset()
    assert p.buffered() == 0
    p.feed(b"PING\r\n")
    assert p.get_command() == [b"PING"]


def test_inline_vs_multibulk_are_equivalent():
    assert parse_all(b"SET k v\r\n") == parse_all(encode(b"SET", b"k", b"v"))
    assert parse_all(b"SET k v\n") == [[b"SET", b"k", b"v"]]  # bare LF is enough inline


def test_empty_and_zero_length_requests_are_skipped():
    assert parse_all(b"\r\n\n \t \r\n*0\r\n*-1\r\n*-7\r\nPING\r\n") == [[b"PING"]]


def test_empty_bulk_and_binary_args():
    assert parse_all(encode(b"SET", b"", b"\x00\r\n\xff")) == [[b"SET", b"", b"\x00\r\n\xff"]]


# -- Redis's quirks ------------------------------------------------------------------------

def test_nul_before_cr_hides_the_count_line():
    p = RequestParser()
    p.feed(b"*1\x00\r\n$4\r\nPING\r\n")
    assert p.get_command() is None  # strchr stops at the NUL: still "waiting"
    p.feed(b"x" * INLINE_MAX)
    with pytest.raises(ProtocolError, match="^Protocol error: too big mbulk count string$"):
        p.get_command()


def test_nul_before_cr_hides_the_bulk_count_line():
    p = RequestParser()
    p.feed(b"*1\r\n$4\x00\r\nPING\r\n")
    assert p.get_command() is None
    p.feed(b"x" * INLINE_MAX)
    with pytest.raises(ProtocolError, match="^Protocol error: too big bulk count string$"):
        p.get_command()


def test_nul_before_newline_hides_an_inline_command():
    p = RequestParser()
    p.feed(b"PING\x00\r\n")
    assert p.get_command() is None
    p.feed(b"y" * INLINE_MAX)
    with pytest.raises(ProtocolError, match="^Protocol error: too big inline request$"):
        p.get_command()


def test_byte_after_cr_is_not_checked():
    assert parse_all(b"*2\rX$4\rYECHO\r\n$2\r?hi\r\n") == [[b"ECHO", b"hi"]]


def test_cr_must_be_followed_by_one_byte_before_parsing():
    p = RequestParser()
    p.feed(b"*1\r")
    assert p.get_command() is None
    p.feed(b"Z$4\r")
    assert p.get_command() is None
    p.feed(b"\nPING\r\n")
    assert p.get_command() == [b"PING"]


def test_two_bytes_after_a_bulk_are_not_checked():
    assert parse_all(b"*2\r\n$4\r\nECHOab$2\r\nhiZZ") == [[b"ECHO", b"hi"]]


def test_bulk_waits_for_its_two_trailing_bytes():
    p = RequestParser()
    p.feed(b"*1\r\n$4\r\nPING\r")
    assert p.get_command() is None
    p.feed(b"\n")
    assert p.get_command() == [b"PING"]


@pytest.mark.parametrize("count", [b"01", b"-0", b"+1", b" 1", b"1 ", b"", b"-", b"1x",
                                   b"0x1", b"2147483648", b"9223372036854775808",
                                   b"99999999999999999999999", b"1.0"])
def test_invalid_multibulk_length(count):
    assert error_of(b"*" + count + b"\r\n") == "Protocol error: invalid multibulk length"


@pytest.mark.parametrize("count", [b"01", b"-0", b"+1", b"-1", b"-5", b"", b"1x", b"00",
                                   b"9223372036854775808", b"18446744073709551616"])
def test_invalid_bulk_length(count):
    assert error_of(b"*1\r\n$" + count + b"\r\n") == "Protocol error: invalid bulk length"


def test_largest_multibulk_length_is_accepted():
    p = RequestParser()
    p.feed(b"*2147483647\r\n$4\r\nPING\r\n")
    assert p.get_command() is None  # waiting for 2147483646 more arguments


def test_negative_multibulk_lengths_are_empty_requests():
    assert parse_all(b"*-2147483649\r\n*-9223372036854775808\r\nPING\r\n") == [[b"PING"]]


@pytest.mark.parametrize("data, got", [
    (b"*1\r\n+PING\r\n", "+"),
    (b"*1\r\n:1\r\n", ":"),
    (b"*2\r\n$4\r\nECHO\r\n*1\r\n", "*"),
    (b"*1\r\nPING\r\n", "P"),
    (b"*1\r\n\x01\r\n", "\x01"),
    (b"*1\r\n\xff\r\n", "\xff"),
])
def test_expected_dollar(data, got):
    assert error_of(data) == f"Protocol error: expected '$', got '{got}'"


def test_error_after_good_commands_keeps_them():
    cmds, err = outcome([encode(b"PING") + encode(b"ECHO", b"x") + b"*1\r\n:5\r\n"])
    assert cmds == [[b"PING"], [b"ECHO", b"x"]]
    assert err == "Protocol error: expected '$', got ':'"


# -- inline --------------------------------------------------------------------------------

@pytest.mark.parametrize("line, args", [
    (b"a b  c", [b"a", b"b", b"c"]),
    (b'"a b" c', [b"a b", b"c"]),
    (b'"\\x41\\x4a\\x4A"', [b"AJJ"]),
    (b'"\\xZZ"', [b"xZZ"]),
    (b'"\\n\\r\\t\\b\\a\\\\\\""', [b"\n\r\t\x08\x07\\\""]),
    (b"'a\\'b' 'c\\d'", [b"a'b", b"c\\d"]),
    (b'""', [b""]),
    (b"''", [b""]),
    (b'a"b"', [b"ab"]),
    (b"a'b' c", [b"ab", b"c"]),
    # isspace() blanks before a word, but only space/tab/CR/LF end one (as sdssplitargs)
    (b"\t\x0b\x0ca\x0c", [b"a\x0c"]),
    (b"a\x0bb \x0cc", [b"a\x0bb", b"c"]),
])
def test_split_args(line, args):
    assert split_args(line) == args
    assert parse_all(line + b"\r\n") == [args]


@pytest.mark.parametrize("line", [b'"abc', b"'abc", b'"a"b', b"'a'b", b'"a\\"'])
def test_unbalanced_quotes(line):
    assert split_args(line) is None
    assert error_of(line + b"\r\n") == "Protocol error: unbalanced quotes in request"


def test_inline_cr_only_stripped_before_lf():
    assert parse_all(b"ECHO a\r\r\n") == [[b"ECHO", b"a"]]  # sdssplitargs eats the CR
    assert parse_all(b'ECHO "a"\r\n') == [[b"ECHO", b"a"]]


def test_oversize_inline_request():
    p = RequestParser()
    p.feed(b"x" * INLINE_MAX)
    assert p.get_command() is None  # exactly the limit: still waiting
    p.feed(b"x")
    with pytest.raises(ProtocolError, match="^Protocol error: too big inline request$"):
        p.get_command()


def test_long_inline_request_that_ends_in_time():
    line = b"ECHO " + b"z" * (INLINE_MAX - 10) + b"\r\n"
    assert parse_all(line) == [[b"ECHO", b"z" * (INLINE_MAX - 10)]]


def test_oversize_count_lines():
    p = RequestParser()
    p.feed(b"*" + b"1" * (INLINE_MAX - 1))
    assert p.get_command() is None
    p.feed(b"1")
    with pytest.raises(ProtocolError, match="mbulk count string"):
        p.get_command()
    assert error_of(b"*1\r\n$" + b"1" * INLINE_MAX) == "Protocol error: too big bulk count string"


# -- limits --------------------------------------------------------------------------------

def test_proto_max_bulk_len():
    limit = 1024 * 1024
    p = RequestParser(limit)
    assert p.max_bulk_len == limit
    p.feed(b"*1\r\n$%d\r\n" % limit)
    assert p.get_command() is None  # accepted, waiting for the data
    assert error_of(b"*1\r\n$%d\r\n" % (limit + 1), max_bulk_len=limit) == \
        "Protocol error: invalid bulk length"


def test_default_proto_max_bulk_len_is_512mb():
    assert RequestParser().max_bulk_len == 512 * 1024 * 1024
    assert error_of(b"*1\r\n$536870913\r\n") == "Protocol error: invalid bulk length"


def test_auth_required_limits():
    p = RequestParser()
    p.auth_required = True
    p.feed(b"*10\r\n")
    assert p.get_command() is None
    assert error_of(b"*11\r\n", auth_required=True) == \
        "Protocol error: unauthenticated multibulk length"
    p = RequestParser()
    p.auth_required = True
    p.feed(b"*1\r\n$16384\r\n")
    assert p.get_command() is None
    assert error_of(b"*1\r\n$16385\r\n", auth_required=True) == \
        "Protocol error: unauthenticated bulk length"
    # the multibulk checks come first, in Redis's order
    assert error_of(b"*01\r\n", auth_required=True) == "Protocol error: invalid multibulk length"
    # inline requests have no such limit (only the 64 KiB line limit)
    p = RequestParser()
    p.auth_required = True
    assert parse_all(b"A " * 20 + b"\r\n", p) == [[b"A"] * 20]


def test_auth_required_can_be_lifted_between_commands():
    p = RequestParser()
    p.auth_required = True
    p.feed(encode(b"AUTH", b"pw") + encode(*[b"x"] * 11))
    assert p.get_command() == [b"AUTH", b"pw"]
    p.auth_required = False  # the dispatcher does this after a successful AUTH
    assert p.get_command() == [b"x"] * 11


# -- properties ----------------------------------------------------------------------------

args_st = st.lists(st.binary(max_size=40), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(args_st, min_size=1, max_size=6), st.data())
def test_multibulk_round_trip_any_chunking(commands, data):
    wire = b"".join(encode(*c) for c in commands)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    assert outcome(chunks) == (commands, None)


def quote_inline(arg: bytes) -> bytes:
    """Quote any bytes so that sdssplitargs gives them back."""
    return b'"' + b"".join(b"\\x%02x" % b for b in arg) + b'"'


@settings(max_examples=200, deadline=None, database=None)
@given(args_st)
def test_inline_round_trip(args):
    line = b" ".join(quote_inline(a) for a in args)
    assert split_args(line) == args
    assert parse_all(line + b"\r\n") == [args]


# RESP-shaped garbage reaches far more parser states than uniform random bytes
_TOKENS = [b"*", b"$", b"\r\n", b"\r", b"\n", b"0", b"1", b"2", b"3", b"-", b"+", b"\x00",
           b"PING", b" ", b'"', b"'", b"\\", b"x"]
garbage_st = st.lists(st.sampled_from(_TOKENS) | st.binary(max_size=4), max_size=60).map(b"".join)


@settings(max_examples=250, deadline=None, database=None)
@given(garbage_st, st.data())
def test_garbage_is_chunking_independent_and_only_raises_protocol_errors(garbage, data):
    whole = outcome([garbage])
    cut = data.draw(st.integers(0, len(garbage)))
    assert outcome([garbage[:cut], garbage[cut:]]) == whole
    assert outcome([garbage[i:i + 1] for i in range(len(garbage))]) == whole
    if whole[1] is not None:
        assert whole[1].startswith("Protocol error: ")


# -- the length-line fast path (plain digits) and the exact path it defers to ---------------

@pytest.mark.parametrize(("wire", "expected"), [
    (b"*1\r\n$0\r\n\r\n", ([[b""]], None)),
    (b"*0\r\n*1\r\n$1\r\nx\r\n", ([[b"x"]], None)),
    (b"*1\r\n$01\r\nx\r\n", ([], "Protocol error: invalid bulk length")),
    (b"*01\r\n$1\r\nx\r\n", ([], "Protocol error: invalid multibulk length")),
    (b"*2147483648\r\n", ([], "Protocol error: invalid multibulk length")),
    (b"*1\r\n$" + b"9" * 18 + b"\r\n", ([], "Protocol error: invalid bulk length")),
    (b"*1\r\n$" + b"9" * 19 + b"\r\n", ([], "Protocol error: invalid bulk length")),
    (b"*1\r\n$1\x00\r\nx\r\n", ([], None)),  # the NUL hides the '\r' (strchr): wait
    (b"*1\r\n$-1\r\n", ([], "Protocol error: invalid bulk length")),
])
def test_length_lines_whole_and_byte_at_a_time(wire, expected):
    assert outcome([wire]) == expected
    assert outcome([wire[i:i + 1] for i in range(len(wire))]) == expected


def test_bulk_length_limit_is_inclusive_on_the_fast_path():
    p = RequestParser(max_bulk_len=3)
    assert parse_all(encode(b"abc"), p) == [[b"abc"]]
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        parse_all(b"*1\r\n$4\r\nabcd\r\n", RequestParser(max_bulk_len=3))


def test_repeated_command_names_are_equal_and_shared():
    p = RequestParser()
    p.feed(encode(b"GET", b"a") + encode(b"GET", b"b") + encode(b"SET", b"a", b"1"))
    first, second, third = p.get_command(), p.get_command(), p.get_command()
    assert (first, second, third) == ([b"GET", b"a"], [b"GET", b"b"], [b"SET", b"a", b"1"])
    assert first[0] is second[0]
