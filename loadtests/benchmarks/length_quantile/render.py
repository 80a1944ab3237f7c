"""The "Why the median" table of docs/routing.md (issue #16): Duet planning with other quantiles of
each task's learned output lengths, replayed on the tuning window and the held-out ones, rendered
from the committed ``duet replay --length-quantile Q --out`` results
(``docs/results/length-quantile/*.json``). ``python -m loadtests.sections`` rewrites the table; the
registry's test checks the docs hold exactly what the files render to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.fleet.replay.results import good_cell
from gateway.fleet.replay.seeds import interval

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "docs" / "results" / "length-quantile"
KEPT = 0.5  # the router's default quantile
WINDOWS = {0.0: "tuning window", 1260.0: "held out", 2340.0: "held out"}


def load(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Every committed replay, each with the quantile and window start read from its command."""
    results = []
    for path in sorted(results_dir.glob("*.json")):
        result = json.loads(path.read_text())
        words = result["command"].split()
        option = dict(zip(words, words[1:], strict=False))
        result["quantile"] = float(option.get("--length-quantile", KEPT))
        result["start"] = float(option["--start"])
        results.append(result)
    return results


def _cell(result: Mapping[str, Any]) -> str:
    duet = result["policies"]["duet"]
    return f"{good_cell(duet)} / ${duet['cost_usd']:.2f}"


def render(results: Sequence[Mapping[str, Any]]) -> str:
    """The table (rows: quantiles; columns: windows), the command behind it, markers included."""
    starts = sorted({r["start"] for r in results})
    quantiles = sorted({r["quantile"] for r in results})
    cells = {(r["quantile"], r["start"]): _cell(r) for r in results}
    example = next(r["command"] for r in results if r["quantile"] != KEPT)
    head = ["planned at", *(f"{WINDOWS.get(s, 'window')} (start {s:g})" for s in starts)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for q in quantiles:
        name = f"p{100 * q:g}" + (" (kept)" if q == KEPT else "")
        lines.append("| " + " | ".join([name, *(cells.get((q, s), "–") for s in starts)]) + " |")
    lines += ["", f"Good requests / cost, from `docs/results/length-quantile/`; each file's command, e.g. `{example}`.",
              "", *against_kept(results, quantiles, starts)]
    return "\n".join(lines)


def against_kept(results: Sequence[Mapping[str, Any]], quantiles: Sequence[float], starts: Sequence[float]) -> list[str]:
    """Per other quantile, window by window: points of good requests and cost relative to ``KEPT``.
    With several seeds the difference is paired seed by seed (the same arrivals and prior errors
    under both quantiles), its mean with a 95% Student-t interval."""
    duet = {(r["quantile"], r["start"]): r["policies"]["duet"] for r in results}
    lines = []
    for q in (q for q in quantiles if q != KEPT):
        pairs = [(duet[(q, s)], duet[(KEPT, s)]) for s in starts if (q, s) in duet and (KEPT, s) in duet]
        points = " / ".join(_paired(a, b, lambda x, y: 100 * (x["good_fraction"] - y["good_fraction"]), "+.2f", "")
                            for a, b in pairs)
        cost = " / ".join(_paired(a, b, lambda x, y: 100 * (x["cost_usd"] / y["cost_usd"] - 1), "+.1f", "%")
                          for a, b in pairs)
        lines.append(f"- p{100 * q:g} against p{100 * KEPT:g}, window by window: {points} points of good requests, "
                     f"cost {cost}.")
    return lines


def _paired(a: Mapping[str, Any], b: Mapping[str, Any], diff: Callable[[Mapping[str, Any], Mapping[str, Any]], float],
            fmt: str, unit: str) -> str:
    """``diff`` of the two summaries, or of their seeds pair by pair (mean ± 95% half-width)."""
    runs_a, runs_b = a.get("runs"), b.get("runs")
    if not runs_a or not runs_b or len(runs_a) != len(runs_b):
        return f"{format(diff(a, b), fmt)}{unit}"
    mean, half = interval([diff(x, y) for x, y in zip(runs_a, runs_b, strict=True)])
    return f"{format(mean, fmt)}{unit} ± {abs(half):.2f}{unit}"
