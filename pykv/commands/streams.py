"""Stream commands: XADD, XRANGE, XREAD(GROUP), consumer groups, XINFO, XSETID.

The value type (nodes, groups, PELs, the 7.0 read counters) is
``pykv.storage.stream_type.StreamValue``; this module parses arguments in the order Redis
7.0's ``t_stream.c`` does (so the same error wins), replies in Redis's shapes for RESP2 and
RESP3, does the dirty/notify/modified hooks where Redis does them, and parks XREAD/XREADGROUP
BLOCK clients through ``pykv.server.blocking`` (XADD signals the key as ready).
"""
from __future__ import annotations

import re
import time
from typing import Any

import cython

from pykv import errors
from pykv.commands.args import LLONG_MAX, to_int
from pykv.commands.registry import command
from pykv.protocol import NULL_ARRAY, OK, ErrorReply, SimpleString, encode_reply
from pykv.protocol._parser import string2ll
from pykv.protocol.types import RawReply
from pykv.server.blocking import (
    KEY_DELETED_ERROR,
    TIMEOUT_NEGATIVE,
    answer_failed,
    block_for_keys,
)
from pykv.server.notify import notify
from pykv.storage.stream_type import (
    INVALID_ENTRIES_READ,
    LISTPACK_MAX_SIZE,
    MAX_ID,
    MIN_ID,
    U64,
    Consumer,
    Group,
    Nack,
    StreamID,
    StreamValue,
    claim_command,
    decr_id,
    format_id,
    id_above,
    incr_id,
    pel_deliver,
    range_forward,
    setid_command,
    stream_append,
)

WRONGTYPE = errors.WRONGTYPE
SYNTAX = errors.SYNTAX
INVALID_ID = ErrorReply(b"ERR Invalid stream ID specified as stream command argument")
ID_TOO_SMALL = ErrorReply(
    b"ERR The ID specified in XADD is equal or smaller than the target stream top item")
ID_ZERO = ErrorReply(b"ERR The ID specified in XADD must be greater than 0-0")
ID_EXHAUSTED = ErrorReply(
    b"ERR The stream has exhausted the last possible ID, unable to add more items")
