"""The P/D section of docs/routing.md, rendered from every committed ``docs/results/pd/*.json``
(``duet replay --sweep ... --policies duet,duet@pd=P:D[+F]:RULE,... --out``): per file, its
command, good share against load per policy, and each policy's highest load at 99% and 95% good
against co-located Duet's (``duet``), the ratio taken seed by seed (the same windows at the same
loads) with a Student-t 95% interval.

Registered as ``pd-sweep`` in ``loadtests/sections/registry.py``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.replay.seeds import interval
from gateway.fleet.sweep.knee import Crossing, ratio
from gateway.fleet.sweep.render import load_cell, share_table

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "pd"
CO_LOCATED = "duet"


def load(results_dir: Path = RESULTS_DIR) -> list[tuple[str, dict[str, Any]]]:
    return [(path.stem, json.loads(path.read_text())) for path in sorted(results_dir.glob("*.json"))]


def paired_ratio(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str:
    """Per seed, ``ours`` crossing load over ``theirs``; mean ± 95% interval when every seed of
    both crossed exactly inside the tried loads, else the reason it is not one number."""
    ratios = [ratio(_crossing(a), _crossing(b)) for a, b in zip(ours["runs"], theirs["runs"], strict=True)]
    if not ratios or any(r.kind != "exact" or r.value is None for r in ratios):
        return "– (a seed outside the tried loads)"
    mean, half = interval([r.value for r in ratios if r.value is not None])
    return f"{mean:.2f}x ± {half:.2f}" if len(ratios) > 1 else f"{mean:.2f}x"


def _crossing(run: Mapping[str, Any]) -> Crossing:
    return Crossing(run["kind"], run["value"], run["nonmonotone"])


def crossings(result: Mapping[str, Any]) -> str:
    lines = ["| constraint | policy | load | req/s | / co-located Duet (paired) |", "|---|---|---|---|---|"]
    for entry in result["crossings"]:
        policies = entry["policies"]
        base = policies.get(CO_LOCATED)
        for policy, c in policies.items():
            ratio = "" if base is None or policy == CO_LOCATED else paired_ratio(c, base)
            lines.append(f"| {entry['constraint']} | {policy} | {load_cell(c['load'])} | "
                         f"{load_cell(c['rate_rps'], unit='')} | {ratio} |")
    return "\n".join(lines)


def render(results: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    parts = ["Generated from `docs/results/pd/` (one file per pairing, written by the command above its tables); "
             "virtual time. Policies: `duet` co-located; `duet@pd=P:D:RULE` the standard variant's first P replicas "
             "prefill-only and next D decode-only, the rest `both` with a connector (they serve whole and decode "
             "transferred KV, as llm-d's decode pods do); `+F` also the fast variant's first F replicas decode-only "
             "on the standard prefill's KV. RULE `duet` is Duet's split rule, `threshold` llm-d's "
             "prefix-based decider (16 uncached tokens).", ""]
    if not results:
        return "\n".join([*parts, "No P/D sweep committed yet."])
    for stem, result in results:
        window = result["window"]
        parts += [f"**`{stem}`**: {result['replicas']}, {window['name']} window, trace seconds "
                  f"{window['covered_s'][0]:g}-{window['covered_s'][1]:g} over {result['seeds']} seeds, speed priors off "
                  f"by {result['prior_error']:.0%}.", "", "```sh", result["command"], "```", "",
                  share_table(result), "", crossings(result), ""]
    return "\n".join(parts).rstrip()
