"""The ``tls`` connection type: TCP with TLS, configured by Redis's ``tls-*`` settings.

The standard library's ``ssl`` does the TLS and the event loop's own TLS transport (uvloop's
or asyncio's) carries it: ``create_server(ssl=context)``. That transport hands every decrypted
byte to ``data_received`` at once, so nothing waits in a TLS buffer between loop iterations
(the connection layer's "pending data" rule holds without a drain of our own).

``tls_context(config)`` builds the server context Redis's ``tlsConfigure`` would: the
certificate and key (``tls-cert-file``, ``tls-key-file``, ``tls-key-file-pass``), the CAs that
verify clients (``tls-ca-cert-file``, ``tls-ca-cert-dir``), ``tls-auth-clients yes|no|optional``,
``tls-protocols``, ``tls-ciphers``, ``tls-prefer-server-ciphers``, ``tls-session-caching``
(session tickets) and ``tls-dh-params-file``. Python's ``ssl`` has no call for TLS 1.3
cipher suites, the session cache size or its timeout: ``tls-ciphersuites``,
``tls-session-cache-size`` and ``tls-session-cache-timeout`` are kept as settings only.

A listener keeps its sockets; ``reload`` (CONFIG SET of a ``tls-*`` setting) re-serves the
same sockets with a new context, so new connections use the new certificates while
connections already open keep theirs, and no connection attempt is refused in between.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Any

from pykv.net.base import AcceptFn, ConnectionType, Listener, ListenerSpec
from pykv.net.stream import StreamConnection
from pykv.net.tcp import bind_sockets

log = logging.getLogger("pykv")

_PROTOCOLS = {"tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1,
              "tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "no": ssl.CERT_NONE}


class TlsConfigError(ValueError):
    """The tls-* settings cannot make a context; the text is what Redis logs."""


def _setting(config: Any, spec: ListenerSpec | None, name: str, option: str) -> Any:
    if spec is not None and option in spec.options:
        return spec.options[option]
    return getattr(config, name.replace("-", "_"))


def tls_context(config: Any, spec: ListenerSpec | None = None) -> ssl.SSLContext:
    """A server context from the ``tls-*`` settings (a listener's ``cert=``, ``key=``,
    ``ca=`` options take precedence); raises TlsConfigError with Redis's log text."""
    cert = _setting(config, spec, "tls-cert-file", "cert")
    key = _setting(config, spec, "tls-key-file", "key")
    ca_file = _setting(config, spec, "tls-ca-cert-file", "ca")
    ca_dir = _setting(config, spec, "tls-ca-cert-dir", "ca-dir")
    auth = str(_setting(config, spec, "tls-auth-clients", "auth-clients")).lower()
    if not cert:
        raise TlsConfigError("No tls-cert-file configured!")
    if not key:
        raise TlsConfigError("No tls-key-file configured!")
    if auth != "no" and not ca_file and not ca_dir:
        raise TlsConfigError("Either tls-ca-cert-file or tls-ca-cert-dir must be specified "
                             "when tls-auth-clients is enabled!")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_SINGLE_DH_USE | ssl.OP_SINGLE_ECDH_USE
    try:
        ctx.load_cert_chain(cert, key, password=config.tls_key_file_pass or None)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"Failed to load certificate: {cert}: {_reason(exc)}") from None
    if ca_file or ca_dir:
        try:
            ctx.load_verify_locations(cafile=ca_file or None, capath=ca_dir or None)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"Failed to configure CA certificate(s) file/directory: "
                                 f"{_reason(exc)}") from None
    ctx.verify_mode = _VERIFY.get(auth, ssl.CERT_REQUIRED)
    _apply_protocols(ctx, config.tls_protocols)
    if config.tls_ciphers:
        try:
            ctx.set_ciphers(config.tls_ciphers)
        except ssl.SSLError:
            raise TlsConfigError(f"Failed to configure ciphers: {config.tls_ciphers}") from None
    if config.tls_prefer_server_ciphers:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    if not config.tls_session_caching:
        ctx.options |= ssl.OP_NO_TICKET
    if config.tls_dh_params_file:
        try:
            ctx.load_dh_params(config.tls_dh_params_file)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"Failed to load {config.tls_dh_params_file}: "
                                 f"{_reason(exc)}") from None
    return ctx


def _apply_protocols(ctx: ssl.SSLContext, text: str) -> None:
    """``tls-protocols "TLSv1.2 TLSv1.3"``: the lowest and highest named versions."""
    if not text:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # Redis's default: TLSv1.2 and up
        return
    versions = []
    for word in text.split():
        version = _PROTOCOLS.get(word.lower())
        if version is None:
            raise TlsConfigError("Invalid tls-protocols specified. Use a combination of "
                                 "'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
        versions.append(version)
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return exc.reason.lower().replace("_", " ")
    return getattr(exc, "strerror", None) or str(exc)


class TlsListener(Listener):
    """Listening sockets served with a TLS context that ``reload`` can replace."""

    def __init__(self, spec: ListenerSpec, accept: AcceptFn, server: Any,
                 sockets: list[socket.socket], ctx: ssl.SSLContext) -> None:
        self.spec = spec
        self._accept = accept
        self._server = server
        self._sockets = sockets
        self._servers: list[asyncio.AbstractServer] = []
        self.context = ctx

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            # the server owns (and closes) a duplicate; ours stays open for a reload
            srv = await loop.create_server(
                lambda: StreamConnection("tls", self._accept), sock=sock.dup(),
                ssl=self.context, backlog=int(getattr(self._server.config, "tcp_backlog", 511)))
            self._servers.append(srv)

    async def reload(self, ctx: ssl.SSLContext) -> None:
        """Serve new connections with ``ctx``; open connections keep their session."""
        old, self._servers = self._servers, []
        self.context = ctx
        await self.serve()
        for srv in old:
            srv.close()

    def close(self) -> None:
        for srv in self._servers:
            srv.close()
        self._servers = []
        for sock in self._sockets:
            sock.close()
        self._sockets = []

    def info_fields(self) -> str:
        return "".join(f",bind={b}" for b in self.spec.binds) + f",port={self.spec.port}"


class TlsConnectionType(ConnectionType):
    name = "tls"

    async def listen(self, spec: ListenerSpec, accept: AcceptFn, server: Any) -> Listener:
        listener = open_listener(spec, accept, server)
        await listener.serve()
        return listener


def open_listener(spec: ListenerSpec, accept: AcceptFn, server: Any) -> TlsListener:
    """Bind a TLS listener's sockets now (errors are the caller's to report); ``serve()``
    starts accepting."""
    try:
        ctx = tls_context(server.config, spec)
    except TlsConfigError as exc:
        log.warning("%s", exc)
        raise ValueError("Failed to configure TLS. Check logs for more info.") from None
    backlog = int(getattr(server.config, "tcp_backlog", 511))
    sockets = bind_sockets(spec.binds or ["127.0.0.1"], spec.port, backlog, "TLS")
    if sockets:
        spec.port = sockets[0].getsockname()[1]
    return TlsListener(spec, accept, server, sockets, ctx)
