"""How wrong the router's speed priors are in a benchmark: a real gateway's priors are measured
(``duet calibrate``) and imperfect, so the replay and ``duet bench slo`` give the router the
simulator profile's prior off by a seeded error per variant, never the profile itself, and the
online learner has to earn its keep."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Speed prior fields that are times (the variant is slower when they grow); prefill is a rate.
_DECODE_TIMES = ("decode_s_per_token", "step_s_per_seq", "kv_read_s_per_token", "frontend_s", "draft_s_per_step",
                 "draft_s_per_seq")


@dataclass(frozen=True, slots=True)
class PriorError:
    """How wrong the router's speed priors are, per variant: its prefill rate is divided and its
    decode step times multiplied by their factor (1.3: the variant looks 30% slower than it is)."""

    factors: Mapping[str, tuple[float, float]]  # variant -> (prefill, decode)

    @classmethod
    def draw(cls, variants: Sequence[str], error: float, seed: int) -> PriorError:
        """Each variant off by ``error``, slower or faster (prefill and decode alike: a calibration
        on the wrong machine is off in one direction). Consecutive seeds go through every
        combination of directions, in a fixed shuffled order, so that a few seeds hold variants
        erring apart (their relative speed wrong: what choosing between them turns on) as well as
        together; a coin per variant had all of seeds 0-4 err together for standard and fast."""
        combinations = list(itertools.product((-1, 1), repeat=len(variants)))
        random.Random("prior-error").shuffle(combinations)
        signs = dict(zip(variants, combinations[seed % len(combinations)], strict=True))
        return cls({v: (1 + sign * error, 1 + sign * error) for v, sign in signs.items()})

    def apply(self, speed: Mapping[str, Any], variant: str) -> dict[str, Any]:
        prefill, decode = self.factors.get(variant, (1.0, 1.0))
        wrong = dict(speed)
        wrong["prefill_tokens_per_s"] = speed["prefill_tokens_per_s"] / prefill
        for key in _DECODE_TIMES:
            if key in speed:
                wrong[key] = speed[key] * decode
        return wrong
