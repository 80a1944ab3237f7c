"""The knee-sweep section of docs/benchmarks.md, rendered from every committed
``docs/results/knee/*.json`` (written by ``duet replay --sweep/--sweep-search --out``), and a plot
per grid file next to it: good share against load, one line per policy, with 95% interval bars.

Registered as ``knee-sweep`` in ``loadtests/sections/registry.py`` (``python -m
loadtests.sections`` writes it, one test checks every section); ``python -m
gateway.fleet.sweep.render`` rewrites the plots.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.sweep.results import DUET_POLICIES, compare, subject

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "knee"
# Issue #26's goals for Duet's goodput over the best baseline's: at least even where the variants
# trade nothing off (bf16 | FP8 on h100-70b), 1.2x on a pairing with a trade-off (any other set).
GOALS: Mapping[str, float] = {"h100-70b": 1.0}
TRADE_OFF_GOAL = 1.2


def load(results_dir: Path = RESULTS_DIR) -> list[tuple[str, dict[str, Any]]]:
    """(stem, result) for every sweep's results file, by name (the diagnoses beside them are
    ``gateway.fleet.sweep.diagnose``'s)."""
    return [(path.stem, json.loads(path.read_text())) for path in sorted(results_dir.glob("*.json"))
            if not path.stem.startswith("diagnosis-")]


def goal(result: Mapping[str, Any]) -> float:
    return GOALS.get(result["replica_set"], TRADE_OFF_GOAL)


