"""pytest plugin (entry point ``pykv``, loaded automatically once pykv is installed).

Fixtures:

``pykv_server``          one ``pykv.testing.Server`` for the whole session.
``pykv_client``          a ``redis.Redis`` on that server, the server flushed (FLUSHALL)
                         before the test; closed after it.
``pykv_db``              a ``redis.Redis`` on a database of the session server reserved for
                         this test (``SELECT``ed, FLUSHDB first): tests running at the same
                         time in one process (threads, asyncio) do not see each other's keys.
``pykv_server_factory``  ``pykv_server_factory(**Server kwargs)`` starts a dedicated server
                         (own options, e.g. ``config={"maxclients": 2}``), stopped when the
                         test ends.
``pykv_cluster``         a ``pykv.testing.Cluster`` of three pykv masters for the session
                         (``cluster_state:ok`` before the first test that uses it).
``pykv_cluster_client``  a ``redis.cluster.RedisCluster`` on that cluster, every node
                         flushed first; closed after the test.
``pykv_cluster_replicas`` three pykv masters with one replica each for the session
                         (``Cluster(3, replicas=1)``; ``replica_nodes[i]`` replicates
                         ``master_nodes[i]``).

Under pytest-xdist every worker is its own session, so each worker gets its own server
(``pykv.testing.Server`` retries on another port if two workers picked the same one).
The clients need redis-py: ``pip install 'pykv[testing]'``. For asyncio tests,
``pykv_server.async_client()`` gives a ``redis.asyncio.Redis``.

Options: ``--pykv-config NAME=VALUE`` (repeatable; also the ``pykv_config`` ini line list,
``NAME VALUE`` per line) configures the session server. When a test that used one of these
servers fails, the lines the server logged during that test are attached to the report as a
"pykv server log" section.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pykv.testing.cluster import Cluster
from pykv.testing.server import Server

_LOG_TAIL = 200  # lines of server log attached to a failing test


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pykv", "pykv embedded server")
    group.addoption("--pykv-config", action="append", default=[], metavar="NAME=VALUE",
                    help="config option for the session pykv_server (repeatable)")
    parser.addini("pykv_config", "config options for the session pykv_server, 'NAME VALUE' "
                  "per line", type="linelist", default=[])


def _session_config(config: pytest.Config) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for line in config.getini("pykv_config"):
        name, _, value = line.strip().partition(" ")
        if name:
            options[name] = value.strip()
    for item in config.getoption("pykv_config") or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise pytest.UsageError(f"--pykv-config expects NAME=VALUE, got {item!r}")
        options[name.strip()] = value
    return options


def _watch(request: pytest.FixtureRequest, server: Server) -> None:
    """Remember where this server's log stood when the test started."""
    marks: list[tuple[Server, int]] = request.node.stash.setdefault(_LOG_MARKS, [])
    marks.append((server, server.log_size()))


_LOG_MARKS = pytest.StashKey[list]()


@pytest.fixture(scope="session")
def pykv_server(pytestconfig: pytest.Config) -> Iterator[Server]:
    """A pykv server shared by the whole session (databases are not flushed for you)."""
    with Server(config=_session_config(pytestconfig)) as server:
        yield server


@pytest.fixture
def pykv_client(pykv_server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A ``redis.Redis`` on the session server, which is flushed first."""
    _watch(request, pykv_server)
    if not pykv_server.running:
        pykv_server.start()
    pykv_server.flush()
    client = pykv_server.client()
    yield client
    client.close()


class _DatabasePool:
    """Hands out database numbers of one server, one per test at a time (1 first, 0 last:
    ``pykv_client`` uses 0)."""

    def __init__(self, count: int) -> None:
        self.free = [0, *range(count - 1, 0, -1)]
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            if not self.free:
                raise RuntimeError("pykv_db: every database of the session server is in use "
                                   "(raise its 'databases' with --pykv-config databases=N)")
            return self.free.pop()

    def give_back(self, db: int) -> None:
        with self.lock:
            self.free.append(db)


_POOL = pytest.StashKey[_DatabasePool]()


@pytest.fixture
def pykv_db(pykv_server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A client on a database of the session server that only this test uses."""
    _watch(request, pykv_server)
    if not pykv_server.running:
        pykv_server.start()
    stash = request.config.stash
    if _POOL not in stash:
        probe = pykv_server.client()
        try:
            count = int(probe.config_get("databases")["databases"])
        finally:
            probe.close()
        stash[_POOL] = _DatabasePool(count)
    pool = stash[_POOL]
    db = pool.take()
    client = pykv_server.client(db=db)
    try:
        client.flushdb()
        yield client
    finally:
        client.close()
        pool.give_back(db)


@pytest.fixture
def pykv_server_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Server]]:
    """Start dedicated servers with their own options; all are stopped after the test."""
    started: list[Server] = []

    def factory(**kwargs: Any) -> Server:
        server = Server(**kwargs)
        server.start()
        started.append(server)
        _watch(request, server)
        return server

    yield factory
    for server in started:
        # keep the log readable for the report hook until after the test's report
        server.stop()


@pytest.fixture(scope="session")
def pykv_cluster() -> Iterator[Cluster]:
    """Three pykv masters formed into one Redis Cluster, shared by the session."""
    with Cluster(3) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def pykv_cluster_replicas() -> Iterator[Cluster]:
    """Three pykv masters with one replica each, shared by the session (replicas' links up
    before the first test uses it)."""
    with Cluster(3, replicas=1) as cluster:
        yield cluster


@pytest.fixture
def pykv_cluster_client(pykv_cluster: Cluster, request: pytest.FixtureRequest
                        ) -> Iterator[Any]:
    """A ``redis.cluster.RedisCluster`` on the session cluster, flushed first."""
    for node in pykv_cluster.nodes:
        _watch(request, node)
    pykv_cluster.flush()
    client = pykv_cluster.client()
    yield client
    client.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for server, mark in item.stash.get(_LOG_MARKS, []):
        text = server.log(since=mark)
        if not text:
            continue
        lines = text.splitlines()[-_LOG_TAIL:]
        report.sections.append(
            (f"pykv server log ({server.host}:{server.port}, {report.when})", "\n".join(lines)))
