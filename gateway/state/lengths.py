"""How long answers run, learned from finished requests: per (model, task), a small histogram of
output lengths from which the router reads a quantile instead of trusting one configured number.

A real client does not say how long its answer will be; ``max_tokens`` is only a ceiling, often
10x the typical answer. The gateway sees every answer's length when the request finishes, so it
keeps their distribution per task and plans with it (``gateway.flow.classify``).

Bounded memory: the histogram's buckets are log-spaced (each ``_RATIO`` wider than the last, so a
quantile read from it is within ~9% of the samples' own), ``BUCKETS`` of them from 1 token up,
one row per (model, task) the config defines. Recent answers count more: each sample weighs
``2 ** (1 / half_life)`` times the one before, so after ``half_life_samples`` answers an old one
counts half (a task whose answers get longer is followed, not averaged away).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

_RATIO = 2 ** 0.25
BUCKETS = 72  # 2 ** (72 / 4) = 262,144 tokens: past any context window served today
# Weights grow by the decay factor per sample; they are scaled back down before floats lose precision.
RESCALE_ABOVE = 1e100


class LengthEstimates(Protocol):
    """What routing reads: the expected output length of a task's requests, or None while too
    few have finished to say."""

    def expected(self, model: str, task: str) -> int | None: ...


class NoEstimates:
    """Knows nothing: every task falls back to its configured typical length."""

    def expected(self, model: str, task: str) -> int | None:
        return None


NO_ESTIMATES = NoEstimates()  # stateless: one is enough


@dataclass(slots=True)
class LengthHistogram:
    """One (model, task)'s output lengths. ``samples`` counts every answer ever added."""

    half_life_samples: float = 500.0
    weights: list[float] = field(default_factory=lambda: [0.0] * BUCKETS)
    total: float = 0.0
    samples: int = 0
    _next_weight: float = 1.0

    def add(self, tokens: int) -> None:
        """Fold in one finished answer's output tokens (at least 1)."""
        self.weights[bucket(tokens)] += self._next_weight
        self.total += self._next_weight
        self.samples += 1
        self._next_weight *= 2 ** (1 / self.half_life_samples)
        if self._next_weight > RESCALE_ABOVE:
            scale = 1 / self._next_weight
            self.weights = [w * scale for w in self.weights]
            self.total *= scale
            self._next_weight = 1.0

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (0 < q < 1) of recent output lengths in tokens, interpolated
        geometrically inside its bucket; None before the first sample."""
        if self.total <= 0:
            return None
        target, seen = q * self.total, 0.0
        for index, weight in enumerate(self.weights):
            if weight > 0 and seen + weight >= target:
                inside = (target - seen) / weight
                return float(_RATIO ** (index + inside))
            seen += weight
        return float(_RATIO ** BUCKETS)

    @property
    def next_weight(self) -> float:
        """The weight the next sample gets (a shared copy carries it, see ``gateway.state.redis.lengths``)."""
        return self._next_weight


def bucket(tokens: int) -> int:
    """Bucket ``i`` holds lengths in [RATIO ** i, RATIO ** (i + 1))."""
    return min(BUCKETS - 1, int(math.log(max(1, tokens), _RATIO)))


@dataclass(frozen=True, slots=True)
class LengthSettings:
    """``quantile``: which quantile of recent answers a request is planned with (the median:
    half run longer, half shorter). ``min_samples``: answers needed before the estimate replaces
    the task's configured typical length. ``half_life_samples``: see the module docstring."""

    quantile: float = 0.5
    min_samples: int = 20
    half_life_samples: float = 500.0


class OutputLengths:
    """Every (model, task)'s histogram in one process; ``LengthEstimates`` for routing."""

    def __init__(self, settings: LengthSettings | None = None) -> None:
        self._settings = settings or LengthSettings()
        self._histograms: dict[tuple[str, str], LengthHistogram] = {}
        self._expected: dict[tuple[str, str], int] = {}  # read per request, recomputed per sample

    def add(self, model: str, task: str, tokens: int) -> None:
        key = (model, task)
        histogram = self._histograms.get(key)
        if histogram is None:
            histogram = self._histograms[key] = LengthHistogram(self._settings.half_life_samples)
        histogram.add(tokens)
        self._expected.pop(key, None)

    def expected(self, model: str, task: str) -> int | None:
        key = (model, task)
        cached = self._expected.get(key)
        if cached is not None:
            return cached
        histogram = self._histograms.get(key)
        if histogram is None or histogram.samples < self._settings.min_samples:
            return None
        value = histogram.quantile(self._settings.quantile)
        assert value is not None
        self._expected[key] = estimate = max(1, round(value))
        return estimate

    def histogram(self, model: str, task: str) -> LengthHistogram | None:
        return self._histograms.get((model, task))

    def replace(self, model: str, task: str, histogram: LengthHistogram) -> None:
        """Take ``histogram`` as the task's (a shared copy read from Redis)."""
        self._histograms[(model, task)] = histogram
        self._expected.pop((model, task), None)
