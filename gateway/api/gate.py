"""One gate in front of every route: who may call it and how large a body it may send, decided
from one route table before the route reads a byte of its body.

    route                                    who                           body at most
    POST every proxied API (gateway.endpoints:
         /v1/chat/completions, /v1/completions, ...),
         /v1/duet/route                      an API key (when keys are on)  server.max_body_bytes
    GET  /v1/models                          an API key (when keys are on)  SMALL_BODY_BYTES
    /admin/*, /v1/duet/usage, /savings       the admin key                  SMALL_BODY_BYTES
    GET  /metrics                            server.metrics: anyone, or the admin key
    GET  /health, /ready, /openapi.json      anyone

A declared Content-Length over the limit is refused (413) before any of the body is read; a
chunked body is read up to the limit and refused once past it, then handed on whole. Keys and
the admin key are checked before the route parses anything (a refused admin request never has
its body validated). Past ``access.failed_auth_per_min`` failures from one client address in a
minute (``FailedAuthLimit``), its unknown keys and admin attempts are 429 without a look-up,
while its valid API keys keep working (they are found in memory, and are 32 random bytes: a
right guess is not a risk, unlike an operator's admin key). The table must name every route the
app serves (``RouteTable.covering`` at app build), so a new route cannot go unguarded; a path not
in the table needs an API key.
"""

from __future__ import annotations

import enum
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gateway.access.failures import FailedAuthLimit
from gateway.access.keys import ApiKey, bearer_token, matches_admin_key
from gateway.api.asgi import App, Message, Receive, Scope, Send
from gateway.api.errors import send_request_error
from gateway.config.types import AccessSettings, ServerSettings
from gateway.endpoints import ENDPOINTS
from gateway.errors import AuthenticationFailed, BodyTooLarge, PermissionDenied, RateLimited, RequestError
from gateway.runtime import Gateway

# Every route but the proxy's takes a small JSON body at most (a new key's name and tier).
SMALL_BODY_BYTES = 64 * 1024
# Where the gate leaves the key it authenticated, for the route (``key_of``).
_KEY = "duet.key"


class Guard(enum.Enum):
    OPEN = "open"
    KEY = "key"
    ADMIN = "admin"
    METRICS = "metrics"  # OPEN or ADMIN, as server.metrics says


@dataclass(frozen=True, slots=True)
class Route:
    """``path`` may hold ``{name}`` segments (one path segment each)."""

    method: str
    path: str
    guard: Guard
    large_body: bool = False

    def body_limit(self, server: ServerSettings) -> int:
        return server.max_body_bytes if self.large_body else SMALL_BODY_BYTES


class RouteTable:
    """Routes found by method and path: exact paths in one dict lookup, templated ones by regex."""

    def __init__(self, routes: Sequence[Route], default: Route) -> None:
        self.routes = tuple(routes)
        self.default = default
        self._exact = {(r.method, r.path): r for r in routes if "{" not in r.path}
        self._templated = [(r.method, re.compile(re.sub(r"\{[^/}]+\}", "[^/]+", r.path) + "$"), r)
                           for r in routes if "{" in r.path]

    def find(self, method: str, path: str) -> Route:
        method = "GET" if method == "HEAD" else method
        route = self._exact.get((method, path))
        if route is not None:
            return route
        return next((r for m, pattern, r in self._templated if m == method and pattern.match(path)), self.default)

    def covering(self, served: Iterable[tuple[str, str]]) -> RouteTable:
        """This table, once it names exactly the (method, path) pairs the app serves."""
        declared = {(r.method, r.path) for r in self.routes}
        served = set(served)
        if served != declared:
            raise RuntimeError(f"the gate's route table and the app's routes differ: served but not in the table "
                               f"{sorted(served - declared)}, in the table but not served {sorted(declared - served)}")
        return self


ROUTES = RouteTable((
    *(Route("POST", path, Guard.KEY, large_body=True) for path in ENDPOINTS),  # every proxied API
    Route("POST", "/v1/duet/route", Guard.KEY, large_body=True),
    Route("GET", "/v1/models", Guard.KEY),
    Route("GET", "/v1/duet/usage", Guard.ADMIN),
    Route("GET", "/v1/duet/savings", Guard.ADMIN),
    Route("GET", "/admin/keys", Guard.ADMIN),
    Route("POST", "/admin/keys", Guard.ADMIN),
    Route("DELETE", "/admin/keys/{key_id}", Guard.ADMIN),
    Route("POST", "/admin/reload", Guard.ADMIN),
    Route("GET", "/admin/autoscaling", Guard.ADMIN),
    Route("GET", "/metrics", Guard.METRICS),
    Route("GET", "/health", Guard.OPEN),
    Route("GET", "/ready", Guard.OPEN),
    Route("GET", "/openapi.json", Guard.OPEN),
), default=Route("*", "*", Guard.KEY))


