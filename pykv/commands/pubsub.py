"""Pub/Sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB *.

Each (un)subscription is confirmed by its own reply (``[kind, name, count]``, a push in
RESP3), so these handlers write their replies themselves and return ``NO_REPLY``. The
count is channels + patterns for the classic commands and shard channels alone for the
shard ones, as Redis counts them. Delivery and the registries live in
``pykv.server.pubsub``.
"""
from __future__ import annotations

from pykv.commands.registry import command
from pykv.protocol import ErrorReply, Push
from pykv.server.client import NO_REPLY
from pykv.util.glob import stringmatch


def _count(c) -> int:
    return len(c.channels) + len(c.patterns)


def _confirm(c, kind: bytes, name: bytes | None, count: int) -> None:
    # a push, as Redis 7.0 sends it: CLIENT REPLY OFF/SKIP never silences it
    c.add_push(Push([kind, name, count]))


@command("subscribe")
def subscribe(c, argv):
    ps = c.server.pubsub
    for channel in argv[1:]:
        ps.subscribe(c, channel)
        _confirm(c, b"subscribe", channel, _count(c))
    c.end_skipped_command()
    return NO_REPLY


@command("psubscribe")
def psubscribe(c, argv):
    ps = c.server.pubsub
    for pattern in argv[1:]:
        ps.psubscribe(c, pattern)
        _confirm(c, b"psubscribe", pattern, _count(c))
    c.end_skipped_command()
    return NO_REPLY


@command("ssubscribe")
def ssubscribe(c, argv):
    if c.deny_blocking:
        return ErrorReply(b"ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    ps = c.server.pubsub
    for channel in argv[1:]:
        ps.ssubscribe(c, channel)
        _confirm(c, b"ssubscribe", channel, len(c.shard_channels))
    c.end_skipped_command()
    return NO_REPLY


def _unsubscribe_many(c, names, own: set[bytes], remove, kind: bytes, count) -> None:
    names = list(names) if names else list(own)
    if not names:
        _confirm(c, kind, None, count(c))
        return
    for name in names:
        remove(c, name)
        _confirm(c, kind, name, count(c))


@command("unsubscribe")
def unsubscribe(c, argv):
    _unsubscribe_many(c, argv[1:], c.channels, c.server.pubsub.unsubscribe, b"unsubscribe",
                      _count)
    c.end_skipped_command()
    return NO_REPLY


@command("punsubscribe")
def punsubscribe(c, argv):
    _unsubscribe_many(c, argv[1:], c.patterns, c.server.pubsub.punsubscribe,
                      b"punsubscribe", _count)
    c.end_skipped_command()
    return NO_REPLY


@command("sunsubscribe")
def sunsubscribe(c, argv):
    _unsubscribe_many(c, argv[1:], c.shard_channels, c.server.pubsub.sunsubscribe,
                      b"sunsubscribe", lambda cl: len(cl.shard_channels))
    c.end_skipped_command()
    return NO_REPLY


def unsubscribe_all(c) -> None:
    """RESET: leave every channel, pattern and shard channel without replies."""
    c.server.pubsub.forget_client(c)


@command("publish")
def publish(c, argv):
    if c.server.cluster is not None:  # every node of the cluster delivers it too
        c.server.cluster.bus.publish(argv[1], argv[2])
    return c.server.pubsub.publish(argv[1], argv[2])


@command("spublish")
def spublish(c, argv):
    if c.server.cluster is not None:  # the shard's replicas deliver it too
        c.server.cluster.bus.publish(argv[1], argv[2], shard=True)
    return c.server.pubsub.spublish(argv[1], argv[2])


# -- PUBSUB introspection -----------------------------------------------------------------
def _names(registry, argv) -> list[bytes]:
    if len(argv) > 3:
        raise ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '"
                         + argv[1] + b"'. Try PUBSUB HELP.")
    pattern = argv[2] if len(argv) == 3 else None
    return [name for name in registry if pattern is None or stringmatch(pattern, name)]


@command("pubsub|channels")
def pubsub_channels(c, argv):
    return _names(c.server.pubsub.channels, argv)


@command("pubsub|shardchannels")
def pubsub_shardchannels(c, argv):
    return _names(c.server.pubsub.shard_channels, argv)


@command("pubsub|numsub")
def pubsub_numsub(c, argv):
    registry = c.server.pubsub.channels
    out: list = []
    for channel in argv[2:]:
        out += [channel, len(registry.get(channel, ()))]
    return out


@command("pubsub|shardnumsub")
def pubsub_shardnumsub(c, argv):
    registry = c.server.pubsub.shard_channels
    out: list = []
    for channel in argv[2:]:
        out += [channel, len(registry.get(channel, ()))]
    return out


@command("pubsub|numpat")
def pubsub_numpat(c, argv):
    return len(c.server.pubsub.patterns)


_HELP = [
    b"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"CHANNELS [<pattern>]",
    b"    Return the currently active channels matching a <pattern> (default: '*').",
    b"NUMPAT",
    b"    Return number of subscriptions to patterns.",
    b"NUMSUB [<channel> ...]",
    b"    Return the number of subscribers for the specified channels, excluding",
    b"    pattern subscriptions(default: no channels).",
    b"SHARDCHANNELS [<pattern>]",
    b"    Return the currently active shard level channels matching a <pattern> (default: '*').",
    b"SHARDNUMSUB [<shardchannel> ...]",
    b"    Return the number of subscribers for the specified shard level channel(s)",
    b"HELP",
    b"    Prints this help.",
]


@command("pubsub|help")
def pubsub_help(c, argv):
    from pykv.protocol import SimpleString

    return [SimpleString(line) for line in _HELP]
