"""The two load generators: their command lines for one fixed run, and their result files read
into one ``ToolReport`` shape.

- ``vllm bench serve`` (vLLM's own benchmark, from ``.venv-vllm``): the random dataset built
  with the local model's tokenizer, Poisson arrivals at a set rate, streamed chat (and, as a
  second run, the same through the Responses API). Its ready
  check and warm-ups are off (``--ready-check-timeout-sec 0``, ``--num-warmups 0``) so that
  every request it sends is one it reports. Each request carries ``x-request-id`` =
  prefix + index, which Duet takes as its request id.
- AIPerf (NVIDIA's, from ``.venv-bench-aiperf``): synthetic prompts of a set token length,
  the same rate, streamed chat, ``--use-server-token-count`` (output tokens from the
  answer's ``usage``, as vLLM's benchmark takes them). It sends a fresh ``x-request-id`` per
  request and writes each one with its metrics to ``profile_export.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadtests.benchmarks.loadgens.stats import percentile

VLLM_BENCH = "vllm bench serve"
VLLM_BENCH_RESPONSES = "vllm bench serve, Responses API"
AIPERF = "aiperf"
VLLM_RESULT_FILE = "vllm-bench.json"
# vllm bench serve's backend and path for each API it drives here.
VLLM_BACKENDS = {VLLM_BENCH: ("openai-chat", "/v1/chat/completions"),
                 VLLM_BENCH_RESPONSES: ("openai-responses", "/v1/responses")}


@dataclass(frozen=True, slots=True)
class Workload:
    """One fixed run: how many streamed chat requests, at what Poisson rate, of what size."""

    requests: int = 60
    rate_per_s: float = 6.0
    input_tokens: int = 64
    output_tokens: int = 32
    seed: int = 20


@dataclass(frozen=True, slots=True)
class ToolReport:
    """What a load generator reported for its run. Times in milliseconds; ``ttft_by_request``:
    the client-side TTFT of each successful request by the ``x-request-id`` it sent."""

    tool: str
    version: str
    completed: int
    failed: int
    output_tokens: int
    ttft_p50_ms: float
    ttft_p99_ms: float
    requests_per_s: float
    ttft_by_request: dict[str, float]


def vllm_bench_command(python: Path, base_url: str, model: str, tokenizer: Path, workload: Workload,
                       result_dir: Path, id_prefix: str, tool: str = VLLM_BENCH) -> list[str]:
    """``vllm bench serve`` for ``workload`` against ``base_url`` (run from the repo's root), on
    chat or, for ``VLLM_BENCH_RESPONSES``, the Responses API (streamed, ``store: false``)."""
    backend, path = VLLM_BACKENDS[tool]
    return [
        str(python), "-m", "loadtests.benchmarks.loadgens.vllm_bench_main",
        "--backend", backend, "--base-url", base_url, "--endpoint", path,
        "--model", model, "--tokenizer", str(tokenizer),
        "--dataset-name", "random", "--random-input-len", str(workload.input_tokens),
        "--random-output-len", str(workload.output_tokens), "--num-prompts", str(workload.requests),
        "--request-rate", str(workload.rate_per_s), "--seed", str(workload.seed),
        "--ready-check-timeout-sec", "0", "--num-warmups", "0", "--request-id-prefix", id_prefix,
        "--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,99", "--disable-tqdm",
        "--save-result", "--save-detailed", "--result-dir", str(result_dir), "--result-filename", VLLM_RESULT_FILE,
    ]


def aiperf_command(executable: Path, base_url: str, model: str, tokenizer: Path, workload: Workload,
                   artifact_dir: Path) -> list[str]:
    """AIPerf's ``profile`` for ``workload`` against ``base_url``."""
    return [
        str(executable), "profile", "--model", model, "--url", base_url, "--endpoint-type", "chat", "--streaming",
        "--request-count", str(workload.requests), "--request-rate", str(workload.rate_per_s),
        "--isl", str(workload.input_tokens), "--osl", str(workload.output_tokens),
        "--random-seed", str(workload.seed), "--tokenizer", str(tokenizer), "--use-server-token-count",
        "--artifact-dir", str(artifact_dir), "--ui-type", "none",
    ]


def read_vllm_bench(result: dict[str, object], id_prefix: str, version: str, tool: str = VLLM_BENCH) -> ToolReport:
    """``vllm bench serve``'s saved result (with ``--save-detailed``) as a report. Its per-request
    lists are in request order, so request ``i`` was sent as ``id_prefix + str(i)``."""
    errors = _strings(result["errors"])
    ttfts = _floats(result["ttfts"])
    by_request = {f"{id_prefix}{i}": 1000 * ttft for i, (ttft, error) in enumerate(zip(ttfts, errors, strict=True))
                  if not error}
    return ToolReport(
        tool=tool, version=version, completed=_int(result["completed"]), failed=_int(result["failed"]),
        output_tokens=_int(result["total_output_tokens"]), ttft_p50_ms=_float(result["p50_ttft_ms"]),
        ttft_p99_ms=_float(result["p99_ttft_ms"]), requests_per_s=_float(result["request_throughput"]),
        ttft_by_request=by_request,
    )


def read_aiperf(summary: dict[str, object], records: Sequence[dict[str, object]]) -> ToolReport:
    """AIPerf's ``profile_export_aiperf.json`` (``summary``) and ``profile_export.jsonl`` lines
    (``records``) as a report."""
    ttft = _metric(summary, "time_to_first_token")
    by_request: dict[str, float] = {}
    failed = 0
    for record in records:
        metadata, metrics = _dict(record.get("metadata")), _dict(record.get("metrics"))
        if record.get("error") or "time_to_first_token" not in metrics:
            failed += 1
            continue
        by_request[str(metadata["x_request_id"])] = _float(_dict(metrics["time_to_first_token"])["value"])
    return ToolReport(
        tool=AIPERF, version=str(summary.get("aiperf_version", "unknown")),
        completed=int(_float(_metric(summary, "completed_request_count")["avg"])), failed=failed,
        output_tokens=int(_float(_metric(summary, "total_usage_completion_tokens")["avg"])),
        ttft_p50_ms=_float(ttft["p50"]), ttft_p99_ms=_float(ttft["p99"]),
        requests_per_s=_float(_metric(summary, "request_throughput")["avg"]), ttft_by_request=by_request,
    )


def load_vllm_bench(result_dir: Path, id_prefix: str, version: str, tool: str = VLLM_BENCH) -> ToolReport:
    return read_vllm_bench(json.loads((result_dir / VLLM_RESULT_FILE).read_text()), id_prefix, version, tool)


def load_aiperf(artifact_dir: Path) -> ToolReport:
    summary = json.loads((artifact_dir / "profile_export_aiperf.json").read_text())
    lines = (artifact_dir / "profile_export.jsonl").read_text().splitlines()
    return read_aiperf(summary, [json.loads(line) for line in lines if line.strip()])


def client_percentiles(report: ToolReport) -> tuple[float, float]:
    """p50 and p99 of the report's per-request TTFTs, by the same rule as the gateway's."""
    values = list(report.ttft_by_request.values())
    return percentile(values, 50), percentile(values, 99)


def _metric(summary: dict[str, object], name: str) -> dict[str, object]:
    return _dict(summary[name])


def _dict(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {value!r}")
    return value


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {value!r}")
    return [str(item or "") for item in value]


def _floats(value: object) -> list[float]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {value!r}")
    return [_float(item) for item in value]


def _float(value: object) -> float:
    if not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _int(value: object) -> int:
    return int(_float(value))
