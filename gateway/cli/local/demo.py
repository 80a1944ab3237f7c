"""duet demo: a handful of requests of different tasks and latency budgets through a running
gateway, and for each what Duet decided and what it cost.

Per request: the task detected (and from what), the variant and replica that answered, why (the
dry run's reason, ``POST /v1/duet/route``, with the live route when it differs), the latency, and
the replica time it used against the same tokens on the standard variant. Replica time is the
chargeback the gateway prices with (``ReplicaCost.chargeback``): a prompt token's prefill time, an
output token's share of a decode step, on the variant's speed block in ``--config`` (the config
``duet up`` wrote, calibrated); times a replica's GPUs it is GPU-seconds (a local replica has one
core). Without ``--config`` the cost columns are left out.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from gateway.config import load_config
from gateway.cost import ReplicaCost
from gateway.domain import VariantKind
from gateway.errors import ConfigError
from gateway.speed import SpeedPrior

MODEL = "smollm2"
STANDARD = "standard"  # the full-precision variant's name in the config `duet up` writes
TIMEOUT_S = 300.0  # a real CPU replica under load answers 64 tokens in seconds; a cold one in minutes
FALLBACK_BUDGET_MS = 800.0  # the tight ask's budget when no variant is predicted faster than the standard
STORY = ("Maria Lopez moved from Lisbon to Oslo in March 2024 to join Nordlys AS as a data engineer. "
         "Her manager is Erik Hansen.")
CODE = ("def order_total(items, tax_rate):\n"
        "    total = 0.0\n"
        "    for item in items:\n"
        "        total += item.price * item.quantity\n"
        "    total = total * (1 + tax_rate)\n"
        "    return round(total, 2)\n")


@dataclass(frozen=True, slots=True)
class DemoRequest:
    """One request the demo sends: what it shows (``label``), its prompt and its headers."""

    label: str
    prompt: str
    headers: Mapping[str, str]
    max_tokens: int = 48
    # A budget set between the standard's and the fastest variant's predicted latency for this
    # request on this machine (the dry run's), so the demo shows a budget choosing the variant
    # whatever the CPU: a fixed figure fits the standard on a fast machine and nothing on a slow one.
    tight_budget: bool = False


DEMO_REQUESTS = (
    DemoRequest("chat, no header", "What is the capital of France?", {}),
    DemoRequest("coding ask, no header", "Write a Python function `def is_even(n: int) -> bool:` that "
                                         "returns True when n is even.", {}),
    DemoRequest("reasoning puzzle, x-duet-task", "A bat and a ball cost $1.10 together. The bat costs $1.00 "
                "more than the ball. How much does the ball cost? Think step by step.",
                {"x-duet-task": "reasoning"}, max_tokens=96),
    DemoRequest("extraction, x-duet-task", f"From this text, give the person's name, old city and new city as "
                                           f"JSON.\n\n{STORY}", {"x-duet-task": "extraction"}),
    DemoRequest("extraction, no header", f"Extract the employer and the manager from: {STORY}", {}),
    # A code edit: the answer copies most of the prompt, where n-gram speculation is fastest (on chat
    # it was measured no faster than the standard on avx512: docs/results/default-pair-avx512.json).
    DemoRequest("code edit, tight budget", "Rename `total` to `subtotal` in this function. Answer with the "
                f"whole function only.\n\n```python\n{CODE}```", {}, max_tokens=64, tight_budget=True),
)


@dataclass(frozen=True, slots=True)
class Served:
    """What one demo request showed: the dry run's view, the live answer, its replica time."""

    budget_ms: str | None  # the latency budget sent, when the request carried one
    task: str
    task_source: str
    reason: str
    variant: str
    replica: str
    route: str
    latency_s: float
    prompt_tokens: int
    output_tokens: int
    status: int


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("demo", help="send a few requests through a running gateway and say "
                                                "where each went, why, and what it cost")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the gateway (default %(default)s)")
    parser.add_argument("--config", type=Path, help="the gateway's config (`duet up` prints it): prices the "
                                                    "replica time per variant")
    parser.add_argument("--api-key", help="a key, when the gateway requires keys")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return show(args.url, args.config, args.api_key)


def show(url: str, config: Path | None, api_key: str | None = None) -> int:
    """Send ``DEMO_REQUESTS`` to the gateway at ``url`` and print what happened to each; 1 when
    the gateway did not answer or ``config`` does not load."""
    try:
        seconds = ReplicaSeconds.of(config) if config else None
    except ConfigError as exc:
        print(f"duet demo: {exc}", file=sys.stderr)
        return 1
    # The demo's own calls are not news: httpx logs each at info, and under `duet up --demo` those
    # lines would interleave with the demo's in the gateway's log.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    auth = {"authorization": f"Bearer {api_key}"} if api_key else {}
    costs: list[tuple[float, float]] = []
    with httpx.Client(base_url=url, timeout=TIMEOUT_S, headers=auth) as client:
        for number, request in enumerate(DEMO_REQUESTS, 1):
            try:
                served = send(client, request)
            except httpx.HTTPError as exc:
                print(f"duet demo: {url} did not answer: {exc}", file=sys.stderr)
                return 1
            cost = seconds.cost(served) if seconds is not None else None
            costs += [cost] if cost is not None else []
            print(render(number, request, served, cost, seconds.standard if seconds else ""), flush=True)
    print(footer(url, config, costs, seconds.standard if seconds else ""), flush=True)
    return 0


