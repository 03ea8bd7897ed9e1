"""How a command family declares its handlers: ``@command("name")``.

A handler module declares what it implements with ``@command("name")`` or
``@command("container|sub")``; the decorator registers it in the server's command table
(``pykv.server.command_table``, where the metadata and ``Command`` live). The names the
families use are re-exported here so a family needs one import.
"""
from __future__ import annotations

from collections.abc import Callable

from pykv.server.command_table import METADATA, TABLE, Command, CommandTable, Handler

__all__ = ["METADATA", "TABLE", "Command", "CommandTable", "Handler", "command"]


def command(*names: str, meta: dict | None = None) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of each of ``names``."""

    def register(fn: Handler) -> Handler:
        for name in names:
            TABLE.register(name, fn, meta)
        return fn

    return register
