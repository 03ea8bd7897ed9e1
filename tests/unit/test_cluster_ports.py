"""pykv.cluster.ports: the announced (port, pport, cport) and the port a client is told, as
Redis 7.0's deriveAnnouncedPorts and clusterRedirectClient (checked against redis-server in
tests/integration/test_cluster_tls.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pykv.cluster import ports


def cfg(**kw):
    base = {"port": 7000, "tls_port": 7100, "tls_cluster": False, "cluster_port": 0,
            "cluster_announce_port": 0, "cluster_announce_tls_port": 0,
            "cluster_announce_bus_port": 0}
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize(("settings", "expected"), [
    ({}, (7000, 0, 17000)),
    ({"cluster_announce_port": 8000}, (8000, 0, 17000)),
    ({"cluster_announce_tls_port": 8100}, (7000, 0, 17000)),  # ignored without tls-cluster
    ({"tls_cluster": True}, (7100, 7000, 17100)),
    ({"tls_cluster": True, "cluster_port": 9000}, (7100, 7000, 9000)),
    ({"tls_cluster": True, "cluster_announce_port": 8000}, (8000, 7000, 17100)),
    ({"tls_cluster": True, "cluster_announce_tls_port": 8100}, (8100, 0, 17100)),
    ({"tls_cluster": True, "cluster_announce_tls_port": 8100, "cluster_announce_port": 8000},
     (8100, 8000, 17100)),
    ({"tls_cluster": True, "cluster_announce_bus_port": 9500}, (7100, 7000, 9500)),
])
def test_announced_ports(settings, expected):
    assert ports.announced_ports(cfg(**settings)) == expected


def test_plaintext_clients_get_the_pport_in_a_tls_cluster():
    node = SimpleNamespace(port=7100, pport=7000)
    plain = SimpleNamespace(conn=SimpleNamespace(type_name="tcp"))
    tls = SimpleNamespace(conn=SimpleNamespace(type_name="tls"))
    script = SimpleNamespace(conn=None)  # a client with no connection (Lua, AOF)
    on = cfg(tls_cluster=True)
    assert ports.client_port(node, ports.wants_pport(on, plain)) == 7000
    assert ports.client_port(node, ports.wants_pport(on, tls)) == 7100
    assert ports.client_port(node, ports.wants_pport(on, script)) == 7100
    assert ports.client_port(node, ports.wants_pport(cfg(), plain)) == 7100
    # a node whose pport is not known yet: its port
    assert ports.client_port(SimpleNamespace(port=7100, pport=0), True) == 7100
