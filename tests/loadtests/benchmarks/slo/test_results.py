"""``duet bench slo --results`` writes the small file the docs are rendered from: the command that
reruns it, the host and its load around each run, and per policy and rate the scored requests."""

from __future__ import annotations

import json

from gateway.cli import main


def test_results_write_the_command_the_host_and_each_runs_scores(tmp_path):
    out, results = tmp_path / "run", tmp_path / "results" / "smoke.json"
    assert main(["bench", "slo", "--replicas", "smoke", "--duration", "5", "--trace-users", "20", "--out", str(out),
                 "--results", str(results), "--note", "a test run"]) == 0
    content = json.loads(results.read_text())
    assert content["command"] == (
        "duet bench slo --replicas smoke --duration 5 --time-scale 1 --trace-start 0 --rate-scale 1 --traces code,conv "
        f"--trace-users 20 --seed 0 --prior-error 0.3 --out {out} --results {results}")
    assert content["note"] == "a test run" and content["date"].endswith("UTC")
    host = content["host"]
    assert host["cpus"] >= 1 and isinstance(host["avx512"], bool)
    assert len(content["code"]["git_commit"]) == 12 and content["code"]["recorded"] == "by each run at its start"
    assert host["load_avg_1m"]["peak"] >= host["load_avg_1m"]["first_start"] >= 0
    assert content["settings"]["replica_counts"] == {"standard": 1, "fast": 1}
    # Duet's priors were off by the default 30% per variant, and the file says by how much
    factors = content["settings"]["prior_error"]
    assert set(factors) == {"standard", "fast"} and {f["decode"] for f in factors.values()} <= {0.7, 1.3}
    [run] = content["runs"]
    assert run["policy"] == "duet" and run["requests"] > 0 and run["failed"] == 0
    assert run["good_requests"] <= run["budgets_met"] <= run["requests"]
    assert set(run["ttft_ms"]) == {"p50", "p90", "p99"} and sum(run["variant_mix"].values()) == 1.0
    assert run["host"]["wall_s"] > 0

