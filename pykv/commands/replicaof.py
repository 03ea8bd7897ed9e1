"""REPLICAOF / SLAVEOF: replicate a master, or (``NO ONE``) become a master again; FAILOVER.

The work is pykv.replication.role's (Redis's replicationSetMaster/UnsetMaster); this
module parses the arguments and answers as Redis 7.0 does. FAILOVER's checks and errors
are here; the failover itself (pausing writes, waiting for the target's offset, handing
over with ``PSYNC ... FAILOVER``) is the master side's (pykv.replication.failover).
"""
from __future__ import annotations

import logging

from pykv import errors
from pykv.commands.args import parse_int, to_int
from pykv.commands.registry import command
from pykv.protocol import OK, SimpleString
from pykv.replication import role
from pykv.server.client_info import client_info_line

log = logging.getLogger("pykv")
_ALREADY = SimpleString(errors.ALREADY_CONNECTED)


@command("replicaof", "slaveof")
def replicaof(c, argv):
    server = c.server
    if getattr(server, "cluster", None) is not None:
        return errors.REPLICAOF_IN_CLUSTER
    if getattr(getattr(server, "replicas", None), "failover_state", "no-failover") \
            != "no-failover":
        return errors.REPLICAOF_DURING_FAILOVER
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


@command("failover")
def failover(c, argv):
    """Redis 7.0's failoverCommand: its checks in its order, then the master side's."""
    server = c.server
    if getattr(server, "cluster", None) is not None:
        return errors.FAILOVER_IN_CLUSTER
    replicas = getattr(server, "replicas", None)
    state = getattr(replicas, "failover_state", "no-failover")
    if len(argv) == 2 and argv[1].lower() == b"abort":  # ABORT goes with nothing else
        if state == "no-failover":
            return errors.NO_FAILOVER
        replicas.abort_failover()
        return OK
    timeout = 0
    force = False
    host = None
    port = 0
    i = 1
    while i < len(argv):
        word = argv[i].lower()
        if word == b"to" and i + 2 < len(argv) and host is None:
            port = parse_int(argv[i + 2])
            host = argv[i + 1].decode("utf-8", "surrogateescape")
            i += 3
        elif word == b"timeout" and i + 1 < len(argv) and timeout == 0:
            timeout = parse_int(argv[i + 1])
            if timeout <= 0:
                return errors.FAILOVER_TIMEOUT
            i += 2
        elif word == b"force" and not force:
            force = True
            i += 1
        else:
            return errors.SYNTAX
    if state != "no-failover":
        return errors.FAILOVER_IN_PROGRESS
    if server.master_link is not None:
        return errors.FAILOVER_ON_REPLICA
    if replicas is None or not replicas.replicas:
        return errors.FAILOVER_NO_REPLICAS
    if force and (not timeout or host is None):
        return errors.FAILOVER_FORCE
    return replicas.start_failover(host, port, timeout, force)
