"""A minimal read-only client of the Kubernetes API server: GET a path, get JSON.

In a pod it authenticates with the pod's service account, as every in-cluster client does: the
API server's address from ``KUBERNETES_SERVICE_HOST``/``_PORT``, the CA and the bearer token from
``/var/run/secrets/kubernetes.io/serviceaccount``. The token is read again on every call because
projected service-account tokens are rotated while the pod runs. Plain aiohttp: listing endpoint
slices needs one GET, not the ``kubernetes`` package and its dependencies.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from gateway.errors import DuetError

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class DiscoveryFailed(DuetError):
    """Replicas could not be listed (API server unreachable, refused, or an unexpected answer)."""


class WatchExpired(DiscoveryFailed):
    """The resourceVersion a watch resumes from is too old (HTTP 410 Gone): list again."""


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """How to reach the API server. ``ca_path`` None: plain HTTP or the system's CAs (tests, proxies)."""

    base_url: str
    token_path: Path | None = SERVICE_ACCOUNT / "token"
    ca_path: Path | None = SERVICE_ACCOUNT / "ca.crt"
    namespace: str = "default"
    timeout_s: float = 5.0

    @classmethod
    def at(cls, base_url: str) -> ApiSettings:
        """An API server reached as given, with no token and the system's CAs: ``kubectl proxy``
        (which adds the credentials) or a test's stand-in; namespaces default to ``default``."""
        return cls(base_url, token_path=None, ca_path=None)

    @classmethod
    def in_cluster(cls, env: Mapping[str, str], account: Path = SERVICE_ACCOUNT) -> ApiSettings:
        """The pod's own API server, CA, token and namespace. Raises DiscoveryFailed outside a pod."""
        host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise DiscoveryFailed("KUBERNETES_SERVICE_HOST is not set: Kubernetes discovery runs only inside a pod")
        host = f"[{host}]" if ":" in host else host  # an IPv6 service address
        namespace_file = account / "namespace"
        namespace = namespace_file.read_text().strip() if namespace_file.is_file() else "default"
        return cls(f"https://{host}:{port}", account / "token", account / "ca.crt", namespace)


class KubernetesApi:
    """GETs JSON from the API server through an ``aiohttp`` session the caller owns."""

    def __init__(self, settings: ApiSettings, session: aiohttp.ClientSession) -> None:
        self.settings = settings
        self._session = session
        self._ssl = ssl.create_default_context(cafile=str(settings.ca_path)) if settings.ca_path else None

    async def get_json(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        """``GET path?params`` as a JSON object; DiscoveryFailed on any failure."""
        url = self.settings.base_url.rstrip("/") + path
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        try:
            async with self._session.get(url, params=dict(params), headers=self._headers(), ssl=self._ssl or True,
                                         timeout=timeout) as resp:
                if resp.status != 200:
                    raise DiscoveryFailed(f"GET {path}: HTTP {resp.status}: {(await resp.text())[:200]}")
                body = await resp.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise DiscoveryFailed(f"GET {path}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(body, dict):
            raise DiscoveryFailed(f"GET {path}: expected a JSON object")
        return body

    async def watch(self, path: str, params: Mapping[str, str], timeout_s: float) -> AsyncIterator[dict[str, Any]]:
        """The events of ``GET path?watch=1&params`` (one JSON object a line) until the server ends
        the stream; WatchExpired on a 410, DiscoveryFailed on any other failure. ``timeout_s``
        bounds the silence between two lines (the API server sends bookmarks while none change)."""
        url = self.settings.base_url.rstrip("/") + path
        timeout = aiohttp.ClientTimeout(total=None, connect=self.settings.timeout_s, sock_read=timeout_s)
        query = {**params, "watch": "1"}
        try:
            async with self._session.get(url, params=query, headers=self._headers(), ssl=self._ssl or True,
                                         timeout=timeout) as resp:
                if resp.status == 410:
                    raise WatchExpired(f"watch {path}: HTTP 410: {(await resp.text())[:200]}")
                if resp.status != 200:
                    raise DiscoveryFailed(f"watch {path}: HTTP {resp.status}: {(await resp.text())[:200]}")
                async for line in resp.content:
                    if line.strip():
                        yield _event(path, line)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise DiscoveryFailed(f"watch {path}: {type(exc).__name__}: {exc}") from exc

    def _headers(self) -> dict[str, str]:
        token_path = self.settings.token_path
        if token_path is None or not token_path.is_file():
            return {"Accept": "application/json"}
        return {"Accept": "application/json", "Authorization": f"Bearer {token_path.read_text().strip()}"}


def _event(path: str, line: bytes) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise DiscoveryFailed(f"watch {path}: not a JSON event: {line[:80]!r}") from exc
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise DiscoveryFailed(f"watch {path}: not a watch event: {line[:80]!r}")
    return event
