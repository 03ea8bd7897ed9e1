"""Connection commands and CLIENT against real redis-server: replies byte for byte."""
from __future__ import annotations

import re
import time

import pytest
from support.resp import RawClient

CLIENT_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub",
                 "psub", "ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs",
                 "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "redir",
                 "resp"]


def _fields(line: bytes) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.decode().split(" "))


def test_ping_echo_select(diff):
    diff("PING")
    diff("PING", "x")
    diff("SELECT", "1")
    diff("SELECT", "16")
    diff("SELECT", "-1")
    diff("SELECT", "x")
    diff("SELECT", "0")


@pytest.mark.parametrize("args", [
    ["HELLO", "4"], ["HELLO", "abc"], ["HELLO", "1"], ["HELLO", "3", "foo"],
    ["HELLO", "3", "AUTH", "a"],
    ["HELLO", "2", "SETNAME"], ["HELLO", "2", "SETNAME", "a b"],
    ["HELLO", "3", "AUTH", "nobody", "pw"], ["AUTH", "a", "b", "c"], ["AUTH", "x"],
    ["AUTH", "foo", "bar"], ["AUTH", "default", "x"],
])
def test_hello_auth_errors(diff, args):
    diff(*args)


def test_hello_reply_shape(diff, diff3):
    real, ours = diff.both("HELLO", "2", "SETNAME", "me")
    # the client id differs; everything else is the same bytes
    norm = re.compile(rb"(\$2\r\nid\r\n):\d+")
    assert norm.sub(rb"\1:N", real) == norm.sub(rb"\1:N", ours)
    real, ours = diff3.both("HELLO")
    assert norm.sub(rb"\1:N", real) == norm.sub(rb"\1:N", ours)
    diff("CLIENT", "GETNAME")
    real, ours = diff.both("HELLO", "3")
    assert norm.sub(rb"\1:N", real) == norm.sub(rb"\1:N", ours)
    diff("PING")  # now RESP3 on both


def test_reset(diff):
    diff("CLIENT", "SETNAME", "someone")
    diff("SELECT", "3")
    diff("MULTI")
    diff("RESET")
    diff("CLIENT", "GETNAME")
    diff("SET", "k", "v")
    diff("SELECT", "0")
    diff("EXISTS", "k")  # k was written to db 0: RESET went back to db 0
    diff("EXEC")  # not in MULTI any more
    diff("RESET", "x")


