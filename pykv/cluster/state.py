"""The cluster state: the nodes this node knows, who serves each slot, the epochs.

``ClusterNode`` is Redis's clusterNode (name, address, flags, epochs, slots bitmap, the
ping/pong clocks, failure reports); ``ClusterState`` is clusterState (myself, the nodes by
name, slot owners, importing/migrating slots, currentEpoch, lastVoteEpoch, the state and
the message counters). ``describe``/``describe_all`` produce CLUSTER NODES lines, which
are also nodes.conf's (``pykv.cluster.nodes_conf`` reads and writes the file).
"""
from __future__ import annotations

import os
import re
import time
from typing import Any

from pykv.cluster import bus_codec as bc
from pykv.cluster.keyslot import CLUSTER_SLOTS

_FLAG_NAMES = ((bc.F_MYSELF, "myself"), (bc.F_MASTER, "master"), (bc.F_SLAVE, "slave"),
               (bc.F_PFAIL, "fail?"), (bc.F_FAIL, "fail"), (bc.F_HANDSHAKE, "handshake"),
               (bc.F_NOADDR, "noaddr"), (bc.F_NOFAILOVER, "nofailover"))
FLAG_BY_NAME = {name: bit for bit, name in _FLAG_NAMES}
_RUN = re.compile(r"1+")

STATE_OK, STATE_FAIL = 0, 1


def mstime() -> int:
    return int(time.time() * 1000)


def random_name() -> str:
    return os.urandom(20).hex()


def flags_text(flags: int) -> str:
    """Redis's representClusterNodeFlags: ``myself,master``, ``noflags`` when none."""
    names = [name for bit, name in _FLAG_NAMES if flags & bit]
    return ",".join(names) if names else "noflags"


def slot_ranges(bits: bytes | bytearray) -> list[tuple[int, int]]:
    """The runs of set bits of a slots bitmap (bit ``s & 7`` of byte ``s >> 3``)."""
    return bit_ranges(int.from_bytes(bits, "little"))


def bit_ranges(value: int) -> list[tuple[int, int]]:
    """The runs of set bits of ``value`` (bit 0 first), as (first, last) pairs."""
    if not value:
        return []
    text = format(value, "b")[::-1]
    return [(m.start(), m.end() - 1) for m in _RUN.finditer(text)]


class ClusterNode:
    """One node of the cluster as this node sees it."""

    def __init__(self, name: str, flags: int) -> None:
        self.name = name
        self.flags = flags
        self.ctime = mstime()
        self.config_epoch = 0
        self.slots = bytearray(bc.SLOT_BYTES)
        self.numslots = 0
        self.slaveof: ClusterNode | None = None
        self.replicas: list[ClusterNode] = []
        self.ping_sent = 0
        self.pong_received = 0
        self.data_received = 0
        self.fail_time = 0
        self.voted_time = 0
        self.orphaned_time = 0
        self.repl_offset = 0
        self.ip = ""
        self.hostname = ""
        self.port = 0
        self.pport = 0
        self.cport = 0
        self.link: Any = None  # our outbound link to it
        self.inbound_link: Any = None  # its link to us
        self.fail_reports: dict[str, int] = {}  # reporting master's name -> time

    def __repr__(self) -> str:
        return f"<ClusterNode {self.name[:8]} {self.ip}:{self.port} {flags_text(self.flags)}>"

    # -- slots --------------------------------------------------------------------------
    def has_slot(self, slot: int) -> bool:
        return bool(self.slots[slot >> 3] & (1 << (slot & 7)))

    def set_slot_bit(self, slot: int) -> bool:
        if self.has_slot(slot):
            return False
        self.slots[slot >> 3] |= 1 << (slot & 7)
        self.numslots += 1
        return True

    def clear_slot_bit(self, slot: int) -> bool:
        if not self.has_slot(slot):
            return False
        self.slots[slot >> 3] &= ~(1 << (slot & 7)) & 0xFF
        self.numslots -= 1
        return True

    # -- roles --------------------------------------------------------------------------
    @property
    def is_master(self) -> bool:
        return bool(self.flags & bc.F_MASTER)

    @property
    def is_replica(self) -> bool:
        return bool(self.flags & bc.F_SLAVE)

    @property
    def in_handshake(self) -> bool:
        return bool(self.flags & bc.F_HANDSHAKE)

    @property
    def failed(self) -> bool:
        return bool(self.flags & bc.F_FAIL)

    @property
    def timed_out(self) -> bool:
        return bool(self.flags & bc.F_PFAIL)

    @property
    def has_addr(self) -> bool:
        return not self.flags & bc.F_NOADDR

    def epoch(self) -> int:
        """The config epoch it advertises (a replica's is its master's)."""
        if self.is_replica and self.slaveof is not None:
            return self.slaveof.config_epoch
        return self.config_epoch

    def name_bytes(self) -> bytes:
        return self.name.encode("latin-1")

    def health(self) -> str:
        if self.failed or self.timed_out:
            return "fail"
        return "online"


