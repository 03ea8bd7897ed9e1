"""Replica elections and manual failover: Redis 7.0's clusterHandleSlaveFailover,
clusterSendFailoverAuthIfNeeded, clusterFailoverReplaceYourMaster and the CLUSTER FAILOVER
handshake (MFSTART, the master's write pause, the PAUSED offset, mf_can_start).

A replica whose master is FAIL (or that runs a manual failover) waits 500-1000 ms plus one
second per better-placed replica (its rank by replication offset), bumps currentEpoch and
broadcasts FAILOVER_AUTH_REQUEST; masters serving slots vote with FAILOVER_AUTH_ACK, once
per epoch and once per failed master every node-timeout * 2; a majority of the masters
serving slots makes the replica the master of its old master's slots under the election's
epoch, announced with a PONG to every node. Data older than node-timeout *
cluster-replica-validity-factor (plus repl-ping-replica-period) disqualifies a replica
unless the failover is manual; ``cluster-replica-no-failover`` keeps it out of automatic
elections.

A replica of the master with the most replicas moves to a master left without any (one
that had some: MIGRATE_TO) when its own master keeps more than cluster-migration-barrier
working replicas (clusterHandleSlaveMigration).
"""
from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

from pykv.cluster import bus_codec as bc
from pykv.cluster.state import STATE_OK, ClusterNode, bit_ranges, mstime

if TYPE_CHECKING:
    from pykv.cluster.bus import ClusterBus, Handler

log = logging.getLogger("pykv")

MF_TIMEOUT = 5000  # CLUSTER_MF_TIMEOUT
MF_PAUSE_MULT = 2  # CLUSTER_MF_PAUSE_MULT
MIGRATION_DELAY = 5000  # CLUSTER_SLAVE_MIGRATION_DELAY

# clusterCantFailoverReason codes and texts (logged every 10 s when unchanged)
CANT_NONE, CANT_DATA_AGE, CANT_WAITING_DELAY, CANT_EXPIRED, CANT_WAITING_VOTES = range(5)
_CANT_TEXTS = {
    CANT_DATA_AGE: "Disconnected from master for longer than allowed. Please check the "
                   "'cluster-replica-validity-factor' configuration option.",
    CANT_WAITING_DELAY: "Waiting the delay before I can start a new failover.",
    CANT_EXPIRED: "Failover attempt expired.",
    CANT_WAITING_VOTES: "Waiting for votes, but majority still not reached.",
}
CANT_LOG_PERIOD = 10_000


