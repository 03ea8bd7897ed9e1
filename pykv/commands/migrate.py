"""MIGRATE and RESTORE-ASKING: move keys to another server (Redis's cluster.c migrateCommand).

MIGRATE looks its keys up, snapshots each one (the value object, its DUMP payload and its
absolute expiry), sends AUTH/SELECT/RESTORE pipelined to the target over a cached connection
(``migrate_cached_sockets``: one per host:port, closed after 10 s unused, at most 64, the
target's selected db remembered so SELECT goes out only when it changes), reads one reply
line per command sent, and deletes the keys the target accepted unless COPY was given
(propagated as ``DEL``). Errors and retries follow Redis: a failed cached connection is
reopened once unless the failure was a timeout; a target error is forwarded as ``-ERR Target
instance replied with error: ...``.

Semantics chosen where pykv cannot do what Redis does: Redis runs the network exchange
synchronously, freezing the whole server until the target answers or times out, so nothing
runs between reading the keys and deleting them. pykv parks only the calling client (as the
blocking commands park theirs; its pipelined input waits) and serves every other client
meanwhile. What is sent is the snapshot taken when MIGRATE ran; afterwards a key is deleted
only if it still holds the very object that was sent and that object still serialises to the
payload sent. A key replaced, deleted, flushed or changed in place in the meantime is left as
it is now (the target keeps what it received, as with COPY); a TTL changed meanwhile does not
count as a change. Inside MULTI/EXEC and scripts,
where no client can be parked, MIGRATE does the exchange synchronously as Redis does.
Timeouts apply to each operation (connect, the write, each reply line), as Redis's syncio.
"""
from __future__ import annotations

import asyncio
import logging
import random
import socket
import ssl
import time
from typing import Any

from pykv import errors
from pykv.commands.acl import redact
from pykv.commands.args import to_int
from pykv.commands.persistence import restore
from pykv.commands.registry import command
from pykv.commands.strings import lookup_read
from pykv.net import tls_socket
from pykv.net.tls import TlsConfigError, client_tls_context
from pykv.protocol import OK, ErrorReply, SimpleString
from pykv.server.blocking import answer_failed
from pykv.server.client import NO_REPLY
from pykv.server.notify import notify
from pykv.storage.aof import encode_command
from pykv.storage.aof_manifest import atoi
from pykv.storage.rdb.objects import dump_payload

log = logging.getLogger("pykv")

NOKEY = SimpleString(b"NOKEY")
CACHE_TTL_S = 10  # MIGRATE_SOCKET_CACHE_TTL: an unused cached connection is closed after it
CACHE_ITEMS = 64  # MIGRATE_SOCKET_CACHE_ITEMS
_WRITE_CHUNK = 64 * 1024  # Redis writes the request in 64 KB pieces, each with the timeout
_INTERNAL = ErrorReply(b"ERR internal error while running the command")

# RESTORE-ASKING is RESTORE with the "asking" flag, which only a cluster node looks at
command("restore-asking")(restore)


class Job:
    """One MIGRATE: where to, how, and the snapshot of the keys found."""

    __slots__ = ("host", "port", "name", "dbid", "timeout", "copy", "replace", "username",
                 "password", "items", "restore", "tls")

    def __init__(self) -> None:
        self.host = ""
        self.port = 0
        self.name = b""  # the cache key, "host:port" as the client spelled them
        self.dbid = 0
        self.timeout = 1.0  # seconds, per operation
        self.copy = self.replace = False
        self.username: bytes | None = None
        self.password: bytes | None = None
        # (key, value object, DUMP payload, absolute expiry in ms or -1)
        self.items: list[tuple[bytes, Any, bytes, int]] = []
        # a cluster node sends RESTORE-ASKING (the target's slot may be importing)
        self.restore = b"RESTORE"
        # tls-cluster yes: the target is reached over TLS (Redis's migrateGetSocket)
        self.tls: ssl.SSLContext | None = None


class _Parked:
    """``client.blocked`` while MIGRATE waits on its target (the dispatcher stores the
    call's own time and argv on it, as on a key-blocked client's state)."""

    __slots__ = ("call_usec", "argv")

    def __init__(self) -> None:
        self.call_usec = 0
        self.argv: list[bytes] = []


# -- the connection cache ------------------------------------------------------------------
class Conn:
    """A connection to a MIGRATE target, with the db it has selected and unread input."""

    __slots__ = ("sock", "last_dbid", "last_use", "rbuf")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.last_dbid = -1
        self.last_use = int(time.time())
        self.rbuf = bytearray()


