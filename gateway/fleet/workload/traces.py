"""Request traces (arrival time, prompt tokens, output tokens) and their replay schedules.

The shipped traces are the Azure LLM inference trace 2023 (code and conversation), copied into
``gateway/fleet/workload/data/`` so a clean clone can replay them. CC-BY 4.0; attribution (required): Patel
et al., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024 — see
``gateway/fleet/workload/data/README.md``.

The Mooncake FAST'25 conversation trace ships too (``mooncake``; Apache-2.0, Qin et al.,
"Mooncake: Trading More Storage for Less Computation", FAST 2025): its requests carry their
prompts' prefix structure (``hash_ids``, one per 512-token block), kept as ``PromptBlocks``.

Any other trace is read from a file: a CSV with the Azure columns (``TIMESTAMP``,
``ContextTokens``, ``GeneratedTokens``) or JSONL with the Mooncake fields (``timestamp`` in ms,
``input_length``, ``output_length``, optional ``hash_ids``). What cannot be read raises
``TraceError`` naming the file and line.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gateway.fleet.workload.prefix import PromptBlocks

TRACE_DIR = Path(__file__).resolve().parent / "data"
TRACE_FILES: Mapping[str, str] = {"code": "azure_llm_2023_code.csv", "conv": "azure_llm_2023_conv.csv",
                                  "mooncake": "mooncake_conversation.jsonl"}
# Which task type each shipped trace stands for (its requests carry that x-duet-task).
TRACE_TASKS: Mapping[str, str] = {"code": "coding", "conv": "chat", "mooncake": "chat"}
# Tokens per ``hash_ids`` entry in Mooncake's traces.
MOONCAKE_BLOCK_TOKENS = 512
# The task a trace file's requests carry when its spec does not name one (``TASK=PATH``).
DEFAULT_FILE_TASK = "chat"
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
    blocks: PromptBlocks | None = None  # the prompt's prefix structure, when the trace gives it


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
    """A request to send ``at_s`` wall seconds after the replay starts, as task ``task``.
    ``output_tokens`` is how long its answer runs (the world's, not the client's knowledge);
    ``max_tokens`` is the ceiling its client asks for (None: the client sends none)."""

    at_s: float
    task: str
    input_tokens: int
    output_tokens: int
    max_tokens: int | None = None
    blocks: PromptBlocks | None = None  # the prompt's prefix structure (None: unknown, nothing shared)


def _parse_time(text: str) -> float:
    # Timestamps carry 7 fractional digits; datetime takes at most 6.
    head, _, frac = text.partition(".")
    return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}").timestamp()


class TraceError(ValueError):
    """A trace that cannot be read: the message names the file (and line) and what is wrong."""


def load_trace(name_or_path: str) -> Trace:
    """A shipped trace by name (``code``, ``conv``), or a ``.csv`` (Azure columns) or ``.jsonl``
    (Mooncake fields) file."""
    readers = {".csv": _read_csv, ".jsonl": _read_jsonl}
    if name_or_path in TRACE_FILES:
        shipped_path = TRACE_DIR / TRACE_FILES[name_or_path]
        return Trace(name_or_path, _requests(readers[shipped_path.suffix](shipped_path)))
    path = Path(name_or_path)
    reader = readers.get(path.suffix.lower())
    if reader is None:
        shipped = ", ".join(TRACE_FILES)
        raise TraceError(f"trace '{name_or_path}': not a shipped trace ({shipped}) nor a .csv or .jsonl file")
    if not path.is_file():
        raise TraceError(f"trace '{name_or_path}': no such file")
    rows = reader(path)
    if not rows:
        raise TraceError(f"trace '{name_or_path}': no requests in it")
    return Trace(path.stem, _requests(rows))


_Row = tuple[float, int, int, tuple[int, ...]]  # arrival (s), prompt tokens, output tokens, block ids


def _requests(rows: list[_Row]) -> tuple[TraceRequest, ...]:
    rows.sort(key=lambda row: row[:3])  # by time, then lengths (ids never decide the order)
    first = rows[0][0] if rows else 0.0
    return tuple(TraceRequest(t - first, max(1, i), max(1, o), PromptBlocks(ids, MOONCAKE_BLOCK_TOKENS) if ids else None)
                 for t, i, o, ids in rows)


def _read_csv(path: Path) -> list[_Row]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"} - set(reader.fieldnames or ())
        if missing:
            raise TraceError(f"trace '{path}': missing CSV column(s) {', '.join(sorted(missing))} "
                             "(expected the Azure 2023 columns TIMESTAMP, ContextTokens, GeneratedTokens)")
        rows: list[_Row] = []
        for line, r in enumerate(reader, start=2):
            try:
                rows.append((_parse_time(r["TIMESTAMP"]), int(r["ContextTokens"]), int(r["GeneratedTokens"]), ()))
            except (TypeError, ValueError) as exc:
                raise TraceError(f"trace '{path}' line {line}: {exc}") from None
    return rows


def _read_jsonl(path: Path) -> list[_Row]:
    rows = []
    with path.open() as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                r = json.loads(text)
                ids = tuple(int(i) for i in r.get("hash_ids") or ())
                rows.append((float(r["timestamp"]) / 1e3, int(r["input_length"]), int(r["output_length"]), ids))
            except KeyError as exc:
                raise TraceError(f"trace '{path}' line {line}: missing field {exc} (expected the Mooncake fields "
                                 "timestamp in ms, input_length, output_length, optional hash_ids)") from None
            except (TypeError, ValueError) as exc:
                raise TraceError(f"trace '{path}' line {line}: {exc}") from None
    return rows


def clip_lengths(input_tokens: int, output_tokens: int, max_context: int) -> tuple[int, int]:
    """Token counts that fit a ``max_context`` window (outputs first kept, up to half the window),
    leaving a 64-token allowance for the chat template."""
    output = min(output_tokens, max_context // 2)
    return max(1, min(input_tokens, max_context - output - 64)), max(1, output)


@dataclass(frozen=True, slots=True)
class TraceWindow:
    """Which stretch of the traces a replay sends, and how fast: the first ``duration_s`` wall
    seconds, starting ``start_s`` trace-seconds in (wrapping around to the trace's start if it
    runs past the end). Trace time runs ``time_scale * rate_scale`` times faster than wall time:
    ``time_scale`` compresses the whole experiment (the simulated replicas run that much faster
    too), ``rate_scale`` multiplies the arrival rate against the replicas."""

    duration_s: float
    time_scale: float = 1.0
    rate_scale: float = 1.0
    start_s: float = 0.0


def replay_arrivals(
    traces: Mapping[str, Trace],
    window: TraceWindow,
    *,
    max_context: int = 32768,
    fit: Callable[[str, int, int], tuple[int, int]] | None = None,
) -> tuple[Arrival, ...]:
    """The arrivals of ``window``, merged across traces (``traces`` maps task type -> trace).

    Each arrival's ``max_tokens`` is its trace's longest answer (``client_ceiling``), fitted to
    the context left after its prompt. ``fit(task, prompt, output)`` fits each request's lengths
    into the window (default: ``clip_lengths``; a load test passes one that also counts them).
    """
    fit = fit or (lambda task, prompt, output: clip_lengths(prompt, output, max_context))
    speed = window.time_scale * window.rate_scale
    span = window.duration_s * speed
    arrivals = []
    for task, trace in traces.items():
        ceiling = client_ceiling(trace, max_context)
        for offset, r in _window(trace, window.start_s, span):
            prompt, output = fit(task, r.input_tokens, r.output_tokens)
            arrivals.append(Arrival(offset / speed, task, prompt, output, min(ceiling, max_context - prompt - 64), r.blocks))
    return tuple(sorted(arrivals, key=lambda a: a.at_s))


def client_ceiling(trace: Trace, max_context: int) -> int:
    """The ``max_tokens`` a trace's clients send: its longest answer, as one ceiling for every
    request. Traces show such ceilings (Azure conv's answers stop at 1,000 tokens, Mooncake's at
    2,000); one per trace says nothing about any single request's length."""
    longest = max((r.output_tokens for r in trace.requests), default=1)
    return clip_lengths(1, longest, max_context)[1]


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


