"""The real prompt-cache benchmark's pieces, and the whole script on simulated replicas."""

import json
import subprocess
import sys
from pathlib import Path

import yaml

from gateway.flow import parse_config
from loadtests.real.prefix import percentile, without_affinity

ROOT = Path(__file__).resolve().parents[3]


def test_off_is_the_same_config_without_sessions_and_the_affinity_scorer():
    config = yaml.safe_load((ROOT / "deploy" / "config" / "demo.yaml").read_text())
    assert any(p["type"] == "prefix-affinity" for p in config["routing"]["plugins"])
    off = without_affinity(config)
    assert not any(p["type"] == "prefix-affinity" for p in off["routing"]["plugins"])
    assert off["routing"]["sessions"]["enabled"] is False
    parsed = parse_config(yaml.safe_dump(off), source="off.yaml")  # still a valid config
    assert parsed.policy.sessions.enabled is False


def test_percentiles_are_nearest_rank_in_ms():
    assert percentile([0.1, 0.2, 0.3, 0.4], 50) == 200.0 and percentile([0.1, 0.2, 0.3, 0.4], 90) == 400.0
    assert percentile([], 50) is None


def test_the_benchmark_runs_end_to_end_on_simulated_replicas(tmp_path):
    out = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-m", "loadtests.real.prefix", "--sim", "20", "--users", "3", "--seconds", "8",
                           "--out", str(out)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["replicas"] == "simulated" and result["command"].endswith("--sim 20")
    for mode in ("off", "on"):
        run = result["runs"][mode]
        assert run["requests"] > 3 and run["failed"] == 0
        assert run["vllm_prefix_queries"] > 0 and 0 < run["vllm_hit_rate"] < 1
        assert run["ttft_ms"]["p50"] <= run["ttft_ms"]["p90"]