class SocketCache:
    """Redis's ``server.migrate_cached_sockets`` for one server (INFO counts it)."""

    def __init__(self, server: Any) -> None:
        self.conns: dict[bytes, Conn] = {}
        self.locks: dict[bytes, asyncio.Lock] = {}  # one exchange per target at a time
        self.tasks: set[asyncio.Task] = set()
        self._last_sweep = 0.0
        server.add_cron(self.cron)

    def __len__(self) -> int:
        return len(self.conns)

    def get(self, name: bytes) -> Conn | None:
        return self.conns.get(name)

    def add(self, name: bytes, sock: socket.socket) -> Conn:
        if len(self.conns) >= CACHE_ITEMS:  # full: drop one at random, as Redis does
            victim = random.choice([n for n in self.conns if not self.in_use(n)] or [None])
            if victim is not None:
                self.close(victim, self.conns[victim])
        conn = self.conns[name] = Conn(sock)
        return conn

    def close(self, name: bytes, conn: Conn) -> None:
        if self.conns.get(name) is conn:
            del self.conns[name]
        conn.sock.close()

    def in_use(self, name: bytes) -> bool:
        lock = self.locks.get(name)
        return lock is not None and lock.locked()

    def lock(self, name: bytes) -> asyncio.Lock:
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = asyncio.Lock()
        return lock

    def cron(self) -> None:
        """Redis's migrateCloseTimedoutSockets, once a second."""
        now = time.time()
        if now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        for name, conn in list(self.conns.items()):
            if int(now) - conn.last_use > CACHE_TTL_S and not self.in_use(name):
                self.close(name, conn)
        for name in [n for n, lock in self.locks.items() if not lock.locked()]:
            del self.locks[name]


def socket_cache(server: Any) -> SocketCache:
    cache = getattr(server, "migrate_sockets", None)
    if cache is None:
        cache = server.migrate_sockets = SocketCache(server)
    return cache


# -- transports: the same exchange runs over the event loop or over blocking calls ---------
class AsyncIO:
    """Socket operations on the event loop, each bounded by the timeout."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    async def connect(self, host: str, port: int, timeout: float,
                      tls: ssl.SSLContext | None = None) -> socket.socket:
        sock = await asyncio.wait_for(self._connect(host, port), timeout)
        if tls is not None:
            try:
                sock = tls_socket.wrap(tls, sock)
                await asyncio.wait_for(tls_socket.handshake(self.loop, sock), timeout)
            except BaseException:
                sock.close()
                raise
        return sock

    async def _connect(self, host: str, port: int) -> socket.socket:
        error: OSError = OSError("no address")
        for family, kind, proto, _, addr in await self.loop.getaddrinfo(
                host, port, type=socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            try:
                await self.loop.sock_connect(sock, addr)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
            except BaseException:  # cancelled by the timeout
                sock.close()
                raise
        raise error

    async def send(self, sock: socket.socket, data: bytes, timeout: float) -> None:
        for pos in range(0, len(data), _WRITE_CHUNK):
            chunk = data[pos:pos + _WRITE_CHUNK]
            if isinstance(sock, ssl.SSLSocket):
                sending = tls_socket.sendall(self.loop, sock, chunk)
            else:
                sending = self.loop.sock_sendall(sock, chunk)
            await asyncio.wait_for(sending, timeout)

    async def recv(self, sock: socket.socket, timeout: float) -> bytes:
        if isinstance(sock, ssl.SSLSocket):
            return await asyncio.wait_for(tls_socket.recv(self.loop, sock, 65536), timeout)
        return await asyncio.wait_for(self.loop.sock_recv(sock, 65536), timeout)


class BlockingIO:
    """The same operations as blocking calls (MULTI/EXEC and scripts, as Redis does them).
    Its coroutines never suspend; sockets are left non-blocking for the loop's use."""

    async def connect(self, host: str, port: int, timeout: float,
                      tls: ssl.SSLContext | None = None) -> socket.socket:
        sock = socket.create_connection((host, port), timeout)
        if tls is not None:
            try:  # the handshake under the same timeout
                sock = tls.wrap_socket(sock, server_hostname=None)
            except BaseException:
                sock.close()
                raise
        sock.setblocking(False)
        return sock

    async def send(self, sock: socket.socket, data: bytes, timeout: float) -> None:
        sock.settimeout(timeout)
        try:
            for pos in range(0, len(data), _WRITE_CHUNK):
                sock.sendall(data[pos:pos + _WRITE_CHUNK])
        finally:
            sock.setblocking(False)

    async def recv(self, sock: socket.socket, timeout: float) -> bytes:
        sock.settimeout(timeout)
        try:
            return sock.recv(65536)
        finally:
            sock.setblocking(False)


async def _readline(io: Any, conn: Conn, timeout: float) -> bytes:
    """One reply line from the target, without its CRLF."""
    buf = conn.rbuf
    while True:
        end = buf.find(b"\n")
        if end >= 0:
            line = bytes(buf[:end])
            del buf[:end + 1]
            return line[:-1] if line.endswith(b"\r") else line
        data = await io.recv(conn.sock, timeout)
        if not data:
            raise ConnectionResetError("target closed the connection")
        buf += data


