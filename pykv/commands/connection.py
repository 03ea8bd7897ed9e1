"""Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, RESET.

These change only the calling connection's state (protocol, database, authentication,
name). RESET puts a connection back as it was when it connected; families that keep
per-client state elsewhere (transactions, pub/sub, tracking) drop it through
``server.client_reset_hooks``.
"""
from __future__ import annotations

from typing import Any

from pykv import errors
from pykv.acl.check import log_denial
from pykv.commands.acl import login, redact
from pykv.commands.args import parse_int
from pykv.commands.registry import command
from pykv.protocol import OK, PONG, ErrorReply, SimpleString


@command("ping")
def ping(c, argv):
    return _ping(c, argv)


def _ping(c: Any, argv: list) -> Any:
    # (typed in connection.pxd)
    if len(argv) > 2:
        raise errors.wrong_arity("ping")
    # the subscription sets, not the ``subscriptions`` property: PING is a benchmark hot path
    if c.resp == 2 and (c.channels or c.patterns or c.shard_channels):
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    return argv[1] if len(argv) == 2 else PONG


@command("echo")
def echo(c, argv):
    return argv[1]


@command("quit")
def quit_(c, argv):
    c.closing = True
    return OK


@command("select")
def select(c, argv):
    index = parse_int(argv[1])
    if c.server.cluster is not None and index != 0:
        return errors.SELECT_IN_CLUSTER
    if not 0 <= index < len(c.server.dbs):
        return errors.DB_INDEX_OUT_OF_RANGE
    c.select(index)
    return OK


def _authenticate(c, username: bytes, password: bytes, name: bytes) -> ErrorReply | None:
    """Log the connection in as ``username`` (the ACL users), or the WRONGPASS error."""
    acl = c.server.acl
    if acl is None:  # a server without the ACL family: only requirepass
        requirepass = c.server.config.requirepass
        if username != b"default" or (
                requirepass and password.decode("utf-8", "surrogateescape") != requirepass):
            return errors.WRONGPASS
        c.set_authenticated(True)
        return None
    user = acl.authenticate(username, password)
    if user is None:
        log_denial(c, "auth", name, username, c.server.commands.get(name.lower()))
        return errors.WRONGPASS
    login(c, user)
    return None


@command("auth")
def auth(c, argv):
    if len(argv) > 3:
        return errors.SYNTAX
    name = argv[0]
    if len(argv) == 2:
        username, password = b"default", argv[1]
    else:
        username, password = argv[1], argv[2]
    redact(argv, 1)
    if len(argv) == 2:
        acl = c.server.acl
        if (acl.default.nopass if acl is not None else not c.server.config.requirepass):
            return errors.AUTH_NOT_CONFIGURED
    err = _authenticate(c, username, password, name)
    if err is not None:
        return err
    return OK


def hello_reply(c) -> dict:
    server = c.server
    return {
        b"server": b"redis",
        b"version": server.version.encode(),
        b"proto": c.resp,
        b"id": c.id,
        b"mode": b"standalone",
        b"role": b"master",
        b"modules": [],
    }


@command("hello")
def hello(c, argv):
    ver = None
    if len(argv) >= 2:
        try:
            ver = parse_int(argv[1], errors.NOT_INTEGER)
        except ErrorReply:
            return ErrorReply(b"ERR Protocol version is not an integer or out of range")
        if ver < 2 or ver > 3:
            return errors.NOPROTO
    i = 2
    auth_args = None
    setname = None
    while i < len(argv):
        opt = argv[i].lower()
        more = len(argv) - i - 1
        if opt == b"auth" and more >= 2:
            auth_args = (argv[i + 1], argv[i + 2])
            redact(argv, i + 1, i + 3)
            i += 3
        elif opt == b"setname" and more >= 1:
            setname = argv[i + 1]
            i += 2
        else:
            return ErrorReply(b"ERR Syntax error in HELLO option '" + argv[i] + b"'")
    if auth_args is not None:
        err = _authenticate(c, *auth_args, argv[0])
        if err is not None:
            return err
    if not c.authenticated:
        return errors.HELLO_NOAUTH
    if setname is not None:
        from pykv.commands.client_cmd import validate_client_name

        err = validate_client_name(setname)
        if err is not None:
            return err
        c.name = setname
    if ver is not None:
        c.resp = ver
    return hello_reply(c)


RESET = SimpleString(b"RESET")


@command("reset")
def reset(c, argv):
    """Redis's clearClientConnectionState, then ``+RESET``."""
    from pykv.server.client import REPLY_ON

    server = c.server
    if c.monitor:
        c.monitor = False
        if c in server.monitors:
            server.monitors.remove(c)
    if getattr(server, "watches", None) is not None:
        from pykv.server.watch import discard_transaction

        discard_transaction(c)
    if getattr(server, "pubsub", None) is not None:
        server.pubsub.forget_client(c)  # silently, as Redis does on RESET
    for hook in getattr(server, "client_reset_hooks", ()):
        hook(c)  # tracking and other per-client state
    c.multi = None
    c.multi_dirty = False
    c.watch_dirty = False
    c.tracking = None
    if server.acl is None:
        c.set_authenticated(not server.config.requirepass)
        c.user = "default"
    else:  # back to the default user, as Redis's clearClientConnectionState
        login(c, server.acl.default)
        c.set_authenticated(not server.acl.auth_required())
    c.select(0)
    c.resp = 2
    c.name = b""
    c.reply_mode = REPLY_ON
    c.no_evict = False
    c.no_touch = False
    return RESET
