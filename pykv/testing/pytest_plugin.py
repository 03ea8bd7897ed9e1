"""pytest plugin (entry point ``pykv``): the ``pykv_server`` fixture.

``pykv_server`` is a session-scoped ``pykv.testing.Server``; use ``pykv_server.client()``
for a ``redis.Redis`` or ``pykv_server.port`` with any client. Databases are not flushed
between tests: call ``FLUSHALL`` where a test needs an empty server.
"""
from __future__ import annotations

import pytest

from pykv.testing.server import Server


@pytest.fixture(scope="session")
def pykv_server():
    with Server() as server:
        yield server
