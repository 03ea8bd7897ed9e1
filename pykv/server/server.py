"""The server: databases, clients, listeners, statistics and the cron.

One event loop, one thread: everything here runs on the loop. ``Server.start`` opens the
listeners named by the config (``port``/``bind``/``unixsocket`` and ``--listener`` specs)
through the connection-type registry; ``accept`` turns each new connection into a
``Client``. ``cron`` runs ``hz`` times a second: active expiry, client timeouts, and the
hooks other families register (``add_cron``).
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from pykv import __version__ as pykv_version
from pykv.config import Config
from pykv.config import runtime as config_runtime
from pykv.net import Connection, Listener, ListenerSpec, get_connection_type
from pykv.protocol import ErrorReply
from pykv.server import pause, replybuf
from pykv.server._core import ServerCore
from pykv.server.blocking import Blocking
from pykv.server.client import REPLY_OFF, Client
from pykv.server.client_evict import ClientsMemory
from pykv.server.command_table import TABLE, Command, CommandTable
from pykv.server.evict import Evictor
from pykv.server.latency_monitor import LatencyMonitor
from pykv.server.output_limits import OutputLimits
from pykv.storage import memory
from pykv.storage.aof import AofLoadError, AppendOnlyFile
from pykv.storage.keyspace import Clock, Database
from pykv.storage.persistence import RdbPersistence
from pykv.storage.rdb.encoding import RdbFormatError
from pykv.storage.rdb.file import load_failure_report

log = logging.getLogger("pykv")

REDIS_VERSION = "7.0.15"


class SlowlogEntry:
    __slots__ = ("id", "time", "duration", "argv", "addr", "name")

    def __init__(self, entry_id: int, when: int, duration: int, argv: list[bytes],
                 addr: str, name: bytes) -> None:
        self.id = entry_id
        self.time = when
        self.duration = duration
        self.argv = argv
        self.addr = addr
        self.name = name


class Server(ServerCore):
    """All server state that outlives a single client."""

    def __init__(self, config: Config | None = None, commands: CommandTable = TABLE) -> None:
        self.config = config or Config()
        # filled by the command families (pykv.assemble loads them before building a Server)
        self.commands: CommandTable = commands
        # raw command-name spelling -> Command, filled by the dispatcher as names are seen
        self.command_lookup: dict[bytes, Command] = {}
        self.clock = Clock()
        self.dbs: list[Database] = [Database(i, self.clock) for i in range(self.config.databases)]
        self.clients: dict[int, Client] = {}
        self.next_client_id = 1
        self.listeners: list[Listener] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.start_time = time.time()
        self.start_monotonic = time.monotonic()
        self.run_id = os.urandom(20).hex()
        self.pid = os.getpid()
        self.version = REDIS_VERSION
        self.pykv_version = pykv_version
        self.monitors: list[Client] = []
        self.cron_hooks: list[Callable[[], None]] = []
        self.shutdown_hooks: list[Callable[[], None]] = []
        self.client_close_hooks: list[Callable[[Client], None]] = []
        # run by start() once the listeners are open, before the dataset loads
        self.startup_hooks: list[Callable[[], None]] = []
        # MONITOR's line for a command (plugged in by the MONITOR family)
        self.format_monitor_line: Callable[[Client, list[bytes]], Any] | None = None
        # a script body's shebang flags (plugged in by the scripting family; CLIENT PAUSE)
        self.parse_shebang: Callable[[bytes], Any] | None = None
        self._cron_handle: asyncio.TimerHandle | None = None
        self._stopped: asyncio.Event | None = None
        # the service manager (pykv.server.lifecycle.supervision), when supervised
        self.supervisor: Any = None
        self.cronloops = 0
        # client pause (CLIENT PAUSE): the connection-commands family fills these in
        self.pause_active = False
        self.pause_end_ms = 0
        pause.set_expiry_paused(self, False)
        self.pause_write_only = False
        self.pause_failover = False  # FAILOVER's own write pause (Redis's PAUSE_DURING_FAILOVER)
        self.postponed: deque[tuple[Client, list[bytes]]] = deque()
        # slow log
        self.slowlog: deque[SlowlogEntry] = deque()
        self.slowlog_next_id = 0
        # latency monitor (LATENCY): calls slower than either threshold reach slowlog_push
        self.latency = LatencyMonitor()
        self._on_slowlog_threshold(None)
        self.config.on_change("slowlog-log-slower-than", self._on_slowlog_threshold)
        self.config.on_change("latency-monitor-threshold", self._on_slowlog_threshold)
        # per-command latency histograms (LATENCY HISTOGRAM): call records while this is on
        self.latency_tracking = self.config.latency_tracking
        self.config.on_change("latency-tracking", self._on_latency_tracking)
        # RESET: families holding per-client state (tracking, ...) drop it here
        self.client_reset_hooks: list[Callable[[Client], None]] = []
        # client-side caching: the active pykv.server.tracking.Tracking while any client
        # tracks keys, else None (the dispatcher tests it once per command)
        self.tracking: Any = None
        self._pause_timer: asyncio.TimerHandle | None = None
        # statistics (INFO stats)
        self.stat_numcommands = 0
        self.stat_numconnections = 0
        self.stat_rejected_conn = 0
        self.stat_net_input_bytes = 0
        self.stat_net_output_bytes = 0
        self.stat_expired_keys_base = 0
        self.stat_keyspace_hits = 0
        self.stat_keyspace_misses = 0
        self.stat_total_error_replies = 0
        self.errorstats: dict[bytes, int] = {}
        self.dirty = 0
        self.lastsave = int(time.time())
        self.persistence = RdbPersistence(self)
        self.cron_hooks.append(self.persistence.cron)
        self.active_expire_enabled = True
        self.pause_cron = False  # DEBUG PAUSE-CRON: the cron does nothing while set
        # DEBUG REPLYBUFFER, and what the resizing did (pykv.server.replybuf)
        self.reply_buffer_peak_reset_time = replybuf.DEFAULT_PEAK_RESET_MS
        self.reply_buffer_resizing_enabled = True
        self.stat_reply_buffer_shrinks = 0
        self.stat_reply_buffer_expands = 0
        self.clients_cron_cursor = 0  # where the next tick's share of the clients starts
        self.cron_hooks.append(lambda: replybuf.clients_cron(self))
        self.script_disable_deny_script = False  # DEBUG SET-DISABLE-DENY-SCRIPTS
        # set by the pub/sub family when notify-keyspace-events is enabled (see notify.py)
        self.keyspace_notifier: Callable[[str, bytes, bytes, int], None] | None = None
        # blocked clients (BLPOP & co.); the dispatcher serves ``ready_keys`` after each
        # command (see pykv.server.blocking)
        self.blocking = Blocking(self)
        # client-output-buffer-limit: checked as replies leave (pykv.server.output_limits)
        self.output_limits = OutputLimits(self)
        # clients' memory and maxmemory-clients eviction (pykv.server.client_evict)
        self.client_evictor = ClientsMemory(self)
        self.ready_keys = self.blocking.ready
        # how the running server follows CONFIG SET (listeners, limits, idle timeout, ...)
        self.config_effects = config_runtime.install(self)
        # WATCH (keyspace hooks) and pub/sub + keyspace-event delivery
        from pykv.server import pubsub, watch

        self.watches = watch.install(self)
        self.pubsub = pubsub.install(self)
        # the script running past busy-reply-threshold (pykv.scripting.engine), or None
        self.busy_script: Any = None
        # plugged in by the composition root (pykv.assemble): the function libraries
        # (FUNCTION/FCALL, also what the RDB saver/loader call) and INFO's sampler
        self.functions: Any = None
        self.info_sampler: Any = None
        # the ACL users (pykv.acl.Acl, via pykv.commands.acl.install)
        self.acl: Any = None
        # the effects stream: ``propagate(db_id, argv)`` is None while nothing listens,
        # else the one listener's feed or a fan-out to all (the AOF, the replicas)
        self.propagate: Callable[[int, list[bytes]], None] | None = None
        self.effect_sinks: dict[Any, Callable[[int, list[bytes]], None]] = {}
        self.effects_depth = 0  # EXECs and scripts running (only the outermost wraps)
        self.aof = AppendOnlyFile(self)
        self.cron_hooks.append(self.aof.cron)
        self.config.on_change("appendonly", self._on_appendonly)
        for db in self.dbs:
            db.on_expired = self._propagating_expiry(db.on_expired)
        # maxmemory: the estimate it is checked against, and eviction (pykv.server.evict)
        self.evictor = Evictor(self)
        self.stat_evicted_keys = 0
        self.maxmemory = self.config.maxmemory
        self.config.on_change("maxmemory", self._on_maxmemory)
        self.cron_hooks.append(self._memory_cron)
        for name in ("maxmemory-policy", "lfu-log-factor", "lfu-decay-time"):
            self.config.on_change(name, self._apply_lfu_settings)
        self._apply_lfu_settings(None)

    # -- lifecycle -------------------------------------------------------------------------
    def listener_specs(self) -> list[ListenerSpec]:
        """Listeners from ``port``/``bind``/``unixsocket`` plus every ``--listener``."""
        cfg = self.config
        specs = []
        if cfg.port and cfg.bind:  # as in Redis 7.0, no bind address: no TCP listener
            specs.append(ListenerSpec("tcp", binds=list(cfg.bind), port=cfg.port))
        if cfg.tls_port and cfg.bind:  # tls-port: TLS on the same addresses (pykv.net.tls)
            specs.append(ListenerSpec("tls", binds=list(cfg.bind), port=cfg.tls_port))
        if cfg.unixsocket:
            opts = {"perm": oct(cfg.unixsocketperm)[2:]} if cfg.unixsocketperm else {}
            specs.append(ListenerSpec("unix", path=cfg.unixsocket, options=opts))
        if getattr(cfg, "rdma_port", 0):  # Valkey's rdma-port/rdma-bind (pykv.net.rdma)
            specs.append(ListenerSpec("rdma", binds=list(cfg.rdma_bind), port=cfg.rdma_port))
        for text in cfg.listeners:
            specs.append(ListenerSpec.parse(text))
        return specs

    async def start(self) -> None:
        """Open the listeners, then load the dataset while answering ``-LOADING`` (as Redis
        does: clients can connect during a long load and see ``loading:1`` in INFO)."""
        await self.open_listeners()
        await self.load_and_serve()
        log.info("Ready to accept connections")

    async def open_listeners(self) -> None:
        """Open every configured listener (any failure closes the ones already open)."""
        self.loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        for spec in self.listener_specs():
            ct = get_connection_type(spec.type)
            try:
                listener = await ct.listen(spec, self.accept, self)
            except Exception as exc:
                if spec.optional:
                    log.warning("Optional listener %s not started: %s", spec.type, exc)
                    continue
                self.close_listeners()
                raise
            self.listeners.append(listener)

    async def load_and_serve(self) -> None:
        """Start the cron and load the dataset; then the server is ready."""
        self._schedule_cron()
        for hook in self.startup_hooks:  # e.g. used_memory_startup: initialised, no data yet
            hook()
        try:
            await self.load_data()
        except BaseException:
            self.close_listeners()
            raise

    async def serve_forever(self) -> None:
        await self.start()
        await self.wait_stopped()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    exit_code = 0

    async def load_data(self) -> None:
        """Load the dataset at start-up: the AOF when ``appendonly`` is on (an RDB is then
        ignored, as in Redis 7), otherwise the RDB file; then open the AOF for appending.
        The loaders yield every thousand keys or so; in between the loop serves clients
        (who get ``-LOADING``) and progress is logged every few seconds."""
        steps = self.aof.load_steps() if self.config.appendonly else \
            self.persistence.load_steps()
        self.loading = True
        last_log = time.monotonic()
        # Loading creates millions of objects that all live on: cyclic GC passes over them
        # would cost more than the load itself. Off while loading; afterwards the loaded
        # objects are frozen out of future collections (which also spares fork's COW).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            while True:
                try:
                    done = next(steps)
                except StopIteration as finished:
                    loaded = finished.value
                    break
                if self._stopped is not None and self._stopped.is_set():
                    return  # shut down while loading (a signal): stop reading
                if time.monotonic() - last_log > 5:
                    last_log = time.monotonic()
                    total = self.persistence.loading_total or 1
                    log.info("Loading the dataset: %d of %d bytes (%.0f%%)", done, total,
                             100.0 * done / total)
                await asyncio.sleep(0)
            if self.config.appendonly:
                self.aof.start(loaded)
        except RdbFormatError as exc:
            *lines, last = load_failure_report(exc)  # Redis's lines; main logs the last
            for line in lines:
                log.warning("%s", line)
            raise ValueError(last) from None
        except AofLoadError as exc:  # the loader logged the lines before this last one
            raise ValueError(str(exc)) from None
        finally:
            self.loading = False
            gc.freeze()
            if gc_was_enabled:
                gc.enable()

    # -- the effects stream ------------------------------------------------------------------
    def add_effect_sink(self, sink: Any, feed: Callable[[int, list[bytes]], None]) -> None:
        """``sink`` (with ``begin_transaction(db_id)``/``end_transaction(mark)``) gets
        every effect through ``feed`` from now on (replacing its previous feed)."""
        self.effect_sinks[sink] = feed
        self._rebuild_propagate()

    def remove_effect_sink(self, sink: Any) -> None:
        if self.effect_sinks.pop(sink, None) is not None:
            self._rebuild_propagate()

    def _rebuild_propagate(self) -> None:
        feeds = list(self.effect_sinks.values())
        if not feeds:
            self.propagate = None
        elif len(feeds) == 1:
            self.propagate = feeds[0]
        else:
            def fan_out(db_id: int, argv: list[bytes]) -> None:
                for feed in feeds:
                    feed(db_id, argv)

            self.propagate = fan_out

    def begin_effects(self, db_id: int) -> list[tuple[Any, Any]] | None:
        """Before an EXEC or a script: each sink marks where its effects start, to wrap
        them in MULTI/EXEC when there are several (``end_effects``)."""
        self.effects_depth += 1
        if not self.effect_sinks or self.effects_depth > 1:  # a script inside EXEC: one
            return None
        return [(sink, sink.begin_transaction(db_id)) for sink in self.effect_sinks]

    def end_effects(self, marks: list[tuple[Any, Any]] | None) -> None:
        self.effects_depth -= 1
        for sink, mark in marks or ():  # also a sink removed meanwhile (REPLICAOF in EXEC)
            sink.end_transaction(mark)

    def _propagating_expiry(self, hook: Callable[[Database, bytes], None]
                            ) -> Callable[[Database, bytes], None]:
        """Expired keys are written to the AOF as DELs (Redis's propagateDeletion)."""

        def on_expired(db: Database, key: bytes) -> None:
            hook(db, key)
            if self.propagate is not None:
                # found expired by a command: as in Redis 7.0, its DEL and the command's
                # own effects are propagated together (in MULTI/EXEC when both exist)
                if self.calling and not self.effects_depth and self.lazy_marks is None:
                    self.lazy_marks = self.begin_effects(db.id)
                self.propagate(db.id, [b"DEL", key])

        return on_expired

    def end_lazy_effects(self) -> None:
        marks, self.lazy_marks = self.lazy_marks, None
        self.end_effects(marks)

    def _apply_lfu_settings(self, _value: Any) -> None:
        """An LFU maxmemory-policy makes the keyspace count accesses (OBJECT FREQ)."""
        cfg = self.config
        lfu = "lfu" in str(cfg.maxmemory_policy)
        for db in self.dbs:
            db.lfu = lfu
            db.lfu_log_factor = cfg.lfu_log_factor
            db.lfu_decay_time = cfg.lfu_decay_time

    def _on_maxmemory(self, value: int) -> None:
        self.maxmemory = value
        if value:  # CONFIG SET maxmemory below the estimate evicts at once, as Redis
            self.evictor.perform()

    def _memory_cron(self) -> None:
        """Fold the keys written since the last tick into the memory estimate (bounds the
        dirty sets while maxmemory is off and nothing asks for the figure)."""
        memory.dataset(self.dbs)

    def _on_appendonly(self, enabled: bool) -> None:
        """CONFIG SET appendonly: yes writes a base in the background first, no stops."""
        aof = self.aof
        if enabled and not aof.enabled:
            aof.enable_at_runtime()
        elif not enabled and aof.enabled:
            aof.kill_rewrite_child()
            aof.stop()

    shutdown_asap = False  # a shutdown signal arrived and its shutdown is under way

    def shutdown_on_signal(self, signum: int) -> None:
        """SIGTERM/SIGINT (pykv.server.lifecycle.signals): shut down with the flags of
        ``shutdown-on-sigterm``/``shutdown-on-sigint``; if that fails, keep running."""
        from pykv.server.lifecycle.signals import flags_for

        if self.prepare_for_shutdown(**flags_for(self.config, signum)):
            self.stop()
        self.shutdown_asap = False

    def prepare_for_shutdown(self, save: bool | None = None, force: bool = False,
                             now: bool = False) -> bool:
        """Redis's prepareForShutdown/finishShutdown: stop children, fsync the AOF, save if
        asked (or if save points are configured and ``save`` is None), remove the pidfile
        and the unix socket, log the goodbye. False if the save failed and ``force`` is not
        set: the server then keeps running. ``now`` skips waiting for lagging replicas,
        and pykv has none, so ``shutdown-timeout`` never has anything to wait for."""
        log.warning("User requested shutdown...")
        if self.loading:
            save = False  # never overwrite the dataset with a half-loaded one
        rdb = self.persistence
        rdb.kill_child()
        self.aof.kill_rewrite_child()
        if self.aof.enabled:
            log.info("Calling fsync() on the AOF file.")
            self.aof.stop()  # flush and fsync what was written
        if save is None:
            save = bool(self.config.save)
        if save:
            log.info("Saving the final RDB snapshot before exiting.")
            if self.supervisor is not None:
                self.supervisor.notify("STATUS=Saving the final RDB snapshot\n")
            if not rdb.save():
                if not force:
                    log.warning("Error trying to save the DB, can't exit.")
                    if self.supervisor is not None:
                        self.supervisor.notify(
                            "STATUS=Error trying to save the DB, can't exit.\n")
                    log.warning("Errors trying to shut down the server. Check the logs for "
                                "more information.")
                    return False
                log.warning("Error trying to save the DB. Exit anyway.")
        for hook in self.shutdown_hooks:
            try:
                hook()
            except Exception:
                log.exception("shutdown hook failed")
        if self.config.daemonize or self.config.pidfile:
            from pykv.server.lifecycle.daemon import remove_pidfile

            remove_pidfile(self.config.pidfile)
        if self.config.unixsocket and any(
                getattr(lst, "spec", None) is not None and lst.spec.type == "unix"
                and lst.spec.path == self.config.unixsocket for lst in self.listeners):
            log.info("Removing the unix socket file.")
        self.close_listeners()
        log.warning("Redis is now ready to exit, bye bye...")
        return True

    def stop(self) -> None:
        """Stop accepting, close every client, and let ``serve_forever`` return."""
        self.close_listeners()
        for client in list(self.clients.values()):
            client.close_now()
        if self._cron_handle is not None:
            self._cron_handle.cancel()
        if self._stopped is not None:
            self._stopped.set()

    def close_listeners(self) -> None:
        for listener in self.listeners:
            try:
                listener.close()
            except Exception:
                log.exception("closing listener")
        self.listeners = []

    # -- clients ---------------------------------------------------------------------------
    def replay_client(self) -> Client:
        """A connection-less client that executes logged commands (AOF loading): replies
        discarded, exempt from -LOADING, never blocking."""
        client = Client(self, None, 0)
        client.authenticated = True
        client.reply_mode = REPLY_OFF
        client.replaying = True
        client.deny_blocking = True
        return client

    def accept(self, conn: Connection) -> Client:
        client = Client(self, conn, self.next_client_id)
        self.next_client_id += 1
        self.stat_numconnections += 1
        if len(self.clients) >= self.config.maxclients:
            self.stat_rejected_conn += 1
            client.add_reply(ErrorReply(b"ERR max number of clients reached"))
            client.closing = True
            client.flush()
            return client
        refusal = self.config_effects.admit(conn)  # tcp-keepalive, protected-mode
        if refusal is not None:
            self.stat_rejected_conn += 1
            client.add_reply(refusal)
            client.closing = True
            client.flush()
            return client
        self.clients[client.id] = client
        return client

    def remove_client(self, client: Client) -> None:
        if self.clients.pop(client.id, None) is None:
            return
        if client.monitor and client in self.monitors:
            self.monitors.remove(client)
        for hook in self.client_close_hooks:
            hook(client)

    # -- statistics ------------------------------------------------------------------------
    def count_error(self, err: ErrorReply) -> None:
        code = err.data.split(b" ", 1)[0]
        self.errorstats[code] = self.errorstats.get(code, 0) + 1
        self.stat_total_error_replies += 1

    @property
    def stat_expired_keys(self) -> int:
        return self.stat_expired_keys_base + sum(db.expired_count for db in self.dbs)

    def reset_stats(self) -> None:
        for cmd in self.commands:
            cmd.reset_stats()
        self.errorstats.clear()
        self.stat_numcommands = self.stat_numconnections = self.stat_rejected_conn = 0
        self.stat_net_input_bytes = self.stat_net_output_bytes = 0
        self.stat_keyspace_hits = self.stat_keyspace_misses = 0
        self.stat_total_error_replies = 0
        self.stat_dump_payload_sanitizations = 0
        self.stat_evicted_keys = self.stat_evicted_clients = 0
        self.stat_expired_keys_base = -sum(db.expired_count for db in self.dbs)

    # -- slow log and monitor --------------------------------------------------------------
    @staticmethod
    def _slowlog_threshold(usec: int) -> int:
        return (1 << 62) if usec < 0 else usec * 1000

    def _on_slowlog_threshold(self, value: object) -> None:
        """``call`` checks one threshold: the lower of the slow log's and the latency
        monitor's (``slowlog_push`` then sorts out which of the two wants the sample)."""
        self.slowlog_log_ns = self._slowlog_threshold(self.config.slowlog_log_slower_than)
        latency_ms = self.config.latency_monitor_threshold
        self.slowlog_threshold_ns = min(self.slowlog_log_ns,
                                        latency_ms * 1_000_000 if latency_ms else 1 << 62)

    def _on_latency_tracking(self, value: bool) -> None:
        self.latency_tracking = value

    def slowlog_push(self, client: Client, argv: list[bytes], usec: int) -> None:
        latency_ms = self.config.latency_monitor_threshold
        if latency_ms and usec // 1000 >= latency_ms:
            cmd = client.last_cmd
            self.latency.add_sample("fast-command" if cmd is not None and cmd.fast
                                    else "command", usec // 1000)
        if self.config.slowlog_max_len <= 0 or usec * 1000 < self.slowlog_log_ns:
            return
        # Redis keeps at most 32 arguments and 128 bytes per argument
        args = []
        for i, arg in enumerate(argv):
            if i == 31 and len(argv) > 32:
                args.append(b"... (%d more arguments)" % (len(argv) - 31))
                break
            if len(arg) > 128:
                arg = arg[:128] + b"... (%d more bytes)" % (len(arg) - 128)
            args.append(arg)
        self.slowlog.appendleft(SlowlogEntry(self.slowlog_next_id, int(time.time()), usec, args,
                                             client.addr, client.name))
        self.slowlog_next_id += 1
        while len(self.slowlog) > self.config.slowlog_max_len:
            self.slowlog.pop()

    def feed_monitors(self, client: Client, argv: list[bytes]) -> None:
        line = self.format_monitor_line(client, argv)
        for mon in list(self.monitors):
            if mon is not client:
                mon.add_push(line)
                mon.flush()

    # -- client pause ----------------------------------------------------------------------
    def should_pause(self, client: Client, cmd: Command, argv: list[bytes]) -> bool:
        """Whether CLIENT PAUSE holds this command back (see pykv.server.pause)."""
        if int(time.time() * 1000) < self.pause_end_ms and \
                pause.should_pause(self, client, cmd, argv):
            return True
        # a CLIENT PAUSE that is over leaves its clients to the pause timer
        return self.pause_failover and pause.should_pause(self, client, cmd, argv, True)

    def postpone(self, client: Client, argv: list[bytes]) -> None:
        client.paused = True
        self.postponed.append((client, argv))

    def pause_clients(self, timeout_ms: int, write_only: bool) -> None:
        """CLIENT PAUSE: a later end or a stricter mode (ALL over WRITE) wins."""
        now = int(time.time() * 1000)
        end = now + timeout_ms
        if self.pause_active and now < self.pause_end_ms:
            end = max(end, self.pause_end_ms)
            write_only = write_only and self.pause_write_only
        self.pause_active = True
        self.pause_end_ms = end
        self.pause_write_only = write_only
        pause.set_expiry_paused(self, True)
        if self._pause_timer is not None:
            self._pause_timer.cancel()
        if self.loop is not None:
            self._pause_timer = self.loop.call_later(max(0, end - now) / 1000,
                                                     self._pause_expired)

    def _pause_expired(self) -> None:
        self._pause_timer = None
        now = int(time.time() * 1000)
        if now < self.pause_end_ms:
            self._pause_timer = self.loop.call_later((self.pause_end_ms - now) / 1000,
                                                     self._pause_expired)
            return
        self.unpause_clients()

    def pause_for_failover(self, on: bool) -> None:
        """FAILOVER's write pause, apart from CLIENT PAUSE: ending one leaves the other."""
        self.pause_failover = on
        if on:
            self.pause_active = True
            pause.set_expiry_paused(self, True)
        elif int(time.time() * 1000) >= self.pause_end_ms:
            self.unpause_clients()

    def unpause_clients(self) -> None:
        """End the pause; held commands run in the order they arrived, once the current
        work is done (Redis runs them before the loop sleeps: the rest of the unpausing
        client's pipeline goes first); those FAILOVER's pause holds wait again."""
        self.pause_active = self.pause_failover
        self.pause_end_ms = 0
        pause.set_expiry_paused(self, self.pause_failover)
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None
        held, self.postponed = self.postponed, deque()
        if held and self.loop is not None:
            self.loop.call_soon(self._run_held, held)
        elif held:
            self._run_held(held)

    def _run_held(self, held: deque) -> None:
        for client, argv in held:
            if client.closed:
                continue
            client.paused = False  # until now its later input waited behind argv
            self.clock.update()
            client.execute(argv)
            if not client.paused:
                client.process_input()
            client.flush()

    # -- cron ------------------------------------------------------------------------------
    def add_cron(self, hook: Callable[[], None]) -> None:
        self.cron_hooks.append(hook)

    def _schedule_cron(self) -> None:
        hz = max(1, min(500, self.config.hz or 1))
        self._cron_handle = self.loop.call_later(1.0 / hz, self.cron)

    def cron(self) -> None:
        try:
            if self.pause_cron:  # DEBUG PAUSE-CRON 1
                return
            self.cronloops += 1
            self.clock.update()
            if not self.loading:  # while loading Redis runs none of this either
                if self.active_expire_enabled:
                    self.active_expire_cycle()
                for hook in self.cron_hooks:
                    hook()
        except Exception:
            log.exception("cron failed")
        finally:
            if self._stopped is not None and not self._stopped.is_set():
                self._schedule_cron()

    def active_expire_cycle(self) -> None:
        """Redis's slow expire cycle: at most ~25% of each tick spent expiring keys."""
        deadline = 0
        for db in self.dbs:
            if not db.expires:
                continue   # no work, no time spent: the clock is read only around work
            if not deadline:
                hz = max(1, self.config.hz)
                effort = self.config.active_expire_effort
                budget_ns = int(1e9 / hz * (25 + 2 * (effort - 1)) / 100)
                deadline = time.monotonic_ns() + budget_ns
            db.active_expire(deadline, 20 + 5 * (effort - 1))
            if time.monotonic_ns() >= deadline:
                break

    def now_info_uptime(self) -> int:
        return int(time.monotonic() - self.start_monotonic)

    def unblock_client(self, client: Client, error: bool = False) -> bool:
        """CLIENT UNBLOCK: release a client blocked on keys (as a timeout, or with the
        UNBLOCKED error); False if it was not blocked."""
        return self.blocking.unblock_client(client, error)

    @property
    def blocked_count(self) -> int:
        """Clients blocked on keys (INFO clients ``blocked_clients``)."""
        return self.blocking.count

