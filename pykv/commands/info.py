"""INFO: the server's report, section by section, in Redis 7.0's field names and order.

Sections are data: ``SECTIONS`` lists them in print order with whether ``INFO`` (default)
includes them. Each builder returns ``(field, value)`` pairs. Other families add their own
fields with ``add_fields(section, fn)`` — ``fn(server) -> dict`` whose entries replace the
section's fields of the same name (keeping Redis's order) or are appended after them — and
whole sections with ``add_section``. The reply is a bulk string (verbatim ``txt`` in RESP3).
"""
from __future__ import annotations

import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from pykv.commands.latency import latencystats_fields
from pykv.commands.registry import command
from pykv.protocol import Verbatim
from pykv.server import evict

Fields = list[tuple[str, Any]]
Builder = Callable[[Any], Fields]


class Section:
    __slots__ = ("name", "title", "build", "default", "extra")

    def __init__(self, name: str, title: str, build: Builder, default: bool) -> None:
        self.name = name
        self.title = title
        self.build = build
        self.default = default
        self.extra: list[Callable[[Any], dict[str, Any]]] = []


SECTIONS: list[Section] = []


def add_section(name: str, build: Builder, default: bool = True, title: str | None = None,
                before: str | None = None) -> Section:
    """Register a section (printed before ``before``, else last)."""
    section = Section(name, title or name.capitalize(), build, default)
    names = [s.name for s in SECTIONS]
    if before in names:
        SECTIONS.insert(names.index(before), section)
    else:
        SECTIONS.append(section)
    return section


def add_fields(section: str, fn: Callable[[Any], dict[str, Any]]) -> None:
    """Let a family fill fields of an existing section (see the module docstring)."""
    for s in SECTIONS:
        if s.name == section:
            s.extra.append(fn)
            return
    raise KeyError(section)


def render_section(server: Any, section: Section) -> str:
    pairs = section.build(server)
    if section.extra:
        merged = dict(pairs)
        order = [k for k, _ in pairs]
        for fn in section.extra:
            for key, value in fn(server).items():
                if key not in merged:
                    order.append(key)
                merged[key] = value
        pairs = [(k, merged[k]) for k in order]
    body = "".join(f"{k}:{_fmt(v)}\r\n" for k, v in pairs)
    return f"# {section.title}\r\n{body}"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def generate_info(server: Any, names: list[str]) -> str:
    """The INFO text for the requested section names (already lower-cased)."""
    wanted = set(names) if names else {"default"}
    everything = "everything" in wanted or "all" in wanted
    default = "default" in wanted
    chosen = [s for s in SECTIONS
              if everything or (default and s.default) or s.name in wanted]
    return "\r\n".join(render_section(server, s) for s in chosen)


@command("info")
def info(c, argv):
    names = [a.decode("latin-1").lower() for a in argv[1:]]
    text = generate_info(c.server, names).encode("utf-8", "surrogateescape")
    return Verbatim(text) if c.resp == 3 else text


# -- helpers ------------------------------------------------------------------------------------
def human_bytes(n: float) -> str:
    """Redis's bytesToHuman: B, K, M, G, T, P with two decimals."""
    if n < 1024:
        return f"{int(n)}B"
    for unit in "KMGTPE":
        n /= 1024
        if n < 1024 or unit == "E":
            return f"{n:.2f}{unit}"
    return f"{n:.2f}E"


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


class Instantaneous:
    """Redis's trackInstantaneousMetric: 16 samples taken every 100 ms, averaged per second."""

    SAMPLES = 16

    def __init__(self, server: Any) -> None:
        self.server = server
        self.last_time = time.monotonic()
        self.last = self._counters()
        self.samples: dict[str, list[float]] = {k: [] for k in self.last}

    def _counters(self) -> dict[str, int]:
        s = self.server
        return {"ops": s.stat_numcommands, "in": s.stat_net_input_bytes,
                "out": s.stat_net_output_bytes}

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.last_time < 0.1:
            return
        current = self._counters()
        elapsed = now - self.last_time
        for key, value in current.items():
            rate = max(0, value - self.last[key]) / elapsed
            series = self.samples[key]
            series.append(rate)
            if len(series) > self.SAMPLES:
                del series[0]
        self.last, self.last_time = current, now

    def rate(self, key: str) -> float:
        series = self.samples[key]
        return sum(series) / len(series) if series else 0.0


def install(server: Any) -> Instantaneous:
    """Per-server INFO state: the instantaneous-metrics sampler, run from the cron."""
    sampler = Instantaneous(server)
    server.add_cron(sampler.tick)
    return sampler


def _sampler(server: Any) -> Instantaneous | None:
    return getattr(server, "info_sampler", None)


