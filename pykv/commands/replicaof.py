"""REPLICAOF / SLAVEOF: replicate a master, or (``NO ONE``) become a master again.

The work is pykv.replication.role's (Redis's replicationSetMaster/UnsetMaster); this
module parses the arguments and answers as Redis 7.0 does.
"""
from __future__ import annotations

import logging

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.registry import command
from pykv.protocol import OK, SimpleString
from pykv.replication import role
from pykv.server.client_info import client_info_line

log = logging.getLogger("pykv")
_ALREADY = SimpleString(errors.ALREADY_CONNECTED)


@command("replicaof", "slaveof")
def replicaof(c, argv):
    server = c.server
    host, port_arg = argv[1], argv[2]
    if host.lower() == b"no" and port_arg.lower() == b"one":
        if server.master_link is not None:
            role.unset_master(server)
            log.warning("MASTER MODE enabled (user request from '%s')", client_info_line(c))
        return OK
    if getattr(c, "is_replica", False):
        return errors.REPLICAOF_BY_REPLICA
    port = to_int(port_arg)
    if port is None or not 0 <= port <= 65535:
        return errors.INVALID_MASTER_PORT
    name = host.decode("utf-8", "surrogateescape")
    link = server.master_link
    if link is not None and link.host.lower() == name.lower() and link.port == port:
        log.warning("REPLICAOF would result into synchronization with the master we are "
                    "already connected with. No operation performed.")
        return _ALREADY
    role.set_master(server, name, port)
    log.warning("REPLICAOF %s:%d enabled (user request from '%s')", name, port,
                client_info_line(c))
    return OK
