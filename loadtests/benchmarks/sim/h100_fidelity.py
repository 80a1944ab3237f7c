"""The H100 profiles against published measurements: runs every published figure of
``serving/sim/h100_published.json`` through the simulator (``serving.sim.fidelity.published``),
writes ``docs/results/h100-fidelity.json``, from which ``python -m loadtests.sections`` renders the
fidelity table of docs/benchmarks.md (beside the "Simulator" section).

``--before REV`` also runs the profiles as they were at git revision REV (the column "before");
without it, the committed file's "before" column is kept.

    python -m loadtests.benchmarks.sim.h100_fidelity [--before REV]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from serving.sim.fidelity.published import PUBLISHED, PublishedPoint, load_points, load_rows, simulate
from serving.sim.parallel import TP_SIZES, allreduce_s_per_token, at_size, load_profile, sizes_that_fit, split_name
from serving.sim.profile import PROFILES_DIR, Profile

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "docs" / "results" / "h100-fidelity.json"
SEEDS = 3
CLOSE = 0.15  # a fitted point is close when sim / published is within this of 1
# Rows from here on were added after the refit the "before" column compares with (engine roles,
# issue #36): the profiles at that revision cannot run them (no KV shape or link), so their
# "before" stays empty.
FIRST_ROW_AFTER_REFIT = 15
METRIC_NAMES = {
    "tpot_median_ms": "median TPOT, ms", "e2e_median_s": "median e2e latency, s", "ttft_p99_s": "p99 TTFT, s",
    "throughput_req_s": "throughput, req/s", "output_tok_s": "output tokens/s", "speedup": "speed-up, output tok/s",
    "e2e_speedup": "speed-up, mean e2e", "tpot_mean_ms": "mean TPOT (ITL), ms", "ttft_mean_ms": "mean TTFT, ms",
}


def profile_versions(names: Sequence[str], directory: Path = PROFILES_DIR) -> dict[str, str]:
    """Each profile's file, by the first 12 hex digits of its sha256."""
    return {name: hashlib.sha256((directory / f"{name}.yaml").read_bytes()).hexdigest()[:12] for name in names}


def profiles_at(revision: str, names: Sequence[str], directory: Path) -> None:
    """Write the profiles ``names`` as they were at git ``revision`` into ``directory``."""
    for name in names:
        text = subprocess.run(["git", "show", f"{revision}:serving/sim/profiles/{name}.yaml"], cwd=REPO, check=True,
                              capture_output=True, text=True).stdout
        (directory / f"{name}.yaml").write_text(text)


def _loader(directory: Path | None) -> Any:
    if directory is None:
        return load_profile
    return lambda name: _load_from(directory, name)


def _load_from(directory: Path, name: str) -> Profile:
    base, size = split_name(name)  # a derived profile (``-tpN``): its file's profile at N GPUs
    profile = load_profile(str(directory / f"{base}.yaml"))
    return profile if size is None else at_size(profile, size)


def measure(points: Sequence[PublishedPoint], directory: Path | None = None, seeds: int = SEEDS) -> list[float]:
    """The simulator's value of every point, with the profiles in ``directory`` (None: shipped)."""
    load = _loader(directory)
    return [round(simulate(point, load, seeds), 4) for point in points]


def profile_names(points: Sequence[PublishedPoint]) -> list[str]:
    """The profile files the points run (a derived ``-tpN`` profile's is its base's)."""
    names = {p.scenario.profile for p in points} | {p.scenario.base for p in points if p.scenario.base}
    return sorted({split_name(name)[0] for name in names})


def result(points: Sequence[PublishedPoint], sims: Sequence[float], before: Sequence[float | None],
           before_revision: str | None, command: str) -> dict[str, Any]:
    """The result file: every point's scenario, published value, simulator before and after."""
    sources, rows = load_rows()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "git_head": head.strip(), "published": str(PUBLISHED.relative_to(REPO)), "seeds": SEEDS,
        "profiles": profile_versions(profile_names(points)), "before_revision": before_revision,
        "sources": sources, "rows": rows,
        "allreduce_share": {"profile": ALLREDUCE_SHARE_PROFILE, "sim": allreduce_shares(),
                            "published": ALLREDUCE_SHARE_PUBLISHED},
        "points": [{"row": p.row, "label": p.label, "fitted": p.fitted, "metric": p.metric,
                    "scenario": _scenario(p), "published": p.published, "before": b, "sim": s}
                   for p, s, b in zip(points, sims, before, strict=True)],
    }


# The published all-reduce share of FP8 TP4 and TP8 prefill (row 17's poster): TP4's is what the
# all-reduce bandwidth of serving/sim/parallel.py is fitted to, TP8's checks the ring model.
ALLREDUCE_SHARE_PROFILE = "h100-70b-fp8"
ALLREDUCE_SHARE_PUBLISHED = {"4": 0.255, "8": 0.351}


