"""A client's memory as Redis 7.0 counts it (CLIENT LIST, INFO, client eviction).

Redis's getClientMemoryUsage adds up what the client's allocations take: the client
struct, the query buffer's allocation (``sdsZmallocSize``), the fixed reply buffer
(``rbs``), the reply list (``omem``: each 16 KB block's usable size plus its list node and
header), the running command's arguments (their lengths plus one pointer each), the MULTI
queue (its arguments, plus the queue's array of ``multiCmd``), watched keys and the pub/sub
tables. pykv holds the same things in other shapes, so this module rebuilds Redis's figures
from them:

* the query buffer is the parser's buffer; its allocation follows Redis's reads: a client
  that has never sent anything has an empty sds (8 bytes), a read allocates 16 KB of room
  (jemalloc class 20480), a buffer that grows past it grows greedily (doubling below 1 MB),
  a bulk of 32 KB or more is allocated whole as soon as its length is read, and the cron
  frees the room of a client idle for more than 2 seconds;
* pykv writes one reply batch at a time, so what Redis would keep in its reply list is the
  transport's unsent bytes plus the batch beyond ``rbs``, counted as 16 KB blocks.

Allocator- and history-dependent parts are approximations: the struct's size class, a
greedy query buffer's exact size, a big bulk's ``qbuf-free``, the reply list's block count
(``oll``: Redis sizes a block to a reply bigger than 16 KB, pykv counts 16 KB blocks, so
``omem`` agrees within a few percent while ``oll`` does not), a pub/sub table's slots while
it rehashes or after unsubscribing, and tracking prefixes (not counted). Fresh, idle,
MULTI, WATCH and subscribed clients' figures are Redis's to the byte.
"""
from __future__ import annotations

import time
from typing import Any, NamedTuple

from pykv.server.replybuf import usable_size

CLIENT_STRUCT = 768  # zmalloc_size(client) of Redis 7.0 on x86-64 (jemalloc)
EMPTY_SDS = 8  # sdsempty(), and what the cron leaves of an idle client's query buffer
IOBUF_LEN = 16384  # PROTO_IOBUF_LEN: the room one read makes
BIG_ARG = 32 * 1024  # PROTO_MBULK_BIG_ARG: bulks this big get their own buffer
GREEDY_MAX = 1024 * 1024  # SDS_MAX_PREALLOC
IDLE_FREE_SECONDS = 2  # clientsCronResizeQueryBuffer frees the room past this idle time
REPLY_BLOCK_HEADER = 16  # clientReplyBlock's size and used fields
LIST_NODE = 24  # sizeof(listNode)
REPLY_BLOCK = usable_size(IOBUF_LEN + REPLY_BLOCK_HEADER) - REPLY_BLOCK_HEADER
POINTER = 8
MULTI_CMD = 24  # sizeof(multiCmd)
WATCHED_KEY = 32  # sizeof(watchedKey)
DICT_ENTRY = 24


class ClientMemory(NamedTuple):
    """The CLIENT LIST memory fields of one client, and what INFO's peaks sample."""

    qbuf: int
    qbuf_free: int
    argv_mem: int
    multi_mem: int
    obl: int
    oll: int
    omem: int
    tot_mem: int
    input_usage: int  # query buffer allocation + arguments (client_recent_max_input_buffer)


def _sds_header(n: int) -> int:
    return 3 if n < 1 << 8 else 5 if n < 1 << 16 else 9 if n < 1 << 32 else 17


def query_buffer_alloc(c: Any, length: int, bulklen: int, now: float) -> tuple[int, int]:
    """The query buffer's ``(zmalloc size, free room)`` for ``length`` buffered bytes."""
    if bulklen >= BIG_ARG:
        need = max(length, bulklen + 2)
        header = _sds_header(need)
        total = usable_size(header + need + 1)
        return total, total - header - 1 - length
    if length == 0 and not c.net_in:  # sdsempty(): its 8 bytes leave 4 of room
        return EMPTY_SDS, EMPTY_SDS - 4
    if length == 0 and int(now) - int(c.last_interaction) > IDLE_FREE_SECONDS:
        return EMPTY_SDS, 0
    if length <= usable_size(IOBUF_LEN + 6) - 6:
        room = IOBUF_LEN  # one read's room (sds header 5 bytes + NUL)
    else:  # later reads grow it greedily
        room = length + IOBUF_LEN
        room = room * 2 if room < GREEDY_MAX else room + GREEDY_MAX
    header = _sds_header(room)
    total = usable_size(header + room + 1)
    return total, max(0, total - header - 1 - length)


def _dict_slots(n: int) -> int:
    return max(4, 1 << (n - 1).bit_length()) if n else 0


def output_list(c: Any) -> tuple[int, int, int]:
    """``(obl, oll, omem)``: the reply buffer's bytes and the reply list Redis would hold."""
    out = len(c.out)
    pending = c.conn.pending_write_bytes() if c.conn is not None else 0
    if pending:  # once the list has blocks, every new reply goes to it
        obl, listed = 0, pending + out
    else:
        obl = min(out, c.buf_size)
        listed = out - obl
    if not listed:
        return obl, 0, 0
    blocks = -(-listed // REPLY_BLOCK)
    return obl, blocks, blocks * (REPLY_BLOCK + REPLY_BLOCK_HEADER + LIST_NODE)


def _multi_state(c: Any) -> tuple[int, int]:
    """MULTI's ``(argv_len_sums, reserved queue bytes)``."""
    queued = c.multi
    if not queued:
        return 0, 0
    sums = 0
    for _, argv in queued:
        sums += sum(map(len, argv)) + POINTER * len(argv)
    alloc = 2
    while alloc < len(queued):
        alloc *= 2
    return sums, alloc * MULTI_CMD


def client_memory(c: Any, argv: list[bytes] | None = None) -> ClientMemory:
    """Redis's figures for client ``c``; ``argv`` is the command it is running, if any."""
    length, bulklen, argc, argv_len = c.parser.mem_state()
    if argv is None and c.blocked is not None:  # a blocked client keeps its arguments
        argv = getattr(c.blocked, "argv", None)
    if argv is not None:
        argc, argv_len = len(argv), sum(map(len, argv))
    qbuf_total, qbuf_free = query_buffer_alloc(c, length, bulklen, time.time())
    obl, oll, omem = output_list(c)
    multi_sums, multi_alloc = _multi_state(c)
    pubsub = (LIST_NODE * len(c.patterns)
              + DICT_ENTRY * len(c.channels) + POINTER * _dict_slots(len(c.channels))
              + DICT_ENTRY * len(c.shard_channels)
              + POINTER * _dict_slots(len(c.shard_channels)))
    tot = (CLIENT_STRUCT + qbuf_total + c.buf_size + omem + argv_len + POINTER * argc
           + multi_sums + multi_alloc + len(c.watched) * (LIST_NODE + WATCHED_KEY) + pubsub)
    input_usage = qbuf_total + argv_len + (usable_size(POINTER * argc) if argc else 0)
    return ClientMemory(length, qbuf_free, argv_len, multi_sums, obl, oll, omem, tot,
                        input_usage)
