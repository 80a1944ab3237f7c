"""The hot path's gate, in two steps: ``authenticate`` finds the key a request presents (before its
body is read: ``gateway.api.gate``), ``authorize`` checks that the key's tier may use the model
and checks and charges its limits (at most one Redis round trip); ``settle`` charges the actual
tokens and cost once the response has ended (queued, no wait). Errors go through the one error
hierarchy: 401 AuthenticationFailed, 403 PermissionDenied, 429 RateLimited with Retry-After.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from redis.exceptions import RedisError

from gateway.access.ceiling import UsageCeiling
from gateway.access.concurrency import OpenRequests
from gateway.access.headroom import NO_HEADROOM, Headroom
from gateway.access.keys import ApiKey, KeyRing, hash_secret
from gateway.access.keystore import KeyStore
from gateway.access.ledger import Charge, month_of
from gateway.access.quotas import SPEND_LIMIT, Admission, QuotaBook, Refusal
from gateway.access.receipts.receipt import NO_RECEIPT, Receipt
from gateway.access.reservation import Hold, Reservation
from gateway.access.unknown import UnknownKeys
from gateway.config.types import AccessSettings, DuetConfig, ModelSpec, Tier
from gateway.domain import Priority, ReplicaState, Variant
from gateway.errors import AuthenticationFailed, KeyStoreUnavailable, ModelNotFound, PermissionDenied, RateLimited
from gateway.outcome import Outcome
from gateway.state.redis.link import StoreUnavailable
from gateway.telemetry import Telemetry

log = logging.getLogger(__name__)


_LIMIT_NAMES = {
    "requests_per_min": "requests per minute",
    "tokens_per_min": "tokens per minute",
    SPEND_LIMIT: "monthly spend limit (USD)",
    "quota_unavailable": "quotas (they cannot be checked right now)",
    "max_concurrent_requests": "concurrent requests",
}


@dataclass(frozen=True, slots=True)
class Grant:
    """Who a request is and what its tier lets it do. ``key is None``: an open gateway.
    ``reservation``: what the request holds of its key's spend limit until it ends; ``headroom``:
    what its key has left of its per-minute limits (the ``x-ratelimit-*`` headers)."""

    key: ApiKey | None = None
    tier: Tier | None = None
    reservation: Reservation | None = None
    headroom: Headroom = NO_HEADROOM

    def cap_priority(self, headers: dict[str, str]) -> None:
        """Hold the request's ``x-duet-priority`` at or below the tier's class: a higher claim,
        or none, runs at the tier's class (a lower claim stands)."""
        cap = self.tier.priority if self.tier is not None else None
        if cap is None or cap is Priority.INTERACTIVE:
            return
        claimed = headers.get("x-duet-priority", "")
        rank = Priority(claimed).rank if claimed in Priority.__members__.values() else None
        if rank is None or rank < cap.rank:
            headers["x-duet-priority"] = cap.value

    @property
    def tasks(self) -> tuple[str, ...]:
        """The task types the key's operator says its application sends (empty: any, or no key)."""
        return self.key.tasks if self.key is not None else ()

    def visible(self, snapshot: Mapping[str, ReplicaState], config: DuetConfig) -> Mapping[str, ReplicaState]:
        """The replica states routing may see: replicas of variants the tier does not allow are
        left out, so they read as unknown and routing skips them."""
        allowed = self.tier.variants if self.tier is not None else None
        if allowed is None:
            return snapshot
        keep = {r.id for r in config.replicas if r.variant in allowed}
        return {rid: state for rid, state in snapshot.items() if rid in keep}


OPEN = Grant()


class Access(Protocol):
    async def start(self) -> None:
        """Begin background work (key refresh); called once the event loop runs."""
        ...

    async def stop(self) -> None:
        ...

    async def authenticate(self, secret: str | None, *, look_up: bool = True) -> ApiKey | None:
        """The live key ``secret`` is (None: keys are off), or AuthenticationFailed. ``look_up``
        False: a key missing from memory fails without asking the key store."""
        ...

    async def authorize(self, key: ApiKey | None, model: str, ceiling: UsageCeiling | None = None) -> Grant:
        """Check and charge one request of ``key`` (from ``authenticate``) for ``model`` (the
        name the client sent); with a ``ceiling``, hold its most expensive cost against the key's
        monthly spend limit (``gateway.access.reservation``). None: the request spends nothing (the
        dry run)."""
        ...

    async def settle(self, grant: Grant, model: str, variant: Variant, task: str, outcome: Outcome,
                     receipt: Receipt = NO_RECEIPT) -> None:
        """Charge a finished request's tokens and cost at ``variant``'s price, and add its savings
        receipt to the ledger, in place of what it held (called at most once, when the response
        ended)."""
        ...

    def release(self, grant: Grant) -> None:
        """The request ``authorize`` granted has ended, however it ended (called exactly once,
        after ``settle`` if that was called): what it still holds is given back."""
        ...


