# cython: language_level=3
"""The dispatcher's hot path in Cython: per-command checks, call bookkeeping, replies.

Three extension base classes hold the fields the hot path reads for every command as C
struct members, so reading them costs a pointer load instead of a Python attribute lookup:

* ``CommandCore`` — a command's handler, arity, the flags the dispatcher checks, its
  ``INFO commandstats`` counters and its latency histogram (``LATENCY HISTOGRAM``, ``INFO
  latencystats``; ``pykv.server.command_table.Command`` adds the metadata);
* ``ServerCore`` — the server state every command touches (``pykv.server.server.Server``
  adds everything else);
* ``ClientCore`` — a connection's protocol state, plus the dispatcher itself:
  ``on_data`` → ``process_input`` → ``execute`` (Redis's ``processCommand`` checks, in
  Redis's order) → ``call`` (Redis's ``call()``: run, time, count, propagate, reply) →
  ``flush`` once per read batch (``pykv.server.client.Client`` adds the rest).

All fields are ``public``: Python code reads and writes them as ordinary attributes, and
the Python subclasses may add any attributes of their own.
"""
import logging
import time

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.errno cimport EINTR, errno
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from pykv import errors
from pykv.protocol._parser import ProtocolError
from pykv.protocol.types import QUEUED, ErrorReply, RawReply

from pykv.protocol._bytebuf cimport bytearray_empty
from pykv.protocol._parser cimport RequestParser  # (declared in _core.pxd too)
from pykv.protocol._writer cimport append_raw, write_reply
from pykv.storage.keyspace cimport Clock

log = logging.getLogger("pykv")
_perf_ns = time.perf_counter_ns  # tests replace it to control the durations ``call`` sees
cdef object _real_perf_ns = time.perf_counter_ns
cdef type _ErrorReply = ErrorReply
cdef object _QUEUED = QUEUED
cdef type _RawReply = RawReply
# EXEC's array headers for the common queue lengths
cdef tuple _ARRAY_HEADERS = tuple(b"*%d\r\n" % n for n in range(64))
cdef object _LOADING = errors.LOADING


class NoReply:
    """Returned by a handler that has written its reply itself (or must send none)."""

    def __repr__(self):
        return "NO_REPLY"


NO_REPLY = NoReply()
cdef object _NO_REPLY = NO_REPLY

# CLIENT REPLY modes (REPLY_ON is the fast path: replies go straight into the buffer)
REPLY_ON, REPLY_OFF, REPLY_SKIP_NEXT, REPLY_SKIP = 0, 1, 2, 3

# Commands that run at once even inside MULTI (the rest are queued).
MULTI_IMMEDIATE = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})


# -- per-command latency histogram ---------------------------------------------------------
# Redis records each call's duration, in whole microseconds times 1000, into an HDR histogram
# of nanoseconds (range 1 ns .. 1 s, two significant digits): below 256 ns every value has
# its own counter, and each power of two [2^k, 2^(k+1)) above is split into 128 equal
# sub-ranges of 2^(k-7) ns. Its values are therefore 1 ns (a call under 1 µs) or multiples
# of 1000 ns between 1000 and 10^9, i.e. powers of two 2^9 .. 2^29. pykv keeps exactly the
# counters such values can reach: one for "under 1 µs", then one row of 128 counters per
# power of two, allocated the first time a duration lands in it (a fast command touches one
# to three rows, 1 KB each). The counters are Redis's to the unit, so LATENCY HISTOGRAM and
# the INFO percentiles computed from them (pykv.commands.latency) are Redis's numbers.
cdef enum:
    LAT_MIN_POW = 9  # 1000 ns, the smallest non-zero value, is in [2^9, 2^10)
    LAT_SUB_BITS = 7  # 128 counters per power of two
    LAT_MAX_USEC = 1000000

cdef extern from *:
    """
    static inline int pykv_msb64(unsigned long long v) { return 63 - __builtin_clzll(v); }
    """
    int pykv_msb64(unsigned long long v) nogil


