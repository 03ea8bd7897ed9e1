"""What the running server does when a setting changes (Redis's config "apply" functions).

``install(server)`` registers ``config.on_change`` hooks, and applies the start-up-only
directives (``rename-command``). A hook that cannot apply a value raises ``ConfigError``
with Redis's reason; CONFIG SET then restores every value it changed.

- ``port``/``bind``: the config's TCP listener is re-opened on the new address(es). New
  sockets are bound synchronously (so a failed bind is reported by CONFIG SET itself) and
  only then are the old ones closed; clients already connected stay connected.
- ``proto-max-bulk-len``: every connected client's parser gets the new limit.
- ``requirepass``: clearing it lets already connected, unauthenticated clients in, as the
  default user becoming ``nopass`` does in Redis.
- ``maxclients``: the open-files limit is raised to fit, or the change is refused.
- ``timeout``: a cron hook closes clients idle for longer (not blocked, not subscribed).
- ``dir``: the working directory follows it.
- ``rdma-port``/``rdma-bind``: the config's RDMA listener is re-opened, as in Valkey.
- ``tls-port`` re-opens the TLS listener; the other ``tls-*`` settings give new connections a
  new context (a setting that cannot make one is refused, as Redis refuses it).
- new connections get TCP keepalive per ``tcp-keepalive``, and ``protected-mode`` refuses
  non-local clients while no password is set (Redis's DENIED reply).
``hz``, ``client-query-buffer-limit``, ``slowlog-*`` and the rest are read live.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from typing import TYPE_CHECKING, Any

from pykv import errors
from pykv.config.values import ConfigError
from pykv.net._sockopt import set_keepalive
from pykv.net.base import Listener, ListenerSpec
from pykv.net.tcp import bind_sockets
from pykv.protocol.types import ErrorReply

if TYPE_CHECKING:
    from pykv.server.server import Server

log = logging.getLogger("pykv")

# Redis keeps this many file descriptors for itself beyond maxclients
RESERVED_FDS = 32

def install(server: Server) -> RuntimeEffects:
    effects = RuntimeEffects(server)
    cfg = server.config
    cfg.on_change("port", effects.on_listen_change("port"))
    cfg.on_change("bind", effects.on_listen_change("bind"))
    cfg.on_change("proto-max-bulk-len", effects.on_proto_max_bulk_len)
    cfg.on_change("requirepass", effects.on_requirepass)
    cfg.on_change("maxclients", effects.on_maxclients)
    cfg.on_change("dir", effects.on_dir)
    server.add_cron(effects.close_idle_clients)
    install_rdma_listener_hooks(server)
    install_tls_hooks(server)
    apply_renames(server)
    return effects


def apply_renames(server: Server) -> None:
    """``rename-command old new`` (``new`` empty: the command is removed)."""
    commands = server.commands.commands
    for old, new in server.config.rename_commands:
        cmd = commands.pop(old.encode("utf-8", "surrogateescape"), None)
        if cmd is not None and new:
            commands[new.encode("utf-8", "surrogateescape")] = cmd


class RuntimeEffects:
    def __init__(self, server: Server) -> None:
        self.server = server
        cfg = server.config
        # what the config's TCP listener currently listens on
        self.open_port = cfg.port
        self.open_binds = list(cfg.bind)

    # -- listeners -----------------------------------------------------------------------
    def on_listen_change(self, which: str):
        reason = ("Unable to listen on this port. Check server logs." if which == "port"
                  else "Failed to bind to specified addresses.")

        def hook(value: Any) -> None:
            self.relisten(reason)

        return hook

    def relisten(self, reason: str) -> None:
        cfg = self.server.config
        port, binds = cfg.port, list(cfg.bind)
        if port == self.open_port and binds == self.open_binds:
            return
        if self.server.loop is None:  # not serving yet: start() will use the new values
            self.open_port, self.open_binds = port, binds
            return
        socks: list[socket.socket] = []
        if port and binds:
            try:
                socks = bind_sockets(binds, port, int(getattr(cfg, "tcp_backlog", 511)))
            except OSError:
                if reason.startswith("Failed"):
                    log.warning("Failed to bind")
                raise ConfigError(reason) from None
        old = self._config_listener()
        if old is not None:
            old.close()
            if old in self.server.listeners:
                self.server.listeners.remove(old)
        self.open_port, self.open_binds = port, binds
        if socks:
            listener = SocketListener(ListenerSpec("tcp", binds=binds, port=port), socks,
                                      self.server)
            self.server.listeners.insert(0, listener)

    def _config_listener(self) -> Listener | None:
        for listener in self.server.listeners:
            spec = listener.spec
            if (spec.type == "tcp" and spec.port == self.open_port
                    and list(spec.binds) == self.open_binds):
                return listener
        return None

    # -- clients -------------------------------------------------------------------------
    def admit(self, conn: Any) -> ErrorReply | None:
        """A new connection: TCP keepalive per ``tcp-keepalive``; the refusal to send when
        ``protected-mode`` is on, no password is set and the client is not local."""
        cfg = self.server.config
        if cfg.tcp_keepalive and conn.type_name == "tcp":
            set_keepalive(conn.fd(), cfg.tcp_keepalive)  # (in C: pykv.net._sockopt)
        if cfg.protected_mode and not cfg.requirepass and not is_local(conn):
            return errors.PROTECTED_MODE_DENIED
        return None

    def on_proto_max_bulk_len(self, value: int) -> None:
        for client in self.server.clients.values():
            client.parser.max_bulk_len = value

    def on_requirepass(self, value: str) -> None:
        if not value:
            for client in self.server.clients.values():
                if not client.authenticated:
                    client.set_authenticated(True)

    def on_maxclients(self, value: int) -> None:
        import resource

        needed = value + RESERVED_FDS
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY or needed <= soft:
            return
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
            return
        except (ValueError, OSError):
            pass
        best = hard if hard != resource.RLIM_INFINITY else soft
        if best > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (best, hard))
                soft = best
            except (ValueError, OSError):
                pass
        raise ConfigError("The operating system is not able to handle the specified number "
                          f"of clients, try with {max(1, soft - RESERVED_FDS)}")

    def close_idle_clients(self) -> None:
        timeout = self.server.config.timeout
        if not timeout:
            return
        now = time.time()
        for client in list(self.server.clients.values()):
            if (client.blocked is None and not client.subscriptions and not client.monitor
                    and not client.is_master and now - client.last_interaction > timeout):
                log.log(15, "Closing idle client")
                client.close_now()

    def on_dir(self, value: str) -> None:
        try:
            os.chdir(value)
        except OSError as exc:
            raise ConfigError(exc.strerror or str(exc)) from None


def is_local(conn: Any) -> bool:
    """Redis's ``connIsLocal``: a unix socket, or a peer on 127.x.x.x or ::1."""
    if conn is None or conn.type_name == "unix":
        return True
    host = conn.peer_address().rsplit(":", 1)[0]
    return host.startswith("127.") or host == "::1"


