"""Prometheus recording rules and SLO burn-rate alerts over the gateway's ``duet_*`` metrics.

The SLO is per task type: a request meets it when it finished within its latency budget
(``duet_slo_total{task, result="met"|"missed"}``). With an objective of 95% met, the error
budget is 5% missed; the alerts are the multi-window, multi-burn-rate pair from Google's SRE
workbook: page when the last hour and the last 5 minutes both burn budget 14.4x too fast (2% of
a 30-day budget in an hour), open a ticket when 6 hours and 30 minutes both burn it 6x too fast.
"""

from __future__ import annotations

from typing import Any

SLO_OBJECTIVE = 0.95
WINDOWS = ("5m", "30m", "1h", "6h")
# (alert, severity, long window, short window, burn rate, for)
BURN_ALERTS = (
    ("DuetSLOBurnRateFast", "page", "1h", "5m", 14.4, "2m"),
    ("DuetSLOBurnRateSlow", "ticket", "6h", "30m", 6.0, "15m"),
)


def result_ratio(result: str, window: str) -> str:
    """Share of each task's requests with this SLO ``result`` (met | missed), in [0, 1]: 0, not
    absent, while a task has none of them, so the ratio is graphable and alertable."""
    total = f"sum by (task) (rate(duet_slo_total[{window}]))"
    return f'(\n  sum by (task) (rate(duet_slo_total{{result="{result}"}}[{window}]))\n  or {total} * 0\n)\n/\n{total}'


def recording_rules() -> list[dict[str, Any]]:
    """SLO miss ratios per window, attainment, the variant mix and latency quantiles."""
    rules: list[dict[str, Any]] = [
        {"record": f"duet:slo_misses:ratio_rate{w}", "expr": result_ratio("missed", w)} for w in WINDOWS
    ]
    served = 'rate(duet_requests_total{variant!="none"}[5m])'
    rules += [
        {"record": "duet:slo_attainment:ratio_rate5m", "expr": result_ratio("met", "5m")},
        {"record": "duet:requests:rate5m", "expr": "sum by (model, variant, status) (rate(duet_requests_total[5m]))"},
        {"record": "duet:variant_share:ratio_rate5m",
         "expr": f"sum by (model, variant) ({served})\n/ ignoring (variant) group_left\nsum by (model) ({served})"},
        {"record": "duet:cost_usd:rate5m", "expr": "sum by (model, variant) (rate(duet_cost_usd_total[5m]))"},
    ]
    for q in ("0.5", "0.99"):
        name = "p50" if q == "0.5" else "p99"
        rules.append({"record": f"duet:ttft_seconds:{name}_5m",
                      "expr": f"histogram_quantile({q}, sum by (model, variant, le) (rate(duet_ttft_seconds_bucket[5m])))"})
    return rules


def alerting_rules() -> list[dict[str, Any]]:
    """Burn-rate pages and tickets per task, and replicas or variants with nothing healthy."""
    budget = round(1 - SLO_OBJECTIVE, 6)
    alerts: list[dict[str, Any]] = [
        {
            "alert": name,
            "expr": (f"duet:slo_misses:ratio_rate{long} > ({rate} * {budget})\n"
                     f"and\nduet:slo_misses:ratio_rate{short} > ({rate} * {budget})"),
            "for": hold,
            "labels": {"severity": severity},
            "annotations": {
                "summary": f"Task {{{{ $labels.task }}}} burns its latency SLO error budget {rate:g}x too fast",
                "description": (f"{{{{ $value | humanizePercentage }}}} of {{{{ $labels.task }}}} requests missed their "
                                f"latency budget over {long} (objective: {SLO_OBJECTIVE:.0%} met)."),
            },
        }
        for name, severity, long, short, rate, hold in BURN_ALERTS
    ]
    alerts += [
        {"alert": "DuetVariantWithoutHealthyReplica",
         "expr": "max by (model, variant) (duet_replica_up) == 0", "for": "2m", "labels": {"severity": "ticket"},
         "annotations": {"summary": "Variant {{ $labels.model }}/{{ $labels.variant }} has no healthy replica: "
                                    "its traffic goes to the other variants."}},
        {"alert": "DuetModelWithoutHealthyReplica",
         "expr": "max by (model) (duet_replica_up) == 0", "for": "1m", "labels": {"severity": "page"},
         "annotations": {"summary": "Model {{ $labels.model }} has no healthy replica: requests get 503."}},
        {"alert": "DuetUpstreamErrors",
         "expr": ('sum by (model) (rate(duet_requests_total{status=~"5.."}[5m]))\n/\n'
                  "sum by (model) (rate(duet_requests_total[5m])) > 0.05"),
         "for": "5m", "labels": {"severity": "ticket"},
         "annotations": {"summary": "More than 5% of {{ $labels.model }} requests fail with a 5xx."}},
        # Online parity (gateway/parity): set to 1 the moment the sequential test revokes a task, and
        # it stays until the gateway restarts; the task comes back only through an offline run.
        {"alert": "DuetParityRevoked",
         "expr": "max by (variant, task) (duet_parity_revoked) == 1", "labels": {"severity": "ticket"},
         "annotations": {"summary": "Online parity revoked {{ $labels.task }} on {{ $labels.variant }}: its live "
                                    "answers lost to the standard's beyond the tolerance.",
                         "description": "`duet parity status --config FILE` shows the test; the evidence file is in "
                                        "parity-online/ beside the config. It comes back only through an explicit "
                                        "offline run (duet parity --write-policy)."}},
    ]
    return alerts


def rule_groups() -> list[dict[str, Any]]:
    """The ``groups`` of a Prometheus rule file (and of a PrometheusRule's spec)."""
    return [
        {"name": "duet-recording", "rules": recording_rules()},
        {"name": "duet-slo-alerts", "rules": alerting_rules()},
    ]
