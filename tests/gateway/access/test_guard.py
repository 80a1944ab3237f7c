"""KeyedAccess and OpenAccess: 401/403/429 through the error hierarchy, tiers capping priority
and variants, settling into the ledger, and quotas failing open or closed."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from gateway.access.guard import Grant, KeyedAccess
from gateway.access.keys import bearer, new_key
from gateway.access.keystore import FileKeyStore
from gateway.access.ledger import Charge, UsageRow, month_of
from gateway.access.off import OpenAccess
from gateway.access.quotas import Admission, InMemoryQuotaBook
from gateway.access.reservation import Hold
from gateway.config import parse_config
from gateway.config.types import DuetConfig, Tier
from gateway.cost import Price
from gateway.domain import Priority, ReplicaState, Variant, VariantKind
from gateway.errors import AuthenticationFailed, PermissionDenied, RateLimited
from gateway.outcome import Outcome
from gateway.speed import SpeedPrior
from gateway.state.redis.link import StoreUnavailable
from gateway.telemetry import Telemetry

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
TIERS = {
    "two": {"requests_per_min": 2},
    "fast-only": {"variants": ["fast"], "priority": "batch"},
    "nothing": {"models": []},
}


def config(tmp: Path) -> DuetConfig:
    raw = yaml.safe_load(DEMO.read_text())
    raw["access"] = {"require_keys": True, "keys_file": str(tmp / "keys.json"), "tiers": TIERS}
    return parse_config(yaml.safe_dump(raw))


class DownQuotas(InMemoryQuotaBook):
    async def admit(self, key_id: str, tier: Tier, now: float, hold: Hold | None = None) -> Admission:
        raise StoreUnavailable("redis is down")


def access(tmp: Path, quotas: InMemoryQuotaBook | None = None, failure: str = "open") -> tuple[KeyedAccess, dict[str, str]]:
    cfg = config(tmp)
    store = FileKeyStore(cfg.access.keys_file)
    secrets = {}
    for tier in TIERS:
        secret, record = new_key(f"k-{tier}", tier, 1.0)
        asyncio.run(store.add(record))
        secrets[tier] = secret
    gate = KeyedAccess(lambda: cfg, store, quotas or InMemoryQuotaBook(), Telemetry(), quota_failure=failure)
    asyncio.run(gate.refresh_keys())
    return gate, secrets


def auth(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


async def admit(gate: KeyedAccess | OpenAccess, headers: dict[str, str], model: str) -> Grant:
    """Both steps, as the gate and the route take them: the key, then the request for ``model``."""
    return await gate.authorize(await gate.authenticate(bearer(headers)), model)


def test_keys_are_required_and_checked(tmp_path: Path) -> None:
    gate, secrets = access(tmp_path)
    with pytest.raises(AuthenticationFailed):
        asyncio.run(admit(gate, {}, "smollm2"))
    with pytest.raises(AuthenticationFailed):
        asyncio.run(admit(gate, auth("sk-duet-wrong"), "smollm2"))
    grant = asyncio.run(admit(gate, auth(secrets["two"]), "smollm2"))
    assert grant.key is not None and grant.key.name == "k-two"


def test_bad_keys_never_make_the_file_store_read_its_file_and_a_new_key_comes_with_the_refresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, secrets = access(tmp_path)
    store = gate.keys
    assert isinstance(store, FileKeyStore)
    reads = []
    real_read = store.read
    monkeypatch.setattr(store, "read", lambda: reads.append(1) or real_read())

    async def flood() -> int:
        refused = 0
        for i in range(2000):
            try:
                await gate.authenticate(f"sk-duet-bad-{i}")
            except AuthenticationFailed:
                refused += 1
        await gate.refresh_keys()  # the file has not changed: a stat, no read
        return refused

    assert asyncio.run(flood()) == 2000 and reads == []
    assert asyncio.run(admit(gate, auth(secrets["two"]), "smollm2")).key is not None
    # A key made by another process (duet keys create) works once the background refresh saw the file change.
    secret, record = new_key("late", "two", 2.0)
    asyncio.run(FileKeyStore(config(tmp_path).access.keys_file).add(record))
    with pytest.raises(AuthenticationFailed):
        asyncio.run(gate.authenticate(secret))
    asyncio.run(gate.refresh_keys())
    assert reads == [1] and asyncio.run(gate.authenticate(secret)) == record


def test_an_unknown_key_is_asked_of_the_store_once_then_refused_from_memory(tmp_path: Path) -> None:
    gate, _ = access(tmp_path)
    asked = []

    async def find(key_hash: str) -> None:
        asked.append(key_hash)

    gate.keys.find = find  # type: ignore[method-assign]

    async def repeat() -> None:
        for _ in range(100):
            with pytest.raises(AuthenticationFailed):
                await gate.authenticate("sk-duet-repeated")
        with pytest.raises(AuthenticationFailed):  # look_up=False: refused without asking
            await gate.authenticate("sk-duet-other", look_up=False)

    asyncio.run(repeat())
    assert len(asked) == 1


def test_the_limit_answers_429_naming_it_with_retry_after(tmp_path: Path) -> None:
    gate, secrets = access(tmp_path)

    async def three() -> tuple[list[Grant], RateLimited]:
        grants = [await admit(gate, auth(secrets["two"]), "smollm2") for _ in range(2)]
        with pytest.raises(RateLimited) as refused:
            await admit(gate, auth(secrets["two"]), "smollm2")
        return grants, refused.value

    grants, error = asyncio.run(three())
    assert error.param == "requests_per_min" and "requests per minute" in error.message
    assert error.retry_after_s is not None and 59 < error.retry_after_s <= 60
    # The admitted requests and the refusal tell the client its headroom (no tokens limit: no -tokens headers).
    assert [dict(g.headroom.headers())["x-ratelimit-remaining-requests"] for g in grants] == ["1", "0"]
    refused = dict(error.headers)
    assert set(refused) == {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"}
    assert refused["x-ratelimit-limit-requests"] == "2" and refused["x-ratelimit-remaining-requests"] == "0"


def test_tiers_without_limits_and_open_gateways_send_no_ratelimit_headers(tmp_path: Path) -> None:
    gate, secrets = access(tmp_path)
    assert asyncio.run(admit(gate, auth(secrets["fast-only"]), "smollm2")).headroom.headers() == ()
    assert asyncio.run(admit(OpenAccess(), {}, "smollm2")).headroom.headers() == ()


def test_tiers_restrict_models_and_pinned_variants(tmp_path: Path) -> None:
    gate, secrets = access(tmp_path)
    with pytest.raises(PermissionDenied):
        asyncio.run(admit(gate, auth(secrets["nothing"]), "smollm2"))
    with pytest.raises(PermissionDenied):
        asyncio.run(admit(gate, auth(secrets["fast-only"]), "smollm2:standard"))
    grant = asyncio.run(admit(gate, auth(secrets["fast-only"]), "smollm2:fast"))
    cfg = config(tmp_path)
    snapshot = {r.id: ReplicaState(r.id) for r in cfg.replicas}
    assert set(grant.visible(snapshot, cfg)) == {r.id for r in cfg.replicas if r.variant == "fast"}


@pytest.mark.parametrize(("claimed", "expected"), [
    (None, "batch"), ("interactive", "batch"), ("batch", "batch"), ("sheddable", "sheddable")])
def test_a_tier_caps_the_priority_class(claimed: str | None, expected: str) -> None:
    grant = Grant(None, Tier("t", priority=Priority.BATCH))
    headers = {} if claimed is None else {"x-duet-priority": claimed}
    grant.cap_priority(headers)
    assert headers["x-duet-priority"] == expected


def test_settle_charges_the_ledger_at_the_variant_price(tmp_path: Path) -> None:
    quotas = InMemoryQuotaBook()
    gate, secrets = access(tmp_path, quotas)

    async def main() -> Sequence[UsageRow]:
        grant = await admit(gate, auth(secrets["two"]), "smollm2")
        outcome = Outcome("smollm2/fast/0", True, 200, 0.01, 0.1, 1000, 500)
        fast = dataclasses.replace(config(tmp_path).models["smollm2"].variants["fast"], price=Price(1.0, 2.0))
        await gate.settle(grant, "smollm2", fast, "chat", outcome)
        failed = dataclasses.replace(outcome, ok=False, status=502)
        await gate.settle(grant, "smollm2", fast, "chat", failed)
        return await quotas.usage(month_of(time.time()))

    (row,) = asyncio.run(main())
    assert (row.requests, row.input_tokens, row.output_tokens) == (2, 1000, 500)  # a failure costs nothing
    assert row.cost_usd == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)


@pytest.mark.parametrize("names", [False, True])
def test_per_key_metrics_are_labelled_by_the_keys_id_unless_names_are_opted_in(tmp_path: Path, names: bool) -> None:
    gate, secrets = access(tmp_path)
    cfg = config(tmp_path)
    cfg = dataclasses.replace(cfg, access=dataclasses.replace(cfg.access, metrics_key_names=names))
    gate._config = lambda: cfg

    async def main() -> Grant:
        grant = await admit(gate, auth(secrets["two"]), "smollm2")
        await gate.settle(grant, "smollm2", cfg.models["smollm2"].variants["fast"], "chat",
                          Outcome("smollm2/fast/0", True, 200, 0.01, 0.1, 10, 5))
        return grant

    grant = asyncio.run(main())
    assert grant.key is not None
    labels = {s.labels["key"] for m in gate._telemetry.registry.collect() if m.name == "duet_key_requests" for s in m.samples}
    assert labels == {grant.key.name if names else grant.key.id}


@pytest.mark.parametrize(("failure", "admitted"), [("open", True), ("closed", False)])
def test_quotas_fail_open_or_closed_when_redis_is_down(tmp_path: Path, failure: str, admitted: bool) -> None:
    gate, secrets = access(tmp_path, DownQuotas(), failure)
    if admitted:
        assert asyncio.run(admit(gate, auth(secrets["two"]), "smollm2")).key is not None
    else:
        with pytest.raises(RateLimited) as refused:
            asyncio.run(admit(gate, auth(secrets["two"]), "smollm2"))
        assert refused.value.param == "quota_unavailable"


def test_keys_off_admits_everyone_and_charges_nothing() -> None:
    gate = OpenAccess()
    grant = asyncio.run(admit(gate, {}, "anything"))
    assert grant.key is None
    snapshot = {"r": ReplicaState("r")}
    assert grant.visible(snapshot, None) is snapshot  # type: ignore[arg-type]
    variant = Variant("m", "v", VariantKind.FULL, "m", 1024, True, Price(1, 1), SpeedPrior(1000, 0.01))
    asyncio.run(gate.settle(grant, "m", variant, "t", Outcome("r", True, 200, None, 0.1, 1, 1)))


def test_charge_entries_never_mix_parts() -> None:
    assert Charge("k", "m", "v", "t", 1, 2, 0.0).entry.split("\t") == ["k", "m", "v", "t"]


def test_a_burst_of_first_uses_shares_one_lookup_and_a_silent_store_is_503(tmp_path: Path) -> None:
    from redis.exceptions import TimeoutError as RedisTimeout

    from gateway.errors import KeyStoreUnavailable

    gate, _ = access(tmp_path)
    secret, record = new_key("late", "two", 2.0)
    store = gate.keys
    calls = []

    async def counted_find(key_hash: str):
        calls.append(key_hash)
        await asyncio.sleep(0.01)
        return record if key_hash == record.hash else None

    store.find = counted_find  # type: ignore[method-assign]

    async def burst():
        return await asyncio.gather(*(admit(gate, auth(secret), "smollm2") for _ in range(10)), return_exceptions=True)

    outcomes = asyncio.run(burst())
    # Every request was recognised (tier 'two' then admits 2 a minute and rate-limits the rest).
    assert sum(1 for o in outcomes if not isinstance(o, Exception) and o.key == record) == 2
    assert all(isinstance(o, RateLimited) for o in outcomes if isinstance(o, Exception))
    assert len(calls) == 1

    async def silent(key_hash: str):
        raise RedisTimeout("no answer")

    store.find = silent  # type: ignore[method-assign]
    with pytest.raises(KeyStoreUnavailable) as info:
        asyncio.run(admit(gate, auth("sk-duet-unknown"), "smollm2"))
    assert info.value.status == 503 and info.value.retry_after_s
