# The dispatcher's three extension types as C declarations (see _core.pyx), so compiled
# command modules read a client's ``db``/``server`` and the server's counters as struct
# members instead of through Python attribute lookups.
from cpython.bytearray cimport PyByteArray_GET_SIZE

from pykv.util._byteio cimport ReadTarget, ReplySink
from pykv.protocol._parser cimport RequestParser


cdef enum:
    LAT_ROWS = 21  # powers 2^9 .. 2^29 (10^9 ns, the clamp, is below 2^30)


cdef class CommandCore:
    cdef public object handler
    cdef public str fullname
    cdef public dict subcommands
    cdef public int arity
    cdef public long long calls, usec, rejected_calls, failed_calls
    cdef public bint no_auth, pubsub_ok, allow_busy, no_multi, skip_monitor, skip_slowlog
    cdef public bint no_propagate, multi_immediate, is_write, loading_ok
    cdef public bint denyoom  # refused with -OOM while maxmemory is exceeded
    cdef public object protected_by  # the enable-*-command option of DEBUG/MODULE LOAD
    # the latency histogram (see _core.pyx): samples recorded, of which under 1 µs, and the rows
    cdef readonly long long lat_samples, lat_under_1us
    cdef unsigned long long *lat_rows[LAT_ROWS]

    cdef void _lat_free(self) noexcept


cdef class ServerCore:
    cdef public object config, clock, commands, propagate, busy_script, tracking, aof
    cdef public object blocking, ready_keys, keyspace_notifier
    # the MISCONF error while persistence is failing and writes must be refused, else None
    cdef public object deny_write_error
    # -NOREPLICAS while min-replicas-to-write is not met (pykv.replication.master), else None
    cdef public object noreplicas_error
    cdef public long long repl_offset  # the replication offset after the last stream bytes
    # commands running (nested: EXEC, scripts), and the effects marks a lazy expiry opened
    # in the outermost one (its DEL and the command's effects go out as one transaction)
    cdef public int calling
    cdef public object lazy_marks
    cdef public dict command_lookup
    cdef public list monitors
    cdef public long long dirty, slowlog_threshold_ns, stat_numcommands
    cdef public long long stat_net_input_bytes, stat_net_output_bytes
    cdef public long long stat_keyspace_hits, stat_keyspace_misses
    cdef public bint latency_tracking  # the latency-tracking config: call records histograms
    cdef public bint pause_active
    # some client class has an output buffer limit (pykv.server.output_limits)
    cdef public bint obuf_limits_on
    cdef public object output_limits
    cdef public Py_ssize_t obuf_min_limit  # OutputLimits.min_limit, for obuf_may_be_over
    # maxmemory-clients is on: clients are measured after their I/O (pykv.server.client_evict)
    cdef public bint client_evict_on
    cdef public object client_evictor
    cdef public bint loading  # the dataset is being loaded: most commands get -LOADING
    cdef public list deferred  # clients whose output is written at this iteration's end
    cdef public object loop
    cdef public long long maxmemory  # the maxmemory config; when set, ``evictor`` runs
    cdef public object evictor  # pykv.server.evict.Evictor
    cdef public bint pre_command_oom  # over maxmemory before this command (scripts check it)
    # a replica (pykv.replication.replica) keeps these two in step with its link and configs:
    # writes refused (replica-read-only), non-stale commands refused (link down and
    # replica-serve-stale-data no)
    cdef public bint replica_read_only, replica_deny_stale
    # cluster mode: the slot router (pykv.cluster.router.Router, plugged in by pykv.assemble)
    cdef public object cluster
    # EXECs and scripts running (Server.begin_effects: only the outermost one wraps)
    cdef public int effects_depth
    # command names as sent -> their command, direct-mapped on a hash of the name's bytes
    # (name, command, name, command...; see _core.pyx _lookup_cached)
    cdef list _name_cache


cdef class ClientCore(ReadTarget):
    cdef public ServerCore server
    cdef public object conn, db, multi, blocked, last_cmd, propagate_override
    cdef public RequestParser parser
    cdef public bytearray out
    cdef public long long id, net_in, net_out
    cdef public int resp, db_index, reply_mode
    cdef public bint authenticated, closing, closed, paused, deny_blocking, multi_dirty
    # the ACL user (pykv.acl.User) and whether it is restricted at all: the one flag the
    # dispatcher tests for a user allowed everything
    cdef public bint acl_restricted
    cdef public object acl_user
    cdef public bint replaying  # the AOF loader's client: runs while the server is loading
    cdef public bint no_touch  # CLIENT NO-TOUCH on: this client's reads touch no key
    cdef public bint write_pending  # queued in ServerCore.deferred for this iteration's end
    cdef public long long woff  # the replication offset after this client's last write (WAIT)
    cdef public bint is_master  # the client applying our master's stream (flag M)
    cdef public set channels, patterns, shard_channels
    cdef public double last_interaction
    # Redis's fixed reply buffer: its size and the most a batch put in it (pykv.server.replybuf)
    cdef public Py_ssize_t buf_size, buf_peak
    cdef public long long buf_peak_reset_ms
    # the output buffer's length when its limits (output, eviction) were last checked
    cdef public Py_ssize_t evict_checked_out
    # the last command name object looked up and its command: the parser hands out the
    # same name object while a pipeline repeats a command, so this skips the table lookup
    cdef object _last_name, _last_found
    # WATCH (pykv.server.watch): the (db index, key) pairs watched, and whether one was
    # touched since (EXEC then answers a null array)
    cdef public set watched
    cdef public bint watch_dirty

    cpdef process_input(self)
    cpdef execute(self, list argv)
    cpdef reject(self, err, cmd)
    cpdef call(self, CommandCore cmd, list argv)
    cpdef bint output_limit_closed(self) except -1
    cpdef discard_transaction(self)
    cpdef run_transaction(self, list queue)
    # since when over its class's soft output limit (0: not; pykv.server.output_limits), and
    # what the transport still held after this client's last write_out: an upper bound of
    # what it holds now, as a transport's backlog only shrinks between writes
    cdef public double obuf_soft_since
    cdef public Py_ssize_t conn_pending
    # replies sent from C (a plain TCP/unix connection, see pykv.net.stream): the socket's
    # fd (-1: every reply goes through conn.write) and its transport's
    # get_write_buffer_size, which must be 0 (nothing queued before) for a send to go
    cdef readonly int direct_fd
    cdef object _tx_backlog
    # replies handed from C to a transport that takes what it can send at once (an RDMA
    # endpoint, see send_through), or None
    cdef ReplySink _sink

    cdef int read_ready(self, const char *data, Py_ssize_t n) except -1
    cdef int _received(self, Py_ssize_t n) except -1
    cdef int _serve_input(self) except -1
    cdef bint _limits_reached(self) except -1
    cdef _flush(self)
    cdef _write_out(self)
    cdef Py_ssize_t _send_direct(self, bytearray out, Py_ssize_t n) except -1


cdef inline bint obuf_may_be_over(ClientCore client):
    """Whether ``client`` may have reached an output buffer limit (then the full check,
    ``ClientCore.output_limit_closed``, must run): under the smallest limit of any class,
    with no soft clock running, no class's limit is reached. C field reads only."""
    cdef ServerCore server = client.server
    return server.obuf_limits_on and (
        client.obuf_soft_since != 0
        or PyByteArray_GET_SIZE(client.out) + client.conn_pending >= server.obuf_min_limit)