# -- synchronous TCP listening -----------------------------------------------------------
class SocketListener(Listener):
    """A TCP listener over sockets bound beforehand, served by the running loop."""

    def __init__(self, spec: ListenerSpec, socks: list[socket.socket], server: Server) -> None:
        from pykv.net.stream import StreamConnection

        self.spec = spec
        self.pending = list(socks)  # not yet handed to the loop (closed by us if needed)
        self.servers: list[asyncio.AbstractServer] = []
        self.closed = False
        loop = server.loop
        for sock in socks:
            task = loop.create_task(loop.create_server(
                lambda: StreamConnection("tcp", server.accept), sock=sock))
            task.add_done_callback(lambda t, sock=sock: self._started(t, sock))

    def _started(self, task: asyncio.Task, sock: socket.socket) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        self.pending.remove(sock)
        srv = task.result()
        if self.closed:
            srv.close()
        else:
            self.servers.append(srv)

    def close(self) -> None:
        self.closed = True
        for srv in self.servers:
            srv.close()
        for sock in self.pending:
            sock.close()
        self.pending = []


def install_rdma_listener_hooks(server: Server) -> None:
    """``CONFIG SET rdma-port``/``rdma-bind`` re-open the config's RDMA listener, like Valkey.

    Clients already connected stay connected; port 0 closes the listener."""
    cfg = server.config
    state = {"port": cfg.rdma_port, "binds": list(cfg.rdma_bind)}

    def hook(_value: Any) -> None:
        from pykv.net.rdma import RdmaListener, open_listener

        port, binds = cfg.rdma_port, list(cfg.rdma_bind)
        if (port, binds) == (state["port"], state["binds"]):
            return
        if server.loop is None:  # not serving yet: start() opens the configured listener
            state["port"], state["binds"] = port, binds
            return
        for old in list(server.listeners):
            if (isinstance(old, RdmaListener) and old.spec.port == state["port"]
                    and list(old.spec.binds) == state["binds"]):
                old.close()
                server.listeners.remove(old)
        state["port"], state["binds"] = port, binds
        if port:
            try:
                new = open_listener(ListenerSpec("rdma", binds=binds, port=port), server.accept,
                                    server, server.loop)
            except (OSError, ValueError) as exc:
                log.warning("%s", exc)
                raise ConfigError("Unable to listen on this port. Check server logs.") from None
            server.listeners.append(new)

    cfg.on_change("rdma-port", hook)
    cfg.on_change("rdma-bind", hook)


