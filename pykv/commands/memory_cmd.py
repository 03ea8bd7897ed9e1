"""MEMORY: USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE and HELP, and pykv's memory breakdown.

This module owns how pykv's memory is split into overhead and dataset. ``figures(server)``
takes INFO memory's own figures (``used_memory``, the peak, the allocator and fragmentation
ratios, client buffers: the ``memory`` section's builder in ``pykv.commands.info``) and adds
what this family accounts for itself: the memory at start-up (``record_startup``, called by
the server after initialisation and before the dataset loads, as Redis's
``used_memory_startup``), the AOF buffer, the cached scripts and function libraries, and per
database the hash-table overhead (the bucket arrays of the main and expires tables, as
``pykv.storage.memory`` estimates them). The overhead total and the dataset
derive from those as in Redis. INFO memory shows the same breakdown: ``add_fields`` puts
this module's figures in place of the section's overhead/dataset/scripts fields, so INFO
and MEMORY STATS never disagree.

- USAGE: Redis 7.0's arguments and errors (``SAMPLES <count>``, 0 = all, a negative count is
  a syntax error; a missing key is nil), found without expiring the key or touching its
  access time. The figure is the estimate ``used_memory`` sums (``pykv.storage.memory``:
  values sized by their Redis encoding, rounded to jemalloc-like size classes; big
  containers sampled on a fixed count, the SAMPLES argument is checked but not used), plus
  the key's buffer and a dict entry.
- STATS: Redis 7.0's map, field for field in its order and types (doubles where Redis has
  them, kept to C ``float`` precision as Redis stores them); ``db.N`` for each database
  holding keys. Replication, replica buffers and cluster links do not exist in pykv: 0.
- DOCTOR: Redis's report texts and thresholds over ``figures``. One difference: Redis calls
  an instance "empty" below 5 MB allocated in all; pykv's interpreter alone takes tens of
  MB, so pykv applies the 5 MB floor to the memory used above start-up. And since
  ``used_memory`` is an estimate of what Redis would allocate, RSS is always several times
  it (``mem_fragmentation_ratio``): the "High total RSS" finding is never reported.
- MALLOC-STATS: pykv runs on the C library's malloc, not jemalloc, so it answers what Redis
  built without jemalloc answers ("Stats not supported for the current allocator").
- PURGE: ``malloc_trim(0)`` (glibc; a no-op where it does not exist), then +OK.
"""
from __future__ import annotations

import ctypes
import struct
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from pykv import errors
from pykv.commands import info
from pykv.commands.args import parse_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command
from pykv.protocol import OK, Verbatim
from pykv.storage import memory

# -- texts (Redis 7.0's replies) ----------------------------------------------------------------
HELP = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
]

NO_MALLOC_STATS = b"Stats not supported for the current allocator"

DOCTOR_EMPTY = (
    "Hi Sam, this instance is empty or is using very little memory, my issues detector can't "
    "be used in these conditions. Please, leave for your mission on Earth and fill it with "
    "some data. The new Sam and I will be back to our programming as soon as I finished "
    "rebooting.\n")
DOCTOR_FINE = ("Hi Sam, I can't find any memory issue in your instance. I can only account "
               "for what occurs on this base.\n")
DOCTOR_HEAD = "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
DOCTOR_TAIL = "I'm here to keep you safe, Sam. I want to help you.\n"

# finding | its paragraph, in report order ({allocator}: INFO's mem_allocator)
_FINDINGS = """
big_peak | * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.
high_frag | * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is "{allocator}".
high_alloc_frag | * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.
high_alloc_rss | * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.
high_proc_rss | * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.
big_replica_buf | * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.
big_client_buf | * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.
many_scripts | * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.
"""
FINDINGS: dict[str, str] = {
    name.strip(): " " + text.strip() + "\n\n"
    for name, _, text in (line.partition(" | ") for line in _FINDINGS.strip().splitlines())
}

