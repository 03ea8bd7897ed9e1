"""Regenerate ``pykv/server/command_table.json`` from a running Redis 7.0.

The command table is data (DESIGN.md): arity, flags, key positions, key specs, ACL
categories, group, since, argument structure and subcommands are interface facts that
clients rely on, so pykv takes them from the oracle rather than retyping 240 entries.
Prose (summaries, complexity notes, history descriptions) is *not* taken: pykv keeps its
own wording in ``pykv/commands/summaries.py``.

Usage: python tools/gen_command_table.py [PORT]   (a redis-server 7.0 on 127.0.0.1)
"""
from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "pykv" / "server" / "command_table.json"
PROSE_FIELDS = {"summary", "complexity", "history", "notes"}


class Resp3Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.f = sock.makefile("rb")

    def read(self):
        line = self.f.readline()[:-2]
        t, rest = chr(line[0]), line[1:]
        if t in "+":
            return rest.decode()
        if t == "-":
            raise RuntimeError(rest.decode())
        if t == ":":
            return int(rest)
        if t in "$=":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if t == "_":
            return None
        if t in "*~>":
            n = int(rest)
            return [self.read() for _ in range(n)]
        if t == "%":
            n = int(rest)
            out = {}
            for _ in range(n):
                k = self.read()
                out[k] = self.read()
            return out
        raise RuntimeError(f"unexpected type {t}")


def call(sock: socket.socket, reader: Resp3Reader, *args: str):
    buf = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args
    )
    sock.sendall(buf)
    return reader.read()


def strip_prose(node):
    if isinstance(node, dict):
        return {k: strip_prose(v) for k, v in node.items() if k not in PROSE_FIELDS}
    if isinstance(node, list):
        return [strip_prose(v) for v in node]
    return node


def info_to_dict(info: list) -> dict:
    name, arity, flags, first, last, step, acl, tips, key_specs, subs = info
    return {
        "name": name,
        "arity": arity,
        "flags": flags,
        "first_key": first,
        "last_key": last,
        "step": step,
        "acl_categories": acl,
        "tips": tips,
        "key_specs": strip_prose(key_specs),
        "subcommands": {s[0]: info_to_dict(s) for s in subs},
    }


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
    sock = socket.create_connection(("127.0.0.1", port))
    reader = Resp3Reader(sock)
    call(sock, reader, "HELLO", "3")
    infos = call(sock, reader, "COMMAND")
    docs = call(sock, reader, "COMMAND", "DOCS")
    table = {}
    for info in infos:
        entry = info_to_dict(info)
        doc = strip_prose(docs.get(entry["name"], {}))
        sub_docs = doc.pop("subcommands", {})
        entry["docs"] = doc
        for sub_name, sub in entry["subcommands"].items():
            sub["docs"] = strip_prose(sub_docs.get(sub_name, {}))
            sub["docs"].pop("subcommands", None)
        table[entry["name"]] = entry
    OUT.write_text(json.dumps(dict(sorted(table.items())), indent=1, sort_keys=False) + "\n")
    print(f"wrote {len(table)} commands to {OUT}")


if __name__ == "__main__":
    main()
