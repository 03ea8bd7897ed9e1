"""pykv as a replica: the link to the master (``server.master_link``) and its life cycle.

One asyncio task per link runs Redis's replica state machine: ``connect`` → ``connecting``
→ ``handshake`` (pykv.replication.handshake) → ``sync`` (a full resync:
pykv.replication.receive) or straight to ``connected`` (``+CONTINUE``) → ``connected``,
and back to ``connect`` a second later when the link fails.

Connected, the master's bytes are parsed with pykv's own request parser and run by the
*master client* (flag ``M`` in CLIENT LIST, replies discarded, exempt from
``replica-read-only``). The replication offset (``slave_repl_offset``) advances by the
bytes of each command applied, outside MULTI only, as Redis's ``commandProcessed`` does;
the same bytes go to this server's backlog and, unchanged, to its own replicas
(``server.replicas.feed_raw`` when the master side is present). ``REPLCONF GETACK`` is
answered with ``REPLCONF ACK <offset>``, and an ACK goes out every second anyway.

Expiry on a replica is Redis 7.0's: for normal clients an expired key reads as missing but
stays (``Database.expire_paused``), the active cycle deletes nothing, and the master client
sees every key as live (``Clock.master_view``); an expiry time already past is stored, not
acted on — only the master's DEL removes a key.

The history (replication id and offset) survives a link loss, a restart (the RDB's
``repl-id``/``repl-offset`` AUX fields) and a change of master, so the next ``PSYNC`` can
continue; ``REPLICAOF NO ONE`` (``promote``) shifts it to ``replid2``.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pykv.net.base import Connection
from pykv.net.tls import TlsConfigError, client_tls_context
from pykv.protocol._parser import ProtocolError
from pykv.replication import receive
from pykv.replication.handshake import (
    LinkError,
    MasterConnection,
    encode_command,
    handshake,
    psync,
)
from pykv.server.client import REPLY_OFF, Client

log = logging.getLogger("pykv")

RECONNECT_DELAY = 1.0  # replicationCron runs once a second
_ROLE_STATES = ("connect", "connecting", "handshake", "sync", "connected")
READ_CHUNK = 1 << 16


class MasterLink:
    """``server.master_link``: this server replicates ``host:port``."""

    def __init__(self, server: Any, host: str, port: int) -> None:
        self.server = server
        self.host = host
        self.port = port
        self.state = "connect"
        self.conn: MasterConnection | None = None
        self.master_client: Client | None = None
        self.task: asyncio.Task | None = None
        self.down_since = 0  # unix seconds since the link went down (0: it never was up)
        self.transfer: receive.Transfer | None = None
        # the history to PSYNC with (Redis's cached master): our replid and offset are it
        self.has_history = False
        self.stream_db = 0  # the master client's database when the link went down
        self.read_reploff = 0  # bytes read from the stream (slave_read_repl_offset)
        self.pending = bytearray()  # read, not yet applied
        self.last_ack = 0.0
        self.last_io = 0.0
        self.stopped = False

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        if self.task is None and self.server.loop is not None:
            self.task = self.server.loop.create_task(self._run())
        apply_flags(self.server)

    def stop(self) -> None:
        """Drop the link for good (REPLICAOF NO ONE, another master, shutdown)."""
        self.stopped = True
        self._drop_connection()
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self._lose_master_client()
        self.state = "none"

    async def _run(self) -> None:
        while not self.stopped:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except LinkError as exc:
                if str(exc):
                    log.warning("%s", exc)
            except receive.RdbFormatError as exc:
                log.warning("Failed trying to load the MASTER synchronization DB from "
                            "socket: %s", exc)
            except Exception:  # noqa: BLE001 - a bug must not end replication for good
                log.exception("Replication link failed")
            self._link_lost()
            if self.stopped:
                break
            await asyncio.sleep(RECONNECT_DELAY)

    async def _session(self) -> None:
        server = self.server
        cfg = server.config
        self.state = "connecting"
        apply_flags(server)
        log.info("Connecting to MASTER %s:%d", self.host, self.port)
        tls = None
        if cfg.tls_replication:
            try:
                tls = client_tls_context(cfg)
            except TlsConfigError as exc:
                raise LinkError(f"Error condition on socket for SYNC: {exc}") from None
        self.conn = conn = await MasterConnection.open(self.host, self.port, cfg.repl_timeout,
                                                       tls)
        log.info("MASTER <-> REPLICA sync started")
        self.state = "handshake"
        await handshake(conn, cfg, cfg.port)
        repl = server.repl
        if self.has_history:
            replid, offset = repl.replid, repl.master_repl_offset + 1
            log.info("Trying a partial resynchronization (request %s:%d).", replid, offset)
        else:
            replid, offset = "?", -1
            log.info("Partial resynchronization not possible (no cached master)")
        failover = getattr(getattr(server, "replicas", None), "failover", None)
        handing_over = failover is not None and failover.state == "failover-in-progress"
        answer = await psync(conn, replid, offset, handing_over)
        if handing_over:  # +CONTINUE or (an edge case) +FULLRESYNC: the target took over
            accepted = answer.kind in ("continue", "full")
            server.loop.call_soon(failover.psync_answered, accepted)
            if not accepted:
                raise LinkError("")
        if answer.kind == "retry":
            raise LinkError("Master is currently unable to PSYNC but should be in the "
                            f"future: {answer.line.decode('utf-8', 'replace')}")
        if answer.kind == "continue":
            self._continue(answer.replid)
        else:
            if answer.kind == "unsupported":
                log.info("Retrying with SYNC...")
                conn.send("SYNC")
                replid, offset = "", -1
            else:
                replid, offset = answer.replid, answer.offset
                log.info("Full resync from master: %s:%d", replid, offset)
            await self._full_sync(conn, replid, offset)
        await self._stream(conn)

    def _continue(self, new_replid: str) -> None:
        """``+CONTINUE [<new replid>]``: go on from our offset (a new id: the master was
        promoted; our old id becomes ``replid2``, as Redis's PSYNC2 does)."""
        repl = self.server.repl
        log.info("Successful partial resynchronization with master.")
        if new_replid and new_replid != repl.replid:
            repl.replid2 = repl.replid
            repl.second_repl_offset = repl.master_repl_offset + 1
            repl.replid = new_replid
            log.info("Master replication ID changed to %s", new_replid)
            _disconnect_replicas(self.server)
        if repl.backlog is None:
            repl.create_backlog(self.server.config.repl_backlog_size)
        self._connected(self.stream_db)
        log.info("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")

    async def _full_sync(self, conn: MasterConnection, replid: str, offset: int) -> None:
        server = self.server
        self.has_history = False  # Redis discards the cached master here
        self.state = "sync"
        self.transfer = receive.Transfer()
        payload = await receive.receive(conn, server, self.transfer)
        aof = server.aof
        if aof.enabled:  # as Redis: stopped for the load, restarted (with a rewrite) after
            aof.stop()
        _disconnect_replicas(server)
        repl = server.repl
        repl.free_backlog()
        stash = receive.stash_dbs(server) if server.config.repl_diskless_load == "swapdb" \
            else None
        receive.flush_old_data(server)
        try:
            aux = await receive.load(server, payload)
        except receive.RdbFormatError:
            if stash is not None:
                receive.restore_dbs(server, stash)
            raise
        repl.replid = replid or repl.replid
        repl.master_repl_offset = max(0, offset)
        repl.clear_replid2()
        repl.create_backlog(server.config.repl_backlog_size)
        self.has_history = True
        db = _aux_int(aux, b"repl-stream-db", 0)
        self._connected(db if 0 <= db < len(server.dbs) else 0)
        if server.config.appendonly and not aof.enabled:
            aof.enable_at_runtime()
        log.info("MASTER <-> REPLICA sync: Finished with success")

    def _connected(self, db_index: int) -> None:
        server = self.server
        self.state = "connected"
        self.transfer = None
        self.read_reploff = server.repl.master_repl_offset
        self.pending = bytearray()
        client = Client(server, _LinkConnection(self.conn), server.next_client_id)
        server.next_client_id += 1
        client.authenticated = True
        client.parser.auth_required = False
        client.acl_restricted = False
        client.reply_mode = REPLY_OFF
        client.deny_blocking = True
        client.is_master = True
        client.select(db_index)
        server.clients[client.id] = client
        self.master_client = client
        self.last_io = time.time()
        apply_flags(server)
        self.send_ack()

    # -- the stream --------------------------------------------------------------------------
    async def _stream(self, conn: MasterConnection) -> None:
        reader = conn.reader
        while not self.stopped:
            timeout = self.server.config.repl_timeout  # (CONFIG SET applies at once)
            client = self.master_client
            if client is None or client.closed:
                raise LinkError("")  # killed (CLIENT KILL): logged as the link loss
            try:
                data = await asyncio.wait_for(reader.read(READ_CHUNK), timeout)
            except TimeoutError:
                raise LinkError("MASTER timeout: no data nor PING received...") from None
            except OSError as exc:
                raise LinkError(f"Error reading from MASTER: {exc}") from None
            if not data:
                raise LinkError("")  # the master closed: logged as the link loss
            self.apply(data)

    def apply(self, data: bytes) -> None:
        """Run the commands of ``data`` (the rest waits for more bytes) as the master."""
        server = self.server
        client = self.master_client
        if client is None or client.closed:
            return
        self.last_io = client.last_interaction = time.time()
        self.read_reploff += len(data)
        client.net_in += len(data)
        self.pending += data
        parser = client.parser
        parser.feed(data)
        clock = server.clock
        clock.update()
        clock.master_view = True  # no key is expired for the master (module docstring)
        try:
            while not client.closed:
                try:
                    argv = parser.get_command()
                except ProtocolError as exc:
                    log.warning("Protocol error from MASTER: %s", exc)
                    client.close_now()
                    return
                if argv is None:
                    break
                if argv[0].lower() == b"replconf":
                    if len(argv) > 1 and argv[1].lower() == b"getack":
                        self.send_ack()
                else:
                    client.execute(argv)
                if client.multi is None:  # the offset moves past whole transactions only
                    # (the parser may hold a partly parsed command: count from the end)
                    end = self.read_reploff - parser.buffered()
                    if end > self.reploff:
                        self._advance(end - self.reploff)
        finally:
            clock.master_view = False
        parser.compact()
        client.flush()

    def _advance(self, count: int) -> None:
        chunk = bytes(self.pending[:count])
        del self.pending[:count]
        replicas = getattr(self.server, "replicas", None)
        if replicas is not None:  # the history, the backlog and our own replicas
            replicas.feed_raw(chunk)
        else:
            self.server.repl.feed(chunk)

    @property
    def reploff(self) -> int:
        """The offset of the last byte applied (``slave_repl_offset``)."""
        return self.server.repl.master_repl_offset

    def send_ack(self) -> None:
        conn = self.conn
        if conn is None or self.state != "connected":
            return
        self.last_ack = time.monotonic()
        try:
            conn.writer.write(encode_command("REPLCONF", "ACK", self.reploff))
        except Exception:  # noqa: BLE001 - the read side notices a dead link
            pass

    def cron(self) -> None:
        """Once a second: REPLCONF ACK (Redis's replicationCron)."""
        if self.state == "connected" and time.monotonic() - self.last_ack >= 1.0:
            self.send_ack()

    # -- link loss ---------------------------------------------------------------------------
    def _drop_connection(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _lose_master_client(self) -> None:
        client = self.master_client
        if client is None:
            return
        self.master_client = None
        self.stream_db = client.db_index
        client.closing = True
        if not client.closed:
            client.closed = True
            self.server.remove_client(client)
        if client.multi is not None:  # a transaction cut by the link loss never runs
            client.multi = None
        self.pending = bytearray()
        self.down_since = int(time.time())
        log.warning("Connection with master lost.")
        log.info("Caching the disconnected master state.")

    def _link_lost(self) -> None:
        self._drop_connection()
        self._lose_master_client()
        self.transfer = None
        if not self.stopped:
            self.state = "connect"
        apply_flags(self.server)

    # -- INFO and ROLE ---------------------------------------------------------------------
    def info_fields(self) -> list[tuple[str, Any]]:
        """The rows Redis's INFO replication prints after ``role:slave``."""
        server = self.server
        now = time.time()
        client = self.master_client
        if client is not None:
            read_off, off = self.read_reploff, self.reploff
        elif self.has_history:
            read_off = off = self.reploff
        else:
            read_off = off = 1
        rows: list[tuple[str, Any]] = [
            ("master_host", self.host),
            ("master_port", self.port),
            ("master_link_status", "up" if self.state == "connected" else "down"),
            ("master_last_io_seconds_ago",
             int(now - self.last_io) if client is not None else -1),
            ("master_sync_in_progress", int(self.state == "sync")),
            ("slave_read_repl_offset", read_off),
            ("slave_repl_offset", off),
        ]
        transfer = self.transfer
        if self.state == "sync" and transfer is not None:
            perc = 100.0 * transfer.read / transfer.size if transfer.size else 0.0
            rows += [
                ("master_sync_total_bytes", transfer.size),
                ("master_sync_read_bytes", transfer.read),
                ("master_sync_left_bytes", transfer.size - transfer.read),
                ("master_sync_perc", f"{perc:.2f}"),
                ("master_sync_last_io_seconds_ago", int(now - transfer.last_io)),
            ]
        if self.state != "connected":
            rows.append(("master_link_down_since_seconds",
                         int(now) - self.down_since if self.down_since else -1))
        cfg = server.config
        rows += [
            ("slave_priority", cfg.replica_priority),
            ("slave_read_only", int(cfg.replica_read_only)),
            ("replica_announced", int(cfg.replica_announced)),
        ]
        return rows

    def role_reply(self) -> list[Any]:
        """ROLE: ``slave``, host, port, link state, offset (-1 without a master client)."""
        state = self.state if self.state in _ROLE_STATES else "none"
        offset = self.reploff if self.master_client is not None else -1
        return [b"slave", self.host.encode(), self.port, state.encode(), offset]


class _LinkConnection(Connection):
    """The master client's view of the link (CLIENT LIST's addresses, CLIENT KILL)."""

    type_name = "tcp"

    def __init__(self, conn: MasterConnection | None) -> None:
        self._conn = conn

    def write(self, data: bytes | bytearray) -> None:  # replies to the master: discarded
        return None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def _addr(self, name: str) -> str:
        if self._conn is None:
            return ""
        addr = self._conn.writer.get_extra_info(name)
        if not addr:
            return ""
        host, port = addr[0], addr[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def peer_address(self) -> str:
        return self._addr("peername")

    def local_address(self) -> str:
        return self._addr("sockname")

    def fd(self) -> int:
        sock = self._conn.writer.get_extra_info("socket") if self._conn else None
        return sock.fileno() if sock is not None else -1


def _aux_int(aux: dict[bytes, bytes], name: bytes, default: int) -> int:
    try:
        return int(aux[name])
    except (KeyError, ValueError):
        return default


def _disconnect_replicas(server: Any) -> None:
    """Our own replicas must resync after our history changed (the master side's)."""
    replicas = getattr(server, "replicas", None)
    drop = getattr(replicas, "disconnect_all", None)
    if drop is not None:
        drop()


def apply_flags(server: Any) -> None:
    """Keep the dispatcher's replica checks and the expiry rule in step with the link."""
    link = server.master_link
    cfg = server.config
    server.replica_read_only = link is not None and cfg.replica_read_only
    server.replica_deny_stale = (link is not None and link.state != "connected"
                                 and not cfg.replica_serve_stale_data)
    paused = link is not None or server.pause_failover or (
        server.pause_active and time.time() * 1000 < server.pause_end_ms)
    for db in server.dbs:
        db.expire_paused = paused
