"""CLUSTER, READONLY, READWRITE and ASKING.

With ``cluster-enabled no`` (the default) these commands exist (tools such as
``valkey-cli --bigkeys`` send READONLY first and accept only this error) and every one of
them answers ``ERR This instance has cluster support disabled``, after the usual arity and
subcommand checks. With ``cluster-enabled yes`` ``server.cluster`` is the node's
``pykv.cluster.router.Router`` and each subcommand is Redis 7.0's clusterCommand branch of
the same name, over its ``ClusterBus`` and ``ClusterState``.

CLUSTER REPLICATE makes this node a replica through the bus (``set_my_master``, which
REPLICAOFs the master); CLUSTER FAILOVER starts the manual failover of
``pykv.cluster.failover``.
"""
from __future__ import annotations

from pykv import errors
from pykv.cluster import bus as busmod
from pykv.cluster import nodes_conf, ports
from pykv.cluster.keyslot import CLUSTER_SLOTS, key_hash_slot
from pykv.cluster.state import STATE_OK, ClusterNode, random_name, slot_ranges
from pykv.commands.args import to_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.cluster_help import HELP
from pykv.commands.registry import METADATA, command
from pykv.protocol.types import SimpleString, Verbatim

_CLUSTER_SUBCOMMANDS = sorted(METADATA["cluster"].get("subcommands", {}))
OK = SimpleString(b"OK")

def _err(text: str) -> errors.ErrorReply:
    return errors.cluster_error(text)


def _s(arg: bytes) -> str:
    return arg.decode("utf-8", "surrogateescape")


@command("readonly", "readwrite", "asking", *_CLUSTER_SUBCOMMANDS)
def cluster_command(c, argv):
    router = c.server.cluster
    if router is None:
        return errors.CLUSTER_DISABLED
    name = argv[0].lower()
    if name == b"readonly":
        c.cluster_readonly = True
        return OK
    if name == b"readwrite":
        c.cluster_readonly = False
        return OK
    if name == b"asking":
        c.cluster_asking = 2  # pykv.cluster.router.ASKING_NEXT
        return OK
    handler = _SUBCOMMANDS.get(argv[1].lower().decode("latin-1"))
    if handler is None:
        return errors.unknown_subcommand(argv[1], argv[0])
    return handler(c, router.bus, argv)


def _slot_arg(arg: bytes) -> int | None:
    """getSlotOrReply: None for anything but an integer in 0..16383."""
    slot = to_int(arg)
    if slot is None or not 0 <= slot < CLUSTER_SLOTS:
        return None
    return slot


def _lookup(bus: busmod.ClusterBus, arg: bytes) -> ClusterNode | None:
    return bus.state.lookup(_s(arg))


def _known(bus: busmod.ClusterBus, arg: bytes) -> tuple[ClusterNode, errors.ErrorReply | None]:
    """The node named ``arg``, or Redis's ``Unknown node <name>`` error."""
    node = _lookup(bus, arg)
    if node is None:
        return bus.myself, _err(f"Unknown node {_s(arg)}")
    return node, None


# -- information -------------------------------------------------------------------------
def info_text(bus: busmod.ClusterBus) -> str:
    state = bus.state
    assigned = ok = pfail = fail = 0
    for owner in state.slots:
        if owner is None:
            continue
        assigned += 1
        if owner.failed:
            fail += 1
        elif owner.timed_out:
            pfail += 1
        else:
            ok += 1
    me = state.myself
    lines = [
        f"cluster_state:{'ok' if state.state == STATE_OK else 'fail'}",
        f"cluster_slots_assigned:{assigned}",
        f"cluster_slots_ok:{ok}",
        f"cluster_slots_pfail:{pfail}",
        f"cluster_slots_fail:{fail}",
        f"cluster_known_nodes:{len(state.nodes)}",
        f"cluster_size:{state.size}",
        f"cluster_current_epoch:{state.current_epoch}",
        f"cluster_my_epoch:{me.epoch()}",
    ]
    for direction, counters in (("sent", state.stats_sent), ("received", state.stats_received)):
        for mtype, count in enumerate(counters):
            if count:
                lines.append(f"cluster_stats_messages_{busmod.bc.TYPE_NAMES[mtype]}_"
                             f"{direction}:{count}")
        lines.append(f"cluster_stats_messages_{direction}:{sum(counters)}")
    lines.append(f"total_cluster_links_buffer_limit_exceeded:"
                 f"{state.links_buffer_limit_exceeded}")
    return "".join(line + "\r\n" for line in lines)


