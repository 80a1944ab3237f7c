"""``duet usage --savings`` as text: per key and per tenant, GPU-seconds and GPU-dollars spent,
what standard-only would have cost, saved (dollars and share) and the share served fast; then
the fast variants' parity standing per task over the same period."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

COLUMNS = ("requests", "fast", "gpu_s", "gpu_usd", "standard_gpu_s", "standard_usd", "saved_usd", "saved")


def render_savings(payload: Mapping[str, object]) -> str:
    """The savings report (GET /v1/duet/savings's JSON) as aligned tables."""
    months = payload.get("months") or []
    assert isinstance(months, list)
    period = months[0] if len(months) == 1 else f"{months[0]} to {months[-1]}" if months else "?"
    keys, tenants, parity = (_list(payload, name) for name in ("keys", "tenants", "parity"))
    overall = payload.get("total")
    assert isinstance(overall, dict)
    text = [f"savings for {period} (against serving every request on standard)", ""]
    text += _table(("key", "tenant", *COLUMNS),
                   [(r["key_id"], r["tenant"], *_figures(r)) for r in keys] + [("total", "", *_figures(overall))])
    text += ["", *_table(("tenant", *COLUMNS), [(r["tenant"], *_figures(r)) for r in tenants])]
    text += ["", "parity (fast variants, per task)"]
    text += _table(("variant", "task", "status", "when (UTC)", "online test", "pairs"),
                   [(r["variant"], r["task"], r["status"], _when(r.get("revised_at")), r["conclusion"] or "-",
                     str(r["pairs"])) for r in parity])
    return "\n".join(text)


def _figures(row: Mapping[str, object]) -> tuple[str, ...]:
    def number(name: str) -> float:
        value = row[name]
        assert isinstance(value, int | float)
        return float(value)

    return (str(row["requests"]), f"{number('fast_share'):.1%}", f"{number('gpu_seconds'):.3f}",
            f"{number('gpu_usd'):.6f}", f"{number('standard_gpu_seconds'):.3f}", f"{number('standard_gpu_usd'):.6f}",
            f"{number('saved_usd'):.6f}", f"{number('saved_share'):.1%}")


def _when(at: object) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(at)) if isinstance(at, int | float) else "-"


def _list(payload: Mapping[str, object], name: str) -> list[dict[str, object]]:
    rows = payload.get(name) or []
    assert isinstance(rows, list)
    return rows


def _table(header: tuple[str, ...], rows: Sequence[tuple[object, ...]]) -> list[str]:
    lines = [header, *(tuple(str(cell) for cell in row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
