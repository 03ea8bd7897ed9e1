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
INVALID_DB_INDEX = ErrorReply(b"ERR invalid DB index")
SAME_OBJECT = ErrorReply(b"ERR source and destination objects are the same")
STRING_TOO_LONG = ErrorReply(b"ERR string exceeds maximum allowed size (proto-max-bulk-len)")
OFFSET_OUT_OF_RANGE = ErrorReply(b"ERR offset is out of range")
NOT_POSITIVE_COUNT = ErrorReply(b"ERR value is out of range, must be positive")
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


def wrong_arity(fullname: str) -> ErrorReply:
    return ErrorReply(f"ERR wrong number of arguments for '{fullname}' command".encode())


def pubsub_context(fullname: str) -> ErrorReply:
    return ErrorReply(
        f"ERR Can't execute '{fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
        f"QUIT / RESET are allowed in this context".encode())


NOT_IN_MULTI = ErrorReply(b"ERR Command not allowed inside a transaction")


def invalid_expire(cmd_name: str) -> ErrorReply:
    return ErrorReply((INVALID_EXPIRE_SET % cmd_name).encode())