# the doctor's thresholds (Redis's)
EMPTY_BELOW = 5 << 20          # bytes above start-up
PEAK_RATIO = 1.5               # peak / current
TOTAL_FRAG_RATIO = 1.4         # process RSS / used
OVERHEAD_RATIO = 1.1           # allocator fragmentation, allocator RSS, process RSS ratios
OVERHEAD_BYTES = 10 << 20      # ... and each of those overheads in bytes
CLIENT_BUF_AVG = 200 << 10     # normal clients' buffers, per client
REPLICA_BUF = 10 << 20         # replicas' buffers
MANY_SCRIPTS = 1000            # cached EVAL scripts


# -- the figures ----------------------------------------------------------------------------
@dataclass
class DbOverhead:
    """One database's hash-table overhead (MEMORY STATS ``db.N``)."""

    id: int
    keys: int
    main: int
    expires: int


@dataclass
class MemoryFigures:
    """One snapshot of pykv's memory, in Redis's ``redisMemOverhead`` terms (bytes)."""

    total_allocated: int = 0
    peak_allocated: int = 0
    startup_allocated: int = 0
    replication_backlog: int = 0
    clients_slaves: int = 0
    clients_normal: int = 0
    cluster_links: int = 0
    aof_buffer: int = 0
    lua_caches: int = 0
    functions_caches: int = 0
    dbs: list[DbOverhead] = field(default_factory=list)
    allocator_allocated: int = 0
    allocator_active: int = 0
    allocator_resident: int = 0
    allocator_frag: float = 1.0
    allocator_frag_bytes: int = 0
    allocator_rss: float = 1.0
    allocator_rss_bytes: int = 0
    rss_extra: float = 1.0
    rss_extra_bytes: int = 0
    total_frag: float = 1.0
    total_frag_bytes: int = 0
    allocator_name: str = "libc"   # INFO's mem_allocator
    clients: int = 1            # connected clients, replicas included
    replicas: int = 0
    cached_scripts: int = 0
    functions: int = 0
    libraries: int = 0

    @property
    def overhead_total(self) -> int:
        return (self.startup_allocated + self.replication_backlog + self.clients_slaves
                + self.clients_normal + self.cluster_links + self.aof_buffer
                + self.lua_caches + self.functions_caches
                + sum(db.main + db.expires for db in self.dbs))

    @property
    def dataset(self) -> int:
        return max(0, self.total_allocated - self.overhead_total)

    @property
    def total_keys(self) -> int:
        return sum(db.keys for db in self.dbs)

    @property
    def bytes_per_key(self) -> int:
        keys = self.total_keys
        return self.dataset // keys if keys else 0

    @property
    def dataset_perc(self) -> float:
        """The dataset as a share of what was allocated after start-up (Redis's formula)."""
        net = self.total_allocated - self.startup_allocated
        return self.dataset * 100 / (net if net > 0 else 1)

    @property
    def peak_perc(self) -> float:
        return self.total_allocated * 100 / self.peak_allocated if self.peak_allocated else 100.0


