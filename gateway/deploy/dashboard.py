"""The Grafana dashboard: SLO attainment by task, variant mix, TTFT/TPOT p50/p99 per variant,
cost, replica load and health, fallbacks, rate-limit rejections and the savings receipt (GPU-dollars
spent against standard-only, share served fast).

Expressions read only metrics that the gateway (``duet_*``) or vLLM (``vllm:*``) export; vLLM's
series carry ``model``/``variant`` labels that the scrape config sets (compose) or relabels from
the Service's labels (Kubernetes ServiceMonitor), the same names the gateway's own series use.
"""

from __future__ import annotations

from typing import Any

RATE = "[$__rate_interval]"
MODEL = 'model=~"$model"'
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def quantiles(metric: str, by: str, selector: str) -> list[tuple[str, str]]:
    """p50 and p99 of a histogram, one series per ``by`` value."""
    return [(f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}_bucket{{{selector}}}{RATE})))", f"p{name} {{{{{by}}}}}")
            for q, name in (("0.5", "50"), ("0.99", "99"))]


PANELS: tuple[tuple[str, str, list[tuple[str, str]]], ...] = (
    ("SLO attainment by task (share of requests within budget)", "percentunit", [
        (f'sum by (task) (rate(duet_slo_total{{result="met"}}{RATE}))\n/\n'
         f"sum by (task) (rate(duet_slo_total{RATE}))", "{{task}}"),
    ]),
    ("Variant mix (share of served requests)", "percentunit", [
        (f'sum by (variant) (rate(duet_requests_total{{{MODEL},variant!="none"}}{RATE}))\n/ ignoring (variant) group_left\n'
         f'sum (rate(duet_requests_total{{{MODEL},variant!="none"}}{RATE}))', "{{variant}}"),
    ]),
    ("Time to first token per variant (gateway)", "s", quantiles("duet_ttft_seconds", "variant", MODEL)),
    ("Time per output token per variant (vLLM)", "s", quantiles("vllm:request_time_per_output_token_seconds", "variant", MODEL)),
    ("End-to-end latency per variant (gateway)", "s", quantiles("duet_e2e_seconds", "variant", MODEL)),
    ("Cost (USD per hour)", "currencyUSD", [
        (f"sum by (variant) (rate(duet_cost_usd_total{{{MODEL}}}{RATE})) * 3600", "{{variant}}"),
    ]),
    ("Requests by status", "reqps", [
        (f"sum by (status) (rate(duet_requests_total{{{MODEL}}}{RATE}))", "{{status}}"),
    ]),
    ("Replica load: running / waiting requests (vLLM)", "short", [
        (f"sum by (variant, instance) (vllm:num_requests_running{{{MODEL}}})", "running {{variant}} {{instance}}"),
        (f"sum by (variant, instance) (vllm:num_requests_waiting{{{MODEL}}})", "waiting {{variant}} {{instance}}"),
    ]),
    ("Replica KV cache usage (vLLM)", "percentunit", [
        (f"max by (variant, instance) (vllm:kv_cache_usage_perc{{{MODEL}}})", "{{variant}} {{instance}}"),
    ]),
    ("Replica health (1 up) and open breakers, as the gateways see them", "short", [
        (f"min by (replica) (duet_replica_up{{{MODEL}}})", "up {{replica}}"),
        (f"max by (replica) (duet_replica_breaker_open{{{MODEL}}})", "breaker open {{replica}}"),
    ]),
    ("In flight per replica (all gateways)", "short", [
        (f"sum by (replica) (duet_replica_in_flight{{{MODEL}}})", "{{replica}}"),
    ]),
    ("Fallbacks (served by a replica other than the first ranked)", "reqps", [
        (f"sum by (model) (rate(duet_fallbacks_total{{{MODEL}}}{RATE}))", "{{model}}"),
    ]),
    ("Rate-limit rejections by limit", "reqps", [
        (f"sum by (limit) (rate(duet_rate_limited_total{RATE}))", "{{limit}}"),
    ]),
    ("Gateway overhead p99", "s", [
        (f"histogram_quantile(0.99, sum by (le) (rate(duet_gateway_overhead_seconds_bucket{RATE})))", "p99"),
    ]),
    # The savings receipt (gateway/access/receipts/receipt.py): each request's GPU-dollars on the variant
    # that served it, beside what standard would have used for the same tokens.
    ("Savings: GPU-dollars per hour spent, and standard-only for the same requests", "currencyUSD", [
        (f"sum (rate(duet_receipt_gpu_usd_total{{{MODEL}}}{RATE})) * 3600", "spent"),
        (f"sum (rate(duet_receipt_standard_gpu_usd_total{{{MODEL}}}{RATE})) * 3600", "standard-only"),
    ]),
    ("Savings: share served fast, and GPU-dollars saved against standard-only", "percentunit", [
        (f'sum (rate(duet_receipt_requests_total{{{MODEL},served="fast"}}{RATE}))\n/\n'
         f"sum (rate(duet_receipt_requests_total{{{MODEL}}}{RATE}))", "served fast"),
        (f"1 - sum (rate(duet_receipt_gpu_usd_total{{{MODEL}}}{RATE}))\n/\n"
         f"sum (rate(duet_receipt_standard_gpu_usd_total{{{MODEL}}}{RATE}))", "saved"),
    ]),
)


def panel(index: int, title: str, unit: str, targets: list[tuple[str, str]]) -> dict[str, Any]:
    """A time-series panel, two per row, 8 units high."""
    return {
        "id": index + 1, "type": "timeseries", "title": title, "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom"}},
        "targets": [{"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend, "datasource": DATASOURCE}
                    for i, (expr, legend) in enumerate(targets)],
    }


def dashboard() -> dict[str, Any]:
    """The whole dashboard as Grafana's JSON model (uid ``duet``)."""
    return {
        "uid": "duet", "title": "Duet", "tags": ["duet", "vllm"], "schemaVersion": 39, "version": 1,
        "editable": True, "refresh": "30s", "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
            {"name": "model", "type": "query", "datasource": DATASOURCE, "label": "Model",
             "query": {"query": "label_values(duet_requests_total, model)", "refId": "model"},
             "definition": "label_values(duet_requests_total, model)", "includeAll": True, "multi": True,
             "current": {"text": "All", "value": "$__all"}, "allValue": ".*", "refresh": 2},
        ]},
        "panels": [panel(i, title, unit, targets) for i, (title, unit, targets) in enumerate(PANELS)],
    }
