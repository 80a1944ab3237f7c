"""The chunk-budget section of docs/routing.md (issue #36's fair baselines), rendered from every
committed ``docs/results/chunk/*.json`` and, for the same pairing swept the same way, Duet's
policies in ``docs/results/pd/*.json`` (``duet`` co-located and its P/D layouts with Duet's rule:
one protocol, so one comparison).

Per pairing: each file's command, good share against load per policy, each policy's highest load
at 99% and 95% good, and a summary: Duet's best policy there against each baseline's best uniform
chunk budget (``BASELINE@chunk=N``, the one with the highest mean crossing) and against its
vLLM-default budget (the profiles', 8,192 tokens), the ratio taken seed by seed (the same windows
at the same loads) with a Student-t 95% interval, against the issue's goals (1.3x and 1.6x).
The pick is made on these held-out results for both sides, and said so.

Registered as ``chunk-sweep`` in ``loadtests/sections/registry.py``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.replay.policy_names import parse_policy_name
from gateway.fleet.sweep import diagnose
from gateway.fleet.sweep.knee import Crossing, estimate, ratio
from gateway.fleet.sweep.render import load_cell, ratio_cell, share_table, verdict
from gateway.fleet.sweep.results import DUET_POLICIES

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "chunk"
PD_DIR = ROOT / "docs" / "results" / "pd"
# Issue #36: Duet's engine roles against the best baseline on its best uniform configuration,
# and against the baselines on vLLM's defaults.
BEST_UNIFORM_GOAL, DEFAULT_GOAL = 1.3, 1.6
DEFAULT_BUDGET = 8192  # vLLM V1's for the API server on >= 70 GiB GPUs: the H100 profiles'
DIAGNOSIS = "diagnosis-"  # ``gateway.fleet.sweep.diagnose --out`` files beside the sweeps
# A sweep's settings every file of one pairing must share for its policies to be compared.
PROTOCOL = ("trace", "seeds", "seed", "prior_error", "output_length", "loads")


Files = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # a pairing's chunk files, its P/D files


def load(results_dir: Path = RESULTS_DIR, pd_dir: Path = PD_DIR) -> list[tuple[str, Files]]:
    """(pairing, (its chunk files, the P/D files of the same pairing swept the same way, whose
    Duet-rule policies join the comparison)) for every pairing with a chunk file."""
    chunk = [json.loads(p.read_text()) for p in sorted(results_dir.glob("*.json")) if not p.stem.startswith(DIAGNOSIS)]
    pd = [json.loads(p.read_text()) for p in sorted(pd_dir.glob("*.json"))]
    pairings = list(dict.fromkeys(r["replicas"] for r in chunk))
    return [(pairing, ([r for r in chunk if r["replicas"] == pairing],
                       [r for r in pd if r["replicas"] == pairing and _same_protocol(r, chunk[0])]))
            for pairing in pairings]


def _same_protocol(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in PROTOCOL) and a["window"]["covered_s"] == b["window"]["covered_s"]


def duet_rule(policy: str) -> bool:
    """Whether ``policy`` is one of Duet's: a Duet policy file, split (if at all) by Duet's rule."""
    name = parse_policy_name(policy)
    return name.base in DUET_POLICIES and (name.pd is None or name.pd.endswith(":duet"))


def uniform_budget(policy: str) -> tuple[str, int] | None:
    """(baseline, budget) for ``BASELINE@chunk=N`` (co-located, one budget for every replica)."""
    name = parse_policy_name(policy)
    if name.base in DUET_POLICIES or name.pd is not None or name.chunk is None or name.chunk.uniform is None:
        return None
    return name.base, name.chunk.uniform


def combined(files: Files) -> dict[str, Any]:
    """One pairing's files as one result: the chunk files' policies, then the P/D files' Duet ones
    not already there; crossings per constraint, in the first file's order."""
    chunk, pd = files
    first = chunk[0]
    grid: dict[str, Any] = {}
    crossings = [{"constraint": e["constraint"], "level": e["level"], "policies": {}} for e in first["crossings"]]
    for result, from_pd in [*((r, False) for r in chunk), *((r, True) for r in pd)]:
        for policy, rows in result["grid"].items():
            if policy in grid or (from_pd and not duet_rule(policy)):
                continue
            grid[policy] = rows
            for entry, theirs in zip(crossings, result["crossings"], strict=True):
                entry["policies"][policy] = theirs["policies"][policy]
    return {**first, "policies": list(grid), "grid": grid, "crossings": crossings}


def _runs(c: Mapping[str, Any]) -> list[Crossing]:
    return [Crossing(r["kind"], r["value"], r["nonmonotone"]) for r in c["runs"]]


def paired(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, object]:
    """``ours`` crossing over ``theirs``, seed by seed, as an estimate (a bound where a seed's is)."""
    return estimate([ratio(a, b) for a, b in zip(_runs(ours), _runs(theirs), strict=True)]).as_dict()


def _best(policies: Mapping[str, Any], names: Sequence[str]) -> str | None:
    known = {n: policies[n]["load"]["mean"] for n in names if policies[n]["load"]["mean"] is not None}
    return max(known, key=lambda n: known[n]) if known else None


