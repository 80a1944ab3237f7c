"""TLS to replicas: the context each replica URL is spoken to with. ``http://`` is plain TCP;
``https://`` is TLS with the certificate and the host name verified (SNI sent), against the
system's CAs or the variant's ``ca_bundle``. There is no way to turn verification off: a
replica with a self-signed certificate gets its CA named in the config."""

from __future__ import annotations

import ssl
from collections.abc import Callable

from gateway.config.types import DuetConfig


class UpstreamTls:
    """``context_for(url)`` reads the current config (a reload may add replicas); contexts are
    built once per CA bundle (loading CAs costs milliseconds)."""

    def __init__(self, config: Callable[[], DuetConfig]) -> None:
        self._config = config
        self._contexts: dict[str | None, ssl.SSLContext] = {}

    def context_for(self, url: str) -> ssl.SSLContext | None:
        """None for an ``http://`` URL, else the verifying context for the replica at ``url``."""
        if not url.startswith("https://"):
            return None
        bundle = self._ca_bundle(url)
        context = self._contexts.get(bundle)
        if context is None:
            context = self._contexts[bundle] = verifying_context(bundle)
        return context

    def _ca_bundle(self, url: str) -> str | None:
        for model in self._config().models.values():
            for replica in model.replicas:
                if replica.url == url:
                    return model.ca_bundles.get(replica.variant)
        return None


def verifying_context(ca_bundle: str | None) -> ssl.SSLContext:
    """A client context that checks the peer's certificate chain (against ``ca_bundle``, or the
    system's CAs when None) and its host name; TLS 1.2 at least, HTTP/1.1 offered by ALPN."""
    context = ssl.create_default_context(cafile=ca_bundle)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    return context