def build_request(job: Job, select: bool) -> tuple[bytes, list]:
    """AUTH, SELECT and one RESTORE per key still alive (TTLs relative to now, at least 1 ms),
    and the snapshot items those RESTOREs carry."""
    out = []
    if job.password is not None:
        auth = [b"AUTH", job.password] if job.username is None else \
            [b"AUTH", job.username, job.password]
        out.append(encode_command(auth))
    if select:
        out.append(encode_command([b"SELECT", b"%d" % job.dbid]))
    now = int(time.time() * 1000)
    sent = []
    for item in job.items:
        key, _, payload, expireat = item
        ttl = 0
        if expireat != -1:
            ttl = expireat - now
            if ttl < 0:  # expired since it was looked up
                continue
            ttl = max(ttl, 1)
        sent.append(item)
        argv = [job.restore, key, b"%d" % ttl, payload]
        if job.replace:
            argv.append(b"REPLACE")
        out.append(encode_command(argv))
    return b"".join(out), sent


class _SocketError:
    """Redis's ``socket_err``: the connection failed while writing or reading."""

    __slots__ = ("writing", "timed_out")

    def __init__(self, writing: bool, exc: BaseException | None) -> None:
        self.writing = writing
        self.timed_out = isinstance(exc, TimeoutError)


async def exchange(job: Job, io: Any, cache: SocketCache, cached: bool = True
                   ) -> tuple[Any, list]:
    """Redis's migrateCommand from the connect on: the reply and the items the target
    accepted (none under COPY). A connection that failed is dropped and, unless it timed
    out, tried once more. ``cached=False`` uses a connection of its own."""
    may_retry = True
    while True:
        outcome = await _attempt(job, io, cache, cached, may_retry)
        if not isinstance(outcome, _SocketError):
            return outcome
        if may_retry and not outcome.timed_out:
            may_retry = False
            continue
        failed = errors.MIGRATE_WRITE_FAILED if outcome.writing else errors.MIGRATE_READ_FAILED
        return failed, []


async def _attempt(job: Job, io: Any, cache: SocketCache, cached: bool, may_retry: bool
                   ) -> tuple[Any, list] | _SocketError:
    conn = cache.get(job.name) if cached else None
    if conn is None:
        if job.port < 0:  # getaddrinfo refuses the service "-N"
            return errors.MIGRATE_CONNECT_FAILED, []
        try:
            sock = await io.connect(job.host, job.port & 0xFFFF, job.timeout, job.tls)
        except (socket.gaierror, ValueError, UnicodeError):
            return errors.MIGRATE_CONNECT_FAILED, []
        except OSError as exc:
            # Redis's blocking connect reports success even when the connection was
            # refused or timed out: the write is what fails, and what it reports
            return _SocketError(True, exc)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = cache.add(job.name, sock) if cached else Conn(sock)
    conn.last_use = int(time.time())
    select = conn.last_dbid != job.dbid
    data, sent = build_request(job, select)
    try:
        await io.send(conn.sock, data, job.timeout)
    except OSError as exc:  # TimeoutError is an OSError
        cache.close(job.name, conn)
        return _SocketError(True, exc)
    try:
        auth = await _readline(io, conn, job.timeout) if job.password is not None else b""
        sel = await _readline(io, conn, job.timeout) if select else b""
    except OSError as exc:
        cache.close(job.name, conn)
        return _SocketError(False, exc)
    reply: Any = None
    accepted = []
    lost: _SocketError | None = None
    answered = 0
    for item in sent:
        try:
            line = await _readline(io, conn, job.timeout)
        except OSError as exc:
            lost = _SocketError(False, exc)
            break
        answered += 1
        failed = next((x for x in (auth, sel, line) if x[:1] == b"-"), None)
        if failed is not None:
            if reply is None:  # the first error is the one reported
                conn.last_dbid = -1
                reply = errors.migrate_target_error(failed[1:])
        elif not job.copy:
            accepted.append(item)
    if lost is not None or not cached:
        cache.close(job.name, conn)
    if reply is None and lost is not None:
        if answered == 0 and may_retry and not lost.timed_out:
            return lost  # nothing was acknowledged: worth one more try
        return errors.MIGRATE_READ_FAILED, accepted
    if reply is None:
        conn.last_dbid = job.dbid
        reply = OK
    return reply, accepted


def run_blocking(job: Job, cache: SocketCache) -> tuple[Any, list]:
    """Run ``exchange`` with blocking sockets (its coroutine completes without suspending).
    A target whose cached connection a parked MIGRATE is using gets a connection of its own."""
    coro = exchange(job, BlockingIO(), cache, cached=not cache.in_use(job.name))
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("blocking MIGRATE exchange suspended")