# -- sections -----------------------------------------------------------------------------------
def _server(server: Any) -> Fields:
    now = time.time()
    uptime = server.now_info_uptime()
    hz = server.config.hz
    # as Redis: the TCP port, or the TLS port when there is no plain one
    ports = {listener.spec.type: listener.spec.port for listener in reversed(server.listeners)
             if listener.spec.type in ("tcp", "tls")}
    tcp_port = ports.get("tcp") or ports.get("tls", 0)
    uname = platform.uname()
    fields: Fields = [
        ("redis_version", server.version),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_build_id", "0" * 15),
        ("redis_mode", "standalone"),
        ("os", f"{uname.system} {uname.release} {uname.machine}"),
        ("arch_bits", 64 if sys.maxsize > 2 ** 32 else 32),
        ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "epoll"),
        ("atomicvar_api", "c11-builtin"),
        ("gcc_version", "0.0.0"),
        ("process_id", server.pid),
        ("process_supervised", "no"),
        ("run_id", server.run_id),
        ("tcp_port", tcp_port),
        ("server_time_usec", int(now * 1_000_000)),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", hz),
        ("configured_hz", hz),
        ("lru_clock", int(now) & ((1 << 24) - 1)),
        ("executable", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""),
        ("config_file", getattr(server.config, "config_file", "") or ""),
        ("io_threads_active", 0),
    ]
    for i, listener in enumerate(server.listeners):
        fields.append((f"listener{i}", f"name={listener.spec.type}{listener.info_fields()}"))
    return fields


def _clients(server: Any) -> Fields:
    clients = list(server.clients.values())
    blocking = getattr(server, "blocking", None)
    return [
        ("connected_clients", len(clients)),
        ("cluster_connections", server.cluster.link_count() if server.cluster is not None else 0),
        ("maxclients", server.config.maxclients),
        # the cron's peaks over the last 8 seconds (pykv.server.client_evict)
        ("client_recent_max_input_buffer", server.client_evictor.recent_max_input()),
        ("client_recent_max_output_buffer", server.client_evictor.recent_max_output()),
        ("blocked_clients", getattr(server, "blocked_count", 0) + len(server.postponed)),
        ("tracking_clients", sum(1 for c in clients if c.tracking)),
        ("clients_in_timeout_table", getattr(blocking, "timeout_count", 0)),
    ]


_peak = [0]


def _memory(server: Any) -> Fields:
    rss = _rss()
    used = evict.used_memory(server)  # the maintained estimate, not RSS (as Redis's)
    _peak[0] = max(_peak[0], used)
    peak = _peak[0]
    total = _total_memory()
    maxmemory = server.config.maxmemory
    startup = getattr(server, "startup_rss", used)
    master = getattr(server, "replicas", None)
    repl_mem = master.memory() if master is not None else (0, 0)
    clients = server.client_evictor.total + server.client_evictor.slaves_total
    overhead = min(used, startup + clients + repl_mem[0])
    dataset = used - overhead
    return [
        ("used_memory", used),
        ("used_memory_human", human_bytes(used)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", human_bytes(rss)),
        ("used_memory_peak", peak),
        ("used_memory_peak_human", human_bytes(peak)),
        ("used_memory_peak_perc", f"{used * 100 / peak if peak else 100:.2f}%"),
        ("used_memory_overhead", overhead),
        ("used_memory_startup", startup),
        ("used_memory_dataset", dataset),
        ("used_memory_dataset_perc", f"{dataset * 100 / used if used else 0:.2f}%"),
        ("allocator_allocated", used),
        ("allocator_active", used),
        ("allocator_resident", rss),
        ("total_system_memory", total),
        ("total_system_memory_human", human_bytes(total)),
        ("used_memory_lua", 0),
        ("used_memory_vm_eval", 0),
        ("used_memory_lua_human", "0B"),
        ("used_memory_scripts_eval", 0),
        ("number_of_cached_scripts", 0),
        ("number_of_functions", 0),
        ("number_of_libraries", 0),
        ("used_memory_vm_functions", 0),
        ("used_memory_vm_total", 0),
        ("used_memory_vm_total_human", "0B"),
        ("used_memory_functions", 0),
        ("used_memory_scripts", 0),
        ("used_memory_scripts_human", "0B"),
        ("maxmemory", maxmemory),
        ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", server.config.maxmemory_policy),
        ("allocator_frag_ratio", 1.0),
        ("allocator_frag_bytes", 0),
        ("allocator_rss_ratio", 1.0),
        ("allocator_rss_bytes", 0),
        ("rss_overhead_ratio", 1.0),
        ("rss_overhead_bytes", 0),
        ("mem_fragmentation_ratio", round(rss / used, 2) if used else 1.0),
        ("mem_fragmentation_bytes", rss - used),
        ("mem_not_counted_for_evict", evict.aof_buffer(server)),
        ("mem_replication_backlog", repl_mem[0]),
        ("mem_total_replication_buffers", repl_mem[0] + repl_mem[1]),
        ("mem_clients_slaves", server.client_evictor.slaves_total),
        ("mem_clients_normal", server.client_evictor.total),
        ("mem_cluster_links", 0),
        ("mem_aof_buffer", 0),
        ("mem_allocator", "libc"),
        ("active_defrag_running", 0),
        ("lazyfree_pending_objects", 0),
        ("lazyfreed_objects", 0),
    ]


def _persistence(server: Any) -> Fields:
    fields: Fields = [
        ("loading", 0), ("async_loading", 0), ("current_cow_peak", 0),
        ("current_cow_size", 0), ("current_cow_size_age", 0), ("current_fork_perc", "0.00"),
        ("current_save_keys_processed", 0), ("current_save_keys_total", 0),
        ("rdb_changes_since_last_save", server.dirty), ("rdb_bgsave_in_progress", 0),
        ("rdb_last_save_time", server.lastsave), ("rdb_last_bgsave_status", "ok"),
        ("rdb_last_bgsave_time_sec", -1), ("rdb_current_bgsave_time_sec", -1),
        ("rdb_saves", 0), ("rdb_last_cow_size", 0), ("rdb_last_load_keys_expired", 0),
        ("rdb_last_load_keys_loaded", 0),
        ("aof_enabled", int(bool(server.config.appendonly))),
        ("aof_rewrite_in_progress", 0), ("aof_rewrite_scheduled", 0),
        ("aof_last_rewrite_time_sec", -1), ("aof_current_rewrite_time_sec", -1),
        ("aof_last_bgrewrite_status", "ok"), ("aof_rewrites", 0),
        ("aof_rewrites_consecutive_failures", 0), ("aof_last_write_status", "ok"),
        ("aof_last_cow_size", 0), ("module_fork_in_progress", 0),
        ("module_fork_last_cow_size", 0),
    ]
    persistence = getattr(server, "persistence", None)
    if persistence is not None and hasattr(persistence, "info_fields"):
        values = persistence.info_fields()
        fields = [(k, values.pop(k, v)) for k, v in fields] + list(values.items())
    return fields


def _stats(server: Any) -> Fields:
    sampler = _sampler(server)
    ops = sampler.rate("ops") if sampler else 0.0
    kin = sampler.rate("in") / 1024 if sampler else 0.0
    kout = sampler.rate("out") / 1024 if sampler else 0.0
    pubsub = getattr(server, "pubsub", None)
    tracking = getattr(server, "client_caching", None)  # pykv.server.tracking, once used
    master = getattr(server, "replicas", None)
    return [
        ("total_connections_received", server.stat_numconnections),
        ("total_commands_processed", server.stat_numcommands),
        ("instantaneous_ops_per_sec", int(ops)),
        ("total_net_input_bytes", server.stat_net_input_bytes),
        ("total_net_output_bytes", server.stat_net_output_bytes),
        ("total_net_repl_input_bytes", 0),
        ("total_net_repl_output_bytes", getattr(master, "stat_repl_output_bytes", 0)),
        ("instantaneous_input_kbps", kin),
        ("instantaneous_output_kbps", kout),
        ("instantaneous_input_repl_kbps", 0.0),
        ("instantaneous_output_repl_kbps", 0.0),
        ("rejected_connections", server.stat_rejected_conn),
        ("sync_full", getattr(master, "stat_sync_full", 0)),
        ("sync_partial_ok", getattr(master, "stat_sync_partial_ok", 0)),
        ("sync_partial_err", getattr(master, "stat_sync_partial_err", 0)),
        ("expired_keys", server.stat_expired_keys),
        ("expired_stale_perc", 0.0),
        ("expired_time_cap_reached_count", 0),
        ("expire_cycle_cpu_milliseconds", 0),
        ("evicted_keys", getattr(server, "stat_evicted_keys", 0)),
        ("evicted_clients", server.stat_evicted_clients),
        ("total_eviction_exceeded_time", 0),
        ("current_eviction_exceeded_time", 0),
        ("keyspace_hits", server.stat_keyspace_hits),
        ("keyspace_misses", server.stat_keyspace_misses),
        ("pubsub_channels", len(pubsub.channels) if pubsub else 0),
        ("pubsub_patterns", len(pubsub.patterns) if pubsub else 0),
        ("pubsubshard_channels", len(pubsub.shard_channels) if pubsub else 0),
        ("latest_fork_usec", getattr(getattr(server, "persistence", None), "fork_usec", 0)),
        ("total_forks", 0),
        ("migrate_cached_sockets", len(getattr(server, "migrate_sockets", ()))),
        ("slave_expires_tracked_keys", 0),
        ("active_defrag_hits", 0),
        ("active_defrag_misses", 0),
        ("active_defrag_key_hits", 0),
        ("active_defrag_key_misses", 0),
        ("total_active_defrag_time", 0),
        ("current_active_defrag_time", 0),
        ("tracking_total_keys", len(tracking.table) if tracking else 0),
        ("tracking_total_items", tracking.total_items() if tracking else 0),
        ("tracking_total_prefixes", len(tracking.prefixes) if tracking else 0),
        ("unexpected_error_replies", getattr(server, "stat_unexpected_errors", 0)),
        ("total_error_replies", server.stat_total_error_replies),
        ("dump_payload_sanitizations", getattr(server, "stat_dump_payload_sanitizations", 0)),
        ("total_reads_processed", server.stat_numcommands),
        ("total_writes_processed", server.stat_numcommands),
        ("io_threaded_reads_processed", 0),
        ("io_threaded_writes_processed", 0),
        ("reply_buffer_shrinks", server.stat_reply_buffer_shrinks),
        ("reply_buffer_expands", server.stat_reply_buffer_expands),
    ]


def _replication(server: Any) -> Fields:
    """Redis 7.0's order: the role (a replica's link rows after it), the replicas, then
    this server's history and backlog."""
    link = getattr(server, "master_link", None)
    fields: Fields = [("role", "master" if link is None else "slave")]
    if link is not None:
        fields += list(link.info_fields())
    master = getattr(server, "replicas", None)
    fields += master.info_replicas() if master is not None else [("connected_slaves", 0)]
    repl = server.repl
    backlog = repl.backlog
    fields += [
        ("master_failover_state", getattr(master, "failover_state", "no-failover")),
        ("master_replid", repl.replid),
        ("master_replid2", repl.replid2),
        ("master_repl_offset", repl.master_repl_offset),
        ("second_repl_offset", repl.second_repl_offset),
        ("repl_backlog_active", int(backlog is not None)),
        ("repl_backlog_size", server.config.repl_backlog_size),
        ("repl_backlog_first_byte_offset", backlog.start_offset if backlog else 0),
        ("repl_backlog_histlen", backlog.histlen if backlog else 0),
    ]
    return fields


def _cpu(server: Any) -> Fields:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        main = resource.getrusage(resource.RUSAGE_THREAD)
    except (AttributeError, OSError):
        main = me
    return [
        ("used_cpu_sys", f"{me.ru_stime:.6f}"),
        ("used_cpu_user", f"{me.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{kids.ru_stime:.6f}"),
        ("used_cpu_user_children", f"{kids.ru_utime:.6f}"),
        ("used_cpu_sys_main_thread", f"{main.ru_stime:.6f}"),
        ("used_cpu_user_main_thread", f"{main.ru_utime:.6f}"),
    ]


def _modules(server: Any) -> Fields:
    return []


def _commandstats(server: Any) -> Fields:
    out: Fields = []
    for top in server.commands:
        for cmd in top.all_commands():
            if not (cmd.calls or cmd.rejected_calls or cmd.failed_calls):
                continue
            per_call = cmd.usec / cmd.calls if cmd.calls else 0.0
            out.append((f"cmdstat_{cmd.fullname}",
                        f"calls={cmd.calls},usec={cmd.usec},usec_per_call={per_call:.2f},"
                        f"rejected_calls={cmd.rejected_calls},failed_calls={cmd.failed_calls}"))
    return out


def _errorstats(server: Any) -> Fields:
    return [(f"errorstat_{code.decode('latin-1')}", f"count={n}")
            for code, n in sorted(server.errorstats.items())]


def _latencystats(server: Any) -> Fields:
    return latencystats_fields(server)


def _cluster(server: Any) -> Fields:
    return [("cluster_enabled", 1 if server.cluster is not None else 0)]


def _keyspace(server: Any) -> Fields:
    out: Fields = []
    for db in server.dbs:
        keys = len(db)
        if keys:
            out.append((f"db{db.id}", f"keys={keys},expires={len(db.expires)},"
                                      f"avg_ttl={db.avg_ttl}"))
    return out


add_section("server", _server)
add_section("clients", _clients)
add_section("memory", _memory)
add_section("persistence", _persistence)
add_section("stats", _stats)
add_section("replication", _replication)
add_section("cpu", _cpu, title="CPU")
add_section("modules", _modules)
add_section("commandstats", _commandstats, default=False)
add_section("errorstats", _errorstats)
add_section("latencystats", _latencystats, default=False)
add_section("cluster", _cluster)
add_section("keyspace", _keyspace)