# the settings a TLS context is made of (pykv.net.tls.tls_context)
TLS_CONTEXT_SETTINGS = (
    "tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-ca-cert-file",
    "tls-ca-cert-dir", "tls-auth-clients", "tls-protocols", "tls-ciphers",
    "tls-prefer-server-ciphers", "tls-session-caching", "tls-dh-params-file",
    "tls-ciphersuites", "tls-session-cache-size", "tls-session-cache-timeout",
)


def install_tls_hooks(server: Server) -> None:
    """``CONFIG SET tls-*``: new connections get a context made of the new settings (open
    ones keep theirs), or the change is refused as Redis refuses it; ``tls-port`` re-opens
    the config's TLS listener (0 closes it)."""
    cfg = server.config
    state = {"port": cfg.tls_port}

    def tls_listeners() -> list[Any]:
        from pykv.net.tls import TlsListener

        return [li for li in server.listeners if isinstance(li, TlsListener)]

    def on_context_change(name: str) -> Any:
        def hook(_value: Any) -> None:
            from pykv.net.tls import TlsConfigError, tls_context

            listeners = tls_listeners()
            if not listeners and not cfg.tls_port:
                return  # nothing serves TLS: the settings wait for a listener
            try:
                contexts = [tls_context(cfg, li.spec) for li in listeners] or \
                    [tls_context(cfg)]
            except TlsConfigError as exc:
                log.warning("%s", exc)
                log.warning("Failed applying new configuration. Possibly related to new %s "
                            "setting. Restoring previous settings.", name)
                raise ConfigError("Unable to update TLS configuration. Check server logs."
                                  ) from None
            for listener, ctx in zip(listeners, contexts, strict=False):
                server.loop.create_task(listener.reload(ctx))

        return hook

    def on_port(_value: Any) -> None:
        from pykv.net.tls import open_listener

        port = cfg.tls_port
        if port == state["port"] or server.loop is None:
            state["port"] = port
            return
        new = None
        if port:
            try:
                new = open_listener(ListenerSpec("tls", binds=list(cfg.bind), port=port),
                                    server.accept, server)
            except (OSError, ValueError) as exc:
                log.warning("%s", exc)
                raise ConfigError("Unable to listen on this port. Check server logs.") from None
        for old in tls_listeners():
            if old.spec.port == state["port"] and not old.spec.options:
                old.close()
                server.listeners.remove(old)
        state["port"] = port
        if new is not None:
            server.listeners.append(new)
            server.loop.create_task(new.serve())

    for name in TLS_CONTEXT_SETTINGS:
        cfg.on_change(name, on_context_change(name))
    cfg.on_change("tls-port", on_port)