def send(client: httpx.Client, request: DemoRequest) -> Served:
    """The dry run of ``request``, then the request itself. Raises httpx.HTTPError."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": request.prompt}],
            "max_tokens": request.max_tokens, "temperature": 0}
    headers = dict(request.headers)
    if request.tight_budget:
        headers["x-duet-latency-budget-ms"] = f"{tight_budget_ms(dry_run(client, body, headers)):.0f}"
    explained = dry_run(client, body, headers)
    started = time.perf_counter()
    answer = client.post("/v1/chat/completions", json=body, headers=headers)
    latency_s = time.perf_counter() - started
    usage = (answer.json().get("usage") or {}) if answer.status_code == 200 else {}
    return Served(budget_ms=headers.get("x-duet-latency-budget-ms"),
                  task=explained["request"]["task"], task_source=explained["request"]["task_source"],
                  reason=explained["decision"]["reason"], variant=answer.headers.get("x-duet-variant", "-"),
                  replica=answer.headers.get("x-duet-replica", "-"), route=answer.headers.get("x-duet-route", "-"),
                  latency_s=latency_s, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                  output_tokens=int(usage.get("completion_tokens", 0)), status=answer.status_code)


def dry_run(client: httpx.Client, body: Mapping[str, object], headers: Mapping[str, str]) -> dict:  # type: ignore[type-arg]
    """The gateway's decision for ``body`` without sending it (``POST /v1/duet/route``). Raises
    httpx.HTTPError."""
    plan = client.post("/v1/duet/route", json=body, headers=dict(headers))
    plan.raise_for_status()
    return plan.json()  # type: ignore[no-any-return]


def tight_budget_ms(explained: Mapping[str, object]) -> float:
    """Halfway between the fastest variant's predicted latency and the standard's, from a dry run's
    per-replica predictions: a budget only the faster variant is predicted to meet. The fallback
    budget when no routable variant is predicted faster than the standard (then the standard, or
    the fastest, serves, and the demo says which)."""
    best: dict[str, float] = {}
    for replica in explained["replicas"].values():  # type: ignore[attr-defined]
        e2e = (replica.get("prediction_ms") or {}).get("e2e")
        if e2e is not None:
            best[replica["variant"]] = min(e2e, best.get(replica["variant"], e2e))
    standard = best.pop(STANDARD, None)
    if standard is None or not best or min(best.values()) >= standard:
        return FALLBACK_BUDGET_MS
    return (min(best.values()) + standard) / 2


@dataclass(frozen=True, slots=True)
class ReplicaSeconds:
    """Replica-seconds per token of each variant, from a config's speed blocks, and which variant
    is the standard (the counterfactual)."""

    per_token: Mapping[str, tuple[float, float]]  # variant -> (s per prompt token, s per output token)
    standard: str

    @classmethod
    def of(cls, path: Path) -> ReplicaSeconds:
        """Read from the config at ``path``. Raises ConfigError."""
        model = load_config(path).models[MODEL]
        per_token = {name: per_token_seconds(v.speed) for name, v in model.variants.items()}
        standard = next(name for name, v in model.variants.items() if v.kind is VariantKind.FULL)
        return cls(per_token, standard)

    def cost(self, served: Served) -> tuple[float, float] | None:
        """(replica-seconds ``served`` used, the same tokens' on the standard), or None when its
        variant is not in the config (the request failed before a replica answered)."""
        if served.variant not in self.per_token:
            return None
        return self._seconds(served.variant, served), self._seconds(self.standard, served)

    def _seconds(self, variant: str, served: Served) -> float:
        prompt_s, output_s = self.per_token[variant]
        return served.prompt_tokens * prompt_s + served.output_tokens * output_s


def per_token_seconds(speed: SpeedPrior) -> tuple[float, float]:
    """(prompt, output) replica-seconds per token on ``speed``: the chargeback of a replica that
    costs one dollar per second (``ReplicaCost.chargeback``), so its prices read as seconds."""
    price = ReplicaCost(1, 3600.0).chargeback(speed)
    return price.input_per_mtok / 1e6, price.output_per_mtok / 1e6


def render(number: int, request: DemoRequest, served: Served, cost: tuple[float, float] | None,
           standard: str) -> str:
    """Three lines about one request; ``cost``: its replica-seconds and the standard's."""
    why = served.reason if served.route in (served.reason, "-") else f"{served.reason} (live: {served.route})"
    label = f"{request.label} ({served.budget_ms} ms)" if request.tight_budget else request.label
    lines = [f"[{number}] {label}: {request.prompt.splitlines()[0][:60]!r}",
             f"    task {served.task} ({served.task_source}) -> {served.variant} on {served.replica}; why: {why}"]
    outcome = f"    {served.latency_s:.2f} s, HTTP {served.status}, {served.prompt_tokens}+{served.output_tokens} tokens"
    if cost is not None:
        outcome += f", {cost[0] * 1000:.1f} replica-ms (on {standard}: {cost[1] * 1000:.1f})"
    return "\n".join([*lines, outcome])


def footer(url: str, config: Path | None, costs: list[tuple[float, float]], standard: str) -> str:
    used, counterfactual = sum(c[0] for c in costs), sum(c[1] for c in costs)
    lines = []
    if counterfactual > 0:
        saved = 1 - used / counterfactual
        verdict = f"{saved:.0%} saved" if saved >= 0 else f"{-saved:.0%} more: speed bought where a budget asked for it"
        lines.append(f"replica time: {used * 1000:.1f} ms, against {counterfactual * 1000:.1f} ms all on "
                     f"{standard} ({verdict})")
    where = config or "duet.yaml"
    lines += ["where to look next:",
              f"  curl {url}/metrics | grep -E 'duet_(requests|routing_decisions|cost_usd)'   per variant and task",
              f"  duet explain --config {where} request.json   any request's decision, offline, plugin by plugin",
              f"  curl {url}/v1/duet/route -d @body.json   the same, live (the dry run)",
              "  docs/routing.md (how a variant is chosen), docs/parity.md (what each variant may serve)"]
    return "\n".join(lines)
