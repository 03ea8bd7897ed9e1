"""nodes.conf (``cluster-config-file``): Redis 7.0's format, read at start, written
atomically (a temporary file in the same directory renamed over the old one; with
``fsync``, as Redis does for epoch and slot-ownership changes, the file is fsynced before
the rename and the directory after it).

The file is CLUSTER NODES (without nodes in handshake) plus a last line
``vars currentEpoch N lastVoteEpoch M``. Loading it is clusterLoadConfig: a node line's
address is ``ip:port@cport[,hostname]``, its slots are ranges, single slots, and (on the
``myself`` line) ``[slot->-name]`` migrating / ``[slot-<-name]`` importing entries.

A node holds an exclusive ``flock`` on its file for as long as it runs (Redis's
clusterLockConfig), so that a second node started on the same file stops: ``lock`` before
loading. As the file is replaced on every save, each new file is locked before it is
renamed into place, and the lock of the old one is let go after. Forked children (BGSAVE,
AOF rewrite) close the lock's descriptor, so a child outliving a killed server never keeps
the next one from starting.
"""
from __future__ import annotations

import errno
import fcntl
import os

from pykv.cluster import bus_codec as bc
from pykv.cluster.state import FLAG_BY_NAME, ClusterNode, ClusterState, mstime


class NodesConfError(ValueError):
    """nodes.conf cannot be read as a cluster configuration (the text says where)."""


def render(state: ClusterState) -> str:
    return state.describe_all(skip_handshake=True) + \
        f"vars currentEpoch {state.current_epoch} lastVoteEpoch {state.last_vote_epoch}\n"


class ConfigLock:
    """The descriptor that holds the flock on the current nodes.conf (-1: none)."""

    def __init__(self) -> None:
        self.fd = -1
        os.register_at_fork(after_in_child=self._close_in_child)

    def _close_in_child(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def replace(self, fd: int) -> None:
        old, self.fd = self.fd, fd
        if old >= 0:
            os.close(old)


_lock = ConfigLock()


def lock(path: str, shown: str) -> None:
    """Lock ``path`` (created if missing) for this process, or raise NodesConfError with
    Redis's log text (``shown`` is the file name as configured)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise NodesConfError(f"Can't open {shown} in order to acquire a lock: "
                             f"{os.strerror(exc.errno or 0)}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise NodesConfError(
                f"Sorry, the cluster configuration file {shown} is already used by a "
                "different Redis Cluster node. Please make sure that different nodes use "
                "different cluster configuration files.") from None
        raise NodesConfError(f"Impossible to lock {shown}: "
                             f"{os.strerror(exc.errno or 0)}") from None
    _lock.replace(fd)


def save(state: ClusterState, path: str, fsync: bool = True) -> None:
    """Write ``path`` atomically (and durably when ``fsync``); the new file is locked
    first when this process holds the lock of the old one."""
    content = render(state).encode()
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f"temp-{os.getpid()}-{os.path.basename(path)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    locked = False
    try:
        if _lock.fd >= 0:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else has it
            locked = True
        os.write(fd, content)
        if fsync:
            os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        raise
    if locked:
        _lock.replace(fd)
    else:
        os.close(fd)
    if not fsync:
        return
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _node(state: ClusterState, name: str) -> ClusterNode:
    node = state.lookup(name)
    if node is None:
        node = ClusterNode(name, 0)
        state.nodes[name] = node
    return node


def load(path: str) -> ClusterState | None:
    """The state saved at ``path``; None when there is no file (or it is empty)."""
    try:
        with open(path, encoding="latin-1") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    return parse(text)


def parse(text: str) -> ClusterState:
    state: ClusterState | None = None
    myself: ClusterNode | None = None
    nodes: dict[str, ClusterNode] = {}
    current_epoch = last_vote = None
    pending_slots: list[tuple[ClusterNode, list[str]]] = []
    masters: list[tuple[ClusterNode, str]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        argv = line.split()
        if not argv:
            continue
        if argv[0] == "vars":
            pairs = argv[1:]
            if len(pairs) % 2:
                raise NodesConfError(f"line {lineno}: odd vars")
            for key, value in zip(pairs[::2], pairs[1::2], strict=True):
                if key == "currentEpoch":
                    current_epoch = int(value)
                elif key == "lastVoteEpoch":
                    last_vote = int(value)
            continue
        if len(argv) < 8:
            raise NodesConfError(f"line {lineno}: too few fields")
        name = argv[0]
        if len(name) != bc.NAMELEN:
            raise NodesConfError(f"line {lineno}: bad node name")
        node = nodes.get(name) or ClusterNode(name, 0)
        nodes[name] = node
        addr, _, hostname = argv[1].partition(",")
        hostport, _, cport = addr.partition("@")
        ip, sep, port = hostport.rpartition(":")
        if not sep:
            raise NodesConfError(f"line {lineno}: bad address")
        node.ip, node.hostname = ip, hostname
        try:
            node.port = int(port)
            node.cport = int(cport) if cport else node.port + 10000
            flags = 0
            for flag in argv[2].split(","):
                if flag != "noflags":
                    flags |= FLAG_BY_NAME.get(flag, 0)
            node.flags = flags
            node.ping_sent = mstime() if int(argv[4]) else 0
            node.pong_received = mstime() if int(argv[5]) else 0
            node.config_epoch = int(argv[6])
        except ValueError:
            raise NodesConfError(f"line {lineno}: bad number") from None
        if flags & bc.F_MYSELF:
            myself = node
        if argv[3] != "-":
            masters.append((node, argv[3]))
        pending_slots.append((node, argv[8:]))
    if myself is None:
        raise NodesConfError("no myself node")
    state = ClusterState(myself)
    state.nodes = nodes
    for node, master_name in masters:
        master = nodes.get(master_name)
        if master is None:
            master = nodes[master_name] = ClusterNode(master_name, bc.F_MASTER | bc.F_NOADDR)
        node.slaveof = master
        state.add_replica(master, node)
    for node, entries in pending_slots:
        for entry in entries:
            if entry.startswith("["):
                body = entry.strip("[]")
                if "->-" in body:
                    slot, target = body.split("->-")
                    state.migrating[int(slot)] = _node(state, target)
                elif "-<-" in body:
                    slot, source = body.split("-<-")
                    state.importing[int(slot)] = _node(state, source)
                continue
            start, _, end = entry.partition("-")
            try:
                first, last = int(start), int(end or start)
            except ValueError:
                raise NodesConfError(f"bad slot entry {entry!r}") from None
            if not 0 <= first <= last < 16384:
                raise NodesConfError(f"bad slot range {entry!r}")
            for slot in range(first, last + 1):
                state.del_slot(slot)
                state.add_slot(node, slot)
    if current_epoch is None:
        current_epoch = max((n.config_epoch for n in nodes.values()), default=0)
    state.current_epoch = current_epoch
    state.last_vote_epoch = last_vote or 0
    return state
