"""Why a policy loses requests at the knee, request by request (issue #26): the step model's error
by variant and by how busy the replica's prefill was, what kind of miss each lost request was,
and, for requests that missed their TPOT target, the prompts that stalled their decode and
whether routing could have sent those prompts anywhere harmless.

A diagnosis uses hindsight (true output lengths, which requests shared a replica when): it
explains a replay, it never routes one. ``python -m gateway.fleet.sweep.diagnose --replicas
h100-70b-w4a16:standard=2,fast=2 --policy duet-fixed --load 0.7 --window tuning``.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import json
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.replay.windows import WINDOWS
from gateway.fleet.sweep.run import SeedWindow, SweepSpec

# Prefill utilisation bands of the replica a request was predicted on (``Prediction.utilisation``:
# recent prompt tokens per second over the variant's prefill speed).
BANDS = ((0.0, "under 30%"), (0.3, "30-70%"), (0.7, "70-100%"))
# A request in flight with a TPOT target and at most this many output tokens is one a prompt's
# prefill can push past its budget: a short answer has few steps to spread a stall over.
SHORT_ANSWER_TOKENS = 32
RESULTS_DIR = Path(__file__).resolve().parents[3] / "docs" / "results" / "knee"


def band(utilisation: float) -> str:
    """The name of the utilisation band ``utilisation`` (0..1) falls in."""
    return [name for low, name in BANDS if utilisation >= low][-1]


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """Relative errors (predicted / actual - 1) of TTFT and TPOT over ``count`` requests: the
    median (its sign says which way the model errs) and the median of the absolute values."""

    count: int
    ttft_median: float
    ttft_abs_median: float
    tpot_median: float
    tpot_abs_median: float

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "ttft_median": round(self.ttft_median, 3),
                "ttft_abs_median": round(self.ttft_abs_median, 3), "tpot_median": round(self.tpot_median, 3),
                "tpot_abs_median": round(self.tpot_abs_median, 3)}


def step_model_errors(results: Sequence[RequestResult]) -> dict[tuple[str, str], ErrorSummary]:
    """The step model's errors, told each request's true output length, by (variant, band)."""
    errors: dict[tuple[str, str], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for r in results:
        predicted = r.step_model
        if r.status != "ok" or predicted is None or r.variant is None or not r.ttft_s or not r.tpot_s:
            continue
        ttft, tpot = errors[(r.variant, band(predicted.utilisation))]
        ttft.append(predicted.ttft_ms / 1e3 / r.ttft_s - 1.0)
        tpot.append(predicted.tpot_ms / 1e3 / r.tpot_s - 1.0)
    return {key: _summary(ttft, tpot) for key, (ttft, tpot) in sorted(errors.items())}


def _summary(ttft: Sequence[float], tpot: Sequence[float]) -> ErrorSummary:
    return ErrorSummary(len(ttft), statistics.median(ttft), statistics.median(abs(x) for x in ttft),
                        statistics.median(tpot), statistics.median(abs(x) for x in tpot))


def miss_kind(r: RequestResult) -> str | None:
    """Why ``r`` is not a good request: ``refused``, ``failed``, ``ttft``, ``tpot``, ``ttft+tpot``,
    ``latency``; None when it met its budget."""
    if r.status != "ok":
        return "refused" if r.status == "rejected" else "failed"
    if r.met_slo or r.e2e_s is None:
        return None
    budget, kinds = r.budget, []
    first_s = r.e2e_s if r.ttft_s is None else r.ttft_s
    if budget.ttft_ms is not None and first_s * 1e3 > budget.ttft_ms:
        kinds.append("ttft")
    if budget.tpot_ms is not None and r.tpot_s is not None and r.tpot_s * 1e3 > budget.tpot_ms:
        kinds.append("tpot")
    return "+".join(kinds) or "latency"


def misses(results: Sequence[RequestResult]) -> Counter[tuple[str, str, str]]:
    """Lost requests by (task, variant or '-', kind)."""
    return Counter((r.task, r.variant or "-", kind) for r in results if (kind := miss_kind(r)) is not None)


@dataclass(frozen=True, slots=True)
class _Span:
    start_s: float
    end_s: float
    result: RequestResult


def _spans(results: Sequence[RequestResult]) -> dict[str, list[_Span]]:
    """Per replica, its requests from dispatch to end, by dispatch time."""
    spans: dict[str, list[_Span]] = defaultdict(list)
    for r in results:
        if r.status == "ok" and r.replica is not None and r.e2e_s is not None:
            spans[r.replica].append(_Span(r.arrival_s + r.waited_s, r.arrival_s + r.e2e_s, r))
    for on_replica in spans.values():
        on_replica.sort(key=lambda s: s.start_s)
    return spans


def _vulnerable(span: _Span) -> bool:
    r = span.result
    return r.budget.tpot_ms is not None and r.output_tokens <= SHORT_ANSWER_TOKENS


@dataclass(frozen=True, slots=True)
class StallReport:
    """The requests that missed their TPOT target: how many, how many prompts were dispatched to
    their replica while they were in flight (the prompts vLLM prefilled in their decode steps),
    and how many of them could have been spared by placement alone: every such prompt had, when
    it was dispatched, another replica with no short answer in flight."""

    tpot_misses: int
    stalling_prompts: Counter[int]
    avoidable: int

    def as_dict(self) -> dict[str, Any]:
        return {"tpot_misses": self.tpot_misses, "avoidable": self.avoidable,
                "stalling_prompts": {str(k): v for k, v in sorted(self.stalling_prompts.items())}}


def stalls(results: Sequence[RequestResult]) -> StallReport:
    spans = _spans(results)
    starts = {replica: [s.start_s for s in on_replica] for replica, on_replica in spans.items()}
    misses_, avoidable, prompts = 0, 0, Counter[int]()
    for replica, on_replica in spans.items():
        for span in on_replica:
            if miss_kind(span.result) not in ("tpot", "ttft+tpot"):
                continue
            misses_ += 1
            first = bisect.bisect_right(starts[replica], span.start_s)
            last = bisect.bisect_left(starts[replica], span.end_s)
            later = on_replica[first:last]
            prompts[min(len(later), 6)] += 1
            if all(_harmless_elsewhere(spans, replica, s.start_s) for s in later):
                avoidable += 1
    return StallReport(misses_, prompts, avoidable)


def _harmless_elsewhere(spans: Mapping[str, list[_Span]], replica: str, at_s: float) -> bool:
    return any(not any(_vulnerable(s) and s.start_s <= at_s < s.end_s for s in others)
               for other, others in spans.items() if other != replica)


def diagnose(results: Sequence[RequestResult]) -> dict[str, Any]:
    """Everything above for one replay's results, as plain data."""
    return {
        "requests": len(results),
        "good_fraction": round(sum(r.met_slo for r in results) / max(1, len(results)), 4),
        "step_model_error": {f"{variant} / {name}": e.as_dict() for (variant, name), e in step_model_errors(results).items()},
        "misses": {" / ".join(key): n for key, n in misses(results).most_common()},
        "stalls": stalls(results).as_dict(),
    }


