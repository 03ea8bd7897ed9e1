"""pykv as a master: replicas attach with SYNC/PSYNC, get a snapshot, then the stream.

Redis's ``replication.c`` master half, reproduced: a replica is a client that sent
``SYNC``/``PSYNC`` (flag ``S``, client type ``replica``); ``PSYNC <replid> <offset>`` is
served from the backlog when this history holds the offset (``+CONTINUE``), else a full
resync starts (``+FULLRESYNC <replid> <offset>``, the snapshot — ``fullsync`` — then the
stream held back meanwhile). The backlog is created when the first replica attaches
(with new replication ids) and freed after ``repl-backlog-ttl`` seconds without replicas;
while it exists the server's effects stream feeds it (``feed.StreamFeed``). The cron sends
PINGs every ``repl-ping-replica-period``, newlines to replicas waiting for their snapshot,
drops replicas whose ACKs stop for ``repl-timeout``, and counts the good replicas that
``min-replicas-to-write`` asks for. ``WAIT`` parks its client until enough ACKs arrive.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

from pykv import errors
from pykv.replication.failover import NO_FAILOVER, Failover
from pykv.replication.feed import StreamFeed
from pykv.replication.fullsync import BulkSender, DisklessTransfer

log = logging.getLogger("pykv")

WAIT_BGSAVE_START, WAIT_BGSAVE_END, SEND_BULK, ONLINE = range(4)
STATE_NAMES = ("wait_bgsave", "wait_bgsave", "send_bulk", "online")
_PING = [b"PING"]
_GETACK = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"


class Replica:
    """What the master knows of one replica (``client.replica``)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.state = WAIT_BGSAVE_START
        self.listening_port = 0
        self.ip_address = ""
        self.capa_eof = False
        self.capa_psync2 = False
        self.rdb_only = False
        self.exclude_data = False  # rdb-filter-only: no keys in the snapshot
        self.include_functions = True  # ... and functions only if the filter names them
        self.pre_psync = False  # the old SYNC: no +FULLRESYNC line, no ACKs
        self.ack_offset = 0
        self.ack_time = time.time()
        self.wait_since = time.time()
        self.psync_initial_offset = 0
        self.socket_target = False
        self.pending: bytearray | None = bytearray()  # the stream held until it is online
        self.start_on_ack = False  # diskless: the stream starts with the first ACK

    @property
    def ip(self) -> str:
        if self.ip_address:
            return self.ip_address
        addr = self.client.addr
        return addr.rsplit(":", 1)[0] if addr else "?"


