"""The state one locust run shares between its users: options, prompt synthesis, the traces,
the replay schedule and the per-request record file.

Locust's pattern is module-level user classes; to keep mutable state out of modules, the context
is built at locust's ``init`` event and hung on the ``Environment`` (``environment.duet``), and its
replay schedule is rebuilt at every ``test_start`` (the web UI can start a test many times).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from gateway.fleet.workload.traces import TRACE_TASKS, Arrival, Trace, TraceWindow, load_trace, replay_arrivals
from loadtests.load.fit import FALLBACK_CONTEXT, ContextUnknown, FitTally, fetch_context
from loadtests.load.prompts import synthesizer
from loadtests.load.scenarios import ScenarioSettings
from loadtests.scoring.slo import RequestRecord, parse_slos


def add_options(parser: Any) -> None:
    """Duet's locust options (``--duet-*``), shown in the web UI too where useful."""
    group = parser.add_argument_group("duet")
    group.add_argument("--duet-model", default="smollm2", help="logical model name to request")
    group.add_argument("--duet-shape", default="users", choices=["users", "trace", "step", "ramp"],
                       help="users: -u/-r as usual; trace: replay arrival times; step / ramp")
    group.add_argument("--duet-traces", default="code,conv", help="traces to replay: code (coding), conv (chat)")
    group.add_argument("--duet-duration", type=float, default=60.0, help="trace replay: wall seconds of arrivals")
    group.add_argument("--duet-time-scale", type=float, default=1.0,
                       help="the replicas run this much faster than real: arrivals and budgets are scaled to match")
    group.add_argument("--duet-rate-scale", type=float, default=1.0, help="multiply the trace's arrival rate")
    group.add_argument("--duet-trace-start", type=float, default=0.0, help="start this many trace seconds in")
    group.add_argument("--duet-trace-users", type=int, default=200, help="trace replay: most requests in flight")
    group.add_argument("--duet-step-users", type=int, default=10, help="step shape: users added per step")
    group.add_argument("--duet-step-seconds", type=float, default=30.0, help="step shape: seconds per step")
    group.add_argument("--duet-ramp-seconds", type=float, default=60.0, help="ramp shape: seconds to reach -u")
    group.add_argument("--duet-max-context", type=int, default=0,
                       help="clip prompt + output to this window; 0: the model's max_model_len from the gateway's "
                            f"/v1/models ({FALLBACK_CONTEXT} if it does not say)")
    group.add_argument("--duet-slos", default="", help="TASK=TTFT_MS/TPOT_MS,... over the defaults (model time)")
    group.add_argument("--duet-tokenizer", default="", help="a tokenizer.json for exact prompt lengths")
    group.add_argument("--duet-records", default="", help="write one JSON line per request here")
    group.add_argument("--duet-variant-map", default="",
                       help="NAME=VARIANT,... : served model names or api bases -> variant (gateways without x-duet-variant)")
    group.add_argument("--duet-api-key", default="sk-duet", help="sent as the bearer token")
    group.add_argument("--duet-seed", type=int, default=0)
    group.add_argument("--duet-forced-length", action="store_true",
                       help="force each answer's traced length (max_tokens = min_tokens, ignore_eos), which tells the "
                            "gateway the true length: an oracle, for comparison; by default only the simulator is "
                            "told it (vllm_xargs.sim_output_tokens) and the request sends no max_tokens")


@dataclass
class RecordSink:
    """Appends one JSON line per finished request (flushed at test stop)."""

    handle: IO[bytes] | None

    def write(self, record: RequestRecord, extra: dict[str, Any]) -> None:
        if self.handle is not None:
            self.handle.write(orjson.dumps({**_record_dict(record), **extra}) + b"\n")

    def flush(self) -> None:
        if self.handle is not None:
            self.handle.flush()


def _record_dict(record: RequestRecord) -> dict[str, Any]:
    return {
        "task": record.task, "variant": record.variant, "started_s": record.started_s, "ok": record.ok,
        "ttft_s": record.ttft_s, "latency_s": record.latency_s, "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens, "itl_s": [round(x, 6) for x in record.itl_s],
        "lag_s": record.lag_s, "error": record.error,
    }


