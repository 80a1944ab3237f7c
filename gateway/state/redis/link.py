"""One gateway's link to Redis: every command of the gateway goes through one ordered queue that a
background task flushes as one pipeline, so concurrent requests share round trips (LiteLLM's Redis
became the bottleneck at ~100 ms a call until its calls were pipelined) and commands reach Redis in
the order they were queued (the replica store relies on it to reconcile in-flight counts).

Redis trouble never hangs a caller: commands time out after ``timeout_s``; after a failure the
link is *down* and fails every ``call`` at once, without I/O, until a back-off (doubling up to
``max_backoff_s``) has passed; then the next flush probes Redis again. Deferred writes (``send``)
wait in the queue while the link is down (up to ``max_queue``) and go out once it is back, so a
short outage loses no ledger entry; only the writes of the batch in flight when Redis failed are
dropped (and counted), because Redis may or may not have applied them.

Scripts run by SHA (``EVALSHA``): redis-py's pipelines would check ``SCRIPT EXISTS`` before every
flush, one more round trip; instead scripts are loaded once per connection and again when Redis
answers NOSCRIPT (it restarted).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError

log = logging.getLogger(__name__)

Arg = str | int | float | bytes


class StoreUnavailable(Exception):
    """Redis could not answer (down, timed out, backing off). Callers fall back to local state."""


@dataclass(frozen=True, slots=True)
class Script:
    """A Lua script known by its SHA1, as Redis names it."""

    name: str
    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())


@dataclass(frozen=True, slots=True)
class LinkSettings:
    """``timeout_s`` bounds connect and every flush; back-off starts at ``min_backoff_s``."""

    url: str
    timeout_s: float = 0.25
    min_backoff_s: float = 0.05
    max_backoff_s: float = 2.0
    max_queue: int = 10_000


@dataclass(frozen=True, slots=True)
class LinkStatus:
    """Whether Redis answers, for /ready. ``reached``: it answered at least once since start (a
    link that never reached it is a misconfiguration or an outage at start: not ready);
    ``problem``: why it is not answering now (an error's type: no address, no password)."""

    up: bool
    reached: bool
    problem: str | None = None


@dataclass(slots=True)
class _Command:
    script: Script
    keys: Sequence[str]
    args: Sequence[Arg]
    reply: asyncio.Future[Any] | None  # None: deferred, nobody waits


class RedisLink:
    """The auto-pipelining client. ``call`` awaits a script's reply; ``send`` queues a write."""

    def __init__(self, settings: LinkSettings, *, on_error: Callable[[str], None] | None = None) -> None:
        self._settings = settings
        self._client = aioredis.Redis.from_url(
            settings.url,
            socket_timeout=settings.timeout_s,
            socket_connect_timeout=settings.timeout_s,
            retry=None,
            max_connections=4,
        )
        # Off the hot path (key administration, the ledger, key reloads) a command may wait longer
        # and retry once on a connection that died with a restarted Redis.
        self._admin = aioredis.Redis.from_url(
            settings.url,
            socket_timeout=max(1.0, settings.timeout_s),
            socket_connect_timeout=max(1.0, settings.timeout_s),
            retry=Retry(NoBackoff(), 1),
            retry_on_error=[RedisConnectionError],
            max_connections=4,
        )
        self._on_error = on_error or (lambda what: None)
        self._queue: list[_Command] = []
        self._wake = asyncio.Event()
        self._down_until = 0.0
        self._backoff_s = 0.0
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False
        self._reached = False
        self._problem: str | None = None

    @property
    def up(self) -> bool:
        """Whether the last exchange with Redis worked (or none was tried yet)."""
        return self._backoff_s == 0.0

    @property
    def status(self) -> LinkStatus:
        return LinkStatus(self.up and self._reached, self._reached, self._problem)

    def start(self) -> None:
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_forever(), name="duet-redis-flusher")

    async def connect(self) -> LinkStatus:
        """One PING at start, so that a Redis that cannot be reached is known at once (the link
        is then down, backing off, and ``status`` says why), not at the first request."""
        try:
            await asyncio.wait_for(self._client.ping(), self._settings.timeout_s * 2)
        except (RedisError, OSError, TimeoutError) as exc:
            self._went_down(exc)
        else:
            self._came_up()
        return self.status

    async def call(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """Run ``script`` in the next pipeline and return its reply. Raises StoreUnavailable."""
        if self._closed or time.monotonic() < self._down_until:
            raise StoreUnavailable("redis is down (backing off)")
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._enqueue(_Command(script, keys, args, reply))
        return await reply

    def send(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> None:
        """Queue ``script`` for the next pipeline that reaches Redis, without waiting for it."""
        if self._closed:
            return
        self._enqueue(_Command(script, keys, args, None))

    async def ping(self) -> bool:
        """One PING outside the queue (for readiness and the CLI)."""
        try:
            return bool(await self._client.ping())
        except (RedisError, OSError):
            return False

    @property
    def client(self) -> aioredis.Redis:
        """A client for commands off the hot path (key administration, usage, key reloads)."""
        return self._admin

    async def aclose(self) -> None:
        """Stop flushing and close connections, within about a second even if Redis hangs."""
        self._closed = True
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.wait({self._flusher}, timeout=self._settings.timeout_s * 2)
        self._fail_all(self._queue, StoreUnavailable("redis link closed"))
        self._queue = []
        for client in (self._client, self._admin):
            closing = asyncio.ensure_future(client.aclose())
            done, _ = await asyncio.wait({closing}, timeout=self._settings.timeout_s * 2)
            if not done:
                closing.cancel()
                log.warning("closing the redis connections timed out")

    def _enqueue(self, command: _Command) -> None:
        if len(self._queue) >= self._settings.max_queue:
            self._on_error("queue_full")
            if command.reply is not None:
                command.reply.set_exception(StoreUnavailable("redis queue full"))
            return
        self._queue.append(command)
        self._wake.set()

    async def _flush_forever(self) -> None:
        while True:
            await self._wake.wait()
            wait_s = self._down_until - time.monotonic()
            if wait_s > 0:  # backing off: queued writes wait, then this flush probes Redis
                await asyncio.sleep(wait_s)
            self._wake.clear()
            if not self.up and not await self._probe():
                continue
            batch, self._queue = self._queue, []
            if not batch:
                continue
            try:
                await self._flush(batch)
            except Exception as exc:  # a bug must not kill the flusher: every caller would hang
                log.exception("flushing %d redis commands failed", len(batch))
                self._fail_all(batch, StoreUnavailable(f"redis link: {type(exc).__name__}: {exc}"))

    async def _probe(self) -> bool:
        """After an outage, PING before sending queued writes: while Redis is still away they stay
        queued (only the callers waiting on replies are failed), instead of being lost."""
        try:
            await asyncio.wait_for(self._client.ping(), self._settings.timeout_s * 2)
        except (RedisError, OSError, TimeoutError) as exc:
            self._went_down(exc)
            waiting = [c for c in self._queue if c.reply is not None]
            self._queue = [c for c in self._queue if c.reply is None]
            self._fail_all(waiting, StoreUnavailable(f"redis: {type(exc).__name__}: {exc}"))
            self._wake.set()  # try again after the next back-off
            return False
        return True

    async def _flush(self, batch: list[_Command]) -> None:
        try:
            replies = await asyncio.wait_for(self._execute(batch), self._settings.timeout_s * 2)
        except (RedisError, OSError, TimeoutError) as exc:
            self._went_down(exc)
            dropped = sum(1 for command in batch if command.reply is None)
            if dropped:
                self._on_error("dropped")
            self._fail_all(batch, StoreUnavailable(f"redis: {type(exc).__name__}: {exc}"))
            return
        self._came_up()
        for command, reply in zip(batch, replies, strict=True):
            if command.reply is None or command.reply.done():
                if isinstance(reply, Exception):
                    log.error("redis script %s failed: %s", command.script.name, reply)
                continue
            if isinstance(reply, Exception):
                command.reply.set_exception(reply)
            else:
                command.reply.set_result(reply)

    async def _execute(self, batch: list[_Command]) -> list[Any]:
        replies = await self._pipeline(batch)
        if any(isinstance(r, NoScriptError) for r in replies):
            # Redis restarted and forgot the scripts: load them and run those commands again.
            missing = [c for c, r in zip(batch, replies, strict=True) if isinstance(r, NoScriptError)]
            for script in {c.script.sha: c.script for c in missing}.values():
                await self._client.script_load(script.source)
            again = iter(await self._pipeline(missing))
            replies = [next(again) if isinstance(r, NoScriptError) else r for r in replies]
        return replies

    async def _pipeline(self, batch: list[_Command]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for command in batch:
            pipe.evalsha(command.script.sha, len(command.keys), *command.keys, *command.args)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        return [_no_script(r) for r in replies]

    def _went_down(self, exc: BaseException) -> None:
        first = self._backoff_s == 0.0
        self._problem = f"redis unreachable ({type(exc).__name__})"
        self._backoff_s = min(self._settings.max_backoff_s, max(self._settings.min_backoff_s, self._backoff_s * 2))
        self._down_until = time.monotonic() + self._backoff_s
        self._on_error("unavailable")
        if first:
            log.warning("redis unavailable (%s: %s); using local state, retrying with back-off", type(exc).__name__, exc)

    def _came_up(self) -> None:
        if self._backoff_s:
            log.warning("redis reachable again; shared state resumes")
        self._reached = True
        self._problem = None
        self._backoff_s = 0.0
        self._down_until = 0.0

    @staticmethod
    def _fail_all(batch: list[_Command], exc: Exception) -> None:
        for command in batch:
            if command.reply is not None and not command.reply.done():
                command.reply.set_exception(exc)


def _no_script(reply: Any) -> Any:
    """redis-py reports NOSCRIPT inside a pipeline as a plain ResponseError; name it."""
    if isinstance(reply, ResponseError) and not isinstance(reply, NoScriptError) and str(reply).startswith("NOSCRIPT"):
        return NoScriptError(str(reply))
    return reply