def _info(c, bus, argv):
    return Verbatim(info_text(bus).encode(), b"txt")


def _myid(c, bus, argv):
    return bus.myself.name.encode()


def _nodes(c, bus, argv):
    use_pport = ports.wants_pport(c.server.config, c)
    return Verbatim(bus.state.describe_all(use_pport=use_pport).encode(), b"txt")


def _node_entry(c, router, node: ClusterNode) -> list:
    """addNodeToNodeReply: endpoint, port, id, and the other known endpoints."""
    kind = c.server.config.cluster_preferred_endpoint_type
    if kind == "ip":
        endpoint = node.ip.encode()
    elif kind == "hostname":
        endpoint = (node.hostname or "?").encode()
    else:
        endpoint = None
    port = ports.client_port(node, ports.wants_pport(c.server.config, c))
    extra = {}
    if kind != "ip":
        extra[b"ip"] = node.ip.encode()
    if kind != "hostname" and node.hostname:
        extra[b"hostname"] = node.hostname.encode()
    return [endpoint, port, node.name.encode(), extra]


def _slots(c, bus, argv):
    out = []
    for node in list(bus.state.nodes.values()):
        if not node.is_master or not node.numslots:
            continue
        for start, end in slot_ranges(node.slots):
            entry = [start, end, _node_entry(c, c.server.cluster, node)]
            for replica in node.replicas:
                if _replica_available(bus, replica):
                    entry.append(_node_entry(c, c.server.cluster, replica))
            out.append(entry)
    return out


def _replica_available(bus, node: ClusterNode) -> bool:
    """isReplicaAvailable: not failed, and it has replicated something (offset > 0)."""
    if node.failed:
        return False
    offset = bus.replica_offset() if node is bus.myself else node.repl_offset
    return offset != 0


def _shard_node(c, bus, node: ClusterNode) -> dict:
    info: dict = {b"id": node.name.encode()}
    # tls-cluster says whether a node's port is its TLS port (then pport is the plain one)
    tls_cluster = c.server.config.tls_cluster
    plaintext_port = node.pport if tls_cluster else node.port
    if plaintext_port:
        info[b"port"] = plaintext_port
    if tls_cluster and node.port:
        info[b"tls-port"] = node.port
    info[b"ip"] = node.ip.encode()
    info[b"endpoint"] = c.server.cluster.endpoint(node).encode()
    if node.hostname:
        info[b"hostname"] = node.hostname.encode()
    info[b"role"] = b"replica" if node.is_replica else b"master"
    offset = node.repl_offset
    if node is bus.myself:
        offset = getattr(c.server.repl, "master_repl_offset", 0) or 0
    info[b"replication-offset"] = offset
    if node.failed:
        health = b"fail"
    elif node.is_replica and offset == 0:
        health = b"loading"
    else:
        health = b"online"
    info[b"health"] = health
    return info


def _shards(c, bus, argv):
    out = []
    for node in list(bus.state.nodes.values()):
        if not node.is_master:
            continue
        slots: list[int] = []
        for start, end in slot_ranges(node.slots):
            slots += [start, end]
        members = [node, *node.replicas]
        out.append({b"slots": slots, b"nodes": [_shard_node(c, bus, n) for n in members]})
    return out