def parse_variant_map(text: str) -> dict[str, str]:
    """``"llama-3-70b=standard,http://127.0.0.1:9001=standard"`` -> dict."""
    pairs = (item.rsplit("=", 1) for item in text.split(",") if "=" in item)
    return {key.strip().rstrip("/"): value.strip() for key, value in pairs}


@dataclass
class LoadContext:
    """Everything the users of one locust process share."""

    options: argparse.Namespace
    settings: ScenarioSettings
    traces: dict[str, Trace]
    variant_map: dict[str, str]
    sink: RecordSink
    rng: random.Random
    tally: FitTally  # closed-loop users' draws, reported at test stop
    host: str | None = None  # the gateway whose /v1/models gave the window (None: not asked)
    seeds: Iterator[int] = field(default_factory=itertools.count)
    started: float = field(default_factory=time.perf_counter)
    arrivals: Iterator[Arrival] = field(default_factory=lambda: iter(()))
    last_arrival_s: float = 0.0
    in_flight: int = 0

    @classmethod
    def from_options(cls, options: argparse.Namespace, host: str | None = None) -> LoadContext:
        settings = ScenarioSettings(
            model=options.duet_model,
            synthesizer=synthesizer(options.duet_tokenizer or None),
            slos=parse_slos(options.duet_slos),
            time_scale=options.duet_time_scale,
            forced_length=options.duet_forced_length,
        )
        names = [n.strip() for n in options.duet_traces.split(",") if n.strip()]
        traces = {TRACE_TASKS.get(name, name): load_trace(name) for name in names}
        handle = Path(options.duet_records).open("ab") if options.duet_records else None
        return cls(options, settings, traces, parse_variant_map(options.duet_variant_map), RecordSink(handle),
                   random.Random(options.duet_seed), FitTally(max_context(options, host)), host)

    def fit_to(self, host: str | None) -> None:
        """Ask ``host`` for the window when it was not known at start-up (the web UI takes the
        host after locust starts); closed-loop draws are counted afresh."""
        if host and host != self.host and not self.options.duet_max_context:
            self.tally, self.host = FitTally(max_context(self.options, host)), host

    @property
    def max_context(self) -> int:
        return self.tally.max_context

    def start_test(self) -> None:
        """Rebuild the replay schedule and restart the clock (each test start)."""
        o = self.options
        self.started = time.perf_counter()
        tally = FitTally(self.max_context)
        window = TraceWindow(o.duet_duration, o.duet_time_scale, o.duet_rate_scale, o.duet_trace_start)
        schedule = replay_arrivals(self.traces, window, max_context=self.max_context, fit=tally.fit)
        if o.duet_shape == "trace":
            print(tally.report("trace replay schedule"), file=sys.stderr)
        self.arrivals = iter(schedule)
        self.last_arrival_s = schedule[-1].at_s if schedule else 0.0

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def lengths(self, task: str) -> tuple[int, int]:
        """(input, output) tokens drawn from the task's trace (closed-loop users)."""
        trace = self.traces.get(task) or next(iter(self.traces.values()))
        request = trace.sample(self.rng)
        return self.tally.fit(task, request.input_tokens, request.output_tokens)


def max_context(options: argparse.Namespace, host: str | None) -> int:
    """``--duet-max-context`` when given, else the model's window as the gateway at ``host`` says."""
    if options.duet_max_context > 0:
        return int(options.duet_max_context)
    if not host:
        print(f"duet: no --host yet, so requests are fitted to {FALLBACK_CONTEXT:,} tokens", file=sys.stderr)
        return FALLBACK_CONTEXT
    try:
        window = fetch_context(host, options.duet_model, options.duet_api_key)
    except ContextUnknown as exc:
        print(f"duet: {exc}; requests are fitted to {FALLBACK_CONTEXT:,} tokens", file=sys.stderr)
        return FALLBACK_CONTEXT
    window = window or FALLBACK_CONTEXT
    print(f"duet: {options.duet_model} takes {window:,} tokens (/v1/models): requests are fitted to that", file=sys.stderr)
    return window
