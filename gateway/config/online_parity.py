"""The ``online_parity`` section of duet.yaml: which share of each candidate variant's requests
is shadow-checked against the standard, per task type, and the sequential test's parameters
(gateway.parity). Absent: online parity is off."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from gateway.domain import Variant, VariantKind
from gateway.errors import ConfigError

ANY_TASK = "*"

Share = Annotated[float, Field(ge=0, le=1)]


class OnlineParitySection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    # Candidate variant ("model:variant") -> task type (or "*" for the rest) -> share of its requests
    # shadow-checked. For a shadow-stage variant: the share of the standard's requests mirrored to it.
    shadow_checks: dict[str, dict[str, Share]] = Field(min_length=1)
    confidence: Annotated[float, Field(gt=0.5, lt=1)] = 0.95
    tolerance: Annotated[float, Field(gt=0, lt=1)] = 0.05
    tolerances: dict[str, Annotated[float, Field(gt=0, lt=1)]] = Field(default_factory=dict)
    bet: Annotated[float, Field(gt=0, lt=1)] = 0.5
    max_in_flight: Annotated[int, Field(ge=1, le=64)] = 2
    # Seconds a sampled request waits for the standard's slack before the check is dropped.
    slack_wait_s: Annotated[float, Field(ge=0, le=60)] = 2.0
    keep_text: bool = False  # keep prompts and answers in the records (default: hashes only)
    records_kept: Annotated[int, Field(ge=0, le=100_000)] = 1000
    # Where the live table is written for `duet parity status` (relative to the config file).
    status_file: str = "duet-parity-status.json"


@dataclass(frozen=True, slots=True)
class OnlineParitySettings:
    enabled: bool = False
    shares: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    confidence: float = 0.95
    tolerance: float = 0.05
    tolerances: Mapping[str, float] = field(default_factory=dict)
    bet: float = 0.5
    max_in_flight: int = 2
    slack_wait_s: float = 2.0
    keep_text: bool = False
    records_kept: int = 1000
    status_file: str | None = None

    def share(self, variant_key: str, task: str) -> float:
        """The share of ``task``'s requests of ``variant_key`` that are shadow-checked, in [0, 1]."""
        tasks = self.shares.get(variant_key)
        if tasks is None:
            return 0.0
        return tasks.get(task, tasks.get(ANY_TASK, 0.0))

    def tolerance_for(self, task: str) -> float:
        return self.tolerances.get(task, self.tolerance)


OFF = OnlineParitySettings()


def build_online_parity(section: OnlineParitySection | None, variants: Mapping[str, Variant], tasks: set[str],
                        source: str) -> OnlineParitySettings:
    """``variants`` by key ("model:variant"). Raises ConfigError naming the path."""
    if section is None:
        return OFF
    path = "online_parity"
    for key, shares in section.shadow_checks.items():
        variant = variants.get(key)
        if variant is None:
            raise ConfigError(f"{path}.shadow_checks.{key}", f"unknown variant (known: {', '.join(sorted(variants))})")
        if variant.kind is VariantKind.FULL:
            raise ConfigError(f"{path}.shadow_checks.{key}", "a full variant is the standard the others are checked against")
        for task in shares:
            if task != ANY_TASK and task not in tasks:
                raise ConfigError(f"{path}.shadow_checks.{key}.{task}",
                                  f"unknown task type (routing.tasks defines {sorted(tasks)})")
    for task in section.tolerances:
        if task not in tasks:
            raise ConfigError(f"{path}.tolerances.{task}", f"unknown task type (routing.tasks defines {sorted(tasks)})")
    status = Path(section.status_file)
    if not status.is_absolute() and source != "<memory>":
        status = Path(source).parent / status
    return OnlineParitySettings(
        enabled=True, shares={k: dict(v) for k, v in section.shadow_checks.items()}, confidence=section.confidence,
        tolerance=section.tolerance, tolerances=dict(section.tolerances), bet=section.bet,
        max_in_flight=section.max_in_flight, slack_wait_s=section.slack_wait_s, keep_text=section.keep_text,
        records_kept=section.records_kept, status_file=None if source == "<memory>" else str(status),
    )
