"""The held-out replay section of docs/benchmarks.md, rendered from the committed results
(``docs/results/replay/*.json``, written by ``duet replay --compare --out``), so the tables and the
files cannot disagree: registered as ``replay-heldout`` in ``loadtests/sections/registry.py``
(``python -m loadtests.sections`` writes it, one test checks every section).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.replay.report import latency_cells

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "replay"
BASELINE = "least-loaded"
# file stem -> what the setting is; in this order. The tuning window is the hour (x0.35: trace
# seconds 0-1,260) the policy was tuned on over several rounds; the others it never saw.
SETTINGS: Sequence[tuple[str, str]] = (
    ("tuning-oracle", "Tuning window, with the oracle (forced output lengths, exact speed priors): as published before"),
    ("tuning", "Tuning window, no oracle: learned output lengths, speed priors off by 30%"),
    ("heldout-azure-1260", "Held out: the next window of the Azure traces (trace seconds 1,260-2,520)"),
    ("heldout-azure-2340", "Held out: the last window of the Azure traces (trace seconds 2,340-3,600)"),
    ("heldout-conv-1.7", "Held out: the conversation trace alone at 1.7x its rate"),
    ("heldout-longcontext", "Held out: conversation (Azure) with long-context documents (Mooncake), parity keeping "
                            "long-context off the fast variant"),
    ("heavier-0.5", "Heavier: the tuning window's traces at 0.5x their rate instead of 0.35x"),
)


def load(results_dir: Path = RESULTS_DIR) -> list[tuple[str, str, dict[str, Any]]]:
    """(stem, title, result) for each setting whose file exists, in ``SETTINGS`` order."""
    found = []
    for stem, title in SETTINGS:
        path = results_dir / f"{stem}.json"
        if path.exists():
            found.append((stem, title, json.loads(path.read_text())))
    return found


GOAL_POINTS = 2.0  # issue #16: Duet's good requests at least the best baseline's + 2 points


def verdict(policies: Mapping[str, Mapping[str, Any]]) -> str:
    """Whether Duet serves more good requests than least-loaded and than the best other policy,
    at equal or lower cost, and whether it does so by the goal's ``GOAL_POINTS`` (with their 95%
    intervals when the results span several seeds)."""
    duet = policies["duet"]
    others = {name: s for name, s in policies.items() if name != "duet"}
    best_name = max(others, key=lambda name: (others[name]["good_fraction"], -others[name]["cost_usd"]))
    lines = []
    for label, name in (("least-loaded", BASELINE), (f"the best other policy ({best_name})", best_name)):
        other = policies[name]
        gap = 100 * (duet["good_fraction"] - other["good_fraction"])
        cheaper = duet["cost_usd"] <= other["cost_usd"]
        met = gap > 0 and cheaper
        lines.append(f"Duet against {label}: good requests {good_cell(duet)} vs {good_cell(other)} "
                     f"({gap:+.2f} points), cost {_cost(duet)} vs {_cost(other)}: "
                     f"**{'beats it at equal or lower cost' if met else 'does not beat it at equal or lower cost'}**.")
    best = policies[best_name]
    gap = 100 * (duet["good_fraction"] - best["good_fraction"])
    goal = gap >= GOAL_POINTS and duet["cost_usd"] <= best["cost_usd"]
    lines.append(f"Goal (at least +{GOAL_POINTS:g} points of good requests over the best other policy at equal or lower "
                 f"cost): **{'met' if goal else 'not met'}** ({gap:+.2f} points).")
    return "\n".join(f"- {line}" for line in lines)


def good_cell(s: Mapping[str, Any]) -> str:
    """Good requests as a percentage, with its 95% interval when the summary spans seeds."""
    ci = s.get("good_fraction_ci95")
    return f"{s['good_fraction']:.2%}" if ci is None else f"{s['good_fraction']:.2%} ± {ci:.2%}"


def _cost(s: Mapping[str, Any]) -> str:
    ci = s.get("cost_usd_ci95")
    return f"${s['cost_usd']:.2f}" if ci is None else f"${s['cost_usd']:.2f} ± {ci:.2f}"


def _table(policies: Mapping[str, Mapping[str, Any]]) -> str:
    head = ["policy", "budgets met", "good", "quality misses", "rejected", "cost $", "TTFT p50/p90/p99 ms",
            "TPOT p50/p90/p99 ms", "variant mix"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in policies.items():
        mix = ", ".join(f"{v} {p:.0%}" for v, p in s["variant_mix"].items())
        cells = [name, f"{s['slo_attainment']:.2%}", good_cell(s), f"{s['quality_misses']:g}",
                 f"{s['rejected']:g}", _cost(s).lstrip("$"), latency_cells(s["ttft_ms"]), latency_cells(s["tpot_ms"]), mix]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(results: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str:
    """The section's text (``loadtests.sections`` puts it between its markers)."""
    parts = ["## Routing without the oracle, on traffic it was not tuned on (`duet replay`)", "",
             "Generated from the committed results in `docs/results/replay/` (one file per setting, written by the "
             "command above its table). *Good* = the request met its budgets on a variant whose parity verdicts "
             "allow its task; a request served where parity refuses its task is a *quality miss*. Every policy "
             "carries the same verdicts (the FP8 variant: chat, coding, agent, extraction) and is scored by them. "
             "Traces: Azure LLM inference trace 2023 (CC-BY 4.0; Patel et al., \"Splitwise\", ISCA 2024) and the "
             "Mooncake FAST'25 conversation trace (Apache-2.0; Qin et al., \"Mooncake\", FAST 2025). Baselines "
             "(docs/routing.md, Baselines) include `static-split`, `llm-d-default` (llm-d's default queue, "
             "KV-cache and prefix-cache scorers, on its 50 ms metrics refresh where the others run with the "
             "gateway's 1 s scrape) and `production-stack-prefixaware` (vLLM production-stack's prefix-aware "
             "router: the longest cached prefix, else any replica at random). The prefix scorers score every "
             "replica alike on the Azure traces, which carry no prompt reuse, while the long-context setting's "
             "Mooncake requests carry their prefix blocks. Simulated replicas: the h100-70b profiles, fitted to "
             "published vLLM measurements (Simulator, \"H100 profiles against published measurements\"); every "
             "setting here was rerun on them.", "",
             *summary(results), "", *findings(results), *WHY, ""]
    for stem, title, result in results:
        parts += [f"### {title}", "", "```sh", result["command"], "```", "",
                  f"{_seeds(result)}{result['requests']} requests; output length {result['output_length']}; speed prior factors "
                  f"{_prior_factors(result)}{_scrapes(result)} (`{stem}.json`).", "", _table(result["policies"]), "",
                  verdict(result["policies"]), ""]
    return "\n".join(parts).rstrip()


