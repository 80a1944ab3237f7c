"""Each area's headline for the benchmarks summary, computed from the same committed results as
its section: the figure, the goal it is held to, the anchor it is measured against, met or not."""

from __future__ import annotations

import json

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
