"""Pub/Sub delivery: who listens to which channel or pattern, and keyspace events.

``PubSub`` keeps three registries (channels, patterns, shard channels), each mapping a name
to the subscribed clients in subscription order; a client mirrors its own names in
``client.channels/patterns/shard_channels`` (the dispatcher's subscribed-mode check reads
those). Messages are ``Push`` replies: arrays in RESP2, ``>`` pushes in RESP3, out-of-band as
``Client.add_push`` writes them (whatever CLIENT REPLY says). A message is encoded once per
protocol and appended to each subscriber's output buffer; every subscriber it reached is
written once at the end of the current callback (``ServerCore.defer_flush``), as Redis
writes its clients' buffers in beforeSleep, and its stream stays in order with any reply it
is waiting for.

A subscriber that cannot keep up is bounded by ``client-output-buffer-limit pubsub``
(hard limit at once, soft limit for longer than its seconds): like Redis, it is
disconnected and its pending output dropped.

Keyspace notifications: ``notify-keyspace-events`` selects classes (``g$lshzxetdmn``) and
the channel kinds (``K`` keyspace, ``E`` keyevent). When something would be delivered,
``server.keyspace_notifier`` is set to ``PubSub.notify_keyspace`` (see
``pykv.server.notify``); otherwise it stays None and notifying costs one attribute test.
Expired keys are announced from the keyspace's ``on_expired`` hook.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import cython

from pykv.protocol import Push, write_reply
from pykv.server.notify import notify
from pykv.util.glob import stringmatch

if TYPE_CHECKING:
    from pykv.server.client import Client
    from pykv.server.server import Server
    from pykv.storage.keyspace import Database

log = logging.getLogger("pykv")

# what 'A' stands for in notify-keyspace-events (Redis 7.0: not 'm' key-miss nor 'n' new)
KEYSPACE_ALL_CLASSES = "g$lshzxetd"

Registry = dict[bytes, dict[Any, None]]


def parse_keyspace_events(text: str) -> frozenset[str]:
    """The set of flag letters in a (normalised) ``notify-keyspace-events`` value."""
    flags = set(text)
    if "A" in flags:
        flags.discard("A")
        flags.update(KEYSPACE_ALL_CLASSES)
    return frozenset(flags)


class PubSub:
    """The server's subscriptions and message delivery."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.channels: Registry = {}
        self.patterns: Registry = {}
        self.shard_channels: Registry = {}
        self.event_flags: frozenset[str] = frozenset()
        server.client_close_hooks.append(self.forget_client)
        for db in server.dbs:
            db.on_expired = self._on_expired
        config = server.config
        config.on_change("notify-keyspace-events", self._on_events_config)
        self._on_events_config(config.notify_keyspace_events)

    # -- subscribing ------------------------------------------------------------------
    def subscribe(self, client: Client, channel: bytes) -> bool:
        """Add ``channel`` to ``client``'s subscriptions; False if it was already there."""
        return _add(self.channels, client.channels, client, channel)

    def unsubscribe(self, client: Client, channel: bytes) -> bool:
        return _remove(self.channels, client.channels, client, channel)

    def psubscribe(self, client: Client, pattern: bytes) -> bool:
        return _add(self.patterns, client.patterns, client, pattern)

    def punsubscribe(self, client: Client, pattern: bytes) -> bool:
        return _remove(self.patterns, client.patterns, client, pattern)

    def ssubscribe(self, client: Client, channel: bytes) -> bool:
        return _add(self.shard_channels, client.shard_channels, client, channel)

    def sunsubscribe(self, client: Client, channel: bytes) -> bool:
        return _remove(self.shard_channels, client.shard_channels, client, channel)

    def forget_client(self, client: Client) -> None:
        """Drop every subscription of a client that is going away (no replies)."""
        for channel in list(client.channels):
            self.unsubscribe(client, channel)
        for pattern in list(client.patterns):
            self.punsubscribe(client, pattern)
        for channel in list(client.shard_channels):
            self.sunsubscribe(client, channel)

    # -- publishing -------------------------------------------------------------------
    def publish(self, channel: bytes, message: bytes) -> int:
        """Deliver to channel subscribers and matching patterns; the number of receivers."""
        receivers = 0
        server = self.server
        clients = self.channels.get(channel)
        if clients:
            receivers += len(clients)
            _fan_out(server, clients, Push([b"message", channel, message]))
        if self.patterns:
            for pattern, clients in list(self.patterns.items()):
                if not stringmatch(pattern, channel):
                    continue
                receivers += len(clients)
                _fan_out(server, clients, Push([b"pmessage", pattern, channel, message]))
        return receivers

    def spublish(self, channel: bytes, message: bytes) -> int:
        clients = self.shard_channels.get(channel)
        if not clients:
            return 0
        _fan_out(self.server, clients, Push([b"smessage", channel, message]))
        return len(clients)

    def deliver(self, client: Client, message: Push) -> None:
        """Write one message to a subscriber, enforcing its output buffer limit."""
        _deliver(self.server, client, _encode(message, client.resp))

    # -- keyspace notifications -------------------------------------------------------
    def _on_events_config(self, value: str) -> None:
        flags = parse_keyspace_events(value or "")
        self.event_flags = flags
        active = ("K" in flags or "E" in flags) and bool(flags - {"K", "E"})
        self.server.keyspace_notifier = self.notify_keyspace if active else None
        new_key = self._on_new_key if active and "n" in flags else None
        for db in self.server.dbs:
            db.on_new_key = new_key

    def _on_new_key(self, db: Any, key: bytes) -> None:
        self.notify_keyspace("n", b"new", key, db.id)

    def notify_keyspace(self, klass: str, event: bytes, key: bytes, dbid: int) -> None:
        flags = self.event_flags
        if klass not in flags:
            return
        if "K" in flags:
            self.publish(b"__keyspace@%d__:%s" % (dbid, key), event)
        if "E" in flags:
            self.publish(b"__keyevent@%d__:%s" % (dbid, event), key)

    def _on_expired(self, db: Database, key: bytes) -> None:
        notify(self.server, "x", b"expired", key, db.id)


