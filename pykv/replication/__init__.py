"""Replication: pykv as a PSYNC2 master and as a replica, interoperable with Redis 7.0.

``state`` holds what both roles share (the replication ids, the offset, the backlog);
the master side serves SYNC/PSYNC/REPLCONF to replicas and feeds them the effects stream,
the replica side connects to a master, loads its RDB and applies its stream. The
composition root (``pykv.assemble``) installs it into the server's slots.
"""
