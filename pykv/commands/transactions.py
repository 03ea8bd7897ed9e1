"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

The dispatcher (``ClientCore.execute``) does the queueing: while ``client.multi`` is a
list, every command but EXEC/DISCARD/MULTI/WATCH/QUIT/RESET is checked (unknown, arity,
auth…) and appended as ``(command, argv)``, answering ``QUEUED``; a refused command sets
``multi_dirty`` so EXEC answers EXECABORT. EXEC checks the watches here, then
``ClientCore.run_transaction`` runs the queue through ``ClientCore.call`` with no
rollback: a command failing at run time is just an error element of EXEC's array.
Blocking commands run as their non-blocking forms (``deny_blocking``), as in Redis. WATCH
state lives in ``pykv.server.watch``. Compiled (setup.py), with the client as a C type
(transactions.pxd).
"""
from __future__ import annotations

from typing import Any

from pykv.commands.registry import command
from pykv.protocol import NULL_ARRAY, OK, ErrorReply

MULTI_NESTED = ErrorReply(b"ERR MULTI calls can not be nested")
EXEC_WITHOUT_MULTI = ErrorReply(b"ERR EXEC without MULTI")
DISCARD_WITHOUT_MULTI = ErrorReply(b"ERR DISCARD without MULTI")
WATCH_IN_MULTI = ErrorReply(b"ERR WATCH inside MULTI is not allowed")
EXECABORT = ErrorReply(b"EXECABORT Transaction discarded because of previous errors.")


@command("multi")
def multi(c, argv):
    return _multi(c)


def _multi(c: Any) -> Any:
    if c.multi is not None:
        return MULTI_NESTED
    c.multi = []
    c.multi_dirty = False
    return OK


@command("discard")
def discard(c, argv):
    if c.multi is None:
        return DISCARD_WITHOUT_MULTI
    c.discard_transaction()
    return OK


@command("exec")
def exec_(c, argv):
    return _exec(c)


def _exec(c: Any) -> Any:
    queue = c.multi
    if queue is None:
        return EXEC_WITHOUT_MULTI
    if c.watched and not c.watch_dirty and _watches(c).any_expired(c):
        c.watch_dirty = True
    if c.multi_dirty or c.watch_dirty:
        aborted = c.multi_dirty
        c.discard_transaction()
        return EXECABORT if aborted else NULL_ARRAY
    c.discard_transaction()  # leaves MULTI and unwatches before running, as Redis does
    return c.run_transaction(queue)


def _watches(c: Any) -> Any:
    """The server's ``pykv.server.watch.Watches`` (a Python attribute of the server)."""
    server: Any = c.server
    return server.watches


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