def _links(c, bus, argv):
    out = []
    for node in bus.state.nodes.values():
        for handler, direction in ((node.link, b"to"), (node.inbound_link, b"from")):
            if handler is None:
                continue
            used = handler.link.send_buffer_used()
            out.append({b"direction": direction, b"node": node.name.encode(),
                        b"create-time": handler.link.ctime,
                        b"events": b"rw" if used else b"r",
                        b"send-buffer-allocated": used, b"send-buffer-used": used})
    return out


def _keyslot(c, bus, argv):
    return key_hash_slot(argv[2])


def _countkeysinslot(c, bus, argv):
    slot = to_int(argv[2])
    if slot is None:
        return errors.NOT_INTEGER
    if not 0 <= slot < CLUSTER_SLOTS:
        return _err("Invalid slot")
    return c.server.dbs[0].slot_index.count(slot)


def _getkeysinslot(c, bus, argv):
    slot, maxkeys = to_int(argv[2]), to_int(argv[3])
    if slot is None or maxkeys is None:
        return errors.NOT_INTEGER
    if maxkeys < 0 or not 0 <= slot < CLUSTER_SLOTS:
        return _err("Invalid slot or number of keys")
    return c.server.dbs[0].slot_index.get_keys(slot, maxkeys)


def _count_failure_reports(c, bus, argv):
    node, err = _known(bus, argv[2])
    if err is not None:
        return err
    return bus.failure_reports(node)


def _replicas(c, bus, argv):
    node, err = _known(bus, argv[2])
    if err is not None:
        return err
    if node.is_replica:
        return _err("The specified node is not a master")
    return [bus.state.describe(r).encode() for r in node.replicas]


# -- membership --------------------------------------------------------------------------
def _meet(c, bus, argv):
    if len(argv) > 5:
        return errors.subcommand_syntax(argv[1], argv[0])
    port = to_int(argv[3])
    if port is None:
        return _err(f"Invalid TCP base port specified: {_s(argv[3])}")
    if len(argv) == 5:
        cport = to_int(argv[4])
        if cport is None:
            return _err(f"Invalid TCP bus port specified: {_s(argv[4])}")
    else:
        cport = port + busmod.PORT_INCR
    result = bus.start_handshake(_s(argv[2]), port, cport)
    if result == "invalid":
        return _err(f"Invalid node address specified: {_s(argv[2])}:{_s(argv[3])}")
    return OK


def _forget(c, bus, argv):
    node, err = _known(bus, argv[2])
    if err is not None:
        return err
    if node is bus.myself:
        return _err("I tried hard but I can't forget myself...")
    if bus.myself.is_replica and bus.myself.slaveof is node:
        return _err("Can't forget my master!")
    bus.blacklist_add(node.name)
    bus.del_node(node)
    bus.todo_later(busmod.TODO_UPDATE_STATE | busmod.TODO_SAVE_CONFIG)
    return OK


def _reset(c, bus, argv):
    hard = False
    if len(argv) == 3:
        mode = argv[2].lower()
        if mode not in (b"hard", b"soft"):
            return errors.SYNTAX
        hard = mode == b"hard"
    elif len(argv) > 3:
        return errors.subcommand_syntax(argv[1], argv[0])
    if bus.myself.is_master and len(c.server.dbs[0]):
        return _err("CLUSTER RESET can't be called with master nodes containing keys")
    state = bus.state
    if bus.myself.is_replica:  # a master again, with an empty dataset
        bus.set_node_as_master(bus.myself)
        bus.stop_replicating()
        for db in c.server.dbs:
            db.clear()
    state.migrating.clear()
    state.importing.clear()
    for slot in range(CLUSTER_SLOTS):
        state.del_slot(slot)
    for node in list(state.nodes.values()):
        if node is not bus.myself:
            bus.del_node(node)
    if hard:
        state.current_epoch = state.last_vote_epoch = 0
        bus.myself.config_epoch = 0
        state.rename(bus.myself, random_name())
    bus.save_config()
    bus.update_state()
    return OK