class Master:
    """The master side of replication for one server (``server.replicas``)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.repl = server.repl
        self.replicas: list[Replica] = []
        self.stream = StreamFeed(server, self._schedule_flush)
        self.transfer: DisklessTransfer | None = None
        self.disk_sync_running = False
        self.proxying = False  # relaying a master's stream (the replica side)
        self.no_replicas_since = time.time()
        self.good_replicas = 0
        self.stat_sync_full = 0
        self.stat_sync_partial_ok = 0
        self.stat_sync_partial_err = 0
        self.stat_repl_output_bytes = 0
        self.waiting: list[tuple[Any, int, int]] = []  # (client, offset, numreplicas)
        self._getack_scheduled = False
        self._last_second = 0
        self._cron_loops = 0
        self.failover = Failover(server, self)
        server.add_cron(self.cron)
        server.client_close_hooks.append(self._on_client_close)
        server.config.on_change("repl-backlog-size", self._on_backlog_size)
        server.config.on_change("min-replicas-to-write", lambda _v: self.refresh_good())
        server.config.on_change("min-replicas-max-lag", lambda _v: self.refresh_good())
        persistence = getattr(server, "persistence", None)
        if persistence is not None and hasattr(persistence, "bgsave_done_hooks"):
            persistence.bgsave_done_hooks.append(self._on_bgsave_done)
        self.refresh_good()

    # -- the stream ------------------------------------------------------------------------
    def feed_raw(self, data: bytes) -> None:
        """Append already-encoded stream bytes (a master's, relayed by this replica) to the
        history, the backlog and every replica at once: the replica side reads its applied
        offset from ``server.repl`` right after."""
        self.flush_stream()
        repl = self.repl
        repl.feed(data)
        self.stream.base = self.server.repl_offset = repl.master_repl_offset
        self._distribute(data)

    def _schedule_flush(self) -> None:
        loop = self.server.loop
        if loop is not None:
            loop.call_soon(self.flush_stream)

    def flush_stream(self) -> None:
        """Hand what the stream gathered to the backlog and the replicas (once per loop
        iteration, and before anything reads the offset or the backlog)."""
        stream = self.stream
        if stream.in_tx or not stream.buf:
            if stream.buf and not stream.scheduled:
                stream.scheduled = True
                self._schedule_flush()
            return
        data = stream.take()
        repl = self.repl
        repl.feed(data)
        stream.base = repl.master_repl_offset
        self._distribute(data)

    def _distribute(self, data: bytes) -> None:
        for rep in self.replicas:
            if rep.rdb_only:
                continue
            if rep.pending is not None:
                rep.pending += data
            else:
                client = rep.client
                client.out += data
                self.stat_repl_output_bytes += len(data)
                if not client.write_pending:
                    client.write_out()

    def set_proxying(self, on: bool) -> None:
        """While this server follows a master, replicas get the master's stream as it is
        relayed (``feed_raw``) instead of this server's own effects; after REPLICAOF NO ONE
        its own stream resumes (with a SELECT first)."""
        self.flush_stream()
        self.proxying = on
        if on:
            self._stop_feeding()
        elif self.repl.backlog is not None:
            self.stream.seldb = -1
            self._start_feeding()

    def _start_feeding(self) -> None:
        self.stream.base = self.repl.master_repl_offset
        if self.proxying:
            return
        self.server.add_effect_sink(self.stream, self.stream.feed)

    def _stop_feeding(self) -> None:
        self.server.remove_effect_sink(self.stream)

    def save_info(self) -> dict[bytes, bytes] | None:
        """The RDB aux fields that let a replica PSYNC after loading (rdbPopulateSaveInfo);
        a replica's link says them itself (its master's database) when it can."""
        link = getattr(self.server, "master_link", None)
        if link is not None:  # pykv.replication.role.rdb_aux
            return self.server.rdb_repl_aux()
        if self.repl.backlog is None:
            return None
        seldb = self.stream.seldb
        return {b"repl-stream-db": b"%d" % (seldb if seldb >= 0 else 0),
                b"repl-id": self.repl.replid.encode(),
                b"repl-offset": b"%d" % (self.repl.master_repl_offset + len(self.stream.buf))}

    # -- FAILOVER (pykv.replication.failover) ----------------------------------------------
    @property
    def failover_state(self) -> str:
        return self.failover.state

    def start_failover(self, host: str | None, port: int, timeout_ms: int,
                       force: bool) -> Any:
        return self.failover.start(host, port, timeout_ms, force)

    def abort_failover(self) -> None:
        self.failover.abort("Failover manually aborted")

    def _failover_request(self, client: Any, replid: bytes) -> Any:
        """``PSYNC <replid> <offset> FAILOVER`` from our master: take over (the PSYNC then
        continues from our previous history)."""
        if replid.decode("latin-1") != self.repl.replid:
            return errors.PSYNC_FAILOVER_REPLID
        from pykv.replication import role
        from pykv.server.client_info import client_info_line

        role.unset_master(self.server)
        log.warning("MASTER MODE enabled (failover request from '%s')",
                    client_info_line(client))
        return None

    # -- SYNC / PSYNC ----------------------------------------------------------------------
    def replica_of(self, client: Any) -> Replica:
        rep = getattr(client, "replica", None)
        if rep is None:
            rep = client.replica = Replica(client)
        return rep

    def sync_command(self, client: Any, argv: list[bytes]) -> Any:
        from pykv.server.client import NO_REPLY, REPLY_OFF

        if getattr(client, "is_replica", False) or client.monitor:
            return NO_REPLY  # already a replica (or a MONITOR): ignored, as Redis does
        if len(argv) > 3 and argv[0].lower() == b"psync" and argv[3].lower() == b"failover":
            refused = self._failover_request(client, argv[1])
            if refused is not None:
                return refused
        if self.failover.state != NO_FAILOVER:
            return errors.SYNC_WHILE_FAILING_OVER
        link = getattr(self.server, "master_link", None)
        if link is not None and not getattr(link, "connected", True):
            return errors.NOMASTERLINK
        if client.out:
            return errors.SYNC_PENDING_OUTPUT
        rep = self.replica_of(client)
        if rep.exclude_data and not rep.capa_eof:
            return errors.FILTERED_NEEDS_EOF
        log.info("Replica %s:%s asks for synchronization", rep.ip, rep.listening_port)
        psync = argv[0].lower() == b"psync"
        if psync:
            replid = argv[1].decode("latin-1")
            try:
                offset = int(argv[2])
            except ValueError:
                return errors.NOT_INTEGER
            if self._try_partial(rep, replid, offset):
                self.stat_sync_partial_ok += 1
                client.reply_mode = REPLY_OFF
                return NO_REPLY
            if replid != "?":
                self.stat_sync_partial_err += 1
        else:
            rep.pre_psync = True
        self.stat_sync_full += 1
        client.reply_mode = REPLY_OFF
        if self.server.config.repl_disable_tcp_nodelay:
            _disable_nodelay(client)
        rep.state = WAIT_BGSAVE_START
        rep.wait_since = time.time()
        self._attach(rep)
        if self.repl.backlog is None and len(self.replicas) == 1:
            self.repl.change_replid()
            self.repl.clear_replid2()
            self._create_backlog()
            log.info("Replication backlog created, my new replication IDs are '%s' and '%s'",
                     self.repl.replid, self.repl.replid2)
        if not self._child_busy() and not (self._diskless_for(rep)
                                           and self.server.config.repl_diskless_sync_delay):
            self.start_full_sync()
        return NO_REPLY

    def _attach(self, rep: Replica) -> None:
        client = rep.client
        client.is_replica = True
        if rep not in self.replicas:
            self.replicas.append(rep)

    def _create_backlog(self) -> None:
        self.repl.create_backlog(self.server.config.repl_backlog_size)
        self._start_feeding()

    def restore_history(self) -> None:
        """After the start-up load of an RDB a master saved with its replication history
        (``repl-id``/``repl-offset``, as SHUTDOWN writes them), keep that history as the
        secondary id with an empty backlog ending where it ended, so its former replicas
        continue with a partial resync (Redis's loadDataFromDisk for a master)."""
        server = self.server
        if getattr(server, "master_link", None) is not None or server.config.appendonly:
            return
        aux = getattr(server.persistence, "last_aux", None) or {}
        replid = aux.get(b"repl-id", b"").decode("latin-1")
        try:
            offset = int(aux.get(b"repl-offset", b"-1"))
        except ValueError:
            return
        if len(replid) != 40 or offset < 0 or self.repl.backlog is not None:
            return
        repl = self.repl
        repl.replid2 = replid
        repl.second_repl_offset = offset + 1
        repl.master_repl_offset += offset
        self._create_backlog()
        server.repl_offset = repl.master_repl_offset
        self.no_replicas_since = time.time()

    def _try_partial(self, rep: Replica, replid: str, offset: int) -> bool:
        self.flush_stream()
        repl = self.repl
        if not repl.can_continue(replid, offset):
            if replid != "?":
                log.info("Unable to partial resync with replica %s:%s for lack of backlog "
                         "or a different history (replid %s offset %d).",
                         rep.ip, rep.listening_port, replid, offset)
            return False
        rep.state = ONLINE
        rep.pending = None
        rep.ack_time = time.time()
        self._attach(rep)
        client = rep.client
        if rep.capa_psync2:
            client.out += b"+CONTINUE %s\r\n" % repl.replid.encode()
        else:
            client.out += b"+CONTINUE\r\n"
        client.out += repl.backlog.read_from(offset)
        log.info("Partial resynchronization request from %s:%s accepted. Sending %d bytes "
                 "of backlog starting from offset %d.", rep.ip, rep.listening_port,
                 repl.master_repl_offset - offset + 1, offset)
        self.refresh_good()
        return True

    def _diskless_for(self, rep: Replica) -> bool:
        cfg = self.server.config
        return (cfg.repl_diskless_sync or rep.exclude_data) and rep.capa_eof

    def _child_busy(self) -> bool:
        server = self.server
        return (self.transfer is not None or self.disk_sync_running
                or server.persistence.child_running or server.aof.rewrite_in_progress())

    def start_full_sync(self) -> None:
        """Fork for the replicas waiting to start (Redis's startBgsaveForReplication)."""
        waiting = [r for r in self.replicas if r.state == WAIT_BGSAVE_START]
        if not waiting:
            return
        socket = all(self._diskless_for(r) for r in waiting)
        self.flush_stream()
        offset = self.repl.master_repl_offset
        server = self.server
        if socket:
            data = not all(r.exclude_data for r in waiting)
            functions = any(r.include_functions for r in waiting)
            persistence = server.persistence
            try:
                self.transfer = DisklessTransfer(
                    server.loop, [], lambda: persistence.replication_snapshot(data, functions),
                    self._on_transfer_done)
            except OSError:
                self._fail_waiting(waiting)
                return
        else:
            log.info("Starting BGSAVE for SYNC with target: disk")
            if not server.persistence.bgsave():
                self._fail_waiting(waiting)
                return
            self.disk_sync_running = True
        for rep in waiting:
            self._setup_full_resync(rep, offset, socket)
        if socket:
            self.transfer.clients = [r.client for r in waiting]
            for rep in waiting:
                rep.client.conn.write(b"$EOF:" + self.transfer.mark + b"\r\n")
        self.stream.seldb = -1  # the stream after the snapshot starts with a SELECT

    def _setup_full_resync(self, rep: Replica, offset: int, socket: bool) -> None:
        rep.psync_initial_offset = offset
        rep.state = WAIT_BGSAVE_END
        rep.socket_target = socket
        rep.pending = bytearray()
        client = rep.client
        if not rep.pre_psync:
            line = b"+FULLRESYNC %s %d\r\n" % (self.repl.replid.encode(), offset)
            client.out += line
        client.write_out()

    def _fail_waiting(self, reps: list[Replica]) -> None:
        for rep in reps:
            client = rep.client
            client.out += b"-ERR BGSAVE failed, replication can't continue\r\n"
            client.closing = True
            client.write_out()

    def _on_transfer_done(self, transfer: DisklessTransfer, ok: bool) -> None:
        if self.transfer is transfer:
            self.transfer = None
        for rep in list(self.replicas):
            if rep.state != WAIT_BGSAVE_END or not rep.socket_target:
                continue
            if not ok:
                log.warning("Diskless rdb transfer to replica %s:%s failed",
                            rep.ip, rep.listening_port)
                rep.client.close_now()
                continue
            if rep.rdb_only:
                rep.client.closing = True
                rep.client.write_out()
                continue
            log.info("Streamed RDB transfer with replica %s:%s succeeded (socket). Waiting "
                     "for REPLCONF ACK from replica to enable streaming",
                     rep.ip, rep.listening_port)
            rep.state = ONLINE
            rep.start_on_ack = True
            rep.ack_time = time.time()  # no false timeout while the replica loads
        self._start_pending()

    def _on_bgsave_done(self, ok: bool) -> None:
        if not self.disk_sync_running:
            return
        self.disk_sync_running = False
        path = self.server.persistence.path
        for rep in list(self.replicas):
            if rep.state != WAIT_BGSAVE_END or rep.socket_target:
                continue
            if not ok:
                log.warning("SYNC failed. BGSAVE child returned an error")
                rep.client.close_now()
                continue
            rep.state = SEND_BULK
            BulkSender(self.server.loop, rep.client, path,
                       lambda sent, rep=rep: self._bulk_done(rep, sent))
        self._start_pending()

    def _bulk_done(self, rep: Replica, ok: bool) -> None:
        if not ok or rep.client.closed:
            rep.client.close_now()
            return
        log.info("Synchronization with replica %s:%s succeeded", rep.ip, rep.listening_port)
        rep.state = ONLINE
        if rep.rdb_only:
            rep.client.closing = True
            rep.client.write_out()
            return
        self._start_stream(rep)

    def _start_stream(self, rep: Replica) -> None:
        """Send what the stream held back and go on live (replicaStartCommandStream)."""
        rep.start_on_ack = False
        rep.ack_time = time.time()
        client = rep.client
        if rep.pending:
            client.out += rep.pending
            self.stat_repl_output_bytes += len(rep.pending)
        rep.pending = None
        self.server.defer_flush(client)
        self.refresh_good()

    def _start_pending(self) -> None:
        if self._child_busy():
            return
        cfg = self.server.config
        waiting = [r for r in self.replicas if r.state == WAIT_BGSAVE_START]
        if not waiting:
            return
        if any(self._diskless_for(r) for r in waiting) and cfg.repl_diskless_sync_delay:
            idle = max(time.time() - r.wait_since for r in waiting)
            enough = cfg.repl_diskless_sync_max_replicas and \
                len(waiting) >= cfg.repl_diskless_sync_max_replicas
            if idle < cfg.repl_diskless_sync_delay and not enough:
                return
        self.start_full_sync()

    # -- REPLCONF ACK, WAIT ----------------------------------------------------------------
    def ack(self, client: Any, offset: int) -> None:
        rep = getattr(client, "replica", None)
        if rep is None or not getattr(client, "is_replica", False):
            return
        if offset > rep.ack_offset:
            rep.ack_offset = offset
        rep.ack_time = time.time()
        if rep.start_on_ack and rep.state == ONLINE:
            self._start_stream(rep)
        self.refresh_good()
        if self.waiting:
            self._serve_waiting()
        if self.failover.state != NO_FAILOVER and self.server.loop is not None:
            # not here: handing over drops this replica's link (Redis: beforeSleep)
            self.server.loop.call_soon(self.failover.update)

    def count_acks(self, offset: int) -> int:
        return sum(1 for r in self.replicas
                   if r.state == ONLINE and not r.rdb_only and r.ack_offset >= offset)

    def wait(self, client: Any, numreplicas: int, deadline_ms: int) -> Any:
        offset = client.woff
        acked = self.count_acks(offset)
        if acked >= numreplicas or client.deny_blocking:
            return acked
        from pykv.server.blocking import block_for_keys

        reply = block_for_keys(client, [], deadline_ms, _never_served, acked)
        self.waiting.append((client, offset, numreplicas))
        self.request_acks()
        return reply

    def request_acks(self) -> None:
        """REPLCONF GETACK * to the replicas, once per loop iteration (as beforeSleep)."""
        if self._getack_scheduled:
            return
        self._getack_scheduled = True
        loop = self.server.loop
        if loop is None:
            self._send_getack()
        else:
            loop.call_soon(self._send_getack)

    def _send_getack(self) -> None:
        self._getack_scheduled = False
        if self.replicas:
            self.feed_raw(_GETACK)

    def _serve_waiting(self) -> None:
        still = []
        for client, offset, numreplicas in self.waiting:
            state = client.blocked
            if client.closed or state is None:
                continue
            acked = self.count_acks(offset)
            state.timeout_reply = acked  # what a timeout answers from now on
            if acked >= numreplicas:
                self.server.blocking.unblock_client(client)
            else:
                still.append((client, offset, numreplicas))
        self.waiting = still

    # -- min-replicas-to-write ---------------------------------------------------------------
    def refresh_good(self) -> None:
        """Count replicas whose last ACK is within ``min-replicas-max-lag`` and set the
        dispatcher's -NOREPLICAS refusal accordingly (refreshGoodSlavesCount)."""
        cfg = self.server.config
        need = cfg.min_replicas_to_write
        max_lag = cfg.min_replicas_max_lag
        if not need or not max_lag:
            self.good_replicas = 0
            self._set_noreplicas(False)
            return
        now = time.time()
        self.good_replicas = sum(1 for r in self.replicas
                                 if r.state == ONLINE and now - r.ack_time <= max_lag)
        self._set_noreplicas(self.good_replicas < need)

    def _set_noreplicas(self, refuse: bool) -> None:
        server = self.server
        if getattr(server, "master_link", None) is not None:
            refuse = False  # a replica never refuses for lack of its own replicas
        server.noreplicas_error = errors.NOREPLICAS if refuse else None

    # -- lifecycle ---------------------------------------------------------------------------
    def _on_client_close(self, client: Any) -> None:
        rep = getattr(client, "replica", None)
        if rep is None or rep not in self.replicas:
            return
        self.replicas.remove(rep)
        log.info("Connection with replica %s:%s lost.", rep.ip, rep.listening_port)
        if not self.replicas:
            self.no_replicas_since = time.time()
        transfer = self.transfer
        if transfer is not None and all(c.closed for c in transfer.clients):
            log.warning("Diskless rdb transfer, last replica dropped, killing fork child.")
            transfer.abort()
        self.refresh_good()
        if self.waiting:
            self._serve_waiting()

    def disconnect_all(self) -> None:
        """Drop every replica (REPLICAOF changes the history they follow)."""
        for rep in list(self.replicas):
            rep.client.close_now()

    def count_online(self) -> int:
        return sum(1 for r in self.replicas if r.state == ONLINE and not r.rdb_only)

    def _on_backlog_size(self, value: Any) -> None:
        backlog = self.repl.backlog
        if backlog is not None:
            backlog.resize(self.server.config.repl_backlog_size)

    def shutdown(self) -> None:
        if self.transfer is not None:
            self.transfer.abort()

    def cron(self) -> None:
        self.flush_stream()
        self._start_pending()
        self.failover.update()
        now = time.time()
        if int(now) == self._last_second:
            return
        self._last_second = int(now)
        self._cron_loops += 1
        cfg = self.server.config
        if self.replicas and self._cron_loops % max(1, cfg.repl_ping_replica_period) == 0 \
                and self.failover.state == NO_FAILOVER \
                and not self.server.pause_failover:  # a PING would move the target offset
            self.stream.feed(self.stream.seldb, _PING)
        for rep in list(self.replicas):
            client = rep.client
            if rep.state == WAIT_BGSAVE_START or (rep.state == WAIT_BGSAVE_END
                                                  and not rep.socket_target):
                if client.conn is not None:
                    client.conn.write(b"\n")  # keeps the replica's read timeout away
            elif rep.state == ONLINE and not rep.pre_psync and not rep.rdb_only \
                    and now - rep.ack_time > cfg.repl_timeout:
                log.warning("Disconnecting timedout replica (streaming sync): %s:%s",
                            rep.ip, rep.listening_port)
                client.close_now()
            elif rep.pending is not None and self._over_pending_limit(rep, now):
                log.warning("Client %s scheduled to be closed ASAP for overcoming of output "
                            "buffer limits.", client.addr)
                client.close_now()
        backlog = self.repl.backlog
        ttl = cfg.repl_backlog_ttl
        if backlog is not None and not self.replicas and ttl \
                and getattr(self.server, "master_link", None) is None \
                and now - self.no_replicas_since > ttl:
            self.repl.change_replid()
            self.repl.clear_replid2()
            self.repl.free_backlog()
            self._stop_feeding()
            log.info("Replication backlog freed after %d seconds without connected "
                     "replicas.", ttl)
        self.refresh_good()

    def _over_pending_limit(self, rep: Replica, now: float) -> bool:
        """The replica class's output limit applied to the stream held during a sync."""
        hard, soft, seconds = self.server.config.client_output_buffer_limit.get(
            "replica", (0, 0, 0))
        size = len(rep.pending)
        if hard and size >= hard:
            return True
        client = rep.client
        if soft and size >= soft:
            if not client.obuf_soft_since:
                client.obuf_soft_since = time.monotonic()
                return False
            return time.monotonic() - client.obuf_soft_since > seconds
        client.obuf_soft_since = 0.0
        return False

    # -- INFO / ROLE -------------------------------------------------------------------------
    def info_replicas(self) -> list[tuple[str, Any]]:
        self.flush_stream()
        fields: list[tuple[str, Any]] = [("connected_slaves", len(self.replicas))]
        cfg = self.server.config
        if cfg.min_replicas_to_write and cfg.min_replicas_max_lag:
            fields.append(("min_slaves_good_slaves", self.good_replicas))
        now = time.time()
        for i, rep in enumerate(self.replicas):
            fields.append((f"slave{i}", f"ip={rep.ip},port={rep.listening_port},"
                           f"state={STATE_NAMES[rep.state]},offset={rep.ack_offset},"
                           f"lag={int(now - rep.ack_time)}"))
        return fields

    def role_replicas(self) -> list[list[bytes]]:
        return [[rep.ip.encode(), b"%d" % rep.listening_port, b"%d" % rep.ack_offset]
                for rep in self.replicas if rep.state == ONLINE]

    def memory(self) -> tuple[int, int]:
        """(backlog bytes, replica output bytes) for INFO memory."""
        backlog = self.repl.backlog
        outs = sum(len(r.client.out) + len(r.pending or b"") for r in self.replicas)
        return (backlog.size if backlog is not None else 0), outs


def _never_served(client: Any, key: bytes, value: Any) -> bool:
    return False


def _disable_nodelay(client: Any) -> None:
    """``repl-disable-tcp-nodelay yes``: fewer, bigger packets to this replica."""
    transport = getattr(client.conn, "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        except OSError:
            pass


def install(server: Any) -> Master:
    """Create the master side and plug it into ``server`` (``pykv.assemble``)."""
    master = Master(server)
    server.replicas = master
    server.repl_save_info = master.save_info

    def change_replication_id() -> None:  # DEBUG CHANGE-REPL-ID
        server.repl.change_replid()
        server.repl.clear_replid2()

    server.change_replication_id = change_replication_id

    async def restore_after_load() -> None:
        while server.loading:
            await asyncio.sleep(0.01)
        master.restore_history()

    server.startup_hooks.append(lambda: server.loop.create_task(restore_after_load()))
    return master
