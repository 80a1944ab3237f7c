"""Request traces (arrival time, prompt tokens, output tokens) and their replay schedules.

The shipped traces are the Azure LLM inference trace 2023 (code and conversation), copied into
``loadtests/traces/`` so a clean clone can replay them. CC-BY 4.0; attribution (required): Patel
et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024 — see
``loadtests/traces/README.md``.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

TRACE_DIR = Path(__file__).resolve().parent / "traces"
TRACE_FILES: Mapping[str, str] = {"code": "azure_llm_2023_code.csv", "conv": "azure_llm_2023_conv.csv"}
# Which task type each shipped trace stands for (its requests carry that x-duet-task).
TRACE_TASKS: Mapping[str, str] = {"code": "coding", "conv": "chat"}
ATTRIBUTION = (
    "Azure LLM inference trace 2023 (CC-BY 4.0): Patel et al., \"Splitwise: Efficient generative LLM "
    "inference using phase splitting\", ISCA 2024."
)


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One traced request: seconds after the trace's first arrival, and its token counts."""

    offset_s: float
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Trace:
    """A named trace, requests in arrival order."""

    name: str
    requests: tuple[TraceRequest, ...]

    @property
    def duration_s(self) -> float:
        """Seconds from the first to the last arrival."""
        return self.requests[-1].offset_s if self.requests else 0.0

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate over the whole trace."""
        return len(self.requests) / self.duration_s if self.duration_s > 0 else 0.0

    def sample(self, rng: random.Random) -> TraceRequest:
        """One request drawn uniformly (for closed-loop users, who ignore arrival times)."""
        return rng.choice(self.requests)


@dataclass(frozen=True, slots=True)
class Arrival:
    """A request to send ``at_s`` wall seconds after the replay starts, as task ``task``."""

    at_s: float
    task: str
    input_tokens: int
    output_tokens: int


def _parse_time(text: str) -> float:
    # Timestamps carry 7 fractional digits; datetime takes at most 6.
    head, _, frac = text.partition(".")
    return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}").timestamp()


def load_trace(name_or_path: str) -> Trace:
    """A shipped trace by name (``code``, ``conv``) or any CSV with the Azure columns."""
    path = TRACE_DIR / TRACE_FILES[name_or_path] if name_or_path in TRACE_FILES else Path(name_or_path)
    with path.open(newline="") as handle:
        rows = [(_parse_time(r["TIMESTAMP"]), int(r["ContextTokens"]), int(r["GeneratedTokens"])) for r in csv.DictReader(handle)]
    rows.sort()
    first = rows[0][0] if rows else 0.0
    requests = tuple(TraceRequest(t - first, max(1, i), max(1, o)) for t, i, o in rows)
    return Trace(name=path.stem if name_or_path not in TRACE_FILES else name_or_path, requests=requests)


def clip_lengths(input_tokens: int, output_tokens: int, max_context: int) -> tuple[int, int]:
    """Token counts that fit a ``max_context`` window (outputs first kept, up to half the window),
    leaving a 64-token allowance for the chat template."""
    output = min(output_tokens, max_context // 2)
    return max(1, min(input_tokens, max_context - output - 64)), max(1, output)


def replay_arrivals(
    traces: Mapping[str, Trace],
    *,
    duration_s: float,
    time_scale: float = 1.0,
    rate_scale: float = 1.0,
    start_s: float = 0.0,
    max_context: int = 32768,
) -> tuple[Arrival, ...]:
    """The arrivals of the first ``duration_s`` wall seconds of a replay, merged across traces.

    ``traces`` maps task type -> trace. Trace time runs ``time_scale * rate_scale`` times faster
    than wall time: ``time_scale`` compresses the whole experiment (the simulated replicas run that
    much faster too), ``rate_scale`` multiplies the arrival rate against the replicas. The window
    starts ``start_s`` trace-seconds in and wraps around to the trace's start if it runs past the end.
    """
    speed = time_scale * rate_scale
    span = duration_s * speed
    arrivals = [
        Arrival(offset / speed, task, *clip_lengths(r.input_tokens, r.output_tokens, max_context))
        for task, trace in traces.items()
        for offset, r in _window(trace, start_s, span)
    ]
    return tuple(sorted(arrivals, key=lambda a: a.at_s))


def _window(trace: Trace, start_s: float, span_s: float) -> Sequence[tuple[float, TraceRequest]]:
    """(offset from ``start_s``, request) for requests in [start, start + span), wrapping around."""
    period = trace.duration_s + (1.0 / trace.rate_per_s if trace.rate_per_s else 1.0)
    found = []
    lap = 0
    while lap * period < start_s + span_s:
        for request in trace.requests:
            at = lap * period + request.offset_s - start_s
            if 0.0 <= at < span_s:
                found.append((at, request))
        lap += 1
    return found


def task_traces(names: Sequence[str]) -> dict[str, Trace]:
    """task type -> trace for shipped trace names (``code`` -> coding, ``conv`` -> chat)."""
    return {TRACE_TASKS.get(name, name): load_trace(name) for name in names}
