"""SLA constraints in vLLM's ``vllm bench sweep serve_sla`` language, so users bring the files they
have: ``{"p99_e2el_ms": "<=500", "p90_ttft_ms": "<300"}``, or a list of such objects (vLLM's
``--sla-params`` file: each object is one set of constraints, searched on its own).

Keys are vLLM bench serve's result names, ``<stat>_<metric>_ms``: stat ``mean``, ``median``,
``std`` or ``p<N>`` (``p99``, ``p99.9``); metric ``ttft``, ``tpot`` or ``e2el``. vLLM's ``itl``
is refused: the replay keeps no per-token times. Duet adds ``good_fraction`` (the share of
requests that met their own budgets on a variant parity allows), bounded from below (``>=0.99``).
A latency takes only an upper bound (``<=``, ``<``): the search assumes a constraint that load
can only break.

Unlike vLLM bench serve, which leaves failed requests out of its statistics, a refused or failed
request counts here as infinitely slow: a policy must not meet an SLA by refusing traffic.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.fleet.replay.request_result import RequestResult

GOOD = "good_fraction"
_LATENCY = re.compile(r"^(mean|median|std|p(\d+(?:\.\d+)?))_(ttft|tpot|itl|e2el)_ms$")
_UPPER = {"<=": lambda actual, target: actual <= target, "<": lambda actual, target: actual < target}
_LOWER = {">=": lambda actual, target: actual >= target, ">": lambda actual, target: actual > target}


class SlaError(ValueError):
    """A constraint file or constraint that cannot be read; the message names its path."""


@dataclass(frozen=True, slots=True)
class Constraint:
    """``key op target``, e.g. ``p99_e2el_ms <= 500`` or ``good_fraction >= 0.99``."""

    key: str
    op: str
    target: float

    def holds(self, actual: float) -> bool:
        return bool((_UPPER | _LOWER)[self.op](actual, self.target))

    def margin(self, actual: float) -> float:
        """How far past its bound ``actual`` is (> 0: broken, <= 0: within; a strict bound met
        exactly is broken though its margin is 0): good share in points of share, latencies
        relative to their target."""
        if self.op in _LOWER:
            return self.target - actual
        return math.inf if math.isinf(actual) else (actual - self.target) / self.target

    @property
    def text(self) -> str:
        return f"{self.key}{self.op}{self.target:g}"


@dataclass(frozen=True, slots=True)
class ConstraintSet:
    """Constraints that must all hold at a load (one object of a vLLM SLA file)."""

    constraints: tuple[Constraint, ...]

    @property
    def text(self) -> str:
        return ", ".join(c.text for c in self.constraints)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.constraints)

    def holds(self, metrics: Mapping[str, float]) -> bool:
        return all(c.holds(metrics[c.key]) for c in self.constraints)

    def margin(self, metrics: Mapping[str, float]) -> float:
        """The binding constraint's margin (the largest)."""
        return max(c.margin(metrics[c.key]) for c in self.constraints)


def good_share_at_least(level: float) -> ConstraintSet:
    """Duet's own default: at least ``level`` of requests met their budgets."""
    return ConstraintSet((Constraint(GOOD, ">=", level),))


DEFAULT_LEVELS = (0.99, 0.95)


def parse(data: Any, source: str = "sla") -> tuple[ConstraintSet, ...]:
    """One object of constraints or a list of them (vLLM's file) -> constraint sets. Errors name
    the path: ``sla.json[1].p99_e2el_ms: ...``."""
    records = data if isinstance(data, list) else [data]
    if not records:
        raise SlaError(f"{source}: no constraint sets")
    paths = [f"{source}[{i}]" if isinstance(data, list) else source for i in range(len(records))]
    return tuple(_parse_set(record, path) for record, path in zip(records, paths, strict=True))


def load(path: str) -> tuple[ConstraintSet, ...]:
    """A constraint file (JSON) -> constraint sets."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise SlaError(f"{path}: cannot read constraints: {exc}") from exc
    return parse(data, path)


def _parse_set(record: Any, path: str) -> ConstraintSet:
    if not isinstance(record, dict) or not record:
        raise SlaError(f"{path}: expected an object of constraints such as {{\"p99_e2el_ms\": \"<=500\"}}")
    return ConstraintSet(tuple(_parse_one(str(key), value, f"{path}.{key}") for key, value in record.items()))


def _parse_one(key: str, value: Any, path: str) -> Constraint:
    if not isinstance(value, str):
        raise SlaError(f"{path}: expected a string such as \"<=500\", got {value!r}")
    text = value.replace(" ", "")
    ops = _LOWER if key == GOOD else _UPPER
    match = _LATENCY.match(key)
    if key != GOOD and match is None:
        raise SlaError(f"{path}: unknown metric (known: {GOOD}, or <mean|median|std|pN>_<ttft|tpot|e2el>_ms)")
    if match is not None and match.group(3) == "itl":
        raise SlaError(f"{path}: the replay keeps no per-token times, so no inter-token latency; use tpot")
    if match is not None and match.group(2) is not None and not 0 < float(match.group(2)) <= 100:
        raise SlaError(f"{path}: a percentile must be in (0, 100]")
    op = next((o for o in sorted(_UPPER | _LOWER, key=len, reverse=True) if text.startswith(o)), None)
    if op not in ops:
        kind = "a share bounded from below" if key == GOOD else "a latency bounded from above (load only breaks it)"
        raise SlaError(f"{path}: {value!r}: {key} is {kind}: use {' or '.join(ops)}")
    try:
        target = float(text.removeprefix(op))
    except ValueError:
        raise SlaError(f"{path}: {value!r}: not a number after {op!r}") from None
    if not math.isfinite(target) or target < 0:
        raise SlaError(f"{path}: {value!r}: the target must be a finite number >= 0")
    return Constraint(key, op, target)


def measure(keys: Sequence[str], results: Sequence[RequestResult], good_fraction: float) -> dict[str, float]:
    """The value of each key over one replay's requests, in ms (a refused request: infinitely
    slow; percentiles interpolated linearly, as numpy's and so vLLM's)."""
    values = {"ttft": [_ms(r.ttft_s, r) for r in results], "e2el": [_ms(r.e2e_s, r) for r in results],
              "tpot": [_ms(r.tpot_s, r) for r in results if r.status != "ok" or r.output_tokens >= 2]}
    measured: dict[str, float] = {}
    for key in keys:
        if key == GOOD:
            measured[key] = good_fraction
            continue
        match = _LATENCY.match(key)
        assert match is not None, key  # parse() let only these through
        measured[key] = _statistic(match.group(1), sorted(values[match.group(3)]))
    return measured


def _ms(seconds: float | None, result: RequestResult) -> float:
    return math.inf if result.status != "ok" or seconds is None else 1e3 * seconds


def _statistic(stat: str, ordered: list[float]) -> float:
    if not ordered:
        return math.inf
    if stat == "mean":
        return math.inf if math.isinf(ordered[-1]) else statistics.fmean(ordered)
    if stat == "std":
        return math.inf if math.isinf(ordered[-1]) else statistics.pstdev(ordered)
    return percentile(ordered, 50.0 if stat == "median" else float(stat[1:]))


def percentile(ordered: Sequence[float], q: float) -> float:
    """numpy's default (linear) percentile of sorted values, infinities allowed."""
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    if fraction == 0 or ordered[low] == ordered[high]:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * fraction
