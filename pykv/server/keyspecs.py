"""Where a command's keys are in its arguments: Redis's key specs, read from the table.

``find_keys(cmd, args)`` is Redis's ``getKeysFromCommandWithSpecs``: the begin-search step
(an index, or a keyword searched from a position) then the find-keys step (a range, or a
count read from the arguments), each key with its spec's flags (``RW``, ``access``...). The
movable-key commands whose keys the specs cannot describe fully (SORT, MIGRATE, SET with
GET, BITFIELD) have finders here, and a family may install ``Command.get_keys`` for anything
else. COMMAND GETKEYS, client-side tracking (and the ACL and cluster checks to come) read
keys through this one module.
"""
from __future__ import annotations

from pykv.protocol._parser import string2ll as to_int
from pykv.server.command_table import Command

Found = list[tuple[int, list[str]]]


def has_key_finder(cmd: Command) -> bool:
    """Whether anything can locate this command's keys (else: "no key arguments")."""
    return bool(cmd.key_specs) or cmd.fullname in _FINDERS or cmd.get_keys is not None


def find_keys(cmd: Command, args: list[bytes]) -> Found | None:
    """The keys of ``args`` (``args[0]`` is the command name) with their flags, or None
    when the arguments contradict the specs."""
    finder = _FINDERS.get(cmd.fullname)
    if finder is not None:
        return finder(cmd, args)
    specs_incomplete = any(s["begin_search"]["type"] == "unknown" for s in cmd.key_specs)
    if cmd.get_keys is not None and (specs_incomplete or not cmd.key_specs):
        # a family's own finder, for keys the specs cannot locate
        spec_flags = cmd.key_specs[0]["flags"] if cmd.key_specs else []
        return [(i, _plain(spec_flags)) for i in cmd.get_keys(args)]
    return keys_from_specs(cmd, args)


def _plain(flags: list[str]) -> list[str]:
    """Key-spec flags as COMMAND GETKEYSANDFLAGS shows them (no spec-only markers)."""
    return [f for f in flags if f not in ("variable_flags", "incomplete", "not_key")]


def keys_from_specs(cmd: Command, args: list[bytes]) -> Found | None:
    """Redis's getKeysUsingKeySpecs: None when the arguments contradict a spec."""
    argc = len(args)
    found: Found = []
    for spec in cmd.key_specs:
        if "not_key" in spec.get("flags", ()):
            continue
        bs, fk = spec["begin_search"], spec["find_keys"]
        if bs["type"] == "index":
            first = bs["spec"]["index"]
        elif bs["type"] == "keyword":
            first = _keyword_position(args, bs["spec"]["keyword"], bs["spec"]["startfrom"])
            if not first:
                continue
        else:
            continue
        if fk["type"] == "range":
            r = fk["spec"]
            if r["lastkey"] >= 0:
                last = first + r["lastkey"]
            elif not r["limit"]:
                last = argc + r["lastkey"]
            else:
                last = first + ((argc - first) // r["limit"] + r["lastkey"])
            step = r["keystep"]
        elif fk["type"] == "keynum":
            k = fk["spec"]
            if first + k["keynumidx"] >= argc:
                return None
            numkeys = to_int(args[first + k["keynumidx"]])
            if numkeys is None or numkeys < 0:
                return None
            first += k["firstkey"]
            last = first + numkeys - 1
            step = k["keystep"]
        else:
            continue
        if last >= argc or last < first or first >= argc:
            return None
        flags = _plain(spec.get("flags", []))
        for i in range(first, last + 1, max(step, 1)):
            found.append((i, flags))
    return found


def _keyword_position(args: list[bytes], keyword: str, startfrom: int) -> int:
    """Index just after ``keyword``, searched forward from ``startfrom`` (or backward from
    the end when negative); 0 when absent."""
    argc = len(args)
    word = keyword.encode().lower()
    start = startfrom if startfrom > 0 else argc + startfrom
    end = argc - 1 if startfrom > 0 else 1
    i = start
    while i != end:
        if i >= argc or i < 1:
            break
        if args[i].lower() == word:
            return i + 1
        i = i + 1 if start <= end else i - 1
    return 0


def _sort_keys(cmd: Command, args: list[bytes]) -> Found:
    """SORT: the sorted key, and the STORE destination (the last STORE wins)."""
    found: Found = [(1, ["RO", "access"])]
    if cmd.fullname == "sort_ro":
        return found
    skip = {b"limit": 2, b"get": 1, b"by": 1}
    store = None
    i = 2
    while i < len(args):
        word = args[i].lower()
        if word in skip:
            i += skip[word]
        elif word == b"store" and i + 1 < len(args):
            store = i + 1
            i += 1
        i += 1
    if store is not None:
        found.append((store, ["OW", "update"]))
    return found


def _migrate_keys(cmd: Command, args: list[bytes]) -> Found:
    """MIGRATE host port key|"" db timeout [... KEYS k1 k2 ...]."""
    flags = ["RW", "access", "delete"]
    if len(args) > 6:
        for i in range(6, len(args)):
            low = args[i].lower()
            if low in (b"auth",):
                break
            if low == b"keys" and args[3] == b"":
                return [(j, flags) for j in range(i + 1, len(args))]
    return [(3, flags)]


def _set_keys(cmd: Command, args: list[bytes]) -> Found:
    with_get = any(a.lower() == b"get" for a in args[3:])
    return [(1, ["RW", "access", "update"] if with_get else ["OW", "update"])]


def _bitfield_keys(cmd: Command, args: list[bytes]) -> Found:
    writes = any(a.lower() in (b"set", b"incrby") for a in args[2:])
    return [(1, ["RW", "access", "update"] if writes else ["RO", "access"])]


_FINDERS = {
    "sort": _sort_keys,
    "sort_ro": _sort_keys,
    "migrate": _migrate_keys,
    "set": _set_keys,
    "bitfield": _bitfield_keys,
}
