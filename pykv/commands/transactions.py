"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

The dispatcher (``Client.execute``) does the queueing: while ``client.multi`` is a list,
every command but EXEC/DISCARD/MULTI/WATCH/QUIT/RESET is checked (unknown, arity, auth…)
and appended, answering ``QUEUED``; a refused command sets ``multi_dirty`` so EXEC answers
EXECABORT. EXEC then runs the queue through ``Client.call`` with no rollback: a command
failing at run time is just an error element of EXEC's array. Blocking commands run as
their non-blocking forms (``deny_blocking``), as in Redis. WATCH state lives in
``pykv.server.watch``.
"""
from __future__ import annotations

from pykv.commands.registry import command
from pykv.protocol import NULL_ARRAY, OK, ErrorReply, RawReply
from pykv.server.client import NO_REPLY
from pykv.server.watch import discard_transaction

MULTI_NESTED = ErrorReply(b"ERR MULTI calls can not be nested")
EXEC_WITHOUT_MULTI = ErrorReply(b"ERR EXEC without MULTI")
DISCARD_WITHOUT_MULTI = ErrorReply(b"ERR DISCARD without MULTI")
WATCH_IN_MULTI = ErrorReply(b"ERR WATCH inside MULTI is not allowed")
EXECABORT = ErrorReply(b"EXECABORT Transaction discarded because of previous errors.")


@command("multi")
def multi(c, argv):
    if c.multi is not None:
        return MULTI_NESTED
    c.multi = []
    c.multi_dirty = False
    return OK


@command("discard")
def discard(c, argv):
    if c.multi is None:
        return DISCARD_WITHOUT_MULTI
    discard_transaction(c)
    return OK


@command("exec")
def exec_(c, argv):
    if c.multi is None:
        return EXEC_WITHOUT_MULTI
    watches = c.server.watches
    if c.watched and not c.watch_dirty and watches.any_expired(c):
        c.watch_dirty = True
    if c.multi_dirty or c.watch_dirty:
        aborted = c.multi_dirty
        discard_transaction(c)
        return EXECABORT if aborted else NULL_ARRAY
    queue = c.multi
    discard_transaction(c)  # leaves MULTI and unwatches before running, as Redis does
    cluster = c.server.cluster
    if cluster is not None:  # the one slot the transaction's scripts share (script_cluster)
        c.exec_slot = cluster.first_slot(queue)
    c.add_reply(RawReply(b"*%d\r\n" % len(queue)))
    was_denying = c.deny_blocking
    c.deny_blocking = True
    marks = c.server.begin_effects(c.db_index)
    # the ACL rules may have changed since the commands were queued (pykv.acl)
    acl_user = c.acl_user if c.acl_restricted else None
    try:
        for cmd, qargv in queue:
            if acl_user is not None:
                err = acl_user.deny_in_exec(c, cmd, qargv, c.server.commands.get(b"exec"))
                if err is not None:
                    c.server.count_error(err)
                    c.add_reply(err)
                    continue
            c.call(cmd, qargv)
    finally:
        if cluster is not None:
            c.exec_slot = None
        c.deny_blocking = was_denying
        c.server.end_effects(marks)  # several writes are propagated inside MULTI ... EXEC
        if marks is not None:
            c.woff = c.server.repl_offset  # what WAIT waits for
    return NO_REPLY


@command("watch")
def watch(c, argv):
    if c.multi is not None:
        return WATCH_IN_MULTI
    if c.watch_dirty:
        return OK  # no point in watching more: EXEC will fail anyway
    watches = c.server.watches
    for key in argv[1:]:
        watches.watch(c, key)
    return OK


@command("unwatch")
def unwatch(c, argv):
    c.server.watches.unwatch_all(c)
    c.watch_dirty = False
    return OK
