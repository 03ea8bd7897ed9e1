"""Every error text pykv sends, in one place, byte for byte as Redis 7.0 sends it.

Constants are ready ``ErrorReply`` objects; functions build the texts that carry names or
values. Differential tests compare these against real redis-server, so change a text only
to match Redis better.
"""
from __future__ import annotations

from pykv.protocol.types import ErrorReply

# -- generic argument errors ----------------------------------------------------------------
SYNTAX = ErrorReply(b"ERR syntax error")
NOT_INTEGER = ErrorReply(b"ERR value is not an integer or out of range")
NOT_FLOAT = ErrorReply(b"ERR value is not a valid float")
INCR_OVERFLOW = ErrorReply(b"ERR increment or decrement would overflow")
INCR_NAN_OR_INF = ErrorReply(b"ERR increment would produce NaN or Infinity")
WRONGTYPE = ErrorReply(b"WRONGTYPE Operation against a key holding the wrong kind of value")
NO_SUCH_KEY = ErrorReply(b"ERR no such key")
DB_INDEX_OUT_OF_RANGE = ErrorReply(b"ERR DB index is out of range")
INVALID_FIRST_DB_INDEX = ErrorReply(b"ERR invalid first DB index")
INVALID_SECOND_DB_INDEX = ErrorReply(b"ERR invalid second DB index")
INVALID_DB_INDEX = ErrorReply(b"ERR invalid DB index")
SAME_OBJECT = ErrorReply(b"ERR source and destination objects are the same")
STRING_TOO_LONG = ErrorReply(b"ERR string exceeds maximum allowed size (proto-max-bulk-len)")
OFFSET_OUT_OF_RANGE = ErrorReply(b"ERR offset is out of range")
NOT_POSITIVE_COUNT = ErrorReply(b"ERR value is out of range, must be positive")
# getIntFromObjectOrReply: an integer that does not fit a C int
INT_OUT_OF_RANGE = ErrorReply(
    b"ERR value is out of range, value must between -2147483648 and 2147483647")
INVALID_EXPIRE_SET = "ERR invalid expire time in '%s' command"
NX_XX_GT_LT = ErrorReply(
    b"ERR NX and XX, GT or LT options at the same time are not compatible")
GT_LT_NX = ErrorReply(b"ERR GT, LT, and/or NX options at the same time are not compatible")

# -- connection and auth ----------------------------------------------------------------------
NOAUTH = ErrorReply(b"NOAUTH Authentication required.")
WRONGPASS = ErrorReply(
    b"WRONGPASS invalid username-password pair or user is disabled.")
AUTH_NOT_CONFIGURED = ErrorReply(
    b"ERR AUTH <password> called without any password configured for the default user. "
    b"Are you sure your configuration is correct?")
NOPROTO = ErrorReply(b"NOPROTO unsupported protocol version")
NOSCRIPT = ErrorReply(b"NOSCRIPT No matching script. Please use EVAL.")
CLUSTER_DISABLED = ErrorReply(b"ERR This instance has cluster support disabled")

# -- cluster mode (pykv.cluster, pykv.commands.cluster) ---------------------------------------
CROSSSLOT = ErrorReply(b"CROSSSLOT Keys in request don't hash to the same slot")
TRYAGAIN = ErrorReply(b"TRYAGAIN Multiple keys request during rehashing of slot")
CLUSTERDOWN = ErrorReply(b"CLUSTERDOWN The cluster is down")
CLUSTERDOWN_RO = ErrorReply(b"CLUSTERDOWN The cluster is down and only accepts read commands")
CLUSTERDOWN_UNBOUND = ErrorReply(b"CLUSTERDOWN Hash slot not served")
SELECT_IN_CLUSTER = ErrorReply(b"ERR SELECT is not allowed in cluster mode")
SWAPDB_IN_CLUSTER = ErrorReply(b"ERR SWAPDB is not allowed in cluster mode")
# redis.call refused in cluster mode (texts; the script layer adds " script: ..., on ...")
SCRIPT_NON_LOCAL_KEY = b"ERR Script attempted to access a non local key in a cluster node"
SCRIPT_CROSS_SLOT = b"ERR Script attempted to access keys that do not hash to the same slot"
SCRIPT_NO_CLUSTER = ErrorReply(b"ERR Can not run script on cluster, 'no-cluster' flag is set.")
SCRIPT_CLUSTER_DOWN = b"ERR Script attempted to execute a command while the cluster is down"
SCRIPT_CLUSTER_DOWN_RO = (b"ERR Script attempted to execute a write command while the "
                          b"cluster is down and readonly")
