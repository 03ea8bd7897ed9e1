"""DEBUG: the harmless subcommands test suites and client libraries rely on.

DEBUG obeys ``enable-debug-command`` as in Redis 7 (checked by the dispatcher, so a refused
DEBUG also fails a MULTI): ``no`` (Redis's default, and pykv's) refuses it, ``local`` allows
it from unix sockets and loopback addresses, ``yes`` allows it. pykv's test fixtures
start the server with ``yes``, like the real redis they compare against. Implemented: SLEEP,
OBJECT, POPULATE, SET-ACTIVE-EXPIRE, SET-DISABLE-DENY-SCRIPTS, PAUSE-CRON,
QUICKLIST-PACKED-THRESHOLD, LISTPACK, QUICKLIST, LOG, ERROR, DIGEST, DIGEST-VALUE, PROTOCOL,
CHANGE-REPL-ID, REPLYBUFFER, STRINGMATCH-TEST and HELP (Redis 7.0's text). The crash/leak/
reload helpers are not (Redis's "unknown subcommand" error); neither are MALLCTL/MALLCTL-STR,
as in a Redis built without jemalloc. DIGEST and DIGEST-VALUE are Redis's own checksum
(``pykv.commands.digest``): the same hex as Redis for the same data.
"""
from __future__ import annotations

import logging
import os
import re
import time
from typing import Any

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command
from pykv.protocol import OK, BigNumber, ErrorReply, RawReply, RespSet, SimpleString, Verbatim
from pykv.storage.keyspace import LRU_CLOCK_MAX

log = logging.getLogger("pykv")

HELP = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "MALLCTL-STR <key> [<val>]",
    "    Get or set a malloc tuning string.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
    "HELP",
    "    Prints this help.",
]

_PROTOCOL_TYPES = (b"string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|"
                   b"true|false")


def _unknown(argv: list[bytes]) -> ErrorReply:
    return ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '" + argv[1]
                      + b"'. Try DEBUG HELP.")


@command("debug")
def debug(c, argv):
    # enable-debug-command is checked by the dispatcher (Redis's CMD_PROTECTED)
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
    key = argv[2]
    value = c.db.get(key, touch=False)
    if value is None:
        return errors.NO_SUCH_KEY
    from pykv.commands.object_cmd import encoding_of, refcount_of
    from pykv.storage.rdb.encoding import RdbWriter
    from pykv.storage.rdb.objects import save_object

    config = c.server.config
    encoding = encoding_of(value, config)
    w = RdbWriter(compress=getattr(config, "rdbcompression", True))
    save_object(w, value, config)
    serialized = len(w.buf) - 1  # rdbSavedObjectLen: the value without its type byte
    # the object's 24-bit lru field: the access second (LRU) or the LFU word, which
    # Redis's estimateObjectIdleTime reads as a clock either way
    now = c.server.clock.sec & LRU_CLOCK_MAX
    lru = c.db.access.get(key, now) & LRU_CLOCK_MAX
    idle = now - lru if now >= lru else now + (LRU_CLOCK_MAX - lru)
    text = (f"Value at:0x{id(value):x} refcount:{refcount_of(value, config)} "
            f"encoding:{encoding.decode()} serializedlength:{serialized} lru:{lru} "
            f"lru_seconds_idle:{idle}")
    if encoding == b"quicklist":
        text += _quicklist_fields(value, config)
    return SimpleString(text.encode())


def _quicklist_fields(value, config) -> str:
    from pykv.storage import value_types as vt
    from pykv.storage.rdb.encoding import listpack_encode
    from pykv.storage.rdb.objects import list_nodes

    nodes = list_nodes(vt.list_items(value), config)
    count = sum(len(n) for n in nodes)
    size = sum(len(listpack_encode(n)) for n in nodes)
    avg = count / len(nodes) if nodes else float("nan")
    return (f" ql_nodes:{len(nodes)} ql_avg_node:{avg:.2f}"
            f" ql_listpack_max:{config.list_max_listpack_size}"
            f" ql_compressed:{int(config.list_compress_depth != 0)}"
            f" ql_uncompressed_size:{size}")


def _lookup_encoding(c, key: bytes):
    value = c.db.get(key, touch=False)
    if value is None:
        raise errors.NO_SUCH_KEY
    from pykv.commands.object_cmd import encoding_of

    return value, encoding_of(value, c.server.config)


