"""The reply-buffer share of the clients cron (pykv.server.replybuf.clients_cron): Redis's
clientsCron visits numclients/hz clients a tick (at least 5, all when fewer), in turn."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pykv.server import replybuf


def _server(nclients: int, hz: int = 10) -> SimpleNamespace:
    clients = {i: SimpleNamespace(id=i, closed=False, buf_size=16384, buf_peak=16384,
                                  buf_peak_reset_ms=0) for i in range(nclients)}
    return SimpleNamespace(clients=clients, config=SimpleNamespace(hz=hz),
                           clients_cron_cursor=0, reply_buffer_resizing_enabled=True,
                           reply_buffer_peak_reset_time=-1, stat_reply_buffer_shrinks=0,
                           stat_reply_buffer_expands=0)


def _visited(server, monkeypatch) -> list[int]:
    seen: list[int] = []
    monkeypatch.setattr(replybuf, "resize_reply_buffer",
                        lambda srv, c, now_ms: seen.append(c.id))
    replybuf.clients_cron(server)
    return seen


@pytest.mark.parametrize("nclients", [0, 1, 3, 5])
def test_few_clients_are_all_visited_every_tick(nclients, monkeypatch):
    server = _server(nclients)
    for _ in range(3):
        assert sorted(_visited(server, monkeypatch)) == list(range(nclients))


@pytest.mark.parametrize("nclients,hz,per_tick", [(50, 10, 5), (1000, 10, 100), (12, 10, 5),
                                                  (37, 1, 37), (1000, 100, 10)])
def test_many_clients_are_visited_in_turn(nclients, hz, per_tick, monkeypatch):
    server = _server(nclients, hz)
    seen: list[int] = []
    ticks = -(-nclients // per_tick)
    for _ in range(ticks):
        got = _visited(server, monkeypatch)
        assert len(got) == per_tick
        seen += got
    # one full turn: every client once (the last tick wraps around to the first ones)
    assert sorted(set(seen)) == list(range(nclients))
    assert len(seen) - nclients == ticks * per_tick - nclients


def test_clients_that_left_do_not_stop_the_turn(monkeypatch):
    server = _server(40)
    first = _visited(server, monkeypatch)
    for cid in range(20):
        del server.clients[cid]
    later = [cid for _ in range(4) for cid in _visited(server, monkeypatch)]
    assert set(later) == set(range(20, 40)) and len(first) == 5


def test_the_resize_still_runs(monkeypatch):
    server = _server(3)
    for c in server.clients.values():
        c.buf_peak = 100  # under half the buffer: it shrinks
    replybuf.clients_cron(server)
    assert [c.buf_size for c in server.clients.values()] == [replybuf.REPLY_MIN_BYTES] * 3
    assert server.stat_reply_buffer_shrinks == 3
