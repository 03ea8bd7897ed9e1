"""Where a command must run: Redis 7.0's getNodeByQuery and clusterRedirectClient.

``Router.check(client, cmd, argv)`` is what the dispatcher calls (once per command while
cluster mode is on); it returns None to run the command here, or the redirection error:
``-MOVED slot ip:port``, ``-ASK``, ``-TRYAGAIN``, ``-CROSSSLOT``, ``-CLUSTERDOWN``. Keys
come from the command table's key specs (``pykv.server.keyspecs``: scripts' declared keys
included); EXEC checks every queued command as one request; SSUBSCRIBE, SUNSUBSCRIBE and
SPUBLISH are routed by their channels' slots.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.cluster import ports
from pykv.cluster.bus import ClusterBus
from pykv.cluster.keyslot import key_hash_slot
from pykv.cluster.state import STATE_OK, ClusterNode
from pykv.protocol import ErrorReply
from pykv.scripting.engine import SLOT_ANY
from pykv.server.keyspecs import find_keys

_SHARD_PUBSUB = frozenset({"ssubscribe", "sunsubscribe", "spublish"})
ASKING_NEXT, ASKING_NOW = 2, 1  # ASKING just ran / applies to the command being checked


def _has_keys(cmd: Any) -> bool:
    return bool(cmd.key_specs) or cmd.movablekeys or cmd.fullname == "exec"


# commands whose one key is always at the same index, although a finder gives its flags
_FIXED_KEY = {"set": 1, "bitfield": 1}


def _classify(cmd: Any) -> int:
    """0: no keys (never redirected); N > 0: exactly one key, always ``argv[N]`` (the
    fast path); -1: anything else (key specs walked per call)."""
    if not _has_keys(cmd):
        return 0
    name = cmd.fullname
    if name in _FIXED_KEY:
        return _FIXED_KEY[name]
    if name in _SHARD_PUBSUB or cmd.movablekeys or cmd.get_keys is not None or \
            len(cmd.key_specs) != 1:
        return -1
    spec = cmd.key_specs[0]
    bs, fk = spec["begin_search"], spec["find_keys"]
    if "not_key" in spec.get("flags", ()) or bs["type"] != "index" or \
            fk["type"] != "range" or fk["spec"]["lastkey"] != 0:
        return -1
    return bs["spec"]["index"]


def _keys(cmd: Any, argv: list[bytes]) -> list[bytes]:
    name = cmd.fullname
    if name in _SHARD_PUBSUB:
        return argv[1:2] if name == "spublish" else argv[1:]
    found = find_keys(cmd, argv)
    return [argv[i] for i, _flags in found] if found else []


class Router:
    """The dispatcher's cluster check, over a node's ``ClusterBus``."""

    def __init__(self, bus: ClusterBus, db0: Any) -> None:
        self.bus = bus
        self.state = bus.state
        self.db0 = db0
        self.config = bus.config
        self._kinds: dict[Any, int] = {}  # command -> _classify(command)

    def check(self, client: Any, cmd: Any, argv: list[bytes]) -> ErrorReply | None:
        asking = getattr(client, "cluster_asking", 0)
        if asking:
            if asking == ASKING_NEXT:
                client.cluster_asking = ASKING_NOW
            elif client.multi is None:
                client.cluster_asking = asking = 0
        if client.replaying or client.is_master:  # our master's stream is never redirected
            return None
        kind = self._kinds.get(cmd)
        if kind is None:
            kind = self._kinds[cmd] = _classify(cmd)
        if kind == 0:
            return None
        if kind > 0 and len(argv) > kind:  # one key: served here when nothing is special
            slot = key_hash_slot(argv[kind])
            state = self.state
            if state.slots[slot] is state.myself and state.state == STATE_OK and \
                    slot not in state.migrating and slot not in state.importing:
                return None
        node, slot, code = self.node_by_query(client, cmd, argv, asking == ASKING_NEXT
                                              or asking == ASKING_NOW)
        if node is self.state.myself and code is None:
            return None
        return self.redirect_error(client, node, slot, code)

    def first_slot(self, commands: list) -> int:
        """The slot of the first key of ``commands`` ((cmd, argv) pairs), -1 without keys:
        the slot EXEC's check leaves to the scripts it runs (Redis's ``c->slot``)."""
        for cmd, argv in commands:
            for key in _keys(cmd, argv):
                return key_hash_slot(key)
        return -1

    def script_check(self, caller: Any, cmd: Any, argv: list[bytes], ctx: Any) -> bytes | None:
        """scriptVerifyClusterState: a command a script runs must be served here (keys it
        did not declare included), and its keys must hash to the script's one slot
        (``ctx.slot``: the declared keys' slot, else the first one used) unless the
        script may cross slots (``allow-cross-slot-keys``, EVAL without a shebang); the
        error text for redis.call, or None."""
        if caller.replaying or not _has_keys(cmd):
            return None
        asking = getattr(caller, "cluster_asking", 0) != 0
        node, slot, code = self.node_by_query(caller, cmd, argv, asking)
        if node is self.state.myself and code is None:
            if slot < 0 or ctx.slot == SLOT_ANY:
                return None
            if ctx.slot == -1:
                ctx.slot = slot
            elif ctx.slot != slot:
                return errors.SCRIPT_CROSS_SLOT
            return None
        if code == "down_ro":
            return errors.SCRIPT_CLUSTER_DOWN_RO
        if code == "down":
            return errors.SCRIPT_CLUSTER_DOWN
        return errors.SCRIPT_NON_LOCAL_KEY

    def node_by_query(self, client: Any, cmd: Any, argv: list[bytes], asking: bool
                      ) -> tuple[ClusterNode | None, int, str | None]:
        state = self.state
        me = state.myself
        if cmd.fullname == "exec":
            if client.multi is None:
                return me, -1, None
            commands = client.multi
        else:
            commands = [(cmd, argv)]
        is_shard_pubsub = cmd.fullname in _SHARD_PUBSUB
        first: bytes | None = None
        node: ClusterNode | None = None
        slot = 0
        multiple = migrating = importing = False
        missing = 0
        for mcmd, margv in commands:
            for key in _keys(mcmd, margv):
                this_slot = key_hash_slot(key)
                if first is None:
                    first, slot = key, this_slot
                    node = state.slots[slot]
                    if node is None:
                        return None, slot, "unbound"
                    if node is me and slot in state.migrating:
                        migrating = True
                    elif slot in state.importing:
                        importing = True
                elif key != first:
                    if this_slot != slot:
                        return None, slot, "crossslot"
                    multiple = True
                if (migrating or importing) and not is_shard_pubsub and \
                        self.db0.get(key, touch=False) is None:
                    missing += 1
        if node is None:  # no keys: no slot
            return me, -1, None
        if state.state != STATE_OK:
            cfg = self.config
            if is_shard_pubsub:
                if not cfg.cluster_allow_pubsubshard_when_down:
                    return None, slot, "down"
            elif not cfg.cluster_allow_reads_when_down:
                return None, slot, "down"
            elif cmd.is_write or (cmd.fullname == "exec" and
                                  any(c.is_write for c, _ in commands)):
                return None, slot, "down_ro"
        if (migrating or importing) and cmd.fullname == "migrate":
            return me, slot, None
        if migrating and missing:
            return state.migrating[slot], slot, "ask"
        if importing and (asking or "asking" in cmd.flags):
            if multiple and missing:
                return None, slot, "tryagain"
            return me, slot, None
        is_write = cmd.is_write or (cmd.fullname == "exec"
                                    and any(c.is_write for c, _ in commands))
        if (getattr(client, "cluster_readonly", False) or is_shard_pubsub) and \
                not is_write and me.is_replica and me.slaveof is node:
            return me, slot, None
        if node is not me:
            return node, slot, "moved"
        return node, slot, None

    def endpoint(self, node: ClusterNode) -> str:
        kind = self.config.cluster_preferred_endpoint_type
        if kind == "hostname":
            return node.hostname or "?"
        if kind == "unknown-endpoint":
            return "?"
        return node.ip

    def redirect_error(self, client: Any, node: ClusterNode | None, slot: int,
                       code: str | None) -> ErrorReply:
        if code == "crossslot":
            return errors.CROSSSLOT
        if code == "tryagain":
            return errors.TRYAGAIN
        if code == "down":
            return errors.CLUSTERDOWN
        if code == "down_ro":
            return errors.CLUSTERDOWN_RO
        if code == "unbound":
            return errors.CLUSTERDOWN_UNBOUND
        assert node is not None
        port = ports.client_port(node, ports.wants_pport(self.config, client))
        return errors.cluster_redirect("ASK" if code == "ask" else "MOVED", slot,
                                       self.endpoint(node), port)

    def link_count(self) -> int:
        """Open bus links, both directions (INFO's cluster_connections)."""
        return len(self.bus.handlers)