class Election:
    """``bus.failover``: this node's part in elections, as replica and as voting master."""

    def __init__(self, bus: ClusterBus) -> None:
        self.bus = bus
        self.auth_time = 0  # when the current/next election starts (ms)
        self.auth_count = 0
        self.auth_sent = False
        self.auth_rank = 0
        self.auth_epoch = 0
        self.cant_reason = CANT_NONE
        self.cant_logged_at = 0
        self.cant_logged_reason = CANT_NONE
        # manual failover (both sides)
        self.mf_end = 0
        self.mf_replica: ClusterNode | None = None  # master side: who asked
        self.mf_can_start = False
        self.mf_master_offset = -1
        self.paused = False

    # -- manual failover --------------------------------------------------------------------
    def reset_manual(self) -> None:
        """resetManualFailover: the master's write pause ends whatever the outcome."""
        if self.paused:
            self.paused = False
            self.bus.pause_writes(False)
        self.mf_end = 0
        self.mf_can_start = False
        self.mf_replica = None
        self.mf_master_offset = -1

    def start_manual(self, mode: str) -> None:
        """CLUSTER FAILOVER [FORCE|TAKEOVER] after its checks (mode "", "force", "takeover")."""
        bus = self.bus
        self.reset_manual()
        self.mf_end = mstime() + MF_TIMEOUT
        if mode == "takeover":
            log.warning("Taking over the master (user request).")
            bus.bump_epoch()
            self.replace_my_master()
        elif mode == "force":
            log.warning("Forced failover user request accepted.")
            self.mf_can_start = True
        else:
            log.warning("Manual failover user request accepted.")
            master = bus.myself.slaveof
            if master is not None and master.link is not None:
                bus.send(master.link, bus.header(bc.MFSTART))

    def on_mfstart(self, sender: ClusterNode | None, handler: Handler) -> None:
        """A replica of ours asks for a manual failover: pause writes, tell it our offset."""
        bus = self.bus
        if sender is None or sender.slaveof is not bus.myself:
            return
        self.reset_manual()
        self.mf_end = mstime() + MF_TIMEOUT
        self.mf_replica = sender
        self.paused = True
        bus.pause_writes(True, MF_TIMEOUT * MF_PAUSE_MULT)
        log.warning("Manual failover requested by replica %s.", sender.name)
        # this PING carries the PAUSED flag and the offset the replica must reach
        bus.send_ping(handler if sender.link is None else sender.link, bc.PING)

    def on_paused_offset(self, sender: ClusterNode, msg: bc.Message) -> None:
        """Our master says it is paused at ``msg.offset``."""
        me = self.bus.myself
        if self.mf_end and me.is_replica and me.slaveof is sender and \
                msg.mflags[0] & bc.MF_PAUSED and self.mf_master_offset == -1:
            self.mf_master_offset = sender.repl_offset
            log.warning("Received replication offset for paused master manual failover: %d",
                        self.mf_master_offset)
            self.handle_manual()

    def handle_manual(self) -> None:
        """clusterHandleManualFailover: the failover may start once we applied all the
        stream the paused master produced."""
        if not self.mf_end or self.mf_can_start or self.mf_master_offset == -1:
            return
        if self.mf_master_offset == self.bus.replica_offset():
            self.mf_can_start = True
            log.warning("All master replication stream processed, manual failover can start.")
            self.handle_replica_failover()

    def check_manual_timeout(self) -> None:
        if self.mf_end and self.mf_end < mstime():
            log.warning("Manual failover timed out.")
            self.reset_manual()

    # -- the replica side --------------------------------------------------------------------
    def rank(self) -> int:
        """clusterGetSlaveRank: replicas of our master with a greater offset than ours."""
        me = self.bus.myself
        master = me.slaveof
        if master is None:
            return 0
        mine = self.bus.replica_offset()
        return sum(1 for r in master.replicas if r is not me and
                   not r.flags & bc.F_NOFAILOVER and r.repl_offset > mine)

    def _cant(self, reason: int) -> None:
        """clusterLogCantFailover."""
        now = mstime()
        if reason == self.cant_logged_reason and now - self.cant_logged_at < CANT_LOG_PERIOD:
            return
        self.cant_logged_reason = reason
        self.cant_reason = reason
        master = self.bus.myself.slaveof
        if master is not None and master.failed and \
                now - master.fail_time < self.bus.node_timeout * 2:
            return  # too soon after the FAIL to make noise
        self.cant_logged_at = now
        log.warning("Currently unable to failover: %s", _CANT_TEXTS[reason])

    def handle_replica_failover(self) -> None:
        """clusterHandleSlaveFailover (every cron tick, and when a vote arrives)."""
        bus = self.bus
        me = bus.myself
        master = me.slaveof
        now = mstime()
        timeout = bus.node_timeout
        auth_age = now - self.auth_time
        needed = bus.state.size // 2 + 1
        manual = bool(self.mf_end) and self.mf_can_start
        auth_timeout = max(timeout * 2, 2000)
        auth_retry = auth_timeout * 2
        if me.is_master or master is None or (not master.failed and not manual) or \
                (bus.config.cluster_replica_no_failover and not manual) or \
                master.numslots == 0:
            self.cant_reason = CANT_NONE
            return
        data_age = bus.master_data_age()
        if data_age > timeout:
            data_age -= timeout
        factor = int(bus.config.cluster_replica_validity_factor)
        if factor and data_age > int(bus.config.repl_ping_replica_period) * 1000 + \
                timeout * factor and not manual:
            self._cant(CANT_DATA_AGE)
            return
        if auth_age > auth_retry:
            self.auth_time = now + 500 + random.randrange(500)
            self.auth_count = 0
            self.auth_sent = False
            self.auth_rank = self.rank()
            self.auth_time += self.auth_rank * 1000
            if self.mf_end:
                self.auth_time = now
                self.auth_rank = 0
            log.warning("Start of election delayed for %d milliseconds (rank #%d, offset "
                        "%d).", self.auth_time - now, self.auth_rank, bus.replica_offset())
            bus.broadcast_pong(local_replicas=True)
            if self.mf_end:
                bus.call_soon(self.handle_replica_failover)
            return
        if not self.auth_sent and not self.mf_end:
            new_rank = self.rank()
            if new_rank > self.auth_rank:
                added = (new_rank - self.auth_rank) * 1000
                self.auth_time += added
                self.auth_rank = new_rank
                log.warning("Replica rank updated to #%d, added %d milliseconds of delay.",
                            new_rank, added)
        if now < self.auth_time:
            self._cant(CANT_WAITING_DELAY)
            return
        if auth_age > auth_timeout:
            self._cant(CANT_EXPIRED)
            return
        if not self.auth_sent:
            bus.state.current_epoch += 1
            self.auth_epoch = bus.state.current_epoch
            log.warning("Starting a failover election for epoch %d.", self.auth_epoch)
            msg = bus.header(bc.FAILOVER_AUTH_REQUEST)
            if self.mf_end:
                msg.mflags = bytes([bc.MF_FORCEACK, 0, 0])
            bus.broadcast(msg)
            self.auth_sent = True
            bus.save_config()
            return
        if self.auth_count >= needed:
            log.warning("Failover election won: I'm the new master.")
            if me.config_epoch < self.auth_epoch:
                me.config_epoch = self.auth_epoch
                log.warning("configEpoch set to %d after successful failover",
                            me.config_epoch)
            self.replace_my_master()
        else:
            self._cant(CANT_WAITING_VOTES)

    def on_auth_ack(self, sender: ClusterNode | None, msg: bc.Message) -> None:
        if sender is None:
            return
        if sender.is_master and sender.numslots > 0 and msg.current_epoch >= self.auth_epoch:
            self.auth_count += 1
            self.bus.call_soon(self.handle_replica_failover)

    def replace_my_master(self) -> None:
        """clusterFailoverReplaceYourMaster: its slots are ours, everyone hears it."""
        bus = self.bus
        me = bus.myself
        old = me.slaveof
        if me.is_master or old is None:
            return
        bus.set_node_as_master(me)
        bus.stop_replicating()
        state = bus.state
        for slot, owner in enumerate(state.slots):
            if owner is old:
                state.del_slot(slot)
                state.add_slot(me, slot)
        bus.update_state()
        bus.save_config()
        bus.broadcast_pong(local_replicas=False)
        self.reset_manual()

    # -- the master side ---------------------------------------------------------------------
    def on_auth_request(self, node: ClusterNode | None, msg: bc.Message) -> None:
        """clusterSendFailoverAuthIfNeeded: our vote, when the rules allow it."""
        bus = self.bus
        me = bus.myself
        state = bus.state
        if node is None or me.is_replica or me.numslots == 0:
            return
        master = node.slaveof
        force_ack = bool(msg.mflags[0] & bc.MF_FORCEACK)
        if msg.current_epoch < state.current_epoch:
            log.warning("Failover auth denied to %s: reqEpoch (%d) < curEpoch(%d)",
                        node.name, msg.current_epoch, state.current_epoch)
            return
        if state.last_vote_epoch == state.current_epoch:
            log.warning("Failover auth denied to %s: already voted for epoch %d", node.name,
                        state.current_epoch)
            return
        if node.is_master or master is None or (not master.failed and not force_ack):
            if node.is_master:
                why = "it is a master node"
            elif master is None:
                why = "I don't know its master"
            else:
                why = "its master is up"
            log.warning("Failover auth denied to %s: %s", node.name, why)
            return
        now = mstime()
        if now - master.voted_time < bus.node_timeout * 2:
            log.warning("Failover auth denied to %s: can't vote about this master before %d "
                        "milliseconds", node.name,
                        bus.node_timeout * 2 - (now - master.voted_time))
            return
        claimed = int.from_bytes(msg.myslots, "little")
        for first, last in bit_ranges(claimed):
            for slot in range(first, last + 1):
                owner = state.slots[slot]
                if owner is None or owner.config_epoch <= msg.config_epoch:
                    continue
                log.warning("Failover auth denied to %s: slot %d epoch (%d) > reqEpoch (%d)",
                            node.name, slot, owner.config_epoch, msg.config_epoch)
                return
        state.last_vote_epoch = state.current_epoch
        master.voted_time = now
        bus.save_config()
        if node.link is not None:
            bus.send(node.link, bus.header(bc.FAILOVER_AUTH_ACK))
        log.warning("Failover auth granted to %s for epoch %d", node.name,
                    state.current_epoch)

    # -- replica migration -------------------------------------------------------------------
    def migrate_if_needed(self) -> None:
        """clusterCron's census and clusterHandleSlaveMigration: a replica of the master
        with the most working replicas (beyond cluster-migration-barrier), the one with the
        smallest name among them, moves to a master left without replicas for 5 s."""
        bus = self.bus
        me = bus.myself
        mymaster = me.slaveof
        nodes = list(bus.state.nodes.values())
        orphaned = max_ok = mine = 0
        for node in nodes:
            if node.is_master and not node.failed:
                ok = _working_replicas(node)
                if ok == 0 and node.numslots > 0 and node.flags & bc.F_MIGRATE_TO:
                    orphaned += 1
                max_ok = max(max_ok, ok)
                if node is mymaster:
                    mine = ok
        if not orphaned or max_ok < 2 or mine != max_ok or \
                not bus.config.cluster_allow_replica_migration:
            return
        if bus.state.state != STATE_OK or mymaster is None:
            return
        ok_mine = sum(1 for r in mymaster.replicas if not r.failed and not r.timed_out)
        if ok_mine <= int(bus.config.cluster_migration_barrier):
            return
        target = None
        candidate = me
        now = mstime()
        for node in nodes:
            ok = _working_replicas(node) if node.is_master else 0
            orphan = node.is_master and not node.failed and \
                bool(node.flags & bc.F_MIGRATE_TO) and ok == 0
            if orphan:
                if target is None and node.numslots > 0:
                    target = node
                if not node.orphaned_time:
                    node.orphaned_time = now
            else:
                node.orphaned_time = 0
            if ok == max_ok:
                for replica in node.replicas:
                    if replica.name < candidate.name:
                        candidate = replica
        if target is not None and candidate is me and \
                now - target.orphaned_time > MIGRATION_DELAY:
            log.warning("Migrating to orphaned master %s", target.name)
            bus.set_my_master(target)
            bus.save_config()

    # -- cron ---------------------------------------------------------------------------------
    def cron(self) -> None:
        self.check_manual_timeout()
        if self.bus.myself.is_replica:
            self.handle_manual()
            self.handle_replica_failover()
            self.migrate_if_needed()


def _working_replicas(node: ClusterNode) -> int:
    """clusterCountNonFailingSlaves."""
    return sum(1 for r in node.replicas if not r.failed)

