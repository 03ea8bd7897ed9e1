"""Testing helpers: an embedded pykv server for your own tests, and a pytest plugin.

``from pykv.testing import Server`` — see ``pykv.testing.server`` for the server and
``pykv.testing.pytest_plugin`` for the ``pykv_server``/``pykv_client``/``pykv_db`` fixtures.
The clients need redis-py: ``pip install 'pykv[testing]'``.
"""
from pykv.testing.cluster import Cluster, ClusterError
from pykv.testing.server import MissingDependency, Server, ServerError, config_args, free_port

__all__ = ["Cluster", "ClusterError", "MissingDependency", "Server", "ServerError", "config_args", "free_port"]
