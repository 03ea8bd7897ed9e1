"""The config table: every setting pykv knows, as typed data (like Redis's ``config.c``).

Each ``ConfigEntry`` says its name (and aliases), its type, default, bounds and whether it
may change at runtime. Parsing, formatting (CONFIG GET / REWRITE) and validation come from
the type, so a new setting is one line here. The live values sit as attributes on
``pykv.config.Config`` (``config.proto_max_bulk_len``), named by the entry with ``-``→``_``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BOOL, INT, MEMORY, ENUM, STRING, MULTI = "bool", "int", "memory", "enum", "string", "multi"

LLONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    type: str
    default: Any
    min: int = 0
    max: int = LLONG_MAX
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    immutable: bool = False
    sensitive: bool = False
    # for multi-valued entries: whether CONFIG SET/GET joins with spaces
    flags: frozenset[str] = field(default_factory=frozenset)

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")


def _e(name: str, type_: str, default: Any, **kw: Any) -> ConfigEntry:
    return ConfigEntry(name, type_, default, **kw)


ENTRIES: list[ConfigEntry] = [
    # networking
    _e("port", INT, 6379, min=0, max=65535),
    _e("bind", MULTI, ["127.0.0.1"]),
    _e("unixsocket", STRING, "", immutable=True),
    _e("unixsocketperm", INT, 0, min=0, max=0o777, immutable=True, flags=frozenset({"octal"})),
    _e("tcp-backlog", INT, 511, min=0, max=INT_MAX, immutable=True),
    _e("protected-mode", BOOL, True),
    _e("timeout", INT, 0, min=0, max=INT_MAX),
    _e("tcp-keepalive", INT, 300, min=0, max=INT_MAX),
    _e("maxclients", INT, 10000, min=1, max=INT_MAX),
    _e("databases", INT, 16, min=1, max=INT_MAX, immutable=True),
    _e("requirepass", STRING, "", sensitive=True),
    _e("proto-max-bulk-len", MEMORY, 512 * 1024 * 1024, min=1024 * 1024, max=LLONG_MAX),
    _e("client-query-buffer-limit", MEMORY, 1024 * 1024 * 1024, min=1024 * 1024,
       max=LLONG_MAX),
    _e("hz", INT, 10, min=0, max=INT_MAX),
    _e("dynamic-hz", BOOL, True),
    # logging and files
    _e("loglevel", ENUM, "notice", choices=("debug", "verbose", "notice", "warning", "nothing")),
    _e("logfile", STRING, "", immutable=True),
    _e("daemonize", BOOL, False, immutable=True),
    _e("pidfile", STRING, ""),
    _e("dir", STRING, "."),
    _e("dbfilename", STRING, "dump.rdb"),
    _e("save", MULTI, []),
    _e("appendonly", BOOL, False),
    # memory
    _e("maxmemory", MEMORY, 0, min=0, max=LLONG_MAX),
    _e("maxmemory-policy", ENUM, "noeviction", choices=(
        "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
        "allkeys-lfu", "allkeys-random", "noeviction")),
    # latency and slow log
    _e("slowlog-log-slower-than", INT, 10000, min=-1, max=LLONG_MAX),
    _e("slowlog-max-len", INT, 128, min=0, max=LLONG_MAX),
    _e("latency-monitor-threshold", INT, 0, min=0, max=LLONG_MAX),
    _e("busy-reply-threshold", INT, 5000, min=0, max=LLONG_MAX, aliases=("lua-time-limit",)),
    # encodings (shared with the data-type family)
    _e("list-max-listpack-size", INT, -2, min=-(1 << 31), max=INT_MAX,
       aliases=("list-max-ziplist-size",)),
    _e("hash-max-listpack-entries", INT, 128, min=0, max=LLONG_MAX,
       aliases=("hash-max-ziplist-entries",)),
    _e("hash-max-listpack-value", INT, 64, min=0, max=LLONG_MAX,
       aliases=("hash-max-ziplist-value",)),
    _e("set-max-intset-entries", INT, 512, min=0, max=LLONG_MAX),
    _e("zset-max-listpack-entries", INT, 128, min=0, max=LLONG_MAX,
       aliases=("zset-max-ziplist-entries",)),
    _e("zset-max-listpack-value", INT, 64, min=0, max=LLONG_MAX,
       aliases=("zset-max-ziplist-value",)),
    _e("notify-keyspace-events", STRING, ""),
    _e("active-expire-effort", INT, 1, min=1, max=10),
]

BY_NAME: dict[str, ConfigEntry] = {}
for _entry in ENTRIES:
    BY_NAME[_entry.name] = _entry
    for _alias in _entry.aliases:
        BY_NAME[_alias] = _entry
