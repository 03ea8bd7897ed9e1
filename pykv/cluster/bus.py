"""The cluster bus protocol: Redis 7.0's clusterProcessPacket, clusterCron, clusterSendPing
and the failure detector.

``ClusterBus`` owns the ``ClusterState`` and the links (``pykv.net.cluster_bus``). Every
100 ms the cron connects to known nodes without a link (a MEET to nodes met by CLUSTER
MEET, else a PING), pings a random node each second and any node not pinged for half the
node timeout, flags nodes PFAIL after the node timeout, drops stale handshakes, and
updates the cluster state. Received messages: PING/MEET are answered with a PONG;
PING/PONG/MEET carry the sender's role (master, or replica of the node in ``slaveof``),
epochs and slots (slot ownership moves to the higher config epoch; a stale claimer gets an
UPDATE; a master left without slots becomes a replica of the node that took them) and
gossip (new nodes are learnt, failure reports of masters collected: PFAIL turns into FAIL
with a majority of masters, and the FAIL is broadcast); FAIL, UPDATE and
PUBLISH/PUBLISHSHARD are applied. Elections and manual failover (FAILOVER_AUTH_*, MFSTART)
are ``pykv.cluster.failover``'s; replication itself is reached through the callbacks
``pykv.cluster.install`` plugs in (``replicate``, ``stop_replicating``...).
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from pykv.cluster import bus_codec as bc
from pykv.cluster import nodes_conf, ports
from pykv.cluster.bus_tls import BusTls
from pykv.cluster.failover import Election
from pykv.cluster.state import (
    STATE_FAIL,
    STATE_OK,
    ClusterNode,
    ClusterState,
    bit_ranges,
    mstime,
    random_name,
)
from pykv.net import cluster_bus

log = logging.getLogger("pykv")

PORT_INCR = ports.PORT_INCR
WRITABLE_DELAY_MS = 2000
MIN_REJOIN_DELAY, MAX_REJOIN_DELAY = 500, 5000
FAIL_REPORT_VALIDITY_MULT = 2
FAIL_UNDO_TIME_MULT = 2
BLACKLIST_TTL = 60
CRON_PERIOD = 0.1

TODO_UPDATE_STATE, TODO_SAVE_CONFIG, TODO_FSYNC_CONFIG = 1, 2, 4


def _frame_length(head: bytes) -> int:
    return bc.frame_length(head)


class Handler:
    """What a bus link reports to: the bus, with the link's node."""

    def __init__(self, bus: ClusterBus, link: cluster_bus.BusLink,
                 node: ClusterNode | None) -> None:
        self.bus = bus
        self.link = link
        self.node = node

    def on_message(self, data: bytes) -> None:
        try:
            self.bus.process(self, data)
        except Exception:  # a peer's message must never take the node down
            log.exception("Error processing a cluster bus message")

    def on_bad_frame(self, reason: str) -> None:
        log.warning("Bad message length or signature received from Cluster bus. (%s)",
                    reason)

    def on_close(self) -> None:
        self.bus.link_closed(self)


