"""No evidence, no traffic: the rule ``duet check`` adds to a config that loads.

A high-speed variant (not ``kind: full``) that takes live traffic (its rollout stage is not
``shadow``) must say where its allowed task types come from: a parity report
(``allowed_tasks_source`` naming the report's sha256, as ``duet parity --write-policy`` and
``duet up`` write it), or an operator's override (``allowed_tasks_override: {by, reason}``).
Without either, ``allowed_tasks`` is a claim nobody measured: written by hand, or left out (which
means every task type). The gateway itself still serves such a config (a reload must not fail on
it); ``duet check`` is where it is refused, before it is deployed.
"""

from __future__ import annotations

import re

from gateway.config.schema import ConfigFile, VariantSection
from gateway.errors import ConfigError

# What a parity report's reference looks like in allowed_tasks_source (its content hash).
REPORT_REFERENCE = re.compile(r"sha256:[0-9a-f]{64}")


def unproven(parsed: ConfigFile) -> list[ConfigError]:
    """One error per variant whose allowed task types no report or override backs."""
    return [ConfigError(f"models.{model}.variants.{name}.allowed_tasks", _why(variant))
            for model, section in parsed.models.items() for name, variant in section.variants.items()
            if not _backed(variant)]


def _backed(variant: VariantSection) -> bool:
    if variant.kind == "full" or variant.rollout.stage == "shadow" or variant.allowed_tasks_override is not None:
        return True
    return variant.allowed_tasks_source is not None and REPORT_REFERENCE.search(variant.allowed_tasks_source) is not None


def _why(variant: VariantSection) -> str:
    claim = ("written by hand" if "allowed_tasks" in variant.model_fields_set
             else "left out, so every task type is allowed")
    return (f"{claim}, with no parity report behind it: run `duet parity ... --write-policy FILE --variant NAME`, "
            "or mark it as an operator's decision with allowed_tasks_override: {by: ..., reason: ...}, "
            "or start the variant in rollout: {stage: shadow}")