cdef inline long long _now_ns() except? -1:
    """``_perf_ns()`` (perf_counter_ns is CLOCK_MONOTONIC on Linux), read in C unless a test
    replaced it: two Python calls per command less."""
    cdef timespec ts
    if _perf_ns is _real_perf_ns:
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1000000000LL + ts.tv_nsec
    return _perf_ns()


# -- replies written from C ----------------------------------------------------------------
cdef extern from "<sys/socket.h>" nogil:
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    enum:
        MSG_NOSIGNAL
        MSG_DONTWAIT

# an output buffer sent whole is emptied and kept for the next replies up to this allocation
# (Redis's own reply buffer, PROTO_REPLY_CHUNK_BYTES); a bigger one is replaced
cdef enum:
    KEEP_OUT_ALLOC = 16384
    # client-query-buffer-limit's minimum (pykv.config.table, as Redis's): a query buffer
    # at most this big is under the limit whatever it is set to
    QUERY_BUFFER_LIMIT_MIN = 1024 * 1024


cdef inline void _lat_record(CommandCore cmd, long long usec) noexcept:
    """Count one call of ``usec`` microseconds (a few dozen instructions, no allocation
    unless the duration's power of two is new for this command)."""
    cdef unsigned long long v
    cdef unsigned long long *row
    cdef int msb
    cmd.lat_samples += 1
    if usec <= 0:
        cmd.lat_under_1us += 1
        return
    v = (<unsigned long long>(usec if usec < LAT_MAX_USEC else LAT_MAX_USEC)) * 1000
    msb = pykv_msb64(v)
    row = cmd.lat_rows[msb - LAT_MIN_POW]
    if row == NULL:
        row = <unsigned long long *>calloc(1 << LAT_SUB_BITS, sizeof(unsigned long long))
        if row == NULL:  # out of memory: the sample is lost, the server goes on
            cmd.lat_samples -= 1
            return
        cmd.lat_rows[msb - LAT_MIN_POW] = row
    row[(v >> (msb - LAT_SUB_BITS)) - (1 << LAT_SUB_BITS)] += 1


cdef class CommandCore:
    """What the dispatcher needs of a command, as C fields."""

    # fields: see _core.pxd

    def __dealloc__(self):
        self._lat_free()

    cdef void _lat_free(self) noexcept:
        cdef int i
        for i in range(LAT_ROWS):
            free(self.lat_rows[i])
            self.lat_rows[i] = NULL
        self.lat_samples = self.lat_under_1us = 0

    def reset_stats(self):
        self.calls = self.usec = self.rejected_calls = self.failed_calls = 0
        self._lat_free()
        if self.subcommands:
            for sub in self.subcommands.values():
                sub.reset_stats()

    def record_latency(self, long long usec) -> None:
        """Add one sample to the latency histogram (what ``call`` does in C while
        ``latency-tracking`` is on)."""
        _lat_record(self, usec)

    def latency_counts(self) -> list:
        """The histogram's non-empty counters, lowest values first: ``(lowest, highest,
        count)`` with the counter's value range in nanoseconds, as Redis's HDR histogram
        has it (a call under 1 µs is the value 1 ns)."""
        cdef list out = []
        cdef unsigned long long *row
        cdef unsigned long long low, width
        cdef int r, i
        if self.lat_under_1us:
            out.append((1, 1, self.lat_under_1us))
        for r in range(LAT_ROWS):
            row = self.lat_rows[r]
            if row == NULL:
                continue
            width = 1ULL << (r + LAT_MIN_POW - LAT_SUB_BITS)
            for i in range(1 << LAT_SUB_BITS):
                if row[i]:
                    low = ((1ULL << LAT_SUB_BITS) + i) * width
                    out.append((low, low + width - 1, row[i]))
        return out


