"""Transports. Importing this package registers the built-in connection types."""
from pykv.net.base import (
    Connection,
    ConnectionType,
    Listener,
    ListenerSpec,
    connection_types,
    get_connection_type,
    register_connection_type,
)
from pykv.net.tcp import TcpConnectionType
from pykv.net.tls import TlsConnectionType
from pykv.net.unix import UnixConnectionType

register_connection_type(TcpConnectionType())
register_connection_type(TlsConnectionType())
register_connection_type(UnixConnectionType())
# rdma imports only the standard library here; pyverbs loads when a listener selects it
from pykv.net.rdma import RdmaConnectionType  # noqa: E402

register_connection_type(RdmaConnectionType())

__all__ = [
    "Connection", "ConnectionType", "Listener", "ListenerSpec", "connection_types",
    "get_connection_type", "register_connection_type",
]