def key_of(scope: Scope) -> ApiKey | None:
    """The key the gate authenticated for this request (None: keys are off)."""
    key: ApiKey | None = scope.get(_KEY)
    return key


class Gate:
    """ASGI: the gate in front of ``app``. ``gateway`` gives the running Gateway (built by the
    app's lifespan, so read per request)."""

    def __init__(self, app: App, table: RouteTable,
                 gateway: Callable[[], Gateway]) -> None:
        self.app = app
        self.table = table
        self._gateway = gateway
        self.failures = FailedAuthLimit()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                receive = await self._admit(self.table.find(scope["method"], scope["path"]), scope, receive)
            except RequestError as exc:
                await send_request_error(send, exc)
                return
        await self.app(scope, receive, send)

    async def _admit(self, route: Route, scope: Scope, receive: Receive) -> Receive:
        """The request's ``receive`` once it passed the route's guard and body limit."""
        gateway = self._gateway()
        config = gateway.current.config
        length, chunked, authorization = _framing(scope["headers"])
        limit = route.body_limit(config.server)
        if length is not None and length > limit:
            raise BodyTooLarge(f"The request body is larger than the limit of {limit} bytes.")
        guard = Guard(config.server.metrics) if route.guard is Guard.METRICS else route.guard
        if guard is not Guard.OPEN:
            scope[_KEY] = await self._authenticate(guard, gateway, authorization, scope)
        return await _read_capped(receive, limit) if chunked else receive

    async def _authenticate(self, guard: Guard, gateway: Gateway, authorization: str | None, scope: Scope) -> ApiKey | None:
        """The request's API key (None: keys off, or an admin route), with failures counted per
        client address and, past the limit, refused unchecked."""
        client = scope["client"][0] if scope.get("client") else "unknown"
        now = time.monotonic()
        locked = self.failures.retry_after(client, gateway.current.config.access.failed_auth_per_min, now)
        try:
            if guard is Guard.KEY:
                return await gateway.access.authenticate(bearer_token(authorization), look_up=locked is None)
            if locked is None:
                check_admin(gateway.current.config.access, authorization)
                return None
        except AuthenticationFailed:
            if locked is None:
                self.failures.fail(client, now)
                raise
        raise RateLimited("Too many failed authentications from this address; try again later.",
                          code="too_many_failed_authentications", retry_after_s=locked)


def check_admin(settings: AccessSettings, authorization: str | None) -> None:
    """403 when admin routes are off (the admin key's variable unset), 401 for any other key."""
    expected = os.environ.get(settings.admin_key_env, "")
    if not expected:
        raise PermissionDenied(f"Admin routes are off: set {settings.admin_key_env}.", code="admin_disabled")
    if not matches_admin_key(bearer_token(authorization), expected):
        raise AuthenticationFailed("This route needs the admin key.")


def _framing(headers: Iterable[tuple[bytes, bytes]]) -> tuple[int | None, bool, str | None]:
    """Content-Length (None: absent or not a number, which the server's parser refuses),
    whether the body is chunked, and the Authorization header (or an ``x-api-key`` as one)."""
    length: int | None = None
    chunked = False
    authorization: str | None = None
    for name, value in headers:
        if name == b"content-length" and value.isdigit():
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = True
        elif name == b"authorization":
            authorization = value.decode("latin-1")
        elif name == b"x-api-key" and authorization is None:  # how Anthropic's clients send a key
            authorization = "Bearer " + value.decode("latin-1")
    return length, chunked, authorization


async def _read_capped(receive: Receive, limit: int) -> Receive:
    """Read a chunked body up to ``limit`` bytes (BodyTooLarge past it) and give a ``receive``
    that hands it on as one message, then passes on whatever follows (a disconnect)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            first = message
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"The request body is larger than the limit of {limit} bytes.")
        chunks.append(chunk)
        if not message.get("more_body", False):
            first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            break
    pending = [first]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay
