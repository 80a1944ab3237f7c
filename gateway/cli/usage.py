"""duet usage: the usage and cost ledger of a running gateway (GET /v1/duet/usage with the admin
key from $DUET_ADMIN_KEY or --admin-key-env), as a table or JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("usage", help="usage and cost per key, model, variant and task")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the gateway")
    parser.add_argument("--month", default=None, help="YYYY-MM (default: this month, UTC)")
    parser.add_argument("--key", default=None, help="one key id")
    parser.add_argument("--admin-key-env", default="DUET_ADMIN_KEY")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import httpx

    params = {k: v for k, v in (("month", args.month), ("key", args.key)) if v}
    headers = {"authorization": f"Bearer {os.environ.get(args.admin_key_env, '')}"}
    try:
        response = httpx.get(f"{args.url.rstrip('/')}/v1/duet/usage", params=params, headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        print(f"duet usage: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        print(f"duet usage: HTTP {response.status_code}: {response.text}", file=sys.stderr)
        return 1
    payload = response.json()
    if args.json:
        print(json.dumps(payload, indent=1))
        return 0
    print(render(payload))
    return 0


def render(payload: dict[str, object]) -> str:
    """The ledger as an aligned text table with a total line."""
    rows = payload.get("data") or []
    assert isinstance(rows, list)
    header = ("key", "model", "variant", "task", "requests", "input", "output", "cost_usd")
    lines = [header] + [
        (r["key_id"], r["model"], r["variant"], r["task"], str(r["requests"]), str(r["input_tokens"]),
         str(r["output_tokens"]), f"{r['cost_usd']:.6f}") for r in rows
    ]
    total = sum(float(r["cost_usd"]) for r in rows)
    lines.append(("total", "", "", "", str(sum(int(r["requests"]) for r in rows)), "", "", f"{total:.6f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [f"usage for {payload.get('month')}"]
    text += ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    return "\n".join(text)