# -- slots -------------------------------------------------------------------------------
def _check_slots(bus, slots: list[int], adding: bool) -> errors.ErrorReply | None:
    """checkSlotAssignmentsOrReply."""
    seen: set[int] = set()
    for slot in slots:
        owner = bus.state.slots[slot]
        if adding and owner is not None:
            return _err(f"Slot {slot} is already busy")
        if not adding and owner is None:
            return _err(f"Slot {slot} is already unassigned")
        if slot in seen:
            return _err(f"Slot {slot} specified multiple times")
        seen.add(slot)
    return None


def _apply_slots(bus, slots: list[int], adding: bool) -> None:
    state = bus.state
    for slot in slots:
        if adding:
            state.importing.pop(slot, None)
            state.add_slot(bus.myself, slot)
        else:
            state.del_slot(slot)
    bus.todo_later(busmod.TODO_UPDATE_STATE | busmod.TODO_SAVE_CONFIG)


def _addslots_or_del(c, bus, argv, adding: bool):
    slots = []
    for arg in argv[2:]:
        slot = _slot_arg(arg)
        if slot is None:
            return errors.CLUSTER_INVALID_SLOT
        slots.append(slot)
    err = _check_slots(bus, slots, adding)
    if err is not None:
        return err
    _apply_slots(bus, slots, adding)
    return OK


def _slot_ranges_or_del(c, bus, argv, adding: bool):
    if len(argv) % 2 == 1:
        return errors.wrong_arity(f"cluster|{_s(argv[1]).lower()}")
    slots = []
    for i in range(2, len(argv), 2):
        start, end = _slot_arg(argv[i]), _slot_arg(argv[i + 1])
        if start is None or end is None:
            return errors.CLUSTER_INVALID_SLOT
        if start > end:
            return _err(f"start slot number {start} is greater than end slot number {end}")
        slots.extend(range(start, end + 1))
    err = _check_slots(bus, slots, adding)
    if err is not None:
        return err
    _apply_slots(bus, slots, adding)
    return OK


def _flushslots(c, bus, argv):
    if len(c.server.dbs[0]):
        return _err("DB must be empty to perform CLUSTER FLUSHSLOTS.")
    bus.state.del_node_slots(bus.myself)
    bus.todo_later(busmod.TODO_UPDATE_STATE | busmod.TODO_SAVE_CONFIG)
    return OK