# How the figures relate to Redis's names: MEMORY STATS field (in Redis 7.0's order; "db.N"
# marks where the databases go, "-" a figure STATS does not show) | MemoryFigures attribute |
# INFO memory field ("-": none) | "<" read from INFO's own builder, ">" this module's figure
# shown in INFO in place of the builder's
_FIELDS = """
peak.allocated                | peak_allocated       | used_memory_peak         | <
total.allocated               | total_allocated      | used_memory              | <
startup.allocated             | startup_allocated    | used_memory_startup      | <
replication.backlog           | replication_backlog  | mem_replication_backlog  | <
clients.slaves                | clients_slaves       | mem_clients_slaves       | <
clients.normal                | clients_normal       | mem_clients_normal       | <
cluster.links                 | cluster_links        | mem_cluster_links        | <
aof.buffer                    | aof_buffer           | mem_aof_buffer           | >
lua.caches                    | lua_caches           | used_memory_scripts_eval | >
functions.caches              | functions_caches     | used_memory_functions    | >
db.N                          | -                    | -                        |
overhead.total                | overhead_total       | used_memory_overhead     | >
keys.count                    | total_keys           | -                        |
keys.bytes-per-key            | bytes_per_key        | -                        |
dataset.bytes                 | dataset              | used_memory_dataset      | >
dataset.percentage            | dataset_perc         | -                        |
peak.percentage               | peak_perc            | -                        |
allocator.allocated           | allocator_allocated  | allocator_allocated      | <
allocator.active              | allocator_active     | allocator_active         | <
allocator.resident            | allocator_resident   | allocator_resident       | <
allocator-fragmentation.ratio | allocator_frag       | allocator_frag_ratio     | <
allocator-fragmentation.bytes | allocator_frag_bytes | allocator_frag_bytes     | <
allocator-rss.ratio           | allocator_rss        | allocator_rss_ratio      | <
allocator-rss.bytes           | allocator_rss_bytes  | allocator_rss_bytes      | <
rss-overhead.ratio            | rss_extra            | rss_overhead_ratio       | <
rss-overhead.bytes            | rss_extra_bytes      | rss_overhead_bytes       | <
fragmentation                 | total_frag           | mem_fragmentation_ratio  | <
fragmentation.bytes           | total_frag_bytes     | mem_fragmentation_bytes  | <
-                             | allocator_name       | mem_allocator            | <
-                             | cached_scripts       | number_of_cached_scripts | >
-                             | functions            | number_of_functions      | >
-                             | libraries            | number_of_libraries      | >
"""
FIELDS: list[tuple[str, str, str, str]] = [
    (stats, attr, info_name, way)
    for stats, attr, info_name, way in (
        [part.strip() for part in line.split("|")] for line in _FIELDS.strip().splitlines())
]
_FROM_INFO = {attr: name for _, attr, name, way in FIELDS if way == "<"}
_TO_INFO = {name: attr for _, attr, name, way in FIELDS if way == ">"}


def _memory_section() -> info.Section:
    return next(s for s in info.SECTIONS if s.name == "memory")


def _scripts(server: Any) -> tuple[int, int]:
    """(number of cached EVAL scripts, bytes they take)."""
    engine = getattr(server, "scripting", None)
    scripts = getattr(engine, "scripts", None)
    if not scripts:
        return 0, 0
    return len(scripts), sys.getsizeof(scripts) + sum(len(s[0]) for s in scripts.values())


def _libraries(server: Any) -> tuple[int, int, int]:
    """(functions, libraries, bytes of their code and tables)."""
    store = getattr(server, "functions", None)
    live = getattr(store, "live", None)
    if live is None or not live.libraries:
        return 0, 0, 0
    size = sys.getsizeof(live.libraries) + sys.getsizeof(live.functions)
    size += sum(len(lib.code) for lib in live.libraries.values())
    return live.function_count, len(live.libraries), size


def _db_overhead(db: Any) -> DbOverhead:
    main, expires = memory.db_overhead(db)
    return DbOverhead(db.id, len(db.data), main, expires)


def figures(server: Any) -> MemoryFigures:
    """INFO memory's figures plus this module's own accounting (see the module docstring)."""
    base = dict(_memory_section().build(server))
    aof = getattr(server, "aof", None)
    scripts, lua_bytes = _scripts(server)
    functions, libraries, function_bytes = _libraries(server)
    return MemoryFigures(
        **{attr: base[name] for attr, name in _FROM_INFO.items()},
        aof_buffer=len(aof.buf) if aof is not None and aof.enabled else 0,
        lua_caches=lua_bytes, functions_caches=function_bytes,
        dbs=[_db_overhead(db) for db in server.dbs if db.data],
        clients=len(server.clients), cached_scripts=scripts, functions=functions,
        libraries=libraries,
    )


def record_startup(server: Any) -> None:
    """Remember the memory in use now as the start-up figure (``used_memory_startup``)."""
    server.startup_rss = dict(_memory_section().build(server))["used_memory"]


def _info_fields(server: Any) -> dict[str, Any]:
    """The INFO memory fields this module accounts for."""
    f = figures(server)
    fields = {name: getattr(f, attr) for name, attr in _TO_INFO.items()}
    scripts = f.lua_caches + f.functions_caches
    fields.update({
        "used_memory_dataset_perc": f"{f.dataset_perc:.2f}%",
        "used_memory_scripts": scripts,
        "used_memory_scripts_human": info.human_bytes(scripts),
    })
    return fields


info.add_fields("memory", _info_fields)


