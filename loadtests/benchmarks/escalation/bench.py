"""Validate, then escalate, measured: what checking the fast variant's tool calls costs and buys.

Two simulated replicas behind a real gateway (the demo config): the standard bf16 twin, scripted
to answer every request with a valid tool call, and the int4 twin, scripted to write broken JSON
arguments on a seeded share of the requests (``--invalid-rate``) and valid ones on the rest.
Every request offers one tool with a JSON schema (so it is an ``agent`` request, which the fast
variant is allowed). Per budget setting, the same requests are sent twice, ``--concurrency`` at a
time: pinned to ``smollm2:fast`` (the gateway never escalates a pinned request: that is the run
without validation) and to ``smollm2`` (the router picks the fast variant, the gateway checks its
answer and escalates a broken one when the budget left fits the standard's prediction).

Reported per setting: escalations (and answers kept for want of budget), answers that keep the
contract, client latency p50/p90 of both runs and the difference, and the cost the gateway
counted (``duet_cost_usd``, which includes the set-aside fast answers). Output: a table on
stdout and ``docs/results/escalation/escalation.json``, from which ``python -m loadtests.sections``
renders its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shlex
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.sim.server.testing import SimProcess

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "deploy" / "config" / "demo.yaml"
RESULTS = REPO / "docs" / "results" / "escalation" / "escalation.json"
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                         "parameters": PARAMETERS}}
CITIES = ("Oslo", "Paris", "Lima", "Quito", "Accra", "Hanoi", "Perth", "Tunis")
# (name, TTFT budget ms, end-to-end budget ms); None: the agent task's defaults in the demo config.
SETTINGS = (("budget 10 s", 10_000.0, 30_000.0), ("agent defaults (2 s TTFT)", None, None))


@dataclass(frozen=True, slots=True)
class Item:
    prompt: str
    city: str
    broken: bool


@dataclass(frozen=True, slots=True)
class Sample:
    latency_s: float
    variant: str
    escalated: bool
    kept: bool
    valid: bool


def items(count: int, invalid_rate: float, seed: int) -> list[Item]:
    """``count`` requests, exactly round(count x rate) of them broken, chosen by ``seed``."""
    broken = set(random.Random(seed).sample(range(count), round(count * invalid_rate)))
    return [Item(f"Request {i:04d}: what is the weather in {CITIES[i % len(CITIES)]} right now?",
                 CITIES[i % len(CITIES)], i in broken) for i in range(count)]


def script(work: Sequence[Item], broken: bool) -> dict[str, Any]:
    """The answers file of a replica: each prompt's call, broken (cut-off JSON) where asked."""
    rules = []
    for item in work:
        arguments: str | dict[str, str] = {"city": item.city}
        if broken and item.broken:
            arguments = json.dumps({"city": item.city})[:-1]  # the closing brace never written
        rules.append({"equals": item.prompt, "tool_call": {"name": "get_weather", "arguments": arguments}})
    return {"rules": rules}


def keeps_contract(body: Mapping[str, Any]) -> bool:
    """Whether an answer is one call of the offered tool with arguments matching its schema."""
    try:
        (call,) = body["choices"][0]["message"]["tool_calls"]
        jsonschema.validate(json.loads(call["function"]["arguments"]), PARAMETERS)
    except (KeyError, TypeError, ValueError, jsonschema.ValidationError):
        return False
    return bool(call["function"]["name"] == "get_weather")


async def one(client: httpx.AsyncClient, url: str, model: str, item: Item, headers: Mapping[str, str]) -> Sample:
    body = {"model": model, "messages": [{"role": "user", "content": item.prompt}], "tools": [TOOL],
            "max_tokens": 64, "temperature": 0}
    # Each request its own conversation: a session keeps the variant its first turn was served by,
    # and the same prompts are sent in every run.
    headers = {**headers, "x-session-id": uuid.uuid4().hex}
    started = time.perf_counter()
    response = await client.post(url + "/v1/chat/completions", json=body, headers=headers)
    latency = time.perf_counter() - started
    response.raise_for_status()
    return Sample(latency, response.headers["x-duet-variant"], "x-duet-escalated" in response.headers,
                  "x-duet-escalation-skipped" in response.headers, keeps_contract(response.json()))


async def phase(url: str, model: str, work: Sequence[Item], headers: Mapping[str, str], concurrency: int) -> list[Sample]:
    """Every item once, ``concurrency`` in flight (closed loop), in the items' order."""
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=120) as client:
        async def bounded(item: Item) -> Sample:
            async with gate:
                return await one(client, url, model, item, headers)
        return list(await asyncio.gather(*(bounded(item) for item in work)))


def cost_usd(url: str) -> float:
    """The gateway's ``duet_cost_usd_total``, summed over variants."""
    lines = httpx.get(url + "/metrics", timeout=10).text.splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("duet_cost_usd_total{"))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure_setting(url: str, work: Sequence[Item], budget: tuple[float | None, float | None],
                    concurrency: int) -> dict[str, Any]:
    ttft, e2e = budget
    headers = {k: str(int(v)) for k, v in (("x-duet-ttft-budget-ms", ttft), ("x-duet-latency-budget-ms", e2e)) if v}
    runs = {}
    for name, model in (("without", "smollm2:fast"), ("with", "smollm2")):
        before = cost_usd(url)
        samples = asyncio.run(phase(url, model, work, headers, concurrency))
        runs[name] = {"cost_usd": cost_usd(url) - before, "samples": samples}
    return summarize(runs, len(work))