def allreduce_shares(name: str = ALLREDUCE_SHARE_PROFILE) -> dict[str, float]:
    """TP size -> the share of a prompt token's cost that is all-reduce, in the derived profiles."""
    profile = load_profile(name)
    return {str(n): round(allreduce_s_per_token(profile, n) / at_size(profile, n).step.prefill_s_per_token, 4)
            for n in sizes_that_fit(profile) if n in TP_SIZES}


def _scenario(point: PublishedPoint) -> dict[str, Any]:
    scenario = point.scenario
    data = {"profile": scenario.profile, "task": scenario.task, "input_tokens": scenario.input_tokens,
            "output_tokens": scenario.output_tokens, "prompts": scenario.prompts}
    if scenario.qps is not None:
        data["qps"] = scenario.qps
    if scenario.base is not None:
        data["base"] = scenario.base
    for name in ("concurrency", "warmup", "max_num_batched_tokens"):
        if getattr(scenario, name):
            data[name] = getattr(scenario, name)
    if scenario.disaggregated:
        data["disaggregated"] = True
    return data


def _ratio(value: float | None, published: float) -> float | None:
    return None if value is None else value / published


def _describe(scenario: Mapping[str, Any]) -> str:
    profile = scenario["profile"].removeprefix("h100-70b-")
    if scenario.get("disaggregated"):
        profile = f"{profile} 1P1D"
    if "max_num_batched_tokens" in scenario:
        profile = f"{profile}, chunk {scenario['max_num_batched_tokens']}"
    arrival = (f"{scenario['qps']:g} req/s x {scenario['prompts']}" if "qps" in scenario
               else f"{scenario['concurrency']} clients x {scenario['prompts']}" if "concurrency" in scenario
               else f"{scenario['prompts']} at once" if scenario["prompts"] > 1 else "one request")
    base = f" vs {scenario['base'].removeprefix('h100-70b-')}" if "base" in scenario else ""
    return f"{profile}{base}, {scenario['task']}, {scenario['input_tokens']}/{scenario['output_tokens']}, {arrival}"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def docs_section(data: Mapping[str, Any]) -> str:
    """The fidelity section of docs/benchmarks.md, from the result file alone."""
    sources = data["sources"]
    source_of = {row["row"]: row for row in data["rows"]}
    lines = [
        "### H100 profiles against published measurements (issue #16)", "",
        f"```sh\n{data['command']}\n```", "",
        f"Every published figure in `{data['published']}` run as a scenario through the engine model in virtual "
        f"time (mean of {data['seeds']} seeds; one profile = one 4x H100 TP4 replica, `-tpN`: the same derived at N GPUs; "
        "fixed lengths per scenario); "
        f"{data['date']}, repository at {data['git_head']}. *Before*: the profiles at {data['before_revision']} "
        "(datasheet arithmetic); *sim*: the shipped ones (file sha256 prefixes in the JSON). **Fitted** rows are the "
        "ones the profiles' values were chosen against; the others are checked against, or kept for reference "
        "(the notes say why).", "",
        "| row | source | published figure | scenario | metric | published | sim before | sim | sim / published |",
        "|---:|:--|:--|:--|:--|---:|---:|---:|---:|",
    ]
    for point in data["points"]:
        row = source_of[point["row"]]
        ratio = point["sim"] / point["published"]
        label = f"**{point['row']}**" if point["fitted"] else str(point["row"])
        lines.append(f"| {label} | {row['source']} | {point['label']} | {_describe(point['scenario'])} | "
                     f"{METRIC_NAMES[point['metric']]} | {_number(point['published'])} | {_number(point['before'])} | "
                     f"{_number(point['sim'])} | {ratio:.2f} |")
    lines += ["", "Sources:", ""]
    lines += [f"- `{key}`: {citation}" for key, citation in sources.items()]
    lines += ["", "Rows:", ""]
    lines += [f"- {row['row']}: {row['engine']}; {row['note']}" for row in data["rows"]]
    lines += ["", *fit_summary(data["points"]), *allreduce_lines(data.get("allreduce_share")), *LIMITS, ""]
    return "\n".join(lines)