# -- command names ---------------------------------------------------------------------
# The parser hands out a new name object whenever the command changes (a transaction, any
# mixed pipeline), and a dict lookup of it hashes its bytes (SipHash) and compares them:
# ~370 instructions. ServerCore._name_cache maps names as sent to their command in
# NAME_SLOTS slots chosen by a cheap hash of the bytes; a slot holds one name, the latest
# one that hashed there (the dict lookup stays the fallback).
cdef enum:
    NAME_SLOTS = 256
    NAME_MAX = 32  # longer names are not cached


cdef inline Py_ssize_t _name_slot(const char *p, Py_ssize_t n) noexcept:
    cdef unsigned int h = <unsigned int>n
    cdef Py_ssize_t i
    for i in range(n):
        h = h * 31 + <unsigned char>p[i]
    return ((h ^ (h >> 8)) & (NAME_SLOTS - 1)) * 2


cdef inline object _lookup_cached(list cache, object name):
    """The command cached for ``name`` (bytes as sent), or None."""
    cdef Py_ssize_t n, slot
    cdef const char *p
    if type(name) is not bytes:
        return None
    n = PyBytes_GET_SIZE(name)
    if n > NAME_MAX:
        return None
    p = PyBytes_AS_STRING(name)
    slot = _name_slot(p, n)
    cached = cache[slot]
    if cached is None or PyBytes_GET_SIZE(cached) != n \
            or memcmp(PyBytes_AS_STRING(cached), p, n) != 0:
        return None
    return cache[slot + 1]


cdef inline void _cache_name(list cache, object name, object found) except *:
    cdef Py_ssize_t n, slot
    if type(name) is not bytes:
        return
    n = PyBytes_GET_SIZE(name)
    if n > NAME_MAX:
        return
    slot = _name_slot(PyBytes_AS_STRING(name), n)
    cache[slot] = name
    cache[slot + 1] = found


cdef class ServerCore:
    """The server state the per-command path reads and updates."""

    # fields: see _core.pxd

    def __cinit__(self, *args, **kwargs):
        self._name_cache = [None] * (2 * NAME_SLOTS)

    def defer_flush(self, ClientCore client):
        """Write ``client``'s output once the current callback completes (with everyone
        else's of this iteration: one AOF write, one socket write per client)."""
        if client.write_pending:
            return
        client.write_pending = True
        if self.deferred is None:
            self.deferred = []
        self.deferred.append(client)
        if len(self.deferred) == 1:
            if self.loop is not None:
                self.loop.call_soon(self.flush_deferred)
            else:
                self.flush_deferred()

    def flush_deferred(self):
        cdef ClientCore client
        pending, self.deferred = self.deferred, []
        if self.aof is not None and self.aof.buf:
            self.aof.flush_before_replies()
        for client in pending:
            client.write_pending = False
            if not client.closed:
                client.write_out()


cdef bint _queues_flag(object queued, bint oom):
    """Whether a MULTI queue holds a denyoom command (``oom``) or a write one."""
    if not queued:
        return False
    for entry in queued:
        if (<CommandCore>entry[0]).denyoom if oom else (<CommandCore>entry[0]).is_write:
            return True
    return False


cdef bint _oom_refuses(ClientCore client, CommandCore cmd):
    """Redis's reject_cmd_on_oom: denyoom commands, EXEC of a queue holding one, and
    anything but EXEC/DISCARD/QUIT/RESET inside MULTI."""
    if cmd.denyoom:
        return True
    if cmd.fullname == "exec":
        return _queues_flag(client.multi, True)
    return client.multi is not None and cmd.fullname not in ("discard", "quit", "reset")


cdef bint _denies_stale(object multi, CommandCore cmd):
    """Redis's is_denystale_command: a command without the ``stale`` flag, or EXEC of a
    queue holding one."""
    if not (<object>cmd).stale:
        return True
    if cmd.fullname == "exec" and multi:
        for entry in multi:
            if not (<object>entry[0]).stale:
                return True
    return False