class ClusterBus:
    """The cluster side of one node."""

    def __init__(self, server: Any, state: ClusterState, config_file: str) -> None:
        self.server = server
        self.config = server.config
        self.state = state
        self.config_file = config_file
        self.listener: cluster_bus.BusListener | None = None
        self.tls = BusTls(server.config)  # the bus's TLS contexts (tls-cluster yes)
        self.handlers: set[Handler] = set()  # every live link, both directions
        self.todo = 0
        self._todo_scheduled = False
        self.save_pending = False  # a change to write to nodes.conf at the next cron tick
        self.iteration = 0
        self.first_update_call = 0
        self.among_minority_time = 0
        self.pings_sent = 0
        self.stats_pfail_nodes = 0
        self._cron_handle: asyncio.TimerHandle | None = None
        self._connecting: set[str] = set()
        # PUBLISH/PUBLISHSHARD received from a peer: delivered to local subscribers
        self.deliver_publish: Callable[[bytes, bytes, bool], None] | None = None
        self.count_keys_in_slot: Callable[[int], int] = lambda slot: 0
        self.del_keys_in_slot: Callable[[int], int] = lambda slot: 0
        # replication, plugged in by pykv.cluster.install (REPLICAOF host port / NO ONE)
        self.replicate: Callable[[str, int], None] = lambda host, port: None
        self.stop_replicating: Callable[[], None] = lambda: None
        self.is_replicating: Callable[[], bool] = lambda: False
        self.replica_offset: Callable[[], int] = lambda: 0
        self.master_data_age: Callable[[], int] = lambda: 0  # ms since the master spoke
        self.pause_writes: Callable[..., None] = lambda on, ms=0: None
        self.failover = Election(self)

    @property
    def myself(self) -> ClusterNode:
        return self.state.myself

    @property
    def node_timeout(self) -> int:
        return int(self.config.cluster_node_timeout)

    # -- start / stop ---------------------------------------------------------------------
    def bind(self) -> list:
        """Bind the bus port (the client port + 10000, or cluster-port; the client port is
        tls-port with tls-cluster): Redis aborts when it can't."""
        cfg = self.config
        if not cfg.cluster_port and ports.base_port(cfg) > 65535 - PORT_INCR:
            raise ValueError("Redis port number too high. Cluster communication port is "
                             "10,000 port numbers higher than your Redis port. Your Redis "
                             "port number must be 55535 or less.")
        port = ports.bus_port(cfg)
        try:
            return cluster_bus.bind(list(cfg.bind), port, int(getattr(cfg, "tcp_backlog", 511)))
        except OSError:
            raise ValueError(f"Failed listening on port {port} (cluster), aborting.") from None

    async def start(self, socks: list, tls: Any = None) -> None:
        """Serve the bus on ``socks`` (over TLS with the ``tls`` context)."""
        port = socks[0].getsockname()[1] if socks else 0
        self.listener = await cluster_bus.serve(socks, _frame_length, self._accept, port, tls)
        self._schedule_cron()
        self.update_state()

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.close()
        if self._cron_handle is not None:
            self._cron_handle.cancel()
        for handler in list(self.handlers):
            handler.link.close()

    def _schedule_cron(self) -> None:
        loop = asyncio.get_running_loop()
        self._cron_handle = loop.call_later(CRON_PERIOD, self._cron_tick)

    def _cron_tick(self) -> None:
        try:
            self.cron()
        except Exception:
            log.exception("Error in the cluster cron")
        self._schedule_cron()

    # -- announced address ----------------------------------------------------------------
    def announced_ports(self) -> tuple[int, int, int]:
        return ports.announced_ports(self.config)

    def refresh_myself(self) -> None:
        """Follow the announce-* configs (Redis's clusterUpdateMyselfAnnounced...)."""
        me = self.myself
        me.port, me.pport, me.cport = self.announced_ports()
        hostname = self.config.cluster_announce_hostname or ""
        if hostname != me.hostname:
            me.hostname = hostname
            self.todo_later(TODO_SAVE_CONFIG)
        flags = (me.flags & ~bc.F_NOFAILOVER) | \
            (bc.F_NOFAILOVER if self.config.cluster_replica_no_failover else 0)
        if flags != me.flags:  # clusterUpdateMyselfFlags
            me.flags = flags
            self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
        if self.config.cluster_announce_ip and me.ip != self.config.cluster_announce_ip:
            me.ip = self.config.cluster_announce_ip
            self.todo_later(TODO_SAVE_CONFIG)

    # -- before-sleep work ----------------------------------------------------------------
    def todo_later(self, flags: int) -> None:
        self.todo |= flags
        if not self._todo_scheduled:
            self._todo_scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self.before_sleep)
            except RuntimeError:
                self.before_sleep()

    def before_sleep(self) -> None:
        self._todo_scheduled = False
        todo, self.todo = self.todo, 0
        if todo & TODO_UPDATE_STATE:
            self.update_state()
        if todo & TODO_FSYNC_CONFIG:
            self.save_config()
        elif todo & TODO_SAVE_CONFIG:
            # a change Redis saves without fsync: written by the next cron tick (<= 100 ms),
            # since replacing the file costs milliseconds (ext4 flushes a file renamed
            # over another) and a reshard makes several such changes per slot
            self.save_pending = True

    def save_config(self, fsync: bool = True) -> bool:
        """clusterSaveConfig (fsynced unless only a save was asked for, as in Redis)."""
        self.save_pending = False
        try:
            nodes_conf.save(self.state, self.config_file, fsync)
            return True
        except OSError as exc:
            log.warning("Could not save the cluster configuration: %s", exc)
            return False

    # -- links ----------------------------------------------------------------------------
    def _max_message(self) -> int:
        """The largest message a peer may send: a PUBLISH of a channel and a message of
        proto-max-bulk-len each (what Redis itself could send); longer closes the link."""
        return 2 * int(self.config.proto_max_bulk_len) + bc.HEADER_LEN + 8

    def _accept(self, link: cluster_bus.BusLink) -> None:
        link.max_message = self._max_message()
        handler = Handler(self, link, None)
        link.handler = handler
        self.handlers.add(handler)

    def link_closed(self, handler: Handler) -> None:
        self.handlers.discard(handler)
        node = handler.node
        if node is None:
            return
        if node.link is handler:
            node.link = None
        if node.inbound_link is handler:
            node.inbound_link = None

    def free_link(self, handler: Handler | None) -> None:
        if handler is None:
            return
        handler.link.close()
        self.link_closed(handler)

    def _connect(self, node: ClusterNode) -> None:
        if node.name in self._connecting or not node.ip:
            return
        self._connecting.add(node.name)
        asyncio.get_running_loop().create_task(self._connect_task(node))

    async def _connect_task(self, node: ClusterNode) -> None:
        try:
            link = await cluster_bus.connect(node.ip, node.cport, _frame_length,
                                             max(self.node_timeout, 1000) / 1000,
                                             self.tls.link_context())
        except (TimeoutError, OSError, ValueError) as exc:  # (TlsConfigError: ValueError)
            log.debug("Connection with Node %s at %s:%d failed: %s", node.name, node.ip,
                      node.cport, exc)
            # as Redis on a failed connect: failure detection needs a ping "in flight"
            if node.ping_sent == 0:
                node.ping_sent = mstime()
            return
        finally:
            self._connecting.discard(node.name)
        if self.state.nodes.get(node.name) is not node or node.link is not None:
            link.close()
            return
        link.max_message = self._max_message()
        handler = Handler(self, link, node)
        link.handler = handler
        self.handlers.add(handler)
        node.link = handler
        old_ping_sent = node.ping_sent
        self.send_ping(handler, bc.MEET if node.flags & bc.F_MEET else bc.PING)
        if old_ping_sent:
            node.ping_sent = old_ping_sent
        node.flags &= ~bc.F_MEET

    # -- sending --------------------------------------------------------------------------
    def header(self, mtype: int) -> bc.Message:
        me = self.myself
        master = me.slaveof if me.is_replica and me.slaveof is not None else me
        port, pport, cport = self.announced_ports()
        msg = bc.Message(
            mtype, me.name_bytes(), port=port, pport=pport, cport=cport,
            current_epoch=self.state.current_epoch, config_epoch=master.config_epoch,
            offset=self.replica_offset() if me.is_replica else
            getattr(getattr(self.server, "repl", None), "master_repl_offset", 0) or 0,
            myslots=bytes(master.slots),
            slaveof=me.slaveof.name_bytes() if me.slaveof is not None else None,
            myip=self.config.cluster_announce_ip or "", flags=me.flags,
            state=self.state.state)
        if me.is_master and self.failover.mf_end:
            msg.mflags = bytes([bc.MF_PAUSED, 0, 0])
        return msg

    def send(self, handler: Handler | None, msg: bc.Message) -> None:
        if handler is None or handler.link.closed:
            return
        limit = int(self.config.cluster_link_sendbuf_limit or 0)
        if limit and handler.link.send_buffer_used() > limit:
            self.state.links_buffer_limit_exceeded += 1
            log.warning("Freeing cluster link(%s node %s): send buffer over limit.",
                        "from" if handler.link.inbound else "to",
                        handler.node.name if handler.node else "unknown")
            self.free_link(handler)
            return
        handler.link.write(bc.encode(msg))
        if 0 <= msg.type < bc.TYPE_COUNT:
            self.state.stats_sent[msg.type] += 1

    def broadcast(self, msg: bc.Message) -> None:
        for node in list(self.state.nodes.values()):
            if node.flags & (bc.F_MYSELF | bc.F_HANDSHAKE) or node.link is None:
                continue
            self.send(node.link, msg)

    def _gossip_entry(self, node: ClusterNode) -> bc.Gossip:
        return bc.Gossip(node.name_bytes(), node.ping_sent // 1000, node.pong_received // 1000,
                         node.ip, node.port, node.cport, node.flags, node.pport)

    def send_ping(self, handler: Handler, mtype: int) -> None:
        """clusterSendPing: a header, gossip about ~1/10 of the nodes (at least 3) plus
        every PFAIL node, and the hostname extension."""
        nodes = list(self.state.nodes.values())
        freshnodes = len(nodes) - 2
        wanted = max(len(nodes) // 10, 3)
        wanted = min(wanted, freshnodes)
        if handler.node is not None and mtype == bc.PING:
            handler.node.ping_sent = mstime()
        msg = self.header(mtype)
        self.pings_sent += 1
        chosen: set[str] = set()
        iterations = wanted * 3
        while freshnodes > 0 and len(msg.gossip) < wanted and iterations > 0:
            iterations -= 1
            node = random.choice(nodes)
            if node is self.myself or node.flags & bc.F_PFAIL:
                continue
            if node.flags & (bc.F_HANDSHAKE | bc.F_NOADDR) or \
                    (node.link is None and node.numslots == 0):
                freshnodes -= 1
                continue
            if node.name in chosen:
                continue
            chosen.add(node.name)
            msg.gossip.append(self._gossip_entry(node))
            freshnodes -= 1
        if self.stats_pfail_nodes:
            for node in nodes:
                if node.flags & bc.F_PFAIL and not node.flags & (bc.F_HANDSHAKE | bc.F_NOADDR):
                    msg.gossip.append(self._gossip_entry(node))
        msg.mflags = bytes([msg.mflags[0] | bc.MF_EXT_DATA, 0, 0])
        if self.myself.hostname:
            msg.extensions.append(bc.hostname_extension(self.myself.hostname))
        self.send(handler, msg)

    def broadcast_pong(self, local_replicas: bool) -> None:
        """clusterBroadcastPong: to every node, or to the other replicas of our master."""
        me = self.myself
        for node in list(self.state.nodes.values()):
            if node.link is None or node.flags & (bc.F_MYSELF | bc.F_HANDSHAKE):
                continue
            if local_replicas and not (node.is_replica and node.slaveof is not None
                                       and node.slaveof is me.slaveof):
                continue
            self.send_ping(node.link, bc.PONG)

    def call_soon(self, callback: Callable[[], None]) -> None:
        try:
            asyncio.get_running_loop().call_soon(callback)
        except RuntimeError:
            callback()

    def send_fail(self, node: ClusterNode) -> None:
        msg = self.header(bc.FAIL)
        msg.fail_name = node.name_bytes()
        self.broadcast(msg)

    def send_update(self, handler: Handler | None, node: ClusterNode) -> None:
        if handler is None:
            return
        msg = self.header(bc.UPDATE)
        msg.update_epoch, msg.update_name, msg.update_slots = \
            node.config_epoch, node.name_bytes(), bytes(node.slots)
        self.send(handler, msg)

    def publish(self, channel: bytes, message: bytes, shard: bool = False) -> None:
        """clusterPropagatePublish: every node hears a PUBLISH; SPUBLISH stays in the
        shard (our master, if any, and its replicas)."""
        msg = self.header(bc.PUBLISHSHARD if shard else bc.PUBLISH)
        msg.channel, msg.message = channel, message
        if not shard:
            self.broadcast(msg)
            return
        me = self.myself
        master = me.slaveof if me.is_replica and me.slaveof is not None else me
        for node in (master, *master.replicas):
            if node is not me:
                self.send(node.link, msg)

    # -- receiving ------------------------------------------------------------------------
    def process(self, handler: Handler, data: bytes) -> None:
        """clusterProcessPacket."""
        state = self.state
        mtype = int.from_bytes(data[12:14], "big") if len(data) >= 14 else -1
        if 0 <= mtype < bc.TYPE_COUNT:
            state.stats_received[mtype] += 1
        try:
            msg = bc.decode(data)
        except bc.MalformedMessage as exc:
            log.warning("Received invalid cluster bus packet: %s", exc)
            return
        now = mstime()
        link_node = handler.node
        if link_node is not None and not handler.link.inbound and not link_node.in_handshake:
            sender = link_node
        else:
            sender = state.lookup(msg.sender.decode("latin-1"))
        if sender is not None and handler.link.inbound and handler.node is None:
            # the inbound link of a known node (CLUSTER LINKS shows it "from")
            handler.node = sender
            if sender.inbound_link is not None and sender.inbound_link is not handler:
                self.free_link(sender.inbound_link)
            sender.inbound_link = handler
        if sender is not None:
            sender.data_received = now
        if sender is not None and not sender.in_handshake:
            if msg.current_epoch > state.current_epoch:
                state.current_epoch = msg.current_epoch
            if msg.config_epoch > sender.config_epoch:
                sender.config_epoch = msg.config_epoch
                self.todo_later(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            sender.repl_offset = msg.offset
            if msg.mflags[0] & bc.MF_PAUSED:
                self.failover.on_paused_offset(sender, msg)
        mtype = msg.type
        if mtype in (bc.PING, bc.MEET):
            self._learn_my_ip(handler, mtype)
            if sender is None and mtype == bc.MEET:
                node = ClusterNode(random_name(), bc.F_HANDSHAKE)
                node.ip = self._sender_ip(handler, msg)
                node.port, node.pport, node.cport = msg.port, msg.pport, msg.cport
                state.add_node(node)
                self.todo_later(TODO_SAVE_CONFIG)
                self.process_gossip(msg, None, trusted=True)
            self.send_ping(handler, bc.PONG)
        if mtype in (bc.PING, bc.PONG, bc.MEET):
            if not self._process_ping_family(handler, msg, sender, now):
                return
        elif mtype == bc.FAIL:
            if sender is None:
                log.info("Ignoring FAIL message from unknown node %s about %s",
                         msg.sender.decode("latin-1"), msg.fail_name.decode("latin-1"))
                return
            failing = state.lookup(msg.fail_name.decode("latin-1"))
            if failing is not None and not failing.flags & (bc.F_FAIL | bc.F_MYSELF):
                log.info("FAIL message received from %s about %s", sender.name, failing.name)
                failing.flags = (failing.flags | bc.F_FAIL) & ~bc.F_PFAIL
                failing.fail_time = now
                self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
        elif mtype in (bc.PUBLISH, bc.PUBLISHSHARD):
            if sender is None:
                return
            if self.deliver_publish is not None:
                self.deliver_publish(msg.channel, msg.message, mtype == bc.PUBLISHSHARD)
        elif mtype == bc.FAILOVER_AUTH_REQUEST:
            self.failover.on_auth_request(sender, msg)
        elif mtype == bc.FAILOVER_AUTH_ACK:
            self.failover.on_auth_ack(sender, msg)
        elif mtype == bc.MFSTART:
            self.failover.on_mfstart(sender, handler)
        elif mtype == bc.UPDATE:
            if sender is None:
                return
            node = state.lookup(msg.update_name.decode("latin-1"))
            if node is None or node.config_epoch >= msg.update_epoch:
                return
            if node.is_replica:
                self.set_node_as_master(node)
            node.config_epoch = msg.update_epoch
            self.todo_later(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            self.update_slots_with(node, msg.update_epoch, msg.update_slots)

    def _sender_ip(self, handler: Handler, msg: bc.Message) -> str:
        """nodeIp2String: the announced IP, else the peer address of the link."""
        return msg.myip or handler.link.peer[0]

    def _learn_my_ip(self, handler: Handler, mtype: int) -> None:
        me = self.myself
        if (mtype == bc.MEET or not me.ip) and not self.config.cluster_announce_ip:
            ip = handler.link.local_ip()
            if ip and ip != me.ip:
                me.ip = ip
                log.warning("IP address for this node updated to %s", ip)
                self.todo_later(TODO_SAVE_CONFIG)

    def _process_ping_family(self, handler: Handler, msg: bc.Message,
                             sender: ClusterNode | None, now: int) -> bool:
        state = self.state
        link_node = handler.node
        if not handler.link.inbound and link_node is not None:
            if link_node.in_handshake:
                if sender is not None:
                    if self.update_address(sender, handler, msg):
                        self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
                    self.del_node(link_node)
                    return False
                name = msg.sender.decode("latin-1")
                state.rename(link_node, name)
                link_node.flags &= ~bc.F_HANDSHAKE
                link_node.flags |= msg.flags & (bc.F_MASTER | bc.F_SLAVE)
                self.todo_later(TODO_SAVE_CONFIG)
            elif link_node.name_bytes() != msg.sender:
                link_node.flags |= bc.F_NOADDR
                link_node.ip, link_node.port, link_node.pport, link_node.cport = "", 0, 0, 0
                self.free_link(handler)
                self.todo_later(TODO_SAVE_CONFIG)
                return False
        if sender is not None:
            sender.flags = (sender.flags & ~bc.F_NOFAILOVER) | (msg.flags & bc.F_NOFAILOVER)
            if msg.type == bc.PING and not sender.in_handshake and \
                    self.update_address(sender, handler, msg):
                self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
        if not handler.link.inbound and msg.type == bc.PONG and link_node is not None:
            link_node.pong_received = now
            link_node.ping_sent = 0
            if link_node.timed_out:
                link_node.flags &= ~bc.F_PFAIL
                self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
            elif link_node.failed:
                self.clear_failure_if_needed(link_node)
        if sender is None:
            return True
        if msg.slaveof is None:
            self.set_node_as_master(sender)
        else:
            self.set_node_as_replica(sender, msg.slaveof)
        sender_master = sender if sender.is_master else sender.slaveof
        dirty = sender_master is not None and bytes(sender_master.slots) != msg.myslots
        if dirty:
            # the slots it claims that we do not see it own: the only ones to look at
            claimed = int.from_bytes(msg.myslots, "little") & \
                ~int.from_bytes(sender_master.slots, "little")
            if sender.is_master:
                self.update_slots_with(sender, msg.config_epoch, msg.myslots)
            self._update_stale_claimer(sender, msg.config_epoch, claimed)
        me = self.myself
        if me.is_master and sender.is_master and msg.config_epoch == me.config_epoch:
            self.handle_epoch_collision(sender)
        self.process_gossip(msg, sender)
        hostname = msg.hostname
        if hostname is not None and hostname != sender.hostname:
            sender.hostname = hostname
            self.todo_later(TODO_SAVE_CONFIG)
        elif hostname is None and msg.mflags[0] & bc.MF_EXT_DATA and sender.hostname:
            sender.hostname = ""
            self.todo_later(TODO_SAVE_CONFIG)
        return True

    def _update_stale_claimer(self, sender: ClusterNode, epoch: int, claimed: int) -> None:
        """A sender claiming slots a node with a greater config epoch serves gets an
        UPDATE about that node (one, as Redis sends)."""
        slots = self.state.slots
        for first, last in bit_ranges(claimed):
            for slot in range(first, last + 1):
                owner = slots[slot]
                if owner is None or owner is sender:
                    continue
                if owner.config_epoch > epoch:
                    log.debug("Node %s has old slots configuration, sending an UPDATE "
                              "message about %s", sender.name, owner.name)
                    self.send_update(sender.link, owner)
                    return

    def update_address(self, node: ClusterNode, handler: Handler, msg: bc.Message) -> bool:
        """nodeUpdateAddressIfNeeded."""
        if handler is node.link:
            return False
        ip = self._sender_ip(handler, msg)
        if (node.ip, node.port, node.cport, node.pport) == (ip, msg.port, msg.cport, msg.pport):
            return False
        node.ip, node.port, node.cport, node.pport = ip, msg.port, msg.cport, msg.pport
        self.free_link(node.link)
        node.flags &= ~bc.F_NOADDR
        log.warning("Address updated for node %s, now %s:%d", node.name, ip, node.port)
        return True

    def process_gossip(self, msg: bc.Message, sender: ClusterNode | None,
                       trusted: bool = False) -> None:
        """clusterProcessGossipSection."""
        state = self.state
        now = mstime()
        for g in msg.gossip:
            name = g.name.decode("latin-1")
            node = state.lookup(name)
            flags = g.flags
            if node is not None:
                if sender is not None and sender.is_master and node is not self.myself:
                    if flags & (bc.F_FAIL | bc.F_PFAIL):
                        node.fail_reports[sender.name] = now
                        self.mark_failing_if_needed(node)
                    else:
                        node.fail_reports.pop(sender.name, None)
                if not flags & (bc.F_FAIL | bc.F_PFAIL) and node.ping_sent == 0 and \
                        self.failure_reports(node) == 0:
                    pong = g.pong_received * 1000
                    if pong <= now + 500 and pong > node.pong_received:
                        node.pong_received = pong
                if node.flags & (bc.F_FAIL | bc.F_PFAIL) and not flags & bc.F_NOADDR and \
                        not flags & (bc.F_FAIL | bc.F_PFAIL) and \
                        (node.ip.lower() != g.ip.lower() or node.port != g.port
                         or node.cport != g.cport):
                    self.free_link(node.link)
                    node.ip, node.port, node.pport, node.cport = g.ip, g.port, g.pport, g.cport
                    node.flags &= ~bc.F_NOADDR
            elif (sender is not None or trusted) and not flags & bc.F_NOADDR and \
                    not self.blacklisted(name) and len(name) == bc.NAMELEN:
                if sender is None:
                    continue  # a MEET's gossip: Redis requires a known sender here as well
                node = ClusterNode(name, flags & ~(bc.F_MYSELF | bc.F_PFAIL | bc.F_FAIL))
                node.ip, node.port, node.pport, node.cport = g.ip, g.port, g.pport, g.cport
                state.add_node(node)

    # -- failure detection ----------------------------------------------------------------
    def failure_reports(self, node: ClusterNode) -> int:
        """clusterNodeFailureReportsCount, after dropping reports too old to count."""
        limit = mstime() - self.node_timeout * FAIL_REPORT_VALIDITY_MULT
        for name, when in list(node.fail_reports.items()):
            if when < limit or name not in self.state.nodes:
                del node.fail_reports[name]
        return len(node.fail_reports)

    def mark_failing_if_needed(self, node: ClusterNode) -> None:
        needed = self.state.size // 2 + 1
        if not node.timed_out or node.failed:
            return
        failures = self.failure_reports(node)
        if self.myself.is_master:
            failures += 1
        if failures < needed:
            return
        log.info("Marking node %s as failing (quorum reached).", node.name)
        node.flags = (node.flags & ~bc.F_PFAIL) | bc.F_FAIL
        node.fail_time = mstime()
        self.send_fail(node)
        self.todo_later(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    def clear_failure_if_needed(self, node: ClusterNode) -> None:
        now = mstime()
        if node.is_replica or node.numslots == 0:
            log.info("Clear FAIL state for node %s: %s is reachable again.", node.name,
                     "replica" if node.is_replica else "master without slots")
            node.flags &= ~bc.F_FAIL
            self.todo_later(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
        if node.is_master and node.numslots > 0 and \
                now - node.fail_time > self.node_timeout * FAIL_UNDO_TIME_MULT:
            log.info("Clear FAIL state for node %s: is reachable again and nobody is serving "
                     "its slots after some time.", node.name)
            node.flags &= ~bc.F_FAIL
            self.todo_later(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    # -- slots and epochs -----------------------------------------------------------------
    def update_slots_with(self, sender: ClusterNode, epoch: int, slots: bytes) -> None:
        """clusterUpdateSlotsConfigWith: slots move to a claimer with a greater epoch; a
        master left without slots (or the replica of one) follows the claimer as replica."""
        state = self.state
        me = self.myself
        if sender is me:
            log.info("Discarding UPDATE message about myself.")
            return
        curmaster = me if me.is_master else me.slaveof
        claimed_all = int.from_bytes(slots, "little")
        sender_slots = claimed_all.bit_count()
        # only the slots it claims and does not own yet can change hands
        claimed = claimed_all & ~int.from_bytes(sender.slots, "little")
        dirty_slots = []
        changed = False
        new_master = None
        migrated_ours = 0
        for first, last in bit_ranges(claimed):
            for slot in range(first, last + 1):
                owner = state.slots[slot]
                if slot not in state.importing and (owner is None or owner.config_epoch < epoch):
                    if owner is me and self.count_keys_in_slot(slot):
                        dirty_slots.append(slot)
                    if owner is not None and owner is curmaster:
                        new_master = sender
                        migrated_ours += 1
                    state.del_slot(slot)
                    state.add_slot(sender, slot)
                    changed = True
        if changed:
            self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        if new_master is not None and curmaster is not None and curmaster.numslots == 0 and (
                self.config.cluster_allow_replica_migration or sender_slots == migrated_ours):
            log.warning("Configuration change detected. Reconfiguring myself as a replica "
                        "of %s", sender.name)
            self.set_my_master(sender)
            self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        elif me.slaveof is not None and me.slaveof.slaveof is not None and \
                me.slaveof.slaveof is not me:
            log.warning("I'm a sub-replica! Reconfiguring myself as a replica of grandmaster "
                        "%s", me.slaveof.slaveof.name)
            self.set_my_master(me.slaveof.slaveof)
            self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        else:
            for slot in dirty_slots:
                self.del_keys_in_slot(slot)

    # -- roles ----------------------------------------------------------------------------
    def set_my_master(self, node: ClusterNode) -> None:
        """clusterSetMaster: this node (without slots) replicates ``node``."""
        me = self.myself
        state = self.state
        if me.is_master:
            me.flags = (me.flags & ~(bc.F_MASTER | bc.F_MIGRATE_TO)) | bc.F_SLAVE
            state.migrating.clear()
            state.importing.clear()
        elif me.slaveof is not None and me in me.slaveof.replicas:
            me.slaveof.replicas.remove(me)
        me.slaveof = node
        state.add_replica(node, me)
        self.replicate(node.ip, node.port)
        self.failover.reset_manual()

    def set_node_as_master(self, node: ClusterNode) -> None:
        """clusterSetNodeAsMaster."""
        if node.is_master:
            return
        if node.slaveof is not None:
            if node in node.slaveof.replicas:
                node.slaveof.replicas.remove(node)
            if node is not self.myself:
                node.flags |= bc.F_MIGRATE_TO
        node.flags = (node.flags & ~bc.F_SLAVE) | bc.F_MASTER
        node.slaveof = None
        self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)

    def set_node_as_replica(self, sender: ClusterNode, master_name: bytes) -> None:
        """A PING/PONG sender announcing a master: a master turned replica loses its
        slots; its master's replica list follows."""
        if sender.is_master:
            self.state.del_node_slots(sender)
            sender.flags = (sender.flags & ~(bc.F_MASTER | bc.F_MIGRATE_TO)) | bc.F_SLAVE
            self.todo_later(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
        master = self.state.lookup(master_name.decode("latin-1"))
        if master is not None and sender.slaveof is not master:
            if sender.slaveof is not None and sender in sender.slaveof.replicas:
                sender.slaveof.replicas.remove(sender)
            self.state.add_replica(master, sender)
            sender.slaveof = master
            self.todo_later(TODO_SAVE_CONFIG)

    def handle_epoch_collision(self, sender: ClusterNode) -> None:
        me = self.myself
        if sender.config_epoch != me.config_epoch or not sender.is_master or \
                not me.is_master:
            return
        if sender.name_bytes() <= me.name_bytes():
            return
        self.state.current_epoch += 1
        me.config_epoch = self.state.current_epoch
        self.save_config()
        log.debug("WARNING: configEpoch collision with node %s. configEpoch set to %d",
                  sender.name, me.config_epoch)

    def bump_epoch(self) -> bool:
        """clusterBumpConfigEpochWithoutConsensus: True when the epoch changed."""
        max_epoch = max(n.config_epoch for n in self.state.nodes.values())
        me = self.myself
        if me.config_epoch == 0 or me.config_epoch != max_epoch:
            self.state.current_epoch += 1
            me.config_epoch = self.state.current_epoch
            self.todo_later(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            return True
        return False

    # -- nodes ----------------------------------------------------------------------------
    def del_node(self, node: ClusterNode) -> None:
        """clusterDelNode: its slots, migrations, reports and links go with it."""
        state = self.state
        for slot in [s for s, n in state.importing.items() if n is node]:
            del state.importing[slot]
        for slot in [s for s, n in state.migrating.items() if n is node]:
            del state.migrating[slot]
        for other in state.nodes.values():
            other.fail_reports.pop(node.name, None)
        state.del_node_slots(node)
        if node.slaveof is not None and node in node.slaveof.replicas:
            node.slaveof.replicas.remove(node)
        for replica in node.replicas:
            replica.slaveof = None
        self.free_link(node.link)
        self.free_link(node.inbound_link)
        state.nodes.pop(node.name, None)

    def start_handshake(self, ip: str, port: int, cport: int) -> str:
        """clusterStartHandshake (CLUSTER MEET): "invalid" (a bad address), "pending" (a
        handshake with it is already going on) or "started"."""
        try:
            norm = str(ipaddress.ip_address(ip))
        except ValueError:
            return "invalid"
        if not (0 < port <= 65535 and 0 < cport <= 65535):
            return "invalid"
        for node in self.state.nodes.values():
            if node.in_handshake and node.ip.lower() == norm and node.port == port and \
                    node.cport == cport:
                return "pending"
        node = ClusterNode(random_name(), bc.F_HANDSHAKE | bc.F_MEET)
        node.ip, node.port, node.cport = norm, port, cport
        self.state.add_node(node)
        return "started"

    def blacklisted(self, name: str) -> bool:
        now = time.time()
        for key, expiry in list(self.state.blacklist.items()):
            if expiry < now:
                del self.state.blacklist[key]
        return name in self.state.blacklist

    def blacklist_add(self, name: str) -> None:
        self.state.blacklist[name] = time.time() + BLACKLIST_TTL

    # -- cron and state -------------------------------------------------------------------
    def cron(self) -> None:
        """clusterCron, every 100 ms."""
        self.iteration += 1
        if self.save_pending:
            self.save_config(fsync=False)
        self.refresh_myself()
        state = self.state
        now = mstime()
        timeout = self.node_timeout
        handshake_timeout = max(timeout, 1000)
        self.stats_pfail_nodes = 0
        for node in list(state.nodes.values()):
            if node.flags & (bc.F_MYSELF | bc.F_NOADDR):
                continue
            if node.flags & bc.F_PFAIL:
                self.stats_pfail_nodes += 1
            if node.in_handshake and now - node.ctime > handshake_timeout:
                self.del_node(node)
                continue
            if node.link is None:
                self._connect(node)
        if self.iteration % 10 == 0:
            candidates = list(state.nodes.values())
            best = None
            for _ in range(5):
                node = random.choice(candidates)
                if node.link is None or node.ping_sent != 0 or \
                        node.flags & (bc.F_MYSELF | bc.F_HANDSHAKE):
                    continue
                if best is None or node.pong_received < best.pong_received:
                    best = node
            if best is not None:
                self.send_ping(best.link, bc.PING)
        update = False
        for node in list(state.nodes.values()):
            now = mstime()
            if node.flags & (bc.F_MYSELF | bc.F_NOADDR | bc.F_HANDSHAKE):
                continue
            ping_delay = now - node.ping_sent
            data_delay = now - node.data_received
            if node.link is not None and now - node.link.link.ctime > timeout and \
                    node.ping_sent and ping_delay > timeout / 2 and data_delay > timeout / 2:
                self.free_link(node.link)
            if node.link is not None and node.ping_sent == 0 and \
                    now - node.pong_received > timeout / 2:
                self.send_ping(node.link, bc.PING)
                continue
            if node.ping_sent == 0:
                continue
            if min(ping_delay, data_delay) > timeout and \
                    not node.flags & (bc.F_PFAIL | bc.F_FAIL):
                log.debug("*** NODE %s possibly failing", node.name)
                node.flags |= bc.F_PFAIL
                update = True
        me = self.myself
        master = me.slaveof
        if me.is_replica and master is not None and master.has_addr and master.ip and \
                not self.is_replicating():
            self.replicate(master.ip, master.port)  # e.g. a replica restarted from nodes.conf
        self.failover.cron()
        if update or state.state == STATE_FAIL:
            self.update_state()

    def update_state(self) -> None:
        """clusterUpdateState."""
        state = self.state
        now = mstime()
        if self.first_update_call == 0:
            self.first_update_call = now
        me = self.myself
        if me.is_master and state.state == STATE_FAIL and \
                now - self.first_update_call < WRITABLE_DELAY_MS:
            return
        new_state = STATE_OK
        # every slot served by a node not FAIL (whole-list tests, not a loop over slots)
        if self.config.cluster_require_full_coverage and (
                None in state.slots or any(n.numslots and n.flags & bc.F_FAIL
                                           for n in state.nodes.values())):
            new_state = STATE_FAIL
        size = reachable = 0
        for node in state.nodes.values():
            if node.is_master and node.numslots:
                size += 1
                if not node.flags & (bc.F_FAIL | bc.F_PFAIL):
                    reachable += 1
        state.size = size
        if reachable < size // 2 + 1:
            new_state = STATE_FAIL
            self.among_minority_time = now
        if new_state != state.state:
            rejoin = min(max(self.node_timeout, MIN_REJOIN_DELAY), MAX_REJOIN_DELAY)
            if new_state == STATE_OK and me.is_master and \
                    now - self.among_minority_time < rejoin:
                return
            log.warning("Cluster state changed: %s", "ok" if new_state == STATE_OK else "fail")
            state.state = new_state
