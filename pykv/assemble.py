"""The composition root: a ``Server`` with every part plugged in.

The layers below never import the ones above them (``docs/ARCHITECTURE.md``; the
``importlinter`` contract in ``pyproject.toml`` keeps it so). Where a lower layer needs
something from an upper one it owns a slot — a hook list, a callback attribute, a
parameter — and this module fills it:

* the command families (``pykv.commands``) register their handlers in the server's command
  table; ``rename-command`` at config load checks names against it (``command_exists``);
* the function libraries (``pykv.scripting.functions``) become ``server.functions`` and give
  the RDB saver/loader their hooks;
* INFO's instantaneous-metrics sampler runs from the cron; MONITOR's line format and the
  start-up memory figure (``used_memory_startup``) come from their families, and so does the
  shebang parser CLIENT PAUSE uses to let ``no-writes`` scripts through.

``pykv.main`` (the ``pykv-server`` command line) and the tests build servers here.
"""
from __future__ import annotations

from pykv.cluster import install as cluster_install
from pykv.commands import acl, info, load_all_commands, memory_cmd, monitor, scripting
from pykv.config import Config
from pykv.replication import master as replication_master
from pykv.replication import role
from pykv.replication.state import ReplicationState
from pykv.scripting import functions
from pykv.server.command_table import TABLE, CommandTable
from pykv.server.server import Server


def load_commands() -> CommandTable:
    """The command table with every family's handlers registered (idempotent)."""
    load_all_commands()
    return TABLE


def command_exists(name: str) -> bool:
    """Whether ``name`` (lower case) is a command this server implements."""
    return load_commands().get(name.encode("utf-8", "surrogateescape")) is not None


def build_server(config: Config | None = None) -> Server:
    """A server for ``config``, its plug-ins installed; ``await server.start()`` runs it."""
    server = Server(config, load_commands())
    server.repl = ReplicationState()
    replication_master.install(server)  # server.replicas: SYNC/PSYNC, the stream, WAIT
    role.install(server)  # server.master_link: REPLICAOF, the replicaof config
    server.acl = acl.install(server)
    server.functions = functions.install(server)
    server.info_sampler = info.install(server)
    server.format_monitor_line = monitor.format_monitor_line
    server.parse_shebang = scripting.parse_shebang
    server.startup_hooks.append(lambda: memory_cmd.record_startup(server))
    server.cluster = cluster_install.install(server)  # None unless cluster-enabled yes
    return server
