"""The bench-slo section of docs/benchmarks.md, rendered from the committed results of ``duet bench
slo --results`` (``docs/results/bench-slo/*.json``, ``loadtests.benchmarks.slo.results``), so the tables and
the files cannot disagree: ``python -m loadtests.sections`` rewrites the section, and the registry's test
checks the committed docs hold exactly what the files render to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.replay.report import latency_cells

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "bench-slo"
REFERENCE = "always-standard"  # costs are shown against it

# What every run does and what the columns mean (no figures: those are the files').
INTRO = (
    "Generated from the committed results in `docs/results/bench-slo/` (one file per run, written by the `--results` "
    "of the command above its tables); `python -m loadtests.sections` rewrites this section and a test checks that "
    "it matches the files. The run folder (`--out`, under the untracked `runs/`: locust's CSVs and HTML, every "
    "request's record, the replicas' and gateway's /metrics, plots) is not kept. `make bench-slo` runs the full "
    "grid (all policies, four rates, about 50 minutes).",
    "",
    "**What runs.** Per policy and rate: fresh simulated replicas (`serving/sim`, the profiles named below), a "
    "gateway (Duet with the policy's routing section, or LiteLLM's proxy with `latency-based-routing` from its own "
    "venv, `.venv-bench-litellm`) and `locust --headless -f loadtests/load/locustfile.py --duet-shape trace`. Arrivals "
    "replay the Azure LLM inference trace 2023 (CC-BY 4.0; Patel et al., \"Splitwise\", ISCA 2024). Every request "
    "streams; its prompt is synthesised to the trace's token count, it sends no `max_tokens` and names its trace "
    "length only in `vllm_xargs.sim_output_tokens`, where the simulator ends the answer (the gateway does not read "
    "it; `--forced-length` forces the length instead, an oracle for comparison), and it "
    "carries `x-duet-task` and its budget (`x-slo-ttft-ms`, `x-slo-tpot-ms`). Policies (`--compare`: all of "
    "them; a run may name fewer): `always-standard`, `always-fast`, `round-robin`, `least-loaded` (across both "
    "variants), `static-split`, `llm-d-default`, `production-stack-prefixaware` (docs/routing.md, Baselines), "
    "`litellm-latency` (LiteLLM's proxy, one worker) and `duet` (`gateway/fleet/world/policies/duet.yaml`).",
    "",
    "**Time.** The simulated replicas run `time scale` times faster than the hardware they model, arrivals come as "
    "much faster, and budgets and the gateway's speed priors are divided by it; every time below is converted back "
    "to model time. It is HTTP in scaled real time: locust, the gateway and the replicas share the host's cores, so "
    "delay on a busy host counts in every policy's TTFT and TPOT (scaled up by the time scale). The load average "
    "beside each run says how busy the host was.",
    "",
    "**Columns.** *Budgets met*: succeeded with TTFT and TPOT within the task's budget (`Budget.met_by`, as the "
    "gateway judges it). *Good*: budgets met on a variant whose parity verdicts allow the task, the replay's "
    "definition (`gateway/fleet/replay/report.py`); a request served where parity refuses its task is a *quality miss*. "
    "Both are shares of the arrivals scheduled: *failed* counts errors and arrivals not finished when the run "
    "ended. TTFT and TPOT over requests that succeeded; cost per 1,000 served requests at the serving variant's "
    "price. Goodput (DistServe): the highest offered rate with at least 90% of budgets met, interpolated between "
    "the rates tried.",
    "",
    "The locust side works on its own too: `locust -f loadtests/load/locustfile.py --host http://127.0.0.1:8000` (web UI; "
    "coding, chat, two-turn agent with a tool, and long-document extraction users; `--duet-shape step|ramp|trace`, "
    "`locust -f loadtests/load/locustfile.py --help` for the `--duet-*` options). TTFT and TPOT are request types of their "
    "own in locust's tables, charts and CSVs.",
)


def load(results_dir: Path = RESULTS_DIR) -> list[tuple[str, dict[str, Any]]]:
    """(file stem, results) of every committed run, oldest first."""
    found = [(p.stem, json.loads(p.read_text())) for p in sorted(results_dir.glob("*.json"))]
    return sorted(found, key=lambda item: (item[1]["date"] or "", item[0]))


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def _money(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _mix(mix: Mapping[str, float]) -> str:
    return ", ".join(f"{variant} {share:.0%}" for variant, share in mix.items()) or "–"


def _load(run: Mapping[str, Any]) -> str:
    host = run.get("host")
    return "–" if not host else f"{host['load_avg_1m'][0]:.1f} → {host['load_avg_1m'][1]:.1f}"


def rate_table(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One row per policy at one rate."""
    reference = next((r["cost_per_1k_requests_usd"] for r in runs if r["policy"] == REFERENCE), None)
    head = ["policy", "requests", "budgets met", "good", "quality misses", "failed", "TTFT p50/p90/p99 ms",
            "TPOT p50/p90/p99 ms", "variant mix", "USD / 1k req", f"vs {REFERENCE}", "load avg (1 min) start → end"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in runs:
        cost = r["cost_per_1k_requests_usd"]
        relative = f"{cost / reference:.3f}x" if cost is not None and reference else "–"
        cells = [r["policy"], str(r["requests"]), _share(r["budgets_met"], r["requests"]),
                 _share(r["good_requests"], r["requests"]), str(r["quality_misses"]), str(r["failed"]),
                 latency_cells(r["ttft_ms"]), latency_cells(r["tpot_ms"]), _mix(r["variant_mix"]), _money(cost),
                 relative, _load(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def comparison(runs: Sequence[Mapping[str, Any]]) -> str:
    """Duet's good requests and cost beside least-loaded's and the best other policy's, at one rate."""
    by_policy = {r["policy"]: r for r in runs}
    duet = by_policy.get("duet")
    others = {name: r for name, r in by_policy.items() if name != "duet"}
    if duet is None or not others:
        return ""
    best = max(others, key=lambda n: (others[n]["good_fraction"], -(others[n]["cost_per_1k_requests_usd"] or 0)))
    named = dict.fromkeys(n for n in ("least-loaded", best) if n in others)

    def figures(r: Mapping[str, Any]) -> str:
        return f"{r['good_fraction']:.1%} good at USD {_money(r['cost_per_1k_requests_usd'])} / 1k"

    against = "; ".join(f"{n}{' (best other policy)' if n == best else ''} {figures(others[n])} "
                        f"({100 * (duet['good_fraction'] - others[n]['good_fraction']):+.1f} points)" for n in named)
    return f"Duet {figures(duet)}; {against}."


def errors(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The most frequent error kinds of each run that had failures."""
    return [f"- {r['policy']}: " + "; ".join(f"{n} × `{kind.strip()}`" for kind, n in r["errors"].items())
            for r in runs if r["errors"]]


def goodput_table(result: Mapping[str, Any]) -> list[str]:
    """Each policy's DistServe goodput; a policy meeting 90% at every rate tried has at least the highest."""
    highest = max(r["offered_rps"] for r in result["runs"])
    lines = ["| policy | goodput: highest req/s with ≥ 90% of budgets met |", "|---|---|"]
    for policy, value in result["goodput"].items():
        text = ("below the lowest rate tried" if value is None else
                f"≥ {value:.2f} (met at every rate tried)" if value >= highest else f"{value:.2f}")
        lines.append(f"| {policy} | {text} |")
    return lines


def host_line(result: Mapping[str, Any]) -> str:
    host, code = result["host"], result["code"]
    load = host["load_avg_1m"]
    tree = f"code at commit `{code['git_commit']}`"
    if code["uncommitted"]:
        tree += f" with uncommitted changes to {', '.join(f'`{p}`' for p in code['uncommitted'])}"
    tree += f" (recorded {code['recorded']})"
    return (f"Measured {result['date']} on {host['cpu_model']} ({host['cpus']} CPUs, class {host['hardware_class']}, "
            f"{'with' if host['avx512'] else 'no'} AVX-512), {tree}; {host['wall_s']:,.0f} s of wall time for the grid. "
            f"Host load (1-minute average): {load['first_start']:.2f} at the first run's start, {load['last_end']:.2f} at "
            f"the last run's end, at most {load['peak']:.2f} at any run's start or end.")


def settings_line(settings: Mapping[str, Any]) -> str:
    replicas = ", ".join(f"{n} {v} (`{settings['profiles'][v]}`, USD {p[0]:g} / {p[1]:g} per 1M tokens in / out)"
                         for v, n in settings["replica_counts"].items() for p in [settings["prices"][v]])
    slos = ", ".join(f"{t} {b[0]:g} / {b[1]:g}" for t, b in settings["slos"].items())
    parity = "; ".join(f"{v} allows {'every task' if t is None else ', '.join(t)}" for v, t in settings["parity"].items())
    return (f"Replicas: {replicas}. Traces {', '.join(settings['traces'])} from {settings['trace_start_s']:g} s in, "
            f"{settings['duration_model_s']:g} s of arrivals per run at time scale {settings['time_scale']:g}. Budgets "
            f"(TTFT / TPOT ms, model time): {slos}. Parity: {parity}. {prior_line(settings.get('prior_error'))} "
            f"{length_line(settings.get('output_length'))}")


def length_line(output_length: str | None) -> str:
    """Whether the gateway knew each answer's length: a results file from before natural lengths
    forced every request's (``min_tokens`` = ``max_tokens``, ``ignore_eos``), and says so."""
    if output_length is None:
        return ("Output lengths: forced on every request, which told the gateway each answer's length (an oracle: "
                "this run predates natural lengths).")
    if output_length == "natural":
        return ("Output lengths: natural (no `max_tokens`; only the simulated replicas were told where each answer "
                "ends, and the gateway planned with the lengths it learned).")
    return "Output lengths: forced on every request (`--forced-length`: the gateway knew each one, an oracle)."


def prior_line(prior_error: Mapping[str, Mapping[str, float]] | None) -> str:
    """What Duet's speed priors were: a results file from before the option gave Duet its replicas'
    own profiles, which no real gateway knows, and says so."""
    if prior_error is None:
        return ("Duet's speed priors: the simulator profiles' own (an oracle: this run predates "
                "`--prior-error`).")
    factors = ", ".join(f"{v} x{f['decode']:g}" for v, f in prior_error.items())
    exact = all(f["decode"] == 1 and f["prefill"] == 1 for f in prior_error.values())
    return ("Duet's speed priors: the simulator profiles' own (`--prior-error 0`: an oracle)." if exact else
            f"Duet's speed priors: the simulator profiles' off by a seeded draw per variant ({factors}: step "
            f"times multiplied, prefill rate divided).")


def render_result(stem: str, result: Mapping[str, Any]) -> list[str]:
    parts = [f"### `{stem}.json`", "", "```sh", result["command"], "```", "", host_line(result)]
    parts += ["", result["note"]] if result["note"] else []
    parts += ["", settings_line(result["settings"]), ""]
    for rate in sorted({r["rate_scale"] for r in result["runs"]}):
        runs = [r for r in result["runs"] if r["rate_scale"] == rate]
        parts += [f"#### Rate x{rate:g}: {runs[0]['offered_rps']:.2f} req/s offered", "", *rate_table(runs), ""]
        line = comparison(runs)
        parts += [line, ""] if line else []
        failures = errors(runs)
        parts += ["Errors (most frequent kinds):", "", *failures, ""] if failures else []
    if len({r["rate_scale"] for r in result["runs"]}) > 1:
        parts += [*goodput_table(result), ""]
    return parts


def render(results: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The section (between its markers)."""
    parts = ["## SLO, goodput and cost through HTTP (`duet bench slo`, locust)", "", *INTRO, ""]
    for stem, result in results:
        parts += render_result(stem, result)
    return "\n".join(parts)