def task_traces(specs: Sequence[str]) -> dict[str, Trace]:
    """task type -> trace for trace specs: a shipped name (``code`` -> coding, ``conv`` -> chat),
    ``PATH`` (its requests are ``DEFAULT_FILE_TASK``) or ``TASK=PATH``, each optionally thinned to
    a share of its requests with ``*SHARE`` (``long-context=mooncake*0.1``). One trace per task."""
    traces: dict[str, Trace] = {}
    for spec in specs:
        named, star, share_text = spec.partition("*")
        task, sep, source = named.partition("=")
        if not sep:
            task, source = TRACE_TASKS.get(named, DEFAULT_FILE_TASK), named
        if task in traces:
            raise TraceError(f"trace '{spec}': task '{task}' already has a trace (name the task: TASK=PATH)")
        trace = load_trace(source)
        if star:
            try:
                share = float(share_text)
            except ValueError:
                share = -1.0
            if not 0 < share <= 1:
                raise TraceError(f"trace '{spec}': the share after '*' must be a number in (0, 1]")
            trace = thinned(trace, share)
        traces[task] = trace
    return traces


# The golden ratio's fractional part: request i is kept when (i x this) mod 1 < share, a
# low-discrepancy pick that keeps every stretch of the trace at about ``share`` of its requests,
# so thinning keeps the trace's bursts and lulls (a random draw would add its own clumps).
_SPREAD = (5 ** 0.5 - 1) / 2


def thinned(trace: Trace, share: float) -> Trace:
    """``trace`` with about ``share`` of its requests, picked evenly through it (deterministic)."""
    kept = tuple(r for i, r in enumerate(trace.requests) if (i * _SPREAD) % 1.0 < share)
    return Trace(f"{trace.name}*{share:g}", kept)
