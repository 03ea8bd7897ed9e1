"""Start-up configuration: a redis.conf-style file, stdin and ``--option value`` arguments.

As redis-server does, the command-line options become config-file lines (each value quoted
the way Redis's ``sdscatrepr`` quotes it) appended after the file's and stdin's text, and
everything is read by one function. A bad line stops start-up with redis-server's
"FATAL CONFIG FILE ERROR" block, naming the line number in that combined text.

Besides the table's settings the file may hold ``include`` (glob patterns allowed),
``rename-command``, ``user`` (kept for the ACL family and CONFIG REWRITE) and pykv's own
``listener TYPE,key=value,...``.
"""
from __future__ import annotations

import glob
import os
import sys
from collections.abc import Callable

from pykv.config import Config, ConfigError
from pykv.config.values import codec_for, quote_repr
from pykv.protocol import split_args

REDIS_VERSION = "7.0.15"

# Directives Redis still accepts (and ignores) with this many words, name included.
_DEPRECATED = {"list-max-ziplist-entries": 2, "list-max-ziplist-value": 2,
               "lua-replicate-commands": 2}


class ConfigLoadError(Exception):
    """A fatal start-up configuration error.

    ``str()`` is the text to print; ``as_log`` says it is one warning log line (redis-server
    logs "can't open config file" that way) rather than the FATAL block for stderr.
    """

    def __init__(self, message: str, as_log: bool = False) -> None:
        super().__init__(message)
        self.as_log = as_log


def fatal(reason: str, line_no: int | None = None, line: str = "") -> ConfigLoadError:
    where = f"Reading the configuration file, at line {line_no}\n>>> '{line}'\n" \
        if line_no is not None else ""
    return ConfigLoadError(
        f"\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n{where}{reason}\n")


# -- the command line --------------------------------------------------------------------
class CommandLine:
    """``pykv-server [config-file | -] [--name value ...] [-]`` taken apart like Redis."""

    def __init__(self, argv: list[str]) -> None:
        self.config_file: str | None = None
        self.from_stdin = False
        args = list(argv)
        start = 0
        if args and not args[0].startswith("-"):
            self.config_file = os.path.abspath(args[0])
            start = 1
        self.options = self._options(args, start)

    def _options(self, args: list[str], start: int) -> str:
        """redis-server's rule: ``--name`` starts a line, other words are quoted values.

        A ``--name`` right after an option name that has no value yet is taken as that
        option's value, except after ``--save``, which then gets ``""``.
        """
        parts: list[str] = []
        name_pending = False  # the last option name has no value yet
        for j in range(start, len(args)):
            arg = args[j]
            last = j == len(args) - 1
            if arg == "-" and (j == 0 or last):
                self.from_stdin = True
            elif arg.startswith("--") and not name_pending:
                if parts:
                    parts.append("\n")
                parts.append(arg[2:] + " ")
                words = split_args(arg.encode("utf-8", "surrogateescape"))
                if words is not None and len(words) == 1:  # a name alone, value to follow
                    name_pending = True
                    if arg.lower() == "--save" and (last or args[j + 1].startswith("--")):
                        parts.append('""')
                        name_pending = False
            else:
                parts.append(quote_repr(arg) + " ")
                name_pending = False
        return "".join(parts)


# -- reading config text -----------------------------------------------------------------
class _LoadState:
    def __init__(self, command_exists: Callable[[str], bool] | None = None) -> None:
        self.save_seen = False
        # whether a command name exists (``rename-command`` checks both names); the
        # composition root passes the command table's lookup, None skips the check
        self.command_exists = command_exists


def apply_config_text(config: Config, text: str, state: _LoadState | None = None) -> None:
    """Apply redis.conf text to ``config``; raises ConfigLoadError at the first bad line."""
    state = state or _LoadState()
    for line_no, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(" \t\r\n")
        if not line or line.startswith("#"):
            continue
        argv = split_args(line.encode("utf-8", "surrogateescape"))
        if argv is None:
            raise fatal("Unbalanced quotes in configuration line", line_no, line)
        if not argv:
            continue
        words = [a.decode("utf-8", "surrogateescape") for a in argv]
        try:
            _apply_directive(config, words, state)
        except ConfigError as exc:
            raise fatal(str(exc), line_no, line) from None