def _structure(kind: bytes, describe):
    """DEBUG LISTPACK / QUICKLIST: print the structure, or Redis's "Not a ..." error."""
    def handler(c, argv):
        value, encoding = _lookup_encoding(c, argv[2])
        if encoding != kind:
            return ErrorReply(b"ERR Not a " + kind + b" encoded object.")
        print(f"{{{kind.decode()} {argv[2]!r} {describe(value, c.server.config)}}}",
              flush=True)
        return SimpleString(kind.capitalize() + b" structure printed on stdout")

    return handler


_listpack = _structure(b"listpack", lambda value, config: f"entries:{len(value)}")
_quicklist = _structure(b"quicklist", _quicklist_fields)


def _positive(arg: bytes) -> int:
    value = to_int(arg)
    if value is None or value < 0:  # Redis's getPositiveLongFromObjectOrReply
        raise ErrorReply(b"ERR value is out of range, must be positive")
    return value


def _populate(c, argv):
    count = _positive(argv[2])
    size = _positive(argv[4]) if len(argv) == 5 else 0
    prefix = argv[3] if len(argv) >= 4 else b"key"
    db = c.db
    for j in range(count):
        key = b"%s:%d" % (prefix, j)
        if db.get(key, touch=False) is not None:
            continue
        value = b"value:%d" % j
        if size:
            value = value[:size].ljust(size, b"\0")
        db.set(key, value)  # not propagated, not counted as dirty: as Redis
    return OK


def _atoi(arg: bytes) -> int:
    """C's atoi, as Redis reads these flags: leading digits count, anything else is 0."""
    m = _ATOI.match(arg)
    return int(m.group()) if m else 0


_ATOI = re.compile(rb"[ \t\n\v\f\r]*[+-]?[0-9]+")


def _bool_arg(arg: bytes) -> bool:
    return _atoi(arg) != 0


def _set_active_expire(c, argv):
    c.server.active_expire_enabled = _bool_arg(argv[2])
    return OK


def _set_disable_deny_scripts(c, argv):
    c.server.script_disable_deny_script = _bool_arg(argv[2])
    return OK


def _pause_cron(c, argv):
    c.server.pause_cron = _bool_arg(argv[2])
    return OK


def _quicklist_threshold(c, argv):
    from pykv.config import parse_memory

    size = parse_memory(argv[2].decode("latin-1"))
    # quicklistisSetPackedThreshold: at most 4 GiB less 1 MiB (0 means the 1 GiB default)
    if size is None or size > (1 << 32) - (1 << 20) or size < 0:
        return ErrorReply(b"ERR argument must be a memory value bigger than 1 and smaller "
                          b"than 4gb")
    return OK


def _log(c, argv):
    log.warning("DEBUG LOG: %s", argv[2].decode("utf-8", "replace"))
    return OK


def _error(c, argv):
    return ErrorReply(argv[2])


def _digest(c, argv):
    from pykv.commands.digest import dataset_digest

    return SimpleString(dataset_digest(c.server.dbs).hex().encode())


def _digest_value(c, argv):
    from pykv.commands.digest import key_digest

    return [SimpleString(key_digest(c.db, key).hex().encode()) for key in argv[2:]]


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
    from pykv.server.replybuf import DEFAULT_PEAK_RESET_MS

    opt = argv[2].lower()
    server = c.server
    if opt == b"peak-reset-time":
        value = argv[3].lower()
        if value == b"never":
            server.reply_buffer_peak_reset_time = -1
        elif value == b"reset":
            server.reply_buffer_peak_reset_time = DEFAULT_PEAK_RESET_MS
        else:
            ms = to_int(argv[3])
            if ms is None:
                return errors.NOT_INTEGER
            server.reply_buffer_peak_reset_time = ms
    elif opt == b"resizing":
        server.reply_buffer_resizing_enabled = _bool_arg(argv[3])
    else:
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
    (b"populate", 3): _populate,
    (b"populate", 4): _populate,
    (b"populate", 5): _populate,
    (b"listpack", 3): _listpack,
    (b"quicklist", 3): _quicklist,
    (b"quicklist", 4): _quicklist,
    (b"set-disable-deny-scripts", 3): _set_disable_deny_scripts,
    (b"pause-cron", 3): _pause_cron,
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

