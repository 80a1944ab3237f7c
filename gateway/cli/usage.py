"""duet usage: the usage and cost ledger of a running gateway (GET /v1/duet/usage with the admin
key from $DUET_ADMIN_KEY or --admin-key-env), as a table or JSON; with --savings, the savings
receipt per key and tenant and the parity verdicts beside it (GET /v1/duet/savings)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from gateway.cli.usage_savings import render_savings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("usage", help="usage and cost per key, model, variant and task")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the gateway")
    parser.add_argument("--month", default=None, type=_month, help="YYYY-MM (default: this month, UTC)")
    parser.add_argument("--key", default=None, help="one key id")
    parser.add_argument("--savings", action="store_true",
                        help="GPU-dollars spent and saved against standard-only, per key and tenant, with parity's verdicts")
    parser.add_argument("--tenant", default=None, help="one tenant (with --savings)")
    parser.add_argument("--since", default=None, type=_month, help="YYYY-MM: from that month to --month (with --savings)")
    parser.add_argument("--admin-key-env", default="DUET_ADMIN_KEY")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)


def _month(text: str) -> str:
    if re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", text) is None:
        raise argparse.ArgumentTypeError(f"'{text}' is not a month: write YYYY-MM (for example 2026-12)")
    return text


def run(args: argparse.Namespace) -> int:
    import httpx

    if not args.savings and (args.tenant is not None or args.since is not None):
        print("duet usage: --tenant and --since need --savings", file=sys.stderr)
        return 2
    path = "/v1/duet/savings" if args.savings else "/v1/duet/usage"
    asked = (("month", args.month), ("key", args.key), ("tenant", args.tenant), ("since", args.since))
    params = {k: v for k, v in asked if v}
    admin_key = os.environ.get(args.admin_key_env, "").strip()
    if not admin_key:
        print(f"duet usage: ${args.admin_key_env} is not set: it holds the gateway's admin key", file=sys.stderr)
        return 2
    headers = {"authorization": f"Bearer {admin_key}"}
    try:
        response = httpx.get(f"{args.url.rstrip('/')}{path}", params=params, headers=headers, timeout=10)
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
    print(render_savings(payload) if args.savings else render(payload))
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