# -- the doctor -----------------------------------------------------------------------------
def diagnose(f: MemoryFigures) -> list[str]:
    """The names of the findings (``FINDINGS``) for ``f``, or ``["empty"]``."""
    if f.total_allocated - f.startup_allocated < EMPTY_BELOW:
        return ["empty"]
    checks = {
        "big_peak": f.total_allocated > 0 and f.peak_allocated / f.total_allocated > PEAK_RATIO,
        "high_frag": f.total_frag > TOTAL_FRAG_RATIO and f.total_frag_bytes > OVERHEAD_BYTES,
        "high_alloc_frag": (f.allocator_frag > OVERHEAD_RATIO
                            and f.allocator_frag_bytes > OVERHEAD_BYTES),
        "high_alloc_rss": (f.allocator_rss > OVERHEAD_RATIO
                           and f.allocator_rss_bytes > OVERHEAD_BYTES),
        "high_proc_rss": f.rss_extra > OVERHEAD_RATIO and f.rss_extra_bytes > OVERHEAD_BYTES,
        "big_replica_buf": f.replicas > 0 and f.clients_slaves > REPLICA_BUF,
        "big_client_buf": (f.clients > f.replicas
                           and f.clients_normal // (f.clients - f.replicas) > CLIENT_BUF_AVG),
        "many_scripts": f.cached_scripts > MANY_SCRIPTS,
    }
    return [name for name in FINDINGS if checks[name]]


def doctor_report(f: MemoryFigures) -> str:
    """MEMORY DOCTOR's text for ``f``."""
    found = diagnose(f)
    if found == ["empty"]:
        return DOCTOR_EMPTY
    if not found:
        return DOCTOR_FINE
    body = "".join(FINDINGS[name] for name in found)
    return DOCTOR_HEAD + body.replace("{allocator}", f.allocator_name) + DOCTOR_TAIL


# -- MEMORY STATS -------------------------------------------------------------------------
def _c_float(x: float) -> float:
    """``x`` at C float precision: Redis keeps these ratios in floats."""
    return struct.unpack("f", struct.pack("f", x))[0]


def stats_reply(f: MemoryFigures) -> dict[bytes, Any]:
    """MEMORY STATS's map, in Redis 7.0's order (doubles where Redis has floats)."""
    reply: dict[bytes, Any] = {}
    for stats, attr, _, _ in FIELDS:
        if stats == "db.N":
            for db in f.dbs:
                reply[b"db.%d" % db.id] = {
                    b"overhead.hashtable.main": db.main,
                    b"overhead.hashtable.expires": db.expires,
                    b"overhead.hashtable.slot-to-keys": 0,
                }
        elif stats != "-":
            value = getattr(f, attr)
            reply[stats.encode()] = _c_float(value) if isinstance(value, float) else value
    return reply


# -- purge ----------------------------------------------------------------------------------
def _load_malloc_trim() -> Any:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):   # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_malloc_trim = _load_malloc_trim()


def purge() -> None:
    """Give the C allocator's free memory back to the system where it can."""
    if _malloc_trim is not None:
        _malloc_trim(0)


# -- the commands ---------------------------------------------------------------------------
@command("memory|usage")
def memory_usage(c, argv):
    i = 3
    while i < len(argv):
        if argv[i].lower() == b"samples" and i + 1 < len(argv):
            if parse_int(argv[i + 1]) < 0:
                return errors.SYNTAX
            i += 2
        else:
            return errors.SYNTAX
    value = c.db.data.get(argv[2])
    if value is None:
        return None
    return memory.value_usage(value) + memory.sds(len(argv[2])) + memory.DICT_ENTRY


@command("memory|stats")
def memory_stats(c, argv):
    return stats_reply(figures(c.server))


@command("memory|doctor")
def memory_doctor(c, argv):
    # RSS over used_memory is the interpreter over Redis-sized estimates, not fragmentation
    f = replace(figures(c.server), total_frag=1.0, total_frag_bytes=0)
    return Verbatim(doctor_report(f).encode())


@command("memory|malloc-stats")
def memory_malloc_stats(c, argv):
    return NO_MALLOC_STATS


@command("memory|purge")
def memory_purge(c, argv):
    purge()
    return OK


@command("memory|help")
def memory_help(c, argv):
    return help_reply(HELP)
