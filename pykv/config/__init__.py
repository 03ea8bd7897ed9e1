"""Live configuration: one typed value per entry of the config table, and how it changes.

``Config`` holds one attribute per entry (``config.hz``, ``config.proto_max_bulk_len``) so
the hot path reads a plain attribute. Values are parsed and formatted by the entry's type
(``pykv.config.values``), with Redis's reason texts.

Changes go through ``set`` (one value: start-up, tests) or ``set_many`` (CONFIG SET: all
pairs or none). Parts of the server that must react to a change register
``config.on_change(name, hook)``; a hook that cannot apply the new value raises
``ConfigError`` and ``set_many`` puts every value back, as Redis's apply functions do.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from pykv import errors
from pykv.config.table import (
    BOOL,
    BY_NAME,
    ENTRIES,
    ENUM,
    INT,
    MEMORY,
    MULTI,
    STRING,
    ConfigEntry,
)
from pykv.config.values import ConfigError, codec_for, parse_memory
from pykv.protocol.types import ErrorReply
from pykv.util.glob import stringmatch

log = logging.getLogger("pykv")

__all__ = [
    "BOOL", "BY_NAME", "ENTRIES", "ENUM", "INT", "MEMORY", "MULTI", "STRING", "Config",
    "ConfigEntry", "ConfigError", "ConfigSetError", "format_value", "parse_memory",
    "parse_value",
]


class ConfigSetError(Exception):
    """CONFIG SET refused; ``reply`` is the error to send."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(reply.data.decode("utf-8", "surrogateescape"))
        self.reply = reply


def parse_value(entry: ConfigEntry, args: list[str], current: Any = None) -> Any:
    """The typed value of ``args`` for ``entry`` (one string unless the entry is multi)."""
    value = codec_for(entry).parse(entry, args, current)
    if entry.clamp is not None:
        value = max(entry.clamp[0], min(entry.clamp[1], value))
    return value


def format_value(entry: ConfigEntry, value: Any) -> str:
    """The CONFIG GET text of ``value``."""
    return codec_for(entry).format(entry, value)


def split_set_value(entry: ConfigEntry, text: str) -> list[str]:
    """CONFIG SET's one string as arguments: multi-arg entries split on single spaces."""
    return text.split(" ") if codec_for(entry).multi_arg else [text]