def render(results: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The section's text (between the markers)."""
    parts = ["## Sweeps to the knee (`duet replay --sweep`, `--sweep-search`)", "",
             "Generated from the committed results in `docs/results/knee/` (one file per setting, written by the command "
             "above its tables); virtual time, so no figure depends on the machine. A load multiplies the trace's "
             "arrival rate over a fixed window of trace seconds: every load replays the same requests. *Good*: met its "
             "budgets on a variant parity allows. *Goodput at 99%* is the highest load at which at least 99% of requests "
             "are good, interpolated between the tried loads around the crossing; `≥` marks one the tried loads never "
             "reached (a lower bound), `<` one under the lowest load tried. Intervals are Student-t 95% over seeds, each "
             "seed's window 60 trace seconds after the last; Duet's ratio to the best baseline is paired seed by seed. "
             "Goals (issue #26): at least 1.0x on `h100-70b` (bf16 | FP8), 1.2x on a pairing with a trade-off.", ""]
    if not results:
        return "\n".join([*parts, "No sweep committed yet."])
    parts += [summary(results), ""]
    for stem, result in results:
        window = result["window"]
        parts += [f"### `{stem}`: {result['replicas']}, {window['name']} window", "", "```sh", result["command"], "```", "",
                  f"Trace seconds {window['covered_s'][0]:g}-{window['covered_s'][1]:g} over {result['seeds']} seeds "
                  f"({', '.join(str(r['requests']) for r in window['runs'])} requests); output length "
                  f"{result['output_length']}; speed priors off by {result['prior_error']:.0%}.", ""]
        if result["kind"] == "grid":
            parts += [share_table(result), "", trailing_line(result), "",
                      f"![good share against load, {stem}](results/knee/{stem}.png)", ""]
        parts += [crossing_table(result), ""]
    return "\n".join(parts).rstrip()


def summary(results: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The first screen: per file and constraint, Duet against the best baseline and the goal."""
    lines = ["| setting | constraint | Duet | best baseline | its | Duet / best | goal | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for stem, result in results:
        for entry in result["crossings"]:
            comparison = compare(entry)
            if comparison is None:
                continue
            best = comparison["best_baseline"]
            duet, theirs = entry["policies"][comparison["subject"]]["load"], entry["policies"][best]["load"]
            ratio = comparison["ratio"]
            lines.append(f"| `{stem}` | {entry['constraint']} | {load_cell(duet)} | {best} | {load_cell(theirs)} | "
                         f"{ratio_cell(ratio)} | ≥ {goal(result):g}x | {verdict(ratio, goal(result))} |")
    lines.append("")
    lines += [f"- `{stem}`: {trailing_line(result)}" for stem, result in results if result["kind"] == "grid"]
    return "\n".join(lines)


def trailing(result: Mapping[str, Any]) -> list[tuple[float, float, float]]:
    """The grid's loads where Duet's good share trails the best baseline's at that load by more
    than that load's interval (the larger of the two 95% half-widths): (load, points behind,
    interval in points). Empty without a Duet policy or a baseline."""
    grid = result["grid"]
    duet = subject(grid)
    baselines = [name for name in grid if name not in DUET_POLICIES]
    if duet is None or not baselines:
        return []
    behind = []
    for k, ours in enumerate(grid[duet]):
        best = max((grid[name][k] for name in baselines), key=lambda row: row["good_fraction"])
        gap, width = best["good_fraction"] - ours["good_fraction"], max(best["ci95"] or 0.0, ours["ci95"] or 0.0)
        if gap > width:
            behind.append((ours["load"], round(gap * 100, 2), round(width * 100, 2)))
    return behind


def trailing_line(result: Mapping[str, Any]) -> str:
    behind = trailing(result)
    if not behind:
        return "At no tried load does Duet trail the best baseline at that load by more than its interval."
    cells = ", ".join(f"x{load:g} ({gap:.2f} points behind, interval {width:.2f})" for load, gap, width in behind)
    return f"Duet trails the best baseline at that load by more than its interval at {cells}."


def share_table(result: Mapping[str, Any]) -> str:
    """Policies x loads: good share ± its 95% interval."""
    loads = result["loads"]
    rates = {row["load"]: row["rate_rps"] for row in next(iter(result["grid"].values()))}
    head = ["policy", *[f"x{x:g} ({rates[x]:.2f} req/s)" for x in loads]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for policy, rows in result["grid"].items():
        lines.append("| " + " | ".join([policy, *[share_cell(r) for r in rows]]) + " |")
    return "\n".join(lines)


def crossing_table(result: Mapping[str, Any]) -> str:
    """Per constraint, each policy's crossing load in multiples and req/s, and Duet's ratio."""
    lines = ["| constraint | policy | load | req/s | Duet / it |", "|---|---|---|---|---|"]
    for entry in result["crossings"]:
        comparison = compare(entry)
        for policy, c in entry["policies"].items():
            best = comparison is not None and comparison["best_baseline"] == policy
            ratio = ratio_cell(comparison["ratio"]) if comparison is not None and best else ""
            name = f"{policy} (best baseline)" if best else policy
            lines.append(f"| {entry['constraint']} | {name} | {load_cell(c['load'])} | {load_cell(c['rate_rps'], unit='')} | "
                         f"{ratio} |")
    return "\n".join(lines)


def share_cell(row: Mapping[str, Any]) -> str:
    return f"{row['good_fraction']:.2%} ± {row['ci95']:.2%}" if row["ci95"] else f"{row['good_fraction']:.2%}"


def load_cell(e: Mapping[str, Any], unit: str = "x", suffix: str = "") -> str:
    """An estimate: ``x1.23 ± 0.05``, or its bound (``≥ x2``, ``< x0.35``), † when a seed's share
    was not monotone in load; ``undetermined`` when the tried loads bracket nothing."""
    mark = " †" if e.get("nonmonotone_seeds") else ""
    value = "" if e["mean"] is None else f"{unit}{e['mean']:.3g}{suffix}"
    if e["kind"] == "exact":
        return f"{value} ± {e['ci95']:.2g}{mark}" if e["ci95"] else f"{value}{mark}"
    bound = {"at_least": "≥", "at_most": "≤", "below": "<"}.get(e["kind"])
    return "undetermined" if bound is None else f"{bound} {value}{mark}"


def ratio_cell(e: Mapping[str, Any]) -> str:
    return load_cell(e, unit="", suffix="x")


def verdict(ratio: Mapping[str, Any], target: float) -> str:
    """Met, not met or undetermined, and how surely (the interval, or a bound's side)."""
    kind, mean, ci = ratio["kind"], ratio["mean"], ratio["ci95"] or 0.0
    if kind == "exact":
        if mean >= target:
            return "**met**" + (" (interval clears it)" if mean - ci >= target else " (within the interval)")
        return "**not met**" + (" (within the interval)" if mean + ci >= target else "")
    if kind == "at_least" and mean >= target:
        return "**met** (a lower bound)"
    if kind in ("at_most", "below") and mean < target:
        return "**not met** (an upper bound)"
    return "undetermined (the tried loads do not bracket both)"


def plot(result: Mapping[str, Any], path: Path) -> Path:
    """Good share against load, one line per policy, 95% interval bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for policy, rows in result["grid"].items():
        ax.errorbar([r["load"] for r in rows], [100 * r["good_fraction"] for r in rows],
                    yerr=[100 * r["ci95"] for r in rows], label=policy, marker="o", markersize=3, capsize=2,
                    linewidth=2.2 if policy in DUET_POLICIES else 1.0)
    for level in (99, 95):
        ax.axhline(level, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlabel("load (x the trace's arrival rate)")
    ax.set_ylabel("good requests (%)")
    ax.set_title(f"{result['replicas']}, {result['window']['name']} window, {result['seeds']} seeds")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def write_plots(results_dir: Path = RESULTS_DIR) -> None:
    """Each grid file's plot next to it (``<stem>.png``)."""
    for stem, result in load(results_dir):
        if result["kind"] == "grid":
            plot(result, results_dir / f"{stem}.png")


if __name__ == "__main__":
    # The section itself is written with every other one: ``python -m loadtests.sections``.
    write_plots()