CLUSTER_INVALID_SLOT = ErrorReply(b"ERR Invalid or out of range slot")
REPLICAOF_IN_CLUSTER = ErrorReply(b"ERR REPLICAOF not allowed in cluster mode.")


def cluster_redirect(kind: str, slot: int, host: str, port: int) -> ErrorReply:
    """``-MOVED slot host:port`` or ``-ASK slot host:port`` (clusterRedirectClient)."""
    return ErrorReply(f"{kind} {slot} {host}:{port}".encode())


def cluster_error(text: str) -> ErrorReply:
    """A CLUSTER subcommand's ``ERR ...`` text (they are many and each used once)."""
    return ErrorReply(("ERR " + text).encode("utf-8", "surrogateescape"))


def unknown_command(argv: list[bytes]) -> ErrorReply:
    """``unknown command 'x', with args beginning with: 'a' 'b' `` (128-byte budgets).

    Redis formats with ``%.*s`` on C strings, so each argument also stops at a NUL byte.
    """
    args = b""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'" + arg.split(b"\0", 1)[0][: 128 - len(args)] + b"' "
    name = argv[0].split(b"\0", 1)[0][:128]
    return ErrorReply(b"ERR unknown command '" + name + b"', with args beginning with: " + args)


def unknown_subcommand(sub: bytes, container: bytes) -> ErrorReply:
    return ErrorReply(
        b"ERR unknown subcommand '" + sub[:128] + b"'. Try " + container.upper() + b" HELP.")


def subcommand_syntax(sub: bytes, container: bytes) -> ErrorReply:
    """Redis's addReplySubcommandSyntaxError (a known subcommand given bad arguments)."""
    return ErrorReply(b"ERR unknown subcommand or wrong number of arguments for '" + sub[:128]
                      + b"'. Try " + container.upper() + b" HELP.")


def wrong_arity(fullname: str) -> ErrorReply:
    return ErrorReply(f"ERR wrong number of arguments for '{fullname}' command".encode())


def pubsub_context(fullname: str) -> ErrorReply:
    return ErrorReply(
        f"ERR Can't execute '{fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
        f"QUIT / RESET are allowed in this context".encode())


NOT_IN_MULTI = ErrorReply(b"ERR Command not allowed inside a transaction")


def exec_abort(err: ErrorReply) -> ErrorReply:
    """Redis's execCommandAbort: EXEC itself refused (arity, NOAUTH...) discards the
    transaction. Errors Redis formats (arity, pubsub context) lose their ``ERR``; shared
    ones (``NOAUTH ...``, ``LOADING ...``) keep their code."""
    text = err.data[4:] if err.data.startswith(b"ERR ") else err.data
    return ErrorReply(b"EXECABORT Transaction discarded because of: " + text)


def protected_refused(option: str) -> ErrorReply:
    """DEBUG or MODULE LOAD/LOADEX/UNLOAD refused by ``enable-debug-command`` or
    ``enable-module-command`` (``option`` is the config attribute name)."""
    name = "DEBUG" if option == "enable_debug_command" else "MODULE"
    return ErrorReply(
        f"ERR {name} command not allowed. If the {option.replace('_', '-')} option is set "
        f"to \"local\", you can run it from a local connection, otherwise you need to set "
        f"this option in the configuration file, and then restart the server.".encode())


MODULE_LOAD_FAILED = ErrorReply(b"ERR Error loading the extension. Please check the server logs.")
MODULE_NO_SUCH = ErrorReply(b"ERR Error unloading module: no such module with that name")

