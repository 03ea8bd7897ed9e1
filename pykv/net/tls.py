"""The ``tls`` connection type: TCP with TLS, configured by Redis's ``tls-*`` settings.

The standard library's ``ssl`` does the TLS and the event loop's own TLS transport (uvloop's
or asyncio's) carries it: ``create_server(ssl=context)``. That transport hands every decrypted
byte to ``data_received`` at once, so nothing waits in a TLS buffer between loop iterations
(the connection layer's "pending data" rule holds without a drain of our own).

``tls_context(config)`` builds the server context Redis's ``tlsConfigure`` would: the
certificate and key (``tls-cert-file``, ``tls-key-file``, ``tls-key-file-pass``), the CAs that
verify clients (``tls-ca-cert-file``, ``tls-ca-cert-dir``), ``tls-auth-clients yes|no|optional``,
``tls-protocols``, ``tls-ciphers``, ``tls-prefer-server-ciphers``, ``tls-dh-params-file``,
and, through the OpenSSL calls Python's ``ssl`` lacks (``pykv.net.tls_native``),
``tls-ciphersuites`` (TLS 1.3 suites) and the session cache (``tls-session-caching``,
``tls-session-cache-size``, ``tls-session-cache-timeout``). As in Redis, session tickets stay
on either way (OpenSSL's default), so clients resume sessions even without the cache.

Each accepted connection does its handshake through ``loop.start_tls`` (the same TLS
transport ``create_server(ssl=...)`` uses), so that a failed handshake reaches us and is
logged as Redis logs it: ``Error accepting a client connection: error:0A00010B:SSL
routines::wrong version number``.

A listener keeps its sockets; ``reload`` (CONFIG SET of a ``tls-*`` setting) re-serves the
same sockets with a new context, so new connections use the new certificates while
connections already open keep theirs, and no connection attempt is refused in between.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import warnings
from typing import Any

from pykv.net import tls_native
from pykv.net.base import AcceptFn, ConnectionType, Listener, ListenerSpec
from pykv.net.stream import StreamConnection, read_now
from pykv.net.tcp import bind_sockets

log = logging.getLogger("pykv")

_PROTOCOLS = {"tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1,
              "tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3}
_NO_PROTOCOL = {"tlsv1": ssl.OP_NO_TLSv1, "tlsv1.1": ssl.OP_NO_TLSv1_1,
                "tlsv1.2": ssl.OP_NO_TLSv1_2, "tlsv1.3": ssl.OP_NO_TLSv1_3}
_VERIFY = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "no": ssl.CERT_NONE}


class TlsConfigError(ValueError):
    """The tls-* settings cannot make a context; the text is what Redis logs."""


def _setting(config: Any, spec: ListenerSpec | None, name: str, option: str) -> Any:
    if spec is not None and option in spec.options:
        return spec.options[option]
    return getattr(config, name.replace("-", "_"))


# a --listener tls,... option: the tls-* setting it stands for
LISTENER_OPTIONS = {"cert": "tls-cert-file", "key": "tls-key-file", "ca": "tls-ca-cert-file",
                    "ca-dir": "tls-ca-cert-dir", "auth-clients": "tls-auth-clients"}


def check_listener_options(spec: ListenerSpec) -> None:
    """Refuse options a TLS listener does not know, or values it cannot take (ValueError,
    as a bad listener of any type fails the start)."""
    for option in spec.options:
        if option not in LISTENER_OPTIONS:
            raise ValueError(f"unknown tls listener option '{option}' (known: "
                             f"{', '.join(LISTENER_OPTIONS)})")
    auth = spec.options.get("auth-clients")
    if auth is not None and auth.lower() not in _VERIFY:
        raise ValueError(f"tls listener option auth-clients must be one of yes, no, "
                         f"optional (not '{auth}')")


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
    _load_cert(ctx, cert, key, config.tls_key_file_pass)
    _load_ca(ctx, ca_file, ca_dir)
    ctx.verify_mode = _VERIFY.get(auth, ssl.CERT_REQUIRED)
    _apply_protocols(ctx, config.tls_protocols)
    _apply_ciphers(ctx, config.tls_ciphers)
    if config.tls_ciphersuites and not tls_native.set_ciphersuites(ctx, config.tls_ciphersuites):
        raise TlsConfigError(f"Failed to configure ciphersuites: {config.tls_ciphersuites}")
    if config.tls_prefer_server_ciphers:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    if not tls_native.set_session_cache(ctx, config.tls_session_caching,
                                        config.tls_session_cache_size,
                                        config.tls_session_cache_timeout):
        log.debug("TLS session cache settings not applied: OpenSSL is out of reach")
    if config.tls_dh_params_file:
        try:
            ctx.load_dh_params(config.tls_dh_params_file)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"Failed to load {config.tls_dh_params_file}: "
                                 f"{_reason(exc)}") from None
    return ctx


def cluster_tls_context(config: Any) -> ssl.SSLContext:
    """The context of the cluster bus listener with ``tls-cluster yes``: the server
    context, but a peer node must always show a certificate the CAs trust, whatever
    ``tls-auth-clients`` says (Redis accepts bus links with ``TLS_CLIENT_AUTH_YES``)."""
    ctx = tls_context(config)
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_tls_context(config: Any) -> ssl.SSLContext:
    """The context of this server's outgoing TLS links (a replica's link with
    ``tls-replication yes``; the cluster bus links and MIGRATE with ``tls-cluster yes``),
    as Redis builds its client context: the certificate from
    ``tls-client-cert-file``/``tls-client-key-file`` (``tls-cert-file``/``tls-key-file``
    when those are unset), the peer verified against ``tls-ca-cert-file``/``-dir`` without
    a host name check, the same protocols and ciphers; raises TlsConfigError."""
    cert = config.tls_client_cert_file or config.tls_cert_file
    key = config.tls_client_key_file if config.tls_client_cert_file else config.tls_key_file
    password = (config.tls_client_key_file_pass if config.tls_client_cert_file
                else config.tls_key_file_pass)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.options |= ssl.OP_NO_COMPRESSION
    if cert:
        _load_cert(ctx, cert, key, password)
    _load_ca(ctx, config.tls_ca_cert_file, config.tls_ca_cert_dir)
    ctx.verify_mode = ssl.CERT_REQUIRED
    _apply_protocols(ctx, config.tls_protocols)
    _apply_ciphers(ctx, config.tls_ciphers)
    return ctx


def _load_cert(ctx: ssl.SSLContext, cert: str, key: str | None, password: str | None) -> None:
    try:
        ctx.load_cert_chain(cert, key or None, password=password or None)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"Failed to load certificate: {cert}: {_reason(exc)}") from None


def _load_ca(ctx: ssl.SSLContext, ca_file: str, ca_dir: str) -> None:
    if not ca_file and not ca_dir:
        return
    try:
        ctx.load_verify_locations(cafile=ca_file or None, capath=ca_dir or None)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"Failed to configure CA certificate(s) file/directory: "
                             f"{_reason(exc)}") from None


def _apply_ciphers(ctx: ssl.SSLContext, ciphers: str) -> None:
    if not ciphers:
        return
    try:
        ctx.set_ciphers(ciphers)
    except ssl.SSLError:
        raise TlsConfigError(f"Failed to configure ciphers: {ciphers}") from None


def _apply_protocols(ctx: ssl.SSLContext, text: str) -> None:
    """``tls-protocols "TLSv1.2 TLSv1.3"`` (default: those two), switched off one by one
    with OpenSSL's ``SSL_OP_NO_*`` flags as Redis does: a version floor set instead makes
    OpenSSL wait for a whole record from a client that does not speak TLS, where Redis
    fails its handshake at once."""
    wanted = set()
    for word in (text or "TLSv1.2 TLSv1.3").split():
        if word.lower() not in _PROTOCOLS:
            raise TlsConfigError("Invalid tls-protocols specified. Use a combination of "
                                 "'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
        wanted.add(word.lower())
    with warnings.catch_warnings():  # the flags are deprecated in Python, not in OpenSSL
        warnings.simplefilter("ignore", DeprecationWarning)
        for name, flag in _NO_PROTOCOL.items():
            if name not in wanted:
                ctx.options |= flag


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return exc.reason.lower().replace("_", " ")
    return getattr(exc, "strerror", None) or str(exc)


class TlsConnection(StreamConnection):
    """A TCP connection that becomes a client once its TLS handshake succeeds."""

    def __init__(self, accept: AcceptFn, ctx: ssl.SSLContext) -> None:
        super().__init__("tls", accept)
        self._context = ctx
        self._handshaking: asyncio.Task[None] | None = None
        self._early: list[bytes] | None = []  # decrypted bytes before the client exists
        self._raw: list[bytes] | None = []  # bytes read before start_tls took the transport
        self._tcp: asyncio.BaseTransport | None = None  # the TCP transport under the TLS one

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.pause_reading()  # start_tls reads the handshake
        self._handshaking = asyncio.get_running_loop().create_task(self._handshake(transport))

    async def _handshake(self, transport: asyncio.BaseTransport) -> None:
        loop = asyncio.get_running_loop()
        self._tcp = transport
        starting = loop.create_task(
            loop.start_tls(transport, self, self._context, server_side=True))
        await asyncio.sleep(0)  # start_tls has put its TLS protocol on the transport
        raw, self._raw = self._raw, None
        if raw:  # read before pause_reading took effect: the handshake's first bytes
            loop.call_soon(_feed, transport.get_protocol(), b"".join(raw))
        try:
            tls = await starting
        except (TimeoutError, OSError, EOFError) as exc:
            log.warning("Error accepting a client connection: %s", tls_native.error_text(exc))
            transport.abort()
            return
        finally:
            self._handshaking = None
        if tls is None or tls.is_closing() or self._closed:
            return
        super().connection_made(tls)
        early, self._early = self._early, None
        for data in early:  # what arrived before this coroutine resumed
            if self.handler is not None and not self._closed:
                self.handler.on_data(data)

    def data_received(self, data: bytes) -> None:
        if self._raw is not None:
            self._raw.append(data)
        elif self._early is not None:
            self._early.append(data)
        else:
            self.handler.on_data(data)

    def serve_while_busy(self, handler: Any) -> None:
        """While a script holds the loop (pykv.net.busy): read the socket and hand the
        records to this connection's own TLS protocol, as the loop's read would. It
        decrypts them and calls ``data_received``; the replies it encrypts are written at
        once (the TCP transport sends while it has nothing queued). A connection still in
        its handshake waits for the loop."""
        tcp = self._tcp
        if tcp is None or self._closed or self.handler is None or self._early is not None:
            return
        data = read_now(self.fd())
        if data:
            _feed(tcp.get_protocol(), data)


def _feed(protocol: Any, data: bytes) -> None:
    """Hand ``data`` to the TLS protocol as if the transport had just read it."""
    if hasattr(protocol, "get_buffer"):  # asyncio's and uvloop's SSLProtocol are buffered
        while data:
            buf = protocol.get_buffer(len(data))
            n = min(len(buf), len(data))
            buf[:n] = data[:n]
            protocol.buffer_updated(n)
            data = data[n:]
    else:
        protocol.data_received(data)


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
                lambda: TlsConnection(self._accept, self.context), sock=sock.dup(),
                backlog=int(getattr(self._server.config, "tcp_backlog", 511)))
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

    def listening_sockets(self) -> list[socket.socket]:
        """The bound sockets (the busy poller accepts on duplicates of them)."""
        return list(self._sockets)


class TlsConnectionType(ConnectionType):
    name = "tls"

    async def listen(self, spec: ListenerSpec, accept: AcceptFn, server: Any) -> Listener:
        listener = open_listener(spec, accept, server)
        await listener.serve()
        return listener


def open_listener(spec: ListenerSpec, accept: AcceptFn, server: Any) -> TlsListener:
    """Bind a TLS listener's sockets now (errors are the caller's to report); ``serve()``
    starts accepting."""
    check_listener_options(spec)
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