def replay(replicas: str, policy: str, load: float, window: str, seed: int = 0, *,
           span_s: float | None = None) -> list[RequestResult]:
    """One seed of ``policy`` on ``replicas`` at ``load`` over a named window, exactly as a sweep
    replays it (``span_s``: only the window's first trace seconds)."""
    named = WINDOWS[window]
    if span_s is not None:
        named = dataclasses.replace(named, span_s=span_s)
    spec = SweepSpec("code,conv", replicas, (policy,), named, seeds=seed + 1, prior_error=0.3)
    return SeedWindow.prepare(spec, policy, seed).results(load)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", required=True)
    parser.add_argument("--policy", default="duet-fixed")
    parser.add_argument("--load", type=float, required=True)
    parser.add_argument("--window", default="tuning", choices=("tuning", "heldout"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--span", type=float, help="only the window's first trace seconds")
    parser.add_argument("--out", help="also write the diagnosis, with the command, to this file "
                                      "(docs/results/knee/diagnosis-*.json are rendered into docs/routing.md)")
    args = parser.parse_args(argv)
    results = replay(args.replicas, args.policy, args.load, args.window, args.seed, span_s=args.span)
    found = {"command": command(args), "replicas": args.replicas, "policy": args.policy, "load": args.load,
             "window": args.window, "seed": args.seed, **diagnose(results)}
    print(json.dumps(found, indent=1))
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(found, handle, indent=1)
            handle.write("\n")
    return 0


def command(args: argparse.Namespace) -> str:
    span = f" --span {args.span:g}" if args.span else ""
    return (f"python -m gateway.fleet.sweep.diagnose --replicas {args.replicas} --policy {args.policy} --load {args.load:g} "
            f"--window {args.window} --seed {args.seed}{span}")


def render(found: Sequence[Mapping[str, Any]]) -> str:
    """The diagnosis section of docs/routing.md: per committed diagnosis, the lost requests by
    kind, how many TPOT misses placement could have spared, and the step model's error by band."""
    parts = []
    for d in found:
        stalls_ = d["stalls"]
        share = stalls_["avoidable"] / max(1, stalls_["tpot_misses"])
        many = sum(n for k, n in stalls_["stalling_prompts"].items() if int(k) >= 6)
        parts += [f"`{d['command']}`: {d['requests']} requests, {d['good_fraction']:.2%} good.", "",
                  "| lost requests (task / variant / missed) | count |", "|---|---|",
                  *[f"| {key} | {n} |" for key, n in d["misses"].items()], "",
                  f"TPOT misses: {stalls_['tpot_misses']}; {many} of them saw 6 or more prompts dispatched to their "
                  f"replica while they ran; {stalls_['avoidable']} ({share:.0%}) could have been spared by placement "
                  "alone (every such prompt had, when it was routed, another replica with no short answer in flight).", "",
                  "| step model (told the true length) / prefill utilisation | requests | TTFT error, median | "
                  "\\|TTFT error\\|, median | TPOT error, median | \\|TPOT error\\|, median |",
                  "|---|---|---|---|---|---|",
                  *[f"| {key} | {e['count']} | {e['ttft_median']:+.0%} | {e['ttft_abs_median']:.0%} | "
                    f"{e['tpot_median']:+.0%} | {e['tpot_abs_median']:.0%} |" for key, e in d["step_model_error"].items()],
                  ""]
    return "\n".join(parts).rstrip() or "No diagnosis committed yet."


def load(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Every committed diagnosis (``docs/results/knee/diagnosis-*.json``), by file name."""
    return [json.loads(p.read_text()) for p in sorted(results_dir.glob("diagnosis-*.json"))]


if __name__ == "__main__":
    sys.exit(main())
