"""Replication commands, master side: SYNC, PSYNC, REPLCONF, WAIT and ROLE.

The work is in ``pykv.replication.master`` (``server.replicas``); these handlers parse
and answer as Redis 7.0's ``replication.c`` does. A server that is itself a replica has
``server.master_link`` (the replica side), which ROLE and WAIT defer to.
"""
from __future__ import annotations

import shlex

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply
from pykv.server.blocking import TIMEOUT_NEGATIVE
from pykv.server.client import NO_REPLY

_TIMEOUT_NOT_INTEGER = ErrorReply(b"ERR timeout is not an integer or out of range")
_RDB_ONLY_RANGE = ErrorReply(b"ERR value is out of range, value must between 0 and 1")
_MISSING_FILTER = ErrorReply(b"ERR Missing rdb-filter-only values")
_CENTURY_MS = 100 * 365 * 86400 * 1000
_NET_HOST_STR_LEN = 256


@command("sync", "psync")
def sync(c, argv):
    return c.server.replicas.sync_command(c, argv)


@command("replconf")
def replconf(c, argv):
    if len(argv) % 2 == 0:
        return errors.SYNTAX
    master = c.server.replicas
    for j in range(1, len(argv), 2):
        option, value = argv[j].lower(), argv[j + 1]
        if option == b"listening-port":
            port = to_int(value)
            if port is None:
                return errors.NOT_INTEGER
            master.replica_of(c).listening_port = port
        elif option == b"ip-address":
            if len(value) >= _NET_HOST_STR_LEN:
                return errors.replconf_ip_too_long(len(value))
            master.replica_of(c).ip_address = value.decode("latin-1")
        elif option == b"capa":
            low = value.lower()
            if low == b"eof":
                master.replica_of(c).capa_eof = True
            elif low == b"psync2":
                master.replica_of(c).capa_psync2 = True
        elif option == b"ack":
            offset = to_int(value)
            if getattr(c, "is_replica", False) and offset is not None:
                master.ack(c, offset)
            return NO_REPLY  # never answered
        elif option == b"getack":
            link = getattr(c.server, "master_link", None)
            if link is not None and hasattr(link, "send_ack"):
                link.send_ack()
            return NO_REPLY
        elif option == b"rdb-only":
            flag = to_int(value)
            if flag is None:
                return errors.NOT_INTEGER
            if flag not in (0, 1):
                return _RDB_ONLY_RANGE
            master.replica_of(c).rdb_only = flag == 1
        elif option == b"rdb-filter-only":
            try:
                filters = shlex.split(value.decode("latin-1"))
            except ValueError:
                return _MISSING_FILTER
            rep = master.replica_of(c)
            rep.exclude_data = True  # by default the filter leaves everything out
            rep.include_functions = False
            for name in filters:
                if name.lower() != "functions":
                    return errors.rdb_filter_unsupported(name.encode("latin-1"))
                rep.include_functions = True
        else:
            return errors.replconf_unrecognized(argv[j])
    return OK


@command("wait")
def wait(c, argv):
    if getattr(c.server, "master_link", None) is not None:
        return errors.WAIT_ON_REPLICA
    numreplicas = to_int(argv[1])
    if numreplicas is None:
        raise errors.NOT_INTEGER
    timeout = to_int(argv[2])
    if timeout is None:
        raise _TIMEOUT_NOT_INTEGER
    if timeout < 0:
        raise TIMEOUT_NEGATIVE
    # a timeout of centuries is "forever", as 0 is
    deadline = c.server.clock.ms + timeout if 0 < timeout < _CENTURY_MS else 0
    return c.server.replicas.wait(c, numreplicas, deadline)


@command("role")
def role(c, argv):
    link = getattr(c.server, "master_link", None)
    if link is not None:
        return link.role_reply()
    master = c.server.replicas
    master.flush_stream()
    return [b"master", master.repl.master_repl_offset, master.role_replicas()]