class ClusterState:
    """What Redis keeps in ``server.cluster``."""

    def __init__(self, myself: ClusterNode) -> None:
        self.myself = myself
        self.nodes: dict[str, ClusterNode] = {myself.name: myself}
        self.slots: list[ClusterNode | None] = [None] * CLUSTER_SLOTS
        self.migrating: dict[int, ClusterNode] = {}
        self.importing: dict[int, ClusterNode] = {}
        self.current_epoch = 0
        self.last_vote_epoch = 0
        self.state = STATE_FAIL
        self.size = 1  # as clusterInit sets it, until the first state update
        self.blacklist: dict[str, float] = {}  # forgotten name -> expiry (seconds)
        self.stats_sent = [0] * bc.TYPE_COUNT
        self.stats_received = [0] * bc.TYPE_COUNT
        self.links_buffer_limit_exceeded = 0
        self.among_minority_time = 0
        self.first_update_time = 0

    # -- nodes --------------------------------------------------------------------------
    def add_node(self, node: ClusterNode) -> None:
        self.nodes[node.name] = node

    def lookup(self, name: str) -> ClusterNode | None:
        return self.nodes.get(name)

    def rename(self, node: ClusterNode, new_name: str) -> None:
        del self.nodes[node.name]
        node.name = new_name
        self.nodes[new_name] = node

    # -- slots --------------------------------------------------------------------------
    def add_slot(self, node: ClusterNode, slot: int) -> bool:
        if self.slots[slot] is not None:
            return False
        node.set_slot_bit(slot)
        self.slots[slot] = node
        return True

    def del_slot(self, slot: int) -> bool:
        node = self.slots[slot]
        if node is None:
            return False
        node.clear_slot_bit(slot)
        self.slots[slot] = None
        return True

    def del_node_slots(self, node: ClusterNode) -> int:
        deleted = 0
        for start, end in slot_ranges(node.slots):
            for slot in range(start, end + 1):
                self.del_slot(slot)
                deleted += 1
        return deleted

    @staticmethod
    def add_replica(master: ClusterNode, replica: ClusterNode) -> None:
        """clusterNodeAddSlave: a master that had a replica is a migration target."""
        if replica not in master.replicas:
            master.replicas.append(replica)
        master.flags |= bc.F_MIGRATE_TO

    def masters_serving(self) -> list[ClusterNode]:
        return [n for n in self.nodes.values() if n.is_master and n.numslots]

    # -- CLUSTER NODES / nodes.conf -----------------------------------------------------
    def describe(self, node: ClusterNode, use_pport: bool = False) -> str:
        """Redis's clusterGenNodeDescription: one CLUSTER NODES line (no newline); with
        ``use_pport`` (a client not on TLS in a TLS cluster) the plaintext port."""
        port = node.pport if use_pport and node.pport else node.port
        addr = f"{node.ip}:{port}@{node.cport}"
        if node.hostname:
            addr += f",{node.hostname}"
        master = node.slaveof.name if node.slaveof is not None else "-"
        connected = node.link is not None or node.flags & bc.F_MYSELF
        parts = [node.name, addr, flags_text(node.flags), master, str(node.ping_sent),
                 str(node.pong_received), str(node.epoch()),
                 "connected" if connected else "disconnected"]
        for start, end in slot_ranges(node.slots):
            parts.append(str(start) if start == end else f"{start}-{end}")
        if node is self.myself:
            for slot, target in sorted(self.migrating.items()):
                parts.append(f"[{slot}->-{target.name}]")
            for slot, source in sorted(self.importing.items()):
                parts.append(f"[{slot}-<-{source.name}]")
        return " ".join(parts)

    def describe_all(self, skip_handshake: bool = False, use_pport: bool = False) -> str:
        """Every node's line, each ending with a newline (CLUSTER NODES' body)."""
        lines = []
        for node in self.nodes.values():
            if skip_handshake and node.in_handshake:
                continue
            lines.append(self.describe(node, use_pport) + "\n")
        return "".join(lines)