def test_reset_leaves_resp3_and_reply_off(diff3):
    for c in (diff3.real, diff3.ours):
        c.send_raw(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
    diff3("RESET")
    diff3("PING")  # back to RESP2 with replies on


def test_client_simple_subcommands(diff):
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME", "abc")
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME", "a b")
    diff("CLIENT", "SETNAME", "a\nb")
    diff("CLIENT", "SETNAME", "")
    diff("CLIENT", "GETNAME")
    diff("CLIENT", "SETNAME")
    diff("CLIENT", "ID", "x")
    diff("CLIENT", "INFO", "x")
    diff("CLIENT", "NOSUCH")
    diff("CLIENT")
    diff("CLIENT", "GETREDIR")
    diff("CLIENT", "TRACKINGINFO")
    diff("CLIENT", "NO-EVICT", "on")
    diff("CLIENT", "NO-EVICT", "off")
    diff("CLIENT", "NO-EVICT", "maybe")
    diff("CLIENT", "NO-EVICT")
    diff("CLIENT", "REPLY", "foo")
    diff("CLIENT", "REPLY")
    diff("CLIENT", "UNBLOCK", "99999")
    diff("CLIENT", "UNBLOCK", "abc")
    diff("CLIENT", "UNBLOCK", "1", "foo")
    diff("CLIENT", "UNBLOCK", "1", "timeout")
    diff("CLIENT", "UNBLOCK", "1", "ERROR")


def test_client_trackinginfo_resp3(diff3):
    diff3("CLIENT", "TRACKINGINFO")
    diff3("CLIENT", "GETREDIR")


@pytest.mark.parametrize("args", [
    ["KILL", "1.2.3.4:5"], ["KILL", "ID", "abc"], ["KILL", "ID", "0"], ["KILL", "ID", "99999"],
    ["KILL", "foo", "bar"], ["KILL", "TYPE", "foo"], ["KILL", "MAXAGE", "10"],
    ["KILL", "SKIPME", "maybe"], ["KILL", "ID"], ["KILL", "ADDR"],
    ["KILL", "USER", "nobody"], ["KILL", "LADDR", "1.2.3.4:5", "SKIPME", "no"],
    ["KILL", "ID", "99998", "ID", "99999"], ["KILL", "TYPE", "master"],
    ["KILL", "TYPE", "pubsub"], ["KILL", "a", "b", "c"],
    ["KILL", "1.2.3.4:5", "extra"],
    ["LIST", "TYPE", "foo"], ["LIST", "ID"], ["LIST", "ID", "abc"], ["LIST", "ID", "0"],
    ["LIST", "ID", "99999"], ["LIST", "foo"], ["LIST", "TYPE", "normal", "ID", "1"],
    ["LIST", "TYPE", "pubsub"], ["LIST", "TYPE", "master"], ["LIST", "TYPE", "replica"],
    ["PAUSE"], ["PAUSE", "abc"], ["PAUSE", "-1"], ["PAUSE", "10", "foo"],
    ["PAUSE", "10", "write", "x"], ["PAUSE", "0"], ["PAUSE", "0", "WRITE"], ["UNPAUSE"],
    ["UNPAUSE", "x"], ["HELP", "x"],
])
def test_client_errors(diff, args):
    diff("CLIENT", *args)


def test_client_help_shape(diff):
    real, ours = diff.both("CLIENT", "HELP")
    assert ours.startswith(b"*") and b"+CLIENT <subcommand> [<arg> [value] [opt] ...]" in ours
    assert real.count(b"\r\n+") - 2 <= ours.count(b"\r\n+") <= real.count(b"\r\n+") + 6


def test_client_list_fields(pykv_proc, real_redis):
    for port in (pykv_proc.port, real_redis.port):
        c = RawClient(port=port)
        reply = c.call("CLIENT", "LIST")
        body = reply.split(b"\r\n", 1)[1].rstrip(b"\r\n")
        lines = body.split(b"\n")
        mine = [ln for ln in lines if b"cmd=client|list" in ln]
        assert len(mine) == 1
        fields = _fields(mine[0])
        assert list(fields) == CLIENT_FIELDS
        assert fields["flags"] == "N" and fields["db"] == "0" and fields["multi"] == "-1"
        assert fields["user"] == "default" and fields["resp"] == "2"
        assert fields["laddr"].endswith(f":{port}")
        own_id = c.call("CLIENT", "ID")[1:-2].decode()
        assert fields["id"] == own_id
        info = c.call("CLIENT", "INFO")
        assert _fields(info.split(b"\r\n", 1)[1].rstrip(b"\r\n"))["cmd"] == "client|info"
        c.call("CLIENT", "SETNAME", "named")
        c.call("SELECT", "2")
        c.call("MULTI")
        c.call("PING")
        c.call("EXEC")
        line = c.call("CLIENT", "LIST", "ID", own_id).split(b"\r\n", 1)[1].rstrip(b"\r\n")
        f = _fields(line)
        assert (f["name"], f["db"], f["id"]) == ("named", "2", own_id)
        c.close()


def test_client_info_flags(pykv_proc, real_redis):
    for port in (pykv_proc.port, real_redis.port):
        c = RawClient(port=port)
        c.call("CLIENT", "NO-EVICT", "on")
        c.call("MULTI")
        c.call("PING")
        other = RawClient(port=port)
        listing = other.call("CLIENT", "LIST")
        own = c.call("EXEC")
        assert own.startswith(b"*")
        line = [ln for ln in listing.split(b"\n") if b"cmd=multi" in ln or b"cmd=ping" in ln]
        assert line, listing
        f = _fields(line[0].split(b"\r\n")[-1])
        assert f["flags"] == "xe" and f["multi"] == "1", (port, f)
        c.close()
        other.close()


def test_client_kill_filters(diff, pykv_proc):
    victim = RawClient(port=pykv_proc.port)
    vid = victim.call("CLIENT", "ID")[1:-2].decode()
    me = RawClient(port=pykv_proc.port)
    assert me.call("CLIENT", "KILL", "ID", vid, "SKIPME", "yes") == b":1\r\n"
    with pytest.raises(ConnectionError):
        victim.call("PING")
    victim = RawClient(port=pykv_proc.port)
    addr = _fields(victim.call("CLIENT", "INFO").split(b"\r\n", 1)[1].rstrip())["addr"]
    assert me.call("CLIENT", "KILL", addr) == b"+OK\r\n"
    with pytest.raises(ConnectionError):
        victim.call("PING")
    # SKIPME no with my own id kills me after the reply
    my_id = me.call("CLIENT", "ID")[1:-2].decode()
    assert me.call("CLIENT", "KILL", "ID", my_id, "SKIPME", "no") == b":1\r\n"
    with pytest.raises(ConnectionError):
        me.call("PING")


def test_client_reply_modes(pykv_proc, real_redis):
    script = (b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n*2\r\n$4\r\nECHO\r\n$1\r\na\r\n"
              b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n*2\r\n$4\r\nECHO\r\n$1\r\nb\r\n"
              b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n*2\r\n$4\r\nECHO\r\n$1\r\nc\r\n"
              b"*2\r\n$4\r\nECHO\r\n$1\r\nd\r\n")
    out = []
    for port in (real_redis.port, pykv_proc.port):
        c = RawClient(port=port)
        c.send_raw(script)
        out.append(c.read_reply() + c.read_reply() + c.read_reply())
        c.close()
    assert out[0] == out[1] == b"+OK\r\n$1\r\nb\r\n$1\r\nd\r\n"


def test_client_pause_write_and_all(pykv_proc):
    admin = RawClient(port=pykv_proc.port)
    writer = RawClient(port=pykv_proc.port)
    reader = RawClient(port=pykv_proc.port)
    assert admin.call("CLIENT", "PAUSE", "100000", "WRITE") == b"+OK\r\n"
    writer.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\np\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$1\r\np\r\n")
    time.sleep(0.2)
    assert reader.call("GET", "p") == b"$-1\r\n"  # reads go on; the SET is held
    writer.sock.settimeout(0.2)
    with pytest.raises(TimeoutError):
        writer.read_reply()
    writer.sock.settimeout(10)
    assert b"flags=b" in admin.call("CLIENT", "LIST")
    assert admin.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert writer.read_reply() == b"+OK\r\n"
    assert writer.read_reply() == b"$1\r\n1\r\n"  # the pipeline resumed in order
    # a short ALL pause holds reads too, and ends by itself
    assert admin.call("CLIENT", "PAUSE", "300", "ALL") == b"+OK\r\n"
    start = time.monotonic()
    assert reader.call("PING") == b"+PONG\r\n"
    assert time.monotonic() - start >= 0.2
    for c in (admin, writer, reader):
        c.close()


def test_client_pause_errors_in_resp3(diff3):
    diff3("CLIENT", "PAUSE", "abc")
    diff3("CLIENT", "NO-EVICT", "x")
    diff3("CLIENT", "GETNAME")


@pytest.mark.parametrize("args", [
    ["READONLY"], ["READWRITE"], ["ASKING"], ["ASKING", "x"], ["CLUSTER"], ["CLUSTER", "INFO"],
    ["CLUSTER", "HELP"], ["CLUSTER", "KEYSLOT", "k"], ["CLUSTER", "INFO", "x"],
    ["CLUSTER", "NOSUCH"],
])
def test_cluster_commands_without_cluster_support(diff, args):
    # valkey-cli --bigkeys/--memkeys/--hotkeys send READONLY and stop on any other error
    diff(*args)
