"""DEBUG: the harmless subcommands test suites and client libraries rely on.

DEBUG obeys ``enable-debug-command`` as in Redis 7: ``no`` (Redis's default, and pykv's)
refuses it, ``local`` allows it from unix sockets and loopback addresses, ``yes`` allows
it. pykv's test fixtures start the server with ``yes``, like the real redis they compare
against. Implemented: SLEEP, OBJECT, SET-ACTIVE-EXPIRE, QUICKLIST-PACKED-THRESHOLD, LOG,
ERROR, DIGEST, DIGEST-VALUE, PROTOCOL, CHANGE-REPL-ID, REPLYBUFFER,
STRINGMATCH-TEST and HELP. The crash/leak/reload helpers are not (Redis's
"unknown subcommand" error). DIGEST is pykv's own SHA-1 over the dataset: stable and
all-zeros for an empty dataset like Redis's, but not the same hex as Redis's.
"""
from __future__ import annotations

import hashlib
import logging
import os
import time
from typing import Any

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command
from pykv.protocol import OK, BigNumber, ErrorReply, RawReply, RespSet, SimpleString, Verbatim

log = logging.getLogger("pykv")

NOT_ALLOWED = ErrorReply(
    b"ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    b"you can run it from a local connection, otherwise you need to set this option in the "
    b"configuration file, and then restart the server.")

HELP = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "CHANGE-REPL-ID",
    "    Pick new replication ids for this server (testing only).",
    "DIGEST",
    "    A hex checksum of the whole dataset (all zeros when it is empty).",
    "DIGEST-VALUE <key> [<key> ...]",
    "    A hex checksum of each named key's value.",
    "ERROR <string>",
    "    Reply with <string> as an error reply (for client tests).",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "OBJECT <key>",
    "    Internal details about the value stored at <key>.",
    "PROTOCOL <type>",
    "    Reply with a sample value of one RESP type: string, integer, double, bignum,",
    "    null, array, set, map, attrib, push, verbatim, true, false.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Size from which list elements are stored as plain nodes (accepted, no effect).",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "REPLYBUFFER RESIZING <0|1>",
    "    Reply buffer tuning (accepted, no effect in pykv).",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    0 stops expiring keys in the background (only on access); 1 restarts it.",
    "SLEEP <seconds>",
    "    Block the server for <seconds> (decimals allowed).",
    "STRINGMATCH-TEST",
    "    Self-test of the glob matcher.",
    "HELP",
    "    Print this help.",
]

_PROTOCOL_TYPES = (b"string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|"
                   b"true|false")


def debug_allowed(c) -> bool:
    mode = str(getattr(c.server.config, "enable_debug_command", "no")).lower()
    if mode in ("yes", "true", "1"):
        return True
    if mode == "local":
        conn = c.conn
        if conn is None or conn.type_name == "unix":
            return True
        host = c.addr.rsplit(":", 1)[0]
        return host.startswith("127.") or host in ("::1", "[::1]")
    return False


def _unknown(argv: list[bytes]) -> ErrorReply:
    return ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '" + argv[1]
                      + b"'. Try DEBUG HELP.")


@command("debug")
def debug(c, argv):
    if not debug_allowed(c):
        return NOT_ALLOWED
    sub = argv[1].lower()
    handler = _SUBCOMMANDS.get((sub, len(argv)))
    if handler is None:
        handler = _SUBCOMMANDS.get((sub, -1))
        if handler is None:
            return _unknown(argv)
    return handler(c, argv)


def _sleep(c, argv):
    try:  # Redis reads the number with strtod and no checks: junk sleeps 0 seconds
        seconds = float(argv[2])
    except ValueError:
        seconds = 0.0
    if seconds > 0:
        time.sleep(seconds)
    return OK


def _object(c, argv):
    value = c.db.get(argv[2], touch=False)
    if value is None:
        return errors.NO_SUCH_KEY
    from pykv.commands.object_cmd import encoding_of, refcount_of

    config = c.server.config
    encoding = encoding_of(value, config).decode()
    refcount = refcount_of(value, config)
    idle = max(0, c.server.clock.sec - c.db.access.get(argv[2], c.server.clock.sec))
    length = len(value) if isinstance(value, (bytes, bytearray)) else 0
    text = (f"Value at:0x{id(value):x} refcount:{refcount} encoding:{encoding} "
            f"serializedlength:{length + 1} lru:{c.server.clock.sec & 0xFFFFFF} "
            f"lru_seconds_idle:{idle}")
    return SimpleString(text.encode())


def _bool_arg(arg: bytes) -> bool:
    value = to_int(arg)
    if value is None:  # Redis's atoi: anything else counts as 0
        return False
    return value != 0


def _set_active_expire(c, argv):
    c.server.active_expire_enabled = _bool_arg(argv[2])
    return OK


def _quicklist_threshold(c, argv):
    from pykv.config import parse_memory

    size = parse_memory(argv[2].decode("latin-1"))
    if size is None or size > (1 << 32) or size < 0:
        return ErrorReply(b"ERR argument must be a memory value bigger than 1 and smaller "
                          b"than 4gb")
    return OK


def _log(c, argv):
    log.warning("DEBUG LOG: %s", argv[2].decode("utf-8", "replace"))
    return OK


def _error(c, argv):
    return ErrorReply(argv[2])


