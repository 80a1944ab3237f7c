"""Each area's headline for the benchmarks summary, computed from the same committed results as
its section: the figure, the goal it is held to, the anchor it is measured against, met or not."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.fleet.capacity import layout_render
from gateway.fleet.capacity import render as capacity_render
from gateway.fleet.capacity.days import day_curve_render, day_render
from gateway.fleet.sweep import render as knee
from loadtests.benchmarks.overhead.report.results import read as read_overhead
from loadtests.benchmarks.overhead.report.summary import goals
from loadtests.benchmarks.prompt_cache.render import COST_GOAL, load_replays
from loadtests.benchmarks.sim.h100_fidelity import CLOSE
from loadtests.benchmarks.sim.h100_fidelity import RESULTS as FIDELITY
from loadtests.benchmarks.variants.bench import RESULTS as VARIANTS
from loadtests.sections.section import Headline


def prompt_cache() -> Headline:
    """Duet's cost against always-standard's on the heaviest Mooncake replay."""
    name, result = max(load_replays(), key=lambda r: r[1]["rate_scale"])
    policies = result["policies"]
    ratio = policies["duet"]["cost_usd"] / policies["always-standard"]["cost_usd"]
    llmd = policies["duet"]["good_fraction"] >= policies["llm-d-default"]["good_fraction"]
    return Headline("Prompt cache", f"cost {ratio:.3f}x always-standard's; good requests "
                    f"{policies['duet']['good_fraction']:.1%} vs llm-d-default's "
                    f"{policies['llm-d-default']['good_fraction']:.1%} "
                    f"(Mooncake x{result['rate_scale']:g})", f"cost at most {COST_GOAL:g}x, good at least llm-d-default's",
                    "always-standard, llm-d-default", ratio <= COST_GOAL and llmd)


def overhead() -> Headline:
    """The largest added p50 of Duet's modes, against issue #3's 1 ms."""
    found = [g for g in goals(read_overhead().result.measurements) if g.name.endswith("added p50 (ms)")]
    worst = max(found, key=lambda g: g.measured or 0.0)
    return Headline("Gateway overhead", f"added p50 at most {worst.measured:.3f} ms ({worst.name.split(':')[0]})",
                    f"at most {worst.limit:g} ms in every mode", "a direct connection (vllm-router alongside)",
                    all(g.met for g in found))


def fidelity() -> Headline:
    """Fitted points within ``CLOSE`` of the published figure."""
    fitted = [p for p in json.loads(FIDELITY.read_text())["points"] if p["fitted"]]
    close = sum(1 for p in fitted if abs(p["sim"] / p["published"] - 1) <= CLOSE)
    return Headline("Simulator fidelity", f"{close} of {len(fitted)} fitted points within {CLOSE:.0%}",
                    f"every fitted point within {CLOSE:.0%}", "published H100 measurements", close == len(fitted))


def variants() -> Headline:
    """The fastest real fast variant against standard, at the batch of eight."""
    rows = [r for r in json.loads(VARIANTS.read_text())["results"] if r["variant"] != "standard"]
    best = max(rows, key=lambda r: r["vs_standard"]["open@8"])
    speedup = best["vs_standard"]["open@8"]
    return Headline("Real variants", f"{best['variant']} x{speedup:g} standard's tok/s at batch 8",
                    "a fast variant faster than standard", "standard (bf16), same CPU", speedup > 1)


def knee_sweep() -> Headline:
    """The summary's "Routing at the knee" row: Duet's goodput at 99% and at 95% good over the best
    baseline's, per committed setting, met only when every verdict is."""
    rows = [(stem, result, entry["level"], comparison) for stem, result in knee.load() for entry in result["crossings"]
            if entry["level"] in (0.99, 0.95) and (comparison := knee.compare(entry)) is not None]
    cells = {level: ", ".join(f"{knee.ratio_cell(c['ratio'])} `{stem}`" for stem, _, lv, c in rows if lv == level)
             for level in (0.99, 0.95)}
    figure = "; ".join(f"at {level:.0%} good: {text}" for level, text in cells.items() if text) or "no sweep yet"
    verdicts = [knee.verdict(c["ratio"], knee.goal(result)) for _, result, _, c in rows]
    met = None if not rows else all(v.startswith("**met**") for v in verdicts)
    return Headline("Routing at the knee", f"Duet's goodput over the best baseline's {figure} (`duet replay --sweep`)",
                    f">= {knee.GOALS['h100-70b']:g}x on h100-70b, >= {knee.TRADE_OFF_GOAL:g}x with a trade-off",
                    "the best baseline of each setting", met)


