"""The config table: every setting pykv knows, as typed data (like Redis's ``config.c``).

Each ``ConfigEntry`` says its name (and aliases), its type, default, bounds and whether it
may change at runtime. Parsing, formatting (CONFIG GET / REWRITE) and validation come from
the type, so a new setting is one line here. The live values sit as attributes on
``pykv.config.Config`` (``config.proto_max_bulk_len``), named by the entry with ``-``→``_``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BOOL, INT, MEMORY, ENUM, STRING, MULTI = "bool", "int", "memory", "enum", "string", "multi"
# special types, one codec each in pykv.config.values
SAVE, DIR, FLAGS, REPLICAOF = "save", "dir", "flags", "replicaof"
OBUF_LIMIT, OOM_VALUES, PERCENTILES = (
    "client-output-buffer-limit", "oom-score-adj-values", "percentiles")
KEYSPACE_EVENTS = "keyspace-events"

LLONG_MAX = (1 << 63) - 1
ULLONG_MAX = (1 << 64) - 1
INT_MAX = (1 << 31) - 1
INT_MIN = -(1 << 31)
UINT_MAX = (1 << 32) - 1


@dataclass(frozen=True)
class ConfigEntry:
    """One setting. ``type`` names a codec in ``pykv.config.values``.

    ``flags`` (strings): ``compat`` accepted and stored only, pykv does not act on it;
    ``extension`` a pykv setting that Redis 7.0 does not have;
    ``hidden`` left out of CONFIG GET patterns (exact names only); ``protected`` refused by
    CONFIG SET unless ``enable-protected-configs``; ``octal``/``percent``/``unsigned`` number
    forms; ``nullable`` a string Redis stores as NULL when empty (CONFIG REWRITE drops it).
    """

    name: str
    type: str
    default: Any
    min: int = 0
    max: int = LLONG_MAX
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    immutable: bool = False
    sensitive: bool = False
    flags: frozenset[str] = field(default_factory=frozenset)
    # enum names that mean the same value as another (CONFIG GET shows the canonical one)
    enum_synonyms: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # Redis clamps some values after accepting them (hz: 1..500), visible in CONFIG GET
    clamp: tuple[int, int] | None = None
    # extra validation for strings / flags: text -> reason, or "" when fine
    validate: Callable[[str], str] | None = None
    # a boolean Redis refuses to turn on in this build: the reason text
    reject_true: str = ""
    # multi-word values: most words accepted, and the reason text beyond that
    max_args: int = 0
    too_many_args: str = ""

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")

    @property
    def honoured(self) -> bool:
        """False for entries pykv keeps only so that configs written for Redis load."""
        return "compat" not in self.flags


def _e(name: str, type_: str, default: Any, **kw: Any) -> ConfigEntry:
    return ConfigEntry(name, type_, default, **kw)


def _f(*flags: str) -> frozenset[str]:
    return frozenset(flags)


COMPAT = _f("compat")
EXTENSION = _f("extension")  # a pykv setting Redis 7.0 does not have


def _basename_only(name: str, what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if "/" in value:
            return f"{name} can't be a path, just a {what}"
        return ""
    return check


def _nonempty_basename(name: str, what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not value:
            return f"{name} can't be empty"
        return _basename_only(name, what)(value)
    return check


def _hostname(value: str) -> str:
    if len(value.encode("utf-8", "surrogateescape")) >= 256:
        return "Hostnames must be less than 256 characters"
    if any(not (ch.isascii() and (ch.isalnum() or ch in "-.")) for ch in value):
        return "Hostnames may only contain alphanumeric characters, hyphens or dots"
    return ""


_PROC_TITLE_VARS = ("title", "listen-addr", "server-mode", "port", "tls-port", "unixsocket",
                    "config-file")


def _proc_title_template(value: str) -> str:
    """Redis accepts ``{var}`` for its known variables and ``{{``/``}}`` as braces."""
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if value.startswith(("{{", "}}"), i):
            out.append(ch)
            i += 2
        elif ch == "{":
            end = value.find("}", i)
            if end < 0 or value[i + 1:end] not in _PROC_TITLE_VARS:
                return "template format is invalid or contains unknown variables"
            out.append("x" if value[i + 1:end] != "title" else "")
            i = end + 1
        elif ch == "}":
            return "template format is invalid or contains unknown variables"
        else:
            out.append(ch)
            i += 1
    if not "".join(out).strip(" "):
        return "template format is invalid or contains unknown variables"
    return ""


def _shutdown_flags(value: str) -> str:
    words = value.split()
    if "save" in words and "nosave" in words:
        return "shutdown options SAVE and NOSAVE can't be used simultaneously"
    return ""


_NO_DEFRAG = ("Active defragmentation cannot be enabled: it requires a Redis server compiled "
              "with a modified Jemalloc like the one shipped by default with the Redis source "
              "distribution")
_YES_NO_LOCAL = ("no", "yes", "local")
_SHUTDOWN_FLAGS = ("default", "save", "nosave", "now", "force")


ENTRIES: list[ConfigEntry] = [
    # networking
    _e("port", INT, 6379, min=0, max=65535),
    # pykv listens on loopback by default (as Debian's redis.conf does), not on every
    # interface like a bare redis-server: the brief's "alone it serves 127.0.0.1:6379"
    _e("bind", MULTI, ["127.0.0.1", "-::1"], max_args=16,
       too_many_args="Too many bind addresses specified."),
    _e("unixsocket", STRING, "", immutable=True, flags=frozenset({"nullable"})),
    _e("unixsocketperm", INT, 0, min=0, max=0o777, immutable=True,
       flags=frozenset({"octal", "unsigned"})),
    _e("tcp-backlog", INT, 511, min=0, max=INT_MAX, immutable=True),
    # RDMA (Valkey 8.1+ names; pykv.net.rdma): rdma-port 0 = off, settable at runtime
    _e("rdma-port", INT, 0, min=0, max=65535, flags=EXTENSION),
    _e("rdma-bind", MULTI, [], max_args=16, too_many_args="Too many bind addresses specified.",
       flags=EXTENSION),
    _e("rdma-rx-size", INT, 1024 * 1024, min=64 * 1024, max=16 * 1024 * 1024, immutable=True,
       flags=EXTENSION),
    _e("rdma-completion-vector", INT, -1, min=-1, max=1024, immutable=True,
       flags=EXTENSION),
    _e("protected-mode", BOOL, True),
    _e("timeout", INT, 0, min=0, max=INT_MAX),
    _e("tcp-keepalive", INT, 300, min=0, max=INT_MAX),
    _e("maxclients", INT, 10000, min=1, max=UINT_MAX, flags=frozenset({"unsigned"})),
    _e("databases", INT, 16, min=1, max=INT_MAX, immutable=True),
    _e("requirepass", STRING, "", sensitive=True, flags=frozenset({"nullable"})),
    _e("proto-max-bulk-len", MEMORY, 512 * 1024 * 1024, min=1024 * 1024, max=LLONG_MAX),
    _e("client-query-buffer-limit", MEMORY, 1024 * 1024 * 1024, min=1024 * 1024,
       max=LLONG_MAX),
    _e("hz", INT, 10, min=0, max=INT_MAX, clamp=(1, 500)),
    _e("dynamic-hz", BOOL, True, flags=COMPAT),  # pykv keeps hz fixed
    # logging and files
    _e("loglevel", ENUM, "notice", choices=("debug", "verbose", "notice", "warning")),
    _e("logfile", STRING, "", immutable=True),
    _e("daemonize", BOOL, False, immutable=True),
    _e("pidfile", STRING, "", immutable=True, flags=frozenset({"nullable"})),
    # the default is the working directory at start-up (Config fills it in)
    _e("dir", DIR, "", flags=frozenset({"protected"})),
    _e("dbfilename", STRING, "dump.rdb", flags=frozenset({"protected"}),
       validate=_basename_only("dbfilename", "filename")),
    _e("save", SAVE, [(3600, 1), (300, 100), (60, 10000)]),
    _e("appendonly", BOOL, False),
    # memory
    _e("maxmemory", MEMORY, 0, min=0, max=ULLONG_MAX, flags=_f("unsigned")),
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
    _e("hash-max-listpack-entries", INT, 512, min=0, max=LLONG_MAX,
       aliases=("hash-max-ziplist-entries",)),
    _e("hash-max-listpack-value", MEMORY, 64, min=0, max=LLONG_MAX,
       aliases=("hash-max-ziplist-value",)),
    _e("set-max-intset-entries", INT, 512, min=0, max=LLONG_MAX),
    _e("zset-max-listpack-entries", INT, 128, min=0, max=LLONG_MAX,
       aliases=("zset-max-ziplist-entries",)),
    _e("zset-max-listpack-value", MEMORY, 64, min=0, max=LLONG_MAX,
       aliases=("zset-max-ziplist-value",)),
    _e("notify-keyspace-events", KEYSPACE_EVENTS, ""),
    _e("active-expire-effort", INT, 1, min=1, max=10),
    # -- the rest of Redis 7.0's settings (CONFIG GET * on redis-server 7.0.15) ----------
    _e("shutdown-on-sigint", FLAGS, (), choices=_SHUTDOWN_FLAGS, validate=_shutdown_flags),
    _e("shutdown-on-sigterm", FLAGS, (), choices=_SHUTDOWN_FLAGS, validate=_shutdown_flags),
    # bounds the wait for lagging replicas, and pykv has none
    _e("shutdown-timeout", INT, 10, min=0, max=INT_MAX, flags=COMPAT),
    _e("supervised", ENUM, "no", choices=("upstart", "systemd", "auto", "no"),
       immutable=True),
    _e("always-show-logo", BOOL, False, immutable=True),
    _e("set-proc-title", BOOL, True, immutable=True),
    _e("proc-title-template", STRING, "{title} {listen-addr} {server-mode}",
       validate=_proc_title_template),
    _e("syslog-enabled", BOOL, False, immutable=True),
    _e("syslog-ident", STRING, "redis", immutable=True),
    _e("syslog-facility", ENUM, "local0", immutable=True, choices=(
        "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6",
        "local7")),
    _e("crash-log-enabled", BOOL, True),
    _e("crash-memcheck-enabled", BOOL, True, flags=COMPAT),
    _e("use-exit-on-panic", BOOL, False, flags=_f("hidden", "compat")),
    _e("disable-thp", BOOL, True, immutable=True, flags=COMPAT),
    _e("ignore-warnings", STRING, "", flags=COMPAT),
    _e("enable-protected-configs", ENUM, "no", choices=_YES_NO_LOCAL, immutable=True),
    _e("enable-debug-command", ENUM, "no", choices=_YES_NO_LOCAL, immutable=True),
    _e("enable-module-command", ENUM, "no", choices=_YES_NO_LOCAL, immutable=True),
    _e("oom-score-adj", ENUM, "no", choices=("no", "yes", "relative", "absolute"),
       enum_synonyms={"relative": "yes"}),
    _e("oom-score-adj-values", OOM_VALUES, [0, 200, 800]),
    _e("server_cpulist", STRING, "", immutable=True, flags=_f("nullable", "compat")),
    _e("bio_cpulist", STRING, "", immutable=True, flags=_f("nullable", "compat")),
    _e("aof_rewrite_cpulist", STRING, "", immutable=True, flags=_f("nullable", "compat")),
    _e("bgsave_cpulist", STRING, "", immutable=True, flags=_f("nullable", "compat")),
    _e("io-threads", INT, 1, min=1, max=128, immutable=True, flags=COMPAT),
    _e("io-threads-do-reads", BOOL, False, immutable=True, flags=COMPAT),
    _e("jemalloc-bg-thread", BOOL, True, flags=COMPAT),
    _e("socket-mark-id", INT, 0, min=0, max=UINT_MAX, immutable=True,
       flags=_f("unsigned", "compat")),
    _e("bind-source-addr", STRING, "", flags=_f("nullable", "compat")),
    _e("watchdog-period", INT, 0, min=0, max=INT_MAX, flags=_f("hidden", "compat")),
    # clients and security
    _e("client-output-buffer-limit", OBUF_LIMIT, {
        "normal": (0, 0, 0), "replica": (256 << 20, 64 << 20, 60),
        "pubsub": (32 << 20, 8 << 20, 60)}),
    _e("maxmemory-clients", MEMORY, 0, min=-100, max=LLONG_MAX, flags=_f("percent")),
    _e("tracking-table-max-keys", INT, 1000000, min=0, max=LLONG_MAX),
    _e("aclfile", STRING, "", immutable=True),
    _e("acllog-max-len", INT, 128, min=0, max=LLONG_MAX),
    _e("acl-pubsub-default", ENUM, "resetchannels", choices=("allchannels", "resetchannels")),
    _e("sanitize-dump-payload", ENUM, "no", choices=("no", "yes", "clients")),
    # latency tracking
    _e("latency-tracking", BOOL, True),
    _e("latency-tracking-info-percentiles", PERCENTILES, [50.0, 99.0, 99.9]),
    # memory and eviction
    _e("maxmemory-samples", INT, 5, min=1, max=INT_MAX),
    _e("maxmemory-eviction-tenacity", INT, 10, min=0, max=100),
    _e("lfu-log-factor", INT, 10, min=0, max=INT_MAX),
    _e("lfu-decay-time", INT, 1, min=0, max=INT_MAX),
    _e("activerehashing", BOOL, True, flags=COMPAT),
    _e("lazyfree-lazy-eviction", BOOL, False),
    _e("lazyfree-lazy-expire", BOOL, False),
    _e("lazyfree-lazy-server-del", BOOL, False, flags=COMPAT),
    _e("lazyfree-lazy-user-del", BOOL, False),
    _e("lazyfree-lazy-user-flush", BOOL, False, flags=COMPAT),
    _e("activedefrag", BOOL, False, reject_true=_NO_DEFRAG),
    _e("active-defrag-ignore-bytes", MEMORY, 100 << 20, min=1, max=LLONG_MAX, flags=COMPAT),
    _e("active-defrag-threshold-lower", INT, 10, min=0, max=1000, flags=COMPAT),
    _e("active-defrag-threshold-upper", INT, 100, min=0, max=1000, flags=COMPAT),
    _e("active-defrag-cycle-min", INT, 1, min=1, max=99, flags=COMPAT),
    _e("active-defrag-cycle-max", INT, 25, min=1, max=99, flags=COMPAT),
    _e("active-defrag-max-scan-fields", INT, 1000, min=1, max=LLONG_MAX, flags=COMPAT),
    # data types
    _e("list-compress-depth", INT, 0, min=0, max=INT_MAX, flags=COMPAT),
    _e("stream-node-max-bytes", MEMORY, 4096, min=0, max=LLONG_MAX),
    _e("stream-node-max-entries", INT, 100, min=0, max=LLONG_MAX),
    _e("hll-sparse-max-bytes", MEMORY, 3000, min=0, max=LLONG_MAX),
    # persistence
    _e("rdbcompression", BOOL, True),
    _e("rdbchecksum", BOOL, True, immutable=True),
    _e("rdb-del-sync-files", BOOL, False, flags=COMPAT),
    _e("rdb-save-incremental-fsync", BOOL, True, flags=COMPAT),
    _e("stop-writes-on-bgsave-error", BOOL, True),
    _e("appendfilename", STRING, "appendonly.aof", immutable=True,
       validate=_nonempty_basename("appendfilename", "filename")),
    _e("appenddirname", STRING, "appendonlydir", immutable=True,
       validate=_nonempty_basename("appenddirname", "dirname")),
    _e("appendfsync", ENUM, "everysec", choices=("everysec", "always", "no")),
    _e("no-appendfsync-on-rewrite", BOOL, False),
    _e("auto-aof-rewrite-percentage", INT, 100, min=0, max=INT_MAX),
    _e("auto-aof-rewrite-min-size", MEMORY, 64 << 20, min=0, max=LLONG_MAX),
    _e("aof-load-truncated", BOOL, True),
    _e("aof-use-rdb-preamble", BOOL, True),
    _e("aof-rewrite-incremental-fsync", BOOL, True, flags=COMPAT),
    _e("aof-timestamp-enabled", BOOL, False),
    _e("aof-disable-auto-gc", BOOL, False, flags=COMPAT),
    _e("rdb-key-save-delay", INT, 0, min=INT_MIN, max=INT_MAX, flags=_f("hidden")),
    _e("key-load-delay", INT, 0, min=INT_MIN, max=INT_MAX, flags=_f("hidden")),
    _e("loading-process-events-interval-bytes", INT, 2 << 20, min=1024, max=INT_MAX,
       flags=_f("hidden", "compat")),
    # replication (pykv.replication: the master and the replica side act on these)
    _e("replicaof", REPLICAOF, "", aliases=("slaveof",), immutable=True),
    _e("masterauth", STRING, "", sensitive=True, flags=_f("nullable")),
    _e("masteruser", STRING, "", sensitive=True, flags=_f("nullable")),
    _e("replica-read-only", BOOL, True, aliases=("slave-read-only",)),
    _e("replica-serve-stale-data", BOOL, True, aliases=("slave-serve-stale-data",)),
    _e("replica-lazy-flush", BOOL, False, aliases=("slave-lazy-flush",), flags=COMPAT),
    _e("replica-ignore-maxmemory", BOOL, True, aliases=("slave-ignore-maxmemory",)),
    _e("replica-announced", BOOL, True),
    _e("replica-priority", INT, 100, min=0, max=INT_MAX, aliases=("slave-priority",)),
    _e("replica-announce-ip", STRING, "", aliases=("slave-announce-ip",),
       flags=_f("nullable")),
    _e("replica-announce-port", INT, 0, min=0, max=65535, aliases=("slave-announce-port",)),
    _e("replica-ignore-disk-write-errors", BOOL, False, flags=COMPAT),
    _e("repl-ping-replica-period", INT, 10, min=1, max=INT_MAX,
       aliases=("repl-ping-slave-period",)),
    _e("repl-timeout", INT, 60, min=1, max=INT_MAX),
    _e("repl-backlog-size", MEMORY, 1 << 20, min=1, max=LLONG_MAX),
    _e("repl-backlog-ttl", INT, 3600, min=0, max=LLONG_MAX),
    _e("repl-disable-tcp-nodelay", BOOL, False),
    _e("repl-diskless-sync", BOOL, True),
    _e("repl-diskless-sync-delay", INT, 5, min=0, max=INT_MAX),
    _e("repl-diskless-sync-max-replicas", INT, 0, min=0, max=INT_MAX),
    _e("repl-diskless-load", ENUM, "disabled", choices=("disabled", "on-empty-db", "swapdb")),
    _e("min-replicas-to-write", INT, 0, min=0, max=INT_MAX, aliases=("min-slaves-to-write",)),
    _e("min-replicas-max-lag", INT, 10, min=0, max=INT_MAX, aliases=("min-slaves-max-lag",)),
    _e("propagation-error-behavior", ENUM, "ignore",
       choices=("ignore", "panic", "panic-on-replicas"), flags=COMPAT),
    # cluster (pykv.cluster; replicas, failover and TLS on the bus wait for replication and
    # are stored for compatibility)
    _e("cluster-enabled", BOOL, False, immutable=True),
    _e("cluster-config-file", STRING, "nodes.conf", immutable=True),
    _e("cluster-port", INT, 0, min=0, max=65535, immutable=True),
    _e("cluster-node-timeout", INT, 15000, min=0, max=LLONG_MAX),
    _e("cluster-replica-validity-factor", INT, 10, min=0, max=INT_MAX,
       aliases=("cluster-slave-validity-factor",)),
    _e("cluster-replica-no-failover", BOOL, False, aliases=("cluster-slave-no-failover",)),
    _e("cluster-migration-barrier", INT, 1, min=0, max=INT_MAX),
    _e("cluster-allow-replica-migration", BOOL, True),
    _e("cluster-require-full-coverage", BOOL, True),
    _e("cluster-allow-reads-when-down", BOOL, False),
    _e("cluster-allow-pubsubshard-when-down", BOOL, True),
    _e("cluster-announce-ip", STRING, "", flags=_f("nullable")),
    _e("cluster-announce-hostname", STRING, "", validate=_hostname, flags=_f("nullable")),
    _e("cluster-announce-port", INT, 0, min=0, max=65535),
    _e("cluster-announce-bus-port", INT, 0, min=0, max=65535),
    _e("cluster-announce-tls-port", INT, 0, min=0, max=65535),
    _e("cluster-preferred-endpoint-type", ENUM, "ip",
       choices=("ip", "hostname", "unknown-endpoint")),
    _e("cluster-link-sendbuf-limit", MEMORY, 0, min=0, max=ULLONG_MAX, flags=_f("unsigned")),
    # TLS (pykv has no TLS transport: stored for compatibility)
    _e("tls-port", INT, 0, min=0, max=65535),
    _e("tls-cert-file", STRING, "", flags=_f("nullable")),
    _e("tls-key-file", STRING, "", flags=_f("nullable")),
    _e("tls-key-file-pass", STRING, "", flags=_f("nullable")),
    _e("tls-client-cert-file", STRING, "", flags=_f("nullable")),
    _e("tls-client-key-file", STRING, "", flags=_f("nullable")),
    _e("tls-client-key-file-pass", STRING, "", flags=_f("nullable")),
    _e("tls-dh-params-file", STRING, "", flags=_f("nullable")),
    _e("tls-ca-cert-file", STRING, "", flags=_f("nullable")),
    _e("tls-ca-cert-dir", STRING, "", flags=_f("nullable")),
    _e("tls-protocols", STRING, "", flags=_f("nullable")),
    _e("tls-ciphers", STRING, "", flags=_f("nullable")),
    _e("tls-ciphersuites", STRING, "", flags=_f("nullable")),
    _e("tls-auth-clients", ENUM, "yes", choices=("no", "yes", "optional")),
    _e("tls-replication", BOOL, False),
    _e("tls-cluster", BOOL, False),
    _e("tls-prefer-server-ciphers", BOOL, False),
    _e("tls-session-caching", BOOL, True),
    _e("tls-session-cache-size", INT, 20480, min=0, max=INT_MAX),
    _e("tls-session-cache-timeout", INT, 300, min=0, max=INT_MAX),
]

BY_NAME: dict[str, ConfigEntry] = {}
for _entry in ENTRIES:
    BY_NAME[_entry.name] = _entry
    for _alias in _entry.aliases:
        BY_NAME[_alias] = _entry
