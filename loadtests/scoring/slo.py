"""Per-request latency records and the SLO metrics computed from them.

Definitions follow vLLM's ``bench serve``: TTFT is the time to the first streamed token; TPOT is
``(latency - TTFT) / (output tokens - 1)`` (undefined for one-token outputs); ITL is the gap between
consecutive streamed chunks; goodput is the rate of requests that meet every per-request SLO.
DistServe's goodput of a *system* is the highest request rate at which at least 90% of requests
meet both their TTFT and TPOT targets (``max_rate_with_attainment``).

Records hold wall-clock seconds as locust measured them; ``in_model_time`` multiplies by the time
scale of a compressed run (replicas simulated ``time_scale`` times faster than real), so SLOs are
judged in the simulated hardware's own time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gateway.flow import Budget

# A task's latency targets in milliseconds of model time: the gateway's own Budget value (TTFT and
# TPOT; load tests set no end-to-end target), so the load tests score requests as the gateway does.
Slo = Budget


# Interactive targets for a 70B model on H100s (DistServe's chatbot/code-completion targets scaled to
# faster hardware): code completion wants its first token soonest; extraction tolerates a slow start.
DEFAULT_SLOS: Mapping[str, Slo] = {
    "coding": Slo(ttft_ms=1000, tpot_ms=50),
    "chat": Slo(ttft_ms=2000, tpot_ms=50),
    "agent": Slo(ttft_ms=2000, tpot_ms=50),
    "extraction": Slo(ttft_ms=8000, tpot_ms=100),
}


def parse_slos(text: str, base: Mapping[str, Slo] = DEFAULT_SLOS) -> dict[str, Slo]:
    """``"chat=1500/50,coding=800/40"`` (TTFT ms / TPOT ms per task) over ``base``."""
    slos = dict(base)
    for item in filter(None, (part.strip() for part in text.split(","))):
        task, _, targets = item.partition("=")
        ttft, _, tpot = targets.partition("/")
        if not task or not ttft or not tpot:
            raise ValueError(f"SLO '{item}' is not TASK=TTFT_MS/TPOT_MS")
        slos[task.strip()] = Slo(ttft_ms=float(ttft), tpot_ms=float(tpot))
    return slos


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the client saw it. Times in seconds; ``started_s`` from the test's start."""

    task: str
    variant: str
    started_s: float
    ok: bool
    ttft_s: float | None
    latency_s: float
    input_tokens: int
    output_tokens: int
    itl_s: tuple[float, ...] = ()
    # How late the request left against its scheduled arrival (trace replay; 0 otherwise).
    lag_s: float = 0.0
    error: str = ""

    @property
    def tpot_s(self) -> float | None:
        """(latency - TTFT) / (output tokens - 1); None for failed or one-token outputs."""
        if not self.ok or self.ttft_s is None or self.output_tokens < 2:
            return None
        return (self.latency_s - self.ttft_s) / (self.output_tokens - 1)

    def in_model_time(self, time_scale: float) -> RequestRecord:
        """The record with every duration multiplied by ``time_scale``."""
        if time_scale == 1.0:
            return self
        return replace(
            self,
            started_s=self.started_s * time_scale,
            ttft_s=None if self.ttft_s is None else self.ttft_s * time_scale,
            latency_s=self.latency_s * time_scale,
            itl_s=tuple(x * time_scale for x in self.itl_s),
            lag_s=self.lag_s * time_scale,
        )


def meets(record: RequestRecord, slo: Slo) -> bool:
    """Succeeded, and met its targets as ``Budget.met_by`` judges them (TPOT where defined)."""
    return record.ok and slo.met_by(record.ttft_s, record.latency_s, record.output_tokens)


@dataclass(frozen=True, slots=True)
class Attainment:
    """How many requests met their SLO, and the rates that follow over ``duration_s``."""

    requests: int
    met: int
    failed: int
    duration_s: float

    @property
    def share(self) -> float:
        """Met / sent, in [0, 1] (0 when nothing was sent)."""
        return self.met / self.requests if self.requests else 0.0

    @property
    def goodput_rps(self) -> float:
        """Requests per second that met their SLO (vLLM's request goodput)."""
        return self.met / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def throughput_rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0


def meets_its_task(record: RequestRecord, slos: Mapping[str, Slo]) -> bool:
    """``meets`` its task's SLO in ``slos``; a task without one only has to succeed."""
    return meets(record, slos[record.task]) if record.task in slos else record.ok


def attainment(records: Sequence[RequestRecord], slos: Mapping[str, Slo], duration_s: float) -> Attainment:
    """SLO attainment of ``records``, each judged against its task's SLO (tasks without one always
    count as met when they succeed)."""
    met = sum(1 for r in records if meets_its_task(r, slos))
    failed = sum(1 for r in records if not r.ok)
    return Attainment(requests=len(records), met=met, failed=failed, duration_s=duration_s)


def max_rate_with_attainment(points: Iterable[tuple[float, float]], target: float = 0.9) -> float | None:
    """DistServe goodput: the highest rate at which attainment >= ``target``, linearly interpolated
    between the last rate that meets it and the next that does not. ``points``: (rate, share).
    None when even the lowest rate misses the target."""
    ordered = sorted(points)
    best: float | None = None
    for (rate, share), following in zip(ordered, [*ordered[1:], None], strict=True):
        if share < target:
            break
        best = rate
        if following is not None and following[1] < target:
            next_rate, next_share = following
            best = rate + (next_rate - rate) * (share - target) / (share - next_share)
    return best


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation, as numpy's default; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
