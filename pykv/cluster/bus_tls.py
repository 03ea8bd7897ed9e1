"""The TLS contexts of the cluster bus (``tls-cluster yes``).

The listener takes ``pykv.net.tls.cluster_tls_context`` (the server certificate; a peer must
show a trusted one), outgoing links ``client_tls_context`` (``tls-client-cert-file``, else
``tls-cert-file``), the context a replica's TLS link uses. The client context is built once
and kept, since the cron retries a link to an unreachable node ten times a second; a
``CONFIG SET`` of a ``tls-*`` setting drops it (``forget``) so the next link uses the new
settings. Without ``tls-cluster`` both are None: the bus is plain TCP.
"""
from __future__ import annotations

import logging
import ssl
from typing import Any

from pykv.net.tls import TlsConfigError, client_tls_context, cluster_tls_context

log = logging.getLogger("pykv")

# the settings the client context is made of, beyond the server context's
CLIENT_SETTINGS = ("tls-client-cert-file", "tls-client-key-file", "tls-client-key-file-pass")


class BusTls:
    def __init__(self, config: Any) -> None:
        self.config = config
        self._client: ssl.SSLContext | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.config.tls_cluster)

    def listener_context(self) -> ssl.SSLContext | None:
        """The bus listener's context (raises ValueError with Redis's text on a bad
        setting, as a TLS listener that cannot be configured stops the start)."""
        if not self.enabled:
            return None
        try:
            self._client = client_tls_context(self.config)  # as Redis, both at start-up
            return cluster_tls_context(self.config)
        except TlsConfigError as exc:
            log.warning("%s", exc)
            raise ValueError("Failed to configure TLS. Check logs for more info.") from None

    def link_context(self) -> ssl.SSLContext | None:
        """The context of an outgoing link (raises TlsConfigError)."""
        if not self.enabled:
            return None
        if self._client is None:
            self._client = client_tls_context(self.config)
        return self._client

    def forget(self, _value: Any = None) -> None:
        self._client = None
