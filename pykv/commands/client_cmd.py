"""CLIENT and its subcommands: naming, listing, killing, pausing and reply control.

The ``CLIENT LIST`` line itself (Redis 7.0's fields in Redis's order) is built by
``pykv.server.client_info``, which the server's log lines share.
Pausing lives in ``pykv.server.pause``-like helpers on the server (``pause_clients``,
``unpause_clients``); this module only parses the command.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.commands.args import LLONG_MAX, to_int
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply, Verbatim
from pykv.server.client_info import client_info_line, client_type

# CLIENT REPLY modes (same numbers as pykv.server.client)
_REPLY_ON, _REPLY_OFF, _REPLY_SKIP_NEXT = 0, 1, 2

NO_SUCH_CLIENT = ErrorReply(b"ERR No such client")

CLIENT_TYPES = ("normal", "slave", "replica", "pubsub", "master")

HELP = [
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    In OPTIN/OPTOUT tracking mode, opt the next command's keys in or out.",
    "GETREDIR",
    "    The id of the client receiving this connection's invalidations (-1: none).",
    "GETNAME",
    "    The name given to this connection.",
    "ID",
    "    The unique id of this connection.",
    "INFO",
    "    A CLIENT LIST line about this connection.",
    "KILL <ip:port>",
    "    Close the connection coming from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Close every connection matching all the filters:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      connections whose remote address is this one",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      connections made to this local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      connections of this kind",
    "    * USER <username>",
    "      connections logged in as <username>",
    "    * SKIPME (YES|NO)",
    "      whether to spare the calling connection (yes unless told otherwise)",
    "LIST [options ...]",
    "    One line per connection. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      only connections of this kind",
    "UNPAUSE",
    "    End a CLIENT PAUSE now; held commands run in arrival order.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Hold every command, or only writes, for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Turn this connection's replies on or off, or skip the next one.",
    "SETNAME <name>",
    "    Give this connection a name (shown by CLIENT LIST).",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Wake up a client waiting in a blocking command.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Server-assisted client-side caching.",
    "TRACKINGINFO",
    "    This connection's tracking settings.",
    "NO-EVICT (ON|OFF)",
    "    Exempt this connection from client eviction.",
    "HELP",
    "    Print this help.",
]


def help_reply(lines: list[str]) -> list:
    """A HELP reply: each line as a status string, as Redis's ``addReplyHelp`` sends."""
    from pykv.protocol import SimpleString

    return [SimpleString(line.encode()) for line in lines]


def validate_client_name(name: bytes) -> ErrorReply | None:
    """Names may not contain spaces, newlines or other non-printable characters."""
    if any(b < 33 or b > 126 for b in name):
        return ErrorReply(b"ERR Client names cannot contain spaces, newlines or special "
                          b"characters.")
    return None


# -- describing clients -----------------------------------------------------------------------


def _type_by_name(name: bytes) -> str | None:
    low = name.decode("latin-1").lower()
    if low not in CLIENT_TYPES:
        return None
    return "slave" if low == "replica" else low


def _text(c: Any, text: str) -> Any:
    data = text.encode("latin-1", "replace")
    return Verbatim(data) if c.resp == 3 else data


# -- subcommands ---------------------------------------------------------------------------
@command("client|help")
def client_help(c, argv):
    return help_reply(HELP)


@command("client|id")
def client_id(c, argv):
    return c.id


@command("client|info")
def client_info(c, argv):
    return _text(c, client_info_line(c, c.server.commands.lookup_path("client|info"),
                                        argv) + "\n")