def findings(results: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """What the results say across settings, computed from them: where the goal is met, what the
    oracle is worth, which task Duet loses without it, how the prior errors were drawn."""
    by_stem = {stem: result for stem, _, result in results}
    met = [stem for stem, result in by_stem.items() if _goal_gap(result["policies"]) is not None]
    lines = [f"- Goal met in {len(met)} of {len(by_stem)} settings" + (f" ({', '.join(f'`{s}`' for s in met)})." if met else ".")]
    oracle, learned = by_stem.get("tuning-oracle"), by_stem.get("tuning")
    if oracle and learned:
        worth = {name: 100 * (oracle["policies"][name]["good_fraction"] - learned["policies"][name]["good_fraction"])
                 for name in ("duet", BASELINE)}
        tasks = oracle["policies"]["duet"]["slo_attainment_by_task"]
        drops = {t: 100 * (tasks[t] - learned["policies"]["duet"]["slo_attainment_by_task"].get(t, 0.0)) for t in tasks}
        task = max(drops, key=lambda t: drops[t])
        lines.append(f"- The oracle (true output lengths, exact speed priors) is worth {worth['duet']:+.2f} points of good "
                     f"requests to Duet on the tuning window and {worth[BASELINE]:+.2f} to {BASELINE}, which does not plan "
                     f"by length; Duet's budgets met move most on {task} ({drops[task]:+.2f} points). The issue's "
                     f"\"within 1 point of an oracle-informed Duet\": {'met' if worth['duet'] <= 1.0 else 'not met'} there.")
    draws = {(result["seed"] + i, str(factors)): factors for result in by_stem.values()
             for i, factors in enumerate((result.get("seeds") or {}).get("prior_error", []))
             if any(f["decode"] != 1 for f in factors.values())}
    if draws:
        alike = sum(1 for factors in draws.values() if len({f["decode"] > 1 for f in factors.values()}) == 1)
        lines.append(f"- Speed prior errors: in {alike} of the {len(draws)} seeds' draws (a seed draws the same in every "
                     "setting) both variants erred in the same direction, which leaves their relative speed exact; in "
                     "the others they erred apart, so the router also misjudged their speeds relative to each other. The error's "
                     "shape (how step time grows with the batch) is the profile's in every draw.")
    return lines


def _goal_gap(policies: Mapping[str, Mapping[str, Any]]) -> float | None:
    """Duet's lead in points over the best other policy when it meets the goal, else None."""
    duet = policies["duet"]
    others = {name: s for name, s in policies.items() if name != "duet"}
    best = others[max(others, key=lambda name: (others[name]["good_fraction"], -others[name]["cost_usd"]))]
    gap = 100 * (duet["good_fraction"] - best["good_fraction"])
    return gap if gap >= GOAL_POINTS and duet["cost_usd"] <= best["cost_usd"] else None


# Why the goal is met or not, by mechanism (no figures: those are the tables' own).
WHY = (
    "- Where the best other policy already serves more than 98% good requests, less than 2 points are left above "
    "it (\"room above it\"): no policy could meet the goal there, and Duet's lead is in cost as much as in good "
    "requests.",
    "- On the Azure mixes Duet's remaining misses are coding's (per-task budgets met are in the JSON files): answers "
    "whose length the task's median misplans, short ones whose few tokens another prompt's prefill stall breaks and "
    "long ones planned as short; one planned output length per task cannot single them out (docs/routing.md, why "
    "the median), which is what the oracle's forced lengths are worth. A per-request length signal would.",
    "- On the long-context mix parity keeps long documents on the one standard replica whichever policy routes, and "
    "they miss their budgets there alike: more standard capacity or prompt reuse (the prefix-cache issue) would move "
    "it, routing cannot.",
    "- `llm-d-default` is scraped every 50 ms, the EPP's default refresh. Replayed on the gateway's 1 s scrape "
    "before, it sent bursts to one replica between scrapes (its default scorers count no requests of their own) and "
    "served several points fewer good requests on the Azure mixes (this section's git history). "
    "`production-stack-prefixaware` reads no load at all: without prompt reuse, as on the Azure traces, it picks any "
    "replica at random, one request in four on the one standard replica. Both were added to the committed files "
    "with `duet replay --rerun` (the same command, those two policies replayed again; the others' replays are "
    "deterministic, and rerunning `duet` and `least-loaded` on the long-context setting reproduced their figures "
    "exactly).",
)


def summary(results: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """The goal, setting by setting: Duet's good requests against the best other policy's."""
    lines = ["| setting | Duet good | best other policy | its good | room above it (points) | gap (points) | Duet cost | "
             f"its cost | goal (+{GOAL_POINTS:g} points, equal or lower cost) |", "|---|---|---|---|---|---|---|---|---|"]
    for stem, _, result in results:
        policies = result["policies"]
        duet = policies["duet"]
        others = {name: s for name, s in policies.items() if name != "duet"}
        best_name = max(others, key=lambda name: (others[name]["good_fraction"], -others[name]["cost_usd"]))
        best = others[best_name]
        gap = 100 * (duet["good_fraction"] - best["good_fraction"])
        met = gap >= GOAL_POINTS and duet["cost_usd"] <= best["cost_usd"]
        room = 100 * (1 - best["good_fraction"])  # under GOAL_POINTS: no policy could meet the goal
        lines.append(f"| `{stem}` | {good_cell(duet)} | {best_name} | {good_cell(best)} | {room:.2f} | {gap:+.2f} | "
                     f"{_cost(duet)} | {_cost(best)} | {'met' if met else 'not met'} |")
    return lines


def _scrapes(result: Mapping[str, Any]) -> str:
    """How often each policy's replay scraped the replicas, when the file says (the common
    interval, then the policies that had their own)."""
    intervals = result.get("scrape_interval_s")
    if not intervals:
        return ""
    common = max(set(intervals.values()), key=list(intervals.values()).count)
    own = [f"`{name}` every {s:g} s" for name, s in intervals.items() if s != common]
    return f"; replicas scraped every {common:g} s" + (f" ({', '.join(own)})" if own else "")


def _seeds(result: Mapping[str, Any]) -> str:
    seeds = result.get("seeds")
    if seeds is None:
        return "One seed (no interval). "
    return (f"{seeds['count']} seeds, each window {seeds['shift_s']:+g} trace seconds from the last: means with 95% "
            f"Student-t intervals (±) over seeds, latency percentiles and mix averaged over seeds; first seed: ")


def _prior_factors(result: Mapping[str, Any]) -> str:
    """The prior error factors of every seed (of the one run without seeds)."""
    draws = (result.get("seeds") or {}).get("prior_error")
    if not draws:
        return _factors(result["prior_error"])
    variants = list(draws[0])
    return ", ".join(f"{v} " + "/".join(f"x{d[v]['decode']:g}" for d in draws) for v in variants) + " by seed"


def _factors(prior_error: Mapping[str, Mapping[str, float]]) -> str:
    return ", ".join(f"{v} x{f['decode']:g}" if f["prefill"] == f["decode"] else f"{v} prefill x{f['prefill']:g} "
                     f"decode x{f['decode']:g}" for v, f in prior_error.items())
