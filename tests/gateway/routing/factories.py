"""Plain-data builders for routing tests."""

from __future__ import annotations

from gateway.cost import Price
from gateway.domain import (
    Budget,
    Candidate,
    Health,
    Replica,
    ReplicaState,
    RequestProfile,
    Variant,
    VariantKind,
)
from gateway.speed import SpeedPrior

STANDARD = Variant(
    model="m", name="standard", kind=VariantKind.FULL, served_model_name="m-std", max_model_len=4096,
    supports_tools=True, price=Price(1.0, 4.0), speed=SpeedPrior(5000.0, 0.030, 0.03),
)
FAST = Variant(
    model="m", name="fast", kind=VariantKind.SPECULATIVE, served_model_name="m-fast", max_model_len=2048,
    supports_tools=False, price=Price(0.5, 2.0), speed=SpeedPrior(5000.0, 0.015, 0.15),
    allowed_tasks=frozenset({"chat", "coding"}),
)


BUDGET_FIELDS = {"ttft_budget_ms": "ttft_ms", "latency_budget_ms": "latency_ms", "tpot_budget_ms": "tpot_ms"}


def request(**overrides: object) -> RequestProfile:
    """A profile; ``ttft_budget_ms``, ``latency_budget_ms`` and ``tpot_budget_ms`` build its Budget."""
    budget = {BUDGET_FIELDS[k]: overrides.pop(k) for k in list(overrides) if k in BUDGET_FIELDS}
    fields: dict[str, object] = dict(
        model="m", task="chat", task_source="default", input_tokens=100, max_output_tokens=None,
        expected_output_tokens=100, budget=Budget(**budget),  # type: ignore[arg-type]
    )
    fields.update(overrides)
    return RequestProfile(**fields)  # type: ignore[arg-type]


def candidate(variant: Variant = STANDARD, index: int = 0, **state: object) -> Candidate:
    replica = Replica(f"m/{variant.name}/{index}", "m", variant.name, f"http://127.0.0.1:{9000 + index}")
    fields: dict[str, object] = {"health": Health.UP}
    fields.update(state)
    return Candidate(replica, variant, ReplicaState(replica.id, **fields))  # type: ignore[arg-type]