class Config:
    """The server's configuration values, one attribute per entry."""

    def __init__(self) -> None:
        for entry in ENTRIES:
            setattr(self, entry.attr, _copy(entry.default))
        self.dir = os.getcwd()
        self.listeners: list[str] = []  # --listener specs, in order
        self.config_file: str = ""  # absolute path of the file the server was started with
        self.rename_commands: list[tuple[str, str]] = []  # rename-command directives
        self.user_directives: list[list[str]] = []  # "user" lines, for the ACL family
        # CONFIG REWRITE asks this for the "user ..." lines (the ACL family may replace it)
        self.describe_users: Callable[[], list[str]] | None = None
        self._hooks: dict[str, list[Callable[[Any], None]]] = {}

    # -- lookup ------------------------------------------------------------------------------
    def entry(self, name: str) -> ConfigEntry | None:
        return BY_NAME.get(name.lower())

    def get(self, name: str) -> Any:
        return getattr(self, BY_NAME[name.lower()].attr)

    def get_text(self, name: str) -> str:
        entry = BY_NAME[name.lower()]
        return format_value(entry, getattr(self, entry.attr))

    def matching(self, patterns: Iterable[str]) -> dict[str, str]:
        """CONFIG GET: ``{name as matched: value text}`` for several names or glob patterns.

        A plain name (no ``*?[``) is looked up exactly, aliases and hidden entries
        included, and answered under the spelling asked for; a pattern matches the names
        and aliases of every entry that is not hidden. A name is answered once.
        """
        found: dict[str, tuple[str, ConfigEntry]] = {}
        for pattern in patterns:
            if not any(ch in pattern for ch in "*?["):
                entry = BY_NAME.get(pattern.lower())
                if entry is not None and pattern.lower() not in found:
                    found[pattern.lower()] = (pattern, entry)
                continue
            raw = pattern.encode("utf-8", "surrogateescape")
            for name, entry in BY_NAME.items():
                if "hidden" in entry.flags or name in found:
                    continue
                if stringmatch(raw, name.encode(), True):
                    found[name] = (name, entry)
        return {shown: format_value(entry, getattr(self, entry.attr))
                for shown, entry in found.values()}

    # -- changes -----------------------------------------------------------------------------
    def parse(self, name: str, args: list[str] | str) -> Any:
        """The value ``args`` would give ``name`` (raises ConfigError), without storing it."""
        entry = BY_NAME[name.lower()]
        if isinstance(args, str):
            args = split_set_value(entry, args)
        return parse_value(entry, args, getattr(self, entry.attr))

    def set(self, name: str, args: list[str] | str) -> Any:
        """Parse and store one value, then run its hooks (start-up, tests, internal use)."""
        entry = BY_NAME[name.lower()]
        value = self.parse(name, args)
        old = getattr(self, entry.attr)
        setattr(self, entry.attr, value)
        if value != old:
            self._run_hooks(entry, value)
        return value

    def set_many(self, pairs: list[tuple[str, str]], allow_protected: bool = False) -> None:
        """CONFIG SET: every pair applied or none, with Redis's checks in Redis's order.

        Raises ``ConfigSetError`` with the exact reply text.
        """
        entries: list[ConfigEntry] = []
        for name, _ in pairs:  # the first problem found is the one reported
            entry = BY_NAME.get(name.lower())
            if entry is None:
                raise ConfigSetError(errors.config_unknown_option(name))
            if entry.immutable:
                raise ConfigSetError(errors.config_set_failed(name, "can't set immutable config"))
            if "protected" in entry.flags and not allow_protected:
                raise ConfigSetError(errors.config_set_failed(name, "can't set protected config"))
            if any(e is entry for e in entries):
                raise ConfigSetError(errors.config_set_failed(name, "duplicate parameter"))
            entries.append(entry)
        old = [getattr(self, e.attr) for e in entries]
        new = []
        for entry, (_, text) in zip(entries, pairs, strict=True):
            try:
                new.append(parse_value(entry, split_set_value(entry, text),
                                       getattr(self, entry.attr)))
            except ConfigError as exc:
                raise ConfigSetError(errors.config_set_failed(entry.name, str(exc))) from None
        changed = []
        for entry, before, after in zip(entries, old, new, strict=True):
            setattr(self, entry.attr, after)
            if after != before:
                changed.append(entry)
        for i, entry in enumerate(changed):
            try:
                self._run_hooks(entry, getattr(self, entry.attr))
            except ConfigError as exc:
                log.warning("Failed applying new configuration. Possibly related to new %s "
                            "setting. Restoring previous settings.", entry.name)
                for e, before in zip(entries, old, strict=True):
                    setattr(self, e.attr, before)
                for done in changed[:i + 1]:
                    try:
                        self._run_hooks(done, getattr(self, done.attr))
                    except ConfigError:
                        pass  # as Redis: the old value could not be re-applied either
                raise ConfigSetError(errors.config_set_failed(entry.name, str(exc))) from None

    def on_change(self, name: str, hook: Callable[[Any], None]) -> None:
        """Call ``hook(new_value)`` after ``name`` changes; it may raise ConfigError."""
        self._hooks.setdefault(BY_NAME[name.lower()].name, []).append(hook)

    def _run_hooks(self, entry: ConfigEntry, value: Any) -> None:
        for hook in self._hooks.get(entry.name, ()):
            hook(value)

    # -- defaults ----------------------------------------------------------------------------
    def changed_entries(self) -> list[ConfigEntry]:
        """Entries whose value differs from the default (for logs and tests)."""
        return [e for e in ENTRIES if getattr(self, e.attr) != e.default and e.name != "dir"]


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value