HELLO_NOAUTH = ErrorReply(
    b"NOAUTH HELLO must be called with the client already authenticated, otherwise the "
    b"HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
    b"the RESP protocol version at the same time")


def invalid_expire(cmd_name: str) -> ErrorReply:
    return ErrorReply((INVALID_EXPIRE_SET % cmd_name).encode())


# -- CONFIG ------------------------------------------------------------------------------------
NO_CONFIG_FILE = ErrorReply(b"ERR The server is running without a config file")


def config_unknown_option(name: str) -> ErrorReply:
    return ErrorReply(b"ERR Unknown option or number of arguments for CONFIG SET - '"
                      + name.encode("utf-8", "surrogateescape") + b"'")


def config_set_failed(name: str, reason: str) -> ErrorReply:
    return ErrorReply(b"ERR CONFIG SET failed (possibly related to argument '"
                      + name.encode("utf-8", "surrogateescape") + b"') - "
                      + reason.encode("utf-8", "surrogateescape"))


def config_rewrite_failed(reason: str) -> ErrorReply:
    return ErrorReply(b"ERR Rewriting config file: " + reason.encode())

PROTECTED_MODE_DENIED = ErrorReply(
    b"DENIED Redis is running in protected mode because protected mode is enabled and no "
    b"password is set for the default user. In this mode connections are only accepted from "
    b"the loopback interface. If you want to connect from external computers to Redis you may "
    b"adopt one of the following solutions: 1) Just disable protected mode sending the command "
    b"'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from "
    b"the same host the server is running, however MAKE SURE Redis is not publicly accessible "
    b"from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    b"Alternatively you can just disable the protected mode by editing the Redis configuration "
    b"file, and setting the protected mode option to 'no', and then restarting the server. 3) "
    b"If you started the server manually just for testing, restart it with the "
    b"'--protected-mode no' option. 4) Setup a an authentication password for the default "
    b"user. NOTE: You only need to do one of the above things in order for the server to "
    b"start accepting connections from the outside.")


# -- persistence --------------------------------------------------------------------------------
MISCONF_RDB = ErrorReply(
    b"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
    b"to disk. Commands that may modify the data set are disabled, because this instance is "
    b"configured to report errors during writes if RDB snapshotting fails "
    b"(stop-writes-on-bgsave-error option). Please check the Redis logs for details about the "
    b"RDB error.")
LOADING = ErrorReply(b"LOADING Redis is loading the dataset in memory")


def misconf_aof(reason: str) -> ErrorReply:
    return ErrorReply(b"MISCONF Errors writing to the AOF file: " + reason.encode())


# -- DUMP / RESTORE -----------------------------------------------------------------------------
BAD_DUMP_PAYLOAD = ErrorReply(b"ERR DUMP payload version or checksum are wrong")
BAD_DATA_FORMAT = ErrorReply(b"ERR Bad data format")


# -- the Lua redis.* API (raised into scripts; Redis adds "ERR " and the script position) ----
LUA_ACL_CHECK_UNKNOWN = "Invalid command passed to redis.acl_check_cmd()"

# -- maxmemory --------------------------------------------------------------------------------
OOM = ErrorReply(b"OOM command not allowed when used memory > 'maxmemory'.")

# -- ACL (pykv.acl, pykv.commands.acl) ---------------------------------------------------
NOPERM_KEY = ErrorReply(
    b"NOPERM this user has no permissions to access one of the keys used as arguments")
NOPERM_CHANNEL = ErrorReply(
    b"NOPERM this user has no permissions to access one of the channels used as arguments")
ACL_DEFAULT_UNDELETABLE = ErrorReply(b"ERR The 'default' user cannot be removed")
ACL_BAD_USERNAME = ErrorReply(b"ERR Usernames can't contain spaces or null characters")
ACL_GENPASS_BITS = ErrorReply(
    b"ERR ACL GENPASS argument must be the number of bits for the output password, a "
    b"positive number up to 4096")


def noperm_command(fullname: str) -> ErrorReply:
    return ErrorReply(
        b"NOPERM this user has no permissions to run the '" + fullname.encode() + b"' command")


