"""The savings receipt of one request: the GPU time and GPU-dollars its serving variant used, and
what the same request (same task, input and output tokens) would have used on the model's
standard variant: the counterfactual a standard-only deployment would have paid.

Both sides come from one estimator, the step model of each variant's calibrated speed block
(``SpeedPrior.replica_s``: the prompt's prefill time plus the output tokens' shares of decode
steps at ``CHARGEBACK_BATCH`` sequences, the reference the per-token chargeback uses), times the
replica's GPUs. So a request served on standard has a counterfactual equal to its actual, and a
fast request's saving is the step model's difference between the two variants.

GPU-dollars: GPU-seconds x the variant's ``usd_per_gpu_hour`` when its config gives a
``replica_cost``; a variant priced per token instead is charged its listed price (and counts one
GPU per replica). Figures are integers (GPU-microseconds, nano-dollars), rounded once here, so
the ledger's sums are exact in any order, on any number of gateways.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gateway.cost import CHARGEBACK_BATCH
from gateway.domain import Variant, VariantKind

MICRO = 1_000_000  # GPU-microseconds per GPU-second
NANO = 1_000_000_000  # nano-dollars per dollar


@dataclass(frozen=True, slots=True)
class Receipt:
    """One request's line: ``gpu_us`` and ``nano_usd`` on the variant that served it,
    ``standard_gpu_us`` and ``standard_nano_usd`` had standard served it; ``fast``: a high-speed
    variant served it."""

    gpu_us: int = 0
    nano_usd: int = 0
    standard_gpu_us: int = 0
    standard_nano_usd: int = 0
    fast: bool = False

    @property
    def saved_nano_usd(self) -> int:
        """What serving it this way saved against standard (negative: it cost more)."""
        return self.standard_nano_usd - self.nano_usd

    def to_json(self) -> dict[str, object]:
        return {"gpu_seconds": self.gpu_us / MICRO, "gpu_usd": self.nano_usd / NANO,
                "standard_gpu_seconds": self.standard_gpu_us / MICRO, "standard_gpu_usd": self.standard_nano_usd / NANO,
                "fast": self.fast}


NO_RECEIPT = Receipt()


def standard_of(variants: Iterable[Variant]) -> Variant | None:
    """A model's standard variant: its full-precision one (None: it has none)."""
    return next((v for v in variants if v.kind is VariantKind.FULL), None)


def gpu_us(variant: Variant, task: str, input_tokens: int, output_tokens: int) -> int:
    """GPU-microseconds ``variant``'s step model gives a request of ``task`` with these tokens."""
    gpus = 1 if variant.replica_cost is None else variant.replica_cost.gpus
    return round(gpus * variant.speed.replica_s(input_tokens, output_tokens, task, CHARGEBACK_BATCH) * MICRO)


def nano_usd(variant: Variant, gpu_micro_s: int, input_tokens: int, output_tokens: int) -> int:
    """Nano-dollars of ``gpu_micro_s`` GPU-microseconds on ``variant`` (its per-token price when
    it has no replica cost)."""
    if variant.replica_cost is None:
        return round(variant.price.cost_usd(input_tokens, output_tokens) * NANO)
    return round(gpu_micro_s * variant.replica_cost.usd_per_gpu_hour / 3600 * NANO / MICRO)


def receipt_for(variant: Variant, standard: Variant | None, task: str, input_tokens: int, output_tokens: int) -> Receipt:
    """The receipt of a request ``variant`` served; ``standard`` is its model's standard variant
    (None: the model has none, so the request is its own counterfactual)."""
    actual_us = gpu_us(variant, task, input_tokens, output_tokens)
    actual_usd = nano_usd(variant, actual_us, input_tokens, output_tokens)
    if standard is None or standard.name == variant.name:
        return Receipt(actual_us, actual_usd, actual_us, actual_usd, variant.kind is not VariantKind.FULL)
    standard_us = gpu_us(standard, task, input_tokens, output_tokens)
    return Receipt(actual_us, actual_usd, standard_us, nano_usd(standard, standard_us, input_tokens, output_tokens),
                   variant.kind is not VariantKind.FULL)