# -- the command ---------------------------------------------------------------------------
def _tls_context(server: Any) -> ssl.SSLContext | None:
    """With tls-cluster yes, the client context (the cluster bus keeps one built)."""
    if not server.config.tls_cluster:
        return None
    bus = getattr(server.cluster, "bus", None)
    try:
        return bus.tls.link_context() if bus is not None else client_tls_context(server.config)
    except TlsConfigError as exc:
        log.warning("MIGRATE cannot reach its target over TLS: %s", exc)
        raise errors.MIGRATE_CONNECT_FAILED from None


def parse(c: Any, argv: list[bytes]) -> tuple[Job, list[bytes]]:
    """The options (Redis's order of checks), with passwords redacted from the argv that
    SLOWLOG and MONITOR see; raises the error reply."""
    job = Job()
    if c.server.cluster is not None:
        job.restore = b"RESTORE-ASKING"
    first_key, num_keys = 3, 1
    j = 6
    while j < len(argv):
        opt = argv[j].lower()
        more = len(argv) - 1 - j
        if opt == b"copy":
            job.copy = True
        elif opt == b"replace":
            job.replace = True
        elif opt == b"auth":
            if not more:
                raise errors.SYNTAX
            j += 1
            job.password = argv[j]
            redact(argv, j, j + 1)
        elif opt == b"auth2":
            if more < 2:
                raise errors.SYNTAX
            job.username, job.password = argv[j + 1], argv[j + 2]
            redact(argv, j + 1, j + 3)
            j += 2
        elif opt == b"keys":
            if argv[3]:
                raise errors.MIGRATE_KEYS_NEED_EMPTY_KEY
            first_key, num_keys = j + 1, len(argv) - j - 1
            break
        else:
            raise errors.SYNTAX
        j += 1
    timeout = to_int(argv[5])
    dbid = to_int(argv[4])
    if timeout is None or dbid is None:
        raise errors.NOT_INTEGER
    job.timeout = (timeout if timeout > 0 else 1000) / 1000.0
    job.dbid = dbid
    job.host = argv[1].decode("utf-8", "surrogateescape")
    job.port = atoi(argv[2])
    job.name = argv[1] + b":" + argv[2]
    job.tls = _tls_context(c.server)
    return job, argv[first_key:first_key + num_keys]


def _delete_accepted(c: Any, db: Any, accepted: list, verify: bool) -> list[bytes]:
    """Delete what the target accepted; with ``verify`` (others ran meanwhile) only a key
    still holding the object sent, unchanged."""
    server = c.server
    deleted = []
    for key, value, payload, _ in accepted:
        current = db.get(key, touch=False)
        if current is None or current is not value:
            continue
        if verify and dump_payload(current, server.config) != payload:
            continue
        db.delete(key)
        notify(server, "g", b"del", key, db.id)
        server.dirty += 1
        deleted.append(key)
    return deleted


@command("migrate")
def migrate(c, argv):
    job, keys = parse(c, argv)
    db = c.db
    config = c.server.config
    for key in keys:
        value = lookup_read(c, key)
        if value is not None:
            job.items.append((key, value, dump_payload(value, config), db.get_expire(key)))
    if not job.items:
        return NOKEY
    server = c.server
    cache = socket_cache(server)
    loop = server.loop
    if c.deny_blocking or loop is None:
        reply, accepted = run_blocking(job, cache)
        deleted = _delete_accepted(c, db, accepted, verify=False)
        if deleted:
            c.propagate_as([b"DEL", *deleted])
        return reply
    state = _Parked()
    c.blocked = state
    task = loop.create_task(_migrate_parked(c, db, job, cache, state))
    cache.tasks.add(task)
    task.add_done_callback(cache.tasks.discard)
    return NO_REPLY


async def _migrate_parked(c: Any, db: Any, job: Job, cache: SocketCache,
                          state: _Parked) -> None:
    started = time.perf_counter_ns()
    try:
        async with cache.lock(job.name):
            reply, accepted = await exchange(job, AsyncIO(asyncio.get_running_loop()), cache)
    except Exception:  # a bug must not leave the client parked forever
        log.exception("Internal error running MIGRATE")
        reply, accepted = _INTERNAL, []
    server = c.server
    server.clock.update()
    deleted = _delete_accepted(c, db, accepted, verify=True)
    if deleted:
        c.propagate_now([b"DEL", *deleted])
    if isinstance(reply, ErrorReply):
        answer_failed(c, reply)
    else:
        c.add_reply(reply)
    server.blocking.resume_parked(c, state, time.perf_counter_ns() - started)