def acl_dryrun_denied(what: str, value: bytes) -> bytes:
    """ACL DRYRUN's answer for a denial: ``what`` is "command", "key" or "channel"."""
    if what == "command":
        return b"This user has no permissions to run the '" + value + b"' command"
    return b"This user has no permissions to access the '" + value + b"' " + what.encode()


def _c_string(arg: bytes) -> bytes:
    """An argument as Redis's ``%s`` prints it: up to its first NUL byte."""
    return arg.split(b"\0", 1)[0]


def acl_setuser_error(modifier: bytes, reason: str) -> ErrorReply:
    return ErrorReply(b"ERR Error in ACL SETUSER modifier '" + _c_string(modifier) + b"': "
                      + reason.encode())


def acl_unmatched_paren(arg: bytes) -> ErrorReply:
    return ErrorReply(b"ERR Unmatched parenthesis in acl selector starting at '"
                      + _c_string(arg) + b"'.")


def acl_unknown_category(name: bytes) -> ErrorReply:
    return ErrorReply(b"ERR Unknown category '" + _c_string(name)[:128] + b"'")


def acl_no_user(name: bytes) -> ErrorReply:
    return ErrorReply(b"ERR User '" + _c_string(name) + b"' not found")


def acl_no_command(name: bytes) -> ErrorReply:
    return ErrorReply(b"ERR Command '" + _c_string(name) + b"' not found")


# what a script's redis.call() gets for a command its caller's user may not run
ACL_SCRIPT_DENIED = {
    "command": b"ERR The user executing the script can't run this command or subcommand",
    "key": b"ERR The user executing the script can't access at least one of the keys mentioned "
           b"in the command arguments",
    "channel": b"ERR The user executing the script can't publish to the channel mentioned in "
               b"the command",
}

# EXEC re-checks its queued commands (the rules may have changed since they were queued)
ACL_EXEC_DENIED = {
    reason: ErrorReply(
        b"NOPERM ACLs rules changed between the moment the transaction was accumulated and "
        b"the EXEC call. This command is no longer allowed for the following reason: " + why)
    for reason, why in (("command", b"no permission to execute the command or subcommand"),
                        ("key", b"no permission to touch the specified keys"),
                        ("channel", b"no permission to access one of the channels used as "
                                    b"arguments"))
}

ACL_NO_FILE = ErrorReply(
    b"ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    b"users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    b"Redis configuration file set) in order to store users in the Redis configuration.")
ACL_SAVE_FAILED = ErrorReply(
    b"ERR There was an error trying to save the ACLs. Please check the server logs for more "
    b"information")
ACL_FILE_AND_USERS = (
    "Configuring Redis with users defined in redis.conf and at the same setting an ACL file "
    "path is invalid. This setup is very likely to lead to configuration errors and security "
    "holes, please define either an ACL file or declare users directly in your redis.conf, "
    "but not both.")


def acl_file_unreadable(path: str, reason: str) -> str:
    return f"Error loading ACLs, opening file '{path}': {reason}"


# ACL LOAD's error text: one fragment per problem, then ACL_LOAD_NO_CHANGE
ACL_LOAD_NO_CHANGE = ("WARNING: ACL errors detected, no change to the previously active ACL "
                      "rules was performed")


def acl_load_not_user(filename: str, linenum: int) -> str:
    return f"{filename}:{linenum} should start with user keyword followed by the username. "


def acl_load_duplicate(name: str, linenum: int) -> str:
    return f"WARNING: Duplicate user '{name}' found on line {linenum}. "


def acl_load_unmatched_paren(filename: str, linenum: int) -> str:
    return f"{filename}:{linenum}: Unmatched parenthesis in selector definition."


def acl_load_unknown(filename: str, linenum: int, rule: str, reason: str) -> str:
    return f"{filename}:{linenum}: Error in applying operation '{rule}': {reason}. "


def acl_load_rule_error(filename: str, linenum: int, reason: str) -> str:
    return f"{filename}:{linenum}: {reason}. "

