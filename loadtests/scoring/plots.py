"""PNG plots of SLO runs (matplotlib, headless Agg backend): one run's attainment by task, TTFT and
TPOT CDFs per variant, variant mix over time, cost per 1,000 requests; and a comparison's
attainment against rate, goodput and cost per policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: files only

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from loadtests.scoring.slo import RequestRecord  # noqa: E402


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def attainment_by_task(summary: Mapping[str, Any], path: Path) -> Path:
    """Bars: share of requests meeting their SLO, per task and overall, with the 90% line."""
    groups = {**{t: s["attainment"] for t, s in summary["tasks"].items()}, "overall": summary["overall"]["attainment"]}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(list(groups), [100 * v for v in groups.values()], color="#4C72B0")
    ax.axhline(90, color="grey", linestyle="--", linewidth=1)
    ax.set_ylim(0, 100)
    ax.set_ylabel("requests meeting TTFT and TPOT SLO (%)")
    ax.set_title(f"SLO attainment — {summary['policy']}, rate x{summary['rate_scale']}")
    return _save(fig, path)


def latency_cdfs(records: Sequence[RequestRecord], path: Path) -> Path:
    """TTFT and TPOT CDFs (model-time ms), one line per variant."""
    fig, (ttft_ax, tpot_ax) = plt.subplots(1, 2, figsize=(10, 3.8))
    for variant in sorted({r.variant for r in records if r.ok}):
        mine = [r for r in records if r.ok and r.variant == variant]
        _cdf(ttft_ax, [r.ttft_s * 1e3 for r in mine if r.ttft_s is not None], variant)
        _cdf(tpot_ax, [t * 1e3 for r in mine if (t := r.tpot_s) is not None], variant)
    for ax, label in ((ttft_ax, "TTFT (ms)"), (tpot_ax, "TPOT (ms)")):
        ax.set_xlabel(label)
        ax.set_ylabel("share of requests")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.set_xscale("log")
            ax.legend()
    return _save(fig, path)


def _cdf(ax: Any, values: list[float], label: str) -> None:
    if not values:
        return
    ordered = sorted(values)
    ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=label)


def variant_mix_over_time(records: Sequence[RequestRecord], path: Path, bins: int = 30) -> Path:
    """Stacked share of requests per variant, by when they were sent (model seconds)."""
    served = [r for r in records if r.ok]
    variants = sorted({r.variant for r in served})
    end = max((r.started_s for r in served), default=1.0) or 1.0
    width = end / bins
    counts = {v: [0] * bins for v in variants}
    for r in served:
        counts[r.variant][min(bins - 1, int(r.started_s / width))] += 1
    totals = [sum(counts[v][i] for v in variants) or 1 for i in range(bins)]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if variants:
        shares = [[c / t for c, t in zip(counts[v], totals, strict=True)] for v in variants]
        ax.stackplot([width * (i + 0.5) for i in range(bins)], shares, labels=variants)
        ax.legend(loc="upper right")
    ax.set_xlabel("time (model s)")
    ax.set_ylabel("share of requests")
    return _save(fig, path)


def cost_per_1k(summary: Mapping[str, Any], path: Path) -> Path:
    """Bars: USD per 1,000 requests, per task and overall, at the variants' prices."""
    groups = {**{t: s["cost_per_1k_requests_usd"] for t, s in summary["tasks"].items()},
              "overall": summary["overall"]["cost_per_1k_requests_usd"]}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(list(groups), [v or 0 for v in groups.values()], color="#55A868")
    ax.set_ylabel("USD per 1,000 requests")
    return _save(fig, path)


def goodput_bars(summary: Mapping[str, Any], path: Path) -> Path:
    """Bars: throughput and goodput (requests/s meeting SLO) per task and overall."""
    groups = {**summary["tasks"], "overall": summary["overall"]}
    names = list(groups)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [g["throughput_rps"] for g in groups.values()], width=0.4, label="throughput")
    ax.bar([x + 0.2 for x in xs], [g["goodput_rps"] for g in groups.values()], width=0.4, label="goodput")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("requests / s (model time)")
    ax.legend()
    return _save(fig, path)


def comparison(rows: Sequence[Mapping[str, Any]], goodput: Mapping[str, float | None], path: Path) -> Path:
    """Three panels per policy: attainment against offered rate, DistServe goodput, cost / 1k."""
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, (att_ax, good_ax, cost_ax) = plt.subplots(1, 3, figsize=(15, 4.2))
    for policy in policies:
        mine = sorted((r for r in rows if r["policy"] == policy), key=lambda r: r["offered_rps"])
        att_ax.plot([r["offered_rps"] for r in mine], [100 * r["attainment"] for r in mine], marker="o", label=policy)
        cost_ax.plot([r["offered_rps"] for r in mine], [r["cost_per_1k_requests_usd"] for r in mine], marker="o", label=policy)
    att_ax.axhline(90, color="grey", linestyle="--", linewidth=1)
    att_ax.set(xlabel="offered load (requests/s)", ylabel="SLO attainment (%)", ylim=(0, 102), title="SLO attainment")
    good_ax.bar(policies, [goodput.get(p) or 0 for p in policies], color="#4C72B0")
    good_ax.set(ylabel="requests/s", title="goodput: max rate with >= 90% attainment")
    good_ax.tick_params(axis="x", rotation=30)
    cost_ax.set(xlabel="offered load (requests/s)", ylabel="USD per 1,000 requests", title="cost")
    for ax in (att_ax, cost_ax):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def run_plots(summary: Mapping[str, Any], records: Sequence[RequestRecord], out: Path) -> list[Path]:
    """Every plot of one run, into ``out``."""
    return [
        attainment_by_task(summary, out / "slo_attainment_by_task.png"),
        goodput_bars(summary, out / "goodput.png"),
        latency_cdfs(records, out / "ttft_tpot_cdf_by_variant.png"),
        variant_mix_over_time(records, out / "variant_mix_over_time.png"),
        cost_per_1k(summary, out / "cost_per_1k_requests.png"),
    ]
