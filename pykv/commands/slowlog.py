"""SLOWLOG: reading and clearing the slow log the dispatcher fills (``Server.slowlog_push``).

Entries are ``[id, unix time, microseconds, argv, client address, client name]``, newest
first, as Redis sends them.
"""
from __future__ import annotations

from pykv.commands.args import to_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply

HELP = [
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    The newest <count> entries of the slow log (10 by default, -1 for all).",
    "    Each entry holds:",
    "    id, unix time, duration in microseconds, the arguments, the client's",
    "    address and port, the client's name",
    "LEN",
    "    How many entries the slow log holds.",
    "RESET",
    "    Empty the slow log.",
    "HELP",
    "    Print this help.",
]

BAD_COUNT = ErrorReply(b"ERR count should be greater than or equal to -1")


@command("slowlog|help")
def slowlog_help(c, argv):
    return help_reply(HELP)


@command("slowlog|get")
def slowlog_get(c, argv):
    count = 10
    if len(argv) == 3:
        value = to_int(argv[2])
        if value is None or value < -1:
            return BAD_COUNT
        count = value
    elif len(argv) > 3:
        return ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '"
                          + argv[1] + b"'. Try SLOWLOG HELP.")
    entries = list(c.server.slowlog)
    if count != -1:
        entries = entries[:count]
    return [[e.id, e.time, e.duration, list(e.argv), e.addr.encode(), e.name]
            for e in entries]


@command("slowlog|len")
def slowlog_len(c, argv):
    return len(c.server.slowlog)


@command("slowlog|reset")
def slowlog_reset(c, argv):
    c.server.slowlog.clear()
    return OK