class KeyedAccess:
    """Keys required. The key ring is refreshed from the key store every ``refresh_s`` in the
    background (a new or revoked key takes effect within that), so authentication is local."""

    def __init__(self, config: Callable[[], DuetConfig], keys: KeyStore, quotas: QuotaBook, telemetry: Telemetry,
                 *, quota_failure: str = "open", refresh_s: float = 1.0) -> None:
        self._config = config
        self.keys = keys
        self.quotas = quotas
        self._telemetry = telemetry
        self._fail_open = quota_failure == "open"
        self._refresh_s = refresh_s
        self._ring = KeyRing(())
        self._refresher: asyncio.Task[None] | None = None
        self._quota_down = False
        self._open = OpenRequests()
        self._lookups: dict[str, asyncio.Future[ApiKey | None]] = {}
        self._unknown = UnknownKeys()

    @property
    def settings(self) -> AccessSettings:
        return self._config().access

    async def start(self) -> None:
        try:
            await self.refresh_keys()
        except Exception as exc:  # Redis down at start: keys load in the background once it answers
            log.warning("loading API keys failed (%s: %s); retrying in the background", type(exc).__name__, exc)
        self._refresher = asyncio.create_task(self._refresh_forever(), name="duet-keys-refresh")

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)

    async def refresh_keys(self) -> None:
        self._ring = KeyRing(await self.keys.load())

    async def authenticate(self, secret: str | None, *, look_up: bool = True) -> ApiKey | None:
        key = self._ring.find(secret) if secret is not None else None
        if key is None and secret is not None and look_up:
            key = await self._look_up(hash_secret(secret))
        if key is None:
            self._telemetry.auth_failures.labels("missing" if secret is None else "invalid").inc()
            message = "Incorrect API key provided." if secret else "No API key provided (Authorization: Bearer ...)."
            raise AuthenticationFailed(message)
        return key

    async def authorize(self, key: ApiKey | None, model: str, ceiling: UsageCeiling | None = None) -> Grant:
        if key is None:
            raise AuthenticationFailed("No API key provided (Authorization: Bearer ...).")
        tier = self.settings.tiers.get(key.tier)
        if tier is None:
            raise PermissionDenied(f"The key's tier '{key.tier}' is not configured.", code="unknown_tier")
        variants = _allowed_variants(self._config(), tier, model)
        now = time.time()
        hold = None
        if ceiling is not None and tier.monthly_spend_limit_usd is not None:
            hold = Hold(key.id, month_of(now), ceiling.cost_usd(variants))
        if self._open.claim(key.id, tier.max_concurrent_requests):
            admission, held = await self._charge_claimed(key, tier, now, hold)
        else:  # refused before the quota book was asked: no headroom to tell
            admission, held = Admission(Refusal("max_concurrent_requests", 1.0)), None
        if (refusal := admission.refusal) is not None:
            self._telemetry.rate_limited.labels(refusal.limit).inc()
            raise RateLimited(
                f"Rate limit reached for key '{key.name}' on {_LIMIT_NAMES[refusal.limit]}: "
                f"tier '{tier.name}' allows {_limit_value(tier, refusal.limit)}.",
                param=refusal.limit, code="insufficient_quota" if refusal.limit == SPEND_LIMIT else None,
                retry_after_s=refusal.retry_after_s, headers=admission.headroom.headers(),
            )
        return Grant(key, tier, None if held is None else Reservation(held), admission.headroom)

    async def settle(self, grant: Grant, model: str, variant: Variant, task: str, outcome: Outcome,
                     receipt: Receipt = NO_RECEIPT) -> None:
        if grant.key is None:
            return
        served = outcome.status < 400
        tokens_in, tokens_out = (outcome.input_tokens, outcome.output_tokens) if served else (0, 0)
        cost = variant.price.cost_usd(tokens_in, tokens_out)
        charge = Charge(grant.key.id, model, variant.name, task, tokens_in, tokens_out, cost, receipt)
        await self.quotas.settle(charge, time.time(), grant.reservation.take() if grant.reservation else None)
        self._telemetry.key_usage(grant.key.name if self.settings.metrics_key_names else grant.key.id, charge)

    def release(self, grant: Grant) -> None:
        if grant.key is not None:
            self._open.release(grant.key.id)
        if grant.reservation is not None and (hold := grant.reservation.take()) is not None:
            self.quotas.release(hold)  # refused after admission, or cut short: it spent nothing

    async def _look_up(self, digest: str) -> ApiKey | None:
        """A key missing from the ring may be newer than the last load: ask the store once, so a
        key works on every gateway as soon as it is made. A key the store did not know is
        remembered as unknown for a while (bounded: ``UnknownKeys``), so repeating a bad key
        costs no round trip. Concurrent first uses of one key share one lookup (a burst must not
        become a stampede), and a store that cannot answer is a 503, not a verdict on the key."""
        if self._unknown.known_unknown(digest, time.monotonic()):
            return None
        pending = self._lookups.get(digest)
        if pending is None:
            pending = self._lookups[digest] = asyncio.ensure_future(self.keys.find(digest))
            pending.add_done_callback(lambda _: self._lookups.pop(digest, None))
        try:
            key = await asyncio.shield(pending)
        except (RedisError, OSError) as exc:
            log.warning("looking up an API key failed (%s: %s)", type(exc).__name__, exc)
            raise KeyStoreUnavailable("The API key could not be checked: the key store did not answer.",
                                      retry_after_s=1.0) from exc
        if key is None or key.revoked:
            self._unknown.add(digest, time.monotonic())
            return None
        self._ring = self._ring.with_key(key)
        return key

    async def _charge_claimed(self, key: ApiKey, tier: Tier, now: float, hold: Hold | None) -> tuple[Admission, Hold | None]:
        """``_charge`` for a request that holds a concurrency slot: the slot is given back when
        the request is refused (or the charge fails), as it never opens."""
        try:
            admission, held = await self._charge(key, tier, now, hold)
        except BaseException:
            self._open.release(key.id)
            raise
        if admission.refusal is not None:
            self._open.release(key.id)
        return admission, held

    async def _charge(self, key: ApiKey, tier: Tier, now: float, hold: Hold | None) -> tuple[Admission, Hold | None]:
        """The quota book's ruling, and the hold it took (None when it refused, or could not
        be asked: nothing was held then, and there is no headroom to tell)."""
        try:
            admission = await self.quotas.admit(key.id, tier, now, hold)
        except StoreUnavailable as exc:
            return Admission(self._quota_unavailable(exc)), None
        if self._quota_down:
            self._quota_down = False
            log.warning("quotas enforced again (redis reachable)")
        return admission, None if admission.refusal is not None else hold

    def _quota_unavailable(self, exc: StoreUnavailable) -> Refusal | None:
        decision = "open" if self._fail_open else "closed"
        self._telemetry.quota_unavailable.labels(decision).inc()
        if not self._quota_down:
            self._quota_down = True
            if self._fail_open:  # the operator's choice (state.quota_failure: open), said out loud
                log.error("quotas unavailable (%s): requests are NOT limited until redis answers "
                          "(state.quota_failure: open; duet_quota_unavailable counts them)", exc)
            else:
                log.warning("quotas unavailable (%s): refusing keyed requests until redis answers", exc)
        return None if self._fail_open else Refusal("quota_unavailable", 1.0)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_s)
            try:
                await self.refresh_keys()
            except Exception as exc:  # keep the last ring: an unreachable store must not lock everyone out
                log.warning("reloading API keys failed (%s: %s); keeping the last %d keys",
                            type(exc).__name__, exc, len(self._ring))