def _value_digest(value) -> bytes:
    """A digest of a value's contents that ignores unordered types' iteration order and
    encodings, so it is equal exactly when the data is (after a reload too)."""
    if isinstance(value, (bytes, bytearray)):
        return hashlib.sha1(b"string:" + bytes(value)).digest()
    from pykv.protocol import format_double
    from pykv.storage import value_types as vt

    kind = value.type_name
    acc = bytearray(hashlib.sha1(kind).digest())
    if kind == b"list":
        h = hashlib.sha1()
        for item in vt.list_items(value):
            h.update(b"%d:" % len(item) + item)
        _mix(acc, h.digest())
    elif kind == b"set":
        for member in vt.set_members(value):
            _mix(acc, hashlib.sha1(member).digest())
    elif kind == b"hash":
        for field, val in vt.hash_items(value):
            _mix(acc, hashlib.sha1(b"%d:" % len(field) + field + val).digest())
    elif kind == b"zset":
        for member, score in vt.zset_items(value):
            _mix(acc, hashlib.sha1(b"%d:" % len(member) + member + format_double(score))
                 .digest())
    else:
        dump = getattr(value, "digest_bytes", None)
        if dump is None:
            raise ErrorReply(b"ERR DEBUG DIGEST does not support values of type "
                             + kind)
        _mix(acc, hashlib.sha1(dump()).digest())
    return bytes(acc)


def _mix(acc: bytearray, data: bytes) -> None:
    for i, b in enumerate(data):
        acc[i] ^= b


def _digest(c, argv):
    acc = bytearray(20)
    for db in c.server.dbs:
        for key in list(db.data):
            value = db.get(key, touch=False)
            if value is None:
                continue
            h = hashlib.sha1(b"%d:" % db.id + key + b":" + _value_digest(value)
                             + b"%d" % db.get_expire(key))
            _mix(acc, h.digest())
    return SimpleString(bytes(acc).hex().encode())


def _digest_value(c, argv):
    out = []
    for key in argv[2:]:
        value = c.db.get(key, touch=False)
        digest = b"0" * 40 if value is None else _value_digest(value).hex().encode()
        out.append(SimpleString(digest))
    return out


_ATTRIB_RESP3 = (b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
                 b"$39\r\nSome real reply following the attribute\r\n")
_PUSH_RESP3 = (b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n"
               b"$40\r\nSome real reply following the push reply\r\n")


def _protocol(c, argv):
    kind = argv[2].lower()
    if kind == b"string":
        return b"Hello World"
    if kind == b"integer":
        return 12345
    if kind == b"double":
        return 3.141
    if kind == b"bignum":
        return BigNumber(b"1234567999999999999999999999999999999")
    if kind == b"null":
        return None
    if kind == b"array":
        return [0, 1, 2]
    if kind == b"set":
        return RespSet([0, 1, 2])
    if kind == b"map":
        return {0: False, 1: True, 2: False}
    if kind == b"attrib":
        if c.resp == 3:
            return RawReply(_ATTRIB_RESP3)
        return b"Some real reply following the attribute"
    if kind == b"push":
        if c.resp == 2:
            return ErrorReply(b"ERR RESP2 is not supported by this command")
        return RawReply(_PUSH_RESP3)
    if kind == b"verbatim":
        return Verbatim(b"This is a verbatim\nstring")
    if kind == b"true":
        return True
    if kind == b"false":
        return False
    return ErrorReply(b"ERR Wrong protocol type name. Please use one of the following: "
                      + _PROTOCOL_TYPES)


def _change_repl_id(c, argv):
    server = c.server
    new_id = os.urandom(20).hex()
    if hasattr(server, "change_replication_id"):
        server.change_replication_id()
    else:
        server.replid = new_id
    return OK


def _replybuffer(c, argv):
    opt = argv[2].lower()
    if opt not in (b"peak-reset-time", b"resizing"):
        return _unknown(argv)
    return OK


def _stringmatch_test(c, argv):
    from pykv.util.glob import stringmatch

    for pattern, text, want in ((b"a*c", b"abbc", True), (b"a?c", b"ac", False),
                                (b"[a-c]x", b"bx", True), (b"\\*", b"*", True)):
        if stringmatch(pattern, text) != want:
            return ErrorReply(b"ERR stringmatch self-test failed")
    return SimpleString(b"Apparently Redis did not crash: test passed")


def _help(c, argv):
    return help_reply(HELP)


# (name, argc) -> handler; argc -1 means "3 or more"
_SUBCOMMANDS = {
    (b"help", 2): _help,
    (b"sleep", 3): _sleep,
    (b"object", 3): _object,
    (b"set-active-expire", 3): _set_active_expire,
    (b"quicklist-packed-threshold", 3): _quicklist_threshold,
    (b"log", 3): _log,
    (b"error", 3): _error,
    (b"digest", 2): _digest,
    (b"digest-value", -1): _digest_value,
    (b"protocol", 3): _protocol,
    (b"change-repl-id", 2): _change_repl_id,
    (b"replybuffer", 4): _replybuffer,
    (b"stringmatch-test", 2): _stringmatch_test,
}


def register_subcommand(name: bytes, argc: int, handler: Any) -> None:
    """Let another family add a DEBUG subcommand (argc -1: three arguments or more)."""
    _SUBCOMMANDS[(name, argc)] = handler