TOO_LARGE = ErrorReply(b"ERR Elements are too large to be stored")
MAXLEN_NEGATIVE = ErrorReply(b"ERR The MAXLEN argument must be >= 0.")
LIMIT_NEGATIVE = ErrorReply(b"ERR The LIMIT argument must be >= 0.")
MAXLEN_AND_MINID = ErrorReply(
    b"ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
LIMIT_WITHOUT_STRATEGY = ErrorReply(
    b"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
XTRIM_NO_STRATEGY = ErrorReply(b"ERR syntax error, XTRIM must be called with a trimming strategy")
LIMIT_WITHOUT_APPROX = ErrorReply(
    b"ERR syntax error, LIMIT cannot be used without the special ~ option")
INVALID_START = ErrorReply(b"ERR invalid start ID for the interval")
INVALID_END = ErrorReply(b"ERR invalid end ID for the interval")
TIMEOUT_NOT_INTEGER = ErrorReply(b"ERR timeout is not an integer or out of range")
MISSING_GROUP = ErrorReply(b"ERR Missing GROUP option for XREADGROUP")
GROUP_ONLY_XREADGROUP = ErrorReply(
    b"ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
NOACK_ONLY_XREADGROUP = ErrorReply(
    b"ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
DOLLAR_IN_XREADGROUP = ErrorReply(
    b"ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history "
    b"of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ "
    b"ID would just return an empty result set.")
GT_ONLY_XREADGROUP = ErrorReply(
    b"ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    b"<consumer> option.")
GROUP_GONE = ErrorReply(
    b"NOGROUP the consumer group this client was blocked on no longer exists")
KEY_REQUIRED = ErrorReply(
    b"ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    b"to use the MKSTREAM option to create an empty stream automatically.")
ENTRIESREAD_RANGE = ErrorReply(b"ERR value for ENTRIESREAD must be positive or -1")
BUSYGROUP = ErrorReply(b"BUSYGROUP Consumer Group name already exists")
ENTRIES_ADDED_NEGATIVE = ErrorReply(b"ERR entries_added must be positive")
XSETID_BELOW_MAXDEL_ARG = ErrorReply(
    b"ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
XSETID_BELOW_TOP = ErrorReply(
    b"ERR The ID specified in XSETID is smaller than the target stream top item")
XSETID_ADDED_TOO_SMALL = ErrorReply(
    b"ERR The entries_added specified in XSETID is smaller than the target stream length")
AUTOCLAIM_COUNT = ErrorReply(b"ERR COUNT must be > 0")
# Redis 7.0 names XREAD and '$' here for XREADGROUP too
UNBALANCED = ErrorReply(b"ERR Unbalanced XREAD list of streams: for each stream key an ID or "
                        b"'$' must be specified.")

XREAD_BLOCKED_DEFAULT_COUNT = 1000
ATTEMPTS_FACTOR = 10
_STRTOULL = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)\Z")

XGROUP_HELP = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
]
XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
]


# -- argument helpers -------------------------------------------------------------------------
def _string2ull(text: bytes) -> int | None:
    """Redis's ``string2ull``: string2ll, else strtoull's more lenient rules."""
    value = to_int(text)
    if value is not None:
        return value if value >= 0 else None
    m = _STRTOULL.match(text)
    if m is None:
        return None
    value = int(m.group(2))
    if value > U64:
        return None
    return (-value) & U64 if m.group(1) == b"-" else value


def parse_id(arg: bytes, missing_seq: int = 0, strict: bool = False,
             partial: bool = False) -> tuple[StreamID, bool]:
    """``streamGenericParseIDOrReply``: (id, seq_given); raises the invalid-ID error."""
    if len(arg) > 127:
        raise INVALID_ID
    buf = arg.split(b"\0", 1)[0]
    if strict and buf in (b"-", b"+"):
        raise INVALID_ID
    if buf == b"-":
        return MIN_ID, True
    if buf == b"+":
        return MAX_ID, True
    ms_part, dash, seq_part = buf.partition(b"-")
    ms = _string2ull(ms_part)
    if ms is None:
        raise INVALID_ID
    if not dash:
        return (ms, missing_seq), True
    if partial and seq_part == b"*":
        return (ms, 0), False
    seq = _string2ull(seq_part)
    if seq is None:
        raise INVALID_ID
    return (ms, seq), True


def strict_id(arg: bytes, missing_seq: int = 0) -> StreamID:
    return parse_id(arg, missing_seq, strict=True)[0]


def _interval_id(arg: bytes, missing_seq: int) -> tuple[StreamID, bool]:
    """``streamParseIntervalIDOrReply``: (id, exclusive)."""
    if len(arg) > 1 and arg[:1] == b"(":
        return strict_id(arg[1:], missing_seq), True
    return parse_id(arg, missing_seq)[0], False


def _range_bounds(start_arg: bytes, end_arg: bytes) -> tuple[StreamID, StreamID]:
    start, ex = _interval_id(start_arg, 0)
    if ex:
        nxt = incr_id(start)
        if nxt is None:
            raise INVALID_START
        start = nxt
    end, ex = _interval_id(end_arg, U64)
    if ex:
        prev = decr_id(end)
        if prev is None:
            raise INVALID_END
        end = prev
    return start, end


def _int(arg: bytes, err: ErrorReply = errors.NOT_INTEGER) -> int:
    value = to_int(arg)
    if value is None:
        raise err
    return value


def _get_stream(c: Any, key: bytes) -> StreamValue | None:
    value = c.db.get(key)
    if value is None or type(value) is StreamValue:
        return value
    raise WRONGTYPE


def _in_script(c: Any) -> bool:
    from pykv.scripting.engine import ScriptClient

    return isinstance(c, ScriptClient)


def _idle(now: int, since: int) -> int:
    """``now - since`` in Redis's signed 64-bit arithmetic (a restored time can be any
    value), never below 0."""
    return max(0, ((now - since + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63))


def _now_ms() -> int:
    return int(time.time() * 1000)


def _entry(sid: StreamID, flat: list[bytes]) -> list:
    return [format_id(sid), list(flat)]


def _pairs_reply(c: Any, pairs: list[tuple[bytes, Any]]) -> Any:
    """A map that may repeat keys: RESP3 ``%`` written from pairs, RESP2 an array of pairs."""
    if c.resp == 2:
        return [[k, v] for k, v in pairs]
    return RawReply(b"%%%d\r\n" % len(pairs)
                    + b"".join(encode_reply(k, 3) + encode_reply(v, 3) for k, v in pairs))


def _help(lines: list[str]) -> list:
    return [SimpleString(line.encode()) for line in lines]


def _subcommand_syntax(argv: list[bytes], container: bytes) -> ErrorReply:
    return ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '"
                      + argv[1][:128] + b"'. Try " + container + b" HELP.")


def _nogroup_key(key: bytes, group: bytes) -> ErrorReply:
    return ErrorReply(b"NOGROUP No such key '" + key + b"' or consumer group '" + group + b"'")


def _event(c: Any, event: bytes, key: bytes) -> None:
    if c.server.keyspace_notifier is not None:
        notify(c.server, "t", event, key, c.db.id)


def _create_consumer(c: Any, group: Group, name: bytes, key: bytes,
                     effects: list | None = None) -> Consumer | None:
    """``streamCreateConsumer``: None when it exists; dirty and event when created."""
    consumer = group.create_consumer(name, _now_ms())
    if consumer is not None:
        c.server.dirty += 1
        _event(c, b"xgroup-createconsumer", key)
        if effects is not None:
            effects.append([b"XGROUP", b"CREATECONSUMER", key, group.name, name])
    return consumer


def _claim_effect(key: bytes, group: Group, sid: StreamID, nack: Nack) -> list[bytes]:
    """``streamPropagateXCLAIM``: the XCLAIM that recreates the entry, with the group's
    last delivered ID, so a replica's group advances with it."""
    return claim_command(key, group, sid, nack) + [b"LASTID", format_id(group.last_id)]


def _lookup_or_create_consumer(c: Any, group: Group, name: bytes, key: bytes,
                               effects: list | None = None) -> Consumer:
    consumer = group.consumers.get(name)
    if consumer is None:
        consumer = _create_consumer(c, group, name, key, effects)
    consumer.seen_time = _mstime()
    return consumer


# -- XADD / XTRIM -----------------------------------------------------------------------------
class TrimArgs:
    __slots__ = ("strategy", "approx", "maxlen", "minid", "limit", "nomkstream", "id",
                 "id_given", "seq_given")

    def __init__(self) -> None:
        self.strategy: str | None = None
        self.approx = False
        self.maxlen = 0
        self.minid: StreamID = MIN_ID
        self.limit = 0
        self.nomkstream = False
        self.id: StreamID = MIN_ID
        self.id_given = False
        self.seq_given = True


def _parse_add_trim(c: Any, argv: list[bytes], xadd: bool) -> tuple[TrimArgs, int]:
    """``streamParseAddOrTrimArgsOrReply``: the options and the index of the ID (XADD)."""
    args = TrimArgs()
    limit_given = False
    i = 2
    argc = len(argv)
    while i < argc:
        more = argc - 1 - i
        opt = argv[i]
        if xadd and opt == b"*":
            break
        low = opt.lower()
        if low in (b"maxlen", b"minid") and more:
            if args.strategy is not None:
                raise MAXLEN_AND_MINID
            args.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                args.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if low == b"maxlen":
                maxlen = string2ll(argv[i + 1])
                if maxlen is None:
                    raise errors.NOT_INTEGER
                args.maxlen = maxlen
                if maxlen < 0:
                    raise MAXLEN_NEGATIVE
                args.strategy = "maxlen"
            else:
                args.minid = strict_id(argv[i + 1])
                args.strategy = "minid"
            i += 1
        elif low == b"limit" and more:
            args.limit = _int(argv[i + 1])
            if args.limit < 0:
                raise LIMIT_NEGATIVE
            limit_given = True
            i += 1
        elif xadd and low == b"nomkstream":
            args.nomkstream = True
        elif xadd:
            args.id, args.seq_given = parse_id(opt, 0, strict=True, partial=True)
            args.id_given = True
            break
        else:
            raise SYNTAX
        i += 1
    if args.limit and args.strategy is None:
        raise LIMIT_WITHOUT_STRATEGY
    if not xadd and args.strategy is None:
        raise XTRIM_NO_STRATEGY
    if limit_given:
        if not args.approx:
            raise LIMIT_WITHOUT_APPROX
    elif args.approx:
        limit = 100 * c.server.config.stream_node_max_entries
        if limit <= 0:
            limit = 10000
        args.limit = min(limit, 1000000)
    else:
        args.limit = 0
    return args, i


def _trim(s: StreamValue, args: TrimArgs) -> int:
    if args.strategy is None:
        return 0
    return s.trim(args.maxlen if args.strategy == "maxlen" else None,
                  args.minid if args.strategy == "minid" else None, args.approx, args.limit)


def _next_auto_id(last: StreamID) -> StreamID:
    ms = _now_ms()
    if ms > last[0]:
        return (ms, 0)
    nxt = incr_id(last)
    return nxt if nxt is not None else MIN_ID


def _mstime() -> int:
    """The wall clock in ms (``mstime``): a C call compiled (streams.pxd)."""
    if cython.compiled:
        return pykv_mstime()  # noqa: F821
    return _now_ms()


@command("xadd")
def xadd(c, argv):
    return _xadd(c, argv)


def _xadd(c: Any, argv: list[bytes]) -> Any:
    """XADD (typed in streams.pxd: the client, server, database and the ID parts are C
    types). ``XADD key * field value ...``, the usual form, skips the option parser."""
    argc = len(argv)
    if argv[2] == b"*":
        args = None
        idpos = 2
        id_given = nomkstream = trimming = False
        seq_given = True
    else:
        args, idpos = _parse_add_trim(c, argv, True)
        id_given = args.id_given
        seq_given = args.seq_given
        nomkstream = args.nomkstream
        trimming = args.strategy is not None
    nfields = argc - idpos - 1
    if nfields < 2 or nfields % 2:
        raise errors.wrong_arity("xadd")
    if id_given and seq_given and args.id == MIN_ID:
        raise ID_ZERO
    key = argv[1]
    db = c.db
    server = c.server
    value = db.get(key)
    if value is None:
        if nomkstream:
            return None
        s = StreamValue()
        db.set(key, s)
    elif type(value) is not StreamValue:
        raise WRONGTYPE
    else:
        s = value  # typed in streams.pxd: its fields are C slots from here on
    last = s.last_id
    last_ms = last[0]
    last_seq = last[1]
    if last_seq == U64 and last_ms == U64:
        raise ID_EXHAUSTED
    if not id_given:  # above the last ID by construction
        ms = _mstime()
        if ms > last_ms:
            sid = (ms, 0)
        elif last_seq == U64:
            sid = (last_ms + 1, 0)
        else:  # the last ID's ms object shared: one int fewer per entry kept
            sid = (last[0], last_seq + 1)
    else:
        if seq_given:
            sid = args.id
        elif last_ms == args.id[0]:
            if last_seq == U64:
                raise TOO_LARGE  # Redis 7.0 reports this case with the ERANGE text
            sid = (last[0], last_seq + 1)
        else:
            sid = args.id
        if sid <= last:
            raise ID_TOO_SMALL
    fields = tuple(argv[idpos + 1:])  # packed into the last node (_stream.StreamNode)
    total = 0
    for item in fields:
        total += len(item)
    if total > LISTPACK_MAX_SIZE:
        raise TOO_LARGE
    config = server.config
    stream_append(s, sid, fields, config.stream_node_max_bytes, config.stream_node_max_entries)
    db.modified(key)
    if server.keyspace_notifier is not None:
        notify(server, "t", b"xadd", key, db.id)
    server.dirty += 1
    trimmed = trimming and _trim(s, args)
    if trimmed:
        _event(c, b"xtrim", key)
    reply = format_id(sid)
    if server.propagate is not None and (not (id_given and seq_given) or trimming):
        # replay must not depend on the clock or on node boundaries: the ID made, then
        # the length the trim left
        nomk = [b"NOMKSTREAM"] if nomkstream else []
        cmds = [[b"XADD", key, *nomk, reply, *fields]]
        if trimmed:
            cmds.append([b"XTRIM", key, b"MAXLEN", b"%d" % s.length])
        c.propagate_as(*cmds)
    if db.blocking_keys:  # XREAD BLOCK waiters (the check is what signal_key_as_ready does)
        server.blocking.signal_key_as_ready(db, key)
    return reply


@command("xtrim")
def xtrim(c, argv):
    args, _ = _parse_add_trim(c, argv, False)
    key = argv[1]
    s = _get_stream(c, key)
    if s is None:
        return 0
    deleted = _trim(s, args)
    if deleted:
        _event(c, b"xtrim", key)
        c.db.modified(key)
        c.server.dirty += deleted
        if args.approx:
            c.propagate_as([b"XTRIM", key, b"MAXLEN", b"%d" % s.length])
    return deleted


# -- reading ----------------------------------------------------------------------------------
@command("xlen")
def xlen(c, argv):
    s = _get_stream(c, argv[1])
    return 0 if s is None else s.length


def _xrange(c: Any, argv: list[bytes], rev: bool) -> Any:
    start_arg, end_arg = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    start, end = _range_bounds(start_arg, end_arg)
    count = -1
    j = 4
    while j < len(argv):
        if argv[j].lower() == b"count" and j + 1 < len(argv):
            count = max(0, _int(argv[j + 1]))
            j += 2
        else:
            raise SYNTAX
    s = _get_stream(c, argv[1])
    if s is None:
        return []
    if count == 0:
        return NULL_ARRAY
    return s.range(start, end, max(count, 0), rev, True)


@command("xrange")
def xrange(c, argv):
    return _xrange(c, argv, False)


@command("xrevrange")
def xrevrange(c, argv):
    return _xrange(c, argv, True)


def _deliver(s: StreamValue, start: StreamID, count: int, group: Group | None,
             consumer: Consumer | None, noack: bool, key: bytes = b"",
             effects: list | None = None) -> list:
    """``streamReplyWithRange`` from ``start`` on, updating the group as Redis does (typed
    in streams.pxd)."""
    entries: list = []
    if group is None:  # the replies straight from the nodes
        range_forward(s, start, MAX_ID, count, entries, 1)
        return entries
    range_forward(s, start, MAX_ID, count, entries, 2)  # (id, reply) pairs
    out = []
    now = _mstime()
    last_id = group.last_id
    entries_read = group.entries_read
    # ``s.has_tombstones(sid)`` for each entry: the stream does not change meanwhile
    max_deleted = s.max_deleted
    tombstones = bool(s.length) and max_deleted != MIN_ID and not s.first_id > max_deleted
    for sid, entry in entries:
        if id_above(sid, last_id):
            if entries_read != INVALID_ENTRIES_READ and not (tombstones and sid <= max_deleted):
                entries_read += 1
            elif s.entries_added:
                entries_read = s.estimate_distance(sid)
            last_id = sid
        if not noack:
            nack = pel_deliver(group, consumer, sid, now)
            if effects is not None:
                group.last_id = last_id
                group.entries_read = entries_read
                effects.append(_claim_effect(key, group, sid, nack))
        out.append(entry)
    group.last_id = last_id
    group.entries_read = entries_read
    if noack and out and effects is not None:
        effects.append(setid_command(key, group))
    return out


def _history(s: StreamValue, start: StreamID, count: int, consumer: Consumer) -> list:
    """``streamReplyWithRangeFromConsumerPEL``: the consumer's own pending entries. Redis
    7.0 logs nothing for it, though it bumps their delivery time and count."""
    out: list = []
    now = _now_ms()
    for sid in list(consumer.pel.irange(minimum=start)):
        if count and len(out) >= count:
            break
        flat = s.get(sid)
        if flat is None:
            out.append([format_id(sid), NULL_ARRAY])
        else:
            nack = consumer.pel[sid]
            nack.delivery_time = now
            nack.delivery_count += 1
            out.append(_entry(sid, flat))
    return out


def _parse_block_ms(arg: bytes) -> int:
    """``getTimeoutFromObjectOrReply`` in milliseconds: absolute deadline, 0 = forever."""
    value = to_int(arg)
    if value is None:
        raise TIMEOUT_NOT_INTEGER
    if value < 0:
        raise TIMEOUT_NEGATIVE
    if value > 0:
        now = _now_ms()
        # Redis 7.0 does not range-check here; a deadline past the end of time never comes
        value = 0 if value > LLONG_MAX - now else value + now
    return value


def _xread(c: Any, argv: list[bytes], xreadgroup: bool) -> Any:
    timeout = -1
    count = 0
    streams_arg = 0
    nstreams = 0
    noack = False
    groupname = consumername = None
    argc = len(argv)
    i = 1
    while i < argc:
        more = argc - i - 1
        opt = argv[i].lower()
        if opt == b"block" and more:
            if _in_script(c):
                raise ErrorReply(b"ERR " + argv[0] + b" command is not allowed with BLOCK option "
                                 b"from scripts")
            i += 1
            timeout = _parse_block_ms(argv[i])
        elif opt == b"count" and more:
            i += 1
            count = max(0, _int(argv[i]))
        elif opt == b"streams" and more:
            streams_arg = i + 1
            nstreams = argc - streams_arg
            if nstreams % 2:
                raise UNBALANCED
            nstreams //= 2
            break
        elif opt == b"group" and more >= 2:
            if not xreadgroup:
                raise GROUP_ONLY_XREADGROUP
            groupname, consumername = argv[i + 1], argv[i + 2]
            i += 2
        elif opt == b"noack":
            if not xreadgroup:
                raise NOACK_ONLY_XREADGROUP
            noack = True
        else:
            raise SYNTAX
        i += 1
    if not streams_arg:
        raise SYNTAX
    if xreadgroup and groupname is None:
        raise MISSING_GROUP
    keys = argv[streams_arg:streams_arg + nstreams]
    ids: list[StreamID] = []
    groups: list[Group | None] = []
    for key, id_arg in zip(keys, argv[streams_arg + nstreams:], strict=True):
        s = _get_stream(c, key)
        group = None
        if groupname is not None:
            group = s.groups.get(groupname) if s is not None else None
            if group is None:
                raise ErrorReply(b"NOGROUP No such key '" + key + b"' or consumer group '"
                                 + groupname + b"' in XREADGROUP with GROUP option")
        groups.append(group)
        if id_arg == b"$":
            if xreadgroup:
                raise DOLLAR_IN_XREADGROUP
            ids.append(s.last_id if s is not None else MIN_ID)
        elif id_arg == b">":
            if not xreadgroup:
                raise GT_ONLY_XREADGROUP
            ids.append(MAX_ID)
        else:
            ids.append(strict_id(id_arg))
    pairs: list[tuple[bytes, Any]] = []
    # what the AOF logs instead of the read (XCLAIMs, SETID), built only when it is on
    effects: list[list[bytes]] | None = [] if c.server.propagate is not None else None
    dirty = c.server.dirty
    for n, key in enumerate(keys):
        s = _get_stream(c, key)
        if s is None:
            continue
        gt = ids[n]
        group = groups[n]
        history = False
        serve = False
        if group is not None:
            if gt != MAX_ID:
                serve = history = True
            elif s.length and s.last_valid_id() > group.last_id:
                serve = True
                gt = group.last_id
        elif s.length and s.last_valid_id() > gt:
            serve = True
        if not serve:
            continue
        start = incr_id(gt) or MIN_ID
        consumer = None
        if group is not None:
            consumer = _lookup_or_create_consumer(c, group, consumername, key,
                                                  effects if noack else None)
            if history:
                entries = _history(s, start, count, consumer)
            else:
                entries = _deliver(s, start, count, group, consumer, noack, key, effects)
            c.server.dirty += 1
        else:
            entries = _deliver(s, start, count, None, None, False)
        pairs.append((key, entries))
    if xreadgroup and effects is not None:
        _log_effects(c, effects, dirty)  # never the read itself: replaying it would redeliver
    if pairs:
        return _pairs_reply(c, pairs)
    if timeout == -1:
        return NULL_ARRAY
    if c.deny_blocking:
        return NULL_ARRAY
    wanted = dict(zip(keys, ids, strict=True))
    serve_fn = _blocked_reader(wanted, count or XREAD_BLOCKED_DEFAULT_COUNT, groupname,
                               consumername, noack)
    # XREADGROUP is woken with an error when its stream goes away; XREAD waits on
    return block_for_keys(c, list(keys), timeout, serve_fn,
                          gone_reply=KEY_DELETED_ERROR if xreadgroup else None)


def _blocked_reader(wanted: dict[bytes, StreamID], count: int, groupname: bytes | None,
                    consumername: bytes | None, noack: bool):
    """The serve callback of a parked XREAD/XREADGROUP (``serveClientsBlockedOnStreamKey``)."""

    def serve(c: Any, key: bytes, value: Any) -> bool:
        if type(value) is not StreamValue:
            if groupname is None:
                return False
            return answer_failed(c, KEY_DELETED_ERROR)  # overwritten by another type
        gt = wanted[key]
        group = None
        if groupname is not None:
            group = value.groups.get(groupname)
            if group is None:
                return answer_failed(c, GROUP_GONE)
            gt = group.last_id
        if not value.last_id > gt:
            return False
        start = incr_id(gt) or MIN_ID
        consumer = None
        effects: list[list[bytes]] = []
        if group is not None:
            consumer = _lookup_or_create_consumer(c, group, consumername, key,
                                                  effects if noack else None)
        entries = _deliver(value, start, count, group, consumer, noack, key, effects)
        c.add_reply(_pairs_reply(c, [(key, entries)]))
        _propagate_unit(c, effects)
        return True

    return serve


def _log_effects(c: Any, effects: list[list[bytes]], dirty: int) -> None:
    """Log ``effects`` instead of the command, only when it changed something: the
    override outlives a command that left ``dirty`` alone (it would swallow the next)."""
    if effects or c.server.dirty != dirty:
        c.propagate_as(*effects)


def _propagate_unit(c: Any, effects: list[list[bytes]]) -> None:
    """Log a served blocked read's effects, several as one MULTI/EXEC like a command's."""
    if len(effects) < 2:
        for cmd in effects:
            c.propagate_now(cmd)
        return
    marks = c.server.begin_effects(c.db_index)
    try:
        for cmd in effects:
            c.propagate_now(cmd)
    finally:
        c.server.end_effects(marks)


@command("xread")
def xread(c, argv):
    return _xread(c, argv, False)


@command("xreadgroup")
def xreadgroup(c, argv):
    return _xread(c, argv, True)


# -- deleting ---------------------------------------------------------------------------------
@command("xdel")
def xdel(c, argv):
    key = argv[1]
    s = _get_stream(c, key)
    if s is None:
        return 0
    ids = [strict_id(arg) for arg in argv[2:]]
    deleted = 0
    first_entry = False
    for sid in ids:
        if s.delete(sid):
            if sid == s.first_id:
                first_entry = True
            if sid > s.max_deleted:
                s.max_deleted = sid
            deleted += 1
    if deleted:
        if s.length == 0:
            s.first_id = MIN_ID
        elif first_entry:
            s.first_id = s.first_entry_id()
        c.db.modified(key)
        _event(c, b"xdel", key)
        c.server.dirty += deleted
    return deleted


# -- XSETID -----------------------------------------------------------------------------------
@command("xsetid")
def xsetid(c, argv):
    sid = strict_id(argv[2])
    entries_added = -1
    max_xdel = MIN_ID
    i = 3
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].lower()
        if opt == b"entriesadded" and more:
            entries_added = _int(argv[i + 1])
            if entries_added < 0:
                raise ENTRIES_ADDED_NEGATIVE
            i += 2
        elif opt == b"maxdeletedid" and more:
            max_xdel = strict_id(argv[i + 1])
            if sid < max_xdel:
                raise XSETID_BELOW_MAXDEL_ARG
            i += 2
        else:
            raise SYNTAX
    key = argv[1]
    s = _get_stream(c, key)
    if s is None:
        raise errors.NO_SUCH_KEY
    if s.length > 0:
        if sid < s.last_valid_id():
            raise XSETID_BELOW_TOP
        if entries_added != -1 and s.length > entries_added:
            raise XSETID_ADDED_TOO_SMALL
    s.last_id = sid
    if entries_added != -1:
        s.entries_added = entries_added
    if max_xdel != MIN_ID:
        s.max_deleted = max_xdel
    # Redis 7.0's XSETID signals no modified key (WATCH, tracking): only the event
    _event(c, b"xsetid", key)
    c.server.dirty += 1
    return OK


# -- XGROUP -----------------------------------------------------------------------------------
def _entries_read_arg(arg: bytes) -> int:
    value = _int(arg)
    if value < 0 and value != INVALID_ENTRIES_READ:
        raise ENTRIESREAD_RANGE
    return value


@command("xgroup|create", "xgroup|setid", "xgroup|destroy", "xgroup|createconsumer",
         "xgroup|delconsumer")
def xgroup(c, argv):
    opt = argv[1].lower()
    argc = len(argv)
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    if opt in (b"create", b"setid"):  # options first (a bad number wins), arity at the end
        i = 5
        while i < argc:
            low = argv[i].lower()
            if low == b"mkstream" and opt == b"create":
                mkstream = True
                i += 1
            elif low == b"entriesread" and i + 1 < argc:
                entries_read = _entries_read_arg(argv[i + 1])
                i += 2
            else:
                raise _subcommand_syntax(argv, b"XGROUP")
    key, name = argv[2], argv[3]
    s = _get_stream(c, key)
    group = None
    if s is None and not mkstream:
        raise KEY_REQUIRED
    if s is not None:
        group = s.groups.get(name)
        if group is None and opt in (b"setid", b"createconsumer", b"delconsumer"):
            raise ErrorReply(b"NOGROUP No such consumer group '" + name
                             + b"' for key name '" + key + b"'")
    server = c.server
    if opt == b"create" and 5 <= argc <= 8:
        if argv[4] == b"$":
            sid = s.last_id if s is not None else MIN_ID
        else:
            sid = strict_id(argv[4])
        if s is None:
            s = StreamValue()
            c.db.set(key, s)
        if name in s.groups:
            raise BUSYGROUP
        s.groups[name] = Group(name, sid, entries_read)
        server.dirty += 1
        _event(c, b"xgroup-create", key)
        return OK
    if opt == b"setid" and argc in (5, 7):
        if argv[4] == b"$":
            sid = s.last_id
        else:
            sid = parse_id(argv[4])[0]
        group.last_id = sid
        group.entries_read = entries_read
        server.dirty += 1
        _event(c, b"xgroup-setid", key)
        return OK
    if opt == b"destroy" and argc == 4:
        if group is None:
            return 0
        del s.groups[name]
        server.dirty += 1
        _event(c, b"xgroup-destroy", key)
        server.blocking.signal_key_as_ready(c.db, key)
        return 1
    if opt == b"createconsumer" and argc == 5:
        return 1 if _create_consumer(c, group, argv[4], key) is not None else 0
    if opt == b"delconsumer" and argc == 5:
        consumer = group.consumers.get(argv[4])
        if consumer is None:
            return 0
        pending = len(consumer.pel)
        group.delete_consumer(consumer)
        server.dirty += 1
        _event(c, b"xgroup-delconsumer", key)
        return pending
    raise _subcommand_syntax(argv, b"XGROUP")


@command("xgroup|help")
def xgroup_help(c, argv):
    return _help(XGROUP_HELP)


# -- acknowledging and claiming ---------------------------------------------------------------
@command("xack")
def xack(c, argv):
    s = _get_stream(c, argv[1])
    group = s.groups.get(argv[2]) if s is not None else None
    if group is None:
        return 0
    ids = [strict_id(arg) for arg in argv[3:]]
    acked = 0
    for sid in ids:
        if group.ack(sid):
            acked += 1
            c.server.dirty += 1
    return acked


@command("xpending")
def xpending(c, argv):
    argc = len(argv)
    key, groupname = argv[1], argv[2]
    if argc != 3 and not 6 <= argc <= 9:
        raise SYNTAX
    minidle = 0
    consumername = None
    count = 0
    start = end = MIN_ID
    if argc >= 6:
        startidx = 3
        if argv[3].lower() == b"idle":
            minidle = _int(argv[4])
            if argc < 8:
                raise SYNTAX
            startidx += 2
        count = max(0, _int(argv[startidx + 2]))
        start, end = _range_bounds(argv[startidx], argv[startidx + 1])
        if startidx + 3 < argc:
            consumername = argv[startidx + 3]
    s = _get_stream(c, key)
    group = s.groups.get(groupname) if s is not None else None
    if group is None:
        raise _nogroup_key(key, groupname)
    if argc == 3:
        if not group.pel:
            return [0, None, None, NULL_ARRAY]
        counts = [[con.name, b"%d" % len(con.pel)]
                  for con in group.sorted_consumers() if con.pel]
        return [len(group.pel), format_id(group.pel.first()),
                format_id(group.pel.last()), counts]
    pel = group.pel
    if consumername is not None:
        consumer = group.consumers.get(consumername)
        if consumer is None:
            return []
        pel = consumer.pel
    now = c.server.clock.ms
    out = []
    if start > end:
        return out
    for sid in pel.irange(start, end):
        if not count:
            break
        nack = pel[sid]
        if minidle and now - nack.delivery_time < minidle:
            continue
        count -= 1
        out.append([format_id(sid), nack.consumer.name, _idle(now, nack.delivery_time),
                    nack.delivery_count])
    return out


@command("xclaim")
def xclaim(c, argv):
    key, groupname = argv[1], argv[2]
    s = _get_stream(c, key)
    group = s.groups.get(groupname) if s is not None else None
    if group is None:
        raise _nogroup_key(key, groupname)
    minidle = max(0, _int(argv[4], ErrorReply(b"ERR Invalid min-idle-time argument for XCLAIM")))
    ids: list[StreamID] = []
    j = 5
    while j < len(argv):
        try:
            ids.append(strict_id(argv[j]))
        except ErrorReply:
            break
        j += 1
    now = c.server.clock.ms
    retrycount = -1
    deliverytime = -1
    force = justid = False
    last_id = MIN_ID
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].lower()
        if opt == b"force":
            force = True
        elif opt == b"justid":
            justid = True
        elif opt == b"idle" and more:
            j += 1
            deliverytime = now - _int(
                argv[j], ErrorReply(b"ERR Invalid IDLE option argument for XCLAIM"))
        elif opt == b"time" and more:
            j += 1
            deliverytime = _int(argv[j], ErrorReply(b"ERR Invalid TIME option argument for XCLAIM"))
        elif opt == b"retrycount" and more:
            j += 1
            retrycount = _int(
                argv[j], ErrorReply(b"ERR Invalid RETRYCOUNT option argument for XCLAIM"))
        elif opt == b"lastid" and more:
            j += 1
            last_id = strict_id(argv[j])
        else:
            raise ErrorReply(b"ERR Unrecognized XCLAIM option '" + argv[j] + b"'")
        j += 1
    effects: list[list[bytes]] = []
    dirty = c.server.dirty
    advanced = last_id > group.last_id  # logged by the XCLAIMs' LASTID, or SETID if none
    if advanced:
        group.last_id = last_id
        c.server.dirty += 1
    if deliverytime == -1 or deliverytime < 0 or deliverytime > now:
        deliverytime = now
    consumer = None
    out = []
    for sid in ids:
        nack = group.pel.get(sid)
        if s.get(sid) is None:  # gone from the stream: dropped, logged as its old XCLAIM
            if nack is not None:
                effects.append(_claim_effect(key, group, sid, nack))
                group.ack(sid)
                c.server.dirty += 1
                advanced = False
            continue
        if force and nack is None:
            nack = group.pel[sid] = Nack(None, now, 1)
        if nack is None:
            continue
        if nack.consumer is not None and minidle and now - nack.delivery_time < minidle:
            continue
        if consumer is None:
            consumer = _lookup_or_create_consumer(c, group, argv[3], key)
        if nack.consumer is not consumer and nack.consumer is not None:
            nack.consumer.pel.pop(sid, None)
        nack.delivery_time = deliverytime
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not justid:
            nack.delivery_count += 1
        if nack.consumer is not consumer:
            consumer.pel[sid] = nack
            nack.consumer = consumer
        out.append(format_id(sid) if justid else _entry(sid, s.get(sid)))
        c.server.dirty += 1
        effects.append(_claim_effect(key, group, sid, nack))
        advanced = False
    if advanced:
        effects.append(setid_command(key, group))
    _log_effects(c, effects, dirty)
    return out


@command("xautoclaim")
def xautoclaim(c, argv):
    key, groupname, name = argv[1], argv[2], argv[3]
    minidle = max(0, _int(argv[4],
                          ErrorReply(b"ERR Invalid min-idle-time argument for XAUTOCLAIM")))
    start, ex = _interval_id(argv[5], 0)
    if ex:
        nxt = incr_id(start)
        if nxt is None:
            raise INVALID_START
        start = nxt
    count = 100
    justid = False
    j = 6
    max_count = LLONG_MAX // 16
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].lower()
        if opt == b"count" and more:
            count = to_int(argv[j + 1])
            if count is None or not 1 <= count <= max_count:
                raise AUTOCLAIM_COUNT
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise SYNTAX
        j += 1
    s = _get_stream(c, key)
    group = s.groups.get(groupname) if s is not None else None
    if group is None:
        raise _nogroup_key(key, groupname)
    attempts = count * ATTEMPTS_FACTOR
    now = c.server.clock.ms
    consumer = None
    claimed: list = []
    deleted: list[bytes] = []
    pel = group.pel
    pending = iter(list(pel.irange(minimum=start)))
    cursor = MIN_ID
    effects: list[list[bytes]] = []
    dirty = c.server.dirty
    while True:
        if not attempts or not count:
            cursor = next(pending, MIN_ID)
            break
        attempts -= 1
        sid = next(pending, None)
        if sid is None:
            break
        nack = pel[sid]
        if s.get(sid) is None:
            effects.append(_claim_effect(key, group, sid, nack))
            group.ack(sid)
            c.server.dirty += 1
            deleted.append(format_id(sid))
            count -= 1
            continue
        if minidle and now - nack.delivery_time < minidle:
            continue
        if consumer is None:
            consumer = _lookup_or_create_consumer(c, group, name, key)
        if nack.consumer is not consumer:
            if nack.consumer is not None:
                nack.consumer.pel.pop(sid, None)
            consumer.pel[sid] = nack
            nack.consumer = consumer
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        claimed.append(format_id(sid) if justid else _entry(sid, s.get(sid)))
        count -= 1
        c.server.dirty += 1
        effects.append(_claim_effect(key, group, sid, nack))
    _log_effects(c, effects, dirty)
    return [format_id(cursor), claimed, deleted]


# -- XINFO ------------------------------------------------------------------------------------
@command("xinfo|help")
def xinfo_help(c, argv):
    return _help(XINFO_HELP)


def _xinfo_stream_of(c: Any, key: bytes) -> StreamValue:
    s = _get_stream(c, key)
    if s is None:
        raise errors.NO_SUCH_KEY
    return s


@command("xinfo|consumers")
def xinfo_consumers(c, argv):
    s = _xinfo_stream_of(c, argv[2])
    group = s.groups.get(argv[3])
    if group is None:
        raise ErrorReply(b"NOGROUP No such consumer group '" + argv[3] + b"' for key name '"
                         + argv[2] + b"'")
    now = _now_ms()
    return [{b"name": con.name, b"pending": len(con.pel),
             b"idle": _idle(now, con.seen_time)} for con in group.sorted_consumers()]


@command("xinfo|groups")
def xinfo_groups(c, argv):
    s = _xinfo_stream_of(c, argv[2])
    out = []
    for group in s.sorted_groups():
        read = group.entries_read
        out.append({
            b"name": group.name,
            b"consumers": len(group.consumers),
            b"pending": len(group.pel),
            b"last-delivered-id": format_id(group.last_id),
            b"entries-read": read if read != INVALID_ENTRIES_READ else None,
            b"lag": s.group_lag(group),
        })
    return out


@command("xinfo|stream")
def xinfo_stream(c, argv):
    s = _xinfo_stream_of(c, argv[2])
    opts = argv[3:]
    full = True
    count = 10
    if not opts:
        full = False
    elif len(opts) in (1, 3):
        if opts[0].lower() != b"full":
            raise _subcommand_syntax(argv, b"XINFO")
        if len(opts) == 3:
            if opts[1].lower() != b"count":
                raise _subcommand_syntax(argv, b"XINFO")
            count = _int(opts[2])
            if count < 0:
                count = 10
    else:
        raise _subcommand_syntax(argv, b"XINFO")
    info: dict[bytes, Any] = {
        b"length": s.length,
        b"radix-tree-keys": len(s.nodes),
        b"radix-tree-nodes": s.rax_nodes(),
        b"last-generated-id": format_id(s.last_id),
        b"max-deleted-entry-id": format_id(s.max_deleted),
        b"entries-added": s.entries_added,
        b"recorded-first-entry-id": format_id(s.first_id),
    }
    if not full:
        info[b"groups"] = len(s.groups)
        first = s.range(MIN_ID, MAX_ID, 1)
        last = s.range(MIN_ID, MAX_ID, 1, rev=True)
        info[b"first-entry"] = _entry(first[0][0], first[0][1]) if first else None
        info[b"last-entry"] = _entry(last[0][0], last[0][1]) if last else None
        return info
    info[b"entries"] = [_entry(sid, flat) for sid, flat in s.range(MIN_ID, MAX_ID, count)]
    groups = []
    for group in s.sorted_groups():
        read = group.entries_read
        pel = []
        for sid, nack in group.pel.items():
            if count and len(pel) >= count:
                break
            pel.append([format_id(sid), nack.consumer.name, nack.delivery_time,
                        nack.delivery_count])
        consumers = []
        for con in group.sorted_consumers():
            cpel = []
            for sid, nack in con.pel.items():
                if count and len(cpel) >= count:
                    break
                cpel.append([format_id(sid), nack.delivery_time, nack.delivery_count])
            consumers.append({b"name": con.name, b"seen-time": con.seen_time,
                              b"pel-count": len(con.pel), b"pending": cpel})
        groups.append({
            b"name": group.name,
            b"last-delivered-id": format_id(group.last_id),
            b"entries-read": read if read != INVALID_ENTRIES_READ else None,
            b"lag": s.group_lag(group),
            b"pel-count": len(group.pel),
            b"pending": pel,
            b"consumers": consumers,
        })
    info[b"groups"] = groups
    return info
