"""``duet bench slo``: replay traces through a gateway with locust, headless, per policy and rate,
and write the report folder.

One run = fresh replicas (simulated unless given) + a gateway with one policy + ``locust --headless
--duet-shape trace``; its folder holds locust's CSVs and HTML, the per-request records, the
gateway's and replicas' /metrics at the end, the host's load around the run (``host.json``),
``summary.json`` and the plots. A comparison repeats
that for each policy at each rate and adds one table and one plot.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.fleet.workload.traces import ATTRIBUTION, TraceWindow, replay_arrivals, task_traces
from gateway.fleet.world.policies import policy_name
from gateway.fleet.world.prior_error import PriorError
from gateway.fleet.world.replica_sets import ReplicaSet, prices, variant_map
from loadtests.benchmarks.slo.summary import load_records, run_summary, unfinished_records
from loadtests.launch.stack import StackError, gateway, replicas, scrape, warm_up
from loadtests.scoring import plots
from loadtests.scoring.slo import Slo, max_rate_with_attainment

REPO = Path(__file__).resolve().parents[3]
LOCUSTFILE = REPO / "loadtests" / "load" / "locustfile.py"


@dataclass(frozen=True, slots=True)
class BenchSettings:
    """Everything that stays the same across the runs of one benchmark."""

    replica_set: ReplicaSet
    slos: Mapping[str, Slo]
    duration_s: float
    time_scale: float = 1.0
    trace_start_s: float = 0.0
    traces: tuple[str, ...] = ("code", "conv")
    trace_users: int = 200
    seed: int = 0
    # How far off the router's speed priors are, per variant (a seeded draw: ``prior_errors``).
    prior_error: float = 0.3
    # Force each answer's traced length, which tells the gateway the true length (an oracle, for
    # comparison); by default only the simulated replicas are told it.
    forced_length: bool = False
    port: int | None = None
    api_key: str = "sk-duet"
    replica_urls: Mapping[str, list[str]] = field(default_factory=dict)

    def prior_errors(self) -> PriorError:
        """The draw every Duet gateway of this benchmark gets (baselines route without priors)."""
        return PriorError.draw([v.name for v in self.replica_set.variants], self.prior_error, self.seed)

    def slo_option(self) -> str:
        return ",".join(f"{t}={s.ttft_ms:g}/{s.tpot_ms:g}" for t, s in self.slos.items())


Progress = Callable[[int], None]


def offered_rps(settings: BenchSettings, rate_scale: float) -> float:
    """Arrivals per model second the replay sends at ``rate_scale`` (from the trace window itself)."""
    window = TraceWindow(settings.duration_s, rate_scale=rate_scale, start_s=settings.trace_start_s)
    arrivals = replay_arrivals(task_traces(settings.traces), window)
    return len(arrivals) / settings.duration_s


def scheduled_per_task(settings: BenchSettings, rate_scale: float) -> Counter[str]:
    """How many arrivals of each task the replay schedules."""
    window = TraceWindow(settings.duration_s, rate_scale=rate_scale, start_s=settings.trace_start_s)
    arrivals = replay_arrivals(task_traces(settings.traces), window)
    return Counter(a.task for a in arrivals)


def locust_command(settings: BenchSettings, url: str, rate_scale: float, run_dir: Path, variants: Mapping[str, str]) -> list[str]:
    """The headless locust command line of one run (shown in the report, so it can be rerun alone)."""
    wall_duration = settings.duration_s / settings.time_scale
    return [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", url,
        "--duet-shape", "trace", "--duet-model", settings.replica_set.model,
        "--duet-traces", ",".join(settings.traces), "--duet-duration", f"{wall_duration:g}",
        "--duet-time-scale", f"{settings.time_scale:g}", "--duet-rate-scale", f"{rate_scale:g}",
        "--duet-trace-start", f"{settings.trace_start_s:g}", "--duet-trace-users", str(settings.trace_users),
        "--duet-max-context", str(settings.replica_set.max_context), "--duet-slos", settings.slo_option(),
        "--duet-records", str(run_dir / "records.jsonl"), "--duet-api-key", settings.api_key,
        "--duet-variant-map", ",".join(f"{k}={v}" for k, v in variants.items()), "--duet-seed", str(settings.seed),
        *(["--duet-forced-length"] if settings.forced_length else []),
        "--csv", str(run_dir / "locust"), "--html", str(run_dir / "locust.html"), "--only-summary",
        "--loglevel", "WARNING", "--stop-timeout", "5",
    ]


def run_locust(command: Sequence[str], run_dir: Path, progress: Progress | None) -> None:
    """Run locust to the end, reporting finished requests to ``progress``; raise if it failed."""
    records = run_dir / "records.jsonl"
    with (run_dir / "locust.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        while process.poll() is None:
            if progress is not None and records.exists():
                progress(records.read_bytes().count(b"\n"))
            time.sleep(0.5)  # progress refresh interval
    if process.returncode not in (0, 1):  # locust exits 1 when some requests failed: still a result
        tail = (run_dir / "locust.log").read_text(errors="replace")[-2000:]
        raise StackError(f"locust exited with {process.returncode}:\n{tail}")


# The code a run's numbers depend on: uncommitted changes there are named beside the commit.
RUN_CODE = ("gateway", "loadtests", "serving")


def code_version() -> dict[str, Any]:
    """The git commit of the tree the benchmark runs from, and its uncommitted files under
    ``RUN_CODE`` (the tree may be shared with other work); empty values outside a checkout."""
    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
        return result.stdout if result.returncode == 0 else ""

    changed = git("status", "--porcelain", "--untracked-files=no", "--", *RUN_CODE)
    return {"git_commit": git("rev-parse", "--short=12", "HEAD").strip(),
            "uncommitted": sorted(line[3:] for line in changed.splitlines())}


def run_one(settings: BenchSettings, policy: str, rate_scale: float, run_dir: Path,
            progress: Progress | None = None) -> dict[str, Any]:
    """One policy at one rate: start everything, replay, collect; returns the run's summary."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "records.jsonl").unlink(missing_ok=True)
    started_utc = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    load_start, started, code = os.getloadavg()[0], time.monotonic(), code_version()
    with replicas(settings.replica_set, settings.time_scale, settings.seed, settings.replica_urls) as urls:
        with gateway(policy, settings.replica_set, urls, settings.time_scale, run_dir, settings.port, settings.api_key,
                     settings.prior_errors()) as url:
            warm_up(url, settings.replica_set.model, settings.api_key)
            command = locust_command(settings, url, rate_scale, run_dir, variant_map(settings.replica_set, urls))
            (run_dir / "command.txt").write_text(" ".join(command) + "\n")
            run_locust(command, run_dir, progress)
            (run_dir / "gateway.metrics").write_text(scrape(url))
        for variant, variant_urls in urls.items():
            for i, replica_url in enumerate(variant_urls):
                (run_dir / f"replica-{variant}-{i}.metrics").write_text(scrape(replica_url))
    # The run shares the host's cores with whatever else runs: its load says how far to trust it.
    host = {"started_utc": started_utc, "wall_s": round(time.monotonic() - started, 1),
            "load_avg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)], **code}
    (run_dir / "host.json").write_text(json.dumps(host) + "\n")
    return summarize_run(settings, policy, rate_scale, run_dir)


def summarize_run(settings: BenchSettings, policy: str, rate_scale: float, run_dir: Path) -> dict[str, Any]:
    """summary.json and the plots of a finished run folder."""
    records = load_records(run_dir / "records.jsonl", settings.time_scale)
    records += unfinished_records(scheduled_per_task(settings, rate_scale), records)
    meta = {
        "policy": policy_name(policy), "rate_scale": rate_scale, "time_scale": settings.time_scale,
        "replicas": settings.replica_set.name, "duration_model_s": settings.duration_s,
        "offered_rps": round(offered_rps(settings, rate_scale), 3), "traces": list(settings.traces),
        "trace_start_s": settings.trace_start_s, "attribution": ATTRIBUTION,
        "replica_counts": {v.name: v.replicas for v in settings.replica_set.variants},
    }
    host = run_dir / "host.json"
    if host.exists():
        meta["host"] = json.loads(host.read_text())
    summary = run_summary(records, settings.slos, prices(settings.replica_set), settings.duration_s, meta,
                          settings.replica_set.parity)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if records:
        plots.run_plots(summary, records, run_dir)
    return summary


def comparison_rows(summaries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per (policy, rate) for the table and plot."""
    return [
        {"policy": s["policy"], "rate_scale": s["rate_scale"], "offered_rps": s["offered_rps"],
         "attainment": s["overall"]["attainment"], "goodput_rps": s["overall"]["goodput_rps"],
         "cost_per_1k_requests_usd": s["overall"]["cost_per_1k_requests_usd"],
         "fast_share": s["overall"]["variant_mix"].get("fast", 0.0), "failed": s["overall"]["failed"],
         "ttft_p90_ms": s["overall"]["ttft_ms"]["p90"], "tpot_p90_ms": s["overall"]["tpot_ms"]["p90"],
         **{f"attainment_{t}": g["attainment"] for t, g in s["tasks"].items()}}
        for s in summaries
    ]


def distserve_goodput(rows: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Per policy: the highest offered rate with >= 90% attainment (interpolated between rates)."""
    policies = dict.fromkeys(r["policy"] for r in rows)
    return {p: max_rate_with_attainment((r["offered_rps"], r["attainment"]) for r in rows if r["policy"] == p)
            for p in policies}