def _add(registry: Registry, own: set[bytes], client: Client, name: bytes) -> bool:
    if name in own:
        return False
    own.add(name)
    registry.setdefault(name, {})[client] = None
    return True


def _remove(registry: Registry, own: set[bytes], client: Client, name: bytes) -> bool:
    if name not in own:
        return False
    own.discard(name)
    clients = registry.get(name)
    if clients is not None:
        clients.pop(client, None)
        if not clients:
            del registry[name]
    return True


def install(server: Server) -> PubSub:
    return PubSub(server)


# -- delivery (typed in pubsub.pxd) -----------------------------------------------------
if not cython.compiled:  # compiled, these are C: _core.pxd's inline test, the writer's append
    def obuf_may_be_over(client: Any) -> bool:
        return True  # always run the full check (ClientCore.output_limit_closed)

    def append_encoded(out: bytearray, data: bytearray) -> None:
        out += data


def _fan_out(server: Any, clients: dict, message: Push) -> None:
    """One message to every client of a registry entry, encoded once per protocol."""
    encoded = [None, None, None, None]  # by RESP version
    for client in list(clients):
        resp = client.resp
        data = encoded[resp]
        if data is None:
            data = encoded[resp] = _encode(message, resp)
        _deliver(server, client, data)


def _encode(message: Push, resp: int) -> bytearray:
    out = bytearray()
    write_reply(out, message, resp)
    return out


def _deliver(server: Any, client: Any, data: bytearray) -> None:
    """A message encoded for ``client``'s protocol to one subscriber: out-of-band as
    ``Client.add_push`` writes it (whatever CLIENT REPLY says), then the output buffer
    limit, then a flush at the end of the current callback."""
    if client.closed or client.closing:
        return
    append_encoded(client.out, data)
    if obuf_may_be_over(client) and client.output_limit_closed():
        return
    # one write per subscriber per loop iteration, not per message: the flush runs
    # right after the current callback (the publisher's batch, a timer) completes
    if not client.write_pending:
        server.defer_flush(client)