def summary(pairing: str, result: Mapping[str, Any]) -> list[str]:
    """Per constraint and baseline: Duet's best against the baseline's best uniform budget and
    against its vLLM-default budget."""
    lines = []
    for entry in result["crossings"]:
        policies = entry["policies"]
        duet = _best(policies, [p for p in policies if duet_rule(p)])
        families: dict[str, list[str]] = {}
        for policy in policies:
            if (uniform := uniform_budget(policy)) is not None:
                families.setdefault(uniform[0], []).append(policy)
        if duet is None:
            continue
        for baseline, tried in families.items():
            best = _best(policies, tried)
            if best is None:
                continue
            default = f"{baseline}@chunk={DEFAULT_BUDGET}"
            ratio_best = paired(policies[duet], policies[best])
            ratio_default = paired(policies[duet], policies[default]) if default in policies else None
            lines.append(
                f"| `{pairing}` | {entry['constraint']} | `{duet}` {load_cell(policies[duet]['load'])} | `{best}` "
                f"{load_cell(policies[best]['load'])} | {ratio_cell(ratio_best)} | "
                f"{verdict(ratio_best, BEST_UNIFORM_GOAL)} | "
                + ("– | –" if ratio_default is None else f"{ratio_cell(ratio_default)} | {verdict(ratio_default, DEFAULT_GOAL)}")
                + " |")
    return lines


def trailing(result: Mapping[str, Any]) -> str:
    """The loads where Duet's best policy at the first constraint (99% good) trails the best
    baseline budget at that load by more than the larger of their 95% intervals (issue #36:
    never below the best baseline beyond the interval at any load)."""
    first = result["crossings"][0]["policies"]
    duet = _best(first, [p for p in first if duet_rule(p)])
    baselines = [p for p in result["grid"] if uniform_budget(p) is not None]
    if duet is None or not baselines:
        return ""
    behind = []
    for k, ours in enumerate(result["grid"][duet]):
        best = max((result["grid"][p][k] for p in baselines), key=lambda row: row["good_fraction"])
        gap, width = best["good_fraction"] - ours["good_fraction"], max(best["ci95"] or 0.0, ours["ci95"] or 0.0)
        if gap > width:
            behind.append(f"x{ours['load']:g} ({100 * gap:.2f} points behind, interval {100 * width:.2f})")
    if not behind:
        return f"`{duet}` trails no baseline budget by more than the interval at any tried load."
    return f"`{duet}` trails the best baseline budget at that load by more than the interval at {', '.join(behind)}."


def diagnoses(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """The committed diagnoses of a Duet layout (``docs/results/chunk/diagnosis-*.json``)."""
    return diagnose.load(results_dir)


def tuning(results_dir: Path = RESULTS_DIR / "tuning") -> list[dict[str, Any]]:
    """The tuning-window sweeps Duet's layout was chosen on (``docs/results/chunk/tuning/``)."""
    return [json.loads(p.read_text()) for p in sorted(results_dir.glob("*.json"))]


def render(pairings: Sequence[tuple[str, Files]], found: Sequence[Mapping[str, Any]] = (),
           tuned: Sequence[Mapping[str, Any]] = ()) -> str:
    parts = ["Generated from `docs/results/chunk/` and, for the same pairing swept the same way, Duet's policies in "
             "`docs/results/pd/` (each file written by its command below); virtual time. `BASELINE@chunk=N`: every "
             "replica of both variants at chunk budget N (vLLM's `--max-num-batched-tokens`; the profiles' own, "
             f"vLLM's default on H100, is {DEFAULT_BUDGET}); `duet@chunk=VARIANT:[Kx]N+...`: the variant's first K "
             "replicas at N, the rest at the next budget. Duet's best and each baseline's best uniform budget are "
             "the policies with the highest mean crossing in these held-out results (the pick favours both alike); "
             "the ratio is paired seed by seed. The fleet and its price are the same for every policy, so a ratio of "
             f"loads is one of goodput per GPU-dollar. Goals (issue #36): ≥ {BEST_UNIFORM_GOAL:g}x the best baseline on "
             f"its best uniform budget, ≥ {DEFAULT_GOAL:g}x the baselines on vLLM's default.", ""]
    if not pairings:
        return "\n".join([*parts, "No chunk-budget sweep committed yet."])
    head = ["| pairing | constraint | Duet's best | baseline's best uniform budget | Duet / it (paired) | goal 1.3x | "
            "Duet / its vLLM default | goal 1.6x |", "|---|---|---|---|---|---|---|---|"]
    results = [(pairing, combined(files), files) for pairing, files in pairings]
    parts += [*head, *[line for pairing, result, _ in results for line in summary(pairing, result)], ""]
    for pairing, result, files in results:
        window = result["window"]
        parts += [f"**`{pairing}`**, {window['name']} window, trace seconds {window['covered_s'][0]:g}-"
                  f"{window['covered_s'][1]:g} over {result['seeds']} seeds, speed priors off by "
                  f"{result['prior_error']:.0%}.", "", "```sh", *[f["command"] for f in [*files[0], *files[1]]], "```", "",
                  share_table(result), "", trailing(result), "", crossings(result), ""]
    if tuned:
        parts += ["Duet's layouts were chosen on the tuning window (`docs/results/chunk/tuning/`, never the held-out "
                  "one; one seed, two loads), good share per policy:", ""]
        for sweep in tuned:
            parts += ["```sh", sweep["command"], "```", "", share_table(sweep), ""]
    if found:
        parts += ["Where the remaining misses come from (`gateway.fleet.sweep.diagnose`, on the tuning window):", "",
                  diagnose.render(found), ""]
    return "\n".join(parts).rstrip()


def crossings(result: Mapping[str, Any]) -> str:
    lines = ["| constraint | policy | load | req/s |", "|---|---|---|---|"]
    for entry in result["crossings"]:
        for policy, c in entry["policies"].items():
            lines.append(f"| {entry['constraint']} | {policy} | {load_cell(c['load'])} | {load_cell(c['rate_rps'], unit='')} |")
    return "\n".join(lines)
