"""ACL: the ACL container's subcommands, and who a connection is logged in as.

The users and their rules live in ``pykv.acl``; this family answers the ``ACL``
subcommands and keeps each client's ``acl_user``/``acl_restricted`` (what the dispatcher's
permission check reads) in step with AUTH, HELLO AUTH, RESET and user changes.
"""
from __future__ import annotations

import itertools
import logging
import time

from pykv import errors
from pykv.acl import Acl, aclfile
from pykv.acl.categories import ALL, CATEGORIES, MEMBERS
from pykv.acl.check import dryrun
from pykv.acl.registry import genpass
from pykv.acl.selector import RuleError
from pykv.acl.user import merge_selector_args
from pykv.commands.args import parse_int
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command
from pykv.protocol import OK, ErrorReply, RespSet
from pykv.util.glob import stringmatch

log = logging.getLogger("pykv")

HELP = [
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the "
    "command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
]


def install(server) -> Acl:
    """The server's users: ``default`` following ``requirepass``, then the config's
    ``user`` lines; CONFIG REWRITE writes them back."""
    config = server.config
    acl = Acl(config.acl_pubsub_default, lambda: config.acllog_max_len)
    acl.set_requirepass(config.requirepass or "")
    if config.aclfile and config.user_directives:
        log.warning("%s", errors.ACL_FILE_AND_USERS)
        raise SystemExit(1)
    for words in config.user_directives:
        name = words[0].encode("utf-8", "surrogateescape")
        user = acl.get(name) or acl.create(name)
        for rule in words[1:]:
            try:
                user.apply(rule.encode("utf-8", "surrogateescape"))
            except RuleError as exc:
                log.warning("Error loading ACL rule '%s' for the user named '%s': %s",
                            rule, words[0], exc.args[0])
                log.warning("Critical error while loading ACLs. Exiting.")
                raise SystemExit(1) from None
    if config.aclfile:
        err = _load_file(server, acl, None)
        if err is not None:
            log.warning("Aborting Redis startup because of ACL errors: %s", err)
            raise SystemExit(1)
    config.on_change("requirepass", lambda value: acl.set_requirepass(value or ""))
    config.on_change("acl-pubsub-default", lambda value: setattr(acl, "pubsub_default", value))
    # with an aclfile the users live there, and CONFIG REWRITE writes none (as Redis)
    config.describe_users = lambda: [] if config.aclfile else [
        "user " + u.name.decode("utf-8", "surrogateescape") + " " + u.describe()
        for u in acl.sorted_users()]
    return acl


def _load_file(server, acl: Acl, current) -> str | None:
    """ACL LOAD: the users of ``aclfile`` replace all; clients of the old users (but the
    default one) are disconnected. The error text, or None."""
    path = server.config.aclfile
    try:
        with open(path, "rb") as fh:
            text = fh.read()
    except OSError as exc:
        return errors.acl_file_unreadable(path, exc.strerror or str(exc))
    users, err = aclfile.parse(acl, text, path)
    if users is None:
        return err
    gone = aclfile.install_users(acl, users)
    _refresh(server, acl.default)
    for client in list(server.clients.values()):
        if any(client.acl_user is u for u in gone):
            if current is None:
                client.close_now()
            else:
                _disconnect(current, client)
    return None


def login(c, user) -> None:
    """Make ``user`` the connection's user (authenticated)."""
    c.user = user.name.decode("utf-8", "surrogateescape")
    c.acl_user = user
    c.acl_restricted = not user.unrestricted
    c.set_authenticated(True)


def _refresh(server, user) -> None:
    restricted = not user.unrestricted
    for client in server.clients.values():
        if client.acl_user is user:
            client.acl_restricted = restricted


REDACTED = b"(redacted)"


def redact(argv: list, start: int, end: int | None = None) -> None:
    """Hide arguments (passwords) from SLOWLOG and MONITOR, as Redis's
    redactClientCommandArgument: the dispatcher logs this same list after the call."""
    end = len(argv) if end is None else end
    argv[start:end] = [REDACTED] * (end - start)


@command("acl|setuser")
def acl_setuser(c, argv):
    args = argv[2:]
    redact(argv, 2)
    argv = argv[:2] + args
    name = argv[2]
    if b" " in name or b"\0" in name:
        return errors.ACL_BAD_USERNAME
    acl = c.server.acl
    rules, bad = merge_selector_args(argv[3:])
    if rules is None:
        return errors.acl_unmatched_paren(argv[3 + bad])
    existing = acl.get(name)
    temp = existing.copy() if existing is not None else acl.new_user(name)
    for rule in rules:
        try:
            temp.apply(rule)
        except RuleError as exc:
            return errors.acl_setuser_error(rule, exc.args[0])
    if existing is not None:
        _kill_revoked_subscribers(c, temp, existing)
    user = existing if existing is not None else acl.create(name)
    user.assign(temp)
    _refresh(c.server, user)
    return OK


def _disconnect(c, client) -> None:
    if client is c:
        c.closing = True  # after this reply
    else:
        client.close_now()


