"""`vllm bench serve` (vLLM's own benchmark client, from .venv-vllm) against a real `duet serve`
over simulated replicas: what it reports completed must be what Duet counted, request by request
(slow: it imports vLLM, ~15 s on an idle 2-core machine; no real replica is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtests.benchmarks.loadgens.run import REPLICA_SET, TIME_SCALE, Settings, measure_tool
from loadtests.benchmarks.loadgens.tools import VLLM_BENCH, Workload
from loadtests.launch import stack
from serving.local_model import LocalModelPaths, default_cache_dir

REPO = Path(__file__).resolve().parents[4]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
TOKENIZER = LocalModelPaths(default_cache_dir()).model_dir

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not VLLM_PYTHON.exists() or not (TOKENIZER / "tokenizer.json").exists(),
                    reason="needs .venv-vllm and the local model (make vllm-env local-model)")
def test_vllm_bench_serve_counts_what_duet_counted(tmp_path: Path) -> None:
    workload = Workload(requests=8, rate_per_s=8.0, input_tokens=32, output_tokens=8)
    settings = Settings(tmp_path, (VLLM_BENCH,), workload, TOKENIZER, VLLM_PYTHON, Path("/nonexistent/aiperf"))
    with stack.replicas(REPLICA_SET, TIME_SCALE, seed=3) as urls:
        with stack.gateway("duet", REPLICA_SET, urls, TIME_SCALE, tmp_path, None, "none") as base_url:
            run = measure_tool(VLLM_BENCH, settings, base_url, tmp_path / "gateway.log")
    assert run.report.completed == workload.requests and run.report.failed == 0
    assert run.gateway.counters.ok == run.report.completed
    assert run.gateway.counters.output_tokens == run.report.output_tokens > 0
    assert {r.request_id for r in run.gateway.records} == set(run.report.ttft_by_request)
    assert min(run.client_minus_gateway_ms) >= -0.05  # no client sees a token before the gateway has it