cdef bint _queues_a_write(object queued):
    """Whether a MULTI queue holds a write command (EXEC is then a write, for MISCONF)."""
    return _queues_flag(queued, False)


cdef class ClientCore:
    """A connection's protocol state and the command dispatcher."""

    # fields: see _core.pxd

    def __cinit__(self, *args, **kwargs):
        self.direct_fd = -1

    # -- transport callbacks -----------------------------------------------------------
    def on_data(self, data):
        """Bytes from the transport: ``bytes``, or a buffer valid only during this call
        (RDMA hands a view of its receive window; the parser copies it)."""
        if self.closing:
            return
        self._received(len(data))
        self.parser.feed(data)
        self._serve_input()

    cdef int read_ready(self, const char *data, Py_ssize_t n) except -1:
        """Bytes read from the socket in C (pykv.net._readmux: plain TCP/unix clients),
        valid during this call only: what ``on_data`` does, without a Python call."""
        if self.closing:
            return 0
        self._received(n)
        self.parser.feed_raw(data, n)
        self._serve_input()
        return 0

    cdef int _received(self, Py_ssize_t n) except -1:
        self.net_in += n
        self.server.stat_net_input_bytes += n
        return 0

    cdef int _serve_input(self) except -1:
        """Run the commands received, then send the replies."""
        cdef ServerCore server = self.server
        # (called through the class: a C call without the Python-override lookup a cpdef
        # makes on an instance with a __dict__, ~450 instructions, as its cache holds one
        # client's dict version and clients alternate; nothing overrides these)
        ClientCore.process_input(self)
        if server.client_evict_on and server.client_evictor.check(self):
            return 0
        self._flush()
        return 0

    def send_directly(self, int fd, object backlog):
        """Send replies to socket ``fd`` from C while ``backlog()`` (the transport's
        get_write_buffer_size) is 0, the rest through ``conn.write``; ``fd`` -1: stop (the
        connection is closing, or saw EOF). Plain TCP and unix connections only
        (pykv.net.stream): TLS, RDMA and the cluster bus write through their connection."""
        self.direct_fd = fd if backlog is not None else -1
        self._tx_backlog = backlog if fd >= 0 else None

    def send_through(self, ReplySink sink):
        """Hand replies to ``sink`` from C (what it does not take goes through
        ``conn.write``); None: stop. The RDMA connection type uses it (pykv.net.rdma)."""
        self._sink = sink

    # -- processing --------------------------------------------------------------------
    cpdef process_input(self):
        """Run every complete command in the query buffer (until blocked or paused)."""
        cdef RequestParser parser = self.parser
        cdef object argv
        cdef Py_ssize_t n
        # one clock reading per batch: commands of one read see the same "now", as the
        # commands of one event-loop iteration do in Redis for expiry purposes
        cdef Clock clock = <Clock?>self.server.clock  # (a C call of update, not a method lookup)
        clock.update()
        # the batch's time is the client's last interaction, as Redis takes its cached
        # server.unixtime: no clock read of its own per read (a system call where the
        # clock has no vDSO, as in the soft-RoCE VM)
        self.last_interaction = clock.ms / 1000.0
        clock.no_touch = self.no_touch  # CLIENT NO-TOUCH: this client's reads touch nothing
        while not self.closing and self.blocked is None and not self.paused:
            try:
                argv = parser.get_command()
            except ProtocolError as exc:
                self.protocol_error(str(exc))
                return
            if argv is None:
                break
            ClientCore.execute(self, argv)  # (a C call: see on_data)
            # Redis checks output limits as replies are added and client eviction before
            # every command; pykv once a pipeline's replies grew by a reply block
            if (self.server.client_evict_on or self.server.obuf_limits_on) and \
                    PyByteArray_GET_SIZE(self.out) > self.evict_checked_out + 16384:
                self.evict_checked_out = PyByteArray_GET_SIZE(self.out)
                if self._limits_reached():
                    return
        # (the config is read only past its smallest value: a lookup less per batch)
        n = parser.buffered()
        if n > QUERY_BUFFER_LIMIT_MIN and n > self.server.config.client_query_buffer_limit:
            self.log_query_buffer_overflow()
            self.closing = True
            self.close_now()
            return
        parser.compact()

    def protected_allowed(self, str option):
        """Redis's allowProtectedAction: ``yes`` allows, ``local`` allows unix sockets and
        loopback peers, ``no`` refuses (enable-debug-command, enable-module-command)."""
        from pykv.config.runtime import is_local

        mode = getattr(self.server.config, option)
        return mode == "yes" or (mode == "local" and is_local(self.conn))

    def log_query_buffer_overflow(self):
        """Redis's warning, with the CLIENT LIST line and the buffer's first 64 bytes."""
        from pykv.server.client_info import client_info_line
        from pykv.config.values import quote_repr

        head = self.parser.peek(64).decode("utf-8", "surrogateescape")
        log.warning("Closing client that reached max query buffer length: %s "
                    "(qbuf initial bytes: %s)", client_info_line(self), quote_repr(head))

    cpdef execute(self, list argv):
        """Redis's processCommand: look up, check, queue or run one command."""
        cdef ServerCore server = self.server
        cdef CommandCore cmd
        cdef CommandCore sub
        cdef Py_ssize_t argc = len(argv)
        cdef int arity
        # the name as sent is tried first (cached per spelling), so "GET" and "get" skip
        # the lower() of every command
        name = argv[0]
        if name is self._last_name:
            found = self._last_found
        else:
            found = _lookup_cached(server._name_cache, name)
            if found is None:
                found = server.command_lookup.get(name)
                if found is None:
                    found = server.commands.get(name.lower())
                    if found is None:
                        self.last_cmd = None  # Redis's lastcmd is set by the lookup
                        self.reject(errors.unknown_command(argv), None)
                        return
                    if len(server.command_lookup) < 4096:
                        server.command_lookup[name] = found
                _cache_name(server._name_cache, name, found)
            self._last_name = name
            self._last_found = found
        cmd = <CommandCore>found
        if cmd.subcommands:
            if argc >= 2:
                found = cmd.subcommands.get(argv[1].lower())
                if found is None:
                    self.last_cmd = None
                    self.reject(errors.unknown_subcommand(argv[1], argv[0]), None)
                    return
                cmd = <CommandCore>found
        elif cmd.handler is None:
            self.last_cmd = None
            self.reject(errors.unknown_command(argv), None)
            return
        self.last_cmd = cmd
        arity = cmd.arity
        if (arity > 0 and argc != arity) or argc < -arity:
            self.reject(errors.wrong_arity(cmd.fullname), cmd)
            return
        if not self.authenticated and not cmd.no_auth:
            self.reject(errors.NOAUTH, cmd)
            return
        if self.acl_restricted:
            err = self.acl_user.deny(self, cmd, argv)
            if err is not None:
                self.reject(err, cmd)
                return
        if cmd.protected_by is not None and not self.protected_allowed(cmd.protected_by):
            self.reject(errors.protected_refused(cmd.protected_by), cmd)
            return
        if server.cluster is not None:  # Redis's getNodeByQuery: -MOVED, -ASK, -CROSSSLOT...
            err = server.cluster.check(self, cmd, argv)
            if err is not None:
                if cmd.fullname == "exec":
                    self.discard_transaction()
                elif self.multi is not None:
                    self.multi_dirty = True
                cmd.rejected_calls += 1
                server.count_error(err)
                self.add_reply(err)
                return
        if server.maxmemory and not self.replaying:
            server.pre_command_oom = server.evictor.perform()
            if server.pre_command_oom and _oom_refuses(self, cmd):
                self.reject(errors.OOM, cmd)
                return
        if server.deny_write_error is not None and (
                cmd.is_write or cmd.fullname == "ping"
                or (cmd.fullname == "exec" and _queues_a_write(self.multi))):
            self.reject(server.deny_write_error, cmd)
            return
        if server.noreplicas_error is not None and not self.replaying and (
                cmd.is_write or (cmd.fullname == "exec" and _queues_a_write(self.multi))):
            self.reject(server.noreplicas_error, cmd)
            return
        if server.replica_read_only and not self.is_master and (
                cmd.is_write or (cmd.fullname == "exec" and _queues_a_write(self.multi))):
            self.reject(errors.READONLY, cmd)
            return
        if self.resp == 2 and (self.channels or self.patterns or self.shard_channels) \
                and not cmd.pubsub_ok:
            self.reject(errors.pubsub_context(cmd.fullname), cmd)
            return
        if server.replica_deny_stale and _denies_stale(self.multi, cmd):
            self.reject(errors.MASTERDOWN, cmd)
            return
        if server.loading and not cmd.loading_ok and not self.replaying:
            self.reject(_LOADING, cmd)
            return
        if server.busy_script is not None and not cmd.allow_busy:  # a script past its limit
            self.reject(server.busy_script.busy_error, cmd)
            return
        if self.multi is not None and not cmd.multi_immediate and cmd.no_multi:
            self.reject(errors.NOT_IN_MULTI, cmd)
            return
        # before MULTI queueing, as Redis 7.0: a write is held back, not queued
        if server.pause_active and server.should_pause(self, cmd, argv):
            server.postpone(self, argv)
            return
        if self.multi is not None and not cmd.multi_immediate:
            (<list>self.multi).append((cmd, argv))
            if self.reply_mode == 0:
                append_raw(self.out, b"+QUEUED\r\n")
            else:
                self.add_reply(_QUEUED)
            return
        ClientCore.call(self, cmd, argv)  # (a C call: see on_data)
        if server.ready_keys:  # keys that blocked clients wait on were written
            server.blocking.handle_ready_keys()

    cpdef reject(self, err, cmd):
        """Refuse a command before it runs (counted as rejected, and dirties a MULTI)."""
        if cmd is not None:
            (<CommandCore>cmd).rejected_calls += 1
            if (<CommandCore>cmd).fullname == "exec":
                # Redis's execCommandAbort (EXEC refused: arity, NOAUTH, BUSY, LOADING...)
                err = errors.exec_abort(err)
                self.discard_transaction()
        if self.multi is not None:
            self.multi_dirty = True
        self.server.count_error(err)
        self.add_reply(err)

    cpdef call(self, CommandCore cmd, list argv):
        """Run the handler with the bookkeeping Redis's ``call()`` does."""
        cdef ServerCore server = self.server
        cdef long long dirty = server.dirty
        cdef int db_id = self.db_index
        cdef long long start, elapsed, usec
        tracking = server.tracking  # client-side caching on (pykv.server.tracking), or None
        if tracking is not None:
            tracking.enter(self, cmd, argv)
        server.calling += 1
        start = _now_ns()
        try:
            try:
                reply = cmd.handler(self, argv)
            except ErrorReply as exc:
                reply = exc
            except Exception:  # a bug must never take the server down
                log.exception("Internal error running %r", argv[:1])
                reply = ErrorReply(b"ERR internal error while running the command")
            elapsed = _now_ns() - start
            if server.propagate is not None and server.dirty != dirty and not cmd.no_propagate:
                if self.propagate_override is None:
                    server.propagate(db_id, argv)
                else:
                    self.propagate_effects(db_id, argv)
                self.woff = server.repl_offset
            elif self.propagate_override is not None:  # asked for, but nothing changed
                self.propagate_override = None
        finally:
            server.calling -= 1
            if server.lazy_marks is not None and server.calling == 0:
                server.end_lazy_effects()
        if server.monitors and not cmd.skip_monitor:  # after the call, as Redis (db of SELECT)
            server.feed_monitors(self, argv)
        usec = elapsed // 1000
        if not self.replaying:  # commands replayed from the AOF: no statistics, as Redis
            cmd.calls += 1
            cmd.usec += usec
            server.stat_numcommands += 1
            if self.blocked is None:
                if server.latency_tracking:
                    _lat_record(cmd, usec)
            else:  # as Redis 7.0: the histogram and the slowlog have it if it is served,
                # this time included
                self.blocked.call_usec = usec
                self.blocked.argv = argv
        self.last_cmd = cmd
        if type(reply) is _ErrorReply:
            cmd.failed_calls += 1
            server.count_error(reply)
        if elapsed >= server.slowlog_threshold_ns and not cmd.skip_slowlog \
                and not self.replaying and self.blocked is None:
            server.slowlog_push(self, argv, usec)
        if reply is not _NO_REPLY:
            if self.reply_mode == 0:
                write_reply(self.out, reply, self.resp)
            elif self.reply_mode != 4:  # 4: a script's client, which takes the returned reply
                self.add_reply(reply)
        if tracking is not None:  # keys read, and this client's invalidations after its reply
            tracking.leave(self, cmd, argv)
        return reply

    # -- transactions (pykv.commands.transactions) ---------------------------------------
    cpdef discard_transaction(self):
        """Leave MULTI state and drop the watches (DISCARD, EXEC, RESET, disconnect)."""
        self.multi = None
        self.multi_dirty = False
        self.watch_dirty = False
        if self.watched:
            (<object>self.server).watches.unwatch_all(self)

    cpdef run_transaction(self, list queue):
        """EXEC's run of its queue (MULTI state already left): the array header, then every
        command through ``call`` as if sent alone, with no rollback (a failing command is
        an error element), blocking commands answering at once, the ACL rules re-checked,
        and the effects propagated inside one MULTI/EXEC. Returns ``NO_REPLY``."""
        cdef ServerCore server = self.server
        cdef bint was_denying = self.deny_blocking
        cdef Py_ssize_t n = len(queue)
        cdef tuple entry
        cluster = server.cluster
        if cluster is not None:  # the one slot the transaction's scripts share (script_cluster)
            (<object>self).exec_slot = cluster.first_slot(queue)
        if self.reply_mode == 0 and n < 64:
            append_raw(self.out, <bytes>_ARRAY_HEADERS[n])
        else:
            self.add_reply(_RawReply(b"*%d\r\n" % n))
        self.deny_blocking = True
        if server.propagate is None:  # no sink: Server.begin_effects would only count
            server.effects_depth += 1
            marks = None
        else:
            marks = server.begin_effects(self.db_index)
        # the ACL rules may have changed since the commands were queued (pykv.acl)
        acl_user = self.acl_user if self.acl_restricted else None
        try:
            for entry in queue:
                if acl_user is not None:
                    err = acl_user.deny_in_exec(self, entry[0], entry[1],
                                                server.commands.get(b"exec"))
                    if err is not None:
                        server.count_error(err)
                        self.add_reply(err)
                        continue
                self.call(<CommandCore>entry[0], <list>entry[1])
        finally:
            if cluster is not None:
                (<object>self).exec_slot = None
            self.deny_blocking = was_denying
            if marks is None:
                server.effects_depth -= 1  # Server.end_effects(None)
            else:
                server.end_effects(marks)  # several writes go out inside MULTI ... EXEC
                self.woff = server.repl_offset  # what WAIT waits for
        return _NO_REPLY

    def propagate_effects(self, int db_id, list argv):
        """Hand the command (or what it asked to be logged as) to the AOF."""
        propagate = self.server.propagate
        override = self.propagate_override
        if override is None:
            propagate(db_id, argv)
            return
        self.propagate_override = None
        if len(override) < 2:
            for command in override:
                propagate(db_id, command)
            return
        # several effects of one command go out as one MULTI/EXEC, as Redis 7.0's
        marks = self.server.begin_effects(db_id)
        try:
            for command in override:
                propagate(db_id, command)
        finally:
            self.server.end_effects(marks)

    # -- replies -----------------------------------------------------------------------
    def add_reply(self, reply):
        if self.reply_mode == 0:
            write_reply(self.out, reply, self.resp)
        elif self.reply_mode == 2:  # REPLY_SKIP_NEXT: skip the reply after this one
            self.reply_mode = 3
        elif self.reply_mode == 3:  # REPLY_SKIP: this reply is the skipped one
            self.reply_mode = 0

    cpdef bint output_limit_closed(self) except -1:
        """Check the output buffer limit (Redis's closeClientOnOutputBufferLimitReached);
        True if this client was closed by it."""
        # (Redis defaults limit only replicas and pub/sub clients: the fast test in
        # obuf_may_be_over skips the full check for nearly every batch)
        if obuf_may_be_over(self):
            return self.server.output_limits.check(self)
        return False

    cdef bint _limits_reached(self) except -1:
        """Check the output buffer limit, then client eviction; True if this client was
        closed by either (C calls: see on_data)."""
        if ClientCore.output_limit_closed(self):
            return True
        cdef ServerCore server = self.server
        return server.client_evict_on and server.client_evictor.check(self)

    def flush(self):
        """Send this client's replies, or, when commands have left AOF data to write,
        queue them for the end of this loop iteration: then the AOF is written (and fsynced
        under "always") once for every client of the iteration before any of their replies
        leaves, as Redis's beforeSleep does."""
        self._flush()

    cdef _flush(self):
        cdef ServerCore server = self.server
        aof = server.aof
        if aof is not None and aof.buf:
            server.defer_flush(self)
            return
        self._write_out()

    def write_out(self):
        """Hand the output buffer to the connection now (and close if asked to)."""
        self._write_out()

    cdef _write_out(self):
        cdef bytearray out = self.out
        cdef Py_ssize_t n = PyByteArray_GET_SIZE(out) if out is not None else 0
        cdef Py_ssize_t sent = 0
        cdef ServerCore server = self.server
        if n and self.conn is not None and not self.closed:
            if n > self.buf_peak:
                self.buf_peak = n if n < self.buf_size else self.buf_size
            self.evict_checked_out = 0
            self.net_out += n
            server.stat_net_output_bytes += n
            if self.direct_fd >= 0:
                sent = self._send_direct(out, n)
            elif self._sink is not None:
                sent = self._sink.take(PyByteArray_AS_STRING(out), n)
            if sent == n:  # all in the kernel: the buffer is emptied for the next replies
                if not bytearray_empty(out, KEEP_OUT_ALLOC):
                    self.out = bytearray()  # (a big one is given back)
            else:  # the transport sends the rest (it holds on to the buffer meanwhile)
                self.out = bytearray()
                self.conn.write(out if sent == 0 else memoryview(out)[sent:])
            if server.obuf_limits_on or server.client_evict_on:
                self.conn_pending = 0 if sent == n else self.conn.pending_write_bytes()
                if self._limits_reached():
                    return
        if self.closing and not self.closed:
            self.close_now()

    cdef Py_ssize_t _send_direct(self, bytearray out, Py_ssize_t n) except -1:
        """Send ``out``'s ``n`` bytes to the socket when its transport has nothing queued
        (which must go first): how many the kernel took. 0 leaves them all to the
        transport: when nothing was queued, on EAGAIN, and on an error, which the
        transport's own write then meets and handles (closing the connection) as before."""
        cdef ssize_t sent
        if self._tx_backlog():
            return 0
        sent = send(self.direct_fd, PyByteArray_AS_STRING(out), <size_t>n,
                    MSG_NOSIGNAL | MSG_DONTWAIT)
        while sent < 0 and errno == EINTR:
            sent = send(self.direct_fd, PyByteArray_AS_STRING(out), <size_t>n,
                        MSG_NOSIGNAL | MSG_DONTWAIT)
        return sent if sent > 0 else 0
