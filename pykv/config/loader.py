"""Start-up configuration: a redis.conf-style file plus ``--option value`` arguments.

Like redis-server, the command-line options are turned into config-file lines appended
after the file's contents, and everything is parsed by one function; an error reports the
offending line in redis-server's "FATAL CONFIG FILE ERROR" format.
"""
from __future__ import annotations

import sys

from pykv.config import Config, ConfigError
from pykv.protocol import split_args


class ConfigLoadError(Exception):
    """A fatal start-up configuration error; ``str()`` is the full message to print."""


def _fatal(line_no: int, line: str, reason: str) -> ConfigLoadError:
    from pykv.server.server import REDIS_VERSION

    return ConfigLoadError(
        f"\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n"
        f"Reading the configuration file, at line {line_no}\n"
        f">>> '{line}'\n{reason}\n"
    )


def args_to_config_text(args: list[str]) -> str:
    """``--port 7000 --bind a b`` -> ``port 7000\\nbind a b`` (redis-server's rule)."""
    lines: list[str] = []
    current: list[str] = []
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            if current:
                lines.append(" ".join(current))
            current = [arg[2:]]
        else:
            current.append(_quote(arg) if current else arg)
    if current:
        lines.append(" ".join(current))
    return "\n".join(lines)


def _quote(arg: str) -> str:
    if arg and not any(ch in arg for ch in " \t\"'\\") :
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def apply_config_text(config: Config, text: str) -> None:
    for line_no, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        argv = split_args(line.encode("utf-8", "surrogateescape"))
        if argv is None:
            raise _fatal(line_no, line, "Unbalanced quotes in configuration line")
        if not argv:
            continue
        name = argv[0].decode().lower()
        values = [a.decode("utf-8", "surrogateescape") for a in argv[1:]]
        if name == "listener":
            if len(values) != 1:
                raise _fatal(line_no, line, "wrong number of arguments")
            from pykv.net import ListenerSpec

            try:
                ListenerSpec.parse(values[0])
            except ValueError as exc:
                raise _fatal(line_no, line, str(exc)) from None
            config.listeners.append(values[0])
            continue
        if name == "include":
            try:
                with open(values[0]) as fh:
                    apply_config_text(config, fh.read())
            except OSError as exc:
                raise _fatal(line_no, line, f"Fatal error, can't open config file '{values[0]}': {exc.strerror}") from None
            continue
        entry = config.entry(name)
        if entry is None:
            raise _fatal(line_no, line, "Bad directive or wrong number of arguments")
        if entry.type != "multi" and len(values) != 1:
            raise _fatal(line_no, line, "wrong number of arguments")
        try:
            config.set(name, values)
        except ConfigError as exc:
            raise _fatal(line_no, line, str(exc)) from None


def load_config(argv: list[str]) -> Config:
    config = Config()
    text = ""
    args = list(argv)
    if args and not args[0].startswith("--"):
        path = args.pop(0)
        if path == "-":
            text = sys.stdin.read()
        else:
            try:
                with open(path) as fh:
                    text = fh.read()
            except OSError as exc:
                raise ConfigLoadError(
                    f"Fatal error, can't open config file '{path}': {exc.strerror}\n") from None
            config.config_file = path
    if args and args[-1] == "-":
        args.pop()
        text += "\n" + sys.stdin.read()
    if args:
        text += "\n" + args_to_config_text(args)
    apply_config_text(config, text)
    return config