def capacity(plans: Sequence[Mapping[str, Any]]) -> Headline:
    """Duet's cheapest fleet against the best baseline's and an all-standard fleet's."""
    verdicts = [capacity_render.verdict(r) for r in plans]
    met = sum(v.costs_met for v in verdicts)
    figure = "; ".join(f"{v.baseline}, {v.all_standard} ({v.replica_set})" for v in verdicts) or "no plan yet"
    return Headline("Capacity", f"Duet's cheapest fleet: {figure}",
                    f"at most {capacity_render.BASELINE_GOAL:g}x and {capacity_render.ALL_STANDARD_GOAL:g}x on "
                    f"{capacity_render.PAIRINGS_NEEDED}+ pairings, "
                    "held out within 0.5 points of the target",
                    "the baselines' cheapest fleets; an all-standard fleet",
                    bool(verdicts) and met >= capacity_render.PAIRINGS_NEEDED and all(v.check_met for v in verdicts))


def capacity_layouts(plans: Sequence[Mapping[str, Any]]) -> Headline:
    """Duet's cheapest fleet over layouts against the best baseline's and all-standard TP4's."""
    goal = (f"at most {layout_render.BASELINE_GOAL:g}x the best baseline, {layout_render.ALL_STANDARD_GOAL:g}x "
            "all-standard TP4")
    if not plans:
        return Headline("Capacity over layouts", "no plan over layouts yet", goal, "—", None)
    figures, met = [], True
    for results in plans:
        r = layout_render.ratios(results)
        baseline, standard = r["baseline"], r["all_standard_tp4"]
        bound = "≤ " if layout_render.all_standard_tp4_is_bound(results) else ""
        figures.append(f"{'—' if baseline is None else f'{baseline:.2f}x'} best baseline, "
                       f"{'—' if standard is None else f'{bound}{standard:.2f}x'} all-standard TP4 "
                       f"({results['replica_set']})")
        met = met and baseline is not None and standard is not None and baseline <= layout_render.BASELINE_GOAL \
            and standard <= layout_render.ALL_STANDARD_GOAL
    return Headline("Capacity over layouts", "Duet's cheapest fleet: " + "; ".join(figures), goal,
                    "the baselines' best uniform layout; an all-standard fleet at TP4", met)


def capacity_day(days: Sequence[Mapping[str, Any]]) -> Headline:
    """The autoscaled day's cost against the peak's fixed fleet, and its good share against the target."""
    if not days:
        return Headline("Autoscaling", "no day replayed yet", f"<= {day_render.COST_GOAL:g}x the peak's fixed fleet", "—",
                        None)
    verdicts = [all(day_render.meets(d)) for d in days]
    figure = "; ".join(f"{d['summary']['autoscaled_vs_fixed']:.2f}x, {d['summary']['autoscaled_good']:.2%} good "
                       f"({d['replica_set']})" for d in days)
    return Headline("Autoscaling", figure,
                    f"<= {day_render.COST_GOAL:g}x cost, good within {day_render.GOOD_POINTS:g} point of the target",
                    "the fixed fleet sized for the day's peak", all(verdicts))


def capacity_day_curve(days: Sequence[Mapping[str, Any]]) -> Headline:
    """The held-out day on a fitted curve against issue #37's all-standard and best-baseline fleets."""
    goal = (f"<= {day_curve_render.ALL_STANDARD_GOAL:g}x all-standard TP4 (llm-d-default), <= "
            f"{day_curve_render.BASELINE_GOAL:g}x the best baseline, good within {day_curve_render.GOOD_POINTS:g} point")
    anchor = "an all-standard fleet fixed at the peak on vLLM's defaults; the best baseline's cheapest fleet"
    if not days:
        return Headline("A day on a fitted curve", "no day replayed yet", goal, anchor, None)
    figures = []
    for day in days:
        a, verdict = day["against"], day_curve_render.verdicts(day)
        ratio = {k: "—" if a.get(k) is None else ("≤ " if a[k].get("bound") else "") + f"{a[k]['ratio']:.2f}x"
                 for k in ("all_standard_defaults", "best_baseline")}
        # Each goal's verdict beside its figure: one day can meet one goal and miss another.
        word = {k: "" if v is None else " (met)" if v else " (missed)" for k, v in verdict.items()}
        figures.append(f"{ratio['all_standard_defaults']} all-standard TP4{word['all_standard']}, "
                       f"{ratio['best_baseline']} best baseline{word['baseline']}, "
                       f"{day['summary']['autoscaled_good']:.2%} good{word['good']} ({day['replica_set']})")
    met = all(v is True for day in days for v in day_curve_render.verdicts(day).values())
    return Headline("A day on a fitted curve", "; ".join(figures), goal, anchor, met)