def _kill_revoked_subscribers(c, new, original) -> None:
    """Redis's ACLKillPubsubClientsIfNeeded: the user's subscribers holding a channel or
    pattern the new rules no longer allow are disconnected."""
    if any(s.allchannels for s in new.selectors):
        return
    upcoming = [ch for s in new.selectors for ch in s.channels]
    if not any(s.allchannels for s in original.selectors) and all(
            ch in upcoming for s in original.selectors for ch in s.channels):
        return
    for client in list(c.server.clients.values()):
        if client.acl_user is not original:
            continue
        if any(p not in upcoming for p in client.patterns) or any(
                not any(stringmatch(p, ch) for p in upcoming)
                for ch in itertools.chain(client.channels, client.shard_channels)):
            _disconnect(c, client)


def _selector_reply(s) -> list:
    return [b"commands", s.describe_commands().encode(),
            b"keys", s.describe_keys().encode("utf-8", "surrogateescape"),
            b"channels", s.describe_channels().encode("utf-8", "surrogateescape")]


def _as_map(pairs: list) -> dict:
    return dict(zip(pairs[::2], pairs[1::2], strict=True))


@command("acl|getuser")
def acl_getuser(c, argv):
    user = c.server.acl.get(argv[2])
    if user is None:
        return None
    reply = [b"flags", RespSet(f.encode() for f in user.flag_names()),
             b"passwords", [h.encode() for h in user.passwords]]
    reply += _selector_reply(user.root)
    reply += [b"selectors", [_as_map(_selector_reply(s)) for s in user.selectors[1:]]]
    return _as_map(reply)


@command("acl|deluser")
def acl_deluser(c, argv):
    acl = c.server.acl
    deleted = 0
    for name in argv[2:]:
        if name == b"default":
            return errors.ACL_DEFAULT_UNDELETABLE
    for name in argv[2:]:
        user = acl.users.pop(name, None)
        if user is None:
            continue
        deleted += 1
        for client in list(c.server.clients.values()):
            if client.acl_user is user:
                _disconnect(c, client)
    return deleted


@command("acl|list")
def acl_list(c, argv):
    return [b"user " + u.name + b" " + u.describe().encode("utf-8", "surrogateescape")
            for u in c.server.acl.sorted_users()]


@command("acl|users")
def acl_users(c, argv):
    return [u.name for u in c.server.acl.sorted_users()]


@command("acl|whoami")
def acl_whoami(c, argv):
    return c.user.encode("utf-8", "surrogateescape")


@command("acl|cat")
def acl_cat(c, argv):
    if len(argv) > 3:
        return errors.subcommand_syntax(argv[1], argv[0])
    if len(argv) == 2:
        return [cat.encode() for cat in CATEGORIES]
    cat = argv[2].lower().decode("utf-8", "replace")
    if cat not in MEMBERS:
        return errors.acl_unknown_category(argv[2])
    members = MEMBERS[cat]
    return [name.encode() for name in ALL if name in members]


@command("acl|genpass")
def acl_genpass(c, argv):
    if len(argv) > 3:
        return errors.subcommand_syntax(argv[1], argv[0])
    bits = 256
    if len(argv) > 2:
        bits = parse_int(argv[2])
        if bits <= 0 or bits > 4096:
            return errors.ACL_GENPASS_BITS
    return genpass(bits)


@command("acl|dryrun")
def acl_dryrun(c, argv):
    user = c.server.acl.get(argv[2])
    if user is None:
        return errors.acl_no_user(argv[2])
    args = argv[3:]
    cmd = c.server.commands.get(args[0].lower())
    if cmd is not None and cmd.subcommands:
        cmd = cmd.subcommands.get(args[1].lower()) if len(args) >= 2 else cmd
    if cmd is None or (cmd.handler is None and not cmd.subcommands):
        return errors.acl_no_command(args[0])
    arity = cmd.arity
    if (arity > 0 and len(args) != arity) or len(args) < -arity:
        return errors.wrong_arity(cmd.fullname)
    denied = dryrun(user, cmd, args)
    return OK if denied is None else denied


@command("acl|log")
def acl_log(c, argv):
    acl = c.server.acl
    if len(argv) > 3:
        return errors.subcommand_syntax(argv[1], argv[0])
    count = 10
    if len(argv) == 3:
        if argv[2].lower() == b"reset":
            acl.log.reset()
            return OK
        count = parse_int(argv[2])
    return acl.log.reply(count, int(time.time() * 1000))


@command("acl|load")
def acl_load(c, argv):
    if not c.server.config.aclfile:
        return errors.ACL_NO_FILE
    err = _load_file(c.server, c.server.acl, c)
    return OK if err is None else ErrorReply(b"ERR " + err.encode("utf-8", "surrogateescape"))


@command("acl|save")
def acl_save(c, argv):
    path = c.server.config.aclfile
    if not path:
        return errors.ACL_NO_FILE
    try:
        aclfile.save(c.server.acl, path)
    except OSError as exc:
        log.warning("Writing ACL file for ACL SAVE: %s", exc.strerror or exc)
        return errors.ACL_SAVE_FAILED
    return OK


@command("acl|help")
def acl_help(c, argv):
    return help_reply(HELP)