# -- MIGRATE ----------------------------------------------------------------------------------
MIGRATE_KEYS_NEED_EMPTY_KEY = ErrorReply(
    b"ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
MIGRATE_CONNECT_FAILED = ErrorReply(b"IOERR error or timeout connecting to the client")
MIGRATE_WRITE_FAILED = ErrorReply(b"IOERR error or timeout writing to target instance")
MIGRATE_READ_FAILED = ErrorReply(b"IOERR error or timeout reading to target instance")


def migrate_target_error(line: bytes) -> ErrorReply:
    """The first error line the MIGRATE target replied (its leading ``-`` dropped)."""
    return ErrorReply(b"ERR Target instance replied with error: " + line)

# replication (pykv.replication, pykv.commands.replication)
NOREPLICAS = ErrorReply(b"NOREPLICAS Not enough good replicas to write.")
NOMASTERLINK = ErrorReply(b"NOMASTERLINK Can't SYNC while not connected with my master")
SYNC_PENDING_OUTPUT = ErrorReply(b"ERR SYNC and PSYNC are invalid with pending output")
FILTERED_NEEDS_EOF = ErrorReply(b"ERR Filtered replica requires EOF capability")
WAIT_ON_REPLICA = ErrorReply(
    b"ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 "
    b"if a replica is configured to be writable (which is not the default) writes to replicas "
    b"are just local and are not propagated.")


def replconf_unrecognized(option: bytes) -> ErrorReply:
    return ErrorReply(b"ERR Unrecognized REPLCONF option: " + option)


def replconf_ip_too_long(length: int) -> ErrorReply:
    return ErrorReply(b"ERR REPLCONF ip-address provided by replica instance is too long: "
                      b"%d bytes" % length)


def rdb_filter_unsupported(option: bytes) -> ErrorReply:
    return ErrorReply(b"ERR Unsupported rdb-filter-only option: " + option)

# -- replication (the replica side) ------------------------------------------------------------
READONLY = ErrorReply(b"READONLY You can't write against a read only replica.")
MASTERDOWN = ErrorReply(b"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is "
                        b"set to 'no'.")
ALREADY_CONNECTED = b"OK Already connected to specified master"  # a status reply
REPLICAOF_BY_REPLICA = ErrorReply(b"ERR Command is not valid when client is a replica.")
UNBLOCKED_TO_REPLICA = ErrorReply(b"UNBLOCKED force unblock from blocking operation, instance "
                                  b"state changed (master -> replica?)")
NO_FAILOVER = ErrorReply(b"ERR No failover in progress.")
FAILOVER_TIMEOUT = ErrorReply(b"ERR FAILOVER timeout must be greater than 0")
FAILOVER_IN_PROGRESS = ErrorReply(b"ERR FAILOVER already in progress.")
FAILOVER_ON_REPLICA = ErrorReply(b"ERR FAILOVER is not valid when server is a replica.")
FAILOVER_NO_REPLICAS = ErrorReply(b"ERR FAILOVER requires connected replicas.")
FAILOVER_FORCE = ErrorReply(b"ERR FAILOVER with force option requires both a timeout and "
                            b"target HOST and IP.")
REPLICAOF_DURING_FAILOVER = ErrorReply(b"ERR REPLICAOF not allowed while failing over.")
FAILOVER_NOT_REPLICA = ErrorReply(b"ERR FAILOVER target HOST and PORT is not a replica.")
FAILOVER_NOT_ONLINE = ErrorReply(b"ERR FAILOVER target replica is not online.")
FAILOVER_IN_CLUSTER = ErrorReply(b"ERR FAILOVER not allowed in cluster mode. Use CLUSTER "
                                 b"FAILOVER command instead.")
PSYNC_FAILOVER_REPLID = ErrorReply(b"ERR PSYNC FAILOVER replid must match my replid.")
SYNC_WHILE_FAILING_OVER = ErrorReply(b"NOMASTERLINK Can't SYNC while failing over")
INVALID_MASTER_PORT = ErrorReply(b"ERR Invalid master port")
