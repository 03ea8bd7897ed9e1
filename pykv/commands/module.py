"""MODULE: what a Redis 7.0 with no modules loaded answers.

pykv cannot load Redis modules (they are C shared objects written against Redis's own
memory and object layout), so it behaves as a Redis whose every load fails: LIST is empty,
LOAD and LOADEX answer Redis's "Error loading the extension" and log why, UNLOAD finds no
such module. LOAD, LOADEX and UNLOAD are protected by ``enable-module-command`` (``no`` by
default; the dispatcher refuses them with Redis's text, ``PROTECTED`` in the registry),
like DEBUG by ``enable-debug-command``.
"""
from __future__ import annotations

import logging
import os

from pykv import errors
from pykv.commands.client_cmd import help_reply
from pykv.commands.registry import command

log = logging.getLogger("pykv")

HELP = [
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and "
    "optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
]


@command("module|help")
def module_help(c, argv):
    return help_reply(HELP)


@command("module|list")
def module_list(c, argv):
    return []


def _load_failed(path: bytes) -> None:
    name = path.decode("utf-8", "replace")
    if not os.path.exists(path):
        reason = f"{name}: cannot open shared object file: No such file or directory"
    else:
        reason = f"{name}: pykv does not load Redis modules"
    log.warning("Module %s failed to load: %s", name, reason)


def _loadex_syntax_ok(args: list[bytes]) -> bool:
    """Redis's parseLoadexArguments: ``CONFIG name value`` pairs, then optional ``ARGS``."""
    i = 0
    while i < len(args):
        word = args[i].lower()
        if word == b"config" and i + 2 < len(args):
            i += 3
        elif word == b"args":
            return True
        else:
            if word == b"config":
                log.info("CONFIG specified without name value pair")
            else:
                log.info("Syntax Error from arguments to loadex around %s.",
                         args[i].decode("utf-8", "replace"))
            return False
    return True


@command("module|load")
def module_load(c, argv):
    _load_failed(argv[2])
    return errors.MODULE_LOAD_FAILED


@command("module|loadex")
def module_loadex(c, argv):
    if _loadex_syntax_ok(argv[3:]):
        _load_failed(argv[2])
    return errors.MODULE_LOAD_FAILED


@command("module|unload")
def module_unload(c, argv):
    return errors.MODULE_NO_SUCH