@command("client|list")
def client_list(c, argv):
    clients = list(c.server.clients.values())
    if len(argv) == 2:
        pass
    elif len(argv) == 4 and argv[2].lower() == b"type":
        wanted = _type_by_name(argv[3])
        if wanted is None:
            return ErrorReply(b"ERR Unknown client type '" + argv[3] + b"'")
        clients = [x for x in clients if client_type(x) == wanted]
    elif len(argv) > 3 and argv[2].lower() == b"id":
        ids = []
        for arg in argv[3:]:
            value = to_int(arg)
            if value is None:
                return ErrorReply(b"ERR Invalid client ID")
            ids.append(value)
        table = c.server.clients
        clients = [table[i] for i in dict.fromkeys(ids) if i in table]
    else:
        return errors.SYNTAX
    me = c.server.commands.lookup_path("client|list")
    lines = "".join((client_info_line(x, me, argv) if x is c else client_info_line(x)) + "\n"
                    for x in clients)
    return _text(c, lines)


@command("client|setname")
def client_setname(c, argv):
    err = validate_client_name(argv[2])
    if err is not None:
        return err
    c.name = argv[2]
    return OK


@command("client|getname")
def client_getname(c, argv):
    return c.name or None


def _kill(c, victim) -> None:
    if victim is c:
        c.closing = True  # after this reply
    else:
        victim.close_now()


@command("client|kill")
def client_kill(c, argv):
    server = c.server
    if len(argv) == 3:  # old form: CLIENT KILL ip:port
        addr = argv[2].decode("latin-1")
        for victim in list(server.clients.values()):
            if victim.addr == addr:
                _kill(c, victim)
                return OK
        return NO_SUCH_CLIENT
    if len(argv) % 2 != 0:
        return errors.SYNTAX
    want_id = want_type = want_addr = want_laddr = want_user = None
    skipme = True
    for i in range(2, len(argv), 2):
        opt, val = argv[i].lower(), argv[i + 1]
        if opt == b"id":
            value = to_int(val)
            if value is None or not 1 <= value <= LLONG_MAX:
                return ErrorReply(b"ERR client-id should be greater than 0")
            want_id = value
        elif opt == b"type":
            want_type = _type_by_name(val)
            if want_type is None:
                return ErrorReply(b"ERR Unknown client type '" + val + b"'")
        elif opt == b"addr":
            want_addr = val.decode("latin-1")
        elif opt == b"laddr":
            want_laddr = val.decode("latin-1")
        elif opt == b"user":
            if not _user_exists(server, val):
                return ErrorReply(b"ERR No such user '" + val + b"'")
            want_user = val.decode("utf-8", "surrogateescape")
        elif opt == b"skipme":
            low = val.lower()
            if low == b"yes":
                skipme = True
            elif low == b"no":
                skipme = False
            else:
                return errors.SYNTAX
        else:
            return errors.SYNTAX
    killed = 0
    for victim in list(server.clients.values()):
        if want_id is not None and victim.id != want_id:
            continue
        if want_type is not None and client_type(victim) != want_type:
            continue
        if want_addr is not None and victim.addr != want_addr:
            continue
        if want_laddr is not None and victim.laddr != want_laddr:
            continue
        if want_user is not None and victim.user != want_user:
            continue
        if victim is c and skipme:
            continue
        _kill(c, victim)
        killed += 1
    return killed


def _user_exists(server: Any, name: bytes) -> bool:
    """ACL users come from the ACL family when it exists; otherwise only ``default``."""
    acl = getattr(server, "acl", None)
    if acl is not None and hasattr(acl, "get_user"):
        return acl.get_user(name.decode("utf-8", "surrogateescape")) is not None
    return name == b"default"


@command("client|pause")
def client_pause(c, argv):
    timeout = to_int(argv[2])
    if timeout is None:
        return ErrorReply(b"ERR timeout is not an integer or out of range")
    if timeout < 0:
        return ErrorReply(b"ERR timeout is negative")
    write_only = False
    if len(argv) == 4:
        mode = argv[3].lower()
        if mode == b"write":
            write_only = True
        elif mode != b"all":
            return ErrorReply(b"ERR CLIENT PAUSE mode must be WRITE or ALL")
    elif len(argv) > 4:
        return ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '"
                          + argv[1] + b"'. Try CLIENT HELP.")
    c.server.pause_clients(timeout, write_only)
    return OK