def _allowed_variants(config: DuetConfig, tier: Tier, requested: str) -> list[Variant]:
    """The variants the request may be served by; 403 when the tier does not allow the model,
    or the variant the client pinned."""
    name, _, pinned = requested.partition(":")
    model = config.models.get(name)
    if model is None:
        raise ModelNotFound(f"The model '{requested}' does not exist.", param="model")
    if tier.models is not None and name not in tier.models:
        raise PermissionDenied(f"Tier '{tier.name}' may not use model '{name}'.", param="model", code="model_not_allowed")
    variant = model.pins.get(requested) if pinned else None
    if variant is not None and tier.variants is not None and variant not in tier.variants:
        raise PermissionDenied(f"Tier '{tier.name}' may not use variant '{variant}'.", param="model", code="variant_not_allowed")
    return _variants_of(model, variant, tier)


def _variants_of(model: ModelSpec, pinned: str | None, tier: Tier) -> list[Variant]:
    if pinned is not None:
        return [model.variants[pinned]]
    return [v for name, v in model.variants.items() if tier.variants is None or name in tier.variants]


def _limit_value(tier: Tier, limit: str) -> str:
    value = tier.monthly_spend_limit_usd if limit == SPEND_LIMIT else getattr(tier, limit, None)
    return "no requests while quotas cannot be checked" if value is None else f"{value:g}"
