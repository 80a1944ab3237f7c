"""How closely the h100-70b profiles reproduce published measurements: each published figure
(``serving/sim/h100_published.json``, with the profiles) as a scenario run through the engine model in
virtual time, and the simulator's value against the published one.

A scenario is one replica (one profile), fixed prompt and output lengths, and either Poisson
arrivals at ``qps``, a closed loop of ``concurrency`` clients, or every prompt at once. Metrics
are the ones the sources report (median TPOT, throughput, p99 TTFT, ...); a speed-up runs the
same scenario on ``base`` too. A scenario may set the replica's chunk budget
(``max_num_batched_tokens``) or serve through a prefill and a decode replica of the profile
(``disaggregated``, closed loop only: ``clients``).
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, SimRequest
from serving.sim.fidelity import clients
from serving.sim.parallel import load_profile
from serving.sim.profile import Profile

# Package data: the h100-70b profiles are fitted to it, so it ships with them.
PUBLISHED = Path(__file__).resolve().parents[1] / "h100_published.json"

ProfileLoader = Callable[[str], Profile]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One replica of ``profile`` serving ``prompts`` requests of fixed lengths, arriving as a
    Poisson process at ``qps`` (None: all at once); ``base`` is the profile a speed-up is over."""

    profile: str
    task: str
    input_tokens: int
    output_tokens: int
    prompts: int
    qps: float | None = None
    base: str | None = None
    concurrency: int | None = None
    warmup: int = 0  # closed loop: requests sent first and left out of the metrics (genai-perf's warm-up)
    max_num_batched_tokens: int | None = None
    disaggregated: bool = False


@dataclass(frozen=True, slots=True)
class PublishedPoint:
    """A published figure: which row of the sources it comes from, what it measured, its value,
    and whether the profiles were fitted to it (else it is checked, or kept for reference)."""

    row: int
    label: str
    scenario: Scenario
    metric: str
    published: float
    fitted: bool


def load_points(path: Path = PUBLISHED) -> list[PublishedPoint]:
    """Every published figure in ``path``, in file order."""
    data = json.loads(path.read_text())
    return [PublishedPoint(p["row"], p["label"], Scenario(**p["scenario"]), p["metric"], p["published"], p["fitted"])
            for p in data["points"]]


def load_rows(path: Path = PUBLISHED) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The sources (key -> citation) and the rows (number, source key, engine, fitted, note)."""
    data = json.loads(path.read_text())
    return data["sources"], data["rows"]


def serve(profile: Profile, scenario: Scenario, seed: int) -> list[Finished]:
    """Run ``scenario``'s requests through a fresh engine of ``profile`` (or a prefill and a
    decode engine); their finishes."""
    profile = profile.with_engine(max_num_batched_tokens=scenario.max_num_batched_tokens)
    if scenario.concurrency is not None:
        return _serve_closed_loop(profile, scenario, seed)
    if scenario.disaggregated:
        raise ValueError("a disaggregated scenario runs a closed loop: give its concurrency")
    engine = Engine(profile, seed=seed, token_events=False)
    arrivals = random.Random(f"arrivals:{seed}")
    now, done = 0.0, []
    for i in range(scenario.prompts):
        if scenario.qps is not None and i:
            now += arrivals.expovariate(scenario.qps)
        done += _finished(engine.advance(now))
        engine.submit(SimRequest(f"r{i}", scenario.input_tokens, scenario.output_tokens, ignore_eos=True,
                                 task=scenario.task), now)
    while (at := engine.next_event_time()) is not None:
        done += _finished(engine.advance(at))
    return done


def _serve_closed_loop(profile: Profile, scenario: Scenario, seed: int) -> list[Finished]:
    def make(i: int) -> SimRequest:
        return SimRequest(f"r{i}", scenario.input_tokens, scenario.output_tokens, ignore_eos=True, task=scenario.task)

    assert scenario.concurrency is not None
    sent = scenario.warmup + scenario.prompts
    if not scenario.disaggregated:
        engine = Engine(profile, seed=seed, token_events=False)
        done = clients.closed_loop(engine, make, sent, scenario.concurrency)
    else:
        prefill = Engine(profile.with_engine(role="prefill"), seed=seed, token_events=False)
        decode = Engine(profile.with_engine(role="decode"), seed=seed + 1, token_events=False)
        done = clients.closed_loop_pd(prefill, decode, make, sent, scenario.concurrency)
    return done[scenario.warmup:]  # in order of finishing, as a warm-up's requests leave first


def _finished(events: Sequence[object]) -> list[Finished]:
    return [e for e in events if isinstance(e, Finished)]


def _tpot_s(done: Finished) -> float:
    return (done.e2e_s - (done.ttft_s or 0.0)) / max(1, done.output_tokens - 1)


def _makespan_s(done: Sequence[Finished]) -> float:
    """From the first arrival (time 0) to the last finish."""
    return max(d.time for d in done)


def _p99(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


# metric -> its value from one run's finishes (units as the metric's name says)
METRICS: dict[str, Callable[[Sequence[Finished]], float]] = {
    "tpot_median_ms": lambda done: 1000 * statistics.median(_tpot_s(d) for d in done),
    "tpot_mean_ms": lambda done: 1000 * statistics.fmean(_tpot_s(d) for d in done),
    "ttft_mean_ms": lambda done: 1000 * statistics.fmean(d.ttft_s or 0.0 for d in done),
    "e2e_median_s": lambda done: statistics.median(d.e2e_s for d in done),
    "e2e_mean_s": lambda done: statistics.fmean(d.e2e_s for d in done),
    "ttft_p99_s": lambda done: _p99([d.ttft_s or 0.0 for d in done]),
    "throughput_req_s": lambda done: len(done) / _makespan_s(done),
    "output_tok_s": lambda done: sum(d.output_tokens for d in done) / _makespan_s(done),
}
# speed-up metric -> the metric compared, and whether larger is faster
SPEEDUPS = {"speedup": ("output_tok_s", True), "e2e_speedup": ("e2e_mean_s", False)}


def simulate(point: PublishedPoint, load: ProfileLoader = load_profile, seeds: int = 3) -> float:
    """The simulator's value of ``point``'s metric: the mean over ``seeds`` runs (jitter,
    arrivals and draft acceptance vary by seed)."""
    scenario = point.scenario
    if point.metric in SPEEDUPS:
        if scenario.base is None:
            raise ValueError(f"row {point.row} ({point.label}): a speed-up needs a base profile")
        metric, larger_is_faster = SPEEDUPS[point.metric]
        value = _mean_value(load(scenario.profile), scenario, metric, seeds)
        base = _mean_value(load(scenario.base), scenario, metric, seeds)
        return value / base if larger_is_faster else base / value
    return _mean_value(load(scenario.profile), scenario, point.metric, seeds)


def _mean_value(profile: Profile, scenario: Scenario, metric: str, seeds: int) -> float:
    measure = METRICS.get(metric)
    if measure is None:
        raise ValueError(f"unknown metric '{metric}' (known: {', '.join([*METRICS, *SPEEDUPS])})")
    return statistics.fmean(measure(serve(profile, scenario, seed)) for seed in range(seeds))