def summarize(runs: Mapping[str, Mapping[str, Any]], count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, run in runs.items():
        samples: list[Sample] = run["samples"]
        latencies = [s.latency_s for s in samples]
        out[name] = {"p50_s": round(percentile(latencies, 0.5), 3), "p90_s": round(percentile(latencies, 0.9), 3),
                     "valid": sum(s.valid for s in samples), "escalated": sum(s.escalated for s in samples),
                     "kept_no_budget": sum(s.kept for s in samples),
                     "served_by": {v: sum(s.variant == v for s in samples) for v in sorted({s.variant for s in samples})},
                     "cost_usd": round(run["cost_usd"], 8)}
        out[name]["escalated_latency_p50_s"] = (round(percentile([s.latency_s for s in samples if s.escalated], 0.5), 3)
                                                if out[name]["escalated"] else None)
    out["requests"] = count
    return out


def run(requests: int, invalid_rate: float, concurrency: int, seed: int, time_scale: float) -> dict[str, Any]:
    work = items(requests, invalid_rate, seed)
    with tempfile.TemporaryDirectory(prefix="duet-escalation-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        sims = {}
        for variant, profile, broken in (("standard", "cpu-smollm2-bf16", False), ("fast", "cpu-smollm2-int4", True)):
            answers = folder / f"{variant}.json"
            answers.write_text(json.dumps(script(work, broken)))
            sims[variant] = stack.enter_context(SimProcess(profile, "--served-model-name", f"smollm2-{variant}",
                                                           "--answers", str(answers), "--time-scale", str(time_scale)))
        raw = yaml.safe_load(DEMO.read_text())
        for name, spec in raw["models"]["smollm2"]["variants"].items():
            spec["replicas"] = [{"url": sims[name].url}]
        config = folder / "duet.yaml"
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
        gateway = stack.enter_context(GatewayProcess(config, log_path=folder / "gateway.log"))
        asyncio.run(phase(gateway.url, "smollm2", work[:4], {}, 2))  # warm both variants' prompt caches
        settings = [{"setting": name, "ttft_budget_ms": ttft, "latency_budget_ms": e2e,
                     **measure_setting(gateway.url, work, (ttft, e2e), concurrency)} for name, ttft, e2e in SETTINGS]
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "requests": requests, "invalid_rate": invalid_rate,
            "broken": sum(i.broken for i in work), "concurrency": concurrency, "seed": seed, "time_scale": time_scale,
            "replicas": "serving.sim twins cpu-smollm2-bf16 (standard) and cpu-smollm2-int4 (fast), demo config prices",
            "settings": settings}


def render(result: Mapping[str, Any]) -> str:
    """The docs section, from a result file's content."""
    lines = ["## Validate, then escalate (tool calls)", "",
             f"Generated from `docs/results/escalation/escalation.json` ({result['date']}): "
             f"`{result['command']}`. {result['requests']} tool-call requests, {result['broken']} of them "
             f"({result['broken'] / result['requests']:.0%}, seeded rate {result['invalid_rate']}) answered with broken JSON "
             f"arguments by the fast replica, {result['concurrency']} in flight; {result['replicas']}, time scale "
             f"{result['time_scale']}. *Without*: pinned to `smollm2:fast` (never checked); *with*: `smollm2` "
             "(checked, escalated to the standard when the budget left fits its prediction).", "",
             "| setting | run | valid answers | escalated | kept (no budget) | p50 s | p90 s | cost USD |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in result["settings"]:
        for run_name in ("without", "with"):
            r = s[run_name]
            lines.append(f"| {s['setting']} | {run_name} | {r['valid']}/{s['requests']} | {r['escalated']} | "
                         f"{r['kept_no_budget']} | {r['p50_s']:.3f} | {r['p90_s']:.3f} | {r['cost_usd']:.6f} |")
    lines += ["", *[_delta(s) for s in result["settings"]], ""]
    return "\n".join(lines)


def _delta(setting: Mapping[str, Any]) -> str:
    without, with_ = setting["without"], setting["with"]
    rate = with_["escalated"] / setting["requests"]
    cost = with_["cost_usd"] / without["cost_usd"] - 1 if without["cost_usd"] else 0.0
    escalated = (f"; an escalated request took {with_['escalated_latency_p50_s']:.3f} s at the median"
                 if with_["escalated_latency_p50_s"] is not None else "")
    return (f"- {setting['setting']}: escalation rate {rate:.1%}; added latency p50 {with_['p50_s'] - without['p50_s']:+.3f} s, "
            f"p90 {with_['p90_s'] - without['p90_s']:+.3f} s{escalated}; cost {cost:+.1%} "
            f"({with_['valid']} valid answers against {without['valid']}).")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.benchmarks.escalation.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--invalid-rate", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-scale", type=float, default=1.0, help="simulator time scale (1: the twins' real speed)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.requests < 1 or not 0 <= args.invalid_rate <= 1 or args.concurrency < 1:
        print("escalation_bench: --requests >= 1, --invalid-rate in [0, 1], --concurrency >= 1", file=sys.stderr)
        return 2
    result = run(args.requests, args.invalid_rate, args.concurrency, args.seed, args.time_scale)
    argv_used = sys.argv[1:] if argv is None else list(argv)
    result["command"] = "python -m loadtests.benchmarks.escalation.bench " + shlex.join(argv_used)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