@command("client|unpause")
def client_unpause(c, argv):
    c.server.unpause_clients()
    return OK


@command("client|reply")
def client_reply(c, argv):
    mode = argv[2].lower()
    if mode == b"on":
        c.reply_mode = _REPLY_ON
        return OK
    if mode == b"off":
        c.reply_mode = _REPLY_OFF
    elif mode == b"skip":
        if c.reply_mode == _REPLY_ON:
            c.reply_mode = _REPLY_SKIP_NEXT
    else:
        return errors.SYNTAX
    return OK  # swallowed by the new mode (the dispatcher's add_reply does the skipping)


def _on_off(arg: bytes) -> bool | None:
    low = arg.lower()
    return True if low == b"on" else False if low == b"off" else None


@command("client|no-evict")
def client_no_evict(c, argv):
    value = _on_off(argv[2])
    if value is None:
        return errors.SYNTAX
    c.no_evict = value
    return OK


# Redis 7.2 additions, accepted for newer clients (redis-py sends SETINFO on connect).
_NO_TOUCH_META = {
    "arity": 3, "flags": ["noscript", "loading", "stale"],
    "acl_categories": ["@slow", "@connection"],
    "docs": {"group": "connection", "since": "7.2.0", "arguments": [{
        "name": "enabled", "type": "oneof", "arguments": [
            {"name": "on", "type": "pure-token", "token": "ON"},
            {"name": "off", "type": "pure-token", "token": "OFF"}]}]},
}
_SETINFO_META = {
    "arity": 4, "flags": ["noscript", "loading", "stale"],
    "acl_categories": ["@slow", "@connection"],
    "tips": ["request_policy:all_nodes", "response_policy:all_succeeded"],
    "docs": {"group": "connection", "since": "7.2.0", "arguments": [{
        "name": "attr", "type": "oneof", "arguments": [
            {"name": "libname", "type": "string", "token": "LIB-NAME"},
            {"name": "libver", "type": "string", "token": "LIB-VER"}]}]},
}


@command("client|no-touch", meta=_NO_TOUCH_META)
def client_no_touch(c, argv):
    value = _on_off(argv[2])
    if value is None:
        return errors.SYNTAX
    c.no_touch = value
    c.server.clock.no_touch = value  # from this command on, not from the next read
    return OK


@command("client|setinfo", meta=_SETINFO_META)
def client_setinfo(c, argv):
    attr, value = argv[2].lower(), argv[3]
    if attr not in (b"lib-name", b"lib-ver"):
        return ErrorReply(b"ERR Unrecognized option '" + argv[2] + b"'")
    if any(b < 33 or b > 126 for b in value):
        return ErrorReply(b"ERR " + argv[2] + b" cannot contain spaces, newlines or special "
                          b"characters.")
    if attr == b"lib-name":
        c.lib_name = value
    else:
        c.lib_ver = value
    return OK


# CLIENT GETREDIR / TRACKINGINFO / TRACKING / CACHING: pykv.commands.tracking


@command("client|unblock")
def client_unblock(c, argv):
    target_id = to_int(argv[2])
    if target_id is None:
        return errors.NOT_INTEGER
    as_error = False
    if len(argv) == 4:
        reason = argv[3].lower()
        if reason == b"error":
            as_error = True
        elif reason != b"timeout":
            return ErrorReply(b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    elif len(argv) > 4:
        return errors.SYNTAX
    target = c.server.clients.get(target_id)
    unblock = getattr(c.server, "unblock_client", None)
    # a client held by CLIENT PAUSE is not blocked on keys: 0, it stays held (Redis 7.0.15
    # counts it as blocked and crashes in replyToBlockedClientTimedOut)
    if target is None or target.blocked is None or unblock is None:
        return 0
    return 1 if unblock(target, as_error) is not False else 0
