"""COMMAND and its subcommands against real redis-server.

Metadata must be byte-identical for every command pykv implements; the prose (DOCS
summary/complexity/history texts and key-spec notes) is pykv's own, so it is masked.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.resp import RawClient

TABLE = json.loads((Path(__file__).parents[2] / "pykv/server/command_table.json").read_text())
PROSE_FIELDS = {b"notes", b"summary", b"complexity"}


def _parse(data: bytes, pos: int = 0):
    """RESP2/RESP3 bytes -> nested (type, value) tuples, keeping every type marker."""
    end = data.index(b"\r\n", pos)
    t, head, pos = data[pos:pos + 1], data[pos + 1:end], end + 2
    if t in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return (t, None), pos
        return (t, data[pos:pos + n]), pos + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(head)
        items = []
        for _ in range(max(n, 0) * (2 if t in b"%|" else 1)):
            item, pos = _parse(data, pos)
            items.append(item)
        return (t, items), pos
    return (t, head), pos


def _mask_tree(node):
    t, value = node
    if not isinstance(value, list):
        return node
    items = [_mask_tree(i) for i in value]
    # maps (and RESP2 flattened maps): blank the values of prose keys, and history texts
    for i in range(0, len(items) - 1):
        key = items[i]
        if key[0] == b"$" and key[1] in PROSE_FIELDS:
            items[i + 1] = (b"$", b"PROSE")
        if key[0] == b"$" and key[1] == b"history":
            hist = items[i + 1]
            items[i + 1] = (hist[0], [(e[0], [e[1][0], (b"$", b"PROSE")]) for e in hist[1]])
    return (t, items)


def _mask(reply: bytes):
    tree, end = _parse(reply)
    assert end == len(reply)
    return _mask_tree(tree)


def _names(raw_reply: bytes) -> list[str]:
    return [n.decode() for n in re.findall(rb"\$\d+\r\n([^\r]+)\r\n", raw_reply)]


@pytest.fixture(scope="module")
def implemented(pykv_proc) -> list[str]:
    c = RawClient(port=pykv_proc.port)
    names = _names(c.call("COMMAND", "LIST"))
    c.close()
    return names


def _fully_implemented(name: str, names: list[str]) -> bool:
    """Plain commands only: Redis seeds its dict hash per process, so the order of a
    container's subcommands differs between two redis-servers (subcommands are compared
    one by one instead)."""
    return not TABLE.get(name, {}).get("subcommands")


def test_every_command_has_a_summary():
    from pykv.commands.summaries import SUMMARIES

    for name, meta in TABLE.items():
        assert name in SUMMARIES
        for sub in meta["subcommands"]:
            assert sub in SUMMARIES


def test_list_holds_only_registered(implemented):
    assert "get" in implemented and "command|info" in implemented
    assert all(n.split("|")[0] in TABLE or n in ("client|no-touch", "client|setinfo")
               for n in implemented)


@pytest.mark.parametrize("resp3", [False, True])
def test_command_info_matches_redis(diff, diff3, implemented, resp3):
    d = diff3 if resp3 else diff
    tops = [n for n in implemented if "|" not in n and _fully_implemented(n, implemented)]
    assert len(tops) > 20
    for i in range(0, len(tops), 25):
        real, ours = d.both("COMMAND", "INFO", *tops[i:i + 25])
        assert _mask(ours) == _mask(real), tops[i:i + 25]
    subs = [n for n in implemented if "|" in n and n.split("|")[1] not in ("no-touch", "setinfo")]
    real, ours = d.both("COMMAND", "INFO", *subs)
    assert _mask(ours) == _mask(real)
    d("COMMAND", "INFO", "nosuchcommand", "get")


@pytest.mark.parametrize("resp3", [False, True])
def test_command_docs_matches_redis(diff, diff3, implemented, resp3):
    d = diff3 if resp3 else diff
    tops = [n for n in implemented if "|" not in n and _fully_implemented(n, implemented)]
    for i in range(0, len(tops), 25):
        real, ours = d.both("COMMAND", "DOCS", *tops[i:i + 25])
        assert _mask(ours) == _mask(real), tops[i:i + 25]
    subs = [n for n in implemented if "|" in n and n.split("|")[1] not in ("no-touch", "setinfo")]
    real, ours = d.both("COMMAND", "DOCS", *subs)
    assert ours.startswith(b"*%d\r\n" % (2 * len(subs)) if not resp3 else b"%%%d\r\n" % len(subs))
    assert _mask(ours) == _mask(real)
    d("COMMAND", "DOCS", "nosuchcommand")


def test_command_count_and_bare(raw, implemented):
    count = int(raw.call("COMMAND", "COUNT")[1:-2])
    assert count == len([n for n in implemented if "|" not in n])
    assert raw.call("COMMAND").startswith(b"*%d\r\n" % count)
    assert raw.call("COMMAND", "INFO").startswith(b"*%d\r\n" % count)
    assert raw.call("COMMAND", "DOCS").startswith(b"*%d\r\n" % (2 * count))


@pytest.mark.parametrize("args", [
    ["LIST", "FILTERBY"], ["LIST", "FILTERBY", "foo", "x"], ["LIST", "FILTERBY", "pattern"],
    ["LIST", "x"], ["LIST", "FILTERBY", "MODULE", "nosuch"], ["GETKEYS"], ["GETKEYS", "get"],
    ["GETKEYS", "nosuch", "a"], ["GETKEYS", "ping"], ["GETKEYS", "get", "a", "b"],
    ["GETKEYS", "get", "a"], ["GETKEYS", "mset", "a", "1", "b", "2"],
    ["GETKEYS", "mset", "a", "1", "b"], ["GETKEYS", "del", "a", "b", "c"],
    ["GETKEYS", "config", "get"], ["GETKEYS", "config", "nosuch", "x"], ["GETKEYS", "config"],
    ["GETKEYS", "zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
    ["GETKEYS", "zunion", "0", "a"], ["GETKEYS", "zunion", "3", "a"],
    ["GETKEYS", "zunion", "x", "a"], ["GETKEYS", "eval", "s", "0"],
    ["GETKEYS", "eval", "s", "2", "a", "b", "c"], ["GETKEYS", "lmpop", "2", "a", "b", "LEFT"],
    ["GETKEYS", "xread", "COUNT", "2", "STREAMS", "a", "b", "0", "0"],
    ["GETKEYS", "xread", "STREAMS", "a", "b", "0"],
    ["GETKEYS", "sort", "k", "BY", "w_*", "STORE", "d", "LIMIT", "0", "1"],
    ["GETKEYS", "sort", "k", "GET", "#"], ["GETKEYS", "sort_ro", "k", "BY", "x"],
    ["GETKEYS", "migrate", "h", "1", "k", "0", "10"],
    ["GETKEYS", "migrate", "h", "1", "", "0", "10", "KEYS", "a", "b"],
    ["GETKEYS", "georadius", "g", "1", "2", "3", "m", "STORE", "d"],
    ["GETKEYS", "object", "encoding", "k"], ["GETKEYS", "memory", "usage", "k"],
    ["GETKEYSANDFLAGS", "set", "a", "b", "GET"], ["GETKEYSANDFLAGS", "set", "a", "b"],
    ["GETKEYSANDFLAGS", "lmove", "a", "b", "LEFT", "RIGHT"],
    ["GETKEYSANDFLAGS", "bitfield", "k", "GET", "u8", "0"],
    ["GETKEYSANDFLAGS", "bitfield", "k", "SET", "u8", "0", "1"],
    ["GETKEYSANDFLAGS", "sort", "k", "STORE", "d"], ["GETKEYSANDFLAGS", "getex", "k"],
    ["COUNT", "x"], ["HELP", "x"], ["NOSUCH"],
])
def test_command_subcommand_replies(diff, diff3, args):
    diff("COMMAND", *args)
    diff3("COMMAND", *args)


def test_command_list_filters(diff, implemented):
    real, ours = diff.both("COMMAND", "LIST", "FILTERBY", "ACLCAT", "connection")
    mine = set(_names(ours))
    expected = {n for n in _names(real) if n in implemented}
    assert mine - {"client|no-touch", "client|setinfo"} == expected
    real, ours = diff.both("COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*")
    assert set(_names(ours)) - {"client|no-touch", "client|setinfo"} == \
        {n for n in _names(real) if n in implemented}


def test_command_help_shape(diff):
    real, ours = diff.both("COMMAND", "HELP")
    assert ours.split(b"\r\n")[1] == real.split(b"\r\n")[1]
    assert ours.count(b"\r\n+") == real.count(b"\r\n+")  # same line structure


def _containers(implemented: list[str]) -> list[str]:
    """Containers whose Redis 7.0 subcommands pykv has, all of them and no others."""
    subs_of: dict[str, set[str]] = {}
    for name in implemented:
        if "|" in name:
            subs_of.setdefault(name.split("|")[0], set()).add(name)
    return sorted(n for n, subs in subs_of.items()
                  if subs == set(TABLE.get(n, {}).get("subcommands", {})))


def _sort_subcommands(node, index: int | None = None):
    """``node`` (a COMMAND INFO entry, or with ``index=None`` a DOCS map) with its
    subcommands in a fixed order: Redis lists them in a per-process hash order."""
    t, items = node
    items = list(items)
    pairs = index is None
    if pairs:
        index = next(i + 1 for i in range(0, len(items), 2)
                     if items[i] == (b"$", b"subcommands"))
    st, subs = items[index]
    if pairs:
        subs = [x for kv in sorted(zip(subs[::2], subs[1::2], strict=True), key=repr)
                for x in kv]
    else:
        subs = sorted(subs, key=repr)
    items[index] = (st, subs)
    return (t, items)


@pytest.mark.parametrize("resp3", [False, True])
def test_containers_match_redis(diff, diff3, implemented, resp3):
    """COMMAND INFO and DOCS of every complete container, subcommand order aside."""
    d = diff3 if resp3 else diff
    containers = _containers(implemented)
    assert "memory" in containers and "config" in containers
    for name in containers:
        real, ours = d.both("COMMAND", "INFO", name)
        (_, [r]), (_, [o]) = _mask(real), _mask(ours)
        assert _sort_subcommands(o, 9) == _sort_subcommands(r, 9), name
        real, ours = d.both("COMMAND", "DOCS", name)
        (_, [rk, r]), (_, [ok, o]) = _mask(real), _mask(ours)
        assert ok == rk
        assert _sort_subcommands(o) == _sort_subcommands(r), name
