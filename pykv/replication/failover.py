"""FAILOVER on a master: pause writes, wait for a replica to catch up, hand over to it.

Redis 7.0's ``failoverCommand``/``updateFailoverStatus``/``abortFailover``: the state goes
``no-failover`` → ``waiting-for-sync`` (writes paused as CLIENT PAUSE WRITE, no PINGs
into the stream) → ``failover-in-progress`` once the target's ACKed offset equals the
master's (or the TIMEOUT passed with FORCE): this server then becomes a replica of the
target, and its link's ``PSYNC`` carries ``FAILOVER`` so that the target promotes itself.
A ``+CONTINUE``/``+FULLRESYNC`` answer ends the failover; anything else, a TIMEOUT without
FORCE or ``FAILOVER ABORT`` undo it (a master again, writes resumed).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from pykv import errors
from pykv.protocol import OK

log = logging.getLogger("pykv")

NO_FAILOVER = "no-failover"
WAIT_FOR_SYNC = "waiting-for-sync"
IN_PROGRESS = "failover-in-progress"


class Failover:
    """``server.replicas.failover``: the one failover a master runs at a time."""

    def __init__(self, server: Any, master: Any) -> None:
        self.server = server
        self.master = master
        self.state = NO_FAILOVER
        self.host: str | None = None
        self.port = 0
        self.end_ms = 0
        self.force = False

    def find(self, host: str, port: int) -> Any:
        """The replica listening on ``host:port`` (Redis's findReplica), or None."""
        for rep in self.master.replicas:
            if rep.ip.lower() == host.lower() and rep.listening_port == port:
                return rep
        return None

    def start(self, host: str | None, port: int, timeout_ms: int, force: bool) -> Any:
        """FAILOVER's checks on the target, then ``waiting-for-sync``."""
        from pykv.replication.master import ONLINE

        if host is not None:
            rep = self.find(host, port)
            if rep is None:
                return errors.FAILOVER_NOT_REPLICA
            if rep.state != ONLINE:
                return errors.FAILOVER_NOT_ONLINE
            log.warning("FAILOVER requested to %s:%d.", host, port)
        else:
            log.warning("FAILOVER requested to any replica.")
        self.host, self.port = host, port
        self.end_ms = int(time.time() * 1000) + timeout_ms if timeout_ms else 0
        self.force = force
        self.state = WAIT_FOR_SYNC
        self.server.pause_for_failover(True)
        return OK

    def update(self) -> None:
        """Hand over once the target caught up, or give up at the deadline."""
        if self.state != WAIT_FOR_SYNC:
            return
        if self.end_ms and self.end_ms <= time.time() * 1000:
            if self.force:
                log.warning("FAILOVER to %s:%d time out exceeded, failing over.",
                            self.host, self.port)
                self._hand_over()
            else:
                self.abort("Replica never caught up before timeout")
            return
        from pykv.replication.master import ONLINE

        self.master.flush_stream()
        offset = self.server.repl.master_repl_offset
        if self.host is not None:
            rep = self.find(self.host, self.port)
        else:
            rep = next((r for r in self.master.replicas if r.state == ONLINE
                        and not r.rdb_only and r.ack_offset == offset), None)
            if rep is not None:
                self.host, self.port = rep.ip, rep.listening_port
        if rep is not None and rep.ack_offset == offset:
            log.warning("Failover target %s:%d is synced, failing over.", self.host, self.port)
            self._hand_over()

    def _hand_over(self) -> None:
        from pykv.replication import role

        self.state = IN_PROGRESS
        role.set_master(self.server, self.host, self.port)

    def psync_answered(self, accepted: bool) -> None:
        """The target's answer to ``PSYNC ... FAILOVER``."""
        if self.state != IN_PROGRESS:
            return
        if accepted:
            self.clear()
        else:
            self.abort("Failover target rejected psync request")

    def abort(self, why: str) -> None:
        """Redis's abortFailover: back to a master (when already handing over), unpaused."""
        if self.state == NO_FAILOVER:
            return
        if self.host is not None:
            log.warning("FAILOVER to %s:%d aborted: %s", self.host, self.port, why)
        else:
            log.warning("FAILOVER to any replica aborted: %s", why)
        if self.state == IN_PROGRESS:
            from pykv.replication import role

            role.unset_master(self.server)
        self.clear()

    def clear(self) -> None:
        self.state = NO_FAILOVER
        self.host = None
        self.port = 0
        self.end_ms = 0
        self.force = False
        self.server.pause_for_failover(False)
