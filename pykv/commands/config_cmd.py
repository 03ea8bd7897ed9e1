"""CONFIG GET / SET / RESETSTAT / REWRITE / HELP, on top of ``pykv.config``.

The config package does the work (matching, typed parsing, all-or-nothing changes, the
rewrite algorithm); this module turns argv into calls and results into Redis's replies.
"""
from __future__ import annotations

import logging

from pykv import errors
from pykv.commands.registry import command
from pykv.config import ConfigSetError
from pykv.config.rewrite import rewrite_config
from pykv.config.runtime import is_local
from pykv.protocol import OK, SimpleString

log = logging.getLogger("pykv")


def _text(arg: bytes) -> str:
    return arg.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@command("config|get")
def config_get(c, argv):
    found = c.server.config.matching(_text(a) for a in argv[2:])
    return {_bytes(name): _bytes(value) for name, value in found.items()}


@command("config|set")
def config_set(c, argv):
    if len(argv) % 2:
        return errors.SYNTAX
    pairs = [(_text(argv[i]), _text(argv[i + 1])) for i in range(2, len(argv), 2)]
    try:
        c.server.config.set_many(pairs, allow_protected=_protected_allowed(c))
    except ConfigSetError as exc:
        return exc.reply
    return OK


def _protected_allowed(c) -> bool:
    """``enable-protected-configs``: yes, or local for loopback and unix-socket clients."""
    mode = c.server.config.enable_protected_configs
    return mode == "yes" or (mode == "local" and is_local(c.conn))


@command("config|resetstat")
def config_resetstat(c, argv):
    c.server.reset_stats()
    return OK


@command("config|rewrite")
def config_rewrite(c, argv):
    config = c.server.config
    if not config.config_file:
        return errors.NO_CONFIG_FILE
    try:
        rewrite_config(config)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        log.warning("CONFIG REWRITE failed: %s", reason)
        return errors.config_rewrite_failed(reason)
    log.warning("CONFIG REWRITE executed with success.")
    return OK


_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
]


@command("config|help")
def config_help(c, argv):
    return [SimpleString(line.encode()) for line in _HELP]
