"""duet explain: how the policy in a config would route one request, offline.

REQUEST.json is a chat/completions body, or ``{"headers": {...}, "body": {...}}``. Replicas are
assumed up and idle unless ``--state`` gives a JSON object of replica id -> ReplicaState fields
(``{"smollm2/fast/0": {"health": "down"}}``), cold unless ``--warm REPLICA`` says the replica
holds this prompt (as if it had served it), and the request's conversation new unless
``--seated REPLICA`` says its session sits there. For the live answer, POST the same body to a
running gateway's /v1/duet/route.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.config import load_config
from gateway.domain import BreakerState, Health, ReplicaState
from gateway.errors import ConfigError, RequestError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("explain", help="show how a config routes a request (dry run)")
    parser.add_argument("--config", required=True)
    parser.add_argument("request", help="REQUEST.json: a body, or {headers, body}")
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE")
    parser.add_argument("--state", help="JSON file: replica id -> state fields (default: all up, idle)")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.add_argument("--warm", action="append", default=[], metavar="REPLICA",
                        help="the replica holds this prompt in its prefix cache (repeatable)")
    parser.add_argument("--seated", metavar="REPLICA", help="the request's session sits on this replica")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gateway.api.explain import explain_plan
    from gateway.config.active import ActiveConfig, build_counters
    from gateway.flow import Inbound, View, parse_any_body, plan_request

    try:
        config = load_config(args.config)
        document = json.loads(Path(args.request).read_text())
        body_doc = document.get("body", document) if isinstance(document, dict) else document
        headers = {k.lower(): str(v) for k, v in (document.get("headers") or {}).items()} if "body" in document else {}
        for item in args.header:
            name, _, value = item.partition(":")
            headers[name.strip().lower()] = value.strip()
        _, body = parse_any_body(json.dumps(body_doc).encode())
        snapshot = _snapshot(config.replicas, json.loads(Path(args.state).read_text()) if args.state else {})
        counters = build_counters(config)
        view = _history(config, counters, Inbound(body, headers), View(snapshot), args)
        plan = plan_request(ActiveConfig(config, counters), Inbound(body, headers), view, explain=True)
    except (ConfigError, RequestError, OSError, ValueError) as exc:
        print(f"duet explain: {exc}", file=sys.stderr)
        return 1
    report = explain_plan(plan)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def _history(config: Any, counters: Any, inbound: Any, view: Any, args: argparse.Namespace) -> Any:
    """``view`` with the prefix index and the sessions the ``--warm`` and ``--seated`` flags
    describe (the offline explain has no traffic to learn them from)."""
    import dataclasses

    from gateway.flow import InMemoryPrefixIndex, Sessions, prompt_prefix
    from gateway.flow.classify import resolve_model
    from gateway.sessions.session_id import session_key

    model = resolve_model(config, inbound.body.model).model
    replicas = {r.id: r for r in model.replicas}
    for name in [*args.warm, *([args.seated] if args.seated else [])]:
        if name not in replicas:
            raise ValueError(f"no replica '{name}' in model {model.name} (it has {', '.join(replicas)})")
    index = InMemoryPrefixIndex(config.policy.prefix_cache.blocks_per_replica)
    prefix = prompt_prefix(inbound, counters[model.name], config.policy.prefix_cache.block_tokens)
    for name in args.warm:
        index.learn(name, prefix.blocks)
    sessions = Sessions(1)
    key = session_key(inbound.body, inbound.headers, model.name)
    if args.seated and key is not None:
        sessions.sit(key, replicas[args.seated].variant, args.seated)
    return dataclasses.replace(view, prefixes=index, sessions=sessions)


def _snapshot(replicas: Any, overrides: dict[str, dict[str, Any]]) -> dict[str, ReplicaState]:
    snapshot = {}
    for replica in replicas:
        fields: dict[str, Any] = {"health": "up", **overrides.get(replica.id, {})}
        fields["health"] = Health(fields["health"])
        if "breaker" in fields:
            fields["breaker"] = BreakerState(fields["breaker"])
        snapshot[replica.id] = ReplicaState(replica.id, **fields)
    return snapshot


def render(report: dict[str, Any]) -> str:
    request, decision = report["request"], report["decision"]
    confidence = request.get("task_confidence")
    detected = "" if confidence is None else f" confidence {confidence:.2f}"
    if request.get("task_abstained"):
        detected += f", abstained: may be {', '.join(request['plausible_tasks'])}"
    elif len(request.get("plausible_tasks") or ()) > 1:
        detected += f", may also be {', '.join(t for t in request['plausible_tasks'] if t != request['task'])}"
    lines = [
        f"model {report['model']}  task {request['task']} ({request['task_source']}{detected})  "
        f"input {request['input_tokens']} tok  expected output {request['expected_output_tokens']} tok",
        f"budget ttft {request['ttft_budget_ms']} ms  latency {request['latency_budget_ms']} ms  "
        f"tpot {request['tpot_budget_ms']} ms  pinned {request['pinned_variant']}",
        f"profile {report['routing_profile']} -> variant {decision['variant']}  reason {decision['reason']}  "
        f"meets budget {decision['meets_budget']}",
        f"ranked: {', '.join(decision['ranked_replicas']) or '(none)'}",
        f"prompt {report.get('prefix_blocks', 0)} prefix blocks; session: "
        f"{(report.get('session') or {}).get('header', 'none')}",
    ]
    for replica_id, entry in report["replicas"].items():
        prediction = entry.get("prediction_ms")
        predicted = f"  ttft {prediction['ttft']} ms, e2e {prediction['e2e']} ms" if prediction else ""
        cached = f"  cached {entry['cached_tokens']} tok" if entry.get("cached_tokens") else ""
        lines.append(f"  {replica_id} [{entry['variant']}]{predicted}{cached}")
        for verdict in entry["verdicts"]:
            if "score" in verdict:
                mark = f"score {verdict['score']:.3f}"
            else:
                mark = "pass" if verdict["passed"] else "REJECT"
            lines.append(f"    {verdict['plugin']:<22} {mark:<12} {verdict.get('reason', '')}")
    return "\n".join(lines)
