"""CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR, CLIENT TRACKINGINFO.

Argument checks and replies, with Redis's error texts, in Redis's order; the tracking
table, invalidation messages and BCAST prefixes are ``pykv.server.tracking``. (The other
CLIENT subcommands are ``pykv.commands.client_cmd``.)
"""
from __future__ import annotations

from pykv import errors
from pykv.commands.args import to_int
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply
from pykv.server.tracking import OFF_INFO, get_tracking

ONE_REDIRECT = ErrorReply(b"ERR A client can only redirect to a single other client")
NO_SUCH_REDIRECT = ErrorReply(b"ERR The client ID you want redirect to does not exist")
PREFIX_NEEDS_BCAST = ErrorReply(b"ERR PREFIX option requires BCAST mode to be enabled")
BCAST_SWITCH = ErrorReply(
    b"ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
    b"then re-enabling it with a different mode.")
OPT_WITH_BCAST = ErrorReply(b"ERR OPTIN and OPTOUT are not compatible with BCAST")
OPTIN_AND_OPTOUT = ErrorReply(b"ERR You can't specify both OPTIN mode and OPTOUT mode")
OPT_SWITCH = ErrorReply(
    b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
    b"then re-enabling it with a different mode.")
CACHING_NOT_TRACKING = ErrorReply(
    b"ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
    b"OPTOUT mode enabled")
CACHING_YES_NEEDS_OPTIN = ErrorReply(
    b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
CACHING_NO_NEEDS_OPTOUT = ErrorReply(
    b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")


def _overlap(a: bytes, b: bytes) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _c_text(data: bytes) -> bytes:
    """What Redis's ``%s`` prints of an argument: up to its first NUL byte."""
    return data.split(b"\0", 1)[0]


def _prefix_collision(current: set[bytes], prefixes: list[bytes]) -> ErrorReply | None:
    for i, prefix in enumerate(prefixes):
        for existing in sorted(current):
            if _overlap(existing, prefix):
                return ErrorReply(b"ERR Prefix '" + _c_text(prefix) + b"' overlaps with an "
                                  b"existing prefix '" + _c_text(existing) + b"'. Prefixes for "
                                  b"a single client must not overlap.")
        for other in prefixes[i + 1:]:
            if _overlap(prefix, other):
                return ErrorReply(b"ERR Prefix '" + _c_text(prefix) + b"' overlaps with "
                                  b"another provided prefix '" + _c_text(other) + b"'. "
                                  b"Prefixes for a single client must not overlap.")
    return None


@command("client|tracking")
def client_tracking(c, argv):
    redirect = 0
    bcast = optin = optout = noloop = False
    prefixes: list[bytes] = []
    j = 3
    while j < len(argv):
        opt = argv[j].lower()
        more = len(argv) - 1 - j
        if opt == b"redirect" and more:
            j += 1
            if redirect != 0:
                return ONE_REDIRECT
            value = to_int(argv[j])
            if value is None:
                return errors.NOT_INTEGER
            redirect = value
            if c.server.clients.get(redirect) is None:
                return NO_SUCH_REDIRECT
        elif opt == b"bcast":
            bcast = True
        elif opt == b"optin":
            optin = True
        elif opt == b"optout":
            optout = True
        elif opt == b"noloop":
            noloop = True
        elif opt == b"prefix" and more:
            j += 1
            prefixes.append(argv[j])
        else:
            return errors.SYNTAX
        j += 1
    mode = argv[2].lower()
    if mode == b"off":
        if c.tracking is not None:
            get_tracking(c.server).disable(c)
        return OK
    if mode != b"on":
        return errors.SYNTAX
    state = c.tracking
    if prefixes and not bcast:
        return PREFIX_NEEDS_BCAST
    if state is not None and state.bcast != bcast:
        return BCAST_SWITCH
    if bcast and (optin or optout):
        return OPT_WITH_BCAST
    if optin and optout:
        return OPTIN_AND_OPTOUT
    if state is not None and ((optin and state.optout) or (optout and state.optin)):
        return OPT_SWITCH
    if bcast:
        err = _prefix_collision(state.prefixes if state is not None else set(), prefixes)
        if err is not None:
            return err
    get_tracking(c.server).enable(c, redirect, bcast, optin, optout, noloop, prefixes)
    return OK


@command("client|caching")
def client_caching(c, argv):
    state = c.tracking
    if state is None:
        return CACHING_NOT_TRACKING
    opt = argv[2].lower()
    if opt == b"yes":
        if not state.optin:
            return CACHING_YES_NEEDS_OPTIN
    elif opt == b"no":
        if not state.optout:
            return CACHING_NO_NEEDS_OPTOUT
    else:
        return errors.SYNTAX
    state.caching = True
    return OK


@command("client|getredir")
def client_getredir(c, argv):
    return c.tracking.redirect if c.tracking is not None else -1


@command("client|trackinginfo")
def client_trackinginfo(c, argv):
    return c.tracking.describe() if c.tracking is not None else OFF_INFO