# Where the fit cannot follow the sources, and why (no figures: those are the table's own).
LIMITS = (
    "- The step cost is linear in a step's tokens, with no saturation knee, and ShareGPT runs here at fixed mean "
    "lengths: the V1 ShareGPT latency row and the 1024 / 512 rows cannot be fitted together. The profiles follow "
    "the latter, whose lengths are stated.",
    "- The V0 engine (vLLM 0.6, and 0.7.2 for the FP8 and W4A16 cards) decoded slower per token at low load and "
    "scheduled differently under load; the profiles follow vLLM V1, so the V0 rows are reference, and the FP8 "
    "model card's rows come out somewhat fast. TensorRT-LLM's FP8 throughput stays above vLLM's.",
    "- The n-gram slow-down at high QPS of the 2024 blog (row 14 at QPS 8) was V0's scheduling; under V1 the "
    "speculative curves (rows 12-13) stay at or above break-even to batch 128, and the profiles follow them.",
    "- Engine roles (issue #36): rows 15-16 check the closed-loop and disaggregated scenarios without refitting "
    "anything. Per-request TPOT lands within 10-19% low; TTFT of 3,000-token prompts comes out at about half the "
    "published figure, which includes an early front end (HTTP, NATS, tokenizing) the engine model leaves out: a "
    "stated miss, not fitted away, since fitting it would move every fitted row. No published sweep of vLLM's "
    "chunk budget (max_num_batched_tokens) on H100 70B replicas was found: the chunk budget has no row; the "
    "engine follows vLLM V1's scheduler for it (tests/serving/sim/engine/test_roles.py). The KV link is stated, "
    "not fitted: 4 x 45 GB/s per TP4 replica against NVIDIA's ~49 GB/s per GPU measured NIC-to-GPU on DGX H100 "
    "(its MLPerf system notes), plus an assumed 2 ms per transfer.",
    "- Tensor parallelism (issue #37): TP1, TP2 and TP8 are derived from the TP4 profiles, not fitted; the rows that "
    "check them are few. TP8 against two TP4 replicas (row 17) lands close for FP8 and bf16 alike; the ring model "
    "puts more of TP8's prefill in all-reduce than the same poster profiled (NVSwitch reduces in the switch; the "
    "ring bound is pessimistic there). FP8 at TP2 decodes slower than NVIDIA NIM's published TP2 figures (row 18) "
    "and queues long prompts longer at concurrency 25: NIM's engine is likely TensorRT-LLM, faster than vLLM at "
    "TP4 too (row 11), so the miss is stated, not fitted away. No published TP1 W4A16 70B figure on H100 was "
    "found: TP1 is the least checked size. The FP8-over-bf16 pair of row 8, measured on two GPUs, cannot run at "
    "TP2 here: the memory check refuses bf16 on two GPUs at 0.9 utilisation.",
)


def allreduce_lines(share: Mapping[str, Any] | None) -> list[str]:
    """The derived profiles' all-reduce share of prefill against the published one (row 17's poster)."""
    if share is None:
        return []
    published = share["published"]
    parts = []
    for size, value in share["sim"].items():
        note = "" if size not in published else (
            f" (published {published[size]:.1%}, sim / published {value / published[size]:.2f})")
        parts.append(f"TP{size} {value:.1%}{note}")
    return [f"- Tensor parallelism (`serving/sim/parallel.py`): the all-reduce share of a prompt token's cost in "
            f"`{share['profile']}` derived at each size that fits: {'; '.join(parts)}. TP4's is what the all-reduce "
            "bandwidth is fitted to; TP8's checks the ring model (2 (n-1)/n of each message per GPU)."]


def _derived(scenario: Mapping[str, Any]) -> bool:
    return any(split_name(scenario.get(key) or "")[1] is not None for key in ("profile", "base"))


def fit_summary(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """Bullets on the fit's quality: how many points are close, before and after, and the worst."""
    def close(values: Sequence[float | None]) -> int:
        return sum(1 for v in values if v is not None and abs(v - 1) <= CLOSE)

    fitted = [p for p in points if p["fitted"]]
    others = [p for p in points if not p["fitted"]]
    derived = [p for p in points if _derived(p.get("scenario", {}))]
    lines = []
    for name, group in (("Fitted points", fitted), ("Other points", others),
                        ("Of those, points on a derived tensor-parallel profile (TP2, TP8)", derived)):
        after = [_ratio(p["sim"], p["published"]) for p in group]
        before = [_ratio(p["before"], p["published"]) for p in group]
        if not group:
            continue
        worst = max(group, key=lambda p: abs(_ratio(p["sim"], p["published"]) - 1))  # type: ignore[operator]
        earlier = "" if all(b is None for b in before) else f" (before the refit: {close(before)})"
        lines.append(f"- {name}: {close(after)} of {len(group)} within {CLOSE:.0%} of the published value"
                     f"{earlier}; furthest: row {worst['row']}, {worst['label']} "
                     f"(sim / published {_ratio(worst['sim'], worst['published']):.2f}).")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", metavar="REV", help="also run the profiles as they were at this git revision")
    args = parser.parse_args(argv)
    points = load_points()
    sims = measure(points)
    before: list[float | None]
    if args.before:
        with tempfile.TemporaryDirectory() as directory:
            profiles_at(args.before, profile_names(points), Path(directory))
            before = list(measure(points, Path(directory)))
        revision = args.before
    else:
        old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"points": [], "before_revision": None}
        # by row, label and metric: one label may carry two metrics (row 7's all-at-once run)
        kept = {(p["row"], p["label"], p["metric"]): p["before"] for p in old["points"]}
        before, revision = [kept.get((p.row, p.label, p.metric)) for p in points], old["before_revision"]
    command = "python -m loadtests.benchmarks.sim.h100_fidelity" + (f" --before {args.before}" if args.before else "")
    RESULTS.write_text(json.dumps(result(points, sims, before, revision, command), indent=1) + "\n")
    print(f"wrote {RESULTS}; `python -m loadtests.sections` renders the docs from it")
    print(docs_section(json.loads(RESULTS.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