def _apply_directive(config: Config, words: list[str], state: _LoadState) -> None:
    name, values = words[0].lower(), words[1:]
    entry = config.entry(name)
    if entry is not None:
        if not codec_for(entry).multi_arg and len(values) != 1:
            raise ConfigError("wrong number of arguments")
        if entry.name == "save":
            _apply_save(config, values, state)
        else:
            config.set(entry.name, values)
        return
    if _DEPRECATED.get(name) == len(words):
        return
    if name == "include" and len(words) == 2:
        _include(config, values[0], state)
    elif name == "rename-command" and len(words) == 3:
        _rename_command(config, values[0], values[1], state.command_exists)
    elif name == "user" and len(words) >= 2:
        config.user_directives.append(values)
    elif name == "listener" and len(words) == 2:
        from pykv.net import ListenerSpec

        try:
            ListenerSpec.parse(values[0])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        config.listeners.append(values[0])
    elif name == "loadmodule" and len(words) >= 2:
        raise ConfigError("pykv cannot load Redis modules (loadmodule)")
    elif "." in name:
        raise ConfigError("Module config specified without value" if len(words) != 2
                          else "pykv cannot load Redis modules (module config)")
    elif name == "sentinel":
        if len(words) != 1:
            raise ConfigError("sentinel directive while not in sentinel mode")
        raise ConfigError("pykv does not run in sentinel mode")
    else:
        raise ConfigError("Bad directive or wrong number of arguments")


def _apply_save(config: Config, values: list[str], state: _LoadState) -> None:
    """The first ``save`` line replaces the defaults, later ones add; ``save ""`` clears."""
    parsed = config.parse("save", values)
    if parsed and state.save_seen:
        parsed = config.save + parsed
    state.save_seen = True
    config.set("save", [str(n) for pair in parsed for n in pair] or [""])


def _include(config: Config, path: str, state: _LoadState) -> None:
    if any(ch in path for ch in "*?["):
        paths = sorted(glob.glob(path))
    else:
        paths = [path]
    for one in paths:
        try:
            with open(one, encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigLoadError(
                f"Fatal error, can't open config file '{one}': {exc.strerror}",
                as_log=True) from None
        apply_config_text(config, text, state)


def _rename_command(config: Config, old: str, new: str,
                    command_exists: Callable[[str], bool] | None) -> None:
    if command_exists is not None:
        if not command_exists(old.lower()):
            raise ConfigError("No such command in rename-command")
        if new and command_exists(new.lower()):
            raise ConfigError("Target command name already exists")
    config.rename_commands.append((old.lower(), new.lower()))


def _check_logfile(config: Config) -> None:
    if not config.logfile:
        return
    path = os.path.join(config.dir, config.logfile)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        raise fatal(f"Can't open the log file: {exc.strerror}") from None


def load_config(argv: list[str], log: Callable[[str], None] | None = None,
                stdin_text: Callable[[], str] | None = None,
                command_exists: Callable[[str], bool] | None = None) -> Config:
    """The Config for ``pykv-server`` arguments (``argv`` without the program name);
    ``command_exists`` checks the names of ``rename-command`` lines."""
    cmdline = CommandLine(argv)
    config = Config()
    text = ""
    if cmdline.config_file is not None:
        try:
            with open(cmdline.config_file, encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigLoadError(
                f"Fatal error, can't open config file '{cmdline.config_file}': "
                f"{exc.strerror}", as_log=True) from None
        config.config_file = cmdline.config_file
    if cmdline.from_stdin:
        if log is not None:
            log("Reading config from stdin")
        text += stdin_text() if stdin_text is not None else sys.stdin.read()
    if cmdline.options:
        text += "\n" + cmdline.options
    apply_config_text(config, text, _LoadState(command_exists))
    if config.cluster_enabled and config.replicaof:  # Redis's sanity check, no line given
        raise fatal("replicaof directive not allowed in cluster mode")
    _check_logfile(config)
    return config