def _setslot(c, bus, argv):
    state = bus.state
    me = bus.myself
    if me.is_replica:
        return _err("Please use SETSLOT only with masters.")
    slot = _slot_arg(argv[2])
    if slot is None:
        return errors.CLUSTER_INVALID_SLOT
    action = argv[3].lower()
    argc = len(argv)
    index = c.server.dbs[0].slot_index
    if action in (b"migrating", b"importing") and argc == 5:
        migrating = action == b"migrating"
        if migrating and state.slots[slot] is not me:
            return _err(f"I'm not the owner of hash slot {slot}")
        if not migrating and state.slots[slot] is me:
            return _err(f"I'm already the owner of hash slot {slot}")
        node = _lookup(bus, argv[4])
        if node is None:
            return _err(f"I don't know about node {_s(argv[4])}")
        if node.is_replica:
            return _err("Target node is not a master")
        (state.migrating if migrating else state.importing)[slot] = node
    elif action == b"stable" and argc == 4:
        state.importing.pop(slot, None)
        state.migrating.pop(slot, None)
    elif action == b"node" and argc == 5:
        node = _lookup(bus, argv[4])
        if node is None:
            return _err(f"Unknown node {_s(argv[4])}")
        if node.is_replica:
            return _err("Target node is not a master")
        if state.slots[slot] is me and node is not me and index.count(slot):
            return _err(f"Can't assign hashslot {slot} to a different node while I still "
                        f"hold keys for this hash slot.")
        if not index.count(slot):
            state.migrating.pop(slot, None)
        state.del_slot(slot)
        state.add_slot(node, slot)
        if node is me and slot in state.importing:
            bus.bump_epoch()
            del state.importing[slot]
            for other in list(state.nodes.values()):
                if other.link is not None and not other.flags & (
                        busmod.bc.F_MYSELF | busmod.bc.F_HANDSHAKE):
                    bus.send_ping(other.link, busmod.bc.PONG)
    else:
        return _err("Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
    bus.todo_later(busmod.TODO_SAVE_CONFIG | busmod.TODO_UPDATE_STATE)
    return OK


# -- epochs and config -------------------------------------------------------------------
def _saveconfig(c, bus, argv):
    try:
        nodes_conf.save(bus.state, bus.config_file)
    except OSError as exc:
        return _err(f"error saving the cluster node config: {exc.strerror}")
    return OK


def _set_config_epoch(c, bus, argv):
    epoch = to_int(argv[2])
    if epoch is None:
        return errors.NOT_INTEGER
    if epoch < 0:
        return _err(f"Invalid config epoch specified: {epoch}")
    if len(bus.state.nodes) > 1:
        return _err("The user can assign a config epoch only when the node does not know "
                    "any other node.")
    if bus.myself.config_epoch != 0:
        return _err("Node config epoch is already non-zero")
    bus.myself.config_epoch = epoch
    bus.state.current_epoch = max(bus.state.current_epoch, epoch)
    bus.todo_later(busmod.TODO_UPDATE_STATE | busmod.TODO_SAVE_CONFIG)
    return OK


def _bumpepoch(c, bus, argv):
    bumped = bus.bump_epoch()
    return SimpleString(f"{'BUMPED' if bumped else 'STILL'} {bus.myself.config_epoch}".encode())


# -- replicas and failover ---------------------------------------------------------------
def _replicate(c, bus, argv):
    node, err = _known(bus, argv[2])
    if err is not None:
        return err
    if node is bus.myself:
        return _err("Can't replicate myself")
    if node.is_replica:
        return _err("I can only replicate a master, not a replica.")
    if bus.myself.is_master and (bus.myself.numslots or len(c.server.dbs[0])):
        return _err("To set a master the node must be empty and without assigned slots.")
    bus.set_my_master(node)
    bus.todo_later(busmod.TODO_UPDATE_STATE | busmod.TODO_SAVE_CONFIG)
    return OK


def _failover(c, bus, argv):
    mode = ""
    if len(argv) == 3:
        mode = argv[2].lower().decode("latin-1")
        if mode not in ("force", "takeover"):
            return errors.SYNTAX
    elif len(argv) > 3:
        return errors.subcommand_syntax(argv[1], argv[0])
    me = bus.myself
    if me.is_master:
        return _err("You should send CLUSTER FAILOVER to a replica")
    if me.slaveof is None:
        return _err("I'm a replica but my master is unknown to me")
    if not mode and (me.slaveof.failed or me.slaveof.link is None):
        return _err("Master is down or failed, please use CLUSTER FAILOVER FORCE")
    bus.failover.start_manual(mode)
    return OK


_SUBCOMMANDS = {
    "help": lambda c, bus, argv: help_reply(HELP), "info": _info, "myid": _myid, "nodes": _nodes, "slots": _slots, "shards": _shards,
    "links": _links, "keyslot": _keyslot, "countkeysinslot": _countkeysinslot,
    "getkeysinslot": _getkeysinslot, "count-failure-reports": _count_failure_reports,
    "replicas": _replicas, "slaves": _replicas, "meet": _meet, "forget": _forget,
    "reset": _reset,
    "addslots": lambda c, bus, argv: _addslots_or_del(c, bus, argv, True),
    "delslots": lambda c, bus, argv: _addslots_or_del(c, bus, argv, False),
    "addslotsrange": lambda c, bus, argv: _slot_ranges_or_del(c, bus, argv, True),
    "delslotsrange": lambda c, bus, argv: _slot_ranges_or_del(c, bus, argv, False),
    "flushslots": _flushslots, "setslot": _setslot, "saveconfig": _saveconfig,
    "set-config-epoch": _set_config_epoch, "bumpepoch": _bumpepoch,
    "replicate": _replicate, "failover": _failover,
}
