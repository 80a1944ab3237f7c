"""Plain-data builders for routing tests."""

from __future__ import annotations

from gateway.domain import (
    Candidate,
    Health,
    Price,
    Replica,
    ReplicaState,
    RequestProfile,
    SpeedPrior,
    Variant,
    VariantKind,
)

STANDARD = Variant(
    model="m", name="standard", kind=VariantKind.FULL, served_model_name="m-std", max_model_len=4096,
    supports_tools=True, price=Price(1.0, 4.0), speed=SpeedPrior(5000.0, 0.030, 0.03),
)
FAST = Variant(
    model="m", name="fast", kind=VariantKind.SPECULATIVE, served_model_name="m-fast", max_model_len=2048,
    supports_tools=False, price=Price(0.5, 2.0), speed=SpeedPrior(5000.0, 0.015, 0.15),
    allowed_tasks=frozenset({"chat", "coding"}),
)


def request(**overrides: object) -> RequestProfile:
    fields: dict[str, object] = dict(
        model="m", task="chat", task_source="default", input_tokens=100, max_output_tokens=None,
        expected_output_tokens=100, ttft_budget_ms=None, latency_budget_ms=None,
    )
    fields.update(overrides)
    return RequestProfile(**fields)  # type: ignore[arg-type]


def candidate(variant: Variant = STANDARD, index: int = 0, **state: object) -> Candidate:
    replica = Replica(f"m/{variant.name}/{index}", "m", variant.name, f"http://127.0.0.1:{9000 + index}")
    fields: dict[str, object] = {"health": Health.UP}
    fields.update(state)
    return Candidate(replica, variant, ReplicaState(replica.id, **fields))  # type: ignore[arg-type]
