"""The savings report from ledger rows: sums per key and tenant, shares, the months of a period
(and the errors that name the parameter), and parity's standing per fast variant and task."""

from __future__ import annotations

import pytest

from gateway.access.ledger import UsageRow
from gateway.access.receipts.savings import NO_TENANT, Savings, Verdict, by_key, by_tenant, months_between, total, verdicts
from gateway.cost import Price
from gateway.domain import Variant, VariantKind
from gateway.errors import InvalidRequest
from gateway.speed import SpeedPrior

ROWS = [
    UsageRow("k1", "m", "fast", "chat", 3, gpu_us=300, nano_usd=30, standard_gpu_us=900, standard_nano_usd=90,
             fast_requests=3),
    UsageRow("k1", "m", "standard", "code", 1, gpu_us=500, nano_usd=50, standard_gpu_us=500, standard_nano_usd=50),
    UsageRow("k2", "m", "fast", "chat", 4, gpu_us=100, nano_usd=10, standard_gpu_us=400, standard_nano_usd=40,
             fast_requests=4),
    UsageRow("k3", "m", "standard", "chat", 2, gpu_us=200, nano_usd=20, standard_gpu_us=200, standard_nano_usd=20),
]


def test_sums_per_key_and_per_tenant() -> None:
    keys = by_key(ROWS)
    assert keys["k1"] == Savings(4, 3, 800, 80, 1400, 140)
    tenants = by_tenant(keys, {"k1": "acme", "k2": "acme"})
    assert tenants == {"acme": Savings(8, 7, 900, 90, 1800, 180), NO_TENANT: Savings(2, 0, 200, 20, 200, 20)}
    assert total(tenants.values()) == total(keys.values()) == Savings(10, 7, 1100, 110, 2000, 200)


def test_the_report_says_saved_and_served_fast_as_shares() -> None:
    report = Savings(10, 7, 1100, 110, 2000, 200).to_json()
    assert report["fast_share"] == 0.7
    assert report["saved_usd"] == pytest.approx(90e-9) and report["saved_share"] == 0.45
    assert report["gpu_seconds"] == 0.0011 and report["standard_gpu_seconds"] == 0.002
    assert Savings().to_json()["saved_share"] == 0.0  # nothing served: no division


@pytest.mark.parametrize(("since", "until", "months"), [
    ("2026-12", "2026-12", ["2026-12"]),
    ("2026-11", "2027-02", ["2026-11", "2026-12", "2027-01", "2027-02"]),
])
def test_a_period_is_whole_months(since: str, until: str, months: list[str]) -> None:
    assert months_between(since, until) == months


@pytest.mark.parametrize(("since", "until", "param"), [
    ("2026-13", "2026-12", "since"), ("2026-12", "26-12", "month"), ("2027-01", "2026-12", "since"),
])
def test_a_bad_period_names_its_parameter(since: str, until: str, param: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        months_between(since, until)
    assert raised.value.param == param


def variant(name: str, kind: VariantKind, allowed: frozenset[str] | None) -> Variant:
    return Variant("m", name, kind, name, 4096, True, Price(1, 1), SpeedPrior(1000, 0.01), allowed_tasks=allowed)


def test_parity_standing_per_fast_variant_and_task() -> None:
    variants = [variant("standard", VariantKind.FULL, None), variant("fast", VariantKind.QUANTIZED, frozenset({"chat"}))]
    online = {("m:fast", "code"): ("loss", 40), ("m:fast", "chat"): ("undecided", 12)}
    assert verdicts(variants, ["chat", "code", "math"], online, {}) == [
        Verdict("m:fast", "chat", "kept", "undecided", 12),
        Verdict("m:fast", "code", "revoked", "loss", 40),
        Verdict("m:fast", "math", "not allowed"),
    ]


def test_a_revision_in_the_period_is_what_the_report_says_whatever_the_policy_is_now() -> None:
    """Revoked in the period and restored offline since: the period saw it revoked. Opened in
    the period: opened. Revisions come from the shared journal, so from any gateway."""
    variants = [variant("fast", VariantKind.QUANTIZED, frozenset({"chat", "math"}))]
    revised = {("m:fast", "chat"): (False, 100.0), ("m:fast", "math"): (True, 200.0)}
    assert verdicts(variants, ["chat", "math"], {}, revised) == [
        Verdict("m:fast", "chat", "revoked", revised_at=100.0),
        Verdict("m:fast", "math", "opened", revised_at=200.0),
    ]
