"""Which ports a cluster node announces and which one a client is told, as Redis 7.0 does.

With ``tls-cluster yes`` the bus runs over TLS and the TLS port is the node's client port:
the bus header's ``myport`` (and CLUSTER NODES/SLOTS, MOVED/ASK for TLS clients) carries
``tls-port``, and ``pport`` carries the plaintext ``port`` for the clients that are not on
TLS. The bus port is that client port + 10000 unless ``cluster-port`` is set
(Redis's clusterInit and deriveAnnouncedPorts). Without ``tls-cluster`` the plaintext port
is the client port and no ``pport`` is announced.
"""
from __future__ import annotations

from typing import Any

PORT_INCR = 10000


def base_port(config: Any) -> int:
    """The port the bus port is derived from: ``tls-port`` with ``tls-cluster``."""
    return int(config.tls_port if config.tls_cluster else config.port)


def bus_port(config: Any) -> int:
    """The bus listener's port: ``cluster-port``, else the base port + 10000."""
    return int(config.cluster_port or base_port(config) + PORT_INCR)


def announced_ports(config: Any) -> tuple[int, int, int]:
    """(port, pport, cport) as deriveAnnouncedPorts: ``cluster-announce-tls-port`` (with
    ``tls-cluster``) replaces the TLS port and makes ``cluster-announce-port`` the pport;
    without it ``cluster-announce-port`` replaces the client port (the pport stays the
    plaintext port)."""
    port = base_port(config)
    pport = int(config.port) if config.tls_cluster else 0
    cport = bus_port(config)
    if config.tls_cluster and config.cluster_announce_tls_port:
        port = int(config.cluster_announce_tls_port)
        pport = int(config.cluster_announce_port)
    elif config.cluster_announce_port:
        port = int(config.cluster_announce_port)
    if config.cluster_announce_bus_port:
        cport = int(config.cluster_announce_bus_port)
    return port, pport, cport


def wants_pport(config: Any, client: Any) -> bool:
    """A client not on TLS in a TLS cluster is given nodes' plaintext ports (``pport``)."""
    if not config.tls_cluster:
        return False
    conn = getattr(client, "conn", None)
    return conn is not None and getattr(conn, "type_name", "") != "tls"


def client_port(node: Any, use_pport: bool) -> int:
    """The port of ``node`` to show a client: its pport when asked for and known."""
    return node.pport if use_pport and node.pport else node.port
